//! The schema walk: compiling every `x-kubernetes-validations` rule of a structural schema
//! (kube's `ValidateCustomResourceDefinitionOpenAPISchema` CEL part and `cel.Compile`), and
//! evaluating them over an object (`cel.Validator.Validate`), with transition rules,
//! `messageExpression`, `reason`, `fieldPath`, ratcheting and the cost budget.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value as Json;
use wasmgate_apimachinery::structural::{AdditionalProperties, Node, NodeKind, Schema};
use wasmgate_apimachinery::validation::{FieldError, FieldErrorKind, go_quote};

use crate::compile::compile as compile_expr;
use crate::decl::{Decl, MAX_REQUEST_SIZE_BYTES, decl_for};
use crate::eval::{Meter, Program, RegexCache, run};
use crate::fieldpath::valid_field_path;
use crate::types::Ty;
use crate::value::{self, EvalErr, Val, from_json, json_semantic_eq};
use crate::{
    MAX_EVALUATED_MESSAGE_EXPRESSION_SIZE_BYTES, PER_CALL_LIMIT, RUNTIME_CEL_COST_BUDGET,
    STATIC_ESTIMATED_COST_LIMIT, STATIC_ESTIMATED_CRD_COST_LIMIT,
};

/// Work units (AST steps, copied items, compared values, …) one validation may spend beyond
/// what CEL's cost model counts; past it validation stops with the budget error.
const WORK_LIMIT: u64 = 40_000_000;

const OUT_OF_BUDGET: &str =
    "validation failed due to running out of cost budget, no further validation rules will be run";

/// All `x-kubernetes-validations` rules of one CRD version's schema, compiled and checked.
/// Cheap to clone and share between threads.
#[derive(Debug, Clone)]
pub struct Rules {
    root: Arc<Option<VNode>>,
}

/// The result of [`Rules::validate_ratcheting`].
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Outcome {
    /// Failed rules: the request is invalid (422).
    pub errors: Vec<FieldError>,
    /// Failed rules on values an update left unchanged (CRD validation ratcheting, beta and
    /// on by default in 1.32): kube-apiserver turns them into `Warning` headers.
    pub ratcheted: Vec<FieldError>,
}

/// The rules at one schema node, and the nodes below that have rules.
#[derive(Debug)]
struct VNode {
    rules: Vec<Rule>,
    decl: Option<Arc<Decl>>,
    /// The node's `type` (the bad value of runtime errors: `Invalid value: "object"`).
    type_name: String,
    /// By property name, sorted.
    props: Vec<(String, VNode)>,
    items: Option<Box<VNode>>,
    additional: Option<Box<VNode>>,
    /// `x-kubernetes-list-map-keys` of a `map` list (to correlate old items).
    list_map_keys: Option<Vec<String>>,
    /// Old values of properties and map entries correlate (`x-kubernetes-map-type`).
    map_correlatable: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reason {
    Invalid,
    Forbidden,
    Required,
    Duplicate,
}

#[derive(Debug)]
struct Rule {
    rule: String,
    message: String,
    message_expression: String,
    reason: Option<Reason>,
    field_path: Option<String>,
    optional_old_self: bool,
    program: Program,
    uses_old_self: bool,
    message_program: Option<Program>,
}

/// The fields of one `x-kubernetes-validations` entry.
struct Spec {
    rule: String,
    message: String,
    message_expression: String,
    reason: Option<String>,
    field_path: String,
    optional_old_self: Option<bool>,
}

impl Spec {
    fn parse(v: &Json) -> Spec {
        let text = |k: &str| v.get(k).and_then(Json::as_str).unwrap_or("").to_owned();
        Spec {
            rule: text("rule"),
            message: text("message"),
            message_expression: text("messageExpression"),
            reason: v.get("reason").and_then(Json::as_str).map(str::to_owned),
            field_path: text("fieldPath"),
            optional_old_self: v.get("optionalOldSelf").and_then(Json::as_bool),
        }
    }

