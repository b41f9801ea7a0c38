//! The gateway's own PKI: a private CA, the HTTPS serving certificate, the admin client
//! certificate and the admin kubeconfig.
//!
//! On first start [`load_or_create`] generates everything under `DATA_DIR/pki/`:
//!
//! - `ca.crt` / `ca.key`: self-signed CA, 10 years. Never replaced by this module. The gateway
//!   makes it the cluster's CA first ([`crate::identity`]): every replica of a cluster has the
//!   same, from the store ([`install_ca`] moves a different one aside).
//! - `server.crt` / `server.key`: serving certificate (`serverAuth`). Re-issued when a requested
//!   SAN is missing, when it expires within 30 days or when it no longer chains to the CA.
//! - `admin.crt` / `admin.key`: client certificate `O=system:masters, CN=wasmgate-admin`
//!   (`clientAuth`). Re-issued only when it expires within 30 days or no longer chains to the CA.
//!
//! Leaf certificates are ECDSA P-256 and valid for one year (never past the CA's own expiry).
//! Private keys are PKCS#8 PEM files with mode 0600; every file is written atomically
//! (temporary file, fsync, rename).
//!
//! Leaf subjects are encoded here rather than by rcgen: rcgen keeps one value per attribute type,
//! while a Kubernetes client certificate carries one `O` attribute per group. The issuer name is
//! copied byte for byte from the CA certificate, so chain building never depends on how a name
//! is re-encoded.

use std::fmt;
use std::fs;
use std::io::{self, Write as _};
use std::net::IpAddr;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, anyhow, bail, ensure};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
    KeyIdMethod, KeyPair, KeyUsagePurpose, PKCS_ECDSA_P256_SHA256, PublicKeyData as _, SanType,
    SigningKey as _,
};
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::ServerCertVerifier as _;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use wasmgate_auth::authn_x509::user_from_client_cert;
use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::{GeneralName, ParsedExtension};
use x509_parser::prelude::FromDer as _;
use x509_parser::time::ASN1Time;

mod der;

/// User name (certificate `CN`) of the admin client certificate.
pub const ADMIN_USER: &str = "wasmgate-admin";
/// Group (certificate `O`) of the admin client certificate; bound to `cluster-admin` by RBAC.
const ADMIN_GROUP: &str = "system:masters";
/// Subject alternative names the serving certificate always carries.
const DEFAULT_SANS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];
/// Name of the cluster and of the context in the generated kubeconfig.
const KUBECONFIG_CLUSTER: &str = "wasmgate";

const CA_CERT_FILE: &str = "ca.crt";
const CA_KEY_FILE: &str = "ca.key";
const SERVER_STEM: &str = "server";
const ADMIN_STEM: &str = "admin";
/// Subject common name of the serving certificate.
const SERVER_CN: &str = "wasmgate";

const DAY: Duration = Duration::from_secs(24 * 60 * 60);
/// Lifetime of the CA certificate.
const CA_VALIDITY: Duration = Duration::from_secs(10 * 365 * 24 * 60 * 60);
/// Lifetime of leaf (serving and client) certificates.
const LEAF_VALIDITY: Duration = Duration::from_secs(365 * 24 * 60 * 60);
/// Leaf certificates are re-issued when they expire within this window.
const RENEW_BEFORE: Duration = Duration::from_secs(30 * 24 * 60 * 60);
/// `notBefore` is back-dated by this much to tolerate clock skew (as kube-apiserver does).
const BACKDATE: Duration = Duration::from_secs(60 * 60);

const KEY_MODE: u32 = 0o600;
const CERT_MODE: u32 = 0o644;
const DIR_MODE: u32 = 0o700;

/// The gateway's certificates and keys, all PEM encoded.
#[derive(Clone, PartialEq, Eq)]
pub struct Pki {
    /// The CA certificate; trust anchor for the serving certificate and for client certificates.
    pub ca_cert_pem: String,
    /// The CA private key (PKCS#8); needed to issue further client certificates.
    pub ca_key_pem: String,
    /// The HTTPS serving certificate (leaf only; clients get the CA from the kubeconfig).
    pub server_cert_pem: String,
    /// The serving certificate's private key (PKCS#8).
    pub server_key_pem: String,
    /// The admin client certificate (`CN=wasmgate-admin`, `O=system:masters`).
    pub admin_cert_pem: String,
    /// The admin client certificate's private key (PKCS#8).
    pub admin_key_pem: String,
}

impl fmt::Debug for Pki {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const REDACTED: &str = "<redacted>";
        f.debug_struct("Pki")
            .field("ca_cert_pem", &self.ca_cert_pem)
            .field("ca_key_pem", &REDACTED)
            .field("server_cert_pem", &self.server_cert_pem)
            .field("server_key_pem", &REDACTED)
            .field("admin_cert_pem", &self.admin_cert_pem)
            .field("admin_key_pem", &REDACTED)
            .finish()
    }
}

/// Loads DIR/pki/{ca.crt,ca.key,server.crt,server.key,admin.crt,admin.key}, creating what is
/// missing. The CA and admin cert are kept across restarts; the serving cert is re-issued when the
/// requested SANs are not all in it (or it expires within 30 days). Keys are written with mode
/// 0600. Certificates use ECDSA P-256, CA valid 10 years, leaf certs 1 year, sensible key usages
/// (serverAuth / clientAuth).
///
/// `pki_dir` is the `pki` directory itself (created with mode 0700 if missing). `extra_sans` are
/// added to the SANs always present (`localhost`, `127.0.0.1`, `::1`); each is an IP address
/// (`10.0.0.1`, `::1` or `[::1]`) or a DNS name (`api.example.com`, `*.example.com`), compared
/// case-insensitively.
///
/// A leaf certificate (serving or admin) that is unreadable, does not match its key, does not
/// chain to the CA or expires within 30 days is re-issued. The CA is never replaced: a `ca.crt`
/// without a usable `ca.key`, or an expired CA, is an error (remove both CA files to start over,
/// which invalidates every client certificate issued so far). A `ca.key` without `ca.crt` is
/// the trace of an interrupted first start and is replaced.
pub fn load_or_create(pki_dir: &Path, extra_sans: &[String]) -> anyhow::Result<Pki> {
    let sans = requested_sans(extra_sans)?;
    fs::DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(pki_dir)
        .with_context(|| format!("creating {}", pki_dir.display()))?;

    let (ca_cert_pem, ca_key_pem) = load_or_create_ca(pki_dir)?;
    let ca = Ca::from_pem(&ca_cert_pem, &ca_key_pem).context("loading the wasmgate CA")?;
    ensure!(
        ca.not_after.timestamp() > unix_now(),
        "the wasmgate CA in {} expired on {}; remove {CA_CERT_FILE} and {CA_KEY_FILE} to generate \
         a new one (this invalidates all issued client certificates)",
        pki_dir.display(),
        ca.not_after,
    );

    let (server_cert_pem, server_key_pem) =
        load_or_issue_leaf(pki_dir, SERVER_STEM, &ca, &LeafKind::Server { sans: &sans })?;
    let (admin_cert_pem, admin_key_pem) = load_or_issue_leaf(
        pki_dir,
        ADMIN_STEM,
        &ca,
        &LeafKind::Client {
            user: ADMIN_USER,
            groups: &[ADMIN_GROUP],
        },
    )?;

    Ok(Pki {
        ca_cert_pem,
        ca_key_pem,
        server_cert_pem,
        server_key_pem,
        admin_cert_pem,
        admin_key_pem,
    })
}

