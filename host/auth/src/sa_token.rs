//! ServiceAccount tokens (issue 12): `TokenRequest` (`POST
//! …/serviceaccounts/NAME/token`, `kubectl create token NAME`) issues a JWT signed by the
//! gateway's ES256 key and bound to the account's uid; a request that presents one is
//! that account (`system:serviceaccount:NS:NAME`, groups `system:serviceaccounts` and
//! `system:serviceaccounts:NS`) while the token has not expired and the account still
//! exists with that uid — so deleting the account revokes its tokens.
//!
//! Not a JWT crate: a compact JWS is three base64url parts around one signature, and the
//! signature is aws-lc-rs's ECDSA P-256, already in the build for TLS.

use std::path::Path;

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{
    ECDSA_P256_SHA256_FIXED, ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _,
    UnparsedPublicKey,
};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use serde_json::{Value, json};

use crate::User;

/// The issuer, and the audience a token must name to be accepted here (kube's default
/// `--api-audiences` is its issuer).
pub const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// Default and shortest lifetimes of a requested token (kube's: 1 h, 10 min).
const DEFAULT_SECONDS: i64 = 3600;
const MIN_SECONDS: i64 = 600;
/// The longest lifetime granted (kube caps at its `--service-account-max-token-expiration`).
const MAX_SECONDS: i64 = 48 * 3600;

/// Signs and verifies the tokens.
pub struct Signer {
    key: EcdsaKeyPair,
    rng: SystemRandom,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Signer(ES256)")
    }
}

impl Signer {
    /// The key in `path` (PKCS#8 DER), created there (mode 0600) when missing; without a
    /// path, a key for this process only.
    pub fn load_or_create(path: Option<&Path>) -> Result<Signer, String> {
        let rng = SystemRandom::new();
        let generate = || {
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
                .map(|d| d.as_ref().to_vec())
                .map_err(|e| format!("generating the service account key: {e}"))
        };
        let der = match path {
            None => generate()?,
            Some(p) => match std::fs::read(p) {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    let der = generate()?;
                    write_private(p, &der)?;
                    der
                }
                Err(e) => return Err(format!("reading {}: {e}", p.display())),
            },
        };
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &der)
            .map_err(|e| format!("the service account key is not a P-256 PKCS#8 key: {e}"))?;
        Ok(Signer { key, rng })
    }

    /// A compact JWS of `claims`.
    fn sign(&self, claims: &Value) -> Result<String, String> {
        let header = B64.encode(br#"{"alg":"ES256","typ":"JWT"}"#);
        let payload = B64.encode(claims.to_string());
        let input = format!("{header}.{payload}");
        let sig = self
            .key
            .sign(&self.rng, input.as_bytes())
            .map_err(|e| format!("signing: {e}"))?;
        Ok(format!("{input}.{}", B64.encode(sig.as_ref())))
    }

    /// The claims of a token this signer signed (`None`: not one of ours).
    fn verify(&self, token: &str) -> Option<Value> {
        let (input, sig) = token.rsplit_once('.')?;
        let (header, payload) = input.split_once('.')?;
        let header: Value = serde_json::from_slice(&B64.decode(header).ok()?).ok()?;
        if header.get("alg").and_then(Value::as_str) != Some("ES256") {
            return None;
        }
        let sig = B64.decode(sig).ok()?;
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, self.key.public_key().as_ref())
            .verify(input.as_bytes(), &sig)
            .ok()?;
        serde_json::from_slice(&B64.decode(payload).ok()?).ok()
    }
}

fn write_private(path: &Path, bytes: &[u8]) -> Result<(), String> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| format!("creating {}: {e}", path.display()))?;
    f.write_all(bytes)
        .map_err(|e| format!("writing {}: {e}", path.display()))
}

fn now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