    /// Go's `%#v` of the internal `apiextensions.ValidationRule` (pointer fields print as
    /// addresses in Go; a fixed one is used here).
    fn go_repr(&self) -> String {
        format!(
            "apiextensions.ValidationRule{{Rule:{}, Message:{}, MessageExpression:{}, Reason:{}, FieldPath:{}, OptionalOldSelf:{}}}",
            go_quote(&self.rule),
            go_quote(&self.message),
            go_quote(&self.message_expression),
            if self.reason.is_some() {
                "(*apiextensions.FieldValueErrorReason)(0xc000a0c0f0)"
            } else {
                "(*apiextensions.FieldValueErrorReason)(nil)"
            },
            go_quote(&self.field_path),
            if self.optional_old_self.is_some() {
                "(*bool)(0xc000a0c0f8)"
            } else {
                "(*bool)(nil)"
            },
        )
    }
}

/// `Invalid value: <Go value>: <detail>` where the value is printed by Go, not as JSON.
fn invalid_go(field: String, repr: &str, detail: &str) -> FieldError {
    FieldError {
        kind: FieldErrorKind::Invalid,
        field,
        bad_value: None,
        detail: format!("{repr}: {detail}"),
    }
}

/// `getCostErrorMessage`.
fn cost_error_message(name: &str, cost: u64, limit: u64) -> String {
    #[allow(clippy::cast_precision_loss, reason = "a ratio for display, as in Go")]
    let factor = cost as f64 / limit as f64;
    let factor = if factor > 100.0 {
        "more than 100x".to_owned()
    } else if factor < 1.5 {
        format!("{factor:.6}x")
    } else {
        format!("{factor:.1}x")
    };
    format!(
        "{name} exceeds budget by factor of {factor} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )
}

/// `maxCardinality`: how many values of this minimal size fit in a request.
fn max_cardinality(min_size: i64) -> u64 {
    u64::try_from(MAX_REQUEST_SIZE_BYTES / (min_size.max(0) + 1)).unwrap_or(0)
}

#[derive(Default)]
struct TotalCost {
    total: u64,
    most_expensive: Vec<(String, u64)>,
}

impl TotalCost {
    fn observe(&mut self, path: String, cost: u64) {
        self.total = self.total.saturating_add(cost);
        if cost < STATIC_ESTIMATED_CRD_COST_LIMIT / 100 {
            return;
        }
        self.most_expensive.push((path, cost));
        self.most_expensive.sort_by_key(|e| std::cmp::Reverse(e.1));
        self.most_expensive.truncate(4);
    }
}

struct Compiler {
    schema_errs: Vec<FieldError>,
    cel_errs: Vec<FieldError>,
    total: TotalCost,
}

/// Compiles every rule in the schema. `path` prefixes error paths, e.g.
/// `spec.versions[0].schema.openAPIV3Schema`; errors are kube's, e.g.
/// `spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule:
/// Invalid value: apiextensions.ValidationRule{Rule:"self == true", …}: compilation failed:
/// ERROR: <input>:1:6: found no matching overload for '_==_' applied to '(int, bool)'` (with
/// cel-go's source line and caret), `…rule: Forbidden: estimated rule cost exceeds budget by
/// factor of …`, and for the whole schema `<path>: Forbidden: x-kubernetes-validations
/// estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of …`.
///
/// Parsing runs on a helper thread with a large stack, so that no expression, however deeply
/// nested, can overflow the caller's stack; a panic there is reported as an internal error.
pub fn compile(schema: &Schema, path: &str) -> Result<Rules, Vec<FieldError>> {
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("cel-compile".to_owned())
            .stack_size(COMPILE_STACK_SIZE)
            .spawn_scoped(scope, || compile_here(schema, path))
            .map_err(|e| {
                vec![FieldError::internal(
                    format!("{path}.x-kubernetes-validations"),
                    e,
                )]
            })
            .and_then(|handle| {
                handle.join().unwrap_or_else(|_| {
                    Err(vec![FieldError::internal(
                        format!("{path}.x-kubernetes-validations"),
                        "internal error: CEL compilation failed",
                    )])
                })
            })
    })
}

