//! `x-kubernetes-validations[].fieldPath`: kube's `ValidFieldPath`, a JSON path of field
//! selections (`.a.b`) and quoted keys (`['a.b']`) that must exist in the schema, normalized
//! to a field path (`a.b`, `m[key]`).

use wasmgate_apimachinery::structural::{AdditionalProperties, Node};

/// The normalized path, or why `path` is not valid for `node`.
pub(crate) fn valid_field_path(path: &str, node: Node<'_>) -> Result<String, String> {
    let tokens = tokenize(path);
    let mut out = String::new();
    let mut node = node;
    let mut i = 0;
    let append = |out: &mut String, node: &mut Node<'_>, name: &str| -> Result<(), String> {
        if node.properties().next().is_some() {
            let child = node
                .property(name)
                .ok_or_else(|| "does not refer to a valid field".to_owned())?;
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(name);
            *node = child;
            Ok(())
        } else if let Some(AdditionalProperties::Schema(values)) = node.additional_properties() {
            out.push('[');
            out.push_str(name);
            out.push(']');
            *node = values;
            Ok(())
        } else {
            Err("does not refer to a valid field".to_owned())
        }
    };
    while i < tokens.len() {
        match tokens[i].as_str() {
            "[" => {
                let tok = tokens.get(i + 1).ok_or("unexpected end of JSON path")?;
                if tok.len() < 2 || !tok.starts_with('\'') || !tok.ends_with('\'') {
                    return Err(format!("expected single quoted string but got {tok}"));
                }
                let unescaped = unescape_single_quote(&tok[1..tok.len() - 1])
                    .map_err(|e| format!("invalid string literal: {e}"))?;
                append(&mut out, &mut node, &unescaped)?;
                let close = tokens.get(i + 2).ok_or("unexpected end of JSON path")?;
                if close != "]" {
                    return Err(format!("expected ] but got {close}"));
                }
                i += 3;
            }
            "." => {
                let tok = tokens.get(i + 1).ok_or("unexpected end of JSON path")?;
                append(&mut out, &mut node, tok)?;
                i += 2;
            }
            other => return Err(format!("expected [ or . but got: {other}")),
        }
    }
    Ok(out)
}

fn tokenize(path: &str) -> Vec<String> {
    let bytes = path.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\'' {
            let mut j = i + 1;
            while j < bytes.len() && !(bytes[j] == b'\'' && bytes[j - 1] != b'\\') {
                j += 1;
            }
            let end = (j + 1).min(bytes.len());
            out.push(String::from_utf8_lossy(&bytes[i..end]).into_owned());
            i = end;
            continue;
        }
        if matches!(bytes[i], b'.' | b'[' | b']') {
            out.push(char::from(bytes[i]).to_string());
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && !matches!(bytes[i], b'.' | b'[' | b']') {
            i += 1;
        }
        out.push(String::from_utf8_lossy(&bytes[start..i]).into_owned());
    }
    out
}

fn unescape_single_quote(s: &str) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('a') => out.push('\u{7}'),
            Some('b') => out.push('\u{8}'),
            Some('f') => out.push('\u{c}'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('t') => out.push('\t'),
            Some('v') => out.push('\u{b}'),
            Some('\'') => out.push('\''),
            Some('\\') => out.push('\\'),
            Some(other) => return Err(format!("invalid escape char \\{other}")),
            None => out.push('\\'),
        }
    }
    Ok(out)
}
