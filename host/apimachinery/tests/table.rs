//! Tests for `wasmgate_apimachinery::table`: server-side Table printing (TABLE-01, TABLE-02,
//! TABLE-04, GAP-07). Everything runs at a fixed `now`; expected values were derived by hand
//! from the Kubernetes 1.32 Go printers.
//!
//! Golden files live in `tests/golden/table/`. To rewrite them after an intended change, run
//! `WASMGATE_BLESS_TABLE_GOLDEN=1 cargo test -p wasmgate-apimachinery --test table` and review
//! the diff.

#[cfg(test)]
mod table {
    use serde_json::{Value, json};
    use time::macros::datetime;
    use time::{Duration, OffsetDateTime};
    use wasmgate_apimachinery::table::{
        ColumnDefinition, IncludeObject, TABLE_API_V1, TABLE_API_V1BETA1, Table, TableRow,
        age_since, build_row, build_table, builtin_cells, builtin_columns, cells_for, columns_for,
        date_cell, default_cells, default_columns, human_duration, list_metadata, row_object,
    };

    const NOW: OffsetDateTime = datetime!(2025-06-01 12:00:00 UTC);

    /// The crate's directory as `cargo test` gives it when running the test (a shared
    /// target directory may hold a binary compiled in another clone).
    fn manifest_dir() -> std::path::PathBuf {
        std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(
            || std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")),
            std::path::PathBuf::from,
        )
    }

    fn golden(file: &str, actual: &Value) {
        let path = format!("{}/tests/golden/table/{file}", manifest_dir().display());
        let rendered = format!("{}\n", serde_json::to_string_pretty(actual).unwrap());
        if std::env::var_os("WASMGATE_BLESS_TABLE_GOLDEN").is_some() {
            std::fs::write(&path, &rendered).unwrap();
            return;
        }
        let expected = std::fs::read_to_string(&path).unwrap();
        // Compare text, so key order (kind first, column field order) is checked too.
        assert_eq!(rendered, expected, "golden file {file} differs");
    }

    fn names(cols: &[ColumnDefinition]) -> Vec<(&str, &str, &str, i32)> {
        cols.iter()
            .map(|c| {
                (
                    c.name.as_str(),
                    c.type_.as_str(),
                    c.format.as_str(),
                    c.priority,
                )
            })
            .collect()
    }

    fn cells(group: &str, resource: &str, obj: &Value) -> Vec<Value> {
        builtin_cells(group, resource, obj, NOW).unwrap()
    }

    // ---------------------------------------------------------------- date_cell

    /// Issue 25 item 8: a `date` cell (of a CRD printer column or a printer plugin) shows
    /// an age as kube's printers do, `<unknown>` for an empty or zero time, `<invalid>` for
    /// what is not RFC 3339, and stays empty for what is not a string.
    #[test]
    fn date_cells_show_ages() {
        let cell = |v: Value| date_cell(Some(&v), NOW);
        assert_eq!(cell(json!("2025-06-01T11:59:53Z")), json!("7s"));
        assert_eq!(cell(json!("2025-06-01T11:55:00Z")), json!("5m"));
        assert_eq!(cell(json!("2025-05-29T12:00:00Z")), json!("3d"));
        assert_eq!(cell(json!("2025-06-01T11:59:52.5+00:00")), json!("7s"));
        assert_eq!(cell(json!("2025-06-01T13:00:00Z")), json!("<invalid>"));
        assert_eq!(cell(json!("")), json!("<unknown>"));
        assert_eq!(cell(json!("0001-01-01T00:00:00Z")), json!("<unknown>"));
        assert_eq!(cell(json!("yesterday")), json!("<invalid>"));
        assert_eq!(cell(json!(1_700_000_000)), Value::Null);
        assert_eq!(cell(Value::Null), Value::Null);
        assert_eq!(date_cell(None, NOW), Value::Null);
    }

    // ---------------------------------------------------------------- human_duration

    fn secs(s: i64) -> Duration {
        Duration::seconds(s)
    }

