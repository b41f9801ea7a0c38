//! Random JSON for the property tests of this module.

use proptest::prelude::*;
use serde_json::{Value, json};

/// Small JSON values: scalars, short lists, objects of a few keys, three levels deep.
pub(super) fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (0i64..3).prop_map(|i| json!(i)),
        "[xy]".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::btree_map("[abc]", inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// An object of `min_keys` to 3 keys among `a`..`d`.
pub(super) fn json_object(min_keys: usize) -> impl Strategy<Value = Value> {
    prop::collection::btree_map("[abcd]", json_value(), min_keys..4)
        .prop_map(|m| Value::Object(m.into_iter().collect()))
}
