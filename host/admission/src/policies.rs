//! `ValidatingAdmissionPolicy` and `ValidatingAdmissionPolicyBinding`
//! (`admissionregistration.k8s.io/v1`, issue 13): CEL validations run in the gateway, on the
//! CEL engine of `x-kubernetes-validations` (`wasmgate_cel::Expression`).
//!
//! A policy says what it checks (`validations`, with `variables` and `matchConditions`)
//! and on what (`matchConstraints`); a binding says where it applies (`matchResources`),
//! with what parameters (`paramRef` to an object of the policy's `paramKind`) and what a
//! violation does (`validationActions`: `Deny`, `Warn`). Both are read into an [`Index`] with
//! the webhook configurations (one controller, one prefix), their expressions compiled
//! once; compile errors are the policy's `status.typeChecking.expressionWarnings` and, at
//! admission, failures under its `failurePolicy`.
//!
//! Variables: `object`, `oldObject`, `request`, `params`, `namespaceObject`, `variables`
//! (untyped: a policy may match many kinds). Denials are worded as kube-apiserver's:
//! `<resource> "<name>" is forbidden: ValidatingAdmissionPolicy '<policy>' with binding
//! '<binding>' denied request: <message>`, code from the validation's `reason` (422
//! `Invalid` by default).
//!
//! `auditAnnotations` (`<policy>/<key>`) and the `Audit` action (kube's
//! `validation.policy.admission.k8s.io/validation_failure`) go into the request's audit
//! event.
//!
//! Partial: the `authorizer` variable, `paramRef.selector`, and type checking against the
//! matched kinds' schemas (the variables are `dyn`: type errors surface at evaluation) are
//! not served; the first is a compile error, the second is refused on write.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use wasmgate_apimachinery::selectors::LabelSelector;
use wasmgate_apimachinery::status::{Status, StatusCause};
use wasmgate_apimachinery::validation::{self as v, FieldError};
use wasmgate_cel::{Expression, Output};

use crate::webhooks::config::{self, FailurePolicy, MatchPolicy, Rule};
use crate::webhooks::{Attributes, GROUP};

/// The variables every policy expression may use.
const VARIABLES: &[&str] = &[
    "object",
    "oldObject",
    "request",
    "params",
    "namespaceObject",
    "variables",
];

/// A compiled expression, or why it did not compile.
type Compiled = Result<Expression, String>;

/// What a policy or binding matches (`matchConstraints` / `matchResources`).
#[derive(Debug)]
struct Constraints {
    rules: Vec<(Rule, Vec<String>)>,
    exclude: Vec<(Rule, Vec<String>)>,
    match_policy: MatchPolicy,
    namespace_selector: LabelSelector,
    object_selector: LabelSelector,
}

impl Constraints {
    fn parse(v: &Value) -> Constraints {
        let rules = |k: &str| -> Vec<(Rule, Vec<String>)> {
            v.get(k)
                .and_then(Value::as_array)
                .map(|rs| {
                    rs.iter()
                        .map(|r| (config::rule(r), config::strings(r.get("resourceNames"))))
                        .collect()
                })
                .unwrap_or_default()
        };
        let selector = |k: &str| {
            v.get(k)
                .map_or(
                    Ok(LabelSelector::everything()),
                    LabelSelector::from_label_selector,
                )
                .unwrap_or_else(|_| LabelSelector::nothing())
        };
        Constraints {
            rules: rules("resourceRules"),
            exclude: rules("excludeResourceRules"),
            match_policy: if v.get("matchPolicy").and_then(Value::as_str) == Some("Exact") {
                MatchPolicy::Exact
            } else {
                MatchPolicy::Equivalent
            },
            namespace_selector: selector("namespaceSelector"),
            object_selector: selector("objectSelector"),
        }
    }

    /// Rules and the object selector (the namespace selector needs the namespace).
    fn matches(&self, a: &Attributes<'_>, name: &str) -> bool {
        let hit = |rules: &[(Rule, Vec<String>)]| {
            let named = |names: &Vec<String>| names.is_empty() || names.iter().any(|n| n == name);
            rules
                .iter()
                .any(|(r, names)| r.matches(a, true) && named(names))
                || (self.match_policy == MatchPolicy::Equivalent
                    && rules
                        .iter()
                        .any(|(r, names)| r.matches(a, false) && named(names)))
        };
        hit(&self.rules)
            && !hit(&self.exclude)
            && (self.object_selector.is_everything()
                || self.object_selector.matches(a.labels)
                || (a.old_labels.is_some() && self.object_selector.matches(a.old_labels)))
    }
}

