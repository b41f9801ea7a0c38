//! Reading the server address and client credentials from a kubeconfig.
//!
//! Only what the benchmark needs: the current context's cluster (`server`, and
//! `certificate-authority-data` or `certificate-authority`) and user
//! (`client-certificate-data`/`client-key-data` or the file forms, or a bearer `token`).
//! Relative file paths are resolved against the kubeconfig's directory, as kubectl does.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, anyhow, bail};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::Deserialize;

/// What the benchmark needs to reach and authenticate to the server.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// The server URL, e.g. `https://127.0.0.1:6443`.
    pub server: String,
    /// PEM of the certificate authority that signed the serving certificate.
    pub ca_pem: Vec<u8>,
    /// PEM of the client certificate (chain); empty for a user with a token.
    pub cert_pem: Vec<u8>,
    /// PEM of the client certificate's private key; empty for a user with a token.
    pub key_pem: Vec<u8>,
    /// A bearer token (`Authorization: Bearer`), for a user without a certificate.
    pub token: Option<String>,
}

impl Credentials {
    /// The same server, with no credentials at all (TLS without a client certificate).
    pub fn anonymous(&self) -> Credentials {
        Credentials {
            cert_pem: Vec::new(),
            key_pem: Vec::new(),
            token: None,
            ..self.clone()
        }
    }
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("server", &self.server)
            .field("ca_pem", &format_args!("{} bytes", self.ca_pem.len()))
            .field("cert_pem", &format_args!("{} bytes", self.cert_pem.len()))
            .field("key_pem", &"<redacted>")
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct File {
    #[serde(default)]
    clusters: Vec<NamedCluster>,
    #[serde(default)]
    users: Vec<NamedUser>,
    #[serde(default)]
    contexts: Vec<NamedContext>,
    #[serde(default)]
    current_context: Option<String>,
}

#[derive(Debug, Deserialize)]
struct NamedCluster {
    name: String,
    cluster: Cluster,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct Cluster {
    server: String,
    #[serde(default)]
    certificate_authority_data: Option<String>,
    #[serde(default)]
    certificate_authority: Option<PathBuf>,
}

#[derive(Debug, Deserialize)]
struct NamedUser {
    name: String,
    user: User,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct User {
    #[serde(default)]
    client_certificate_data: Option<String>,
    #[serde(default)]
    client_certificate: Option<PathBuf>,
    #[serde(default)]
    client_key_data: Option<String>,
    #[serde(default)]
    client_key: Option<PathBuf>,
    #[serde(default)]
    token: Option<String>,
}

#[derive(Debug, Deserialize)]
struct NamedContext {
    name: String,
    context: Context,
}

#[derive(Debug, Deserialize)]
struct Context {
    cluster: String,
    user: String,
}

/// Reads and resolves the kubeconfig at `path`.
pub fn load(path: &Path) -> anyhow::Result<Credentials> {
    let text = std::fs::read_to_string(path).with_context(|| {
        format!(
            "cannot read kubeconfig {} (start the gateway first, or pass --kubeconfig)",
            path.display()
        )
    })?;
    let base = path.parent().unwrap_or_else(|| Path::new("."));
    parse(&text, base).with_context(|| format!("in kubeconfig {}", path.display()))
}

/// Parses kubeconfig `text`; relative file references are resolved against `base_dir`.
pub fn parse(text: &str, base_dir: &Path) -> anyhow::Result<Credentials> {
    let file: File = serde_saphyr::from_str(text).context("not a valid kubeconfig (YAML)")?;
    let context = match file.current_context.as_deref().filter(|c| !c.is_empty()) {
        Some(name) => {
            &file
                .contexts
                .iter()
                .find(|c| c.name == name)
                .ok_or_else(|| anyhow!("current-context {name:?} is not among the contexts"))?
                .context
        }
        None => match file.contexts.as_slice() {
            [only] => &only.context,
            [] => bail!("no contexts"),
            _ => bail!("no current-context and several contexts"),
        },
    };
    let cluster = &file
        .clusters
        .iter()
        .find(|c| c.name == context.cluster)
        .ok_or_else(|| anyhow!("cluster {:?} not found", context.cluster))?
        .cluster;
    let user = &file
        .users
        .iter()
        .find(|u| u.name == context.user)
        .ok_or_else(|| anyhow!("user {:?} not found", context.user))?
        .user;
    if !cluster.server.starts_with("https://") {
        bail!(
            "cluster server must be an https:// URL, got {:?}",
            cluster.server
        );
    }
    let ca_pem = data_or_file(
        "certificate-authority",
        cluster.certificate_authority_data.as_deref(),
        cluster.certificate_authority.as_deref(),
        base_dir,
    )?;
    let token = user.token.clone().filter(|t| !t.is_empty());
    let has_cert = user.client_certificate_data.is_some() || user.client_certificate.is_some();
    let (cert_pem, key_pem) = if token.is_some() && !has_cert {
        (Vec::new(), Vec::new())
    } else {
        (
            data_or_file(
                "client-certificate",
                user.client_certificate_data.as_deref(),
                user.client_certificate.as_deref(),
                base_dir,
            )?,
            data_or_file(
                "client-key",
                user.client_key_data.as_deref(),
                user.client_key.as_deref(),
                base_dir,
            )?,
        )
    };
    Ok(Credentials {
        server: cluster.server.clone(),
        ca_pem,
        cert_pem,
        key_pem,
        token,
    })
}

/// `<field>-data` (base64) if present, else the file `<field>`.
fn data_or_file(
    field: &str,
    data: Option<&str>,
    file: Option<&Path>,
    base_dir: &Path,
) -> anyhow::Result<Vec<u8>> {
    if let Some(b64) = data.filter(|d| !d.trim().is_empty()) {
        let compact: String = b64.chars().filter(|c| !c.is_ascii_whitespace()).collect();
        return BASE64
            .decode(compact.as_bytes())
            .with_context(|| format!("{field}-data is not valid base64"));
    }
    match file {
        Some(p) => {
            let p = if p.is_absolute() {
                p.to_path_buf()
            } else {
                base_dir.join(p)
            };
            std::fs::read(&p).with_context(|| format!("reading {field} file {}", p.display()))
        }
        None => bail!("neither {field}-data nor {field} is set"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(s: &str) -> String {
        BASE64.encode(s)
    }

    #[test]
    fn parses_the_gateway_kubeconfig_shape() {
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: wasmgate\n  cluster:\n    \
             server: \"https://127.0.0.1:16500\"\n    certificate-authority-data: {}\n\
             users:\n- name: wasmgate-admin\n  user:\n    client-certificate-data: {}\n    \
             client-key-data: {}\ncontexts:\n- name: wasmgate\n  context:\n    cluster: wasmgate\n    \
             user: wasmgate-admin\ncurrent-context: wasmgate\npreferences: {{}}\n",
            b64("CA"),
            b64("CERT"),
            b64("KEY")
        );
        let c = parse(&text, Path::new("/nonexistent")).unwrap();
        assert_eq!(c.server, "https://127.0.0.1:16500");
        assert_eq!(c.ca_pem, b"CA");
        assert_eq!(c.cert_pem, b"CERT");
        assert_eq!(c.key_pem, b"KEY");
        // The key never shows up in debug output.
        assert!(!format!("{c:?}").contains("KEY\""));
    }

    #[test]
    fn follows_current_context_and_resolves_relative_files() {
        let dir = std::env::temp_dir().join(format!("wgbench-kc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("ca.pem"), "FILECA").unwrap();
        let text = format!(
            "clusters:\n- name: a\n  cluster: {{server: 'https://a:1', certificate-authority-data: {}}}\n\
             - name: b\n  cluster: {{server: 'https://b:2', certificate-authority: ca.pem}}\n\
             users:\n- name: u\n  user: {{client-certificate-data: {}, client-key-data: {}}}\n\
             contexts:\n- name: ca\n  context: {{cluster: a, user: u}}\n\
             - name: cb\n  context: {{cluster: b, user: u}}\ncurrent-context: cb\n",
            b64("A"),
            b64("C"),
            b64("K")
        );
        let c = parse(&text, &dir).unwrap();
        assert_eq!(c.server, "https://b:2");
        assert_eq!(c.ca_pem, b"FILECA");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A user with a bearer token and no certificate (what `kubectl config
    /// set-credentials --token` writes).
    #[test]
    fn reads_a_token_user() {
        let text = format!(
            "clusters:\n- name: c\n  cluster: {{server: 'https://a:1', certificate-authority-data: {}}}\n\
             users:\n- name: u\n  user: {{token: s3cret}}\n\
             contexts:\n- name: x\n  context: {{cluster: c, user: u}}\ncurrent-context: x\n",
            b64("A")
        );
        let c = parse(&text, Path::new(".")).unwrap();
        assert_eq!(c.token.as_deref(), Some("s3cret"));
        assert!(c.cert_pem.is_empty() && c.key_pem.is_empty());
        assert!(!format!("{c:?}").contains("s3cret"));
        assert!(c.anonymous().token.is_none());
    }

    #[test]
    fn reports_clear_errors() {
        let e = load(Path::new("/definitely/not/here.kubeconfig")).unwrap_err();
        assert!(format!("{e:#}").contains("cannot read kubeconfig"), "{e:#}");
        let e = parse("clusters: [", Path::new(".")).unwrap_err();
        assert!(format!("{e:#}").contains("not a valid kubeconfig"), "{e:#}");
        let e = parse(
            "contexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: y\n",
            Path::new("."),
        )
        .unwrap_err();
        assert!(format!("{e:#}").contains("current-context"), "{e:#}");
        let e = parse(
            "clusters:\n- name: c\n  cluster: {server: 'http://x'}\nusers:\n- name: u\n  user: {}\n\
             contexts:\n- name: x\n  context: {cluster: c, user: u}\n",
            Path::new("."),
        )
        .unwrap_err();
        assert!(format!("{e:#}").contains("https://"), "{e:#}");
    }
}
