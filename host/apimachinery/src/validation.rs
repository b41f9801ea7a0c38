//! Name, label and annotation validation, and field errors shaped like Kubernetes'.
//!
//! Everything here follows `k8s.io/apimachinery` as of Kubernetes v1.32 (the version the
//! server reports):
//!
//! * [`FieldError`] is `pkg/util/validation/field.Error`: the same error types, causes
//!   (`FieldValueInvalid`, …) and message text (`metadata.name: Invalid value: "Foo": …`).
//! * `is_*` functions are `pkg/util/validation` (`IsDNS1123Subdomain`, `IsQualifiedName`, …)
//!   and return the same message strings.
//! * [`validate_object_meta`], [`validate_labels`] and [`validate_annotations`] are
//!   `pkg/api/validation.ValidateObjectMetaAccessor` and friends, working on JSON.
//! * [`invalid_message`] is the `message` of the 422 `Status` built by `errors.NewInvalid`
//!   (ERR-08).
//!
//! Deliberate differences from v1.32:
//! * A bad value that is not a string, number or bool (a list, a map, `null`) is written as
//!   JSON with sorted keys, as Kubernetes v1.34+ does, not as Go syntax (`[]string{"a"}`).
//! * Go's `unicode.IsPrint`, used when quoting values, is approximated (controls, non-ASCII
//!   spaces and the common invisible format characters are escaped).
//! * Map keys (labels, annotations) are checked in sorted order; Go's order is random.

use std::fmt::{self, Write as _};

use serde_json::{Map, Value};

use crate::gofmt::go_json;

/// Most bytes that all annotations of one object may hold together (keys plus values).
pub const TOTAL_ANNOTATION_SIZE_LIMIT_B: usize = 256 * 1024;
/// Longest DNS-1123 label (and label value, and label-key name part).
pub const DNS1123_LABEL_MAX_LENGTH: usize = 63;
/// Longest DNS-1123 subdomain.
pub const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;
/// Longest label value.
pub const LABEL_VALUE_MAX_LENGTH: usize = 63;
/// Longest `managedFields[].manager`.
pub const FIELD_MANAGER_MAX_LENGTH: usize = 128;
/// Longest `managedFields[].subresource`.
pub const MAX_SUBRESOURCE_NAME_LENGTH: usize = 256;

/// `field is immutable`, the detail Kubernetes uses for changed immutable fields.
pub const FIELD_IMMUTABLE_ERROR_MSG: &str = "field is immutable";

/// The kind of a [`FieldError`]; `k8s.io/apimachinery/pkg/util/validation/field.ErrorType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldErrorKind {
    /// A looked-up value does not exist.
    NotFound,
    /// A required value is missing.
    Required,
    /// A value that must be unique is repeated.
    Duplicate,
    /// A malformed value.
    Invalid,
    /// A value outside an enumeration.
    NotSupported,
    /// A well-formed value not allowed in this situation.
    Forbidden,
    /// A value that is too long (the value is not repeated in the message).
    TooLong,
    /// A value that is too short (newer Kubernetes only).
    TooShort,
    /// A list with too many items.
    TooMany,
    /// A list with too few items (newer Kubernetes only).
    TooFew,
    /// An error not caused by the input.
    Internal,
    /// A value of the wrong type.
    TypeInvalid,
}

impl FieldErrorKind {
    /// The `metav1.CauseType` (`StatusCause.reason`) for this kind.
    pub fn reason(self) -> &'static str {
        match self {
            Self::NotFound => "FieldValueNotFound",
            Self::Required => "FieldValueRequired",
            Self::Duplicate => "FieldValueDuplicate",
            Self::Invalid => "FieldValueInvalid",
            Self::NotSupported => "FieldValueNotSupported",
            Self::Forbidden => "FieldValueForbidden",
            Self::TooLong => "FieldValueTooLong",
            Self::TooShort => "FieldValueTooShort",
            Self::TooMany => "FieldValueTooMany",
            Self::TooFew => "FieldValueTooFew",
            Self::Internal => "InternalError",
            Self::TypeInvalid => "FieldValueTypeInvalid",
        }
    }

    /// The human text for this kind (`ErrorType.String()`): `Invalid value`, `Required value`, …
    pub fn text(self) -> &'static str {
        match self {
            Self::NotFound => "Not found",
            Self::Required => "Required value",
            Self::Duplicate => "Duplicate value",
            Self::Invalid | Self::TypeInvalid => "Invalid value",
            Self::NotSupported => "Unsupported value",
            Self::Forbidden => "Forbidden",
            Self::TooLong => "Too long",
            Self::TooShort => "Too short",
            Self::TooMany => "Too many",
            Self::TooFew => "Too few",
            Self::Internal => "Internal error",
        }
    }
}

