//! Behaviour of `x-kubernetes-validations` as the seed (003) and kube-apiserver 1.32 define it.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wasmgate_apimachinery::structural::Schema;
use wasmgate_cel::{Rules, compile};

const P: &str = "spec.versions[0].schema.openAPIV3Schema";

fn schema(v: &Value) -> Schema {
    Schema::parse(v, P).unwrap_or_else(|e| panic!("schema: {e:?}"))
}

fn rules(v: Value) -> Rules {
    compile(&schema(&v), P).unwrap_or_else(|e| {
        panic!(
            "compile: {:#?}",
            e.iter().map(ToString::to_string).collect::<Vec<_>>()
        )
    })
}

fn compile_errors(v: Value) -> Vec<String> {
    match compile(&schema(&v), P) {
        Ok(_) => panic!("expected compile errors"),
        Err(errs) => errs.iter().map(ToString::to_string).collect(),
    }
}

fn errors(r: &Rules, obj: Value) -> Vec<String> {
    r.validate(&obj, None)
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn update_errors(r: &Rules, obj: Value, old: Value) -> Vec<String> {
    r.validate(&obj, Some(&old))
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// A root object schema whose `spec` has `props` and the rule on `spec`.
fn spec_rule(rule: &str, props: Value) -> Rules {
    rules(json!({
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": props, "x-kubernetes-validations": [{"rule": rule}]}}
    }))
}

/// Asserts the rule passes on `good` and fails with `failed rule: <rule>` on `bad` (both
/// values of `spec`).
fn pass_fail(rule: &str, props: Value, good: Value, bad: Value) {
    let r = spec_rule(rule, props);
    assert_eq!(
        errors(&r, json!({"spec": good})),
        Vec::<String>::new(),
        "{rule} should pass"
    );
    assert_eq!(
        errors(&r, json!({"spec": bad})),
        vec![format!(
            "spec: Invalid value: \"object\": failed rule: {rule}"
        )],
        "{rule} should fail"
    );
}

// ---------------------------------------------------------------------------------------------
// The seed's examples table
// ---------------------------------------------------------------------------------------------

#[test]
fn seed_replicas_ordered() {
    pass_fail(
        "self.minReplicas <= self.replicas && self.replicas <= self.maxReplicas",
        json!({"minReplicas": {"type": "integer"}, "replicas": {"type": "integer"}, "maxReplicas": {"type": "integer"}}),
        json!({"minReplicas": 1, "replicas": 2, "maxReplicas": 3}),
        json!({"minReplicas": 0, "replicas": 20, "maxReplicas": 10}),
    );
}

#[test]
fn seed_key_in_map() {
    pass_fail(
        "'Available' in self.stateCounts",
        json!({"stateCounts": {"type": "object", "additionalProperties": {"type": "integer"}}}),
        json!({"stateCounts": {"Available": 1}}),
        json!({"stateCounts": {"Pending": 1}}),
    );
}

#[test]
fn seed_one_of_two_lists() {
    let list = json!({"type": "array", "items": {"type": "string"}});
    pass_fail(
        "(size(self.list1) == 0) != (size(self.list2) == 0)",
        json!({"list1": list, "list2": list}),
        json!({"list1": ["a"], "list2": []}),
        json!({"list1": ["a"], "list2": ["b"]}),
    );
}

#[test]
fn seed_map_value_for_key() {
    pass_fail(
        "!('MY_KEY' in self.map1) || self.map1['MY_KEY'].matches('^[a-zA-Z]*$')",
        json!({"map1": {"type": "object", "maxProperties": 10, "additionalProperties": {"type": "string", "maxLength": 64}}}),
        json!({"map1": {"MY_KEY": "abc", "OTHER": "1"}}),
        json!({"map1": {"MY_KEY": "a1"}}),
    );
    // The seed writes `self['MY_KEY']` with `self` the map itself.
    let r = rules(json!({"type": "object", "properties": {"map1": {
        "type": "object", "additionalProperties": {"type": "string"},
        "x-kubernetes-validations": [{"rule": "!('MY_KEY' in self) || self['MY_KEY'].matches('^[a-zA-Z]*$')"}]
    }}}));
    assert!(errors(&r, json!({"map1": {"MY_KEY": "abc"}})).is_empty());
    assert_eq!(errors(&r, json!({"map1": {"MY_KEY": "ab-c"}})).len(), 1);
}

#[test]
fn seed_list_map_entry_filter() {
    let envars = json!({"envars": {
        "type": "array", "maxItems": 100, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
        "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string", "maxLength": 64},
            "value": {"type": "string", "maxLength": 256}}}
    }});
    let with_rule = |rule: &str| {
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": envars,
        "x-kubernetes-validations": [{"rule": rule}]}}})
    };
    // The seed's table misspells the rule (`=` and a missing parenthesis): a syntax error.
    let errs = compile_errors(with_rule(
        "self.envars.filter(e, e.name = 'MY_ENV').all(e, e.value.matches('^[a-zA-Z]*$')",
    ));
    assert!(
        errs[0].contains("compilation failed: ERROR: <input>:1:30: Syntax error:"),
        "{errs:?}"
    );
    // Spelled right, kube 1.32 still rejects it: the size of `e.value` is lost through
    // `filter()`, so `matches` is estimated on an unbounded string.
    let errs = compile_errors(with_rule(
        "self.envars.filter(e, e.name == 'MY_ENV').all(e, e.value.matches('^[a-zA-Z]*$'))",
    ));
    assert!(
        errs[0]
            .contains("Forbidden: estimated rule cost exceeds budget by factor of more than 100x"),
        "{errs:?}"
    );
    // The equivalent rule without filter() is accepted.
    pass_fail(
        "self.envars.all(e, e.name != 'MY_ENV' || e.value.matches('^[a-zA-Z]*$'))",
        envars,
        json!({"envars": [{"name": "MY_ENV", "value": "abc"}, {"name": "B", "value": "1"}]}),
        json!({"envars": [{"name": "MY_ENV", "value": "a1"}]}),
    );
}

