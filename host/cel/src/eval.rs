//! The metered interpreter.
//!
//! Costs follow cel-go's runtime cost tracker (`interpreter/runtimecost.go`) with the
//! Kubernetes `CallCost` estimator, so budgets and limits behave as in kube-apiserver: one
//! unit per identifier and field selection, list and map literals 10 and 30, and per call
//! either 1 or a size-based cost (string traversal at 0.1 per character, `matches` as string
//! length × pattern length / 40, `in` over a list as its length, …). Evaluation stops as soon
//! as the running cost passes the limit.
//!
//! Work that cel-go does in constant time but this interpreter does not (copying a list on
//! `+`, deep equality, converting data) is counted separately against a fuse, so no
//! expression can use CPU or memory out of proportion to its cost.

use std::collections::HashMap;
use std::rc::Rc;

use cel::common::ast::{CallExpr, ComprehensionExpr, EntryExpr, Expr, IdedExpr, LiteralValue};
use regex::Regex;

use crate::cost::{
    REGEX_STRING_LENGTH_COST_FACTOR, STRING_TRAVERSAL_COST_FACTOR, multiply_by_cost_factor,
};
use crate::timeutil::{self, Ts};
use crate::value::{
    Built, EvalErr, List, MapV, Res, Sem, Str, Val, compare, equals, item_key, obj_field,
};
use wasmgate_apimachinery::gofmt::go_float;
use wasmgate_apimachinery::goregex;

/// Largest string or byte sequence an expression may build (characters or bytes).
const MAX_BUILT_LEN: usize = 16 * 1024 * 1024;
/// Deepest evaluation recursion.
const MAX_DEPTH: u32 = 400;
/// Work units per list item copied or converted (an AST step is one).
const COPY_WORK: u64 = 4;
/// Regexes compiled from data kept per validation.
const REGEX_CACHE_LIMIT: usize = 64;

/// A compiled expression.
#[derive(Debug)]
pub(crate) struct Program {
    pub(crate) expr: IdedExpr,
    /// Resolved overloads by call id.
    pub(crate) overloads: HashMap<u64, Vec<&'static str>>,
    /// Type names by identifier or selection id (the checker's `type_names`).
    pub(crate) type_names: HashMap<u64, &'static str>,
    /// Full names of namespaced functions by call id (the checker's `namespaced`).
    pub(crate) namespaced: HashMap<u64, &'static str>,
    /// Precompiled literal patterns by call id (`matches`, `find`, `findAll`).
    pub(crate) regexes: HashMap<u64, Regex>,
}

/// Cost and work accounting for one evaluation.
#[derive(Debug)]
pub(crate) struct Meter {
    pub(crate) cost: u64,
    pub(crate) limit: u64,
    pub(crate) work: u64,
    pub(crate) work_limit: u64,
}

impl Meter {
    fn charge(&mut self, c: u64) -> Res<()> {
        self.cost = self.cost.saturating_add(c);
        if self.cost > self.limit {
            return Err(EvalErr::CostLimit);
        }
        Ok(())
    }

    fn work(&mut self, w: u64) -> Res<()> {
        self.work = self.work.saturating_add(w);
        if self.work > self.work_limit {
            return Err(EvalErr::Fuse);
        }
        Ok(())
    }
}

/// Regexes compiled from data during one validation.
pub(crate) type RegexCache = HashMap<String, Regex>;

struct Interp<'a, 'm> {
    prog: &'a Program,
    scopes: Vec<(&'a str, Res<Val<'a>>)>,
    meter: &'m mut Meter,
    cache: &'m mut RegexCache,
    depth: u32,
}

fn fatal(e: &EvalErr) -> bool {
    matches!(e, EvalErr::CostLimit | EvalErr::Fuse)
}

/// Evaluates `prog` with the variables `vars`.
pub(crate) fn run<'a>(
    prog: &'a Program,
    vars: Vec<(&'a str, Val<'a>)>,
    meter: &mut Meter,
    cache: &mut RegexCache,
) -> Res<Val<'a>> {
    crate::value::take_eq_steps();
    let mut it = Interp {
        prog,
        scopes: vars.into_iter().map(|(n, v)| (n, Ok(v))).collect(),
        meter,
        cache,
        depth: 0,
    };
    it.eval(&prog.expr)
}

fn str_cost(len: u64) -> u64 {
    multiply_by_cost_factor(len, STRING_TRAVERSAL_COST_FACTOR)
}

fn as_index(v: &Val<'_>) -> Res<i64> {
    match v {
        Val::Int(i) => Ok(*i),
        Val::Uint(u) => i64::try_from(*u).map_err(|_| EvalErr::msg("index out of range")),
        Val::Double(d) if d.fract() == 0.0 && d.abs() < 9.2e18 => {
            #[allow(clippy::cast_possible_truncation, reason = "whole number in range")]
            let i = *d as i64;
            Ok(i)
        }
        _ => Err(EvalErr::no_overload()),
    }
}

fn s<'v, 'a>(v: &'v Val<'a>) -> Res<&'v str> {
    match v {
        Val::Str(s) => Ok(s.as_str()),
        _ => Err(EvalErr::no_overload()),
    }
}

fn quantity<'v>(v: &'v Val<'_>) -> Res<&'v crate::k8slib::Quantity> {
    match v {
        Val::Quantity(q) => Ok(q),
        _ => Err(EvalErr::no_overload()),
    }
}

fn ip(v: &Val<'_>) -> Res<std::net::IpAddr> {
    match v {
        Val::Ip(a) => Ok(*a),
        _ => Err(EvalErr::no_overload()),
    }
}

fn cidr(v: &Val<'_>) -> Res<crate::k8slib::Cidr> {
    match v {
        Val::Cidr(c) => Ok(*c),
        _ => Err(EvalErr::no_overload()),
    }
}

fn int(v: &Val<'_>) -> Res<i64> {
    match v {
        Val::Int(i) => Ok(*i),
        _ => Err(EvalErr::no_overload()),
    }
}

