//! Label and field selectors (SEL-01, GAP-04).
//!
//! * [`LabelSelector`] is `k8s.io/apimachinery/pkg/labels`: the `labelSelector` query
//!   parameter grammar (`k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`,
//!   `k>N`, `k<N`, commas meaning AND), the `metav1.LabelSelector` object form, matching and
//!   the canonical `String()` form.
//! * [`FieldSelector`] is `k8s.io/apimachinery/pkg/fields`: `fieldSelector` terms `f=v`,
//!   `f==v`, `f!=v` joined by commas, with `\,`, `\=` and `\\` escapes in values.
//! * [`builtin_field_value`] / [`builtin_field_supported`] are kube-apiserver's per-type field
//!   label conversions and selectable field sets for built-in resources (`involvedObject.*`
//!   on events is what `kubectl describe` sends, see KUBECTL-WIRE §5 and §7).
//!
//! Error messages ([`SelectorError`]'s `Display`) are Kubernetes' own wording, since clients
//! print them.

use std::collections::BTreeSet;
use std::fmt;

use serde_json::{Map, Value};

use crate::validation::{
    FieldError, aggregate_message, go_quote, is_qualified_name, is_valid_label_value,
};

/// Why a selector could not be built. `Display` is the message Kubernetes gives for the same
/// input.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SelectorError {
    /// A syntax error in a label selector string, with the complete Go message, e.g.
    /// `unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt` or
    /// `found ',', expected: !, identifier, or 'end of string'`.
    #[error("{0}")]
    LabelSyntax(String),
    /// A requirement whose key, values or operator failed validation (`NewRequirement`). From
    /// the string parser the message is prefixed with `unable to parse requirement: `.
    #[error("{}{}", if *.from_parser { "unable to parse requirement: " } else { "" }, aggregate_message(.errors))]
    InvalidRequirement {
        /// The field errors, with paths like `key`, `values[0][app]` or `<nil>`.
        errors: Vec<FieldError>,
        /// Whether the error came from parsing a selector string.
        from_parser: bool,
    },
    /// A `metav1.LabelSelector` expression with an unknown operator.
    #[error("{} is not a valid label selector operator", go_quote(.0))]
    UnknownOperator(String),
    /// A `metav1.LabelSelector` that is not shaped like one.
    #[error("invalid label selector: {0}")]
    Malformed(String),
    /// A field selector term without `=`, `==` or `!=`.
    #[error("invalid selector: '{selector}'; can't understand '{term}'")]
    FieldTerm {
        /// The whole selector.
        selector: String,
        /// The term that could not be split.
        term: String,
    },
    /// A backslash not followed by `\`, `,` or `=` in a field selector value.
    #[error("invalid field selector: invalid escape sequence: {0}")]
    InvalidEscapeSequence(String),
    /// An unescaped `,` or `=` in a field selector value. Go prints the rune as a number.
    #[error("invalid field selector: unescaped character in value: {}", u32::from(*.0))]
    UnescapedCharacter(char),
}

// =============================================================================================
// Label selectors
// =============================================================================================

/// A label requirement operator (`selection.Operator`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LabelOp {
    /// `k in (a,b)`; also matchExpressions `In`.
    In,
    /// `k notin (a,b)`; also matchExpressions `NotIn`. Matches objects without the label.
    NotIn,
    /// `k=v`; also matchLabels.
    Equals,
    /// `k==v`.
    DoubleEquals,
    /// `k!=v`. Matches objects without the label.
    NotEquals,
    /// `k`; also matchExpressions `Exists`.
    Exists,
    /// `!k`; also matchExpressions `DoesNotExist`.
    DoesNotExist,
    /// `k>N` (integers).
    GreaterThan,
    /// `k<N` (integers).
    LessThan,
}

impl LabelOp {
    /// The `selection.Operator` string: `in`, `notin`, `=`, `==`, `!=`, `exists`, `!`, `gt`,
    /// `lt`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::In => "in",
            Self::NotIn => "notin",
            Self::Equals => "=",
            Self::DoubleEquals => "==",
            Self::NotEquals => "!=",
            Self::Exists => "exists",
            Self::DoesNotExist => "!",
            Self::GreaterThan => "gt",
            Self::LessThan => "lt",
        }
    }
}

/// One `key op values` term of a label selector (`labels.Requirement`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelRequirement {
    key: String,
    op: LabelOp,
    values: Vec<String>,
}

impl LabelRequirement {
    /// Builds a validated requirement, as `labels.NewRequirement`: the key is a qualified
    /// name; `In`/`NotIn` need values; `=`, `==`, `!=` exactly one; `Exists`/`DoesNotExist`
    /// none; `>`/`<` exactly one integer; every value is a valid label value.
    pub fn new(key: &str, op: LabelOp, values: Vec<String>) -> Result<Self, SelectorError> {
        validate_requirement(key, op, &values, "").map_err(|errors| {
            SelectorError::InvalidRequirement {
                errors,
                from_parser: false,
            }
        })?;
        Ok(Self {
            key: key.to_owned(),
            op,
            values,
        })
    }

    /// The label key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The operator.
    pub fn op(&self) -> LabelOp {
        self.op
    }

    /// The values (empty for `Exists`/`DoesNotExist`).
    pub fn values(&self) -> &[String] {
        &self.values
    }

