//! # wasmgate-apiextensions
//!
//! CustomResourceDefinitions, as kube's `apiextensions-apiserver` serves them:
//! * [`crd`]: the `CustomResourceDefinition` kind's strategy (defaults, validation, name
//!   collisions, stored versions);
//! * [`custom`]: the strategy of the custom resources a CRD defines (status, pruning,
//!   defaulting, validation, conversion, table rows, scale);
//! * [`conversion`]: custom resources between their versions, by the CRD's Wasm plugin or
//!   conversion webhook;
//! * [`controller`]: registers the custom types of stored CRDs, marks them `Established`,
//!   and deletes a CRD's objects before the CRD itself.
//!
//! The controller and conversion reach the server through [`Context`].
#![forbid(unsafe_code)]

pub mod controller;
pub mod conversion;
pub mod crd;
pub mod custom;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;
// The crates below this one, under the names their modules had in the API server.
use wasmgate_admission::{plugins, webhooks};
use wasmgate_apiserver_core::{client, error, object};
use wasmgate_controllers as controllers;
use wasmgate_outbound as outbound;
use wasmgate_registry as registry;

/// What the CRD controller and conversion need of the server: the admission context (the
/// store, the types it registers custom types in, the loopback client; the plugins and
/// the outbound client conversion calls) and the controller's progress.
pub trait Context: wasmgate_admission::Context {
    /// The store revision the registry's custom types reflect; CRD writes wait on it.
    fn crd_synced(&self) -> &watch::Sender<u64>;
    /// Keys of the terminating CRDs whose cleanup task runs (one task each).
    fn crd_cleanups(&self) -> &Mutex<HashSet<String>>;
}

/// A shared server is a context too.
impl<C: Context + ?Sized> Context for Arc<C> {
    fn crd_synced(&self) -> &watch::Sender<u64> {
        (**self).crd_synced()
    }

    fn crd_cleanups(&self) -> &Mutex<HashSet<String>> {
        (**self).crd_cleanups()
    }
}
