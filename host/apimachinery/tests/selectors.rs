//! Label/field selectors (SEL-01, GAP-04) and metadata validation (META-02, META-11, ERR-08,
//! GAP-05 causes). Tables follow the ideas of the Go tests in k8s.io/apimachinery
//! (pkg/labels, pkg/fields, pkg/util/validation, pkg/api/validation); expected messages are
//! Kubernetes v1.32's wording.

use serde_json::{Map, Value, json};

fn labels(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => panic!("labels must be an object"),
    }
}

const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
const QNAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

mod selectors {
    use super::*;
    use wasmgate_apimachinery::selectors::{
        FieldOp, FieldSelector, LabelOp, LabelRequirement, LabelSelector, SelectorError,
        builtin_field_label_error, builtin_field_supported, builtin_field_value,
        escape_field_value, unescape_field_value,
    };

    // ---- label selector grammar (SEL-01, GAP-04) ----

    #[test]
    fn sel01_label_parse_good_strings_round_trip() {
        // From labels.TestSelectorParse: String() equals the input without spaces.
        for s in [
            "x=a,y=b,z=c",
            "",
            "x!=a,y=b",
            "x=",
            "x= ",
            "x=,z= ",
            "x= ,z= ",
            "!x",
            "x>1",
            "x>1,z<5",
        ] {
            let sel = LabelSelector::parse(s).unwrap_or_else(|e| panic!("{s:?}: {e}"));
            assert_eq!(sel.to_string(), s.replace(' ', ""), "{s:?}");
        }
    }

    #[test]
    fn gap04_label_parse_all_operators() {
        let sel = LabelSelector::parse("a=1, b==2, c!=3, d in (x,y), e notin (z), f, !g, h>4, i<5")
            .unwrap();
        let ops: Vec<(&str, LabelOp, Vec<&str>)> = sel
            .requirements()
            .iter()
            .map(|r| {
                (
                    r.key(),
                    r.op(),
                    r.values().iter().map(String::as_str).collect(),
                )
            })
            .collect();
        assert_eq!(
            ops,
            vec![
                ("a", LabelOp::Equals, vec!["1"]),
                ("b", LabelOp::DoubleEquals, vec!["2"]),
                ("c", LabelOp::NotEquals, vec!["3"]),
                ("d", LabelOp::In, vec!["x", "y"]),
                ("e", LabelOp::NotIn, vec!["z"]),
                ("f", LabelOp::Exists, vec![]),
                ("g", LabelOp::DoesNotExist, vec![]),
                ("h", LabelOp::GreaterThan, vec!["4"]),
                ("i", LabelOp::LessThan, vec!["5"]),
            ]
        );
        assert_eq!(
            sel.to_string(),
            "a=1,b==2,c!=3,d in (x,y),e notin (z),f,!g,h>4,i<5"
        );
    }