    /// Whether the labels satisfy this requirement. `notin`, `!=` and `!k` match objects that
    /// lack the label; `in`, `=`, `>`, `<` and `k` do not.
    pub fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        let present = labels.and_then(|l| l.get(&self.key));
        // A non-string label value (not valid Kubernetes) is present but equals nothing.
        let value = present.map(|v| v.as_str());
        let has_value = |v: Option<&str>| v.is_some_and(|v| self.values.iter().any(|x| x == v));
        match self.op {
            LabelOp::In | LabelOp::Equals | LabelOp::DoubleEquals => match value {
                None => false,
                Some(v) => has_value(v),
            },
            LabelOp::NotIn | LabelOp::NotEquals => match value {
                None => true,
                Some(v) => !has_value(v),
            },
            LabelOp::Exists => present.is_some(),
            LabelOp::DoesNotExist => present.is_none(),
            LabelOp::GreaterThan | LabelOp::LessThan => {
                let Some(Some(actual)) = value else {
                    return false;
                };
                let Ok(actual) = actual.parse::<i64>() else {
                    return false;
                };
                let [wanted] = self.values.as_slice() else {
                    return false;
                };
                let Ok(wanted) = wanted.parse::<i64>() else {
                    return false;
                };
                if self.op == LabelOp::GreaterThan {
                    actual > wanted
                } else {
                    actual < wanted
                }
            }
        }
    }
}

impl fmt::Display for LabelRequirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.op == LabelOp::DoesNotExist {
            f.write_str("!")?;
        }
        f.write_str(&self.key)?;
        let op = match self.op {
            LabelOp::Equals => "=",
            LabelOp::DoubleEquals => "==",
            LabelOp::NotEquals => "!=",
            LabelOp::In => " in ",
            LabelOp::NotIn => " notin ",
            LabelOp::GreaterThan => ">",
            LabelOp::LessThan => "<",
            LabelOp::Exists | LabelOp::DoesNotExist => return Ok(()),
        };
        f.write_str(op)?;
        let set = matches!(self.op, LabelOp::In | LabelOp::NotIn);
        if set {
            f.write_str("(")?;
        }
        if let [only] = self.values.as_slice() {
            f.write_str(only)?;
        } else {
            let mut sorted: Vec<&str> = self.values.iter().map(String::as_str).collect();
            sorted.sort_unstable();
            f.write_str(&sorted.join(","))?;
        }
        if set {
            f.write_str(")")?;
        }
        Ok(())
    }
}

/// `labels.NewRequirement`'s checks. `path` is the field path prefix ("" for none, which is
/// what the string parser and `LabelSelectorAsSelector` use).
fn validate_requirement(
    key: &str,
    op: LabelOp,
    values: &[String],
    path: &str,
) -> Result<(), Vec<FieldError>> {
    let child = |name: &str| {
        if path.is_empty() {
            name.to_owned()
        } else {
            format!("{path}.{name}")
        }
    };
    let values_path = child("values");
    let values_json = || Value::Array(values.iter().map(|v| Value::from(v.as_str())).collect());
    let mut errs = Vec::new();
    let key_errs = is_qualified_name(key);
    if !key_errs.is_empty() {
        errs.push(FieldError::invalid(child("key"), key, key_errs.join("; ")));
    }
    match op {
        LabelOp::In | LabelOp::NotIn => {
            if values.is_empty() {
                errs.push(FieldError::invalid(
                    values_path.clone(),
                    values_json(),
                    "for 'in', 'notin' operators, values set can't be empty",
                ));
            }
        }
        LabelOp::Equals | LabelOp::DoubleEquals | LabelOp::NotEquals => {
            if values.len() != 1 {
                errs.push(FieldError::invalid(
                    values_path.clone(),
                    values_json(),
                    "exact-match compatibility requires one single value",
                ));
            }
        }
        LabelOp::Exists | LabelOp::DoesNotExist => {
            if !values.is_empty() {
                errs.push(FieldError::invalid(
                    values_path.clone(),
                    values_json(),
                    "values set must be empty for exists and does not exist",
                ));
            }
        }
        LabelOp::GreaterThan | LabelOp::LessThan => {
            if values.len() != 1 {
                errs.push(FieldError::invalid(
                    values_path.clone(),
                    values_json(),
                    "for 'Gt', 'Lt' operators, exactly one value is required",
                ));
            }
            for (i, v) in values.iter().enumerate() {
                if v.parse::<i64>().is_err() {
                    errs.push(FieldError::invalid(
                        format!("{values_path}[{i}]"),
                        v.as_str(),
                        "for 'Gt', 'Lt' operators, the value must be an integer",
                    ));
                }
            }
        }
    }
    for (i, v) in values.iter().enumerate() {
        let value_errs = is_valid_label_value(v);
        if !value_errs.is_empty() {
            errs.push(FieldError::invalid(
                format!("{values_path}[{i}][{key}]"),
                v.as_str(),
                value_errs.join("; "),
            ));
        }
    }
    if errs.is_empty() { Ok(()) } else { Err(errs) }
}

/// A label selector: requirements ANDed together (`labels.Selector`).
///
/// `Default` is "everything". A selector built from an absent `metav1.LabelSelector` is
/// "nothing" ([`LabelSelector::nothing`]), which matches no object.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LabelSelector {
    requirements: Vec<LabelRequirement>,
    nothing: bool,
}

impl LabelSelector {
    /// The selector that matches every object (`labels.Everything()`).
    pub fn everything() -> Self {
        Self::default()
    }

    /// The selector that matches no object (`labels.Nothing()`).
    pub fn nothing() -> Self {
        Self {
            requirements: Vec::new(),
            nothing: true,
        }
    }

