//! Authentication by static bearer tokens and ServiceAccount tokens, and RBAC
//! authorization, with kubectl 1.32 against the real binary (issue 12, first part): a
//! user bound to `view` reads but cannot write (403 worded as kube-apiserver words it),
//! `kubectl auth can-i` and `kubectl auth whoami` answer, a bad token is 401, bindings
//! take effect at once, a ServiceAccount's token stops working when it is deleted, the
//! audit log holds one parseable line per request and no secret value.
//! Item ids refer to SEED-CHECKLIST.md.

use std::path::{Path, PathBuf};
use std::process::Output;

use wasmgate_e2e::{Gateway, assert_contains, gateway_builder, run};

const TOKENS: &str = "alice-token,alice,1001\nbob-token,bob,1002,\"dev,ops\"\n";

struct Setup {
    gw: Gateway,
    _dir: tempfile::TempDir,
}

fn start() -> Setup {
    let dir = tempfile::tempdir().expect("temp dir");
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, TOKENS).expect("token file");
    let gw = gateway_builder!()
        .config(&format!("token-auth-file: {}\n", tokens.display()))
        .start();
    Setup { gw, _dir: dir }
}

/// A kubeconfig like the admin's, authenticating with `token` instead of the certificate.
fn kubeconfig_with_token(gw: &Gateway, name: &str, token: &str) -> PathBuf {
    let path = gw.data_dir().join(format!("{name}.kubeconfig"));
    std::fs::copy(gw.kubeconfig(), &path).expect("copy the kubeconfig");
    for args in [
        vec![
            "config".to_owned(),
            "set-credentials".into(),
            name.into(),
            format!("--token={token}"),
        ],
        vec![
            "config".into(),
            "set-context".into(),
            "--current".into(),
            format!("--user={name}"),
        ],
    ] {
        let out = run(gw.kubectl_command_with(&path, &args));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    path
}

fn as_user(gw: &Gateway, kubeconfig: &Path, args: &[&str]) -> Output {
    let mut all = vec!["--request-timeout=30s"];
    all.extend_from_slice(args);
    run(gw.kubectl_command_with(kubeconfig, &all))
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A `view` RoleBinding lets alice read in its namespace only; writes are 403 with
/// kube's message; `auth can-i` and `whoami` answer; a binding of `edit` lets her create
/// at once (AUTH-01, AUTH-02, AGG-07).
#[test]
fn view_reads_edit_writes_and_refusals_are_worded_as_kube() {
    let Setup { gw, _dir } = start();
    gw.kubectl_ok(&["create", "namespace", "team"]);
    gw.kubectl_ok(&[
        "-n",
        "team",
        "create",
        "configmap",
        "seen",
        "--from-literal=a=1",
    ]);
    let alice = kubeconfig_with_token(&gw, "alice", "alice-token");

    // Nothing bound yet: even listing is refused.
    let denied = as_user(&gw, &alice, &["-n", "team", "get", "configmaps"]);
    assert!(!denied.status.success());
    assert_contains(
        &stderr(&denied),
        &[
            r#"Error from server (Forbidden): configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "team""#,
        ],
    );

    gw.kubectl_ok(&[
        "-n",
        "team",
        "create",
        "rolebinding",
        "alice-view",
        "--clusterrole=view",
        "--user=alice",
    ]);
    let got = as_user(
        &gw,
        &alice,
        &["-n", "team", "get", "configmap", "seen", "-o", "name"],
    );
    assert_eq!(stdout(&got), "configmap/seen\n", "{}", stderr(&got));
    // `kubectl create configmap` words the error its own way around the server's message.
    let create = as_user(&gw, &alice, &["-n", "team", "create", "configmap", "mine"]);
    assert!(!create.status.success());
    assert_contains(
        &stderr(&create),
        &[
            r#"error: failed to create configmap: configmaps is forbidden: User "alice" cannot create resource "configmaps" in API group "" in the namespace "team""#,
        ],
    );
    // view has no secrets, and the binding holds in its namespace only.
    let secrets = as_user(&gw, &alice, &["-n", "team", "get", "secrets"]);
    assert_contains(&stderr(&secrets), &["cannot list resource \"secrets\""]);
    let elsewhere = as_user(&gw, &alice, &["-n", "default", "get", "configmaps"]);
    assert_contains(&stderr(&elsewhere), &["in the namespace \"default\""]);

    // kubectl auth can-i (SelfSubjectAccessReview) and whoami (SelfSubjectReview).
    let yes = as_user(
        &gw,
        &alice,
        &["-n", "team", "auth", "can-i", "get", "configmaps"],
    );
    assert_eq!(stdout(&yes).trim(), "yes", "{}", stderr(&yes));
    let no = as_user(
        &gw,
        &alice,
        &["-n", "team", "auth", "can-i", "create", "configmaps"],
    );
    assert_eq!(stdout(&no).trim(), "no");
    assert_eq!(no.status.code(), Some(1));
    // can-i --list (SelfSubjectRulesReview): the view rules, in the namespace.
    let list = as_user(&gw, &alice, &["-n", "team", "auth", "can-i", "--list"]);
    let rows = stdout(&list);
    assert!(
        rows.lines()
            .any(|l| l.starts_with("configmaps ") && l.contains("[get list watch]")),
        "{rows}{}",
        stderr(&list)
    );
    assert!(
        rows.lines()
            .any(|l| l.contains("selfsubjectaccessreviews.authorization.k8s.io"))
    );
    let who = as_user(
        &gw,
        &alice,
        &[
            "auth",
            "whoami",
            "-o",
            "jsonpath={.status.userInfo.username} {.status.userInfo.groups}",
        ],
    );
    assert_eq!(
        stdout(&who),
        r#"alice ["system:authenticated"]"#,
        "{}",
        stderr(&who)
    );
    // The administrator may do anything (system:masters).
    assert_eq!(
        gw.kubectl_ok(&["auth", "can-i", "delete", "namespaces"])
            .trim(),
        "yes"
    );

    // An edit binding: the next request may create.
    gw.kubectl_ok(&[
        "-n",
        "team",
        "create",
        "rolebinding",
        "alice-edit",
        "--clusterrole=edit",
        "--user=alice",
    ]);
    let created = as_user(&gw, &alice, &["-n", "team", "create", "configmap", "mine"]);
    assert_eq!(
        stdout(&created),
        "configmap/mine created\n",
        "{}",
        stderr(&created)
    );

    // As a namespace admin alice may bind what she holds, not cluster-admin (escalation).
    gw.kubectl_ok(&[
        "-n",
        "team",
        "create",
        "rolebinding",
        "alice-admin",
        "--clusterrole=admin",
        "--user=alice",
    ]);
    let shared = as_user(
        &gw,
        &alice,
        &[
            "-n",
            "team",
            "create",
            "rolebinding",
            "carol-view",
            "--clusterrole=view",
            "--user=carol",
        ],
    );
    assert!(shared.status.success(), "{}", stderr(&shared));
    let grab = as_user(
        &gw,
        &alice,
        &[
            "-n",
            "team",
            "create",
            "rolebinding",
            "grab",
            "--clusterrole=cluster-admin",
            "--user=alice",
        ],
    );
    assert!(!grab.status.success());
    assert_contains(
        &stderr(&grab),
        &[
            r#"rolebindings.rbac.authorization.k8s.io "grab" is forbidden: user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:"#,
            r#"{APIGroups:["*"], Resources:["*"], Verbs:["*"]}"#,
        ],
    );
}

/// Groups from the token file bind like users; an unknown token is 401 (AUTH-01).
#[test]
fn groups_bind_and_bad_tokens_are_unauthorized() {
    let Setup { gw, _dir } = start();
    gw.kubectl_ok(&[
        "create",
        "clusterrolebinding",
        "ops-view",
        "--clusterrole=view",
        "--group=ops",
    ]);
    let bob = kubeconfig_with_token(&gw, "bob", "bob-token");
    let ns = as_user(&gw, &bob, &["get", "namespace", "default", "-o", "name"]);
    assert_eq!(stdout(&ns), "namespace/default\n", "{}", stderr(&ns));

    // Apply creates only for a user who may create (AUTH-03): bob may patch, not create.
    gw.kubectl_ok(&[
        "create",
        "role",
        "patcher",
        "--verb=get,patch",
        "--resource=configmaps",
    ]);
    gw.kubectl_ok(&[
        "create",
        "rolebinding",
        "ops-patch",
        "--role=patcher",
        "--group=ops",
    ]);
    let manifest = gw.write_file(
        "applied.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  a: \"1\"\n",
    );
    let manifest = manifest.to_string_lossy();
    let apply = ["apply", "--server-side", "-f", manifest.as_ref()];
    let refused = as_user(&gw, &bob, &apply);
    assert_contains(
        &stderr(&refused),
        &[r#"Error from server (NotFound): configmaps "applied" not found"#],
    );
    gw.kubectl_ok(&["create", "configmap", "applied"]);
    let applied = as_user(&gw, &bob, &apply);
    assert_eq!(
        stdout(&applied),
        "configmap/applied serverside-applied\n",
        "{}",
        stderr(&applied)
    );

    // Impersonation needs the impersonate verb: bob has none.
    let as_alice = as_user(&gw, &bob, &["get", "ns", "--as=alice"]);
    assert_contains(
        &stderr(&as_alice),
        &[
            r#"Error from server (Forbidden): users "alice" is forbidden: User "bob" cannot impersonate resource "users" in API group "" at the cluster scope"#,
        ],
    );

    let nobody = kubeconfig_with_token(&gw, "nobody", "wrong-token");
    let out = as_user(&gw, &nobody, &["get", "namespaces"]);
    assert!(!out.status.success());
    assert_contains(
        &stderr(&out),
        &["error: You must be logged in to the server (Unauthorized)"],
    );
}

/// `kubectl create token` (TokenRequest) gives a token that authenticates as the
/// ServiceAccount, is authorized by its bindings, and stops working when the account is
/// deleted (AUTH-01).
#[test]
fn service_account_tokens_authenticate_until_the_account_goes() {
    let Setup { gw, _dir } = start();
    gw.kubectl_ok(&["create", "serviceaccount", "bot"]);
    gw.kubectl_ok(&[
        "create",
        "rolebinding",
        "bot-view",
        "--clusterrole=view",
        "--serviceaccount=default:bot",
    ]);
    let token = gw.kubectl_ok(&["create", "token", "bot", "--duration=1h"]);
    let token = token.trim();
    assert_eq!(token.split('.').count(), 3, "a JWT: {token}");
    let bot = kubeconfig_with_token(&gw, "bot", token);
    let who = as_user(
        &gw,
        &bot,
        &[
            "auth",
            "whoami",
            "-o",
            "jsonpath={.status.userInfo.username} {.status.userInfo.groups}",
        ],
    );
    assert_eq!(
        stdout(&who),
        r#"system:serviceaccount:default:bot ["system:serviceaccounts","system:serviceaccounts:default","system:authenticated"]"#,
        "{}",
        stderr(&who)
    );
    let got = as_user(&gw, &bot, &["get", "serviceaccount", "bot", "-o", "name"]);
    assert_eq!(stdout(&got), "serviceaccount/bot\n", "{}", stderr(&got));
    let denied = as_user(&gw, &bot, &["create", "configmap", "x"]);
    assert_contains(
        &stderr(&denied),
        &[r#"User "system:serviceaccount:default:bot" cannot create resource "configmaps""#],
    );
    // Too short a lifetime is refused.
    let short = gw.kubectl_err(&["create", "token", "bot", "--duration=1m"]);
    assert_contains(&short, &["may not specify a duration less than 10 minutes"]);
    // Deleting the account revokes the token; a new account of the same name does not
    // bring it back (another uid).
    gw.kubectl_ok(&["delete", "serviceaccount", "bot"]);
    gw.kubectl_ok(&["create", "serviceaccount", "bot"]);
    let after = as_user(&gw, &bot, &["get", "serviceaccount", "bot"]);
    assert_contains(
        &stderr(&after),
        &["error: You must be logged in to the server (Unauthorized)"],
    );
}

/// The audit log (issue 12): one `audit.k8s.io/v1` Event JSON line per request with the
/// user, verb and object; the policy's levels (request and response objects at
/// `RequestResponse`); a Secret's value never appears, whatever the policy says.
#[test]
fn audit_lines_parse_and_hold_no_secret_data() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = dir.path().join("audit.log");
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  nonResourceURLs: [\"/openapi*\", \"/api\", \"/apis*\"]\n- level: RequestResponse\n",
    )
    .expect("policy");
    let gw = gateway_builder!()
        .config(&format!(
            "audit-log-path: {}\naudit-policy-file: {}\n",
            log.display(),
            policy.display()
        ))
        .start();
    gw.kubectl_ok(&["create", "configmap", "seen", "--from-literal=colour=teal"]);
    gw.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "hidden",
        "--from-literal=password=hunter2",
    ]);
    gw.kubectl_ok(&["get", "secret", "hidden", "-o", "yaml"]);
    gw.kubectl_err(&["get", "namespaces", "--as=someone"]);
    let nobody = kubeconfig_with_token(&gw, "nobody", "wrong-token");
    assert!(
        !as_user(&gw, &nobody, &["get", "configmaps"])
            .status
            .success()
    );
    // Events are appended by a writer thread: wait for the last one.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let text = loop {
        let text = std::fs::read_to_string(&log).expect("the audit log");
        if text.contains("\"code\":401") || std::time::Instant::now() > deadline {
            break text;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let events: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect();
    assert!(
        events
            .iter()
            .all(|e| e["kind"] == "Event" && e["apiVersion"] == "audit.k8s.io/v1")
    );
    let cm = events
        .iter()
        .find(|e| {
            // Not the gateway's own writes at start (`system:apiserver`).
            e["verb"] == "create"
                && e["objectRef"]["resource"] == "configmaps"
                && e["user"]["username"] == "wasmgate-admin"
        })
        .expect("the configmap's create");
    assert_eq!(cm["level"], "RequestResponse");
    assert_eq!(cm["objectRef"]["name"], "seen");
    assert_eq!(cm["user"]["username"], "wasmgate-admin");
    assert_eq!(cm["responseStatus"]["code"], 201);
    assert_eq!(cm["requestObject"]["data"]["colour"], "teal");
    assert_eq!(cm["responseObject"]["metadata"]["name"], "seen");
    let secrets: Vec<_> = events
        .iter()
        .filter(|e| e["objectRef"]["resource"] == "secrets")
        .collect();
    assert_eq!(secrets.len(), 2, "{secrets:?}");
    assert!(secrets.iter().all(|e| e["level"] == "Metadata"));
    assert!(
        !text.contains("hunter2") && !text.contains("aHVudGVyMg"),
        "a secret value in the log"
    );
    assert!(!events.iter().any(|e| {
        e["requestURI"]
            .as_str()
            .is_some_and(|u| u.starts_with("/openapi"))
    }));
    let refused = events
        .iter()
        .find(|e| e["responseStatus"]["code"] == 401)
        .expect("the refused token's request is audited");
    assert_eq!(refused["user"], serde_json::json!({}));
    let acting = events
        .iter()
        .find(|e| e["impersonatedUser"]["username"] == "someone")
        .expect("the impersonated request names whom it acted as");
    assert_eq!(acting["user"]["username"], "wasmgate-admin");
    assert_eq!(acting["responseStatus"]["code"], 403);
}

/// Reads the audit log until `done` holds for its events (a writer thread appends them).
fn audit_events(log: &Path, done: impl Fn(&[serde_json::Value]) -> bool) -> Vec<serde_json::Value> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let events: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("each line is JSON"))
            .collect();
        if done(&events) || std::time::Instant::now() > deadline {
            return events;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// ISSUE-24.4: audit events carry the client's address (`sourceIPs`; `X-Forwarded-For`
/// only from a trusted proxy), a failure's `responseStatus.reason` and `message`, and the
/// authorizer's `authorization.k8s.io/decision` and `reason` annotations, so that a
/// refused impersonation reads apart from an RBAC refusal.
#[test]
fn audit_events_say_where_a_request_came_from_and_why_it_was_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = dir.path().join("audit.log");
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, TOKENS).expect("token file");
    let gw = gateway_builder!()
        .config(&format!(
            "audit-log-path: {}\ntoken-auth-file: {}\ntrusted-proxies: [\"127.0.0.0/8\"]\n",
            log.display(),
            tokens.display()
        ))
        .start();
    gw.kubectl_ok(&[
        "create",
        "clusterrolebinding",
        "bob-view",
        "--clusterrole=view",
        "--user=bob",
    ]);
    let alice = kubeconfig_with_token(&gw, "alice", "alice-token");
    let bob = kubeconfig_with_token(&gw, "bob", "bob-token");
    as_user(&gw, &bob, &["get", "configmaps", "-n", "default"]);
    assert!(
        !as_user(&gw, &alice, &["get", "configmaps", "-n", "default"])
            .status
            .success()
    );
    assert!(
        !as_user(&gw, &alice, &["get", "namespaces", "--as=bob"])
            .status
            .success()
    );
    let mut curl = gw.client().curl_command();
    curl.args([
        "-H",
        "X-Forwarded-For: 203.0.113.9, 198.51.100.7",
        "-o",
        "/dev/null",
    ])
    .arg(format!(
        "{}/api/v1/namespaces/default/secrets",
        gw.base_url()
    ));
    assert!(run(curl).status.success());
    let forwarded = |e: &serde_json::Value| e["objectRef"]["resource"] == "secrets";
    let events = audit_events(&log, |es| es.iter().any(forwarded));

    let by = |user: &str, resource: &str| {
        events
            .iter()
            .find(|e| e["user"]["username"] == user && e["objectRef"]["resource"] == resource)
            .unwrap_or_else(|| panic!("no event of {user} on {resource}"))
    };
    let allowed = by("bob", "configmaps");
    assert_eq!(allowed["sourceIPs"], serde_json::json!(["127.0.0.1"]));
    assert_eq!(
        allowed["annotations"]["authorization.k8s.io/decision"],
        "allow"
    );
    assert_eq!(
        allowed["annotations"]["authorization.k8s.io/reason"],
        "RBAC: allowed by ClusterRoleBinding \"bob-view\" of ClusterRole \"view\" to User \"bob\""
    );
    let forbidden = by("alice", "configmaps");
    assert_eq!(forbidden["responseStatus"]["code"], 403);
    assert_eq!(forbidden["responseStatus"]["reason"], "Forbidden");
    assert_eq!(
        forbidden["responseStatus"]["message"],
        "configmaps is forbidden: User \"alice\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\""
    );
    assert_eq!(
        forbidden["annotations"]["authorization.k8s.io/decision"],
        "forbid"
    );
    let impersonation = by("alice", "namespaces");
    assert_eq!(impersonation["responseStatus"]["code"], 403);
    assert_eq!(impersonation["responseStatus"]["reason"], "Forbidden");
    let message = impersonation["responseStatus"]["message"]
        .as_str()
        .unwrap_or("");
    assert!(message.contains("cannot impersonate"), "{message}");
    assert!(
        impersonation["annotations"]["authorization.k8s.io/decision"].is_null(),
        "{impersonation}"
    );
    let proxied = events
        .iter()
        .find(|e| forwarded(e))
        .expect("the proxied request");
    assert_eq!(
        proxied["sourceIPs"],
        serde_json::json!(["203.0.113.9", "198.51.100.7", "127.0.0.1"])
    );
    // The gateway's masters: allowed, with no RBAC reason (kube's privileged group).
    assert_eq!(
        proxied["annotations"]["authorization.k8s.io/decision"],
        "allow"
    );
    assert_eq!(proxied["annotations"]["authorization.k8s.io/reason"], "");
}

