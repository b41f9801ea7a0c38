//! Runtime values. Values of the object under validation stay in its JSON and are converted
//! lazily, field by field, as `UnstructuredToVal` does in kube-apiserver; values the
//! expression builds are reference-counted.

use std::cmp::Ordering;
use std::fmt::Write as _;
use std::rc::Rc;

use base64::Engine as _;
use serde_json::{Map, Value as Json};

use crate::decl::{Decl, Kind, ListType};
use crate::timeutil::{self, Ts};

/// A runtime error (`types.Err` in cel-go).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum EvalErr {
    /// An evaluation error with cel-go's message (`no such key: x`, `division by zero`).
    Msg(String),
    /// The per-call cost limit, or the remaining budget, was exceeded.
    CostLimit,
    /// The safety fuse on work not counted by CEL's cost model tripped.
    Fuse,
}

impl EvalErr {
    pub(crate) fn msg(s: impl Into<String>) -> EvalErr {
        EvalErr::Msg(s.into())
    }
    pub(crate) fn no_overload() -> EvalErr {
        EvalErr::msg("no such overload")
    }
}

pub(crate) type Res<T> = Result<T, EvalErr>;

/// A string, borrowed from the input or owned.
#[derive(Debug, Clone)]
pub(crate) enum Str<'a> {
    B(&'a str),
    O(Rc<str>),
}

impl Str<'_> {
    pub(crate) fn as_str(&self) -> &str {
        match self {
            Str::B(s) => s,
            Str::O(s) => s,
        }
    }
}

/// List semantics (`x-kubernetes-list-type`).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Sem<'a> {
    Atomic,
    Set,
    Map(&'a [String]),
}

/// A list value.
#[derive(Debug, Clone)]
pub(crate) enum List<'a> {
    /// A JSON array with its declaration (a list declaration).
    Json(&'a [Json], &'a Decl),
    Built(Rc<Built<'a>>),
}

/// A list built by the expression.
#[derive(Debug, Clone)]
pub(crate) struct Built<'a> {
    pub(crate) items: Vec<Val<'a>>,
    pub(crate) sem: Sem<'a>,
}

/// A map value.
#[derive(Debug, Clone)]
pub(crate) enum MapV<'a> {
    /// A JSON object under `additionalProperties` with its (map) declaration.
    Json(&'a Map<String, Json>, &'a Decl),
    /// A map literal: keys are unique.
    Built(Rc<Vec<(Val<'a>, Val<'a>)>>),
}

