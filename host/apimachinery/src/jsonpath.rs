//! The JSONPath subset CRDs use (`TABLE-05` printer columns, `SUB-02` scale paths), as
//! client-go's `util/jsonpath` reads it: `.a.b`, `['a.b']`, `[0]`, `[-1]`, `[*]`, `..name`
//! (recursive descent), and filters `[?(@.type=="Ready")]`, `[?(@.x)]`, with `==`, `!=`,
//! `<`, `<=`, `>`, `>=` against string, number or boolean literals. A path may be wrapped
//! in `{…}`.

use serde_json::Value;

/// A parsed path.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonPath {
    steps: Vec<Step>,
}

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Field(String),
    Index(i64),
    Wildcard,
    Recursive(String),
    Filter(Filter),
}

#[derive(Debug, Clone, PartialEq)]
struct Filter {
    path: Vec<String>,
    cmp: Option<(Op, Value)>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// A path that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid JSONPath {path:?}: {reason}")]
pub struct JsonPathError {
    /// The input.
    pub path: String,
    /// What is wrong.
    pub reason: String,
}

impl JsonPath {
    /// Parses a path such as `.spec.replicas` or `{.status.conditions[?(@.type=="Ready")].status}`.
    pub fn parse(input: &str) -> Result<JsonPath, JsonPathError> {
        let err = |reason: &str| JsonPathError {
            path: input.to_owned(),
            reason: reason.to_owned(),
        };
        let mut s = input.trim();
        if let Some(inner) = s.strip_prefix('{').and_then(|x| x.strip_suffix('}')) {
            s = inner.trim();
        }
        if s.is_empty() {
            return Err(err("empty path"));
        }
        let b = s.as_bytes();
        let mut i = 0;
        let mut steps = Vec::new();
        // A leading `$` is allowed and means the root.
        if b.first() == Some(&b'$') {
            i = 1;
        }
        while i < b.len() {
            match b[i] {
                b'.' if b.get(i + 1) == Some(&b'.') => {
                    let (name, next) =
                        ident(s, i + 2).ok_or_else(|| err("expected a name after '..'"))?;
                    steps.push(Step::Recursive(name));
                    i = next;
                }
                b'.' => {
                    if i + 1 == b.len() {
                        break;
                    }
                    if b[i + 1] == b'*' {
                        steps.push(Step::Wildcard);
                        i += 2;
                        continue;
                    }
                    let (name, next) =
                        ident(s, i + 1).ok_or_else(|| err("expected a field name after '.'"))?;
                    steps.push(Step::Field(name));
                    i = next;
                }
                b'[' => {
                    let close = matching_bracket(b, i).ok_or_else(|| err("unterminated '['"))?;
                    let inner = s[i + 1..close].trim();
                    steps.push(bracket(inner).ok_or_else(|| err("invalid bracket expression"))?);
                    i = close + 1;
                }
                _ if steps.is_empty() && i == 0 => {
                    // kubectl accepts paths without the leading dot in some places.
                    let (name, next) = ident(s, i).ok_or_else(|| err("unexpected character"))?;
                    steps.push(Step::Field(name));
                    i = next;
                }
                _ => return Err(err("unexpected character")),
            }
        }
        Ok(JsonPath { steps })
    }

    /// Whether the path is plain dot notation (`.a.b.c`), as scale subresource paths must be.
    pub fn is_simple(&self) -> bool {
        self.steps.iter().all(|s| matches!(s, Step::Field(_)))
    }

    /// The field names of a simple path.
    fn fields(&self) -> Vec<&str> {
        self.steps
            .iter()
            .filter_map(|s| match s {
                Step::Field(f) => Some(f.as_str()),
                _ => None,
            })
            .collect()
    }

