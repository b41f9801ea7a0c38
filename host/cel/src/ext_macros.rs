//! The extension macros, which cel-rust's parser does not expand, rewritten after parsing: the
//! two-variable comprehensions of cel-go's `ext.TwoVarComprehensions` (enabled in
//! kube-apiserver 1.32): `all(i, v, p)`, `exists(i, v, p)`, `existsOne`/`exists_one(i, v, p)`,
//! `transformList(i, v, [filter,] e)`, `transformMap(k, v, [filter,] e)` and
//! `transformMapEntry(k, v, [filter,] {k2: v2})`; and the optional library's `optMap` and
//! `optFlatMap`.

use cel::common::ast::{
    CallExpr, ComprehensionExpr, Expr, IdedExpr, ListExpr, LiteralValue, MapExpr, SourceInfo,
};

use crate::ast::{children, children_mut, entries, entries_mut};

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
        for en in entries(e) {
            *max = (*max).max(en.id);
        }
        children(e, &mut stack);
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
        let mut kids = Vec::new();
        children_mut(e, &mut kids);
        for kid in kids {
            self.walk(kid, depth + 1);
        }
        self.rewrite(e);
    }

    /// A new expression at the source position of `at`.
    fn node(&mut self, at: u64, expr: Expr) -> IdedExpr {
        IdedExpr {
            id: self.fresh_id(at),
            expr,
        }
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

    /// A copy of `e` with fresh ids (of expressions and of map and struct entries).
    fn copy(&mut self, e: &IdedExpr) -> IdedExpr {
        let mut c = e.clone();
        let mut stack = vec![&mut c];
        while let Some(n) = stack.pop() {
            n.id = self.fresh_id(n.id);
            for en in entries_mut(n) {
                en.id = self.fresh_id(en.id);
            }
            children_mut(n, &mut stack);
        }
        c
    }

    /// A new id, at the source position of the expression or entry `at`.
    fn fresh_id(&mut self, at: u64) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        if let Some((start, stop)) = self.info.offset_for(at) {
            self.info.add_offset(id, start, stop);
        }
        id
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

#[cfg(test)]
mod tests {
    use cel::common::ast::IdedExpr;

    use crate::ast::{children, entries};

    /// Every expression and entry id in `e`.
    fn ids(e: &IdedExpr) -> Vec<u64> {
        let mut out = Vec::new();
        let mut stack = vec![e];
        while let Some(e) = stack.pop() {
            out.push(e.id);
            out.extend(entries(e).iter().map(|en| en.id));
            children(e, &mut stack);
        }
        out
    }

    /// `optMap` copies its target: map and struct literals in the copy, their entries and
    /// struct field values included, get ids of their own.
    #[test]
    fn expanded_ids_are_unique() {
        for source in [
            "{'a': {'b': [1]}}.optMap(v, v)",
            "Foo{a: Bar{b: 1}}.optMap(v, v)",
            "optional.of({'a': 1}).optFlatMap(v, optional.of({'b': v}))",
            "[{'k': 1}].transformList(i, v, {'x': v}.optMap(m, m))",
        ] {
            let (mut expr, mut info) = cel::parser::Parser::new()
                .enable_optional_syntax(true)
                .parse_with_source_info(source)
                .unwrap_or_else(|e| panic!("{source}: {e:?}"));
            super::expand(&mut expr, &mut info).unwrap_or_else(|e| panic!("{source}: {e:?}"));
            let mut all = ids(&expr);
            let n = all.len();
            all.sort_unstable();
            all.dedup();
            assert_eq!(all.len(), n, "{source}: duplicate ids");
        }
    }
}
