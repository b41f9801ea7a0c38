//! CEL types for the checker, with cel-go's assignability, unification and formatting
//! (`checker/types.go`, `checker/format.go`).

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use crate::decl::{Decl, Kind};

/// A CEL type as the checker sees it.
#[derive(Debug, Clone)]
pub(crate) enum Ty {
    Dyn,
    Error,
    Null,
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Timestamp,
    Duration,
    List(Box<Ty>),
    Map(Box<Ty>, Box<Ty>),
    /// An object of a structural schema (a message type in cel-go).
    Object(Arc<Decl>),
    /// `optional_type(T)`.
    Optional(Box<Ty>),
    /// `type` or `type(T)`.
    Type(Option<Box<Ty>>),
    /// A type parameter.
    Param(u32),
    /// A Kubernetes library type: `kubernetes.Quantity`, `net.IP`, `net.CIDR`,
    /// `kubernetes.URL`, `kubernetes.NamedFormat`.
    Named(&'static str),
}

/// Kinds, for the comparisons that only look at the outer shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TyKind {
    Dyn,
    Error,
    Null,
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Timestamp,
    Duration,
    List,
    Map,
    Object,
    Optional,
    Type,
    Param,
    Named,
}

impl Ty {
    pub(crate) fn kind(&self) -> TyKind {
        match self {
            Ty::Dyn => TyKind::Dyn,
            Ty::Error => TyKind::Error,
            Ty::Null => TyKind::Null,
            Ty::Bool => TyKind::Bool,
            Ty::Int => TyKind::Int,
            Ty::Uint => TyKind::Uint,
            Ty::Double => TyKind::Double,
            Ty::String => TyKind::String,
            Ty::Bytes => TyKind::Bytes,
            Ty::Timestamp => TyKind::Timestamp,
            Ty::Duration => TyKind::Duration,
            Ty::List(_) => TyKind::List,
            Ty::Map(..) => TyKind::Map,
            Ty::Object(_) => TyKind::Object,
            Ty::Optional(_) => TyKind::Optional,
            Ty::Type(_) => TyKind::Type,
            Ty::Param(_) => TyKind::Param,
            Ty::Named(_) => TyKind::Named,
        }
    }

    /// The type of a value declared by `decl`.
    pub(crate) fn of_decl(decl: &Arc<Decl>) -> Ty {
        match &decl.kind {
            Kind::Object { .. } => Ty::Object(Arc::clone(decl)),
            Kind::Map { elem } => Ty::Map(Box::new(Ty::String), Box::new(Ty::of_decl(elem))),
            Kind::List { elem, .. } => Ty::List(Box::new(Ty::of_decl(elem))),
            Kind::Bool => Ty::Bool,
            Kind::Int => Ty::Int,
            Kind::Double => Ty::Double,
            Kind::String => Ty::String,
            Kind::Bytes => Ty::Bytes,
            Kind::Duration => Ty::Duration,
            Kind::Timestamp { .. } => Ty::Timestamp,
            Kind::IntOrString | Kind::Dyn => Ty::Dyn,
        }
    }

    pub(crate) fn is_dyn_or_error(&self) -> bool {
        matches!(self, Ty::Dyn | Ty::Error)
    }

    /// Parameters, in cel-go's order.
    fn params(&self) -> Vec<&Ty> {
        match self {
            Ty::List(e) | Ty::Optional(e) => vec![e],
            Ty::Map(k, v) => vec![k, v],
            Ty::Type(Some(t)) => vec![t],
            _ => Vec::new(),
        }
    }

    /// Exact (structural) equality; objects by name.
    pub(crate) fn exact(&self, other: &Ty) -> bool {
        match (self, other) {
            (Ty::List(a), Ty::List(b)) | (Ty::Optional(a), Ty::Optional(b)) => a.exact(b),
            (Ty::Map(k1, v1), Ty::Map(k2, v2)) => k1.exact(k2) && v1.exact(v2),
            (Ty::Object(a), Ty::Object(b)) => a.name == b.name,
            (Ty::Type(a), Ty::Type(b)) => match (a, b) {
                (None, None) => true,
                (Some(a), Some(b)) => a.exact(b),
                _ => false,
            },
            (Ty::Param(a), Ty::Param(b)) => a == b,
            (Ty::Named(a), Ty::Named(b)) => a == b,
            (a, b) => a.kind() == b.kind() && a.params().is_empty(),
        }
    }

