//! Value validation (CRDV-01): kube-openapi's `SchemaValidator`
//! (`pkg/validation/validate`) as `pkg/apiserver/validation` runs it on custom resources, with
//! the message texts of `pkg/validation/errors`.

use std::fmt::Write as _;

use serde_json::{Map, Value};

use super::model::{NodeData, SchemaOrBool, float_value, go_bad_value, go_sprint};
use crate::gofmt::{go_float, go_json};
use crate::validation::{FieldError, child, go_quote};

/// Which schema kube-openapi sees: the CRD schema converted for custom resources
/// (`NewSchemaValidator`: unsupported formats stripped, int-or-string typed
/// `[integer, string]`), or a structural node converted by `ToKubeOpenAPI` (used for
/// defaults: formats kept, int-or-string untyped).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    CustomResource,
    Structural,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Code {
    InvalidType,
    Required,
    TooLong,
    TooShort,
    Pattern,
    Enum,
    MultipleOf,
    Max,
    Min,
    Unique,
    MaxItems,
    MinItems,
    TooFewProperties,
    TooManyProperties,
    UnallowedProperty,
    MultipleOfMustBePositive,
}

/// One kube-openapi error: a `*errors.Validation` or a plain composite message.
enum OErr {
    Validation {
        code: Code,
        name: String,
        value: Option<Value>,
        valid: i64,
        values: Vec<Value>,
        message: String,
    },
    Composite(String),
}

impl OErr {
    fn message(&self) -> &str {
        match self {
            OErr::Validation { message, .. } => message,
            OErr::Composite(m) => m,
        }
    }
}

/// `validate.Result`: errors and the match count `anyOf`/`oneOf` use to pick the branch
/// whose errors are reported.
#[derive(Default)]
struct VResult {
    errors: Vec<OErr>,
    count: u32,
}

impl VResult {
    fn err(e: OErr) -> VResult {
        VResult {
            errors: vec![e],
            count: 0,
        }
    }

    fn merge(&mut self, other: VResult) {
        self.errors.extend(other.errors);
        self.count += other.count;
    }

    fn is_valid(&self) -> bool {
        self.errors.is_empty()
    }
}

/// The JSON kinds kube's decoder produces (`int64` for integers, `float64` otherwise).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Null,
    Bool,
    Int,
    Float,
    String,
    Array,
    Object,
}

fn kind_of(v: &Value) -> Kind {
    match v {
        Value::Null => Kind::Null,
        Value::Bool(_) => Kind::Bool,
        Value::Number(n) if n.as_i64().is_some() => Kind::Int,
        Value::Number(_) => Kind::Float,
        Value::String(_) => Kind::String,
        Value::Array(_) => Kind::Array,
        Value::Object(_) => Kind::Object,
    }
}

fn as_float(v: &Value) -> f64 {
    v.as_f64().unwrap_or(0.0)
}

fn validation(code: Code, name: &str, value: Option<Value>, message: String) -> OErr {
    OErr::Validation {
        code,
        name: name.to_owned(),
        value,
        valid: 0,
        values: Vec::new(),
        message,
    }
}

/// `errors.InvalidType`.
fn invalid_type(name: &str, type_name: &str, value: &str) -> OErr {
    validation(
        Code::InvalidType,
        name,
        Some(Value::from(value)),
        format!(
            "{name} in body must be of type {type_name}: {}",
            go_quote(value)
        ),
    )
}

pub(super) struct Validator<'a> {
    pub(super) nodes: &'a [NodeData],
    pub(super) mode: Mode,
}

