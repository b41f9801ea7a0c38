//! `MutatingWebhookConfiguration` and `ValidatingWebhookConfiguration` objects: the
//! defaults kube-apiserver sets on write, its validation (422 causes worded as kube's), and
//! the parsed form admission matches requests against ([`Webhook`]).

use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use serde_json::{Map, Value, json};
use wasmgate_apimachinery::selectors::LabelSelector;
use wasmgate_apimachinery::validation::{self as v, FieldError};

use crate::outbound::Target;

/// What a webhook does when it cannot be called or answers nonsense.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailurePolicy {
    Fail,
    Ignore,
}

/// How a rule matches a request for another version of a resource it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchPolicy {
    /// Only the versions listed.
    Exact,
    /// Any version of a resource one of the rules names (kube's default).
    Equivalent,
}

/// Which objects a rule covers by scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Any,
    Cluster,
    Namespaced,
}

/// One `rules[]` entry.
#[derive(Debug, Clone)]
pub struct Rule {
    pub operations: Vec<String>,
    pub groups: Vec<String>,
    pub versions: Vec<String>,
    pub resources: Vec<String>,
    pub scope: Scope,
}

/// One webhook of a configuration, ready to be matched and called.
#[derive(Debug)]
pub struct Webhook {
    /// `webhooks[].name`.
    pub name: String,
    /// The configuration object's name.
    pub configuration: String,
    pub mutating: bool,
    /// Where it is called; `Err`: why it cannot be (a failure under its policy).
    pub target: Result<Target, String>,
    pub rules: Vec<Rule>,
    pub failure_policy: FailurePolicy,
    pub match_policy: MatchPolicy,
    pub namespace_selector: LabelSelector,
    pub object_selector: LabelSelector,
    pub timeout: Duration,
    /// `reinvocationPolicy: IfNeeded`.
    pub reinvoke: bool,
    /// `matchConditions`: (name, compiled CEL over `object`, `oldObject`, `request`).
    pub match_conditions: Vec<(String, Result<wasmgate_cel::Expression, String>)>,
}

/// The variables of a webhook's `matchConditions`.
pub const MATCH_CONDITION_VARIABLES: &[&str] = &["object", "oldObject", "request"];

/// A match condition's expression, compiled (it must give a bool).
pub fn compile_condition(source: &str) -> Result<wasmgate_cel::Expression, String> {
    let e = wasmgate_cel::Expression::compile(source, MATCH_CONDITION_VARIABLES)?;
    if e.may_return("bool") {
        Ok(e)
    } else {
        Err(format!("must evaluate to bool, not {}", e.output_type()))
    }
}

