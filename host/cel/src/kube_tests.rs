//! Expressions and expected outcomes from kube-apiserver 1.32's `TestValidationExpressions`
//! (`apiextensions-apiserver/pkg/apiserver/schema/cel/validation_test.go`), run through the
//! checker and the interpreter without the static cost limit (as that test does).

use serde_json::{Value, json};
use wasmgate_apimachinery::structural::Schema;

use crate::compile::compile;
use crate::decl::decl_for;
use crate::eval::{Meter, RegexCache, run};
use crate::test_support::{eq3, val_schema};
use crate::value::{EvalErr, Val, from_json};

fn case(schema: &Value, obj: &Value, valid: &[&str], errors: &[(&str, &str)]) {
    let s = Schema::parse(schema, "s").unwrap_or_else(|e| panic!("{e:?}"));
    let decl = decl_for(s.root(), false, "selfType0").unwrap_or_else(|| panic!("no decl"));
    let eval = |rule: &str| -> Result<bool, String> {
        let c = compile(rule, &decl, false).map_err(|e| e.to_string())?;
        let self_val = from_json(obj, &decl).map_err(|e| format!("{e:?}"))?;
        let mut meter = Meter {
            cost: 0,
            limit: crate::PER_CALL_LIMIT,
            work: 0,
            work_limit: u64::MAX,
        };
        match run(
            &c.program,
            vec![("self", self_val)],
            &mut meter,
            &mut RegexCache::new(),
        ) {
            Ok(Val::Bool(b)) => Ok(b),
            Ok(other) => Err(format!("not a bool: {other:?}")),
            Err(EvalErr::Msg(m)) => Err(m),
            Err(e) => Err(format!("{e:?}")),
        }
    };
    let mut wrong = Vec::new();
    for rule in valid {
        match eval(rule) {
            Ok(true) => {}
            other => wrong.push(format!("{rule}: {other:?}")),
        }
    }
    for (rule, expected) in errors {
        match eval(rule) {
            Err(e) if e.contains(expected) => {}
            other => wrong.push(format!(
                "{rule}: expected error containing {expected:?}, got {other:?}"
            )),
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// The schema of `val_schema(types)` and an object with `values` as `val1`, `val2`, ….
fn vals(types: &[Value], values: &[Value]) -> (Value, Value) {
    assert_eq!(types.len(), values.len(), "one value per type");
    let obj = values
        .iter()
        .enumerate()
        .map(|(i, v)| (format!("val{}", i + 1), v.clone()))
        .collect();
    (val_schema(types), Value::Object(obj))
}

#[test]
fn integers_and_strings() {
    let i = json!({"type": "integer"});
    let (s, o) = vals(&[i.clone(), i.clone()], &[json!(i64::MAX), json!(i64::MAX)]);
    case(
        &s,
        &o,
        &[
            &eq3("self.val1", "self.val2", "9223372036854775807"),
            "type(self.val1) == int",
        ],
        &[
            ("self.val1 + 1 == 0", "integer overflow"),
            ("1 / 0 == 1 / 0", "division by zero"),
        ],
    );
    let st = json!({"type": "string"});
    let (s, o) = vals(
        &[st.clone(), st],
        &[json!("Rook takes 👑"), json!("Rook takes 👑")],
    );
    case(
        &s,
        &o,
        &[
            &eq3("self.val1", "self.val2", "'Rook takes 👑'"),
            "self.val1.startsWith('Rook')",
            "!self.val1.startsWith('knight')",
            "self.val1.contains('takes')",
            "!self.val1.contains('gives')",
            "self.val1.endsWith('👑')",
            "!self.val1.endsWith('pawn')",
            "self.val1.matches('^[^0-9]*$')",
            "!self.val1.matches('^[0-9]*$')",
            "type(self.val1) == string",
            "size(self.val1) == 12",
            "self.val1.charAt(3) == 'k'",
            "self.val1.indexOf('o') == 1",
            "self.val1.indexOf('o', 2) == 2",
            "self.val1.replace(' ', 'x') == 'Rookxtakesx👑'",
            "self.val1.replace(' ', 'x', 1) == 'Rookxtakes 👑'",
            "self.val1.split(' ') == ['Rook', 'takes', '👑']",
            "self.val1.split(' ', 2) == ['Rook', 'takes 👑']",
            "self.val1.substring(5) == 'takes 👑'",
            "self.val1.substring(0, 4) == 'Rook'",
            "self.val1.substring(4, 10).trim() == 'takes'",
            "self.val1.upperAscii() == 'ROOK TAKES 👑'",
            "self.val1.lowerAscii() == 'rook takes 👑'",
        ],
        &[(
            "self.val1.matches(')')",
            "compilation failed: ERROR: <input>:1:19: invalid matches argument",
        )],
    );
}

#[test]
fn lists_sets_maps_objects() {
    let il = json!({"type": "array", "items": {"type": "integer"}});
    let (s, o) = vals(&[il.clone(), il], &[json!([1, 2, 3]), json!([1, 2, 3])]);
    case(
        &s,
        &o,
        &[
            &eq3("self.val1", "self.val2", "[1, 2, 3]"),
            "1 in self.val1",
            "self.val2[0] in self.val1",
            "!(0 in self.val1)",
            "self.val1 + self.val2 == [1, 2, 3, 1, 2, 3]",
            "self.val1 + [4, 5] == [1, 2, 3, 4, 5]",
        ],
        &[(
            "[1, 'a', false].filter(x, string(x) == 'a')",
            "compilation failed: ERROR: <input>:1:5: expected type 'int' but found 'string'",
        )],
    );
    let sl = json!({"type": "array", "items": {"type": "string"}});
    let (s, o) = vals(&[sl], &[json!(["a", "b", "c"])]);
    case(
        &s,
        &o,
        &[
            "self.val1.join('-') == 'a-b-c'",
            "['a', 'b', 'c'].join('-') == 'a-b-c'",
            "self.val1.join() == 'abc'",
        ],
        &[],
    );
    let ss = json!({"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}});
    let (s, o) = vals(
        &[ss.clone(), ss],
        &[json!(["a", "b", "c"]), json!(["a", "c", "b"])],
    );
    case(
        &s,
        &o,
        &[
            "self.val1 == ['c', 'b', 'a']",
            "self.val1 == self.val2",
            "'a' in self.val1",
            "self.val2[0] in self.val1",
            "!('x' in self.val1)",
            "self.val1 + self.val2 == ['a', 'b', 'c']",
            "self.val1 + ['c', 'd'] == ['a', 'b', 'c', 'd']",
            "sets.contains(['a', 'b'], [])",
            "sets.contains(['a', 'b'], ['b'])",
            "!sets.contains(['a', 'b'], ['c'])",
            "sets.equivalent([], [])",
            "sets.equivalent(['c', 'b', 'a'], ['b', 'c', 'a'])",
            "!sets.equivalent(['a', 'b'], ['b', 'c'])",
            "sets.intersects(['a', 'b'], ['b', 'c'])",
            "!sets.intersects([], [])",
            "!sets.intersects(['a', 'b'], ['c', 'd'])",
            "sets.contains([1.25, 1.5], [1.5])",
            "sets.contains([{'a': 1}, {'b': 2}], [{'b': 2}])",
            "sets.contains([[1, 2], [3, 4]], [[3, 4]])",
            "sets.contains([timestamp('2000-01-01T00:00:00.000+01:00'), timestamp('2012-01-01T00:00:00.000+01:00')], [timestamp('2012-01-01T00:00:00.000+01:00')])",
            "sets.equivalent([duration('1h'), duration('2h')], [duration('1h'), duration('2h')])",
            "sets.intersects([true, false], [false])",
        ],
        &[],
    );
    let lm = json!({"type": "object", "properties": {"objs": {"type": "array", "items": {"type": "array",
        "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"], "items": {"type": "object",
        "properties": {"k": {"type": "string", "default": "x"}, "v": {"type": "string"}}}}}}});
    let o = json!({"objs": [
        [{"k": "a", "v": "1"}, {"k": "b", "v": "2"}],
        [{"k": "b", "v": "2"}, {"k": "a", "v": "1"}],
        [{"k": "b", "v": "3"}, {"k": "a", "v": "1"}],
        [{"k": "c", "v": "4"}]]});
    case(
        &lm,
        &o,
        &[
            "self.objs[0] == self.objs[1]",
            "self.objs[0] + self.objs[2] == self.objs[2]",
            "self.objs[2] + self.objs[0] == self.objs[0]",
            "self.objs[0] == [self.objs[0][0], self.objs[0][1]]",
            "self.objs[0] == [self.objs[0][1], self.objs[0][0]]",
            "self.objs[2] + [self.objs[0][0], self.objs[0][1]] == self.objs[0]",
            "size(self.objs[0] + [self.objs[3][0]]) == 3",
        ],
        &[(
            "self.objs[0] == {'k': 'a', 'v': '1'}",
            "no matching overload for '_==_'",
        )],
    );
    let m = json!({"type": "object", "additionalProperties": {"type": "string"}});
    let (s, o) = vals(
        &[m.clone(), m],
        &[json!({"k1": "a", "k2": "b"}), json!({"k2": "b", "k1": "a"})],
    );
    case(
        &s,
        &o,
        &[
            "self.val1 == self.val2",
            "'k1' in self.val1",
            "!('k3' in self.val1)",
            "self.val1 == {'k1': 'a', 'k2': 'b'}",
        ],
        &[(
            "{'k1': 'a', 'k2': 1, 'k2': false}",
            "expected type 'string' but found 'int'",
        )],
    );
    let objs = json!({"type": "object", "properties": {"objs": {"type": "array", "items": {"type": "object",
        "properties": {"f1": {"type": "string"}, "f2": {"type": "string"}}}}}});
    case(
        &objs,
        &json!({"objs": [{"f1": "a", "f2": "b"}, {"f1": "a", "f2": "b"}]}),
        &["self.objs[0] == self.objs[1]"],
        &[(
            "self.objs[0] == {'f1': 'a', 'f2': 'b'}",
            "found no matching overload for '_==_'",
        )],
    );
}

#[test]
fn object_and_map_access() {
    let schema = json!({"type": "object", "properties": {
        "a": {"type": "object", "properties": {"b": {"type": "integer"}, "c": {"type": "integer"}, "d": {"type": "integer", "nullable": true}}},
        "a1": {"type": "object", "properties": {"b1": {"type": "object", "properties": {"c1": {"type": "integer"}}},
            "d2": {"type": "object", "properties": {"e2": {"type": "integer"}}}}}}});
    case(
        &schema,
        &json!({"a": {"b": 1, "d": null}, "a1": {"b1": {"c1": 4}}, "a3": {}}),
        &[
            "has(self.a.b)",
            "!has(self.a.c)",
            "!has(self.a.d)",
            "has(self.a1.b1.c1)",
            "!(has(self.a1.d2) && has(self.a1.d2.e2))",
            "!has(self.a1.d2)",
        ],
        &[
            ("has(self.a.z)", "undefined field 'z'"),
            ("self.a['b'] == 1", "no matching overload for '_[_]'"),
            ("has(self.a1.d2.e2)", "no such key: d2"),
        ],
    );
    let schema = json!({"type": "object", "properties": {"val": {"type": "object", "additionalProperties": {"type": "integer"}}}});
    case(
        &schema,
        &json!({"val": {"b": 1, "d": 2}}),
        &[
            "!('a' in self.val)",
            "'b' in self.val",
            "!has(self.val.a)",
            "has(self.val.b)",
            "self.val.all(k, self.val[k] > 0)",
            "self.val.exists(k, self.val[k] > 1)",
            "self.val.exists_one(k, self.val[k] == 2)",
            "!self.val.exists(k, self.val[k] > 2)",
            "!self.val.exists_one(k, self.val[k] > 0)",
            "size(self.val) == 2",
            "self.val.map(k, self.val[k]).exists(v, v == 1)",
            "size(self.val.filter(k, self.val[k] > 1)) == 1",
            "self.val.all(k, v, v > 0)",
            "self.val.exists(k, v, v == 2)",
            "self.val.existsOne(k, v, v == 2)",
            "self.val.transformMap(k, v, v > 1, v + 1).size() == 1",
            "self.val.transformMap(k, v, v + 1).size() == 2",
            "self.val.transformMapEntry(k, v, v > 1, {k + '2': v + 1}).size() == 1",
            "self.val.transformMapEntry(k, v, {k + '2': v + 1}).size() == 2",
        ],
        &[("self.val['c'] == 1", "no such key: c")],
    );
    let schema = json!({"type": "object", "properties": {"m": {"type": "object", "additionalProperties": {"type": "integer"}}}});
    case(
        &schema,
        &json!({"m": {"@": 1, "9": 2, "int": 3, "./-": 4, "👑": 5}}),
        &[
            "self.m['@'] == 1",
            "self.m['9'] == 2",
            "self.m['int'] == 3",
            "self.m['./-'] == 4",
            "self.m['👑'] == 5",
        ],
        &[],
    );
}

#[test]
fn list_map_and_list_access() {
    let schema = json!({"type": "object", "properties": {"listMap": {"type": "array", "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["k"], "items": {"type": "object", "properties": {
            "k": {"type": "string", "default": "x"}, "v": {"type": "string"}, "v2": {"type": "string"}}}}}});
    let obj = json!({"listMap": [{"k": "a1", "v": "b1"}, {"k": "a2", "v": "b2"}, {"k": "a3", "v": "b3", "v2": "z"}]});
    case(
        &schema,
        &obj,
        &[
            "has(self.listMap[0].v)",
            "self.listMap.all(m, m.k.startsWith('a'))",
            "self.listMap.all(m, !has(m.v2) || m.v2 == 'z')",
            "self.listMap.exists(m, m.k.endsWith('1'))",
            "self.listMap.exists_one(m, m.k == 'a3')",
            "!self.listMap.all(m, m.k.endsWith('1'))",
            "!self.listMap.exists(m, m.v == 'x')",
            "!self.listMap.exists_one(m, m.k.startsWith('a'))",
            "size(self.listMap.filter(m, m.k == 'a1')) == 1",
            "self.listMap.exists(m, m.k == 'a1' && m.v == 'b1')",
            "self.listMap.map(m, m.v).exists(v, v == 'b1')",
            "self.listMap.exists(m, has(m.v2) && m.v2 == 'z')",
            "!self.listMap.all(m, has(m.v2) && m.v2 != 'z')",
            "self.listMap.exists_one(m, has(m.v2) && m.v2 == 'z')",
            "self.listMap.filter(m, has(m.v2) && m.v2 == 'z').size() == 1",
            "self.listMap.map(m, has(m.v2) && m.v2 == 'z', m.v2).size() == 1",
            "self.listMap.filter(m, has(m.v2) && m.v2 == 'z').map(m, m.v2).size() == 1",
            "self.listMap.exists(m, m.v2 == 'z')",
            "!self.listMap.all(m, m.v2 != 'z')",
            "!self.listMap.all(i, m, has(m.v2) && m.v2 != 'z')",
            "self.listMap.exists(i, m, has(m.v2) && m.v2 == 'z')",
            "self.listMap.existsOne(i, m, has(m.v2) && m.v2 == 'z')",
            "self.listMap.transformList(i, m, has(m.v2) && m.v2 == 'z', m.v2).size() == 1",
            "self.listMap.transformList(i, m, m.v).size() == 3",
        ],
        &[
            ("self.listMap.all(m, m.v2 == 'z')", "no such key: v2"),
            ("self.listMap.exists_one(m, m.v2 == 'z')", "no such key: v2"),
            (
                "self.listMap.filter(m, m.v2 == 'z').size() == 1",
                "no such key: v2",
            ),
            ("self.listMap.map(m, m.v2).size() == 1", "no such key: v2"),
            (
                "self.listMap.map(m, m.v2 == 'z', m.v2).size() == 1",
                "no such key: v2",
            ),
        ],
    );
    let schema = json!({"type": "object", "properties": {"array": {"type": "array", "items": {"type": "integer"}}}});
    case(
        &schema,
        &json!({"array": [1, 1, 2, 2, 3, 3, 4, 5]}),
        &[
            "2 in self.array",
            "self.array.all(e, e > 0)",
            "self.array.exists(e, e > 2)",
            "self.array.exists_one(e, e > 4)",
            "!self.array.all(e, e < 2)",
            "!self.array.exists_one(e, e == 2)",
            "size(self.array.filter(e, e%2 == 0)) == 3",
            "self.array.map(e, e * 20).filter(e, e > 50).exists(e, e == 60)",
            "size(self.array) == 8",
            "self.array.all(i, e, e > 0)",
            "self.array.exists(i, e, e > 2)",
            "self.array.existsOne(i, e, e > 4)",
            "self.array.transformList(i, e, e > 2, e * 2).size() > 0",
            "self.array.transformList(i, e, e * 2).size() > 0",
        ],
        &[("self.array[100] == 0", "index out of bounds: 100")],
    );
}

#[test]
fn int_or_string_and_escaping() {
    let schema = json!({"type": "object", "properties": {"something": {"x-kubernetes-int-or-string": true}}});
    let common = [
        "self.something == 1 || self.something == '25%'",
        "self.something == '25%' || self.something == 1",
        "type(self.something) == int ? self.something == 1 : self.something == '25%'",
        "self.something != ['anything']",
    ];
    let mut valid: Vec<&str> = common.to_vec();
    valid.extend([
        "self.something == '25%'",
        "self.something != 1",
        "type(self.something) == string && self.something == '25%'",
    ]);
    case(&schema, &json!({"something": "25%"}), &valid, &[]);
    let mut valid: Vec<&str> = common.to_vec();
    valid.extend([
        "self.something == 1",
        "self.something != 'some string'",
        "type(self.something) == int && self.something == 1",
    ]);
    case(&schema, &json!({"something": 1}), &valid, &[]);
    let schema = json!({"type": "object", "properties": {"something": {"x-kubernetes-int-or-string": true, "nullable": true}}});
    case(
        &schema,
        &json!({"something": null}),
        &["!has(self.something)"],
        &[("type(self.something) == int", "no such key")],
    );

    let names = [
        "true",
        "false",
        "null",
        "in",
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
        "int",
        "uint",
        "double",
        "bool",
        "string",
        "bytes",
        "list",
        "map",
        "null_type",
        "type",
        "self",
        "getDate",
        "all",
        "_true",
        "dot.dot",
        "dash-dash",
        "slash/slash",
        "underscore_underscore",
        "doubleunderscore__doubleunderscore",
    ];
    let mut props = serde_json::Map::new();
    let mut obj = serde_json::Map::new();
    for (i, n) in names.iter().enumerate() {
        props.insert((*n).to_owned(), json!({"type": "integer"}));
        obj.insert((*n).to_owned(), json!(i));
    }
    props.insert("size".to_owned(), json!({"type": "string"}));
    obj.insert("size".to_owned(), json!("204"));
    let rules: Vec<String> = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let escaped = crate::escape::escape(n).unwrap_or_default();
            format!("self.{escaped} == {i}")
        })
        .collect();
    let mut valid: Vec<&str> = rules.iter().map(String::as_str).collect();
    valid.extend([
        "self.size == '204'",
        "self.__true__ != 34",
        "self.dot__dot__dot == 35",
        "self.doubleunderscore__underscores__doubleunderscore == 39",
    ]);
    case(
        &json!({"type": "object", "properties": props}),
        &Value::Object(obj),
        &valid,
        &[
            // cel-go says `mismatched input 'true' expecting IDENTIFIER`; cel-rust's grammar (with
            // escaped identifiers) reports the same syntax error in other words.
            (
                "self.true == 1",
                "compilation failed: ERROR: <input>:1:6: Syntax error:",
            ),
            ("self == 201", "found no matching overload for '_==_'"),
            ("self.__illegal__ == 301", "undefined field '__illegal__'"),
        ],
    );
}

