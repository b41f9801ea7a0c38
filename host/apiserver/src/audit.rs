//! Audit logging (issue 12): one `audit.k8s.io/v1` `Event` JSON line per request, at
//! stage `ResponseComplete`, to a file, at the level the policy's first matching rule
//! gives (`None`, `Metadata`, `Request`, `RequestResponse`; no policy: `Metadata` for
//! everything). Secret values are never logged: requests for `secrets`, for
//! `serviceaccounts/token` and for `tokenreviews` (a token in, the same token out) are
//! logged at `Metadata` at most, whatever the policy says.
//!
//! `sourceIPs` is the client's address, after the `X-Forwarded-For` entries and
//! `X-Real-Ip` only when the client is a configured trusted front proxy (kube records them
//! from anyone). A failure's `responseStatus` carries its `reason` and `message`; the
//! authorizer's decision is in the `authorization.k8s.io/decision` and
//! `authorization.k8s.io/reason` annotations, as kube's authorization filter leaves them.
//!
//! Partial: only the `ResponseComplete` stage (no `RequestReceived`, `ResponseStarted`,
//! `Panic`), no webhook backend; response bodies of lists and watches are not logged
//! (`RequestResponse` logs the request object for them).

use std::io::Write as _;
use std::net::IpAddr;
use std::path::Path;

use http::HeaderMap;
use serde::Deserialize;
use serde_json::{Value, json};
use wasmgate_apimachinery::request_info::RequestInfo;
use wasmgate_apimachinery::status::Status;

use crate::User;

/// How much of a request is logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
pub enum Level {
    /// Nothing.
    None,
    /// Who, what, when, the outcome.
    Metadata,
    /// And the request object.
    Request,
    /// And the response object.
    RequestResponse,
}

