//! # wasmgate-apimachinery
//!
//! Kubernetes API semantics with no I/O: it turns request parts into decisions and
//! decisions into wire bytes. Cheap to unit-test; never depends on tokio, hyper,
//! wasmtime or a storage engine.
//!
//! ## Layout
//! * [`protobuf`]: decoding of Kubernetes protobuf request bodies for built-in kinds.
//! * [`strategic_merge`]: strategic merge patch for built-in kinds.
//! * [`selectors`]: label and field selectors.
//! * [`validation`]: name, label and annotation validation, field errors.
//! * [`table`]: `meta.k8s.io` Table types and the built-in printers.
//! * [`events`]: `events.k8s.io/v1` Events as views of core `v1` Events.
//! * [`request_info`]: request paths to resource requests and verbs.
//! * [`options`]: query parameters, `resourceVersion` rules, continue tokens.
//! * [`media`]: content negotiation.
//! * [`gofmt`]: values printed as Go prints them in messages.
//! * [`goregex`]: Go (RE2) regular expressions on the `regex` crate, with Go's limits and wording.
//! * [`json`]: JSON with duplicate-field detection, YAML, the storage encoding.
//! * [`jsonpath`]: the JSONPath subset of printer columns and scale paths.
//! * [`openapi_v2`]: OpenAPI v2 (Swagger 2.0) from the v3 documents, and its gnostic protobuf form.
//! * [`schema`]: unknown fields, type errors and pruning of built-in kinds against their OpenAPI schemas.
//! * [`status`]: the `metav1.Status` object.
//! * [`structural`]: CRD structural schemas: checks, pruning, defaulting, validation.
#![forbid(unsafe_code)]

pub mod events;
pub mod fieldset;
pub mod gofmt;
pub mod goregex;
pub mod json;
pub mod jsonpath;
pub mod media;
pub mod openapi_v2;
pub mod options;
pub mod protobuf;
pub mod request_info;
pub mod schema;
pub mod selectors;
pub mod status;
pub mod strategic_merge;
pub mod structural;
pub mod table;
pub mod validation;
