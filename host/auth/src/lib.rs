//! # wasmgate-auth
//!
//! Authentication, as kube-apiserver's `pkg/authentication` does it, and the encryption of
//! stored values (its `--encryption-provider-config`): what needs keys and certificates
//! and nothing of the request pipeline.
//!
//! * [`authn_x509`]: the user a client certificate names.
//! * [`authn_token`]: static bearer tokens (`--token-auth-file`).
//! * [`sa_token`]: ServiceAccount tokens: issued by `TokenRequest`, checked on requests.
//! * [`encryption`]: AES-GCM transformers of stored values, from an `EncryptionConfiguration`.
#![forbid(unsafe_code)]

pub mod authn_token;
pub mod authn_x509;
pub mod encryption;
pub mod sa_token;

pub use wasmgate_apiserver_core::User;