    /// Parses the `labelSelector` query parameter grammar (`labels.Parse`):
    ///
    /// ```text
    /// selector    := requirement ("," requirement)*
    /// requirement := "!" KEY | KEY [ ("in"|"notin") "(" VALUE ("," VALUE)* ")"
    ///                              | ("="|"=="|"!="|">"|"<") VALUE ]
    /// ```
    ///
    /// Whitespace between tokens is ignored; the empty string is everything; `in`/`notin`
    /// are keywords only in operator position. Keys must be qualified names and values valid
    /// label values; `>`/`<` need an integer. Requirements are kept sorted by key, so
    /// `Display` gives Go's canonical form.
    pub fn parse(s: &str) -> Result<Self, SelectorError> {
        let mut parser = Parser {
            items: lex(s),
            pos: 0,
        };
        let mut requirements = parser.parse()?;
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(Self {
            requirements,
            nothing: false,
        })
    }

    /// Converts a `metav1.LabelSelector` object (`{matchLabels, matchExpressions}`) as
    /// `metav1.LabelSelectorAsSelector` does: `null` is nothing, `{}` is everything,
    /// matchLabels become `=` requirements, matchExpressions use `In`, `NotIn`, `Exists`,
    /// `DoesNotExist`.
    pub fn from_label_selector(v: &Value) -> Result<Self, SelectorError> {
        let obj = match v {
            Value::Null => return Ok(Self::nothing()),
            Value::Object(obj) => obj,
            _ => return Err(SelectorError::Malformed("must be an object".into())),
        };
        let match_labels = match obj.get("matchLabels") {
            None | Some(Value::Null) => None,
            Some(Value::Object(m)) => Some(m),
            Some(_) => {
                return Err(SelectorError::Malformed(
                    "matchLabels must be an object".into(),
                ));
            }
        };
        let match_expressions = match obj.get("matchExpressions") {
            None | Some(Value::Null) => None,
            Some(Value::Array(a)) => Some(a),
            Some(_) => {
                return Err(SelectorError::Malformed(
                    "matchExpressions must be an array".into(),
                ));
            }
        };
        let mut requirements = Vec::new();
        if let Some(labels) = match_labels {
            let mut entries: Vec<(&String, &Value)> = labels.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            for (k, v) in entries {
                let v = match v {
                    Value::String(s) => s.clone(),
                    Value::Null => String::new(),
                    _ => {
                        return Err(SelectorError::Malformed(format!(
                            "matchLabels[{k}] must be a string"
                        )));
                    }
                };
                requirements.push(LabelRequirement::new(k, LabelOp::Equals, vec![v])?);
            }
        }
        for (i, expr) in match_expressions.into_iter().flatten().enumerate() {
            let Some(expr) = expr.as_object() else {
                return Err(SelectorError::Malformed(format!(
                    "matchExpressions[{i}] must be an object"
                )));
            };
            let text = |name: &str| match expr.get(name) {
                None | Some(Value::Null) => Ok(""),
                Some(Value::String(s)) => Ok(s.as_str()),
                Some(_) => Err(SelectorError::Malformed(format!(
                    "matchExpressions[{i}].{name} must be a string"
                ))),
            };
            let key = text("key")?;
            let operator = text("operator")?;
            let op = match operator {
                "In" => LabelOp::In,
                "NotIn" => LabelOp::NotIn,
                "Exists" => LabelOp::Exists,
                "DoesNotExist" => LabelOp::DoesNotExist,
                other => return Err(SelectorError::UnknownOperator(other.to_owned())),
            };
            let values = match expr.get("values") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(items)) => {
                    let mut values = Vec::with_capacity(items.len());
                    for item in items {
                        let Some(s) = item.as_str() else {
                            return Err(SelectorError::Malformed(format!(
                                "matchExpressions[{i}].values must be strings"
                            )));
                        };
                        values.push(s.to_owned());
                    }
                    values
                }
                Some(_) => {
                    return Err(SelectorError::Malformed(format!(
                        "matchExpressions[{i}].values must be an array"
                    )));
                }
            };
            requirements.push(LabelRequirement::new(key, op, values)?);
        }
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(Self {
            requirements,
            nothing: false,
        })
    }

    /// A selector requiring exactly these labels (`labels.SelectorFromValidatedSet`, e.g. a
    /// Service's or ReplicationController's `spec.selector`). Not validated; an empty map is
    /// everything. Non-string values are taken as `""`.
    pub fn from_set(set: &Map<String, Value>) -> Self {
        let mut requirements: Vec<LabelRequirement> = set
            .iter()
            .map(|(k, v)| LabelRequirement {
                key: k.clone(),
                op: LabelOp::Equals,
                values: vec![v.as_str().unwrap_or_default().to_owned()],
            })
            .collect();
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Self {
            requirements,
            nothing: false,
        }
    }

    /// Adds a requirement (ANDed), keeping the requirements sorted by key.
    pub fn add(&mut self, requirement: LabelRequirement) {
        self.requirements.push(requirement);
        self.requirements.sort_by(|a, b| a.key.cmp(&b.key));
    }

    /// Whether an object with these labels (string values) is selected.
    pub fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        !self.nothing && self.requirements.iter().all(|r| r.matches(labels))
    }

    /// Whether this selector selects everything (`Empty()`): no requirements.
    pub fn is_everything(&self) -> bool {
        !self.nothing && self.requirements.is_empty()
    }

    /// Whether this is [`LabelSelector::nothing`].
    pub fn matches_nothing(&self) -> bool {
        self.nothing
    }

    /// The requirements, sorted by key.
    pub fn requirements(&self) -> &[LabelRequirement] {
        &self.requirements
    }

    /// The single value the selector requires for `label` (`=`, `==` or a one-value `in`),
    /// judged on the first requirement with that key (`RequiresExactMatch`).
    pub fn requires_exact_match(&self, label: &str) -> Option<&str> {
        let r = self.requirements.iter().find(|r| r.key == label)?;
        match (r.op, r.values.as_slice()) {
            (LabelOp::Equals | LabelOp::DoubleEquals | LabelOp::In, [only]) => Some(only),
            _ => None,
        }
    }
}

