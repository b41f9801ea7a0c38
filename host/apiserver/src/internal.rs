//! Requests the server makes to itself, as a named system user, through the same handler
//! (and so the same write pipeline, admission included) as clients' requests: the garbage
//! collector's deletes, the plugin controller's status updates, the CRDs it installs.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Request, header};
use http_body_util::{BodyExt as _, Full};
use serde_json::Value;

use crate::{Inner, User};

/// The gateway itself, for the writes its controllers make (kube's loopback client).
pub(crate) fn system_user() -> User {
    User {
        name: "system:apiserver".into(),
        groups: vec!["system:masters".into()],
    }
}

/// What [`call`] returns: the code and the body as JSON, or why no answer came.
pub(crate) type Answer<'a> =
    Pin<Box<dyn Future<Output = Result<(u16, Value), String>> + Send + 'a>>;

/// One request; returns the HTTP code and the body as JSON (`Null` when it is not JSON).
///
/// A boxed future: a request the handler serves may make another one (a module upload
/// updates its WasmPlugin), and the type of a recursive future must be named.
pub(crate) fn call<'a>(
    inner: &'a Arc<Inner>,
    user: User,
    method: Method,
    path: &'a str,
    content_type: &'a str,
    body: Option<&'a Value>,
) -> Answer<'a> {
    Box::pin(async move {
        let bytes = body.map(|b| Bytes::from(b.to_string())).unwrap_or_default();
        let req = Request::builder()
            .method(method)
            .uri(path)
            .header(header::CONTENT_TYPE, content_type)
            .header(header::ACCEPT, "application/json")
            // The gateway's own writes name it, as kube's loopback client does.
            .header(
                header::USER_AGENT,
                concat!("wasmgate/", env!("CARGO_PKG_VERSION")),
            )
            .body(Full::new(bytes))
            .map_err(|e| e.to_string())?;
        let resp = crate::stack::handle(inner, req, Some(user)).await;
        let code = resp.status().as_u16();
        let bytes = resp
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        Ok((code, serde_json::from_slice(&bytes).unwrap_or(Value::Null)))
    })
}

/// [`call`], with an answer of 300 or more as an error `"<code> <message>"`.
pub(crate) async fn call_ok(
    inner: &Arc<Inner>,
    user: User,
    method: Method,
    path: &str,
    content_type: &str,
    body: Option<&Value>,
) -> Result<Value, String> {
    let (code, v) = call(inner, user, method, path, content_type, body).await?;
    if code < 300 {
        return Ok(v);
    }
    Err(failure(code, &v))
}

/// An answer of 300 or more as an error: `"<code> <Status message>"`.
pub(crate) fn failure(code: u16, answer: &Value) -> String {
    format!("{code} {}", answer["message"].as_str().unwrap_or_default())
}

/// A `PUT` of `obj` to `path`, its `resourceVersion` the precondition: what a controller
/// writes after reading. `Ok(None)` when the object changed or went away since it was read
/// (409, 404): the controller's next pass reads it again.
pub(crate) async fn put(
    inner: &Arc<Inner>,
    user: User,
    path: &str,
    obj: &Value,
) -> Result<Option<Value>, String> {
    let (code, v) = call(
        inner,
        user,
        Method::PUT,
        path,
        "application/json",
        Some(obj),
    )
    .await?;
    match code {
        200..300 => Ok(Some(v)),
        404 | 409 => Ok(None),
        _ => Err(failure(code, &v)),
    }
}

/// How often [`ensure`] reads again after another writer got in first (a `409`, or a
/// `404` to an update) or the store was contended (`429`), before it gives up.
const RACE_TRIES: usize = 16;

/// Create-or-verify, as a replica's start needs it (kube's post-start hooks): the object
/// `name` in the collection at `collection` is created as `desired` when missing; when
/// there, `update` says what to write over it (`None`: it is fine as it is). Several
/// replicas starting at once over one store run this at the same time: the one whose
/// create (`AlreadyExists`) or update (`Conflict`, or the object went away) loses the race
/// reads the winner's object and decides again, so no replica fails to start because
/// another wrote first.
pub(crate) async fn ensure(
    inner: &Arc<Inner>,
    user: User,
    collection: &str,
    name: &str,
    desired: &Value,
    update: impl Fn(Value) -> Option<Value>,
) -> Result<(), String> {
    let path = format!("{collection}/{name}");
    let mut lost = String::new();
    for attempt in 0..RACE_TRIES {
        if attempt > 0 {
            // The other writer is a replica starting too: give it a moment.
            let ms = u64::try_from(attempt).unwrap_or(u64::MAX).saturating_mul(5);
            tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
        }
        let (code, current) = call(
            inner,
            user.clone(),
            Method::GET,
            &path,
            "application/json",
            None,
        )
        .await?;
        let (method, target, body) = match code {
            404 => (Method::POST, collection, desired.clone()),
            200..300 => match update(current) {
                None => return Ok(()),
                Some(put) => (Method::PUT, path.as_str(), put),
            },
            _ => return Err(failure(code, &current)),
        };
        let (code, answer) = call(
            inner,
            user.clone(),
            method,
            target,
            "application/json",
            Some(&body),
        )
        .await?;
        match code {
            200..300 => return Ok(()),
            // Another writer created, changed or removed it since the read, or the store
            // was contended past its retry budget (`429`): read again.
            409 | 404 | 429 => lost = failure(code, &answer),
            _ => return Err(failure(code, &answer)),
        }
    }
    Err(format!("{lost} (other writers won {RACE_TRIES} times)"))
}

/// Creates `obj` (named `name`) in the collection at `collection`, or replaces the spec
/// and labels of the one there (an update that changes nothing writes nothing); a race
/// with another writer is retried ([`ensure`]).
pub(crate) async fn apply(
    inner: &Arc<Inner>,
    user: User,
    collection: &str,
    name: &str,
    obj: &Value,
) -> Result<(), String> {
    ensure(inner, user, collection, name, obj, |current| {
        // Replaced whole: a merge patch would keep fields the new spec dropped.
        let mut put = current;
        put["spec"] = obj["spec"].clone();
        put["metadata"]["labels"] = obj["metadata"]["labels"].clone();
        Some(put)
    })
    .await
}