/// A CEL value.
#[derive(Debug, Clone)]
pub(crate) enum Val<'a> {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Double(f64),
    Str(Str<'a>),
    Bytes(Rc<[u8]>),
    Ts(Ts),
    /// Nanoseconds, as Go's `time.Duration`.
    Dur(i64),
    List(List<'a>),
    Map(MapV<'a>),
    /// An object with properties: the JSON object and its declaration.
    Obj(&'a Map<String, Json>, &'a Decl),
    /// A type value, by name.
    Type(&'static str),
    Opt(Option<Rc<Val<'a>>>),
    /// `kubernetes.Quantity`.
    Quantity(Rc<crate::k8slib::Quantity>),
    /// `net.IP`.
    Ip(std::net::IpAddr),
    /// `net.CIDR`.
    Cidr(crate::k8slib::Cidr),
    /// `kubernetes.URL`.
    Url(Rc<crate::k8slib::Url>),
    /// `kubernetes.NamedFormat`, by name.
    Format(&'static str),
}

impl<'a> Val<'a> {
    pub(crate) fn string(s: impl Into<Rc<str>>) -> Val<'a> {
        Val::Str(Str::O(s.into()))
    }

    pub(crate) fn list(items: Vec<Val<'a>>) -> Val<'a> {
        Val::List(List::Built(Rc::new(Built {
            items,
            sem: Sem::Atomic,
        })))
    }

    /// The CEL type name (`type(x)`).
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            Val::Null => "null_type",
            Val::Bool(_) => "bool",
            Val::Int(_) => "int",
            Val::Uint(_) => "uint",
            Val::Double(_) => "double",
            Val::Str(_) => "string",
            Val::Bytes(_) => "bytes",
            Val::Ts(_) => "google.protobuf.Timestamp",
            Val::Dur(_) => "google.protobuf.Duration",
            Val::List(_) => "list",
            Val::Map(_) | Val::Obj(..) => "map",
            Val::Type(_) => "type",
            Val::Opt(_) => "optional_type",
            Val::Quantity(_) => "kubernetes.Quantity",
            Val::Ip(_) => "net.IP",
            Val::Cidr(_) => "net.CIDR",
            Val::Url(_) => "kubernetes.URL",
            Val::Format(_) => "kubernetes.NamedFormat",
        }
    }

    /// `Sizer.Size()`: characters of strings, bytes, items, entries; `None` for others.
    pub(crate) fn size(&self) -> Option<u64> {
        Some(match self {
            Val::Str(s) => s.as_str().chars().count() as u64,
            Val::Bytes(b) => b.len() as u64,
            Val::List(l) => l.len() as u64,
            Val::Map(MapV::Json(m, _)) | Val::Obj(m, _) => m.len() as u64,
            Val::Map(MapV::Built(m)) => m.len() as u64,
            _ => return None,
        })
    }

    /// The actual size as cel-go's cost tracker sees it (1 for non-sizers).
    pub(crate) fn cost_size(&self) -> u64 {
        self.size().unwrap_or(1)
    }
}

impl<'a> List<'a> {
    pub(crate) fn len(&self) -> usize {
        match self {
            List::Json(items, _) => items.len(),
            List::Built(b) => b.items.len(),
        }
    }

    pub(crate) fn get(&self, i: usize) -> Res<Val<'a>> {
        match self {
            List::Json(items, decl) => {
                let elem = decl.elem().ok_or_else(EvalErr::no_overload)?;
                from_json(&items[i], elem)
            }
            List::Built(b) => Ok(b.items[i].clone()),
        }
    }

    pub(crate) fn sem(&self) -> Sem<'a> {
        match self {
            List::Json(_, decl) => match &decl.kind {
                Kind::List {
                    list_type: ListType::Set,
                    ..
                } => Sem::Set,
                Kind::List {
                    list_type: ListType::Map(keys),
                    ..
                } => Sem::Map(keys),
                _ => Sem::Atomic,
            },
            List::Built(b) => b.sem,
        }
    }

    /// All items, converted.
    pub(crate) fn items(&self) -> Res<Vec<Val<'a>>> {
        (0..self.len()).map(|i| self.get(i)).collect()
    }
}

impl<'a> MapV<'a> {
    pub(crate) fn find(&self, key: &Val<'a>) -> Res<Option<Val<'a>>> {
        match self {
            MapV::Json(m, decl) => {
                let Val::Str(k) = key else {
                    return Ok(None);
                };
                let elem = decl.elem().ok_or_else(EvalErr::no_overload)?;
                match m.get(k.as_str()) {
                    Some(v) => from_json(v, elem).map(Some),
                    None => Ok(None),
                }
            }
            MapV::Built(entries) => {
                for (k, v) in entries.iter() {
                    if equals(k, key)? {
                        return Ok(Some(v.clone()));
                    }
                }
                Ok(None)
            }
        }
    }

    pub(crate) fn keys(&self) -> Vec<Val<'a>> {
        match self {
            MapV::Json(m, _) => m.keys().map(|k| Val::Str(Str::B(k.as_str()))).collect(),
            MapV::Built(entries) => entries.iter().map(|(k, _)| k.clone()).collect(),
        }
    }
}

/// The field `cel_name` (escaped) of an object; `None` when absent or null.
pub(crate) fn obj_field<'a>(
    map: &'a Map<String, Json>,
    decl: &'a Decl,
    cel_name: &str,
) -> Res<Option<Val<'a>>> {
    let Some(field) = decl.field(cel_name) else {
        return Ok(None);
    };
    match map.get(&field.json) {
        None | Some(Json::Null) => Ok(None),
        Some(v) => from_json(v, &field.decl).map(Some),
    }
}