/// One field error, shaped like `k8s.io/apimachinery/pkg/util/validation/field.Error`.
///
/// `bad_value: None` means "omitted": the message then carries no value, as with Go's
/// `omitValue`. For `Required`, `Forbidden`, `TooLong` and `Internal` the value is never shown.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    /// What went wrong.
    pub kind: FieldErrorKind,
    /// The field path, e.g. `metadata.labels` or `spec.containers[0].name`.
    pub field: String,
    /// The offending value, if it is to be shown.
    pub bad_value: Option<Value>,
    /// Extra explanation appended after the value.
    pub detail: String,
}

impl FieldError {
    fn new(
        kind: FieldErrorKind,
        field: impl Into<String>,
        bad_value: Option<Value>,
        detail: impl Into<String>,
    ) -> Self {
        Self {
            kind,
            field: field.into(),
            bad_value,
            detail: detail.into(),
        }
    }

    /// `field.NotFound`.
    pub fn not_found(field: impl Into<String>, value: impl Into<Value>) -> Self {
        Self::new(FieldErrorKind::NotFound, field, Some(value.into()), "")
    }

    /// `field.Required`.
    pub fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(
            FieldErrorKind::Required,
            field,
            Some(Value::from("")),
            detail,
        )
    }

    /// `field.Duplicate`.
    pub fn duplicate(field: impl Into<String>, value: impl Into<Value>) -> Self {
        Self::new(FieldErrorKind::Duplicate, field, Some(value.into()), "")
    }

    /// `field.Invalid`.
    pub fn invalid(
        field: impl Into<String>,
        value: impl Into<Value>,
        detail: impl Into<String>,
    ) -> Self {
        Self::new(FieldErrorKind::Invalid, field, Some(value.into()), detail)
    }

    /// `field.NotSupported`: the detail lists the supported values, each Go-quoted.
    pub fn not_supported(
        field: impl Into<String>,
        value: impl Into<Value>,
        supported: &[&str],
    ) -> Self {
        let detail = if supported.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = supported.iter().map(|v| go_quote(v)).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        Self::new(
            FieldErrorKind::NotSupported,
            field,
            Some(value.into()),
            detail,
        )
    }

    /// `field.Forbidden`.
    pub fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(
            FieldErrorKind::Forbidden,
            field,
            Some(Value::from("")),
            detail,
        )
    }

    /// `field.TooLong`: `may not be more than <max> bytes` (or `value is too long` when
    /// `max_length` is `None`).
    pub fn too_long(field: impl Into<String>, max_length: Option<usize>) -> Self {
        let detail = match max_length {
            Some(max) => format!("may not be more than {max} bytes"),
            None => "value is too long".to_owned(),
        };
        Self::new(
            FieldErrorKind::TooLong,
            field,
            Some(Value::from("<value omitted>")),
            detail,
        )
    }

    /// `field.TooMany`: `must have at most <max> items`; `actual` is shown when known.
    pub fn too_many(field: impl Into<String>, actual: Option<usize>, max: Option<usize>) -> Self {
        let detail = match max {
            Some(max) => format!("must have at most {max} items"),
            None => "has too many items".to_owned(),
        };
        Self::new(
            FieldErrorKind::TooMany,
            field,
            actual.map(Value::from),
            detail,
        )
    }

    /// `field.InternalError`.
    pub fn internal(field: impl Into<String>, error: impl fmt::Display) -> Self {
        Self::new(FieldErrorKind::Internal, field, None, error.to_string())
    }

    /// `field.TypeInvalid`.
    pub fn type_invalid(
        field: impl Into<String>,
        value: impl Into<Value>,
        detail: impl Into<String>,
    ) -> Self {
        Self::new(
            FieldErrorKind::TypeInvalid,
            field,
            Some(value.into()),
            detail,
        )
    }

    /// The `StatusCause.reason` (`FieldValueInvalid`, `FieldValueRequired`, …).
    pub fn reason(&self) -> &'static str {
        self.kind.reason()
    }

    /// The message without the field name (Go's `ErrorBody()`), as used in
    /// `StatusCause.message`: `Invalid value: "Foo": a lowercase RFC 1123 …`.
    pub fn message(&self) -> String {
        let mut s = self.kind.text().to_owned();
        let shows_value = !matches!(
            self.kind,
            FieldErrorKind::Required
                | FieldErrorKind::Forbidden
                | FieldErrorKind::TooLong
                | FieldErrorKind::Internal
        );
        if shows_value && let Some(value) = &self.bad_value {
            s.push_str(": ");
            match value {
                Value::String(text) => s.push_str(&go_quote(text)),
                Value::Bool(b) => s.push_str(if *b { "true" } else { "false" }),
                Value::Number(n) => s.push_str(&n.to_string()),
                other => s.push_str(&go_json(other)),
            }
        }
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }

    /// This error as a `metav1.StatusCause`: `{"reason", "message", "field"}`.
    pub fn to_status_cause(&self) -> Value {
        let mut cause = Map::new();
        cause.insert("reason".into(), Value::from(self.reason()));
        cause.insert("message".into(), Value::from(self.message()));
        cause.insert("field".into(), Value::from(self.field.clone()));
        Value::Object(cause)
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message())
    }
}

