//! Encryption at rest: kube-apiserver's `--encryption-provider-config`.
//!
//! An `apiserver.config.k8s.io/v1` `EncryptionConfiguration` names, for groups of
//! resources, a list of providers: the first one writes, every one of them reads. A value
//! written by `aesgcm` is `k8s:enc:aesgcm:v1:<key name>:` followed by a random 12-byte
//! nonce and the AES-GCM ciphertext and tag, authenticated with the object's storage key
//! (a sealed value copied to another object does not open); `identity` writes the object
//! as it is and reads anything without the `k8s:enc:` prefix. Key rotation is kube's:
//! add the new key second, restart; move it first, restart; rewrite the objects (an
//! update that changes nothing still writes an object read with any key but the first,
//! `Store::stale`); drop the old key.
//!
//! The store wraps its engine with the [`Encryption`] transformer, so the sealed form is
//! all the engine (the redb file, TiKV) ever holds; see `wasmgate_storage::transform`.
//! Only `aesgcm` and `identity` are served: `aescbc`, `secretbox` and `kms` are refused
//! when the configuration is read, never silently skipped.

use std::fmt;

use aws_lc_rs::aead::{AES_128_GCM, AES_192_GCM, AES_256_GCM, Aad, Nonce, RandomizedNonceKey};
use base64::Engine as _;
use bytes::Bytes;
use serde::Deserialize;
use wasmgate_storage::{BoxError, ValueTransformer};

/// The prefix of every encrypted value.
const ENCRYPTED: &[u8] = b"k8s:enc:";
/// AES-GCM nonce length.
const NONCE_LEN: usize = 12;

/// The configuration file, as kube reads it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct File {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    resources: Vec<ResourceConfig>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResourceConfig {
    #[serde(default)]
    resources: Vec<String>,
    #[serde(default)]
    providers: Vec<ProviderConfig>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ProviderConfig {
    aesgcm: Option<KeysConfig>,
    identity: Option<serde_json::Value>,
    aescbc: Option<serde_json::Value>,
    secretbox: Option<serde_json::Value>,
    kms: Option<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
struct KeysConfig {
    #[serde(default)]
    keys: Vec<KeyConfig>,
}

#[derive(Debug, Deserialize)]
struct KeyConfig {
    #[serde(default)]
    name: String,
    #[serde(default)]
    secret: String,
}

/// Which resources a rule covers: `secrets` (the core group), `widgets.example.com`,
/// `*.example.com` (a whole group), `*.` (the whole core group), `*.*` (everything).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Pattern {
    /// `None`: any resource.
    resource: Option<String>,
    /// `None`: any group; `""` is the core group.
    group: Option<String>,
}

impl Pattern {
    fn parse(s: &str) -> Result<Pattern, String> {
        let (resource, group) = match s.split_once('.') {
            Some((r, g)) => (r, g),
            None => (s, ""),
        };
        if resource.is_empty() || s != s.to_ascii_lowercase() || s.contains(['/', ' ']) {
            return Err(format!(
                "{s:?} is not a resource name (resource or resource.group)"
            ));
        }
        if resource != "*" && group == "*" {
            return Err(format!(
                "{s:?}: a wildcard group needs a wildcard resource (\"*.*\")"
            ));
        }
        Ok(Pattern {
            resource: (resource != "*").then(|| resource.to_owned()),
            group: (group != "*").then(|| group.to_owned()),
        })
    }

    fn matches(&self, group: &str, resource: &str) -> bool {
        self.group.as_deref().is_none_or(|g| g == group)
            && self.resource.as_deref().is_none_or(|r| r == resource)
    }
}

/// One way of reading a stored value.
enum Reader {
    /// `k8s:enc:aesgcm:v1:<name>:` ++ nonce ++ ciphertext and tag.
    AesGcm {
        prefix: Vec<u8>,
        key: RandomizedNonceKey,
    },
    /// The value as it is.
    Identity,
}

impl Reader {
    fn name(&self) -> String {
        match self {
            Reader::AesGcm { prefix, .. } => String::from_utf8_lossy(&prefix[ENCRYPTED.len()..])
                .trim_end_matches(':')
                .to_owned(),
            Reader::Identity => "identity".to_owned(),
        }
    }
}

/// The providers of one group of resources: the first writes, all read.
struct Rule {
    patterns: Vec<Pattern>,
    readers: Vec<Reader>,
}

/// The transformer of an `EncryptionConfiguration`.
pub struct Encryption {
    rules: Vec<Rule>,
}

impl fmt::Debug for Encryption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Names only: never key material.
        let rules: Vec<_> = self
            .rules
            .iter()
            .map(|r| r.readers.iter().map(Reader::name).collect::<Vec<_>>())
            .collect();
        f.debug_struct("Encryption").field("rules", &rules).finish()
    }
}

