//! Strategic merge patch (spec item PATCH-04): `application/strategic-merge-patch+json` as
//! kubectl 1.32 sends it for built-in kinds. Many vectors come from the cases of
//! k8s.io/apimachinery `pkg/util/strategicpatch/patch_test.go`, rewritten as JSON.

/// Named so that `cargo test strategic_merge` selects every test here.
mod strategic_merge {
    use serde_json::{Value, json};
    use wasmgate_apimachinery::strategic_merge::{
        ListStrategy, PatchSchema, SmpError, StaticPatchSchema, apply, builtin_schema,
    };

    const MERGE_BY_NAME: ListStrategy = ListStrategy::Merge { key: Some("name") };
    const MERGE_PRIMITIVES: ListStrategy = ListStrategy::Merge { key: None };

    /// The shape of Go's `MergeItem` test struct, as dotted paths.
    const TEST_SCHEMA: StaticPatchSchema = StaticPatchSchema::new(&[
        ("mergingList", MERGE_BY_NAME),
        ("mergingIntList", MERGE_PRIMITIVES),
        ("nonMergingList", ListStrategy::Replace),
        ("mergingList.mergingList", MERGE_BY_NAME),
        ("mergingList.mergingIntList", MERGE_PRIMITIVES),
        ("otherMergingList", MERGE_BY_NAME),
        ("retainKeysMap.mergingList", MERGE_BY_NAME),
        ("retainKeysMergingList", MERGE_BY_NAME),
    ])
    .with_retain_keys(&["retainKeysMap", "retainKeysMergingList"]);

    fn smp(original: Value, patch: Value) -> Value {
        match apply(&original, &patch, &TEST_SCHEMA) {
            Ok(result) => result,
            Err(err) => panic!("patch {patch} on {original} failed: {err}"),
        }
    }

    fn smp_err(original: Value, patch: Value) -> SmpError {
        match apply(&original, &patch, &TEST_SCHEMA) {
            Ok(result) => panic!("patch {patch} on {original} unexpectedly gave {result}"),
            Err(err) => err,
        }
    }

    /// Compares values and their serialisation, so key order and list order both count.
    fn assert_exact(got: &Value, want: &Value) {
        assert_eq!(got, want);
        assert_eq!(got.to_string(), want.to_string(), "key order differs");
    }

    // ---------------------------------------------------------------- maps and scalars

    #[test]
    fn patch_04_maps_merge_recursively() {
        let got = smp(
            json!({"a": {"b": {"c": 1, "d": 2}, "e": "x"}, "f": true}),
            json!({"a": {"b": {"d": 3, "g": 4}}}),
        );
        assert_exact(
            &got,
            &json!({"a": {"b": {"c": 1, "d": 3, "g": 4}, "e": "x"}, "f": true}),
        );
    }

    #[test]
    fn patch_04_null_deletes_a_key_and_is_ignored_when_missing() {
        let got = smp(
            json!({"name": "x", "value": "y", "simpleMap": {"k1": "1", "k2": "2"}}),
            json!({"value": null, "absent": null, "simpleMap": {"k1": null}}),
        );
        assert_exact(&got, &json!({"name": "x", "simpleMap": {"k2": "2"}}));
    }

    #[test]
    fn patch_04_scalars_replace() {
        let got = smp(
            json!({"s": "a", "n": 1, "b": false, "f": 1.5}),
            json!({"s": "b", "n": 2, "b": true, "f": 2.5}),
        );
        assert_exact(&got, &json!({"s": "b", "n": 2, "b": true, "f": 2.5}));
    }

    #[test]
    fn patch_04_type_changes_replace() {
        let got = smp(
            json!({"a": {"x": 1}, "b": "s", "c": [1, 2], "d": 3, "e": null}),
            json!({"a": "now a string", "b": {"x": 1, "y": null}, "c": {"k": "v"}, "d": [1], "e": {"z": 1}}),
        );
        assert_exact(
            &got,
            &json!({"a": "now a string", "b": {"x": 1}, "c": {"k": "v"}, "d": [1], "e": {"z": 1}}),
        );
    }

    #[test]
    fn patch_04_patching_a_missing_map_creates_it() {
        let got = smp(
            json!({"name": "x"}),
            json!({"metadata": {"labels": {"app": "demo", "gone": null}}}),
        );
        assert_exact(
            &got,
            &json!({"name": "x", "metadata": {"labels": {"app": "demo"}}}),
        );
    }

    #[test]
    fn patch_04_key_order_is_kept_and_new_keys_are_appended() {
        let got = smp(
            json!({"z": 1, "a": 2, "m": {"q": 1, "b": 2}}),
            json!({"new2": 1, "a": 3, "m": {"b": 5, "c": 6}, "new1": 2}),
        );
        assert_exact(
            &got,
            &json!({"z": 1, "a": 3, "m": {"q": 1, "b": 5, "c": 6}, "new2": 1, "new1": 2}),
        );
    }

    #[test]
    fn patch_04_deleting_a_key_keeps_the_order_of_the_others() {
        let got = smp(json!({"a": 1, "b": 2, "c": 3, "d": 4}), json!({"b": null}));
        assert_exact(&got, &json!({"a": 1, "c": 3, "d": 4}));
    }

    #[test]
    fn patch_04_inputs_are_not_mutated() {
        let original = json!({"mergingList": [{"name": "a", "value": "1"}], "m": {"k": "v"}});
        let patch = json!({
            "$setElementOrder/mergingList": [{"name": "b"}, {"name": "a"}],
            "mergingList": [{"name": "b"}, {"name": "a", "value": null}],
            "m": {"$patch": "replace", "x": "y"}
        });
        let (original_before, patch_before) = (original.clone(), patch.clone());
        let got = apply(&original, &patch, &TEST_SCHEMA).expect("applies");
        assert_eq!(original, original_before);
        assert_eq!(patch, patch_before);
        assert_exact(
            &got,
            &json!({"mergingList": [{"name": "b"}, {"name": "a"}], "m": {"x": "y"}}),
        );
    }

    #[test]
    fn patch_04_null_patch_changes_nothing_and_null_original_is_empty() {
        let original = json!({"a": 1});
        assert_eq!(
            apply(&original, &Value::Null, &TEST_SCHEMA).expect("applies"),
            original
        );
        assert_eq!(
            apply(&Value::Null, &json!({"a": {"b": 1}}), &TEST_SCHEMA).expect("applies"),
            json!({"a": {"b": 1}})
        );
    }

