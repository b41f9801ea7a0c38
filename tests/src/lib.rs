//! End-to-end harness: the real `wasmgate` binary as a separate process, driven by
//! `kubectl` and `curl` over TLS.
//!
//! The binary is compiled by this package too (`[[bin]] wasmgate-under-test`, built from
//! `host/wasmgate/src/main.rs`). Integration tests get its path with
//! [`gateway_builder!`], which reads `CARGO_BIN_EXE_wasmgate-under-test`; the environment
//! variable `WASMGATE_BIN` overrides it (for example to test a release build).
//!
//! ```ignore
//! // In a file under tests/ (the macro needs CARGO_BIN_EXE_wasmgate-under-test):
//! let gw = wasmgate_e2e::gateway_builder!().start();
//! let out = gw.kubectl(&["create", "namespace", "demo"]);
//! assert_eq!(wasmgate_e2e::assert_ok(&out), "namespace/demo created\n");
//! ```
//!
//! Every wait in here has a deadline; helpers that assert panic with the command's
//! stderr, and a [`Gateway`] dropped during a panic prints the tail of the server log.
#![forbid(unsafe_code)]

use std::fs::File;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use tempfile::TempDir;

/// How long a gateway gets to print its ready line.
pub const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// How long one foreground command (kubectl, curl) may run before it is killed.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(120);
/// The kubectl on the machine (a version dispatcher; see KUBECTL-WIRE.md §0).
pub const KUBECTL: &str = "/usr/bin/kubectl";
/// `curl`, for requests kubectl cannot make.
pub const CURL: &str = "curl";

/// A builder for a [`Gateway`] that runs `bin`. Integration tests use
/// [`gateway_builder!`] instead, which fills in the binary built by this package.
#[macro_export]
macro_rules! gateway_builder {
    () => {
        $crate::Gateway::builder(env!("CARGO_BIN_EXE_wasmgate-under-test"))
    };
}

/// The storage engine of a gateway under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Storage {
    /// `--storage memory`: nothing survives the process.
    Memory,
    /// `--storage embedded`: the redb file in the data directory.
    Embedded,
}

/// Options for [`Gateway`]s; see [`gateway_builder!`].
#[derive(Debug, Clone)]
pub struct GatewayBuilder {
    bin: PathBuf,
    storage: Storage,
    data_dir: Option<PathBuf>,
    config: Option<String>,
    plugin_dir: Option<PathBuf>,
}

impl GatewayBuilder {
    /// The storage engine (default: memory).
    pub fn storage(mut self, storage: Storage) -> Self {
        self.storage = storage;
        self
    }

