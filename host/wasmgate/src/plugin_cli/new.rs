//! `wasmgate plugin new`: a standalone plugin crate from the templates in `template/`.
//!
//! Templates are plain files with `{{var}}` placeholders and whole-line conditionals,
//! `{{#if hook}}` … `{{/if}}` (also `{{#if a|b}}`: any of them; `{{#if !a}}`: not), which
//! nest.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::{Failure, Hook, usage};

/// The SDK of the checkout this binary was built from.
const BUILT_WITH_SDK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../guest-sdk");

/// `wasmgate plugin new`.
#[derive(Debug, clap::Args)]
pub struct NewArgs {
    /// The plugin's name: the crate, the WasmPlugin and the label its example policy
    /// reads (lower case letters, digits and `-`; the module is NAME with `_` for `-`)
    name: String,
    /// The hooks to implement, each with a working example and its tests
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "validate",
        value_name = "HOOK,..."
    )]
    hooks: Vec<Hook>,
    /// The directory to create [default: ./NAME]
    #[arg(long, value_name = "PATH")]
    dir: Option<PathBuf>,
    /// The wasmgate-sdk to depend on: a directory (a checkout's guest-sdk) [default: the
    /// guest-sdk of the checkout this binary was built from]
    #[arg(long, value_name = "P", conflicts_with = "sdk_git")]
    sdk_path: Option<PathBuf>,
    /// The wasmgate-sdk to depend on: a git repository holding it
    #[arg(long, value_name = "URL")]
    sdk_git: Option<String>,
}

