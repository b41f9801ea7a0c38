//! Responses every part of the API server writes: a `Status` as an error (in protobuf
//! when the client asks for it, `ENC-04`), and bodies with a content type.

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Response, StatusCode, header};
use wasmgate_apimachinery::media;
use wasmgate_apimachinery::status::Status;

use crate::body::{self, Body};

/// A Status as an error response, in protobuf when the request's `Accept` (`accept`)
/// puts protobuf first among what an error can be written in (`ENC-04`), else JSON.
pub fn status_response(s: &Status, accept: Option<&HeaderValue>) -> Response<Body> {
    let protobuf = accept
        .and_then(|a| a.to_str().ok())
        .is_some_and(|a| media::status_in_protobuf(&media::parse_accept(Some(a))));
    let code = StatusCode::from_u16(s.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut r = status_body_response(code, s, protobuf);
    if let Some(secs) = s.details.retry_after_seconds
        && let Ok(v) = HeaderValue::from_str(&secs.to_string())
    {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
}

/// A Status as the body of a response with `code`, in protobuf or JSON.
pub fn status_body_response(code: StatusCode, s: &Status, protobuf: bool) -> Response<Body> {
    match s.to_protobuf().filter(|_| protobuf) {
        Some(bytes) => bytes_response(code, "application/vnd.kubernetes.protobuf", bytes),
        None => bytes_response(code, "application/json", s.to_json()),
    }
}

/// A JSON (or other) response with a status code.
pub fn bytes_response(
    code: StatusCode,
    content_type: &'static str,
    bytes: impl Into<Bytes>,
) -> Response<Body> {
    let mut r = Response::new(body::full(bytes));
    *r.status_mut() = code;
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

/// A header as text, when it is there and ASCII.
pub fn header_str(h: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

/// Responses at least this large are compressed when the client accepts gzip (`GZIP-01`).
pub const GZIP_MIN_BYTES: u64 = 128 * 1024;

/// Whether an `Accept-Encoding` value takes gzip (and not with `q=0`).
pub fn accepts_gzip(v: &str) -> bool {
    v.split(',').any(|e| {
        let mut parts = e.split(';');
        let name = parts.next().unwrap_or("").trim();
        name.eq_ignore_ascii_case("gzip") && !parts.any(|p| p.trim() == "q=0")
    })
}