impl<'a> Interp<'a, '_> {
    fn eval(&mut self, e: &'a IdedExpr) -> Res<Val<'a>> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            self.depth -= 1;
            return Err(EvalErr::msg("max recursion depth exceeded"));
        }
        let r = self
            .meter
            .work(1)
            .and_then(|()| self.eval_inner(e))
            .and_then(|v| {
                self.meter.work(crate::value::take_eq_steps())?;
                Ok(v)
            });
        self.depth -= 1;
        r
    }

    fn eval_inner(&mut self, e: &'a IdedExpr) -> Res<Val<'a>> {
        match &e.expr {
            Expr::Literal(lit) => Ok(match lit {
                LiteralValue::Boolean(b) => Val::Bool(*b.inner()),
                LiteralValue::Bytes(b) => Val::Bytes(b.inner().into()),
                LiteralValue::Double(d) => Val::Double(*d.inner()),
                LiteralValue::Int(i) => Val::Int(*i.inner()),
                LiteralValue::Null => Val::Null,
                LiteralValue::String(s) => Val::Str(Str::B(s.inner())),
                LiteralValue::UInt(u) => Val::Uint(*u.inner()),
            }),
            Expr::Ident(name) => {
                if let Some((_, v)) = self.scopes.iter().rev().find(|(n, _)| *n == name.as_str()) {
                    self.meter.charge(1)?;
                    return v.clone();
                }
                // Type names are constants for cel-go's planner: no cost.
                match self.prog.type_names.get(&e.id) {
                    Some(t) => Ok(Val::Type(t)),
                    None => Err(EvalErr::msg(format!("no such attribute: {name}"))),
                }
            }
            Expr::Select(sel) => {
                if let Some(t) = self.prog.type_names.get(&e.id) {
                    return Ok(Val::Type(t));
                }
                let operand = self.eval(&sel.operand)?;
                if sel.test {
                    return self.has(&operand, &sel.field);
                }
                self.meter.charge(1)?;
                self.select(operand, &sel.field)
            }
            Expr::Call(call) => self.call_expr(e, call),
            Expr::List(list) => {
                let constant = list
                    .elements
                    .iter()
                    .all(|x| matches!(x.expr, Expr::Literal(_)));
                if !constant {
                    self.meter.charge(crate::cost::LIST_CREATE_BASE_COST)?;
                }
                let mut items = Vec::with_capacity(list.elements.len());
                for (i, el) in list.elements.iter().enumerate() {
                    let v = self.eval(el)?;
                    if list.optional_indices.contains(&i) {
                        match v {
                            Val::Opt(Some(inner)) => items.push((*inner).clone()),
                            Val::Opt(None) => {}
                            _ => return Err(EvalErr::no_overload()),
                        }
                    } else {
                        items.push(v);
                    }
                }
                Ok(Val::list(items))
            }
            Expr::Map(map) => {
                let constant = map.entries.iter().all(|en| match &en.expr {
                    EntryExpr::MapEntry(me) => {
                        matches!(me.key.expr, Expr::Literal(_))
                            && matches!(me.value.expr, Expr::Literal(_))
                    }
                    EntryExpr::StructField(_) => false,
                });
                if !constant {
                    self.meter.charge(crate::cost::MAP_CREATE_BASE_COST)?;
                }
                let mut entries: Vec<(Val<'a>, Val<'a>)> = Vec::with_capacity(map.entries.len());
                for en in &map.entries {
                    let EntryExpr::MapEntry(me) = &en.expr else {
                        return Err(EvalErr::no_overload());
                    };
                    let k = self.eval(&me.key)?;
                    let mut v = self.eval(&me.value)?;
                    if me.optional {
                        match v {
                            Val::Opt(Some(inner)) => v = (*inner).clone(),
                            Val::Opt(None) => continue,
                            _ => return Err(EvalErr::no_overload()),
                        }
                    }
                    for (ek, _) in &entries {
                        if equals(ek, &k)? {
                            return Err(EvalErr::msg(format!(
                                "Failed with repeated key: {}",
                                display_key(&k)
                            )));
                        }
                    }
                    entries.push((k, v));
                }
                Ok(Val::Map(MapV::Built(Rc::new(entries))))
            }
            Expr::Comprehension(comp) => self.comprehension(comp),
            Expr::Struct(_) | Expr::Unspecified => Err(EvalErr::no_overload()),
        }
    }

    fn has(&mut self, operand: &Val<'a>, field: &str) -> Res<Val<'a>> {
        match operand {
            Val::Obj(m, d) => Ok(Val::Bool(obj_field(m, d, field)?.is_some())),
            Val::Map(MapV::Json(m, _)) => Ok(Val::Bool(m.contains_key(field))),
            Val::Map(map @ MapV::Built(_)) => {
                Ok(Val::Bool(map.find(&Val::string(field))?.is_some()))
            }
            _ => Err(EvalErr::no_overload()),
        }
    }

    fn select(&mut self, operand: Val<'a>, field: &str) -> Res<Val<'a>> {
        match operand {
            Val::Obj(m, d) => {
                obj_field(m, d, field)?.ok_or_else(|| EvalErr::msg(format!("no such key: {field}")))
            }
            Val::Map(map) => map
                .find(&Val::string(field))?
                .ok_or_else(|| EvalErr::msg(format!("no such key: {field}"))),
            Val::Opt(None) => Ok(Val::Opt(None)),
            Val::Opt(Some(inner)) => self.opt_select((*inner).clone(), field),
            _ => Err(EvalErr::no_overload()),
        }
    }

    fn opt_select(&mut self, operand: Val<'a>, field: &str) -> Res<Val<'a>> {
        let found = match operand {
            Val::Obj(m, d) => obj_field(m, d, field)?,
            Val::Map(map) => map.find(&Val::string(field))?,
            Val::Opt(None) => None,
            Val::Opt(Some(inner)) => return self.opt_select((*inner).clone(), field),
            _ => return Err(EvalErr::no_overload()),
        };
        Ok(Val::Opt(found.map(Rc::new)))
    }

    fn comprehension(&mut self, comp: &'a ComprehensionExpr) -> Res<Val<'a>> {
        let range = self.eval(&comp.iter_range)?;
        let accu = match self.eval(&comp.accu_init) {
            Err(e) if fatal(&e) => return Err(e),
            r => r,
        };
        let base = self.scopes.len();
        self.scopes.push((comp.accu_var.as_str(), accu));
        self.scopes.push((comp.iter_var.as_str(), Ok(Val::Null)));
        if let Some(v2) = &comp.iter_var2 {
            self.scopes.push((v2.as_str(), Ok(Val::Null)));
        }
        let r = self.fold(comp, &range, base);
        let r = r.and_then(|()| {
            self.scopes.truncate(base + 1);
            self.eval(&comp.result)
        });
        self.scopes.truncate(base);
        r
    }

    fn fold(&mut self, comp: &'a ComprehensionExpr, range: &Val<'a>, base: usize) -> Res<()> {
        let two = comp.iter_var2.is_some();
        let n = match range {
            Val::List(l) => l.len(),
            Val::Map(m) => Val::Map(m.clone()).cost_size() as usize,
            _ => return Err(EvalErr::no_overload()),
        };
        let keys = match range {
            Val::Map(m) => Some(m.keys()),
            _ => None,
        };
        for i in 0..n {
            self.meter.work(1)?;
            let (first, second) = match (range, &keys) {
                (Val::List(l), _) => {
                    let item = l.get(i)?;
                    if two {
                        (Val::Int(i64::try_from(i).unwrap_or(i64::MAX)), Some(item))
                    } else {
                        (item, None)
                    }
                }
                (Val::Map(m), Some(keys)) => {
                    let k = keys[i].clone();
                    let v = if two { m.find(&k)? } else { None };
                    (k, v)
                }
                _ => return Err(EvalErr::no_overload()),
            };
            self.scopes[base + 1].1 = Ok(first);
            if let Some(v) = second {
                self.scopes[base + 2].1 = Ok(v);
            }
            match self.eval(&comp.loop_cond) {
                Ok(Val::Bool(false)) => break,
                Err(e) if fatal(&e) => return Err(e),
                _ => {}
            }
            let step = match self.eval(&comp.loop_step) {
                Err(e) if fatal(&e) => return Err(e),
                r => r,
            };
            self.scopes[base].1 = step;
        }
        Ok(())
    }

    fn call_expr(&mut self, e: &'a IdedExpr, call: &'a CallExpr) -> Res<Val<'a>> {
        let name = call.func_name.as_str();
        match name {
            "_&&_" | "_||_" => {
                let short = name == "_||_";
                let [l, r] = call.args.as_slice() else {
                    return Err(EvalErr::no_overload());
                };
                let lhs = self.eval(l);
                if let Err(e) = &lhs
                    && fatal(e)
                {
                    return lhs;
                }
                if matches!(lhs, Ok(Val::Bool(b)) if b == short) {
                    return Ok(Val::Bool(short));
                }
                let rhs = self.eval(r);
                if let Err(e) = &rhs
                    && fatal(e)
                {
                    return rhs;
                }
                match (lhs, rhs) {
                    (_, Ok(Val::Bool(b))) if b == short => Ok(Val::Bool(short)),
                    (Ok(Val::Bool(_)), Ok(Val::Bool(_))) => Ok(Val::Bool(!short)),
                    (Err(e), _) | (_, Err(e)) => Err(e),
                    _ => Err(EvalErr::no_overload()),
                }
            }
            "_?_:_" => {
                let [c, t, f] = call.args.as_slice() else {
                    return Err(EvalErr::no_overload());
                };
                match self.eval(c)? {
                    Val::Bool(true) => self.eval(t),
                    Val::Bool(false) => self.eval(f),
                    _ => Err(EvalErr::no_overload()),
                }
            }
            "@not_strictly_false" => {
                let [arg] = call.args.as_slice() else {
                    return Err(EvalErr::no_overload());
                };
                let v = self.eval(arg);
                self.meter.charge(1)?;
                match v {
                    Ok(Val::Bool(false)) => Ok(Val::Bool(false)),
                    Err(e) if fatal(&e) => Err(e),
                    _ => Ok(Val::Bool(true)),
                }
            }
            "_?._" => {
                let [operand, field] = call.args.as_slice() else {
                    return Err(EvalErr::no_overload());
                };
                let operand = self.eval(operand)?;
                let field = match &field.expr {
                    Expr::Literal(LiteralValue::String(s)) => s.inner(),
                    _ => return Err(EvalErr::no_overload()),
                };
                self.meter.charge(1)?;
                self.opt_select(operand, field)
            }
            "_+_" | crate::ext_macros::MAP_INSERT
                if call.target.is_none()
                    && matches!(call.args.first().map(|a| &a.expr), Some(Expr::Ident(n)) if n.starts_with('@')) =>
            {
                // The accumulator of a macro: extend it in place instead of copying.
                let Some(Expr::Ident(acc)) = call.args.first().map(|a| &a.expr) else {
                    return Err(EvalErr::no_overload());
                };
                let slot = self.scopes.iter().rposition(|(n, _)| *n == acc.as_str());
                let lhs = match slot {
                    Some(i) => {
                        self.meter.charge(1)?;
                        std::mem::replace(&mut self.scopes[i].1, Ok(Val::Null))?
                    }
                    None => return Err(EvalErr::msg(format!("no such attribute: {acc}"))),
                };
                let mut vals = vec![lhs];
                for a in &call.args[1..] {
                    vals.push(self.eval(a)?);
                }
                self.call(e, name, false, vals)
            }
            _ => {
                let mut vals = Vec::with_capacity(call.args.len() + 1);
                if let Some(full) = self.prog.namespaced.get(&e.id) {
                    for a in &call.args {
                        vals.push(self.eval(a)?);
                    }
                    return self.call(e, full, false, vals);
                }
                let member = call.target.is_some();
                if let Some(t) = &call.target {
                    vals.push(self.eval(t)?);
                }
                for a in &call.args {
                    vals.push(self.eval(a)?);
                }
                self.call(e, name, member, vals)
            }
        }
    }

    fn regex(&mut self, call_id: u64, pattern: &str) -> Res<Regex> {
        if let Some(r) = self.prog.regexes.get(&call_id) {
            return Ok(r.clone());
        }
        if let Some(r) = self.cache.get(pattern) {
            return Ok(r.clone());
        }
        self.meter.work(pattern.len() as u64 * 16)?;
        let r = goregex::compile_untrusted(pattern).map_err(EvalErr::Msg)?;
        if self.cache.len() >= REGEX_CACHE_LIMIT {
            self.cache.clear();
        }
        self.cache.insert(pattern.to_owned(), r.clone());
        Ok(r)
    }

    fn overload(&self, id: u64) -> Option<&'static str> {
        self.prog
            .overloads
            .get(&id)
            .and_then(|v| v.first().copied())
    }

    #[allow(clippy::too_many_lines, reason = "one arm per function")]
    fn call(
        &mut self,
        e: &'a IdedExpr,
        name: &str,
        member: bool,
        args: Vec<Val<'a>>,
    ) -> Res<Val<'a>> {
        use Val as V;
        let a = &args;
        let arity = a.len();
        // Cost first (cel-go charges after the call; the outcome is the same).
        let sz = |i: usize| a.get(i).map_or(1, Val::cost_size);
        let cost = match name {
            "_==_" | "_!=_" => str_cost(sz(0).min(sz(1))),
            "_<_" | "_<=_" | "_>_" | "_>=_" => match (a.first(), a.get(1)) {
                (Some(V::Str(_)), Some(V::Str(_))) | (Some(V::Bytes(_)), Some(V::Bytes(_))) => {
                    str_cost(sz(0).min(sz(1)))
                }
                _ => 1,
            },
            "_+_" => match (a.first(), a.get(1)) {
                (Some(V::Str(_)), Some(V::Str(_))) | (Some(V::Bytes(_)), Some(V::Bytes(_))) => {
                    str_cost(sz(0).saturating_add(sz(1)))
                }
                _ => 1,
            },
            "@in" => match a.get(1) {
                Some(V::List(l)) => l.len() as u64,
                _ => 1,
            },
            "startsWith" | "endsWith" | "lowerAscii" | "upperAscii" | "substring" | "trim"
            | "strings.quote" => str_cost(sz(0)),
            "bytes" | "string"
                if matches!(
                    (a.first(), name),
                    (Some(V::Str(_)), "bytes") | (Some(V::Bytes(_)), "string")
                ) =>
            {
                str_cost(sz(0))
            }
            "matches" | "find" | "findAll" if arity >= 2 => {
                let sc =
                    multiply_by_cost_factor(sz(0).saturating_add(1), STRING_TRAVERSAL_COST_FACTOR);
                let rc = multiply_by_cost_factor(sz(1), REGEX_STRING_LENGTH_COST_FACTOR);
                sc.saturating_mul(rc)
            }
            "contains" if member => str_cost(sz(0)).saturating_mul(str_cost(sz(1))),
            "replace" | "split" => {
                multiply_by_cost_factor(sz(0), 2.0 * STRING_TRAVERSAL_COST_FACTOR)
            }
            "isSorted" | "sum" | "max" | "min" | "indexOf" | "lastIndexOf" if member => {
                a.first().map_or(Ok(1), traversal_cost)?
            }
            "sets.contains" | "sets.intersects" => sz(0).saturating_mul(sz(1)).saturating_add(1),
            "sets.equivalent" => sz(0)
                .saturating_mul(sz(1))
                .saturating_mul(2)
                .saturating_add(1),
            "join" => 0,
            "url" | "cidr" | "isIP" | "isCIDR" | "quantity" | "isQuantity" if !member => {
                str_cost(sz(0))
            }
            "ip" if matches!(a.first(), Some(V::Str(_))) => str_cost(sz(0)),
            "ip.isCanonical" => multiply_by_cost_factor(sz(0), 2.0 * STRING_TRAVERSAL_COST_FACTOR),
            "containsIP" => {
                1 + match a.get(1) {
                    Some(V::Str(_)) => str_cost(sz(1)),
                    _ => 0,
                }
            }
            "containsCIDR" => {
                3 + match a.get(1) {
                    Some(V::Str(_)) => str_cost(sz(1)),
                    _ => 0,
                }
            }
            "validate" if member => {
                let regex = match a.first() {
                    Some(V::Format(f)) => crate::k8slib::FORMATS
                        .iter()
                        .find(|(n, _)| n == f)
                        .map_or(1, |(_, r)| *r),
                    _ => 1,
                };
                multiply_by_cost_factor(sz(1).saturating_add(1), STRING_TRAVERSAL_COST_FACTOR)
                    .saturating_mul(multiply_by_cost_factor(
                        regex,
                        REGEX_STRING_LENGTH_COST_FACTOR,
                    ))
            }
            _ => 1,
        };
        self.meter.charge(cost)?;
        let overflow = || EvalErr::msg("integer overflow");
        let uoverflow = || EvalErr::msg("unsigned integer overflow");
        let r = match (name, arity) {
            ("!_", 1) => match a[0] {
                V::Bool(b) => V::Bool(!b),
                _ => return Err(EvalErr::no_overload()),
            },
            ("-_", 1) => match a[0] {
                V::Int(i) => V::Int(i.checked_neg().ok_or_else(overflow)?),
                V::Double(d) => V::Double(-d),
                _ => return Err(EvalErr::no_overload()),
            },
            ("_==_", 2) => {
                self.meter.work(a[0].cost_size() + a[1].cost_size())?;
                V::Bool(equals(&a[0], &a[1])?)
            }
            ("_!=_", 2) => {
                self.meter.work(a[0].cost_size() + a[1].cost_size())?;
                V::Bool(!equals(&a[0], &a[1])?)
            }
            ("_<_", 2) => V::Bool(compare(&a[0], &a[1])?.is_lt()),
            ("_<=_", 2) => V::Bool(compare(&a[0], &a[1])?.is_le()),
            ("_>_", 2) => V::Bool(compare(&a[0], &a[1])?.is_gt()),
            ("_>=_", 2) => V::Bool(compare(&a[0], &a[1])?.is_ge()),
            ("_+_", 2) => {
                let mut args = args;
                let rhs = args.pop().ok_or_else(EvalErr::no_overload)?;
                let lhs = args.pop().ok_or_else(EvalErr::no_overload)?;
                return self.add(lhs, rhs);
            }
            ("_-_", 2) => match (&a[0], &a[1]) {
                (V::Int(x), V::Int(y)) => V::Int(x.checked_sub(*y).ok_or_else(overflow)?),
                (V::Uint(x), V::Uint(y)) => V::Uint(x.checked_sub(*y).ok_or_else(uoverflow)?),
                (V::Double(x), V::Double(y)) => V::Double(x - y),
                (V::Ts(x), V::Ts(y)) => V::Dur(x.sub(*y).map_err(EvalErr::Msg)?),
                (V::Ts(x), V::Dur(d)) => V::Ts(
                    x.add(
                        d.checked_neg()
                            .ok_or("timestamp overflow")
                            .map_err(EvalErr::msg)?,
                    )
                    .map_err(EvalErr::Msg)?,
                ),
                (V::Dur(x), V::Dur(y)) => V::Dur(
                    x.checked_sub(*y)
                        .ok_or_else(|| EvalErr::msg("duration overflow"))?,
                ),
                _ => return Err(EvalErr::no_overload()),
            },
            ("_*_", 2) => match (&a[0], &a[1]) {
                (V::Int(x), V::Int(y)) => V::Int(x.checked_mul(*y).ok_or_else(overflow)?),
                (V::Uint(x), V::Uint(y)) => V::Uint(x.checked_mul(*y).ok_or_else(uoverflow)?),
                (V::Double(x), V::Double(y)) => V::Double(x * y),
                _ => return Err(EvalErr::no_overload()),
            },
            ("_/_", 2) => match (&a[0], &a[1]) {
                (V::Int(_), V::Int(0)) | (V::Uint(_), V::Uint(0)) => {
                    return Err(EvalErr::msg("division by zero"));
                }
                (V::Int(x), V::Int(y)) => V::Int(x.checked_div(*y).ok_or_else(overflow)?),
                (V::Uint(x), V::Uint(y)) => V::Uint(x / y),
                (V::Double(x), V::Double(y)) => V::Double(x / y),
                _ => return Err(EvalErr::no_overload()),
            },
            ("_%_", 2) => match (&a[0], &a[1]) {
                (V::Int(_), V::Int(0)) | (V::Uint(_), V::Uint(0)) => {
                    return Err(EvalErr::msg("modulus by zero"));
                }
                (V::Int(x), V::Int(y)) => V::Int(x.checked_rem(*y).ok_or_else(overflow)?),
                (V::Uint(x), V::Uint(y)) => V::Uint(x % y),
                _ => return Err(EvalErr::no_overload()),
            },
            ("_[_]", 2) => self.index(&a[0], &a[1])?,
            ("_[?_]", 2) => match &a[0] {
                V::Opt(None) => V::Opt(None),
                V::Opt(Some(inner)) => match self.index(inner, &a[1]) {
                    Ok(v) => V::Opt(Some(Rc::new(v))),
                    Err(e) if fatal(&e) => return Err(e),
                    Err(_) => V::Opt(None),
                },
                other => match self.index(other, &a[1]) {
                    Ok(v) => V::Opt(Some(Rc::new(v))),
                    Err(e) if fatal(&e) => return Err(e),
                    Err(_) => V::Opt(None),
                },
            },
            ("@in", 2) => match &a[1] {
                V::List(l) => {
                    self.meter.work(l.len() as u64)?;
                    let mut found = false;
                    for i in 0..l.len() {
                        if equals(&a[0], &l.get(i)?)? {
                            found = true;
                            break;
                        }
                    }
                    V::Bool(found)
                }
                V::Map(m) => V::Bool(m.find(&a[0])?.is_some()),
                V::Obj(m, d) => V::Bool(match &a[0] {
                    V::Str(k) => obj_field(m, d, k.as_str())?.is_some(),
                    _ => false,
                }),
                _ => return Err(EvalErr::no_overload()),
            },
            ("size", 1) => V::Int(
                i64::try_from(a[0].size().ok_or_else(EvalErr::no_overload)?).unwrap_or(i64::MAX),
            ),
            ("type", 1) => V::Type(a[0].type_name()),
            ("dyn", 1) => a[0].clone(),
            ("int", 1) => V::Int(to_int(&a[0])?),
            ("uint", 1) => V::Uint(to_uint(&a[0])?),
            ("double", 1) => V::Double(to_double(&a[0])?),
            ("string", 1) => to_string(&a[0])?,
            ("bytes", 1) => match &a[0] {
                V::Bytes(_) => a[0].clone(),
                V::Str(s) => V::Bytes(s.as_str().as_bytes().into()),
                _ => return Err(EvalErr::no_overload()),
            },
            ("bool", 1) => match &a[0] {
                V::Bool(_) => a[0].clone(),
                V::Str(s) => V::Bool(match s.as_str() {
                    "1" | "t" | "T" | "TRUE" | "true" | "True" => true,
                    "0" | "f" | "F" | "FALSE" | "false" | "False" => false,
                    _ => return Err(conversion("string", "bool")),
                }),
                _ => return Err(EvalErr::no_overload()),
            },
            ("duration", 1) => match &a[0] {
                V::Dur(_) => a[0].clone(),
                V::Str(s) => V::Dur(
                    timeutil::parse_go_duration(s.as_str())
                        .map_err(|_| conversion("string", "google.protobuf.Duration"))?,
                ),
                _ => return Err(EvalErr::no_overload()),
            },
            ("timestamp", 1) => match &a[0] {
                V::Ts(_) => a[0].clone(),
                V::Str(s) => V::Ts(
                    timeutil::parse_rfc3339(s.as_str())
                        .map_err(|_| conversion("string", "google.protobuf.Timestamp"))?,
                ),
                V::Int(i) => V::Ts(Ts::new(*i, 0).map_err(EvalErr::Msg)?),
                _ => return Err(EvalErr::no_overload()),
            },
            ("matches", 2) => {
                let text = s(&a[0])?;
                let re = self.regex(e.id, s(&a[1])?)?;
                self.meter.work(text.len() as u64)?;
                V::Bool(re.is_match(text))
            }
            ("find", 2) => {
                let text = s(&a[0])?;
                let re = self.regex(e.id, s(&a[1])?)?;
                self.meter.work(text.len() as u64)?;
                V::string(re.find(text).map_or("", |m| m.as_str()))
            }
            ("findAll", 2 | 3) => {
                let text = s(&a[0])?;
                let limit = if arity == 3 { int(&a[2])? } else { -1 };
                let re = self.regex(e.id, s(&a[1])?)?;
                self.meter.work(text.len() as u64)?;
                let mut out = Vec::new();
                if limit != 0 {
                    for m in re.find_iter(text) {
                        out.push(V::string(m.as_str()));
                        if limit > 0 && out.len() as i64 >= limit {
                            break;
                        }
                    }
                }
                V::list(out)
            }
            ("contains", 2) if member => V::Bool(s(&a[0])?.contains(s(&a[1])?)),
            ("startsWith", 2) => V::Bool(s(&a[0])?.starts_with(s(&a[1])?)),
            ("endsWith", 2) => V::Bool(s(&a[0])?.ends_with(s(&a[1])?)),
            (
                "getFullYear" | "getMonth" | "getDayOfYear" | "getDayOfMonth" | "getDate"
                | "getDayOfWeek" | "getHours" | "getMinutes" | "getSeconds" | "getMilliseconds",
                1 | 2,
            ) => time_accessor(name, a)?,
            ("charAt", 2) => {
                let text = s(&a[0])?;
                let i = int(&a[1])?;
                let n = text.chars().count();
                let idx = usize::try_from(i)
                    .ok()
                    .filter(|i| *i <= n)
                    .ok_or_else(|| EvalErr::msg(format!("index out of range: {i}")))?;
                V::string(text.chars().nth(idx).map(String::from).unwrap_or_default())
            }
            ("indexOf" | "lastIndexOf", 2 | 3) if matches!(a[0], V::Str(_)) => {
                let text = s(&a[0])?;
                let sub = s(&a[1])?;
                let offset = if arity == 3 { Some(int(&a[2])?) } else { None };
                V::Int(string_index(text, sub, offset, name == "lastIndexOf")?)
            }
            ("lowerAscii", 1) => V::string(s(&a[0])?.to_ascii_lowercase()),
            ("upperAscii", 1) => V::string(s(&a[0])?.to_ascii_uppercase()),
            ("trim", 1) => V::string(s(&a[0])?.trim()),
            ("replace", 3 | 4) => {
                let text = s(&a[0])?;
                let (from, to) = (s(&a[1])?, s(&a[2])?);
                let n = if arity == 4 { int(&a[3])? } else { -1 };
                let out = if n < 0 {
                    guard_len(
                        text.len()
                            .saturating_add(text.len().saturating_add(1).saturating_mul(to.len())),
                    )?;
                    text.replace(from, to)
                } else {
                    guard_len(
                        text.len().saturating_add(
                            usize::try_from(n)
                                .unwrap_or(usize::MAX)
                                .saturating_mul(to.len()),
                        ),
                    )?;
                    text.replacen(from, to, usize::try_from(n).unwrap_or(usize::MAX))
                };
                self.meter.work(out.len() as u64)?;
                V::string(out)
            }
            ("split", 2 | 3) => {
                let text = s(&a[0])?;
                let sep = s(&a[1])?;
                let n = if arity == 3 { int(&a[2])? } else { -1 };
                self.meter.work(text.len() as u64)?;
                V::list(split(text, sep, n).into_iter().map(V::string).collect())
            }
            ("substring", 2 | 3) => {
                let text = s(&a[0])?;
                let chars: Vec<char> = text.chars().collect();
                let n = i64::try_from(chars.len()).unwrap_or(i64::MAX);
                let start = int(&a[1])?;
                let end = if arity == 3 { int(&a[2])? } else { n };
                if start < 0 || start > n {
                    return Err(EvalErr::msg(format!("index out of range: {start}")));
                }
                if end < 0 || end > n {
                    return Err(EvalErr::msg(format!("index out of range: {end}")));
                }
                if start > end {
                    return Err(EvalErr::msg(format!(
                        "invalid substring range. start: {start}, end: {end}"
                    )));
                }
                let (st, en) = (
                    usize::try_from(start).unwrap_or(0),
                    usize::try_from(end).unwrap_or(0),
                );
                V::string(chars[st..en].iter().collect::<String>())
            }
            ("join", 1 | 2) => {
                let V::List(l) = &a[0] else {
                    return Err(EvalErr::no_overload());
                };
                let sep = if arity == 2 { s(&a[1])? } else { "" };
                let mut out = String::new();
                for i in 0..l.len() {
                    if i > 0 {
                        out.push_str(sep);
                    }
                    out.push_str(s(&l.get(i)?)?);
                    guard_len(out.len())?;
                }
                let size = out.chars().count() as u64;
                self.meter.charge(multiply_by_cost_factor(
                    size,
                    2.0 * STRING_TRAVERSAL_COST_FACTOR,
                ))?;
                self.meter.work(out.len() as u64)?;
                V::string(out)
            }
            ("strings.quote", 1) => V::string(quote(s(&a[0])?)),
            ("isSorted", 1) => {
                let items = self.list_items(&a[0])?;
                let mut sorted = true;
                for w in items.windows(2) {
                    if compare(&w[0], &w[1])?.is_gt() {
                        sorted = false;
                        break;
                    }
                }
                V::Bool(sorted)
            }
            ("sum", 1) => {
                let items = self.list_items(&a[0])?;
                let mut acc = match self.overload(e.id) {
                    Some("list_uint_sum_uint") => V::Uint(0),
                    Some("list_double_sum_double") => V::Double(0.0),
                    Some("list_duration_sum_duration") => V::Dur(0),
                    _ => V::Int(0),
                };
                for (i, item) in items.into_iter().enumerate() {
                    acc = if i == 0 && matches!(acc, V::Int(0)) {
                        item
                    } else {
                        self.add(acc, item)?
                    };
                }
                acc
            }
            ("min" | "max", 1) => {
                let items = self.list_items(&a[0])?;
                let mut best: Option<Val<'a>> = None;
                for item in items {
                    best = Some(match best {
                        None => item,
                        Some(b) => {
                            let ord = compare(&b, &item)?;
                            if (name == "min" && ord.is_gt()) || (name == "max" && ord.is_lt()) {
                                item
                            } else {
                                b
                            }
                        }
                    });
                }
                best.ok_or_else(|| EvalErr::msg(format!("{name} called on empty list")))?
            }
            ("indexOf" | "lastIndexOf", 2) => {
                let items = self.list_items(&a[0])?;
                let mut found = -1i64;
                let positions: Box<dyn Iterator<Item = usize>> = if name == "indexOf" {
                    Box::new(0..items.len())
                } else {
                    Box::new((0..items.len()).rev())
                };
                for i in positions {
                    if equals(&items[i], &a[1])? {
                        found = i64::try_from(i).unwrap_or(i64::MAX);
                        break;
                    }
                }
                V::Int(found)
            }
            ("sets.contains" | "sets.intersects" | "sets.equivalent", 2) => {
                let x = self.list_items(&a[0])?;
                let y = self.list_items(&a[1])?;
                self.meter
                    .work((x.len() as u64).saturating_mul(y.len() as u64))?;
                let contains = |x: &[Val<'a>], y: &[Val<'a>]| -> Res<bool> {
                    for b in y {
                        let mut found = false;
                        for c in x {
                            if equals(c, b)? {
                                found = true;
                                break;
                            }
                        }
                        if !found {
                            return Ok(false);
                        }
                    }
                    Ok(true)
                };
                V::Bool(match name {
                    "sets.contains" => contains(&x, &y)?,
                    "sets.equivalent" => contains(&x, &y)? && contains(&y, &x)?,
                    _ => {
                        let mut any = false;
                        'outer: for b in &y {
                            for c in &x {
                                if equals(c, b)? {
                                    any = true;
                                    break 'outer;
                                }
                            }
                        }
                        any
                    }
                })
            }
            ("quantity", 1) => V::Quantity(Rc::new(
                crate::k8slib::Quantity::parse(s(&a[0])?).map_err(EvalErr::Msg)?,
            )),
            ("isQuantity", 1) => V::Bool(crate::k8slib::Quantity::parse(s(&a[0])?).is_ok()),
            ("sign", 1) => V::Int(quantity(&a[0])?.sign()),
            ("isGreaterThan", 2) => V::Bool(quantity(&a[0])?.cmp(quantity(&a[1])?).is_gt()),
            ("isLessThan", 2) => V::Bool(quantity(&a[0])?.cmp(quantity(&a[1])?).is_lt()),
            ("compareTo", 2) => V::Int(match quantity(&a[0])?.cmp(quantity(&a[1])?) {
                std::cmp::Ordering::Less => -1,
                std::cmp::Ordering::Equal => 0,
                std::cmp::Ordering::Greater => 1,
            }),
            ("asApproximateFloat", 1) => V::Double(quantity(&a[0])?.as_f64()),
            ("asInteger", 1) => V::Int(
                quantity(&a[0])?
                    .as_i64()
                    .ok_or_else(|| EvalErr::msg("cannot convert value to integer"))?,
            ),
            ("isInteger", 1) => V::Bool(quantity(&a[0])?.as_i64().is_some()),
            ("add" | "sub", 2) => {
                let lhs = quantity(&a[0])?;
                let rhs = match &a[1] {
                    V::Int(i) => crate::k8slib::Quantity::from_int(*i),
                    other => quantity(other)?.clone(),
                };
                let rhs = if name == "sub" { rhs.negate() } else { rhs };
                V::Quantity(Rc::new(lhs.add(&rhs)))
            }
            ("ip", 1) => match &a[0] {
                V::Str(text) => {
                    V::Ip(crate::k8slib::parse_ip(text.as_str()).map_err(EvalErr::Msg)?)
                }
                V::Cidr(c) => V::Ip(c.addr),
                _ => return Err(EvalErr::no_overload()),
            },
            ("isIP", 1) => V::Bool(crate::k8slib::parse_ip(s(&a[0])?).is_ok()),
            ("ip.isCanonical", 1) => {
                let text = s(&a[0])?;
                let addr = crate::k8slib::parse_ip(text).map_err(EvalErr::Msg)?;
                V::Bool(addr.to_string() == text)
            }
            ("family", 1) => V::Int(crate::k8slib::ip_family(ip(&a[0])?)),
            ("isUnspecified", 1) => V::Bool(ip(&a[0])?.is_unspecified()),
            ("isLoopback", 1) => V::Bool(ip(&a[0])?.is_loopback()),
            ("isLinkLocalMulticast", 1) => {
                V::Bool(crate::k8slib::is_link_local_multicast(ip(&a[0])?))
            }
            ("isLinkLocalUnicast", 1) => V::Bool(crate::k8slib::is_link_local_unicast(ip(&a[0])?)),
            ("isGlobalUnicast", 1) => V::Bool(crate::k8slib::is_global_unicast(ip(&a[0])?)),
            ("cidr", 1) => V::Cidr(crate::k8slib::parse_cidr(s(&a[0])?).map_err(EvalErr::Msg)?),
            ("isCIDR", 1) => V::Bool(crate::k8slib::parse_cidr(s(&a[0])?).is_ok()),
            ("containsIP", 2) => {
                let c = cidr(&a[0])?;
                let addr = match &a[1] {
                    V::Str(text) => crate::k8slib::parse_ip(text.as_str()).map_err(EvalErr::Msg)?,
                    other => ip(other)?,
                };
                V::Bool(c.contains(addr))
            }
            ("containsCIDR", 2) => {
                let c = cidr(&a[0])?;
                let other = match &a[1] {
                    V::Str(text) => {
                        crate::k8slib::parse_cidr(text.as_str()).map_err(EvalErr::Msg)?
                    }
                    other => cidr(other)?,
                };
                V::Bool(c.contains_cidr(other))
            }
            ("masked", 1) => V::Cidr(cidr(&a[0])?.masked()),
            ("prefixLength", 1) => V::Int(i64::from(cidr(&a[0])?.bits)),
            ("url", 1) => {
                let text = s(&a[0])?;
                let u = crate::k8slib::parse_request_uri(text).map_err(|e| {
                    EvalErr::msg(format!(
                        "URL parse error during conversion from string: {e}"
                    ))
                })?;
                V::Url(Rc::new(u))
            }
            ("isURL", 1) => V::Bool(crate::k8slib::parse_request_uri(s(&a[0])?).is_ok()),
            ("getScheme" | "getHost" | "getHostname" | "getPort" | "getEscapedPath", 1) => {
                let V::Url(u) = &a[0] else {
                    return Err(EvalErr::no_overload());
                };
                V::string(match name {
                    "getScheme" => u.scheme.clone(),
                    "getHost" => u.host.clone(),
                    "getHostname" => u.hostname(),
                    "getPort" => u.port(),
                    _ => u.raw_path.clone(),
                })
            }
            ("getQuery", 1) => {
                let V::Url(u) = &a[0] else {
                    return Err(EvalErr::no_overload());
                };
                let entries = u
                    .query()
                    .into_iter()
                    .map(|(k, vs)| {
                        (
                            V::string(k),
                            V::list(vs.into_iter().map(V::string).collect()),
                        )
                    })
                    .collect();
                V::Map(MapV::Built(Rc::new(entries)))
            }
            ("validate", 2) => {
                let V::Format(f) = &a[0] else {
                    return Err(EvalErr::no_overload());
                };
                let errs = crate::k8slib::validate_format(f, s(&a[1])?);
                if errs.is_empty() {
                    V::Opt(None)
                } else {
                    V::Opt(Some(Rc::new(V::list(
                        errs.into_iter().map(V::string).collect(),
                    ))))
                }
            }
            ("format.named", 1) => {
                let wanted = s(&a[0])?;
                V::Opt(
                    crate::k8slib::FORMATS
                        .iter()
                        .find(|(n, _)| *n == wanted)
                        .map(|(n, _)| Rc::new(V::Format(n))),
                )
            }
            (f, 0) if f.starts_with("format.") => {
                let wanted = &f["format.".len()..];
                match crate::k8slib::FORMATS.iter().find(|(n, _)| *n == wanted) {
                    Some((n, _)) => V::Format(n),
                    None => return Err(EvalErr::no_overload()),
                }
            }
            (crate::ext_macros::MAP_INSERT, 2 | 3) => {
                let mut args = args;
                let (map, entries) = if arity == 3 {
                    let v = args.pop().ok_or_else(EvalErr::no_overload)?;
                    let k = args.pop().ok_or_else(EvalErr::no_overload)?;
                    (args.pop(), vec![(k, v)])
                } else {
                    let other = args.pop().ok_or_else(EvalErr::no_overload)?;
                    let V::Map(m) = other else {
                        return Err(EvalErr::no_overload());
                    };
                    let mut entries = Vec::new();
                    for k in m.keys() {
                        let v = m.find(&k)?.ok_or_else(EvalErr::no_overload)?;
                        entries.push((k, v));
                    }
                    (args.pop(), entries)
                };
                let Some(V::Map(map)) = map else {
                    return Err(EvalErr::no_overload());
                };
                let mut built: Vec<(Val<'a>, Val<'a>)> = match map {
                    MapV::Built(rc) => Rc::try_unwrap(rc).unwrap_or_else(|rc| (*rc).clone()),
                    json @ MapV::Json(..) => {
                        let mut out = Vec::new();
                        for k in json.keys() {
                            let v = json.find(&k)?.ok_or_else(EvalErr::no_overload)?;
                            out.push((k, v));
                        }
                        out
                    }
                };
                for (k, v) in entries {
                    self.meter.work(built.len() as u64 + 1)?;
                    for (ek, _) in &built {
                        if equals(ek, &k)? {
                            return Err(EvalErr::msg(format!(
                                "insert failed: key {} already exists",
                                display_key(&k)
                            )));
                        }
                    }
                    built.push((k, v));
                }
                return Ok(V::Map(MapV::Built(Rc::new(built))));
            }
            ("optional.of", 1) => V::Opt(Some(Rc::new(a[0].clone()))),
            ("optional.ofNonZeroValue", 1) => {
                if is_zero(&a[0]) {
                    V::Opt(None)
                } else {
                    V::Opt(Some(Rc::new(a[0].clone())))
                }
            }
            ("optional.none", 0) => V::Opt(None),
            ("hasValue", 1) => match &a[0] {
                V::Opt(o) => V::Bool(o.is_some()),
                _ => return Err(EvalErr::no_overload()),
            },
            ("value", 1) => match &a[0] {
                V::Opt(Some(v)) => (**v).clone(),
                V::Opt(None) => return Err(EvalErr::msg("optional.none() dereference")),
                _ => return Err(EvalErr::no_overload()),
            },
            ("or", 2) => match &a[0] {
                V::Opt(Some(_)) => a[0].clone(),
                V::Opt(None) => a[1].clone(),
                _ => return Err(EvalErr::no_overload()),
            },
            ("orValue", 2) => match &a[0] {
                V::Opt(Some(v)) => (**v).clone(),
                V::Opt(None) => a[1].clone(),
                _ => return Err(EvalErr::no_overload()),
            },
            _ => return Err(EvalErr::no_overload()),
        };
        Ok(r)
    }

    fn list_items(&mut self, v: &Val<'a>) -> Res<Vec<Val<'a>>> {
        match v {
            Val::List(l) => {
                self.meter.work(l.len() as u64)?;
                l.items()
            }
            _ => Err(EvalErr::no_overload()),
        }
    }

    fn index(&mut self, container: &Val<'a>, key: &Val<'a>) -> Res<Val<'a>> {
        match container {
            Val::List(l) => {
                let i = as_index(key)?;
                let n = l.len();
                match usize::try_from(i).ok().filter(|i| *i < n) {
                    Some(i) => l.get(i),
                    None => Err(EvalErr::msg(format!("index out of bounds: {i}"))),
                }
            }
            Val::Map(m) => m
                .find(key)?
                .ok_or_else(|| EvalErr::msg(format!("no such key: {}", display_key(key)))),
            Val::Obj(m, d) => match key {
                Val::Str(k) => obj_field(m, d, k.as_str())?
                    .ok_or_else(|| EvalErr::msg(format!("no such key: {}", k.as_str()))),
                _ => Err(EvalErr::no_overload()),
            },
            _ => Err(EvalErr::no_overload()),
        }
    }

    fn add(&mut self, lhs: Val<'a>, rhs: Val<'a>) -> Res<Val<'a>> {
        use Val as V;
        Ok(match (lhs, rhs) {
            (V::Int(x), V::Int(y)) => V::Int(
                x.checked_add(y)
                    .ok_or_else(|| EvalErr::msg("integer overflow"))?,
            ),
            (V::Uint(x), V::Uint(y)) => V::Uint(
                x.checked_add(y)
                    .ok_or_else(|| EvalErr::msg("unsigned integer overflow"))?,
            ),
            (V::Double(x), V::Double(y)) => V::Double(x + y),
            (V::Str(x), V::Str(y)) => {
                let (x, y) = (x.as_str(), y.as_str());
                guard_len(x.len() + y.len())?;
                self.meter.work((x.len() + y.len()) as u64 / 8)?;
                V::string(format!("{x}{y}"))
            }
            (V::Bytes(x), V::Bytes(y)) => {
                guard_len(x.len() + y.len())?;
                self.meter.work((x.len() + y.len()) as u64 / 8)?;
                let mut v = x.to_vec();
                v.extend_from_slice(&y);
                V::Bytes(v.into())
            }
            (V::Ts(t), V::Dur(d)) | (V::Dur(d), V::Ts(t)) => V::Ts(t.add(d).map_err(EvalErr::Msg)?),
            (V::Dur(x), V::Dur(y)) => V::Dur(
                x.checked_add(y)
                    .ok_or_else(|| EvalErr::msg("duration overflow"))?,
            ),
            (V::List(x), V::List(y)) => self.add_lists(x, &y)?,
            _ => return Err(EvalErr::no_overload()),
        })
    }

    /// `X + Y`: concatenation, or for set and map lists the union and merge of kube's
    /// `unstructuredSetList.Add` and `unstructuredMapList.Add`.
    fn add_lists(&mut self, x: List<'a>, y: &List<'a>) -> Res<Val<'a>> {
        let sem = x.sem();
        let mut built: Built<'a> = match x {
            List::Built(rc) => match Rc::try_unwrap(rc) {
                Ok(b) => b,
                Err(rc) => {
                    self.meter.work(COPY_WORK * rc.items.len() as u64)?;
                    (*rc).clone()
                }
            },
            json @ List::Json(..) => {
                self.meter.work(COPY_WORK * json.len() as u64)?;
                Built {
                    items: json.items()?,
                    sem,
                }
            }
        };
        self.meter.work(COPY_WORK * y.len() as u64)?;
        match sem {
            Sem::Atomic => {
                for i in 0..y.len() {
                    built.items.push(y.get(i)?);
                }
            }
            Sem::Set | Sem::Map(_) => {
                self.meter.work(built.items.len() as u64)?;
                let mut index: HashMap<String, usize> = HashMap::with_capacity(built.items.len());
                for (i, v) in built.items.iter().enumerate() {
                    index.insert(item_key(v, sem)?, i);
                }
                for i in 0..y.len() {
                    let v = y.get(i)?;
                    let k = item_key(&v, sem)?;
                    match index.get(&k) {
                        Some(&pos) => {
                            if matches!(sem, Sem::Map(_)) {
                                built.items[pos] = v;
                            }
                        }
                        None => {
                            index.insert(k, built.items.len());
                            built.items.push(v);
                        }
                    }
                }
            }
        }
        Ok(Val::List(List::Built(Rc::new(built))))
    }
}

