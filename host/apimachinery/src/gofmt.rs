//! Values printed and parsed as Go does, for wire-visible messages: `%v` of a float,
//! `json.Marshal` of a decoded JSON value, and `time.ParseDuration`.

use std::fmt::Write as _;

use serde_json::Value;

/// Go's `%v` of a `float64` (`strconv.FormatFloat(f, 'g', -1, 64)`): `10`, `0.5`,
/// `1e+06`, `1.5e-05`.
pub fn go_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    let (digits, exp) = shortest_digits(f.abs());
    let sign = if f < 0.0 { "-" } else { "" };
    if !(-4..6).contains(&exp) {
        let mut s = format!("{sign}{}", &digits[..1]);
        if digits.len() > 1 {
            s.push('.');
            s.push_str(&digits[1..]);
        }
        let _ = write!(s, "e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
        return s;
    }
    format!("{sign}{}", place_point(&digits, exp))
}

/// The shortest round-trip digits of a positive float and its decimal exponent
/// (`d.ddd × 10^exp`).
fn shortest_digits(f: f64) -> (String, i32) {
    let e = format!("{f:e}");
    let (mantissa, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    (digits, exp.parse().unwrap_or(0))
}

/// Go's `json.Marshal` of a decoded JSON value: compact, keys sorted, HTML characters
/// escaped, floats as Go writes them.
pub fn go_json(v: &Value) -> String {
    let mut out = String::new();
    write_go_json(&mut out, v);
    out
}

fn write_go_json(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => {
                let _ = write!(out, "{i}");
            }
            (None, Some(u)) => {
                let _ = write!(out, "{u}");
            }
            (None, None) => out.push_str(&go_json_float(n.as_f64().unwrap_or(0.0))),
        },
        Value::String(s) => write_go_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_json(out, item);
            }
            out.push(']');
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_string(out, k);
                out.push(':');
                if let Some(item) = m.get(k) {
                    write_go_json(out, item);
                }
            }
            out.push('}');
        }
    }
}

/// A JSON string as `encoding/json` writes it, with HTML characters and U+2028/U+2029
/// escaped.
fn write_go_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0C}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || matches!(c, '<' | '>' | '&' | '\u{2028}' | '\u{2029}') => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// `encoding/json`'s float format: `%f` style unless tiny or huge, then `1e-07` → `1e-7`.
fn go_json_float(f: f64) -> String {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let (digits, exp) = shortest_digits(abs);
        let mut s = String::new();
        if f < 0.0 {
            s.push('-');
        }
        s.push_str(&digits[..1]);
        if digits.len() > 1 {
            s.push('.');
            s.push_str(&digits[1..]);
        }
        if exp < 0 {
            let _ = write!(s, "e-{}", exp.abs());
        } else {
            let _ = write!(s, "e+{exp:02}");
        }
        return s;
    }
    format!("{f}")
}

/// Plain decimal notation of `0.digits × 10^(exp+1)`.
fn place_point(digits: &str, exp: i32) -> String {
    let dp = exp + 1;
    let nd = digits.len() as i32;
    if dp <= 0 {
        format!("0.{}{digits}", "0".repeat((-dp) as usize))
    } else if dp >= nd {
        format!("{digits}{}", "0".repeat((dp - nd) as usize))
    } else {
        format!("{}.{}", &digits[..dp as usize], &digits[dp as usize..])
    }
}

/// A time as Go's `Time.UTC().Format(time.RFC3339)` prints a `metav1.Time`: UTC, whole
/// seconds (`2021-06-20T07:35:27Z`).
pub fn rfc3339(t: time::OffsetDateTime) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

