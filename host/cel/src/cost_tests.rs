//! Estimated costs compared with kube-apiserver 1.32's `TestCelEstimatedCostStability`
//! (`apiextensions-apiserver/pkg/apiserver/schema/cel/celcoststability_test.go`): the rule
//! sits at the root, declared without resource-root fields, as kube's test does.

use serde_json::{Value, json};
use wasmgate_apimachinery::structural::Schema;

use crate::compile::compile;
use crate::decl::decl_for;
use crate::test_support::{eq3, val_schema};

fn check(schema: &Value, cases: &[(&str, u64)]) {
    let s = Schema::parse(schema, "s").unwrap_or_else(|e| panic!("{e:?}"));
    let decl = decl_for(s.root(), false, "selfType0").unwrap_or_else(|| panic!("no decl"));
    let mut wrong = Vec::new();
    for (rule, expected) in cases {
        match compile(rule, &decl, false) {
            Ok(c) if c.cost == *expected => {}
            Ok(c) => wrong.push(format!("{rule}: expected {expected}, got {}", c.cost)),
            Err(e) => wrong.push(format!("{rule}: {e}")),
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn scalars() {
    let int = json!({"type": "integer"});
    check(
        &val_schema(&[
            int.clone(),
            int.clone(),
            json!({"type": "integer", "format": "int32"}),
        ]),
        &[
            (&eq3("self.val1", "self.val2", "9223372036854775807"), 8),
            ("type(self.val1) == int", 4),
            ("self.val3 + 1 == 2147483647 + 1", 5),
        ],
    );
    let num = json!({"type": "number"});
    check(
        &val_schema(&[num.clone(), num.clone(), num.clone(), num]),
        &[
            ("type(self.val1) == double", 4),
            ("self.val1 == 1.0", 2),
            ("double(5) < 10.0", 2),
        ],
    );
    let s = json!({"type": "string"});
    check(
        &val_schema(&[s.clone(), s]),
        &[
            (&eq3("self.val1", "self.val2", "'Rook takes 👑'"), 314585),
            ("self.val1.startsWith('Rook')", 3),
            ("!self.val1.startsWith('knight')", 4),
            ("self.val1.matches('^[^0-9]*$')", 943721),
            ("!self.val1.matches('^[0-9]*$')", 629149),
            ("size(self.val1) == 12", 4),
            ("self.val1.charAt(3) == 'k'", 4),
            ("self.val1.indexOf('o') == 1", 314576),
            ("self.val1.indexOf('o', 2) == 2", 314576),
            ("self.val1.replace(' ', 'x') == 'Rookxtakesx👑'", 629150),
            ("self.val1.split(' ') == ['Rook', 'takes', '👑']", 629159),
            ("self.val1.split(' ', 2) == ['Rook', 'takes 👑']", 629159),
            ("self.val1.substring(5) == 'takes 👑'", 314576),
            ("self.val1.substring(4, 10).trim() == 'takes'", 629149),
            ("self.val1.upperAscii() == 'ROOK TAKES 👑'", 314577),
            ("self.val1.lowerAscii() == self.val1.lowerAscii()", 943723),
            ("self.val1 == '''l1\nl2'''", 3),
        ],
    );
    let b = json!({"type": "string", "format": "byte"});
    check(
        &val_schema(&[b.clone(), b]),
        &[
            ("self.val1 == self.val2", 314577),
            ("self.val1 == b'AB'", 3),
            ("size(self.val1) == 2", 4),
        ],
    );
    let d = json!({"type": "string", "format": "duration"});
    check(
        &val_schema(&[d.clone(), d]),
        &[
            (&eq3("self.val1", "self.val2", "duration('1h2m3s4ms')"), 16),
            ("self.val1 == duration('1h2m') + duration('3s4ms')", 6),
            ("self.val1.getHours() == 1", 4),
            ("type(self.val1) == google.protobuf.Duration", 4),
        ],
    );
    let t = json!({"type": "string", "format": "date-time"});
    check(
        &val_schema(&[t.clone(), t]),
        &[
            (
                "self.val1 == timestamp('2011-08-18T00:00:00.000+01:00') + duration('19h3m37s10ms')",
                6,
            ),
            ("self.val1.getDate('01:00') == 18", 4),
        ],
    );
    check(
        &json!({"type": "object", "properties": {"enumStr": {"type": "string", "enum": ["Pending", "Available", "Bound", "Released", "Failed"]}}}),
        &[
            ("self.enumStr == 'Pending'", 3),
            ("self.enumStr in ['Pending', 'Available']", 14),
        ],
    );
}

#[test]
fn conversions() {
    let (i, n, b, s, by, d, dt, date) = (
        json!({"type": "integer"}),
        json!({"type": "number"}),
        json!({"type": "boolean"}),
        json!({"type": "string"}),
        json!({"type": "string", "format": "byte"}),
        json!({"type": "string", "format": "duration"}),
        json!({"type": "string", "format": "date-time"}),
        json!({"type": "string", "format": "date"}),
    );
    check(
        &val_schema(&[
            i,
            n.clone(),
            n.clone(),
            n,
            b,
            s.clone(),
            by,
            s.clone(),
            d,
            s.clone(),
            dt,
            s,
            date,
        ]),
        &[
            ("int(self.val2) == self.val1", 5),
            ("double(self.val1) == self.val2", 5),
            ("bytes(self.val6) == self.val7", 629150),
            ("string(self.val1) == self.val6", 314578),
            ("string(self.val4) == '10.5'", 4),
            ("string(self.val7) == self.val6", 629150),
            ("duration(self.val8) == self.val9", 6),
            ("timestamp(self.val10) == self.val11", 6),
            ("string(self.val11) == self.val10", 314578),
            ("timestamp(self.val12) == self.val13", 6),
            ("string(self.val13) == self.val12", 314578),
        ],
    );
}

#[test]
fn lists_sets_and_maps() {
    let il = json!({"type": "array", "items": {"type": "integer"}});
    check(
        &val_schema(&[il.clone(), il]),
        &[
            (&eq3("self.val1", "self.val2", "[1, 2, 3]"), 157317),
            ("1 in self.val1", 1572865),
            ("self.val2[0] in self.val1", 1572868),
            ("!(0 in self.val1)", 1572866),
            ("self.val1 + self.val2 == [1, 2, 3, 1, 2, 3]", 16),
            ("self.val1 + [4, 5] == [1, 2, 3, 4, 5]", 24),
            ("has(self.val1)", 1),
            ("has(self.val1) && has(self.val2)", 2),
            ("!has(self.val1)", 2),
            ("self.val1.all(k, size(self.val1) > 0)", 11010044),
            ("self.val1.exists_one(k, self.val1 == [2])", 23592949),
            ("!self.val1.exists_one(k, size(self.val1) > 0)", 9437183),
            ("size(self.val1) == 2", 4),
            (
                "size(self.val1.filter(k, size(self.val1) > 1)) == 1",
                26738686,
            ),
        ],
    );
    let ss = json!({"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}});
    check(
        &val_schema(&[ss.clone(), ss]),
        &[
            ("self.val1 == ['c', 'b', 'a']", 13),
            ("self.val1 == self.val2", 104862),
            ("'a' in self.val1", 1048577),
            ("self.val1.all(k, size(self.val1) > 0)", 7340028),
            ("self.val1.exists_one(k, self.val1 == ['a'])", 15728629),
            (
                "size(self.val1.filter(k, size(self.val1) > 1)) == 1",
                17825790,
            ),
        ],
    );
    let m = json!({"type": "object", "additionalProperties": {"type": "string"}});
    check(
        &val_schema(&[m.clone(), m]),
        &[
            ("self.val1 == self.val2", 39326),
            ("'k1' in self.val1", 3),
            ("!('k3' in self.val1)", 4),
            ("self.val1 == {'k1': 'a', 'k2': 'b'}", 33),
            ("self.val1.all(k, size(self.val1) > 0)", 2752508),
            ("self.val1.exists_one(k, size(self.val1) > 0)", 2359294),
            (
                "size(self.val1.filter(k, size(self.val1) > 1)) == 1",
                6684670,
            ),
        ],
    );
    let mi = json!({"type": "object", "properties": {"val": {"type": "object", "additionalProperties": {"type": "integer"}}}});
    check(
        &mi,
        &[
            ("!has(self.val.a)", 3),
            ("has(self.val.b)", 2),
            ("self.val.all(k, self.val[k] > 0)", 3595115),
            ("self.val.exists_one(k, self.val[k] == 2)", 2696338),
            ("!self.val.exists_one(k, self.val[k] > 0)", 3145728),
            ("size(self.val.filter(k, self.val[k] > 1)) == 1", 8089017),
        ],
    );
    let arr = json!({"type": "object", "properties": {"array": {"type": "array", "items": {"type": "integer"}}}});
    check(
        &arr,
        &[
            ("2 in self.array", 1572865),
            ("self.array.all(e, e > 0)", 7864318),
            ("self.array.exists(e, e > 2)", 9437181),
            ("self.array.exists_one(e, e > 4)", 6291456),
            ("!self.array.exists_one(e, e == 2)", 4718594),
            ("size(self.array.filter(e, e%2 == 0)) == 3", 25165823),
            (
                "self.array.map(e, e * 20).filter(e, e > 50).exists(e, e == 60)",
                53477367,
            ),
        ],
    );
}

#[test]
fn objects_and_list_maps() {
    let objs = json!({"type": "object", "properties": {"objs": {"type": "array", "items": {"type": "object",
        "properties": {"f1": {"type": "string"}, "f2": {"type": "string"}}}}}});
    check(&objs, &[("self.objs[0] == self.objs[1]", 6)]);
    let access = json!({"type": "object", "properties": {
        "a": {"type": "object", "properties": {"b": {"type": "integer"}, "c": {"type": "integer"}, "d": {"type": "integer", "nullable": true}}},
        "a1": {"type": "object", "properties": {"b1": {"type": "object", "properties": {"c1": {"type": "integer"}}},
            "d2": {"type": "object", "properties": {"e2": {"type": "integer"}}}}}}});
    check(
        &access,
        &[
            ("has(self.a.b)", 2),
            ("has(self.a1.b1.c1)", 3),
            ("!(has(self.a1.d2) && has(self.a1.d2.e2))", 6),
            ("!has(self.a1.d2)", 3),
            ("has(self.a) && has(self.a1)", 2),
        ],
    );
    let lm = json!({"type": "object", "properties": {"listMap": {"type": "array", "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["k"], "items": {"type": "object", "properties": {
            "k": {"type": "string", "default": "x"}, "v": {"type": "string"}, "v2": {"type": "string"}}}}}});
    check(
        &lm,
        &[
            ("has(self.listMap[0].v)", 3),
            ("self.listMap.all(m, m.k.startsWith('a'))", 6291453),
            ("self.listMap.all(m, !has(m.v2) || m.v2 == 'z')", 8388603),
            ("self.listMap.exists(m, m.k.endsWith('1'))", 7340028),
            ("self.listMap.exists_one(m, m.k == 'a3')", 5242879),
            ("size(self.listMap.filter(m, m.k == 'a1')) == 1", 16777215),
            (
                "self.listMap.exists(m, m.k == 'a1' && m.v == 'b1')",
                10485753,
            ),
            ("self.listMap.map(m, m.v).exists(v, v == 'b1')", 19922939),
            (
                "self.listMap.map(m, has(m.v2) && m.v2 == 'z', m.v2).size() == 1",
                18874365,
            ),
            (
                "self.listMap.filter(m, has(m.v2) && m.v2 == 'z').map(m, m.v2).size() == 1",
                32505851,
            ),
        ],
    );
    let ios = json!({"type": "object", "properties": {"something": {"x-kubernetes-int-or-string": true}}});
    check(
        &ios,
        &[
            (
                "type(self.something) == int ? self.something == 1 : self.something == '25%'",
                7,
            ),
            ("self.something == '25%'", 3),
            ("self.something == 1 || self.something == '25%'", 6),
            ("self.something != ['anything']", 13),
        ],
    );
    let embedded = json!({"type": "object", "properties": {"embedded": {"type": "object",
        "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}}});
    check(
        &embedded,
        &[
            ("self.embedded.kind == 'Pod'", 4),
            ("self.embedded.metadata.name == 'foo'", 5),
            ("self.embedded.metadata.generateName == 'pickItForMe'", 6),
            ("has(self.embedded)", 1),
        ],
    );
}

/// Runtime costs compared with kube's `TestCelCostStability`.
fn runtime(schema: &Value, obj: &Value, cases: &[(&str, u64)]) {
    let s = Schema::parse(schema, "s").unwrap_or_else(|e| panic!("{e:?}"));
    let decl = decl_for(s.root(), false, "selfType0").unwrap_or_else(|| panic!("no decl"));
    let mut wrong = Vec::new();
    for (rule, expected) in cases {
        let c = compile(rule, &decl, false).unwrap_or_else(|e| panic!("{rule}: {e:?}"));
        let self_val = crate::value::from_json(obj, &decl).unwrap_or_else(|e| panic!("{e:?}"));
        let mut meter = crate::eval::Meter {
            cost: 0,
            limit: u64::MAX,
            work: 0,
            work_limit: u64::MAX,
        };
        let r = crate::eval::run(
            &c.program,
            vec![("self", self_val)],
            &mut meter,
            &mut crate::eval::RegexCache::new(),
        );
        if !matches!(r, Ok(crate::value::Val::Bool(true))) {
            wrong.push(format!("{rule}: {r:?}"));
        } else if meter.cost != *expected {
            wrong.push(format!("{rule}: expected {expected}, got {}", meter.cost));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn runtime_costs() {
    let s = json!({"type": "string"});
    runtime(
        &val_schema(&[s.clone(), s]),
        &json!({"val1": "Rook takes 👑", "val2": "Rook takes 👑"}),
        &[
            (&eq3("self.val1", "self.val2", "'Rook takes 👑'"), 14),
            ("self.val1.startsWith('Rook')", 4),
            ("!self.val1.startsWith('knight')", 5),
            ("self.val1.matches('^[^0-9]*$')", 8),
            ("!self.val1.matches('^[0-9]*$')", 7),
            ("type(self.val1) == string", 4),
            ("size(self.val1) == 12", 4),
            ("self.val1.charAt(3) == 'k'", 4),
            ("self.val1.indexOf('o') == 1", 4),
            ("self.val1.replace(' ', 'x') == 'Rookxtakesx👑'", 7),
            ("self.val1.split(' ') == ['Rook', 'takes', '👑']", 6),
            ("self.val1.substring(5) == 'takes 👑'", 5),
            ("self.val1.substring(4, 10).trim() == 'takes'", 6),
            ("self.val1.upperAscii() == 'ROOK TAKES 👑'", 6),
            ("self.val1.lowerAscii() == self.val1.lowerAscii()", 10),
        ],
    );
    let il = json!({"type": "array", "items": {"type": "integer"}});
    runtime(
        &val_schema(&[il.clone(), il]),
        &json!({"val1": [1, 2, 3], "val2": [1, 2, 3]}),
        &[
            (&eq3("self.val1", "self.val2", "[1, 2, 3]"), 11),
            ("1 in self.val1", 5),
            ("self.val2[0] in self.val1", 8),
            ("!(0 in self.val1)", 6),
            ("self.val1 + self.val2 == [1, 2, 3, 1, 2, 3]", 6),
            ("self.val1 + [4, 5] == [1, 2, 3, 4, 5]", 4),
            ("has(self.val1)", 1),
            ("has(self.val1) && has(self.val2)", 2),
        ],
    );
    let ss = json!({"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}});
    let si =
        json!({"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "integer"}});
    runtime(
        &val_schema(&[ss.clone(), ss, si]),
        &json!({"val1": ["a", "b", "c"], "val2": ["a", "c", "b"], "val3": (0..1000).collect::<Vec<i64>>()}),
        &[
            ("self.val1 == ['c', 'b', 'a']", 3),
            ("self.val1 == self.val2", 5),
            ("'a' in self.val1", 5),
            ("self.val1 + ['c', 'd'] == ['a', 'b', 'c', 'd']", 4),
            ("sets.contains(self.val1, ['a'])", 6),
            ("sets.equivalent(self.val1, ['a', 'b', 'c'])", 21),
            ("sets.contains(self.val3, [1])", 1003),
            ("!sets.equivalent(self.val3, [1, 2, 3])", 6004),
        ],
    );
    let m = json!({"type": "object", "additionalProperties": {"type": "string"}});
    runtime(
        &val_schema(&[m.clone(), m]),
        &json!({"val1": {"k1": "a", "k2": "b"}, "val2": {"k2": "b", "k1": "a"}}),
        &[
            ("self.val1 == self.val2", 5),
            ("'k1' in self.val1", 3),
            ("!('k3' in self.val1)", 4),
            ("self.val1 == {'k1': 'a', 'k2': 'b'}", 3),
        ],
    );
}
