//! Validation of a `WasmPlugin` at admission (create and update): what the CRD's schema
//! cannot say, checked as kube-apiserver checks a webhook configuration
//! (`pkg/apis/admissionregistration/validation`, `metav1validation.ValidateLabelSelector`),
//! so that a spec the controller could never serve is a `422 Invalid` with one cause per
//! field, not a `201` followed by `Ready=False InvalidSpec`.
//!
//! The schema (`wasmplugins.crd.yaml`) already checks types, enums (`hooks`,
//! `operations`, `failurePolicy`, `isolation`), ranges, the digest's pattern and that `module` names
//! exactly one of `path` and `digest`. Here:
//!
//! - `module.path`: absolute (a relative path is resolved only in `--plugin-dir`);
//! - `groups`: API group names (DNS subdomains, `""` or `"*"`), `"*"` alone, no repeats;
//! - `resources`: `resource` or `resource/subresource`, the wildcard rules of kube's
//!   `validateResources`, no repeats;
//! - `operations`: `"*"` alone, no repeats;
//! - `namespaceSelector`, `objectSelector`: label selectors (operators, values required or
//!   forbidden by the operator, key and value syntax);
//! - `hooks`: no repeats;
//! - `timeoutMilliseconds`, `memoryLimitMiB`: within what the runtime allows
//!   (`Limits::check`, the check the controller's load makes);
//!
//! and, should the schema ever be loosened, the enums and `config` being an object again.
//! Errors on a field the schema already reported are not repeated.
//!
//! What only shows when the module is loaded (a missing file, not a component, the wrong
//! contract, a hook the module does not implement) stays the controller's: `Ready=False`.

use std::time::Duration;

use serde_json::{Value, json};
use wasmgate_apimachinery::validation::{self as v, FieldError};
use wasmgate_plugin_runtime::Limits;

const HOOKS: [&str; 4] = ["mutate", "validate", "convert", "print"];
const OPERATIONS: [&str; 4] = ["*", "CREATE", "DELETE", "UPDATE"];
const FAILURE_POLICIES: [&str; 2] = ["Fail", "Ignore"];
const ISOLATIONS: [&str; 2] = ["PerRequest", "Reused"];

/// The errors of a `WasmPlugin`'s spec, with kube's field paths (`spec.groups[0]`).
pub fn validate(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(spec) = obj.get("spec").and_then(Value::as_object) else {
        return errs;
    };
    if let Some(path) = spec
        .get("module")
        .and_then(|m| m.get("path"))
        .and_then(Value::as_str)
        && !path.is_empty()
        && !std::path::Path::new(path).is_absolute()
    {
        errs.push(FieldError::invalid(
            "spec.module.path",
            path,
            "must be an absolute path (a relative one is taken from the manifest's directory only in --plugin-dir)",
        ));
    }
    if let Some(groups) = strings(spec.get("groups")) {
        for (i, g) in groups.iter().enumerate() {
            if g.is_empty() || *g == "*" {
                continue;
            }
            for msg in v::is_dns1123_subdomain(g) {
                errs.push(FieldError::invalid(format!("spec.groups[{i}]"), *g, msg));
            }
        }
        wildcard_alone(&groups, "spec.groups", "API groups", &mut errs);
        no_repeats(&groups, "spec.groups", &mut errs);
    }
    if let Some(resources) = strings(spec.get("resources")) {
        validate_resources(&resources, "spec.resources", &mut errs);
        no_repeats(&resources, "spec.resources", &mut errs);
    }
    if let Some(ops) = strings(spec.get("operations")) {
        one_of_each(&ops, "spec.operations", &OPERATIONS, &mut errs);
        wildcard_alone(&ops, "spec.operations", "operations", &mut errs);
        no_repeats(&ops, "spec.operations", &mut errs);
    }
    for k in ["namespaceSelector", "objectSelector"] {
        if let Some(sel) = spec.get(k).filter(|s| !s.is_null()) {
            errs.extend(v::validate_label_selector(sel, &format!("spec.{k}")));
        }
    }
    if let Some(hooks) = strings(spec.get("hooks")) {
        one_of_each(&hooks, "spec.hooks", &HOOKS, &mut errs);
        no_repeats(&hooks, "spec.hooks", &mut errs);
    }
    if let Some(p) = spec.get("failurePolicy").filter(|p| !p.is_null())
        && !p.as_str().is_some_and(|p| FAILURE_POLICIES.contains(&p))
    {
        errs.push(FieldError::not_supported(
            "spec.failurePolicy",
            p.clone(),
            &FAILURE_POLICIES,
        ));
    }
    if let Some(i) = spec.get("isolation").filter(|i| !i.is_null())
        && !i.as_str().is_some_and(|i| ISOLATIONS.contains(&i))
    {
        errs.push(FieldError::not_supported(
            "spec.isolation",
            i.clone(),
            &ISOLATIONS,
        ));
    }
    if let Some(t) = spec.get("timeoutMilliseconds").filter(|t| !t.is_null()) {
        let limits = t.as_u64().map(|ms| Limits {
            timeout: Duration::from_millis(ms),
            ..Limits::default()
        });
        limit(limits, "spec.timeoutMilliseconds", t, &mut errs);
    }
    if let Some(m) = spec.get("memoryLimitMiB").filter(|m| !m.is_null()) {
        let limits = m
            .as_u64()
            .and_then(|mib| mib.checked_mul(1 << 20))
            .map(|bytes| Limits {
                memory_bytes: bytes,
                ..Limits::default()
            });
        limit(limits, "spec.memoryLimitMiB", m, &mut errs);
    }
    if let Some(c) = spec
        .get("config")
        .filter(|c| !c.is_null() && !c.is_object())
    {
        errs.push(FieldError::type_invalid(
            "spec.config",
            c.clone(),
            "must be of type object",
        ));
    }
    errs
}

