//! Compiling one expression: parse (cel-rust, macros expanded), type-check, cel-go's literal
//! validators (regex, duration and timestamp literals), cost estimate. Errors are displayed
//! as cel-go's `Issues.String()`: `ERROR: <input>:1:6: message`, the source line and a caret.

use std::collections::HashMap;
use std::sync::Arc;

use cel::common::ast::{Expr, IdedExpr, LiteralValue, SourceInfo};

use crate::checker::{self, Checked};
use crate::decl::Decl;
use crate::eval::Program;
use crate::types::Ty;
use crate::{cost, timeutil};
use wasmgate_apimachinery::goregex;

/// cel-go's default `ExpressionSizeCodePointLimit`.
const MAX_EXPRESSION_CODE_POINTS: usize = 100_000;
/// cel-go reports at most this many errors.
const MAX_ERRORS: usize = 100;
/// Parser nesting limit (cel-go's default `maxRecursionDepth`).
pub(crate) const MAX_PARSE_DEPTH: u16 = 250;

fn recursion_error() -> String {
    format!("ERROR: <input>:-1:0: expression recursion limit exceeded: {MAX_PARSE_DEPTH}")
}

/// A compiled expression with its result type and worst-case cost.
pub(crate) struct Compiled {
    pub(crate) program: Program,
    pub(crate) output: Ty,
    pub(crate) cost: u64,
    pub(crate) uses_old_self: bool,
}

/// One located error.
struct Issue {
    /// 1-based line, 0-based column (in characters); line -1 when unknown.
    line: i64,
    col: i64,
    msg: String,
}

/// Why an expression did not compile.
#[derive(Debug)]
pub(crate) enum CompileError {
    /// Parse and type errors: the text after `compilation failed: `.
    Compilation(String),
    /// Program construction errors (a literal pattern of `find`/`findAll`): the text after
    /// `program instantiation failed: `.
    Instantiation(String),
}

impl std::fmt::Display for CompileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CompileError::Compilation(t) => write!(f, "compilation failed: {t}"),
            CompileError::Instantiation(t) => write!(f, "program instantiation failed: {t}"),
        }
    }
}

/// Compiles `source` with `self` (and `oldSelf`) declared by `decl`.
pub(crate) fn compile(
    source: &str,
    decl: &Arc<Decl>,
    optional_old_self: bool,
) -> Result<Compiled, CompileError> {
    let self_ty = Ty::of_decl(decl);
    let old_ty = if optional_old_self {
        Ty::Optional(Box::new(self_ty.clone()))
    } else {
        self_ty.clone()
    };
    let vars = [("self", self_ty), ("oldSelf", old_ty)];
    compile_inner(source, &vars, decl)
        .map_err(CompileError::Compilation)
        .and_then(|(c, instantiation)| match instantiation {
            Some(e) => Err(CompileError::Instantiation(e)),
            None => Ok(c),
        })
}