#[test]
fn seed_expiry_after_created_plus_ttl() {
    pass_fail(
        "has(self.expired) && self.created + self.ttl < self.expired",
        json!({"created": {"type": "string", "format": "date-time"}, "ttl": {"type": "string", "format": "duration"},
               "expired": {"type": "string", "format": "date-time"}}),
        json!({"created": "2023-01-01T00:00:00Z", "ttl": "1h", "expired": "2023-01-01T02:00:00Z"}),
        json!({"created": "2023-01-01T00:00:00Z", "ttl": "3h", "expired": "2023-01-01T02:00:00Z"}),
    );
}

#[test]
fn seed_prefix() {
    pass_fail(
        "self.health.startsWith('ok')",
        json!({"health": {"type": "string"}}),
        json!({"health": "ok: all good"}),
        json!({"health": "degraded"}),
    );
}

#[test]
fn seed_exists_in_list_map() {
    pass_fail(
        "self.widgets.exists(w, w.key == 'x' && w.foo < 10)",
        json!({"widgets": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["key"],
            "items": {"type": "object", "required": ["key"], "properties": {"key": {"type": "string"}, "foo": {"type": "integer"}}}}}),
        json!({"widgets": [{"key": "y", "foo": 20}, {"key": "x", "foo": 5}]}),
        json!({"widgets": [{"key": "x", "foo": 50}]}),
    );
}

#[test]
fn seed_int_or_string() {
    let r = rules(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"v": {
            "x-kubernetes-int-or-string": true,
            "x-kubernetes-validations": [{"rule": "type(self) == string ? self == '100%' : self == 1000"}]
        }}}}}),
    );
    assert!(errors(&r, json!({"spec": {"v": "100%"}})).is_empty());
    assert!(errors(&r, json!({"spec": {"v": 1000}})).is_empty());
    assert_eq!(
        errors(&r, json!({"spec": {"v": "50%"}})),
        vec![
            "spec.v: Invalid value: \"\": failed rule: type(self) == string ? self == '100%' : self == 1000"
        ]
    );
    assert_eq!(errors(&r, json!({"spec": {"v": 5}})).len(), 1);
}

#[test]
fn seed_metadata_name_prefix_at_root() {
    let r = rules(
        json!({"type": "object", "x-kubernetes-validations": [{"rule": "self.metadata.name.startsWith(self.prefix)"}],
        "properties": {"prefix": {"type": "string"}}}),
    );
    assert!(errors(&r, json!({"metadata": {"name": "foo-1"}, "prefix": "foo"})).is_empty());
    assert_eq!(
        errors(&r, json!({"metadata": {"name": "bar-1"}, "prefix": "foo"})),
        vec![
            "<nil>: Invalid value: \"object\": failed rule: self.metadata.name.startsWith(self.prefix)"
        ]
    );
}

#[test]
fn seed_disjoint_sets() {
    let set = json!({"type": "array", "maxItems": 100, "x-kubernetes-list-type": "set", "items": {"type": "string", "maxLength": 64}});
    pass_fail(
        "self.set1.all(e, !(e in self.set2))",
        json!({"set1": set, "set2": set}),
        json!({"set1": ["a", "b"], "set2": ["c"]}),
        json!({"set1": ["a", "b"], "set2": ["b"]}),
    );
}

#[test]
fn seed_details_keyed_by_names() {
    pass_fail(
        "size(self.names) == size(self.details) && self.names.all(n, n in self.details)",
        json!({"names": {"type": "array", "maxItems": 100, "x-kubernetes-list-type": "set", "items": {"type": "string", "maxLength": 64}},
               "details": {"type": "object", "maxProperties": 100, "additionalProperties": {"type": "string"}}}),
        json!({"names": ["a", "b"], "details": {"a": "1", "b": "2"}}),
        json!({"names": ["a", "b"], "details": {"a": "1", "c": "2"}}),
    );
}

#[test]
fn seed_scopes_root_map_list_string() {
    let r = rules(
        json!({"type": "object", "x-kubernetes-validations": [{"rule": "self.status.actual <= self.spec.maxDesired"}],
        "properties": {"spec": {"type": "object", "properties": {"maxDesired": {"type": "integer"}}},
                       "status": {"type": "object", "properties": {"actual": {"type": "integer"}}}}}),
    );
    assert!(
        errors(
            &r,
            json!({"spec": {"maxDesired": 3}, "status": {"actual": 2}})
        )
        .is_empty()
    );
    assert_eq!(
        errors(
            &r,
            json!({"spec": {"maxDesired": 3}, "status": {"actual": 4}})
        )
        .len(),
        1
    );

    let r = rules(
        json!({"type": "object", "properties": {"components": {"type": "object",
        "x-kubernetes-validations": [{"rule": "self['Widget'].priority < 10"}],
        "additionalProperties": {"type": "object", "properties": {"priority": {"type": "integer"}}}}}}),
    );
    assert!(errors(&r, json!({"components": {"Widget": {"priority": 1}}})).is_empty());
    assert_eq!(
        errors(&r, json!({"components": {"Widget": {"priority": 11}}})),
        vec!["components: Invalid value: \"object\": failed rule: self['Widget'].priority < 10"]
    );
    // A missing key is an evaluation error.
    assert_eq!(
        errors(&r, json!({"components": {"Gadget": {"priority": 1}}})),
        vec![
            "components: Invalid value: \"object\": no such key: Widget evaluating rule: self['Widget'].priority < 10"
        ]
    );

    let r = rules(
        json!({"type": "object", "properties": {"values": {"type": "array", "maxItems": 1000, "items": {"type": "integer"},
        "x-kubernetes-validations": [{"rule": "self.all(value, value >= 0 && value < 100)"}]}}}),
    );
    assert!(errors(&r, json!({"values": [0, 99]})).is_empty());
    assert_eq!(errors(&r, json!({"values": [0, 100]})).len(), 1);

    let r = rules(
        json!({"type": "object", "properties": {"s": {"type": "string",
        "x-kubernetes-validations": [{"rule": "self.startsWith('kube')"}]}}}),
    );
    assert!(errors(&r, json!({"s": "kubelet"})).is_empty());
    assert_eq!(
        errors(&r, json!({"s": "k8s"})),
        vec!["s: Invalid value: \"string\": failed rule: self.startsWith('kube')"]
    );
}