impl Validator<'_> {
    /// Validates `data` against node `id` and reports the errors as `field.Error`s (see
    /// [`to_field_errors`] for `prefix`).
    pub(super) fn field_errors(
        &self,
        id: usize,
        data: &Value,
        prefix: Option<&str>,
    ) -> Vec<FieldError> {
        let mut path = String::new();
        to_field_errors(self.validate(id, &mut path, data).errors, prefix)
    }

    fn types<'n>(&self, n: &'n NodeData) -> &'n [&'static str] {
        const INT_OR_STRING: &[&str] = &["integer", "string"];
        if self.mode == Mode::CustomResource && n.x_int_or_string {
            return INT_OR_STRING;
        }
        match n.type_.as_str() {
            "" => &[],
            "object" => &["object"],
            "array" => &["array"],
            "string" => &["string"],
            "integer" => &["integer"],
            "number" => &["number"],
            "boolean" => &["boolean"],
            "null" => &["null"],
            _ => &["<invalid>"],
        }
    }

    /// The `format` the type validator sees.
    fn type_format<'n>(&self, n: &'n NodeData) -> &'n str {
        match self.mode {
            Mode::Structural => &n.format,
            Mode::CustomResource if n.format_kind.is_some() => &n.format,
            Mode::CustomResource => "",
        }
    }

    /// `SchemaValidator.Validate`.
    fn validate(&self, id: usize, path: &mut String, data: &Value) -> VResult {
        let n = &self.nodes[id];
        let mut r = VResult::default();
        let kind = kind_of(data);
        if kind == Kind::Null {
            r.merge(self.check_type(n, path, data, kind));
            r.merge(self.check_enum(n, path, data));
            return r;
        }
        if !self.types(n).is_empty() || !self.type_format(n).is_empty() {
            r.merge(self.check_type(n, path, data, kind));
            r.count += 1;
        }
        r.merge(self.check_junctors(n, path, data));
        r.count += 1;
        if let Value::String(s) = data {
            if let Some(e) = self.check_string(n, path, s) {
                r.errors.push(e);
            }
            r.count += 1;
            if let Some(format) = n.format_kind {
                if !format.validates(s) {
                    r.errors.push(invalid_type(path, &n.format, s));
                }
                r.count += 1;
            }
        }
        if matches!(kind, Kind::Int | Kind::Float) {
            r.merge(self.check_number(n, path, data, kind));
            r.count += 1;
        }
        if let Value::Array(items) = data {
            r.merge(self.check_slice(n, path, items));
            r.count += 1;
        }
        r.merge(self.check_enum(n, path, data));
        r.count += 1;
        if let Value::Object(map) = data {
            r.merge(self.check_object(n, path, map));
            r.count += 1;
        }
        r.count += 1;
        r
    }

    /// `typeValidator.Validate`.
    fn check_type(&self, n: &NodeData, path: &str, data: &Value, kind: Kind) -> VResult {
        let types = self.types(n);
        let t_format = self.type_format(n);
        if kind == Kind::Null {
            if !types.is_empty() && !types.contains(&"null") && !n.nullable {
                return VResult::err(invalid_type(path, &types.join(","), "null"));
            }
            return VResult {
                errors: Vec::new(),
                count: 1,
            };
        }
        let (sch_type, format) = match kind {
            Kind::Bool => ("boolean", ""),
            Kind::String => ("string", ""),
            Kind::Int => ("integer", "int64"),
            Kind::Float => ("number", "float64"),
            Kind::Array => ("array", ""),
            Kind::Object | Kind::Null => ("object", ""),
        };
        let contains = |t: &str| types.contains(&t);
        let is_float_int =
            kind == Kind::Float && is_float64_a_json_integer(as_float(data)) && contains("integer");
        let is_int_float = kind == Kind::Int && contains("number");
        let stringish = matches!(kind, Kind::String | Kind::Array);
        // Go: kind != String && kind != Slice && Format != "" && !(…)
        if !(stringish
            || t_format.is_empty()
            || contains(sch_type)
            || format == t_format
            || is_float_int
            || is_int_float)
        {
            return VResult::err(invalid_type(path, t_format, format));
        }
        if stringish && !(contains("number") || contains("integer") || t_format.is_empty()) {
            return VResult {
                errors: Vec::new(),
                count: 1,
            };
        }
        if !(contains(sch_type) || is_float_int || is_int_float) {
            return VResult::err(invalid_type(path, &types.join(","), sch_type));
        }
        VResult {
            errors: Vec::new(),
            count: 1,
        }
    }

    /// `schemaPropsValidator.Validate`: anyOf, oneOf, allOf, not.
    fn check_junctors(&self, n: &NodeData, path: &mut String, data: &Value) -> VResult {
        let mut main = VResult::default();
        let any_of = n.any_of();
        if !any_of.is_empty() {
            let mut best: Option<VResult> = None;
            let mut first_success: Option<VResult> = None;
            for sub in any_of {
                let result = self.validate(*sub, path, data);
                if result.is_valid() {
                    best = None;
                    first_success = Some(result);
                    break;
                }
                if best.as_ref().is_none_or(|b| result.count > b.count) {
                    best = Some(result);
                }
            }
            if first_success.is_none() {
                main.errors.push(OErr::Composite(format!(
                    "{} must validate at least one schema (anyOf)",
                    go_quote(path)
                )));
            }
            if let Some(b) = best {
                main.merge(b);
            } else if let Some(s) = first_success {
                main.merge(s);
            }
        }

        let one_of = n.one_of();
        if !one_of.is_empty() {
            let mut best: Option<VResult> = None;
            let mut first_success: Option<VResult> = None;
            let mut validated = 0usize;
            for sub in one_of {
                let result = self.validate(*sub, path, data);
                if result.is_valid() {
                    validated += 1;
                    best = None;
                    if first_success.is_none() {
                        first_success = Some(result);
                    }
                    continue;
                }
                if validated == 0 && best.as_ref().is_none_or(|b| result.count > b.count) {
                    best = Some(result);
                }
            }
            if validated != 1 {
                let additional = if validated == 0 {
                    "Found none valid".to_owned()
                } else {
                    format!("Found {validated} valid alternatives")
                };
                main.errors.push(OErr::Composite(format!(
                    "{} must validate one and only one schema (oneOf). {additional}",
                    go_quote(path)
                )));
                if let Some(b) = best {
                    main.merge(b);
                }
            } else if let Some(s) = first_success {
                main.merge(s);
            }
        }

        let all_of = n.all_of();
        if !all_of.is_empty() {
            let mut validated = 0usize;
            for sub in all_of {
                let result = self.validate(*sub, path, data);
                if result.is_valid() {
                    validated += 1;
                }
                main.merge(result);
            }
            if validated != all_of.len() {
                let additional = if validated == 0 {
                    ". None validated"
                } else {
                    ""
                };
                main.errors.push(OErr::Composite(format!(
                    "{} must validate all the schemas (allOf){additional}",
                    go_quote(path)
                )));
            }
        }

        if let Some(not) = n.not
            && self.validate(not, path, data).is_valid()
        {
            main.errors.push(OErr::Composite(format!(
                "{} must not validate the schema (not)",
                go_quote(path)
            )));
        }
        main.count += 1;
        main
    }

    /// `stringValidator.Validate`: the first failing of maxLength, minLength, pattern.
    fn check_string(&self, n: &NodeData, path: &str, s: &str) -> Option<OErr> {
        let len = s.chars().count() as i64;
        if let Some(max) = n.max_length
            && len > max
        {
            return Some(OErr::Validation {
                code: Code::TooLong,
                name: path.to_owned(),
                value: Some(Value::from(s)),
                valid: max,
                values: Vec::new(),
                message: format!("{path} in body should be at most {max} chars long"),
            });
        }
        if let Some(min) = n.min_length
            && len < min
        {
            return Some(OErr::Validation {
                code: Code::TooShort,
                name: path.to_owned(),
                value: Some(Value::from(s)),
                valid: min,
                values: Vec::new(),
                message: format!("{path} in body should be at least {min} chars long"),
            });
        }
        if let Some(p) = &n.pattern
            && !p.source.is_empty()
        {
            let failed = match &p.regex {
                Ok(re) if re.is_match(s) => None,
                Ok(_) => Some(p.source.clone()),
                Err(e) => Some(format!("{}, but pattern is invalid: {e}", p.source)),
            };
            if let Some(shown) = failed {
                return Some(validation(
                    Code::Pattern,
                    path,
                    Some(Value::from(s)),
                    format!("{path} in body should match '{shown}'"),
                ));
            }
        }
        None
    }

    /// `numberValidator.Validate`: multipleOf, minimum, maximum, with Go's integer
    /// arithmetic for integer values.
    fn check_number(&self, n: &NodeData, path: &str, data: &Value, kind: Kind) -> VResult {
        let mut r = VResult::default();
        let int = if kind == Kind::Int {
            data.as_i64()
        } else {
            None
        };
        let f = as_float(data);
        let value = Some(data.clone());
        if let Some(factor) = n.multiple_of {
            match int {
                Some(v) => {
                    let factor = factor as i64;
                    if factor <= 0 {
                        r.errors.push(validation(
                            Code::MultipleOfMustBePositive,
                            path,
                            Some(Value::from(factor)),
                            format!(
                                "factor MultipleOf declared for {path} must be positive: {factor}"
                            ),
                        ));
                    } else if (v / factor) * factor != v {
                        r.errors.push(validation(
                            Code::MultipleOf,
                            path,
                            value.clone(),
                            format!("{path} in body should be a multiple of {factor}"),
                        ));
                    }
                }
                None => {
                    if factor <= 0.0 {
                        r.errors.push(validation(
                            Code::MultipleOfMustBePositive,
                            path,
                            Some(float_value(factor)),
                            format!(
                                "factor MultipleOf declared for {path} must be positive: {}",
                                go_float(factor)
                            ),
                        ));
                    } else {
                        let mult = if factor < 1.0 {
                            1.0 / factor * f
                        } else {
                            f / factor
                        };
                        if !is_float64_a_json_integer(mult) {
                            r.errors.push(validation(
                                Code::MultipleOf,
                                path,
                                value.clone(),
                                format!(
                                    "{path} in body should be a multiple of {}",
                                    go_float(factor)
                                ),
                            ));
                        }
                    }
                }
            }
        }
        if let Some(min) = n.minimum {
            let excl = n.exclusive_minimum;
            let shown = match int {
                Some(v) => {
                    let min = min as i64;
                    ((!excl && v < min) || (excl && v <= min)).then(|| min.to_string())
                }
                None => ((!excl && f < min) || (excl && f <= min)).then(|| go_float(min)),
            };
            if let Some(shown) = shown {
                let op = if excl {
                    "greater than"
                } else {
                    "greater than or equal to"
                };
                r.errors.push(validation(
                    Code::Min,
                    path,
                    value.clone(),
                    format!("{path} in body should be {op} {shown}"),
                ));
            }
        }
        if let Some(max) = n.maximum {
            let excl = n.exclusive_maximum;
            let shown = match int {
                Some(v) => {
                    let max = max as i64;
                    ((!excl && v > max) || (excl && v >= max)).then(|| max.to_string())
                }
                None => ((!excl && f > max) || (excl && f >= max)).then(|| go_float(max)),
            };
            if let Some(shown) = shown {
                let op = if excl {
                    "less than"
                } else {
                    "less than or equal to"
                };
                r.errors.push(validation(
                    Code::Max,
                    path,
                    value,
                    format!("{path} in body should be {op} {shown}"),
                ));
            }
        }
        r.count += 1;
        r
    }

    /// `schemaSliceValidator.Validate`.
    fn check_slice(&self, n: &NodeData, path: &mut String, items: &[Value]) -> VResult {
        let mut r = VResult::default();
        if let Some(item_schema) = n.items_schema() {
            let len = path.len();
            for (i, item) in items.iter().enumerate() {
                let _ = write!(path, "[{i}]");
                r.merge(self.validate(item_schema, path, item));
                path.truncate(len);
            }
        }
        let size = items.len() as i64;
        if let Some(min) = n.min_items
            && size < min
        {
            r.errors.push(OErr::Validation {
                code: Code::MinItems,
                name: path.clone(),
                value: Some(Value::from(size)),
                valid: min,
                values: Vec::new(),
                message: format!("{path} in body should have at least {min} items"),
            });
        }
        if let Some(max) = n.max_items
            && size > max
        {
            r.errors.push(OErr::Validation {
                code: Code::MaxItems,
                name: path.clone(),
                value: Some(Value::from(size)),
                valid: max,
                values: Vec::new(),
                message: format!("{path} in body should have at most {max} items"),
            });
        }
        if n.unique_items && has_duplicates(items) {
            r.errors.push(validation(
                Code::Unique,
                path,
                None,
                format!("{path} in body shouldn't contain duplicates"),
            ));
        }
        r.count += 1;
        r
    }

    /// `basicCommonValidator.Validate`: `enum`, compared as Go's reflection compares.
    fn check_enum(&self, n: &NodeData, path: &str, data: &Value) -> VResult {
        let Some(values) = n.enum_.as_deref() else {
            return VResult::default();
        };
        if values.is_empty() || values.iter().any(|e| enum_matches(data, e)) {
            return VResult::default();
        }
        let listed: Vec<String> = values.iter().map(go_sprint).collect();
        VResult::err(OErr::Validation {
            code: Code::Enum,
            name: path.to_owned(),
            value: Some(data.clone()),
            valid: 0,
            values: values.to_vec(),
            message: format!("{path} in body should be one of [{}]", listed.join(" ")),
        })
    }

    /// `objectValidator.Validate`.
    fn check_object(&self, n: &NodeData, path: &mut String, map: &Map<String, Value>) -> VResult {
        let mut r = VResult::default();
        let num_keys = map.len() as i64;
        if let Some(min) = n.min_properties
            && num_keys < min
        {
            r.errors.push(OErr::Validation {
                code: Code::TooFewProperties,
                name: path.clone(),
                value: Some(Value::from(num_keys)),
                valid: min,
                values: Vec::new(),
                message: format!("{path} in body should have at least {min} properties"),
            });
        }
        if let Some(max) = n.max_properties
            && num_keys > max
        {
            r.errors.push(OErr::Validation {
                code: Code::TooManyProperties,
                name: path.clone(),
                value: Some(Value::from(num_keys)),
                valid: max,
                values: Vec::new(),
                message: format!("{path} in body should have at most {max} properties"),
            });
        }
        let len = path.len();
        match n.additional_properties {
            Some(SchemaOrBool::Bool(false)) => {
                for k in map.keys() {
                    if n.property(k).is_none() {
                        r.errors.push(validation(
                            Code::UnallowedProperty,
                            path,
                            Some(Value::from(k.as_str())),
                            format!("{path}.{k} in body is a forbidden property"),
                        ));
                    }
                }
            }
            Some(SchemaOrBool::Schema(ap)) => {
                for (k, v) in map {
                    if n.property(k).is_none() {
                        path.push('.');
                        path.push_str(k);
                        r.merge(self.validate(ap, path, v));
                        path.truncate(len);
                    }
                }
            }
            _ => {}
        }
        for (name, prop) in n.props() {
            if let Some(v) = map.get(name) {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(name);
                r.merge(self.validate(*prop, path, v));
                path.truncate(len);
            }
        }
        for k in n.required.iter().flatten() {
            if !map.contains_key(k) {
                let name = format!("{path}.{k}");
                let message = format!("{name} in body is required");
                r.errors
                    .push(validation(Code::Required, &name, None, message));
            }
        }
        r
    }
}