    #[test]
    fn patch_04_documents_must_be_objects() {
        for (original, patch) in [
            (json!({}), json!([1])),
            (json!({}), json!("x")),
            (json!([]), json!({})),
            (json!(3), json!({})),
        ] {
            let err = smp_err(original, patch);
            assert!(matches!(err, SmpError::InvalidPatch { .. }), "{err}");
            assert_eq!(err.path(), "(root)");
        }
    }

    // ---------------------------------------------------------------- replaced lists

    #[test]
    fn patch_04_lists_are_replaced_by_default() {
        let got = smp(
            json!({"nonMergingList": [{"name": "1"}, {"name": "2"}], "unknownList": [1, 2, 3], "nonMergingIntList": [1]}),
            json!({"nonMergingList": [{"name": "3", "value": null}], "unknownList": [4], "nonMergingIntList": []}),
        );
        assert_exact(
            &got,
            &json!({"nonMergingList": [{"name": "3"}], "unknownList": [4], "nonMergingIntList": []}),
        );
    }

    #[test]
    fn patch_04_list_inside_a_replaced_list_item_is_not_merged() {
        // Go: "replace non merging list nested in merging list".
        let got = smp(
            json!({"mergingList": [{"name": "1", "nonMergingList": [{"name": "1"}, {"name": "2", "value": "2"}]}, {"name": "2"}]}),
            json!({"mergingList": [{"name": "1", "nonMergingList": [{"name": "1", "value": "1"}]}]}),
        );
        assert_exact(
            &got,
            &json!({"mergingList": [{"name": "1", "nonMergingList": [{"name": "1", "value": "1"}]}, {"name": "2"}]}),
        );
    }

    // ---------------------------------------------------------------- merged primitive lists

    #[test]
    fn patch_04_primitive_merge_list_is_a_union_without_duplicates() {
        // Go: "unique scalars when merging lists".
        assert_exact(
            &smp(
                json!({"mergingIntList": [1, 2]}),
                json!({"mergingIntList": [2, 3]}),
            ),
            &json!({"mergingIntList": [1, 2, 3]}),
        );
        assert_exact(
            &smp(
                json!({"mergingIntList": ["a", "a", "b"]}),
                json!({"mergingIntList": ["b", "b"]}),
            ),
            &json!({"mergingIntList": ["a", "b"]}),
        );
    }

    #[test]
    fn patch_04_primitive_merge_list_follows_the_patch_order() {
        // Go: "preserve the order from the patch in a merging int list" (both variants).
        assert_exact(
            &smp(
                json!({"mergingIntList": [1, 2, 3]}),
                json!({"mergingIntList": [3, 1, 2]}),
            ),
            &json!({"mergingIntList": [3, 1, 2]}),
        );
        assert_exact(
            &smp(
                json!({"mergingIntList": [1, 2, 3]}),
                json!({"mergingIntList": [3, 1]}),
            ),
            &json!({"mergingIntList": [2, 3, 1]}),
        );
    }

    #[test]
    fn patch_04_new_primitive_without_set_element_order_goes_before_server_items() {
        // Go's mergeSortedSlice puts an item unknown to the live list before the live items when
        // it has nothing to compare with.
        assert_exact(
            &smp(
                json!({"mergingIntList": ["a"]}),
                json!({"mergingIntList": ["b"]}),
            ),
            &json!({"mergingIntList": ["b", "a"]}),
        );
        assert_exact(
            &smp(
                json!({"mergingIntList": ["a", "a", "b"]}),
                json!({"mergingIntList": ["c"]}),
            ),
            &json!({"mergingIntList": ["c", "a", "b"]}),
        );
    }

    #[test]
    fn patch_04_primitive_merge_list_created_or_emptied() {
        assert_exact(
            &smp(json!({}), json!({"mergingIntList": [2, 1, 2]})),
            &json!({"mergingIntList": [2, 1, 2]}),
        );
        assert_exact(
            &smp(json!({"mergingIntList": []}), json!({"mergingIntList": []})),
            &json!({"mergingIntList": []}),
        );
        assert_exact(
            &smp(
                json!({"mergingIntList": [1, 2]}),
                json!({"mergingIntList": null}),
            ),
            &json!({}),
        );
        // 1 and 1.0 are the same number, as for Go's float64.
        assert_exact(
            &smp(
                json!({"mergingIntList": [1]}),
                json!({"mergingIntList": [1.0]}),
            ),
            &json!({"mergingIntList": [1]}),
        );
    }

    #[test]
    fn patch_04_primitive_merge_list_type_errors() {
        let err = smp_err(
            json!({"mergingIntList": [1]}),
            json!({"mergingIntList": ["a"]}),
        );
        assert!(matches!(err, SmpError::TypeMismatch { .. }), "{err}");
        assert_eq!(err.path(), "mergingIntList");
        let err = smp_err(
            json!({"mergingIntList": [[1]]}),
            json!({"mergingIntList": [[2]]}),
        );
        assert!(matches!(err, SmpError::InvalidPatch { .. }), "{err}");
        assert!(err.to_string().contains("lists of lists"), "{err}");
        // A merge key declared for a list of primitives.
        let err = smp_err(json!({"mergingList": ["a"]}), json!({"mergingList": ["b"]}));
        assert!(matches!(err, SmpError::TypeMismatch { .. }), "{err}");
    }

    // ---------------------------------------------------------------- merged object lists

    #[test]
    fn patch_04_object_list_merges_items_by_key() {
        // Go: "preserve the order from the patch in a merging list".
        let got = smp(
            json!({"mergingList": [{"name": "1"}, {"name": "2", "value": "b"}, {"name": "3"}]}),
            json!({"mergingList": [{"name": "3", "value": "c"}, {"name": "1", "value": "a"}, {"name": "2", "other": "x"}]}),
        );
        assert_exact(
            &got,
            &json!({"mergingList": [{"name": "3", "value": "c"}, {"name": "1", "value": "a"}, {"name": "2", "value": "b", "other": "x"}]}),
        );
        // Go: "preserve the order from the patch in a merging list 2".
        let got = smp(
            json!({"mergingList": [{"name": "1"}, {"name": "2", "value": "b"}, {"name": "3"}]}),
            json!({"mergingList": [{"name": "3", "value": "c"}, {"name": "1", "value": "a"}]}),
        );
        assert_exact(
            &got,
            &json!({"mergingList": [{"name": "2", "value": "b"}, {"name": "3", "value": "c"}, {"name": "1", "value": "a"}]}),
        );
    }