#[test]
fn list_library_regex_and_optionals() {
    let list = |t: Value| json!({"type": "array", "items": t});
    let (i, d, dur, st, date) = (
        json!({"type": "integer"}),
        json!({"type": "number"}),
        json!({"type": "string", "format": "duration"}),
        json!({"type": "string"}),
        json!({"type": "string", "format": "date"}),
    );
    let schema = json!({"type": "object", "properties": {
        "ints": list(i.clone()), "unsortedInts": list(i.clone()), "emptyInts": list(i),
        "doubles": list(d.clone()), "emptyDoubles": list(d.clone()), "intBackedDoubles": list(d),
        "durations": list(dur.clone()), "unsortedDurations": list(dur.clone()), "emptyDurations": list(dur),
        "strings": list(st.clone()), "emptyStrings": list(st),
        "dates": list(date.clone()), "unsortedDates": list(date),
        "objs": list(json!({"type": "object", "properties": {"f1": {"type": "string"}, "f2": {"type": "string"}}}))}});
    let obj = json!({"ints": [1, 2, 2, 3], "unsortedInts": [2, 1], "emptyInts": [],
        "doubles": [1.0, 2.0, 2.0, 3.0], "emptyDoubles": [], "intBackedDoubles": [1, 2, 2, 3],
        "durations": ["1s", "1m", "1m", "1h"], "unsortedDurations": ["1m", "1s"], "emptyDurations": [],
        "strings": ["a", "b", "b", "c"], "emptyStrings": [],
        "dates": ["2000-01-01", "2000-02-01", "2000-02-01", "2010-01-01"], "unsortedDates": ["2000-02-01", "2000-01-01"],
        "objs": [{"f1": "a", "f2": "a"}, {"f1": "a", "f2": "b"}, {"f1": "a", "f2": "b"}, {"f1": "a", "f2": "c"}]});
    case(
        &schema,
        &obj,
        &[
            "self.ints.sum() == 8",
            "self.ints.min() == 1",
            "self.ints.max() == 3",
            "self.emptyInts.sum() == 0",
            "self.ints.isSorted()",
            "self.emptyInts.isSorted()",
            "self.unsortedInts.isSorted() == false",
            "self.ints.indexOf(2) == 1",
            "self.ints.lastIndexOf(2) == 2",
            "self.ints.indexOf(10) == -1",
            "self.doubles.sum() == 8.0",
            "self.emptyDoubles.sum() == 0.0",
            "self.intBackedDoubles.sum() == 8.0",
            "self.intBackedDoubles.indexOf(2.0) == 1",
            "self.durations.sum() == duration('1h2m1s')",
            "self.durations.min() == duration('1s')",
            "self.durations.max() == duration('1h')",
            "self.emptyDurations.sum() == duration('0')",
            "self.unsortedDurations.isSorted() == false",
            "self.durations.lastIndexOf(duration('1m')) == 2",
            "self.strings.min() == 'a'",
            "self.strings.max() == 'c'",
            "self.strings.indexOf('b') == 1",
            "self.dates.min() == timestamp('2000-01-01T00:00:00.000Z')",
            "self.dates.max() == timestamp('2010-01-01T00:00:00.000Z')",
            "self.unsortedDates.isSorted() == false",
            "self.dates.indexOf(timestamp('2000-02-01T00:00:00.000Z')) == 1",
            "[[1], [2]].indexOf([1]) == 0",
            "[{'a': 1}, {'b': 2}].lastIndexOf({'b': 2}) == 1",
            "self.objs.indexOf(self.objs[1]) == 1",
            "self.objs.lastIndexOf(self.objs[1]) == 2",
            "([0] + self.emptyInts).min() == 0",
            "dyn([]).sum() == 0",
            "dyn([1, 2]).sum() == 3",
            "dyn([1.0, 2.0]).sum() == 3.0",
            "[].sum() == 0",
        ],
        &[
            ("self.emptyInts.min() == 1", "min called on empty list"),
            ("self.emptyStrings.max() == 'c'", "max called on empty list"),
            (
                "['a', 'b'].sum() == 'c'",
                "found no matching overload for 'sum' applied to 'list(string).()",
            ),
            (
                "[[1], [2]].min() == [1]",
                "found no matching overload for 'min' applied to 'list(list(int)).()",
            ),
            (
                "[{'a': 1}, {'b': 2}].max() == {'b': 2}",
                "found no matching overload for 'max' applied to 'list(map(string, int)).()",
            ),
        ],
    );
    let schema = json!({"type": "object", "properties": {"str": {"type": "string"}}});
    case(
        &schema,
        &json!({"str": "this is a 123 string 456"}),
        &[
            "self.str.find('[0-9]+') == '123'",
            "self.str.find('xyz') == ''",
            "self.str.findAll('[0-9]+') == ['123', '456']",
            "self.str.findAll('[0-9]+', 0) == []",
            "self.str.findAll('[0-9]+', 1) == ['123']",
            "self.str.findAll('[0-9]+', 3) == ['123', '456']",
            "self.str.findAll('[0-9]+', -1) == ['123', '456']",
            "self.str.findAll('xyz', 1) == []",
        ],
        &[
            (
                "self.str.find(')') == ''",
                "program instantiation failed: error parsing regexp: unexpected ): `)`",
            ),
            (
                "self.str.findAll(')', 1) == []",
                "program instantiation failed: error parsing regexp: unexpected ): `)`",
            ),
            ("self.str.matches('x++')", "invalid matches argument"),
        ],
    );
    let schema = json!({"type": "object", "properties": {
        "presentObj": {"type": "object", "properties": {"presentStr": {"type": "string"}}},
        "absentObj": {"type": "object", "properties": {"absentStr": {"type": "string"}}},
        "m": {"type": "object", "additionalProperties": {"type": "string"}},
        "l": {"type": "array", "items": {"type": "string"}}}});
    case(
        &schema,
        &json!({"presentObj": {"presentStr": "value"}, "m": {"k": "v"}, "l": ["a"]}),
        &[
            "self.?presentObj.?presentStr == optional.of('value')",
            "self.presentObj.?presentStr == optional.of('value')",
            "self.presentObj.?presentStr.or(optional.of('nope')) == optional.of('value')",
            "self.presentObj.?presentStr.orValue('') == 'value'",
            "self.presentObj.?presentStr.hasValue() == true",
            "self.presentObj.?presentStr.optMap(v, v == 'value').hasValue()",
            "self.?absentObj.?absentStr == optional.none()",
            "self.?absentObj.?absentStr.or(optional.of('nope')) == optional.of('nope')",
            "self.?absentObj.?absentStr.orValue('nope') == 'nope'",
            "self.?absentObj.?absentStr.optMap(v, v == 'value').hasValue() == false",
            "self.m[?'k'] == optional.of('v')",
            "self.m[?'k'].orValue('') == 'v'",
            "self.m[?'k'].optMap(v, v == 'v').hasValue()",
            "self.m[?'x'] == optional.none()",
            "self.m[?'x'].orValue('nope') == 'nope'",
            "self.l[?0] == optional.of('a')",
            "self.l[?1] == optional.none()",
            "self.l[?0].optMap(v, v == 'a').hasValue()",
            "self.l[?1].or(optional.of('nope')) == optional.of('nope')",
            "optional.ofNonZeroValue(1).hasValue()",
            "optional.ofNonZeroValue(uint(1)).hasValue()",
            "optional.ofNonZeroValue('a').hasValue()",
            "optional.ofNonZeroValue(['a']).hasValue()",
            "optional.ofNonZeroValue({'k': 'v'}).hasValue()",
            "optional.ofNonZeroValue(timestamp('2011-08-18T00:00:00.000+01:00')).hasValue()",
            "optional.ofNonZeroValue(null) == optional.none()",
            "optional.ofNonZeroValue(0) == optional.none()",
            "optional.ofNonZeroValue('') == optional.none()",
            "optional.ofNonZeroValue([]) == optional.none()",
            "optional.ofNonZeroValue({}) == optional.none()",
            "optional.ofNonZeroValue(timestamp('0001-01-01T00:00:00.000+00:00')) == optional.none()",
            "optional.ofNonZeroValue(duration('0s')) == optional.none()",
            "{?'k': optional.none(), 'k2': 'v2'} == {'k2': 'v2'}",
            "{?'k': optional.of('v'), 'k2': 'v2'} == {'k': 'v', 'k2': 'v2'}",
            "['a', ?optional.none(), 'c'] == ['a', 'c']",
            "['a', ?optional.of('v'), 'c'] == ['a', 'v', 'c']",
        ],
        &[(
            "self.absentObj.?absentStr == optional.none()",
            "no such key: absentObj",
        )],
    );
}