/// Every byte of every file under `dir` (the store, the PKI, ...), lossily as text.
fn raw_files(dir: &Path) -> String {
    let mut all = String::new();
    for entry in std::fs::read_dir(dir).expect("read the data directory") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            all.push_str(&raw_files(&path));
        } else if let Ok(bytes) = std::fs::read(&path) {
            all.push_str(&String::from_utf8_lossy(&bytes));
        }
    }
    all
}

/// Every value in the store of data directory `dir` as the store reads it without the
/// encryption configuration: decompressed (values are compressed at rest) but not
/// decrypted. The gateway must have stopped.
fn stored_values(dir: &Path) -> String {
    let engine = wasmgate_storage_embedded::EmbeddedEngine::open_path(&dir.join("store.redb"))
        .expect("open the store");
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    let items = rt.block_on(async {
        let store = wasmgate_storage::Store::open(std::sync::Arc::new(engine), Default::default())
            .await
            .expect("open the store");
        store
            .list("", wasmgate_storage::ReadAt::Latest, None, 0, false)
            .await
            .expect("a list")
            .items
    });
    let mut all = String::new();
    for v in items {
        all.push_str(&v.key);
        all.push_str(&String::from_utf8_lossy(&v.value));
    }
    all
}

/// `kubectl get secrets -A -o json | kubectl replace -f -`: kube's way of rewriting every
/// secret with the first provider.
fn rewrite_secrets(gw: &Gateway) {
    use std::io::Write as _;
    let list = gw.kubectl_ok(&["get", "secrets", "-A", "-o", "json"]);
    let mut replace = gw.kubectl_command(&["replace", "-f", "-"]);
    replace
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = replace.spawn().expect("kubectl replace");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(list.as_bytes())
        .expect("write the list");
    let out = child.wait_with_output().expect("kubectl replace");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Secrets encryption at rest (issue 12): with an `EncryptionConfiguration` naming
/// `aesgcm` for secrets, a secret's value is nowhere in the raw data directory (a
/// ConfigMap's is, so the search works); a secret written before encryption still reads
/// (through `identity`); key rotation as kube documents it (new key first, rewrite every
/// secret, drop the old key) leaves every secret readable with the new key alone; a
/// configuration that cannot read the stored secrets stops the gateway with the reason.
#[test]
fn encrypted_secrets_are_unreadable_at_rest_and_rotate() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let config = |name: &str, providers: &str| {
        let file = dir.path().join(name);
        std::fs::write(
            &file,
            format!(
                "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n{providers}"
            ),
        )
        .expect("encryption configuration");
        format!("encryption-provider-config: {}\n", file.display())
    };
    let key = |name: &str, secret: &str| {
        format!("  - aesgcm:\n      keys:\n      - name: {name}\n        secret: {secret}\n")
    };
    // 32 and 16 bytes, base64.
    let k1 = key("k1", "MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTI=");
    let k2 = key("k2", "YWJjZGVmZ2hpamtsbW5vcA==");
    let identity = "  - identity: {}\n";
    let start = |config: &str| {
        let b = gateway_builder!()
            .storage(wasmgate_e2e::Storage::Embedded)
            .data_dir(&data);
        if config.is_empty() {
            b
        } else {
            b.config(config)
        }
        .try_start()
    };
    let version = |gw: &Gateway, name: &str| {
        gw.kubectl_ok(&[
            "get",
            "secret",
            name,
            "-o",
            "jsonpath={.metadata.resourceVersion}",
        ])
    };
    let password = |gw: &Gateway, name: &str| {
        gw.kubectl_ok(&["get", "secret", name, "-o", "jsonpath={.data.password}"])
    };

    // Before encryption: one secret stored in clear.
    let mut gw = start("").expect("start");
    gw.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "old",
        "--from-literal=password=written-before-encryption",
    ]);
    gw.stop().expect("stop");

    let mut gw = start(&config("one.yaml", &(k1.clone() + identity))).expect("start");
    gw.kubectl_ok(&[
        "create",
        "configmap",
        "seen",
        "--from-literal=colour=teal-canary",
    ]);
    gw.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "hidden",
        "--from-literal=password=hunter2-canary",
    ]);
    let hidden_b64 = password(&gw, "hidden");
    assert!(!hidden_b64.is_empty());
    assert!(!password(&gw, "old").is_empty(), "the clear one reads");
    // While the gateway runs, the latest writes lie in the write-ahead log (`store.wal`).
    assert!(
        !raw_files(&data).contains("hunter2-canary"),
        "the secret's value is in the running gateway's data directory in clear"
    );
    gw.stop().expect("stop");
    // As the engine reads the store (values decompressed, not decrypted), and as the
    // bytes lie in the data directory.
    let stored = stored_values(&data);
    assert!(
        stored.contains("teal-canary"),
        "the search finds clear values"
    );
    assert!(stored.contains("k8s:enc:aesgcm:v1:k1:"));
    for (view, text) in [("stored", &stored), ("raw", &raw_files(&data))] {
        assert!(
            !text.contains("hunter2-canary") && !text.contains(&hidden_b64),
            "the secret's value is in the data directory in clear ({view})"
        );
    }

    // Rotation: k2 first, k1 still read; rewriting moves every secret to k2 (an
    // unchanged secret read with k1 is written again, so its resourceVersion moves).
    let gw = start(&config("two.yaml", &(k2.clone() + &k1 + identity))).expect("start");
    assert_eq!(password(&gw, "hidden"), hidden_b64);
    let (hidden_rv, old_rv) = (version(&gw, "hidden"), version(&gw, "old"));
    rewrite_secrets(&gw);
    let (hidden_rv2, old_rv2) = (version(&gw, "hidden"), version(&gw, "old"));
    assert_ne!(hidden_rv, hidden_rv2, "a stale secret is rewritten");
    assert_ne!(old_rv, old_rv2);
    rewrite_secrets(&gw);
    assert_eq!(
        version(&gw, "hidden"),
        hidden_rv2,
        "a current one is not: no change, no write"
    );
    drop(gw);

    // k1 and identity dropped: every secret reads with k2 alone.
    let gw = start(&config("three.yaml", &k2)).expect("start");
    assert_eq!(password(&gw, "hidden"), hidden_b64);
    assert!(!password(&gw, "old").is_empty());
    drop(gw);

    // A key the stored secrets were not written with: the gateway says so and stops.
    let k3 = key("k3", "MTIzNDU2Nzg5MDEyMzQ1Ng==");
    let err = start(&config("four.yaml", &k3)).expect_err("cannot read the secrets");
    assert_contains(
        &format!("{err:#}"),
        &["unable to transform key", "aesgcm key \"k2\""],
    );
}
