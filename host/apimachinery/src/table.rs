//! `meta.k8s.io` Table replies and the server-side printers for the built-in resources.
//!
//! kubectl asks for `Accept: application/json;as=Table;g=meta.k8s.io;v=v1` (or `v=v1beta1`,
//! TABLE-01/TABLE-04) and prints the cells it gets back verbatim, so every cell is computed here:
//! ages are strings such as `"5m30s"` (Go's `duration.HumanDuration`), counts are JSON integers.
//! Columns with `priority > 0` are always sent (kube-apiserver renders with `Wide: true`); kubectl
//! hides them unless `-o wide`.
//!
//! Behaviour follows Kubernetes 1.32:
//! * `pkg/printers/internalversion/printers.go` (column definitions and `print*` functions),
//! * `pkg/printers/tablegenerator.go` (server renders wide, all cells always present),
//! * `apiserver/pkg/registry/rest/table.go` (the default `Name` + `Created At` table, TABLE-02),
//! * `apiserver/pkg/endpoints/handlers/response.go` (`includeObject`, GAP-07),
//! * `apimachinery/pkg/util/duration` (`HumanDuration`).
//!
//! Everything here is pure: callers pass `now`, nothing reads a clock or does I/O.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use time::format_description::well_known::Rfc3339;
use time::{Duration, OffsetDateTime};

/// `apiVersion` of a Table in the `meta.k8s.io/v1` group version (TABLE-01).
pub const TABLE_API_V1: &str = "meta.k8s.io/v1";
/// `apiVersion` of a Table in the legacy `meta.k8s.io/v1beta1` group version (TABLE-04).
pub const TABLE_API_V1BETA1: &str = "meta.k8s.io/v1beta1";

/// One column of a Table (`meta.k8s.io/v1` `TableColumnDefinition`). Field order matches Go's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ColumnDefinition {
    /// Human readable column name; kubectl upper-cases it for the header.
    pub name: String,
    /// OpenAPI type: `string`, `integer`, `number`, `boolean` or `date`.
    #[serde(rename = "type")]
    pub type_: String,
    /// OpenAPI format; `name` marks the primary name column.
    pub format: String,
    /// Human readable description.
    pub description: String,
    /// `0` = standard view, `> 0` = only shown by kubectl with `-o wide`.
    pub priority: i32,
}

impl ColumnDefinition {
    /// Builds a column definition.
    pub fn new(name: &str, type_: &str, format: &str, description: &str, priority: i32) -> Self {
        Self {
            name: name.to_owned(),
            type_: type_.to_owned(),
            format: format.to_owned(),
            description: description.to_owned(),
            priority,
        }
    }
}

/// One row of a Table (`meta.k8s.io/v1` `TableRow`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableRow {
    /// One cell per column definition, in column order.
    pub cells: Vec<Value>,
    /// Optional row conditions (only `Completed` is defined by Kubernetes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Value>,
    /// The object according to `includeObject`: `PartialObjectMetadata`, the full object, or
    /// absent for `None`. kubectl reads `NAMESPACE`, `--show-labels` and `-L` from here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<Value>,
}

/// A `meta.k8s.io` Table.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// [`TABLE_API_V1`] or [`TABLE_API_V1BETA1`].
    pub api_version: String,
    /// `ListMeta`: `resourceVersion`, `continue`, `remainingItemCount` (see [`list_metadata`]).
    pub metadata: Value,
    /// The columns, in order.
    pub column_definitions: Vec<ColumnDefinition>,
    /// The rows, in order.
    pub rows: Vec<TableRow>,
}

impl Table {
    /// The wire form: `{"kind":"Table","apiVersion":..,"metadata":..,"columnDefinitions":..,
    /// "rows":..}` with `kind` first. A null `metadata` is sent as `{}` (Go never omits it) and
    /// `rows` is always an array.
    pub fn to_json(&self) -> Value {
        let mut out = Map::new();
        out.insert("kind".to_owned(), Value::from("Table"));
        out.insert(
            "apiVersion".to_owned(),
            Value::from(self.api_version.as_str()),
        );
        let metadata = match &self.metadata {
            Value::Null => Value::Object(Map::new()),
            other => other.clone(),
        };
        out.insert("metadata".to_owned(), metadata);
        let columns = self.column_definitions.iter().map(column_json).collect();
        out.insert("columnDefinitions".to_owned(), Value::Array(columns));
        let rows = self.rows.iter().map(row_json).collect();
        out.insert("rows".to_owned(), Value::Array(rows));
        Value::Object(out)
    }
}