#[test]
fn seed_has_and_null_is_absent() {
    let r = spec_rule(
        "has(self.foo)",
        json!({"foo": {"type": "integer", "nullable": true}}),
    );
    assert!(errors(&r, json!({"spec": {"foo": 1}})).is_empty());
    assert_eq!(errors(&r, json!({"spec": {}})).len(), 1);
    assert_eq!(errors(&r, json!({"spec": {"foo": null}})).len(), 1);
}

#[test]
fn seed_scalar_rule() {
    let r = rules(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"foo": {
        "type": "integer", "x-kubernetes-validations": [{"rule": "self > 0"}]}}}}}),
    );
    assert!(errors(&r, json!({"spec": {"foo": 1}})).is_empty());
    assert_eq!(
        errors(&r, json!({"spec": {"foo": 0}})),
        vec!["spec.foo: Invalid value: \"integer\": failed rule: self > 0"]
    );
}

#[test]
fn seed_messages() {
    let r = rules(
        json!({"type": "object", "properties": {"spec": {"type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.minReplicas <= self.replicas", "message": "replicas should be greater than or equal to minReplicas."},
            {"rule": "self.replicas <= self.maxReplicas", "message": "replicas should be smaller than or equal to maxReplicas."}
        ],
        "properties": {"minReplicas": {"type": "integer"}, "replicas": {"type": "integer"}, "maxReplicas": {"type": "integer"}},
        "required": ["minReplicas", "replicas", "maxReplicas"]}}}),
    );
    assert_eq!(
        errors(
            &r,
            json!({"spec": {"minReplicas": 0, "replicas": 20, "maxReplicas": 10}})
        ),
        vec![
            "spec: Invalid value: \"object\": replicas should be smaller than or equal to maxReplicas."
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// CRDV-03 details
// ---------------------------------------------------------------------------------------------

#[test]
fn escaped_property_names() {
    let r = spec_rule(
        "self.__namespace__ > 0 && self.x__dash__prop > 0 && self.redact__underscores__d > 0 && self.a__dot__b__slash__c > 0",
        json!({"namespace": {"type": "integer"}, "x-prop": {"type": "integer"}, "redact__d": {"type": "integer"}, "a.b/c": {"type": "integer"}}),
    );
    assert!(
        errors(
            &r,
            json!({"spec": {"namespace": 1, "x-prop": 1, "redact__d": 1, "a.b/c": 1}})
        )
        .is_empty()
    );
    assert_eq!(
        errors(
            &r,
            json!({"spec": {"namespace": 1, "x-prop": 0, "redact__d": 1, "a.b/c": 1}})
        )
        .len(),
        1
    );
    // The unescaped name is not a field.
    let errs = compile_errors(
        json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"namespace": {"type": "integer"}}, "x-kubernetes-validations": [{"rule": "self.namespace > 0"}]}}}),
    );
    assert!(
        errs[0].contains("Syntax error") || errs[0].contains("undefined field"),
        "{errs:?}"
    );
}

#[test]
fn unknown_fields_are_not_accessible() {
    let errs = compile_errors(
        json!({"type": "object", "properties": {"spec": {"type": "object",
        "x-kubernetes-preserve-unknown-fields": true, "properties": {"a": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "self.b == 1"}]}}}),
    );
    assert!(errs[0].contains("undefined field 'b'"), "{errs:?}");
}

#[test]
fn set_and_map_lists_compare_ignoring_order() {
    let set =
        json!({"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "integer"}});
    let r = spec_rule("self.a == self.b", json!({"a": set, "b": set}));
    assert!(errors(&r, json!({"spec": {"a": [1, 2], "b": [2, 1]}})).is_empty());
    assert_eq!(
        errors(&r, json!({"spec": {"a": [1, 2], "b": [2, 3]}})).len(),
        1
    );
    let atomic = json!({"type": "array", "items": {"type": "integer"}});
    let r = spec_rule("self.a == self.b", json!({"a": atomic, "b": atomic}));
    assert_eq!(
        errors(&r, json!({"spec": {"a": [1, 2], "b": [2, 1]}})).len(),
        1
    );
    // Objects of different properties have different (named) types, as in kube: compare a
    // map list with its old value.
    let r = rules(
        json!({"type": "object", "properties": {"m": {"type": "array", "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["k"], "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "immutable"}],
        "items": {"type": "object", "required": ["k"], "properties": {"k": {"type": "string"}, "v": {"type": "integer"}}}}}}),
    );
    let old = json!({"m": [{"k": "x", "v": 1}, {"k": "y", "v": 2}]});
    assert!(
        update_errors(
            &r,
            json!({"m": [{"k": "y", "v": 2}, {"k": "x", "v": 1}]}),
            old.clone()
        )
        .is_empty()
    );
    assert_eq!(
        update_errors(
            &r,
            json!({"m": [{"k": "y", "v": 2}, {"k": "x", "v": 3}]}),
            old
        ),
        vec!["m: Invalid value: \"array\": immutable"]
    );
}

