//! What an admission request carries (`AdmissionReview.request`), with the objects as JSON.

use std::cell::OnceCell;

use serde::Deserialize;
use serde_json::Value;

use crate::bindings::wasmgate::plugin::types as wit;

/// `group`, `version`, `kind`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupVersionKind {
    /// `""` for the core group.
    pub group: String,
    /// Version.
    pub version: String,
    /// Kind.
    pub kind: String,
}

/// `group`, `version`, `resource`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupVersionResource {
    /// `""` for the core group.
    pub group: String,
    /// Version.
    pub version: String,
    /// Plural resource name.
    pub resource: String,
}

/// Who made the request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserInfo {
    /// User name.
    pub username: String,
    /// User uid.
    pub uid: String,
    /// Groups.
    pub groups: Vec<String>,
}

/// What the request does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// A create.
    Create,
    /// An update or patch.
    Update,
    /// A delete.
    Delete,
    /// A connect.
    Connect,
}

/// One admission request.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// Unique per request.
    pub uid: String,
    /// The kind of the object, at the version it is sent at: a custom resource's storage
    /// version, whatever version the client wrote (the gateway converts it first).
    pub kind: GroupVersionKind,
    /// The kind as the client wrote it (`kind` unless the client used another version).
    pub request_kind: GroupVersionKind,
    /// The resource written.
    pub resource: GroupVersionResource,
    /// The subresource (`status`, `scale`), if any.
    pub sub_resource: Option<String>,
    /// The object's name (may be empty on create with `generateName`).
    pub name: String,
    /// The namespace, for namespaced resources.
    pub namespace: Option<String>,
    /// What the request does.
    pub operation: Operation,
    /// Who made it.
    pub user: UserInfo,
    /// The new object (create, update): [`Request::object`].
    pub(crate) object: Option<Json>,
    /// The existing object (update, delete): [`Request::old_object`].
    pub(crate) old_object: Option<Json>,
    /// Nothing will be persisted (`dryRun=All`).
    pub dry_run: bool,
    /// The operation's options: [`Request::options`].
    pub(crate) options: Option<Json>,
}

/// One JSON document of a request, kept as the text the gateway sent and parsed only
/// when (and as) the plugin asks: a plugin that reads three fields through its own serde
/// type never builds a `Value` of the whole object.
#[derive(Clone)]
pub(crate) struct Json {
    text: String,
    value: OnceCell<Value>,
}

impl Json {
    fn new(text: String) -> Json {
        Json {
            text,
            value: OnceCell::new(),
        }
    }

    pub(crate) fn from_value(value: Value) -> Json {
        Json {
            text: value.to_string(),
            value: OnceCell::from(value),
        }
    }

    fn value(&self) -> &Value {
        self.value
            .get_or_init(|| match serde_json::from_str(&self.text) {
                Ok(v) => v,
                // The gateway sends JSON it serialized itself; anything else is its bug, and
                // the trap fails the call under the binding's failurePolicy, saying why.
                Err(e) => panic!("the gateway sent a request whose JSON does not parse: {e}"),
            })
    }
}

impl std::fmt::Debug for Json {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl PartialEq for Json {
    fn eq(&self, other: &Json) -> bool {
        self.text == other.text || self.value() == other.value()
    }
}

/// `T` read from `json` (`null` when there is none).
fn parse<'a, T: Deserialize<'a>>(json: Option<&'a Json>) -> Result<T, serde_json::Error> {
    serde_json::from_str(json.map_or("null", |j| j.text.as_str()))
}

impl Request {
    /// The new object (create, update), parsed into a `Value` on first use. A plugin that
    /// needs a few fields reads faster through [`Request::object_as`].
    pub fn object(&self) -> Option<&Value> {
        self.object.as_ref().map(Json::value)
    }

    /// The existing object (update, delete), parsed on first use.
    pub fn old_object(&self) -> Option<&Value> {
        self.old_object.as_ref().map(Json::value)
    }

    /// The operation's options (`CreateOptions`, `UpdateOptions`, `DeleteOptions`).
    pub fn options(&self) -> Option<&Value> {
        self.options.as_ref().map(Json::value)
    }

    /// The new object as the JSON text the gateway sent.
    pub fn object_json(&self) -> Option<&str> {
        self.object.as_ref().map(|j| j.text.as_str())
    }

    /// The old object as the JSON text the gateway sent.
    pub fn old_object_json(&self) -> Option<&str> {
        self.old_object.as_ref().map(|j| j.text.as_str())
    }

    /// The new object deserialized into a type of yours, straight from the JSON text
    /// (fields your type does not name are skipped, not built; `&str` and `Cow<str>`
    /// fields may borrow from the request). Without an object, `T` is read from `null`.
    pub fn object_as<'a, T: Deserialize<'a>>(&'a self) -> Result<T, serde_json::Error> {
        parse(self.object.as_ref())
    }