    #[test]
    fn human_duration_boundary_table() {
        let day = 24 * 3600;
        let cases: &[(Duration, &str)] = &[
            (secs(0), "0s"),
            (Duration::milliseconds(900), "0s"),
            (secs(1), "1s"),
            (secs(45), "45s"),
            (secs(59), "59s"),
            (secs(60), "60s"),
            (secs(119), "119s"),
            (Duration::milliseconds(119_999), "119s"),
            (secs(120), "2m"),
            (secs(121), "2m1s"),
            (secs(5 * 60 + 30), "5m30s"),
            (secs(9 * 60 + 59), "9m59s"),
            (Duration::milliseconds(599_999), "9m59s"),
            (secs(10 * 60), "10m"),
            (secs(10 * 60 + 59), "10m"),
            (secs(179 * 60 + 59), "179m"),
            (secs(180 * 60), "3h"),
            (secs(3 * 3600 + 5 * 60), "3h5m"),
            (secs(7 * 3600 + 59 * 60 + 59), "7h59m"),
            (secs(8 * 3600), "8h"),
            (secs(8 * 3600 + 59 * 60), "8h"),
            (secs(47 * 3600 + 3599), "47h"),
            (secs(48 * 3600), "2d"),
            (secs(2 * day + 5 * 3600), "2d5h"),
            (secs(7 * day + 23 * 3600 + 3599), "7d23h"),
            (secs(8 * day), "8d"),
            (secs(300 * day), "300d"),
            (secs(689 * day), "689d"),
            (secs(729 * day + 23 * 3600), "729d"),
            (secs(730 * day), "2y"),
            (secs(731 * day), "2y1d"),
            (secs((3 * 365 + 100) * day), "3y100d"),
            (secs((8 * 365 - 1) * day), "7y364d"),
            (secs(8 * 365 * day), "8y"),
            (secs((8 * 365 + 100) * day), "8y"),
            (secs(10 * 365 * day), "10y"),
        ];
        for (d, want) in cases {
            assert_eq!(human_duration(*d), *want, "human_duration({d})");
        }
    }

    #[test]
    fn human_duration_future_tolerates_under_two_seconds() {
        assert_eq!(human_duration(Duration::milliseconds(-500)), "0s");
        assert_eq!(human_duration(secs(-1)), "0s");
        assert_eq!(human_duration(Duration::milliseconds(-1999)), "0s");
        assert_eq!(human_duration(secs(-2)), "<invalid>");
        assert_eq!(human_duration(secs(-3600)), "<invalid>");
    }

    #[test]
    fn human_duration_saturates_like_go_duration() {
        // Go's time.Duration is int64 nanoseconds: Sub saturates at ~292 years.
        assert_eq!(human_duration(Duration::days(365 * 500)), "292y");
        assert_eq!(human_duration(Duration::MIN), "<invalid>");
    }

    // ---------------------------------------------------------------- age_since

    #[test]
    fn age_since_parses_rfc3339_and_micro_time() {
        assert_eq!(age_since(Some("2025-06-01T11:59:15Z"), NOW), "45s");
        assert_eq!(age_since(Some("2025-06-01T11:54:30.250000Z"), NOW), "5m29s");
        assert_eq!(age_since(Some("2025-06-01T13:00:00+02:00"), NOW), "60m");
        assert_eq!(age_since(Some("2023-07-13T12:00:00Z"), NOW), "689d");
    }

    #[test]
    fn age_since_unknown_for_missing_zero_or_garbage() {
        assert_eq!(age_since(None, NOW), "<unknown>");
        assert_eq!(age_since(Some("0001-01-01T00:00:00Z"), NOW), "<unknown>");
        assert_eq!(age_since(Some("yesterday"), NOW), "<unknown>");
        assert_eq!(age_since(Some(""), NOW), "<unknown>");
    }

    #[test]
    fn age_since_future_timestamps() {
        assert_eq!(age_since(Some("2025-06-01T12:00:01Z"), NOW), "0s");
        assert_eq!(age_since(Some("2025-06-01T12:00:05Z"), NOW), "<invalid>");
    }

    // ---------------------------------------------------------------- IncludeObject (GAP-07)

    #[test]
    fn gap07_include_object_parse() {
        assert_eq!(IncludeObject::parse(None), Ok(IncludeObject::Metadata));
        assert_eq!(IncludeObject::parse(Some("")), Ok(IncludeObject::Metadata));
        assert_eq!(
            IncludeObject::parse(Some("Metadata")),
            Ok(IncludeObject::Metadata)
        );
        assert_eq!(IncludeObject::parse(Some("None")), Ok(IncludeObject::None));
        assert_eq!(
            IncludeObject::parse(Some("Object")),
            Ok(IncludeObject::Object)
        );
        assert_eq!(IncludeObject::default(), IncludeObject::Metadata);
        for v in [
            IncludeObject::None,
            IncludeObject::Metadata,
            IncludeObject::Object,
        ] {
            assert_eq!(IncludeObject::parse(Some(v.as_str())), Ok(v));
        }
    }