    #[test]
    fn patch_04_object_list_adds_new_items() {
        let got = smp(
            json!({"mergingList": [{"name": "a", "value": "1"}, {"name": "b"}]}),
            json!({"mergingList": [{"name": "b", "value": "2"}, {"name": "c", "value": "3", "other": null}]}),
        );
        assert_exact(
            &got,
            &json!({"mergingList": [{"name": "a", "value": "1"}, {"name": "b", "value": "2"}, {"name": "c", "value": "3"}]}),
        );
        let got = smp(json!({}), json!({"mergingList": [{"name": "a"}]}));
        assert_exact(&got, &json!({"mergingList": [{"name": "a"}]}));
    }

    #[test]
    fn patch_04_object_list_items_merge_recursively() {
        // Go: "add field to map in merging list nested in merging list" and
        // "delete field from map in merging list".
        let got = smp(
            json!({"mergingList": [
                {"name": "1", "value": "v", "mergingList": [{"name": "1", "value": "1"}, {"name": "2", "value": "2"}]},
                {"name": "2", "mergingIntList": [1, 2]}
            ]}),
            json!({"mergingList": [
                {"name": "1", "value": null, "mergingList": [{"name": "2", "other": "x"}]},
                {"name": "2", "mergingIntList": [3]}
            ]}),
        );
        assert_exact(
            &got,
            &json!({"mergingList": [
                {"name": "1", "mergingList": [{"name": "1", "value": "1"}, {"name": "2", "value": "2", "other": "x"}]},
                {"name": "2", "mergingIntList": [3, 1, 2]}
            ]}),
        );
    }

    #[test]
    fn patch_04_object_list_merge_key_must_be_present() {
        // Go: "missing merge key should error out".
        let err = smp_err(
            json!({"mergingList": [{"name": "1", "value": "a"}]}),
            json!({"mergingList": [{"value": "b"}]}),
        );
        assert!(
            matches!(&err, SmpError::MissingMergeKey { path, key } if path == "mergingList" && key == "name"),
            "{err}"
        );
        assert!(
            err.to_string()
                .contains("does not contain declared merge key")
        );
        // A live item without the key cannot be ordered either.
        let err = smp_err(
            json!({"mergingList": [{"value": "a"}]}),
            json!({"mergingList": [{"name": "1"}]}),
        );
        assert!(matches!(err, SmpError::MissingMergeKey { .. }), "{err}");
    }

    #[test]
    fn patch_04_object_list_needs_a_declared_key_to_merge() {
        struct NoKey;
        impl PatchSchema for NoKey {
            fn list_strategy(&self, _path: &[&str]) -> ListStrategy {
                ListStrategy::Merge { key: None }
            }
        }
        let err = apply(
            &json!({"list": [{"name": "a"}]}),
            &json!({"list": [{"name": "b"}]}),
            &NoKey,
        )
        .expect_err("no merge key");
        assert!(matches!(err, SmpError::InvalidPatch { .. }), "{err}");
        let err = smp_err(
            json!({"mergingList": [{"name": "a"}]}),
            json!({"mergingList": ["b"]}),
        );
        assert!(matches!(err, SmpError::TypeMismatch { .. }), "{err}");
    }

    // ---------------------------------------------------------------- $patch

    #[test]
    fn patch_04_patch_replace_on_a_map() {
        let got = smp(
            json!({"name": "x", "simpleMap": {"k1": "1", "k2": "2"}}),
            json!({"simpleMap": {"$patch": "replace", "k3": "3", "k4": null}}),
        );
        assert_exact(&got, &json!({"name": "x", "simpleMap": {"k3": "3"}}));
        // Go: "delete all keys from map" and "add key and delete all keys from map".
        assert_exact(
            &smp(json!({"name": 1, "value": 1}), json!({"$patch": "replace"})),
            &json!({}),
        );
        assert_exact(
            &smp(
                json!({"name": 1, "value": 1}),
                json!({"other": "a", "$patch": "replace"}),
            ),
            &json!({"other": "a"}),
        );
    }

    #[test]
    fn patch_04_patch_delete_on_a_map_empties_it() {
        // Go: "delete map from nested map".
        assert_exact(
            &smp(
                json!({"simpleMap": {"key1": 1, "key2": 1}, "name": "x"}),
                json!({"simpleMap": {"$patch": "delete"}}),
            ),
            &json!({"simpleMap": {}, "name": "x"}),
        );
    }

    #[test]
    fn patch_04_patch_directive_maps_for_a_missing_key_are_dropped() {
        // Go's removeDirectives drops any map carrying $patch that has nothing to merge into.
        assert_exact(
            &smp(
                json!({"name": "x", "other": 1}),
                json!({"simpleMap": {"$patch": "delete"}, "m2": {"$patch": "replace", "a": 1}, "other": {"$patch": "replace", "a": 1}}),
            ),
            &json!({"name": "x"}),
        );
    }

    #[test]
    fn patch_04_patch_replace_inside_a_list() {
        // Go: "delete all items from merging list".
        assert_exact(
            &smp(
                json!({"mergingList": [{"name": "1"}, {"name": "2"}]}),
                json!({"mergingList": [{"$patch": "replace"}]}),
            ),
            &json!({"mergingList": []}),
        );
        let got = smp(
            json!({"mergingList": [{"name": "1", "value": "a"}, {"name": "2"}]}),
            json!({"mergingList": [{"name": "3", "value": "c", "other": null}, {"name": "1"}, {"$patch": "replace"}]}),
        );
        assert_exact(
            &got,
            &json!({"mergingList": [{"name": "3", "value": "c"}, {"name": "1"}]}),
        );
    }