impl std::error::Error for FieldError {}

/// The text of `field.ErrorList.ToAggregate().Error()`: duplicate messages dropped, one error
/// printed bare, several as `[e1, e2]`. Empty input gives an empty string.
pub fn aggregate_message(errors: &[FieldError]) -> String {
    // Order kept, duplicates dropped in linear time (100,000 errors are possible).
    let mut unique = std::collections::HashSet::with_capacity(errors.len());
    let mut seen: Vec<String> = Vec::with_capacity(errors.len());
    for e in errors {
        let msg = e.to_string();
        if unique.insert(msg.clone()) {
            seen.push(msg);
        }
    }
    match seen.len() {
        0 => String::new(),
        1 => seen.swap_remove(0),
        _ => format!("[{}]", seen.join(", ")),
    }
}

/// kube-apiserver's message line for a 422 (`errors.NewInvalid`):
/// `<Kind> "<name>" is invalid: <aggregate>`, where the aggregate is one error bare or several
/// as `[err1, err2]`; with no errors, just `<Kind> "<name>" is invalid`.
///
/// `kind` is the qualified kind: `Kind` for the core group, `Kind.group` otherwise (see
/// [`qualified_kind`]). The name is Go-quoted.
pub fn invalid_message(kind: &str, name: &str, errors: &[FieldError]) -> String {
    let head = format!("{kind} {} is invalid", go_quote(name));
    if errors.is_empty() {
        head
    } else {
        format!("{head}: {}", aggregate_message(errors))
    }
}

/// `schema.GroupKind.String()`: `Kind` for the core group, else `Kind.group`.
pub fn qualified_kind(group: &str, kind: &str) -> String {
    if group.is_empty() {
        kind.to_owned()
    } else {
        format!("{kind}.{group}")
    }
}

// ---------------------------------------------------------------------------------------------
// Go-compatible quoting
// ---------------------------------------------------------------------------------------------

/// Quotes a string the way Go's `%q` / `strconv.Quote` does: `"a\"b"`, `"\n"`, `"\x00"`,
/// `"\u00a0"`. Printable non-ASCII characters are kept.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{07}' => out.push_str("\\a"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0C}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{0B}' => out.push_str("\\v"),
            c if go_is_print(c) => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if (c as u32) < 0x10000 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\U{:08x}", c as u32);
            }
        }
    }
    out.push('"');
    out
}

/// An approximation of Go's `unicode.IsPrint`: letters, marks, numbers, punctuation, symbols
/// and the ASCII space.
fn go_is_print(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    if c.is_control() || c.is_whitespace() {
        return false;
    }
    !matches!(c,
        '\u{AD}'
        | '\u{600}'..='\u{605}'
        | '\u{61C}'
        | '\u{6DD}'
        | '\u{70F}'
        | '\u{180E}'
        | '\u{200B}'..='\u{200F}'
        | '\u{2028}'..='\u{202E}'
        | '\u{2060}'..='\u{206F}'
        | '\u{E000}'..='\u{F8FF}'
        | '\u{FEFF}'
        | '\u{FFF9}'..='\u{FFFB}'
        | '\u{FFFE}'..='\u{FFFF}'
        | '\u{F0000}'..='\u{10FFFF}'
    )
}