    #[test]
    fn gap07_include_object_invalid_message_matches_go() {
        assert_eq!(
            IncludeObject::parse(Some("object")),
            Err(
                "Unable to convert to Table as requested: includeObject: Invalid value: \
                 \"object\": must be 'Metadata', 'Object', 'None', or empty"
                    .to_owned()
            )
        );
        let err = IncludeObject::parse(Some("a\"b\\c\n")).unwrap_err();
        assert!(err.contains(r#"Invalid value: "a\"b\\c\n": must"#), "{err}");
    }

    fn configmap_app() -> Value {
        json!({
            "kind": "ConfigMap",
            "apiVersion": "v1",
            "metadata": {
                "name": "app",
                "namespace": "default",
                "uid": "7f3c2a9e-1b7d-4c55-9a0e-3f1d2b6c8e01",
                "resourceVersion": "103",
                "creationTimestamp": "2025-05-31T12:00:00Z",
                "labels": {"app": "web"},
                "annotations": {"note": "x"}
            },
            "data": {"a": "1", "b": "2"},
            "binaryData": {"c": "AAE="}
        })
    }

    #[test]
    fn gap07_row_object_partial_metadata_v1_and_v1beta1() {
        let obj = configmap_app();
        for api in [TABLE_API_V1, TABLE_API_V1BETA1] {
            let got = row_object(&obj, IncludeObject::Metadata, api).unwrap();
            assert_eq!(
                got,
                json!({"kind": "PartialObjectMetadata", "apiVersion": api,
                       "metadata": obj["metadata"].clone()})
            );
            let text = serde_json::to_string(&got).unwrap();
            assert!(
                text.starts_with(r#"{"kind":"PartialObjectMetadata","apiVersion""#),
                "{text}"
            );
        }
    }

    #[test]
    fn gap07_row_object_full_object_and_none() {
        let obj = configmap_app();
        assert_eq!(
            row_object(&obj, IncludeObject::Object, TABLE_API_V1),
            Some(obj.clone())
        );
        assert_eq!(row_object(&obj, IncludeObject::None, TABLE_API_V1), None);
    }

    #[test]
    fn gap07_row_object_without_metadata_gets_empty_metadata() {
        let got = row_object(&json!({"data": {}}), IncludeObject::Metadata, TABLE_API_V1);
        assert_eq!(
            got,
            Some(
                json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                        "metadata": {}})
            )
        );
    }

    #[test]
    fn gap07_row_without_object_omits_the_field() {
        let row = build_row(
            "",
            "configmaps",
            &configmap_app(),
            IncludeObject::None,
            "x",
            NOW,
        );
        assert_eq!(
            serde_json::to_value(&row).unwrap(),
            json!({"cells": ["app", 3, "24h"]})
        );
    }

    // ---------------------------------------------------------------- Table wire form

    #[test]
    fn table01_to_json_puts_kind_first() {
        let t = Table {
            api_version: TABLE_API_V1.to_owned(),
            metadata: list_metadata("111", "", None),
            column_definitions: default_columns(),
            rows: vec![],
        };
        let text = serde_json::to_string(&t.to_json()).unwrap();
        assert!(
            text.starts_with(
                r#"{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"111"},"columnDefinitions":[{"name":"Name","type":"string","format":"name","description":"#
            ),
            "{text}"
        );
        assert!(text.ends_with(r#""rows":[]}"#), "{text}");
    }

    #[test]
    fn table01_null_metadata_is_sent_as_empty_object() {
        let t = Table {
            api_version: TABLE_API_V1.to_owned(),
            metadata: Value::Null,
            column_definitions: vec![],
            rows: vec![],
        };
        assert_eq!(
            t.to_json(),
            json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {},
                   "columnDefinitions": [], "rows": []})
        );
    }

    #[test]
    fn table01_list_metadata_omits_empty_fields() {
        assert_eq!(list_metadata("", "", None), json!({}));
        assert_eq!(
            list_metadata("111", "eyJ2IjoxfQ", Some(3)),
            json!({"resourceVersion": "111", "continue": "eyJ2IjoxfQ", "remainingItemCount": 3})
        );
        assert_eq!(
            list_metadata("", "", Some(0)),
            json!({"remainingItemCount": 0})
        );
    }

    #[test]
    fn table01_serde_shapes_of_column_and_row() {
        let col = ColumnDefinition::new("Data", "integer", "", "d", 1);
        assert_eq!(
            serde_json::to_string(&col).unwrap(),
            r#"{"name":"Data","type":"integer","format":"","description":"d","priority":1}"#
        );
        let back: ColumnDefinition = serde_json::from_str(
            r#"{"name":"Data","type":"integer","format":"","description":"d","priority":1}"#,
        )
        .unwrap();
        assert_eq!(back, col);
        let row = TableRow {
            cells: vec![json!("a"), json!(1)],
            conditions: Some(json!([{"type": "Completed", "status": "True"}])),
            object: Some(json!({"kind": "PartialObjectMetadata"})),
        };
        let text = serde_json::to_string(&row).unwrap();
        assert_eq!(
            text,
            r#"{"cells":["a",1],"conditions":[{"type":"Completed","status":"True"}],"object":{"kind":"PartialObjectMetadata"}}"#
        );
        assert_eq!(serde_json::from_str::<TableRow>(&text).unwrap(), row);
        let bare: TableRow = serde_json::from_str(r#"{"cells":[]}"#).unwrap();
        assert_eq!(
            bare,
            TableRow {
                cells: vec![],
                conditions: None,
                object: None
            }
        );
    }

    // ---------------------------------------------------------------- default table (TABLE-02)

    #[test]
    fn table02_default_columns() {
        let cols = default_columns();
        assert_eq!(
            names(&cols),
            vec![("Name", "string", "name", 0), ("Created At", "date", "", 0)]
        );
        assert!(
            cols[0]
                .description
                .starts_with("Name must be unique within a namespace.")
        );
        assert!(
            cols[1]
                .description
                .starts_with("CreationTimestamp is a timestamp")
        );
    }

    #[test]
    fn table02_default_cells_are_name_and_utc_rfc3339() {
        let w = json!({"metadata": {"name": "w1",
                                    "creationTimestamp": "2025-05-01T10:00:00.5+02:00"}});
        assert_eq!(
            default_cells(&w),
            vec![json!("w1"), json!("2025-05-01T08:00:00Z")]
        );
        let bare = json!({"metadata": {"name": "w2"}});
        assert_eq!(
            default_cells(&bare),
            vec![json!("w2"), json!("0001-01-01T00:00:00Z")]
        );
        assert_eq!(
            default_cells(&json!({})),
            vec![json!(""), json!("0001-01-01T00:00:00Z")]
        );
    }

    #[test]
    fn table02_unknown_resources_fall_back_to_default_table() {
        for (g, r) in [
            ("example.com", "widgets"),
            ("apps", "deployments"),
            ("", "pods"),
            ("", "leases"),
            ("coordination.k8s.io", "configmaps"),
        ] {
            assert_eq!(builtin_columns(g, r), None, "{g}/{r}");
            assert_eq!(builtin_cells(g, r, &json!({}), NOW), None, "{g}/{r}");
            assert_eq!(columns_for(g, r), default_columns());
        }
        let w = json!({"metadata": {"name": "w1", "creationTimestamp": "2025-01-01T00:00:00Z"}});
        assert_eq!(
            cells_for("example.com", "widgets", &w, NOW),
            default_cells(&w)
        );
    }

    #[test]
    fn table02_golden_default_widgets_table_v1() {
        let objs = [
            json!({"apiVersion": "example.com/v1", "kind": "Widget",
                   "metadata": {"name": "w1", "namespace": "default", "uid": "u-1",
                                "resourceVersion": "210",
                                "creationTimestamp": "2025-05-01T10:00:00Z",
                                "labels": {"tier": "gold"}},
                   "spec": {"size": 3}}),
            json!({"apiVersion": "example.com/v1", "kind": "Widget",
                   "metadata": {"name": "w2", "namespace": "default", "uid": "u-2",
                                "resourceVersion": "211"},
                   "spec": {"size": 1}}),
        ];
        let t = build_table(
            "example.com",
            "widgets",
            &objs,
            IncludeObject::Metadata,
            TABLE_API_V1,
            list_metadata("211", "", None),
            NOW,
        );
        golden("default-widgets.json", &t.to_json());
    }

    // ---------------------------------------------------------------- built-in printers

    /// Every built-in printer yields exactly one cell per column.
    #[test]
    fn table01_builtin_cells_match_column_count() {
        let resources = [
            ("", "namespaces"),
            ("", "configmaps"),
            ("", "secrets"),
            ("", "serviceaccounts"),
            ("", "events"),
            ("coordination.k8s.io", "leases"),
        ];
        for (g, r) in resources {
            let cols = builtin_columns(g, r).unwrap();
            assert_eq!(cells(g, r, &json!({})).len(), cols.len(), "{g}/{r}");
            assert_eq!(
                cols.iter().filter(|c| c.format == "name").count(),
                1,
                "{g}/{r}"
            );
        }
    }

    #[test]
    fn table01_configmap_columns_and_cells() {
        assert_eq!(
            names(&builtin_columns("", "configmaps").unwrap()),
            vec![
                ("Name", "string", "name", 0),
                ("Data", "string", "", 0),
                ("Age", "string", "", 0)
            ]
        );
        // DATA counts data + binaryData keys, as an integer.
        assert_eq!(
            cells("", "configmaps", &configmap_app()),
            vec![json!("app"), json!(3), json!("24h")]
        );
        let empty = json!({"metadata": {"name": "e", "creationTimestamp": "2023-07-13T12:00:00Z"}});
        assert_eq!(
            cells("", "configmaps", &empty),
            vec![json!("e"), json!(0), json!("689d")]
        );
    }

    fn configmap_list() -> Vec<Value> {
        vec![
            configmap_app(),
            json!({"metadata": {"name": "kube-root-ca.crt", "namespace": "default",
                                "uid": "0b6a7c1e-2f2d-4e59-8a8a-6f0f5d1e9c21",
                                "resourceVersion": "12",
                                "creationTimestamp": "2023-07-13T12:00:00Z",
                                "annotations": {"kubernetes.io/description": "root CA"}},
                   "data": {"ca.crt": "-----BEGIN CERTIFICATE-----\n..."}}),
        ]
    }

    #[test]
    fn table01_golden_configmaps_list_v1() {
        let t = build_table(
            "",
            "configmaps",
            &configmap_list(),
            IncludeObject::Metadata,
            TABLE_API_V1,
            list_metadata("111", "eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ", Some(3)),
            NOW,
        );
        golden("configmaps.json", &t.to_json());
    }

    #[test]
    fn table04_configmaps_v1beta1_table_and_partial_metadata() {
        let t = build_table(
            "",
            "configmaps",
            &configmap_list(),
            IncludeObject::Metadata,
            TABLE_API_V1BETA1,
            list_metadata("111", "", None),
            NOW,
        );
        let j = t.to_json();
        assert_eq!(j["apiVersion"], "meta.k8s.io/v1beta1");
        for row in j["rows"].as_array().unwrap() {
            assert_eq!(row["object"]["apiVersion"], "meta.k8s.io/v1beta1");
            assert_eq!(row["object"]["kind"], "PartialObjectMetadata");
        }
    }

    #[test]
    fn gap07_configmaps_include_object_variants() {
        let objs = configmap_list();
        let full = build_table(
            "",
            "configmaps",
            &objs,
            IncludeObject::Object,
            TABLE_API_V1,
            list_metadata("111", "", None),
            NOW,
        );
        assert_eq!(full.rows[0].object.as_ref(), Some(&objs[0]));
        let none = build_table(
            "",
            "configmaps",
            &objs,
            IncludeObject::None,
            TABLE_API_V1,
            list_metadata("111", "", None),
            NOW,
        );
        assert!(none.rows.iter().all(|r| r.object.is_none()));
        assert!(
            none.to_json()["rows"]
                .as_array()
                .unwrap()
                .iter()
                .all(|r| r.get("object").is_none())
        );
        assert_eq!(
            none.rows[1].cells,
            vec![json!("kube-root-ca.crt"), json!(1), json!("689d")]
        );
    }

    fn secret_list() -> Vec<Value> {
        vec![
            json!({"metadata": {"name": "db-creds", "namespace": "default", "uid": "s-1",
                                "resourceVersion": "140",
                                "creationTimestamp": "2025-06-01T11:54:30Z"},
                   "type": "Opaque",
                   "data": {"username": "YWRtaW4=", "password": "czNjcjN0"}}),
            json!({"metadata": {"name": "builder-token", "namespace": "default", "uid": "s-2",
                                "resourceVersion": "141",
                                "creationTimestamp": "2025-05-25T06:00:00Z",
                                "annotations": {"kubernetes.io/service-account.name": "builder"}},
                   "type": "kubernetes.io/service-account-token",
                   "data": {"ca.crt": "Y2E=", "namespace": "ZGVmYXVsdA==", "token": "dG9r"}}),
        ]
    }

    #[test]
    fn table01_secret_columns_and_cells() {
        assert_eq!(
            names(&builtin_columns("", "secrets").unwrap()),
            vec![
                ("Name", "string", "name", 0),
                ("Type", "string", "", 0),
                ("Data", "string", "", 0),
                ("Age", "string", "", 0)
            ]
        );
        let s = secret_list();
        assert_eq!(
            cells("", "secrets", &s[0]),
            vec![json!("db-creds"), json!("Opaque"), json!(2), json!("5m30s")]
        );
        assert_eq!(
            cells("", "secrets", &s[1]),
            vec![
                json!("builder-token"),
                json!("kubernetes.io/service-account-token"),
                json!(3),
                json!("7d6h")
            ]
        );
        // stringData is write-only and never counted; only data keys are.
        let sd = json!({"metadata": {"name": "x"}, "stringData": {"a": "b"}});
        assert_eq!(
            cells("", "secrets", &sd),
            vec![json!("x"), json!(""), json!(0), json!("<unknown>")]
        );
    }

    #[test]
    fn table01_golden_secrets_list_v1() {
        let t = build_table(
            "",
            "secrets",
            &secret_list(),
            IncludeObject::Metadata,
            TABLE_API_V1,
            list_metadata("141", "", None),
            NOW,
        );
        golden("secrets.json", &t.to_json());
    }

    fn namespace_list() -> Vec<Value> {
        vec![
            json!({"metadata": {"name": "default", "uid": "n-1", "resourceVersion": "5",
                                "creationTimestamp": "2024-05-27T09:00:00Z",
                                "labels": {"kubernetes.io/metadata.name": "default"}},
                   "spec": {"finalizers": ["kubernetes"]},
                   "status": {"phase": "Active"}}),
            json!({"metadata": {"name": "doomed", "uid": "n-2", "resourceVersion": "190",
                                "creationTimestamp": "2025-06-01T09:30:00Z",
                                "deletionTimestamp": "2025-06-01T11:59:00Z"},
                   "status": {"phase": "Terminating"}}),
        ]
    }

    #[test]
    fn table01_namespace_columns_and_cells() {
        assert_eq!(
            names(&builtin_columns("", "namespaces").unwrap()),
            vec![
                ("Name", "string", "name", 0),
                ("Status", "string", "", 0),
                ("Age", "string", "", 0)
            ]
        );
        let ns = namespace_list();
        assert_eq!(
            cells("", "namespaces", &ns[0]),
            vec![json!("default"), json!("Active"), json!("370d")]
        );
        assert_eq!(
            cells("", "namespaces", &ns[1]),
            vec![json!("doomed"), json!("Terminating"), json!("150m")]
        );
        assert_eq!(
            cells("", "namespaces", &json!({"metadata": {"name": "n"}})),
            vec![json!("n"), json!(""), json!("<unknown>")]
        );
    }

    #[test]
    fn table01_golden_namespaces_list_v1() {
        let t = build_table(
            "",
            "namespaces",
            &namespace_list(),
            IncludeObject::Metadata,
            TABLE_API_V1,
            list_metadata("190", "", None),
            NOW,
        );
        golden("namespaces.json", &t.to_json());
    }

    fn serviceaccount_list() -> Vec<Value> {
        vec![
            json!({"metadata": {"name": "default", "namespace": "default", "uid": "sa-1",
                                "resourceVersion": "6",
                                "creationTimestamp": "2024-05-27T09:00:05Z"}}),
            json!({"metadata": {"name": "builder", "namespace": "default", "uid": "sa-2",
                                "resourceVersion": "150",
                                "creationTimestamp": "2025-06-01T04:00:00Z"},
                   "secrets": [{"name": "builder-token"}, {"name": "registry"}],
                   "imagePullSecrets": [{"name": "registry"}]}),
        ]
    }

    #[test]
    fn table01_serviceaccount_columns_and_cells() {
        assert_eq!(
            names(&builtin_columns("", "serviceaccounts").unwrap()),
            vec![
                ("Name", "string", "name", 0),
                ("Secrets", "string", "", 0),
                ("Age", "string", "", 0)
            ]
        );
        let sa = serviceaccount_list();
        assert_eq!(
            cells("", "serviceaccounts", &sa[0]),
            vec![json!("default"), json!(0), json!("370d")]
        );
        assert_eq!(
            cells("", "serviceaccounts", &sa[1]),
            vec![json!("builder"), json!(2), json!("8h")]
        );
    }

    #[test]
    fn table01_golden_serviceaccounts_list_v1() {
        let t = build_table(
            "",
            "serviceaccounts",
            &serviceaccount_list(),
            IncludeObject::Metadata,
            TABLE_API_V1,
            list_metadata("150", "", None),
            NOW,
        );
        golden("serviceaccounts.json", &t.to_json());
    }

    fn lease_list() -> Vec<Value> {
        vec![
            json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                   "metadata": {"name": "kube-controller-manager", "namespace": "kube-system",
                                "uid": "l-1", "resourceVersion": "180",
                                "creationTimestamp": "2025-05-29T12:00:00Z"},
                   "spec": {"holderIdentity": "cp-1_5e0c6d2a-93b1-4f7e-b1d4-0c2f8a7e6b11",
                            "leaseDurationSeconds": 15,
                            "acquireTime": "2025-05-29T12:00:01.000000Z",
                            "renewTime": "2025-06-01T11:59:58.123456Z",
                            "leaseTransitions": 0}}),
            json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                   "metadata": {"name": "released", "namespace": "kube-system", "uid": "l-2",
                                "resourceVersion": "181",
                                "creationTimestamp": "2025-06-01T11:58:00Z"},
                   "spec": {"leaseDurationSeconds": 15}}),
        ]
    }

    #[test]
    fn table01_lease_columns_and_cells() {
        assert_eq!(
            names(&builtin_columns("coordination.k8s.io", "leases").unwrap()),
            vec![
                ("Name", "string", "name", 0),
                ("Holder", "string", "", 0),
                ("Age", "string", "", 0)
            ]
        );
        let l = lease_list();
        assert_eq!(
            cells("coordination.k8s.io", "leases", &l[0]),
            vec![
                json!("kube-controller-manager"),
                json!("cp-1_5e0c6d2a-93b1-4f7e-b1d4-0c2f8a7e6b11"),
                json!("3d")
            ]
        );
        assert_eq!(
            cells("coordination.k8s.io", "leases", &l[1]),
            vec![json!("released"), json!(""), json!("2m")]
        );
    }

    #[test]
    fn table01_golden_leases_list_v1() {
        let t = build_table(
            "coordination.k8s.io",
            "leases",
            &lease_list(),
            IncludeObject::Metadata,
            TABLE_API_V1,
            list_metadata("181", "", None),
            NOW,
        );
        golden("leases.json", &t.to_json());
    }

    // ---------------------------------------------------------------- events

    #[test]
    fn table01_event_columns_wide_only_with_priority_1() {
        assert_eq!(
            names(&builtin_columns("", "events").unwrap()),
            vec![
                ("Last Seen", "string", "", 0),
                ("Type", "string", "", 0),
                ("Reason", "string", "", 0),
                ("Object", "string", "", 0),
                ("Subobject", "string", "", 1),
                ("Source", "string", "", 1),
                ("Message", "string", "", 0),
                ("First Seen", "string", "", 1),
                ("Count", "string", "", 1),
                ("Name", "string", "name", 1)
            ]
        );
    }

    /// A core/v1 event recorded three times (firstTimestamp/lastTimestamp/count).
    fn event_repeated() -> Value {
        json!({"metadata": {"name": "web-0.17d8c3b2a1f0e9d8", "namespace": "default",
                            "uid": "e-1", "resourceVersion": "160",
                            "creationTimestamp": "2025-06-01T11:55:00Z"},
               "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web-0",
                                  "uid": "p-1", "apiVersion": "v1", "resourceVersion": "150",
                                  "fieldPath": "spec.containers{web}"},
               "reason": "Pulled",
               "message": "  Container image \"nginx:1.27\" already present on machine\n",
               "source": {"component": "kubelet", "host": "node-1"},
               "firstTimestamp": "2025-06-01T11:55:00Z",
               "lastTimestamp": "2025-06-01T11:59:15Z",
               "count": 3,
               "type": "Normal",
               "eventTime": null,
               "reportingComponent": "kubelet",
               "reportingInstance": "node-1"})
    }

    /// An events.k8s.io-style event: eventTime + series, no legacy timestamps.
    fn event_series() -> Value {
        json!({"metadata": {"name": "web.17d8c3b2a1f0e9d9", "namespace": "default",
                            "uid": "e-2", "resourceVersion": "161",
                            "creationTimestamp": "2025-06-01T11:58:00Z"},
               "involvedObject": {"kind": "Deployment", "namespace": "default",
                                  "name": "web", "apiVersion": "apps/v1"},
               "reason": "ScalingReplicaSet",
               "message": "Scaled up replica set web-5d4f8c7b9 to 3",
               "source": {},
               "firstTimestamp": null,
               "lastTimestamp": null,
               "eventTime": "2025-06-01T11:58:00.123456Z",
               "series": {"count": 4, "lastObservedTime": "2025-06-01T11:59:50.000000Z"},
               "action": "Scaling",
               "type": "Normal",
               "reportingComponent": "deployment-controller",
               "reportingInstance": ""})
    }

    /// A singleton new-API event: eventTime only, no count.
    fn event_singleton() -> Value {
        json!({"metadata": {"name": "node-1.17d8c3b2a1f0e9da", "namespace": "default",
                            "uid": "e-3", "resourceVersion": "162",
                            "creationTimestamp": "2025-06-01T10:00:00Z"},
               "involvedObject": {"kind": "Node", "name": ""},
               "reason": "RegisteredNode",
               "message": "Node node-1 event: Registered Node node-1 in Controller",
               "eventTime": "2025-06-01T10:00:00.000000Z",
               "type": "Normal",
               "reportingComponent": "node-controller",
               "reportingInstance": "cp-1"})
    }

    #[test]
    fn table01_event_repeated_uses_last_and_first_timestamps() {
        assert_eq!(
            cells("", "events", &event_repeated()),
            vec![
                json!("45s"),
                json!("Normal"),
                json!("Pulled"),
                json!("pod/web-0"),
                json!("spec.containers{web}"),
                json!("kubelet, node-1"),
                json!("Container image \"nginx:1.27\" already present on machine"),
                json!("5m"),
                json!(3),
                json!("web-0.17d8c3b2a1f0e9d8")
            ]
        );
    }

    #[test]
    fn table01_event_series_uses_event_time_and_series() {
        assert_eq!(
            cells("", "events", &event_series()),
            vec![
                json!("10s"),
                json!("Normal"),
                json!("ScalingReplicaSet"),
                json!("deployment/web"),
                json!(""),
                json!("deployment-controller"),
                json!("Scaled up replica set web-5d4f8c7b9 to 3"),
                json!("119s"),
                json!(4),
                json!("web.17d8c3b2a1f0e9d9")
            ]
        );
    }

    #[test]
    fn table01_event_singleton_counts_one_and_kind_without_name() {
        assert_eq!(
            cells("", "events", &event_singleton()),
            vec![
                json!("120m"),
                json!("Normal"),
                json!("RegisteredNode"),
                json!("node"),
                json!(""),
                json!("node-controller, cp-1"),
                json!("Node node-1 event: Registered Node node-1 in Controller"),
                json!("120m"),
                json!(1),
                json!("node-1.17d8c3b2a1f0e9da")
            ]
        );
    }

    #[test]
    fn table01_event_without_timestamps_is_unknown() {
        let e = json!({"metadata": {"name": "bare"}, "type": "Warning", "reason": "Failed",
                       "involvedObject": {"kind": "ConfigMap", "name": "app"}});
        assert_eq!(
            cells("", "events", &e),
            vec![
                json!("<unknown>"),
                json!("Warning"),
                json!("Failed"),
                json!("configmap/app"),
                json!(""),
                json!(""),
                json!(""),
                json!("<unknown>"),
                json!(1),
                json!("bare")
            ]
        );
    }

    #[test]
    fn table01_event_last_seen_falls_back_to_first_seen() {
        // lastTimestamp missing: LAST SEEN is FIRST SEEN (from firstTimestamp).
        let e = json!({"metadata": {"name": "e"}, "firstTimestamp": "2025-06-01T11:00:00Z",
                       "count": 1, "involvedObject": {"kind": "Pod", "name": "p"}});
        let c = cells("", "events", &e);
        assert_eq!(
            (c[0].clone(), c[7].clone(), c[8].clone()),
            (json!("60m"), json!("60m"), json!(1))
        );
        // firstTimestamp wins over eventTime when both are set.
        let e = json!({"metadata": {"name": "e"}, "firstTimestamp": "2025-06-01T11:00:00Z",
                       "eventTime": "2025-06-01T11:50:00.000000Z"});
        assert_eq!(cells("", "events", &e)[7], json!("60m"));
        // A series with a zero lastObservedTime shows <unknown>, its count is used as is.
        let e = json!({"metadata": {"name": "e"}, "firstTimestamp": "2025-06-01T11:00:00Z",
                       "lastTimestamp": "2025-06-01T11:30:00Z", "count": 7,
                       "series": {"count": 0}});
        let c = cells("", "events", &e);
        assert_eq!((c[0].clone(), c[8].clone()), (json!("<unknown>"), json!(0)));
    }

    #[test]
    fn table01_event_source_prefers_source_then_reporting_fields() {
        let src = |o: Value| cells("", "events", &o)[5].clone();
        assert_eq!(
            src(json!({"source": {"component": "kubelet"}})),
            json!("kubelet")
        );
        assert_eq!(
            src(json!({"source": {"host": "node-2"}, "reportingComponent": "kubelet"})),
            json!("kubelet, node-2")
        );
        assert_eq!(src(json!({"reportingInstance": "i-1"})), json!(", i-1"));
    }

    #[test]
    fn table01_golden_events_list_v1() {
        let objs = [event_repeated(), event_series(), event_singleton()];
        let t = build_table(
            "",
            "events",
            &objs,
            IncludeObject::Metadata,
            TABLE_API_V1,
            list_metadata("162", "", None),
            NOW,
        );
        golden("events.json", &t.to_json());
    }

    /// Single-object GET: one row, metadata carries the object's resourceVersion.
    #[test]
    fn table01_single_object_table() {
        let obj = configmap_app();
        let t = build_table(
            "",
            "configmaps",
            std::slice::from_ref(&obj),
            IncludeObject::Metadata,
            TABLE_API_V1,
            list_metadata("103", "", None),
            NOW,
        );
        let j = t.to_json();
        assert_eq!(j["metadata"], json!({"resourceVersion": "103"}));
        assert_eq!(j["rows"].as_array().unwrap().len(), 1);
        assert_eq!(j["rows"][0]["cells"], json!(["app", 3, "24h"]));
        assert_eq!(
            j["rows"][0]["object"]["metadata"]["labels"],
            json!({"app": "web"})
        );
    }
}