/// The aggregation layer's front proxy: its own CA (what extension API servers trust for
/// `X-Remote-User` headers, kube's `requestheader-client-ca-file`) and the client
/// certificate the gateway presents to them (`CN=front-proxy-client`), all PEM.
#[derive(Clone)]
pub struct FrontProxy {
    pub ca_cert_pem: String,
    pub client_cert_pem: String,
    pub client_key_pem: String,
}

impl fmt::Debug for FrontProxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FrontProxy")
            .field("ca_cert_pem", &self.ca_cert_pem)
            .field("client_cert_pem", &self.client_cert_pem)
            .field("client_key_pem", &"<redacted>")
            .finish()
    }
}

/// The user (`CN`) of the front proxy's client certificate (kube's
/// `requestheader-allowed-names`).
pub const FRONT_PROXY_USER: &str = "front-proxy-client";

/// Loads `pki_dir/front-proxy/{ca,client}.{crt,key}`, creating what is missing: a CA of its
/// own, kept across restarts as the cluster CA is, and a client certificate it issued.
pub fn front_proxy(pki_dir: &Path) -> anyhow::Result<FrontProxy> {
    let dir = pki_dir.join("front-proxy");
    fs::DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(&dir)
        .with_context(|| format!("creating {}", dir.display()))?;
    let (ca_cert_pem, ca_key_pem) = load_or_create_ca(&dir)?;
    let ca = Ca::from_pem(&ca_cert_pem, &ca_key_pem).context("loading the front-proxy CA")?;
    let (client_cert_pem, client_key_pem) = load_or_issue_leaf(
        &dir,
        "client",
        &ca,
        &LeafKind::Client {
            user: FRONT_PROXY_USER,
            groups: &[],
        },
    )?;
    Ok(FrontProxy {
        ca_cert_pem,
        client_cert_pem,
        client_key_pem,
    })
}

/// Issues an extra client certificate signed by the CA (for tests; nothing else needs one yet).
///
/// The subject is `O=<group>` for each group (in order) followed by `CN=<user>`, which the
/// x509 authenticator maps back to the user and groups. The certificate has the `clientAuth`
/// extended key usage and is valid for one year (at most until the CA expires). Returns the
/// certificate and its PKCS#8 private key, both PEM. Nothing is written to disk.
#[cfg(test)]
fn issue_client_cert(pki: &Pki, user: &str, groups: &[&str]) -> anyhow::Result<(String, String)> {
    ensure!(
        !user.is_empty(),
        "a client certificate needs a non-empty user name"
    );
    ensure!(
        groups.iter().all(|g| !g.is_empty()),
        "group names must not be empty"
    );
    let ca = Ca::from_pem(&pki.ca_cert_pem, &pki.ca_key_pem).context("loading the wasmgate CA")?;
    let kind = LeafKind::Client { user, groups };
    let (cert, key) = issue_leaf(&ca, &kind, LEAF_VALIDITY)?;
    check_fresh_leaf(&ca, &kind, (&cert, &key))?;
    Ok((cert, key))
}

/// Writes a kubeconfig (YAML; cluster "wasmgate" with certificate-authority-data, user
/// "wasmgate-admin" with client-certificate-data/client-key-data, context "wasmgate" as
/// current-context) for `server_url` (e.g. https://127.0.0.1:6443), atomically (write temp +
/// rename), mode 0600.
///
/// `server_url` must be an `https://` URL whose host is one of the serving certificate's SANs
/// (a wildcard bind address such as `0.0.0.0` is not: use `127.0.0.1` or `[::1]`). The parent
/// directory is created if missing.
pub fn write_kubeconfig(path: &Path, server_url: &str, pki: &Pki) -> anyhow::Result<()> {
    ensure!(
        server_url.starts_with("https://") && server_url.len() > "https://".len(),
        "kubeconfig server URL must be https://HOST[:PORT], got {server_url:?}"
    );
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    }
    let yaml = kubeconfig_yaml(server_url, pki)?;
    write_atomic(path, yaml.as_bytes(), KEY_MODE)
        .with_context(|| format!("writing kubeconfig {}", path.display()))
}

