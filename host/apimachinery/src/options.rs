//! Query parameters to typed options, and the `resourceVersion` rules for get, list and
//! watch (`RV-01`..`RV-10`, `CHUNK-01`..`CHUNK-06`, `STREAM-01`..`STREAM-03`, `DRY-01`,
//! `FV-01`, `GAP-03`, `GAP-06`).

use std::borrow::Cow;

use base64::Engine as _;
use serde::{Deserialize, Serialize};

use crate::selectors::{FieldSelector, LabelSelector};

/// A bad option value: the server answers 400 BadRequest with this message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct OptionsError(pub String);

fn bad(msg: impl Into<String>) -> OptionsError {
    OptionsError(msg.into())
}

/// Decoded query parameters, in order.
#[derive(Debug, Clone, Default)]
pub struct Query {
    pairs: Vec<(String, String)>,
}

impl Query {
    /// Parses a raw query string (`a=1&b=x%20y`); `+` means a space, as in Go's
    /// `url.ParseQuery`.
    pub fn parse(raw: Option<&str>) -> Query {
        let mut pairs = Vec::new();
        for part in raw.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (k, v) = part.split_once('=').unwrap_or((part, ""));
            pairs.push((decode(k).into_owned(), decode(v).into_owned()));
        }
        Query { pairs }
    }

    /// The first value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every value of `name`.
    pub fn get_all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.pairs
            .iter()
            .filter(move |(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Whether `name` is present (with any value).
    pub fn has(&self, name: &str) -> bool {
        self.pairs.iter().any(|(k, _)| k == name)
    }

    /// `name` as a boolean (`strconv.ParseBool`); absent or empty is `None`.
    pub fn bool(&self, name: &str) -> Result<Option<bool>, OptionsError> {
        match self.get(name) {
            None | Some("") => Ok(None),
            Some(v) => parse_bool(v)
                .map(Some)
                .ok_or_else(|| bad(format!("invalid boolean value {v:?} for {name}"))),
        }
    }
}

fn decode(s: &str) -> Cow<'_, str> {
    if !s.contains(['%', '+']) {
        return Cow::Borrowed(s);
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push(h * 16 + l);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    Cow::Owned(String::from_utf8_lossy(&out).into_owned())
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Go's `strconv.ParseBool`: `1 t T TRUE true True 0 f F FALSE false False`.
pub fn parse_bool(v: &str) -> Option<bool> {
    match v {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// `resourceVersionMatch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResourceVersionMatch {
    /// `NotOlderThan`.
    NotOlderThan,
    /// `Exact`.
    Exact,
}

/// List and watch options.
#[derive(Debug, Clone, Default)]
pub struct ListOptions {
    /// `labelSelector`.
    pub label_selector: LabelSelector,
    /// `fieldSelector`.
    pub field_selector: FieldSelector,
    /// `watch`.
    pub watch: bool,
    /// `allowWatchBookmarks`.
    pub allow_watch_bookmarks: bool,
    /// `resourceVersion` (absent and empty are both `None`).
    pub resource_version: Option<String>,
    /// `resourceVersionMatch`.
    pub resource_version_match: Option<ResourceVersionMatch>,
    /// `timeoutSeconds`.
    pub timeout_seconds: Option<u64>,
    /// `limit` (0 or absent: no limit).
    pub limit: u64,
    /// `continue`.
    pub continue_token: Option<String>,
    /// `sendInitialEvents`.
    pub send_initial_events: Option<bool>,
}

impl ListOptions {
    /// Reads list/watch options from a query.
    pub fn from_query(q: &Query) -> Result<Self, OptionsError> {
        let label_selector = LabelSelector::parse(q.get("labelSelector").unwrap_or(""))
            .map_err(|e| bad(format!("unable to parse requirement: {e}")))?;
        let field_selector = FieldSelector::parse(q.get("fieldSelector").unwrap_or(""))
            .map_err(|e| bad(format!("invalid field selector: {e}")))?;
        let resource_version_match = match q.get("resourceVersionMatch") {
            None | Some("") => None,
            Some("NotOlderThan") => Some(ResourceVersionMatch::NotOlderThan),
            Some("Exact") => Some(ResourceVersionMatch::Exact),
            Some(other) => {
                return Err(bad(format!(
                    "resourceVersionMatch: Unsupported value: {other:?}: supported values: \"Exact\", \"NotOlderThan\", \"\""
                )));
            }
        };
        let timeout_seconds = match q.get("timeoutSeconds") {
            None | Some("") => None,
            Some(v) => Some(
                v.parse::<i64>()
                    .map_err(|_| bad(format!("invalid value {v:?} for timeoutSeconds")))?
                    .max(0) as u64,
            ),
        };
        let limit = match q.get("limit") {
            None | Some("") => 0,
            Some(v) => v
                .parse::<i64>()
                .map_err(|_| bad(format!("invalid value {v:?} for limit")))?
                .max(0) as u64,
        };
        Ok(ListOptions {
            label_selector,
            field_selector,
            watch: q.bool("watch")?.unwrap_or(false),
            allow_watch_bookmarks: q.bool("allowWatchBookmarks")?.unwrap_or(false),
            resource_version: q
                .get("resourceVersion")
                .filter(|v| !v.is_empty())
                .map(str::to_owned),
            resource_version_match,
            timeout_seconds,
            limit,
            continue_token: q
                .get("continue")
                .filter(|v| !v.is_empty())
                .map(str::to_owned),
            send_initial_events: q.bool("sendInitialEvents")?,
        })
    }
}

/// Parses a `resourceVersion` the client sent back (`RV-01`: opaque to clients, ours are
/// decimal revisions).
pub fn parse_resource_version(v: &str) -> Result<u64, OptionsError> {
    v.parse::<u64>()
        .map_err(|_| bad(format!("invalid resource version {v:?}")))
}

/// How a list is to be served (`RV-05`, `RV-06`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListSemantics {
    /// A consistent read of the newest data.
    MostRecent,
    /// Any data; the newest is served.
    Any,
    /// At least this revision.
    NotOlderThan(u64),
    /// Exactly this revision (410 when compacted).
    Exact(u64),
    /// The next page of a paginated list.
    Continue(ContinueToken),
}

/// Decides the list semantics from the options, rejecting the invalid combinations of
/// the `RV-05` table with 400 Bad Request.
pub fn list_semantics(o: &ListOptions) -> Result<ListSemantics, OptionsError> {
    let rv = o.resource_version.as_deref();
    if let Some(token) = &o.continue_token {
        if o.resource_version_match.is_some() {
            return Err(bad(
                "resourceVersionMatch is forbidden when continue is provided",
            ));
        }
        if rv.is_some_and(|v| v != "0") {
            return Err(bad(
                "specifying resource version is not allowed when using continue",
            ));
        }
        return ContinueToken::decode(token).map(ListSemantics::Continue);
    }
    match (o.resource_version_match, rv) {
        (Some(_), None) => Err(bad(
            "resourceVersionMatch is forbidden unless resourceVersion is provided",
        )),
        (Some(ResourceVersionMatch::Exact), Some("0")) => Err(bad(
            "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
        )),
        (Some(ResourceVersionMatch::Exact), Some(v)) => {
            Ok(ListSemantics::Exact(parse_resource_version(v)?))
        }
        (Some(ResourceVersionMatch::NotOlderThan), Some("0")) | (None, Some("0")) => {
            Ok(ListSemantics::Any)
        }
        (Some(ResourceVersionMatch::NotOlderThan), Some(v)) => {
            Ok(ListSemantics::NotOlderThan(parse_resource_version(v)?))
        }
        (None, None) => Ok(ListSemantics::MostRecent),
        (None, Some(v)) => {
            let rev = parse_resource_version(v)?;
            if o.limit > 0 {
                Ok(ListSemantics::Exact(rev))
            } else {
                Ok(ListSemantics::NotOlderThan(rev))
            }
        }
    }
}

/// Where a watch starts (`WATCH-03`, `STREAM-01`..`STREAM-03`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchStart {
    /// Synthetic ADDED events for the current state, then changes. With `bookmark`, a
    /// BOOKMARK marking the end of the initial events follows them (streaming list).
    InitialState {
        /// Send the `k8s.io/initial-events-end` bookmark.
        bookmark: bool,
        /// The state must be at least this fresh.
        not_older_than: Option<u64>,
    },
    /// Only changes after this revision.
    After(u64),
    /// Only changes after the current revision.
    Now,
}

/// Decides where a watch starts, validating `sendInitialEvents` and
/// `resourceVersionMatch` as kube-apiserver does for watch.
pub fn watch_start(o: &ListOptions) -> Result<WatchStart, OptionsError> {
    let rv = o.resource_version.as_deref();
    match o.send_initial_events {
        Some(send) => {
            if o.resource_version_match != Some(ResourceVersionMatch::NotOlderThan) {
                return Err(bad(
                    "resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                ));
            }
            if send && !o.allow_watch_bookmarks {
                return Err(bad(
                    "allowWatchBookmarks: Forbidden: sendInitialEvents requires setting allowWatchBookmarks to true",
                ));
            }
            let min = match rv {
                None | Some("0") => None,
                Some(v) => Some(parse_resource_version(v)?),
            };
            if send {
                Ok(WatchStart::InitialState {
                    bookmark: true,
                    not_older_than: min,
                })
            } else {
                Ok(min.map_or(WatchStart::Now, WatchStart::After))
            }
        }
        None => {
            if o.resource_version_match.is_some() {
                return Err(bad(
                    "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                ));
            }
            match rv {
                None | Some("0") => Ok(WatchStart::InitialState {
                    bookmark: false,
                    not_older_than: None,
                }),
                Some(v) => Ok(WatchStart::After(parse_resource_version(v)?)),
            }
        }
    }
}

/// The opaque `continue` token: the list's revision and the last key returned, relative
/// to the listed prefix (`CHUNK-06`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContinueToken {
    /// Token format version.
    pub v: String,
    /// The revision of the first page.
    pub rv: u64,
    /// The last key returned, relative to the listed prefix.
    pub start: String,
}

impl ContinueToken {
    /// A token for the page after `start`.
    pub fn new(rv: u64, start: impl Into<String>) -> Self {
        ContinueToken {
            v: "meta.k8s.io/v1".into(),
            rv,
            start: start.into(),
        }
    }

    /// The wire form.
    pub fn encode(&self) -> String {
        let json = serde_json::to_vec(self).unwrap_or_default();
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json)
    }

    /// Parses the wire form, refusing what kube's `DecodeContinue` refuses (400): bad
    /// encoding, an unknown version, revision 0, an empty start key, and a start key that
    /// is not a clean relative path (it could reach outside the listed prefix).
    pub fn decode(s: &str) -> Result<Self, OptionsError> {
        let invalid = |why: &str| {
            bad(format!(
                "invalid continue token: continue key is not valid{why}"
            ))
        };
        let bad_rv =
            || invalid(": incorrect encoded start resourceVersion (version meta.k8s.io/v1)");
        let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(s.trim_end_matches('='))
            .map_err(|_| bad_rv())?;
        let t: ContinueToken = serde_json::from_slice(&raw).map_err(|_| bad_rv())?;
        if t.v != "meta.k8s.io/v1" {
            return Err(invalid(&format!(
                ": server does not recognize this encoded version {}",
                t.v
            )));
        }
        if t.rv == 0 {
            return Err(bad_rv());
        }
        if t.start.is_empty() {
            return Err(invalid(
                ": encoded start key empty (version meta.k8s.io/v1)",
            ));
        }
        if !is_clean_relative_key(&t.start) {
            return Err(invalid(&format!(": {}", t.start)));
        }
        Ok(t)
    }
}

/// Whether `/` + `key` is what Go's `path.Clean` leaves unchanged: no empty, `.` or `..`
/// segment and no trailing slash (and no NUL, which no stored key has).
fn is_clean_relative_key(key: &str) -> bool {
    let key = key.strip_prefix('/').unwrap_or(key);
    !key.contains('\0')
        && key
            .split('/')
            .all(|seg| !seg.is_empty() && seg != "." && seg != "..")
}

/// `fieldValidation` (`FV-01`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FieldValidation {
    /// Drop unknown and duplicate fields silently.
    Ignore,
    /// Succeed, with one `Warning` per unknown or duplicate field (server default).
    #[default]
    Warn,
    /// 400 on any unknown or duplicate field.
    Strict,
}

/// Options of create, update and patch.
#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    /// `dryRun=All`.
    pub dry_run: bool,
    /// `fieldManager`.
    pub field_manager: Option<String>,
    /// `fieldValidation`.
    pub field_validation: FieldValidation,
    /// `force` (apply only).
    pub force: Option<bool>,
}

/// Validates `dryRun` values: only `All` is known (`DRY-01`).
pub fn parse_dry_run<'a>(values: impl Iterator<Item = &'a str>) -> Result<bool, OptionsError> {
    let mut dry = false;
    for v in values {
        match v {
            "All" => dry = true,
            "" => {}
            other => {
                return Err(bad(format!(
                    "dryRun: Unsupported value: {other:?}: supported values: \"All\""
                )));
            }
        }
    }
    Ok(dry)
}