impl Encryption {
    /// Reads an `EncryptionConfiguration` (YAML or JSON).
    pub fn parse(text: &str) -> Result<Encryption, String> {
        let v = wasmgate_apimachinery::json::from_yaml(text.as_bytes())
            .map_err(|e| e.to_string())?
            .value;
        let file: File = serde_json::from_value(v).map_err(|e| e.to_string())?;
        if file.kind != "EncryptionConfiguration" {
            return Err(format!(
                "expected kind EncryptionConfiguration, got {:?}",
                file.kind
            ));
        }
        if file.api_version != "apiserver.config.k8s.io/v1" {
            return Err(format!(
                "expected apiVersion apiserver.config.k8s.io/v1, got {:?}",
                file.api_version
            ));
        }
        if file.resources.is_empty() {
            return Err("resources: Required value: at least one entry".into());
        }
        let mut rules = Vec::new();
        let mut seen: Vec<(String, Pattern)> = Vec::new();
        for (i, rc) in file.resources.iter().enumerate() {
            let at = format!("resources[{i}]");
            if rc.resources.is_empty() {
                return Err(format!("{at}.resources: Required value"));
            }
            if rc.providers.is_empty() {
                return Err(format!("{at}.providers: Required value"));
            }
            let mut patterns = Vec::new();
            for (j, r) in rc.resources.iter().enumerate() {
                let p = Pattern::parse(r).map_err(|e| format!("{at}.resources[{j}]: {e}"))?;
                if let Some((first, _)) = seen.iter().find(|(_, q)| *q == p) {
                    return Err(format!(
                        "{at}.resources[{j}]: {r:?} is already named at {first}"
                    ));
                }
                seen.push((format!("{at}.resources[{j}]"), p.clone()));
                patterns.push(p);
            }
            let mut readers = Vec::new();
            for (j, p) in rc.providers.iter().enumerate() {
                readers.extend(provider(p).map_err(|e| format!("{at}.providers[{j}]: {e}"))?);
            }
            rules.push(Rule { patterns, readers });
        }
        Ok(Encryption { rules })
    }

    /// The rule of an object key `<group or "core">/<resource>/...`, if any: the first
    /// whose patterns match, as kube takes them.
    fn rule(&self, key: &str) -> Option<&Rule> {
        let mut parts = key.splitn(3, '/');
        let group = parts.next()?;
        let resource = parts.next()?;
        let group = if group == "core" { "" } else { group };
        self.rules
            .iter()
            .find(|r| r.patterns.iter().any(|p| p.matches(group, resource)))
    }
}

fn provider(p: &ProviderConfig) -> Result<Vec<Reader>, String> {
    let named = [
        p.aesgcm.is_some(),
        p.identity.is_some(),
        p.aescbc.is_some(),
        p.secretbox.is_some(),
        p.kms.is_some(),
    ];
    if named.iter().filter(|n| **n).count() != 1 {
        return Err("exactly one provider kind (aesgcm, identity, ...) per entry".into());
    }
    if p.identity.is_some() {
        return Ok(vec![Reader::Identity]);
    }
    let Some(gcm) = &p.aesgcm else {
        let kind = if p.aescbc.is_some() {
            "aescbc"
        } else if p.secretbox.is_some() {
            "secretbox"
        } else {
            "kms"
        };
        return Err(format!(
            "the {kind} provider is not supported by wasmgate: use aesgcm (and identity to read unencrypted data)"
        ));
    };
    if gcm.keys.is_empty() {
        return Err("aesgcm.keys: Required value".into());
    }
    let mut readers: Vec<Reader> = Vec::new();
    for (i, k) in gcm.keys.iter().enumerate() {
        let at = format!("aesgcm.keys[{i}]");
        if k.name.is_empty() {
            return Err(format!("{at}.name: Required value"));
        }
        if k.name.contains(':') {
            return Err(format!(
                "{at}.name: Invalid value: {:?}: must not contain ':'",
                k.name
            ));
        }
        let prefix = format!("k8s:enc:aesgcm:v1:{}:", k.name).into_bytes();
        if readers
            .iter()
            .any(|r| matches!(r, Reader::AesGcm { prefix: p, .. } if *p == prefix))
        {
            return Err(format!("{at}.name: Duplicate value: {:?}", k.name));
        }
        let secret = base64::engine::general_purpose::STANDARD
            .decode(k.secret.trim())
            .map_err(|e| format!("{at}.secret: Invalid value: not base64 ({e})"))?;
        let algorithm = match secret.len() {
            16 => &AES_128_GCM,
            24 => &AES_192_GCM,
            32 => &AES_256_GCM,
            n => {
                return Err(format!(
                    "{at}.secret: Invalid value: aes-gcm keys are 16, 24 or 32 bytes, not {n}"
                ));
            }
        };
        let key = RandomizedNonceKey::new(algorithm, &secret)
            .map_err(|_| format!("{at}.secret: Invalid value: not an AES key"))?;
        readers.push(Reader::AesGcm { prefix, key });
    }
    Ok(readers)
}