/// Stack of the compile thread (reserved, not committed, until used).
const COMPILE_STACK_SIZE: usize = 256 * 1024 * 1024;

fn compile_here(schema: &Schema, path: &str) -> Result<Rules, Vec<FieldError>> {
    let mut c = Compiler {
        schema_errs: Vec::new(),
        cel_errs: Vec::new(),
        total: TotalCost::default(),
    };
    let (root, _) = c.walk(schema.root(), path, true, Some(1), None);
    if c.total.total > STATIC_ESTIMATED_CRD_COST_LIMIT {
        for (p, _) in &c.total.most_expensive {
            c.cel_errs.push(FieldError::forbidden(
                p.clone(),
                "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
            ));
        }
        c.cel_errs.push(FieldError::forbidden(
            path,
            cost_error_message(
                "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
                c.total.total,
                STATIC_ESTIMATED_CRD_COST_LIMIT,
            ),
        ));
    }
    let mut errs = c.schema_errs;
    errs.extend(c.cel_errs);
    if errs.is_empty() {
        Ok(Rules {
            root: Arc::new(root),
        })
    } else {
        Err(errs)
    }
}

/// `extractMaxElements` applied to the parent's cardinality (`None` is unbounded).
fn child_cardinality(node: Node<'_>, card: Option<u64>) -> Option<u64> {
    let card = card?;
    let factor = match node.kind() {
        NodeKind::Map => node
            .max_properties()
            .map(|m| u64::try_from(m.max(0)).unwrap_or(0)),
        NodeKind::Object if node.additional_properties().is_some() => node
            .max_properties()
            .map(|m| u64::try_from(m.max(0)).unwrap_or(0)),
        NodeKind::List => node
            .max_items()
            .map(|m| u64::try_from(m.max(0)).unwrap_or(0)),
        _ => Some(1),
    }?;
    Some(card.saturating_mul(factor))
}

fn map_correlatable(node: Node<'_>) -> bool {
    matches!(node.map_type(), None | Some("granular" | "atomic"))
}

impl Compiler {
    /// Compiles the subtree at `node`; returns its rules and whether a schema error (an
    /// invalid `fieldPath`) was found in it, which, as in kube, suppresses CEL compilation of
    /// the node and its ancestors.
    fn walk(
        &mut self,
        node: Node<'_>,
        spath: &str,
        is_root: bool,
        card: Option<u64>,
        forbid_old_self: Option<&str>,
    ) -> (Option<VNode>, bool) {
        let mut schema_err = false;
        let mut additional = None;
        if let Some(AdditionalProperties::Schema(values)) = node.additional_properties() {
            let (v, e) = self.walk(
                values,
                &format!("{spath}.additionalProperties"),
                false,
                child_cardinality(node, card),
                forbid_old_self,
            );
            additional = v.map(Box::new);
            schema_err |= e;
        }
        let mut props = Vec::new();
        let prop_forbid = if map_correlatable(node) {
            forbid_old_self
        } else {
            forbid_old_self.or(Some(spath))
        };
        for (name, child) in node.properties() {
            let (v, e) = self.walk(
                child,
                &format!("{spath}.properties[{name}]"),
                false,
                child_cardinality(node, card),
                prop_forbid,
            );
            if let Some(v) = v {
                props.push((name.to_owned(), v));
            }
            schema_err |= e;
        }
        let mut items = None;
        if let Some(item_node) = node.items() {
            let item_forbid = if node.list_type() == Some("map") {
                forbid_old_self
            } else {
                forbid_old_self.or(Some(spath))
            };
            let (v, e) = self.walk(
                item_node,
                &format!("{spath}.items"),
                false,
                child_cardinality(node, card),
                item_forbid,
            );
            items = v.map(Box::new);
            schema_err |= e;
        }

        let specs: Vec<Spec> = node.validations().iter().map(Spec::parse).collect();
        // Each rule's normalized `fieldPath`, `None` when empty or invalid.
        let mut field_paths = Vec::with_capacity(specs.len());
        for (i, spec) in specs.iter().enumerate() {
            if spec.field_path.is_empty() {
                field_paths.push(None);
                continue;
            }
            let valid = valid_field_path(&spec.field_path, node);
            // Blank paths and paths with line breaks have their own errors (structural schema
            // validation).
            let reported =
                spec.field_path.trim().is_empty() || spec.field_path.contains(['\n', '\r']);
            if !reported && valid.is_err() {
                self.schema_errs.push(FieldError::invalid(
                    format!("{spath}.x-kubernetes-validations[{i}].fieldPath"),
                    spec.field_path.clone(),
                    "fieldPath must be a valid path",
                ));
                schema_err = true;
            }
            field_paths.push(valid.ok());
        }
        let mut rules = Vec::new();
        let mut decl = None;
        if !specs.is_empty() && !schema_err {
            decl = decl_for(node, is_root || node.embedded_resource(), "selfType0");
            match &decl {
                None => self.cel_errs.push(FieldError::internal(
                    format!("{spath}.x-kubernetes-validations"),
                    "internal error: failed to construct type information for x-kubernetes-validations rules: unable to convert structural schema to CEL declarations",
                )),
                Some(d) => {
                    for (i, (spec, field_path)) in specs.iter().zip(field_paths).enumerate() {
                        let rpath = format!("{spath}.x-kubernetes-validations[{i}]");
                        rules.extend(self.rule(d, spec, field_path, &rpath, card, forbid_old_self));
                    }
                }
            }
        }
        let has_any =
            !rules.is_empty() || !props.is_empty() || items.is_some() || additional.is_some();
        if !has_any {
            return (None, schema_err);
        }
        let list_map_keys = (node.list_type() == Some("map")).then(|| node.map_keys().to_vec());
        (
            Some(VNode {
                rules,
                decl,
                type_name: node.type_name().to_owned(),
                props,
                items,
                additional,
                list_map_keys,
                map_correlatable: map_correlatable(node),
            }),
            schema_err,
        )
    }