    #[test]
    fn patch_04_patch_delete_removes_list_items_by_key() {
        // Go: "delete all duplicate entries in a merging list".
        let got = smp(
            json!({"mergingList": [{"name": "1"}, {"name": "1"}, {"name": "2", "value": "a"}, {"name": "3"}, {"name": "3"}]}),
            json!({"mergingList": [{"name": "1", "$patch": "delete"}, {"name": "3", "$patch": "delete"}]}),
        );
        assert_exact(&got, &json!({"mergingList": [{"name": "2", "value": "a"}]}));
        // Go: "delete missing map from merging list" and "add map and delete map".
        let got = smp(
            json!({"mergingList": [{"name": "1"}, {"name": "2"}]}),
            json!({"mergingList": [{"name": "9", "$patch": "delete"}, {"name": "2", "$patch": "delete"}, {"name": "4"}]}),
        );
        assert_exact(
            &got,
            &json!({"mergingList": [{"name": "4"}, {"name": "1"}]}),
        );
        // A delete item without the merge key.
        let err = smp_err(
            json!({"mergingList": [{"name": "1"}]}),
            json!({"mergingList": [{"$patch": "delete"}]}),
        );
        assert!(matches!(err, SmpError::MissingMergeKey { .. }), "{err}");
    }

    #[test]
    fn patch_04_patch_merge_and_unknown_directives_are_rejected() {
        // As in Go: `merge` is not a valid $patch value in a map or a list item.
        let err = smp_err(
            json!({"m": {"a": 1}}),
            json!({"m": {"$patch": "merge", "b": 2}}),
        );
        assert!(err.to_string().contains("unknown patch type"), "{err}");
        assert_eq!(err.path(), "m");
        let err = smp_err(json!({"a": 1}), json!({"$patch": "merge"}));
        assert!(matches!(err, SmpError::InvalidPatch { .. }), "{err}");
        let err = smp_err(
            json!({"mergingList": [{"name": "1"}]}),
            json!({"mergingList": [{"name": "1", "$patch": "merge"}]}),
        );
        assert!(
            err.to_string()
                .contains("merging lists cannot yet be specified"),
            "{err}"
        );
        let err = smp_err(
            json!({"mergingList": [{"name": "1"}]}),
            json!({"mergingList": [{"name": "1", "$patch": "frobnicate"}]}),
        );
        assert!(err.to_string().contains("unknown patch type"), "{err}");
        let err = smp_err(json!({"m": {}}), json!({"m": {"$patch": 1}}));
        assert!(matches!(err, SmpError::InvalidPatch { .. }), "{err}");
    }

    // ---------------------------------------------------------------- $deleteFromPrimitiveList

    #[test]
    fn patch_04_delete_from_primitive_list() {
        // Go: "$deleteFromPrimitiveList should delete item from a list with merge patch strategy".
        assert_exact(
            &smp(
                json!({"mergingIntList": [1, 2, 3]}),
                json!({"$deleteFromPrimitiveList/mergingIntList": [2]}),
            ),
            &json!({"mergingIntList": [1, 3]}),
        );
        // ... "without merge patch strategy".
        assert_exact(
            &smp(
                json!({"nonMergingIntList": [1, 2, 3]}),
                json!({"$deleteFromPrimitiveList/nonMergingIntList": [2]}),
            ),
            &json!({"nonMergingIntList": [1, 3]}),
        );
        // ... "of nonexistent item", "on empty primitive list", "on nonexistent primitive list".
        assert_exact(
            &smp(
                json!({"mergingIntList": [1, 2]}),
                json!({"$deleteFromPrimitiveList/mergingIntList": [3]}),
            ),
            &json!({"mergingIntList": [1, 2]}),
        );
        assert_exact(
            &smp(
                json!({"mergingIntList": []}),
                json!({"$deleteFromPrimitiveList/mergingIntList": [3]}),
            ),
            &json!({"mergingIntList": []}),
        );
        assert_exact(
            &smp(
                json!({"foo": ["bar"]}),
                json!({"$deleteFromPrimitiveList/mergingIntList": [3]}),
            ),
            &json!({"foo": ["bar"]}),
        );
    }

    #[test]
    fn patch_04_delete_from_primitive_list_with_additions() {
        // Go: "add and delete items in lists of scalars" (no $setElementOrder).
        let got = smp(
            json!({"mergingIntList": [1, 2, 3]}),
            json!({"$deleteFromPrimitiveList/mergingIntList": [1], "mergingIntList": [4]}),
        );
        assert_exact(&got, &json!({"mergingIntList": [4, 2, 3]}));
    }

    #[test]
    fn patch_04_delete_from_primitive_list_bad_shapes() {
        let err = smp_err(
            json!({"mergingIntList": [1]}),
            json!({"$deleteFromPrimitiveList/mergingIntList": 1}),
        );
        assert!(matches!(err, SmpError::InvalidPatch { .. }), "{err}");
        let err = smp_err(
            json!({"mergingIntList": [1]}),
            json!({"$deleteFromPrimitiveListX/mergingIntList": [1]}),
        );
        assert!(err.to_string().contains("primitive list"), "{err}");
        let err = smp_err(
            json!({"mergingList": [{"name": "a"}]}),
            json!({"$deleteFromPrimitiveList/mergingList": [{"name": "a"}]}),
        );
        assert!(matches!(err, SmpError::InvalidPatch { .. }), "{err}");
        // Go deletes the whole field for a null deletion list.
        assert_exact(
            &smp(
                json!({"mergingIntList": [1], "a": 1}),
                json!({"$deleteFromPrimitiveList/mergingIntList": null}),
            ),
            &json!({"a": 1}),
        );
    }

    // ---------------------------------------------------------------- $setElementOrder, primitives

    fn int_list_case(live: Value, patch: Value, want: Value) {
        let got = smp(json!({ "mergingIntList": live }), patch);
        assert_exact(&got, &json!({ "mergingIntList": want }));
    }