impl WriteOptions {
    /// Reads write options from a query.
    pub fn from_query(q: &Query) -> Result<Self, OptionsError> {
        let field_validation = match q.get("fieldValidation") {
            None | Some("") => FieldValidation::Warn,
            Some("Ignore") => FieldValidation::Ignore,
            Some("Warn") => FieldValidation::Warn,
            Some("Strict") => FieldValidation::Strict,
            Some(other) => {
                return Err(bad(format!(
                    "invalid fieldValidation directive: {other:?}: supported values: \"Ignore\", \"Warn\", \"Strict\""
                )));
            }
        };
        let field_manager = q
            .get("fieldManager")
            .filter(|m| !m.is_empty())
            .map(str::to_owned);
        if let Some(m) = &field_manager {
            if m.chars().count() > 128 {
                return Err(bad(
                    "fieldManager: Too long: may not be more than 128 bytes",
                ));
            }
            if m.chars().any(|c| c.is_control()) {
                return Err(bad(format!(
                    "fieldManager: Invalid value: {m:?}: must only contain printable characters"
                )));
            }
        }
        Ok(WriteOptions {
            dry_run: parse_dry_run(q.get_all("dryRun"))?,
            field_manager,
            field_validation,
            force: q.bool("force")?,
        })
    }
}

