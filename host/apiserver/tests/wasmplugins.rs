//! `WasmPlugin` objects (issue 25): their spec validated at admission as kube validates a
//! webhook configuration (item 7), `--plugin-dir` manifests decoded strictly (item 7), and
//! module files reloaded when their content changes, whatever their size and times say
//! (item 6). The modules are the components `plugins/build.sh` built (`plugins/dist/`).
#![allow(clippy::unwrap_used, reason = "test code")]

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use http::Method;
use serde_json::{Value, json};
use wasmgate_apiserver::Options;

mod common;
use common::Server;

const PLUGINS: &str = "/apis/wasmgate.dev/v1alpha1/wasmplugins";

/// A component built by `plugins/build.sh`.
fn dist(name: &str) -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../plugins/dist")
        .join(format!("{name}.wasm"));
    assert!(
        p.is_file(),
        "{} is missing: build the plugins first (bash plugins/build.sh)",
        p.display()
    );
    p
}

/// A component with a custom section `wasmgate-test-build` holding `payload` appended:
/// the same plugin, another digest; payloads of one length give files of one size.
fn with_payload(component: &[u8], payload: &str) -> Vec<u8> {
    fn leb(mut v: usize, out: &mut Vec<u8>) {
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(b);
                return;
            }
            out.push(b | 0x80);
        }
    }
    let name = b"wasmgate-test-build";
    let mut section = Vec::new();
    leb(name.len(), &mut section);
    section.extend_from_slice(name);
    section.extend_from_slice(payload.as_bytes());
    let mut out = component.to_vec();
    out.push(0);
    leb(section.len(), &mut out);
    out.extend_from_slice(&section);
    out
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn plugin(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "wasmgate.dev/v1alpha1", "kind": "WasmPlugin",
           "metadata": {"name": name}, "spec": spec})
}