/// Why a value did not open.
#[derive(Debug, thiserror::Error)]
enum OpenError {
    #[error(
        "no provider of the encryption configuration reads it (it was written by {0}): add that provider back to the configuration"
    )]
    NoProvider(String),
    #[error("{0}: the data does not decrypt (wrong key, or damaged)")]
    Damaged(String),
}

impl ValueTransformer for Encryption {
    fn covers(&self, key: &str) -> bool {
        self.rule(key).is_some()
    }

    fn seal(&self, key: &str, value: &[u8]) -> Result<Bytes, BoxError> {
        let Some(rule) = self.rule(key) else {
            return Ok(Bytes::copy_from_slice(value));
        };
        match rule.readers.first() {
            Some(Reader::AesGcm { prefix, key: k }) => {
                let mut body = value.to_vec();
                let nonce = k
                    .seal_in_place_append_tag(Aad::from(key.as_bytes()), &mut body)
                    .map_err(|_| "aes-gcm encryption failed")?;
                let mut out = Vec::with_capacity(prefix.len() + NONCE_LEN + body.len());
                out.extend_from_slice(prefix);
                out.extend_from_slice(nonce.as_ref());
                out.extend_from_slice(&body);
                Ok(out.into())
            }
            Some(Reader::Identity) | None => Ok(Bytes::copy_from_slice(value)),
        }
    }

    fn open(&self, key: &str, stored: &[u8]) -> Result<(Bytes, bool), BoxError> {
        let Some(rule) = self.rule(key) else {
            return Ok((Bytes::copy_from_slice(stored), false));
        };
        for (i, reader) in rule.readers.iter().enumerate() {
            match reader {
                Reader::AesGcm { prefix, key: k } => {
                    let Some(rest) = stored.strip_prefix(prefix.as_slice()) else {
                        continue;
                    };
                    if rest.len() < NONCE_LEN {
                        return Err(OpenError::Damaged(reader.name()).into());
                    }
                    let (nonce, sealed) = rest.split_at(NONCE_LEN);
                    let nonce = Nonce::try_assume_unique_for_key(nonce)
                        .map_err(|_| OpenError::Damaged(reader.name()))?;
                    let mut body = sealed.to_vec();
                    let clear = k
                        .open_in_place(nonce, Aad::from(key.as_bytes()), &mut body)
                        .map_err(|_| OpenError::Damaged(reader.name()))?;
                    let n = clear.len();
                    body.truncate(n);
                    return Ok((body.into(), i != 0));
                }
                Reader::Identity if !stored.starts_with(ENCRYPTED) => {
                    return Ok((Bytes::copy_from_slice(stored), i != 0));
                }
                Reader::Identity => {}
            }
        }
        Err(OpenError::NoProvider(writer_of(stored)).into())
    }
}

