//! Expressions over untyped JSON: what a `ValidatingAdmissionPolicy` evaluates (`object`,
//! `oldObject`, `request`, `params`, `namespaceObject`, `variables`). The variables are
//! declared `dyn` — a policy may match many kinds, so no one schema types them — and their
//! values are read from the JSON as what they are: objects are maps, numbers ints (or
//! doubles), and so on. Type errors that a schema would catch at compile time surface at
//! evaluation. Each evaluation is metered with kube's per-call limit.

use serde_json::Value as Json;

use crate::compile::{Compiled, compile_dyn};
use crate::eval::{Meter, run};
use crate::value::{EvalErr, MapV, Val, from_json};

/// The work fuse of one evaluation (see the crate docs, "Cost and limits").
const WORK_LIMIT: u64 = 40_000_000;

/// A compiled expression whose variables are untyped JSON.
pub struct Expression {
    compiled: Compiled,
}

impl std::fmt::Debug for Expression {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Expression")
            .field("output", &self.output_type())
            .finish_non_exhaustive()
    }
}

/// What an evaluation gave.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    Bool(bool),
    String(String),
    Null,
    /// Any other value, as JSON (lists, maps, numbers).
    Json(Json),
}

impl Expression {
    /// Parses and type-checks `source` with `variables` declared (as `dyn`); the error is
    /// cel-go's text (`ERROR: <input>:1:5: undeclared reference to 'x' ...`).
    pub fn compile(source: &str, variables: &[&'static str]) -> Result<Expression, String> {
        compile_dyn(source, variables)
            .map(|compiled| Expression { compiled })
            .map_err(|e| e.to_string())
    }

    /// The CEL type of the result as the checker knows it (`bool`, `string`, `dyn`, ...).
    pub fn output_type(&self) -> String {
        self.compiled.output.to_string()
    }

    /// Whether the result can be of CEL type `name` (it is, or it is `dyn`).
    pub fn may_return(&self, name: &str) -> bool {
        let t = self.output_type();
        t == name || t == "dyn"
    }

    /// Evaluates with each variable bound to its JSON value (variables left out are
    /// `null`); the error is cel-go's evaluation error text.
    pub fn evaluate(&self, bindings: &[(&'static str, &Json)]) -> Result<Output, String> {
        let vars: Vec<(&'static str, Val<'_>)> = bindings
            .iter()
            .map(|(name, v)| from_json(v, crate::decl::dynamic()).map(|val| (*name, val)))
            .collect::<Result<_, _>>()
            .map_err(message)?;
        let mut meter = Meter {
            cost: 0,
            limit: crate::PER_CALL_LIMIT,
            work: 0,
            work_limit: WORK_LIMIT,
        };
        let mut cache = crate::eval::RegexCache::new();
        let v = run(&self.compiled.program, vars, &mut meter, &mut cache).map_err(message)?;
        Ok(match v {
            Val::Bool(b) => Output::Bool(b),
            Val::Str(s) => Output::String(s.as_str().to_owned()),
            Val::Null => Output::Null,
            other => Output::Json(
                to_json(&other)
                    .ok_or_else(|| "the result cannot be represented as JSON".to_owned())?,
            ),
        })
    }
}

fn message(e: EvalErr) -> String {
    match e {
        EvalErr::Msg(m) => m,
        EvalErr::CostLimit => "operation cancelled: actual cost limit exceeded".into(),
        EvalErr::Fuse => "operation cancelled: evaluation work limit exceeded".into(),
    }
}

/// A value as JSON, where it has a JSON form.
fn to_json(v: &Val<'_>) -> Option<Json> {
    Some(match v {
        Val::Null => Json::Null,
        Val::Bool(b) => Json::Bool(*b),
        Val::Int(i) => Json::from(*i),
        Val::Uint(u) => Json::from(*u),
        Val::Double(d) => serde_json::Number::from_f64(*d).map(Json::Number)?,
        Val::Str(s) => Json::String(s.as_str().to_owned()),
        Val::List(l) => Json::Array(
            l.items()
                .ok()?
                .iter()
                .map(to_json)
                .collect::<Option<Vec<_>>>()?,
        ),
        Val::Map(MapV::Json(m, _)) | Val::Obj(m, _) => Json::Object((*m).clone()),
        Val::Map(MapV::Built(entries)) => {
            let mut m = serde_json::Map::new();
            for (k, v) in entries.iter() {
                let Val::Str(k) = k else { return None };
                m.insert(k.as_str().to_owned(), to_json(v)?);
            }
            Json::Object(m)
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use serde_json::json;

    use super::*;

    const VARS: &[&str] = &["object", "oldObject", "params", "variables"];

    fn eval(src: &str, object: Json) -> Result<Output, String> {
        let e = Expression::compile(src, VARS)?;
        e.evaluate(&[("object", &object), ("oldObject", &Json::Null)])
    }

    #[test]
    fn untyped_json_reads_as_what_it_is() {
        let w = json!({"spec": {"size": 9, "replicas": 6, "tags": ["a", "b"], "ratio": 0.5}, "metadata": {"name": "w", "labels": {"team": "x"}}});
        assert_eq!(
            eval(
                "object.spec.size >= 8 && object.spec.replicas > 5",
                w.clone()
            ),
            Ok(Output::Bool(true))
        );
        assert_eq!(
            eval("object.metadata.name + '!'", w.clone()),
            Ok(Output::String("w!".into()))
        );
        assert_eq!(
            eval("'b' in object.spec.tags", w.clone()),
            Ok(Output::Bool(true))
        );
        assert_eq!(
            eval("has(object.metadata.labels.team)", w.clone()),
            Ok(Output::Bool(true))
        );
        assert_eq!(
            eval("object.spec.ratio * 2.0", w.clone()),
            Ok(Output::Json(json!(1.0)))
        );
        assert_eq!(
            eval("object.spec.tags.map(t, t + t)", w.clone()),
            Ok(Output::Json(json!(["aa", "bb"])))
        );
        assert_eq!(eval("oldObject == null", w.clone()), Ok(Output::Bool(true)));
        assert_eq!(
            eval("object.spec.missing", w).unwrap_err(),
            "no such key: missing"
        );
    }

    #[test]
    fn compile_errors_are_cel_gos() {
        let e = Expression::compile("object.spec.x > ", VARS).unwrap_err();
        assert!(
            e.starts_with("compilation failed: ERROR: <input>:1:"),
            "{e}"
        );
        let e = Expression::compile("authorizer.path('/x')", VARS).unwrap_err();
        assert!(e.contains("undeclared reference to 'authorizer'"), "{e}");
        let e = Expression::compile("object.spec.size > 3", VARS).unwrap();
        assert!(e.may_return("bool"));
        let e = Expression::compile("'text'", VARS).unwrap();
        assert!(!e.may_return("bool") && e.may_return("string"));
    }

    #[test]
    fn evaluation_is_metered() {
        let big = json!({"items": (0..1000).collect::<Vec<_>>()});
        let e = Expression::compile(
            "object.items.all(a, object.items.all(b, object.items.all(c, a + b + c >= 0)))",
            VARS,
        )
        .unwrap();
        let err = e.evaluate(&[("object", &big)]).unwrap_err();
        assert!(err.contains("cost limit exceeded"), "{err}");
    }
}
