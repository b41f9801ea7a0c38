//! Strategic merge patch (`application/strategic-merge-patch+json`, PATCH-04).
//!
//! This is the server side of Kubernetes' strategic merge patch: the semantics of
//! `StrategicMergePatch` / `StrategicMergeMapPatch` in `k8s.io/apimachinery/pkg/util/strategicpatch`
//! for patch format version 2 (the one kubectl 1.32 sends for `apply` (client-side), `edit` and
//! `patch` on built-in kinds). Go reads the per-field knowledge from struct tags
//! (`patchStrategy`, `patchMergeKey`); here a small [`PatchSchema`] supplies it.
//!
//! ## Semantics
//! * Maps merge recursively; a `null` value deletes the key (a `null` for a missing key is
//!   ignored); scalars, and any change of JSON type, replace the old value.
//! * Lists are replaced whole unless the schema says [`ListStrategy::Merge`]:
//!   * lists of primitives become an ordered set (union without duplicates);
//!   * lists of objects are merged item by item on the merge key: an item whose key is already
//!     present is merged recursively, others are added.
//!
//!   The order of a merged list follows the Go code: the patch's own order wins for the items it
//!   names, items only on the server keep their relative order and are interleaved by their old
//!   positions. Without `$setElementOrder` this can put a brand-new item *before* the server-only
//!   items (`["a"]` patched with `["b"]` gives `["b","a"]`), exactly as Kubernetes does.
//! * Directives:
//!   * `"$patch": "replace"` in a map replaces the map by the rest of the patch map; as an item
//!     of a keyed list it replaces the list by the patch's other items;
//!   * `"$patch": "delete"` in a map empties that map (`{}`); as an item of a keyed list it
//!     deletes every item with that merge key;
//!   * `"$patch": "merge"` is rejected, as in Go (`unknown patch type` in a map,
//!     `merging lists cannot yet be specified in the patch` in a list);
//!   * `"$deleteFromPrimitiveList/<field>": [..]` removes those values from a primitive list
//!     (whatever the field's strategy); a `null` there deletes the field, as in Go;
//!   * `"$setElementOrder/<field>": [..]` reorders the resulting list (primitive values, or
//!     `{<mergeKey>: value}` objects); items it does not name keep their relative order and are
//!     interleaved by their old positions;
//!   * `"$retainKeys": [..]` deletes every key of the original map not listed, after checking
//!     that every non-null key of the patch map is listed. As in Go it is honoured wherever it
//!     appears; [`PatchSchema::retain_keys`] is informational.
//! * Values copied from the patch (new keys, type changes, replaced lists and maps, added list
//!   items) are cleaned: `null` members are dropped, maps carrying `$patch` are dropped (Go's
//!   `removeDirectives`), and the other directive keys are removed. Directive keys therefore
//!   never reach the output. Go keeps some of them in its intermediate map and mostly loses
//!   them when it decodes into the typed struct, so for the patches kubectl builds the stored
//!   result is the same.
//!
//! ## Known differences from Go
//! * No per-field type knowledge: Go rejects a patch that names a field unknown to the struct
//!   when both sides hold a map or a list there; this code merges it. A map field tagged
//!   `patchStrategy:"replace"` (none in the kinds served here) is merged.
//! * `$deleteFromPrimitiveList` with a non-list value or on a list of objects is rejected here
//!   (Go silently does odd things); a `null` item in a list being merged is rejected (Go
//!   panics).
//! * Go errors when `$setElementOrder` is used and neither the live list nor the patch list has
//!   an element; here that is a no-op.

use std::cmp::Ordering;

use serde_json::{Map, Value};

type Object = Map<String, Value>;

const DIRECTIVE_MARKER: &str = "$patch";
const DIRECTIVE_DELETE: &str = "delete";
const DIRECTIVE_REPLACE: &str = "replace";
const DIRECTIVE_MERGE: &str = "merge";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";
const SET_ELEMENT_ORDER: &str = "$setElementOrder";

