//! What an admission request carries (`AdmissionReview.request`), with the objects as JSON.

use serde::de::DeserializeOwned;
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
    /// The new object (create, update).
    pub object: Option<Value>,
    /// The existing object (update, delete).
    pub old_object: Option<Value>,
    /// Nothing will be persisted (`dryRun=All`).
    pub dry_run: bool,
    /// The operation's options (`CreateOptions`, `UpdateOptions`, `DeleteOptions`).
    pub options: Option<Value>,
}

impl Request {
    /// The new object deserialized into a type of yours.
    pub fn object_as<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        T::deserialize(self.object.as_ref().unwrap_or(&Value::Null))
    }

    /// The old object deserialized into a type of yours.
    pub fn old_object_as<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        T::deserialize(self.old_object.as_ref().unwrap_or(&Value::Null))
    }

    /// A label of the new object (of the old one on delete).
    pub fn label(&self, key: &str) -> Option<&str> {
        self.object
            .as_ref()
            .or(self.old_object.as_ref())?
            .get("metadata")?
            .get("labels")?
            .get(key)?
            .as_str()
    }

    pub(crate) fn from_wit(r: wit::AdmissionRequest) -> Result<Request, serde_json::Error> {
        let json = |s: Option<String>| s.map(|s| serde_json::from_str::<Value>(&s)).transpose();
        let kind = GroupVersionKind {
            group: r.kind.group,
            version: r.kind.version,
            kind: r.kind.kind,
        };
        Ok(Request {
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
            object: json(r.object)?,
            old_object: json(r.old_object)?,
            dry_run: r.dry_run,
            options: json(r.options)?,
        })
    }
}
