//! What a hook answers: allowed or denied (with a Status and its causes), a mutation,
//! warnings and audit annotations.

use serde_json::Value;

use crate::bindings::wasmgate::plugin::types as wit;

/// One cause of a denial (`Status.details.causes[]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    /// `FieldValueInvalid`, `FieldValueRequired`, ...
    pub reason: String,
    /// What is wrong.
    pub message: String,
    /// The field, e.g. `spec.replicas`.
    pub field: String,
}

impl Cause {
    /// `FieldValueInvalid` at `field`.
    pub fn invalid(field: &str, message: &str) -> Cause {
        Cause::new("FieldValueInvalid", field, message)
    }
    /// `FieldValueRequired` at `field`.
    pub fn required(field: &str, message: &str) -> Cause {
        Cause::new("FieldValueRequired", field, message)
    }
    /// `FieldValueForbidden` at `field`.
    pub fn forbidden(field: &str, message: &str) -> Cause {
        Cause::new("FieldValueForbidden", field, message)
    }
    /// A cause with any reason.
    pub fn new(reason: &str, field: &str, message: &str) -> Cause {
        Cause {
            reason: reason.into(),
            message: message.into(),
            field: field.into(),
        }
    }
}

/// A failure as a `metav1.Status`: code, reason, message, causes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    /// HTTP code.
    pub code: u16,
    /// `Forbidden`, `Invalid`, ...
    pub reason: String,
    /// What the client sees.
    pub message: String,
    /// Field-level causes.
    pub causes: Vec<Cause>,
}

impl Denial {
    /// A failure with no causes.
    pub fn new(code: u16, reason: &str, message: impl Into<String>) -> Denial {
        Denial {
            code,
            reason: reason.into(),
            message: message.into(),
            causes: Vec::new(),
        }
    }

    pub(crate) fn into_wit(self) -> wit::Status {
        wit::Status {
            code: self.code,
            reason: self.reason,
            message: self.message,
            causes: self
                .causes
                .into_iter()
                .map(|c| wit::StatusCause {
                    reason: c.reason,
                    message: c.message,
                    field: c.field,
                })
                .collect(),
        }
    }
}

/// What an admission hook answers.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// Whether the request may go on.
    pub allowed: bool,
    /// Why not, when denied.
    pub denial: Option<Denial>,
    /// The whole mutated object (`mutate` only).
    pub patched: Option<Value>,
    /// An RFC 6902 JSON patch against the request's object (`mutate` only; used when
    /// `patched` is not set).
    pub json_patch: Option<Value>,
    /// Sent to the client as `Warning` headers.
    pub warnings: Vec<String>,
    /// Audit annotations: key, value.
    pub audit_annotations: Vec<(String, String)>,
}

impl Response {
    /// Allowed, unchanged.
    pub fn allow() -> Response {
        Response {
            allowed: true,
            denial: None,
            patched: None,
            json_patch: None,
            warnings: Vec::new(),
            audit_annotations: Vec::new(),
        }
    }

    /// Denied with `message` (403 Forbidden unless [`Response::with_code`] says otherwise,
    /// as kube answers a webhook denial).
    pub fn deny(message: impl Into<String>) -> Response {
        Response {
            allowed: false,
            denial: Some(Denial::new(403, "Forbidden", message)),
            ..Response::allow()
        }
    }

    /// Allowed, with the object replaced by `object` (the gateway validates it again).
    pub fn patched(object: Value) -> Response {
        Response {
            patched: Some(object),
            ..Response::allow()
        }
    }

    /// Allowed, with the object changed by an RFC 6902 JSON patch, an array such as
    /// `[{"op": "add", "path": "/metadata/labels/team", "value": "a"}]` (use
    /// [`pointer_token`] for keys with `/` or `~`). Cheaper than [`Response::patched`]
    /// for small changes to large objects: only the patch crosses to the gateway.
    pub fn json_patch(ops: Value) -> Response {
        Response {
            json_patch: Some(ops),
            ..Response::allow()
        }
    }

    /// Adds a field-level cause to a denial. The gateway sends the causes in
    /// `Status.details.causes` and appends them to the message, so that kubectl prints
    /// them with it. (A `422 Invalid` denial, [`Response::with_code`], shows only the
    /// causes in kubectl, as kube's validation errors do.)
    pub fn with_cause(mut self, cause: Cause) -> Response {
        if let Some(d) = self.denial.as_mut() {
            d.causes.push(cause);
        }
        self
    }

    /// Sets the HTTP code of a denial, and its reason when the code has a standard one
    /// (400 BadRequest, 403 Forbidden, 404 NotFound, 409 Conflict, 422 Invalid).
    pub fn with_code(mut self, code: u16) -> Response {
        if let Some(d) = self.denial.as_mut() {
            d.code = code;
            let reason = match code {
                400 => Some("BadRequest"),
                403 => Some("Forbidden"),
                404 => Some("NotFound"),
                409 => Some("Conflict"),
                422 => Some("Invalid"),
                _ => None,
            };
            if let Some(r) = reason {
                d.reason = r.into();
            }
        }
        self
    }

    /// Adds a warning for the client.
    pub fn warn(mut self, warning: impl Into<String>) -> Response {
        self.warnings.push(warning.into());
        self
    }

    /// Adds an audit annotation.
    pub fn annotate(mut self, key: impl Into<String>, value: impl Into<String>) -> Response {
        self.audit_annotations.push((key.into(), value.into()));
        self
    }

    /// The causes of a denial (none when allowed).
    pub fn causes(&self) -> &[Cause] {
        self.denial.as_ref().map_or(&[], |d| &d.causes)
    }

    pub(crate) fn into_wit(self) -> wit::AdmissionResponse {
        wit::AdmissionResponse {
            allowed: self.allowed,
            status: self.denial.map(Denial::into_wit),
            mutation: match (self.patched, self.json_patch) {
                (Some(o), _) => Some(wit::Mutation::Object(o.to_string())),
                (None, Some(p)) => Some(wit::Mutation::JsonPatch(p.to_string())),
                (None, None) => None,
            },
            warnings: self.warnings,
            audit_annotations: self.audit_annotations,
        }
    }
}

/// One table column (`Table.columnDefinitions[]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    /// Header.
    pub name: String,
    /// `string`, `integer`, `number`, `boolean`, `date`.
    pub type_: String,
    /// `name`, `date`, ... or empty.
    pub format: String,
    /// What it shows.
    pub description: String,
    /// 0: always shown; higher: `-o wide`.
    pub priority: i32,
}

impl Column {
    /// A column of `type_` shown by default.
    pub fn new(name: &str, type_: &str, description: &str) -> Column {
        Column {
            name: name.into(),
            type_: type_.into(),
            format: String::new(),
            description: description.into(),
            priority: 0,
        }
    }

    pub(crate) fn into_wit(self) -> wit::ColumnDefinition {
        wit::ColumnDefinition {
            name: self.name,
            type_: self.type_,
            format: self.format,
            description: self.description,
            priority: self.priority,
        }
    }
}

/// A key as one token of a JSON pointer (RFC 6901): `~` as `~0`, `/` as `~1`.
/// `pointer_token("example.com/color")` is `example.com~1color`.
pub fn pointer_token(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}