#[test]
fn set_union_and_map_merge() {
    let set =
        json!({"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "integer"}});
    let r = spec_rule(
        "self.a + self.b == [1, 2, 3] && (self.a + self.b)[2] == 3",
        json!({"a": set, "b": set}),
    );
    assert!(errors(&r, json!({"spec": {"a": [1, 2], "b": [2, 3]}})).is_empty());
    let r = rules(
        json!({"type": "object", "properties": {"m": {"type": "array", "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["k"], "maxItems": 10,
        "x-kubernetes-validations": [{"rule": "(oldSelf + self).map(e, e.v) == [10, 2, 3] && size(oldSelf + self) == 3"}],
        "items": {"type": "object", "required": ["k"], "properties": {"k": {"type": "string", "maxLength": 10}, "v": {"type": "integer"}}}}}}),
    );
    let old = json!({"m": [{"k": "x", "v": 1}, {"k": "y", "v": 2}]});
    assert!(
        update_errors(
            &r,
            json!({"m": [{"k": "x", "v": 10}, {"k": "z", "v": 3}]}),
            old
        )
        .is_empty()
    );
}

#[test]
fn embedded_resources_expose_type_and_object_meta() {
    let r = rules(
        json!({"type": "object", "properties": {"template": {"type": "object", "x-kubernetes-embedded-resource": true,
        "x-kubernetes-preserve-unknown-fields": true,
        "x-kubernetes-validations": [{"rule": "self.kind == 'Pod' && self.apiVersion == 'v1' && self.metadata.name != ''"}]}}}),
    );
    assert!(
        errors(
            &r,
            json!({"template": {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "p"}}})
        )
        .is_empty()
    );
    assert_eq!(
        errors(
            &r,
            json!({"template": {"kind": "Svc", "apiVersion": "v1", "metadata": {"name": "p"}}})
        )
        .len(),
        1
    );
}

// ---------------------------------------------------------------------------------------------
// Compilation errors (ERR-09)
// ---------------------------------------------------------------------------------------------

const NIL_RULE: &str = "MessageExpression:\"\", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}";

#[test]
fn compile_error_no_matching_overload() {
    let errs = compile_errors(
        json!({"type": "object", "properties": {"x": {"type": "integer",
        "x-kubernetes-validations": [{"rule": "self == true"}]}}}),
    );
    assert_eq!(
        errs,
        vec![format!(
            "{P}.properties[x].x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{{Rule:\"self == true\", Message:\"\", {NIL_RULE}: compilation failed: ERROR: <input>:1:6: found no matching overload for '_==_' applied to '(int, bool)'\n | self == true\n | .....^"
        )]
    );
}

#[test]
fn compile_error_no_such_field() {
    let errs = compile_errors(
        json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"x": {"type": "integer"}}, "x-kubernetes-validations": [{"rule": "self.nonExistingField > 0"}]}}}),
    );
    assert_eq!(
        errs,
        vec![format!(
            "{P}.properties[spec].x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{{Rule:\"self.nonExistingField > 0\", Message:\"\", {NIL_RULE}: compilation failed: ERROR: <input>:1:5: undefined field 'nonExistingField'\n | self.nonExistingField > 0\n | ....^"
        )]
    );
}

#[test]
fn compile_error_invalid_has_argument() {
    let errs = compile_errors(
        json!({"type": "object", "properties": {"x": {"type": "integer",
        "x-kubernetes-validations": [{"rule": "has(self)"}]}}}),
    );
    // cel-go >= 0.17 (kube 1.32) points at the argument (1:5); the seed's 1.23 text says 1:4.
    assert_eq!(
        errs,
        vec![format!(
            "{P}.properties[x].x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{{Rule:\"has(self)\", Message:\"\", {NIL_RULE}: compilation failed: ERROR: <input>:1:5: invalid argument to has() macro\n | has(self)\n | ....^"
        )]
    );
}

