//! # wasmgate-apiserver-core
//!
//! The floor under the API server's crates: what each of them speaks, whatever its
//! concern (kube's `apimachinery/pkg/api/errors`, `api/meta` and the response writers of
//! `apiserver/pkg/endpoints`).
//!
//! * [`error`]: the one edge where failures become `metav1.Status`.
//! * [`body`]: response bodies (whole, in frames, or a watch's channel); request bodies
//!   read within limits.
//! * [`response`]: a `Status` as a response (JSON or protobuf), bodies with a type.
//! * [`client`]: the [`client::Client`] the server's own parts reach its API through.
//! * [`object`]: metadata access, timestamps, uids, generated names, the storage encoding.
//! * [`User`]: who a request comes from.
#![forbid(unsafe_code)]

pub mod body;
pub mod client;
pub mod error;
pub mod object;
pub mod response;

/// Who a request comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    /// User name.
    pub name: String,
    /// Groups.
    pub groups: Vec<String>,
}

impl User {
    /// The user's groups, with `system:authenticated` for everyone but the anonymous user
    /// (kube's `AuthenticatedGroupAdder`: unless it or `system:unauthenticated` is there).
    pub fn groups_with_authenticated(&self) -> impl Iterator<Item = &str> {
        let authenticated = (self.name != "system:anonymous"
            && !self
                .groups
                .iter()
                .any(|g| g == "system:authenticated" || g == "system:unauthenticated"))
        .then_some("system:authenticated");
        self.groups.iter().map(String::as_str).chain(authenticated)
    }
}