/// A rustls ServerConfig: our serving cert, ALPN ["h2","http/1.1"], client certificates optional
/// but verified against our CA when presented.
///
/// A client that presents no certificate completes the handshake (the HTTP layer then decides,
/// e.g. bearer token or 401); one that presents a certificate not issued by our CA (or expired,
/// or without `clientAuth`) fails the handshake. The verified certificate is available from
/// `ServerConnection::peer_certificates()`.
///
/// Uses the process-wide rustls `CryptoProvider` if one is installed, aws-lc-rs otherwise.
pub fn server_tls_config(pki: &Pki) -> anyhow::Result<ServerConfig> {
    let provider = crypto_provider();
    let roots = root_store(&pki.ca_cert_pem)?;
    let client_verifier = WebPkiClientVerifier::builder_with_provider(roots, provider.clone())
        .allow_unauthenticated()
        .build()
        .context("building the client certificate verifier")?;
    let chain = parse_cert_chain(&pki.server_cert_pem).context("serving certificate")?;
    let key = PrivateKeyDer::from_pem_slice(pki.server_key_pem.as_bytes())
        .map_err(|e| anyhow!("parsing the serving key: {e}"))?;
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("selecting TLS versions")?
        .with_client_cert_verifier(client_verifier)
        .with_single_cert(chain, key)
        .context("loading the serving certificate and key")?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

// ---------------------------------------------------------------------------------------------
// CA

/// The CA as needed for issuing: its certificate, key and the parts copied into leaves.
struct Ca {
    cert_der: CertificateDer<'static>,
    key: KeyPair,
    /// The DER-encoded subject name, copied verbatim as the issuer of every leaf.
    subject_der: Vec<u8>,
    /// The subject key identifier, used as the leaves' authority key identifier.
    key_id: Option<Vec<u8>>,
    not_after: ASN1Time,
}

impl Ca {
    fn from_pem(cert_pem: &str, key_pem: &str) -> anyhow::Result<Self> {
        let cert_der = first_cert(cert_pem).context("CA certificate")?;
        let key = KeyPair::from_pem(key_pem).map_err(|e| anyhow!("parsing the CA key: {e}"))?;
        let x509 = parse_x509(&cert_der).context("CA certificate")?;
        ensure!(
            x509.is_ca(),
            "the CA certificate is not a CA (basicConstraints)"
        );
        ensure!(
            x509.public_key().raw == key.subject_public_key_info().as_slice(),
            "the CA key does not belong to the CA certificate"
        );
        let key_id = x509
            .extensions()
            .iter()
            .find_map(|ext| match ext.parsed_extension() {
                ParsedExtension::SubjectKeyIdentifier(id) => Some(id.0.to_vec()),
                _ => None,
            });
        let subject_der = x509.subject().as_raw().to_vec();
        let not_after = x509.validity().not_after;
        Ok(Self {
            cert_der,
            key,
            subject_der,
            key_id,
            not_after,
        })
    }
}

/// Returns the CA (certificate PEM, key PEM), generating and writing a new one when `ca.crt` is
/// missing. `ca.crt` is written last, so its presence marks a completely written CA.
fn load_or_create_ca(dir: &Path) -> anyhow::Result<(String, String)> {
    if let Some(ca) = read_ca_files(dir)? {
        restrict_key_mode(&dir.join(CA_KEY_FILE))?;
        return Ok(ca);
    }
    let (cert, key) = create_ca()?;
    let (cert_path, key_path) = (dir.join(CA_CERT_FILE), dir.join(CA_KEY_FILE));
    write_atomic(&key_path, key.as_bytes(), KEY_MODE)
        .with_context(|| format!("writing {}", key_path.display()))?;
    write_atomic(&cert_path, cert.as_bytes(), CERT_MODE)
        .with_context(|| format!("writing {}", cert_path.display()))?;
    Ok((cert, key))
}

/// A CA (certificate PEM, PKCS#8 key PEM) as kept in `dir` (`ca.crt`, `ca.key`), checked
/// (the key belongs to the certificate, which is a CA), or `None` when `dir` holds none.
/// What an existing data directory brings to a cluster whose store has no identity yet.
pub fn read_ca(dir: &Path) -> anyhow::Result<Option<(String, String)>> {
    let Some((cert, key)) = read_ca_files(dir)? else {
        return Ok(None);
    };
    Ca::from_pem(&cert, &key)
        .with_context(|| format!("loading {}", dir.join(CA_CERT_FILE).display()))?;
    Ok(Some((cert, key)))
}

/// `dir/ca.crt` and `dir/ca.key` as they are, or `None` without `ca.crt`; a certificate
/// without its key is an error that says what to do.
fn read_ca_files(dir: &Path) -> anyhow::Result<Option<(String, String)>> {
    let cert_path = dir.join(CA_CERT_FILE);
    let key_path = dir.join(CA_KEY_FILE);
    match (read_optional(&cert_path)?, read_optional(&key_path)?) {
        (Some(cert), Some(key)) => Ok(Some((cert, key))),
        (Some(_), None) => bail!(
            "{} exists but {} is missing; restore the CA key, or remove {} to generate a new CA \
             (this invalidates all issued client certificates)",
            cert_path.display(),
            key_path.display(),
            cert_path.display(),
        ),
        (None, _) => Ok(None),
    }
}

/// A new CA (certificate PEM, PKCS#8 key PEM), written nowhere.
pub fn new_ca() -> anyhow::Result<(String, String)> {
    create_ca()
}

/// Makes `dir/ca.crt` and `dir/ca.key` the given CA (the cluster's, from the store), so that
/// [`load_or_create`] and [`front_proxy`] issue this data directory's leaves with it. A
/// different CA found there is not lost: it is renamed to `ca.crt.replaced-<unix time>` (and
/// its key likewise), with a warning, and the leaves it signed are re-issued.
pub fn install_ca(dir: &Path, cert_pem: &str, key_pem: &str) -> anyhow::Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(dir)
        .with_context(|| format!("creating {}", dir.display()))?;
    let cert_path = dir.join(CA_CERT_FILE);
    let key_path = dir.join(CA_KEY_FILE);
    let old_cert = read_optional(&cert_path)?;
    let old_key = read_optional(&key_path)?;
    if old_cert.as_deref() == Some(cert_pem) && old_key.as_deref() == Some(key_pem) {
        return Ok(());
    }
    if old_cert.is_some() {
        let suffix = format!("replaced-{}", unix_now());
        for path in [&cert_path, &key_path] {
            if path.exists() {
                let aside = path.with_extension(format!(
                    "{}.{suffix}",
                    path.extension()
                        .and_then(|e| e.to_str())
                        .unwrap_or_default()
                ));
                fs::rename(path, &aside)
                    .with_context(|| format!("moving {} to {}", path.display(), aside.display()))?;
            }
        }
        tracing::warn!(
            dir = %dir.display(),
            "this data directory's CA is not the cluster's (the one in the store): the old one is \
             kept as ca.crt.{suffix}, and certificates it issued are no longer trusted"
        );
    }
    // Key first: `ca.crt` marks a complete CA.
    write_atomic(&key_path, key_pem.as_bytes(), KEY_MODE)
        .with_context(|| format!("writing {}", key_path.display()))?;
    write_atomic(&cert_path, cert_pem.as_bytes(), CERT_MODE)
        .with_context(|| format!("writing {}", cert_path.display()))
}

/// Writes a private file (mode 0600) atomically: what [`crate::identity`] keeps in the data
/// directory besides the CAs.
pub(crate) fn write_private(path: &Path, contents: &[u8]) -> anyhow::Result<()> {
    write_atomic(path, contents, KEY_MODE)
}

/// Generates a self-signed CA: `CN=wasmgate-ca@<unix time>-<key id>`, path length 0.
fn create_ca() -> anyhow::Result<(String, String)> {
    let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?;
    let mut params = CertificateParams::default();
    // Unique per CA (like kube-apiserver's `<host>-ca@<time>`), so that clients trusting
    // several wasmgate CAs never confuse them.
    let key_id = params.key_identifier(&key);
    let key_id_hex: String = key_id.iter().take(4).map(|b| format!("{b:02x}")).collect();
    params.distinguished_name = rcgen::DistinguishedName::new();
    params.distinguished_name.push(
        DnType::CommonName,
        format!("wasmgate-ca@{}-{key_id_hex}", unix_now()),
    );
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let now = ASN1Time::now().to_datetime();
    params.not_before = now - BACKDATE;
    params.not_after = now + CA_VALIDITY;
    let cert = params.self_signed(&key)?;
    Ok((cert.pem(), key.serialize_pem()))
}