#[test]
fn compile_errors_misc() {
    let int_rule = |r: &str| json!({"type": "object", "properties": {"x": {"type": "integer", "x-kubernetes-validations": [{"rule": r}]}}});
    let e = compile_errors(int_rule("self"));
    assert!(
        e[0].ends_with("OptionalOldSelf:(*bool)(nil)}: cel expression must evaluate to a bool"),
        "{e:?}"
    );
    let e = compile_errors(int_rule("self > 0 && undefinedVar"));
    assert!(
        e[0].contains(
            "ERROR: <input>:1:13: undeclared reference to 'undefinedVar' (in container '')"
        ),
        "{e:?}"
    );
    let e = compile_errors(int_rule("string(self).matches('[')"));
    assert!(
        e[0].contains("ERROR: <input>:1:22: invalid matches argument"),
        "{e:?}"
    );
    let e = compile_errors(int_rule("duration('1x') > duration('1s')"));
    assert!(e[0].contains("invalid duration argument"), "{e:?}");
    let e = compile_errors(int_rule("[1, 'a'].size() > self"));
    assert!(
        e[0].contains("expected type 'int' but found 'string'"),
        "{e:?}"
    );
    let e = compile_errors(int_rule("self.all(x, x > 0)"));
    assert!(
        e[0].contains("expression of type 'int' cannot be range of a comprehension"),
        "{e:?}"
    );
    // messageExpression errors are reported on their own field.
    let e = compile_errors(
        json!({"type": "object", "properties": {"x": {"type": "integer",
        "x-kubernetes-validations": [{"rule": "self > 0", "messageExpression": "self"}]}}}),
    );
    assert_eq!(e.len(), 1);
    assert!(e[0].starts_with(&format!("{P}.properties[x].x-kubernetes-validations[0].messageExpression: Invalid value: apiextensions.ValidationRule{{Rule:\"self > 0\", Message:\"\", MessageExpression:\"self\"")), "{e:?}");
    assert!(
        e[0].ends_with(": messageExpression must evaluate to a string"),
        "{e:?}"
    );
    // optionalOldSelf without oldSelf.
    let e = compile_errors(
        json!({"type": "object", "properties": {"x": {"type": "integer",
        "x-kubernetes-validations": [{"rule": "self > 0", "optionalOldSelf": true}]}}}),
    );
    assert_eq!(
        e,
        vec![format!(
            "{P}.properties[x].x-kubernetes-validations[0].optionalOldSelf: Invalid value: true: may not be set if oldSelf is not used in rule"
        )]
    );
    // oldSelf under an atomic list cannot be correlated.
    let e = compile_errors(
        json!({"type": "object", "properties": {"l": {"type": "array", "items": {"type": "integer",
        "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}}}}),
    );
    assert_eq!(
        e,
        vec![format!(
            "{P}.properties[l].items.x-kubernetes-validations[0].rule: Invalid value: \"self == oldSelf\": oldSelf cannot be used on the uncorrelatable portion of the schema within {P}.properties[l]"
        )]
    );
    // fieldPath must exist.
    let e = compile_errors(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"a": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "self.a > 0", "fieldPath": ".b"}]}}}),
    );
    assert_eq!(
        e,
        vec![format!(
            "{P}.properties[spec].x-kubernetes-validations[0].fieldPath: Invalid value: \".b\": fieldPath must be a valid path"
        )]
    );
}

// ---------------------------------------------------------------------------------------------
// Transition rules, messageExpression, reason, fieldPath
// ---------------------------------------------------------------------------------------------

#[test]
fn transition_rules() {
    let r = rules(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"name": {"type": "string",
        "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "Value is immutable"}]}}}}}),
    );
    // Creates have no old value: the rule does not run.
    assert!(errors(&r, json!({"spec": {"name": "a"}})).is_empty());
    assert!(
        update_errors(
            &r,
            json!({"spec": {"name": "a"}}),
            json!({"spec": {"name": "a"}})
        )
        .is_empty()
    );
    assert_eq!(
        update_errors(
            &r,
            json!({"spec": {"name": "b"}}),
            json!({"spec": {"name": "a"}})
        ),
        vec!["spec.name: Invalid value: \"string\": Value is immutable"]
    );
    // No old value at that path: not run.
    assert!(update_errors(&r, json!({"spec": {"name": "b"}}), json!({"spec": {}})).is_empty());
}

#[test]
fn transition_rules_in_map_lists_correlate_by_key() {
    let r = rules(
        json!({"type": "object", "properties": {"items": {"type": "array", "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["k"], "items": {"type": "object", "required": ["k"],
        "properties": {"k": {"type": "string"}, "v": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "self.v >= oldSelf.v", "message": "v may only grow"}]}}}}),
    );
    let old = json!({"items": [{"k": "a", "v": 5}, {"k": "b", "v": 5}]});
    assert!(
        update_errors(
            &r,
            json!({"items": [{"k": "b", "v": 6}, {"k": "a", "v": 5}, {"k": "c", "v": 0}]}),
            old.clone()
        )
        .is_empty()
    );
    assert_eq!(
        update_errors(
            &r,
            json!({"items": [{"k": "b", "v": 6}, {"k": "a", "v": 4}]}),
            old
        ),
        vec!["items[1]: Invalid value: \"object\": v may only grow"]
    );
}

#[test]
fn optional_old_self() {
    let r = rules(
        json!({"type": "object", "properties": {"v": {"type": "integer",
        "x-kubernetes-validations": [{"rule": "!oldSelf.hasValue() || self >= oldSelf.value()", "optionalOldSelf": true,
            "message": "must not decrease"}]}}}),
    );
    assert!(errors(&r, json!({"v": 1})).is_empty());
    assert!(update_errors(&r, json!({"v": 3}), json!({"v": 2})).is_empty());
    assert_eq!(
        update_errors(&r, json!({"v": 1}), json!({"v": 2})),
        vec!["v: Invalid value: \"integer\": must not decrease"]
    );
    let r = rules(
        json!({"type": "object", "properties": {"v": {"type": "integer",
        "x-kubernetes-validations": [{"rule": "oldSelf.orValue(0) <= self", "optionalOldSelf": true}]}}}),
    );
    assert_eq!(errors(&r, json!({"v": -1})).len(), 1);
}