/// The strings of an array field (`None` when absent or not an array: the schema says so).
fn strings(v: Option<&Value>) -> Option<Vec<&str>> {
    Some(
        v?.as_array()?
            .iter()
            .map(|x| x.as_str().unwrap_or_default())
            .collect(),
    )
}

/// A limit the runtime would refuse at load (`None`: not a number it can take).
fn limit(limits: Option<Limits>, at: &str, value: &Value, errs: &mut Vec<FieldError>) {
    let msg = match limits.map(|l| l.check()) {
        Some(Ok(())) => return,
        Some(Err(e)) => e.to_string(),
        None => "must be a positive integer".to_owned(),
    };
    errs.push(FieldError::invalid(at, value.clone(), msg));
}

fn one_of_each(items: &[&str], at: &str, supported: &[&str], errs: &mut Vec<FieldError>) {
    for (i, item) in items.iter().enumerate() {
        if !supported.contains(item) {
            errs.push(FieldError::not_supported(
                format!("{at}[{i}]"),
                *item,
                supported,
            ));
        }
    }
}

/// kube's `hasWildcard` rule: `"*"` covers everything, so nothing else may be listed.
fn wildcard_alone(items: &[&str], at: &str, what: &str, errs: &mut Vec<FieldError>) {
    if items.len() > 1 && items.contains(&"*") {
        errs.push(FieldError::invalid(
            at,
            json!(items),
            format!("if '*' is present, must not specify other {what}"),
        ));
    }
}

fn no_repeats(items: &[&str], at: &str, errs: &mut Vec<FieldError>) {
    for (i, item) in items.iter().enumerate() {
        if items[..i].contains(item) {
            errs.push(FieldError::duplicate(format!("{at}[{i}]"), *item));
        }
    }
}