/// Compiles `source` with each of `names` declared `dyn` (untyped JSON).
pub(crate) fn compile_dyn(source: &str, names: &[&'static str]) -> Result<Compiled, CompileError> {
    let vars: Vec<(&'static str, Ty)> = names.iter().map(|n| (*n, Ty::Dyn)).collect();
    compile_inner(source, &vars, crate::decl::dynamic())
        .map_err(CompileError::Compilation)
        .and_then(|(c, instantiation)| match instantiation {
            Some(e) => Err(CompileError::Instantiation(e)),
            None => Ok(c),
        })
}

fn compile_inner(
    source: &str,
    vars: &[(&'static str, Ty)],
    decl: &Arc<Decl>,
) -> Result<(Compiled, Option<String>), String> {
    let size = source.chars().count();
    if size > MAX_EXPRESSION_CODE_POINTS {
        return Err(format!(
            "ERROR: <input>:-1:0: expression code point size exceeds limit: size: {size}, limit {MAX_EXPRESSION_CODE_POINTS}"
        ));
    }
    let parsed = cel::parser::Parser::new()
        .enable_optional_syntax(true)
        .max_recursion_depth(MAX_PARSE_DEPTH)
        .parse_with_source_info(source);
    let (mut expr, mut info) = match parsed {
        Ok(p) => p,
        Err(errs) => {
            if errs.errors.iter().any(|e| {
                e.msg.contains("Recursion limit of")
                    || format!("{e:?}").contains("Recursion limit of")
            }) {
                return Err(recursion_error());
            }
            let issues = errs
                .errors
                .iter()
                .map(|e| Issue {
                    line: i64::try_from(e.pos.0).unwrap_or(-1).max(-1),
                    col: i64::try_from(e.pos.1).unwrap_or(0) - 1,
                    msg: e.msg.clone(),
                })
                .collect();
            return Err(display(source, issues));
        }
    };
    if let Err((id, msg)) = crate::ext_macros::expand(&mut expr, &mut info) {
        if msg == checker::RECURSION_ERROR {
            return Err(recursion_error());
        }
        let (line, col) = location(source, &info, id);
        return Err(display(source, vec![Issue { line, col, msg }]));
    }
    let checked = match checker::check(&expr, vars) {
        Ok(c) => c,
        Err(errs) if errs.iter().any(|e| e.msg == checker::RECURSION_ERROR) => {
            return Err(recursion_error());
        }
        Err(errs) => {
            let issues = errs
                .into_iter()
                .map(|e| {
                    let (line, col) = location(source, &info, e.id);
                    Issue {
                        line,
                        col,
                        msg: e.msg,
                    }
                })
                .collect();
            return Err(display(source, issues));
        }
    };
    let mut regexes = HashMap::new();
    let mut issues = Vec::new();
    let mut instantiation = None;
    validate_literals(
        &expr,
        &info,
        source,
        &mut regexes,
        &mut issues,
        &mut instantiation,
    );
    if !issues.is_empty() {
        return Err(display(source, issues));
    }
    let output = checked.ty(expr.id);
    let cost = cost::estimate(&expr, &checked, decl);
    let Checked {
        overloads,
        type_names,
        namespaced,
        uses_old_self,
        ..
    } = checked;
    Ok((
        Compiled {
            program: Program {
                expr,
                overloads,
                type_names,
                namespaced,
                regexes,
            },
            output,
            cost,
            uses_old_self,
        },
        instantiation,
    ))
}

/// cel-go's `ValidateRegexLiterals`, `ValidateDurationLiterals` and
/// `ValidateTimestampLiterals`; literal patterns are compiled once here.
fn validate_literals(
    e: &IdedExpr,
    info: &SourceInfo,
    source: &str,
    regexes: &mut HashMap<u64, regex::Regex>,
    issues: &mut Vec<Issue>,
    instantiation: &mut Option<String>,
) {
    let mut stack = vec![e];
    while let Some(e) = stack.pop() {
        if let Expr::Call(call) = &e.expr {
            let literal = |i: usize| match call.args.get(i).map(|a| &a.expr) {
                Some(Expr::Literal(LiteralValue::String(s))) => {
                    Some((s.inner().to_owned(), call.args[i].id))
                }
                _ => None,
            };
            let mut report = |id: u64, f: &str| {
                let (line, col) = location(source, info, id);
                issues.push(Issue {
                    line,
                    col,
                    msg: format!("invalid {f} argument"),
                });
            };
            match (call.func_name.as_str(), call.target.is_some()) {
                ("matches", _) | ("find" | "findAll", true) => {
                    let idx = usize::from(call.target.is_none());
                    if let Some((pattern, id)) = literal(idx) {
                        match goregex::compile(&pattern) {
                            Ok(r) => {
                                regexes.insert(e.id, r);
                            }
                            Err(_) if call.func_name == "matches" => report(id, "matches"),
                            Err(e) => {
                                instantiation.get_or_insert(e);
                            }
                        }
                    }
                }
                ("duration", false) => {
                    if let Some((text, id)) = literal(0)
                        && timeutil::parse_go_duration(&text).is_err()
                    {
                        report(id, "duration");
                    }
                }
                ("timestamp", false) => {
                    if let Some((text, id)) = literal(0)
                        && timeutil::parse_rfc3339(&text).is_err()
                    {
                        report(id, "timestamp");
                    }
                }
                _ => {}
            }
        }
        crate::ast::children(e, &mut stack);
    }
}

/// Line (1-based) and column (0-based, characters) of an expression.
fn location(source: &str, info: &SourceInfo, id: u64) -> (i64, i64) {
    let Some((start, _)) = info.offset_for(id) else {
        return (-1, -1);
    };
    let mut line = 1i64;
    let mut col = 0i64;
    for (i, c) in source.chars().enumerate() {
        if i as u64 >= u64::from(start) {
            break;
        }
        if c == '\n' {
            line += 1;
            col = 0;
        } else {
            col += 1;
        }
    }
    (line, col)
}

/// cel-go's `Errors.ToDisplayString`.
fn display(source: &str, mut issues: Vec<Issue>) -> String {
    issues.sort_by_key(|i| (i.line, i.col));
    let total = issues.len();
    let mut out: Vec<String> = issues
        .iter()
        .take(MAX_ERRORS)
        .map(|i| {
            let mut s = format!("ERROR: <input>:{}:{}: {}", i.line, i.col + 1, i.msg);
            if i.line >= 1 {
                let snippet = source
                    .split('\n')
                    .nth(usize::try_from(i.line - 1).unwrap_or(0));
                if let Some(snippet) = snippet {
                    let snippet = snippet.replace('\t', " ");
                    s.push_str("\n | ");
                    s.push_str(&snippet);
                    s.push_str("\n | ");
                    let mut chars = snippet.chars();
                    for _ in 0..i.col.max(0) {
                        match chars.next() {
                            Some(c) if c.len_utf8() > 1 => s.push('\u{FF0E}'),
                            Some(_) => s.push('.'),
                            None => break,
                        }
                    }
                    match chars.next() {
                        Some(c) if c.len_utf8() > 1 => s.push('\u{FF3E}'),
                        _ => s.push('^'),
                    }
                }
            }
            s
        })
        .collect();
    if total > MAX_ERRORS {
        out.push(format!("{} more errors were truncated", total - MAX_ERRORS));
    }
    out.join("\n")
}