fn guard_len(n: usize) -> Res<()> {
    if n > MAX_BUILT_LEN {
        return Err(EvalErr::Fuse);
    }
    Ok(())
}

fn display_key(k: &Val<'_>) -> String {
    match k {
        Val::Str(s) => s.as_str().to_owned(),
        Val::Int(i) => i.to_string(),
        Val::Uint(u) => u.to_string(),
        Val::Bool(b) => b.to_string(),
        Val::Double(d) => go_float(*d),
        other => other.type_name().to_owned(),
    }
}

/// `traversalCost` of kube's list library.
fn traversal_cost(v: &Val<'_>) -> Res<u64> {
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss,
        reason = "kube truncates"
    )]
    let trunc = |n: usize| (n as f64 * STRING_TRAVERSAL_COST_FACTOR) as u64;
    Ok(match v {
        Val::Str(s) => trunc(s.as_str().len()),
        Val::Bytes(b) => trunc(b.len()),
        Val::List(l) => {
            let mut c = 0u64;
            for i in 0..l.len() {
                c = c.saturating_add(traversal_cost(&l.get(i)?)?);
            }
            c
        }
        _ => 1,
    })
}

fn conversion(from: &str, to: &str) -> EvalErr {
    EvalErr::msg(format!("type conversion error from '{from}' to '{to}'"))
}

