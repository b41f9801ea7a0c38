//! The two-variable comprehension macros of cel-go's `ext.TwoVarComprehensions` (enabled in
//! kube-apiserver 1.32): `all(i, v, p)`, `exists(i, v, p)`, `existsOne`/`exists_one(i, v, p)`,
//! `transformList(i, v, [filter,] e)`, `transformMap(k, v, [filter,] e)` and
//! `transformMapEntry(k, v, [filter,] {k2: v2})`. cel-rust's parser expands only the
//! standard macros, so these calls are rewritten after parsing.

use cel::common::ast::{
    CallExpr, ComprehensionExpr, EntryExpr, Expr, IdedExpr, ListExpr, LiteralValue, MapExpr,
    SourceInfo,
};

const ACCU: &str = "@result";
/// The map insertion helper of `transformMap`/`transformMapEntry`.
pub(crate) const MAP_INSERT: &str = "cel.@mapInsert";

struct Rewriter<'s> {
    next_id: u64,
    info: &'s mut SourceInfo,
    error: Option<(u64, String)>,
}

/// Rewrites the macros in place; the error is `(expression id, message)`.
pub(crate) fn expand(expr: &mut IdedExpr, info: &mut SourceInfo) -> Result<(), (u64, String)> {
    let mut max = 0;
    max_id(expr, &mut max);
    let mut r = Rewriter {
        next_id: max + 1,
        info,
        error: None,
    };
    r.walk(expr, 0);
    match r.error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

fn max_id(e: &IdedExpr, max: &mut u64) {
    let mut stack = vec![e];
    while let Some(e) = stack.pop() {
        *max = (*max).max(e.id);
        match &e.expr {
            Expr::Call(c) => {
                stack.extend(c.target.as_deref());
                stack.extend(c.args.iter());
            }
            Expr::Select(s) => stack.push(&s.operand),
            Expr::List(l) => stack.extend(l.elements.iter()),
            Expr::Map(m) => {
                for en in &m.entries {
                    *max = (*max).max(en.id);
                    if let EntryExpr::MapEntry(me) = &en.expr {
                        stack.push(&me.key);
                        stack.push(&me.value);
                    }
                }
            }
            Expr::Struct(s) => {
                for en in &s.entries {
                    *max = (*max).max(en.id);
                    if let EntryExpr::StructField(f) = &en.expr {
                        stack.push(&f.value);
                    }
                }
            }
            Expr::Comprehension(c) => {
                stack.extend([
                    &c.iter_range,
                    &c.accu_init,
                    &c.loop_cond,
                    &c.loop_step,
                    &c.result,
                ]);
            }
            _ => {}
        }
    }
}

impl Rewriter<'_> {
    fn walk(&mut self, e: &mut IdedExpr, depth: u32) {
        if self.error.is_some() {
            return;
        }
        if depth > 400 {
            self.error = Some((e.id, crate::checker::RECURSION_ERROR.to_owned()));
            return;
        }
        match &mut e.expr {
            Expr::Call(c) => {
                if let Some(t) = c.target.as_deref_mut() {
                    self.walk(t, depth + 1);
                }
                for a in &mut c.args {
                    self.walk(a, depth + 1);
                }
            }
            Expr::Select(s) => self.walk(&mut s.operand, depth + 1),
            Expr::List(l) => {
                for el in &mut l.elements {
                    self.walk(el, depth + 1);
                }
            }
            Expr::Map(m) => {
                for en in &mut m.entries {
                    if let EntryExpr::MapEntry(me) = &mut en.expr {
                        self.walk(&mut me.key, depth + 1);
                        self.walk(&mut me.value, depth + 1);
                    }
                }
            }
            Expr::Struct(s) => {
                for en in &mut s.entries {
                    if let EntryExpr::StructField(f) = &mut en.expr {
                        self.walk(&mut f.value, depth + 1);
                    }
                }
            }
            Expr::Comprehension(c) => {
                for part in [
                    &mut c.iter_range,
                    &mut c.accu_init,
                    &mut c.loop_cond,
                    &mut c.loop_step,
                    &mut c.result,
                ] {
                    self.walk(part, depth + 1);
                }
            }
            _ => {}
        }
        self.rewrite(e);
    }

    fn node(&mut self, at: u64, expr: Expr) -> IdedExpr {
        let id = self.next_id;
        self.next_id += 1;
        if let Some((start, stop)) = self.info.offset_for(at) {
            self.info.add_offset(id, start, stop);
        }
        IdedExpr { id, expr }
    }

    fn call(&mut self, at: u64, name: &str, args: Vec<IdedExpr>) -> IdedExpr {
        self.node(
            at,
            Expr::Call(CallExpr {
                func_name: name.to_owned(),
                target: None,
                args,
            }),
        )
    }

    fn accu(&mut self, at: u64) -> IdedExpr {
        self.node(at, Expr::Ident(ACCU.to_owned()))
    }

    fn lit(&mut self, at: u64, v: LiteralValue) -> IdedExpr {
        self.node(at, Expr::Literal(v))
    }

    /// A copy of `e` with fresh ids.
    fn copy(&mut self, e: &IdedExpr) -> IdedExpr {
        let mut c = e.clone();
        let mut stack = vec![&mut c];
        while let Some(n) = stack.pop() {
            let old = n.id;
            n.id = self.next_id;
            self.next_id += 1;
            if let Some((start, stop)) = self.info.offset_for(old) {
                self.info.add_offset(n.id, start, stop);
            }
            match &mut n.expr {
                Expr::Call(c) => {
                    if let Some(t) = c.target.as_deref_mut() {
                        stack.push(t);
                    }
                    stack.extend(c.args.iter_mut());
                }
                Expr::Select(s) => stack.push(&mut s.operand),
                Expr::List(l) => stack.extend(l.elements.iter_mut()),
                Expr::Map(m) => {
                    for en in &mut m.entries {
                        if let EntryExpr::MapEntry(me) = &mut en.expr {
                            stack.push(&mut me.key);
                            stack.push(&mut me.value);
                        }
                    }
                }
                Expr::Comprehension(c) => {
                    let c = &mut **c;
                    stack.push(&mut c.iter_range);
                    stack.push(&mut c.accu_init);
                    stack.push(&mut c.loop_cond);
                    stack.push(&mut c.loop_step);
                    stack.push(&mut c.result);
                }
                _ => {}
            }
        }
        c
    }

    /// `opt.optMap(v, e)`: `opt.hasValue() ? optional.of(<e with v bound to opt.value()>) :
    /// optional.none()`; `optFlatMap` without the `optional.of`.
    fn opt_map(&mut self, e: &mut IdedExpr) {
        let Expr::Call(c) = &mut e.expr else {
            return;
        };
        let flat = c.func_name == "optFlatMap";
        let Some(target) = c.target.take() else {
            return;
        };
        let mut args = std::mem::take(&mut c.args);
        let at = e.id;
        let (Some(body), Some(var)) = (args.pop(), args.pop()) else {
            return;
        };
        let Expr::Ident(name) = &var.expr else {
            let which = if flat { "optFlatMap" } else { "optMap" };
            self.error = Some((
                var.id,
                format!("{which}() variable name must be a simple identifier"),
            ));
            return;
        };
        let target_copy = self.copy(&target);
        let has = self.node(
            at,
            Expr::Call(CallExpr {
                func_name: "hasValue".to_owned(),
                target: Some(target),
                args: Vec::new(),
            }),
        );
        let value = self.node(
            at,
            Expr::Call(CallExpr {
                func_name: "value".to_owned(),
                target: Some(Box::new(target_copy)),
                args: Vec::new(),
            }),
        );
        let range = self.node(at, Expr::List(ListExpr::new(Vec::new())));
        let cond = self.lit(at, LiteralValue::Boolean(false.into()));
        let step = self.node(at, Expr::Ident(name.clone()));
        let bound = self.node(
            at,
            Expr::Comprehension(Box::new(ComprehensionExpr {
                iter_range: range,
                iter_var: "#unused".to_owned(),
                iter_var2: None,
                accu_var: name.clone(),
                accu_init: value,
                loop_cond: cond,
                loop_step: step,
                result: body,
            })),
        );
        let some = if flat {
            bound
        } else {
            self.call(at, "optional.of", vec![bound])
        };
        let none = self.call(at, "optional.none", Vec::new());
        e.expr = Expr::Call(CallExpr {
            func_name: "_?_:_".to_owned(),
            target: None,
            args: vec![has, some, none],
        });
    }

    fn rewrite(&mut self, e: &mut IdedExpr) {
        let Expr::Call(c) = &mut e.expr else {
            return;
        };
        if matches!(c.func_name.as_str(), "optMap" | "optFlatMap") && c.args.len() == 2 {
            self.opt_map(e);
            return;
        }
        let kind = match (c.func_name.as_str(), c.args.len()) {
            ("all" | "exists" | "existsOne" | "exists_one", 3) => c.func_name.clone(),
            ("transformList" | "transformMap" | "transformMapEntry", 3 | 4) => c.func_name.clone(),
            _ => return,
        };
        let Some(target) = c.target.take() else {
            return;
        };
        let at = e.id;
        let mut args = std::mem::take(&mut c.args);
        let name = |a: &IdedExpr| match &a.expr {
            Expr::Ident(n) => Some(n.clone()),
            _ => None,
        };
        let (Some(v1), Some(v2)) = (name(&args[0]), name(&args[1])) else {
            let bad = if name(&args[0]).is_none() {
                args[0].id
            } else {
                args[1].id
            };
            self.error = Some((bad, "argument must be a simple name".to_owned()));
            return;
        };
        if v1 == v2 {
            self.error = Some((args[1].id, format!("duplicate variable name: {v1}")));
            return;
        }
        let (filter, transform) = if args.len() == 4 {
            let t = args.pop();
            (args.pop(), t)
        } else {
            (None, args.pop())
        };
        let Some(body) = transform else {
            return;
        };
        let t = |b: bool| LiteralValue::Boolean(b.into());
        let (init, cond, step, result) = match kind.as_str() {
            "all" => {
                let init = self.lit(at, t(true));
                let a = self.accu(at);
                let cond = self.call(at, "@not_strictly_false", vec![a]);
                let a = self.accu(at);
                let step = self.call(at, "_&&_", vec![a, body]);
                (init, cond, step, self.accu(at))
            }
            "exists" => {
                let init = self.lit(at, t(false));
                let a = self.accu(at);
                let not = self.call(at, "!_", vec![a]);
                let cond = self.call(at, "@not_strictly_false", vec![not]);
                let a = self.accu(at);
                let step = self.call(at, "_||_", vec![a, body]);
                (init, cond, step, self.accu(at))
            }
            "existsOne" | "exists_one" => {
                let init = self.lit(at, LiteralValue::Int(0.into()));
                let cond = self.lit(at, t(true));
                let a = self.accu(at);
                let one = self.lit(at, LiteralValue::Int(1.into()));
                let plus = self.call(at, "_+_", vec![a, one]);
                let a = self.accu(at);
                let step = self.call(at, "_?_:_", vec![body, plus, a]);
                let a = self.accu(at);
                let one = self.lit(at, LiteralValue::Int(1.into()));
                let result = self.call(at, "_==_", vec![a, one]);
                (init, cond, step, result)
            }
            _ => {
                let list = kind == "transformList";
                let init = if list {
                    self.node(at, Expr::List(ListExpr::new(Vec::new())))
                } else {
                    self.node(
                        at,
                        Expr::Map(MapExpr {
                            entries: Vec::new(),
                        }),
                    )
                };
                let cond = self.lit(at, t(true));
                let a = self.accu(at);
                let mut step = if list {
                    let l = self.node(at, Expr::List(ListExpr::new(vec![body])));
                    self.call(at, "_+_", vec![a, l])
                } else if kind == "transformMap" {
                    let k = self.node(at, Expr::Ident(v1.clone()));
                    self.call(at, MAP_INSERT, vec![a, k, body])
                } else {
                    self.call(at, MAP_INSERT, vec![a, body])
                };
                if let Some(f) = filter {
                    let a = self.accu(at);
                    step = self.call(at, "_?_:_", vec![f, step, a]);
                }
                (init, cond, step, self.accu(at))
            }
        };
        e.expr = Expr::Comprehension(Box::new(ComprehensionExpr {
            iter_range: *target,
            iter_var: v1,
            iter_var2: Some(v2),
            accu_var: ACCU.to_owned(),
            accu_init: init,
            loop_cond: cond,
            loop_step: step,
            result,
        }));
    }
}