    /// Compiles one rule; `field_path` is its normalized `fieldPath`.
    fn rule(
        &mut self,
        decl: &Arc<Decl>,
        spec: &Spec,
        field_path: Option<String>,
        rpath: &str,
        card: Option<u64>,
        forbid_old_self: Option<&str>,
    ) -> Option<Rule> {
        if spec.rule.trim().is_empty() {
            return None;
        }
        let optional = spec.optional_old_self == Some(true);
        let compiled = compile_expr(&spec.rule, decl, optional)
            .map_err(|e| e.to_string())
            .and_then(|c| {
                if matches!(c.output, Ty::Bool) {
                    Ok(c)
                } else {
                    Err("cel expression must evaluate to a bool".to_owned())
                }
            });
        let max_cost = compiled.as_ref().map_or(0, |c| c.cost);
        let cardinality = card.unwrap_or_else(|| max_cardinality(decl.min_size));
        let expression_cost = if max_cost == 0 {
            0
        } else {
            max_cost.saturating_mul(cardinality)
        };
        let rule_field = format!("{rpath}.rule");
        if expression_cost > STATIC_ESTIMATED_COST_LIMIT {
            self.cel_errs.push(FieldError::forbidden(
                rule_field.clone(),
                cost_error_message(
                    "estimated rule cost",
                    expression_cost,
                    STATIC_ESTIMATED_COST_LIMIT,
                ),
            ));
        }
        self.total.observe(rule_field.clone(), expression_cost);
        let uses_old_self = compiled.as_ref().is_ok_and(|c| c.uses_old_self);
        let mut message_program = None;
        let mut ok = true;
        match &compiled {
            Err(detail) => {
                self.cel_errs
                    .push(invalid_go(rule_field.clone(), &spec.go_repr(), detail));
                ok = false;
            }
            Ok(_) if !spec.message_expression.is_empty() => {
                let field = format!("{rpath}.messageExpression");
                match compile_expr(&spec.message_expression, decl, optional) {
                    Err(e) => {
                        self.cel_errs.push(invalid_go(
                            field,
                            &spec.go_repr(),
                            &format!(
                                "messageExpression {}",
                                e.to_string()
                                    .replace("program instantiation", "instantiation")
                            ),
                        ));
                        ok = false;
                    }
                    Ok(c) if !matches!(c.output, Ty::String) => {
                        self.cel_errs.push(invalid_go(
                            field,
                            &spec.go_repr(),
                            "messageExpression must evaluate to a string",
                        ));
                        ok = false;
                    }
                    Ok(c) => {
                        if c.cost > STATIC_ESTIMATED_COST_LIMIT {
                            self.cel_errs.push(FieldError::forbidden(
                                field.clone(),
                                cost_error_message(
                                    "estimated messageExpression cost",
                                    c.cost,
                                    STATIC_ESTIMATED_COST_LIMIT,
                                ),
                            ));
                        }
                        self.total.observe(field, c.cost);
                        message_program = Some(c.program);
                    }
                }
            }
            Ok(_) => {}
        }
        if uses_old_self {
            if let Some(within) = forbid_old_self {
                self.cel_errs.push(FieldError::invalid(
                    rule_field,
                    spec.rule.clone(),
                    format!("oldSelf cannot be used on the uncorrelatable portion of the schema within {within}"),
                ));
            }
        } else if let Some(v) = spec.optional_old_self {
            self.cel_errs.push(FieldError::invalid(
                format!("{rpath}.optionalOldSelf"),
                v,
                "may not be set if oldSelf is not used in rule",
            ));
        }
        let program = compiled.ok()?.program;
        if !ok {
            return None;
        }
        let reason = match spec.reason.as_deref() {
            Some("FieldValueForbidden") => Some(Reason::Forbidden),
            Some("FieldValueRequired") => Some(Reason::Required),
            Some("FieldValueDuplicate") => Some(Reason::Duplicate),
            Some(_) => Some(Reason::Invalid),
            None => None,
        };
        Some(Rule {
            rule: spec.rule.clone(),
            message: spec.message.clone(),
            message_expression: spec.message_expression.clone(),
            reason,
            field_path,
            optional_old_self: optional,
            program,
            uses_old_self,
            message_program,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------------------------

/// A correlated pair of new and old values (kube's `CorrelatedObject`), for ratcheting.
struct CorrNode<'r> {
    new: &'r Json,
    old: &'r Json,
    equal: Cell<Option<bool>>,
}

impl CorrNode<'_> {
    fn equal(&self) -> bool {
        if let Some(e) = self.equal.get() {
            return e;
        }
        let e = json_semantic_eq(self.new, self.old);
        self.equal.set(Some(e));
        e
    }
}

/// `ratchetingOptions`: the current correlated node and the nearest correlated ancestor.
#[derive(Clone, Copy, Default)]
struct Ratchet<'r> {
    cur: Option<&'r CorrNode<'r>>,
    nearest: Option<&'r CorrNode<'r>>,
}

impl Ratchet<'_> {
    fn should_ratchet(&self) -> bool {
        match self.cur {
            Some(c) => c.equal(),
            None => self.nearest.is_some_and(CorrNode::equal),
        }
    }
}

