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
pub(crate) fn issue(signer: &Signer, sa: &Value, request: &Value) -> Result<Value, String> {
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
    let meta = |k: &str| crate::object::meta_str(sa, k).unwrap_or("").to_owned();
    let (ns, name, uid) = (meta("namespace"), meta("name"), meta("uid"));
    let iat = now();
    let claims = json!({
        "aud": audiences,
        "exp": iat + seconds,
        "iat": iat,
        "iss": ISSUER,
        "jti": crate::object::new_uid(),
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
        "metadata": {"name": name, "namespace": ns, "creationTimestamp": crate::object::now_rfc3339()},
        "spec": {"audiences": audiences, "expirationSeconds": seconds, "boundObjectRef": spec.get("boundObjectRef").cloned().unwrap_or(Value::Null)},
        "status": {"token": token, "expirationTimestamp": expires},
    }))
}

/// What a token claims, if it is ours, current and meant for this server: the account's
/// (namespace, name, uid). The caller checks the account still has that uid.
pub(crate) fn claims_of(signer: &Signer, token: &str) -> Option<(String, String, String)> {
    let c = signer.verify(token)?;
    let t = now();
    let int = |k: &str| c.get(k).and_then(Value::as_i64);
    if int("exp").is_none_or(|exp| exp <= t) || int("nbf").is_some_and(|nbf| nbf > t + 60) {
        return None;
    }
    let for_us = match &c["aud"] {
        Value::String(a) => a == ISSUER,
        Value::Array(a) => a.iter().any(|x| x == ISSUER),
        _ => false,
    };
    if !for_us || c["iss"] != ISSUER {
        return None;
    }
    let k = &c["kubernetes.io"];
    let s = |v: &Value| v.as_str().map(str::to_owned);
    Some((
        s(&k["namespace"])?,
        s(&k["serviceaccount"]["name"])?,
        s(&k["serviceaccount"]["uid"])?,
    ))
}

/// The user a service account authenticates as.
pub(crate) fn user_of(namespace: &str, name: &str) -> User {
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
        assert_eq!(
            claims_of(&signer, token),
            Some(("ns".into(), "bot".into(), "u-1".into()))
        );
        let mut bad = token.to_owned();
        let last = bad.pop().unwrap();
        bad.push(if last == 'A' { 'B' } else { 'A' });
        assert_eq!(claims_of(&signer, &bad), None);
        let other = Signer::load_or_create(None).unwrap();
        assert_eq!(claims_of(&other, token), None);
        let elsewhere = issue(&signer, &sa, &json!({"spec": {"audiences": ["vault"]}})).unwrap();
        assert_eq!(
            claims_of(&signer, elsewhere["status"]["token"].as_str().unwrap()),
            None
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
        assert!(claims_of(&b, t["status"]["token"].as_str().unwrap()).is_some());
    }
}