    /// Every value the path selects, in document order.
    pub fn find<'a>(&self, root: &'a Value) -> Vec<&'a Value> {
        let mut cur = vec![root];
        for step in &self.steps {
            let mut next = Vec::new();
            for v in cur {
                match step {
                    Step::Field(f) => {
                        if let Some(x) = v.get(f) {
                            next.push(x);
                        }
                    }
                    Step::Index(n) => {
                        if let Value::Array(a) = v {
                            let idx = if *n < 0 { a.len() as i64 + n } else { *n };
                            if let Some(x) = usize::try_from(idx).ok().and_then(|i| a.get(i)) {
                                next.push(x);
                            }
                        }
                    }
                    Step::Wildcard => match v {
                        Value::Array(a) => next.extend(a.iter()),
                        Value::Object(m) => next.extend(m.values()),
                        _ => {}
                    },
                    Step::Recursive(name) => collect_recursive(v, name, &mut next),
                    Step::Filter(f) => {
                        if let Value::Array(a) = v {
                            next.extend(a.iter().filter(|item| f.matches(item)));
                        }
                    }
                }
            }
            cur = next;
        }
        cur
    }

    /// The first value the path selects.
    pub fn first<'a>(&self, root: &'a Value) -> Option<&'a Value> {
        self.find(root).into_iter().next()
    }

    /// Sets the value at a simple path, creating objects on the way. Fails (false) when a
    /// step meets a non-object.
    pub fn set(&self, root: &mut Value, value: Value) -> bool {
        let fields = self.fields();
        if !self.is_simple() || fields.is_empty() {
            return false;
        }
        let mut cur = root;
        for f in &fields[..fields.len() - 1] {
            cur = match cur {
                Value::Object(m) => m
                    .entry((*f).to_owned())
                    .or_insert_with(|| Value::Object(serde_json::Map::new())),
                _ => return false,
            };
        }
        match cur {
            Value::Object(m) => {
                m.insert(fields[fields.len() - 1].to_owned(), value);
                true
            }
            _ => false,
        }
    }
}

fn collect_recursive<'a>(v: &'a Value, name: &str, out: &mut Vec<&'a Value>) {
    match v {
        Value::Object(m) => {
            if let Some(x) = m.get(name) {
                out.push(x);
            }
            for x in m.values() {
                collect_recursive(x, name, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| collect_recursive(x, name, out)),
        _ => {}
    }
}

fn ident(s: &str, start: usize) -> Option<(String, usize)> {
    let rest = &s[start..];
    let len = rest
        .char_indices()
        .find(|(_, c)| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '/')))
        .map_or(rest.len(), |(i, _)| i);
    (len > 0).then(|| (rest[..len].to_owned(), start + len))
}

