//! # wasmgate-apiserver-core
//!
//! The floor under the API server's crates: what each of them speaks, whatever its
//! concern (kube's `apimachinery/pkg/api/errors`, `api/meta` and the response writers of
//! `apiserver/pkg/endpoints`).
//!
//! * [`error`]: the one edge where failures become `metav1.Status`.
//! * [`body`]: response bodies (whole, in frames, or a watch's channel).
//! * [`object`]: metadata access, timestamps, uids, generated names, the storage encoding.
//! * [`User`]: who a request comes from.
#![forbid(unsafe_code)]

pub mod body;
pub mod error;
pub mod object;

/// Who a request comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    /// User name.
    pub name: String,
    /// Groups.
    pub groups: Vec<String>,
}