/// How a list field is patched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ListStrategy {
    /// Lists are replaced whole (the default for fields without a patch strategy).
    #[default]
    Replace,
    /// Primitive lists: union, keep order; object lists: merge items by this key.
    Merge {
        /// The `patchMergeKey`; `None` for lists of primitives.
        key: Option<&'static str>,
    },
}

/// Where a patch needs per-field knowledge. `path` is the chain of object field names from the
/// root (list items do not add a segment), e.g. `["metadata","ownerReferences"]`.
pub trait PatchSchema {
    /// The strategy of the list field at `path`.
    fn list_strategy(&self, path: &[&str]) -> ListStrategy;

    /// Whether the field at `path` carries the `retainKeys` patch strategy. [`apply`] honours a
    /// `$retainKeys` directive wherever it appears (as Go does), so this is informational.
    fn retain_keys(&self, _path: &[&str]) -> bool {
        false
    }
}

/// A table of dotted paths, e.g. `("metadata.ownerReferences", ListStrategy::Merge { key:
/// Some("uid") })`; every other list is [`ListStrategy::Replace`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StaticPatchSchema {
    lists: &'static [(&'static str, ListStrategy)],
    retain_keys: &'static [&'static str],
}

impl StaticPatchSchema {
    /// A schema from a table of dotted list paths and their strategies.
    pub const fn new(lists: &'static [(&'static str, ListStrategy)]) -> Self {
        Self {
            lists,
            retain_keys: &[],
        }
    }

    /// The same schema, with these dotted paths carrying the `retainKeys` strategy.
    pub const fn with_retain_keys(self, paths: &'static [&'static str]) -> Self {
        Self {
            lists: self.lists,
            retain_keys: paths,
        }
    }

    /// The table of list paths and strategies.
    pub const fn lists(&self) -> &'static [(&'static str, ListStrategy)] {
        self.lists
    }
}

impl PatchSchema for StaticPatchSchema {
    fn list_strategy(&self, path: &[&str]) -> ListStrategy {
        self.lists
            .iter()
            .find(|(dotted, _)| dotted_path_is(dotted, path))
            .map_or(ListStrategy::Replace, |(_, strategy)| *strategy)
    }

    fn retain_keys(&self, path: &[&str]) -> bool {
        self.retain_keys
            .iter()
            .any(|dotted| dotted_path_is(dotted, path))
    }
}

fn dotted_path_is(dotted: &str, path: &[&str]) -> bool {
    let mut segments = dotted.split('.');
    path.iter().all(|field| segments.next() == Some(*field)) && segments.next().is_none()
}

const MERGE_PRIMITIVES: ListStrategy = ListStrategy::Merge { key: None };

/// ObjectMeta's list fields (k8s.io/apimachinery meta/v1).
const META_ONLY: &[(&str, ListStrategy)] = &[
    ("metadata.finalizers", MERGE_PRIMITIVES),
    (
        "metadata.ownerReferences",
        ListStrategy::Merge { key: Some("uid") },
    ),
    ("metadata.managedFields", ListStrategy::Replace),
];

/// core/v1 Namespace: `status.conditions` is merged by `type`; `spec.finalizers` has no tag.
const NAMESPACE: &[(&str, ListStrategy)] = &[
    ("metadata.finalizers", MERGE_PRIMITIVES),
    (
        "metadata.ownerReferences",
        ListStrategy::Merge { key: Some("uid") },
    ),
    ("metadata.managedFields", ListStrategy::Replace),
    ("spec.finalizers", ListStrategy::Replace),
    (
        "status.conditions",
        ListStrategy::Merge { key: Some("type") },
    ),
];