/// `UnstructuredToVal`: the CEL value of JSON data declared by `decl`.
pub(crate) fn from_json<'a>(v: &'a Json, decl: &'a Decl) -> Res<Val<'a>> {
    if v.is_null() {
        return if decl.nullable {
            Ok(Val::Null)
        } else {
            Err(EvalErr::msg(
                "invalid data, got null for schema with nullable=false",
            ))
        };
    }
    let bad = |what: &str| EvalErr::msg(format!("invalid data, expected {what}"));
    Ok(match &decl.kind {
        Kind::IntOrString => match v {
            Json::String(s) => Val::Str(Str::B(s)),
            Json::Number(n) => match n.as_i64() {
                Some(i) => Val::Int(i),
                None => {
                    return Err(bad("XIntOrString value to be either a string or integer"));
                }
            },
            _ => return Err(bad("XIntOrString value to be either a string or integer")),
        },
        Kind::Object { .. } => match v {
            Json::Object(m) => Val::Obj(m, decl),
            _ => return Err(bad("a map for the provided schema with type=object")),
        },
        Kind::Map { .. } => match v {
            Json::Object(m) => Val::Map(MapV::Json(m, decl)),
            _ => return Err(bad("a map for the provided schema with type=object")),
        },
        Kind::List { .. } => match v {
            Json::Array(items) => Val::List(List::Json(items, decl)),
            _ => return Err(bad("an array for the provided schema with type=array")),
        },
        Kind::Dyn => match v {
            Json::Null => Val::Null,
            Json::Bool(b) => Val::Bool(*b),
            Json::Number(n) => match (n.as_i64(), n.as_u64()) {
                (Some(i), _) => Val::Int(i),
                (None, Some(u)) => Val::Uint(u),
                _ => Val::Double(n.as_f64().unwrap_or(f64::NAN)),
            },
            Json::String(s) => Val::Str(Str::B(s)),
            Json::Array(items) => Val::List(List::Json(items, decl)),
            Json::Object(m) => Val::Map(MapV::Json(m, decl)),
        },
        Kind::Bool => Val::Bool(v.as_bool().ok_or_else(|| bad("bool"))?),
        Kind::Int => match v.as_i64() {
            Some(i) => Val::Int(i),
            None => match v.as_f64() {
                Some(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => {
                    #[allow(clippy::cast_possible_truncation, reason = "whole number in range")]
                    let i = f as i64;
                    Val::Int(i)
                }
                _ => return Err(bad("int")),
            },
        },
        Kind::Double => Val::Double(v.as_f64().ok_or_else(|| bad("float"))?),
        Kind::String => Val::Str(Str::B(v.as_str().ok_or_else(|| bad("string"))?)),
        Kind::Bytes => {
            let s = v.as_str().ok_or_else(|| bad("string"))?;
            let b = base64::engine::general_purpose::STANDARD
                .decode(s)
                .map_err(|e| EvalErr::msg(format!("Invalid byte formatted string {s}: {e}")))?;
            Val::Bytes(b.into())
        }
        Kind::Duration => {
            let s = v.as_str().ok_or_else(|| bad("string"))?;
            Val::Dur(timeutil::parse_openapi_duration(s).map_err(EvalErr::Msg)?)
        }
        Kind::Timestamp { date } => {
            let s = v.as_str().ok_or_else(|| bad("string"))?;
            let ts = if *date {
                timeutil::parse_date(s)
            } else {
                timeutil::parse_date_time(s)
            };
            Val::Ts(ts.map_err(EvalErr::Msg)?)
        }
    })
}

/// A key identifying a scalar (set items) or a map-list item (its key fields).
pub(crate) fn item_key(v: &Val<'_>, sem: Sem<'_>) -> Res<String> {
    match (sem, v) {
        (Sem::Map(keys), Val::Obj(m, _)) => Ok(map_list_key(m, keys)),
        (_, v) => scalar_key(v),
    }
}

/// The key of an item of a `map` list: the JSON of its `x-kubernetes-list-map-keys` fields
/// (`null` when absent), separated by NUL characters.
pub(crate) fn map_list_key(item: &Map<String, Json>, keys: &[String]) -> String {
    let mut out = String::new();
    for (i, k) in keys.iter().enumerate() {
        if i > 0 {
            out.push('\u{0}');
        }
        match item.get(k) {
            // Writing to a `String` does not fail.
            Some(v) => _ = write!(out, "{v}"),
            None => out.push_str("null"),
        }
    }
    out
}

fn scalar_key(v: &Val<'_>) -> Res<String> {
    Ok(match v {
        Val::Null => "null".to_owned(),
        Val::Bool(b) => b.to_string(),
        Val::Int(i) => format!("i{i}"),
        Val::Uint(u) => format!("u{u}"),
        Val::Double(d) => format!("d{d}"),
        Val::Str(s) => Json::String(s.as_str().to_owned()).to_string(),
        Val::Bytes(b) => format!("b{b:?}"),
        Val::Ts(t) => format!("t{}.{}", t.secs, t.nanos),
        Val::Dur(d) => format!("D{d}"),
        Val::Obj(m, _) => {
            let json = serde_json::to_string(m).map_err(|e| EvalErr::msg(e.to_string()))?;
            format!("o{json}")
        }
        _ => return Err(EvalErr::no_overload()),
    })
}

thread_local! {
    /// Values visited by equality since the interpreter last looked (see [`take_eq_steps`]).
    static EQ_STEPS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

fn eq_step() {
    EQ_STEPS.with(|c| c.set(c.get().saturating_add(1)));
}

/// Takes the count of values visited by equality on this thread (the interpreter charges it
/// as work, since deep equality costs one unit in CEL's model).
pub(crate) fn take_eq_steps() -> u64 {
    EQ_STEPS.with(|c| c.replace(0))
}

/// CEL equality (heterogeneous: different types are unequal; numbers compare by value), with
/// kube's order-insensitive equality for lists whose left side is a set or map list.
pub(crate) fn equals(a: &Val<'_>, b: &Val<'_>) -> Res<bool> {
    eq_step();
    Ok(match (a, b) {
        (Val::Null, Val::Null) => true,
        (Val::Bool(x), Val::Bool(y)) => x == y,
        (Val::Str(x), Val::Str(y)) => x.as_str() == y.as_str(),
        (Val::Bytes(x), Val::Bytes(y)) => x == y,
        (Val::Ts(x), Val::Ts(y)) => x == y,
        (Val::Dur(x), Val::Dur(y)) => x == y,
        (Val::Type(x), Val::Type(y)) => x == y,
        (
            Val::Int(_) | Val::Uint(_) | Val::Double(_),
            Val::Int(_) | Val::Uint(_) | Val::Double(_),
        ) => numeric_cmp(a, b) == Some(Ordering::Equal),
        (Val::List(x), Val::List(y)) => list_equals(x, y)?,
        (Val::Map(x), Val::Map(y)) => map_equals(x, y)?,
        (Val::Obj(xm, xd), Val::Obj(ym, yd)) => obj_equals(xm, xd, ym, yd)?,
        (Val::Quantity(x), Val::Quantity(y)) => x.cmp(y) == Ordering::Equal,
        (Val::Ip(x), Val::Ip(y)) => x == y,
        (Val::Cidr(x), Val::Cidr(y)) => x == y,
        (Val::Url(x), Val::Url(y)) => x == y,
        (Val::Format(x), Val::Format(y)) => x == y,
        (Val::Opt(x), Val::Opt(y)) => match (x, y) {
            (None, None) => true,
            (Some(x), Some(y)) => equals(x, y)?,
            _ => false,
        },
        _ => false,
    })
}

fn list_equals(x: &List<'_>, y: &List<'_>) -> Res<bool> {
    if x.len() != y.len() {
        return Ok(false);
    }
    match x.sem() {
        sem @ (Sem::Set | Sem::Map(_)) => {
            let mut index = std::collections::HashMap::with_capacity(x.len());
            for i in 0..x.len() {
                let v = x.get(i)?;
                index.insert(item_key(&v, sem)?, v);
            }
            for i in 0..y.len() {
                let v = y.get(i)?;
                let Ok(k) = item_key(&v, sem) else {
                    return Ok(false);
                };
                match index.get(&k) {
                    None => return Ok(false),
                    Some(mine) => {
                        if matches!(sem, Sem::Map(_)) && !equals(mine, &v)? {
                            return Ok(false);
                        }
                    }
                }
            }
            Ok(true)
        }
        Sem::Atomic => {
            for i in 0..x.len() {
                if !equals(&x.get(i)?, &y.get(i)?)? {
                    return Ok(false);
                }
            }
            Ok(true)
        }
    }
}

fn map_equals(x: &MapV<'_>, y: &MapV<'_>) -> Res<bool> {
    let (xs, ys) = (
        Val::Map(x.clone()).cost_size(),
        Val::Map(y.clone()).cost_size(),
    );
    if xs != ys {
        return Ok(false);
    }
    for k in x.keys() {
        let (Some(xv), Some(yv)) = (x.find(&k)?, y.find(&k)?) else {
            return Ok(false);
        };
        if !equals(&xv, &yv)? {
            return Ok(false);
        }
    }
    Ok(true)
}

fn obj_equals(xm: &Map<String, Json>, xd: &Decl, ym: &Map<String, Json>, yd: &Decl) -> Res<bool> {
    if xm.len() != ym.len() {
        return Ok(false);
    }
    let Kind::Object { fields } = &xd.kind else {
        return Ok(false);
    };
    for (k, v) in xm {
        match fields.iter().find(|(_, f)| f.json == *k) {
            Some((cel_name, f)) => {
                let Some(other) = obj_field(ym, yd, cel_name)? else {
                    return Ok(false);
                };
                if v.is_null() {
                    return Ok(false);
                }
                if !equals(&from_json(v, &f.decl)?, &other)? {
                    return Ok(false);
                }
            }
            None => {
                if let Some(o) = ym.get(k)
                    && !json_semantic_eq(v, o)
                {
                    return Ok(false);
                }
            }
        }
    }
    Ok(true)
}

/// Deep equality of JSON where numbers compare by value. Iterative: data of any depth is
/// compared without recursion.
pub(crate) fn json_semantic_eq(a: &Json, b: &Json) -> bool {
    let mut stack = vec![(a, b)];
    while let Some((a, b)) = stack.pop() {
        eq_step();
        let equal = match (a, b) {
            (Json::Number(x), Json::Number(y)) => match (x.as_i64(), y.as_i64()) {
                (Some(x), Some(y)) => x == y,
                _ => x.as_f64() == y.as_f64(),
            },
            (Json::Array(x), Json::Array(y)) => {
                stack.extend(x.iter().zip(y));
                x.len() == y.len()
            }
            (Json::Object(x), Json::Object(y)) => {
                for (k, v) in x {
                    match y.get(k) {
                        Some(w) => stack.push((v, w)),
                        None => return false,
                    }
                }
                x.len() == y.len()
            }
            (Json::Null, Json::Null) => true,
            (Json::Bool(x), Json::Bool(y)) => x == y,
            (Json::String(x), Json::String(y)) => x == y,
            _ => false,
        };
        if !equal {
            return false;
        }
    }
    true
}

#[allow(
    clippy::cast_precision_loss,
    reason = "CEL compares mixed numbers as doubles"
)]
fn numeric_cmp(a: &Val<'_>, b: &Val<'_>) -> Option<Ordering> {
    match (a, b) {
        (Val::Int(x), Val::Int(y)) => Some(x.cmp(y)),
        (Val::Uint(x), Val::Uint(y)) => Some(x.cmp(y)),
        (Val::Int(x), Val::Uint(y)) => Some(if *x < 0 {
            Ordering::Less
        } else {
            x.unsigned_abs().cmp(y)
        }),
        (Val::Uint(_), Val::Int(_)) => numeric_cmp(b, a).map(Ordering::reverse),
        (Val::Double(x), Val::Double(y)) => x.partial_cmp(y),
        (Val::Double(x), Val::Int(y)) => x.partial_cmp(&(*y as f64)),
        (Val::Double(x), Val::Uint(y)) => x.partial_cmp(&(*y as f64)),
        (Val::Int(_) | Val::Uint(_), Val::Double(_)) => numeric_cmp(b, a).map(Ordering::reverse),
        _ => None,
    }
}

/// CEL ordering (`<`, `min`, `isSorted`, …).
pub(crate) fn compare(a: &Val<'_>, b: &Val<'_>) -> Res<Ordering> {
    match (a, b) {
        (Val::Bool(x), Val::Bool(y)) => Ok(x.cmp(y)),
        (Val::Str(x), Val::Str(y)) => Ok(x.as_str().cmp(y.as_str())),
        (Val::Bytes(x), Val::Bytes(y)) => Ok(x.cmp(y)),
        (Val::Ts(x), Val::Ts(y)) => Ok(x.cmp(y)),
        (Val::Dur(x), Val::Dur(y)) => Ok(x.cmp(y)),
        (
            Val::Int(_) | Val::Uint(_) | Val::Double(_),
            Val::Int(_) | Val::Uint(_) | Val::Double(_),
        ) => numeric_cmp(a, b).ok_or_else(|| EvalErr::msg("NaN values cannot be ordered")),
        _ => Err(EvalErr::no_overload()),
    }
}