fn has_duplicates(items: &[Value]) -> bool {
    items
        .iter()
        .enumerate()
        .any(|(i, a)| items[..i].iter().any(|b| a == b))
}

/// kube-openapi's enum comparison: the value is converted to the enum value's Go type when
/// Go allows (`int64` ↔ `float64` by truncation, `int64` → `string` as a rune) and compared
/// with `reflect.DeepEqual`.
fn enum_matches(data: &Value, e: &Value) -> bool {
    match (kind_of(data), kind_of(e)) {
        (Kind::Null, _) | (_, Kind::Null) => false,
        (Kind::Int, Kind::Int) => data.as_i64() == e.as_i64(),
        (Kind::Int, Kind::Float) => data.as_i64().map(|i| i as f64) == e.as_f64(),
        (Kind::Int, Kind::String) => {
            let i = data.as_i64().unwrap_or(0);
            let c = u32::try_from(i)
                .ok()
                .and_then(char::from_u32)
                .unwrap_or('\u{FFFD}');
            e.as_str() == Some(c.encode_utf8(&mut [0; 4]))
        }
        (Kind::Float, Kind::Int) => Some(as_float(data) as i64) == e.as_i64(),
        (Kind::Float, Kind::Float) => data.as_f64() == e.as_f64(),
        (a, b) if a == b => data == e,
        _ => false,
    }
}

