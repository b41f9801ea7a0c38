//! Field-set shapes of the built-in kinds Wasmgate serves (the merge knowledge kube reads
//! from `k8s.io/api`'s struct tags: `+listType`, `+listMapKey`, `patchMergeKey`): ObjectMeta
//! for every kind, and the lists of v1 Namespace and ServiceAccount. Unlisted keys of a
//! kind are walked as [`Shape::Deduced`] (free-form), which differs from kube only in
//! where `"."` appears under nested structs.

use std::collections::BTreeMap;

use super::{ListKind, Shape};

/// A struct of these declared fields.
pub(super) fn strukt(fields: Vec<(&str, Shape)>) -> Shape {
    Shape::Map {
        atomic: false,
        fields: fields.into_iter().map(|(k, s)| (k.to_owned(), s)).collect(),
        entries: None,
    }
}

/// A free-form map of scalars (labels, `data`).
pub(super) fn strings() -> Shape {
    Shape::Map {
        atomic: false,
        fields: BTreeMap::new(),
        entries: Some(Box::new(Shape::Scalar)),
    }
}

fn list(kind: ListKind, items: Shape) -> Shape {
    Shape::List {
        kind,
        items: Box::new(items),
    }
}

fn keyed(key: &str, items: Shape) -> Shape {
    list(
        ListKind::Map {
            keys: vec![key.to_owned()],
            defaults: BTreeMap::new(),
        },
        items,
    )
}

/// `metadata`: labels and annotations free-form, finalizers a set, owner references keyed
/// by uid, the rest scalars.
pub fn object_meta() -> Shape {
    let scalars = [
        "name",
        "generateName",
        "namespace",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "selfLink",
    ];
    let mut fields: Vec<(&str, Shape)> = scalars.iter().map(|s| (*s, Shape::Scalar)).collect();
    fields.push(("labels", strings()));
    fields.push(("annotations", strings()));
    fields.push(("finalizers", list(ListKind::Set, Shape::Scalar)));
    fields.push(("ownerReferences", keyed("uid", Shape::Deduced)));
    fields.push(("managedFields", list(ListKind::Atomic, Shape::Deduced)));
    strukt(fields)
}

/// The shape of a built-in `kind` at `api_version` (unknown kinds: ObjectMeta only).
pub fn builtin_shape(api_version: &str, kind: &str) -> Shape {
    let mut fields = vec![
        ("apiVersion", Shape::Scalar),
        ("kind", Shape::Scalar),
        ("metadata", object_meta()),
    ];
    match (api_version, kind) {
        ("v1", "ConfigMap") => {
            fields.push(("data", strings()));
            fields.push(("binaryData", strings()));
        }
        ("v1", "Secret") => {
            fields.push(("data", strings()));
            fields.push(("stringData", strings()));
        }
        ("v1", "Namespace") => {
            fields.push((
                "spec",
                strukt(vec![("finalizers", list(ListKind::Atomic, Shape::Scalar))]),
            ));
            fields.push((
                "status",
                strukt(vec![("conditions", keyed("type", Shape::Deduced))]),
            ));
        }
        ("v1", "ServiceAccount") => {
            fields.push(("secrets", keyed("name", Shape::Deduced)));
            fields.push(("imagePullSecrets", list(ListKind::Atomic, Shape::Deduced)));
        }
        _ => {}
    }
    strukt(fields)
}
