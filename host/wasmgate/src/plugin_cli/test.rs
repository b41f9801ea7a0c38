//! `wasmgate plugin test`: a directory of request / expected-answer pairs replayed
//! through a module, for the CI of plugin repositories.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use base64::Engine as _;
use serde_json::Value;

use super::review;
use super::run::{Engine, execute, millis};
use super::{Failure, LoadArgs, usage};

/// `wasmgate plugin test`.
#[derive(Debug, clap::Args)]
pub struct TestArgs {
    /// The component (.wasm)
    module: PathBuf,
    /// The cases: NAME.request.{yaml,yml,json} (what `plugin run --request` takes; the
    /// hooks are chosen as it chooses them without --hook) and NAME.expected.{yaml,yml,json}
    /// (the fields of the answer that must match: objects by key, lists item by item with
    /// the same length; a `response.patch` given as a list is compared with the decoded
    /// patch)
    dir: PathBuf,
    #[command(flatten)]
    load: LoadArgs,
}

const EXTENSIONS: [&str; 3] = ["yaml", "yml", "json"];

/// One case: its name and files.
struct Case {
    name: String,
    request: PathBuf,
    expected: Option<PathBuf>,
}

fn cases(dir: &Path) -> Result<Vec<Case>, Failure> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| usage(format_args!("reading {}: {e}", dir.display())))?;
    let mut out = Vec::new();
    for e in entries.flatten() {
        let file = e.file_name().to_string_lossy().into_owned();
        let Some(name) = EXTENSIONS
            .iter()
            .find_map(|x| file.strip_suffix(&format!(".request.{x}")))
        else {
            continue;
        };
        let expected = EXTENSIONS
            .iter()
            .map(|x| dir.join(format!("{name}.expected.{x}")))
            .find(|p| p.is_file());
        out.push(Case {
            name: name.to_owned(),
            request: e.path(),
            expected,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    if out.is_empty() {
        return Err(usage(format_args!(
            "{} holds no NAME.request.yaml (or .yml, .json)",
            dir.display()
        )));
    }
    Ok(out)
}

pub(crate) fn main(a: &TestArgs) -> Result<ExitCode, Failure> {
    let cases = cases(&a.dir)?;
    let engine = Engine::load(&a.module, &a.load)?;
    let width = cases.iter().map(|c| c.name.len()).max().unwrap_or(0);
    let mut failed = 0;
    for case in &cases {
        let started = Instant::now();
        let r = run_case(&engine, case);
        let took = millis(started.elapsed());
        match r {
            Ok(()) => println!("ok    {:width$}  {took}", case.name),
            Err(why) => {
                failed += 1;
                println!("FAIL  {:width$}  {took}: {why}", case.name);
            }
        }
    }
    println!(
        "{} cases: {} passed, {failed} failed",
        cases.len(),
        cases.len() - failed
    );
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn run_case(engine: &Engine, case: &Case) -> Result<(), String> {
    let read = |p: &Path| std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()));
    let expected_path = case
        .expected
        .as_ref()
        .ok_or_else(|| format!("no {}.expected.yaml (or .yml, .json)", case.name))?;
    let expected =
        parse(&read(expected_path)?).map_err(|e| format!("{}: {e}", expected_path.display()))?;
    let req = review::decode(&read(&case.request)?)
        .map_err(|e| format!("{}: {e}", case.request.display()))?;
    let answer = engine
        .block_on(execute(&engine.plugin, req, None))
        .map_err(|e| e.to_string())?;
    subset(&expected, &answer.review, "")
}

/// One YAML or JSON document.
fn parse(text: &str) -> Result<Value, String> {
    if text.trim_start().starts_with('{') {
        serde_json::from_str(text).map_err(|e| e.to_string())
    } else {
        serde_saphyr::from_str(text).map_err(|e| e.to_string())
    }
}

/// Whether `expected` is a subset of `actual`: every key of an expected object is in the
/// actual one with a matching value, lists match item by item (same length), and other
/// values are equal (numbers by value: 403 matches 403.0). The error names the first
/// difference by its path.
pub(crate) fn subset(expected: &Value, actual: &Value, path: &str) -> Result<(), String> {
    let at = |p: &str| {
        if p.is_empty() {
            "the answer".to_owned()
        } else {
            p.to_owned()
        }
    };
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            for (k, ev) in e {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                let Some(av) = a.get(k) else {
                    return Err(format!("{p}: expected {ev}, but it is missing"));
                };
                // A patch as a list: compared with the base64 patch, decoded.
                if p == "response.patch"
                    && ev.is_array()
                    && let Some(b64) = av.as_str()
                {
                    let decoded = base64::engine::general_purpose::STANDARD
                        .decode(b64)
                        .ok()
                        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                        .ok_or_else(|| format!("{p}: not base64 of a JSON patch"))?;
                    subset(ev, &decoded, &p)?;
                    continue;
                }
                subset(ev, av, &p)?;
            }
            Ok(())
        }
        (Value::Array(e), Value::Array(a)) => {
            if e.len() != a.len() {
                return Err(format!(
                    "{}: expected {} items, got {}: {actual}",
                    at(path),
                    e.len(),
                    a.len()
                ));
            }
            for (i, (ev, av)) in e.iter().zip(a).enumerate() {
                subset(ev, av, &format!("{path}[{i}]"))?;
            }
            Ok(())
        }
        (Value::Number(e), Value::Number(a)) if e.as_f64() == a.as_f64() => Ok(()),
        (e, a) if e == a => Ok(()),
        (e, a) => Err(format!("{}: expected {e}, got {a}", at(path))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn expected_fields_are_a_subset_of_the_answer() {
        let actual = json!({"response": {"uid": "u", "allowed": false, "status": {"code": 403, "message": "no"}}, "kind": "AdmissionReview"});
        assert_eq!(
            subset(
                &json!({"response": {"allowed": false, "status": {"code": 403.0}}}),
                &actual,
                ""
            ),
            Ok(())
        );
        assert_eq!(
            subset(&json!({"response": {"allowed": true}}), &actual, ""),
            Err("response.allowed: expected true, got false".into())
        );
        assert_eq!(
            subset(&json!({"response": {"warnings": []}}), &actual, ""),
            Err("response.warnings: expected [], but it is missing".into())
        );
        let list = json!({"rows": [{"cells": [1, 2]}, {"cells": [3]}]});
        assert!(subset(&json!({"rows": [{}, {"cells": [3]}]}), &list, "").is_ok());
        assert_eq!(
            subset(&json!({"rows": [{}]}), &list, ""),
            Err(format!("rows: expected 1 items, got 2: {}", list["rows"]))
        );
        assert_eq!(
            subset(&json!({"rows": [{}, {"cells": [4]}]}), &list, ""),
            Err("rows[1].cells[0]: expected 4, got 3".into())
        );
    }

    #[test]
    fn a_patch_given_as_a_list_is_compared_decoded() {
        let ops = json!([{"op": "add", "path": "/a", "value": 1}]);
        let b64 = base64::engine::general_purpose::STANDARD.encode(ops.to_string());
        let actual = json!({"response": {"patch": b64}});
        assert!(subset(&json!({"response": {"patch": ops}}), &actual, "").is_ok());
        assert!(subset(&json!({"response": {"patch": [{"value": 2}]}}), &actual, "").is_err());
        assert!(subset(&json!({"response": {"patch": b64}}), &actual, "").is_ok());
    }

    #[test]
    fn cases_pair_requests_with_expected_answers() {
        let dir = tempfile::tempdir().unwrap();
        for f in [
            "b.request.yaml",
            "b.expected.json",
            "a.request.json",
            "c.expected.yaml",
            "notes.md",
        ] {
            std::fs::write(dir.path().join(f), "{}").unwrap();
        }
        let cs = cases(dir.path()).unwrap();
        let names: Vec<_> = cs
            .iter()
            .map(|c| (c.name.as_str(), c.expected.is_some()))
            .collect();
        assert_eq!(names, [("a", false), ("b", true)]);
        let empty = tempfile::tempdir().unwrap();
        assert!(matches!(cases(empty.path()), Err(Failure::Usage(_))));
    }
}