    #[test]
    fn patch_04_set_element_order_on_primitive_lists() {
        // Go: "add an item in a int list and preserve order" (two-way and three-way).
        let patch = json!({"$setElementOrder/mergingIntList": [3, 1, 2], "mergingIntList": [3]});
        int_list_case(json!([1, 2]), patch.clone(), json!([3, 1, 2]));
        int_list_case(json!([1, 4, 2]), patch, json!([3, 1, 4, 2]));
        // "merge lists of scalars" (three-way).
        int_list_case(
            json!([1, 2, 4]),
            json!({"$setElementOrder/mergingIntList": [1, 2, 3], "mergingIntList": [3]}),
            json!([1, 2, 3, 4]),
        );
        // "add multiple items in a int list and preserve order".
        int_list_case(
            json!([1, 2]),
            json!({"$setElementOrder/mergingIntList": [1, 4, 2, 3], "mergingIntList": [4, 3]}),
            json!([1, 4, 2, 3]),
        );
        // "delete an item in a int list and preserve order".
        int_list_case(
            json!([1, 3, 2]),
            json!({"$setElementOrder/mergingIntList": [2, 1], "$deleteFromPrimitiveList/mergingIntList": [3]}),
            json!([2, 1]),
        );
        // "add and delete an item in a int list and preserve order".
        int_list_case(
            json!([1, 3, 2]),
            json!({"$setElementOrder/mergingIntList": [4, 2, 1], "mergingIntList": [4], "$deleteFromPrimitiveList/mergingIntList": [3]}),
            json!([4, 2, 1]),
        );
    }

    #[test]
    fn patch_04_set_element_order_primitives_with_server_only_items() {
        let order = json!({"$setElementOrder/mergingIntList": [4, 2, 3, 1]});
        // "set elements order in a int list" and "... with server-only items".
        int_list_case(json!([1, 3, 4, 2]), order.clone(), json!([4, 2, 3, 1]));
        int_list_case(json!([1, 3, 4, 2, 9]), order, json!([4, 2, 3, 1, 9]));
        // "... with server-only items 2" and "3".
        let order = json!({"$setElementOrder/mergingIntList": [2, 1, 4, 3]});
        int_list_case(
            json!([1, 2, 9, 3, 4]),
            order.clone(),
            json!([2, 1, 9, 4, 3]),
        );
        int_list_case(
            json!([1, 2, 7, 9, 8, 3, 4]),
            order,
            json!([2, 1, 7, 9, 8, 4, 3]),
        );
        // "behavior of set element order for a merging int list with duplicate".
        int_list_case(
            json!([1, 2, 3, 2, 4]),
            json!({"$setElementOrder/mergingIntList": [2, 1, 4, 3, 2]}),
            json!([2, 2, 1, 4, 3]),
        );
        // "$setElementOrder contains item that is not present in the int list to be merged".
        int_list_case(
            json!([1, 3]),
            json!({"$setElementOrder/mergingIntList": [3, 2, 1]}),
            json!([3, 1]),
        );
    }

    #[test]
    fn patch_04_set_element_order_creates_a_missing_list_and_orders_replaced_lists() {
        assert_exact(
            &smp(
                json!({}),
                json!({"$setElementOrder/mergingIntList": [2, 1], "mergingIntList": [2, 1]}),
            ),
            &json!({"mergingIntList": [2, 1]}),
        );
        // Nothing to order: no field is created.
        assert_exact(
            &smp(
                json!({"a": 1}),
                json!({"$setElementOrder/mergingIntList": [2, 1]}),
            ),
            &json!({"a": 1}),
        );
        // A list without merge strategy is replaced, then ordered.
        assert_exact(
            &smp(
                json!({"nonMergingIntList": [1, 2, 3]}),
                json!({"$setElementOrder/nonMergingIntList": [2, 1], "nonMergingIntList": [2, 1]}),
            ),
            &json!({"nonMergingIntList": [2, 1]}),
        );
    }

    #[test]
    fn patch_04_set_element_order_must_match_the_patch_list() {
        // Go: "$setElementOrder contains item that is not present in the int list to be merged"
        // (the error variant).
        let err = smp_err(
            json!({"mergingIntList": [1, 3, 2]}),
            json!({"$setElementOrder/mergingIntList": [1, 2, 3], "mergingIntList": [3, 1]}),
        );
        assert!(err.to_string().contains("doesn't match"), "{err}");
        assert_eq!(err.path(), "mergingIntList");
        let err = smp_err(
            json!({"mergingIntList": [1]}),
            json!({"$setElementOrder/mergingIntList": 1}),
        );
        assert!(matches!(err, SmpError::InvalidPatch { .. }), "{err}");
        let err = smp_err(
            json!({"mergingIntList": [1]}),
            json!({"$setElementOrderX/mergingIntList": [1]}),
        );
        assert!(err.to_string().contains("setElementOrder"), "{err}");
        let err = smp_err(
            json!({"mergingIntList": 1}),
            json!({"$setElementOrder/mergingIntList": [1]}),
        );
        assert!(matches!(err, SmpError::TypeMismatch { .. }), "{err}");
    }

    // ---------------------------------------------------------------- $setElementOrder, keyed lists

    fn names(list: &[(&str, Option<&str>)]) -> Value {
        Value::Array(
            list.iter()
                .map(|(name, value)| match value {
                    Some(value) => json!({"name": name, "value": value}),
                    None => json!({"name": name}),
                })
                .collect(),
        )
    }

    fn order(names: &[&str]) -> Value {
        Value::Array(names.iter().map(|name| json!({ "name": name })).collect())
    }

    #[test]
    fn patch_04_set_element_order_on_keyed_lists() {
        // Go: "add an item in a list and preserve order" (three-way).
        let got = smp(
            json!({"mergingList": [{"name": "1", "other": "a"}, {"name": "2", "value": "2", "other": "b"}]}),
            json!({"$setElementOrder/mergingList": order(&["3", "1", "2"]), "mergingList": [{"name": "3", "value": "3"}]}),
        );
        assert_exact(
            &got,
            &json!({"mergingList": [{"name": "3", "value": "3"}, {"name": "1", "other": "a"}, {"name": "2", "value": "2", "other": "b"}]}),
        );
        // "add multiple items in a list and preserve order".
        let got = smp(
            json!({"mergingList": names(&[("1", None), ("2", Some("2"))])}),
            json!({"$setElementOrder/mergingList": order(&["1", "4", "2", "3"]), "mergingList": names(&[("4", Some("4")), ("3", Some("3"))])}),
        );
        assert_exact(
            &got,
            &json!({"mergingList": names(&[("1", None), ("4", Some("4")), ("2", Some("2")), ("3", Some("3"))])}),
        );
        // "delete an item in a list and preserve order".
        let got = smp(
            json!({"mergingList": names(&[("1", None), ("3", Some("3")), ("2", Some("2"))])}),
            json!({"$setElementOrder/mergingList": order(&["2", "1"]), "mergingList": [{"name": "3", "$patch": "delete"}]}),
        );
        assert_exact(
            &got,
            &json!({"mergingList": names(&[("2", Some("2")), ("1", None)])}),
        );
        // "change an item in a list and preserve order".
        let got = smp(
            json!({"mergingList": names(&[("1", None), ("3", Some("3")), ("2", Some("2"))])}),
            json!({"$setElementOrder/mergingList": order(&["2", "3", "1"]), "mergingList": names(&[("3", Some("x"))])}),
        );
        assert_exact(
            &got,
            &json!({"mergingList": names(&[("2", Some("2")), ("3", Some("x")), ("1", None)])}),
        );
        // "add and delete an item in a list and preserve order".
        let got = smp(
            json!({"mergingList": names(&[("1", None), ("3", Some("3")), ("2", Some("2"))])}),
            json!({"$setElementOrder/mergingList": order(&["4", "2", "1"]), "mergingList": [{"name": "4", "value": "4"}, {"name": "3", "$patch": "delete"}]}),
        );
        assert_exact(
            &got,
            &json!({"mergingList": names(&[("4", Some("4")), ("2", Some("2")), ("1", None)])}),
        );
    }

