//! `metav1.Status` (`GAP-05`, `ERR-01`..`ERR-11`).

use serde::{Deserialize, Serialize};

use crate::media::{NotAcceptable, UnsupportedMediaType};
use crate::validation::FieldError;

/// One cause of a failure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusCause {
    /// Machine-readable reason (e.g. `FieldValueInvalid`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Human-readable message.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// The field path.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub field: String,
}

/// `details` of a Status.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusDetails {
    /// Object name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// API group.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// Kind or resource.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Object uid.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// Causes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<StatusCause>,
    /// Seconds to wait before retrying.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_seconds: Option<u32>,
}

impl StatusDetails {
    fn is_empty(&self) -> bool {
        *self == StatusDetails::default()
    }
}

/// A `Status` object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// `Status`.
    pub kind: String,
    /// `v1`.
    pub api_version: String,
    /// List metadata (empty).
    #[serde(default)]
    pub metadata: serde_json::Map<String, serde_json::Value>,
    /// `Success` or `Failure`.
    pub status: String,
    /// Human-readable message.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// Machine-readable reason.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Details.
    #[serde(default, skip_serializing_if = "StatusDetails::is_empty")]
    pub details: StatusDetails,
    /// HTTP status code.
    pub code: u16,
}

/// What a request was about, for `details`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Target<'a> {
    /// API group.
    pub group: &'a str,
    /// Resource (plural) — kube-apiserver puts the resource in `details.kind`.
    pub resource: &'a str,
    /// Object name.
    pub name: &'a str,
}

impl<'a> Target<'a> {
    /// `resource "name"` or `resource.group "name"`, as kube-apiserver's messages say.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.resource.to_owned()
        } else {
            format!("{}.{}", self.resource, self.group)
        }
    }
}

impl Status {
    /// A failure.
    pub fn failure(code: u16, reason: &str, message: impl Into<String>) -> Status {
        Status {
            kind: "Status".into(),
            api_version: "v1".into(),
            metadata: serde_json::Map::new(),
            status: "Failure".into(),
            message: message.into(),
            reason: reason.into(),
            details: StatusDetails::default(),
            code,
        }
    }

    /// A success (e.g. a delete that removed the object).
    pub fn success(t: Target<'_>, uid: &str) -> Status {
        Status {
            kind: "Status".into(),
            api_version: "v1".into(),
            metadata: serde_json::Map::new(),
            status: "Success".into(),
            message: String::new(),
            reason: String::new(),
            details: StatusDetails {
                name: t.name.into(),
                group: t.group.into(),
                kind: t.resource.into(),
                uid: uid.into(),
                ..StatusDetails::default()
            },
            code: 200,
        }
    }

    /// Sets `details` name/group/kind from a target.
    pub fn with_target(mut self, t: Target<'_>) -> Status {
        self.details.name = t.name.into();
        self.details.group = t.group.into();
        self.details.kind = t.resource.into();
        self
    }

    /// Adds `retryAfterSeconds`.
    pub fn with_retry_after(mut self, seconds: u32) -> Status {
        self.details.retry_after_seconds = Some(seconds);
        self
    }

    /// 404 NotFound for an object.
    pub fn not_found(t: Target<'_>) -> Status {
        Status::failure(
            404,
            "NotFound",
            format!("{} {:?} not found", t.qualified(), t.name),
        )
        .with_target(t)
    }