/// The finalizer that orphans an object's dependents before it goes (metav1's
/// `FinalizerOrphanDependents`).
pub const FINALIZER_ORPHAN_DEPENDENTS: &str = "orphan";
/// The finalizer that deletes an object's dependents before it goes (metav1's
/// `FinalizerDeleteDependents`, a `Foreground` deletion).
pub const FINALIZER_DELETE_DEPENDENTS: &str = "foregroundDeletion";

/// `propagationPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum PropagationPolicy {
    /// Orphan dependents.
    Orphan,
    /// Delete dependents in the background.
    Background,
    /// Delete dependents first.
    Foreground,
}

/// `preconditions` of a delete.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Preconditions {
    /// The object's uid must be this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// The object's resourceVersion must be this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
}

/// `DeleteOptions`, from the body and the query (`GAP-06`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeleteOptions {
    /// `kind` (`DeleteOptions`) when sent as a body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// `apiVersion` when sent as a body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// `gracePeriodSeconds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grace_period_seconds: Option<i64>,
    /// `preconditions`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preconditions: Option<Preconditions>,
    /// `orphanDependents` (deprecated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub orphan_dependents: Option<bool>,
    /// `propagationPolicy`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub propagation_policy: Option<PropagationPolicy>,
    /// `dryRun`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dry_run: Vec<String>,
    /// `ignoreStoreReadErrorWithClusterBreakingPotential`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore_store_read_error_with_cluster_breaking_potential: Option<bool>,
}

