//! Admission webhooks (issue 13): `admissionregistration.k8s.io/v1`
//! `MutatingWebhookConfiguration` and `ValidatingWebhookConfiguration`, called as
//! kube-apiserver calls them, next to the Wasm plugins.
//!
//! - `config`: the objects' defaults and validation, and their parsed form.
//! - `call`: one `AdmissionReview` round trip over the gateway's one HTTPS client
//!   (`outbound`), the answer checked, the outcomes worded as kube's.
//! - [`Index`]: the webhooks in force, rebuilt on every change of the configurations
//!   (`crate::configuration`; a write of one returns once it is in force), and matched against a
//!   request ([`Index::matching`]): rules (operations, groups, versions, resources and
//!   subresources, scope, `matchPolicy`), then the object and namespace selectors.
//!
//! Order (documented in the README): Wasm plugins first, then mutating webhooks by
//! configuration name and position; validating plugins and webhooks run concurrently and
//! the first denial in that order answers. Requests for the admission configurations
//! themselves (and for `WasmPlugin`s) are not sent to webhooks, as in kube.
//!
//! `matchConditions` are CEL (`wasmgate_cel::Expression`) over `object`, `oldObject` and
//! `request`, compiled on write and evaluated before the call.
//!
//! Partial: a rule matched through `matchPolicy: Equivalent` sends the object at the
//! version the client wrote, not converted to one the rule lists; no `authorizer`.

pub mod call;
pub mod config;

use std::sync::Arc;

use serde_json::{Map, Value};

pub use config::Webhook;
use config::{MatchPolicy, Rule, Scope};

use crate::plugins::Op;

/// The API group of the configurations.
pub const GROUP: &str = crate::registry::ADMISSIONREGISTRATION_GROUP;
/// Their keys' prefix in the store.
pub const PREFIX: &str = "admissionregistration.k8s.io/";

/// The webhooks in force.
#[derive(Debug, Default)]
pub struct Index {
    /// The store revision it reflects.
    pub revision: u64,
    mutating: Vec<Arc<Webhook>>,
    validating: Vec<Arc<Webhook>>,
}

/// What a request looks like to the rules.
pub struct Attributes<'a> {
    pub group: &'a str,
    pub version: &'a str,
    pub resource: &'a str,
    pub subresource: Option<&'a str>,
    pub op: Op,
    pub namespaced: bool,
    /// Every version the resource is served at (`matchPolicy: Equivalent`).
    pub served_versions: &'a [String],
    /// The labels of the object and of the stored one.
    pub labels: Option<&'a Map<String, Value>>,
    pub old_labels: Option<&'a Map<String, Value>>,
}

impl Index {
    /// The index of the configurations `objects` (`true`: mutating) read at `revision`.
    pub fn build(revision: u64, objects: impl Iterator<Item = (bool, Value)>) -> Index {
        let mut configs: Vec<(bool, String, Vec<Webhook>)> = objects
            .map(|(mutating, o)| {
                let name = crate::object::meta_str(&o, "name").unwrap_or("").to_owned();
                (mutating, name, config::parse(&o, mutating))
            })
            .collect();
        // kube calls configurations in name order, webhooks in their order within one.
        configs.sort_by(|a, b| a.1.cmp(&b.1));
        let mut ix = Index {
            revision,
            ..Index::default()
        };
        for (mutating, _, hooks) in configs {
            let list = if mutating {
                &mut ix.mutating
            } else {
                &mut ix.validating
            };
            list.extend(hooks.into_iter().map(Arc::new));
        }
        ix
    }

    /// Whether no webhook is configured (the common case: nothing to match).
    pub fn is_empty(&self) -> bool {
        self.mutating.is_empty() && self.validating.is_empty()
    }

    /// The mutating and the validating webhooks whose rules and object selector match `a`
    /// (the namespace selector is the caller's: it needs the namespace's labels, read only
    /// when a webhook matched this far).
    pub fn matching(&self, a: &Attributes<'_>) -> (Vec<Arc<Webhook>>, Vec<Arc<Webhook>>) {
        if a.group == GROUP || a.group == crate::plugins::crd::GROUP {
            return (Vec::new(), Vec::new());
        }
        let pick = |list: &[Arc<Webhook>]| {
            list.iter()
                .filter(|h| h.matches_rules(a) && h.matches_object(a))
                .cloned()
                .collect()
        };
        (pick(&self.mutating), pick(&self.validating))
    }
}

impl Webhook {
    fn matches_rules(&self, a: &Attributes<'_>) -> bool {
        self.rules.iter().any(|r| r.matches(a, true))
            || (self.match_policy == MatchPolicy::Equivalent
                && self.rules.iter().any(|r| r.matches(a, false)))
    }

    /// `objectSelector`: the object's labels or the stored object's.
    fn matches_object(&self, a: &Attributes<'_>) -> bool {
        self.object_selector.is_everything()
            || self.object_selector.matches(a.labels)
            || (a.old_labels.is_some() && self.object_selector.matches(a.old_labels))
    }

    /// `namespaceSelector`, given what it is matched against: the namespace's labels for a
    /// namespaced object, the object's own for a Namespace; a cluster-scoped object of any
    /// other kind always matches.
    pub fn matches_namespace(&self, labels: Option<&Map<String, Value>>) -> bool {
        self.namespace_selector.is_everything() || self.namespace_selector.matches(labels)
    }

