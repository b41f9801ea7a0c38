//! The type checker: cel-go's `checker/checker.go` over cel-rust's parsed AST, with the
//! declarations of [`crate::functions`] and the variables `self` and `oldSelf` typed from the
//! structural schema.

use std::collections::HashMap;

use cel::common::ast::{
    CallExpr, ComprehensionExpr, EntryExpr, Expr, IdedExpr, LiteralValue, SelectExpr,
};

use crate::functions::{FUNCTIONS, Overload, TYPE_PARAMS, type_ident};
use crate::types::{Subst, Ty, most_general};

/// Deepest expression tree the checker accepts: long operator chains (`a + a + …`) nest
/// without nesting parentheses; the interpreter and the estimator recurse over the tree.
const MAX_DEPTH: u32 = 300;
/// The error of [`MAX_DEPTH`].
pub(crate) const RECURSION_ERROR: &str = "expression recursion limit exceeded";

/// A type error at an expression.
#[derive(Debug)]
pub(crate) struct CheckError {
    pub(crate) id: u64,
    pub(crate) msg: String,
}

/// The result of checking: types and resolved overloads by expression id.
#[derive(Debug, Default)]
pub(crate) struct Checked {
    pub(crate) types: HashMap<u64, Ty>,
    pub(crate) overloads: HashMap<u64, Vec<&'static str>>,
    /// Identifiers and field selections that name a type (`int`, `net.IP`): the type's name.
    pub(crate) type_names: HashMap<u64, &'static str>,
    /// Calls of namespaced functions written as member calls (`sets.contains(a, b)`,
    /// `strings.quote(s)`): the function's full name.
    pub(crate) namespaced: HashMap<u64, &'static str>,
    /// The expression refers to `oldSelf`.
    pub(crate) uses_old_self: bool,
}

impl Checked {
    pub(crate) fn ty(&self, id: u64) -> Ty {
        self.types.get(&id).cloned().unwrap_or(Ty::Dyn)
    }
}

struct Checker<'v> {
    vars: &'v [(&'static str, Ty)],
    scopes: Vec<(String, Ty)>,
    subst: Subst,
    next_var: u32,
    out: Checked,
    errors: Vec<CheckError>,
    depth: u32,
}