    #[test]
    fn patch_04_set_element_order_keyed_with_server_only_items() {
        let live = |extra: &[(&'static str, Option<&'static str>)]| {
            let mut items = vec![
                ("1", None),
                ("3", Some("3")),
                ("4", Some("4")),
                ("2", Some("2")),
            ];
            items.extend_from_slice(extra);
            json!({ "mergingList": names(&items) })
        };
        let patch = json!({"$setElementOrder/mergingList": order(&["4", "2", "3", "1"])});
        // "set elements order in a list" and "... with server-only items".
        assert_exact(
            &smp(live(&[]), patch.clone()),
            &json!({"mergingList": names(&[("4", Some("4")), ("2", Some("2")), ("3", Some("3")), ("1", None)])}),
        );
        assert_exact(
            &smp(live(&[("9", None)]), patch),
            &json!({"mergingList": names(&[("4", Some("4")), ("2", Some("2")), ("3", Some("3")), ("1", None), ("9", None)])}),
        );
        // "... with server-only items 2" and "3".
        let patch = json!({"$setElementOrder/mergingList": order(&["2", "1", "4", "3"])});
        assert_exact(
            &smp(
                json!({"mergingList": names(&[("1", None), ("2", Some("2")), ("9", None), ("3", Some("3")), ("4", Some("4"))])}),
                patch.clone(),
            ),
            &json!({"mergingList": names(&[("2", Some("2")), ("1", None), ("9", None), ("4", Some("4")), ("3", Some("3"))])}),
        );
        assert_exact(
            &smp(
                json!({"mergingList": names(&[("1", None), ("2", Some("2")), ("7", None), ("9", None), ("8", None), ("3", Some("3")), ("4", Some("4"))])}),
                patch,
            ),
            &json!({"mergingList": names(&[("2", Some("2")), ("1", None), ("7", None), ("9", None), ("8", None), ("4", Some("4")), ("3", Some("3"))])}),
        );
        // "behavior of set element order for a merging list with duplicate".
        assert_exact(
            &smp(
                json!({"mergingList": names(&[("1", None), ("2", Some("dup1")), ("3", None), ("2", Some("dup2")), ("4", None)])}),
                json!({"$setElementOrder/mergingList": order(&["2", "1", "4", "3", "2"])}),
            ),
            &json!({"mergingList": names(&[("2", Some("dup1")), ("2", Some("dup2")), ("1", None), ("4", None), ("3", None)])}),
        );
        // "$setElementOrder contains item that is not present in the list to be merged".
        assert_exact(
            &smp(
                json!({"mergingList": names(&[("1", None), ("3", None)])}),
                json!({"$setElementOrder/mergingList": order(&["3", "2", "1"]), "mergingList": names(&[("3", Some("3")), ("1", Some("1"))])}),
            ),
            &json!({"mergingList": names(&[("3", Some("3")), ("1", Some("1"))])}),
        );
    }

    #[test]
    fn patch_04_set_element_order_in_two_lists_at_once() {
        // Go: "delete and reorder in one list, reorder in another".
        let got = smp(
            json!({
                "mergingList": names(&[("a", Some("a")), ("b", Some("b"))]),
                "otherMergingList": names(&[("c", Some("c")), ("d", Some("d"))])
            }),
            json!({
                "$setElementOrder/mergingList": order(&["b"]),
                "$setElementOrder/otherMergingList": order(&["d", "c"]),
                "mergingList": [{"$patch": "delete", "name": "a"}]
            }),
        );
        assert_exact(
            &got,
            &json!({
                "mergingList": names(&[("b", Some("b"))]),
                "otherMergingList": names(&[("d", Some("d")), ("c", Some("c"))])
            }),
        );
    }

    #[test]
    fn patch_04_set_element_order_keyed_errors() {
        // Go: "should check if order in $setElementOrder and patch list match".
        let err = smp_err(
            json!({"mergingList": names(&[("1", None), ("3", None), ("2", None)])}),
            json!({"$setElementOrder/mergingList": order(&["1", "2", "3"]), "mergingList": names(&[("3", Some("3")), ("1", Some("1"))])}),
        );
        assert!(err.to_string().contains("doesn't match"), "{err}");
        let err = smp_err(
            json!({"mergingList": names(&[("1", None)])}),
            json!({"$setElementOrder/mergingList": [{"value": "1"}], "mergingList": names(&[("1", Some("x"))])}),
        );
        assert!(matches!(err, SmpError::MissingMergeKey { .. }), "{err}");
        let err = smp_err(
            json!({"mergingList": names(&[("1", None)])}),
            json!({"$setElementOrder/mergingList": ["1"]}),
        );
        assert!(matches!(err, SmpError::TypeMismatch { .. }), "{err}");
    }

    // ---------------------------------------------------------------- $retainKeys

