//! The client the API server's own parts use to reach its API (kube's loopback client):
//! the controllers, the aggregator's status writes and the start-up writes go through the
//! same request pipeline as clients' requests (authorization and admission included), as
//! a named system user, and never call the handler directly. The API server implements
//! [`Client`] over its own request stack.

use std::future::Future;
use std::pin::Pin;

use http::Method;
use serde_json::Value;

use crate::User;

/// The gateway itself, for the writes its controllers make (kube's loopback client).
pub fn system_user() -> User {
    User {
        name: "system:apiserver".into(),
        groups: vec!["system:masters".into()],
    }
}

/// What [`Client::call`] returns: the code and the body as JSON, or why no answer came.
pub type Answer<'a> = Pin<Box<dyn Future<Output = Result<(u16, Value), String>> + Send + 'a>>;

/// One request to the API, as `user`.
pub trait Client: Send + Sync {
    /// Sends `method path` with `body` (of `content_type`); returns the HTTP code and the
    /// body as JSON (`Null` when it is not JSON).
    ///
    /// A boxed future: a request the server serves may make another one (a module upload
    /// updates its WasmPlugin), and the type of a recursive future must be named.
    fn call<'a>(
        &'a self,
        user: User,
        method: Method,
        path: &'a str,
        content_type: &'a str,
        body: Option<&'a Value>,
    ) -> Answer<'a>;
}

/// A shared client is a client (the server's parts hold it in an `Arc`).
impl<C: Client + ?Sized> Client for std::sync::Arc<C> {
    fn call<'a>(
        &'a self,
        user: User,
        method: Method,
        path: &'a str,
        content_type: &'a str,
        body: Option<&'a Value>,
    ) -> Answer<'a> {
        (**self).call(user, method, path, content_type, body)
    }
}

/// [`Client::call`], with an answer of 300 or more as an error `"<code> <message>"`.
pub async fn call_ok(
    client: &dyn Client,
    user: User,
    method: Method,
    path: &str,
    content_type: &str,
    body: Option<&Value>,
) -> Result<Value, String> {
    let (code, v) = client.call(user, method, path, content_type, body).await?;
    if code < 300 {
        return Ok(v);
    }
    Err(failure(code, &v))
}

/// An answer of 300 or more as an error: `"<code> <Status message>"`.
pub fn failure(code: u16, answer: &Value) -> String {
    format!("{code} {}", answer["message"].as_str().unwrap_or_default())
}

/// A `PUT` of `obj` to `path`, its `resourceVersion` the precondition: what a controller
/// writes after reading. `Ok(None)` when the object changed or went away since it was read
/// (409, 404): the controller's next pass reads it again.
pub async fn put(
    client: &dyn Client,
    user: User,
    path: &str,
    obj: &Value,
) -> Result<Option<Value>, String> {
    let (code, v) = client
        .call(user, Method::PUT, path, "application/json", Some(obj))
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
pub async fn ensure(
    client: &dyn Client,
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
        let (code, current) = client
            .call(user.clone(), Method::GET, &path, "application/json", None)
            .await?;
        let (method, target, body) = match code {
            404 => (Method::POST, collection, desired.clone()),
            200..300 => match update(current) {
                None => return Ok(()),
                Some(put) => (Method::PUT, path.as_str(), put),
            },
            _ => return Err(failure(code, &current)),
        };
        let (code, answer) = client
            .call(
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
pub async fn apply(
    client: &dyn Client,
    user: User,
    collection: &str,
    name: &str,
    obj: &Value,
) -> Result<(), String> {
    ensure(client, user, collection, name, obj, |current| {
        // Replaced whole: a merge patch would keep fields the new spec dropped.
        let mut put = current;
        put["spec"] = obj["spec"].clone();
        put["metadata"]["labels"] = obj["metadata"]["labels"].clone();
        Some(put)
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    use serde_json::json;

    /// Answers each request with the next scripted answer and records what was asked.
    struct Scripted {
        answers: Mutex<Vec<(u16, Value)>>,
        asked: Mutex<Vec<String>>,
    }

    impl Client for Scripted {
        fn call<'a>(
            &'a self,
            _user: User,
            method: Method,
            path: &'a str,
            _content_type: &'a str,
            _body: Option<&'a Value>,
        ) -> Answer<'a> {
            self.asked
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(format!("{method} {path}"));
            let next = self
                .answers
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(0);
            Box::pin(async move { Ok(next) })
        }
    }

    /// Issue 28, item 3: a replica whose create loses to another replica's (`409`) reads
    /// the winner's object and accepts it, rather than failing its start.
    #[tokio::test]
    async fn ensure_accepts_the_object_another_writer_created_first() {
        let client = Scripted {
            answers: Mutex::new(vec![
                (404, json!({"kind": "Status"})),
                (409, json!({"kind": "Status", "message": "already exists"})),
                (200, json!({"metadata": {"name": "n"}})),
            ]),
            asked: Mutex::new(Vec::new()),
        };
        let desired = json!({"metadata": {"name": "n"}});
        ensure(
            &client,
            system_user(),
            "/api/v1/namespaces",
            "n",
            &desired,
            |_| None,
        )
        .await
        .expect("the winner's object is fine as it is");
        assert_eq!(
            *client.asked.lock().unwrap_or_else(|p| p.into_inner()),
            [
                "GET /api/v1/namespaces/n",
                "POST /api/v1/namespaces",
                "GET /api/v1/namespaces/n"
            ]
        );
    }

    /// `put`: a precondition lost (`409`) or the object gone (`404`) is `None`, for the
    /// controller's next pass; other failures are errors with the Status message.
    #[tokio::test]
    async fn put_reports_lost_races_as_none_and_failures_as_errors() {
        let client = Scripted {
            answers: Mutex::new(vec![
                (409, json!({})),
                (404, json!({})),
                (403, json!({"message": "forbidden"})),
            ]),
            asked: Mutex::new(Vec::new()),
        };
        let obj = json!({});
        assert_eq!(put(&client, system_user(), "/p", &obj).await, Ok(None));
        assert_eq!(put(&client, system_user(), "/p", &obj).await, Ok(None));
        assert_eq!(
            put(&client, system_user(), "/p", &obj).await,
            Err("403 forbidden".to_owned())
        );
    }
}