/// One `validations[]` entry.
#[derive(Debug)]
struct Validation {
    source: String,
    expression: Compiled,
    message: String,
    message_expression: Option<Compiled>,
    reason: String,
}

/// A policy, compiled.
#[derive(Debug)]
pub struct Policy {
    pub name: String,
    failure_policy: FailurePolicy,
    /// `paramKind`: (apiVersion, kind).
    param_kind: Option<(String, String)>,
    constraints: Constraints,
    match_conditions: Vec<(String, Compiled)>,
    variables: Vec<(String, Compiled)>,
    validations: Vec<Validation>,
    /// `auditAnnotations`: (key, compiled `valueExpression`).
    audit_annotations: Vec<(String, Compiled)>,
    /// What `status.typeChecking.expressionWarnings` says: (fieldRef, warning).
    pub warnings: Vec<(String, String)>,
}

/// A binding.
#[derive(Debug)]
pub struct Binding {
    pub name: String,
    policy: String,
    /// `paramRef`: name, namespace, deny when not found.
    param_ref: Option<(String, String, bool)>,
    resources: Option<Constraints>,
    deny: bool,
    warn: bool,
    audit: bool,
}

/// The policies and bindings in force.
#[derive(Debug, Default)]
pub struct Index {
    policies: BTreeMap<String, Arc<Policy>>,
    bindings: Vec<Arc<Binding>>,
}

impl Index {
    /// Compiles every policy and reads every binding.
    pub fn build<'a>(
        policies: impl Iterator<Item = &'a Value>,
        bindings: impl Iterator<Item = &'a Value>,
    ) -> Index {
        let mut ix = Index::default();
        for o in policies {
            let p = compile(o);
            ix.policies.insert(p.name.clone(), Arc::new(p));
        }
        ix.bindings = bindings.map(|o| Arc::new(binding(o))).collect();
        ix.bindings.sort_by(|a, b| a.name.cmp(&b.name));
        ix
    }

    pub fn is_empty(&self) -> bool {
        self.bindings.is_empty()
    }

    /// The compiled policy `name`.
    pub fn policy(&self, name: &str) -> Option<&Arc<Policy>> {
        self.policies.get(name)
    }

    /// The (policy, binding) pairs whose rules and object selectors match `a` for an
    /// object named `name`; each with whether it needs the namespace selector checked.
    pub fn matching(&self, a: &Attributes<'_>, name: &str) -> Vec<(Arc<Policy>, Arc<Binding>)> {
        if a.group == GROUP || a.group == crate::plugins::crd::GROUP {
            return Vec::new();
        }
        self.bindings
            .iter()
            .filter_map(|b| {
                let p = self.policies.get(&b.policy)?;
                (p.constraints.matches(a, name)
                    && b.resources.as_ref().is_none_or(|r| r.matches(a, name)))
                .then(|| (p.clone(), b.clone()))
            })
            .collect()
    }
}

impl Policy {
    /// Whether the namespace selectors of the policy and `binding` admit labels `ns`.
    pub fn matches_namespace(&self, binding: &Binding, ns: Option<&Map<String, Value>>) -> bool {
        let ok = |c: &Constraints| {
            c.namespace_selector.is_everything() || c.namespace_selector.matches(ns)
        };
        ok(&self.constraints) && binding.resources.as_ref().is_none_or(ok)
    }

    /// Whether either selects namespaces at all.
    pub fn selects_namespaces(&self, binding: &Binding) -> bool {
        !self.constraints.namespace_selector.is_everything()
            || binding
                .resources
                .as_ref()
                .is_some_and(|r| !r.namespace_selector.is_everything())
    }

    /// The `paramKind`, when the policy takes parameters.
    pub fn param_kind(&self) -> Option<&(String, String)> {
        self.param_kind.as_ref()
    }
}