impl Level {
    fn as_str(self) -> &'static str {
        match self {
            Level::None => "None",
            Level::Metadata => "Metadata",
            Level::Request => "Request",
            Level::RequestResponse => "RequestResponse",
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct GroupResources {
    group: String,
    resources: Vec<String>,
    resource_names: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Rule {
    level: Level,
    #[serde(default)]
    users: Vec<String>,
    #[serde(default)]
    user_groups: Vec<String>,
    #[serde(default)]
    verbs: Vec<String>,
    #[serde(default)]
    resources: Vec<GroupResources>,
    #[serde(default)]
    namespaces: Vec<String>,
    #[serde(default, rename = "nonResourceURLs")]
    non_resource_urls: Vec<String>,
    #[serde(default)]
    omit_stages: Vec<String>,
}

/// An audit policy (`audit.k8s.io/v1` `Policy`): rules, first match wins.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Policy {
    #[serde(default)]
    rules: Vec<Rule>,
    #[serde(default)]
    omit_stages: Vec<String>,
}

impl Policy {
    /// Reads a policy document (YAML or JSON).
    pub fn parse(text: &str) -> Result<Policy, String> {
        let v = wasmgate_apimachinery::json::from_yaml(text.as_bytes())
            .map_err(|e| e.to_string())?
            .value;
        let kind = v.get("kind").and_then(Value::as_str).unwrap_or("");
        if kind != "Policy" {
            return Err(format!("expected kind Policy, got {kind:?}"));
        }
        serde_json::from_value(v).map_err(|e| e.to_string())
    }

    /// The level of a request.
    fn level(&self, r: &Request<'_>) -> Level {
        if self.omit_stages.iter().any(|s| s == "ResponseComplete") {
            return Level::None;
        }
        if self.rules.is_empty() {
            return Level::Metadata;
        }
        for rule in &self.rules {
            if rule.matches(r) {
                if rule.omit_stages.iter().any(|s| s == "ResponseComplete") {
                    return Level::None;
                }
                return rule.level;
            }
        }
        Level::None
    }
}

impl Rule {
    fn matches(&self, r: &Request<'_>) -> bool {
        let any = |list: &[String], v: &str| list.is_empty() || list.iter().any(|x| x == v);
        if !any(&self.users, &r.user.name) || !any(&self.verbs, &r.verb) {
            return false;
        }
        if !self.user_groups.is_empty()
            && !r
                .user
                .groups_with_authenticated()
                .any(|g| self.user_groups.iter().any(|x| x == g))
        {
            return false;
        }
        match &r.info {
            Some(RequestInfo::Resource(res)) => {
                if !self.non_resource_urls.is_empty() && self.resources.is_empty() {
                    return false;
                }
                let ns = res.namespace.as_deref().unwrap_or("");
                if !self.namespaces.is_empty() && !self.namespaces.iter().any(|n| n == ns) {
                    return false;
                }
                let combined = match &res.subresource {
                    Some(s) => format!("{}/{s}", res.resource),
                    None => res.resource.clone(),
                };
                self.resources.is_empty()
                    || self.resources.iter().any(|g| {
                        g.group == res.group
                            && (g.resources.is_empty()
                                || g.resources.iter().any(|x| {
                                    *x == combined
                                        || x == "*"
                                        || x.strip_prefix("*/") == res.subresource.as_deref()
                                        || x.strip_suffix("/*") == Some(res.resource.as_str())
                                }))
                            && (g.resource_names.is_empty()
                                || res
                                    .name
                                    .as_ref()
                                    .is_some_and(|n| g.resource_names.contains(n)))
                    })
            }
            _ => {
                if !self.resources.is_empty() || !self.namespaces.is_empty() {
                    return false;
                }
                self.non_resource_urls.is_empty()
                    || self.non_resource_urls.iter().any(|u| {
                        u == r.path || u.strip_suffix('*').is_some_and(|p| r.path.starts_with(p))
                    })
            }
        }
    }
}

/// What the log knows of a request.
pub(crate) struct Request<'a> {
    pub(crate) user: &'a User,
    /// Whom the request acts as (`Impersonate-User`), when not the user.
    pub(crate) impersonated: Option<User>,
    pub(crate) verb: String,
    pub(crate) path: &'a str,
    pub(crate) uri: &'a str,
    pub(crate) user_agent: Option<&'a str>,
    pub(crate) info: Option<RequestInfo>,
    pub(crate) received: time::OffsetDateTime,
    /// Where the request came from (`sourceIPs`).
    pub(crate) source_ips: Vec<String>,
}

/// How a request ended, for its event.
pub(crate) struct Outcome<'a> {
    /// The response's status code.
    pub(crate) code: u16,
    /// The Status of a failure.
    pub(crate) failure: Option<&'a Status>,
    /// The request's object, when the level logs it.
    pub(crate) request_object: Option<Value>,
    /// The response's object, when the level logs it.
    pub(crate) response_object: Option<Value>,
}

/// The audit log: a policy, and the thread that appends the events to the file (a slow
/// disk delays the log, not the requests).
#[derive(Debug)]
pub struct Log {
    policy: Policy,
    lines: std::sync::mpsc::Sender<String>,
    /// Front proxies whose `X-Forwarded-For` and `X-Real-Ip` are believed.
    trusted_proxies: Vec<ipnet::IpNet>,
}

impl Log {
    /// Opens (appends to, creating with mode 0600) the log at `path`.
    pub fn open(path: &Path, policy: Policy) -> Result<Log, String> {
        use std::os::unix::fs::OpenOptionsExt as _;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(path)
            .map_err(|e| format!("opening the audit log {}: {e}", path.display()))?;
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        std::thread::Builder::new()
            .name("audit-log".into())
            .spawn(move || {
                let mut out = std::io::BufWriter::new(file);
                // Everything queued is written, then flushed, before waiting again.
                while let Ok(line) = rx.recv() {
                    let mut result = out.write_all(line.as_bytes());
                    while let Ok(more) = rx.try_recv() {
                        result = result.and_then(|()| out.write_all(more.as_bytes()));
                    }
                    if let Err(e) = result.and_then(|()| out.flush()) {
                        tracing::warn!(error = %e, "writing the audit log");
                    }
                }
            })
            .map_err(|e| format!("starting the audit log writer: {e}"))?;
        Ok(Log {
            policy,
            lines: tx,
            trusted_proxies: Vec::new(),
        })
    }