    /// `types.Type.IsAssignableType` for the kinds where the checker defers to it.
    fn assignable_from(&self, from: &Ty) -> bool {
        if matches!(self, Ty::Dyn) {
            return true;
        }
        if matches!(from, Ty::Null) {
            return matches!(self, Ty::Null);
        }
        self.kind() == from.kind()
            && {
                let (a, b) = (self.params(), from.params());
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.assignable_from(y))
            }
            && match (self, from) {
                (Ty::Object(a), Ty::Object(b)) => a.name == b.name,
                _ => true,
            }
    }
}

impl fmt::Display for Ty {
    /// `FormatCELType`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ty::Dyn => f.write_str("dyn"),
            Ty::Error => f.write_str("!error!"),
            Ty::Null => f.write_str("null"),
            Ty::Bool => f.write_str("bool"),
            Ty::Int => f.write_str("int"),
            Ty::Uint => f.write_str("uint"),
            Ty::Double => f.write_str("double"),
            Ty::String => f.write_str("string"),
            Ty::Bytes => f.write_str("bytes"),
            Ty::Timestamp => f.write_str("timestamp"),
            Ty::Duration => f.write_str("duration"),
            Ty::List(e) => write!(f, "list({e})"),
            Ty::Map(k, v) => write!(f, "map({k}, {v})"),
            Ty::Object(d) => f.write_str(&d.name),
            Ty::Optional(e) => write!(f, "optional_type({e})"),
            Ty::Type(None) => f.write_str("type"),
            Ty::Type(Some(t)) => write!(f, "type({t})"),
            Ty::Param(n) => write!(f, "_var{n}"),
            Ty::Named(n) => f.write_str(n),
        }
    }
}

/// Type-parameter substitutions.
#[derive(Debug, Clone, Default)]
pub(crate) struct Subst {
    map: HashMap<u32, Ty>,
}

impl Subst {
    fn find(&self, t: &Ty) -> Option<&Ty> {
        match t {
            Ty::Param(n) => self.map.get(n),
            _ => None,
        }
    }

    /// Whether `t1` is assignable to `t2`, recording substitutions on success.
    pub(crate) fn assign(&mut self, t1: &Ty, t2: &Ty) -> bool {
        let mut copy = self.clone();
        if internal_is_assignable(&mut copy, t1, t2, 0) {
            *self = copy;
            true
        } else {
            false
        }
    }

    /// Pairwise [`Subst::assign`] of two lists of the same length.
    pub(crate) fn assign_list(&mut self, l1: &[Ty], l2: &[Ty]) -> bool {
        if l1.len() != l2.len() {
            return false;
        }
        let mut copy = self.clone();
        for (a, b) in l1.iter().zip(l2) {
            if !internal_is_assignable(&mut copy, a, b, 0) {
                return false;
            }
        }
        *self = copy;
        true
    }

    /// Replaces bound type parameters; unbound ones by `dyn` when `to_dyn`.
    pub(crate) fn substitute(&self, t: &Ty, to_dyn: bool) -> Ty {
        self.substitute_depth(t, to_dyn, 0)
    }

    fn substitute_depth(&self, t: &Ty, to_dyn: bool, depth: u32) -> Ty {
        if depth > 64 {
            return Ty::Dyn;
        }
        if let Some(s) = self.find(t) {
            return self.substitute_depth(s, to_dyn, depth + 1);
        }
        let sub = |x: &Ty| Box::new(self.substitute_depth(x, to_dyn, depth + 1));
        match t {
            Ty::Param(_) if to_dyn => Ty::Dyn,
            Ty::List(e) => Ty::List(sub(e)),
            Ty::Optional(e) => Ty::Optional(sub(e)),
            Ty::Map(k, v) => Ty::Map(sub(k), sub(v)),
            Ty::Type(Some(e)) => Ty::Type(Some(sub(e))),
            other => other.clone(),
        }
    }
}

const MAX_DEPTH: u32 = 64;