fn is_zero(v: &Val<'_>) -> bool {
    match v {
        Val::Null => true,
        Val::Bool(b) => !b,
        Val::Int(i) => *i == 0,
        Val::Uint(u) => *u == 0,
        Val::Double(d) => *d == 0.0,
        Val::Str(s) => s.as_str().is_empty(),
        Val::Bytes(b) => b.is_empty(),
        Val::Dur(d) => *d == 0,
        Val::Ts(t) => t.secs == crate::timeutil::MIN_UNIX && t.nanos == 0,
        other => other.size() == Some(0),
    }
}

fn to_int(v: &Val<'_>) -> Res<i64> {
    match v {
        Val::Int(i) => Ok(*i),
        Val::Uint(u) => i64::try_from(*u).map_err(|_| EvalErr::msg("integer overflow")),
        Val::Double(d) => {
            if !(*d > -9.223_372_036_854_776e18 && *d < 9.223_372_036_854_776e18) {
                return Err(EvalErr::msg("integer overflow"));
            }
            #[allow(clippy::cast_possible_truncation, reason = "range checked")]
            let i = *d as i64;
            Ok(i)
        }
        Val::Str(s) => s.as_str().parse().map_err(|_| conversion("string", "int")),
        Val::Ts(t) => Ok(t.secs),
        _ => Err(EvalErr::no_overload()),
    }
}

