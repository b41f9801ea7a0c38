//! # wasmgate-controllers
//!
//! The controllers kube-controller-manager would run, here in the gateway's process: the
//! garbage collector ([`gc`]) and the namespace lifecycle ([`namespaces`]), plus the loop
//! every controller and index of the API server shares ([`run`], [`wait_for_index`]) and the
//! emptying of a namespace or a custom type's objects ([`delete_contents`]).
//!
//! What a controller may touch is its [`Context`]: it reads and watches the store (its
//! informers), looks types up in the catalog, and writes only through the API
//! ([`Client`]), as the controller's service account, so its writes pass the same
//! admission, validation and finalizers as a client's. It never names the API server's
//! handler or its state.
#![forbid(unsafe_code)]

mod control_loop;
pub mod gc;
pub mod namespaces;

use std::time::Duration;

pub use control_loop::{Reconciled, Remaining, delete_contents, run, wait_for_index};
use wasmgate_apiserver_core::client::Client;
use wasmgate_registry::Registry;
use wasmgate_storage::Store;

/// What the API server lends its controllers.
pub trait Context: Client {
    /// The store, for reads and watches (writes go through [`Client`]).
    fn store(&self) -> &Store;
    /// The served types.
    fn types(&self) -> &Registry;
    /// `true` once shutdown began: controllers stop.
    fn shutdown(&self) -> tokio::sync::watch::Receiver<bool>;
    /// How long a controller with pending work (objects held by finalizers) waits before
    /// it looks again.
    fn resync(&self) -> Duration;
}

/// A shared server is a context too (`&Arc<dyn Context>` passes as `&dyn Context`).
impl<C: Context + ?Sized> Context for std::sync::Arc<C> {
    fn store(&self) -> &Store {
        (**self).store()
    }

    fn types(&self) -> &Registry {
        (**self).types()
    }

    fn shutdown(&self) -> tokio::sync::watch::Receiver<bool> {
        (**self).shutdown()
    }

    fn resync(&self) -> Duration {
        (**self).resync()
    }
}