    /// Use this data directory instead of a fresh temporary one (restart tests).
    pub fn data_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.data_dir = Some(dir.into());
        self
    }

    /// A configuration file (YAML, as `wasmgate config` prints) passed with `--config`.
    pub fn config(mut self, yaml: &str) -> Self {
        self.config = Some(yaml.to_owned());
        self
    }

    /// A plugin directory (`--plugin-dir`); by default gateways under test run none.
    pub fn plugin_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.plugin_dir = Some(dir.into());
        self
    }

    /// Starts the gateway and waits for its ready line; panics if it does not come up.
    pub fn start(self) -> Gateway {
        match self.try_start() {
            Ok(gw) => gw,
            Err(e) => panic!("starting wasmgate: {e:#}"),
        }
    }

    /// Starts the gateway and waits for its ready line.
    pub fn try_start(self) -> anyhow::Result<Gateway> {
        let bin = match std::env::var_os("WASMGATE_BIN") {
            Some(b) => PathBuf::from(b),
            None => self.bin.clone(),
        };
        let work = tempfile::Builder::new()
            .prefix("wasmgate-e2e-")
            .tempdir()
            .context("creating the work directory")?;
        let (owned_data, data_dir) = match &self.data_dir {
            Some(d) => (None, d.clone()),
            None => {
                let t = tempfile::Builder::new()
                    .prefix("wasmgate-e2e-data-")
                    .tempdir()
                    .context("creating the data directory")?;
                let p = t.path().to_path_buf();
                (Some(t), p)
            }
        };
        let stderr_log = work.path().join("wasmgate.stderr");
        let mut last_error = None;
        for _attempt in 0..5 {
            match self.spawn_once(&bin, &data_dir, &stderr_log) {
                Ok((child, addr, kubeconfig)) => {
                    let gw = Gateway {
                        child: Some(child),
                        addr,
                        client_files: ClientFiles::in_data_dir(&data_dir),
                        data_dir,
                        kubeconfig,
                        work,
                        _owned_data: owned_data,
                        stderr_log,
                    };
                    let f = &gw.client_files;
                    for file in [&f.ca, &f.cert, &f.key] {
                        // An early return drops `gw`, which kills the process.
                        anyhow::ensure!(file.is_file(), "ready, but {} is missing", file.display());
                    }
                    return Ok(gw);
                }
                Err(SpawnError::AddressInUse(e)) => last_error = Some(e),
                Err(SpawnError::Other(e)) => return Err(e),
            }
        }
        Err(last_error.unwrap_or_else(|| anyhow::anyhow!("no attempt made")))
            .context("five attempts found the port taken")
    }

    fn spawn_once(
        &self,
        bin: &Path,
        data_dir: &Path,
        stderr_log: &Path,
    ) -> Result<(Child, String, PathBuf), SpawnError> {
        let port = free_port().map_err(SpawnError::Other)?;
        let listen = format!("127.0.0.1:{port}");
        let log = File::create(stderr_log)
            .context("creating the stderr log")
            .map_err(SpawnError::Other)?;
        let storage = match self.storage {
            Storage::Memory => "memory",
            Storage::Embedded => "embedded",
        };
        let mut cmd = Command::new(bin);
        cmd.arg("serve");
        if let Some(yaml) = &self.config {
            let path = stderr_log.with_file_name("config.yaml");
            std::fs::write(&path, yaml)
                .context("writing the config file")
                .map_err(SpawnError::Other)?;
            cmd.arg("--config").arg(path);
        }
        match &self.plugin_dir {
            Some(d) => cmd.arg("--plugin-dir").arg(d),
            None => cmd.args(["--plugin-dir", "none"]),
        };
        let mut child = cmd
            .arg("--data-dir")
            .arg(data_dir)
            .args(["--listen", &listen, "--storage", storage])
            .env("NO_COLOR", "1")
            // Panics keep their backtraces; an error the gateway exits with stays short
            // enough for the stderr tail to show its reason.
            .env("RUST_LIB_BACKTRACE", "0")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            .spawn()
            .with_context(|| format!("spawning {}", bin.display()))
            .map_err(SpawnError::Other)?;
        let Some(stdout) = child.stdout.take() else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(SpawnError::Other(anyhow::anyhow!("no stdout pipe")));
        };
        let (tx, rx) = mpsc::channel::<String>();
        std::thread::spawn(move || {
            // Keeps draining stdout after the ready line so the server never blocks on it.
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let _ = tx.send(line);
            }
        });
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => {
                    if let Some(rest) = line.strip_prefix("wasmgate ready: https://") {
                        let Some((addr, kubeconfig)) = rest.split_once(" kubeconfig=") else {
                            let _ = child.kill();
                            let _ = child.wait();
                            return Err(SpawnError::Other(anyhow::anyhow!(
                                "malformed ready line {line:?}"
                            )));
                        };
                        if addr != listen {
                            let _ = child.kill();
                            let _ = child.wait();
                            return Err(SpawnError::Other(anyhow::anyhow!(
                                "ready line names {addr}, expected {listen}"
                            )));
                        }
                        let kubeconfig = PathBuf::from(kubeconfig);
                        if !kubeconfig.is_file() {
                            let _ = child.kill();
                            let _ = child.wait();
                            return Err(SpawnError::Other(anyhow::anyhow!(
                                "ready line printed but {} does not exist",
                                kubeconfig.display()
                            )));
                        }
                        return Ok((child, listen, kubeconfig));
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(SpawnError::Other(anyhow::anyhow!(
                        "no ready line within {READY_TIMEOUT:?}; stderr:\n{}",
                        tail(stderr_log, 40)
                    )));
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let status = child.wait().map_err(|e| SpawnError::Other(e.into()))?;
                    let log = tail(stderr_log, 40);
                    let e = anyhow::anyhow!(
                        "wasmgate exited ({status}) before it was ready; stderr:\n{log}"
                    );
                    let lower = log.to_lowercase();
                    return Err(
                        if lower.contains("address in use")
                            || lower.contains("address already in use")
                        {
                            SpawnError::AddressInUse(e)
                        } else {
                            SpawnError::Other(e)
                        },
                    );
                }
            }
        }
    }
}

