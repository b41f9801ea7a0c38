//! The subexpressions of a cel-rust expression, listed once for every tree walk (macro
//! expansion, literal validation).

use cel::common::ast::{EntryExpr, Expr, IdedEntryExpr, IdedExpr, MapExpr, StructExpr};

/// Appends the direct subexpressions of `e` to `out`, in source order: a call's target, then
/// its arguments; a selection's operand; list elements; map keys and values; struct field
/// values; a comprehension's range, initial accumulator, condition, step and result.
pub(crate) fn children<'e>(e: &'e IdedExpr, out: &mut Vec<&'e IdedExpr>) {
    match &e.expr {
        Expr::Call(c) => {
            out.extend(c.target.as_deref());
            out.extend(&c.args);
        }
        Expr::Select(s) => out.push(&s.operand),
        Expr::List(l) => out.extend(&l.elements),
        Expr::Map(MapExpr { entries }) | Expr::Struct(StructExpr { entries, .. }) => {
            for en in entries {
                match &en.expr {
                    EntryExpr::MapEntry(me) => out.extend([&me.key, &me.value]),
                    EntryExpr::StructField(f) => out.push(&f.value),
                }
            }
        }
        Expr::Comprehension(c) => out.extend([
            &c.iter_range,
            &c.accu_init,
            &c.loop_cond,
            &c.loop_step,
            &c.result,
        ]),
        Expr::Literal(_) | Expr::Ident(_) | Expr::Unspecified => {}
    }
}

/// [`children`], mutable.
pub(crate) fn children_mut<'e>(e: &'e mut IdedExpr, out: &mut Vec<&'e mut IdedExpr>) {
    match &mut e.expr {
        Expr::Call(c) => {
            out.extend(c.target.as_deref_mut());
            out.extend(&mut c.args);
        }
        Expr::Select(s) => out.push(&mut s.operand),
        Expr::List(l) => out.extend(&mut l.elements),
        Expr::Map(MapExpr { entries }) | Expr::Struct(StructExpr { entries, .. }) => {
            for en in entries {
                match &mut en.expr {
                    EntryExpr::MapEntry(me) => out.extend([&mut me.key, &mut me.value]),
                    EntryExpr::StructField(f) => out.push(&mut f.value),
                }
            }
        }
        Expr::Comprehension(c) => {
            let c = &mut **c;
            out.extend([
                &mut c.iter_range,
                &mut c.accu_init,
                &mut c.loop_cond,
                &mut c.loop_step,
                &mut c.result,
            ]);
        }
        Expr::Literal(_) | Expr::Ident(_) | Expr::Unspecified => {}
    }
}

/// The entries of a map or struct literal (they carry ids of their own).
pub(crate) fn entries(e: &IdedExpr) -> &[IdedEntryExpr] {
    match &e.expr {
        Expr::Map(MapExpr { entries }) | Expr::Struct(StructExpr { entries, .. }) => entries,
        _ => &[],
    }
}

/// [`entries`], mutable.
pub(crate) fn entries_mut(e: &mut IdedExpr) -> &mut [IdedEntryExpr] {
    match &mut e.expr {
        Expr::Map(MapExpr { entries }) | Expr::Struct(StructExpr { entries, .. }) => entries,
        _ => &mut [],
    }
}