fn column_json(c: &ColumnDefinition) -> Value {
    let mut m = Map::new();
    m.insert("name".to_owned(), Value::from(c.name.as_str()));
    m.insert("type".to_owned(), Value::from(c.type_.as_str()));
    m.insert("format".to_owned(), Value::from(c.format.as_str()));
    m.insert(
        "description".to_owned(),
        Value::from(c.description.as_str()),
    );
    m.insert("priority".to_owned(), Value::from(c.priority));
    Value::Object(m)
}

fn row_json(r: &TableRow) -> Value {
    let mut m = Map::new();
    m.insert("cells".to_owned(), Value::Array(r.cells.clone()));
    if let Some(c) = &r.conditions {
        m.insert("conditions".to_owned(), c.clone());
    }
    if let Some(o) = &r.object {
        m.insert("object".to_owned(), o.clone());
    }
    Value::Object(m)
}

/// `ListMeta` for a Table, with Go's `omitempty` behaviour: empty `resource_version` and
/// `continue_token` and a `None` count are left out.
pub fn list_metadata(
    resource_version: &str,
    continue_token: &str,
    remaining_item_count: Option<i64>,
) -> Value {
    let mut m = Map::new();
    if !resource_version.is_empty() {
        m.insert("resourceVersion".to_owned(), Value::from(resource_version));
    }
    if !continue_token.is_empty() {
        m.insert("continue".to_owned(), Value::from(continue_token));
    }
    if let Some(n) = remaining_item_count {
        m.insert("remainingItemCount".to_owned(), Value::from(n));
    }
    Value::Object(m)
}

/// The `includeObject` query parameter (`metav1.IncludeObjectPolicy`, GAP-07).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IncludeObject {
    /// `None`: rows carry no object.
    None,
    /// `Metadata` (the default): rows carry `PartialObjectMetadata`.
    #[default]
    Metadata,
    /// `Object`: rows carry the full object (kubectl sends this for `--sort-by`).
    Object,
}

impl IncludeObject {
    /// Parses the query value. Absent or empty means `Metadata`; matching is case-sensitive
    /// like Go's. The error is the message of kube-apiserver's 400 BadRequest.
    pub fn parse(value: Option<&str>) -> Result<Self, String> {
        match value {
            None | Some("") | Some("Metadata") => Ok(Self::Metadata),
            Some("None") => Ok(Self::None),
            Some("Object") => Ok(Self::Object),
            Some(other) => Err(format!(
                "Unable to convert to Table as requested: includeObject: Invalid value: {}: \
                 must be 'Metadata', 'Object', 'None', or empty",
                crate::validation::go_quote(other)
            )),
        }
    }

    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "None",
            Self::Metadata => "Metadata",
            Self::Object => "Object",
        }
    }
}

/// What goes into `rows[].object` for `include`:
/// * `Metadata`: `{"kind":"PartialObjectMetadata","apiVersion":<table_api_version>,
///   "metadata":<the object's metadata>}` (the Table's group version, as kube-apiserver does);
/// * `Object`: the object itself (the caller makes sure `kind`/`apiVersion` are set);
/// * `None`: nothing.
pub fn row_object(obj: &Value, include: IncludeObject, table_api_version: &str) -> Option<Value> {
    match include {
        IncludeObject::None => None,
        IncludeObject::Object => Some(obj.clone()),
        IncludeObject::Metadata => {
            let metadata = match obj.get("metadata") {
                Some(m @ Value::Object(_)) => m.clone(),
                _ => Value::Object(Map::new()),
            };
            let mut m = Map::new();
            m.insert("kind".to_owned(), Value::from("PartialObjectMetadata"));
            m.insert("apiVersion".to_owned(), Value::from(table_api_version));
            m.insert("metadata".to_owned(), metadata);
            Some(Value::Object(m))
        }
    }
}

const NANOS_PER_SECOND: i64 = 1_000_000_000;
const NANOS_PER_MINUTE: i64 = 60 * NANOS_PER_SECOND;
const NANOS_PER_HOUR: i64 = 60 * NANOS_PER_MINUTE;