#[test]
fn message_expression_reason_and_field_path() {
    let r = rules(
        json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"replicas": {"type": "integer"}, "max": {"type": "integer"}, "name": {"type": "string", "maxLength": 63}},
        "x-kubernetes-validations": [
            {"rule": "self.replicas <= self.max", "messageExpression": "self.name + ': replicas exceed the maximum'",
             "fieldPath": ".replicas", "reason": "FieldValueForbidden"},
            {"rule": "self.replicas >= 0", "reason": "FieldValueRequired", "message": "must be set"},
            {"rule": "self.max != 7", "reason": "FieldValueDuplicate"},
            {"rule": "self.max != 8", "messageExpression": "''", "message": "fallback message"}
        ]}}}),
    );
    assert_eq!(
        errors(
            &r,
            json!({"spec": {"replicas": 5, "max": 3, "name": "web"}})
        ),
        vec!["spec.replicas: Forbidden: web: replicas exceed the maximum"]
    );
    // Without a name the messageExpression fails and the default message is used.
    assert_eq!(
        errors(&r, json!({"spec": {"replicas": 5, "max": 3}})),
        vec!["spec.replicas: Forbidden: failed rule: self.replicas <= self.max"]
    );
    // As in kube 1.32 (cel-go 0.22), `string(int)` has no size estimate, so concatenating it
    // is estimated as unbounded.
    let e = compile_errors(
        json!({"type": "object", "properties": {"x": {"type": "integer",
        "x-kubernetes-validations": [{"rule": "self > 0", "messageExpression": "'x is ' + string(self)"}]}}}),
    );
    assert!(e[0].ends_with("messageExpression: Forbidden: estimated messageExpression cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"), "{e:?}");
    assert_eq!(
        errors(&r, json!({"spec": {"replicas": -1, "max": 3}})),
        vec!["spec: Required value: must be set"]
    );
    assert_eq!(
        errors(&r, json!({"spec": {"replicas": 1, "max": 7}})),
        vec!["spec: Duplicate value: \"object\""]
    );
    // An empty messageExpression result falls back to the message.
    assert_eq!(
        errors(&r, json!({"spec": {"replicas": 1, "max": 8}})),
        vec!["spec: Invalid value: \"object\": fallback message"]
    );
}

#[test]
fn ratcheting_unchanged_values() {
    let r = rules(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "a": {"type": "integer", "x-kubernetes-validations": [{"rule": "self < 10"}]},
        "b": {"type": "integer"}}}}}),
    );
    let old = json!({"spec": {"a": 20, "b": 1}});
    // `a` is unchanged: its failure is ratcheted (a warning in kube).
    let out = r.validate_ratcheting(&json!({"spec": {"a": 20, "b": 2}}), Some(&old));
    assert!(out.errors.is_empty());
    assert_eq!(out.ratcheted.len(), 1);
    assert_eq!(
        update_errors(&r, json!({"spec": {"a": 21, "b": 1}}), old).len(),
        1
    );
}

// ---------------------------------------------------------------------------------------------
// Functions and runtime errors
// ---------------------------------------------------------------------------------------------

#[test]
fn functions() {
    let props = json!({
        "s": {"type": "string", "maxLength": 100}, "i": {"type": "integer"}, "d": {"type": "number"},
        "l": {"type": "array", "maxItems": 100, "items": {"type": "integer"}},
        "ls": {"type": "array", "maxItems": 100, "items": {"type": "string", "maxLength": 100}},
        "t": {"type": "string", "format": "date-time"}, "dur": {"type": "string", "format": "duration"},
        "b": {"type": "string", "format": "byte"}, "day": {"type": "string", "format": "date"}
    });
    let obj = json!({"spec": {"s": " Hello, World ", "i": 7, "d": 2.5, "l": [3, 1, 2], "ls": ["b", "a"],
        "t": "2024-02-29T12:30:45.5Z", "dur": "1h30m", "b": "aGVsbG8=", "day": "2024-03-01"}});
    for rule in [
        "self.s.trim() == 'Hello, World'",
        "self.s.lowerAscii().contains('hello') && self.s.upperAscii().contains('WORLD')",
        "self.s.trim().split(', ') == ['Hello', 'World']",
        "self.ls.join('-') == 'b-a' && self.ls.join() == 'ba'",
        "self.s.replace('l', 'L') == ' HeLLo, WorLd ' && self.s.replace('l', 'L', 1) == ' HeLlo, World '",
        "self.s.indexOf('o') == 5 && self.s.lastIndexOf('o') == 9 && self.s.indexOf('o', 6) == 9",
        "self.s.substring(1, 6) == 'Hello' && self.s.charAt(1) == 'H' && size(self.s) == 14",
        "self.s.endsWith(' ') && self.s.matches('W.rld')",
        "self.l.isSorted() == false && [1, 2, 2].isSorted() && self.l.sum() == 6",
        "self.l.min() == 1 && self.l.max() == 3 && self.l.indexOf(1) == 1 && [1, 2, 1].lastIndexOf(1) == 2",
        "self.l.exists_one(x, x == 2) && self.l.map(x, x * 2) == [6, 2, 4] && self.l.filter(x, x > 1) == [3, 2]",
        "self.l.map(x, x > 1, x) == [3, 2]",
        "int('42') == 42 && string(self.i) == '7' && double(self.i) == 7.0 && string(self.d) == '2.5'",
        "uint(self.i) == 7u && int(self.d) == 2 && string(1000000.0) == '1e+06' && string(true) == 'true'",
        "self.t.getFullYear() == 2024 && self.t.getMonth() == 1 && self.t.getDate() == 29 && self.t.getHours() == 12",
        "self.t.getDayOfWeek() == 4 && self.t.getMilliseconds() == 500 && self.t.getDayOfYear() == 59",
        "self.t.getHours('+02:00') == 14 && string(self.t) == '2024-02-29T12:30:45.5Z'",
        "self.dur == duration('90m') && self.dur.getMinutes() == 90 && string(self.dur) == '5400s'",
        "self.t + self.dur == timestamp('2024-02-29T14:00:45.5Z') && self.t - timestamp('2024-02-29T12:30:45.5Z') == duration('0s')",
        "self.day == timestamp('2024-03-01T00:00:00Z') && self.day > self.t",
        "self.b == b'hello' && size(self.b) == 5 && string(self.b) == 'hello'",
        "type(self.i) == int && type(self.s) == string && type(self.l) == list && type(self) == map",
        "1 < 1.5 && 2u > 1 && dyn(1) == 1.0 && dyn(1) == 1u",
        "{'a': 1, 'b': 2}.all(k, k in ['a', 'b']) && {'a': 1}['a'] == 1 && 'a' in {'a': 1}",
        "sets.contains([1, 2, 3], [2]) && sets.equivalent([1, 2], [2, 1]) && sets.intersects([1], [1, 5])",
        "'abc123'.find('[0-9]+') == '123' && 'a1b2'.findAll('[0-9]') == ['1', '2']",
        "optional.of(1).value() == 1 && !optional.none().hasValue() && optional.none().orValue(5) == 5",
        "has(self.s) && has(self.l)",
        "strings.quote('a\"b') == '\"a\\\\\"b\"'",
    ] {
        let s = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": props, "x-kubernetes-validations": [{"rule": rule}]}}});
        let r = compile(&schema(&s), P).unwrap_or_else(|e| panic!("{rule}: {e:?}"));
        assert_eq!(errors(&r, obj.clone()), Vec::<String>::new(), "{rule}");
    }
}