fn to_uint(v: &Val<'_>) -> Res<u64> {
    match v {
        Val::Uint(u) => Ok(*u),
        Val::Int(i) => u64::try_from(*i).map_err(|_| EvalErr::msg("unsigned integer overflow")),
        Val::Double(d) => {
            if !(*d >= 0.0 && *d < 1.844_674_407_370_955_2e19) {
                return Err(EvalErr::msg("unsigned integer overflow"));
            }
            #[allow(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                reason = "range checked"
            )]
            let u = *d as u64;
            Ok(u)
        }
        Val::Str(s) => s.as_str().parse().map_err(|_| conversion("string", "uint")),
        _ => Err(EvalErr::no_overload()),
    }
}

#[allow(clippy::cast_precision_loss, reason = "CEL's int to double conversion")]
fn to_double(v: &Val<'_>) -> Res<f64> {
    match v {
        Val::Double(d) => Ok(*d),
        Val::Int(i) => Ok(*i as f64),
        Val::Uint(u) => Ok(*u as f64),
        Val::Str(s) => s
            .as_str()
            .parse()
            .map_err(|_| conversion("string", "double")),
        _ => Err(EvalErr::no_overload()),
    }
}

fn to_string<'a>(v: &Val<'a>) -> Res<Val<'a>> {
    Ok(match v {
        Val::Str(_) => v.clone(),
        Val::Int(i) => Val::string(i.to_string()),
        Val::Uint(u) => Val::string(u.to_string()),
        Val::Double(d) => Val::string(go_float(*d)),
        Val::Bool(b) => Val::string(b.to_string()),
        Val::Bytes(b) => Val::string(
            std::str::from_utf8(b)
                .map_err(|_| EvalErr::msg("invalid UTF-8 in bytes, cannot convert to string"))?,
        ),
        Val::Ts(t) => Val::string(t.format()),
        Val::Dur(d) => Val::string(timeutil::format_duration(*d)),
        Val::Ip(a) => Val::string(a.to_string()),
        Val::Cidr(c) => Val::string(c.format()),
        _ => return Err(EvalErr::no_overload()),
    })
}

fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn split(text: &str, sep: &str, n: i64) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    if sep.is_empty() {
        let chars: Vec<String> = text.chars().map(String::from).collect();
        if n > 0 && chars.len() as i64 > n {
            let k = usize::try_from(n - 1).unwrap_or(0);
            let mut out: Vec<String> = chars[..k].to_vec();
            out.push(chars[k..].concat());
            return out;
        }
        return chars;
    }
    if n < 0 {
        text.split(sep).map(String::from).collect()
    } else {
        text.splitn(usize::try_from(n).unwrap_or(usize::MAX), sep)
            .map(String::from)
            .collect()
    }
}

/// `indexOf`/`lastIndexOf` of the strings extension, in code points.
fn string_index(text: &str, sub: &str, offset: Option<i64>, last: bool) -> Res<i64> {
    let chars: Vec<char> = text.chars().collect();
    let subc: Vec<char> = sub.chars().collect();
    let n = chars.len() as i64;
    let m = subc.len() as i64;
    let off = offset.unwrap_or(if last { n } else { 0 });
    if off < 0 || off > n {
        return Err(EvalErr::msg(format!("index out of range: {off}")));
    }
    if m == 0 {
        return Ok(off);
    }
    let matches_at = |i: i64| {
        let i = usize::try_from(i).unwrap_or(usize::MAX);
        chars.get(i..i + subc.len()) == Some(&subc[..])
    };
    if last {
        let mut i = off.min(n - m);
        while i >= 0 {
            if matches_at(i) {
                return Ok(i);
            }
            i -= 1;
        }
    } else {
        let mut i = off;
        while i + m <= n {
            if matches_at(i) {
                return Ok(i);
            }
            i += 1;
        }
    }
    Ok(-1)
}

