//! Static cost estimation: cel-go's `checker/cost.go` with the Kubernetes estimator
//! (`k8s.io/apiserver/pkg/cel/library/cost.go`) and the schema size estimator of
//! `apiextensions-apiserver/pkg/apiserver/schema/cel/compilation.go`.
//!
//! Sizes come from the schema: `maxLength` (times 4 for plain strings), `maxItems`,
//! `maxProperties`, enum lengths, or, when unbounded, how many of the smallest values fit in
//! a 3 MiB request.

use std::collections::HashMap;
use std::sync::Arc;

use cel::common::ast::{ComprehensionExpr, EntryExpr, Expr, IdedExpr, LiteralValue};

use crate::checker::Checked;
use crate::decl::Decl;
use crate::types::Ty;

/// `common.StringTraversalCostFactor`.
pub(crate) const STRING_TRAVERSAL_COST_FACTOR: f64 = 0.1;
/// `common.RegexStringLengthCostFactor`.
pub(crate) const REGEX_STRING_LENGTH_COST_FACTOR: f64 = 0.25;
/// `common.ListCreateBaseCost`.
pub(crate) const LIST_CREATE_BASE_COST: u64 = 10;
/// `common.MapCreateBaseCost`.
pub(crate) const MAP_CREATE_BASE_COST: u64 = 30;

/// A `[min, max]` range of costs or sizes, saturating.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Range {
    pub(crate) min: u64,
    pub(crate) max: u64,
}

impl Range {
    pub(crate) const fn new(min: u64, max: u64) -> Self {
        Range { min, max }
    }
    const ZERO: Range = Range::new(0, 0);
    const ONE: Range = Range::new(1, 1);
    const UNBOUNDED: Range = Range::new(0, u64::MAX);

    fn add(self, o: Range) -> Range {
        Range::new(
            self.min.saturating_add(o.min),
            self.max.saturating_add(o.max),
        )
    }
    fn mul(self, o: Range) -> Range {
        Range::new(
            self.min.saturating_mul(o.min),
            self.max.saturating_mul(o.max),
        )
    }
    fn factor(self, f: f64) -> Range {
        Range::new(
            multiply_by_cost_factor(self.min, f),
            multiply_by_cost_factor(self.max, f),
        )
    }
    fn union(self, o: Range) -> Range {
        Range::new(self.min.min(o.min), self.max.max(o.max))
    }
}

/// `multiplyByCostFactor`: `ceil(x * f)`, saturating.
pub(crate) fn multiply_by_cost_factor(x: u64, f: f64) -> u64 {
    #[allow(
        clippy::cast_precision_loss,
        reason = "cost arithmetic is approximate in cel-go too"
    )]
    let xf = x as f64;
    if xf > 0.0 && f > 0.0 && xf > u64::MAX as f64 / f {
        return u64::MAX;
    }
    let c = (xf * f).ceil();
    if c >= 18_446_744_073_709_551_616.0 {
        return u64::MAX;
    }
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "checked range above"
    )]
    let r = c as u64;
    r
}

/// A node as the estimators see it.
struct Node<'e> {
    expr: Option<&'e IdedExpr>,
    ty: Ty,
    path: Option<Vec<String>>,
    derived: Option<Range>,
}

struct Coster<'a> {
    checked: &'a Checked,
    root: &'a Arc<Decl>,
    paths: HashMap<u64, Vec<String>>,
    iter_ranges: HashMap<String, Vec<u64>>,
    computed: HashMap<u64, Range>,
}

/// The worst-case cost of a checked expression whose `self` is declared by `root`.
pub(crate) fn estimate(expr: &IdedExpr, checked: &Checked, root: &Arc<Decl>) -> u64 {
    let mut c = Coster {
        checked,
        root,
        paths: HashMap::new(),
        iter_ranges: HashMap::new(),
        computed: HashMap::new(),
    };
    c.cost(expr).max
}

impl<'a> Coster<'a> {
    fn ty(&self, e: &IdedExpr) -> Ty {
        self.checked.ty(e.id)
    }