    /// 404 NotFound for an unknown path or resource type (`ERR-04`).
    pub fn not_found_path() -> Status {
        Status::failure(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
    }

    /// 409 AlreadyExists.
    pub fn already_exists(t: Target<'_>) -> Status {
        Status::failure(
            409,
            "AlreadyExists",
            format!("{} {:?} already exists", t.qualified(), t.name),
        )
        .with_target(t)
    }

    /// 409 Conflict (`UPD-01`).
    pub fn conflict(t: Target<'_>, detail: &str) -> Status {
        Status::failure(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} {:?}: {detail}",
                t.qualified(),
                t.name
            ),
        )
        .with_target(t)
    }

    /// 400 BadRequest.
    pub fn bad_request(message: impl Into<String>) -> Status {
        Status::failure(400, "BadRequest", message)
    }

    /// 403 Forbidden.
    pub fn forbidden(t: Target<'_>, detail: &str) -> Status {
        Status::failure(
            403,
            "Forbidden",
            format!("{} {:?} is forbidden: {detail}", t.qualified(), t.name),
        )
        .with_target(t)
    }

    /// 422 Invalid with one cause per field error (`ERR-08`).
    pub fn invalid(kind: &str, group: &str, name: &str, errors: &[FieldError]) -> Status {
        let qualified = crate::validation::qualified_kind(group, kind);
        let mut s = Status::failure(
            422,
            "Invalid",
            crate::validation::invalid_message(&qualified, name, errors),
        );
        s.details.name = name.into();
        s.details.group = group.into();
        s.details.kind = kind.into();
        s.details.causes = errors
            .iter()
            .map(|e| StatusCause {
                reason: e.reason().into(),
                message: e.message(),
                field: e.field.clone(),
            })
            .collect();
        s
    }

    /// 410 Expired (`ERR-06`).
    pub fn expired(message: impl Into<String>) -> Status {
        Status::failure(410, "Expired", message)
    }

    /// 504 Timeout for a resourceVersion that is too new (`ERR-07`).
    pub fn too_large_resource_version(requested: u64, current: u64) -> Status {
        let mut s = Status::failure(
            504,
            "Timeout",
            format!("Too large resource version: {requested}, current: {current}"),
        );
        s.details.causes = vec![StatusCause {
            reason: "ResourceVersionTooLarge".into(),
            message: "Too large resource version".into(),
            field: String::new(),
        }];
        s.details.retry_after_seconds = Some(1);
        s
    }

    /// 500 InternalError with a generic message (details go to logs only).
    pub fn internal() -> Status {
        Status::failure(
            500,
            "InternalError",
            "Internal error occurred: see the server log",
        )
    }

    /// JSON bytes.
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// The Status as a Kubernetes protobuf body (`ENC-04`), as kube-apiserver writes an
    /// error for a client that takes protobuf; `None` if it has no protobuf form (a
    /// `retryAfterSeconds` beyond `int32`).
    pub fn to_protobuf(&self) -> Option<Vec<u8>> {
        let value = serde_json::to_value(self).ok()?;
        crate::protobuf::encode("v1", "Status", &value).ok()
    }
}

/// 415 UnsupportedMediaType: a request body (or patch) in a media type not accepted here.
impl From<UnsupportedMediaType> for Status {
    fn from(e: UnsupportedMediaType) -> Status {
        Status::failure(415, "UnsupportedMediaType", e.to_string())
    }
}

/// 406 NotAcceptable: no response media type the client accepts.
impl From<NotAcceptable> for Status {
    fn from(e: NotAcceptable) -> Status {
        Status::failure(406, "NotAcceptable", e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gap_05_wire_shape() {
        let t = Target {
            group: "",
            resource: "configmaps",
            name: "nosuch",
        };
        let v: serde_json::Value = serde_json::from_slice(&Status::not_found(t).to_json()).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                "message":"configmaps \"nosuch\" not found","reason":"NotFound",
                "details":{"name":"nosuch","kind":"configmaps"},"code":404})
        );
        let c = Status::conflict(
            Target {
                group: "example.com",
                resource: "widgets",
                name: "w",
            },
            "the object has been modified; please apply your changes to the latest version and try again",
        );
        assert!(
            c.message
                .starts_with("Operation cannot be fulfilled on widgets.example.com \"w\"")
        );
    }

    #[test]
    fn media_errors_map_to_415_and_406() {
        let s = Status::from(UnsupportedMediaType {
            accepted: "application/json, application/yaml",
        });
        assert_eq!((s.code, s.reason.as_str()), (415, "UnsupportedMediaType"));
        assert_eq!(
            s.message,
            "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml"
        );
        let s = Status::from(NotAcceptable {
            accepted: "application/json",
        });
        assert_eq!((s.code, s.reason.as_str()), (406, "NotAcceptable"));
        assert_eq!(
            s.message,
            "only the following media types are accepted: application/json"
        );
    }
}