    /// Whether the namespace selector needs anything read (kube skips it for
    /// cluster-scoped objects other than namespaces).
    pub fn selects_namespaces(&self) -> bool {
        !self.namespace_selector.is_everything()
    }
}

impl Rule {
    /// kube's rule matcher; `exact`: the version must be listed (else any version of a
    /// resource the rule names will do, for `matchPolicy: Equivalent`).
    pub fn matches(&self, a: &Attributes<'_>, exact: bool) -> bool {
        let any = |list: &[String], v: &str| list.iter().any(|x| x == "*" || x == v);
        let op = match a.op {
            Op::Create => "CREATE",
            Op::Update => "UPDATE",
            Op::Delete => "DELETE",
        };
        let version_ok = any(&self.versions, a.version)
            || (!exact
                && self
                    .versions
                    .iter()
                    .any(|v| a.served_versions.iter().any(|s| s == v)));
        let scope_ok = match self.scope {
            Scope::Any => true,
            Scope::Cluster => !a.namespaced,
            Scope::Namespaced => a.namespaced,
        };
        let sub = a.subresource.unwrap_or("");
        let resource_ok = self.resources.iter().any(|r| {
            let (res, rsub) = r.split_once('/').unwrap_or((r.as_str(), ""));
            (res == "*" || res == a.resource) && (rsub == "*" || rsub == sub)
        });
        any(&self.operations, op)
            && any(&self.groups, a.group)
            && version_ok
            && resource_ok
            && scope_ok
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use serde_json::json;

    use super::*;

    fn index(rules: Value, extra: Value) -> Index {
        let mut hook = json!({
            "name": "a.example.com",
            "clientConfig": {"url": "https://127.0.0.1:1/"},
            "rules": rules,
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        });
        for (k, v) in extra.as_object().unwrap() {
            hook[k] = v.clone();
        }
        let obj = json!({"metadata": {"name": "cfg"}, "webhooks": [hook]});
        Index::build(1, std::iter::once((false, obj)))
    }

    fn attrs<'a>(resource: &'a str, sub: Option<&'a str>, version: &'a str) -> Attributes<'a> {
        Attributes {
            group: "example.com",
            version,
            resource,
            subresource: sub,
            op: Op::Create,
            namespaced: true,
            served_versions: &[],
            labels: None,
            old_labels: None,
        }
    }

    fn hits(ix: &Index, a: &Attributes<'_>) -> bool {
        !ix.matching(a).1.is_empty()
    }

    #[test]
    fn rules_match_as_kube_matches_them() {
        let rule = |res: &str| json!([{"operations": ["CREATE"], "apiGroups": ["example.com"], "apiVersions": ["v1"], "resources": [res]}]);
        let ix = index(rule("widgets"), json!({}));
        assert!(hits(&ix, &attrs("widgets", None, "v1")));
        assert!(
            !hits(&ix, &attrs("widgets", Some("status"), "v1")),
            "main resource only"
        );
        assert!(!hits(&ix, &attrs("gadgets", None, "v1")));
        let ix = index(rule("widgets/*"), json!({}));
        assert!(hits(&ix, &attrs("widgets", Some("status"), "v1")));
        assert!(hits(&ix, &attrs("widgets", None, "v1")));
        let ix = index(rule("*/status"), json!({}));
        assert!(hits(&ix, &attrs("gadgets", Some("status"), "v1")));
        assert!(!hits(&ix, &attrs("gadgets", Some("scale"), "v1")));
        let ix = index(rule("*"), json!({}));
        assert!(hits(&ix, &attrs("gadgets", None, "v1")));
        assert!(!hits(&ix, &attrs("gadgets", Some("status"), "v1")));
        // Another version: Equivalent (default) when the resource serves a listed one.
        let served = ["v1".to_owned(), "v2".to_owned()];
        let mut v2 = attrs("widgets", None, "v2");
        v2.served_versions = &served;
        let ix = index(rule("widgets"), json!({}));
        assert!(hits(&ix, &v2));
        let ix = index(rule("widgets"), json!({"matchPolicy": "Exact"}));
        assert!(!hits(&ix, &v2));
        // Scope.
        let ix = index(
            json!([{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "scope": "Cluster"}]),
            json!({}),
        );
        assert!(!hits(&ix, &attrs("widgets", None, "v1")));
        // The admission configurations themselves are never sent to webhooks.
        let ix = index(
            json!([{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}]),
            json!({}),
        );
        let mut own = attrs("validatingwebhookconfigurations", None, "v1");
        own.group = GROUP;
        assert!(!hits(&ix, &own));
    }

    #[test]
    fn object_selector_matches_new_or_old_labels() {
        let ix = index(
            json!([{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}]),
            json!({"objectSelector": {"matchLabels": {"team": "a"}}}),
        );
        let a_labels = json!({"team": "a"});
        let b_labels = json!({"team": "b"});
        let mut a = attrs("widgets", None, "v1");
        assert!(!hits(&ix, &a));
        a.labels = b_labels.as_object();
        assert!(!hits(&ix, &a));
        a.old_labels = a_labels.as_object();
        assert!(hits(&ix, &a), "the stored object's labels match");
    }
}