/// core/v1 ServiceAccount: `secrets` is merged by `name`; `imagePullSecrets` has no tag.
const SERVICE_ACCOUNT: &[(&str, ListStrategy)] = &[
    ("metadata.finalizers", MERGE_PRIMITIVES),
    (
        "metadata.ownerReferences",
        ListStrategy::Merge { key: Some("uid") },
    ),
    ("metadata.managedFields", ListStrategy::Replace),
    ("secrets", ListStrategy::Merge { key: Some("name") }),
    ("imagePullSecrets", ListStrategy::Replace),
];

/// Patch knowledge for the built-in kinds Wasmgate serves, keyed by (apiVersion, kind), from the
/// struct tags of k8s.io/api 1.32: v1 ConfigMap, Secret, Namespace, ServiceAccount, Event and
/// coordination.k8s.io/v1 Lease. ConfigMap, Secret, Event and Lease have no tagged list of their
/// own. Unknown kinds get ObjectMeta-only knowledge.
pub fn builtin_schema(api_version: &str, kind: &str) -> StaticPatchSchema {
    match (api_version, kind) {
        ("v1", "Namespace") => StaticPatchSchema::new(NAMESPACE),
        ("v1", "ServiceAccount") => StaticPatchSchema::new(SERVICE_ACCOUNT),
        _ => StaticPatchSchema::new(META_ONLY),
    }
}

/// Why a strategic merge patch could not be applied.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SmpError {
    /// The patch is malformed: not an object, an unknown or misplaced directive, a bad
    /// `$setElementOrder`/`$deleteFromPrimitiveList`/`$retainKeys` value, lists of lists, ...
    #[error("invalid strategic merge patch at {path}: {message}")]
    InvalidPatch {
        /// Dotted field path (`(root)` for the document itself).
        path: String,
        /// What is wrong.
        message: String,
    },
    /// An item of a keyed list (in the patch or in the original) lacks the merge key.
    #[error("map at {path} does not contain declared merge key: {key}")]
    MissingMergeKey {
        /// Dotted path of the list.
        path: String,
        /// The merge key.
        key: String,
    },
    /// Values of incompatible JSON types meet where the Go code errors.
    #[error("mismatched types at {path}: {message}")]
    TypeMismatch {
        /// Dotted field path.
        path: String,
        /// What was expected and what was found.
        message: String,
    },
}

impl SmpError {
    /// The dotted path where the problem was found.
    pub fn path(&self) -> &str {
        match self {
            Self::InvalidPatch { path, .. }
            | Self::MissingMergeKey { path, .. }
            | Self::TypeMismatch { path, .. } => path,
        }
    }
}

/// Applies `patch` to `original`, returning the new document. Never mutates the inputs.
///
/// Both must be JSON objects; a `null` original is taken as `{}` and a `null` patch changes
/// nothing, as in Go.
pub fn apply(original: &Value, patch: &Value, schema: &dyn PatchSchema) -> Result<Value, SmpError> {
    let mut merger = Merger {
        schema,
        path: Vec::new(),
    };
    let base = match original {
        Value::Object(map) => map.clone(),
        Value::Null => Object::new(),
        other => {
            return Err(merger.invalid(format!(
                "the original document must be a JSON object, found {}",
                type_name(other)
            )));
        }
    };
    match patch {
        Value::Object(patch) => merger.merge_map(base, patch).map(Value::Object),
        Value::Null => Ok(Value::Object(base)),
        other => Err(merger.invalid(format!(
            "the patch must be a JSON object, found {}",
            type_name(other)
        ))),
    }
}

struct Merger<'s, 'p> {
    schema: &'s dyn PatchSchema,
    path: Vec<&'p str>,
}