impl Binding {
    /// `paramRef`: (name, namespace, deny when missing).
    pub fn param_ref(&self) -> Option<&(String, String, bool)> {
        self.param_ref.as_ref()
    }
}

fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

fn compile(o: &Value) -> Policy {
    let spec = o.get("spec").unwrap_or(&Value::Null);
    let mut warnings = Vec::new();
    let mut expr = |source: &str, field: String, returns: Option<&str>| -> Compiled {
        let e = Expression::compile(source, VARIABLES).and_then(|e| match returns {
            Some(t) if !e.may_return(t) => {
                Err(format!("must evaluate to {t}, not {}", e.output_type()))
            }
            _ => Ok(e),
        });
        if let Err(msg) = &e {
            warnings.push((field, msg.clone()));
        }
        e
    };
    let list = |k: &str| {
        spec.get(k)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let match_conditions = list("matchConditions")
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let c = expr(
                s(m, "expression"),
                format!("spec.matchConditions[{i}].expression"),
                Some("bool"),
            );
            (s(m, "name").to_owned(), c)
        })
        .collect();
    let variables = list("variables")
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let c = expr(
                s(m, "expression"),
                format!("spec.variables[{i}].expression"),
                None,
            );
            (s(m, "name").to_owned(), c)
        })
        .collect();
    let validations = list("validations")
        .iter()
        .enumerate()
        .map(|(i, val)| Validation {
            source: s(val, "expression").to_owned(),
            expression: expr(
                s(val, "expression"),
                format!("spec.validations[{i}].expression"),
                Some("bool"),
            ),
            message: s(val, "message").to_owned(),
            message_expression: val
                .get("messageExpression")
                .and_then(Value::as_str)
                .filter(|m| !m.is_empty())
                .map(|m| {
                    expr(
                        m,
                        format!("spec.validations[{i}].messageExpression"),
                        Some("string"),
                    )
                }),
            reason: s(val, "reason").to_owned(),
        })
        .collect();
    let audit_annotations = list("auditAnnotations")
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let c = expr(
                s(a, "valueExpression"),
                format!("spec.auditAnnotations[{i}].valueExpression"),
                None,
            );
            (s(a, "key").to_owned(), c)
        })
        .collect();
    let param_kind = spec
        .get("paramKind")
        .filter(|p| p.is_object())
        .map(|p| (s(p, "apiVersion").to_owned(), s(p, "kind").to_owned()));
    Policy {
        name: crate::object::meta_str(o, "name").unwrap_or("").to_owned(),
        failure_policy: if s(spec, "failurePolicy") == "Ignore" {
            FailurePolicy::Ignore
        } else {
            FailurePolicy::Fail
        },
        param_kind,
        constraints: Constraints::parse(spec.get("matchConstraints").unwrap_or(&Value::Null)),
        match_conditions,
        variables,
        validations,
        audit_annotations,
        warnings,
    }
}

fn binding(o: &Value) -> Binding {
    let spec = o.get("spec").unwrap_or(&Value::Null);
    let actions = config::strings(spec.get("validationActions"));
    Binding {
        name: crate::object::meta_str(o, "name").unwrap_or("").to_owned(),
        policy: s(spec, "policyName").to_owned(),
        param_ref: spec.get("paramRef").filter(|p| p.is_object()).map(|p| {
            (
                s(p, "name").to_owned(),
                s(p, "namespace").to_owned(),
                s(p, "parameterNotFoundAction") != "Allow",
            )
        }),
        resources: spec
            .get("matchResources")
            .filter(|m| m.is_object())
            .map(Constraints::parse),
        deny: actions.iter().any(|a| a == "Deny"),
        warn: actions.iter().any(|a| a == "Warn"),
        audit: actions.iter().any(|a| a == "Audit"),
    }
}

/// What one request looks like to a policy.
pub struct Input<'a> {
    pub object: &'a Value,
    pub old_object: &'a Value,
    pub request: &'a Value,
    pub namespace_object: &'a Value,
    /// The object a binding's `paramRef` names (`Null`: none).
    pub params: &'a Value,
    /// `<resource>[.<group>]`, `name`: how a denial names the object.
    pub resource: &'a str,
    pub name: &'a str,
    /// `Status.details` of a denial: group and kind (the resource, as kube sets it).
    pub group: &'a str,
    pub plural: &'a str,
}

