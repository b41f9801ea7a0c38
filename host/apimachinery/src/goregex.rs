//! Go (RE2) regular expressions on the `regex` crate, as kube-openapi's `pattern` and
//! CEL's `matches` use them: ASCII `\d`, `\w`, `\s`, `\b`; `\Q…\E`; a `{` that does not
//! start a repetition taken literally; Go's limits on repeat counts (1000) and nested
//! repetition; Go's error wording; and a cap on the compiled size, so a pattern from a CRD
//! or from request data cannot make the server build a huge automaton.

use regex::{Regex, RegexBuilder};

/// Longest pattern accepted (bytes of UTF-8).
const MAX_PATTERN_LEN: usize = 64 * 1024;
/// Compiled-program cap for patterns written by people (schemas, rules): the `regex`
/// crate's default.
const SIZE_LIMIT: usize = 10 * 1024 * 1024;
/// Compiled-program cap for patterns that come from request data.
const UNTRUSTED_SIZE_LIMIT: usize = 2 * 1024 * 1024;

/// Compiles a Go (RE2) regular expression with the `regex` crate: `\d`, `\w`, `\s`, `\b`
/// are made ASCII-only as in Go, `\Q…\E` quoted, a `{` that does not start a repetition
/// taken literally, and Go's limits (repeat counts over 1000, nested repetition) enforced.
/// Errors are worded as Go's `regexp.Compile` words them where known.
pub fn compile(pattern: &str) -> Result<Regex, String> {
    compile_limited(pattern, SIZE_LIMIT)
}

/// [`compile`] with a smaller cap, for patterns taken from request data (CEL's `matches`
/// on a data value), so a request cannot make the server build a huge automaton.
pub fn compile_untrusted(pattern: &str) -> Result<Regex, String> {
    compile_limited(pattern, UNTRUSTED_SIZE_LIMIT)
}

fn compile_limited(pattern: &str, size_limit: usize) -> Result<Regex, String> {
    if pattern.len() > MAX_PATTERN_LEN {
        return Err("error parsing regexp: expression too large".to_owned());
    }
    let translated = translate(pattern).map_err(|e| format!("error parsing regexp: {e}"))?;
    RegexBuilder::new(&translated)
        .size_limit(size_limit)
        .dfa_size_limit(size_limit)
        .nest_limit(250)
        .build()
        .map_err(|e| match e {
            regex::Error::CompiledTooBig(_) => {
                "error parsing regexp: expression too large".to_owned()
            }
            other => format!(
                "error parsing regexp: {}",
                map_regex_error(pattern, &translated, &other.to_string())
            ),
        })
}

fn translate(p: &str) -> Result<String, String> {
    let chars: Vec<char> = p.chars().collect();
    let n = chars.len();
    let mut out = String::with_capacity(p.len() + 8);
    let mut i = 0;
    let mut in_class = false;
    let mut class_start = false;
    // Start of the previous repetition operator, while nothing else followed it.
    let mut last_repeat: Option<usize> = None;
    while i < n {
        let c = chars[i];
        if in_class {
            match c {
                '\\' if i + 1 < n => {
                    match chars[i + 1] {
                        'd' => out.push_str("0-9"),
                        'w' => out.push_str("0-9A-Za-z_"),
                        's' => out.push_str("\\t\\n\\x0C\\r "),
                        'D' => out.push_str("[^0-9]"),
                        'W' => out.push_str("[^0-9A-Za-z_]"),
                        'S' => out.push_str("[^\\t\\n\\x0C\\r ]"),
                        other => {
                            out.push('\\');
                            out.push(other);
                        }
                    }
                    i += 2;
                    class_start = false;
                    continue;
                }
                '[' if chars.get(i + 1) == Some(&':') => {
                    let close = (i + 2..n.saturating_sub(1))
                        .find(|&j| chars[j] == ':' && chars[j + 1] == ']');
                    match close {
                        Some(j) => {
                            out.extend(&chars[i..j + 2]);
                            i = j + 2;
                        }
                        None => {
                            out.push_str("\\[");
                            i += 1;
                        }
                    }
                    class_start = false;
                    continue;
                }
                '[' | '&' | '~' => {
                    out.push('\\');
                    out.push(c);
                }
                '-' if chars.get(i + 1) == Some(&'-') => out.push_str("\\-"),
                ']' if class_start => out.push_str("\\]"),
                ']' => {
                    in_class = false;
                    out.push(']');
                }
                other => out.push(other),
            }
            class_start = false;
            i += 1;
            continue;
        }
        match c {
            '\\' => {
                last_repeat = None;
                let Some(&e) = chars.get(i + 1) else {
                    return Err("trailing backslash at end of expression: ``".into());
                };
                match e {
                    'd' => out.push_str("[0-9]"),
                    'D' => out.push_str("[^0-9]"),
                    'w' => out.push_str("[0-9A-Za-z_]"),
                    'W' => out.push_str("[^0-9A-Za-z_]"),
                    's' => out.push_str("[\\t\\n\\x0C\\r ]"),
                    'S' => out.push_str("[^\\t\\n\\x0C\\r ]"),
                    'b' => out.push_str("(?-u:\\b)"),
                    'B' => out.push_str("(?-u:\\B)"),
                    'Q' => {
                        let mut j = i + 2;
                        let mut literal = String::new();
                        while j < n && !(chars[j] == '\\' && chars.get(j + 1) == Some(&'E')) {
                            literal.push(chars[j]);
                            j += 1;
                        }
                        out.push_str("(?:");
                        out.push_str(&regex::escape(&literal));
                        out.push(')');
                        i = if j < n { j + 2 } else { j };
                        continue;
                    }
                    other => {
                        out.push('\\');
                        out.push(other);
                    }
                }
                i += 2;
            }
            '[' => {
                last_repeat = None;
                in_class = true;
                class_start = true;
                out.push('[');
                i += 1;
                if chars.get(i) == Some(&'^') {
                    out.push('^');
                    i += 1;
                }
            }
            '(' if chars.get(i + 1) == Some(&'?') => {
                last_repeat = None;
                // Copy group flags / names verbatim up to `:`, `)` or `>`.
                let mut j = i + 2;
                while j < n && !matches!(chars[j], ':' | ')' | '>') {
                    j += 1;
                }
                let end = (j + 1).min(n);
                out.extend(&chars[i..end]);
                i = end;
            }
            '*' | '+' | '?' | '{' => {
                let end = if c == '{' {
                    match parse_repeat(&chars, i) {
                        Some((end, min, max)) => {
                            if min > 1000 || max.is_some_and(|m| m > 1000 || m < min) {
                                let text: String = chars[i..end].iter().collect();
                                return Err(format!("invalid repeat count: `{text}`"));
                            }
                            end
                        }
                        None => {
                            out.push_str("\\{");
                            last_repeat = None;
                            i += 1;
                            continue;
                        }
                    }
                } else {
                    i + 1
                };
                let end = if chars.get(end) == Some(&'?') {
                    end + 1
                } else {
                    end
                };
                if let Some(start) = last_repeat {
                    let text: String = chars[start..end].iter().collect();
                    return Err(format!("invalid nested repetition operator: `{text}`"));
                }
                out.extend(&chars[i..end]);
                last_repeat = Some(i);
                i = end;
            }
            '}' => {
                last_repeat = None;
                out.push_str("\\}");
                i += 1;
            }
            other => {
                last_repeat = None;
                out.push(other);
                i += 1;
            }
        }
    }
    Ok(out)
}

