//! # wasmgate-cel
//!
//! CEL for CustomResourceDefinition `x-kubernetes-validations` (CRDV-02, CRDV-03, ERR-08,
//! ERR-09), as kube-apiserver 1.32 runs them: every rule of a CRD version's structural schema
//! is parsed, type-checked against the schema and cost-estimated when the CRD is written
//! ([`compile`]), then evaluated, metered, on every write of a custom resource
//! ([`Rules::validate`]).
//!
//! ```text
//! let rules = wasmgate_cel::compile(&schema, "spec.versions[0].schema.openAPIV3Schema")?; // CRD write: 422 on Err
//! let errs = rules.validate(&object, old.as_ref());                                       // CR write: 422 if non-empty
//! ```
//!
//! ## Layout
//! * [`compile`], [`Rules`], [`Outcome`] (module `rules`): the schema walk, compile errors,
//!   cost limits, evaluation over an object with transition rules, `messageExpression`,
//!   `reason`, `fieldPath` and ratcheting.
//! * `decl`: the CEL view of a schema node (`SchemaDeclType`): declared fields only, names
//!   escaped (`escape`), `apiVersion`/`kind`/`metadata.{name,generateName}` at resource roots,
//!   worst-case sizes from `maxLength`/`maxItems`/`maxProperties`/`enum` or the 3 MiB request.
//! * `types`, `functions`, `checker`: cel-go's type checker (assignability, type parameters,
//!   overload resolution, cel-go's error texts) and the function declarations.
//! * `ext_macros`: the two-variable comprehensions and `optMap`/`optFlatMap` macros, expanded
//!   after parsing; `ast`: the subexpressions of an expression, for the tree walks.
//! * `cost`: cel-go's static cost estimator with Kubernetes' size and call estimators.
//! * `value`, `eval`: values read lazily from the JSON, and the metered interpreter.
//! * `compile`: one expression from source to program, with cel-go's error display.
//! * `k8slib`: the Kubernetes quantity, IP, CIDR, URL and format libraries.
//! * `timeutil`, `fieldpath`: timestamps and durations,
//!   `fieldPath`.
//!
//! cel-rust (the `cel` crate, no default features) supplies the parser and the standard
//! macros only. It has no type checker and no cost tracking, and its interpreter has neither
//! kube's list-type semantics nor lazy schema-typed data nor metering, so checking, costing and
//! evaluation are done here.
//!
//! ## Language and libraries
//! * Variables `self`, `oldSelf` (transition rules; `optional_type` with `optionalOldSelf`).
//! * Literals, arithmetic with CEL's overflow and division errors, comparisons (with cel-go's
//!   cross-type numeric comparisons), `&&`/`||`/`?:` with CEL's error absorption, `in`,
//!   `[]`, field selection, `has()`, `type()`, optional syntax (`.?f`, `[?k]`, `[?e]`, `{?k: v}`).
//! * Macros `all`, `exists`, `exists_one`, `map` (2 and 3 arguments), `filter`; two-variable
//!   `all`, `exists`, `existsOne`, `transformList`, `transformMap`, `transformMapEntry`;
//!   `optMap`, `optFlatMap`.
//! * Conversions `int`, `uint`, `double`, `string`, `bytes`, `bool`, `dyn`, `duration`,
//!   `timestamp`; `size`; `matches`, `contains`, `startsWith`, `endsWith`; timestamp and
//!   duration accessors (`getFullYear` … `getMilliseconds`, with fixed-offset time zones).
//! * Strings extension v2: `charAt`, `indexOf`, `lastIndexOf`, `lowerAscii`, `upperAscii`,
//!   `replace`, `split`, `substring`, `trim`, `join`, `strings.quote`.
//! * Sets extension: `sets.contains`, `sets.equivalent`, `sets.intersects`.
//! * Optionals: `optional.of`, `optional.ofNonZeroValue`, `optional.none`, `hasValue`,
//!   `value`, `or`, `orValue`.
//! * Kubernetes: lists (`isSorted`, `sum`, `min`, `max`, `indexOf`, `lastIndexOf`), regex
//!   (`find`, `findAll`), quantity, IP, CIDR, URL and format libraries.
//! * Lists with `x-kubernetes-list-type: set|map` compare equal ignoring order and `+` is a
//!   union or merge (when the left operand is such a list, as in kube).
//!
//! ## Cost and limits (kube-apiserver's values)
//! * Static: the estimate of cel-go's `checker.Cost` with kube's estimators (checked against
//!   kube's `TestCelEstimatedCostStability` numbers) times the number of times the rule can
//!   run (the product of the `maxItems`/`maxProperties` above it, or what fits in 3 MiB) must
//!   not exceed [`STATIC_ESTIMATED_COST_LIMIT`]; all rules and message expressions together
//!   not [`STATIC_ESTIMATED_CRD_COST_LIMIT`].
//! * Runtime: cel-go's cost tracker (checked against kube's `TestCelCostStability`): one
//!   evaluation stops past [`PER_CALL_LIMIT`]; one object's rules share
//!   [`RUNTIME_CEL_COST_BUDGET`]. Either ends validation with kube's field error.
//! * Work that CEL's cost model counts as constant (copying lists on `+`, deep equality,
//!   converting data, compiling a regex from data) counts against a separate fuse, reported as
//!   the budget error, so no input makes validation slow or large. Regexes are capped in
//!   size; expressions in code points (100 000) and nesting (parser depth 250, tree depth 300);
//!   compilation runs on a thread with a large stack.
//!
//! ## Known differences from kube-apiserver 1.32
//! * Parse error texts come from cel-rust's ANTLR grammar and can differ in wording from
//!   cel-go's (`no viable alternative at input '.true'` vs `mismatched input 'true'
//!   expecting IDENTIFIER`); positions and type-check errors are cel-go's.
//! * The generated type name of `self` is `selfType0` (kube: `selfType<nanoseconds>`).
//! * Go prints the pointer fields of `apiextensions.ValidationRule` in compile errors as
//!   addresses; a fixed address is printed here.
//! * Runtime costs can differ by a unit or two where cel-go folds constants.
//! * Time zones: only `UTC` and fixed offsets (`+01:00`); IANA names are an error.
//! * Not supported: the strings `format` and `reverse` functions, the `authorizer` library
//!   (not available to CRD rules), rules inside `allOf`/`anyOf`/`oneOf`/`not`.
#![forbid(unsafe_code)]