/// Runs `policy` as `binding` binds it on `input`: `Err` with the request's Status when
/// it denies; warnings for `Warn`.
pub fn evaluate(
    policy: &Policy,
    binding: &Binding,
    input: &Input<'_>,
    warnings: &mut Vec<String>,
    annotations: &mut Vec<(String, String)>,
) -> Result<(), Box<Status>> {
    let denial = |message: String, reason: &str| -> Box<Status> {
        let cause = format!(
            "ValidatingAdmissionPolicy '{}' with binding '{}' denied request: {message}",
            policy.name, binding.name
        );
        let reason = if reason.is_empty() { "Invalid" } else { reason };
        let code = match reason {
            "Unauthorized" => 401,
            "Forbidden" => 403,
            "RequestEntityTooLarge" => 413,
            _ => 422,
        };
        let mut st = Status::failure(
            code,
            reason,
            format!("{} {:?} is forbidden: {cause}", input.resource, input.name),
        );
        st.details.name = input.name.to_owned();
        st.details.group = input.group.to_owned();
        st.details.kind = input.plural.to_owned();
        st.details.causes = vec![StatusCause {
            reason: String::new(),
            message: cause,
            field: String::new(),
        }];
        Box::new(st)
    };
    // An expression that cannot run: the failure policy decides.
    let failed = |what: String| -> Result<(), Box<Status>> {
        match policy.failure_policy {
            FailurePolicy::Fail => Err(denial(what, "")),
            FailurePolicy::Ignore => Ok(()),
        }
    };
    // `variables`, filled in as they are computed (each sees the ones before it).
    let mut variables = Value::Object(Map::new());
    let run = |e: &Compiled, variables: &Value| -> Result<Output, String> {
        let e = e.as_ref().map_err(|c| c.clone())?;
        e.evaluate(&[
            ("object", input.object),
            ("oldObject", input.old_object),
            ("request", input.request),
            ("params", input.params),
            ("namespaceObject", input.namespace_object),
            ("variables", variables),
        ])
    };
    for (name, cond) in &policy.match_conditions {
        match run(cond, &variables) {
            Ok(Output::Bool(true)) => {}
            Ok(Output::Bool(false)) => return Ok(()),
            Ok(_) => {
                return failed(format!(
                    "matchCondition '{name}' did not evaluate to a bool"
                ));
            }
            Err(e) => return failed(format!("failed to evaluate matchCondition '{name}': {e}")),
        }
    }
    for (name, var) in &policy.variables {
        let value = match run(var, &variables) {
            Ok(Output::Bool(b)) => Value::Bool(b),
            Ok(Output::String(s)) => Value::String(s),
            Ok(Output::Null) => Value::Null,
            Ok(Output::Json(j)) => j,
            Err(e) => return failed(format!("variable '{name}' resulted in error: {e}")),
        };
        if let Some(m) = variables.as_object_mut() {
            m.insert(name.clone(), value);
        }
    }
    // Audit annotations: `<policy>/<key>`, the value expression's string (`null`: none).
    for (key, value) in &policy.audit_annotations {
        match run(value, &variables) {
            Ok(Output::String(v)) => annotations.push((format!("{}/{key}", policy.name), v)),
            Ok(Output::Null) => {}
            Ok(_) => {
                return failed(format!(
                    "valueExpression of audit annotation '{key}' did not evaluate to a string"
                ));
            }
            Err(e) => {
                return failed(format!(
                    "valueExpression of audit annotation '{key}' resulted in error: {e}"
                ));
            }
        }
    }
    let mut audited = Vec::new();
    for (index, val) in policy.validations.iter().enumerate() {
        let verdict = match run(&val.expression, &variables) {
            Ok(Output::Bool(b)) => b,
            Ok(_) => {
                return failed(format!(
                    "expression '{}' did not evaluate to a bool",
                    val.source.trim()
                ));
            }
            Err(e) => {
                return failed(format!(
                    "expression '{}' resulted in error: {e}",
                    val.source.trim()
                ));
            }
        };
        if verdict {
            continue;
        }
        let mut message = match &val.message_expression {
            Some(m) => match run(m, &variables) {
                Ok(Output::String(s)) if !s.trim().is_empty() => s,
                _ => String::new(),
            },
            None => String::new(),
        };
        if message.is_empty() {
            message = if val.message.is_empty() {
                format!("failed expression: {}", val.source.trim())
            } else {
                val.message.clone()
            };
        }
        if binding.warn {
            warnings.push(format!(
                "Validation failed for ValidatingAdmissionPolicy '{}' with binding '{}': {message}",
                policy.name, binding.name
            ));
        }
        if binding.audit {
            let mut actions = vec!["Audit"];
            if binding.deny {
                actions.insert(0, "Deny");
            }
            if binding.warn {
                actions.push("Warn");
            }
            audited.push(json!({
                "message": message,
                "policy": policy.name,
                "binding": binding.name,
                "expressionIndex": index,
                "validationActions": actions,
            }));
        }
        if binding.deny {
            record_failures(annotations, audited);
            return Err(denial(message, &val.reason));
        }
    }
    record_failures(annotations, audited);
    Ok(())
}