#[test]
fn kubernetes_libraries() {
    let st = json!({"type": "string"});
    let (s, o) = vals(&[st.clone(), st], &[json!("20"), json!("200M")]);
    case(
        &s,
        &o,
        &[
            "isQuantity(self.val1)",
            "isQuantity(self.val2)",
            "isQuantity(\"20Mi\")",
            "quantity(self.val2) == quantity(\"0.2G\") && quantity(\"0.2G\") == quantity(\"200M\")",
            "quantity(\"2M\") == quantity(\"0.002G\") && quantity(\"2000k\") == quantity(\"2M\") && quantity(\"0.002G\") == quantity(\"2000k\")",
            "quantity(self.val1).isLessThan(quantity(\"100M\"))",
            "quantity(self.val2).isGreaterThan(quantity(\"50M\"))",
            "quantity(self.val2).compareTo(quantity(\"0.2G\")) == 0",
            "quantity(\"50k\").add(quantity(self.val1)) == quantity(\"50.02k\")",
            "quantity(\"50k\").sub(quantity(self.val1)) == quantity(\"49980\")",
            "quantity(self.val1).isInteger()",
            "quantity(\"50k\").add(20).sub(quantity(\"100k\")).sub(-50000) == quantity(\"20\")",
            "quantity(\"50k\").asInteger() == 50000",
            "quantity(\"50k\").sub(20000).asApproximateFloat() == 30000.0",
            "!quantity(\"9999999999999999999999999999999999999G\").isInteger()",
            "sign(quantity(\"-1\")) == -1",
            "type(quantity('1')) == kubernetes.Quantity",
            "[1,2,3,4].isSorted()",
            "url('https:://kubernetes.io/').getHostname() != 'test'",
            "isIP(\"192.168.0.1\")",
            "ip.isCanonical(\"127.0.0.1\")",
            "ip(\"192.168.0.1\").family() > 0",
            "ip(\"0.0.0.0\").isUnspecified()",
            "ip(\"127.0.0.1\").isLoopback()",
            "ip(\"224.0.0.1\").isLinkLocalMulticast()",
            "ip(\"192.168.0.1\").isGlobalUnicast()",
            "type(ip(\"192.168.0.1\")) == net.IP",
            "cidr(\"192.168.0.0/24\").containsIP(ip(\"192.168.0.1\"))",
            "cidr(\"192.168.0.0/24\").containsIP(\"192.168.0.1\")",
            "cidr(\"192.168.0.0/24\").containsCIDR(\"192.168.0.0/25\")",
            "cidr(\"2001:db8::/32\").containsCIDR(cidr(\"2001:db8::/33\"))",
            "type(cidr(\"2001:db8::/32\").ip()) == net.IP",
            "cidr('192.168.0.0/24') == cidr('192.168.0.0/24').masked()",
            "cidr('192.168.0.0/16').prefixLength() == 16",
            "cidr('::1/128').ip().family() == 6",
            "string(cidr('192.168.0.1/24').masked()) == '192.168.0.0/24'",
            "string(ip('2001:0db8::0001')) == '2001:db8::1' && !ip.isCanonical('2001:0db8::0001')",
            "format.dns1123Label().validate(\"my-label-name\") == optional.none()",
            "format.dns1123Subdomain().validate(\"apiextensions.k8s.io\") == optional.none()",
            "format.qualifiedName().validate(\"apiextensions.k8s.io/v1beta1\") == optional.none()",
            "format.dns1123LabelPrefix().validate(\"my-label-prefix-\") == optional.none()",
            "format.dns1123SubdomainPrefix().validate(\"mysubdomain.prefix.-\") == optional.none()",
            "format.dns1035LabelPrefix().validate(\"my-label-prefix-\") == optional.none()",
            "format.uri().validate(\"http://example.com\") == optional.none()",
            "format.uuid().validate(\"123e4567-e89b-12d3-a456-426614174000\") == optional.none()",
            "format.byte().validate(\"aGVsbG8=\") == optional.none()",
            "format.date().validate(\"2021-01-01\") == optional.none()",
            "format.datetime().validate(\"2021-01-01T00:00:00Z\") == optional.none()",
            "format.named(\"dns1123Label\").value().validate(\"my-name\") == optional.none()",
            "format.dns1123Label().validate(\"contains a space\").value()[0] == \"a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')\"",
            "!format.named(\"unknown\").hasValue()",
            "url('https://example.com:80/a?x=1&x=2').getQuery()['x'] == ['1', '2'] && url('https://example.com:80/a').getPort() == '80'",
            "isURL('https://example.com') && !isURL('example.com')",
        ],
        &[
            (
                "quantity('200K') == quantity('1')",
                "unable to parse quantity's suffix",
            ),
            (
                "quantity('Three') == quantity('1')",
                "quantities must match the regular expression",
            ),
            (
                "ip('::ffff:1.2.3.4').family() == 6",
                "IPv4-mapped IPv6 address \"::ffff:1.2.3.4\" is not allowed",
            ),
            (
                "quantity('1').sign() == 1",
                "found no matching overload for 'sign' applied to 'kubernetes.Quantity.()'",
            ),
        ],
    );
}