    /// Believes the `X-Forwarded-For` and `X-Real-Ip` headers of requests from these
    /// addresses (IPs or CIDRs, e.g. `10.0.0.7`, `10.0.0.0/8`): their entries come first
    /// in `sourceIPs`, as kube records them.
    pub fn trust_proxies(mut self, proxies: &[String]) -> Result<Log, String> {
        for p in proxies {
            let net = p
                .parse::<ipnet::IpNet>()
                .or_else(|_| p.parse::<IpAddr>().map(ipnet::IpNet::from))
                .map_err(|_| format!("trusted proxy {p:?} is neither an IP address nor a CIDR"))?;
            self.trusted_proxies.push(net);
        }
        Ok(self)
    }

    /// The `sourceIPs` of a request from `peer` (kube's order: `X-Forwarded-For` entries,
    /// then `X-Real-Ip`, then the peer, each once) — the headers only from a trusted proxy.
    pub(crate) fn source_ips(&self, peer: Option<IpAddr>, headers: &HeaderMap) -> Vec<String> {
        let Some(peer) = peer.map(|p| p.to_canonical()) else {
            return Vec::new();
        };
        let mut ips: Vec<IpAddr> = Vec::new();
        if self.trusted_proxies.iter().any(|n| n.contains(&peer)) {
            let forwarded = headers
                .get_all("x-forwarded-for")
                .iter()
                .filter_map(|v| v.to_str().ok())
                .flat_map(|v| v.split(','));
            let real = headers.get("x-real-ip").and_then(|v| v.to_str().ok());
            for ip in forwarded
                .chain(real)
                .filter_map(|v| v.trim().parse::<IpAddr>().ok())
            {
                if !ips.contains(&ip) {
                    ips.push(ip);
                }
            }
        }
        if !ips.contains(&peer) {
            ips.push(peer);
        }
        ips.iter().map(IpAddr::to_string).collect()
    }

    /// The level of a request, with secrets capped at `Metadata`.
    pub(crate) fn level(&self, r: &Request<'_>) -> Level {
        let level = self.policy.level(r);
        let secret = matches!(&r.info, Some(RequestInfo::Resource(res))
            if (res.group.is_empty() && res.resource == "secrets")
                || res.subresource.as_deref() == Some("token")
                || (res.group == "authentication.k8s.io" && res.resource == "tokenreviews"));
        if secret {
            level.min(Level::Metadata)
        } else {
            level
        }
    }