/// kube's `validation.policy.admission.k8s.io/validation_failure` audit annotation: the
/// failed validations of bindings with the `Audit` action, as a JSON list.
fn record_failures(annotations: &mut Vec<(String, String)>, failures: Vec<Value>) {
    if !failures.is_empty() {
        annotations.push((
            "validation.policy.admission.k8s.io/validation_failure".into(),
            Value::Array(failures).to_string(),
        ));
    }
}

/// The denial when a binding's `paramRef` names nothing and it says `Deny`.
pub fn params_missing(policy: &Policy, binding: &Binding, input: &Input<'_>) -> Box<Status> {
    let mut st = Status::failure(
        422,
        "Invalid",
        format!(
            "{} {:?} is forbidden: ValidatingAdmissionPolicy '{}' with binding '{}' denied request: no params found for policy binding with `Deny` parameterNotFoundAction",
            input.resource, input.name, policy.name, binding.name
        ),
    );
    st.details.name = input.name.to_owned();
    Box::new(st)
}

/// kube's defaults for a policy (v1).
pub fn set_policy_defaults(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if spec.get("failurePolicy").is_none_or(Value::is_null) {
        spec.insert("failurePolicy".into(), json!("Fail"));
    }
    if let Some(m) = spec
        .get_mut("matchConstraints")
        .and_then(Value::as_object_mut)
    {
        set_constraint_defaults(m);
    }
}

/// kube's defaults for a binding (v1).
pub fn set_binding_defaults(obj: &mut Value) {
    if let Some(m) = obj
        .get_mut("spec")
        .and_then(|s| s.get_mut("matchResources"))
        .and_then(Value::as_object_mut)
    {
        set_constraint_defaults(m);
    }
}

fn set_constraint_defaults(m: &mut Map<String, Value>) {
    for (k, v) in [
        ("matchPolicy", json!("Equivalent")),
        ("namespaceSelector", json!({})),
        ("objectSelector", json!({})),
    ] {
        if m.get(k).is_none_or(Value::is_null) {
            m.insert(k.into(), v);
        }
    }
    for k in ["resourceRules", "excludeResourceRules"] {
        if let Some(rules) = m.get_mut(k).and_then(Value::as_array_mut) {
            for r in rules.iter_mut().filter_map(Value::as_object_mut) {
                if r.get("scope").is_none_or(Value::is_null) {
                    r.insert("scope".into(), json!("*"));
                }
            }
        }
    }
}

fn validate_constraints(m: &Value, at: &str, required: bool, errs: &mut Vec<FieldError>) {
    let rules = m.get("resourceRules").and_then(Value::as_array);
    if required && rules.is_none_or(|r| r.is_empty()) {
        errs.push(FieldError::required(format!("{at}.resourceRules"), ""));
    }
    for k in ["resourceRules", "excludeResourceRules"] {
        for (i, r) in m
            .get(k)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            config::validate_rule(r, &format!("{at}.{k}[{i}]"), errs);
        }
    }
    for k in ["namespaceSelector", "objectSelector"] {
        if let Some(sel) = m.get(k).filter(|v| !v.is_null()) {
            errs.extend(v::validate_label_selector(sel, &format!("{at}.{k}")));
        }
    }
    if let Some(p) = m.get("matchPolicy").filter(|v| !v.is_null()) {
        let s = p.as_str().unwrap_or("");
        if !["Equivalent", "Exact"].contains(&s) {
            errs.push(FieldError::not_supported(
                format!("{at}.matchPolicy"),
                p.clone(),
                &["Equivalent", "Exact"],
            ));
        }
    }
}