/// The canonical string form (Go's `String()`): requirements sorted by key, joined by `,`;
/// set values sorted (`x in (a,b)`); `""` for everything and nothing.
impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Label selector lexer and parser (labels.Lexer / labels.Parser)
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    Error,
    End,
    ClosePar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

#[derive(Debug, Clone)]
struct Item {
    tok: Tok,
    lit: String,
}

fn is_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

fn special_token(s: &[u8]) -> Option<Tok> {
    Some(match s {
        b")" => Tok::ClosePar,
        b"," => Tok::Comma,
        b"!" => Tok::DoesNotExist,
        b"==" => Tok::DoubleEquals,
        b"=" => Tok::Equals,
        b">" => Tok::GreaterThan,
        b"<" => Tok::LessThan,
        b"!=" => Tok::NotEquals,
        b"(" => Tok::OpenPar,
        _ => return None,
    })
}

/// The byte-level lexer. Like Go's, a NUL byte reads as end of input.
struct Lexer<'a> {
    s: &'a str,
    pos: usize,
}

impl Lexer<'_> {
    fn read(&mut self) -> u8 {
        match self.s.as_bytes().get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                b
            }
            None => 0,
        }
    }

    fn unread(&mut self) {
        self.pos = self.pos.saturating_sub(1);
    }

    fn text(&self, start: usize, end: usize) -> String {
        String::from_utf8_lossy(self.s.as_bytes().get(start..end).unwrap_or_default()).into_owned()
    }

    fn next_item(&mut self) -> Item {
        let mut ch = self.read();
        while is_whitespace(ch) {
            ch = self.read();
        }
        if ch == 0 {
            return Item {
                tok: Tok::End,
                lit: String::new(),
            };
        }
        self.unread();
        if is_special(ch) {
            self.scan_special()
        } else {
            self.scan_identifier()
        }
    }

    fn scan_identifier(&mut self) -> Item {
        let start = self.pos;
        let mut end = start;
        loop {
            let ch = self.read();
            if ch == 0 {
                break;
            }
            if is_special(ch) || is_whitespace(ch) {
                self.unread();
                break;
            }
            end = self.pos;
        }
        let lit = self.text(start, end);
        let tok = match lit.as_str() {
            "in" => Tok::In,
            "notin" => Tok::NotIn,
            _ => Tok::Identifier,
        };
        Item { tok, lit }
    }

    fn scan_special(&mut self) -> Item {
        let start = self.pos;
        let mut last: Option<(Tok, usize)> = None;
        loop {
            let ch = self.read();
            if ch == 0 {
                break;
            }
            if !is_special(ch) {
                self.unread();
                break;
            }
            let buffer = self.s.as_bytes().get(start..self.pos).unwrap_or_default();
            if let Some(tok) = special_token(buffer) {
                last = Some((tok, self.pos));
            } else if last.is_some() {
                self.unread();
                break;
            }
        }
        match last {
            Some((tok, end)) => Item {
                tok,
                lit: self.text(start, end),
            },
            None => Item {
                tok: Tok::Error,
                lit: format!(
                    "error expected: keyword found '{}'",
                    self.text(start, self.pos)
                ),
            },
        }
    }
}

fn lex(s: &str) -> Vec<Item> {
    let mut lexer = Lexer { s, pos: 0 };
    let mut items = Vec::new();
    loop {
        let item = lexer.next_item();
        let end = item.tok == Tok::End;
        items.push(item);
        if end {
            return items;
        }
    }
}

/// Whether `in`/`notin` are keywords (operator position) or plain identifiers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

/// A requirement-level failure; the caller adds `unable to parse requirement: `.
enum RequirementError {
    Syntax(String),
    Invalid(Vec<FieldError>),
}

struct Parser {
    items: Vec<Item>,
    pos: usize,
}

impl Parser {
    fn item(&self, pos: usize) -> (Tok, &str) {
        // The item list always ends with End, which is never consumed past.
        match self.items.get(pos).or_else(|| self.items.last()) {
            Some(item) => (item.tok, item.lit.as_str()),
            None => (Tok::End, ""),
        }
    }

    fn lookahead(&self, ctx: Context) -> (Tok, String) {
        let (tok, lit) = self.item(self.pos);
        (adjust(tok, ctx), lit.to_owned())
    }

    fn consume(&mut self, ctx: Context) -> (Tok, String) {
        let found = self.lookahead(ctx);
        self.pos += 1;
        found
    }

    fn parse(&mut self) -> Result<Vec<LabelRequirement>, SelectorError> {
        let mut requirements = Vec::new();
        loop {
            let (tok, lit) = self.lookahead(Context::Values);
            match tok {
                Tok::Identifier | Tok::DoesNotExist => {
                    let r = self.parse_requirement().map_err(|e| match e {
                        RequirementError::Syntax(msg) => SelectorError::LabelSyntax(format!(
                            "unable to parse requirement: {msg}"
                        )),
                        RequirementError::Invalid(errors) => SelectorError::InvalidRequirement {
                            errors,
                            from_parser: true,
                        },
                    })?;
                    requirements.push(r);
                    let (t, l) = self.consume(Context::Values);
                    match t {
                        Tok::End => return Ok(requirements),
                        Tok::Comma => {
                            let (t2, l2) = self.lookahead(Context::Values);
                            if t2 != Tok::Identifier && t2 != Tok::DoesNotExist {
                                return Err(SelectorError::LabelSyntax(format!(
                                    "found '{l2}', expected: identifier after ','"
                                )));
                            }
                        }
                        _ => {
                            return Err(SelectorError::LabelSyntax(format!(
                                "found '{l}', expected: ',' or 'end of string'"
                            )));
                        }
                    }
                }
                Tok::End => return Ok(requirements),
                _ => {
                    return Err(SelectorError::LabelSyntax(format!(
                        "found '{lit}', expected: !, identifier, or 'end of string'"
                    )));
                }
            }
        }
    }