fn time_accessor<'a>(name: &str, a: &[Val<'a>]) -> Res<Val<'a>> {
    let tz = match a.get(1) {
        Some(Val::Str(s)) => s.as_str(),
        Some(_) => return Err(EvalErr::no_overload()),
        None => "",
    };
    match &a[0] {
        Val::Dur(d) => {
            let d = *d;
            Ok(Val::Int(match name {
                "getHours" => d / 3_600_000_000_000,
                "getMinutes" => d / 60_000_000_000,
                "getSeconds" => d / 1_000_000_000,
                "getMilliseconds" => d / 1_000_000,
                _ => return Err(EvalErr::no_overload()),
            }))
        }
        Val::Ts(t) => {
            let dt = t.in_zone(tz).map_err(EvalErr::Msg)?;
            Ok(Val::Int(match name {
                "getFullYear" => i64::from(dt.year()),
                "getMonth" => i64::from(u8::from(dt.month())) - 1,
                "getDayOfYear" => i64::from(dt.ordinal()) - 1,
                "getDayOfMonth" => i64::from(dt.day()) - 1,
                "getDate" => i64::from(dt.day()),
                "getDayOfWeek" => i64::from(dt.weekday().number_days_from_sunday()),
                "getHours" => i64::from(dt.hour()),
                "getMinutes" => i64::from(dt.minute()),
                "getSeconds" => i64::from(dt.second()),
                "getMilliseconds" => i64::from(dt.nanosecond() / 1_000_000),
                _ => return Err(EvalErr::no_overload()),
            }))
        }
        _ => Err(EvalErr::no_overload()),
    }
}