    /// The old object deserialized into a type of yours, as [`Request::object_as`].
    pub fn old_object_as<'a, T: Deserialize<'a>>(&'a self) -> Result<T, serde_json::Error> {
        parse(self.old_object.as_ref())
    }

    /// A label of the new object (of the old one on delete).
    pub fn label(&self, key: &str) -> Option<&str> {
        self.object()
            .or(self.old_object())?
            .get("metadata")?
            .get("labels")?
            .get(key)?
            .as_str()
    }

    pub(crate) fn from_wit(r: wit::AdmissionRequest) -> Request {
        let kind = GroupVersionKind {
            group: r.kind.group,
            version: r.kind.version,
            kind: r.kind.kind,
        };
        Request {
            uid: r.uid,
            request_kind: match r.request_kind {
                Some(k) => GroupVersionKind {
                    group: k.group,
                    version: k.version,
                    kind: k.kind,
                },
                None => kind.clone(),
            },
            kind,
            resource: GroupVersionResource {
                group: r.resource.group,
                version: r.resource.version,
                resource: r.resource.resource,
            },
            sub_resource: r.sub_resource,
            name: r.name,
            namespace: r.namespace,
            operation: match r.operation {
                wit::Operation::Create => Operation::Create,
                wit::Operation::Update => Operation::Update,
                wit::Operation::Delete => Operation::Delete,
                wit::Operation::Connect => Operation::Connect,
            },
            user: UserInfo {
                username: r.user_info.username,
                uid: r.user_info.uid,
                groups: r.user_info.groups,
            },
            object: r.object.map(Json::new),
            old_object: r.old_object.map(Json::new),
            dry_run: r.dry_run,
            options: r.options.map(Json::new),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    fn request(object: Option<&str>) -> Request {
        let gvk = wit::GroupVersionKind {
            group: String::new(),
            version: "v1".into(),
            kind: "ConfigMap".into(),
        };
        Request::from_wit(wit::AdmissionRequest {
            uid: "u".into(),
            kind: gvk,
            resource: wit::GroupVersionResource {
                group: String::new(),
                version: "v1".into(),
                resource: "configmaps".into(),
            },
            sub_resource: None,
            request_kind: None,
            request_resource: None,
            request_sub_resource: None,
            name: "a".into(),
            namespace: Some("default".into()),
            operation: wit::Operation::Create,
            user_info: wit::UserInfo {
                username: "me".into(),
                uid: String::new(),
                groups: Vec::new(),
                extra: Vec::new(),
            },
            object: object.map(str::to_owned),
            old_object: None,
            dry_run: false,
            options: None,
        })
    }

    const CM: &str = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":{"owner":"m\u00e9"}},"data":{"k":"v"}}"#;

    #[derive(Deserialize)]
    struct Named<'a> {
        #[serde(borrow)]
        metadata: Meta<'a>,
    }

    #[derive(Deserialize)]
    struct Meta<'a> {
        name: &'a str,
        #[serde(borrow)]
        labels: std::collections::BTreeMap<&'a str, Cow<'a, str>>,
    }

    #[test]
    fn objects_are_kept_as_sent_and_parsed_on_demand() {
        let req = request(Some(CM));
        assert_eq!(req.object_json(), Some(CM));
        // A typed read borrows from the text; an escaped string is unescaped.
        let n: Named<'_> = req.object_as().expect("typed");
        assert_eq!(n.metadata.name, "a");
        assert_eq!(n.metadata.labels["owner"], "mé");
        // The whole object, as a Value, once.
        let v = req.object().expect("object");
        assert_eq!(v["data"]["k"], "v");
        assert!(std::ptr::eq(v, req.object().expect("object")));
        assert_eq!(req.label("owner"), Some("mé"));
        assert_eq!(req.old_object(), None);
        assert_eq!(req.old_object_json(), None);
    }

    #[test]
    fn a_missing_object_reads_as_null() {
        let req = request(None);
        assert_eq!(req.object(), None);
        assert_eq!(req.object_as::<Option<Value>>().expect("null"), None);
        assert!(req.object_as::<Named<'_>>().is_err());
    }

    #[test]
    fn requests_compare_by_content() {
        let spaced = CM.replace(',', ", ");
        assert_eq!(request(Some(CM)), request(Some(&spaced)));
        assert_ne!(request(Some(CM)), request(Some("{}")));
        let from_value = crate::testing::create(serde_json::from_str(CM).expect("json"));
        assert_eq!(from_value.object(), request(Some(CM)).object());
        assert_eq!(
            from_value.object_as::<Value>().expect("typed"),
            json!(from_value.object())
        );
    }
}