/// `swag.IsFloat64AJSONInteger` (go-openapi/swag v0.23).
fn is_float64_a_json_integer(f: f64) -> bool {
    const MAX_JSON_FLOAT: f64 = 9_007_199_254_740_991.0;
    const EPSILON: f64 = 1e-9;
    if f.is_nan() || f.is_infinite() || !(-MAX_JSON_FLOAT..=MAX_JSON_FLOAT).contains(&f) {
        return false;
    }
    let fa = f.abs();
    let g = (f as u64) as f64;
    let ga = g.abs();
    let diff = (f - g).abs();
    if f == g || f == (f as i64) as f64 || f == (f as u64) as f64 {
        return true;
    }
    if f == 0.0 || g == 0.0 || diff < f64::from_bits(1) {
        return diff < EPSILON * f64::from_bits(1);
    }
    diff / (fa + ga).min(f64::MAX) < EPSILON
}

/// `kubeOpenAPIResultToFieldErrors`, after `Result`'s de-duplication by message. `prefix`
/// is the field path the validator was rooted at (`None`: the object root, shown as
/// `<nil>` when an error has no field of its own).
fn to_field_errors(errors: Vec<OErr>, prefix: Option<&str>) -> Vec<FieldError> {
    let mut seen: Vec<String> = Vec::with_capacity(errors.len());
    let mut out = Vec::with_capacity(errors.len());
    let root = prefix.unwrap_or("<nil>").to_owned();
    for e in errors {
        if seen.iter().any(|m| m == e.message()) {
            continue;
        }
        seen.push(e.message().to_owned());
        match e {
            OErr::Composite(message) => out.push(FieldError::invalid(root.clone(), "", message)),
            OErr::Validation {
                code,
                name,
                value,
                valid,
                values,
                message,
            } => {
                let field = if !name.is_empty() && name != "." {
                    let trimmed = name.strip_prefix('.').unwrap_or(&name);
                    match prefix {
                        Some(p) => child(p, trimmed),
                        None => trimmed.to_owned(),
                    }
                } else {
                    root.clone()
                };
                let shown = value.as_ref().map_or(Value::from(""), go_bad_value);
                out.push(match code {
                    Code::Required => FieldError::required(field, ""),
                    Code::Enum => {
                        let supported: Vec<String> = values
                            .iter()
                            .map(|v| match v {
                                Value::String(s) => s.clone(),
                                other => go_json(other),
                            })
                            .collect();
                        let refs: Vec<&str> = supported.iter().map(String::as_str).collect();
                        let bad = value.as_ref().map_or(Value::from("null"), go_bad_value);
                        FieldError::not_supported(field, bad, &refs)
                    }
                    Code::TooLong => FieldError::too_long(field, usize::try_from(valid).ok()),
                    Code::MaxItems | Code::TooManyProperties => {
                        let actual = value.as_ref().and_then(Value::as_u64);
                        FieldError::too_many(
                            field,
                            actual.and_then(|a| usize::try_from(a).ok()),
                            usize::try_from(valid).ok(),
                        )
                    }
                    Code::InvalidType => FieldError::type_invalid(field, shown, message),
                    _ => FieldError::invalid(field, shown, message),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::model::Pattern;
    use super::*;
    use crate::structural::test_util::*;
    use regex::Regex;
    use serde_json::json;

    #[test]
    fn crdv01_err08_crontab_invalid_values() {
        let s = parse(crontab());
        let obj = crontab_object(json!({
            "cronSpec": "* * * *", "image": "my-awesome-cron-image", "replicas": 15
        }));
        assert_eq!(
            msgs(&s.validate(&obj)),
            vec![
                r#"spec.cronSpec: Invalid value: "* * * *": spec.cronSpec in body should match '^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$'"#,
                "spec.replicas: Invalid value: 15: spec.replicas in body should be less than or equal to 10",
            ]
        );
        let ok = crontab_object(json!({
            "cronSpec": "* * * * */5", "image": "my-awesome-cron-image", "replicas": 5
        }));
        assert!(s.validate(&ok).is_empty());
    }

    #[test]
    fn crdv01_minimum_exclusive_and_float_bounds() {
        let s = parse(json!({"type": "object", "properties": {
            "a": {"type": "integer", "minimum": 1, "exclusiveMinimum": true},
            "b": {"type": "number", "maximum": 1.5, "exclusiveMaximum": true},
            "c": {"type": "number", "maximum": 1000000}
        }}));
        assert_eq!(
            msgs(&s.validate(&json!({"a": 1, "b": 1.5, "c": 2000000.5}))),
            vec![
                "a: Invalid value: 1: a in body should be greater than 1",
                "b: Invalid value: 1.5: b in body should be less than 1.5",
                "c: Invalid value: 2000000.5: c in body should be less than or equal to 1e+06",
            ]
        );
    }

    #[test]
    fn crdv01_types_as_kube_reports_them() {
        // Cases from apiextensions-apiserver pkg/apiserver/validation/validation_test.go.
        let s = parse(json!({"type": "object", "properties": {"field": {"type": "object"}}}));
        for (v, t) in [
            (json!("foo"), "string"),
            (json!(42), "integer"),
            (json!(true), "boolean"),
            (json!(1.2), "number"),
            (json!([]), "array"),
            (json!(null), "null"),
        ] {
            assert_eq!(
                msgs(&s.validate(&json!({ "field": v }))),
                vec![format!(
                    r#"field: Invalid value: "{t}": field in body must be of type object: "{t}""#
                )]
            );
        }
        let nullable = parse(json!({"type": "object", "properties": {
            "field": {"type": "object", "nullable": true}
        }}));
        assert!(nullable.validate(&json!({"field": null})).is_empty());
        // An integral float is an integer.
        let int = parse(json!({"type": "object", "properties": {"n": {"type": "integer"}}}));
        assert!(int.validate(&json!({"n": 3.0})).is_empty());
    }

    #[test]
    fn crdv01_required_enum_and_type_together() {
        let s = parse(json!({"type": "object", "properties": {"field": {
            "type": "object",
            "required": ["nestedint", "nestedstring"],
            "properties": {
                "nestedint": {"type": "integer", "enum": [1, 2]},
                "nestedstring": {"type": "string", "enum": ["a", "b"]}
            }
        }}}));
        assert_eq!(
            msgs(&s.validate(&json!({"field": {}}))),
            vec![
                "field.nestedint: Required value",
                "field.nestedstring: Required value"
            ]
        );
        assert_eq!(
            sorted(msgs(&s.validate(
                &json!({"field": {"nestedint": "x", "nestedstring": true}})
            ))),
            vec![
                r#"field.nestedint: Invalid value: "string": field.nestedint in body must be of type integer: "string""#,
                r#"field.nestedint: Unsupported value: "x": supported values: "1", "2""#,
                r#"field.nestedstring: Invalid value: "boolean": field.nestedstring in body must be of type string: "boolean""#,
                r#"field.nestedstring: Unsupported value: true: supported values: "a", "b""#,
            ]
        );
    }

    #[test]
    fn crdv01_lengths_counts_and_formats() {
        let s = parse(json!({"type": "object", "properties": {
            "s": {"type": "string", "maxLength": 2},
            "t": {"type": "string", "minLength": 3},
            "l": {"type": "array", "maxItems": 2, "minItems": 1, "items": {"type": "string"}},
            "m": {"type": "object", "maxProperties": 2, "additionalProperties": {"type": "boolean"}},
            "u": {"type": "string", "format": "uuid"},
            "d": {"type": "string", "format": "date-time"},
            "i": {"type": "integer", "format": "int32", "multipleOf": 3}
        }}));
        let obj = json!({
            "s": "äbc", "t": "ab", "l": ["a", "b", "c"], "m": {"a": true, "b": true, "c": 1},
            "u": "nope", "d": "2024-13-01T00:00:00Z", "i": 7
        });
        assert_eq!(
            sorted(msgs(&s.validate(&obj))),
            vec![
                r#"d: Invalid value: "2024-13-01T00:00:00Z": d in body must be of type date-time: "2024-13-01T00:00:00Z""#,
                "i: Invalid value: 7: i in body should be a multiple of 3",
                "l: Too many: 3: must have at most 2 items",
                r#"m.c: Invalid value: "integer": m.c in body must be of type boolean: "integer""#,
                "m: Too many: 3: must have at most 2 items",
                "s: Too long: may not be more than 2 bytes",
                r#"t: Invalid value: "ab": t in body should be at least 3 chars long"#,
                r#"u: Invalid value: "nope": u in body must be of type uuid: "nope""#,
            ]
        );
        let ok = json!({
            "s": "ää", "t": "abc", "l": ["a"], "m": {"a": true},
            "u": "123e4567-e89b-12d3-a456-426614174000", "d": "2024-02-29T10:00:00.5+01:00", "i": 9
        });
        assert!(s.validate(&ok).is_empty(), "{:?}", msgs(&s.validate(&ok)));
    }

    #[test]
    fn crdv01_junctors_report_like_kube_openapi() {
        // From validation_test.go: "nullable, x-kubernetes-int-or-string and user-provided anyOf".
        let s = parse(json!({"type": "object", "properties": {"field": {
            "nullable": true, "x-kubernetes-int-or-string": true,
            "anyOf": [{"type": "integer"}, {"type": "string"}]
        }}}));
        assert!(s.validate(&json!({"field": null})).is_empty());
        assert!(s.validate(&json!({"field": "x"})).is_empty());
        assert_eq!(
            sorted(msgs(&s.validate(&json!({"field": true})))),
            vec![
                r#"<nil>: Invalid value: "": "field" must validate at least one schema (anyOf)"#,
                r#"field: Invalid value: "boolean": field in body must be of type integer,string: "boolean""#,
                r#"field: Invalid value: "boolean": field in body must be of type integer: "boolean""#,
            ]
        );
        let all_of = parse(json!({"type": "object", "properties": {"field": {
            "x-kubernetes-int-or-string": true,
            "allOf": [{"anyOf": [{"type": "integer"}, {"type": "string"}]}]
        }}}));
        assert_eq!(
            sorted(msgs(&all_of.validate(&json!({"field": 1.5})))),
            vec![
                r#"<nil>: Invalid value: "": "field" must validate all the schemas (allOf). None validated"#,
                r#"<nil>: Invalid value: "": "field" must validate at least one schema (anyOf)"#,
                r#"field: Invalid value: "number": field in body must be of type integer,string: "number""#,
                r#"field: Invalid value: "number": field in body must be of type integer: "number""#,
            ]
        );
        let one_not = parse(json!({"type": "object", "properties": {"n": {
            "type": "integer",
            "oneOf": [{"minimum": 0}, {"maximum": 10}],
            "not": {"enum": [7]}
        }}}));
        assert_eq!(
            msgs(&one_not.validate(&json!({"n": 5}))),
            vec![
                r#"<nil>: Invalid value: "": "n" must validate one and only one schema (oneOf). Found 2 valid alternatives"#
            ]
        );
        assert_eq!(
            msgs(&one_not.validate(&json!({"n": 7}))),
            vec![
                r#"<nil>: Invalid value: "": "n" must validate one and only one schema (oneOf). Found 2 valid alternatives"#,
                r#"<nil>: Invalid value: "": "n" must not validate the schema (not)"#,
            ]
        );
    }

    #[test]
    fn crdv01_invalid_pattern_message_shape() {
        // The message kube-openapi gives for a pattern that does not compile.
        let n = NodeData {
            pattern: Some(Pattern {
                source: "+".into(),
                regex: crate::goregex::compile("+").map(|_| unreachable_regex()),
            }),
            ..NodeData::default()
        };
        let v = Validator {
            nodes: std::slice::from_ref(&n),
            mode: Mode::CustomResource,
        };
        let e = v
            .check_string(&n, "field", "foo")
            .map(|e| e.message().to_owned());
        assert_eq!(
            e.as_deref(),
            Some(
                "field in body should match '+, but pattern is invalid: error parsing regexp: missing argument to repetition operator: `+`'"
            )
        );
    }

    fn unreachable_regex() -> Regex {
        match Regex::new("x") {
            Ok(r) => r,
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn crdv01_status_validation_names_fields_relative_to_status() {
        // subresources_test.go: `status.num: Invalid value: 15: num in body should be …`.
        let s = parse(json!({"type": "object", "properties": {
            "status": {"type": "object", "properties": {"num": {"type": "integer", "maximum": 10}}}
        }}));
        assert_eq!(
            msgs(&s.validate_status(&json!({"status": {"num": 15}}))),
            vec!["status.num: Invalid value: 15: num in body should be less than or equal to 10"]
        );
        assert!(s.validate_status(&json!({"spec": {}})).is_empty());
    }

    #[test]
    fn crdv01_metadata_name_restriction_is_validated() {
        let s = parse(json!({"type": "object", "properties": {
            "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 5}}}
        }}));
        assert_eq!(
            msgs(&s.validate(&json!({"metadata": {"name": "toolong"}}))),
            vec!["metadata.name: Too long: may not be more than 5 bytes"]
        );
    }

    #[test]
    fn crdv01_additional_properties_false_allows_only_declared_keys() {
        let s = parse(json!({"type": "object", "properties": {
            "m": {"type": "object", "additionalProperties": false}
        }}));
        assert_eq!(
            msgs(&s.validate(&json!({"m": {"x": 1}}))),
            vec![r#"m: Invalid value: "x": m.x in body is a forbidden property"#]
        );
    }
}