/// Who wrote a stored value, from its prefix: `aesgcm key "k1"`, or `identity`.
fn writer_of(stored: &[u8]) -> String {
    let Some(rest) = stored.strip_prefix(ENCRYPTED) else {
        return "identity (not encrypted)".to_owned();
    };
    let text = String::from_utf8_lossy(&rest[..rest.len().min(64)]).into_owned();
    let mut parts = text.splitn(4, ':');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(kind), Some(_version), Some(name)) => format!("{kind} key {name:?}"),
        _ => "an unknown provider".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;

    const K1: &str = "MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTI="; // 32 bytes
    const K2: &str = "YWJjZGVmZ2hpamtsbW5vcA=="; // 16 bytes

    fn config(providers: &str) -> Encryption {
        Encryption::parse(&format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets, '*.example.com']\n  providers:\n{providers}"
        ))
        .unwrap()
    }

    fn gcm(keys: &[(&str, &str)]) -> String {
        let mut s = "  - aesgcm:\n      keys:\n".to_owned();
        for (n, k) in keys {
            s.push_str(&format!("      - name: {n}\n        secret: {k}\n"));
        }
        s
    }

    const SECRET: &str = "core/secrets/default/s";

    #[test]
    fn aesgcm_seals_covered_objects_and_opens_them() {
        let e = config(&(gcm(&[("k1", K1)]) + "  - identity: {}\n"));
        assert!(e.covers(SECRET));
        assert!(e.covers("example.com/widgets/ns/w"));
        assert!(!e.covers("core/configmaps/default/c"));
        assert!(!e.covers("apps.example.com/widgets/ns/w"));
        let sealed = e.seal(SECRET, b"{\"data\":\"hunter2\"}").unwrap();
        assert!(sealed.starts_with(b"k8s:enc:aesgcm:v1:k1:"));
        assert!(!sealed.windows(7).any(|w| w == b"hunter2"));
        let again = e.seal(SECRET, b"{\"data\":\"hunter2\"}").unwrap();
        assert_ne!(sealed, again, "a fresh nonce each time");
        let (clear, stale) = e.open(SECRET, &sealed).unwrap();
        assert_eq!((&clear[..], stale), (&b"{\"data\":\"hunter2\"}"[..], false));
        // Identity (second) reads values written before encryption: stale.
        let (clear, stale) = e.open(SECRET, b"{}").unwrap();
        assert_eq!((&clear[..], stale), (&b"{}"[..], true));
    }

    #[test]
    fn a_sealed_value_does_not_open_under_another_key_or_damaged() {
        let e = config(&gcm(&[("k1", K1)]));
        let sealed = e.seal(SECRET, b"v").unwrap();
        let err = e.open("core/secrets/default/other", &sealed).unwrap_err();
        assert!(err.to_string().contains("does not decrypt"), "{err}");
        let mut bad = sealed.to_vec();
        let last = bad.len() - 1;
        bad[last] ^= 1;
        assert!(e.open(SECRET, &bad).is_err());
        // Without identity, data written in clear does not read.
        let err = e.open(SECRET, b"{}").unwrap_err();
        assert!(
            err.to_string().contains("identity (not encrypted)"),
            "{err}"
        );
    }

    #[test]
    fn rotation_reads_old_keys_as_stale_and_names_a_missing_one() {
        let old = config(&gcm(&[("k1", K1)]));
        let sealed = old.seal(SECRET, b"v").unwrap();
        let both = config(&gcm(&[("k2", K2), ("k1", K1)]));
        assert_eq!(
            both.open(SECRET, &sealed).unwrap(),
            (Bytes::from("v"), true)
        );
        let resealed = both.seal(SECRET, b"v").unwrap();
        assert!(resealed.starts_with(b"k8s:enc:aesgcm:v1:k2:"));
        assert!(!both.open(SECRET, &resealed).unwrap().1);
        let new = config(&gcm(&[("k2", K2)]));
        let err = new.open(SECRET, &sealed).unwrap_err();
        assert!(err.to_string().contains("aesgcm key \"k1\""), "{err}");
        // Identity first: writes in clear, reads encrypted data as stale (decrypting).
        let off = config(&("  - identity: {}\n".to_owned() + &gcm(&[("k1", K1)])));
        assert_eq!(off.seal(SECRET, b"v").unwrap(), Bytes::from("v"));
        assert_eq!(off.open(SECRET, &sealed).unwrap(), (Bytes::from("v"), true));
    }

    #[test]
    fn bad_configurations_are_refused_with_the_field() {
        let parse = |s: &str| Encryption::parse(s).unwrap_err();
        let head = "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n";
        assert!(parse("kind: Policy").contains("EncryptionConfiguration"));
        let e = parse(&format!(
            "{head}resources:\n- resources: [secrets]\n  providers:\n  - aescbc:\n      keys: []\n"
        ));
        assert!(e.contains("aescbc provider is not supported"), "{e}");
        let e = parse(&format!(
            "{head}resources:\n- resources: [secrets]\n  providers:\n{}",
            gcm(&[("k1", "c2hvcnQ=")])
        ));
        assert!(
            e.contains("resources[0].providers[0]: aesgcm.keys[0].secret"),
            "{e}"
        );
        let e = parse(&format!(
            "{head}resources:\n- resources: [secrets]\n  providers:\n  - identity: {{}}\n- resources: [secrets]\n  providers:\n  - identity: {{}}\n"
        ));
        assert!(
            e.contains("already named at resources[0].resources[0]"),
            "{e}"
        );
        let e = parse(&format!(
            "{head}resources:\n- resources: [Secrets]\n  providers:\n  - identity: {{}}\n"
        ));
        assert!(e.contains("not a resource name"), "{e}");
    }

    #[test]
    fn wildcards_match_as_kube_reads_them() {
        let p = |s| Pattern::parse(s).unwrap();
        assert!(p("*.").matches("", "configmaps"));
        assert!(!p("*.").matches("apps", "deployments"));
        assert!(p("*.*").matches("example.com", "widgets"));
        assert!(p("*.apps").matches("apps", "deployments"));
        assert!(p("widgets.example.com").matches("example.com", "widgets"));
        assert!(!p("secrets").matches("example.com", "secrets"));
        assert!(Pattern::parse("secrets.*").is_err());
    }

    #[test]
    fn debug_shows_no_key_material() {
        let e = config(&gcm(&[("k1", K1)]));
        let d = format!("{e:?}");
        assert!(d.contains("aesgcm:v1:k1") && !d.contains(K1), "{d}");
    }
}