/// A token for the account `sa` (its stored object) as `request` (a `TokenRequest`) asks;
/// returns the `TokenRequest` to answer with, or the field error (422).
pub fn issue(signer: &Signer, sa: &Value, request: &Value) -> Result<Value, String> {
    let spec = &request["spec"];
    let seconds = spec
        .get("expirationSeconds")
        .and_then(Value::as_i64)
        .unwrap_or(DEFAULT_SECONDS);
    if seconds < MIN_SECONDS {
        return Err("may not specify a duration less than 10 minutes".into());
    }
    let seconds = seconds.min(MAX_SECONDS);
    if spec.get("boundObjectRef").is_some_and(|b| !b.is_null()) {
        // A token bound to a Pod or Secret would have to die with it: not done here.
        return Err("boundObjectRef is not supported by this server".into());
    }
    let audiences: Vec<String> = spec
        .get("audiences")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .filter(|a: &Vec<String>| !a.is_empty())
        .unwrap_or_else(|| vec![ISSUER.to_owned()]);
    let meta = |k: &str| {
        wasmgate_apiserver_core::object::meta_str(sa, k)
            .unwrap_or("")
            .to_owned()
    };
    let (ns, name, uid) = (meta("namespace"), meta("name"), meta("uid"));
    let iat = now();
    let claims = json!({
        "aud": audiences,
        "exp": iat + seconds,
        "iat": iat,
        "iss": ISSUER,
        "jti": wasmgate_apiserver_core::object::new_uid(),
        "kubernetes.io": {"namespace": ns, "serviceaccount": {"name": name, "uid": uid}},
        "nbf": iat,
        "sub": format!("system:serviceaccount:{ns}:{name}"),
    });
    let token = signer.sign(&claims)?;
    let expires = time::OffsetDateTime::from_unix_timestamp(iat + seconds)
        .map(wasmgate_apimachinery::gofmt::rfc3339)
        .unwrap_or_default();
    Ok(json!({
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"name": name, "namespace": ns, "creationTimestamp": wasmgate_apiserver_core::object::now_rfc3339()},
        "spec": {"audiences": audiences, "expirationSeconds": seconds, "boundObjectRef": spec.get("boundObjectRef").cloned().unwrap_or(Value::Null)},
        "status": {"token": token, "expirationTimestamp": expires},
    }))
}

/// What a token of ours claims, once checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claims {
    pub namespace: String,
    pub name: String,
    /// The account's uid when the token was issued (the caller checks it still is).
    pub uid: String,
    /// The token's id (`jti`), when it has one.
    pub id: Option<String>,
    /// The audiences the token is accepted for: those it names that were asked for.
    pub audiences: Vec<String>,
}

/// Checks a token against the audiences it must be for (`wanted`; this server's,
/// [`ISSUER`], for a request's own token), in kube's order: signed by us, meant for one of
/// them, within its lifetime. `Err(None)`: not a token of ours (kube's service account
/// authenticator does not speak then); `Err(Some(why))`: ours but refused, why in kube's
/// words.
pub fn check(signer: &Signer, token: &str, wanted: &[&str]) -> Result<Claims, Option<String>> {
    let c = signer.verify(token).ok_or(None)?;
    if c["iss"] != ISSUER {
        return Err(None);
    }
    let named: Vec<String> = match &c["aud"] {
        Value::String(a) => vec![a.clone()],
        Value::Array(a) => a
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    };
    let audiences: Vec<String> = named
        .iter()
        .filter(|a| wanted.contains(&a.as_str()))
        .cloned()
        .collect();
    if audiences.is_empty() {
        let list = |l: &mut dyn Iterator<Item = &str>| {
            let quoted: Vec<String> = l.map(wasmgate_apimachinery::validation::go_quote).collect();
            format!("[{}]", quoted.join(" "))
        };
        return Err(Some(format!(
            "token audiences {} is invalid for the target audiences {}",
            list(&mut named.iter().map(String::as_str)),
            list(&mut wanted.iter().copied()),
        )));
    }
    let t = now();
    let int = |k: &str| c.get(k).and_then(Value::as_i64);
    if int("exp").is_none_or(|exp| exp <= t) {
        return Err(Some("service account token has expired".into()));
    }
    if int("nbf").is_some_and(|nbf| nbf > t + 60) {
        return Err(Some("service account token is not valid yet".into()));
    }
    let k = &c["kubernetes.io"];
    let s = |v: &Value| v.as_str().map(str::to_owned);
    let malformed = || Some("service account token claims could not be validated".to_owned());
    Ok(Claims {
        namespace: s(&k["namespace"]).ok_or_else(malformed)?,
        name: s(&k["serviceaccount"]["name"]).ok_or_else(malformed)?,
        uid: s(&k["serviceaccount"]["uid"]).ok_or_else(malformed)?,
        id: s(&c["jti"]),
        audiences,
    })
}