    fn parse_requirement(&mut self) -> Result<LabelRequirement, RequirementError> {
        let (key, inferred) = self.parse_key_and_infer_operator()?;
        let (op, values) = match inferred {
            Some(op) => (op, Vec::new()),
            None => {
                let op = self.parse_operator()?;
                let values = match op {
                    LabelOp::In | LabelOp::NotIn => self.parse_values()?,
                    _ => self.parse_exact_value()?,
                };
                (op, values.into_iter().collect())
            }
        };
        validate_requirement(&key, op, &values, "").map_err(RequirementError::Invalid)?;
        Ok(LabelRequirement { key, op, values })
    }

    /// Reads `[!] KEY`; infers `Exists` (or keeps `DoesNotExist`) when the key ends the
    /// requirement. `None` means a binary operator follows.
    fn parse_key_and_infer_operator(
        &mut self,
    ) -> Result<(String, Option<LabelOp>), RequirementError> {
        let mut op = None;
        let (mut tok, mut lit) = self.consume(Context::Values);
        if tok == Tok::DoesNotExist {
            op = Some(LabelOp::DoesNotExist);
            (tok, lit) = self.consume(Context::Values);
        }
        if tok != Tok::Identifier {
            return Err(RequirementError::Syntax(format!(
                "found '{lit}', expected: identifier"
            )));
        }
        let key_errs = is_qualified_name(&lit);
        if !key_errs.is_empty() {
            // Go validates with a nil field path here, which prints as "<nil>".
            return Err(RequirementError::Invalid(vec![FieldError::invalid(
                "<nil>",
                lit.as_str(),
                key_errs.join("; "),
            )]));
        }
        let (next, _) = self.lookahead(Context::Values);
        if (next == Tok::End || next == Tok::Comma) && op.is_none() {
            op = Some(LabelOp::Exists);
        }
        Ok((lit, op))
    }

    fn parse_operator(&mut self) -> Result<LabelOp, RequirementError> {
        let (tok, lit) = self.consume(Context::KeyAndOperator);
        Ok(match tok {
            Tok::In => LabelOp::In,
            Tok::Equals => LabelOp::Equals,
            Tok::DoubleEquals => LabelOp::DoubleEquals,
            Tok::GreaterThan => LabelOp::GreaterThan,
            Tok::LessThan => LabelOp::LessThan,
            Tok::NotIn => LabelOp::NotIn,
            Tok::NotEquals => LabelOp::NotEquals,
            _ => {
                return Err(RequirementError::Syntax(format!(
                    "found '{lit}', expected: in, notin, =, ==, !=, gt, lt"
                )));
            }
        })
    }

    /// `( VALUE, … )`; `()` is the set `{""}`; empty items are `""`.
    fn parse_values(&mut self) -> Result<BTreeSet<String>, RequirementError> {
        let (tok, lit) = self.consume(Context::Values);
        if tok != Tok::OpenPar {
            return Err(RequirementError::Syntax(format!(
                "found '{lit}' expected: '('"
            )));
        }
        let (tok, lit) = self.lookahead(Context::Values);
        match tok {
            Tok::Identifier | Tok::Comma => {
                let set = self.parse_identifiers_list()?;
                let (tok, _) = self.consume(Context::Values);
                if tok != Tok::ClosePar {
                    return Err(RequirementError::Syntax(format!(
                        "found '{lit}', expected: ')'"
                    )));
                }
                Ok(set)
            }
            Tok::ClosePar => {
                self.consume(Context::Values);
                Ok(BTreeSet::from([String::new()]))
            }
            _ => Err(RequirementError::Syntax(format!(
                "found '{lit}', expected: ',', ')' or identifier"
            ))),
        }
    }

    fn parse_identifiers_list(&mut self) -> Result<BTreeSet<String>, RequirementError> {
        let mut set = BTreeSet::new();
        loop {
            let (tok, lit) = self.consume(Context::Values);
            match tok {
                Tok::Identifier => {
                    set.insert(lit);
                    let (tok2, lit2) = self.lookahead(Context::Values);
                    match tok2 {
                        Tok::Comma => {}
                        Tok::ClosePar => return Ok(set),
                        _ => {
                            return Err(RequirementError::Syntax(format!(
                                "found '{lit2}', expected: ',' or ')'"
                            )));
                        }
                    }
                }
                Tok::Comma => {
                    if set.is_empty() {
                        set.insert(String::new());
                    }
                    let (tok2, _) = self.lookahead(Context::Values);
                    if tok2 == Tok::ClosePar {
                        set.insert(String::new());
                        return Ok(set);
                    }
                    if tok2 == Tok::Comma {
                        set.insert(String::new());
                    }
                }
                _ => {
                    return Err(RequirementError::Syntax(format!(
                        "found '{lit}', expected: ',', or identifier"
                    )));
                }
            }
        }
    }

    /// The value after `=`, `==`, `!=`, `>` or `<`; nothing (end or `,`) is `""`.
    fn parse_exact_value(&mut self) -> Result<BTreeSet<String>, RequirementError> {
        let (tok, _) = self.lookahead(Context::Values);
        if tok == Tok::End || tok == Tok::Comma {
            return Ok(BTreeSet::from([String::new()]));
        }
        let (tok, lit) = self.consume(Context::Values);
        if tok == Tok::Identifier {
            Ok(BTreeSet::from([lit]))
        } else {
            Err(RequirementError::Syntax(format!(
                "found '{lit}', expected: identifier"
            )))
        }
    }
}