fn internal_is_assignable(m: &mut Subst, t1: &Ty, t2: &Ty, depth: u32) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    if matches!(t2, Ty::Param(_)) {
        let (valid, has_sub) = is_valid_type_substitution(m, t1, t2, depth + 1);
        if valid {
            return true;
        }
        if has_sub {
            return false;
        }
    }
    if matches!(t1, Ty::Param(_)) {
        return is_valid_type_substitution(m, t2, t1, depth + 1).0;
    }
    if t1.is_dyn_or_error() || t2.is_dyn_or_error() {
        return true;
    }
    if matches!(t1, Ty::Null) {
        return is_assignable_null(t2);
    }
    if matches!(t2, Ty::Null) {
        return is_assignable_null(t1);
    }
    match t1 {
        Ty::Bool
        | Ty::Bytes
        | Ty::Double
        | Ty::Int
        | Ty::String
        | Ty::Uint
        | Ty::Duration
        | Ty::Timestamp
        | Ty::Object(_)
        | Ty::Named(_) => t2.assignable_from(t1),
        Ty::Type(_) => matches!(t2, Ty::Type(_)),
        Ty::Optional(_) | Ty::List(_) | Ty::Map(..) => {
            t1.kind() == t2.kind() && {
                let (a, b) = (t1.params(), t2.params());
                a.len() == b.len()
                    && a.iter()
                        .zip(b)
                        .all(|(x, y)| internal_is_assignable(m, x, y, depth + 1))
            }
        }
        _ => false,
    }
}

fn is_assignable_null(t: &Ty) -> bool {
    matches!(
        t,
        Ty::Optional(_)
            | Ty::Object(_)
            | Ty::Named(_)
            | Ty::Duration
            | Ty::Timestamp
            | Ty::Null
            | Ty::Dyn
    )
}

fn is_valid_type_substitution(m: &mut Subst, t1: &Ty, t2: &Ty, depth: u32) -> (bool, bool) {
    if depth > MAX_DEPTH {
        return (false, false);
    }
    if t1.kind() == t2.kind() && t1.exact(t2) {
        return (true, true);
    }
    if let Some(t2_sub) = m.find(t2).cloned() {
        if t1.kind() == t2_sub.kind() && t1.exact(&t2_sub) {
            return (true, true);
        }
        if internal_is_assignable(m, t1, &t2_sub, depth + 1) {
            let t2_new = most_general(t1, &t2_sub);
            if not_referenced_in(m, t2, &t2_new, depth + 1)
                && let Ty::Param(n) = t2
            {
                m.map.insert(*n, t2_new);
            }
            return (true, true);
        }
        return (false, true);
    }
    if not_referenced_in(m, t2, t1, depth + 1) {
        if let Ty::Param(n) = t2 {
            m.map.insert(*n, t1.clone());
        }
        return (true, false);
    }
    (false, false)
}

fn is_equal_or_less_specific(t1: &Ty, t2: &Ty) -> bool {
    if matches!(t1, Ty::Dyn | Ty::Param(_)) {
        return true;
    }
    if matches!(t2, Ty::Dyn | Ty::Param(_)) {
        return false;
    }
    if t1.kind() != t2.kind() {
        return false;
    }
    match (t1, t2) {
        (Ty::Optional(a), Ty::Optional(b)) | (Ty::List(a), Ty::List(b)) => {
            is_equal_or_less_specific(a, b)
        }
        (Ty::Map(k1, v1), Ty::Map(k2, v2)) => {
            is_equal_or_less_specific(k1, k2) && is_equal_or_less_specific(v1, v2)
        }
        (Ty::Type(_), Ty::Type(_)) => true,
        _ => t1.exact(t2),
    }
}

/// The more general of two types known to unify.
pub(crate) fn most_general(t1: &Ty, t2: &Ty) -> Ty {
    if is_equal_or_less_specific(t1, t2) {
        t1.clone()
    } else {
        t2.clone()
    }
}

fn not_referenced_in(m: &Subst, t: &Ty, within: &Ty, depth: u32) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    if t.exact(within) {
        return false;
    }
    match within {
        Ty::Param(_) => match m.find(within) {
            None => true,
            Some(sub) => not_referenced_in(m, t, sub, depth + 1),
        },
        Ty::Optional(_) | Ty::List(_) | Ty::Map(..) | Ty::Type(_) => within
            .params()
            .iter()
            .all(|p| not_referenced_in(m, t, p, depth + 1)),
        _ => true,
    }
}