    /// Writes one event.
    pub(crate) fn write(
        &self,
        r: &Request<'_>,
        level: Level,
        outcome: Outcome<'_>,
        annotations: &[(String, String)],
    ) {
        if level == Level::None {
            return;
        }
        let Outcome {
            code,
            failure,
            request_object,
            response_object,
        } = outcome;
        let fmt = |t: time::OffsetDateTime| {
            t.format(&time::format_description::well_known::Rfc3339)
                .unwrap_or_default()
        };
        let mut event = json!({
            "kind": "Event",
            "apiVersion": "audit.k8s.io/v1",
            "level": level.as_str(),
            "auditID": crate::object::new_uid(),
            "stage": "ResponseComplete",
            "requestURI": r.uri,
            "verb": r.verb,
            "user": {"username": r.user.name, "groups": r.user.groups_with_authenticated().collect::<Vec<_>>()},
            "sourceIPs": r.source_ips,
            "responseStatus": {"metadata": {}, "code": code},
            "requestReceivedTimestamp": fmt(r.received),
            "stageTimestamp": fmt(time::OffsetDateTime::now_utc()),
        });
        // kube's `ResponseStatus` of a failure: its status, reason and message.
        if let Some(st) = failure {
            let rs = &mut event["responseStatus"];
            rs["status"] = json!("Failure");
            if !st.message.is_empty() {
                rs["message"] = json!(st.message);
            }
            if !st.reason.is_empty() {
                rs["reason"] = json!(st.reason);
            }
        }
        if let Some(ua) = r.user_agent {
            event["userAgent"] = json!(ua);
        }
        if let Some(i) = &r.impersonated {
            event["impersonatedUser"] = json!({"username": i.name, "groups": i.groups});
        }
        if let Some(RequestInfo::Resource(res)) = &r.info {
            let mut o = json!({"resource": res.resource, "apiVersion": res.version});
            if !res.group.is_empty() {
                o["apiGroup"] = json!(res.group);
            }
            if let Some(ns) = &res.namespace {
                o["namespace"] = json!(ns);
            }
            if let Some(n) = &res.name {
                o["name"] = json!(n);
            }
            if let Some(s) = &res.subresource {
                o["subresource"] = json!(s);
            }
            event["objectRef"] = o;
        }
        if !annotations.is_empty() {
            let map: serde_json::Map<String, Value> = annotations
                .iter()
                .map(|(k, v)| (k.clone(), json!(v)))
                .collect();
            event["annotations"] = Value::Object(map);
        }
        // A create names its object in the body, not the path (kube's LogRequestObject).
        if let Some(o) = event.get_mut("objectRef").and_then(Value::as_object_mut)
            && !o.contains_key("name")
            && let Some(name) = [&request_object, &response_object]
                .into_iter()
                .flatten()
                .find_map(|v| v.pointer("/metadata/name").and_then(Value::as_str))
        {
            o.insert("name".into(), json!(name));
        }
        if level >= Level::Request
            && let Some(o) = request_object
        {
            event["requestObject"] = o;
        }
        if level == Level::RequestResponse
            && let Some(o) = response_object
        {
            event["responseObject"] = o;
        }
        self.send(&event);
    }

    /// An event for a request whose credentials were refused (no user; the policy's
    /// `Metadata` level, as kube logs them).
    pub(crate) fn failed_authentication(
        &self,
        uri: &str,
        method: &str,
        code: u16,
        source_ips: &[String],
    ) {
        let now = time::OffsetDateTime::now_utc()
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default();
        self.send(&json!({
            "kind": "Event",
            "apiVersion": "audit.k8s.io/v1",
            "level": "Metadata",
            "auditID": crate::object::new_uid(),
            "stage": "ResponseComplete",
            "requestURI": uri,
            "verb": method.to_ascii_lowercase(),
            "user": {},
            "sourceIPs": source_ips,
            "responseStatus": {"metadata": {}, "status": "Failure", "message": "Unauthorized", "reason": "Unauthorized", "code": code},
            "requestReceivedTimestamp": now,
            "stageTimestamp": now,
        }));
    }

    fn send(&self, event: &Value) {
        let mut line = event.to_string();
        line.push('\n');
        if self.lines.send(line).is_err() {
            tracing::warn!("the audit log writer is gone");
        }
    }
}