    #[test]
    fn patch_04_retain_keys_clears_unlisted_fields() {
        // Go: "retainKeys map adds a field and clear a field".
        assert_exact(
            &smp(
                json!({"retainKeysMap": {"name": "foo", "other": "a"}}),
                json!({"retainKeysMap": {"$retainKeys": ["name", "value"], "value": "bar"}}),
            ),
            &json!({"retainKeysMap": {"name": "foo", "value": "bar"}}),
        );
        // "retainKeys map deletes a field and clears a field".
        assert_exact(
            &smp(
                json!({"retainKeysMap": {"name": "foo", "value": "bar", "other": "a"}}),
                json!({"retainKeysMap": {"$retainKeys": ["name"], "value": null}}),
            ),
            &json!({"retainKeysMap": {"name": "foo"}}),
        );
        // "retainKeys map should clear defaulted field with conflict (discriminated union)".
        assert_exact(
            &smp(
                json!({"retainKeysMap": {"name": "type1", "value": "foo"}}),
                json!({"retainKeysMap": {"$retainKeys": ["name", "other"], "name": "type2", "other": "bar"}}),
            ),
            &json!({"retainKeysMap": {"name": "type2", "other": "bar"}}),
        );
        // "retainKeys list of maps clears a field".
        assert_exact(
            &smp(
                json!({"retainKeysMergingList": [{"name": "bar"}, {"name": "foo", "value": "a", "other": "b"}]}),
                json!({"retainKeysMergingList": [{"name": "foo", "$retainKeys": ["name", "value"]}]}),
            ),
            &json!({"retainKeysMergingList": [{"name": "bar"}, {"name": "foo", "value": "a"}]}),
        );
        // Also works with a nested merged list next to the directive.
        assert_exact(
            &smp(
                json!({"retainKeysMap": {"name": "foo", "simpleMap": {"a": "1"}, "mergingList": [{"name": "x"}]}}),
                json!({"retainKeysMap": {"$retainKeys": ["name", "mergingList"], "$setElementOrder/mergingList": order(&["y", "x"]), "mergingList": [{"name": "y"}]}}),
            ),
            &json!({"retainKeysMap": {"name": "foo", "mergingList": [{"name": "y"}, {"name": "x"}]}}),
        );
        assert!(TEST_SCHEMA.retain_keys(&["retainKeysMap"]));
        assert!(!TEST_SCHEMA.retain_keys(&["mergingList"]));
    }

    #[test]
    fn patch_04_retain_keys_errors() {
        let err = smp_err(
            json!({"retainKeysMap": {"name": "foo"}}),
            json!({"retainKeysMap": {"$retainKeys": ["name"], "value": "bar"}}),
        );
        assert!(err.to_string().contains("retainKeys"), "{err}");
        assert_eq!(err.path(), "retainKeysMap");
        let err = smp_err(
            json!({"retainKeysMap": {"name": "foo"}}),
            json!({"retainKeysMap": {"$retainKeys": "name"}}),
        );
        assert!(matches!(err, SmpError::InvalidPatch { .. }), "{err}");
    }

    // ---------------------------------------------------------------- directives never leak

    #[test]
    fn patch_04_directive_keys_never_reach_the_output() {
        let got = smp(
            json!({"name": "x", "mergingList": [{"name": "a"}]}),
            json!({
                "fresh": {
                    "$retainKeys": ["a"],
                    "a": {"b": 1, "drop": {"$patch": "delete"}},
                    "$setElementOrder/list": [2, 1],
                    "list": [2, 1, {"$patch": "replace"}],
                    "$deleteFromPrimitiveList/list": [3]
                },
                "mergingList": [{"name": "b", "inner": {"$patch": "replace", "x": 1}, "keep": {"$retainKeys": [], "y": 2}}]
            }),
        );
        assert_exact(
            &got,
            &json!({
                "name": "x",
                "mergingList": [{"name": "b", "keep": {"y": 2}}, {"name": "a"}],
                "fresh": {"a": {"b": 1}, "list": [2, 1]}
            }),
        );
        fn has_directive(value: &Value) -> bool {
            match value {
                Value::Object(map) => map
                    .iter()
                    .any(|(key, value)| key.starts_with('$') || has_directive(value)),
                Value::Array(list) => list.iter().any(has_directive),
                _ => false,
            }
        }
        assert!(!has_directive(&got));
    }

    // ---------------------------------------------------------------- schemas

    #[test]
    fn patch_04_builtin_schemas_follow_the_go_struct_tags() {
        let meta_checks = [
            (&["metadata", "finalizers"][..], MERGE_PRIMITIVES),
            (
                &["metadata", "ownerReferences"][..],
                ListStrategy::Merge { key: Some("uid") },
            ),
            (&["metadata", "managedFields"][..], ListStrategy::Replace),
            (&["finalizers"][..], ListStrategy::Replace),
        ];
        for (api_version, kind) in [
            ("v1", "ConfigMap"),
            ("v1", "Secret"),
            ("v1", "Namespace"),
            ("v1", "ServiceAccount"),
            ("v1", "Event"),
            ("coordination.k8s.io/v1", "Lease"),
            ("example.com/v1", "Widget"),
            ("apps/v1", "Deployment"),
        ] {
            let schema = builtin_schema(api_version, kind);
            for (path, want) in meta_checks {
                assert_eq!(
                    schema.list_strategy(path),
                    want,
                    "{api_version} {kind} {path:?}"
                );
            }
            assert!(!schema.retain_keys(&["metadata"]));
        }
        let ns = builtin_schema("v1", "Namespace");
        assert_eq!(
            ns.list_strategy(&["status", "conditions"]),
            ListStrategy::Merge { key: Some("type") }
        );
        assert_eq!(
            ns.list_strategy(&["spec", "finalizers"]),
            ListStrategy::Replace
        );
        let sa = builtin_schema("v1", "ServiceAccount");
        assert_eq!(sa.list_strategy(&["secrets"]), MERGE_BY_NAME);
        assert_eq!(
            sa.list_strategy(&["imagePullSecrets"]),
            ListStrategy::Replace
        );
        // The kind's own fields do not leak into other kinds.
        assert_eq!(
            builtin_schema("v1", "ConfigMap").list_strategy(&["secrets"]),
            ListStrategy::Replace
        );
        assert_eq!(
            builtin_schema("v2", "ServiceAccount").list_strategy(&["secrets"]),
            ListStrategy::Replace
        );
        // An unknown kind gets ObjectMeta only: a Deployment's containers are not merged.
        assert_eq!(
            builtin_schema("apps/v1", "Deployment").list_strategy(&[
                "spec",
                "template",
                "spec",
                "containers"
            ]),
            ListStrategy::Replace
        );
    }