impl<'p> Merger<'_, 'p> {
    fn path_string(&self) -> String {
        if self.path.is_empty() {
            "(root)".to_owned()
        } else {
            self.path.join(".")
        }
    }

    fn invalid(&self, message: impl Into<String>) -> SmpError {
        SmpError::InvalidPatch {
            path: self.path_string(),
            message: message.into(),
        }
    }

    fn mismatch(&self, message: impl Into<String>) -> SmpError {
        SmpError::TypeMismatch {
            path: self.path_string(),
            message: message.into(),
        }
    }

    fn missing_key(&self, key: &str) -> SmpError {
        SmpError::MissingMergeKey {
            path: self.path_string(),
            key: key.to_owned(),
        }
    }

    fn in_field<R>(&mut self, field: &'p str, f: impl FnOnce(&mut Self) -> R) -> R {
        self.path.push(field);
        let result = f(self);
        self.path.pop();
        result
    }

    fn merge_map(&mut self, mut original: Object, patch: &'p Object) -> Result<Object, SmpError> {
        if let Some(directive) = patch.get(DIRECTIVE_MARKER) {
            return match directive.as_str() {
                Some(DIRECTIVE_REPLACE) => Ok(clean_entries(patch)),
                Some(DIRECTIVE_DELETE) => Ok(Object::new()),
                _ => Err(self.invalid(format!("unknown patch type: {directive} in map"))),
            };
        }

        if let Some(retain) = patch.get(RETAIN_KEYS) {
            self.apply_retain_keys(&mut original, retain, patch)?;
        }

        // `$setElementOrder/<field>` lists are handled first, together with `<field>`.
        let mut ordered: Vec<&'p str> = Vec::new();
        for (key, order) in patch {
            if !key.starts_with(SET_ELEMENT_ORDER) {
                continue;
            }
            let Some(field) = directive_field(key, SET_ELEMENT_ORDER) else {
                return Err(self.invalid(format!(
                    "invalid patch format of setElementOrder list: {key}"
                )));
            };
            let handled = self.in_field(field, |m| {
                m.apply_element_order(&mut original, field, order, patch.get(field))
            })?;
            if handled {
                ordered.push(field);
            }
        }

        for (key, value) in patch {
            if key == RETAIN_KEYS || key.starts_with(SET_ELEMENT_ORDER) {
                continue;
            }
            if key.starts_with(DELETE_FROM_PRIMITIVE_LIST) {
                let Some(field) = directive_field(key, DELETE_FROM_PRIMITIVE_LIST) else {
                    return Err(
                        self.invalid(format!("invalid patch format of primitive list: {key}"))
                    );
                };
                self.in_field(field, |m| m.delete_from_field(&mut original, field, value))?;
                continue;
            }
            if ordered.contains(&key.as_str()) {
                continue;
            }
            self.in_field(key, |m| m.merge_field(&mut original, key, value))?;
        }
        Ok(original)
    }

    fn apply_retain_keys(
        &self,
        original: &mut Object,
        retain: &Value,
        patch: &Object,
    ) -> Result<(), SmpError> {
        let Value::Array(retain) = retain else {
            return Err(self.invalid("invalid patch format of retainKeys: not a list"));
        };
        let listed = |key: &str| retain.iter().any(|item| item.as_str() == Some(key));
        for (key, value) in patch {
            if key == RETAIN_KEYS
                || value.is_null()
                || key.starts_with(DELETE_FROM_PRIMITIVE_LIST)
                || key.starts_with(SET_ELEMENT_ORDER)
            {
                continue;
            }
            if !listed(key) {
                return Err(self.invalid(format!(
                    "invalid patch format of retainKeys: {key:?} is in the patch but not in the \
                     $retainKeys list"
                )));
            }
        }
        original.retain(|key, _| listed(key));
        Ok(())
    }

    /// Merges `value` into `original[field]`. The path already ends with `field`.
    fn merge_field(
        &mut self,
        original: &mut Object,
        field: &str,
        value: &'p Value,
    ) -> Result<(), SmpError> {
        if value.is_null() {
            original.shift_remove(field);
            return Ok(());
        }
        let keep = match (original.get_mut(field), value) {
            (None, _) => {
                if let Some(clean) = clean_value(value) {
                    original.insert(field.to_owned(), clean);
                }
                true
            }
            (Some(Value::Object(old)), Value::Object(patch)) => {
                let taken = std::mem::take(old);
                *old = self.merge_map(taken, patch)?;
                true
            }
            (Some(Value::Array(old)), Value::Array(patch)) => {
                let taken = std::mem::take(old);
                *old = self.merge_list_field(taken, patch)?;
                true
            }
            (Some(slot), _) => match clean_value(value) {
                Some(clean) => {
                    *slot = clean;
                    true
                }
                None => false,
            },
        };
        if !keep {
            original.shift_remove(field);
        }
        Ok(())
    }

    /// `$deleteFromPrimitiveList/<field>`. The path already ends with `field`.
    fn delete_from_field(
        &self,
        original: &mut Object,
        field: &str,
        value: &Value,
    ) -> Result<(), SmpError> {
        let to_delete = match value {
            Value::Null => {
                original.shift_remove(field);
                return Ok(());
            }
            Value::Array(list) => list,
            other => {
                return Err(self.invalid(format!(
                    "invalid patch format of primitive list: expected a list, found {}",
                    type_name(other)
                )));
            }
        };
        let Some(Value::Array(list)) = original.get_mut(field) else {
            // Nothing to delete from (a missing field is not created).
            return Ok(());
        };
        if list.is_empty() && to_delete.is_empty() {
            return Ok(());
        }
        if self.element_kind(list, to_delete)? == Some(ElementKind::Object) {
            return Err(
                self.invalid("$deleteFromPrimitiveList applies only to lists of primitive values")
            );
        }
        list.retain(|item| !to_delete.iter().any(|gone| values_equal(gone, item)));
        Ok(())
    }

    fn merge_list_field(
        &mut self,
        original: Vec<Value>,
        patch: &'p [Value],
    ) -> Result<Vec<Value>, SmpError> {
        match self.schema.list_strategy(&self.path) {
            ListStrategy::Replace => Ok(clean_list(patch)),
            ListStrategy::Merge { key } => self.merge_list(original, patch, key),
        }
    }

    fn merge_list(
        &mut self,
        original: Vec<Value>,
        patch: &'p [Value],
        key: Option<&'static str>,
    ) -> Result<Vec<Value>, SmpError> {
        if original.is_empty() && patch.is_empty() {
            return Ok(original);
        }
        if self.element_kind(&original, patch)? != Some(ElementKind::Object) {
            if let Some(key) = key {
                return Err(self.mismatch(format!(
                    "list items must be objects to be merged by the key {key:?}"
                )));
            }
            let mut merged: Vec<Value> = Vec::with_capacity(original.len() + patch.len());
            for item in original.iter().chain(patch) {
                if !merged.iter().any(|seen| values_equal(seen, item)) {
                    merged.push(item.clone());
                }
            }
            let wanted: Vec<&Value> = patch.iter().collect();
            let server: Vec<&Value> = original.iter().collect();
            return self.enforce_order(merged, &wanted, &server, None);
        }

        let Some(key) = key else {
            return Err(self.invalid("cannot merge lists of objects without a merge key"));
        };

        // Special items first: deletions, a replacement, and the rejected `merge`.
        let mut base = original;
        let mut items: Vec<&'p Value> = Vec::with_capacity(patch.len());
        let mut replace = false;
        for item in patch {
            let Some(map) = item.as_object() else {
                return Err(self.mismatch("list items are not all objects"));
            };
            let Some(directive) = map.get(DIRECTIVE_MARKER) else {
                items.push(item);
                continue;
            };
            match directive.as_str() {
                Some(DIRECTIVE_DELETE) => {
                    let Some(gone) = map.get(key) else {
                        return Err(self.missing_key(key));
                    };
                    base.retain(|old| !merge_key_is(old, key, gone));
                }
                Some(DIRECTIVE_REPLACE) => replace = true,
                Some(DIRECTIVE_MERGE) => {
                    return Err(self.invalid("merging lists cannot yet be specified in the patch"));
                }
                _ => {
                    return Err(
                        self.invalid(format!("unknown patch type: {directive} in a list item"))
                    );
                }
            }
        }
        if replace {
            base = items.iter().filter_map(|item| clean_value(item)).collect();
            items.clear();
        }

        let server_order = base.clone();
        let mut merged = base;
        for &item in &items {
            let Some(value) = item.as_object().and_then(|map| map.get(key)) else {
                return Err(self.missing_key(key));
            };
            let found = merged.iter().position(|old| merge_key_is(old, key, value));
            match (found.and_then(|at| merged.get_mut(at)), item) {
                (Some(Value::Object(old)), Value::Object(patch_item)) => {
                    let taken = std::mem::take(old);
                    *old = self.merge_map(taken, patch_item)?;
                }
                _ => {
                    if let Some(clean) = clean_value(item) {
                        merged.push(clean);
                    }
                }
            }
        }
        let server: Vec<&Value> = server_order.iter().collect();
        self.enforce_order(merged, &items, &server, Some(key))
    }

    /// `$setElementOrder/<field>`. The path already ends with `field`. Returns whether
    /// `original[field]` was set (and the patch's `<field>` consumed).
    fn apply_element_order(
        &mut self,
        original: &mut Object,
        field: &str,
        order: &Value,
        patch_list: Option<&'p Value>,
    ) -> Result<bool, SmpError> {
        let Value::Array(order) = order else {
            return Err(self.invalid(format!(
                "invalid patch format of setElementOrder list: expected a list, found {}",
                type_name(order)
            )));
        };
        let patch_list = match patch_list {
            None => None,
            Some(Value::Array(list)) => Some(list),
            Some(other) => {
                return Err(self.mismatch(format!(
                    "expected a list next to $setElementOrder, found {}",
                    type_name(other)
                )));
            }
        };
        let old_list = match original.get_mut(field) {
            None => None,
            Some(Value::Array(list)) => Some(std::mem::take(list)),
            Some(other) => {
                return Err(self.mismatch(format!(
                    "expected a list in the original, found {}",
                    type_name(other)
                )));
            }
        };
        let key = match self.schema.list_strategy(&self.path) {
            ListStrategy::Merge { key } => key,
            ListStrategy::Replace => None,
        };
        if let Some(patch_list) = patch_list {
            self.check_order_matches_patch(patch_list, order, key)?;
        }
        let server_order = old_list.clone().unwrap_or_default();
        let merged = match (old_list, patch_list) {
            (None, None) => return Ok(false),
            (Some(old), None) => old,
            (None, Some(patch_list)) => clean_list(patch_list),
            (Some(old), Some(patch_list)) => self.merge_list_field(old, patch_list)?,
        };
        let wanted: Vec<&Value> = order.iter().collect();
        let server: Vec<&Value> = server_order.iter().collect();
        let result = self.enforce_order(merged, &wanted, &server, key)?;
        original.insert(field.to_owned(), Value::Array(result));
        Ok(true)
    }

    /// The patch list's items (bar deletions and other directive items) must appear in the
    /// `$setElementOrder` list, in the same relative order.
    fn check_order_matches_patch(
        &self,
        patch_list: &[Value],
        order: &[Value],
        key: Option<&str>,
    ) -> Result<(), SmpError> {
        if order.is_empty() || patch_list.is_empty() {
            return Ok(());
        }
        let mut items: Vec<&Value> = Vec::with_capacity(patch_list.len());
        for item in patch_list {
            if key.is_some() {
                let Some(map) = item.as_object() else {
                    return Err(self.mismatch("list items are not all objects"));
                };
                if map.get(DIRECTIVE_MARKER).and_then(Value::as_str) == Some(DIRECTIVE_DELETE) {
                    continue;
                }
            }
            items.push(item);
        }
        let (mut at_item, mut at_order) = (0, 0);
        while let (Some(item), Some(wanted)) = (items.get(at_item), order.get(at_order)) {
            if item
                .as_object()
                .is_some_and(|map| map.contains_key(DIRECTIVE_MARKER))
            {
                at_item += 1;
                continue;
            }
            if self.same_identity(item, wanted, key)? {
                at_item += 1;
            }
            at_order += 1;
        }
        if at_item < items.len() {
            return Err(
                self.invalid("the order in the patch list doesn't match the $setElementOrder list")
            );
        }
        Ok(())
    }

    fn same_identity(&self, a: &Value, b: &Value, key: Option<&str>) -> Result<bool, SmpError> {
        let Some(key) = key else {
            return Ok(values_equal(a, b));
        };
        let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
            return Err(self.mismatch("expected objects to compare by merge key"));
        };
        match (a.get(key), b.get(key)) {
            (Some(a), Some(b)) => Ok(values_equal(a, b)),
            _ => Err(self.missing_key(key)),
        }
    }

    /// Orders `merged`: items named in `wanted` follow `wanted`'s order, the others keep the
    /// order of `server`; the two runs are interleaved by their positions in `server`.
    fn enforce_order(
        &self,
        merged: Vec<Value>,
        wanted: &[&Value],
        server: &[&Value],
        key: Option<&str>,
    ) -> Result<Vec<Value>, SmpError> {
        if let Some(key) = key {
            for item in merged
                .iter()
                .chain(wanted.iter().copied())
                .chain(server.iter().copied())
            {
                match item.as_object() {
                    None => return Err(self.mismatch("list items are not all objects")),
                    Some(map) if !map.contains_key(key) => return Err(self.missing_key(key)),
                    Some(_) => {}
                }
            }
        } else if merged
            .iter()
            .any(|item| item.is_object() || item.is_array())
        {
            return Err(self.mismatch("a list of objects cannot be ordered without a merge key"));
        }

        let mut named: Vec<(usize, Value)> = Vec::new();
        let mut server_only: Vec<(usize, Value)> = Vec::new();
        for item in merged {
            match position(wanted, &item, key) {
                Some(at) => named.push((at, item)),
                None => {
                    server_only.push((position(server, &item, key).unwrap_or(usize::MAX), item))
                }
            }
        }
        named.sort_by_key(|(at, _)| *at);
        server_only.sort_by_key(|(at, _)| *at);

        let mut result = Vec::with_capacity(named.len() + server_only.len());
        let mut left = server_only.into_iter().map(|(_, item)| item).peekable();
        let mut right = named.into_iter().map(|(_, item)| item).peekable();
        loop {
            let take_left = match (left.peek(), right.peek()) {
                (Some(l), Some(r)) => match (position(server, l, key), position(server, r, key)) {
                    (Some(li), Some(ri)) => li < ri,
                    _ => false,
                },
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => break,
            };
            let next = if take_left { left.next() } else { right.next() };
            result.extend(next);
        }
        Ok(result)
    }

    fn element_kind(
        &self,
        original: &[Value],
        patch: &[Value],
    ) -> Result<Option<ElementKind>, SmpError> {
        let mut kind = None;
        for item in original.iter().chain(patch) {
            let this = match item {
                Value::Object(_) => ElementKind::Object,
                Value::String(_) => ElementKind::String,
                Value::Number(_) => ElementKind::Number,
                Value::Bool(_) => ElementKind::Bool,
                Value::Array(_) => return Err(self.invalid("lists of lists are not supported")),
                Value::Null => return Err(self.mismatch("null list items are not supported")),
            };
            match kind {
                None => kind = Some(this),
                Some(seen) if seen != this => {
                    return Err(self.mismatch("list element types are not identical"));
                }
                Some(_) => {}
            }
        }
        Ok(kind)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ElementKind {
    Object,
    String,
    Number,
    Bool,
}

/// `"$setElementOrder/x"` → `x`; `None` unless the part before the first `/` is `prefix`.
fn directive_field<'k>(key: &'k str, prefix: &str) -> Option<&'k str> {
    key.split_once('/')
        .and_then(|(head, field)| (head == prefix).then_some(field))
}