/// A request or response body as the log shows it: the JSON (or YAML, or Protobuf) object.
pub(crate) fn object_of(body: &[u8]) -> Option<Value> {
    if body.is_empty() {
        return None;
    }
    if body.starts_with(&wasmgate_apimachinery::protobuf::MAGIC) {
        return wasmgate_apimachinery::protobuf::decode(body).ok();
    }
    serde_json::from_slice(body).ok().or_else(|| {
        wasmgate_apimachinery::json::from_yaml(body)
            .ok()
            .map(|d| d.value)
            .filter(Value::is_object)
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;
    use http::Method;

    fn req<'a>(user: &'a User, method: Method, path: &'a str) -> Request<'a> {
        let info = wasmgate_apimachinery::request_info::parse(&method, path, false).ok();
        let verb = match &info {
            Some(RequestInfo::Resource(r)) => r.verb.as_str().to_owned(),
            _ => method.as_str().to_ascii_lowercase(),
        };
        Request {
            user,
            impersonated: None,
            verb,
            path,
            uri: path,
            user_agent: None,
            info,
            received: time::OffsetDateTime::now_utc(),
            source_ips: Vec::new(),
        }
    }

    /// Policy rules: first match wins, by user, verb, resource and URL; secrets never
    /// above Metadata; no rules: Metadata.
    #[test]
    fn policy_levels() {
        let policy = Policy::parse(
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n\
             - level: None\n  users: [quiet]\n\
             - level: RequestResponse\n  resources: [{group: \"\", resources: [configmaps, secrets]}]\n\
             - level: Request\n  verbs: [create]\n\
             - level: Metadata\n  nonResourceURLs: [/api*]\n",
        )
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let log = Log::open(&dir.path().join("audit.log"), policy).unwrap();
        let alice = User {
            name: "alice".into(),
            groups: vec![],
        };
        let quiet = User {
            name: "quiet".into(),
            groups: vec![],
        };
        let cm = "/api/v1/namespaces/d/configmaps/x";
        let secret = "/api/v1/namespaces/d/secrets/x";
        assert_eq!(
            log.level(&req(&alice, Method::GET, cm)),
            Level::RequestResponse
        );
        assert_eq!(log.level(&req(&quiet, Method::GET, cm)), Level::None);
        assert_eq!(
            log.level(&req(&alice, Method::GET, secret)),
            Level::Metadata
        );
        let review = "/apis/authentication.k8s.io/v1/tokenreviews";
        assert_eq!(
            log.level(&req(&alice, Method::POST, review)),
            Level::Metadata
        );
        assert_eq!(
            log.level(&req(
                &alice,
                Method::POST,
                "/apis/coordination.k8s.io/v1/namespaces/d/leases"
            )),
            Level::Request
        );
        assert_eq!(
            log.level(&req(&alice, Method::GET, "/apis")),
            Level::Metadata
        );
        assert_eq!(
            log.level(&req(&alice, Method::GET, "/version")),
            Level::None
        );
        let all = Log::open(&dir.path().join("all.log"), Policy::default()).unwrap();
        assert_eq!(
            all.level(&req(&alice, Method::GET, "/version")),
            Level::Metadata
        );
        assert!(Policy::parse("kind: Other").is_err());
    }

    /// ISSUE-24.4: `sourceIPs` is the peer, after the forwarded addresses only when the
    /// peer is a trusted proxy; a bad proxy entry is refused.
    #[test]
    fn source_ips_trust_only_configured_proxies() {
        let dir = tempfile::tempdir().unwrap();
        let log = Log::open(&dir.path().join("a.log"), Policy::default())
            .unwrap()
            .trust_proxies(&["10.0.0.0/8".into(), "192.168.1.5".into()])
            .unwrap();
        let mut h = HeaderMap::new();
        h.insert("x-forwarded-for", "203.0.113.9, 10.1.2.3".parse().unwrap());
        h.insert("x-real-ip", "203.0.113.9".parse().unwrap());
        let ip = |s: &str| Some(s.parse::<IpAddr>().unwrap());
        assert_eq!(
            log.source_ips(ip("10.9.9.9"), &h),
            ["203.0.113.9", "10.1.2.3", "10.9.9.9"]
        );
        assert_eq!(
            log.source_ips(ip("192.168.1.5"), &h),
            ["203.0.113.9", "10.1.2.3", "192.168.1.5"]
        );
        assert_eq!(log.source_ips(ip("198.51.100.1"), &h), ["198.51.100.1"]);
        assert_eq!(log.source_ips(ip("::ffff:127.0.0.1"), &h), ["127.0.0.1"]);
        assert!(log.source_ips(None, &h).is_empty());
        let again = Log::open(&dir.path().join("b.log"), Policy::default()).unwrap();
        assert!(again.trust_proxies(&["nonsense".into()]).is_err());
    }
}