/// The webhooks of a stored configuration, in order (`mutating`: which kind it is).
pub fn parse(obj: &Value, mutating: bool) -> Vec<Webhook> {
    let configuration = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let Some(hooks) = obj.get("webhooks").and_then(Value::as_array) else {
        return Vec::new();
    };
    hooks
        .iter()
        .map(|h| {
            let s = |k: &str| h.get(k).and_then(Value::as_str).unwrap_or("");
            let selector = |k: &str| {
                h.get(k)
                    .map_or(
                        Ok(LabelSelector::everything()),
                        LabelSelector::from_label_selector,
                    )
                    // Validated on write; a stored one that does not parse matches nothing.
                    .unwrap_or_else(|_| LabelSelector::nothing())
            };
            let timeout = Duration::from_secs(
                h.get("timeoutSeconds")
                    .and_then(Value::as_u64)
                    .unwrap_or(DEFAULT_TIMEOUT_SECONDS)
                    .clamp(1, MAX_TIMEOUT_SECONDS),
            );
            Webhook {
                name: s("name").to_owned(),
                configuration: configuration.clone(),
                mutating,
                target: target(h.get("clientConfig").unwrap_or(&Value::Null))
                    .and_then(|t| with_timeout(t, timeout)),
                rules: h
                    .get("rules")
                    .and_then(Value::as_array)
                    .map(|r| r.iter().map(rule).collect())
                    .unwrap_or_default(),
                failure_policy: if s("failurePolicy") == "Ignore" {
                    FailurePolicy::Ignore
                } else {
                    FailurePolicy::Fail
                },
                match_policy: if s("matchPolicy") == "Exact" {
                    MatchPolicy::Exact
                } else {
                    MatchPolicy::Equivalent
                },
                namespace_selector: selector("namespaceSelector"),
                object_selector: selector("objectSelector"),
                timeout,
                reinvoke: s("reinvocationPolicy") == "IfNeeded",
                match_conditions: h
                    .get("matchConditions")
                    .and_then(Value::as_array)
                    .map(|ms| {
                        ms.iter()
                            .map(|m| {
                                let f = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or("");
                                (f("name").to_owned(), compile_condition(f("expression")))
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
            }
        })
        .collect()
}

pub fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

pub fn rule(r: &Value) -> Rule {
    Rule {
        operations: strings(r.get("operations")),
        groups: strings(r.get("apiGroups")),
        versions: strings(r.get("apiVersions")),
        resources: strings(r.get("resources")),
        scope: match r.get("scope").and_then(Value::as_str) {
            Some("Cluster") => Scope::Cluster,
            Some("Namespaced") => Scope::Namespaced,
            _ => Scope::Any,
        },
    }
}

/// Where `clientConfig` points: its `url`, or `https://NAME.NAMESPACE.svc:PORT/PATH` for
/// a `service` (Wasmgate has no Services: that name must resolve, e.g. through
/// `/etc/hosts` or DNS, to where the webhook listens).
pub fn target(cc: &Value) -> Result<Target, String> {
    let ca_bundle = match cc.get("caBundle").and_then(Value::as_str) {
        Some(b) if !b.is_empty() => Some(Bytes::from(
            base64::engine::general_purpose::STANDARD
                .decode(b)
                .map_err(|e| format!("caBundle is not base64: {e}"))?,
        )),
        _ => None,
    };
    let url = match (cc.get("url").and_then(Value::as_str), cc.get("service")) {
        (Some(u), _) => u.to_owned(),
        (None, Some(svc)) => {
            let s = |k: &str| svc.get(k).and_then(Value::as_str).unwrap_or("");
            let port = svc.get("port").and_then(Value::as_u64).unwrap_or(443);
            format!(
                "https://{}.{}.svc:{port}{}",
                s("name"),
                s("namespace"),
                s("path")
            )
        }
        (None, None) => return Err("the webhook has no clientConfig.url or service".into()),
    };
    let url = url
        .parse::<http::Uri>()
        .map_err(|e| format!("clientConfig.url {url:?}: {e}"))?;
    Ok(Target {
        url,
        ca_bundle,
        ..Target::default()
    })
}

/// As kube does: the webhook learns its deadline from its URL (`?timeout=10s`).
fn with_timeout(mut t: Target, timeout: Duration) -> Result<Target, String> {
    let url = t.url.to_string();
    let sep = if url.contains('?') { '&' } else { '?' };
    t.url = format!("{url}{sep}timeout={}s", timeout.as_secs())
        .parse()
        .map_err(|e| format!("clientConfig.url {url:?}: {e}"))?;
    Ok(t)
}

/// `timeoutSeconds` when unset.
const DEFAULT_TIMEOUT_SECONDS: u64 = 10;
/// Largest `timeoutSeconds`.
const MAX_TIMEOUT_SECONDS: u64 = 30;

/// kube-apiserver's defaults (SetDefaults_*Webhook, v1), set on every write so that what
/// is stored and shown says what is in force.
pub fn set_defaults(obj: &mut Value, mutating: bool) {
    let Some(hooks) = obj.get_mut("webhooks").and_then(Value::as_array_mut) else {
        return;
    };
    for h in hooks.iter_mut().filter_map(Value::as_object_mut) {
        let mut default = |k: &str, v: Value| {
            if h.get(k).is_none_or(Value::is_null) {
                h.insert(k.to_owned(), v);
            }
        };
        default("failurePolicy", json!("Fail"));
        default("matchPolicy", json!("Equivalent"));
        default("namespaceSelector", json!({}));
        default("objectSelector", json!({}));
        default("timeoutSeconds", json!(DEFAULT_TIMEOUT_SECONDS));
        if mutating {
            default("reinvocationPolicy", json!("Never"));
        }
        if let Some(rules) = h.get_mut("rules").and_then(Value::as_array_mut) {
            for r in rules.iter_mut().filter_map(Value::as_object_mut) {
                if r.get("scope").is_none_or(Value::is_null) {
                    r.insert("scope".into(), json!("*"));
                }
            }
        }
        if let Some(svc) = h
            .get_mut("clientConfig")
            .and_then(|c| c.get_mut("service"))
            .and_then(Value::as_object_mut)
            && svc.get("port").is_none_or(Value::is_null)
        {
            svc.insert("port".into(), json!(443));
        }
    }
}

/// kube's validation of a webhook configuration (v1).
pub fn validate(obj: &Value, mutating: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let empty = Vec::new();
    let hooks = obj
        .get("webhooks")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    let mut names: Vec<&str> = Vec::new();
    for (i, h) in hooks.iter().enumerate() {
        let at = format!("webhooks[{i}]");
        let Some(h) = h.as_object() else {
            errs.push(FieldError::invalid(at, h.clone(), "must be an object"));
            continue;
        };
        let name = h.get("name").and_then(Value::as_str).unwrap_or("");
        if name.is_empty() {
            errs.push(FieldError::required(format!("{at}.name"), ""));
        } else {
            for msg in v::is_dns1123_subdomain(name) {
                errs.push(FieldError::invalid(format!("{at}.name"), name, msg));
            }
            if name.split('.').count() < 3 {
                errs.push(FieldError::invalid(
                    format!("{at}.name"),
                    name,
                    "should be a domain with at least three segments separated by dots",
                ));
            }
            if names.contains(&name) {
                errs.push(FieldError::duplicate(format!("{at}.name"), name));
            }
            names.push(name);
        }
        validate_client_config(
            h.get("clientConfig"),
            &format!("{at}.clientConfig"),
            &mut errs,
        );
        if let Some(rules) = h.get("rules").and_then(Value::as_array) {
            for (j, r) in rules.iter().enumerate() {
                validate_rule(r, &format!("{at}.rules[{j}]"), &mut errs);
            }
        }
        let one_of = |k: &str, allowed: &[&str], errs: &mut Vec<FieldError>| {
            if let Some(val) = h.get(k).filter(|v| !v.is_null()) {
                let s = val.as_str().unwrap_or("");
                if !allowed.contains(&s) {
                    errs.push(FieldError::not_supported(
                        format!("{at}.{k}"),
                        val.clone(),
                        allowed,
                    ));
                }
            }
        };
        one_of("failurePolicy", &["Fail", "Ignore"], &mut errs);
        one_of("matchPolicy", &["Equivalent", "Exact"], &mut errs);
        if mutating {
            one_of("reinvocationPolicy", &["IfNeeded", "Never"], &mut errs);
        }
        match h.get("sideEffects").filter(|v| !v.is_null()) {
            None => errs.push(FieldError::required(
                format!("{at}.sideEffects"),
                "must specify one of None, NoneOnDryRun",
            )),
            Some(_) => one_of("sideEffects", &["None", "NoneOnDryRun"], &mut errs),
        }
        if let Some(t) = h.get("timeoutSeconds").filter(|v| !v.is_null()) {
            let n = t.as_i64().unwrap_or(0);
            if !(1..=30).contains(&n) {
                errs.push(FieldError::invalid(
                    format!("{at}.timeoutSeconds"),
                    t.clone(),
                    "the timeout value must be between 1 and 30 seconds",
                ));
            }
        }
        let versions = strings(h.get("admissionReviewVersions"));
        if versions.is_empty() {
            errs.push(FieldError::required(
                format!("{at}.admissionReviewVersions"),
                "must specify one of v1, v1beta1",
            ));
        } else if !versions.iter().any(|v| v == "v1") {
            errs.push(FieldError::invalid(
                format!("{at}.admissionReviewVersions"),
                json!(versions),
                "must include v1 (the only AdmissionReview version Wasmgate sends)",
            ));
        }
        for k in ["namespaceSelector", "objectSelector"] {
            if let Some(sel) = h.get(k).filter(|v| !v.is_null()) {
                errs.extend(v::validate_label_selector(sel, &format!("{at}.{k}")));
            }
        }
        let conditions = h
            .get("matchConditions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if conditions.len() > 64 {
            errs.push(FieldError::too_many(
                format!("{at}.matchConditions"),
                Some(conditions.len()),
                Some(64),
            ));
        }
        let mut seen: Vec<&str> = Vec::new();
        for (j, m) in conditions.iter().enumerate() {
            let mat = format!("{at}.matchConditions[{j}]");
            let name = m.get("name").and_then(Value::as_str).unwrap_or("");
            if name.is_empty() {
                errs.push(FieldError::required(format!("{mat}.name"), ""));
            } else {
                for msg in v::is_qualified_name(name) {
                    errs.push(FieldError::invalid(format!("{mat}.name"), name, msg));
                }
                if seen.contains(&name) {
                    errs.push(FieldError::duplicate(format!("{mat}.name"), name));
                }
                seen.push(name);
            }
            let expr = m.get("expression").and_then(Value::as_str).unwrap_or("");
            if expr.trim().is_empty() {
                errs.push(FieldError::required(format!("{mat}.expression"), ""));
            } else if let Err(e) = compile_condition(expr) {
                errs.push(FieldError::invalid(format!("{mat}.expression"), expr, e));
            }
        }
    }
    errs
}

/// kube's validation of a webhook `clientConfig` (admission and conversion webhooks).
pub fn validate_client_config(cc: Option<&Value>, at: &str, errs: &mut Vec<FieldError>) {
    let cc = cc.and_then(Value::as_object);
    let empty = Map::new();
    let cc = cc.unwrap_or(&empty);
    let url = cc.get("url").and_then(Value::as_str);
    let service = cc.get("service").and_then(Value::as_object);
    match (url, service) {
        (Some(_), Some(_)) | (None, None) => errs.push(FieldError::required(
            at,
            "exactly one of url or service is required",
        )),
        (Some(u), None) => {
            let p = format!("{at}.url");
            match u.parse::<http::Uri>() {
                Err(e) => errs.push(FieldError::invalid(
                    p,
                    u,
                    format!("host must be specified: {e}"),
                )),
                Ok(uri) => {
                    if uri.scheme_str() != Some("https") {
                        errs.push(FieldError::invalid(
                            &p,
                            u,
                            "'https' is the only allowed URL scheme",
                        ));
                    }
                    if uri.host().is_none_or(str::is_empty) {
                        errs.push(FieldError::invalid(&p, u, "host must be specified"));
                    }
                    if u.contains('@') {
                        errs.push(FieldError::invalid(
                            &p,
                            u,
                            "user information is not permitted in the URL",
                        ));
                    }
                    if u.contains('#') {
                        errs.push(FieldError::invalid(
                            &p,
                            u,
                            "fragments are not permitted in the URL",
                        ));
                    }
                    if uri.query().is_some() {
                        errs.push(FieldError::invalid(
                            &p,
                            u,
                            "query parameters are not permitted in the URL",
                        ));
                    }
                }
            }
        }
        (None, Some(svc)) => {
            let p = format!("{at}.service");
            for k in ["namespace", "name"] {
                if svc.get(k).and_then(Value::as_str).is_none_or(str::is_empty) {
                    errs.push(FieldError::required(
                        format!("{p}.{k}"),
                        "service namespace is required",
                    ));
                }
            }
            if let Some(port) = svc.get("port").filter(|v| !v.is_null()) {
                let n = port.as_i64().unwrap_or(0);
                if !(1..=65535).contains(&n) {
                    errs.push(FieldError::invalid(
                        format!("{p}.port"),
                        port.clone(),
                        "port is not valid: must be between 1 and 65535, inclusive",
                    ));
                }
            }
            if let Some(path) = svc.get("path").and_then(Value::as_str)
                && !path.starts_with('/')
            {
                errs.push(FieldError::invalid(
                    format!("{p}.path"),
                    path,
                    "must start with a '/'",
                ));
            }
        }
    }
    if let Some(ca) = cc.get("caBundle").and_then(Value::as_str)
        && base64::engine::general_purpose::STANDARD
            .decode(ca)
            .is_err()
    {
        errs.push(FieldError::invalid(
            format!("{at}.caBundle"),
            "<bytes>",
            "illegal base64 data",
        ));
    }
}

pub fn validate_rule(r: &Value, at: &str, errs: &mut Vec<FieldError>) {
    let list = |k: &str, errs: &mut Vec<FieldError>| -> Vec<String> {
        let items = strings(r.get(k));
        if items.is_empty() {
            errs.push(FieldError::required(format!("{at}.{k}"), ""));
        }
        items
    };
    for op in list("operations", errs) {
        if !["*", "CREATE", "UPDATE", "DELETE", "CONNECT"].contains(&op.as_str()) {
            errs.push(FieldError::not_supported(
                format!("{at}.operations"),
                op,
                &["*", "CONNECT", "CREATE", "DELETE", "UPDATE"],
            ));
        }
    }
    list("apiGroups", errs);
    list("apiVersions", errs);
    for (k, res) in list("resources", errs).iter().enumerate() {
        if res.is_empty() || res.starts_with('/') || res.split('/').count() > 2 {
            errs.push(FieldError::invalid(
                format!("{at}.resources[{k}]"),
                res.as_str(),
                "resource should be of the form resource or resource/subresource",
            ));
        }
    }
    if let Some(s) = r.get("scope").filter(|v| !v.is_null()) {
        let scope = s.as_str().unwrap_or("");
        if !["*", "Cluster", "Namespaced"].contains(&scope) {
            errs.push(FieldError::not_supported(
                format!("{at}.scope"),
                s.clone(),
                &["*", "Cluster", "Namespaced"],
            ));
        }
    }
}