#[test]
fn runtime_errors() {
    let props = json!({"i": {"type": "integer"}, "l": {"type": "array", "maxItems": 100, "items": {"type": "integer"}},
        "s": {"type": "string", "maxLength": 100}});
    let obj = json!({"spec": {"i": 0, "l": [1], "s": "x"}});
    for (rule, msg) in [
        ("1 / self.i == 0", "division by zero"),
        ("1 % self.i == 0", "modulus by zero"),
        ("9223372036854775807 + self.l[0] > 0", "integer overflow"),
        ("-9223372036854775808 - self.l[0] < 0", "integer overflow"),
        ("self.l[3] == 0", "index out of bounds: 3"),
        (
            "int(self.s) == 0",
            "type conversion error from 'string' to 'int'",
        ),
        (
            "self.l.filter(x, x > 5).min() == 0",
            "min called on empty list",
        ),
        ("self.s.substring(2) == ''", "index out of range: 2"),
    ] {
        let r = spec_rule(rule, props.clone());
        assert_eq!(
            errors(&r, obj.clone()),
            vec![format!(
                "spec: Invalid value: \"object\": {msg} evaluating rule: {rule}"
            )],
            "{rule}"
        );
    }
    // Errors are absorbed by logical operators as in CEL.
    let r = spec_rule("self.i == 0 || 1 / self.i == 1", props.clone());
    assert!(errors(&r, obj.clone()).is_empty());
    let r = spec_rule("1 / self.i == 1 || true", props.clone());
    assert!(errors(&r, obj.clone()).is_empty());
    let r = spec_rule("self.l.all(x, 1 / (x - 1) == 0 || x == 1)", props);
    assert!(errors(&r, obj).is_empty());
}

// ---------------------------------------------------------------------------------------------
// Cost budget and safety
// ---------------------------------------------------------------------------------------------

#[test]
fn compile_rejects_quadratic_rule_on_unbounded_list() {
    let e = compile_errors(
        json!({"type": "object", "properties": {"l": {"type": "array", "items": {"type": "string"},
        "x-kubernetes-validations": [{"rule": "self.all(x, self.all(y, x == y))"}]}}}),
    );
    let cost = "exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)";
    assert_eq!(
        e,
        vec![
            format!(
                "{P}.properties[l].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost {cost}"
            ),
            format!(
                "{P}.properties[l].x-kubernetes-validations[0].rule: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"
            ),
            format!(
                "{P}: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema {cost}"
            ),
        ]
    );
    // Bounds make it acceptable.
    rules(
        json!({"type": "object", "properties": {"l": {"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 10},
        "x-kubernetes-validations": [{"rule": "self.all(x, self.all(y, x == y))"}]}}}),
    );
}

#[test]
fn compile_cost_includes_cardinality() {
    // Cheap per call, but it runs for each of up to ~1M items of unbounded lists of lists.
    let e = compile_errors(
        json!({"type": "object", "properties": {"l": {"type": "array", "items": {"type": "array",
        "items": {"type": "string"}, "x-kubernetes-validations": [{"rule": "self.all(x, x.startsWith('a'))"}]}}}}),
    );
    assert!(
        e[0].contains("Forbidden: estimated rule cost exceeds budget by factor of"),
        "{e:?}"
    );
}

#[test]
fn per_call_limit_fails_promptly() {
    // Estimated under 10M (maxItems 1000), but over the 1M per-call limit on full data.
    let r = rules(
        json!({"type": "object", "properties": {"l": {"type": "array", "maxItems": 1000, "items": {"type": "integer"},
        "x-kubernetes-validations": [{"rule": "self.all(x, self.exists(y, y == x))"}]}}}),
    );
    let obj = json!({"l": (0..1000).collect::<Vec<i64>>()});
    let start = Instant::now();
    let errs = errors(&r, obj);
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "took {:?}",
        start.elapsed()
    );
    assert_eq!(
        errs,
        vec![
            "l: Invalid value: \"array\": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: self.all(x, self.exists(y, y == x))"
        ]
    );
}