impl DeleteOptions {
    /// Merges query parameters over a body (the query wins where both are set, as
    /// kube-apiserver decodes the query after the body).
    pub fn from_body_and_query(
        body: Option<DeleteOptions>,
        q: &Query,
    ) -> Result<Self, OptionsError> {
        let mut o = body.unwrap_or_default();
        if let Some(v) = q.get("gracePeriodSeconds").filter(|v| !v.is_empty()) {
            o.grace_period_seconds = Some(
                v.parse()
                    .map_err(|_| bad(format!("invalid value {v:?} for gracePeriodSeconds")))?,
            );
        }
        if let Some(v) = q.bool("orphanDependents")? {
            o.orphan_dependents = Some(v);
        }
        if let Some(v) = q.get("propagationPolicy").filter(|v| !v.is_empty()) {
            o.propagation_policy = Some(match v {
                "Orphan" => PropagationPolicy::Orphan,
                "Background" => PropagationPolicy::Background,
                "Foreground" => PropagationPolicy::Foreground,
                other => {
                    return Err(bad(format!(
                        "propagationPolicy: Unsupported value: {other:?}: supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
                    )));
                }
            });
        }
        if q.has("dryRun") {
            o.dry_run = q
                .get_all("dryRun")
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
                .collect();
        }
        if o.orphan_dependents.is_some() && o.propagation_policy.is_some() {
            return Err(bad(
                "propagationPolicy: Invalid value: \"{}\": orphanDependents and deletionPropagation cannot be both set",
            ));
        }
        if o.grace_period_seconds.is_some_and(|g| g < 0) {
            return Err(bad("gracePeriodSeconds: Invalid value: must be >= 0"));
        }
        parse_dry_run(o.dry_run.iter().map(String::as_str))?;
        if o.ignore_store_read_error_with_cluster_breaking_potential == Some(true) {
            return Err(bad(
                "ignoreStoreReadErrorWithClusterBreakingPotential: Forbidden: the AllowUnsafeMalformedObjectDeletion feature is not enabled",
            ));
        }
        Ok(o)
    }

