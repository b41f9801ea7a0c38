//! # wasmgate-admission
//!
//! Admission's three kinds of admitter and what keeps them current (kube's
//! `k8s.io/apiserver/pkg/admission` with its plugins):
//! * [`plugins`]: the Wasm plugins bound to API groups (`WasmPlugin` objects, their
//!   modules, the controller that loads them, `--plugin-dir`);
//! * [`webhooks`]: `MutatingWebhookConfiguration` / `ValidatingWebhookConfiguration`, their
//!   index and the `AdmissionReview` call;
//! * [`policies`]: `ValidatingAdmissionPolicy` and its bindings, evaluated in CEL;
//! * [`configuration`]: the webhooks' and policies' indexes, kept current from the store;
//! * [`chain`]: the three run for one write, from its [`chain::Attributes`].
//!
//! What
//! this crate may touch of the server is its [`Context`]: the controllers' context (the
//! store to read and watch, the loopback client for writes), plus the admitters' state the
//! server keeps, the outbound client and the metrics.
#![forbid(unsafe_code)]

pub mod chain;
pub mod configuration;
mod context;
pub mod plugins;
pub mod policies;
pub mod webhooks;

// The crates below this one, under the names their modules had in the API server.
use wasmgate_apiserver_core::{User, body, client, error, object, response};
use wasmgate_controllers as controller;
use wasmgate_metrics as metrics;
use wasmgate_outbound as outbound;
use wasmgate_registry as registry;

pub use crate::context::Context;