#[test]
fn runtime_budget_fails_promptly() {
    // Ten rules on each of 20 strings: each estimated at 300k (6M with its cardinality, 60M
    // together, within the static limits), each costing 75k on 10 000-character values. The
    // 10M runtime budget runs out after ~133 evaluations; no further rule runs.
    let pattern = format!("^({}a)*$", "a|".repeat(149));
    let rules_json: Vec<Value> = (0..10)
        .map(|i| json!({"rule": format!("self.matches('{pattern}') || size(self) == {i}")}))
        .collect();
    let r = rules(
        json!({"type": "object", "properties": {"l": {"type": "array", "maxItems": 20, "items": {
        "type": "string", "maxLength": 10000, "x-kubernetes-validations": rules_json}}}}),
    );
    let obj = json!({"l": (0..20).map(|_| "a".repeat(10_000)).collect::<Vec<_>>()});
    let start = Instant::now();
    let errs = errors(&r, obj.clone());
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "took {:?}",
        start.elapsed()
    );
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0].ends_with(": Invalid value: \"string\": validation failed due to running out of cost budget, no further validation rules will be run"),
        "{errs:?}"
    );
    // Fewer items stay within the budget.
    let obj = json!({"l": (0..2).map(|_| "a".repeat(10_000)).collect::<Vec<_>>()});
    assert!(errors(&r, obj).is_empty());
}

#[test]
fn hidden_work_trips_the_fuse() {
    // List concatenation costs 1 in CEL's model but copies here: the fuse stops it.
    let r = rules(
        json!({"type": "object", "properties": {"l": {"type": "array", "maxItems": 100000, "items": {"type": "integer"},
        "x-kubernetes-validations": [{"rule": "self.all(x, size(self + self) > 0)"}]}}}),
    );
    let obj = json!({"l": (0..100_000).collect::<Vec<i64>>()});
    let start = Instant::now();
    let errs = errors(&r, obj);
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "took {:?}",
        start.elapsed()
    );
    assert_eq!(
        errs,
        vec![
            "l: Invalid value: \"array\": validation failed due to running out of cost budget, no further validation rules will be run"
        ]
    );
}

#[test]
fn deeply_nested_rules_are_rejected_not_crashing() {
    let int_rule = |r: String| json!({"type": "object", "properties": {"x": {"type": "integer", "x-kubernetes-validations": [{"rule": r, "message": "m"}]}}});
    for rule in [
        format!("{}self{} == 1", "(".repeat(40_000), ")".repeat(40_000)),
        format!("self == 1{}", " + 1".repeat(20_000)),
        format!("{}1{} == self", "[".repeat(30_000), "]".repeat(30_000)),
    ] {
        let Err(e) = compile(&schema(&int_rule(rule.clone())), P) else {
            panic!("{} should not compile", &rule[..60]);
        };
        let e = e[0].to_string();
        assert!(
            e.contains("compilation failed: ERROR: <input>"),
            "{}",
            &e[..e.len().min(300)]
        );
    }
    // Long `&&` chains are balanced by the parser, as in cel-go.
    let r = rules(int_rule(format!(
        "self == 1 && {}",
        "true && ".repeat(10_000) + "true"
    )));
    assert_eq!(r.validate(&json!({"x": 2}), None).len(), 1);
    // An even number of `!` cancels out in the parser, as in cel-go.
    let r = rules(int_rule(format!("{}(self == 1)", "!".repeat(50_000))));
    assert_eq!(r.validate(&json!({"x": 2}), None).len(), 1);
    // Within the limits, deep expressions compile and evaluate (here on a test thread's
    // 2 MiB stack).
    let r = rules(int_rule(format!(
        "{}self{} == -1",
        "-(".repeat(101),
        ")".repeat(101)
    )));
    assert_eq!(r.validate(&json!({"x": 1}), None).len(), 0);
    let r = rules(int_rule(format!("self{} == 291", " + 1".repeat(290))));
    assert_eq!(r.validate(&json!({"x": 1}), None).len(), 0);
    let e = compile_errors(int_rule(format!("self.a{} == 1", ".a".repeat(30_000))));
    assert!(
        e[0].contains("expression recursion limit exceeded"),
        "{}",
        &e[0][..e[0].len().min(300)]
    );
}

#[test]
fn deeply_nested_data_is_fine() {
    let mut deep = json!(1);
    for _ in 0..120 {
        deep = json!({"a": [deep]});
    }
    let r = rules(
        json!({"type": "object", "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
        "properties": {"n": {"type": "integer"}}, "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}}}),
    );
    let start = Instant::now();
    assert!(
        update_errors(
            &r,
            json!({"spec": {"n": 1, "deep": deep}}),
            json!({"spec": {"n": 1, "deep": deep}})
        )
        .is_empty()
    );
    assert_eq!(
        update_errors(
            &r,
            json!({"spec": {"n": 1, "deep": deep}}),
            json!({"spec": {"n": 1, "deep": 2}})
        )
        .len(),
        1
    );
    assert!(start.elapsed() < Duration::from_secs(5));
}

#[test]
fn regexes_from_data_are_bounded() {
    let r = spec_rule(
        "self.s.matches(self.re)",
        json!({"s": {"type": "string", "maxLength": 100}, "re": {"type": "string", "maxLength": 100000}}),
    );
    let huge = "((((a{1000}){1000}){1000}){1000})";
    let errs = errors(&r, json!({"spec": {"s": "aaaa", "re": huge}}));
    assert_eq!(
        errs,
        vec![
            "spec: Invalid value: \"object\": error parsing regexp: expression too large evaluating rule: self.s.matches(self.re)"
        ]
    );
    assert!(errors(&r, json!({"spec": {"s": "abc", "re": "^a.c$"}})).is_empty());
}

#[test]
fn empty_and_shared() {
    let r = rules(json!({"type": "object", "properties": {"a": {"type": "integer"}}}));
    assert!(r.is_empty());
    let r = spec_rule("self.a > 0", json!({"a": {"type": "integer"}}));
    assert!(!r.is_empty());
    let shared = r.clone();
    let handle =
        std::thread::spawn(move || shared.validate(&json!({"spec": {"a": 0}}), None).len());
    assert_eq!(handle.join().ok(), Some(1));
}