fn matching_bracket(b: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0;
    let mut quote: Option<u8> = None;
    for (i, &c) in b.iter().enumerate().skip(open) {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, b'\'' | b'"') => quote = Some(c),
            (None, b'[') => depth += 1,
            (None, b']') => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

fn unquote(s: &str) -> Option<String> {
    let s = s.trim();
    let q = s.chars().next()?;
    if (q == '\'' || q == '"') && s.len() >= 2 && s.ends_with(q) {
        Some(s[1..s.len() - 1].to_owned())
    } else {
        None
    }
}

fn bracket(inner: &str) -> Option<Step> {
    if inner == "*" {
        return Some(Step::Wildcard);
    }
    if let Some(name) = unquote(inner) {
        return Some(Step::Field(name));
    }
    if let Ok(n) = inner.parse::<i64>() {
        return Some(Step::Index(n));
    }
    let expr = inner.strip_prefix("?(")?.strip_suffix(')')?.trim();
    let (lhs, cmp) = match ["==", "!=", "<=", ">=", "<", ">"]
        .iter()
        .find_map(|op| expr.find(op).map(|pos| (pos, *op)))
    {
        Some((pos, op)) => {
            let rhs = expr[pos + op.len()..].trim();
            let op = match op {
                "==" => Op::Eq,
                "!=" => Op::Ne,
                "<=" => Op::Le,
                ">=" => Op::Ge,
                "<" => Op::Lt,
                _ => Op::Gt,
            };
            let lit = match unquote(rhs) {
                Some(s) => Value::String(s),
                None => serde_json::from_str(rhs).ok()?,
            };
            (expr[..pos].trim(), Some((op, lit)))
        }
        None => (expr, None),
    };
    let path = lhs.strip_prefix('@')?;
    let path: Vec<String> = path
        .split('.')
        .filter(|p| !p.is_empty())
        .map(str::to_owned)
        .collect();
    Some(Step::Filter(Filter { path, cmp }))
}

impl Filter {
    fn matches(&self, item: &Value) -> bool {
        let mut v = item;
        for p in &self.path {
            match v.get(p) {
                Some(x) => v = x,
                None => return false,
            }
        }
        match &self.cmp {
            None => !v.is_null(),
            Some((op, lit)) => compare(v, *op, lit),
        }
    }
}

fn compare(v: &Value, op: Op, lit: &Value) -> bool {
    use std::cmp::Ordering;
    let ord = match (v, lit) {
        (Value::Number(a), Value::Number(b)) => a
            .as_f64()
            .zip(b.as_f64())
            .and_then(|(a, b)| a.partial_cmp(&b)),
        (Value::String(a), Value::String(b)) => Some(a.cmp(b)),
        (Value::Bool(a), Value::Bool(b)) => Some(a.cmp(b)),
        _ => None,
    };
    match (op, ord) {
        (Op::Eq, Some(o)) => o == Ordering::Equal,
        (Op::Ne, Some(o)) => o != Ordering::Equal,
        (Op::Ne, None) => true,
        (Op::Lt, Some(o)) => o == Ordering::Less,
        (Op::Le, Some(o)) => o != Ordering::Greater,
        (Op::Gt, Some(o)) => o == Ordering::Greater,
        (Op::Ge, Some(o)) => o != Ordering::Less,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc() -> Value {
        json!({"spec":{"replicas":3,"image":"nginx","ports":[{"port":80},{"port":443}]},
               "status":{"conditions":[{"type":"Ready","status":"True"},{"type":"Synced","status":"False"}]},
               "metadata":{"labels":{"app.kubernetes.io/name":"x"}}})
    }

    #[test]
    fn table_05_simple_and_filtered_paths() {
        let d = doc();
        let p = |s: &str| JsonPath::parse(s).unwrap();
        assert_eq!(p(".spec.replicas").first(&d), Some(&json!(3)));
        assert_eq!(p("{.spec.image}").first(&d), Some(&json!("nginx")));
        assert_eq!(p(".spec.ports[1].port").first(&d), Some(&json!(443)));
        assert_eq!(p(".spec.ports[-1].port").first(&d), Some(&json!(443)));
        assert_eq!(
            p(".spec.ports[*].port").find(&d),
            vec![&json!(80), &json!(443)]
        );
        assert_eq!(
            p(r#".status.conditions[?(@.type=="Ready")].status"#).first(&d),
            Some(&json!("True"))
        );
        assert_eq!(
            p(".status.conditions[?(@.type!='Ready')].type").first(&d),
            Some(&json!("Synced"))
        );
        assert_eq!(
            p(".spec.ports[?(@.port > 100)].port").first(&d),
            Some(&json!(443))
        );
        assert_eq!(
            p(".metadata.labels['app.kubernetes.io/name']").first(&d),
            Some(&json!("x"))
        );
        assert_eq!(p("..port").find(&d).len(), 2);
        assert!(p(".spec.missing").first(&d).is_none());
        assert!(JsonPath::parse(".spec.ports[0").is_err());
        // A one-byte operator followed by a multi-byte character.
        assert!(JsonPath::parse(".spec.ports[?(@.port<é)]").is_err());
        assert_eq!(
            p(".spec.ports[?(@.port<=80)].port").find(&d),
            vec![&json!(80)]
        );
        assert!(JsonPath::parse("").is_err());
    }

    #[test]
    fn sub_02_simple_paths_can_be_set() {
        let mut d = json!({"spec":{}});
        let p = JsonPath::parse(".spec.replicas").unwrap();
        assert!(p.is_simple());
        assert!(p.set(&mut d, json!(5)));
        assert_eq!(d["spec"]["replicas"], 5);
        let deep = JsonPath::parse(".spec.scale.count").unwrap();
        assert!(deep.set(&mut d, json!(1)));
        assert_eq!(d["spec"]["scale"]["count"], 1);
        assert!(!JsonPath::parse(".spec.a[0]").unwrap().is_simple());
    }
}
