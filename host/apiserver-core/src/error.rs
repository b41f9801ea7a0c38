//! The one edge where failures become `metav1.Status` (STYLE C5). It logs nothing itself:
//! internal causes travel with the error to the request log line.

use wasmgate_apimachinery::status::{Status, Target};
use wasmgate_storage::StorageError;

/// A failed request: the Status the client gets, and, for server-side failures, the
/// cause that goes to the log (never to the client).
#[derive(Debug)]
pub struct ApiError {
    /// What the client gets (boxed: errors travel through many `Result`s).
    pub status: Box<Status>,
    /// What the log gets.
    pub cause: Option<String>,
}

impl From<Status> for ApiError {
    fn from(status: Status) -> Self {
        ApiError {
            status: Box::new(status),
            cause: None,
        }
    }
}

/// `Result` with [`ApiError`].
pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    /// 500 with a cause for the log.
    pub fn internal(cause: impl std::fmt::Display) -> ApiError {
        ApiError {
            status: Box::new(Status::internal()),
            cause: Some(cause.to_string()),
        }
    }
}

/// Maps a storage failure about `target` to its Status.
pub fn storage_error(e: StorageError, target: Target<'_>) -> ApiError {
    match e {
        StorageError::NotFound { .. } => Status::not_found(target).into(),
        StorageError::AlreadyExists { .. } => Status::already_exists(target).into(),
        StorageError::Conflict { .. } => Status::conflict(
            target,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
        .into(),
        StorageError::Compacted {
            requested,
            compacted,
        } => Status::expired(format!(
            "too old resource version: {requested} ({compacted})"
        ))
        .into(),
        StorageError::FutureRevision { requested, current } => {
            Status::too_large_resource_version(requested, current).into()
        }
        StorageError::TooLarge { size, limit, .. } => Status::failure(
            413,
            "RequestEntityTooLarge",
            format!(
                "Request entity too large: the object would be stored in {size} bytes; limit is {limit}"
            ),
        )
        .into(),
        StorageError::Closed => Status::failure(503, "ServiceUnavailable", "the server is shutting down")
            .with_retry_after(1)
            .into(),
        StorageError::Engine(ref inner) if matches!(inner, wasmgate_storage::EngineError::Unavailable(_)) => {
            ApiError {
                status: Box::new(
                    Status::failure(503, "ServiceUnavailable", "the storage engine is unavailable")
                        .with_retry_after(1),
                ),
                cause: Some(storage_cause(&e)),
            }
        }
        // Other replicas' writes won every try for the store's whole retry budget: the
        // write did not happen and may be sent again, as kube-apiserver's 429s
        // (`TooManyRequests`, with `retryAfterSeconds`) say; 409 stays for preconditions
        // (issue 28).
        StorageError::Contended { .. } => ApiError {
            status: Box::new(
                Status::failure(
                    429,
                    "TooManyRequests",
                    "Too many requests: the store is busy with concurrent writes; please try again later",
                )
                .with_retry_after(1),
            ),
            cause: Some(storage_cause(&e)),
        },
        StorageError::Undetermined(_) => ApiError {
            status: Box::new(Status::failure(
                500,
                "InternalError",
                "Internal error occurred: the outcome of the write is unknown; read the object before retrying",
            )),
            cause: Some(storage_cause(&e)),
        },
        other => ApiError::internal(storage_cause(&other)),
    }
}

/// A storage failure for the log line: its kind (`contended`, `unavailable`,
/// `undetermined`, ...: [`wasmgate_storage::FailureCause`]) and its whole chain of
/// sources, down to the engine library's own error (issue 28).
fn storage_cause(e: &StorageError) -> String {
    let kind = e
        .failure_cause()
        .map_or("other", wasmgate_storage::FailureCause::as_str);
    format!("[storage: {kind}] {}", error_chain(e))
}

/// An error and its sources, for logs.
pub use wasmgate_storage::error_chain;