// ---------------------------------------------------------------------------------------------
// Leaf certificates

/// What a leaf certificate is for.
enum LeafKind<'a> {
    /// The HTTPS serving certificate with these SANs.
    Server { sans: &'a [San] },
    /// A client certificate for this user and these groups.
    Client {
        user: &'a str,
        groups: &'a [&'a str],
    },
}

/// Loads `<stem>.crt`/`<stem>.key`, or issues and writes a new pair when they are missing or
/// no longer fit `kind` (see [`leaf_problem`]).
fn load_or_issue_leaf(
    dir: &Path,
    stem: &str,
    ca: &Ca,
    kind: &LeafKind<'_>,
) -> anyhow::Result<(String, String)> {
    let cert_path = dir.join(format!("{stem}.crt"));
    let key_path = dir.join(format!("{stem}.key"));
    if let (Some(cert), Some(key)) = (read_optional(&cert_path)?, read_optional(&key_path)?)
        && leaf_problem(ca, kind, &cert, &key).is_none()
    {
        restrict_key_mode(&key_path)?;
        return Ok((cert, key));
    }
    let (cert, key) = issue_leaf(ca, kind, LEAF_VALIDITY)?;
    check_fresh_leaf(ca, kind, (&cert, &key))?;
    // Key first: a crash in between leaves a mismatched pair, which the next start re-issues.
    write_atomic(&key_path, key.as_bytes(), KEY_MODE)
        .with_context(|| format!("writing {}", key_path.display()))?;
    write_atomic(&cert_path, cert.as_bytes(), CERT_MODE)
        .with_context(|| format!("writing {}", cert_path.display()))?;
    Ok((cert, key))
}

/// Issues a leaf certificate (ECDSA P-256) for `kind`, valid for `validity` but not past the CA.
fn issue_leaf(
    ca: &Ca,
    kind: &LeafKind<'_>,
    validity: Duration,
) -> anyhow::Result<(String, String)> {
    let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?;
    let mut params = CertificateParams::default();
    let subject = match kind {
        LeafKind::Server { sans } => {
            params.subject_alt_names = sans
                .iter()
                .map(San::to_rcgen)
                .collect::<anyhow::Result<_>>()?;
            params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
            der::name(SERVER_CN, &[])
        }
        LeafKind::Client { user, groups } => {
            params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
            der::name(user, groups)
        }
    };
    // rcgen encodes a placeholder subject (non-empty, so that it does not mark the SAN extension
    // critical); `der::replace_names` swaps in the real subject and the CA's exact issuer name.
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(DnType::CommonName, "placeholder");
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.use_authority_key_identifier_extension = ca.key_id.is_some();
    let now = ASN1Time::now().to_datetime();
    params.not_before = now - BACKDATE;
    params.not_after = std::cmp::min(now + validity, ca.not_after.to_datetime());

    let mut issuer_params = CertificateParams::default();
    if let Some(id) = &ca.key_id {
        issuer_params.key_identifier_method = KeyIdMethod::PreSpecified(id.clone());
    }
    let issuer = Issuer::new(issuer_params, &ca.key);
    let draft = params.signed_by(&key, &issuer)?;
    let der = der::replace_names(draft.der(), &ca.subject_der, &subject, |tbs| {
        ca.key.sign(tbs).map_err(|e| anyhow!("signing: {e}"))
    })?;
    Ok((pem_encode("CERTIFICATE", &der), key.serialize_pem()))
}

/// Fails if a certificate that was just issued does not pass [`leaf_problem`] (a bug, or a CA
/// this module cannot issue for).
fn check_fresh_leaf(ca: &Ca, kind: &LeafKind<'_>, (cert, key): (&str, &str)) -> anyhow::Result<()> {
    match leaf_problem(ca, kind, cert, key) {
        None => Ok(()),
        Some(problem) => bail!("a freshly issued certificate is unusable: {problem}"),
    }
}

/// Why a stored leaf certificate must be re-issued, or `None` if it is fine: it must parse,
/// match its key, chain to the CA (signature, validity, extended key usage), stay valid for
/// [`RENEW_BEFORE`], and carry the requested SANs (server) or subject (client).
fn leaf_problem(ca: &Ca, kind: &LeafKind<'_>, cert_pem: &str, key_pem: &str) -> Option<String> {
    let cert_der = match first_cert(cert_pem) {
        Ok(der) => der,
        Err(e) => return Some(format!("{e:#}")),
    };
    let x509 = match parse_x509(&cert_der) {
        Ok(x509) => x509,
        Err(e) => return Some(format!("{e:#}")),
    };
    match KeyPair::from_pem(key_pem) {
        Ok(key) if x509.public_key().raw == key.subject_public_key_info().as_slice() => {}
        Ok(_) => return Some("certificate and key do not match".to_owned()),
        Err(e) => return Some(format!("unreadable key: {e}")),
    }
    if let Err(e) = verify_chain(ca, kind, &cert_der) {
        return Some(format!("does not verify against the CA: {e:#}"));
    }
    let renew_at = x509.validity().not_after.timestamp() - secs(RENEW_BEFORE);
    if unix_now() >= renew_at {
        return Some(format!(
            "expires on {} (within {} days)",
            x509.validity().not_after,
            RENEW_BEFORE.as_secs() / DAY.as_secs()
        ));
    }
    match kind {
        LeafKind::Server { sans } => {
            let present = cert_sans(&x509);
            let missing: Vec<String> = sans
                .iter()
                .filter(|san| !present.contains(san))
                .map(ToString::to_string)
                .collect();
            if !missing.is_empty() {
                return Some(format!("missing SANs: {}", missing.join(", ")));
            }
        }
        LeafKind::Client { user, groups } => {
            // The identity exactly as the API server's x509 authenticator will read it.
            match user_from_client_cert(cert_der.as_ref()) {
                Some((cn, orgs))
                    if cn == *user
                        && orgs.iter().map(String::as_str).eq(groups.iter().copied()) => {}
                Some((cn, orgs)) => {
                    return Some(format!(
                        "subject is CN={cn:?} O={orgs:?}, want CN={user:?} O={groups:?}"
                    ));
                }
                None => {
                    return Some(format!(
                        "subject names no user (CN), want CN={user:?} O={groups:?}"
                    ));
                }
            }
        }
    }
    None
}