    #[test]
    fn patch_04_static_schema_matches_whole_paths_only() {
        const SCHEMA: StaticPatchSchema =
            StaticPatchSchema::new(&[("a.b", MERGE_PRIMITIVES), ("c", MERGE_BY_NAME)]);
        assert_eq!(SCHEMA.list_strategy(&["a", "b"]), MERGE_PRIMITIVES);
        assert_eq!(SCHEMA.list_strategy(&["a"]), ListStrategy::Replace);
        assert_eq!(
            SCHEMA.list_strategy(&["a", "b", "c"]),
            ListStrategy::Replace
        );
        assert_eq!(SCHEMA.list_strategy(&["x", "c"]), ListStrategy::Replace);
        assert_eq!(SCHEMA.list_strategy(&[]), ListStrategy::Replace);
        assert_eq!(SCHEMA.list_strategy(&["c"]), MERGE_BY_NAME);
        assert_eq!(SCHEMA.lists().len(), 2);
        assert_eq!(ListStrategy::default(), ListStrategy::Replace);
    }

    #[test]
    fn patch_04_owner_references_merge_by_uid() {
        let schema = builtin_schema("v1", "ConfigMap");
        let got = apply(
            &json!({"metadata": {"name": "cm", "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "u1"}
            ]}}),
            &json!({"metadata": {"ownerReferences": [
                {"uid": "u1", "controller": true},
                {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u2"}
            ]}}),
            &schema,
        )
        .expect("applies");
        assert_exact(
            &got,
            &json!({"metadata": {"name": "cm", "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "u1", "controller": true},
                {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u2"}
            ]}}),
        );
        // managedFields are replaced whole.
        let got = apply(
            &json!({"metadata": {"managedFields": [{"manager": "a"}, {"manager": "b"}]}}),
            &json!({"metadata": {"managedFields": [{}]}}),
            &schema,
        )
        .expect("applies");
        assert_exact(&got, &json!({"metadata": {"managedFields": [{}]}}));
    }

    // ---------------------------------------------------------------- realistic kubectl requests

    const FIXTURES: &[(&str, &str)] = &[
        (
            "configmap-client-side-apply",
            include_str!("fixtures/smp/configmap-client-side-apply.json"),
        ),
        (
            "configmap-edit-label",
            include_str!("fixtures/smp/configmap-edit-label.json"),
        ),
        (
            "configmap-apply-add-finalizer",
            include_str!("fixtures/smp/configmap-apply-add-finalizer.json"),
        ),
        (
            "configmap-apply-remove-finalizer",
            include_str!("fixtures/smp/configmap-apply-remove-finalizer.json"),
        ),
        (
            "serviceaccount-secrets-merge",
            include_str!("fixtures/smp/serviceaccount-secrets-merge.json"),
        ),
        (
            "namespace-status-conditions",
            include_str!("fixtures/smp/namespace-status-conditions.json"),
        ),
    ];

    fn run_fixture(name: &str, text: &str) -> Value {
        let case: Value = serde_json::from_str(text).expect("fixture is JSON");
        assert_eq!(case["spec"], "PATCH-04", "{name}");
        let schema = builtin_schema(
            case["apiVersion"].as_str().expect("apiVersion"),
            case["kind"].as_str().expect("kind"),
        );
        let got = apply(&case["original"], &case["patch"], &schema)
            .unwrap_or_else(|err| panic!("{name}: {err}"));
        assert_eq!(got, case["expected"], "{name}: {}", case["description"]);
        got
    }

    #[test]
    fn patch_04_kubectl_fixtures() {
        for (name, text) in FIXTURES {
            run_fixture(name, text);
        }
    }

    #[test]
    fn patch_04_client_side_apply_of_a_configmap() {
        let got = run_fixture("configmap-client-side-apply", FIXTURES[0].1);
        // The annotation is stored byte for byte (kubectl's next three-way diff reads it back).
        let annotation =
            got["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
                .as_str()
                .expect("annotation");
        assert!(annotation.ends_with("}\n"));
        assert!(annotation.contains(r#""key1":"value1-changed""#));
        // Untouched metadata keeps its place; the removed key is gone.
        let keys: Vec<&str> = got["metadata"]
            .as_object()
            .expect("metadata")
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "name",
                "namespace",
                "uid",
                "resourceVersion",
                "creationTimestamp",
                "labels",
                "annotations",
                "managedFields"
            ]
        );
        assert!(got["data"].get("key2").is_none());
    }

    #[test]
    fn patch_04_finalizers_merge_as_kubectl_patch_sends_them() {
        let schema = builtin_schema("v1", "ConfigMap");
        let live = json!({"metadata": {"name": "cm", "finalizers": ["example.com/a"]}});
        // `kubectl patch --type strategic -p '{"metadata":{"finalizers":[...]}}'`: a union.
        let got = apply(
            &live,
            &json!({"metadata": {"finalizers": ["example.com/b", "example.com/a"]}}),
            &schema,
        )
        .expect("applies");
        assert_exact(
            &got,
            &json!({"metadata": {"name": "cm", "finalizers": ["example.com/b", "example.com/a"]}}),
        );
        // `kubectl edit` removing the last finalizer sends null.
        let got =
            apply(&got, &json!({"metadata": {"finalizers": null}}), &schema).expect("applies");
        assert_exact(&got, &json!({"metadata": {"name": "cm"}}));
    }

    #[test]
    fn patch_04_service_account_secrets_merge_by_name() {
        let schema = builtin_schema("v1", "ServiceAccount");
        let live = json!({"metadata": {"name": "sa"}, "secrets": [{"name": "a"}, {"name": "b", "namespace": "x"}]});
        let got = apply(
        &live,
        &json!({"secrets": [{"name": "b", "namespace": "y"}, {"name": "a", "$patch": "delete"}]}),
        &schema,
    )
    .expect("applies");
        assert_exact(
            &got,
            &json!({"metadata": {"name": "sa"}, "secrets": [{"name": "b", "namespace": "y"}]}),
        );
        let err = apply(&live, &json!({"secrets": [{"namespace": "y"}]}), &schema)
            .expect_err("merge key missing");
        assert_eq!(err.path(), "secrets");
        assert_eq!(
            err.to_string(),
            "map at secrets does not contain declared merge key: name"
        );
    }
}