enum SpawnError {
    AddressInUse(anyhow::Error),
    Other(anyhow::Error),
}

/// A port that was free a moment ago.
fn free_port() -> anyhow::Result<u16> {
    let l = TcpListener::bind("127.0.0.1:0").context("binding 127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

/// The last `n` lines of a file (or a note that it cannot be read).
fn tail(path: &Path, n: usize) -> String {
    match std::fs::read_to_string(path) {
        Ok(s) => {
            let lines: Vec<&str> = s.lines().collect();
            lines[lines.len().saturating_sub(n)..].join("\n")
        }
        Err(e) => format!("<cannot read {}: {e}>", path.display()),
    }
}

/// Files for `curl --cacert/--cert/--key`: the PEM files the server keeps in
/// `DATA_DIR/pki/` (the same ones its kubeconfig embeds).
#[derive(Debug, Clone)]
struct ClientFiles {
    ca: PathBuf,
    cert: PathBuf,
    key: PathBuf,
}

impl ClientFiles {
    fn in_data_dir(data_dir: &Path) -> ClientFiles {
        let pki = data_dir.join("pki");
        ClientFiles {
            ca: pki.join("ca.crt"),
            cert: pki.join("admin.crt"),
            key: pki.join("admin.key"),
        }
    }
}

/// A running `wasmgate serve` process. Dropping it kills the process; if the thread is
/// panicking, the tail of the server's stderr is printed first.
#[derive(Debug)]
pub struct Gateway {
    child: Option<Child>,
    addr: String,
    data_dir: PathBuf,
    kubeconfig: PathBuf,
    work: TempDir,
    _owned_data: Option<TempDir>,
    stderr_log: PathBuf,
    client_files: ClientFiles,
}

impl Gateway {
    /// A builder that runs `bin` (see [`gateway_builder!`]).
    pub fn builder(bin: impl Into<PathBuf>) -> GatewayBuilder {
        GatewayBuilder {
            bin: bin.into(),
            storage: Storage::Memory,
            config: None,
            data_dir: None,
            plugin_dir: None,
        }
    }

    /// `127.0.0.1:PORT`.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// The data directory.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// `https://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("https://{}", self.addr)
    }

    /// The admin kubeconfig the server wrote.
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// The last `n` lines the server wrote to stderr.
    pub fn stderr_tail(&self, n: usize) -> String {
        tail(&self.stderr_log, n)
    }

    /// Writes `contents` to `name` in the work directory and returns the path.
    pub fn write_file(&self, name: &str, contents: &str) -> PathBuf {
        let path = self.work.path().join(name);
        if let Some(parent) = path.parent()
            && let Err(e) = std::fs::create_dir_all(parent)
        {
            panic!("creating {}: {e}", parent.display());
        }
        if let Err(e) = std::fs::write(&path, contents) {
            panic!("writing {}: {e}", path.display());
        }
        path
    }

    /// A kubectl command with this gateway's kubeconfig and a per-gateway cache
    /// directory, but no `--request-timeout` (for watches and other long commands).
    pub fn kubectl_command<S: AsRef<std::ffi::OsStr>>(&self, args: &[S]) -> Command {
        self.kubectl_command_with(&self.kubeconfig, args)
    }

    /// [`Gateway::kubectl_command`] with another kubeconfig (another replica's:
    /// `admin-replica-2.kubeconfig` in the data directory).
    pub fn kubectl_command_with<S: AsRef<std::ffi::OsStr>>(
        &self,
        kubeconfig: &Path,
        args: &[S],
    ) -> Command {
        let mut c = Command::new(KUBECTL);
        c.arg("--kubeconfig")
            .arg(kubeconfig)
            .arg("--cache-dir")
            .arg(self.work.path().join("kube-cache"))
            .args(args)
            .env("KUBECONFIG", kubeconfig)
            .env_remove("KUBECTL_EXTERNAL_DIFF")
            .env_remove("KUBE_EDITOR")
            .env_remove("EDITOR")
            .stdin(Stdio::null());
        c
    }

    /// Runs kubectl with `--request-timeout=30s` and waits for it (killed after
    /// [`COMMAND_TIMEOUT`]).
    pub fn kubectl(&self, args: &[&str]) -> Output {
        let mut all = vec!["--request-timeout=30s"];
        all.extend_from_slice(args);
        run(self.kubectl_command(&all))
    }

    /// Runs kubectl and returns its stdout; panics (with stderr) unless it exits 0.
    pub fn kubectl_ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        if !out.status.success() {
            panic!(
                "kubectl {args:?} failed ({})\nstdout:\n{}\nstderr:\n{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Runs kubectl and returns its stderr; panics unless it exits non-zero.
    pub fn kubectl_err(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        if out.status.success() {
            panic!(
                "kubectl {args:?} succeeded but should have failed\nstdout:\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    /// Starts kubectl in the background (no request timeout), collecting its output.
    pub fn kubectl_background(&self, args: &[&str]) -> Background {
        Background::spawn(self.kubectl_command(args))
    }

    /// An HTTPS client (curl with the admin certificate) that can be moved to other
    /// threads and outlives a killed gateway process.
    pub fn client(&self) -> HttpClient {
        HttpClient {
            base_url: self.base_url(),
            files: self.client_files.clone(),
        }
    }

    /// The server's process id (`None` once stopped).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// A field of the server's `/proc/PID/status` in KiB (`VmRSS`, `VmHWM`).
    pub fn memory_kib(&self, field: &str) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()?)).ok()?;
        status
            .lines()
            .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
    }

    /// Resets the server's peak RSS (`VmHWM`) to its current RSS (Linux `clear_refs` 5).
    pub fn reset_peak_memory(&self) -> bool {
        self.pid()
            .is_some_and(|pid| std::fs::write(format!("/proc/{pid}/clear_refs"), "5").is_ok())
    }

    /// The cluster CA certificate (PEM file), for clients without a client certificate.
    pub fn ca_file(&self) -> &Path {
        &self.client_files.ca
    }

    /// A TLS client configuration that trusts the cluster CA and presents no client
    /// certificate (an anonymous client, or one with a bearer token).
    pub fn tls_config_without_certificate(&self) -> Arc<rustls::ClientConfig> {
        use rustls::pki_types::CertificateDer;
        use rustls::pki_types::pem::PemObject as _;
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_file_iter(self.ca_file()).expect("ca.crt") {
            roots.add(cert.expect("a certificate")).expect("a root");
        }
        Arc::new(
            rustls::ClientConfig::builder()
                .with_root_certificates(roots)
                .with_no_client_auth(),
        )
    }

    /// See [`HttpClient::request`].
    pub fn request(
        &self,
        method: &str,
        path: &str,
        content_type: &str,
        body: Option<&str>,
    ) -> Reply {
        self.client().request(method, path, content_type, body)
    }

    /// `GET path` with the admin certificate.
    pub fn get(&self, path: &str) -> Reply {
        self.client().get(path)
    }

    /// See [`HttpClient::stream`].
    pub fn stream(&self, path: &str) -> Background {
        self.client().stream(path)
    }

    /// SIGTERM, then waits (up to 60 s) for the process to exit.
    pub fn stop(&mut self) -> anyhow::Result<ExitStatus> {
        let Some(mut child) = self.child.take() else {
            bail!("the gateway is not running");
        };
        let status = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .context("running kill -TERM")?;
        if !status.success() {
            bail!("kill -TERM {} failed: {status}", child.id());
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = child.try_wait()? {
                return Ok(status);
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                bail!(
                    "wasmgate did not exit within 60 s of SIGTERM; stderr:\n{}",
                    self.stderr_tail(40)
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGKILL, and reaps the process.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        self.kill();
        if std::thread::panicking() {
            eprintln!(
                "---- wasmgate {} (data dir {}) stderr, last 60 lines ----\n{}\n---- end of wasmgate stderr ----",
                self.addr,
                self.data_dir.display(),
                self.stderr_tail(60)
            );
        }
    }
}

/// An HTTP reply.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The status code.
    pub status: u16,
    /// The body as text.
    pub body: String,
}

impl Reply {
    /// The body as JSON; panics if it is not.
    pub fn json(&self) -> serde_json::Value {
        match serde_json::from_str(&self.body) {
            Ok(v) => v,
            Err(e) => panic!("reply {} is not JSON ({e}): {}", self.status, self.body),
        }
    }

    /// Panics unless the status is `status`; returns the body as JSON.
    pub fn expect_status(&self, status: u16) -> serde_json::Value {
        if self.status != status {
            panic!("expected HTTP {status}, got {}: {}", self.status, self.body);
        }
        self.json()
    }
}

/// HTTPS requests with `curl`, the admin client certificate and the cluster CA.
#[derive(Debug, Clone)]
pub struct HttpClient {
    base_url: String,
    files: ClientFiles,
}

impl HttpClient {
    /// A curl command with the client certificate and the CA, silent except for errors.
    pub fn curl_command(&self) -> Command {
        let mut c = Command::new(CURL);
        c.args(["-sS", "--http1.1"])
            .arg("--cacert")
            .arg(&self.files.ca)
            .arg("--cert")
            .arg(&self.files.cert)
            .arg("--key")
            .arg(&self.files.key)
            .stdin(Stdio::null());
        c
    }

    /// One request; `body` is sent with `content_type`. Errors only when no HTTP reply
    /// arrived (connection refused or reset, timeout).
    pub fn try_request(
        &self,
        method: &str,
        path: &str,
        content_type: &str,
        body: Option<&str>,
    ) -> anyhow::Result<Reply> {
        let mut c = self.curl_command();
        c.args(["--max-time", "30", "-X", method])
            .args(["-H", "Accept: application/json"])
            .args(["-w", "\n%{http_code}"]);
        if body.is_some() {
            c.args(["-H", &format!("Content-Type: {content_type}")])
                .args(["--data-binary", "@-"]);
        }
        c.arg(format!("{}{path}", self.base_url));
        curl_reply(c, body)
    }

    /// [`HttpClient::try_request`] that panics when no reply arrives.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        content_type: &str,
        body: Option<&str>,
    ) -> Reply {
        match self.try_request(method, path, content_type, body) {
            Ok(r) => r,
            Err(e) => panic!("{method} {path}: {e:#}"),
        }
    }

    /// `GET path`.
    pub fn get(&self, path: &str) -> Reply {
        self.request("GET", path, "", None)
    }

    /// A streaming GET (for watches): the reply body, line by line, in the background.
    pub fn stream(&self, path: &str) -> Background {
        let mut c = self.curl_command();
        c.args(["-N", "--max-time", "600", "-H", "Accept: application/json"])
            .arg(format!("{}{path}", self.base_url));
        Background::spawn(c)
    }
}

/// Runs a curl command built with `-w "\n%{http_code}"`, feeding `body` on stdin.
fn curl_reply(mut c: Command, body: Option<&str>) -> anyhow::Result<Reply> {
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    if body.is_some() {
        c.stdin(Stdio::piped());
    }
    let mut child = c.spawn().context("spawning curl")?;
    if let (Some(body), Some(mut stdin)) = (body, child.stdin.take()) {
        stdin
            .write_all(body.as_bytes())
            .context("writing curl stdin")?;
    }
    let out = child.wait_with_output().context("waiting for curl")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let Some((body, code)) = stdout.rsplit_once('\n') else {
        bail!(
            "curl printed no status: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let status: u16 = code.trim().parse().unwrap_or(0);
    if !out.status.success() || status == 0 {
        bail!(
            "curl failed ({}), status {code:?}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(Reply {
        status,
        body: body.to_owned(),
    })
}

/// Runs `cmd` to completion, capturing stdout and stderr; kills it after
/// [`COMMAND_TIMEOUT`] (the stderr then says so).
pub fn run(cmd: Command) -> Output {
    run_with_timeout(cmd, COMMAND_TIMEOUT)
}

/// [`run`] with another deadline.
pub fn run_with_timeout(mut cmd: Command, timeout: Duration) -> Output {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => panic!("spawning {cmd:?}: {e}"),
    };
    let out_reader = child.stdout.take().map(read_all_in_background);
    let err_reader = child.stderr.take().map(read_all_in_background);
    let deadline = Instant::now() + timeout;
    let mut killed = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() > deadline => {
                let _ = child.kill();
                killed = true;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => panic!("waiting for {cmd:?}: {e}"),
        }
    };
    let stdout = out_reader.map(join_bytes).unwrap_or_default();
    let mut stderr = err_reader.map(join_bytes).unwrap_or_default();
    if killed {
        stderr.extend_from_slice(
            format!("\n[e2e harness: killed after {timeout:?}: {cmd:?}]\n").as_bytes(),
        );
    }
    Output {
        status,
        stdout,
        stderr,
    }
}

fn read_all_in_background<R: std::io::Read + Send + 'static>(mut r: R) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        buf
    })
}

fn join_bytes(h: JoinHandle<Vec<u8>>) -> Vec<u8> {
    h.join().unwrap_or_default()
}

/// A background process whose stdout is collected line by line (and stderr as a
/// whole). Killed on drop.
#[derive(Debug)]
pub struct Background {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
    stderr: Arc<Mutex<String>>,
    description: String,
}

impl Background {
    /// Spawns `cmd` with piped stdout and stderr.
    pub fn spawn(mut cmd: Command) -> Background {
        let description = format!("{cmd:?}");
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => panic!("spawning {description}: {e}"),
        };
        let lines = Arc::new(Mutex::new(Vec::new()));
        let stderr = Arc::new(Mutex::new(String::new()));
        if let Some(out) = child.stdout.take() {
            let lines = Arc::clone(&lines);
            std::thread::spawn(move || {
                let mut r = BufReader::new(out);
                let mut line = String::new();
                // Partial last lines (a killed stream) are kept as they are.
                while matches!(r.read_line(&mut line), Ok(n) if n > 0) {
                    let l = line.strip_suffix('\n').unwrap_or(&line).to_owned();
                    lines.lock().unwrap_or_else(PoisonError::into_inner).push(l);
                    line.clear();
                }
            });
        }
        if let Some(mut err) = child.stderr.take() {
            let stderr = Arc::clone(&stderr);
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = err.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    stderr
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push_str(&String::from_utf8_lossy(&buf[..n]));
                }
            });
        }
        Background {
            child,
            lines,
            stderr,
            description,
        }
    }

    /// The stdout lines so far.
    pub fn lines(&self) -> Vec<String> {
        self.lines
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Polls until `done(lines)` holds; panics after `timeout` with what arrived.
    pub fn wait_for_lines(
        &mut self,
        what: &str,
        timeout: Duration,
        done: impl Fn(&[String]) -> bool,
    ) -> Vec<String> {
        let deadline = Instant::now() + timeout;
        loop {
            let lines = self.lines();
            if done(&lines) {
                return lines;
            }
            if Instant::now() > deadline {
                let exited = self.child.try_wait().ok().flatten();
                panic!(
                    "timed out after {timeout:?} waiting for {what}\ncommand: {}\nexited: {exited:?}\nstdout:\n{}\nstderr:\n{}",
                    self.description,
                    lines.join("\n"),
                    self.stderr()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The exit status, if it has exited.
    pub fn try_status(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Waits for the process to exit (panics after `timeout`), then gives the reader
    /// threads a moment to drain the pipes. Returns the status.
    pub fn wait_exit(&mut self, timeout: Duration) -> ExitStatus {
        let deadline = Instant::now() + timeout;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => {
                    self.settle();
                    return status;
                }
                Ok(None) if Instant::now() > deadline => {
                    panic!(
                        "{} still running after {timeout:?}\nstdout:\n{}\nstderr:\n{}",
                        self.description,
                        self.lines().join("\n"),
                        self.stderr()
                    );
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                Err(e) => panic!("waiting for {}: {e}", self.description),
            }
        }
    }

    /// Kills the process and waits for it; returns the output collected.
    pub fn kill(&mut self) -> Vec<String> {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.settle();
        self.lines()
    }

    /// After exit: waits until the collected output stops growing (pipes drained).
    fn settle(&self) {
        let mut last = (usize::MAX, usize::MAX);
        for _ in 0..50 {
            let now = (self.lines().len(), self.stderr().len());
            if now == last {
                return;
            }
            last = now;
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Panics unless the command exited 0; returns its stdout.
pub fn assert_ok(out: &Output) -> String {
    if !out.status.success() {
        panic!(
            "command failed ({})\nstdout:\n{}\nstderr:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Panics unless `haystack` contains every needle.
#[track_caller]
pub fn assert_contains(haystack: &str, needles: &[&str]) {
    for n in needles {
        assert!(
            haystack.contains(n),
            "expected {n:?} in:\n-----\n{haystack}\n-----"
        );
    }
}

/// Calls `probe` every 50 ms until it returns `Some`; panics after `timeout`.
pub fn poll<T>(what: &str, timeout: Duration, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = probe() {
            return v;
        }
        if Instant::now() > deadline {
            panic!("timed out after {timeout:?} waiting for {what}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The rows of kubectl's table output, each split on whitespace (header included).
pub fn table(stdout: &str) -> Vec<Vec<String>> {
    stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split_whitespace().map(str::to_owned).collect())
        .collect()
}

/// This crate's directory: where `cargo test` runs the tests from (the directory the
/// binary was compiled in is only the fallback: a target directory shared by two clones
/// keeps test binaries that name the other one).
pub fn manifest_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
}

/// `examples/` of the workspace.
pub fn examples_dir() -> PathBuf {
    manifest_dir().join("../examples")
}

/// `examples/crds/widgets.yaml` with conversion strategy `None` instead of the widgets
/// plugin's, for tests of the CRD machinery on a gateway without plugins: a file next to
/// `dir`'s other files.
pub fn widgets_crd_without_plugin(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(examples_dir().join("crds/widgets.yaml"))
        .expect("examples/crds/widgets.yaml");
    let mut out = String::new();
    let mut skipping = false;
    for line in text.lines() {
        if line == "  conversion:" {
            skipping = true;
            continue;
        }
        if skipping && line.starts_with("    ") {
            continue;
        }
        skipping = false;
        out.push_str(line);
        out.push('\n');
    }
    let path = dir.join("widgets-strategy-none.yaml");
    std::fs::write(&path, out).expect("write the CRD");
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_splits_rows_and_skips_blank_lines() {
        let t = table("NAME   DATA   AGE\napp    1      5s\n\n");
        assert_eq!(t, [vec!["NAME", "DATA", "AGE"], vec!["app", "1", "5s"]]);
    }

    #[test]
    fn tail_keeps_the_last_lines() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("log");
        std::fs::write(&p, "a\nb\nc\n").unwrap();
        assert_eq!(tail(&p, 2), "b\nc");
        assert!(tail(&dir.path().join("missing"), 2).starts_with("<cannot read"));
    }

    #[test]
    fn run_kills_a_command_at_its_deadline() {
        let mut c = Command::new("sleep");
        c.arg("30");
        let out = run_with_timeout(c, Duration::from_millis(200));
        assert!(!out.status.success());
        assert!(String::from_utf8_lossy(&out.stderr).contains("killed after"));
    }
}