// ---------------------------------------------------------------------------------------------
// String formats (k8s.io/apimachinery/pkg/util/validation)
// ---------------------------------------------------------------------------------------------

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_ERR_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_ERR_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const QUALIFIED_NAME_MAX_LENGTH: usize = 63;
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const CONFIG_MAP_KEY_FMT: &str = "[-._a-zA-Z0-9]+";
const CONFIG_MAP_KEY_ERR_MSG: &str =
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.'";

/// `validation.MaxLenError`: `must be no more than <n> characters`.
pub fn max_len_error(length: usize) -> String {
    format!("must be no more than {length} characters")
}

/// `validation.EmptyError`: `must be non-empty`.
pub fn empty_error() -> &'static str {
    "must be non-empty"
}

/// `validation.RegexError`: `<msg> (e.g. 'a' or 'b', regex used for validation is '<fmt>')`.
pub fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let mut s = format!("{msg} (e.g. ");
    for (i, example) in examples.iter().enumerate() {
        if i > 0 {
            s.push_str(" or ");
        }
        let _ = write!(s, "'{example}', ");
    }
    let _ = write!(s, "regex used for validation is '{fmt}')");
    s
}

/// `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
fn matches_dns1123_label(v: &str) -> bool {
    let b = v.as_bytes();
    let edge = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    match (b.first(), b.last()) {
        (Some(&first), Some(&last)) => {
            edge(first) && edge(last) && b.iter().all(|&c| edge(c) || c == b'-')
        }
        _ => false,
    }
}

/// `^[a-z]([-a-z0-9]*[a-z0-9])?$`
fn matches_dns1035_label(v: &str) -> bool {
    matches_dns1123_label(v) && v.as_bytes().first().is_some_and(u8::is_ascii_lowercase)
}

/// `^<label>(\.<label>)*$`
fn matches_dns1123_subdomain(v: &str) -> bool {
    v.split('.').all(matches_dns1123_label)
}