    #[test]
    fn sel01_label_canonical_string_sorts_keys_and_values() {
        let cases = [
            ("z,y in (b,a),x", "x,y in (a,b),z"),
            ("  z = 1 ,\ta != 2\n", "a!=2,z=1"),
            ("x in (b,a,b)", "x in (a,b)"),
            ("x in ()", "x in ()"),
            ("x notin (,a)", "x notin (,a)"),
            ("x in (a,)", "x in (,a)"),
            ("x in (a,,b)", "x in (,a,b)"),
            ("x in (,,)", "x in ()"),
            ("x in(a)", "x in (a)"),
            ("in in (in, notin)", "in in (in,notin)"),
            ("notin=in", "notin=in"),
            ("example.com/app=web", "example.com/app=web"),
        ];
        for (input, want) in cases {
            let sel = LabelSelector::parse(input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
            assert_eq!(sel.to_string(), want, "{input:?}");
        }
    }

    #[test]
    fn sel01_label_parse_errors_use_go_wording() {
        let cases: &[(&str, String)] = &[
            ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt".into()),
            ("x==a==b", "found '==', expected: ',' or 'end of string'".into()),
            ("!x=a", "found '=', expected: ',' or 'end of string'".into()),
            (",", "found ',', expected: !, identifier, or 'end of string'".into()),
            ("=a", "found '=', expected: !, identifier, or 'end of string'".into()),
            ("x,", "found '', expected: identifier after ','".into()),
            ("x,,y", "found ',', expected: identifier after ','".into()),
            ("x in a", "unable to parse requirement: found 'a' expected: '('".into()),
            ("x in (a", "unable to parse requirement: found '', expected: ',' or ')'".into()),
            ("x in (a b)", "unable to parse requirement: found 'b', expected: ',' or ')'".into()),
            ("x in (=)", "unable to parse requirement: found '=', expected: ',', ')' or identifier".into()),
            ("x in (a,=)", "unable to parse requirement: found '=', expected: ',', or identifier".into()),
            ("x=(", "unable to parse requirement: found '(', expected: identifier".into()),
            ("!", "unable to parse requirement: found '', expected: identifier".into()),
            ("!!x", "unable to parse requirement: found '!', expected: identifier".into()),
            (
                "x<a",
                "unable to parse requirement: values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, the value must be an integer".into(),
            ),
            (
                "x=a||y=b",
                format!("unable to parse requirement: values[0][x]: Invalid value: \"a||y\": {LABEL_VALUE_MSG}"),
            ),
            (
                "Foo_=bar",
                format!("unable to parse requirement: <nil>: Invalid value: \"Foo_\": name part {QNAME_MSG}"),
            ),
            (
                "a/b/c",
                format!("unable to parse requirement: <nil>: Invalid value: \"a/b/c\": a qualified name {QNAME_MSG} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"),
            ),
        ];
        for (input, want) in cases {
            let err = LabelSelector::parse(input).expect_err(input);
            assert_eq!(&err.to_string(), want, "{input:?}");
        }
    }

    #[test]
    fn gap04_label_gt_lt_negative_value_fails_both_checks() {
        // "-1" is an integer but not a valid label value.
        let err = LabelSelector::parse("x>-1").unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "unable to parse requirement: values[0][x]: Invalid value: \"-1\": {LABEL_VALUE_MSG}"
            )
        );
        // Both errors are listed, in brackets.
        let err = LabelSelector::parse("x>a_").unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "unable to parse requirement: [values[0]: Invalid value: \"a_\": for 'Gt', 'Lt' operators, the value must be an integer, values[0][x]: Invalid value: \"a_\": {LABEL_VALUE_MSG}]"
            )
        );
        assert!(matches!(
            err,
            SelectorError::InvalidRequirement {
                from_parser: true,
                ..
            }
        ));
    }

    #[test]
    fn sel01_label_value_too_long() {
        let long = "a".repeat(64);
        let err = LabelSelector::parse(&format!("x={long}")).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "unable to parse requirement: values[0][x]: Invalid value: \"{long}\": must be no more than 63 characters"
            )
        );
        assert!(LabelSelector::parse(&format!("x={}", "a".repeat(63))).is_ok());
    }

    #[test]
    fn sel01_label_nul_ends_input_like_go() {
        // Go's lexer reads a NUL byte as "end of string" where a token starts, and as a
        // separator inside an identifier.
        assert_eq!(
            LabelSelector::parse("a=b \0c=d").unwrap().to_string(),
            "a=b"
        );
        assert_eq!(LabelSelector::parse("a=b\0").unwrap().to_string(), "a=b");
        assert_eq!(
            LabelSelector::parse("a=b\0c=d").unwrap_err().to_string(),
            "found 'c', expected: ',' or 'end of string'"
        );
    }

    #[test]
    fn sel01_label_empty_is_everything() {
        for s in ["", "   ", "\t\n"] {
            let sel = LabelSelector::parse(s).unwrap();
            assert!(sel.is_everything());
            assert!(sel.matches(None));
            assert_eq!(sel, LabelSelector::default());
        }
        assert!(!LabelSelector::parse("a").unwrap().is_everything());
    }

    // ---- label matching ----

    #[test]
    fn sel01_label_matching_table() {
        let l = labels(json!({"app": "web", "tier": "fe", "n": "5", "empty": ""}));
        let cases = [
            ("app=web", true),
            ("app==web", true),
            ("app=db", false),
            ("app!=web", false),
            ("app!=db", true),
            ("app in (web,db)", true),
            ("app in (db)", false),
            ("app notin (web)", false),
            ("app notin (db)", true),
            ("app", true),
            ("!app", false),
            ("app,tier=fe", true),
            ("app=web,tier=be", false),
            ("empty=", true),
            ("empty", true),
            ("empty in ()", true),
            ("n>4", true),
            ("n>5", false),
            ("n<6", true),
            ("n<5", false),
            ("app>1", false),
            ("", true),
        ];
        for (sel, want) in cases {
            let s = LabelSelector::parse(sel).unwrap();
            assert_eq!(s.matches(Some(&l)), want, "{sel:?}");
        }
    }

    #[test]
    fn sel01_label_missing_label_semantics() {
        // notin, != and !k match objects without the label; in, =, k, >, < do not.
        let l = labels(json!({"other": "x"}));
        let cases = [
            ("env notin (prod)", true),
            ("env!=prod", true),
            ("!env", true),
            ("env in (prod)", false),
            ("env=prod", false),
            ("env=", false),
            ("env", false),
            ("env>1", false),
            ("env<1", false),
        ];
        for (sel, want) in cases {
            let s = LabelSelector::parse(sel).unwrap();
            assert_eq!(s.matches(Some(&l)), want, "{sel:?} with labels");
            assert_eq!(s.matches(None), want, "{sel:?} without labels");
        }
    }

    #[test]
    fn sel01_label_requires_exact_match() {
        let sel = LabelSelector::parse("a=1,b in (2),c in (3,4),d!=5,e==6").unwrap();
        assert_eq!(sel.requires_exact_match("a"), Some("1"));
        assert_eq!(sel.requires_exact_match("b"), Some("2"));
        assert_eq!(sel.requires_exact_match("c"), None);
        assert_eq!(sel.requires_exact_match("d"), None);
        assert_eq!(sel.requires_exact_match("e"), Some("6"));
        assert_eq!(sel.requires_exact_match("f"), None);
    }

    // ---- metav1.LabelSelector ----

    #[test]
    fn sel01_label_selector_object_forms() {
        let sel = LabelSelector::from_label_selector(&json!({
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["fe", "be"]},
                {"key": "env", "operator": "DoesNotExist"},
                {"key": "track", "operator": "NotIn", "values": ["canary"]},
                {"key": "app", "operator": "Exists", "values": null}
            ]
        }))
        .unwrap();
        assert_eq!(
            sel.to_string(),
            "app=web,app,!env,tier in (be,fe),track notin (canary)"
        );
        assert!(sel.matches(Some(&labels(json!({"app": "web", "tier": "be"})))));
        assert!(!sel.matches(Some(&labels(
            json!({"app": "web", "tier": "be", "env": "x"})
        ))));
        assert!(!sel.matches(Some(&labels(json!({"app": "web", "tier": "qa"})))));
        assert!(!sel.matches(Some(&labels(
            json!({"app": "web", "tier": "fe", "track": "canary"})
        ))));
    }

    #[test]
    fn sel03_label_selector_null_is_nothing_and_empty_is_everything() {
        let nothing = LabelSelector::from_label_selector(&Value::Null).unwrap();
        assert!(nothing.matches_nothing());
        assert!(!nothing.is_everything());
        assert!(!nothing.matches(None));
        assert!(!nothing.matches(Some(&labels(json!({"a": "b"})))));
        assert_eq!(nothing.to_string(), "");
        assert_eq!(nothing, LabelSelector::nothing());

        for v in [
            json!({}),
            json!({"matchLabels": {}, "matchExpressions": []}),
            json!({"matchLabels": null}),
        ] {
            let all = LabelSelector::from_label_selector(&v).unwrap();
            assert!(all.is_everything(), "{v}");
            assert!(all.matches(None));
        }
    }

    #[test]
    fn sel01_label_selector_object_errors() {
        let cases: Vec<(Value, String)> = vec![
            (
                json!({"matchExpressions": [{"key": "a", "operator": "Foo"}]}),
                "\"Foo\" is not a valid label selector operator".into(),
            ),
            (
                json!({"matchExpressions": [{"key": "a", "operator": "In"}]}),
                "values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty".into(),
            ),
            (
                json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}),
                "values: Invalid value: [\"x\"]: values set must be empty for exists and does not exist".into(),
            ),
            (
                json!({"matchLabels": {"app": "a b"}}),
                format!("values[0][app]: Invalid value: \"a b\": {LABEL_VALUE_MSG}"),
            ),
            (
                json!({"matchLabels": {"-app": "x"}}),
                format!("key: Invalid value: \"-app\": name part {QNAME_MSG}"),
            ),
            (json!("app=web"), "invalid label selector: must be an object".into()),
            (json!({"matchLabels": []}), "invalid label selector: matchLabels must be an object".into()),
        ];
        for (v, want) in cases {
            let err = LabelSelector::from_label_selector(&v).expect_err(&v.to_string());
            assert_eq!(err.to_string(), want, "{v}");
        }
    }

    #[test]
    fn gap04_label_requirement_constructor() {
        // From labels.TestRequirementConstructor.
        let ok = [
            ("x3", LabelOp::In, vec!["foo"]),
            ("x4", LabelOp::NotIn, vec!["foo"]),
            ("x6", LabelOp::Exists, vec![]),
            ("x7", LabelOp::DoesNotExist, vec![]),
            ("x11", LabelOp::GreaterThan, vec!["1"]),
            ("x12", LabelOp::LessThan, vec!["6"]),
        ];
        for (key, op, values) in ok {
            let values = values.into_iter().map(String::from).collect();
            assert!(LabelRequirement::new(key, op, values).is_ok(), "{key}");
        }
        let bad = [
            ("x1", LabelOp::In, vec![], "values"),
            ("x5", LabelOp::Equals, vec!["bar", "foo"], "values"),
            ("x8", LabelOp::Exists, vec!["foo"], "values"),
            ("x13", LabelOp::GreaterThan, vec![], "values"),
            ("x14", LabelOp::GreaterThan, vec!["bar"], "values[0]"),
            ("x17", LabelOp::Equals, vec!["a b"], "values[0][x17]"),
        ];
        for (key, op, values, field) in bad {
            let values = values.into_iter().map(String::from).collect();
            match LabelRequirement::new(key, op, values) {
                Err(SelectorError::InvalidRequirement {
                    errors,
                    from_parser: false,
                }) => {
                    assert_eq!(errors.len(), 1, "{key}");
                    assert_eq!(errors[0].field, field, "{key}");
                    assert_eq!(errors[0].reason(), "FieldValueInvalid");
                }
                other => panic!("{key}: {other:?}"),
            }
        }
        let long_key = "a".repeat(254);
        match LabelRequirement::new(&long_key, LabelOp::Exists, vec![]) {
            Err(SelectorError::InvalidRequirement { errors, .. }) => {
                assert_eq!(errors[0].field, "key")
            }
            other => panic!("{other:?}"),
        }
        let err =
            LabelRequirement::new("x5", LabelOp::Equals, vec!["a".into(), "b".into()]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "values: Invalid value: [\"a\",\"b\"]: exact-match compatibility requires one single value"
        );
    }

    #[test]
    fn sel01_label_from_set_and_add() {
        let set = labels(json!({"b": "2", "a": "1"}));
        let mut sel = LabelSelector::from_set(&set);
        assert_eq!(sel.to_string(), "a=1,b=2");
        assert!(sel.matches(Some(&set)));
        sel.add(LabelRequirement::new("aa", LabelOp::DoesNotExist, vec![]).unwrap());
        assert_eq!(sel.to_string(), "a=1,!aa,b=2");
        assert!(LabelSelector::from_set(&Map::new()).is_everything());
    }

    // ---- field selectors (SEL-01, GAP-04) ----

    #[test]
    fn gap04_field_parse_operators() {
        let sel = FieldSelector::parse("metadata.name==foo,status.phase!=Running,spec.nodeName=n1")
            .unwrap();
        let reqs: Vec<(&str, FieldOp, &str)> = sel
            .requirements()
            .iter()
            .map(|r| (r.field.as_str(), r.op, r.value.as_str()))
            .collect();
        assert_eq!(
            reqs,
            vec![
                ("metadata.name", FieldOp::Equals, "foo"),
                ("spec.nodeName", FieldOp::Equals, "n1"),
                ("status.phase", FieldOp::NotEquals, "Running"),
            ]
        );
        assert_eq!(
            sel.to_string(),
            "metadata.name=foo,spec.nodeName=n1,status.phase!=Running"
        );
        assert_eq!(sel.exact("metadata.name"), Some("foo"));
        assert_eq!(sel.exact("status.phase"), None);
        assert_eq!(sel.exact("metadata.namespace"), None);
    }

    #[test]
    fn sel01_field_parse_good_strings_round_trip() {
        // From fields.TestSelectorParse.
        for s in ["x=a,y=b,z=c", "", "x!=a,y=b", r"x=a||y\=b", r"x=a\=\=b"] {
            let sel = FieldSelector::parse(s).unwrap_or_else(|e| panic!("{s:?}: {e}"));
            assert_eq!(sel.to_string(), s);
        }
        assert_eq!(
            FieldSelector::parse(r"x=a\=\=b").unwrap().requirements()[0].value,
            "a==b"
        );
    }

    #[test]
    fn sel01_field_parse_errors_use_go_wording() {
        let cases = [
            (
                "x=a||y=b",
                "invalid field selector: unescaped character in value: 61",
            ),
            (
                "x==a==b",
                "invalid field selector: unescaped character in value: 61",
            ),
            ("x=a,b", "invalid selector: 'x=a,b'; can't understand 'b'"),
            (
                "x in (a)",
                "invalid selector: 'x in (a)'; can't understand 'x in (a)'",
            ),
            ("x", "invalid selector: 'x'; can't understand 'x'"),
            (
                r"x=a\q",
                r"invalid field selector: invalid escape sequence: \q",
            ),
            (
                r"k=\",
                r"invalid field selector: invalid escape sequence: \",
            ),
            (
                r"k=\\\",
                r"invalid field selector: invalid escape sequence: \",
            ),
        ];
        for (input, want) in cases {
            let err = FieldSelector::parse(input).expect_err(input);
            assert_eq!(err.to_string(), want, "{input:?}");
        }
    }

    #[test]
    fn gap04_field_escaping() {
        // From fields.TestEscapeValue.
        for (raw, escaped) in [
            ("", ""),
            ("a", "a"),
            ("=", r"\="),
            (",", r"\,"),
            (r"\", r"\\"),
            (r"\=\,\", r"\\\=\\\,\\"),
        ] {
            assert_eq!(escape_field_value(raw), escaped);
            assert_eq!(unescape_field_value(escaped).unwrap(), raw);
        }
        for bad in [r"\", r"\\\", r"\a"] {
            assert!(matches!(
                unescape_field_value(bad),
                Err(SelectorError::InvalidEscapeSequence(_))
            ));
        }
        assert_eq!(
            unescape_field_value("a=b"),
            Err(SelectorError::UnescapedCharacter('='))
        );
        assert_eq!(
            unescape_field_value("a,b"),
            Err(SelectorError::UnescapedCharacter(','))
        );
    }

    #[test]
    fn gap04_field_escaped_commas_do_not_split_terms() {
        // From fields.TestSplitTerms; terms are ordered by their text.
        let sel = FieldSelector::parse(r"k=\,,k2=v2").unwrap();
        let got: Vec<(&str, &str)> = sel
            .requirements()
            .iter()
            .map(|r| (r.field.as_str(), r.value.as_str()))
            .collect();
        assert_eq!(got, vec![("k2", "v2"), ("k", ",")]);
        assert_eq!(sel.to_string(), r"k2=v2,k=\,");

        let sel = FieldSelector::parse(r"k=\\,k2=v2").unwrap();
        assert_eq!(sel.requirements()[1].value, r"\");
        let sel = FieldSelector::parse(r"k=\\\,,k2=v2").unwrap();
        assert_eq!(sel.requirements()[1].value, r"\,");
        let sel = FieldSelector::parse("함=수,목=록").unwrap();
        assert_eq!(sel.requirements().len(), 2);
        assert_eq!(sel.exact("함"), Some("수"));
    }

    #[test]
    fn sel01_field_empty_terms_and_empty_pairs_are_dropped() {
        for s in ["", ",", ",,", "=", "==", "!=", "=,"] {
            let sel = FieldSelector::parse(s).unwrap();
            assert!(sel.is_everything(), "{s:?}");
            assert!(sel.matches(|_| None));
        }
        let sel = FieldSelector::parse("a=b,").unwrap();
        assert_eq!(sel.requirements().len(), 1);
        // An empty field with a value is kept (and then rejected by field label conversion).
        let sel = FieldSelector::parse("=x").unwrap();
        assert_eq!(sel.requirements()[0].field, "");
        // No trimming: the space is part of the field label.
        let sel = FieldSelector::parse("metadata.name = x").unwrap();
        assert_eq!(sel.requirements()[0].field, "metadata.name ");
        assert_eq!(sel.requirements()[0].value, " x");
    }

    #[test]
    fn sel01_field_matching() {
        // From fields.TestSelectorMatches.
        let fields = labels(json!({"foo": "bar", "baz": "blah", "complex": r"=value\,\"}));
        let get = |f: &str| fields.get(f).and_then(Value::as_str).map(String::from);
        let cases = [
            ("foo=bar", true),
            ("baz=blah", true),
            ("foo=bar,baz=blah", true),
            (r"foo=bar,baz=blah,complex=\=value\\\,\\", true),
            ("foo=blah", false),
            ("baz=bar", false),
            ("foo=bar,foobar=bar,baz=blah", false),
            ("foobar=", true),
            ("foobar!=", false),
            ("foo!=x", true),
            ("", true),
        ];
        for (sel, want) in cases {
            assert_eq!(
                FieldSelector::parse(sel).unwrap().matches(get),
                want,
                "{sel:?}"
            );
        }
    }

    #[test]
    fn sel01_field_exact_takes_first_equals_term() {
        let sel = FieldSelector::parse("metadata.name!=a,metadata.name=b,metadata.name=c").unwrap();
        assert_eq!(sel.exact("metadata.name"), Some("b"));
        assert_eq!(sel.first_unsupported(|f| f == "metadata.name"), None);
        let sel = FieldSelector::parse("spec.x=1,data.y=2").unwrap();
        assert_eq!(
            sel.first_unsupported(|f| f.starts_with("metadata.")),
            Some("data.y")
        );
    }

    // ---- built-in field labels (KUBECTL-WIRE §5, §7) ----

    fn event() -> Value {
        json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "alpha.17f", "namespace": "default"},
            "involvedObject": {"kind": "ConfigMap", "namespace": "default", "name": "alpha",
                               "uid": "u-1", "apiVersion": "v1", "resourceVersion": "42"},
            "reason": "Created", "type": "Normal", "reportingComponent": "wasmgate"
        })
    }

    #[test]
    fn sel01_describe_event_query_matches_involved_object() {
        // kubectl describe cm alpha (KUBECTL-WIRE §7); the term order varies between runs.
        let ev = event();
        for q in [
            "involvedObject.name=alpha,involvedObject.namespace=default,involvedObject.kind=ConfigMap,involvedObject.uid=u-1",
            "involvedObject.uid=u-1,involvedObject.kind=ConfigMap,involvedObject.name=alpha,involvedObject.namespace=default",
        ] {
            let sel = FieldSelector::parse(q).unwrap();
            assert_eq!(
                sel.first_unsupported(|f| builtin_field_supported("", "events", f)),
                None
            );
            assert!(sel.matches(|f| builtin_field_value("", "events", &ev, f)));
        }
        let other = FieldSelector::parse("involvedObject.name=beta").unwrap();
        assert!(!other.matches(|f| builtin_field_value("", "events", &ev, f)));
    }

    #[test]
    fn sel01_builtin_event_fields() {
        let ev = event();
        let v = |f: &str| builtin_field_value("", "events", &ev, f);
        assert_eq!(v("metadata.name").as_deref(), Some("alpha.17f"));
        assert_eq!(v("metadata.namespace").as_deref(), Some("default"));
        assert_eq!(v("involvedObject.resourceVersion").as_deref(), Some("42"));
        assert_eq!(v("involvedObject.fieldPath").as_deref(), Some(""));
        assert_eq!(v("reason").as_deref(), Some("Created"));
        assert_eq!(v("type").as_deref(), Some("Normal"));
        assert_eq!(v("reportingComponent").as_deref(), Some("wasmgate"));
        // source falls back to reportingComponent when source.component is empty.
        assert_eq!(v("source").as_deref(), Some("wasmgate"));
        let mut with_source = ev.clone();
        with_source["source"] = json!({"component": "kubelet"});
        assert_eq!(
            builtin_field_value("", "events", &with_source, "source").as_deref(),
            Some("kubelet")
        );
        assert_eq!(v("message"), None);
        assert_eq!(
            builtin_field_label_error("", "events", "message"),
            "field label not supported: message"
        );
    }

    #[test]
    fn sel01_builtin_events_k8s_io_fields() {
        let ev = json!({
            "metadata": {"name": "e", "namespace": "ns"},
            "regarding": {"kind": "Pod", "name": "p"},
            "reportingController": "ctrl", "reason": "R", "type": "Warning"
        });
        let v = |f: &str| builtin_field_value("events.k8s.io", "events", &ev, f);
        assert_eq!(v("regarding.kind").as_deref(), Some("Pod"));
        assert_eq!(v("regarding.name").as_deref(), Some("p"));
        assert_eq!(v("reportingController").as_deref(), Some("ctrl"));
        assert_eq!(v("source").as_deref(), Some("ctrl"));
        assert_eq!(v("involvedObject.kind"), None);
        // A core-shaped object is read too (same storage).
        let core = event();
        assert_eq!(
            builtin_field_value("events.k8s.io", "events", &core, "regarding.name").as_deref(),
            Some("alpha")
        );
    }

    #[test]
    fn sel01_builtin_namespace_secret_fields() {
        let ns = json!({"metadata": {"name": "dev"}, "status": {"phase": "Active"}});
        assert_eq!(
            builtin_field_value("", "namespaces", &ns, "status.phase").as_deref(),
            Some("Active")
        );
        assert_eq!(
            builtin_field_value("", "namespaces", &ns, "metadata.name").as_deref(),
            Some("dev")
        );
        // Namespace's own conversion does not accept metadata.namespace.
        assert_eq!(
            builtin_field_value("", "namespaces", &ns, "metadata.namespace"),
            None
        );
        assert_eq!(
            builtin_field_label_error("", "namespaces", "metadata.namespace"),
            "field label not supported: metadata.namespace"
        );

        let secret =
            json!({"metadata": {"name": "s", "namespace": "ns"}, "type": "kubernetes.io/tls"});
        assert_eq!(
            builtin_field_value("", "secrets", &secret, "type").as_deref(),
            Some("kubernetes.io/tls")
        );
        assert!(builtin_field_supported("", "secrets", "metadata.namespace"));
        assert!(!builtin_field_supported("", "secrets", "data.x"));
    }

    #[test]
    fn gap04_builtin_default_kinds_accept_only_metadata() {
        let cm = json!({"metadata": {"name": "alpha", "namespace": "default"}, "data": {"x": "1"}});
        assert_eq!(
            builtin_field_value("", "configmaps", &cm, "metadata.name").as_deref(),
            Some("alpha")
        );
        assert_eq!(
            builtin_field_value("", "configmaps", &cm, "metadata.namespace").as_deref(),
            Some("default")
        );
        assert_eq!(builtin_field_value("", "configmaps", &cm, "data.x"), None);
        assert_eq!(
            builtin_field_label_error("", "configmaps", "data.x"),
            r#""data.x" is not a known field selector: only "metadata.name", "metadata.namespace""#
        );
        // Cluster-scoped kinds without their own conversion still accept metadata.namespace.
        let cr = json!({"metadata": {"name": "admin"}});
        assert_eq!(
            builtin_field_value(
                "rbac.authorization.k8s.io",
                "clusterroles",
                &cr,
                "metadata.namespace"
            )
            .as_deref(),
            Some("")
        );
        assert!(builtin_field_supported(
            "apps",
            "deployments",
            "metadata.name"
        ));
        assert!(!builtin_field_supported(
            "apps",
            "deployments",
            "spec.replicas"
        ));
    }

    #[test]
    fn gap04_builtin_pod_node_job_fields() {
        let pod = json!({
            "metadata": {"name": "p", "namespace": "ns"},
            "spec": {"nodeName": "n1", "restartPolicy": "Always"},
            "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}]}
        });
        let v = |f: &str| builtin_field_value("", "pods", &pod, f);
        assert_eq!(v("spec.nodeName").as_deref(), Some("n1"));
        assert_eq!(v("spec.host").as_deref(), Some("n1"));
        assert_eq!(v("spec.hostNetwork").as_deref(), Some("false"));
        assert_eq!(v("status.podIP").as_deref(), Some("10.0.0.1"));
        assert_eq!(v("status.podIPs").as_deref(), Some(""));
        assert_eq!(v("spec.schedulerName").as_deref(), Some(""));
        assert_eq!(v("spec.containers"), None);

        let node = json!({"metadata": {"name": "n1"}, "spec": {"unschedulable": true}});
        assert_eq!(
            builtin_field_value("", "nodes", &node, "spec.unschedulable").as_deref(),
            Some("true")
        );
        assert_eq!(
            builtin_field_value("", "nodes", &node, "metadata.namespace"),
            None
        );

        let job = json!({"metadata": {"name": "j", "namespace": "ns"}, "status": {"succeeded": 2}});
        assert_eq!(
            builtin_field_value("batch", "jobs", &job, "status.successful").as_deref(),
            Some("2")
        );
        assert_eq!(
            builtin_field_value("batch", "jobs", &json!({}), "status.successful").as_deref(),
            Some("0")
        );
        assert_eq!(
            builtin_field_label_error("batch", "jobs", "status.succeeded"),
            r#"field label "status.succeeded" not supported for batchv1.Job"#
        );

        let rc = json!({"status": {"replicas": 3}});
        assert_eq!(
            builtin_field_value("", "replicationcontrollers", &rc, "status.replicas").as_deref(),
            Some("3")
        );
        let svc = json!({"spec": {"type": "ClusterIP", "clusterIP": "10.96.0.1"}});
        assert_eq!(
            builtin_field_value("", "services", &svc, "spec.type").as_deref(),
            Some("ClusterIP")
        );
        let csr = json!({"spec": {"signerName": "kubernetes.io/kubelet-serving"}});
        assert_eq!(
            builtin_field_value(
                "certificates.k8s.io",
                "certificatesigningrequests",
                &csr,
                "spec.signerName"
            )
            .as_deref(),
            Some("kubernetes.io/kubelet-serving")
        );
    }
}

mod validation {
    use super::*;
    use wasmgate_apimachinery::validation::{
        FieldError, FieldErrorKind, aggregate_message, go_quote, invalid_message,
        is_config_map_key, is_dns1035_label, is_dns1123_label, is_dns1123_subdomain,
        is_qualified_name, is_valid_label_value, qualified_kind, validate_annotations,
        validate_label_selector, validate_labels, validate_object_meta,
    };

    // ---- string formats ----

    #[test]
    fn meta01_dns1123_subdomain_table() {
        let good = [
            "a".to_owned(),
            "ab".into(),
            "abc".into(),
            "a1".into(),
            "a-1".into(),
            "a--1--2--b".into(),
            "0".into(),
            "01".into(),
            "012".into(),
            "1a".into(),
            "1-a".into(),
            "1--a--b--2".into(),
            "a.a".into(),
            "ab.a".into(),
            "abc.a".into(),
            "a1.a".into(),
            "a-1.a".into(),
            "a--1--2--b.a".into(),
            "a.1".into(),
            "a.b.c.d.e".into(),
            "aaaaa.bbbbb.ccccc.ddddd.eeeee".into(),
            "1.2.3.4.5".into(),
            "11.22.33.44.55".into(),
            "a".repeat(253),
        ];
        for v in &good {
            assert!(is_dns1123_subdomain(v).is_empty(), "{v:?}");
        }
        let bad = [
            "".to_owned(),
            "A".into(),
            "ABC".into(),
            "aBc".into(),
            "A1".into(),
            "A-1".into(),
            "1-A".into(),
            "-".into(),
            "a-".into(),
            "-a".into(),
            "1-".into(),
            "-1".into(),
            "_".into(),
            "a_".into(),
            "_a".into(),
            "a_b".into(),
            "1_".into(),
            "_1".into(),
            "1_2".into(),
            ".".into(),
            "a.".into(),
            ".a".into(),
            "a..b".into(),
            "1.".into(),
            ".1".into(),
            "1..2".into(),
            " ".into(),
            "a ".into(),
            " a".into(),
            "a b".into(),
            "A.a".into(),
            "aB.a".into(),
            "ab.A".into(),
            "A1.a".into(),
            "a1.A".into(),
            "A.B.C.D.E".into(),
            "a.B.c.d.e".into(),
            "a@b".into(),
            "a,b".into(),
            "a;b".into(),
            "a:b".into(),
            "a%b".into(),
            "a?b".into(),
            "a$b".into(),
            "é".into(),
        ];
        for v in &bad {
            assert_eq!(
                is_dns1123_subdomain(v),
                vec![SUBDOMAIN_MSG.to_owned()],
                "{v:?}"
            );
        }
        assert_eq!(
            is_dns1123_subdomain(&"a".repeat(254)),
            vec!["must be no more than 253 characters".to_owned()]
        );
    }

    #[test]
    fn meta01_dns1123_label_table() {
        for v in ["a", "ab", "a-1", "0", "1--a--b--2", &"a".repeat(63)] {
            assert!(is_dns1123_label(v).is_empty(), "{v:?}");
        }
        assert_eq!(
            is_dns1123_label("a.b"),
            vec!["must not contain dots".to_owned()]
        );
        for v in ["", "A", "-a", "a-", "a_b", "a b"] {
            assert_eq!(is_dns1123_label(v), vec![LABEL_MSG.to_owned()], "{v:?}");
        }
        assert_eq!(
            is_dns1123_label(&"a".repeat(64)),
            vec!["must be no more than 63 characters".to_owned()]
        );
        // Too long and dotted: both messages.
        let long_dotted = format!("{}.b", "a".repeat(63));
        assert_eq!(
            is_dns1123_label(&long_dotted),
            vec![
                "must be no more than 63 characters".to_owned(),
                "must not contain dots".to_owned()
            ]
        );
        assert!(is_dns1035_label("a-1").is_empty());
        assert_eq!(is_dns1035_label("1a").len(), 1);
    }

    #[test]
    fn meta11_qualified_name_table() {
        let good = [
            "simple".to_owned(),
            "now-with-dashes".into(),
            "1-starts-with-num".into(),
            "1234".into(),
            "simple/simple".into(),
            "now-with-dashes/simple".into(),
            "now-with-dashes/now-with-dashes".into(),
            "now.with.dots/simple".into(),
            "now-with.dashes-and.dots/simple".into(),
            "1-num.2-num/3-num".into(),
            "1234/5678".into(),
            "1.2.3.4/5678".into(),
            "Uppercase_Is_OK_123".into(),
            "example.com/Uppercase_Is_OK_123".into(),
            "requests.storage-foo".into(),
            "a".repeat(63),
            format!("{}/{}", "a".repeat(253), "b".repeat(63)),
        ];
        for v in &good {
            assert!(is_qualified_name(v).is_empty(), "{v:?}");
        }
        let bad = [
            "nospecialchars%^=@".to_owned(),
            "cantendwithadash-".into(),
            "-cantstartwithadash-".into(),
            "only/one/slash".into(),
            "Example.com/abc".into(),
            "example_com/abc".into(),
            "example.com/".into(),
            "/simple".into(),
            "a".repeat(64),
            format!("{}/abc", "a".repeat(254)),
        ];
        for v in &bad {
            assert!(!is_qualified_name(v).is_empty(), "{v:?}");
        }
        assert_eq!(
            is_qualified_name("/simple"),
            vec!["prefix part must be non-empty".to_owned()]
        );
        assert_eq!(
            is_qualified_name("example.com/"),
            vec![
                "name part must be non-empty".to_owned(),
                format!("name part {QNAME_MSG}")
            ]
        );
        assert_eq!(
            is_qualified_name("Example.com/abc"),
            vec![format!("prefix part {SUBDOMAIN_MSG}")]
        );
        assert_eq!(
            is_qualified_name(&"a".repeat(64)),
            vec!["name part must be no more than 63 characters".to_owned()]
        );
        assert_eq!(
            is_qualified_name("only/one/slash"),
            vec![format!(
                "a qualified name {QNAME_MSG} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            )]
        );
    }

    #[test]
    fn meta11_label_value_table() {
        for v in [
            "simple",
            "now-with-dashes",
            "1-starts-with-num",
            "end-with-num-1",
            "1234",
            "",
            &"a".repeat(63),
        ] {
            assert!(is_valid_label_value(v).is_empty(), "{v:?}");
        }
        for v in [
            "nospecialchars%^=@",
            "Tama-nui-te-rā.is.Māori.sun",
            "\\backslashes\\are\\bad",
            "-starts-with-dash",
            "ends-with-dash-",
            ".starts.with.dot",
            "ends.with.dot.",
        ] {
            assert_eq!(
                is_valid_label_value(v),
                vec![LABEL_VALUE_MSG.to_owned()],
                "{v:?}"
            );
        }
        assert_eq!(
            is_valid_label_value(&"a".repeat(64)),
            vec!["must be no more than 63 characters".to_owned()]
        );
    }

    #[test]
    fn meta11_config_map_key_table() {
        for v in ["a", "abc", "a-b", "a_b", "A.B", ".a", "a..b", "1"] {
            assert!(is_config_map_key(v).is_empty(), "{v:?}");
        }
        let charset = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";
        assert_eq!(is_config_map_key(""), vec![charset.to_owned()]);
        assert_eq!(is_config_map_key("a b"), vec![charset.to_owned()]);
        assert_eq!(is_config_map_key("a/b"), vec![charset.to_owned()]);
        assert_eq!(is_config_map_key("."), vec!["must not be '.'".to_owned()]);
        assert_eq!(is_config_map_key(".."), vec!["must not be '..'".to_owned()]);
        assert_eq!(
            is_config_map_key("..a"),
            vec!["must not start with '..'".to_owned()]
        );
        assert_eq!(
            is_config_map_key(&"a".repeat(254)),
            vec!["must be no more than 253 characters".to_owned()]
        );
    }

    // ---- FieldError (GAP-05 causes, ERR-08 text) ----

    #[test]
    fn err08_field_error_display_matches_go() {
        let e = FieldError::invalid(
            "metadata.name",
            "Foo",
            is_dns1123_subdomain("Foo").join(", "),
        );
        assert_eq!(
            e.to_string(),
            format!("metadata.name: Invalid value: \"Foo\": {SUBDOMAIN_MSG}")
        );
        assert_eq!(
            e.message(),
            format!("Invalid value: \"Foo\": {SUBDOMAIN_MSG}")
        );
        assert_eq!(e.reason(), "FieldValueInvalid");

        let cases = [
            (
                FieldError::required("spec.x", ""),
                "spec.x: Required value",
                "FieldValueRequired",
            ),
            (
                FieldError::required("metadata.name", "name or generateName is required"),
                "metadata.name: Required value: name or generateName is required",
                "FieldValueRequired",
            ),
            (
                FieldError::forbidden("metadata.namespace", "not allowed on this type"),
                "metadata.namespace: Forbidden: not allowed on this type",
                "FieldValueForbidden",
            ),
            (
                FieldError::too_long("metadata.annotations", Some(262144)),
                "metadata.annotations: Too long: may not be more than 262144 bytes",
                "FieldValueTooLong",
            ),
            (
                FieldError::too_long("x", None),
                "x: Too long: value is too long",
                "FieldValueTooLong",
            ),
            (
                FieldError::too_many("spec.items", Some(5), Some(3)),
                "spec.items: Too many: 5: must have at most 3 items",
                "FieldValueTooMany",
            ),
            (
                FieldError::too_many("spec.items", None, Some(3)),
                "spec.items: Too many: must have at most 3 items",
                "FieldValueTooMany",
            ),
            (
                FieldError::not_supported("spec.type", "Bogus", &["ClusterIP", "NodePort"]),
                "spec.type: Unsupported value: \"Bogus\": supported values: \"ClusterIP\", \"NodePort\"",
                "FieldValueNotSupported",
            ),
            (
                FieldError::not_found("spec.ref", "x"),
                "spec.ref: Not found: \"x\"",
                "FieldValueNotFound",
            ),
            (
                FieldError::duplicate("spec.ports[1].name", "http"),
                "spec.ports[1].name: Duplicate value: \"http\"",
                "FieldValueDuplicate",
            ),
            (
                FieldError::internal("spec", "boom"),
                "spec: Internal error: boom",
                "InternalError",
            ),
            (
                FieldError::type_invalid("spec.replicas", "3", "must be of type integer"),
                "spec.replicas: Invalid value: \"3\": must be of type integer",
                "FieldValueTypeInvalid",
            ),
            (
                FieldError::invalid("spec.replicas", 11, "must be less than or equal to 10"),
                "spec.replicas: Invalid value: 11: must be less than or equal to 10",
                "FieldValueInvalid",
            ),
            (
                FieldError::invalid("spec.flag", true, ""),
                "spec.flag: Invalid value: true",
                "FieldValueInvalid",
            ),
            (
                FieldError::invalid("spec", json!({"b": 1, "a": "<"}), "bad"),
                "spec: Invalid value: {\"a\":\"\\u003c\",\"b\":1}: bad",
                "FieldValueInvalid",
            ),
            (
                FieldError::invalid("spec.q", "a\"b\n", "quoted"),
                "spec.q: Invalid value: \"a\\\"b\\n\": quoted",
                "FieldValueInvalid",
            ),
        ];
        for (e, display, reason) in cases {
            assert_eq!(e.to_string(), display);
            assert_eq!(e.reason(), reason, "{display}");
        }
        let omitted = FieldError {
            kind: FieldErrorKind::Invalid,
            field: "f".into(),
            bad_value: None,
            detail: "d".into(),
        };
        assert_eq!(omitted.to_string(), "f: Invalid value: d");
    }

    #[test]
    fn gap05_field_error_status_cause() {
        let e = FieldError::required("metadata.name", "name or generateName is required");
        assert_eq!(
            e.to_status_cause(),
            json!({"reason": "FieldValueRequired", "message": "Required value: name or generateName is required", "field": "metadata.name"})
        );
    }

    #[test]
    fn err08_invalid_message_formats() {
        let one = [FieldError::invalid("metadata.name", "Foo", "bad")];
        assert_eq!(
            invalid_message("ConfigMap", "Foo", &one),
            "ConfigMap \"Foo\" is invalid: metadata.name: Invalid value: \"Foo\": bad"
        );
        let two = [
            FieldError::invalid("spec.replicas", 11, "must be less than or equal to 10"),
            FieldError::required("spec.cronSpec", ""),
            FieldError::required("spec.cronSpec", ""),
        ];
        assert_eq!(
            invalid_message(
                &qualified_kind("stable.example.com", "CronTab"),
                "my-new-cron-object",
                &two
            ),
            "CronTab.stable.example.com \"my-new-cron-object\" is invalid: [spec.replicas: Invalid value: 11: must be less than or equal to 10, spec.cronSpec: Required value]"
        );
        assert_eq!(invalid_message("Pod", "p", &[]), "Pod \"p\" is invalid");
        assert_eq!(aggregate_message(&[]), "");
        assert_eq!(qualified_kind("", "Pod"), "Pod");
        assert_eq!(go_quote("we\"ird"), "\"we\\\"ird\"");
    }

    // ---- ObjectMeta (META-01/02/11) ----

    #[test]
    fn meta01_name_checks() {
        let errs = validate_object_meta(
            &json!({"name": "Foo", "namespace": "default"}),
            true,
            is_dns1123_subdomain,
        );
        assert_eq!(errs.len(), 1);
        assert_eq!(
            errs[0].to_string(),
            format!("metadata.name: Invalid value: \"Foo\": {SUBDOMAIN_MSG}")
        );
        assert!(
            validate_object_meta(
                &json!({"name": "a.b-c", "namespace": "default"}),
                true,
                is_dns1123_subdomain
            )
            .is_empty()
        );
        let errs = validate_object_meta(&json!({"name": "a.b"}), false, is_dns1123_label);
        assert_eq!(
            errs[0].to_string(),
            "metadata.name: Invalid value: \"a.b\": must not contain dots"
        );
    }

    #[test]
    fn meta01_required_and_forbidden_namespace() {
        let errs = validate_object_meta(&json!({}), true, is_dns1123_subdomain);
        let shown: Vec<String> = errs.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            vec![
                "metadata.name: Required value: name or generateName is required",
                "metadata.namespace: Required value",
            ]
        );
        let errs = validate_object_meta(&Value::Null, false, is_dns1123_subdomain);
        assert_eq!(errs.len(), 1);
        let errs = validate_object_meta(
            &json!({"name": "n", "namespace": "x"}),
            false,
            is_dns1123_subdomain,
        );
        assert_eq!(
            errs[0].to_string(),
            "metadata.namespace: Forbidden: not allowed on this type"
        );
        let errs = validate_object_meta(
            &json!({"name": "n", "namespace": "Bad"}),
            true,
            is_dns1123_subdomain,
        );
        assert_eq!(
            errs[0].to_string(),
            format!("metadata.namespace: Invalid value: \"Bad\": {LABEL_MSG}")
        );
    }

    #[test]
    fn meta02_generate_name_prefix_checks() {
        // The seed's generateName is valid with its trailing dash (masked before checking).
        let meta = json!({"generateName": "kubernetes-bootcamp-2321272333-", "name": "kubernetes-bootcamp-2321272333-ix8pt", "namespace": "default"});
        assert!(validate_object_meta(&meta, true, is_dns1123_subdomain).is_empty());
        let errs = validate_object_meta(
            &json!({"generateName": "Bad_", "name": "ok", "namespace": "d"}),
            true,
            is_dns1123_subdomain,
        );
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].field, "metadata.generateName");
        assert_eq!(errs[0].bad_value, Some(json!("Bad_")));
        // generateName alone does not satisfy the name requirement (generation happens first).
        let errs = validate_object_meta(
            &json!({"generateName": "x-", "namespace": "d"}),
            true,
            is_dns1123_subdomain,
        );
        assert_eq!(
            errs[0].to_string(),
            "metadata.name: Required value: name or generateName is required"
        );
    }

    #[test]
    fn meta01_generation_must_not_be_negative() {
        let errs = validate_object_meta(
            &json!({"name": "n", "generation": -1}),
            false,
            is_dns1123_subdomain,
        );
        assert_eq!(
            errs[0].to_string(),
            "metadata.generation: Invalid value: -1: must be greater than or equal to 0"
        );
    }

    #[test]
    fn meta11_labels() {
        assert!(
            validate_labels(
                &json!({"app": "web", "example.com/tier": "", "n": "1"}),
                "metadata.labels"
            )
            .is_empty()
        );
        assert!(validate_labels(&Value::Null, "metadata.labels").is_empty());
        let errs = validate_labels(&json!({"app": "-bad", "a/b/c": "ok"}), "metadata.labels");
        let shown: Vec<String> = errs.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            vec![
                format!(
                    "metadata.labels: Invalid value: \"a/b/c\": a qualified name {QNAME_MSG} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
                ),
                format!("metadata.labels: Invalid value: \"-bad\": {LABEL_VALUE_MSG}"),
            ]
        );
        let errs = validate_labels(&json!({"n": 1}), "metadata.labels");
        assert_eq!(
            errs[0].to_string(),
            "metadata.labels[n]: Invalid value: 1: must be of type string"
        );
        assert_eq!(errs[0].reason(), "FieldValueTypeInvalid");
    }

    #[test]
    fn meta11_annotations_keys_and_size_limit() {
        // Keys are checked lower-cased: upper-case prefixes are fine for annotations.
        assert!(validate_annotations(&json!({"Example.com/Foo": "x", "kubectl.kubernetes.io/last-applied-configuration": "{}"}), "metadata.annotations").is_empty());
        let errs = validate_annotations(&json!({"a b": "x"}), "metadata.annotations");
        assert_eq!(
            errs[0].to_string(),
            format!("metadata.annotations: Invalid value: \"a b\": name part {QNAME_MSG}")
        );

        // 256 KiB of keys plus values is allowed; one byte more is not.
        let key = "big";
        let at_limit = "v".repeat(256 * 1024 - key.len());
        assert!(validate_annotations(&json!({key: at_limit}), "metadata.annotations").is_empty());
        let over = "v".repeat(256 * 1024 - key.len() + 1);
        let errs = validate_annotations(&json!({key: over}), "metadata.annotations");
        assert_eq!(errs.len(), 1);
        assert_eq!(
            errs[0].to_string(),
            "metadata.annotations: Too long: may not be more than 262144 bytes"
        );
        assert_eq!(errs[0].reason(), "FieldValueTooLong");
        // The limit is on the total across annotations.
        let half = "v".repeat(128 * 1024);
        let errs = validate_annotations(&json!({"a": half, "b": half}), "metadata.annotations");
        assert_eq!(errs.len(), 1);
    }

    #[test]
    fn meta11_finalizers() {
        let ok = json!({"name": "n", "finalizers": ["kubernetes.io/pvc-protection", "foregroundDeletion"]});
        assert!(validate_object_meta(&ok, false, is_dns1123_subdomain).is_empty());
        let errs = validate_object_meta(
            &json!({"name": "n", "finalizers": ["bad finalizer"]}),
            false,
            is_dns1123_subdomain,
        );
        assert_eq!(errs[0].field, "metadata.finalizers");
        assert_eq!(errs[0].bad_value, Some(json!("bad finalizer")));
        let errs = validate_object_meta(
            &json!({"name": "n", "finalizers": ["orphan", "foregroundDeletion"]}),
            false,
            is_dns1123_subdomain,
        );
        assert_eq!(
            errs[0].to_string(),
            "metadata.finalizers: Invalid value: [\"orphan\",\"foregroundDeletion\"]: finalizer orphan and foregroundDeletion cannot be both set"
        );
    }

    #[test]
    fn meta01_owner_references() {
        let good = json!({"name": "n", "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u1", "controller": true},
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "u2", "controller": false}
        ]});
        assert!(validate_object_meta(&good, false, is_dns1123_subdomain).is_empty());

        let errs = validate_object_meta(
            &json!({"name": "n", "ownerReferences": [{}]}),
            false,
            is_dns1123_subdomain,
        );
        let shown: Vec<String> = errs.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            vec![
                "metadata.ownerReferences.apiVersion: Invalid value: \"\": version must not be empty",
                "metadata.ownerReferences.kind: Invalid value: \"\": kind must not be empty",
                "metadata.ownerReferences.name: Invalid value: \"\": name must not be empty",
                "metadata.ownerReferences.uid: Invalid value: \"\": uid must not be empty",
            ]
        );

        let two = json!({"name": "n", "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "a", "uid": "1", "controller": true},
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "b", "uid": "2", "controller": true}
        ]});
        let errs = validate_object_meta(&two, false, is_dns1123_subdomain);
        assert_eq!(errs.len(), 1);
        assert!(errs[0].detail.ends_with("Only one reference can have Controller set to true. Found \"true\" in references for ReplicaSet/a and ReplicaSet/b"));

        let event_owner = json!({"name": "n", "ownerReferences": [{"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "1"}]});
        let errs = validate_object_meta(&event_owner, false, is_dns1123_subdomain);
        assert_eq!(
            errs[0].detail,
            "/v1, Kind=Event is disallowed from being an owner"
        );
        assert_eq!(errs[0].field, "metadata.ownerReferences");
    }

    #[test]
    fn meta12_managed_fields_shape() {
        let meta = json!({"name": "n", "managedFields": [
            {"manager": "kubectl", "operation": "Apply", "fieldsType": "FieldsV1"},
            {"manager": "bad\u{7}", "operation": "Bogus", "fieldsType": "FieldsV2"}
        ]});
        let errs = validate_object_meta(&meta, false, is_dns1123_subdomain);
        let shown: Vec<String> = errs.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            vec![
                "metadata.managedFields[1].operation: Invalid value: \"Bogus\": must be `Apply` or `Update`",
                "metadata.managedFields[1].fieldsType: Invalid value: \"FieldsV2\": must be `FieldsV1`",
                "metadata.managedFields[1].manager: Invalid value: \"bad\\a\": invalid character U+0007 (at position 3)",
            ]
        );
    }

    #[test]
    fn meta01_metadata_of_wrong_type() {
        let errs = validate_object_meta(&json!("x"), true, is_dns1123_subdomain);
        assert_eq!(
            errs[0].to_string(),
            "metadata: Invalid value: \"x\": must be of type object"
        );
    }

    #[test]
    fn sel01_validate_label_selector_object() {
        let ok = json!({"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "t", "operator": "In", "values": ["a"]}]});
        assert!(validate_label_selector(&ok, "spec.selector").is_empty());
        let bad = json!({"matchExpressions": [
            {"key": "t", "operator": "In"},
            {"key": "u", "operator": "Exists", "values": ["x"]},
            {"key": "-v", "operator": "Foo", "values": ["-x"]}
        ]});
        let shown: Vec<String> = validate_label_selector(&bad, "spec.selector")
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            shown,
            vec![
                "spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'".to_owned(),
                "spec.selector.matchExpressions[1].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'".to_owned(),
                "spec.selector.matchExpressions[2].operator: Invalid value: \"Foo\": not a valid selector operator".to_owned(),
                format!("spec.selector.matchExpressions[2].key: Invalid value: \"-v\": name part {QNAME_MSG}"),
                format!("spec.selector.matchExpressions[2].values[0]: Invalid value: \"-x\": {LABEL_VALUE_MSG}"),
            ]
        );
    }
}