/// Go's duration units, in nanoseconds.
const NANOS_PER: &[(&str, u64)] = &[
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("μs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

/// Go's `time.ParseDuration`, in nanoseconds.
pub fn parse_go_duration(orig: &str) -> Result<i64, String> {
    parse_duration_units(orig, NANOS_PER)
}

/// A Go-style duration (`1h2m3.5s`, signed) whose units are `units` (name, nanoseconds),
/// in nanoseconds; errors worded as `time.ParseDuration` words them.
pub fn parse_duration_units(orig: &str, units: &[(&str, u64)]) -> Result<i64, String> {
    let invalid = || format!("time: invalid duration {orig:?}");
    let mut s = orig;
    let mut neg = false;
    if let Some(rest) = s.strip_prefix('-') {
        neg = true;
        s = rest;
    } else if let Some(rest) = s.strip_prefix('+') {
        s = rest;
    }
    if s == "0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    let mut total: u128 = 0;
    while !s.is_empty() {
        let int_len = s.bytes().take_while(u8::is_ascii_digit).count();
        let int_part = &s[..int_len];
        s = &s[int_len..];
        let mut frac_part = "";
        if let Some(rest) = s.strip_prefix('.') {
            let n = rest.bytes().take_while(u8::is_ascii_digit).count();
            frac_part = &rest[..n];
            s = &rest[n..];
        }
        if int_part.is_empty() && frac_part.is_empty() {
            return Err(invalid());
        }
        let unit_len = s
            .char_indices()
            .find(|(_, c)| *c == '.' || c.is_ascii_digit())
            .map_or(s.len(), |(i, _)| i);
        let unit = &s[..unit_len];
        s = &s[unit_len..];
        if unit.is_empty() {
            return Err(format!("time: missing unit in duration {orig:?}"));
        }
        let Some((_, per)) = units.iter().find(|(u, _)| *u == unit) else {
            return Err(format!("time: unknown unit {unit:?} in duration {orig:?}"));
        };
        let per = u128::from(*per);
        let whole: u128 = if int_part.is_empty() {
            0
        } else {
            int_part.parse().map_err(|_| invalid())?
        };
        let mut v = whole.checked_mul(per).ok_or_else(invalid)?;
        if !frac_part.is_empty() {
            let mut scale = 1u128;
            let mut f = 0u128;
            for b in frac_part.bytes().take(30) {
                f = f * 10 + u128::from(b - b'0');
                scale *= 10;
            }
            v = v.checked_add(f * per / scale).ok_or_else(invalid)?;
        }
        total = total.checked_add(v).ok_or_else(invalid)?;
        if total > 1u128 << 63 {
            return Err(invalid());
        }
    }
    if neg {
        i64::try_from(-i128::try_from(total).map_err(|_| invalid())?).map_err(|_| invalid())
    } else {
        i64::try_from(total).map_err(|_| invalid())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn go_number_formatting() {
        assert_eq!(go_float(10.0), "10");
        assert_eq!(go_float(0.5), "0.5");
        assert_eq!(go_float(1e6), "1e+06");
        assert_eq!(go_float(123456.0), "123456");
        assert_eq!(go_float(1.5e-5), "1.5e-05");
        assert_eq!(go_float(-2.25), "-2.25");
        assert_eq!(
            go_json(&json!({"b": 1.0e-7, "a": "<"})),
            r#"{"a":"\u003c","b":1e-7}"#
        );
    }

    #[test]
    fn go_json_floats_as_encoding_json_writes_them() {
        assert_eq!(go_json(&json!(1e21)), "1e+21");
        assert_eq!(go_json(&json!(-1.5e-10)), "-1.5e-10");
        assert_eq!(go_json(&json!(1.0)), "1");
    }

    #[test]
    fn go_json_sorts_and_escapes() {
        let v = json!({"z": 1, "a": ["<x>", true, null], "m": "&"});
        assert_eq!(
            go_json(&v),
            r#"{"a":["\u003cx\u003e",true,null],"m":"\u0026","z":1}"#
        );
        // Keys are escaped like values and sorted by their raw bytes.
        assert_eq!(
            go_json(&json!({"a": 1, "<k>\n": "\u{2028}"})),
            r#"{"\u003ck\u003e\n":"\u2028","a":1}"#
        );
    }
}