mod ast;
mod checker;
mod compile;
mod cost;
#[cfg(test)]
mod cost_tests;
mod decl;
mod escape;
mod eval;
mod expression;
mod ext_macros;
mod fieldpath;
mod functions;
mod k8slib;
#[cfg(test)]
mod kube_tests;
mod rules;
#[cfg(test)]
mod test_support;
mod timeutil;
mod types;
mod value;

pub use expression::{Expression, Output};
pub use rules::{Outcome, Rules, compile};

/// Cost limit of one rule evaluation (`PerCallLimit`).
pub const PER_CALL_LIMIT: u64 = 1_000_000;
/// Cost budget for all rules of one object (`RuntimeCELCostBudget`).
pub const RUNTIME_CEL_COST_BUDGET: u64 = 10_000_000;
/// Largest estimated cost of one rule, times its cardinality (`StaticEstimatedCostLimit`).
pub const STATIC_ESTIMATED_COST_LIMIT: u64 = 10_000_000;
/// Largest estimated cost of all the rules of a schema (`StaticEstimatedCRDCostLimit`).
pub const STATIC_ESTIMATED_CRD_COST_LIMIT: u64 = 100_000_000;
/// Longest `messageExpression` result (`MaxEvaluatedMessageExpressionSizeBytes`).
pub const MAX_EVALUATED_MESSAGE_EXPRESSION_SIZE_BYTES: usize = 5 * 1024;