/// Verifies `cert_der` against the CA with rustls' WebPKI verifiers, exactly as a TLS peer
/// would: a serving certificate as `localhost`, a client certificate with `clientAuth`.
fn verify_chain(ca: &Ca, kind: &LeafKind<'_>, cert_der: &CertificateDer<'_>) -> anyhow::Result<()> {
    let provider = crypto_provider();
    let mut roots = RootCertStore::empty();
    roots.add(ca.cert_der.clone())?;
    let roots = Arc::new(roots);
    let now = UnixTime::now();
    match kind {
        LeafKind::Server { .. } => {
            let verifier = WebPkiServerVerifier::builder_with_provider(roots, provider).build()?;
            let name = ServerName::try_from(DEFAULT_SANS[0])?;
            verifier.verify_server_cert(cert_der, &[], &name, &[], now)?;
        }
        LeafKind::Client { .. } => {
            let verifier = WebPkiClientVerifier::builder_with_provider(roots, provider).build()?;
            verifier.verify_client_cert(cert_der, &[], now)?;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Subject alternative names

/// A serving-certificate SAN, normalized for comparison.
#[derive(Clone, Debug, PartialEq, Eq)]
enum San {
    /// A DNS name, lower-cased.
    Dns(String),
    /// An IP address.
    Ip(IpAddr),
}

impl San {
    fn parse(raw: &str) -> anyhow::Result<Self> {
        let s = raw.trim();
        ensure!(!s.is_empty(), "empty subject alternative name");
        let unbracketed = s
            .strip_prefix('[')
            .and_then(|rest| rest.strip_suffix(']'))
            .unwrap_or(s);
        if let Ok(ip) = unbracketed.parse::<IpAddr>() {
            return Ok(Self::Ip(ip));
        }
        ensure!(
            s.is_ascii() && !s.contains(|c: char| c.is_ascii_whitespace() || c.is_ascii_control()),
            "invalid DNS name in subject alternative names: {raw:?}"
        );
        Ok(Self::Dns(s.to_ascii_lowercase()))
    }

    fn to_rcgen(&self) -> anyhow::Result<SanType> {
        Ok(match self {
            Self::Dns(name) => SanType::DnsName(name.as_str().try_into()?),
            Self::Ip(ip) => SanType::IpAddress(*ip),
        })
    }
}

impl fmt::Display for San {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Dns(name) => f.write_str(name),
            Self::Ip(ip) => write!(f, "{ip}"),
        }
    }
}

/// [`DEFAULT_SANS`] followed by `extra`, parsed and without duplicates.
fn requested_sans(extra: &[String]) -> anyhow::Result<Vec<San>> {
    let mut sans: Vec<San> = Vec::new();
    for raw in DEFAULT_SANS
        .iter()
        .copied()
        .chain(extra.iter().map(String::as_str))
    {
        let san = San::parse(raw)?;
        if !sans.contains(&san) {
            sans.push(san);
        }
    }
    Ok(sans)
}

/// The DNS and IP SANs of a certificate (empty if it has no or a malformed SAN extension, in
/// which case the certificate gets re-issued).
fn cert_sans(x509: &X509Certificate<'_>) -> Vec<San> {
    let Ok(Some(ext)) = x509.subject_alternative_name() else {
        return Vec::new();
    };
    ext.value
        .general_names
        .iter()
        .filter_map(|name| match name {
            GeneralName::DNSName(dns) => Some(San::Dns(dns.to_ascii_lowercase())),
            GeneralName::IPAddress(bytes) => match bytes.len() {
                4 => <[u8; 4]>::try_from(*bytes)
                    .ok()
                    .map(|b| San::Ip(IpAddr::from(b))),
                16 => <[u8; 16]>::try_from(*bytes)
                    .ok()
                    .map(|b| San::Ip(IpAddr::from(b))),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Kubeconfig

/// The admin kubeconfig document (YAML).
fn kubeconfig_yaml(server_url: &str, pki: &Pki) -> anyhow::Result<String> {
    let doc = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{
            "name": KUBECONFIG_CLUSTER,
            "cluster": {
                "server": server_url,
                "certificate-authority-data": BASE64.encode(&pki.ca_cert_pem),
            },
        }],
        "users": [{
            "name": ADMIN_USER,
            "user": {
                "client-certificate-data": BASE64.encode(&pki.admin_cert_pem),
                "client-key-data": BASE64.encode(&pki.admin_key_pem),
            },
        }],
        "contexts": [{
            "name": KUBECONFIG_CLUSTER,
            "context": {
                "cluster": KUBECONFIG_CLUSTER,
                "user": ADMIN_USER,
            },
        }],
        "current-context": KUBECONFIG_CLUSTER,
        "preferences": {},
    });
    // Plain scalars, as kubectl writes kubeconfigs: no folded blocks for the long base64 data.
    let mut options = serde_saphyr::SerializerOptions::default();
    options.prefer_block_scalars = false;
    serde_saphyr::to_string_with_options(&doc, options).context("serializing the kubeconfig")
}

// ---------------------------------------------------------------------------------------------
// Helpers

/// The process-wide rustls provider if one is installed, aws-lc-rs otherwise.
fn crypto_provider() -> Arc<CryptoProvider> {
    CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
}

fn root_store(ca_cert_pem: &str) -> anyhow::Result<Arc<RootCertStore>> {
    let mut roots = RootCertStore::empty();
    for cert in parse_cert_chain(ca_cert_pem).context("CA certificate")? {
        roots.add(cert).context("adding the CA certificate")?;
    }
    Ok(Arc::new(roots))
}

/// All certificates in a PEM document (at least one).
fn parse_cert_chain(pem: &str) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| anyhow!("parsing PEM: {e}"))?;
    ensure!(!certs.is_empty(), "no CERTIFICATE block in PEM");
    Ok(certs)
}

/// The first certificate in a PEM document.
fn first_cert(pem: &str) -> anyhow::Result<CertificateDer<'static>> {
    parse_cert_chain(pem)?
        .into_iter()
        .next()
        .ok_or_else(|| anyhow!("no CERTIFICATE block in PEM"))
}

fn parse_x509<'a>(der: &'a CertificateDer<'_>) -> anyhow::Result<X509Certificate<'a>> {
    let (rest, x509) =
        X509Certificate::from_der(der.as_ref()).map_err(|e| anyhow!("parsing X.509: {e}"))?;
    ensure!(rest.is_empty(), "trailing data after the X.509 certificate");
    Ok(x509)
}

fn pem_encode(label: &str, der: &[u8]) -> String {
    let b64 = BASE64.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(line));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

fn unix_now() -> i64 {
    ASN1Time::now().timestamp()
}

fn secs(d: Duration) -> i64 {
    i64::try_from(d.as_secs()).unwrap_or(i64::MAX)
}