/// Type-checks `expr` with the variables `vars`.
pub(crate) fn check(
    expr: &IdedExpr,
    vars: &[(&'static str, Ty)],
) -> Result<Checked, Vec<CheckError>> {
    let mut c = Checker {
        vars,
        scopes: Vec::new(),
        subst: Subst::default(),
        next_var: 0,
        out: Checked::default(),
        errors: Vec::new(),
        depth: 0,
    };
    c.check(expr);
    if !c.errors.is_empty() {
        return Err(c.errors);
    }
    let subst = c.subst;
    for t in c.out.types.values_mut() {
        *t = subst.substitute(t, true);
    }
    Ok(c.out)
}

/// `a.b.c` as a qualified name.
fn qualified_name(e: &IdedExpr) -> Option<String> {
    match &e.expr {
        Expr::Ident(n) => Some(n.clone()),
        Expr::Select(SelectExpr {
            operand,
            field,
            test: false,
        }) => qualified_name(operand).map(|q| format!("{q}.{field}")),
        _ => None,
    }
}

impl Checker<'_> {
    fn set(&mut self, id: u64, t: Ty) -> Ty {
        self.out.types.insert(id, t.clone());
        t
    }

    fn err(&mut self, id: u64, msg: String) {
        self.errors.push(CheckError { id, msg });
    }

    fn fresh(&mut self) -> Ty {
        let t = Ty::Param(self.next_var);
        self.next_var += 1;
        t
    }

    fn check(&mut self, e: &IdedExpr) -> Ty {
        self.depth += 1;
        let t = if self.depth > MAX_DEPTH {
            self.err(e.id, RECURSION_ERROR.to_owned());
            Ty::Error
        } else {
            self.check_inner(e)
        };
        self.depth -= 1;
        self.set(e.id, t)
    }

    fn check_inner(&mut self, e: &IdedExpr) -> Ty {
        match &e.expr {
            Expr::Literal(lit) => match lit {
                LiteralValue::Boolean(_) => Ty::Bool,
                LiteralValue::Bytes(_) => Ty::Bytes,
                LiteralValue::Double(_) => Ty::Double,
                LiteralValue::Int(_) => Ty::Int,
                LiteralValue::Null => Ty::Null,
                LiteralValue::String(_) => Ty::String,
                LiteralValue::UInt(_) => Ty::Uint,
            },
            Expr::Ident(name) => self.check_ident(e.id, name),
            Expr::Select(sel) => self.check_select(e, sel),
            Expr::Call(call) => self.check_call(e.id, call),
            Expr::List(list) => {
                let mut elem: Option<Ty> = None;
                for (i, el) in list.elements.iter().enumerate() {
                    let mut t = self.check(el);
                    if list.optional_indices.contains(&i) {
                        let s = self.subst.substitute(&t, false);
                        match s {
                            Ty::Optional(inner) => t = *inner,
                            Ty::Dyn => {}
                            other => self.err(
                                el.id,
                                format!(
                                    "expected type '{}' but found '{other}'",
                                    Ty::Optional(Box::new(other.clone()))
                                ),
                            ),
                        }
                    }
                    elem = Some(self.join(el.id, elem, t));
                }
                let elem = match elem {
                    Some(t) => t,
                    None => self.fresh(),
                };
                Ty::List(Box::new(elem))
            }
            Expr::Map(map) => {
                let (mut kt, mut vt): (Option<Ty>, Option<Ty>) = (None, None);
                for entry in &map.entries {
                    match &entry.expr {
                        EntryExpr::MapEntry(me) => {
                            let k = self.check(&me.key);
                            kt = Some(self.join(me.key.id, kt, k));
                            let mut v = self.check(&me.value);
                            if me.optional
                                && let Ty::Optional(inner) = self.subst.substitute(&v, false)
                            {
                                v = *inner;
                            }
                            vt = Some(self.join(me.value.id, vt, v));
                        }
                        EntryExpr::StructField(_) => {
                            self.err(entry.id, "unexpected struct field in map".to_owned());
                        }
                    }
                }
                match (kt, vt) {
                    (Some(k), Some(v)) => Ty::Map(Box::new(k), Box::new(v)),
                    _ => {
                        let (k, v) = (self.fresh(), self.fresh());
                        Ty::Map(Box::new(k), Box::new(v))
                    }
                }
            }
            Expr::Struct(s) => {
                for entry in &s.entries {
                    if let EntryExpr::StructField(f) = &entry.expr {
                        self.check(&f.value);
                    }
                }
                self.err(
                    e.id,
                    format!(
                        "undeclared reference to '{}' (in container '')",
                        s.type_name
                    ),
                );
                Ty::Error
            }
            Expr::Comprehension(comp) => self.check_comprehension(comp),
            Expr::Unspecified => {
                self.err(e.id, "unexpected unspecified type: ".to_owned());
                Ty::Error
            }
        }
    }

    fn check_ident(&mut self, id: u64, name: &str) -> Ty {
        if let Some((_, t)) = self.scopes.iter().rev().find(|(n, _)| n == name) {
            return t.clone();
        }
        if let Some((_, t)) = self.vars.iter().find(|(n, _)| *n == name) {
            if name == "oldSelf" {
                self.out.uses_old_self = true;
            }
            return t.clone();
        }
        if let Some((type_name, t)) = type_ident(name) {
            self.out.type_names.insert(id, type_name);
            return Ty::Type(Some(Box::new(t)));
        }
        self.err(
            id,
            format!("undeclared reference to '{name}' (in container '')"),
        );
        Ty::Error
    }

    fn check_select(&mut self, e: &IdedExpr, sel: &SelectExpr) -> Ty {
        if !sel.test
            && let Some((type_name, t)) = qualified_name(e).and_then(|q| type_ident(&q))
        {
            self.out.type_names.insert(e.id, type_name);
            return Ty::Type(Some(Box::new(t)));
        }
        let result = self.select_field(e.id, &sel.operand, &sel.field, false);
        if sel.test {
            Ty::Bool
        } else {
            self.subst.substitute(&result, false)
        }
    }

    fn select_field(&mut self, id: u64, operand: &IdedExpr, field: &str, optional: bool) -> Ty {
        let ot = self.check(operand);
        let ot = self.subst.substitute(&ot, false);
        let (target, is_opt) = match ot {
            Ty::Optional(inner) => (*inner, true),
            other => (other, false),
        };
        let result = match &target {
            Ty::Map(_, v) => (**v).clone(),
            Ty::Object(decl) => match decl.field(field) {
                Some(f) => Ty::of_decl(&f.decl),
                None => {
                    self.err(id, format!("undefined field '{field}'"));
                    Ty::Error
                }
            },
            Ty::Param(_) => {
                self.subst.assign(&Ty::Dyn, &target);
                Ty::Dyn
            }
            t if t.is_dyn_or_error() => Ty::Dyn,
            t => {
                self.err(id, format!("type '{t}' does not support field selection"));
                Ty::Dyn
            }
        };
        if is_opt || optional {
            Ty::Optional(Box::new(result))
        } else {
            result
        }
    }

    fn check_call(&mut self, id: u64, call: &CallExpr) -> Ty {
        let name = call.func_name.as_str();
        if name == "_?._" {
            let field = match call.args.get(1).map(|a| &a.expr) {
                Some(Expr::Literal(LiteralValue::String(s))) => Some(s.inner().to_owned()),
                _ => None,
            };
            let (Some(operand), Some(field)) = (call.args.first(), field) else {
                self.err(id, "unsupported optional field selection".to_owned());
                return Ty::Error;
            };
            let t = self.select_field(id, operand, &field, true);
            if let Some(f) = call.args.get(1) {
                self.set(f.id, Ty::String);
            }
            self.out.overloads.insert(id, vec!["select_optional_field"]);
            return self.subst.substitute(&t, false);
        }
        if let Some(target) = &call.target {
            if let Some(q) = qualified_name(target) {
                let qualified = format!("{q}.{name}");
                if let Some((fname, overloads)) = FUNCTIONS.get_key_value(qualified.as_str()) {
                    self.out.namespaced.insert(id, fname);
                    for a in &call.args {
                        self.check(a);
                    }
                    return self.resolve(id, fname, overloads, None, &call.args);
                }
            }
            for a in &call.args {
                self.check(a);
            }
            self.check(target);
            match FUNCTIONS.get_key_value(name) {
                Some((fname, overloads)) => {
                    self.resolve(id, fname, overloads, Some(target), &call.args)
                }
                None => {
                    self.err(
                        id,
                        format!("undeclared reference to '{name}' (in container '')"),
                    );
                    Ty::Error
                }
            }
        } else {
            let types: Vec<Ty> = call.args.iter().map(|a| self.check(a)).collect();
            if name == "_&&_" || name == "_||_" {
                let mut ok = true;
                for (a, t) in call.args.iter().zip(types) {
                    if !self.subst.assign(&t, &Ty::Bool) {
                        self.err(a.id, format!("expected type 'bool' but found '{t}'"));
                        ok = false;
                    }
                }
                let id_name = if name == "_&&_" {
                    "logical_and"
                } else {
                    "logical_or"
                };
                self.out.overloads.insert(id, vec![id_name]);
                return if ok { Ty::Bool } else { Ty::Error };
            }
            match FUNCTIONS.get_key_value(name) {
                Some((fname, overloads)) => self.resolve(id, fname, overloads, None, &call.args),
                None => {
                    self.err(
                        id,
                        format!("undeclared reference to '{name}' (in container '')"),
                    );
                    Ty::Error
                }
            }
        }
    }

    fn instantiate(&self, t: &Ty, base: u32) -> Ty {
        match t {
            Ty::Param(n) => Ty::Param(base + n),
            Ty::List(e) => Ty::List(Box::new(self.instantiate(e, base))),
            Ty::Optional(e) => Ty::Optional(Box::new(self.instantiate(e, base))),
            Ty::Type(Some(e)) => Ty::Type(Some(Box::new(self.instantiate(e, base)))),
            Ty::Map(k, v) => Ty::Map(
                Box::new(self.instantiate(k, base)),
                Box::new(self.instantiate(v, base)),
            ),
            other => other.clone(),
        }
    }

    fn resolve(
        &mut self,
        id: u64,
        name: &str,
        overloads: &[Overload],
        target: Option<&IdedExpr>,
        args: &[IdedExpr],
    ) -> Ty {
        let mut arg_types = Vec::with_capacity(args.len() + 1);
        if let Some(t) = target {
            arg_types.push(self.out.ty(t.id));
        }
        arg_types.extend(args.iter().map(|a| self.out.ty(a.id)));
        let mut result: Option<Ty> = None;
        let mut ids = Vec::new();
        for ov in overloads {
            if ov.member != target.is_some() || ov.args.len() != arg_types.len() {
                continue;
            }
            let base = self.next_var;
            self.next_var += TYPE_PARAMS;
            let params: Vec<Ty> = ov.args.iter().map(|t| self.instantiate(t, base)).collect();
            if self.subst.assign_list(&arg_types, &params) {
                ids.push(ov.id);
                let r = self
                    .subst
                    .substitute(&self.instantiate(&ov.result, base), false);
                result = Some(match result {
                    None => r,
                    Some(prev) if !matches!(prev, Ty::Dyn) && !r.exact(&prev) => Ty::Dyn,
                    Some(prev) => prev,
                });
            }
        }
        match result {
            Some(t) => {
                self.out.overloads.insert(id, ids);
                t
            }
            None => {
                let shown: Vec<String> = arg_types
                    .iter()
                    .map(|t| self.subst.substitute(t, true).to_string())
                    .collect();
                let sig = if target.is_some() {
                    format!("{}.({})", shown[0], shown[1..].join(", "))
                } else {
                    format!("({})", shown.join(", "))
                };
                self.err(
                    id,
                    format!("found no matching overload for '{name}' applied to '{sig}'"),
                );
                Ty::Error
            }
        }
    }

    fn join(&mut self, id: u64, previous: Option<Ty>, current: Ty) -> Ty {
        let Some(prev) = previous else {
            return current;
        };
        if self.subst.assign(&prev, &current) {
            return most_general(&prev, &current);
        }
        self.err(id, format!("expected type '{prev}' but found '{current}'"));
        Ty::Error
    }

    fn check_comprehension(&mut self, comp: &ComprehensionExpr) -> Ty {
        let range = self.check(&comp.iter_range);
        let accu = self.check(&comp.accu_init);
        let range = self.subst.substitute(&range, false);
        let (var, var2) = match &range {
            Ty::List(e) => {
                if comp.iter_var2.is_some() {
                    (Ty::Int, Some((**e).clone()))
                } else {
                    ((**e).clone(), None)
                }
            }
            Ty::Map(k, v) => ((**k).clone(), Some((**v).clone())),
            Ty::Dyn | Ty::Error | Ty::Param(_) => {
                self.subst.assign(&Ty::Dyn, &range);
                (Ty::Dyn, Some(Ty::Dyn))
            }
            other => {
                self.err(
                    comp.iter_range.id,
                    format!(
                        "expression of type '{other}' cannot be range of a comprehension (must be list, map, or dynamic)"
                    ),
                );
                (Ty::Error, Some(Ty::Error))
            }
        };
        let scope_len = self.scopes.len();
        self.scopes.push((comp.accu_var.clone(), accu.clone()));
        self.scopes.push((comp.iter_var.clone(), var));
        if let Some(v2) = &comp.iter_var2 {
            self.scopes.push((v2.clone(), var2.unwrap_or(Ty::Dyn)));
        }
        let cond = self.check(&comp.loop_cond);
        self.assert_type(comp.loop_cond.id, &Ty::Bool, &cond);
        let step = self.check(&comp.loop_step);
        self.assert_type(comp.loop_step.id, &accu, &step);
        self.scopes.truncate(scope_len + 1);
        let result = self.check(&comp.result);
        self.scopes.truncate(scope_len);
        self.subst.substitute(&result, false)
    }

    fn assert_type(&mut self, id: u64, expected: &Ty, actual: &Ty) {
        if !self.subst.assign(expected, actual) {
            self.err(
                id,
                format!("expected type '{expected}' but found '{actual}'"),
            );
        }
    }
}