fn adjust(tok: Tok, ctx: Context) -> Tok {
    match (ctx, tok) {
        (Context::Values, Tok::In | Tok::NotIn) => Tok::Identifier,
        _ => tok,
    }
}

// =============================================================================================
// Field selectors
// =============================================================================================

/// A field selector operator. `==` is the same as `=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldOp {
    /// `f=v` or `f==v`.
    Equals,
    /// `f!=v`.
    NotEquals,
}

/// One `field op value` term of a field selector; `value` is unescaped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldRequirement {
    /// The field label, e.g. `metadata.name` or `involvedObject.kind`.
    pub field: String,
    /// The operator.
    pub op: FieldOp,
    /// The value, with `\,`, `\=` and `\\` already unescaped.
    pub value: String,
}

/// A field selector: terms ANDed together (`fields.Selector`). `Default` is everything.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldSelector {
    requirements: Vec<FieldRequirement>,
}

impl FieldSelector {
    /// The selector that matches everything.
    pub fn everything() -> Self {
        Self::default()
    }

    /// Parses the `fieldSelector` query parameter (`fields.ParseSelector`): comma-separated
    /// terms (a `\,` does not split), each split at the first `!=`, `==` or `=`. The field
    /// part is taken literally (no trimming, no escapes); the value is unescaped (`\\`, `\,`,
    /// `\=`; a bare `,` or `=` or any other escape is an error). Empty terms and terms with
    /// both field and value empty are dropped. Terms are ordered by their text, as in Go.
    pub fn parse(s: &str) -> Result<Self, SelectorError> {
        let mut terms = split_terms(s);
        terms.sort_unstable();
        let mut requirements = Vec::with_capacity(terms.len());
        for term in terms {
            if term.is_empty() {
                continue;
            }
            let Some((field, op, raw)) = split_term(term) else {
                return Err(SelectorError::FieldTerm {
                    selector: s.to_owned(),
                    term: term.to_owned(),
                });
            };
            let value = unescape_field_value(raw)?;
            if field.is_empty() && value.is_empty() {
                continue;
            }
            requirements.push(FieldRequirement {
                field: field.to_owned(),
                op,
                value,
            });
        }
        Ok(Self { requirements })
    }

    /// Adds the term `field=value` (ANDed) after the existing ones.
    pub fn and_equals(&mut self, field: impl Into<String>, value: impl Into<String>) {
        self.requirements.push(FieldRequirement {
            field: field.into(),
            op: FieldOp::Equals,
            value: value.into(),
        });
    }

    /// The terms: the parsed ones in Go's order (sorted by their source text), then those
    /// added by [`FieldSelector::and_equals`], in the order they were added.
    pub fn requirements(&self) -> &[FieldRequirement] {
        &self.requirements
    }

    /// Whether the object is selected. `get(field)` returns the object's value for a field;
    /// `None` counts as `""`, as in Go.
    pub fn matches(&self, get: impl Fn(&str) -> Option<String>) -> bool {
        self.requirements.iter().all(|r| {
            let actual = get(&r.field).unwrap_or_default();
            match r.op {
                FieldOp::Equals => actual == r.value,
                FieldOp::NotEquals => actual != r.value,
            }
        })
    }

    /// Whether there are no terms.
    pub fn is_everything(&self) -> bool {
        self.requirements.is_empty()
    }

    /// The single value required by `field=value`, if the selector pins it (used for
    /// metadata.name / metadata.namespace shortcuts). The first such term wins, as in Go's
    /// `RequiresExactMatch`.
    pub fn exact(&self, field: &str) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| r.op == FieldOp::Equals && r.field == field)
            .map(|r| r.value.as_str())
    }

    /// The first field (in term order) for which `supported` is false: the one kube-apiserver
    /// names in its 400 when it converts field labels.
    pub fn first_unsupported(&self, supported: impl Fn(&str) -> bool) -> Option<&str> {
        self.requirements
            .iter()
            .map(|r| r.field.as_str())
            .find(|f| !supported(f))
    }
}

/// Go's `String()`: `field=value` / `field!=value` terms joined by `,`, values escaped.
impl fmt::Display for FieldSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            let op = match r.op {
                FieldOp::Equals => "=",
                FieldOp::NotEquals => "!=",
            };
            write!(f, "{}{op}{}", r.field, escape_field_value(&r.value))?;
        }
        Ok(())
    }
}