/// Polls the plugin's status until `done` holds; panics after 15 s.
async fn wait_status(s: &Server, name: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let r = s.get(&format!("{PLUGINS}/{name}")).await;
        if r.status == 200 && done(&r.json()["status"]) {
            return r.json()["status"].clone();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "WasmPlugin {name}: no {what} within 15 s: {}",
            r.text()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn set_mtime(path: &Path, t: SystemTime) {
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(t)
        .unwrap();
}

/// Issue 25 item 7: a spec the controller could never serve is refused at admission with
/// `422 Invalid` and one cause per field, as kube refuses a webhook configuration (an
/// invalid selector operator was a `201`, then `Ready=False InvalidSpec`); on create, on
/// update and on patch. A field the type does not have is kube's strict decoding error.
#[tokio::test]
async fn a_wasmplugin_spec_is_validated_at_admission() {
    let s = Server::new().await;
    let bad = plugin(
        "bad",
        json!({"module": {"path": "/plugins/bad.wasm"}, "groups": ["", "*"],
               "resources": ["*/*", "pods"], "operations": ["*", "CREATE"],
               "objectSelector": {"matchExpressions": [{"key": "app", "operator": "Equals", "values": ["x"]}]},
               "namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "Exists", "values": ["a"]}]},
               "hooks": ["validate", "validate"]}),
    );
    let r = s.req(Method::POST, PLUGINS, bad).await.expect(422);
    let st = r.json();
    assert_eq!(st["reason"], "Invalid");
    assert_eq!(st["details"]["kind"], "WasmPlugin");
    assert_eq!(st["details"]["group"], "wasmgate.dev");
    assert!(
        st["message"]
            .as_str()
            .unwrap()
            .starts_with("WasmPlugin.wasmgate.dev \"bad\" is invalid: "),
        "{st}"
    );
    let causes: Vec<(String, String)> = st["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["field"].as_str().unwrap().to_owned(),
                c["reason"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    for (field, reason) in [
        ("spec.groups", "FieldValueInvalid"),
        ("spec.resources", "FieldValueInvalid"),
        ("spec.operations", "FieldValueInvalid"),
        (
            "spec.objectSelector.matchExpressions[0].operator",
            "FieldValueInvalid",
        ),
        (
            "spec.namespaceSelector.matchExpressions[0].values",
            "FieldValueForbidden",
        ),
        ("spec.hooks[1]", "FieldValueDuplicate"),
    ] {
        assert!(
            causes.contains(&(field.to_owned(), reason.to_owned())),
            "no {field} {reason} in {causes:?}"
        );
    }
    s.get(&format!("{PLUGINS}/bad")).await.expect(404);

    // A relative module path is only for the plugin directory.
    let r = s
        .req(
            Method::POST,
            PLUGINS,
            plugin(
                "rel",
                json!({"module": {"path": "rel.wasm"}, "groups": [""]}),
            ),
        )
        .await
        .expect(422);
    assert_eq!(
        r.json()["details"]["causes"][0]["field"],
        "spec.module.path"
    );

    // A good one is created; making it bad, by update or patch, is refused.
    let good = s
        .req(
            Method::POST,
            PLUGINS,
            plugin(
                "good",
                json!({"module": {"path": "/nowhere/good.wasm"}, "groups": [""],
                       "objectSelector": {"matchLabels": {"app": "x"}}}),
            ),
        )
        .await
        .expect(201)
        .json();
    let mut update = good.clone();
    update["spec"]["objectSelector"] =
        json!({"matchExpressions": [{"key": "app", "operator": "In"}]});
    let r = s
        .req(Method::PUT, &format!("{PLUGINS}/good"), update)
        .await
        .expect(422);
    assert_eq!(
        r.json()["details"]["causes"][0]["field"],
        "spec.objectSelector.matchExpressions[0].values"
    );
    let r = s
        .patch(
            &format!("{PLUGINS}/good"),
            "application/merge-patch+json",
            r#"{"spec": {"memoryLimitMiB": 4096, "failurePolicy": "Sometimes"}}"#,
        )
        .await
        .expect(422);
    let fields: Vec<String> = r.json()["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["field"].as_str().unwrap().to_owned())
        .collect();
    for f in ["spec.memoryLimitMiB", "spec.failurePolicy"] {
        assert!(fields.iter().any(|x| x == f), "{fields:?}");
    }

    // Strict decoding, as `kubectl apply` asks for it: unknown fields are a 400.
    for (field, spec) in [
        (
            "spec.hoks",
            json!({"module": {"path": "/p.wasm"}, "groups": [""], "hoks": ["validate"]}),
        ),
        (
            "spec.objectSelector.matchLabel",
            json!({"module": {"path": "/p.wasm"}, "groups": [""], "objectSelector": {"matchLabel": {"a": "b"}}}),
        ),
    ] {
        let r = s
            .req(
                Method::POST,
                &format!("{PLUGINS}?fieldValidation=Strict"),
                plugin("typo", spec),
            )
            .await
            .expect(400);
        assert_eq!(
            r.json()["message"],
            format!("strict decoding error: unknown field {field:?}")
        );
    }
}

/// Issue 25 item 7: `--plugin-dir` manifests are applied with strict decoding: a typo
/// (`hoks: [validate]`) refuses the manifest instead of loading the plugin with every
/// hook, on create and on update (the object stays as it was); the other manifests are
/// applied; fixing the typo applies it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plugin_dir_manifests_are_decoded_strictly() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(dist("hello_admission"), dir.path().join("hello.wasm")).unwrap();
    let manifest = |name: &str, extra: &str| {
        format!(
            "apiVersion: wasmgate.dev/v1alpha1\nkind: WasmPlugin\nmetadata:\n  name: {name}\nspec:\n  module: {{path: hello.wasm}}\n  groups: ['']\n  resources: [configmaps]\n{extra}"
        )
    };
    std::fs::write(dir.path().join("good.yaml"), manifest("good", "")).unwrap();
    std::fs::write(
        dir.path().join("typo.yaml"),
        manifest("typo", "  hoks: [validate]\n"),
    )
    .unwrap();
    std::fs::write(dir.path().join("broken.yaml"), "kind: [WasmPlugin\n").unwrap();
    let s = Server::with(Options {
        plugin_dir: Some(dir.path().to_owned()),
        ..Options::default()
    })
    .await;
    wait_status(&s, "good", "Ready", |st| st["digest"].is_string()).await;
    // Scanned a few times since: the typo never became an object.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    s.get(&format!("{PLUGINS}/typo")).await.expect(404);

    // A typo in an applied manifest: refused, the object keeps its spec.
    std::fs::write(
        dir.path().join("good.yaml"),
        manifest("good", "  operations: [CREATE]\n  hoks: [validate]\n"),
    )
    .unwrap();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let good = s.get(&format!("{PLUGINS}/good")).await.expect(200).json();
    assert!(good["spec"].get("operations").is_none(), "{good}");

    // Fixed: applied, the status kept.
    std::fs::write(
        dir.path().join("good.yaml"),
        manifest("good", "  operations: [CREATE]\n"),
    )
    .unwrap();
    let st = wait_status(&s, "good", "update", |st| {
        st["conditions"][0]["observedGeneration"] == 2
    })
    .await;
    assert!(st["digest"].is_string(), "{st}");
    let good = s.get(&format!("{PLUGINS}/good")).await.expect(200).json();
    assert_eq!(good["spec"]["operations"], json!(["CREATE"]));
    std::fs::write(
        dir.path().join("typo.yaml"),
        manifest("typo", "  hooks: [validate]\n"),
    )
    .unwrap();
    let st = wait_status(&s, "typo", "Ready", |st| st["hooks"].is_string()).await;
    assert_eq!(st["hooks"], "validate");
}

/// Issue 25 item 6: a module file replaced by another content of the same size and
/// modification time (a reproducible build, `cp -p`) is reloaded, written in place or
/// behind a swapped symlink (a Nix store path); a file touched, or rewritten with the
/// same bytes, is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn module_files_are_reloaded_by_content() {
    let s = Server::new().await;
    let dir = tempfile::tempdir().unwrap();
    let hello = std::fs::read(dist("hello_admission")).unwrap();
    let (a, b, c) = (
        with_payload(&hello, "a"),
        with_payload(&hello, "b"),
        with_payload(&hello, "c"),
    );
    assert_eq!(a.len(), b.len());
    let module = dir.path().join("m.wasm");
    std::fs::write(&module, &a).unwrap();
    let mtime = std::fs::metadata(&module).unwrap().modified().unwrap();
    s.req(
        Method::POST,
        PLUGINS,
        plugin(
            "m",
            json!({"module": {"path": module}, "groups": [""], "resources": ["configmaps"]}),
        ),
    )
    .await
    .expect(201);
    let st = wait_status(&s, "m", "load", |st| st["digest"] == sha256(&a)).await;
    let loaded_at = st["loadedAt"].clone();

    // Touched, then rewritten with the same bytes: nothing is loaded again.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    set_mtime(&module, SystemTime::now());
    std::fs::write(&module, &a).unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let st = s.get(&format!("{PLUGINS}/m")).await.expect(200).json()["status"].clone();
    assert_eq!(st["digest"], sha256(&a));
    assert_eq!(st["loadedAt"], loaded_at, "reloaded without a new content");

    // Another content, same size and modification time, renamed over the file (`cp -p`
    // to a temporary file, then `mv`): reloaded.
    let tmp = dir.path().join("m.tmp");
    std::fs::write(&tmp, &b).unwrap();
    set_mtime(
        &tmp,
        std::fs::metadata(&module).unwrap().modified().unwrap(),
    );
    std::fs::rename(&tmp, &module).unwrap();
    let st = wait_status(&s, "m", "reload", |st| st["digest"] == sha256(&b)).await;
    assert_eq!(st["previousDigests"][0], sha256(&a));

    // Written in place (same inode), the modification time put back: reloaded.
    let before = std::fs::metadata(&module).unwrap().modified().unwrap();
    std::fs::write(&module, &c).unwrap();
    set_mtime(&module, before);
    wait_status(&s, "m", "reload in place", |st| st["digest"] == sha256(&c)).await;

    // A symlink swapped to another store path holding a file of the same size and time.
    let link = dir.path().join("link.wasm");
    let (v1, v2) = (dir.path().join("store-1"), dir.path().join("store-2"));
    for (d, bytes) in [(&v1, &b), (&v2, &a)] {
        std::fs::create_dir(d).unwrap();
        std::fs::write(d.join("m.wasm"), bytes).unwrap();
        set_mtime(&d.join("m.wasm"), mtime);
    }
    std::os::unix::fs::symlink(v1.join("m.wasm"), &link).unwrap();
    s.patch(
        &format!("{PLUGINS}/m"),
        "application/merge-patch+json",
        &json!({"spec": {"module": {"path": link}}}).to_string(),
    )
    .await
    .expect(200);
    wait_status(&s, "m", "load of the link", |st| {
        st["digest"] == sha256(&b) && st["conditions"][0]["observedGeneration"].as_i64() == Some(2)
    })
    .await;
    let tmp = dir.path().join("link.tmp");
    std::os::unix::fs::symlink(v2.join("m.wasm"), &tmp).unwrap();
    std::fs::rename(&tmp, &link).unwrap();
    wait_status(&s, "m", "reload through the link", |st| {
        st["digest"] == sha256(&a)
    })
    .await;
}