/// `^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`
fn matches_qualified_name(v: &str) -> bool {
    let b = v.as_bytes();
    match (b.first(), b.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && b.iter()
                    .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// `path.IsValidPathSegmentName`: the names of RBAC objects (anything that is not `.` or
/// `..` and has no `/` or `%`).
pub fn is_path_segment_name(v: &str) -> Vec<String> {
    if v == "." || v == ".." {
        return vec![format!("may not be '{v}'")];
    }
    ["/", "%"]
        .iter()
        .filter(|c| v.contains(**c))
        .map(|c| format!("may not contain '{c}'"))
        .collect()
}

/// `IsDNS1123Label`: a lowercase RFC 1123 label (namespace names, many object names).
pub fn is_dns1123_label(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_LABEL_MAX_LENGTH));
    }
    if !matches_dns1123_label(v) {
        if matches_dns1123_subdomain(v) {
            errs.push("must not contain dots".to_owned());
        } else {
            errs.push(regex_error(
                DNS1123_LABEL_ERR_MSG,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// `IsDNS1123Subdomain`: a lowercase RFC 1123 subdomain (most object names).
pub fn is_dns1123_subdomain(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !matches_dns1123_subdomain(v) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR_MSG,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// `IsDNS1035Label`: a DNS-1035 label (service names).
pub fn is_dns1035_label(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_LABEL_MAX_LENGTH));
    }
    if !matches_dns1035_label(v) {
        errs.push(regex_error(
            DNS1035_LABEL_ERR_MSG,
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

/// `IsQualifiedName`: an optional DNS-subdomain prefix and `/`, then a name of at most 63
/// characters (label keys, annotation keys, finalizers).
pub fn is_qualified_name(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = v.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push(format!("prefix part {}", empty_error()));
            } else {
                errs.extend(
                    is_dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(QUALIFIED_NAME_ERR_MSG, QUALIFIED_NAME_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push(format!("name part {}", empty_error()));
    } else if name.len() > QUALIFIED_NAME_MAX_LENGTH {
        errs.push(format!(
            "name part {}",
            max_len_error(QUALIFIED_NAME_MAX_LENGTH)
        ));
    }
    if !matches_qualified_name(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_ERR_MSG,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// `IsValidLabelValue`: empty, or at most 63 characters of `[-A-Za-z0-9_.]` starting and
/// ending with an alphanumeric.
pub fn is_valid_label_value(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > LABEL_VALUE_MAX_LENGTH {
        errs.push(max_len_error(LABEL_VALUE_MAX_LENGTH));
    }
    if !v.is_empty() && !matches_qualified_name(v) {
        errs.push(regex_error(
            LABEL_VALUE_ERR_MSG,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// `IsConfigMapKey`: a key of a ConfigMap's or Secret's `data`.
pub fn is_config_map_key(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    let charset_ok = !v.is_empty()
        && v.bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_'));
    if !charset_ok {
        errs.push(regex_error(
            CONFIG_MAP_KEY_ERR_MSG,
            CONFIG_MAP_KEY_FMT,
            &["key.name", "KEY_NAME", "key-name"],
        ));
    }
    if v == "." {
        errs.push("must not be '.'".to_owned());
    } else if v == ".." {
        errs.push("must not be '..'".to_owned());
    } else if v.starts_with("..") {
        errs.push("must not start with '..'".to_owned());
    }
    errs
}

/// `maskTrailingDash`: what a name check sees for a `generateName` prefix. A trailing `-`
/// (on a prefix longer than one byte) is replaced, together with the byte before it, by `a`,
/// exactly as Kubernetes does.
pub fn mask_trailing_dash(name: &str) -> String {
    if name.len() > 1 && name.ends_with('-') {
        let kept = name.as_bytes().get(..name.len() - 2).unwrap_or_default();
        let mut s = String::from_utf8_lossy(kept).into_owned();
        s.push('a');
        s
    } else {
        name.to_owned()
    }
}

// ---------------------------------------------------------------------------------------------
// ObjectMeta validation (k8s.io/apimachinery/pkg/api/validation)
// ---------------------------------------------------------------------------------------------

/// `field.Path.Child`: `name` below `path` (`a.b`), or `name` alone at the root.
pub(crate) fn child(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

/// `field.Path.Index`: `path[i]`.
pub(crate) fn index(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}

/// Reads a `map[string]string` field: `Ok(None)` when absent or null, a type error otherwise.
fn string_map<'a>(
    v: &'a Value,
    path: &str,
    errs: &mut Vec<FieldError>,
) -> Option<Vec<(&'a str, &'a str)>> {
    match v {
        Value::Null => None,
        Value::Object(map) => {
            let mut entries = Vec::with_capacity(map.len());
            for (k, item) in map {
                match item {
                    Value::String(s) => entries.push((k.as_str(), s.as_str())),
                    // A null value decodes to "" in Go.
                    Value::Null => entries.push((k.as_str(), "")),
                    other => errs.push(FieldError::type_invalid(
                        format!("{path}[{k}]"),
                        other.clone(),
                        "must be of type string",
                    )),
                }
            }
            entries.sort_by(|a, b| a.0.cmp(b.0));
            Some(entries)
        }
        other => {
            errs.push(FieldError::type_invalid(
                path,
                other.clone(),
                "must be of type object",
            ));
            None
        }
    }
}

/// `ValidateLabels`: every key is a qualified name, every value a valid label value. Errors
/// carry `path` itself (not `path[key]`), as Kubernetes does. `null` is fine.
pub fn validate_labels(labels: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(entries) = string_map(labels, path, &mut errs) {
        for (k, v) in entries {
            errs.extend(
                is_qualified_name(k)
                    .into_iter()
                    .map(|m| FieldError::invalid(path, k, m)),
            );
            errs.extend(
                is_valid_label_value(v)
                    .into_iter()
                    .map(|m| FieldError::invalid(path, v, m)),
            );
        }
    }
    errs
}

/// `ValidateAnnotations`: keys are qualified names once lower-cased, and keys plus values add
/// up to at most 256 KiB ([`TOTAL_ANNOTATION_SIZE_LIMIT_B`]). `null` is fine.
pub fn validate_annotations(annotations: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(entries) = string_map(annotations, path, &mut errs) {
        let mut total = 0usize;
        for (k, v) in entries {
            errs.extend(
                is_qualified_name(&k.to_lowercase())
                    .into_iter()
                    .map(|m| FieldError::invalid(path, k, m)),
            );
            total = total.saturating_add(k.len()).saturating_add(v.len());
        }
        if total > TOTAL_ANNOTATION_SIZE_LIMIT_B {
            errs.push(FieldError::too_long(
                path,
                Some(TOTAL_ANNOTATION_SIZE_LIMIT_B),
            ));
        }
    }
    errs
}

/// `ValidateFinalizers`: every finalizer is a qualified name, and `orphan` and
/// `foregroundDeletion` are not both present.
pub fn validate_finalizers(finalizers: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let items = match finalizers {
        Value::Null => return errs,
        Value::Array(items) => items,
        other => {
            errs.push(FieldError::type_invalid(
                path,
                other.clone(),
                "must be of type array",
            ));
            return errs;
        }
    };
    let (mut orphan, mut foreground) = (false, false);
    for (i, item) in items.iter().enumerate() {
        let Some(name) = item.as_str() else {
            errs.push(FieldError::type_invalid(
                index(path, i),
                item.clone(),
                "must be of type string",
            ));
            continue;
        };
        errs.extend(
            is_qualified_name(name)
                .into_iter()
                .map(|m| FieldError::invalid(path, name, m)),
        );
        orphan |= name == "orphan";
        foreground |= name == "foregroundDeletion";
    }
    if orphan && foreground {
        errs.push(FieldError::invalid(
            path,
            finalizers.clone(),
            "finalizer orphan and foregroundDeletion cannot be both set",
        ));
    }
    errs
}

fn str_field<'a>(obj: &'a Map<String, Value>, key: &str) -> &'a str {
    obj.get(key).and_then(Value::as_str).unwrap_or("")
}

/// `ValidateOwnerReferences`: each reference has a version, kind, name and uid, is not an
/// Event, and at most one has `controller: true`. Errors carry `path` (no index), as
/// Kubernetes does.
pub fn validate_owner_references(refs: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let items = match refs {
        Value::Null => return errs,
        Value::Array(items) => items,
        other => {
            errs.push(FieldError::type_invalid(
                path,
                other.clone(),
                "must be of type array",
            ));
            return errs;
        }
    };
    let mut first_controller: Option<String> = None;
    for (i, item) in items.iter().enumerate() {
        let Some(r) = item.as_object() else {
            errs.push(FieldError::type_invalid(
                index(path, i),
                item.clone(),
                "must be of type object",
            ));
            continue;
        };
        let api_version = str_field(r, "apiVersion");
        let kind = str_field(r, "kind");
        let name = str_field(r, "name");
        let uid = str_field(r, "uid");
        // schema.FromAPIVersionAndKind: "v1" is the core group; more than one '/' is unparseable.
        let (group, version) = match api_version.split_once('/') {
            None => ("", api_version),
            Some((_, rest)) if rest.contains('/') => ("", ""),
            Some((g, v)) => (g, v),
        };
        if version.is_empty() {
            errs.push(FieldError::invalid(
                child(path, "apiVersion"),
                api_version,
                "version must not be empty",
            ));
        }
        if kind.is_empty() {
            errs.push(FieldError::invalid(
                child(path, "kind"),
                kind,
                "kind must not be empty",
            ));
        }
        if name.is_empty() {
            errs.push(FieldError::invalid(
                child(path, "name"),
                name,
                "name must not be empty",
            ));
        }
        if uid.is_empty() {
            errs.push(FieldError::invalid(
                child(path, "uid"),
                uid,
                "uid must not be empty",
            ));
        }
        if group.is_empty() && version == "v1" && kind == "Event" {
            errs.push(FieldError::invalid(
                path,
                item.clone(),
                "/v1, Kind=Event is disallowed from being an owner",
            ));
        }
        if r.get("controller").and_then(Value::as_bool) == Some(true) {
            let current = format!("{kind}/{name}");
            match &first_controller {
                Some(first) => errs.push(FieldError::invalid(
                    path,
                    refs.clone(),
                    format!(
                        "Only one reference can have Controller set to true. Found \"true\" in references for {first} and {current}"
                    ),
                )),
                None => first_controller = Some(current),
            }
        }
    }
    errs
}

/// `ValidateManagedFields`: operation `Apply` or `Update`, fieldsType `FieldsV1`, a printable
/// manager of at most 128 bytes, a subresource of at most 256 bytes.
pub fn validate_managed_fields(entries: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let items = match entries {
        Value::Null => return errs,
        Value::Array(items) => items,
        other => {
            errs.push(FieldError::type_invalid(
                path,
                other.clone(),
                "must be of type array",
            ));
            return errs;
        }
    };
    for (i, item) in items.iter().enumerate() {
        let entry_path = index(path, i);
        let Some(entry) = item.as_object() else {
            errs.push(FieldError::type_invalid(
                entry_path,
                item.clone(),
                "must be of type object",
            ));
            continue;
        };
        let operation = str_field(entry, "operation");
        if operation != "Apply" && operation != "Update" {
            errs.push(FieldError::invalid(
                child(&entry_path, "operation"),
                operation,
                "must be `Apply` or `Update`",
            ));
        }
        let fields_type = str_field(entry, "fieldsType");
        if !fields_type.is_empty() && fields_type != "FieldsV1" {
            errs.push(FieldError::invalid(
                child(&entry_path, "fieldsType"),
                fields_type,
                "must be `FieldsV1`",
            ));
        }
        errs.extend(validate_field_manager(
            str_field(entry, "manager"),
            &child(&entry_path, "manager"),
        ));
        if str_field(entry, "subresource").len() > MAX_SUBRESOURCE_NAME_LENGTH {
            errs.push(FieldError::too_long(
                child(&entry_path, "subresource"),
                Some(MAX_SUBRESOURCE_NAME_LENGTH),
            ));
        }
    }
    errs
}

/// `ValidateFieldManager`: at most 128 bytes, printable characters only.
pub fn validate_field_manager(manager: &str, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if manager.len() > FIELD_MANAGER_MAX_LENGTH {
        errs.push(FieldError::too_long(path, Some(FIELD_MANAGER_MAX_LENGTH)));
    }
    for (pos, c) in manager.char_indices() {
        if !go_is_print(c) {
            errs.push(FieldError::invalid(
                path,
                manager,
                format!("invalid character U+{:04X} (at position {pos})", c as u32),
            ));
        }
    }
    errs
}

/// `ValidateObjectMetaAccessor` on a JSON object's `metadata`, for create (name generation
/// already done). Checks, in Kubernetes' order:
///
/// 1. `generateName` through `name_check` after [`mask_trailing_dash`];
/// 2. `name` required (`name or generateName is required`), then `name_check`;
/// 3. `namespace` required and a DNS-1123 label when `namespaced`, else forbidden
///    (`not allowed on this type`);
/// 4. `generation` not negative;
/// 5. labels, annotations, ownerReferences, finalizers, managedFields.
///
/// `name_check` is usually [`is_dns1123_subdomain`] or [`is_dns1123_label`]. A missing or
/// `null` metadata counts as empty.
pub fn validate_object_meta(
    meta: &Value,
    namespaced: bool,
    name_check: fn(&str) -> Vec<String>,
) -> Vec<FieldError> {
    const PATH: &str = "metadata";
    let empty = Map::new();
    let meta = match meta {
        Value::Null => &empty,
        Value::Object(m) => m,
        other => {
            return vec![FieldError::type_invalid(
                PATH,
                other.clone(),
                "must be of type object",
            )];
        }
    };
    let mut errs = Vec::new();

    let generate_name = str_field(meta, "generateName");
    if !generate_name.is_empty() {
        errs.extend(
            name_check(&mask_trailing_dash(generate_name))
                .into_iter()
                .map(|m| FieldError::invalid(child(PATH, "generateName"), generate_name, m)),
        );
    }

    let name = str_field(meta, "name");
    if name.is_empty() {
        errs.push(FieldError::required(
            child(PATH, "name"),
            "name or generateName is required",
        ));
    } else {
        errs.extend(
            name_check(name)
                .into_iter()
                .map(|m| FieldError::invalid(child(PATH, "name"), name, m)),
        );
    }

    let namespace = str_field(meta, "namespace");
    if namespaced {
        if namespace.is_empty() {
            errs.push(FieldError::required(child(PATH, "namespace"), ""));
        } else {
            errs.extend(
                is_dns1123_label(namespace)
                    .into_iter()
                    .map(|m| FieldError::invalid(child(PATH, "namespace"), namespace, m)),
            );
        }
    } else if !namespace.is_empty() {
        errs.push(FieldError::forbidden(
            child(PATH, "namespace"),
            "not allowed on this type",
        ));
    }

    if let Some(generation) = meta.get("generation").and_then(Value::as_i64)
        && generation < 0
    {
        errs.push(FieldError::invalid(
            child(PATH, "generation"),
            generation,
            "must be greater than or equal to 0",
        ));
    }

    let field = |key: &str| meta.get(key).unwrap_or(&Value::Null);
    errs.extend(validate_labels(field("labels"), &child(PATH, "labels")));
    errs.extend(validate_annotations(
        field("annotations"),
        &child(PATH, "annotations"),
    ));
    errs.extend(validate_owner_references(
        field("ownerReferences"),
        &child(PATH, "ownerReferences"),
    ));
    errs.extend(validate_finalizers(
        field("finalizers"),
        &child(PATH, "finalizers"),
    ));
    errs.extend(validate_managed_fields(
        field("managedFields"),
        &child(PATH, "managedFields"),
    ));
    errs
}

/// `metav1validation.ValidateLabelSelector` on a JSON `metav1.LabelSelector` (as in
/// `spec.selector` of workloads): matchLabels as labels, and each matchExpressions entry with
/// a known operator, values present for `In`/`NotIn` and absent for `Exists`/`DoesNotExist`,
/// a qualified-name key and valid label values.
pub fn validate_label_selector(selector: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let sel = match selector {
        Value::Null => return errs,
        Value::Object(m) => m,
        other => {
            errs.push(FieldError::type_invalid(
                path,
                other.clone(),
                "must be of type object",
            ));
            return errs;
        }
    };
    errs.extend(validate_labels(
        sel.get("matchLabels").unwrap_or(&Value::Null),
        &child(path, "matchLabels"),
    ));
    let exprs_path = child(path, "matchExpressions");
    let exprs = match sel.get("matchExpressions").unwrap_or(&Value::Null) {
        Value::Null => return errs,
        Value::Array(items) => items,
        other => {
            errs.push(FieldError::type_invalid(
                exprs_path,
                other.clone(),
                "must be of type array",
            ));
            return errs;
        }
    };
    for (i, expr) in exprs.iter().enumerate() {
        let expr_path = index(&exprs_path, i);
        let Some(expr) = expr.as_object() else {
            errs.push(FieldError::type_invalid(
                expr_path,
                expr.clone(),
                "must be of type object",
            ));
            continue;
        };
        let operator = str_field(expr, "operator");
        let values: Vec<&Value> = match expr.get("values") {
            Some(Value::Array(items)) => items.iter().collect(),
            _ => Vec::new(),
        };
        match operator {
            "In" | "NotIn" if values.is_empty() => errs.push(FieldError::required(
                child(&expr_path, "values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            )),
            "Exists" | "DoesNotExist" if !values.is_empty() => errs.push(FieldError::forbidden(
                child(&expr_path, "values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => errs.push(FieldError::invalid(
                child(&expr_path, "operator"),
                other,
                "not a valid selector operator",
            )),
        }
        let key = str_field(expr, "key");
        errs.extend(
            is_qualified_name(key)
                .into_iter()
                .map(|m| FieldError::invalid(child(&expr_path, "key"), key, m)),
        );
        for (j, value) in values.iter().enumerate() {
            let value_path = index(&child(&expr_path, "values"), j);
            match value.as_str() {
                Some(v) => errs.extend(
                    is_valid_label_value(v)
                        .into_iter()
                        .map(|m| FieldError::invalid(value_path.clone(), v, m)),
                ),
                None => errs.push(FieldError::type_invalid(
                    value_path,
                    (*value).clone(),
                    "must be of type string",
                )),
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quote_like_go() {
        assert_eq!(go_quote("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(go_quote("\n\t\u{0}\u{7f}"), r#""\n\t\x00\x7f""#);
        assert_eq!(go_quote("é\u{a0}\u{200b}"), "\"é\\u00a0\\u200b\"");
        assert_eq!(go_quote("\u{10ffff}"), "\"\\U0010ffff\"");
    }

    #[test]
    fn mask_trailing_dash_drops_two_bytes() {
        assert_eq!(mask_trailing_dash("foo-"), "foa");
        assert_eq!(mask_trailing_dash("-"), "-");
        assert_eq!(mask_trailing_dash("a-"), "a");
        assert_eq!(mask_trailing_dash("é-"), "\u{fffd}a");
        assert_eq!(mask_trailing_dash("abc"), "abc");
    }
}