fn is_directive_key(key: &str) -> bool {
    key == DIRECTIVE_MARKER
        || key == RETAIN_KEYS
        || key.starts_with(SET_ELEMENT_ORDER)
        || key.starts_with(DELETE_FROM_PRIMITIVE_LIST)
}

/// A patch value copied into the result: `None` if it is a map carrying `$patch`.
fn clean_value(value: &Value) -> Option<Value> {
    match value {
        Value::Object(map) if map.contains_key(DIRECTIVE_MARKER) => None,
        Value::Object(map) => Some(Value::Object(clean_entries(map))),
        Value::Array(list) => Some(Value::Array(clean_list(list))),
        other => Some(other.clone()),
    }
}

/// The map's entries without nulls, directive keys and maps carrying `$patch`.
fn clean_entries(map: &Object) -> Object {
    map.iter()
        .filter(|(key, value)| !value.is_null() && !is_directive_key(key))
        .filter_map(|(key, value)| clean_value(value).map(|clean| (key.clone(), clean)))
        .collect()
}

fn clean_list(list: &[Value]) -> Vec<Value> {
    list.iter().filter_map(clean_value).collect()
}

fn merge_key_is(item: &Value, key: &str, value: &Value) -> bool {
    item.as_object()
        .and_then(|map| map.get(key))
        .is_some_and(|own| values_equal(own, value))
}

