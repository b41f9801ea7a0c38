//! Native test helpers: build requests as the gateway sends them, set the binding's
//! `config`, read what the plugin logged. Used with plain `cargo test`; nothing here runs
//! inside the component.

use std::cell::RefCell;

use serde_json::Value;

use crate::request::Json;
use crate::{GroupVersionKind, GroupVersionResource, LogLevel, Operation, Request, UserInfo};

thread_local! {
    static CONFIG: RefCell<String> = RefCell::new("{}".into());
    static LOGS: RefCell<Vec<(LogLevel, String)>> = const { RefCell::new(Vec::new()) };
}

/// Sets what [`crate::config`] returns in this thread's tests.
pub fn set_config(config: Value) {
    CONFIG.with(|c| *c.borrow_mut() = config.to_string());
}

/// What the plugin logged in this thread so far.
pub fn logs() -> Vec<(LogLevel, String)> {
    LOGS.with(|l| l.borrow().clone())
}

#[cfg_attr(
    target_arch = "wasm32",
    allow(dead_code, reason = "native builds only")
)]
pub(crate) fn current_config() -> String {
    CONFIG.with(|c| c.borrow().clone())
}

#[cfg_attr(
    target_arch = "wasm32",
    allow(dead_code, reason = "native builds only")
)]
pub(crate) fn record_log(level: LogLevel, message: &str) {
    LOGS.with(|l| l.borrow_mut().push((level, message.to_owned())));
}

/// A request for `object`, its type, name and namespace read from it.
fn request(operation: Operation, object: Option<Value>, old_object: Option<Value>) -> Request {
    let any = object
        .as_ref()
        .or(old_object.as_ref())
        .cloned()
        .unwrap_or(Value::Null);
    let s = |v: &Value| v.as_str().unwrap_or("").to_owned();
    let api_version = s(&any["apiVersion"]);
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g.to_owned(), v.to_owned()),
        None => (String::new(), api_version.clone()),
    };
    let kind = s(&any["kind"]);
    let resource = format!("{}s", kind.to_lowercase());
    let kind = GroupVersionKind {
        group: group.clone(),
        version: version.clone(),
        kind,
    };
    Request {
        uid: "00000000-0000-0000-0000-000000000000".into(),
        request_kind: kind.clone(),
        kind,
        resource: GroupVersionResource {
            group,
            version,
            resource,
        },
        sub_resource: None,
        name: s(&any["metadata"]["name"]),
        namespace: any["metadata"]["namespace"].as_str().map(str::to_owned),
        operation,
        user: UserInfo {
            username: "test-user".into(),
            uid: String::new(),
            groups: vec!["system:authenticated".into()],
        },
        object: object.map(Json::from_value),
        old_object: old_object.map(Json::from_value),
        dry_run: false,
        options: None,
    }
}

/// A create of `object`.
pub fn create(object: Value) -> Request {
    request(Operation::Create, Some(object), None)
}

/// An update from `old` to `new`.
pub fn update(old: Value, new: Value) -> Request {
    request(Operation::Update, Some(new), Some(old))
}

/// A delete of `old`.
pub fn delete(old: Value) -> Request {
    request(Operation::Delete, None, Some(old))
}