/// `fields.EscapeValue`: prefixes `\`, `,` and `=` with a backslash.
pub fn escape_field_value(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '\\' | ',' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `fields.UnescapeValue`.
pub fn unescape_field_value(s: &str) -> Result<String, SelectorError> {
    if !s.contains(['\\', ',', '=']) {
        return Ok(s.to_owned());
    }
    let mut out = String::with_capacity(s.len());
    let mut in_slash = false;
    for c in s.chars() {
        if in_slash {
            if matches!(c, '\\' | ',' | '=') {
                out.push(c);
            } else {
                return Err(SelectorError::InvalidEscapeSequence(format!("\\{c}")));
            }
            in_slash = false;
            continue;
        }
        match c {
            '\\' => in_slash = true,
            ',' | '=' => return Err(SelectorError::UnescapedCharacter(c)),
            c => out.push(c),
        }
    }
    if in_slash {
        return Err(SelectorError::InvalidEscapeSequence("\\".to_owned()));
    }
    Ok(out)
}

/// Splits at commas not preceded by a backslash; escapes stay in the terms.
fn split_terms(s: &str) -> Vec<&str> {
    if s.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::with_capacity(1);
    let mut start = 0;
    let mut in_slash = false;
    for (i, c) in s.char_indices() {
        if in_slash {
            in_slash = false;
        } else if c == '\\' {
            in_slash = true;
        } else if c == ',' {
            terms.push(s.get(start..i).unwrap_or_default());
            start = i + 1;
        }
    }
    terms.push(s.get(start..).unwrap_or_default());
    terms
}

/// Splits a term at the first operator, trying `!=`, `==`, `=` at each position.
fn split_term(term: &str) -> Option<(&str, FieldOp, &str)> {
    for (i, _) in term.char_indices() {
        let rest = term.get(i..).unwrap_or_default();
        for (text, op) in [
            ("!=", FieldOp::NotEquals),
            ("==", FieldOp::Equals),
            ("=", FieldOp::Equals),
        ] {
            if let Some(value) = rest.strip_prefix(text) {
                return Some((term.get(..i).unwrap_or_default(), op, value));
            }
        }
    }
    None
}

// =============================================================================================
// Field labels of built-in resources
// =============================================================================================

/// How kube-apiserver converts field labels for a built-in kind.
enum FieldLabels {
    /// No registered conversion: `runtime.DefaultMetaV1FieldSelectorConversion`.
    Default,
    /// A registered conversion accepting these labels, answering
    /// `field label not supported: <f>` otherwise.
    Listed(&'static [&'static str]),
    /// batch/v1 Job, whose conversion words its error differently.
    Job,
}

const META: [&str; 2] = ["metadata.name", "metadata.namespace"];

const POD_FIELDS: &[&str] = &[
    "metadata.name",
    "metadata.namespace",
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.podIPs",
    "status.nominatedNodeName",
    // Old v1 clients; converted to spec.nodeName.
    "spec.host",
];
const NODE_FIELDS: &[&str] = &["metadata.name", "spec.unschedulable"];
const RC_FIELDS: &[&str] = &["metadata.name", "metadata.namespace", "status.replicas"];
const EVENT_FIELDS: &[&str] = &[
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
    "metadata.namespace",
    "metadata.name",
];
const NAMESPACE_FIELDS: &[&str] = &["status.phase", "metadata.name"];
const SECRET_FIELDS: &[&str] = &["type", "metadata.namespace", "metadata.name"];
const SERVICE_FIELDS: &[&str] = &[
    "metadata.namespace",
    "metadata.name",
    "spec.clusterIP",
    "spec.type",
];
const JOB_FIELDS: &[&str] = &["metadata.name", "metadata.namespace", "status.successful"];
const CSR_FIELDS: &[&str] = &["metadata.name", "spec.signerName"];
const EVENTS_V1_FIELDS: &[&str] = &[
    "reason",
    "regarding.kind",
    "regarding.namespace",
    "regarding.name",
    "regarding.uid",
    "regarding.apiVersion",
    "regarding.resourceVersion",
    "regarding.fieldPath",
    "reportingController",
    "source",
    "type",
    "metadata.namespace",
    "metadata.name",
];

fn field_labels(group: &str, resource: &str) -> FieldLabels {
    match (group, resource) {
        ("", "pods") => FieldLabels::Listed(POD_FIELDS),
        ("", "nodes") => FieldLabels::Listed(NODE_FIELDS),
        ("", "replicationcontrollers") => FieldLabels::Listed(RC_FIELDS),
        ("", "events") => FieldLabels::Listed(EVENT_FIELDS),
        ("", "namespaces") => FieldLabels::Listed(NAMESPACE_FIELDS),
        ("", "secrets") => FieldLabels::Listed(SECRET_FIELDS),
        ("", "services") => FieldLabels::Listed(SERVICE_FIELDS),
        ("batch", "jobs") => FieldLabels::Job,
        ("certificates.k8s.io", "certificatesigningrequests") => FieldLabels::Listed(CSR_FIELDS),
        ("events.k8s.io", "events") => FieldLabels::Listed(EVENTS_V1_FIELDS),
        _ => FieldLabels::Default,
    }
}

/// Whether kube-apiserver accepts `field` in a field selector for this built-in resource
/// (its field label conversion). Unlisted resources accept `metadata.name` and
/// `metadata.namespace`; `namespaces`, `nodes` and `certificatesigningrequests` do not accept
/// `metadata.namespace`.
pub fn builtin_field_supported(group: &str, resource: &str, field: &str) -> bool {
    match field_labels(group, resource) {
        FieldLabels::Default => META.contains(&field),
        FieldLabels::Listed(fields) => fields.contains(&field),
        FieldLabels::Job => JOB_FIELDS.contains(&field),
    }
}

/// kube-apiserver's 400 message for an unsupported field label on this resource:
/// `field label not supported: <f>` for kinds with their own conversion (events, pods,
/// secrets, namespaces, …), `"<f>" is not a known field selector: only "metadata.name",
/// "metadata.namespace"` for the rest (configmaps, deployments, …).
pub fn builtin_field_label_error(group: &str, resource: &str, field: &str) -> String {
    match field_labels(group, resource) {
        FieldLabels::Default => format!(
            "{} is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
            go_quote(field)
        ),
        FieldLabels::Listed(_) => format!("field label not supported: {field}"),
        FieldLabels::Job => format!(
            "field label {} not supported for batchv1.Job",
            go_quote(field)
        ),
    }
}

fn lookup<'a>(object: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(object, |v, key| v.get(key))
}