/// kube's `validateResources`, but an empty list is allowed (it means every resource):
/// `resource` or `resource/subresource`; `*/*` alone; `*` with no plain resource beside
/// it; `r/*` with no other subresource of `r`; `*/s` with no other resource's `s`.
fn validate_resources(resources: &[&str], at: &str, errs: &mut Vec<FieldError>) {
    let mut with_any_sub: Vec<&str> = Vec::new();
    let mut sub_of_any: Vec<&str> = Vec::new();
    let mut double_wildcard = false;
    let mut single_wildcard = false;
    let mut plain = false;
    for (i, r) in resources.iter().enumerate() {
        let field = format!("{at}[{i}]");
        if r.is_empty() {
            errs.push(FieldError::required(field, ""));
            continue;
        }
        match *r {
            "*/*" => double_wildcard = true,
            "*" => single_wildcard = true,
            _ => {}
        }
        let Some((res, sub)) = r.split_once('/') else {
            plain |= *r != "*";
            continue;
        };
        if res.is_empty() || sub.is_empty() || sub.contains('/') {
            errs.push(FieldError::invalid(
                field,
                *r,
                "resource should be of the form resource or resource/subresource",
            ));
            continue;
        }
        if with_any_sub.contains(&res) {
            errs.push(FieldError::invalid(
                &field,
                *r,
                format!("if '{res}/*' is present, must not specify {r}"),
            ));
        }
        if sub_of_any.contains(&sub) {
            errs.push(FieldError::invalid(
                &field,
                *r,
                format!("if '*/{sub}' is present, must not specify {r}"),
            ));
        }
        if sub == "*" {
            with_any_sub.push(res);
        }
        if res == "*" {
            sub_of_any.push(sub);
        }
    }
    if resources.len() > 1 && double_wildcard {
        errs.push(FieldError::invalid(
            at,
            json!(resources),
            "if '*/*' is present, must not specify other resources",
        ));
    }
    if single_wildcard && plain {
        errs.push(FieldError::invalid(
            at,
            json!(resources),
            "if '*' is present, must not specify other resources without subresources",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(spec: Value) -> Vec<String> {
        validate(&json!({"spec": spec}))
            .into_iter()
            .map(|e| format!("{}: {}", e.field, e.message()))
            .collect()
    }

    /// Issue 25 item 7: a spec the controller can serve has no errors.
    #[test]
    fn a_good_spec_is_valid() {
        let spec = json!({
            "module": {"path": "/plugins/p.wasm"}, "groups": ["", "apps", "example.com"],
            "resources": ["configmaps", "deployments/scale", "*/status"],
            "operations": ["CREATE", "UPDATE"], "hooks": ["validate"],
            "namespaceSelector": {"matchLabels": {"team": "a"}},
            "objectSelector": {"matchExpressions": [{"key": "app.kubernetes.io/name", "operator": "In", "values": ["x"]}]},
            "failurePolicy": "Ignore", "timeoutMilliseconds": 30000, "memoryLimitMiB": 1024,
            "config": {"a": 1},
        });
        assert_eq!(fields(spec), Vec::<String>::new());
        assert_eq!(
            fields(json!({"module": {"digest": "ab"}, "groups": ["*"], "resources": ["*"]})),
            Vec::<String>::new()
        );
    }

    /// Issue 25 item 7: each statically checkable mistake is a cause at its field, worded
    /// as kube words it.
    #[test]
    fn mistakes_are_causes_at_their_fields() {
        let errs = fields(json!({
            "module": {"path": "p.wasm"}, "groups": ["apps", "*", "Bad_Group", "apps"],
            "resources": ["*", "pods", "a/b/c", "x/*", "x/y", ""],
            "operations": ["*", "CREATE", "CREATE"],
            "hooks": ["validate", "validate"],
            "objectSelector": {"matchExpressions": [
                {"key": "a", "operator": "Equals", "values": ["b"]},
                {"key": "b", "operator": "In"},
                {"key": "c", "operator": "Exists", "values": ["x"]},
                {"key": "bad key", "operator": "NotIn", "values": ["no spaces"]},
            ]},
            "failurePolicy": "Sometimes", "timeoutMilliseconds": 0, "memoryLimitMiB": 1,
            "config": [1], "isolation": "Pooled",
        }));
        let want = [
            "spec.module.path: Invalid value: \"p.wasm\": must be an absolute path",
            "spec.groups[2]: Invalid value: \"Bad_Group\": a lowercase RFC 1123 subdomain",
            "spec.groups: Invalid value: [\"apps\",\"*\",\"Bad_Group\",\"apps\"]: if '*' is present, must not specify other API groups",
            "spec.groups[3]: Duplicate value: \"apps\"",
            "spec.resources[2]: Invalid value: \"a/b/c\": resource should be of the form resource or resource/subresource",
            "spec.resources[4]: Invalid value: \"x/y\": if 'x/*' is present, must not specify x/y",
            "spec.resources[5]: Required value",
            "spec.resources: Invalid value: [\"*\",\"pods\",\"a/b/c\",\"x/*\",\"x/y\",\"\"]: if '*' is present, must not specify other resources without subresources",
            "spec.operations: Invalid value: [\"*\",\"CREATE\",\"CREATE\"]: if '*' is present, must not specify other operations",
            "spec.operations[2]: Duplicate value: \"CREATE\"",
            "spec.objectSelector.matchExpressions[0].operator: Invalid value: \"Equals\": not a valid selector operator",
            "spec.objectSelector.matchExpressions[1].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
            "spec.objectSelector.matchExpressions[2].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            "spec.objectSelector.matchExpressions[3].key: Invalid value: \"bad key\": name part must consist of alphanumeric characters",
            "spec.objectSelector.matchExpressions[3].values[0]: Invalid value: \"no spaces\": a valid label must be an empty string or consist of alphanumeric characters",
            "spec.hooks[1]: Duplicate value: \"validate\"",
            "spec.failurePolicy: Unsupported value: \"Sometimes\": supported values: \"Fail\", \"Ignore\"",
            "spec.isolation: Unsupported value: \"Pooled\": supported values: \"PerRequest\", \"Reused\"",
            "spec.timeoutMilliseconds: Invalid value: 0: timeout must be more than 0 and at most 30s",
            "spec.memoryLimitMiB: Invalid value: 1: memory limit must be between 2097152 and 1073741824 bytes",
            "spec.config: Invalid value: [1]: must be of type object",
        ];
        for w in want {
            assert!(
                errs.iter().any(|e| e.starts_with(w)),
                "no {w:?} in\n{}",
                errs.join("\n")
            );
        }
        assert_eq!(errs.len(), want.len(), "{}", errs.join("\n"));
    }
}