    fn node<'e>(&self, e: &'e IdedExpr) -> Node<'e> {
        let path = self
            .paths
            .get(&e.id)
            .filter(|p| p.first().is_some_and(|f| f != "@result"))
            .cloned();
        Node {
            expr: Some(e),
            ty: self.ty(e),
            path,
            derived: self.computed.get(&e.id).copied(),
        }
    }

    fn cost(&mut self, e: &IdedExpr) -> Range {
        match &e.expr {
            Expr::Literal(_) | Expr::Unspecified => Range::ZERO,
            Expr::Ident(name) => {
                let path = match self.iter_ranges.get(name).and_then(|s| s.last()) {
                    Some(range_id) => {
                        let base = self.paths.get(range_id).cloned();
                        let suffix = match self.checked.types.get(range_id) {
                            Some(Ty::List(_)) => Some("@items"),
                            Some(Ty::Map(..)) => Some("@keys"),
                            _ => None,
                        };
                        match (base, suffix) {
                            (Some(mut b), Some(s)) => {
                                b.push(s.to_owned());
                                Some(b)
                            }
                            (None, Some(s)) => Some(vec![s.to_owned()]),
                            _ => None,
                        }
                    }
                    None => Some(vec![name.clone()]),
                };
                if let Some(p) = path {
                    self.paths.insert(e.id, p);
                }
                Range::ONE
            }
            Expr::Select(sel) => {
                // A qualified type name (`google.protobuf.Duration`) is one identifier.
                if let Some(q) = self.checked.type_names.get(&e.id) {
                    self.paths.insert(e.id, vec![(*q).to_owned()]);
                    return Range::ONE;
                }
                let mut sum = self.cost(&sel.operand);
                if sel.test {
                    // PresenceTestHasCost(false).
                    return sum;
                }
                if matches!(
                    self.ty(&sel.operand),
                    Ty::Map(..) | Ty::Object(_) | Ty::Param(_)
                ) {
                    sum = sum.add(Range::ONE);
                }
                if let Some(p) = self.paths.get(&sel.operand.id).cloned() {
                    let mut p = p;
                    p.push(sel.field.clone());
                    self.paths.insert(e.id, p);
                }
                sum
            }
            Expr::Call(call) => {
                let arg_costs: Vec<Range> = call.args.iter().map(|a| self.cost(a)).collect();
                let Some(ids) = self.checked.overloads.get(&e.id) else {
                    return Range::ZERO;
                };
                let mut sum = Range::ZERO;
                if let Some(t) = &call.target {
                    sum = sum.add(self.cost(t));
                }
                let mut fn_cost = Range::new(u64::MAX, 0);
                let mut result_size: Option<Range> = None;
                for id in ids.clone() {
                    let (c, size) = self.function_cost(
                        &call.func_name,
                        id,
                        call.target.as_deref(),
                        &call.args,
                        &arg_costs,
                    );
                    fn_cost = fn_cost.union(c);
                    if let Some(s) = size {
                        result_size = Some(result_size.map_or(s, |r| r.union(s)));
                    }
                    let suffix = match id {
                        "index_list" => Some("@items"),
                        "index_map" => Some("@values"),
                        _ => None,
                    };
                    if let (Some(s), Some(first)) = (suffix, call.args.first())
                        && let Some(mut p) = self.paths.get(&first.id).cloned()
                    {
                        p.push(s.to_owned());
                        self.paths.insert(e.id, p);
                    }
                }
                if let Some(s) = result_size {
                    self.computed.insert(e.id, s);
                }
                if fn_cost.min > fn_cost.max {
                    fn_cost = Range::ZERO;
                }
                sum.add(fn_cost)
            }
            Expr::List(list) => list
                .elements
                .iter()
                .fold(Range::ZERO, |acc, el| acc.add(self.cost(el)))
                .add(Range::new(LIST_CREATE_BASE_COST, LIST_CREATE_BASE_COST)),
            Expr::Map(map) => {
                let mut sum = Range::ZERO;
                for entry in &map.entries {
                    if let EntryExpr::MapEntry(me) = &entry.expr {
                        sum = sum.add(self.cost(&me.key)).add(self.cost(&me.value));
                    }
                }
                sum.add(Range::new(MAP_CREATE_BASE_COST, MAP_CREATE_BASE_COST))
            }
            Expr::Struct(_) => Range::new(40, 40),
            Expr::Comprehension(comp) => self.comprehension(e, comp),
        }
    }

    fn comprehension(&mut self, e: &IdedExpr, comp: &ComprehensionExpr) -> Range {
        let mut sum = self.cost(&comp.iter_range).add(self.cost(&comp.accu_init));
        self.iter_ranges
            .entry(comp.iter_var.clone())
            .or_default()
            .push(comp.iter_range.id);
        let loop_cost = self.cost(&comp.loop_cond);
        let step_cost = self.cost(&comp.loop_step);
        if let Some(stack) = self.iter_ranges.get_mut(&comp.iter_var) {
            stack.pop();
        }
        sum = sum.add(self.cost(&comp.result));
        let node = self.node(&comp.iter_range);
        let range_cnt = self.size(&node, true);
        self.computed.insert(e.id, range_cnt);
        sum.add(range_cnt.mul(step_cost.add(loop_cost)))
    }

    /// `computedSize` of literals.
    fn computed_size(node: &Node<'_>) -> Option<Range> {
        if let Some(d) = node.derived {
            return Some(d);
        }
        let v = match &node.expr?.expr {
            Expr::Literal(lit) => match lit {
                LiteralValue::String(s) => s.inner().chars().count() as u64,
                LiteralValue::Bytes(b) => b.inner().len() as u64,
                _ => 1,
            },
            Expr::List(l) => l.elements.len() as u64,
            Expr::Map(m) => m.entries.len() as u64,
            _ => return None,
        };
        Some(Range::new(v, v))
    }

    /// The schema size estimator: walks the path from `self`.
    fn schema_size(&self, node: &Node<'_>) -> Option<Range> {
        let path = node.path.as_ref()?;
        let mut current: &Arc<Decl> = self.root;
        for name in path.iter().skip(1) {
            match name.as_str() {
                "@items" | "@values" => current = current.elem()?,
                "@keys" => return Some(Range::ZERO),
                field => current = &current.field(field)?.decl,
            }
        }
        Some(Range::new(0, current.max_elements))
    }

    /// `sizeEstimate`; `scalar_fallback` is cel-go's (`isScalar`), kube's estimator has none.
    fn size(&self, node: &Node<'_>, scalar_fallback: bool) -> Range {
        if let Some(s) = Self::computed_size(node) {
            return s;
        }
        if let Some(s) = self.schema_size(node) {
            return s;
        }
        if scalar_fallback
            && matches!(
                node.ty,
                Ty::Bool | Ty::Double | Ty::Duration | Ty::Int | Ty::Timestamp | Ty::Uint
            )
        {
            return Range::ONE;
        }
        Range::UNBOUNDED
    }

    fn list_elem_node(&self, list: &Node<'_>) -> Option<Node<'static>> {
        let Ty::List(elem) = &list.ty else {
            return None;
        };
        let path = list.path.as_ref().map(|p| {
            let mut p = p.clone();
            p.push("@items".to_owned());
            p
        });
        Some(Node {
            expr: None,
            ty: (**elem).clone(),
            path,
            derived: None,
        })
    }

    #[allow(
        clippy::too_many_lines,
        reason = "one arm per cost rule, as in cel-go and kube"
    )]
    fn function_cost(
        &self,
        function: &str,
        id: &str,
        target: Option<&IdedExpr>,
        args: &[IdedExpr],
        arg_costs: &[Range],
    ) -> (Range, Option<Range>) {
        let arg_sum = arg_costs.iter().fold(Range::ZERO, |a, c| a.add(*c));
        let target_node = target.map(|t| self.node(t));
        let arg_nodes: Vec<Node<'_>> = args.iter().map(|a| self.node(a)).collect();
        let f = STRING_TRAVERSAL_COST_FACTOR;
        // Overload estimators (the sets extension) win over the Kubernetes estimator.
        let sets_factor = match id {
            "list_sets_contains_list" | "list_sets_intersects_list" => Some(1.0),
            "list_sets_equivalent_list" => Some(2.0),
            _ => None,
        };
        if let (Some(factor), 2) = (sets_factor, arg_nodes.len()) {
            let (a, b) = (
                self.size(&arg_nodes[0], false),
                self.size(&arg_nodes[1], false),
            );
            return (a.mul(b).factor(factor).add(Range::ONE).add(arg_sum), None);
        }
        // Then the Kubernetes estimator.
        let kube: Option<(Range, Option<Range>)> = match function {
            "isSorted" | "sum" | "max" | "min" | "indexOf" | "lastIndexOf" => {
                target_node.as_ref().map(|t| match self.list_elem_node(t) {
                    Some(elem) => {
                        let mut el_cost = Range::ONE;
                        if matches!(elem.ty, Ty::String | Ty::Bytes) {
                            el_cost = el_cost.add(self.size(&elem, false).factor(f));
                        }
                        (self.size(t, false).mul(el_cost), None)
                    }
                    None => (self.size(t, false).factor(f), None),
                })
            }
            "lowerAscii" | "upperAscii" | "substring" | "trim" => target_node.as_ref().map(|t| {
                let sz = self.size(t, false);
                (sz.factor(f), Some(sz))
            }),
            "replace" if args.len() >= 2 => target_node.as_ref().map(|t| {
                let sz = self.size(t, false);
                let to_replace = self.size(&arg_nodes[0], false);
                let replace_with = self.size(&arg_nodes[1], false);
                let (mut count, mut retained) = (Range::ZERO, Range::ZERO);
                if to_replace.min == 0 {
                    count.max = if sz.max < u64::MAX {
                        sz.max + 1
                    } else {
                        sz.max
                    };
                    retained.max = sz.max;
                } else if replace_with.max <= to_replace.min {
                    count.max = 0;
                    retained.max = sz.max;
                } else {
                    count.max = sz.max.div_ceil(to_replace.min);
                }
                if to_replace.max == 0 {
                    count.min = if sz.min < u64::MAX {
                        sz.min + 1
                    } else {
                        sz.min
                    };
                    retained.min = sz.min;
                } else if to_replace.max <= replace_with.min {
                    count.min = 0;
                    retained.min = sz.min;
                } else {
                    count.min = sz.min.div_ceil(to_replace.max);
                }
                let size = count.mul(replace_with).add(retained);
                (sz.factor(2.0 * f), Some(size))
            }),
            "split" => target_node.as_ref().map(|t| {
                let sz = self.size(t, false);
                let mut max = sz.max;
                if let Some(Expr::Literal(LiteralValue::Int(i))) = args.get(1).map(|a| &a.expr) {
                    max = u64::try_from(*i.inner()).unwrap_or(u64::MAX);
                }
                (sz.factor(2.0 * f), Some(Range::new(0, max)))
            }),
            "join" => target_node.as_ref().map(|t| {
                let list_size = self.size(t, false);
                let mut sz = match self.list_elem_node(t) {
                    Some(elem) => list_size.mul(self.size(&elem, false)),
                    None => Range::ZERO,
                };
                if let Some(sep) = arg_nodes.first() {
                    let sep_size = self.size(sep, false);
                    let seps = Range::new(
                        list_size.min.saturating_sub(1),
                        list_size.max.saturating_sub(1),
                    );
                    sz = sz.add(sep_size.mul(seps));
                }
                (sz.factor(f), Some(sz))
            }),
            "find" | "findAll" if !args.is_empty() => target_node.as_ref().map(|t| {
                let sz = self.size(t, false);
                let str_cost = sz.add(Range::ONE).factor(f);
                let regex_cost = self
                    .size(&arg_nodes[0], false)
                    .factor(REGEX_STRING_LENGTH_COST_FACTOR);
                (str_cost.mul(regex_cost), Some(Range::new(0, sz.max)))
            }),
            "url" if args.len() == 1 => {
                let sz = self.size(&arg_nodes[0], false);
                Some((sz.factor(f), Some(sz)))
            }
            "ip" if target.is_some() && args.is_empty() => Some((Range::ONE, None)),
            "masked"
            | "prefixLength"
            | "family"
            | "isUnspecified"
            | "isLoopback"
            | "isLinkLocalMulticast"
            | "isLinkLocalUnicast"
            | "isGlobalUnicast"
            | "format.named"
            | "sign"
            | "asInteger"
            | "isInteger"
            | "asApproximateFloat"
            | "isGreaterThan"
            | "isLessThan"
            | "compareTo"
            | "add"
            | "sub"
            | "getScheme"
            | "getHostname"
            | "getHost"
            | "getPort"
            | "getEscapedPath"
            | "getQuery" => Some((Range::ONE, None)),
            "containsIP" | "containsCIDR" if target.is_some() && !args.is_empty() => {
                let sz = Range::new(4, 16);
                let mut c = sz.add(sz).factor(f);
                if function == "containsCIDR" {
                    c = c.add(sz.factor(f)).add(Range::ONE);
                }
                if id.ends_with("_string") {
                    c = c.add(self.size(&arg_nodes[0], false).factor(f));
                }
                Some((c, None))
            }
            "validate" if target.is_some() && !args.is_empty() => {
                let sz = self.size(&arg_nodes[0], false);
                Some((
                    sz.factor(f).factor(128.0 * REGEX_STRING_LENGTH_COST_FACTOR),
                    None,
                ))
            }
            "_==_" if arg_nodes.len() == 2 && arg_nodes[0].ty.exact(&arg_nodes[1].ty) => {
                match &arg_nodes[0].ty {
                    Ty::Named("net.IP" | "net.CIDR" | "kubernetes.Quantity") => {
                        Some((Range::ONE, None))
                    }
                    Ty::Named("kubernetes.NamedFormat") => {
                        Some((Range::new(1, 64).factor(f), None))
                    }
                    Ty::Named("kubernetes.URL") => {
                        let size = Self::computed_size(&arg_nodes[1]).unwrap_or(Range::ONE);
                        Some((Range::new(1, size.max).factor(f), None))
                    }
                    _ => None,
                }
            }
            _ => None,
        };
        if let Some((c, size)) = kube {
            return (c.add(arg_sum), size);
        }
        let size = |n: &Node<'_>| self.size(n, true);
        match id {
            "string_to_bytes" if args.len() == 1 => {
                let sz = size(&arg_nodes[0]);
                return (
                    sz.factor(f).add(arg_sum),
                    Some(Range::new(sz.min, sz.max.saturating_mul(4))),
                );
            }
            "bytes_to_string" if args.len() == 1 => {
                let sz = size(&arg_nodes[0]);
                return (
                    sz.factor(f).add(arg_sum),
                    Some(Range::new(sz.min / 4, sz.max)),
                );
            }
            "strings_quote" if args.len() == 1 => {
                let sz = size(&arg_nodes[0]);
                return (
                    sz.factor(f).add(arg_sum),
                    Some(Range::new(
                        sz.min.saturating_add(2),
                        sz.max.saturating_mul(2).saturating_add(2),
                    )),
                );
            }
            "starts_with_string" | "ends_with_string" if args.len() == 1 => {
                return (size(&arg_nodes[0]).factor(f).add(arg_sum), None);
            }
            "in_list" if args.len() == 2 => {
                return (size(&arg_nodes[1]).factor(1.0).add(arg_sum), None);
            }
            "matches_string" if args.len() == 1 => {
                if let Some(t) = &target_node {
                    let str_cost = size(t).add(Range::ONE).factor(f);
                    let regex_cost = size(&arg_nodes[0]).factor(REGEX_STRING_LENGTH_COST_FACTOR);
                    return (str_cost.mul(regex_cost).add(arg_sum), None);
                }
            }
            "contains_string" if args.len() == 1 => {
                if let Some(t) = &target_node {
                    let str_cost = size(t).factor(f);
                    let sub_cost = size(&arg_nodes[0]).factor(f);
                    return (str_cost.mul(sub_cost).add(arg_sum), None);
                }
            }
            "logical_or" | "logical_and" if arg_costs.len() == 2 => {
                let (l, r) = (arg_costs[0], arg_costs[1]);
                return (Range::new(l.min, l.add(r).max), None);
            }
            "conditional" if args.len() == 3 => {
                let sz = size(&arg_nodes[1]).union(size(&arg_nodes[2]));
                return (arg_costs[0].add(arg_costs[1].union(arg_costs[2])), Some(sz));
            }
            "add_string" | "add_bytes" | "add_list" if args.len() == 2 => {
                let result = size(&arg_nodes[0]).add(size(&arg_nodes[1]));
                return if id == "add_list" {
                    (Range::ONE.add(arg_sum), Some(result))
                } else {
                    (result.factor(f).add(arg_sum), Some(result))
                };
            }
            "less_string"
            | "greater_string"
            | "less_equals_string"
            | "greater_equals_string"
            | "less_bytes"
            | "greater_bytes"
            | "less_equals_bytes"
            | "greater_equals_bytes"
            | "equals"
            | "not_equals"
                if args.len() == 2 =>
            {
                let (l, r) = (size(&arg_nodes[0]), size(&arg_nodes[1]));
                let smallest_max = l.max.min(r.max);
                let min = u64::from(smallest_max > 0);
                return (Range::new(min, smallest_max).factor(f).add(arg_sum), None);
            }
            _ => {}
        }
        (Range::ONE.add(arg_sum), None)
    }
}