fn text_at(object: &Value, path: &[&str]) -> String {
    lookup(object, path)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// A string field, or `fallback` when it is absent or empty.
fn text_or(object: &Value, path: &[&str], fallback: &[&str]) -> String {
    let primary = text_at(object, path);
    if primary.is_empty() {
        text_at(object, fallback)
    } else {
        primary
    }
}

fn bool_at(object: &Value, path: &[&str]) -> String {
    let b = lookup(object, path)
        .and_then(Value::as_bool)
        .unwrap_or(false);
    (if b { "true" } else { "false" }).to_owned()
}

fn int_at(object: &Value, path: &[&str]) -> String {
    lookup(object, path)
        .and_then(Value::as_i64)
        .unwrap_or(0)
        .to_string()
}

/// Field values a field selector can see for an object of a built-in resource, following
/// kube-apiserver's per-type field label conversion and selectable field sets: every resource
/// has metadata.name and metadata.namespace (cluster-scoped kinds with their own conversion
/// excepted); core events add involvedObject.kind/namespace/name/uid/apiVersion/
/// resourceVersion/fieldPath, reason, reportingComponent, source (source.component, else
/// reportingComponent), type; namespaces add status.phase; secrets add type; pods, nodes,
/// services, replicationcontrollers, jobs, certificatesigningrequests and events.k8s.io
/// events add theirs. Absent values are `""` (`"false"`/`"0"` for booleans/counts). Returns
/// `None` for a field the resource does not support (the server answers 400 with
/// [`builtin_field_label_error`]).
pub fn builtin_field_value(
    group: &str,
    resource: &str,
    object: &Value,
    field: &str,
) -> Option<String> {
    if !builtin_field_supported(group, resource, field) {
        return None;
    }
    let o = object;
    Some(match (group, resource, field) {
        (_, _, "metadata.name") => text_at(o, &["metadata", "name"]),
        (_, _, "metadata.namespace") => text_at(o, &["metadata", "namespace"]),
        ("", "pods", "spec.nodeName" | "spec.host") => text_at(o, &["spec", "nodeName"]),
        ("", "pods", "spec.restartPolicy") => text_at(o, &["spec", "restartPolicy"]),
        ("", "pods", "spec.schedulerName") => text_at(o, &["spec", "schedulerName"]),
        ("", "pods", "spec.serviceAccountName") => text_at(o, &["spec", "serviceAccountName"]),
        ("", "pods", "spec.hostNetwork") => bool_at(o, &["spec", "hostNetwork"]),
        ("", "pods", "status.phase") => text_at(o, &["status", "phase"]),
        ("", "pods", "status.podIP") => {
            let first = lookup(o, &["status", "podIPs"])
                .and_then(|ips| ips.get(0))
                .and_then(|ip| ip.get("ip"))
                .and_then(Value::as_str);
            match first {
                Some(ip) => ip.to_owned(),
                None => text_at(o, &["status", "podIP"]),
            }
        }
        ("", "pods", "status.nominatedNodeName") => text_at(o, &["status", "nominatedNodeName"]),
        ("", "nodes", "spec.unschedulable") => bool_at(o, &["spec", "unschedulable"]),
        ("", "replicationcontrollers", "status.replicas") => int_at(o, &["status", "replicas"]),
        ("", "events", f) => match f.strip_prefix("involvedObject.") {
            Some(sub) => text_at(o, &["involvedObject", sub]),
            None => match f {
                "reason" => text_at(o, &["reason"]),
                "reportingComponent" => text_at(o, &["reportingComponent"]),
                "source" => text_or(o, &["source", "component"], &["reportingComponent"]),
                "type" => text_at(o, &["type"]),
                _ => String::new(),
            },
        },
        ("", "namespaces", "status.phase") => text_at(o, &["status", "phase"]),
        ("", "secrets", "type") => text_at(o, &["type"]),
        ("", "services", "spec.clusterIP") => text_at(o, &["spec", "clusterIP"]),
        ("", "services", "spec.type") => text_at(o, &["spec", "type"]),
        ("batch", "jobs", "status.successful") => int_at(o, &["status", "succeeded"]),
        ("certificates.k8s.io", "certificatesigningrequests", "spec.signerName") => {
            text_at(o, &["spec", "signerName"])
        }
        ("events.k8s.io", "events", f) => match f.strip_prefix("regarding.") {
            // Same storage as core events: accept either shape.
            Some(sub) => text_or(o, &["regarding", sub], &["involvedObject", sub]),
            None => match f {
                "reason" => text_at(o, &["reason"]),
                "reportingController" => {
                    text_or(o, &["reportingController"], &["reportingComponent"])
                }
                "source" => {
                    let component = text_or(
                        o,
                        &["deprecatedSource", "component"],
                        &["source", "component"],
                    );
                    if component.is_empty() {
                        text_or(o, &["reportingController"], &["reportingComponent"])
                    } else {
                        component
                    }
                }
                "type" => text_at(o, &["type"]),
                _ => String::new(),
            },
        },
        // Accepted by the conversion but not in the selectable set (e.g. status.podIPs).
        _ => String::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn and_equals_adds_an_exact_term_after_the_parsed_ones() {
        let mut sel = FieldSelector::parse("status.phase!=Running").unwrap();
        // Taken as is: no escaping or parsing of the value.
        sel.and_equals("metadata.name", r"a,b=c\d");
        assert_eq!(sel.requirements().len(), 2);
        assert_eq!(sel.requirements()[1].field, "metadata.name");
        assert_eq!(sel.exact("metadata.name"), Some(r"a,b=c\d"));
        let get = |name: &'static str| {
            move |f: &str| match f {
                "metadata.name" => Some(name.to_owned()),
                _ => Some("Pending".to_owned()),
            }
        };
        assert!(sel.matches(get(r"a,b=c\d")));
        assert!(!sel.matches(get("a")));
        assert_eq!(
            sel.to_string(),
            r"status.phase!=Running,metadata.name=a\,b\=c\\d"
        );
    }
}