pub(crate) fn main(a: &NewArgs) -> Result<ExitCode, Failure> {
    check_name(&a.name)?;
    let mut hooks = a.hooks.clone();
    hooks.sort();
    hooks.dedup();
    let sdk = sdk_dependency(a)?;
    let dir = a.dir.clone().unwrap_or_else(|| PathBuf::from(&a.name));
    if dir.exists()
        && std::fs::read_dir(&dir)
            .map(|mut d| d.next().is_some())
            .unwrap_or(true)
    {
        return Err(usage(format_args!(
            "{} exists and is not empty",
            dir.display()
        )));
    }
    std::fs::create_dir_all(dir.join("src"))
        .and_then(|()| std::fs::create_dir_all(dir.join("testdata")))
        .map_err(|e| usage(format_args!("creating {}: {e}", dir.display())))?;
    let dir = dir
        .canonicalize()
        .map_err(|e| usage(format_args!("{}: {e}", dir.display())))?;
    let files = files(&a.name, &hooks, &sdk, &dir);
    for (rel, text) in &files {
        let p = dir.join(rel);
        std::fs::write(&p, text)
            .map_err(|e| usage(format_args!("writing {}: {e}", p.display())))?;
    }
    let lib = a.name.replace('-', "_");
    println!("created {} ({} files)", dir.display(), files.len());
    println!(
        "next: cd {} && cargo test && wasmgate plugin build && wasmgate plugin test {lib}.wasm testdata",
        dir.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// A name that is a crate name, a `WasmPlugin` name and a label key alike.
fn check_name(name: &str) -> Result<(), Failure> {
    let ok = (1..=63).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && !name.ends_with('-')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if ok {
        Ok(())
    } else {
        Err(usage(format_args!(
            "{name:?} is not a plugin name: up to 63 lower case letters, digits and `-`, \
             starting with a letter and not ending with `-`"
        )))
    }
}

/// The `wasmgate-sdk = …` value of the new Cargo.toml.
fn sdk_dependency(a: &NewArgs) -> Result<String, Failure> {
    if let Some(url) = &a.sdk_git {
        return Ok(format!("{{ git = {} }}", toml_string(url)));
    }
    let (path, given) = match &a.sdk_path {
        Some(p) => (p.clone(), true),
        None => (PathBuf::from(BUILT_WITH_SDK), false),
    };
    let is_sdk = std::fs::read_to_string(path.join("Cargo.toml"))
        .is_ok_and(|t| t.contains("name = \"wasmgate-sdk\""));
    if !is_sdk {
        return Err(usage(if given {
            format!(
                "{} is not the wasmgate-sdk (no Cargo.toml of it there): --sdk-path names \
                 the guest-sdk directory of a Wasmgate checkout",
                path.display()
            )
        } else {
            format!(
                "the wasmgate-sdk of the checkout this binary was built from is not at {} \
                 any more: pass --sdk-path DIR (the guest-sdk directory of a Wasmgate \
                 checkout) or --sdk-git URL (a git repository of Wasmgate)",
                path.display()
            )
        }));
    }
    let path = path
        .canonicalize()
        .map_err(|e| usage(format_args!("{}: {e}", path.display())))?;
    Ok(format!(
        "{{ path = {} }}",
        toml_string(&path.to_string_lossy())
    ))
}

/// A TOML basic string.
fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Every file of the new crate: path relative to its directory, contents.
fn files(name: &str, hooks: &[Hook], sdk: &str, dir: &Path) -> Vec<(String, String)> {
    let lib = name.replace('-', "_");
    let module_path = dir.join(format!("{lib}.wasm"));
    let hook_names: Vec<&str> = hooks.iter().map(|h| h.name()).collect();
    let vars: Vec<(&str, String)> = vec![
        ("name", name.to_owned()),
        ("lib", lib.clone()),
        ("type", type_name(name)),
        ("hooks", hook_names.join(", ")),
        ("sdk", sdk.to_owned()),
        ("imports", imports(hooks)),
        ("summary", summary(name, hooks)),
        (
            "module_path",
            serde_json::to_string(&module_path.to_string_lossy()).unwrap_or_default(),
        ),
        ("first_case", first_case(hooks).to_owned()),
    ];
    let r = |t: &str| render(t, &vars, hooks);
    let mut out = vec![
        (
            "Cargo.toml".into(),
            r(include_str!("template/Cargo.toml.in")),
        ),
        ("src/lib.rs".into(), r(include_str!("template/lib.rs.in"))),
        (
            format!("{name}.yaml"),
            r(include_str!("template/manifest.yaml.in")),
        ),
        ("README.md".into(), r(include_str!("template/README.md.in"))),
        (
            ".gitignore".into(),
            r(include_str!("template/gitignore.in")),
        ),
    ];
    let head = include_str!("template/testdata/admission-head.in");
    let admission = |uid: &str, label: &str, what: &str, case: &str| {
        let mut v = vars.clone();
        v.push(("uid", uid.to_owned()));
        v.push(("label", label.to_owned()));
        format!(
            "# {what}, as the gateway sends it to the admission hooks:\n# `wasmgate plugin run \
             {lib}.wasm --request testdata/{case}.request.yaml`\n{}",
            render(head, &v, hooks)
        )
    };
    let has = |h: Hook| hooks.contains(&h);
    if has(Hook::Validate) {
        out.push((
            "testdata/deny.request.yaml".into(),
            admission(
                "000000000001",
                "forbidden",
                &format!("A create of a ConfigMap labelled {name}=forbidden"),
                "deny",
            ),
        ));
        out.push((
            "testdata/deny.expected.yaml".into(),
            r(include_str!("template/testdata/deny.expected.yaml.in")),
        ));
        out.push((
            "testdata/allow.request.yaml".into(),
            admission(
                "000000000002",
                "ok",
                &format!("A create of a ConfigMap labelled {name}=ok"),
                "allow",
            ),
        ));
        out.push((
            "testdata/allow.expected.yaml".into(),
            r(include_str!("template/testdata/allow.expected.yaml.in")),
        ));
    }
    if has(Hook::Mutate) {
        out.push((
            "testdata/greet.request.yaml".into(),
            admission(
                "000000000003",
                "hello",
                &format!("A create of a ConfigMap labelled {name}=hello"),
                "greet",
            ),
        ));
        out.push((
            "testdata/greet.expected.yaml".into(),
            r(include_str!("template/testdata/greet.expected.yaml.in")),
        ));
    }
    if has(Hook::Convert) {
        out.push((
            "testdata/convert.request.yaml".into(),
            include_str!("template/testdata/convert.request.yaml").into(),
        ));
        out.push((
            "testdata/convert.expected.yaml".into(),
            include_str!("template/testdata/convert.expected.yaml").into(),
        ));
    }
    if has(Hook::Print) {
        out.push((
            "testdata/print.request.yaml".into(),
            r(include_str!("template/testdata/print.request.yaml.in")),
        ));
        out.push((
            "testdata/print.expected.yaml".into(),
            include_str!("template/testdata/print.expected.yaml").into(),
        ));
    }
    out
}

/// The case the README's `plugin run` line shows.
fn first_case(hooks: &[Hook]) -> &'static str {
    match hooks.first() {
        Some(Hook::Validate) | None => "deny",
        Some(Hook::Mutate) if hooks.contains(&Hook::Validate) => "deny",
        Some(Hook::Mutate) => "greet",
        Some(Hook::Convert) => "convert",
        Some(Hook::Print) => "print",
    }
}

/// `my-policy` → `MyPolicy`.
fn type_name(name: &str) -> String {
    name.split('-')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut c = p.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// What the README says the plugin does.
fn summary(name: &str, hooks: &[Hook]) -> String {
    let parts: Vec<String> = hooks
        .iter()
        .map(|h| match h {
            Hook::Mutate => format!("annotates ConfigMaps labelled `{name}` (mutate)"),
            Hook::Validate => format!("denies ConfigMaps labelled `{name}=forbidden` (validate)"),
            Hook::Convert => {
                "converts a custom resource between v1alpha1 and v1 (convert)".to_owned()
            }
            Hook::Print => "gives ConfigMap tables their columns (print)".to_owned(),
        })
        .collect();
    match parts.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// The `use wasmgate_sdk::{…};` the chosen hooks need, as rustfmt lays it out.
fn imports(hooks: &[Hook]) -> String {
    let mut names = vec!["Admission", "Conversion", "Printer", "export_plugin"];
    for h in hooks {
        names.extend_from_slice(match h {
            Hook::Mutate => &["Operation", "Request", "Response", "json"][..],
            Hook::Validate => &["Cause", "Request", "Response"][..],
            Hook::Convert => &["Denial", "Value", "json"][..],
            Hook::Print => &["Column", "Denial", "Value", "json"][..],
        });
    }
    // rustfmt's order: types (upper case) before functions and macros.
    names.sort_by_key(|n| (n.starts_with(|c: char| c.is_ascii_lowercase()), *n));
    names.dedup();
    let one_line = format!("use wasmgate_sdk::{{{}}};", names.join(", "));
    if one_line.len() <= 100 {
        return one_line;
    }
    let mut out = String::from("use wasmgate_sdk::{\n");
    let mut line = String::from("   ");
    for n in names {
        if line.len() + 1 + n.len() + 1 > 100 {
            out.push_str(line.trim_end());
            out.push('\n');
            line = String::from("   ");
        }
        line.push(' ');
        line.push_str(n);
        line.push(',');
    }
    out.push_str(&line);
    out.push_str("\n};");
    out
}

/// Fills `{{var}}`s and keeps the lines of the `{{#if …}}` blocks whose condition holds.
fn render(template: &str, vars: &[(&str, String)], hooks: &[Hook]) -> String {
    let holds = |cond: &str| {
        cond.split('|').any(|c| {
            let (neg, name) = match c.trim().strip_prefix('!') {
                Some(n) => (true, n),
                None => (false, c.trim()),
            };
            hooks.iter().any(|h| h.name() == name) != neg
        })
    };
    let mut keep = vec![true];
    let mut out = String::new();
    for line in template.lines() {
        let t = line.trim();
        if let Some(cond) = t.strip_prefix("{{#if ").and_then(|c| c.strip_suffix("}}")) {
            let outer = keep.last().copied().unwrap_or(true);
            keep.push(outer && holds(cond));
            continue;
        }
        if t == "{{/if}}" {
            keep.pop();
            continue;
        }
        if !keep.last().copied().unwrap_or(true) {
            continue;
        }
        let mut l = line.to_owned();
        for (k, v) in vars {
            l = l.replace(&format!("{{{{{k}}}}}"), v);
        }
        out.push_str(&l);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Hook; 4] = [Hook::Mutate, Hook::Validate, Hook::Convert, Hook::Print];

    /// Every combination of hooks.
    fn combinations() -> Vec<Vec<Hook>> {
        (1u8..16)
            .map(|bits| {
                ALL.iter()
                    .enumerate()
                    .filter(|(i, _)| bits & (1 << i) != 0)
                    .map(|(_, h)| *h)
                    .collect()
            })
            .collect()
    }

    #[test]
    fn every_placeholder_is_filled_for_every_combination_of_hooks() {
        for hooks in combinations() {
            let files = files("my-policy", &hooks, "{ path = \"/sdk\" }", Path::new("/p"));
            for (path, text) in &files {
                assert!(!text.contains("{{"), "{hooks:?} {path}:\n{text}");
            }
            let lib = &files.iter().find(|(p, _)| p == "src/lib.rs").unwrap().1;
            let names: Vec<&str> = hooks.iter().map(|h| h.name()).collect();
            assert!(
                lib.contains(&format!("hooks: [{}]", names.join(", "))),
                "{lib}"
            );
            assert!(lib.contains("pub struct MyPolicy;"));
            for h in ALL {
                let implemented = format!("fn {}(", h.name());
                let implemented = match h {
                    Hook::Print => "fn rows(".to_owned(),
                    _ => implemented,
                };
                assert_eq!(
                    lib.contains(&implemented),
                    hooks.contains(&h),
                    "{hooks:?}: {lib}"
                );
            }
            for trait_ in ["Admission", "Conversion", "Printer"] {
                assert_eq!(
                    lib.matches(&format!("impl {trait_} for MyPolicy")).count(),
                    1,
                    "{hooks:?}: {lib}"
                );
            }
            let manifest = &files.iter().find(|(p, _)| p == "my-policy.yaml").unwrap().1;
            assert!(
                manifest.contains("path: \"/p/my_policy.wasm\""),
                "{manifest}"
            );
            assert!(manifest.contains(&format!("hooks: [{}]", names.join(", "))));
            let cases = files
                .iter()
                .filter(|(p, _)| p.ends_with(".request.yaml"))
                .count();
            let expected = files
                .iter()
                .filter(|(p, _)| p.ends_with(".expected.yaml"))
                .count();
            assert!(cases >= 1 && cases == expected, "{hooks:?}");
        }
    }

    #[test]
    fn names_are_crate_names_and_label_keys() {
        for ok in ["my-policy", "p", "a1-b2"] {
            assert!(check_name(ok).is_ok(), "{ok}");
        }
        for bad in ["", "My", "1a", "a_b", "a-", "a.b", &"a".repeat(64)] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
        assert_eq!(type_name("my-policy"), "MyPolicy");
        assert_eq!(type_name("p2"), "P2");
    }

    #[test]
    fn imports_are_sorted_and_wrapped_as_rustfmt_does() {
        assert_eq!(
            imports(&[Hook::Validate]),
            "use wasmgate_sdk::{Admission, Cause, Conversion, Printer, Request, Response, export_plugin};"
        );
        assert_eq!(
            imports(&ALL),
            "use wasmgate_sdk::{\n    Admission, Cause, Column, Conversion, Denial, Operation, Printer, Request, Response, Value,\n    export_plugin, json,\n};"
        );
    }

    #[test]
    fn conditionals_nest_and_negate() {
        let t = "a\n{{#if mutate|print}}\nb {{x}}\n{{#if !validate}}\nc\n{{/if}}\n{{/if}}\nd\n";
        let vars = [("x", "X".to_owned())];
        assert_eq!(render(t, &vars, &[Hook::Mutate]), "a\nb X\nc\nd\n");
        assert_eq!(
            render(t, &vars, &[Hook::Mutate, Hook::Validate]),
            "a\nb X\nd\n"
        );
        assert_eq!(render(t, &vars, &[Hook::Validate]), "a\nd\n");
    }

    #[test]
    fn the_sdk_is_found_or_the_error_says_what_to_pass() {
        let args = |path: Option<&str>, git: Option<&str>| NewArgs {
            name: "p".into(),
            hooks: vec![Hook::Validate],
            dir: None,
            sdk_path: path.map(PathBuf::from),
            sdk_git: git.map(str::to_owned),
        };
        // This test runs in the checkout: the SDK the binary was built with is there.
        let dep = sdk_dependency(&args(None, None)).unwrap();
        assert!(
            dep.starts_with("{ path = \"/") && dep.ends_with("guest-sdk\" }"),
            "{dep}"
        );
        assert_eq!(
            sdk_dependency(&args(None, Some("https://example.com/wasmgate.git"))).unwrap(),
            "{ git = \"https://example.com/wasmgate.git\" }"
        );
        let e = sdk_dependency(&args(Some("/nonexistent"), None)).unwrap_err();
        assert!(e.to_string().contains("--sdk-path names"), "{e}");
    }
}