/// kube's validation of a policy (the parts Wasmgate serves; what it does not is refused).
pub fn validate_policy(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let list = |k: &str| {
        spec.get(k)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let validations = list("validations");
    if validations.is_empty() && list("auditAnnotations").is_empty() {
        errs.push(FieldError::required(
            "spec.validations",
            "validations or auditAnnotations must contain at least one item",
        ));
    }
    let mut keys: Vec<&str> = Vec::new();
    for (i, a) in list("auditAnnotations").iter().enumerate() {
        let key = s(a, "key");
        if key.is_empty() {
            errs.push(FieldError::required(
                format!("spec.auditAnnotations[{i}].key"),
                "",
            ));
        } else {
            let full = format!(
                "{}/{key}",
                crate::object::meta_str(obj, "name").unwrap_or("")
            );
            for msg in v::is_qualified_name(&full) {
                errs.push(FieldError::invalid(
                    format!("spec.auditAnnotations[{i}].key"),
                    key,
                    msg,
                ));
            }
            if keys.contains(&key) {
                errs.push(FieldError::duplicate(
                    format!("spec.auditAnnotations[{i}].key"),
                    key,
                ));
            }
            keys.push(key);
        }
        if s(a, "valueExpression").trim().is_empty() {
            errs.push(FieldError::required(
                format!("spec.auditAnnotations[{i}].valueExpression"),
                "valueExpression is not specified",
            ));
        }
    }
    for (i, val) in validations.iter().enumerate() {
        if s(val, "expression").trim().is_empty() {
            errs.push(FieldError::required(
                format!("spec.validations[{i}].expression"),
                "expression is not specified",
            ));
        }
        if let Some(r) = val.get("reason").filter(|r| !r.is_null()) {
            let allowed = [
                "Unauthorized",
                "Forbidden",
                "Invalid",
                "RequestEntityTooLarge",
            ];
            if !allowed.contains(&r.as_str().unwrap_or("")) {
                errs.push(FieldError::not_supported(
                    format!("spec.validations[{i}].reason"),
                    r.clone(),
                    &allowed,
                ));
            }
        }
    }
    let mut names: Vec<String> = Vec::new();
    for (i, var) in list("variables").iter().enumerate() {
        let name = s(var, "name");
        let ident = !name.is_empty()
            && name
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ident {
            errs.push(FieldError::invalid(
                format!("spec.variables[{i}].name"),
                name,
                "name is not a valid CEL identifier",
            ));
        } else if names.iter().any(|n| n == name) {
            errs.push(FieldError::duplicate(
                format!("spec.variables[{i}].name"),
                name,
            ));
        }
        names.push(name.to_owned());
        if s(var, "expression").trim().is_empty() {
            errs.push(FieldError::required(
                format!("spec.variables[{i}].expression"),
                "expression is not specified",
            ));
        }
    }
    if let Some(fp) = spec.get("failurePolicy").filter(|v| !v.is_null())
        && !["Fail", "Ignore"].contains(&fp.as_str().unwrap_or(""))
    {
        errs.push(FieldError::not_supported(
            "spec.failurePolicy",
            fp.clone(),
            &["Fail", "Ignore"],
        ));
    }
    match spec.get("matchConstraints").filter(|m| m.is_object()) {
        Some(m) => validate_constraints(m, "spec.matchConstraints", true, &mut errs),
        None => errs.push(FieldError::required("spec.matchConstraints", "")),
    }
    if let Some(p) = spec.get("paramKind").filter(|p| !p.is_null()) {
        for k in ["apiVersion", "kind"] {
            if s(p, k).is_empty() {
                errs.push(FieldError::required(format!("spec.paramKind.{k}"), ""));
            }
        }
    }
    errs
}

/// kube's validation of a binding (the parts Wasmgate serves).
pub fn validate_binding(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    if s(spec, "policyName").is_empty() {
        errs.push(FieldError::required("spec.policyName", ""));
    }
    let actions = config::strings(spec.get("validationActions"));
    if actions.is_empty() {
        errs.push(FieldError::required(
            "spec.validationActions",
            "at least one validation action is required",
        ));
    }
    for (i, a) in actions.iter().enumerate() {
        match a.as_str() {
            "Deny" | "Warn" | "Audit" => {}
            _ => errs.push(FieldError::not_supported(
                format!("spec.validationActions[{i}]"),
                a.as_str(),
                &["Audit", "Deny", "Warn"],
            )),
        }
        if actions[..i].contains(a) {
            errs.push(FieldError::duplicate(
                format!("spec.validationActions[{i}]"),
                a.as_str(),
            ));
        }
    }
    if actions.iter().any(|a| a == "Deny") && actions.iter().any(|a| a == "Warn") {
        errs.push(FieldError::invalid(
            "spec.validationActions",
            json!(actions),
            "Deny and Warn may not be used together",
        ));
    }
    if let Some(p) = spec.get("paramRef").filter(|p| !p.is_null()) {
        if p.get("selector").is_some_and(|s| !s.is_null()) {
            errs.push(FieldError::forbidden(
                "spec.paramRef.selector",
                "paramRef.selector is not supported by Wasmgate yet: name one object",
            ));
        } else if s(p, "name").is_empty() {
            errs.push(FieldError::required(
                "spec.paramRef.name",
                "one of name or selector must be set",
            ));
        }
        match p.get("parameterNotFoundAction").and_then(Value::as_str) {
            Some("Allow" | "Deny") => {}
            None => errs.push(FieldError::required(
                "spec.paramRef.parameterNotFoundAction",
                "",
            )),
            Some(other) => errs.push(FieldError::not_supported(
                "spec.paramRef.parameterNotFoundAction",
                other,
                &["Allow", "Deny"],
            )),
        }
    }
    if let Some(m) = spec.get("matchResources").filter(|m| m.is_object()) {
        validate_constraints(m, "spec.matchResources", false, &mut errs);
    }
    errs
}

/// The `status` a policy should show: its expression warnings (kube's `typeChecking`).
pub fn status_of(policy: &Policy, generation: Option<i64>) -> Value {
    let warnings: Vec<Value> = policy
        .warnings
        .iter()
        .map(|(f, w)| json!({"fieldRef": f, "warning": w}))
        .collect();
    let mut status = json!({"typeChecking": {"expressionWarnings": warnings}});
    if let Some(g) = generation {
        status["observedGeneration"] = json!(g);
    }
    status
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;
    use crate::plugins::Op;

    fn policy(validations: Value, extra: Value) -> Policy {
        let mut spec = json!({
            "matchConstraints": {"resourceRules": [{"operations": ["CREATE"], "apiGroups": ["example.com"], "apiVersions": ["*"], "resources": ["widgets"]}]},
            "validations": validations,
        });
        for (k, v) in extra.as_object().unwrap() {
            spec[k] = v.clone();
        }
        compile(&json!({"metadata": {"name": "p"}, "spec": spec}))
    }

    fn bind(actions: &[&str]) -> Binding {
        binding(
            &json!({"metadata": {"name": "b"}, "spec": {"policyName": "p", "validationActions": actions}}),
        )
    }

    fn run(p: &Policy, b: &Binding, object: Value) -> (Result<(), Box<Status>>, Vec<String>) {
        let mut warnings = Vec::new();
        let input = Input {
            object: &object,
            old_object: &Value::Null,
            request: &json!({"operation": "CREATE"}),
            namespace_object: &Value::Null,
            params: &json!({"data": {"max": "5"}}),
            resource: "widgets.example.com",
            name: "w",
            group: "example.com",
            plural: "widgets",
        };
        (
            evaluate(p, b, &input, &mut warnings, &mut Vec::new()),
            warnings,
        )
    }

    #[test]
    fn violations_deny_with_kubes_wording_or_warn() {
        let p = policy(
            json!([{"expression": "object.spec.size < 8 || object.spec.replicas <= 5", "messageExpression": "'a widget of size ' + string(object.spec.size) + ' runs at most 5 replicas, not ' + string(object.spec.replicas)", "reason": "Forbidden"}]),
            json!({}),
        );
        assert!(p.warnings.is_empty(), "{:?}", p.warnings);
        let big = json!({"spec": {"size": 9, "replicas": 6}});
        let (r, _) = run(&p, &bind(&["Deny"]), big.clone());
        let st = r.unwrap_err();
        assert_eq!((st.code, st.reason.as_str()), (403, "Forbidden"));
        assert_eq!(
            st.message,
            "widgets.example.com \"w\" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: a widget of size 9 runs at most 5 replicas, not 6"
        );
        let (r, w) = run(&p, &bind(&["Warn"]), big);
        assert!(r.is_ok());
        assert_eq!(
            w,
            [
                "Validation failed for ValidatingAdmissionPolicy 'p' with binding 'b': a widget of size 9 runs at most 5 replicas, not 6"
            ]
        );
        assert!(
            run(
                &p,
                &bind(&["Deny"]),
                json!({"spec": {"size": 9, "replicas": 5}})
            )
            .0
            .is_ok()
        );
    }

    #[test]
    fn variables_params_conditions_and_failures() {
        let p = policy(
            json!([{"expression": "variables.replicas <= int(params.data.max)"}]),
            json!({
                "variables": [{"name": "replicas", "expression": "object.spec.replicas"}],
                "matchConditions": [{"name": "big", "expression": "object.spec.size >= 8"}],
            }),
        );
        let deny = bind(&["Deny"]);
        let st = run(&p, &deny, json!({"spec": {"size": 9, "replicas": 6}}))
            .0
            .unwrap_err();
        assert_eq!(st.code, 422);
        assert!(
            st.message.ends_with(
                "denied request: failed expression: variables.replicas <= int(params.data.max)"
            ),
            "{}",
            st.message
        );
        assert!(
            run(&p, &deny, json!({"spec": {"size": 2, "replicas": 6}}))
                .0
                .is_ok(),
            "the match condition is false"
        );
        // An evaluation error under Fail denies; under Ignore it does not.
        let p = policy(
            json!([{"expression": "object.spec.missing > 1"}]),
            json!({}),
        );
        let st = run(&p, &deny, json!({"spec": {}})).0.unwrap_err();
        assert!(
            st.message.contains(
                "expression 'object.spec.missing > 1' resulted in error: no such key: missing"
            ),
            "{}",
            st.message
        );
        let p = policy(
            json!([{"expression": "object.spec.missing > 1"}]),
            json!({"failurePolicy": "Ignore"}),
        );
        assert!(run(&p, &deny, json!({"spec": {}})).0.is_ok());
    }

    #[test]
    fn compile_errors_are_type_checking_warnings() {
        let p = policy(
            json!([{"expression": "authorizer.path('/x').check('get').allowed()"}, {"expression": "'not a bool'"}]),
            json!({}),
        );
        let fields: Vec<&str> = p.warnings.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(
            fields,
            [
                "spec.validations[0].expression",
                "spec.validations[1].expression"
            ]
        );
        assert!(
            p.warnings[0]
                .1
                .contains("undeclared reference to 'authorizer'")
        );
        assert!(p.warnings[1].1.contains("must evaluate to bool"));
        let st = run(&p, &bind(&["Deny"]), json!({})).0.unwrap_err();
        assert!(
            st.message.contains("undeclared reference"),
            "{}",
            st.message
        );
    }

    #[test]
    fn constraints_match_rules_names_and_exclusions() {
        let c = Constraints::parse(&json!({
            "resourceRules": [{"operations": ["*"], "apiGroups": ["example.com"], "apiVersions": ["*"], "resources": ["widgets"], "resourceNames": ["w", "x"]}],
            "excludeResourceRules": [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "resourceNames": ["x"]}],
        }));
        let a = Attributes {
            group: "example.com",
            version: "v1",
            resource: "widgets",
            subresource: None,
            op: Op::Create,
            namespaced: true,
            served_versions: &[],
            labels: None,
            old_labels: None,
        };
        assert!(c.matches(&a, "w"));
        assert!(!c.matches(&a, "x"), "excluded");
        assert!(!c.matches(&a, "y"), "not named");
    }
}
