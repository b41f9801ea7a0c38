//! Static bearer tokens (kube-apiserver's `--token-auth-file`): a CSV file of
//! `token,user,uid[,"group1,group2,..."]` lines. A request that presents
//! `Authorization: Bearer <token>` (and no client certificate) is that user; an unknown
//! token is a 401, as kube answers it.
//!
//! Not the `csv` crate: one record per line with quoted fields is all the format uses, a
//! few lines ([`split_csv`]) without another dependency.

use std::collections::HashMap;

use crate::User;

/// Tokens and whom they authenticate.
#[derive(Debug, Clone, Default)]
pub struct Tokens {
    /// The user of each token, with the uid its line names (a `TokenReview` reports it).
    by_token: HashMap<String, (User, String)>,
}

impl Tokens {
    /// Reads a token file's text: one `token,user,uid[,groups]` record per line (empty
    /// lines skipped; `groups` a comma-separated list, quoted when it has several).
    pub fn parse(text: &str) -> Result<Tokens, String> {
        let mut by_token = HashMap::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let fields = split_csv(line).map_err(|e| format!("line {}: {e}", n + 1))?;
            if fields.len() < 3 {
                return Err(format!(
                    "line {}: want token,user,uid[,groups], got {} fields",
                    n + 1,
                    fields.len()
                ));
            }
            let (token, name) = (fields[0].trim(), fields[1].trim());
            if token.is_empty() || name.is_empty() {
                return Err(format!("line {}: empty token or user name", n + 1));
            }
            let groups = fields
                .get(3)
                .map(|g| {
                    g.split(',')
                        .map(str::trim)
                        .filter(|g| !g.is_empty())
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            if by_token
                .insert(
                    token.to_owned(),
                    (
                        User {
                            name: name.to_owned(),
                            groups,
                        },
                        fields[2].trim().to_owned(),
                    ),
                )
                .is_some()
            {
                return Err(format!("line {}: duplicate token", n + 1));
            }
        }
        Ok(Tokens { by_token })
    }

    /// The user a token authenticates.
    pub fn user(&self, token: &str) -> Option<&User> {
        self.lookup(token).map(|(u, _)| u)
    }

    /// The user a token authenticates, and the uid its line names.
    pub fn lookup(&self, token: &str) -> Option<(&User, &str)> {
        self.by_token.get(token).map(|(u, uid)| (u, uid.as_str()))
    }
}

/// Splits one CSV record: fields separated by commas, a field in double quotes may hold
/// commas and `""` for a quote.
fn split_csv(line: &str) -> Result<Vec<String>, String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut chars = line.chars().peekable();
    let mut quoted = false;
    let mut at_start = true;
    while let Some(c) = chars.next() {
        match c {
            '"' if at_start => {
                quoted = true;
                at_start = false;
            }
            '"' if quoted => {
                if chars.peek() == Some(&'"') {
                    chars.next();
                    field.push('"');
                } else {
                    quoted = false;
                }
            }
            ',' if !quoted => {
                fields.push(std::mem::take(&mut field));
                at_start = true;
            }
            c => {
                field.push(c);
                at_start = false;
            }
        }
    }
    if quoted {
        return Err("unterminated quoted field".into());
    }
    fields.push(field);
    Ok(fields)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;

    /// The token file format (`token,user,uid,"g1,g2"`, kube's `--token-auth-file`).
    #[test]
    fn token_file() {
        let t = Tokens::parse("t1,alice,1,\"dev,ops\"\n\nt2,bob,2\n").unwrap();
        let alice = t.user("t1").unwrap();
        assert_eq!(alice.name, "alice");
        assert_eq!(alice.groups, ["dev", "ops"]);
        assert_eq!(t.lookup("t1").unwrap().1, "1");
        assert_eq!(t.user("t2").unwrap().groups, Vec::<String>::new());
        assert!(t.user("t3").is_none());
        assert!(Tokens::parse("t1,alice").is_err());
        assert!(Tokens::parse("t1,alice,1\nt1,bob,2").is_err());
        assert!(Tokens::parse("t1,alice,1,\"dev").is_err());
    }
}