/// `{n}`, `{n,}` or `{n,m}` at `i`: the end index, min and max.
fn parse_repeat(chars: &[char], i: usize) -> Option<(usize, u64, Option<u64>)> {
    let mut j = i + 1;
    let digits = |j: &mut usize| -> Option<u64> {
        let start = *j;
        while *j < chars.len() && chars[*j].is_ascii_digit() {
            *j += 1;
        }
        if *j == start {
            return None;
        }
        chars[start..*j]
            .iter()
            .collect::<String>()
            .parse()
            .ok()
            .or(Some(u64::MAX))
    };
    let min = digits(&mut j)?;
    let max = match chars.get(j) {
        Some('}') => Some(min),
        Some(',') => {
            j += 1;
            if chars.get(j) == Some(&'}') {
                None
            } else {
                let m = digits(&mut j)?;
                if chars.get(j) != Some(&'}') {
                    return None;
                }
                Some(m)
            }
        }
        _ => return None,
    };
    Some((j + 1, min, max))
}

/// Maps a `regex` crate error onto Go's `regexp/syntax` wording.
fn map_regex_error(original: &str, translated: &str, err: &str) -> String {
    let lines: Vec<&str> = err.lines().collect();
    let message = lines
        .iter()
        .rev()
        .find_map(|l| l.strip_prefix("error: "))
        .unwrap_or(err);
    let span = lines
        .iter()
        .find(|l| l.trim_start().starts_with('^') && l.trim().chars().all(|c| c == '^'))
        .map(|l| {
            let start = l.find('^').unwrap_or(0).saturating_sub(4);
            let len = l.trim().chars().count();
            translated.chars().skip(start).take(len).collect::<String>()
        })
        .unwrap_or_default();
    let tail = |s: &str| -> String {
        match translated.find(s) {
            Some(i) => translated[i..].to_owned(),
            None => original.to_owned(),
        }
    };
    if message.starts_with("repetition operator missing expression") {
        format!("missing argument to repetition operator: `{span}`")
    } else if message.starts_with("unclosed group") {
        format!("missing closing ): `{original}`")
    } else if message.starts_with("unopened group") {
        format!("unexpected ): `{original}`")
    } else if message.starts_with("unclosed character class") {
        format!("missing closing ]: `{}`", tail(&span))
    } else if message.starts_with("unrecognized escape sequence")
        || message.starts_with("backreferences are not supported")
    {
        format!("invalid escape sequence: `{span}`")
    } else if message.starts_with("look-around") {
        format!("invalid or unsupported Perl syntax: `{span}`")
    } else if message.starts_with("invalid character class range") {
        format!("invalid character class range: `{span}`")
    } else if message.starts_with("invalid repetition count range") {
        format!("invalid repeat count: `{span}`")
    } else {
        message.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_regex_translation() {
        let ascii_digit = compile(r"^\d+$").ok();
        assert!(ascii_digit.as_ref().is_some_and(|r| r.is_match("123")));
        assert!(ascii_digit.as_ref().is_some_and(|r| !r.is_match("١٢٣")));
        assert!(compile(r"^{x}$").is_ok_and(|r| r.is_match("{x}")));
        assert!(compile(r"\Qa.b\E").is_ok_and(|r| r.is_match("a.b") && !r.is_match("axb")));
        assert!(compile(r"[\d-]").is_ok_and(|r| r.is_match("-")));
        assert_eq!(
            compile("a{1001}").err().as_deref(),
            Some("error parsing regexp: invalid repeat count: `{1001}`")
        );
        assert_eq!(
            compile("[abc").err().as_deref(),
            Some("error parsing regexp: missing closing ]: `[abc`")
        );
    }
}