fn identity<'v>(item: &'v Value, key: Option<&str>) -> Option<&'v Value> {
    match key {
        None => Some(item),
        Some(key) => item.as_object().and_then(|map| map.get(key)),
    }
}

fn position(list: &[&Value], item: &Value, key: Option<&str>) -> Option<usize> {
    let wanted = identity(item, key)?;
    list.iter()
        .position(|candidate| identity(candidate, key).is_some_and(|id| values_equal(id, wanted)))
}

/// JSON equality where numbers compare by value (`1` equals `1.0`), as Go's `float64` does.
fn values_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            x == y
                || match (x.as_f64(), y.as_f64()) {
                    (Some(x), Some(y)) => x.partial_cmp(&y) == Some(Ordering::Equal),
                    _ => false,
                }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| values_equal(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(key, x)| y.get(key).is_some_and(|y| values_equal(x, y)))
        }
        _ => a == b,
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn patch_04_directive_field_needs_the_exact_prefix() {
        assert_eq!(
            directive_field("$setElementOrder/containers", SET_ELEMENT_ORDER),
            Some("containers")
        );
        assert_eq!(
            directive_field("$setElementOrder/a/b", SET_ELEMENT_ORDER),
            Some("a/b")
        );
        assert_eq!(directive_field("$setElementOrder", SET_ELEMENT_ORDER), None);
        assert_eq!(
            directive_field("$setElementOrderX/a", SET_ELEMENT_ORDER),
            None
        );
    }

    #[test]
    fn patch_04_values_compare_numbers_by_value() {
        assert!(values_equal(&json!(1), &json!(1.0)));
        assert!(values_equal(
            &json!({"a": [1, "x"]}),
            &json!({"a": [1.0, "x"]})
        ));
        assert!(!values_equal(&json!(1), &json!("1")));
        assert!(!values_equal(&json!({"a": 1}), &json!({"a": 1, "b": 2})));
    }

    #[test]
    fn patch_04_clean_value_strips_directives_and_nulls() {
        let value = json!({
            "a": null,
            "b": {"$patch": "delete"},
            "$retainKeys": ["c"],
            "c": [1, null, {"$patch": "replace"}, {"d": null, "e": 1}],
        });
        assert_eq!(clean_value(&value), Some(json!({"c": [1, null, {"e": 1}]})));
        assert_eq!(clean_value(&json!({"$patch": "replace", "x": 1})), None);
    }
}