    /// Whether this is a dry run.
    pub fn is_dry_run(&self) -> bool {
        self.dry_run.iter().any(|v| v == "All")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lo(q: &str) -> ListOptions {
        ListOptions::from_query(&Query::parse(Some(q))).unwrap()
    }

    #[test]
    fn query_decoding_and_bool() {
        let q = Query::parse(Some("labelSelector=app%3Dx%2Ctier+in+(a)&watch=True&x"));
        assert_eq!(q.get("labelSelector"), Some("app=x,tier in (a)"));
        assert_eq!(q.bool("watch").unwrap(), Some(true));
        assert!(q.has("x"));
        assert!(Query::parse(Some("watch=yes")).bool("watch").is_err());
        assert_eq!(Query::parse(Some("a=%zz%4")).get("a"), Some("%zz%4"));
    }

    #[test]
    fn rv_05_list_table() {
        use ListSemantics::*;
        let s = |q: &str| list_semantics(&lo(q));
        assert_eq!(s("").unwrap(), MostRecent);
        assert_eq!(s("resourceVersion=0").unwrap(), Any);
        assert_eq!(s("resourceVersion=5").unwrap(), NotOlderThan(5));
        assert_eq!(s("limit=2").unwrap(), MostRecent);
        assert_eq!(s("limit=2&resourceVersion=0").unwrap(), Any);
        assert_eq!(s("limit=2&resourceVersion=5").unwrap(), Exact(5));
        assert_eq!(
            s("resourceVersionMatch=Exact&resourceVersion=5").unwrap(),
            Exact(5)
        );
        assert!(s("resourceVersionMatch=Exact&resourceVersion=0").is_err());
        assert!(s("resourceVersionMatch=Exact").is_err());
        assert!(s("resourceVersionMatch=NotOlderThan").is_err());
        assert_eq!(
            s("resourceVersionMatch=NotOlderThan&resourceVersion=0").unwrap(),
            Any
        );
        assert_eq!(
            s("resourceVersionMatch=NotOlderThan&resourceVersion=9&limit=1").unwrap(),
            NotOlderThan(9)
        );
        assert!(
            ListOptions::from_query(&Query::parse(Some(
                "resourceVersionMatch=Bogus&resourceVersion=1"
            )))
            .is_err()
        );
        assert!(s("resourceVersion=abc").is_err());
    }

    #[test]
    fn chunk_05_continue_with_resource_version() {
        let t = ContinueToken::new(7, "ns/a").encode();
        let ok = list_semantics(&lo(&format!("continue={t}&limit=1"))).unwrap();
        assert_eq!(ok, ListSemantics::Continue(ContinueToken::new(7, "ns/a")));
        let zero = list_semantics(&lo(&format!("continue={t}&resourceVersion=0"))).unwrap();
        assert!(matches!(zero, ListSemantics::Continue(_)));
        assert!(list_semantics(&lo(&format!("continue={t}&resourceVersion=7"))).is_err());
        assert!(list_semantics(&lo("continue=garbage")).is_err());
    }

    /// Issue 7: tampered tokens are 400 with kube's `DecodeContinue` wording.
    #[test]
    fn chunk_06_tampered_continue_tokens_are_refused() {
        let raw = |json: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json);
        let msg = |token: &str| ContinueToken::decode(token).unwrap_err().0;
        let prefix = "invalid continue token: continue key is not valid";
        assert_eq!(
            msg(&raw(r#"{"v":"meta.k8s.io/v1","rv":0,"start":"a"}"#)),
            format!("{prefix}: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
        );
        assert_eq!(
            msg(&raw(r#"{"v":"meta.k8s.io/v1","rv":5,"start":""}"#)),
            format!("{prefix}: encoded start key empty (version meta.k8s.io/v1)")
        );
        for outside in ["../secrets/x", "a/../../b", "ns//a", "a/", "./a"] {
            let t = raw(&format!(
                r#"{{"v":"meta.k8s.io/v1","rv":5,"start":"{outside}"}}"#
            ));
            assert_eq!(msg(&t), format!("{prefix}: {outside}"));
        }
        assert_eq!(
            msg(&raw(r#"{"v":"meta.k8s.io/v2","rv":5,"start":"a"}"#)),
            format!("{prefix}: server does not recognize this encoded version meta.k8s.io/v2")
        );
        assert_eq!(
            msg("!!!"),
            format!("{prefix}: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
        );
        assert!(ContinueToken::decode(&ContinueToken::new(5, "ns/a.b-c").encode()).is_ok());
    }

    #[test]
    fn watch_03_and_stream_02_start_points() {
        assert_eq!(
            watch_start(&lo("watch=1")).unwrap(),
            WatchStart::InitialState {
                bookmark: false,
                not_older_than: None
            }
        );
        assert_eq!(
            watch_start(&lo("watch=1&resourceVersion=0")).unwrap(),
            WatchStart::InitialState {
                bookmark: false,
                not_older_than: None
            }
        );
        assert_eq!(
            watch_start(&lo("watch=1&resourceVersion=12")).unwrap(),
            WatchStart::After(12)
        );
        assert_eq!(
            watch_start(&lo("watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersion=&resourceVersionMatch=NotOlderThan")).unwrap(),
            WatchStart::InitialState { bookmark: true, not_older_than: None }
        );
        assert!(
            watch_start(&lo(
                "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
            ))
            .is_err()
        );
        assert!(
            watch_start(&lo(
                "watch=1&sendInitialEvents=true&allowWatchBookmarks=true"
            ))
            .is_err()
        );
        assert!(
            watch_start(&lo(
                "watch=1&resourceVersionMatch=NotOlderThan&resourceVersion=1"
            ))
            .is_err()
        );
    }

    #[test]
    fn write_and_delete_options() {
        let w = WriteOptions::from_query(&Query::parse(Some(
            "dryRun=All&fieldManager=kubectl-create&fieldValidation=Strict",
        )))
        .unwrap();
        assert!(w.dry_run);
        assert_eq!(w.field_validation, FieldValidation::Strict);
        assert!(WriteOptions::from_query(&Query::parse(Some("dryRun=Yes"))).is_err());
        assert!(WriteOptions::from_query(&Query::parse(Some("fieldValidation=strict"))).is_err());
        let body: DeleteOptions =
            serde_json::from_str(r#"{"propagationPolicy":"Background","dryRun":["All"]}"#).unwrap();
        let d = DeleteOptions::from_body_and_query(Some(body), &Query::default()).unwrap();
        assert!(d.is_dry_run());
        assert!(
            DeleteOptions::from_body_and_query(
                None,
                &Query::parse(Some("propagationPolicy=Sometimes"))
            )
            .is_err()
        );
    }
}
