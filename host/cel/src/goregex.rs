//! Go (RE2) regular expressions on the `regex` crate, as cel-go's `matches` and the
//! Kubernetes regex library use them: ASCII `\d`, `\w`, `\s`, `\b`; `\Q…\E`; Go's limits on
//! repeat counts (1000) and nested repetition; and a cap on the compiled size, so a pattern
//! taken from request data cannot make the server build a huge automaton.

use regex::{Regex, RegexBuilder};

/// Longest pattern accepted (characters).
pub(crate) const MAX_PATTERN_LEN: usize = 64 * 1024;
/// Compiled-program cap (`regex` crate size limit), in bytes.
const SIZE_LIMIT: usize = 2 * 1024 * 1024;
/// Lazy-DFA cache cap, in bytes.
const DFA_SIZE_LIMIT: usize = 2 * 1024 * 1024;

/// Compiles a Go regular expression; the error reads like Go's `regexp.Compile` error.
pub(crate) fn compile(pattern: &str) -> Result<Regex, String> {
    if pattern.len() > MAX_PATTERN_LEN {
        return Err("error parsing regexp: expression too large".to_owned());
    }
    let translated = translate(pattern).map_err(|e| format!("error parsing regexp: {e}"))?;
    RegexBuilder::new(&translated)
        .size_limit(SIZE_LIMIT)
        .dfa_size_limit(DFA_SIZE_LIMIT)
        .nest_limit(250)
        .build()
        .map_err(|e| match e {
            regex::Error::CompiledTooBig(_) => {
                "error parsing regexp: expression too large".to_owned()
            }
            other => format!(
                "error parsing regexp: {}",
                go_error(pattern, &other.to_string())
            ),
        })
}

/// Go's wording for the common `regex` crate errors.
fn go_error(pattern: &str, err: &str) -> String {
    let message = err
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("error: "))
        .unwrap_or(err);
    if message.starts_with("unclosed group") {
        format!("missing closing ): `{pattern}`")
    } else if message.starts_with("unopened group") {
        format!("unexpected ): `{pattern}`")
    } else if message.starts_with("repetition operator missing expression") {
        let op = pattern
            .chars()
            .find(|c| matches!(c, '*' | '+' | '?' | '{'))
            .unwrap_or('*');
        format!("missing argument to repetition operator: `{op}`")
    } else if message.starts_with("unclosed character class") {
        let tail = pattern.rfind('[').map_or(pattern, |i| &pattern[i..]);
        format!("missing closing ]: `{tail}`")
    } else if message.starts_with("unrecognized escape sequence")
        || message.starts_with("backreferences are not supported")
    {
        format!("invalid escape sequence: `{pattern}`")
    } else if message.starts_with("look-around") {
        format!("invalid or unsupported Perl syntax: `{pattern}`")
    } else {
        format!("{message}: `{pattern}`")
    }
}

fn translate(p: &str) -> Result<String, String> {
    let chars: Vec<char> = p.chars().collect();
    let n = chars.len();
    let mut out = String::with_capacity(p.len() + 8);
    let mut i = 0;
    let mut in_class = false;
    let mut class_start = false;
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
                    if let Some(j) = close {
                        out.extend(&chars[i..j + 2]);
                        i = j + 2;
                    } else {
                        out.push_str("\\[");
                        i += 1;
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
        Some(
            chars[start..*j]
                .iter()
                .collect::<String>()
                .parse()
                .unwrap_or(u64::MAX),
        )
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

#[cfg(test)]
mod tests {
    use super::compile;

    #[test]
    fn go_syntax_and_limits() {
        assert!(compile(r"^\d+$").is_ok_and(|r| r.is_match("123") && !r.is_match("١٢")));
        assert!(compile("a{1001}").is_err());
        assert!(compile("a**").is_err());
        assert!(compile("(").is_err());
        // 1000 nested counted repetitions would compile to an enormous program.
        let err = compile("((((a{1000}){1000}){1000}){1000})").err();
        assert_eq!(
            err.as_deref(),
            Some("error parsing regexp: expression too large")
        );
    }
}