/// Reads a UTF-8 file, `None` if it does not exist.
fn read_optional(path: &Path) -> anyhow::Result<Option<String>> {
    match fs::read_to_string(path) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

/// Tightens an existing key file to mode 0600 if group or others can access it.
fn restrict_key_mode(path: &Path) -> anyhow::Result<()> {
    let mode = fs::metadata(path)
        .with_context(|| format!("reading metadata of {}", path.display()))?
        .permissions()
        .mode();
    if mode & 0o077 != 0 {
        fs::set_permissions(path, fs::Permissions::from_mode(KEY_MODE))
            .with_context(|| format!("restricting permissions of {}", path.display()))?;
    }
    Ok(())
}

/// Writes `contents` to `path` atomically: a temporary file in the same directory (created with
/// `mode`), fsync, rename over `path`, fsync of the directory.
fn write_atomic(path: &Path, contents: &[u8], mode: u32) -> anyhow::Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let file_name = path
        .file_name()
        .ok_or_else(|| anyhow!("{} has no file name", path.display()))?;
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        file_name.to_string_lossy(),
        std::process::id()
    ));
    match fs::remove_file(&tmp) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("removing stale {}", tmp.display())),
    }
    let result = (|| -> io::Result<()> {
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)?;
        // The umask may have cleared bits of `mode`; set it exactly.
        file.set_permissions(fs::Permissions::from_mode(mode))?;
        file.write_all(contents)?;
        file.sync_all()?;
        drop(file);
        fs::rename(&tmp, path)?;
        if let Ok(d) = fs::File::open(dir) {
            // Best effort: persist the rename itself.
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result.with_context(|| format!("writing {} via {}", path.display(), tmp.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    use tokio_rustls::{TlsAcceptor, TlsConnector};

    fn mode(path: &Path) -> u32 {
        fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    fn read(dir: &Path, file: &str) -> String {
        fs::read_to_string(dir.join(file)).unwrap()
    }

    fn sans_of(cert_pem: &str) -> Vec<String> {
        let der = first_cert(cert_pem).unwrap();
        let x509 = parse_x509(&der).unwrap();
        cert_sans(&x509).iter().map(ToString::to_string).collect()
    }

    fn identity(cert_pem: &str) -> Option<(String, Vec<String>)> {
        user_from_client_cert(first_cert(cert_pem).unwrap().as_ref())
    }

    #[test]
    fn create_then_reload_keeps_everything() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("pki");
        let first = load_or_create(&dir, &[]).unwrap();

        assert_eq!(mode(&dir), 0o700);
        for key in ["ca.key", "server.key", "admin.key"] {
            assert_eq!(mode(&dir.join(key)), 0o600, "{key}");
        }
        for cert in ["ca.crt", "server.crt", "admin.crt"] {
            assert_eq!(mode(&dir.join(cert)), 0o644, "{cert}");
        }
        assert_eq!(first.ca_cert_pem, read(&dir, "ca.crt"));
        assert_eq!(first.ca_key_pem, read(&dir, "ca.key"));
        assert_eq!(first.server_cert_pem, read(&dir, "server.crt"));
        assert_eq!(first.admin_key_pem, read(&dir, "admin.key"));
        let leftovers: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with('.'))
            .collect();
        assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");

        let again = load_or_create(&dir, &[]).unwrap();
        assert_eq!(first, again);

        assert_eq!(
            identity(&first.admin_cert_pem),
            Some((ADMIN_USER.to_owned(), vec![ADMIN_GROUP.to_owned()]))
        );
        assert_eq!(
            sans_of(&first.server_cert_pem),
            ["localhost", "127.0.0.1", "::1"]
        );

        // Validity periods and key usages.
        let ca_der = first_cert(&first.ca_cert_pem).unwrap();
        let ca = parse_x509(&ca_der).unwrap();
        let ca_days = (ca.validity().not_after.timestamp() - unix_now()) / secs(DAY);
        assert!((3640..=3651).contains(&ca_days), "CA valid {ca_days} days");
        assert!(ca.is_ca());
        let ca_ku = ca.key_usage().unwrap().unwrap().value;
        assert!(ca_ku.key_cert_sign() && ca_ku.crl_sign());
        for (pem, server) in [
            (&first.server_cert_pem, true),
            (&first.admin_cert_pem, false),
        ] {
            let der = first_cert(pem).unwrap();
            let leaf = parse_x509(&der).unwrap();
            let days = (leaf.validity().not_after.timestamp() - unix_now()) / secs(DAY);
            assert!((363..=365).contains(&days), "leaf valid {days} days");
            assert!(!leaf.is_ca());
            assert_eq!(leaf.issuer().as_raw(), ca.subject().as_raw());
            let eku = leaf.extended_key_usage().unwrap().unwrap().value;
            assert_eq!((eku.server_auth, eku.client_auth), (server, !server));
            assert!(leaf.key_usage().unwrap().unwrap().value.digital_signature());
            assert_eq!(
                leaf.public_key().algorithm.algorithm,
                x509_parser::oid_registry::OID_KEY_TYPE_EC_PUBLIC_KEY
            );
        }
    }

    #[test]
    fn san_change_reissues_only_the_serving_cert() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("pki");
        let first = load_or_create(&dir, &[]).unwrap();

        let extra = vec!["API.Example.com".to_owned(), "10.1.2.3".to_owned()];
        let second = load_or_create(&dir, &extra).unwrap();
        assert_eq!(first.ca_cert_pem, second.ca_cert_pem);
        assert_eq!(first.ca_key_pem, second.ca_key_pem);
        assert_eq!(first.admin_cert_pem, second.admin_cert_pem);
        assert_eq!(first.admin_key_pem, second.admin_key_pem);
        assert_ne!(first.server_cert_pem, second.server_cert_pem);
        assert_ne!(first.server_key_pem, second.server_key_pem);
        assert_eq!(
            sans_of(&second.server_cert_pem),
            [
                "localhost",
                "127.0.0.1",
                "::1",
                "api.example.com",
                "10.1.2.3"
            ]
        );
        assert_eq!(second.server_cert_pem, read(&dir, "server.crt"));

        // A subset of the SANs already present (in any spelling) keeps the certificate.
        let subset = vec!["[::1]".to_owned(), "api.EXAMPLE.com".to_owned()];
        assert_eq!(load_or_create(&dir, &subset).unwrap(), second);
        assert_eq!(load_or_create(&dir, &[]).unwrap(), second);
    }

    #[test]
    fn bad_sans_are_rejected() {
        let tmp = tempfile::tempdir().unwrap();
        for bad in ["", "  ", "bad name", "ünïcode.example"] {
            assert!(
                load_or_create(tmp.path(), &[bad.to_owned()]).is_err(),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn broken_or_expiring_leaves_are_reissued() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("pki");
        let first = load_or_create(&dir, &[]).unwrap();
        let ca = Ca::from_pem(&first.ca_cert_pem, &first.ca_key_pem).unwrap();

        // Admin certificate expiring in 10 days.
        let admin = LeafKind::Client {
            user: ADMIN_USER,
            groups: &[ADMIN_GROUP],
        };
        let (cert, key) = issue_leaf(&ca, &admin, 10 * DAY).unwrap();
        assert!(
            leaf_problem(&ca, &admin, &cert, &key)
                .unwrap()
                .contains("expires")
        );
        fs::write(dir.join("admin.crt"), &cert).unwrap();
        fs::write(dir.join("admin.key"), &key).unwrap();
        let second = load_or_create(&dir, &[]).unwrap();
        assert_ne!(second.admin_cert_pem, cert);
        assert_eq!(second.server_cert_pem, first.server_cert_pem);
        assert_eq!(second.ca_cert_pem, first.ca_cert_pem);
        let days = {
            let der = first_cert(&second.admin_cert_pem).unwrap();
            let x509 = parse_x509(&der).unwrap();
            (x509.validity().not_after.timestamp() - unix_now()) / secs(DAY)
        };
        assert!(days >= 363);

        // Serving key that does not match its certificate.
        fs::write(dir.join("server.key"), &second.admin_key_pem).unwrap();
        let third = load_or_create(&dir, &[]).unwrap();
        assert_ne!(third.server_cert_pem, second.server_cert_pem);
        assert_eq!(third.admin_cert_pem, second.admin_cert_pem);

        // Garbage, and a client certificate where the serving one belongs.
        fs::write(dir.join("server.crt"), "garbage").unwrap();
        let fourth = load_or_create(&dir, &[]).unwrap();
        assert_ne!(fourth.server_cert_pem, third.server_cert_pem);
        fs::write(dir.join("server.crt"), &fourth.admin_cert_pem).unwrap();
        fs::write(dir.join("server.key"), &fourth.admin_key_pem).unwrap();
        let fifth = load_or_create(&dir, &[]).unwrap();
        assert_ne!(fifth.server_cert_pem, fourth.admin_cert_pem);

        // An admin certificate from another CA.
        let other = load_or_create(&tmp.path().join("other"), &[]).unwrap();
        fs::write(dir.join("admin.crt"), &other.admin_cert_pem).unwrap();
        fs::write(dir.join("admin.key"), &other.admin_key_pem).unwrap();
        let sixth = load_or_create(&dir, &[]).unwrap();
        assert_ne!(sixth.admin_cert_pem, other.admin_cert_pem);
        assert_eq!(sixth.ca_cert_pem, first.ca_cert_pem);

        // Loose key permissions are tightened.
        fs::set_permissions(dir.join("ca.key"), fs::Permissions::from_mode(0o644)).unwrap();
        load_or_create(&dir, &[]).unwrap();
        assert_eq!(mode(&dir.join("ca.key")), 0o600);
    }

    #[test]
    fn ca_is_never_replaced_silently() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("pki");
        let first = load_or_create(&dir, &[]).unwrap();

        fs::remove_file(dir.join("ca.key")).unwrap();
        let err = load_or_create(&dir, &[]).unwrap_err();
        assert!(format!("{err:#}").contains("ca.key"), "{err:#}");

        fs::write(dir.join("ca.key"), &first.admin_key_pem).unwrap();
        let err = load_or_create(&dir, &[]).unwrap_err();
        assert!(format!("{err:#}").contains("does not belong"), "{err:#}");
        assert_eq!(read(&dir, "ca.crt"), first.ca_cert_pem);

        // A key without a certificate is an interrupted first start: start over.
        fs::remove_file(dir.join("ca.crt")).unwrap();
        let second = load_or_create(&dir, &[]).unwrap();
        assert_ne!(second.ca_cert_pem, first.ca_cert_pem);
        assert_ne!(second.admin_cert_pem, first.admin_cert_pem);
        assert_ne!(second.server_cert_pem, first.server_cert_pem);
    }

    #[test]
    fn client_certs_with_several_groups() {
        let tmp = tempfile::tempdir().unwrap();
        let pki = load_or_create(tmp.path(), &[]).unwrap();
        let (cert, key) =
            issue_client_cert(&pki, "jane", &["dev", "system:authenticated", "ops"]).unwrap();
        assert_eq!(
            identity(&cert),
            Some((
                "jane".to_owned(),
                vec![
                    "dev".to_owned(),
                    "system:authenticated".to_owned(),
                    "ops".to_owned()
                ]
            ))
        );
        assert!(key.starts_with("-----BEGIN PRIVATE KEY-----"));
        let (cert, _) = issue_client_cert(&pki, "nogroups", &[]).unwrap();
        assert_eq!(identity(&cert), Some(("nogroups".to_owned(), vec![])));
        // Long names need multi-byte DER lengths.
        let long_group = "g".repeat(300);
        let (cert, _) = issue_client_cert(&pki, "long", &[&long_group]).unwrap();
        assert_eq!(identity(&cert), Some(("long".to_owned(), vec![long_group])));

        assert!(issue_client_cert(&pki, "", &[]).is_err());
        assert!(issue_client_cert(&pki, "x", &[""]).is_err());
    }

    #[test]
    fn kubeconfig_has_the_right_fields() {
        let tmp = tempfile::tempdir().unwrap();
        let pki = load_or_create(&tmp.path().join("pki"), &[]).unwrap();
        let path = tmp.path().join("admin.kubeconfig");
        write_kubeconfig(&path, "https://127.0.0.1:6443", &pki).unwrap();
        assert_eq!(mode(&path), 0o600);

        let doc: serde_json::Value = serde_saphyr::from_str(&fs::read_to_string(&path).unwrap())
            .expect("kubeconfig is valid YAML");
        let b64 = |v: &serde_json::Value| {
            String::from_utf8(BASE64.decode(v.as_str().unwrap()).unwrap()).unwrap()
        };
        assert_eq!(doc["apiVersion"], "v1");
        assert_eq!(doc["kind"], "Config");
        assert_eq!(doc["current-context"], "wasmgate");
        let cluster = &doc["clusters"][0];
        assert_eq!(cluster["name"], "wasmgate");
        assert_eq!(cluster["cluster"]["server"], "https://127.0.0.1:6443");
        assert_eq!(
            b64(&cluster["cluster"]["certificate-authority-data"]),
            pki.ca_cert_pem
        );
        let user = &doc["users"][0];
        assert_eq!(user["name"], "wasmgate-admin");
        assert_eq!(
            b64(&user["user"]["client-certificate-data"]),
            pki.admin_cert_pem
        );
        assert_eq!(b64(&user["user"]["client-key-data"]), pki.admin_key_pem);
        let context = &doc["contexts"][0];
        assert_eq!(context["name"], "wasmgate");
        assert_eq!(context["context"]["cluster"], "wasmgate");
        assert_eq!(context["context"]["user"], "wasmgate-admin");

        // Rewriting replaces the file; odd characters in the URL stay intact.
        let url = "https://[::1]:6443/some \"path\"";
        write_kubeconfig(&path, url, &pki).unwrap();
        let doc: serde_json::Value =
            serde_saphyr::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(doc["clusters"][0]["cluster"]["server"], url);

        assert!(write_kubeconfig(&path, "http://127.0.0.1:6443", &pki).is_err());
    }

    #[test]
    fn server_config_offers_h2_and_http11() {
        let tmp = tempfile::tempdir().unwrap();
        let pki = load_or_create(tmp.path(), &[]).unwrap();
        let config = server_tls_config(&pki).unwrap();
        assert_eq!(
            config.alpn_protocols,
            [b"h2".to_vec(), b"http/1.1".to_vec()]
        );
    }

    /// What the test server saw for one connection.
    type Seen = Result<(Option<(String, Vec<String>)>, Option<Vec<u8>>), String>;

    fn client_config(
        pki: &Pki,
        client_cert: Option<(&str, &str)>,
        version: &'static rustls::SupportedProtocolVersion,
    ) -> rustls::ClientConfig {
        let builder = rustls::ClientConfig::builder_with_provider(crypto_provider())
            .with_protocol_versions(&[version])
            .unwrap()
            .with_root_certificates(root_store(&pki.ca_cert_pem).unwrap());
        let mut config = match client_cert {
            Some((cert, key)) => builder
                .with_client_auth_cert(
                    parse_cert_chain(cert).unwrap(),
                    PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap(),
                )
                .unwrap(),
            None => builder.with_no_client_auth(),
        };
        config.alpn_protocols = vec![b"h2".to_vec()];
        config
    }

    /// Connects, sends "ping" and returns the reply (the server answers "pong").
    async fn ping(
        addr: std::net::SocketAddr,
        config: rustls::ClientConfig,
    ) -> Result<String, String> {
        let tcp = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| e.to_string())?;
        let name = ServerName::try_from("localhost").unwrap();
        let mut tls = TlsConnector::from(Arc::new(config))
            .connect(name, tcp)
            .await
            .map_err(|e| format!("connect: {e}"))?;
        tls.write_all(b"ping")
            .await
            .map_err(|e| format!("write: {e}"))?;
        tls.flush().await.map_err(|e| format!("flush: {e}"))?;
        let mut reply = [0u8; 4];
        tls.read_exact(&mut reply)
            .await
            .map_err(|e| format!("read: {e}"))?;
        Ok(String::from_utf8_lossy(&reply).into_owned())
    }

    #[tokio::test]
    async fn tls_handshake_with_optional_client_certs() {
        let tmp = tempfile::tempdir().unwrap();
        let pki = load_or_create(&tmp.path().join("pki"), &[]).unwrap();
        let foreign = load_or_create(&tmp.path().join("foreign"), &[]).unwrap();

        let acceptor = TlsAcceptor::from(Arc::new(server_tls_config(&pki).unwrap()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (seen_tx, mut seen_rx) = tokio::sync::mpsc::unbounded_channel::<Seen>();
        let server = tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                let seen = match acceptor.accept(tcp).await {
                    Ok(mut tls) => {
                        let (_, conn) = tls.get_ref();
                        let user = match conn.peer_certificates().and_then(|certs| certs.first()) {
                            None => Ok(None),
                            Some(cert) => user_from_client_cert(cert.as_ref())
                                .map(Some)
                                .ok_or_else(|| "peer certificate names no user".to_owned()),
                        };
                        let alpn = conn.alpn_protocol().map(<[u8]>::to_vec);
                        let mut buf = [0u8; 4];
                        let result = match tls.read_exact(&mut buf).await {
                            Ok(_) => {
                                let _ = tls.write_all(b"pong").await;
                                let _ = tls.flush().await;
                                user.map(|user| (user, alpn))
                            }
                            Err(e) => Err(format!("server read: {e}")),
                        };
                        let _ = tls.shutdown().await;
                        result
                    }
                    Err(e) => Err(format!("server handshake: {e}")),
                };
                if seen_tx.send(seen).is_err() {
                    return;
                }
            }
        });

        for version in [&rustls::version::TLS13, &rustls::version::TLS12] {
            // 1. The admin certificate: verified, identity available to the server.
            let admin = client_config(
                &pki,
                Some((&pki.admin_cert_pem, &pki.admin_key_pem)),
                version,
            );
            assert_eq!(
                ping(addr, admin).await,
                Ok("pong".to_owned()),
                "{version:?}"
            );
            let (user, alpn) = seen_rx.recv().await.unwrap().unwrap();
            assert_eq!(
                user,
                Some((
                    "wasmgate-admin".to_owned(),
                    vec!["system:masters".to_owned()]
                ))
            );
            assert_eq!(alpn.as_deref(), Some(&b"h2"[..]));

            // 2. No certificate: the handshake succeeds, the server sees no peer certificate.
            let anonymous = client_config(&pki, None, version);
            assert_eq!(
                ping(addr, anonymous).await,
                Ok("pong".to_owned()),
                "{version:?}"
            );
            let (user, _) = seen_rx.recv().await.unwrap().unwrap();
            assert_eq!(user, None);

            // 3. A certificate from another CA: the handshake fails on both sides.
            let stranger = client_config(
                &pki,
                Some((&foreign.admin_cert_pem, &foreign.admin_key_pem)),
                version,
            );
            let result = ping(addr, stranger).await;
            assert!(result.is_err(), "{version:?}: {result:?}");
            let seen = seen_rx.recv().await.unwrap();
            let err = seen.unwrap_err();
            assert!(err.contains("server handshake"), "{version:?}: {err}");

            // An extra client certificate with several groups works the same way.
            let (cert, key) = issue_client_cert(&pki, "jane", &["dev", "ops"]).unwrap();
            let jane = client_config(&pki, Some((&cert, &key)), version);
            assert_eq!(ping(addr, jane).await, Ok("pong".to_owned()), "{version:?}");
            let (user, _) = seen_rx.recv().await.unwrap().unwrap();
            assert_eq!(
                user,
                Some(("jane".to_owned(), vec!["dev".to_owned(), "ops".to_owned()]))
            );
        }
        server.abort();
    }
}