struct Walker {
    budget: u64,
    work: u64,
    stopped: bool,
    cache: RegexCache,
    out: Outcome,
}

fn child_path(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

fn shown(path: &str) -> String {
    if path.is_empty() {
        "<nil>".to_owned()
    } else {
        path.to_owned()
    }
}

/// The key of an item of a `map` list; `None` when the item is not an object.
fn map_list_key(item: &Json, keys: &[String]) -> Option<String> {
    item.as_object().map(|obj| value::map_list_key(obj, keys))
}

impl Rules {
    /// Evaluates the rules against a pruned, defaulted object; `old` is the stored object on
    /// updates. Returns one error per failed rule: `Invalid value: "<type>": <message>` by
    /// default, or as the rule's `reason` says (`Forbidden`, `Required`, `Duplicate`), at the
    /// node's path (`<nil>` for the root) joined with the rule's `fieldPath`. The message is
    /// the `messageExpression` result, else `message`, else `failed rule: <rule>`.
    /// Transition rules (using `oldSelf`) run only where an old value correlates (same
    /// property or map key, or same key in a `map` list), unless `optionalOldSelf`.
    /// Evaluation errors, the per-call limit and the object's cost budget are reported as
    /// kube reports them; after the latter two no further rule runs.
    ///
    /// Errors that ratcheting would turn into warnings are dropped here; see
    /// [`Rules::validate_ratcheting`].
    pub fn validate(&self, obj: &Json, old: Option<&Json>) -> Vec<FieldError> {
        self.validate_ratcheting(obj, old).errors
    }

    /// [`Rules::validate`], keeping apart the failures of rules (not using `oldSelf`) on
    /// values an update did not change: kube 1.32 (CRDValidationRatcheting) returns those as
    /// warnings.
    pub fn validate_ratcheting(&self, obj: &Json, old: Option<&Json>) -> Outcome {
        let Some(root) = self.root.as_ref() else {
            return Outcome::default();
        };
        let mut w = Walker {
            budget: RUNTIME_CEL_COST_BUDGET,
            work: 0,
            stopped: false,
            cache: RegexCache::new(),
            out: Outcome::default(),
        };
        let root_corr = old.map(|o| CorrNode {
            new: obj,
            old: o,
            equal: Cell::new(None),
        });
        let ratchet = Ratchet {
            cur: root_corr.as_ref(),
            nearest: None,
        };
        w.node(root, "", obj, old, ratchet);
        w.out
    }

    /// No rules at all.
    pub fn is_empty(&self) -> bool {
        self.root.is_none()
    }
}

impl Walker {
    fn node<'a>(
        &mut self,
        v: &'a VNode,
        path: &str,
        obj: &'a Json,
        old: Option<&'a Json>,
        ratchet: Ratchet<'_>,
    ) {
        if self.stopped || obj.is_null() {
            return;
        }
        let old = old.filter(|o| !o.is_null());
        self.expressions(v, path, obj, old, ratchet);
        if self.stopped {
            return;
        }
        match obj {
            Json::Array(items) => {
                let Some(iv) = &v.items else {
                    return;
                };
                let old_index: Option<HashMap<String, &Json>> = match (&v.list_map_keys, old) {
                    (Some(keys), Some(Json::Array(old_items))) => Some(
                        old_items
                            .iter()
                            .filter_map(|o| map_list_key(o, keys).map(|k| (k, o)))
                            .collect(),
                    ),
                    _ => None,
                };
                for (i, item) in items.iter().enumerate() {
                    let old_item = match (&old_index, &v.list_map_keys) {
                        (Some(index), Some(keys)) => {
                            map_list_key(item, keys).and_then(|k| index.get(&k).copied())
                        }
                        _ => None,
                    };
                    let corr = match (ratchet.cur, old_item) {
                        (Some(_), Some(o)) => Some(CorrNode {
                            new: item,
                            old: o,
                            equal: Cell::new(None),
                        }),
                        _ => None,
                    };
                    let child = match ratchet.cur {
                        None => ratchet,
                        Some(cur) => Ratchet {
                            cur: corr.as_ref(),
                            nearest: Some(cur),
                        },
                    };
                    self.node(iv, &format!("{path}[{i}]"), item, old_item, child);
                    if self.stopped {
                        return;
                    }
                }
            }
            Json::Object(map) => {
                for (k, val) in map {
                    let (child_node, child_path_s) = if let Some(av) = &v.additional {
                        (Some(&**av), format!("{path}[{k}]"))
                    } else {
                        match v.props.binary_search_by(|(n, _)| n.as_str().cmp(k)) {
                            Ok(i) => (Some(&v.props[i].1), child_path(path, k)),
                            Err(_) => (None, String::new()),
                        }
                    };
                    let Some(cn) = child_node else {
                        continue;
                    };
                    let old_v = if v.map_correlatable {
                        old.and_then(|o| o.get(k))
                    } else {
                        None
                    };
                    let corr_old = ratchet.cur.and_then(|c| c.old.get(k));
                    let corr = corr_old.map(|o| CorrNode {
                        new: val,
                        old: o,
                        equal: Cell::new(None),
                    });
                    let child = match ratchet.cur {
                        None => ratchet,
                        Some(_)
                            if ratchet.nearest.is_none() && (k == "apiVersion" || k == "kind") =>
                        {
                            Ratchet::default()
                        }
                        Some(cur) => Ratchet {
                            cur: corr.as_ref(),
                            nearest: Some(cur),
                        },
                    };
                    self.node(cn, &child_path_s, val, old_v, child);
                    if self.stopped {
                        return;
                    }
                }
            }
            _ => {}
        }
    }

    fn invalid(type_name: &str, path: &str, msg: impl Into<String>) -> FieldError {
        FieldError::invalid(shown(path), Json::String(type_name.to_owned()), msg)
    }

    fn stop(&mut self, err: FieldError) {
        self.out.errors.push(err);
        self.stopped = true;
    }

    fn meter(&self) -> Meter {
        Meter {
            cost: 0,
            limit: PER_CALL_LIMIT.min(self.budget),
            work: self.work,
            work_limit: WORK_LIMIT,
        }
    }

    fn expressions<'a>(
        &mut self,
        v: &'a VNode,
        path: &str,
        obj: &'a Json,
        old: Option<&'a Json>,
        ratchet: Ratchet<'_>,
    ) {
        let (Some(decl), false) = (&v.decl, v.rules.is_empty()) else {
            return;
        };
        if self.budget == 0 {
            self.stop(Self::invalid(&v.type_name, path, OUT_OF_BUDGET));
            return;
        }
        let self_val = from_json(obj, decl);
        let old_val = old.map(|o| from_json(o, decl));
        for rule in &v.rules {
            if rule.uses_old_self && old_val.is_none() && !rule.optional_old_self {
                continue;
            }
            let rule_text = rule_error_string(rule);
            let vars = match bind(rule, &self_val, old_val.as_ref()) {
                Ok(vars) => vars,
                Err(e) => {
                    let msg = match e {
                        EvalErr::Msg(m) => m,
                        _ => OUT_OF_BUDGET.to_owned(),
                    };
                    self.out.errors.push(Self::invalid(
                        &v.type_name,
                        path,
                        format!("{msg} evaluating rule: {rule_text}"),
                    ));
                    continue;
                }
            };
            let mut meter = self.meter();
            let result = run(&rule.program, vars.clone(), &mut meter, &mut self.cache);
            self.work = meter.work;
            match result {
                Err(EvalErr::CostLimit) if meter.cost > PER_CALL_LIMIT => {
                    self.stop(Self::invalid(
                        &v.type_name,
                        path,
                        format!("'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: {rule_text}"),
                    ));
                    return;
                }
                Err(EvalErr::CostLimit | EvalErr::Fuse) => {
                    self.stop(Self::invalid(&v.type_name, path, OUT_OF_BUDGET));
                    return;
                }
                _ => self.budget = self.budget.saturating_sub(meter.cost),
            }
            match result {
                Ok(Val::Bool(true)) => {}
                Err(EvalErr::Msg(m)) => {
                    let msg = if m.starts_with("no such overload") {
                        format!(
                            "'{m}': call arguments did not match a supported operator, function or macro signature for rule: {rule_text}"
                        )
                    } else {
                        format!("{m} evaluating rule: {rule_text}")
                    };
                    self.out.errors.push(Self::invalid(&v.type_name, path, msg));
                }
                _ => {
                    if !self.failed(v, rule, path, vars, ratchet) {
                        return;
                    }
                }
            }
        }
    }

    /// Reports a failed rule; `false` when validation must stop.
    fn failed<'a>(
        &mut self,
        v: &'a VNode,
        rule: &'a Rule,
        path: &str,
        vars: Vec<(&'a str, Val<'a>)>,
        ratchet: Ratchet<'_>,
    ) -> bool {
        let fpath = match &rule.field_path {
            Some(fp) if !fp.is_empty() => child_path(path, fp),
            _ => path.to_owned(),
        };
        let ratcheted = !rule.uses_old_self && ratchet.should_ratchet();
        let mut message = default_message(rule);
        if let Some(mp) = &rule.message_program {
            let mut meter = self.meter();
            let result = run(mp, vars, &mut meter, &mut self.cache);
            self.work = meter.work;
            let fatal = match result {
                Err(EvalErr::CostLimit) if meter.cost > PER_CALL_LIMIT => Some(format!(
                    "no further validation rules will be run due to call cost exceeds limit for messageExpression: {}",
                    go_quote(&rule.message_expression)
                )),
                Err(EvalErr::CostLimit | EvalErr::Fuse) => Some(
                    "messageExpression evaluation failed due to running out of cost budget, no further validation rules will be run".to_owned(),
                ),
                _ => None,
            };
            if let Some(msg) = fatal {
                let err = Self::invalid(&v.type_name, &fpath, msg);
                if ratcheted {
                    self.out.ratcheted.push(err);
                } else {
                    self.out.errors.push(err);
                }
                self.stopped = true;
                return false;
            }
            self.budget = self.budget.saturating_sub(meter.cost);
            if let Ok(Val::Str(s)) = result {
                let t = s.as_str().trim();
                if !t.is_empty()
                    && t.len() <= MAX_EVALUATED_MESSAGE_EXPRESSION_SIZE_BYTES
                    && !t.contains('\n')
                {
                    message = t.to_owned();
                }
            }
        }
        let shown_path = shown(&fpath);
        let err = match rule.reason {
            Some(Reason::Forbidden) => FieldError::forbidden(shown_path, message),
            Some(Reason::Required) => FieldError::required(shown_path, message),
            Some(Reason::Duplicate) => {
                FieldError::duplicate(shown_path, Json::String(v.type_name.clone()))
            }
            Some(Reason::Invalid) | None => {
                FieldError::invalid(shown_path, Json::String(v.type_name.clone()), message)
            }
        };
        if ratcheted {
            self.out.ratcheted.push(err);
        } else {
            self.out.errors.push(err);
        }
        true
    }
}