/// The user a service account authenticates as.
pub fn user_of(namespace: &str, name: &str) -> User {
    User {
        name: format!("system:serviceaccount:{namespace}:{name}"),
        groups: vec![
            "system:serviceaccounts".into(),
            format!("system:serviceaccounts:{namespace}"),
        ],
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;

    /// Issued tokens verify and name their account; a changed byte, another key, another
    /// audience or a too short lifetime do not pass.
    #[test]
    fn tokens_round_trip_and_tampering_fails() {
        let signer = Signer::load_or_create(None).unwrap();
        let sa = json!({"metadata": {"namespace": "ns", "name": "bot", "uid": "u-1"}});
        let tr = issue(&signer, &sa, &json!({"spec": {}})).unwrap();
        assert_eq!(tr["spec"]["expirationSeconds"], 3600);
        let token = tr["status"]["token"].as_str().unwrap();
        let c = check(&signer, token, &[ISSUER]).unwrap();
        assert_eq!(
            (c.namespace.as_str(), c.name.as_str(), c.uid.as_str()),
            ("ns", "bot", "u-1")
        );
        assert_eq!(c.audiences, [ISSUER]);
        assert!(c.id.is_some());
        let mut bad = token.to_owned();
        let last = bad.pop().unwrap();
        bad.push(if last == 'A' { 'B' } else { 'A' });
        assert_eq!(check(&signer, &bad, &[ISSUER]), Err(None));
        let other = Signer::load_or_create(None).unwrap();
        assert_eq!(check(&other, token, &[ISSUER]), Err(None));
        let elsewhere = issue(&signer, &sa, &json!({"spec": {"audiences": ["vault"]}})).unwrap();
        let elsewhere = elsewhere["status"]["token"].as_str().unwrap();
        assert_eq!(
            check(&signer, elsewhere, &[ISSUER]),
            Err(Some(
                r#"token audiences ["vault"] is invalid for the target audiences ["https://kubernetes.default.svc.cluster.local"]"#
                    .into()
            ))
        );
        assert_eq!(
            check(&signer, elsewhere, &["vault", "x"])
                .unwrap()
                .audiences,
            ["vault"]
        );
        assert!(issue(&signer, &sa, &json!({"spec": {"expirationSeconds": 60}})).is_err());
        let bound = json!({"spec": {"boundObjectRef": {"kind": "Secret", "name": "s"}}});
        assert!(
            issue(&signer, &sa, &bound).is_err(),
            "binding is not enforced: refused"
        );
    }

    /// The key file is created once (0600) and read back.
    #[test]
    fn the_key_file_is_kept() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sa.key");
        let a = Signer::load_or_create(Some(&path)).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let b = Signer::load_or_create(Some(&path)).unwrap();
        let sa = json!({"metadata": {"namespace": "n", "name": "s", "uid": "u"}});
        let t = issue(&a, &sa, &json!({})).unwrap();
        assert!(check(&b, t["status"]["token"].as_str().unwrap(), &[ISSUER]).is_ok());
    }
}
