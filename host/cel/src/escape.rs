//! Property-name escaping (CRDV-03), as `k8s.io/apiserver/pkg/cel/escaping.go` does it.
//!
//! Accessible property names match `[a-zA-Z_.-/][a-zA-Z0-9_.-/]*`; in expressions `__` is
//! written `__underscores__`, `.` `__dot__`, `-` `__dash__`, `/` `__slash__`, and a name that
//! is exactly a CEL reserved word `__{word}__`.

/// CEL's reserved symbols: no identifier may collide with them.
const RESERVED: &[&str] = &[
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// The CEL identifier for a property name, or `None` when the name is not accessible.
pub(crate) fn escape(ident: &str) -> Option<String> {
    let first = ident.bytes().next()?;
    if first.is_ascii_digit() {
        return None;
    }
    if RESERVED.contains(&ident) {
        return Some(format!("__{ident}__"));
    }
    let mut out = String::with_capacity(ident.len());
    let bytes = ident.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            b'_' if bytes.get(i + 1) == Some(&b'_') => {
                out.push_str("__underscores__");
                i += 2;
                continue;
            }
            b'.' => out.push_str("__dot__"),
            b'-' => out.push_str("__dash__"),
            b'/' => out.push_str("__slash__"),
            b if b.is_ascii_alphanumeric() || b == b'_' => out.push(char::from(b)),
            _ => return None,
        }
        i += 1;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn escapes_like_kubernetes() {
        assert_eq!(escape("namespace").as_deref(), Some("__namespace__"));
        assert_eq!(escape("x-prop").as_deref(), Some("x__dash__prop"));
        assert_eq!(
            escape("redact__d").as_deref(),
            Some("redact__underscores__d")
        );
        assert_eq!(escape("a.b/c").as_deref(), Some("a__dot__b__slash__c"));
        assert_eq!(escape("sprint").as_deref(), Some("sprint"));
        assert_eq!(escape("___").as_deref(), Some("__underscores___"));
        assert_eq!(escape("1abc"), None);
        assert_eq!(escape("a b"), None);
        assert_eq!(escape("é"), None);
        assert_eq!(escape(""), None);
    }
}