/// Go's `duration.HumanDuration`: about 2-3 significant figures, e.g. `"45s"`, `"119s"`,
/// `"5m30s"`, `"179m"`, `"7h59m"`, `"47h"`, `"2d5h"`, `"300d"`, `"3y100d"`, `"10y"`.
/// Up to 1s in the future counts as `"0s"`; further is `"<invalid>"`. Like Go's `time.Duration`
/// the value saturates at about ±292 years.
pub fn human_duration(d: Duration) -> String {
    let nanos = i64::try_from(d.whole_nanoseconds()).unwrap_or(if d.is_negative() {
        i64::MIN
    } else {
        i64::MAX
    });
    let seconds = nanos / NANOS_PER_SECOND;
    if seconds < -1 {
        return "<invalid>".to_owned();
    }
    if seconds < 0 {
        return "0s".to_owned();
    }
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = nanos / NANOS_PER_MINUTE;
    if minutes < 10 {
        let s = seconds % 60;
        if s == 0 {
            return format!("{minutes}m");
        }
        return format!("{minutes}m{s}s");
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = nanos / NANOS_PER_HOUR;
    if hours < 8 {
        let m = minutes % 60;
        if m == 0 {
            return format!("{hours}h");
        }
        return format!("{hours}h{m}m");
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        if h == 0 {
            return format!("{}d", hours / 24);
        }
        return format!("{}d{}h", hours / 24, h);
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        if dy == 0 {
            return format!("{}y", hours / 24 / 365);
        }
        return format!("{}y{}d", hours / 24 / 365, dy);
    }
    format!("{}y", hours / 24 / 365)
}

/// Parses a `metav1.Time` / `metav1.MicroTime` string. `None` when absent, unparsable or Go's
/// zero time (`0001-01-01T00:00:00Z`), i.e. whenever Go's `IsZero()` would be true.
fn parse_time(ts: Option<&str>) -> Option<OffsetDateTime> {
    let t = OffsetDateTime::parse(ts?, &Rfc3339).ok()?;
    if t == time::macros::datetime!(0001-01-01 0:00 UTC) {
        return None;
    }
    Some(t)
}

/// The cell of a `date` column, as kube's printers make it from a value (the CRD printer
/// columns' `cellForJSONValue`, and so kubectl's `AGE`): a timestamp shows its age,
/// [`human_duration`] of `now - ts` (`"7s"`, `"5m"`, `"3d"`); an empty or zero one
/// `"<unknown>"` (`ConvertToHumanReadableDateType`); a string that is not RFC 3339
/// `"<invalid>"`; anything but a string (absent, `null`, a number) an empty cell (`null`).
/// Printer plugins' `date` cells go through here too: a plugin's clock is stopped, so the
/// host computes their ages.
pub fn date_cell(value: Option<&Value>, now: OffsetDateTime) -> Value {
    let Some(Value::String(s)) = value else {
        return Value::Null;
    };
    // `metav1.Time.UnmarshalQueryParameter`: "" and "null" are the zero time.
    if s.is_empty() || s == "null" {
        return Value::from("<unknown>");
    }
    match OffsetDateTime::parse(s, &Rfc3339) {
        Err(_) => Value::from("<invalid>"),
        Ok(t) if t == time::macros::datetime!(0001-01-01 0:00 UTC) => Value::from("<unknown>"),
        Ok(t) => Value::from(human_duration(now - t)),
    }
}

/// Like Go's `translateTimestampSince`: `"<unknown>"` for a missing (or zero) timestamp,
/// otherwise [`human_duration`] of `now - ts`.
pub fn age_since(ts: Option<&str>, now: OffsetDateTime) -> String {
    match parse_time(ts) {
        Some(t) => human_duration(now - t),
        None => "<unknown>".to_owned(),
    }
}

/// The timestamp as Go's `Time.UTC().Format(time.RFC3339)` prints it: UTC, whole seconds.
/// A missing timestamp prints Go's zero time, `0001-01-01T00:00:00Z`.
fn rfc3339_utc_seconds(ts: Option<&str>) -> String {
    match parse_time(ts) {
        Some(t) => crate::gofmt::rfc3339(t),
        None => "0001-01-01T00:00:00Z".to_owned(),
    }
}

// Descriptions: the Kubernetes 1.32 swagger docs the Go printers use.
const DESC_NAME: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
const DESC_CREATION_TIMESTAMP: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
const DESC_NAMESPACE_STATUS: &str = "The status of the namespace";
const DESC_CONFIGMAP_DATA: &str = "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation process.";
const DESC_SECRET_TYPE: &str = "Used to facilitate programmatic handling of secret data. More info: https://kubernetes.io/docs/concepts/configuration/secret/#secret-types";
const DESC_SECRET_DATA: &str = "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. The serialized form of the secret data is a base64 encoded string, representing the arbitrary (possibly non-string) data value here. Described in https://tools.ietf.org/html/rfc4648#section-4";
const DESC_SA_SECRETS: &str = "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use. Pods are only limited to this list if this service account has a \"kubernetes.io/enforce-mountable-secrets\" annotation set to \"true\". The \"kubernetes.io/enforce-mountable-secrets\" annotation is deprecated since v1.32. Prefer separate namespaces to isolate access to mounted secrets. This field should not be used to find auto-generated service account token secrets for use outside of pods. Instead, tokens can be requested directly using the TokenRequest API, or service account token secrets can be manually created. More info: https://kubernetes.io/docs/concepts/configuration/secret";
const DESC_EVENT_LAST_TIMESTAMP: &str =
    "The time at which the most recent occurrence of this event was recorded.";
const DESC_EVENT_TYPE: &str =
    "Type of this event (Normal, Warning), new types could be added in the future";
const DESC_EVENT_REASON: &str = "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.";
const DESC_EVENT_INVOLVED_OBJECT: &str = "The object that this event is about.";
const DESC_OBJREF_FIELD_PATH: &str = "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2]. For example, if the object reference is to a container within a pod, this would take on a value like: \"spec.containers{name}\" (where \"name\" refers to the name of the container that triggered the event) or if no container name is specified \"spec.containers[2]\" (container with index 2 in this pod). This syntax is chosen only to have some well-defined way of referencing a part of an object.";
const DESC_EVENT_SOURCE: &str =
    "The component reporting this event. Should be a short machine understandable string.";
const DESC_EVENT_MESSAGE: &str = "A human-readable description of the status of this operation.";
const DESC_EVENT_FIRST_TIMESTAMP: &str =
    "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)";
const DESC_EVENT_COUNT: &str = "The number of times this event has occurred.";
const DESC_LEASE_HOLDER: &str = "holderIdentity contains the identity of the holder of a current lease. If Coordinated Leader Election is used, the holder identity must be equal to the elected LeaseCandidate.metadata.name field.";
const DESC_WEBHOOKS: &str =
    "Webhooks indicates the number of webhooks registered in this configuration";

fn name_column() -> ColumnDefinition {
    ColumnDefinition::new("Name", "string", "name", DESC_NAME, 0)
}

fn age_column() -> ColumnDefinition {
    ColumnDefinition::new("Age", "string", "", DESC_CREATION_TIMESTAMP, 0)
}

/// The default table for resources without a printer (TABLE-02): `Name` (format `name`) and
/// `Created At` (type `date`; kubectl shows it as `AGE`).
pub fn default_columns() -> Vec<ColumnDefinition> {
    vec![
        name_column(),
        ColumnDefinition::new("Created At", "date", "", DESC_CREATION_TIMESTAMP, 0),
    ]
}

/// Cells of the default table (TABLE-02): `metadata.name` and `metadata.creationTimestamp` as
/// an RFC 3339 UTC timestamp in whole seconds (Go's zero time when unset).
pub fn default_cells(obj: &Value) -> Vec<Value> {
    vec![
        Value::from(meta_str(obj, "name")),
        Value::from(rfc3339_utc_seconds(meta_opt_str(obj, "creationTimestamp"))),
    ]
}

/// Column definitions of the built-in printers Wasmgate serves, as Kubernetes 1.32 defines
/// them (all columns, wide ones with priority 1). `None` for any other resource.
pub fn builtin_columns(group: &str, resource: &str) -> Option<Vec<ColumnDefinition>> {
    let columns = match (group, resource) {
        ("", "namespaces") => vec![
            name_column(),
            ColumnDefinition::new("Status", "string", "", DESC_NAMESPACE_STATUS, 0),
            age_column(),
        ],
        ("", "configmaps") => vec![
            name_column(),
            ColumnDefinition::new("Data", "string", "", DESC_CONFIGMAP_DATA, 0),
            age_column(),
        ],
        ("", "secrets") => vec![
            name_column(),
            ColumnDefinition::new("Type", "string", "", DESC_SECRET_TYPE, 0),
            ColumnDefinition::new("Data", "string", "", DESC_SECRET_DATA, 0),
            age_column(),
        ],
        ("", "serviceaccounts") => vec![
            name_column(),
            ColumnDefinition::new("Secrets", "string", "", DESC_SA_SECRETS, 0),
            age_column(),
        ],
        // events.k8s.io events are core events to kube's printer (one stored resource).
        ("" | "events.k8s.io", "events") => vec![
            ColumnDefinition::new("Last Seen", "string", "", DESC_EVENT_LAST_TIMESTAMP, 0),
            ColumnDefinition::new("Type", "string", "", DESC_EVENT_TYPE, 0),
            ColumnDefinition::new("Reason", "string", "", DESC_EVENT_REASON, 0),
            ColumnDefinition::new("Object", "string", "", DESC_EVENT_INVOLVED_OBJECT, 0),
            ColumnDefinition::new("Subobject", "string", "", DESC_OBJREF_FIELD_PATH, 1),
            ColumnDefinition::new("Source", "string", "", DESC_EVENT_SOURCE, 1),
            ColumnDefinition::new("Message", "string", "", DESC_EVENT_MESSAGE, 0),
            ColumnDefinition::new("First Seen", "string", "", DESC_EVENT_FIRST_TIMESTAMP, 1),
            ColumnDefinition::new("Count", "string", "", DESC_EVENT_COUNT, 1),
            ColumnDefinition::new("Name", "string", "name", DESC_NAME, 1),
        ],
        ("coordination.k8s.io", "leases") => vec![
            name_column(),
            ColumnDefinition::new("Holder", "string", "", DESC_LEASE_HOLDER, 0),
            age_column(),
        ],
        (
            "admissionregistration.k8s.io",
            "mutatingwebhookconfigurations" | "validatingwebhookconfigurations",
        ) => vec![
            name_column(),
            ColumnDefinition::new("Webhooks", "integer", "", DESC_WEBHOOKS, 0),
            age_column(),
        ],
        _ => return None,
    };
    Some(columns)
}

/// Cells of the built-in printers, one per [`builtin_columns`] entry, with the JSON types
/// kube-apiserver sends (counts are integers even where the column type says `string`).
/// `None` for any resource without a built-in printer.
pub fn builtin_cells(
    group: &str,
    resource: &str,
    obj: &Value,
    now: OffsetDateTime,
) -> Option<Vec<Value>> {
    let name = || Value::from(meta_str(obj, "name"));
    let age = || Value::from(age_since(meta_opt_str(obj, "creationTimestamp"), now));
    let cells = match (group, resource) {
        // printNamespace: name, status.phase, age.
        ("", "namespaces") => vec![
            name(),
            Value::from(str_at(obj, &["status", "phase"])),
            age(),
        ],
        // printConfigMap: int64(len(data) + len(binaryData)).
        ("", "configmaps") => {
            let n = len_at(obj, &["data"]).saturating_add(len_at(obj, &["binaryData"]));
            vec![name(), Value::from(n), age()]
        }
        // printSecret: type, int64(len(data)).
        ("", "secrets") => vec![
            name(),
            Value::from(str_at(obj, &["type"])),
            Value::from(len_at(obj, &["data"])),
            age(),
        ],
        // printServiceAccount: int64(len(secrets)).
        ("", "serviceaccounts") => vec![name(), Value::from(len_at(obj, &["secrets"])), age()],
        ("", "events") => event_cells(obj, now),
        ("events.k8s.io", "events") => event_cells(&crate::events::v1_to_core(obj.clone()), now),
        // printLease: spec.holderIdentity or "".
        ("coordination.k8s.io", "leases") => {
            vec![
                name(),
                Value::from(str_at(obj, &["spec", "holderIdentity"])),
                age(),
            ]
        }
        // printMutatingWebhook / printValidatingWebhook: int64(len(webhooks)).
        (
            "admissionregistration.k8s.io",
            "mutatingwebhookconfigurations" | "validatingwebhookconfigurations",
        ) => vec![name(), Value::from(len_at(obj, &["webhooks"])), age()],
        _ => return None,
    };
    Some(cells)
}

/// printEvent with `Wide: true` (kube-apiserver always renders wide).
fn event_cells(obj: &Value, now: OffsetDateTime) -> Vec<Value> {
    let first_ts = opt_str_at(obj, &["firstTimestamp"]);
    let first = if parse_time(first_ts).is_some() {
        age_since(first_ts, now)
    } else {
        age_since(opt_str_at(obj, &["eventTime"]), now)
    };
    let last_ts = opt_str_at(obj, &["lastTimestamp"]);
    let mut last = if parse_time(last_ts).is_some() {
        age_since(last_ts, now)
    } else {
        first.clone()
    };
    let mut count = int_at(obj, &["count"]);
    match obj.get("series") {
        Some(series @ Value::Object(_)) => {
            last = age_since(opt_str_at(series, &["lastObservedTime"]), now);
            count = int_at(series, &["count"]);
        }
        // Singleton events don't have a count set in the new API.
        _ if count == 0 => count = 1,
        _ => {}
    }
    let kind = str_at(obj, &["involvedObject", "kind"]).to_lowercase();
    let involved_name = str_at(obj, &["involvedObject", "name"]);
    let target = if involved_name.is_empty() {
        kind
    } else {
        format!("{kind}/{involved_name}")
    };
    let component = first_non_empty(
        str_at(obj, &["source", "component"]),
        str_at(obj, &["reportingComponent"]),
    );
    let instance = first_non_empty(
        str_at(obj, &["source", "host"]),
        str_at(obj, &["reportingInstance"]),
    );
    let source = if instance.is_empty() {
        component.to_owned()
    } else {
        format!("{component}, {instance}")
    };
    vec![
        Value::from(last),
        Value::from(str_at(obj, &["type"])),
        Value::from(str_at(obj, &["reason"])),
        Value::from(target),
        Value::from(str_at(obj, &["involvedObject", "fieldPath"])),
        Value::from(source),
        Value::from(str_at(obj, &["message"]).trim()),
        Value::from(first),
        Value::from(count),
        Value::from(meta_str(obj, "name")),
    ]
}

/// The printer's columns for `group`/`resource`, or the default table's (TABLE-02).
pub fn columns_for(group: &str, resource: &str) -> Vec<ColumnDefinition> {
    builtin_columns(group, resource).unwrap_or_else(default_columns)
}

/// The printer's cells for `obj`, or the default table's (TABLE-02).
pub fn cells_for(group: &str, resource: &str, obj: &Value, now: OffsetDateTime) -> Vec<Value> {
    builtin_cells(group, resource, obj, now).unwrap_or_else(|| default_cells(obj))
}

/// A row for `obj`: [`cells_for`] plus [`row_object`].
pub fn build_row(
    group: &str,
    resource: &str,
    obj: &Value,
    include: IncludeObject,
    table_api_version: &str,
    now: OffsetDateTime,
) -> TableRow {
    TableRow {
        cells: cells_for(group, resource, obj, now),
        conditions: None,
        object: row_object(obj, include, table_api_version),
    }
}

/// A whole Table for `objects` (one object for a single GET, the items for a list), using the
/// built-in printer or the default table. `metadata` is the `ListMeta` ([`list_metadata`]).
pub fn build_table(
    group: &str,
    resource: &str,
    objects: &[Value],
    include: IncludeObject,
    table_api_version: &str,
    metadata: Value,
    now: OffsetDateTime,
) -> Table {
    Table {
        api_version: table_api_version.to_owned(),
        metadata,
        column_definitions: columns_for(group, resource),
        rows: objects
            .iter()
            .map(|o| build_row(group, resource, o, include, table_api_version, now))
            .collect(),
    }
}

fn first_non_empty<'a>(a: &'a str, b: &'a str) -> &'a str {
    if a.is_empty() { b } else { a }
}

fn value_at<'a>(obj: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(obj, |v, key| v.get(*key))
}

fn opt_str_at<'a>(obj: &'a Value, path: &[&str]) -> Option<&'a str> {
    value_at(obj, path).and_then(Value::as_str)
}

fn str_at<'a>(obj: &'a Value, path: &[&str]) -> &'a str {
    opt_str_at(obj, path).unwrap_or("")
}

fn meta_opt_str<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    opt_str_at(obj, &["metadata", key])
}

fn meta_str<'a>(obj: &'a Value, key: &str) -> &'a str {
    meta_opt_str(obj, key).unwrap_or("")
}

fn int_at(obj: &Value, path: &[&str]) -> i64 {
    value_at(obj, path).and_then(Value::as_i64).unwrap_or(0)
}

/// Number of entries of the map or list at `path` (0 when absent, null or another type).
fn len_at(obj: &Value, path: &[&str]) -> i64 {
    let n = match value_at(obj, path) {
        Some(Value::Object(m)) => m.len(),
        Some(Value::Array(a)) => a.len(),
        _ => 0,
    };
    i64::try_from(n).unwrap_or(i64::MAX)
}