fn bind<'a>(
    rule: &Rule,
    self_val: &Result<Val<'a>, EvalErr>,
    old_val: Option<&Result<Val<'a>, EvalErr>>,
) -> Result<Vec<(&'a str, Val<'a>)>, EvalErr> {
    let mut vars = vec![("self", self_val.clone()?)];
    if rule.uses_old_self {
        let old = match old_val {
            Some(v) => Some(v.clone()?),
            None => None,
        };
        let bound = if rule.optional_old_self {
            Val::Opt(old.map(std::rc::Rc::new))
        } else {
            old.unwrap_or(Val::Null)
        };
        vars.push(("oldSelf", bound));
    }
    Ok(vars)
}

/// `ruleErrorString`: how evaluation errors name the rule.
fn rule_error_string(rule: &Rule) -> &str {
    if rule.message.is_empty() {
        rule.rule.trim()
    } else {
        rule.message.trim()
    }
}

/// `ruleMessageOrDefault`.
fn default_message(rule: &Rule) -> String {
    if rule.message.is_empty() {
        format!("failed rule: {}", rule_error_string(rule))
    } else {
        rule.message.trim().to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::{Rules, cost_error_message, max_cardinality};

    #[test]
    fn rules_are_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Rules>();
    }

    use crate::cost::multiply_by_cost_factor;

    #[test]
    fn cost_message_factors() {
        assert!(cost_error_message("x", 2_000_000_000, 10_000_000).contains("more than 100x"));
        assert!(cost_error_message("x", 25_000_000, 10_000_000).contains("factor of 2.5x"));
        assert!(cost_error_message("x", 12_000_000, 10_000_000).contains("factor of 1.200000x"));
        assert_eq!(max_cardinality(2), 1_048_576);
        assert_eq!(multiply_by_cost_factor(3, 0.1), 1);
    }
}
