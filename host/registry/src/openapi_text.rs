//! The descriptions kube-apiserver publishes in its OpenAPI documents for the standard
//! query and path parameters and for operations (from its published `api/openapi-spec`,
//! the metav1 option types' field documentation). `kubectl explain`, client generators
//! and API browsers show them; they are API contract text, kept here as data in one place.

/// The description of a query parameter, by name; `patch` selects the longer
/// `fieldManager` text that mentions apply.
pub fn query_parameter(name: &str, patch: bool) -> &'static str {
    match name {
        "allowWatchBookmarks" => {
            "allowWatchBookmarks requests watch events with type \"BOOKMARK\". Servers that do not implement bookmarks may ignore this flag and bookmarks are sent at the server's discretion. Clients should not assume bookmarks are returned at any specific interval, nor may they assume the server will send any BOOKMARK event during a session. If this is not a watch, this field is ignored."
        }
        "continue" => {
            "The continue option should be set when retrieving more results from the server. Since this value is server defined, clients may only use the continue value from a previous query result with identical query parameters (except for the value of continue) and the server may reject a continue value it does not recognize. If the specified continue value is no longer valid whether due to expiration (generally five to fifteen minutes) or a configuration change on the server, the server will respond with a 410 ResourceExpired error together with a continue token. If the client needs a consistent list, it must restart their list without the continue field. Otherwise, the client may send another list request with the token received with the 410 error, the server will respond with a list starting from the next key, but from the latest snapshot, which is inconsistent from the previous list results - objects that are created, modified, or deleted after the first list request will be included in the response, as long as their keys are after the \"next key\".\n\nThis field is not supported when watch is true. Clients may start a watch from the last resourceVersion value returned by the server and not miss any modifications."
        }
        "dryRun" => {
            "When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun directive will result in an error response and no further processing of the request. Valid values are: - All: all dry run stages will be processed"
        }
        "fieldManager" if patch => {
            "fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint. This field is required for apply requests (application/apply-patch) but optional for non-apply patch types (JsonPatch, MergePatch, StrategicMergePatch)."
        }
        "fieldManager" => {
            "fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint."
        }
        "fieldSelector" => {
            "A selector to restrict the list of returned objects by their fields. Defaults to everything."
        }
        "fieldValidation" => {
            "fieldValidation determines how the server should respond to unknown/duplicate fields in the object in the request. Introduced as alpha in 1.23, older servers or servers with the `ServerSideFieldValidation` feature disabled will discard valid values specified in  this param and not perform any server side field validation. Valid values are: - Ignore: ignores unknown/duplicate fields. - Warn: responds with a warning for each unknown/duplicate field, but successfully serves the request. - Strict: fails the request on unknown/duplicate fields."
        }
        "force" => {
            "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting fields owned by other people. Force flag must be unset for non-apply patch requests."
        }
        "gracePeriodSeconds" => {
            "The duration in seconds before the object should be deleted. Value must be non-negative integer. The value zero indicates delete immediately. If this value is nil, the default grace period for the specified type will be used. Defaults to a per object value if not specified. zero means delete immediately."
        }
        "labelSelector" => {
            "A selector to restrict the list of returned objects by their labels. Defaults to everything."
        }
        "limit" => {
            "limit is a maximum number of responses to return for a list call. If more items exist, the server will set the `continue` field on the list metadata to a value that can be used with the same initial query to retrieve the next set of results. Setting a limit may return fewer than the requested amount of items (up to zero items) in the event all requested objects are filtered out and clients should only use the presence of the continue field to determine whether more results are available. Servers may choose not to support the limit argument and will return all of the available results. If limit is specified and the continue field is empty, clients may assume that no more results are available. This field is not supported if watch is true.\n\nThe server guarantees that the objects returned when using continue will be identical to issuing a single list call without a limit - that is, no objects created, modified, or deleted after the first request is issued will be included in any subsequent continued requests. This is sometimes referred to as a consistent snapshot, and ensures that a client that is using limit to receive smaller chunks of a very large result can ensure they see all possible objects. If objects are updated during a chunked list the version of the object that was present at the time the first list result was calculated is returned."
        }
        "orphanDependents" => {
            "Deprecated: please use the PropagationPolicy, this field will be deprecated in 1.7. Should the dependent objects be orphaned. If true/false, the \"orphan\" finalizer will be added to/removed from the object's finalizers list. Either this field or PropagationPolicy may be set, but not both."
        }
        "pretty" => "If 'true', then the output is pretty printed.",
        "propagationPolicy" => {
            "Whether and how garbage collection will be performed. Either this field or OrphanDependents may be set, but not both. The default policy is decided by the existing finalizer set in the metadata.finalizers and the resource-specific default policy. Acceptable values are: 'Orphan' - orphan the dependents; 'Background' - allow the garbage collector to delete the dependents in the background; 'Foreground' - a cascading policy that deletes all dependents in the foreground."
        }
        "resourceVersion" => {
            "resourceVersion sets a constraint on what resource versions a request may be served from. See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset"
        }
        "resourceVersionMatch" => {
            "resourceVersionMatch determines how resourceVersion is applied to list calls. It is highly recommended that resourceVersionMatch be set for list calls where resourceVersion is set See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset"
        }
        "sendInitialEvents" => {
            "`sendInitialEvents=true` may be set together with `watch=true`. In that case, the watch stream will begin with synthetic events to produce the current state of objects in the collection. Once all such events have been sent, a synthetic \"Bookmark\" event  will be sent. The bookmark will report the ResourceVersion (RV) corresponding to the set of objects, and be marked with `\"k8s.io/initial-events-end\": \"true\"` annotation. Afterwards, the watch stream will proceed as usual, sending watch events corresponding to changes (subsequent to the RV) to objects watched.\n\nWhen `sendInitialEvents` option is set, we require `resourceVersionMatch` option to also be set. The semantic of the watch request is as following: - `resourceVersionMatch` = NotOlderThan\n  is interpreted as \"data at least as new as the provided `resourceVersion`\"\n  and the bookmark event is send when the state is synced\n  to a `resourceVersion` at least as fresh as the one provided by the ListOptions.\n  If `resourceVersion` is unset, this is interpreted as \"consistent read\" and the\n  bookmark event is send when the state is synced at least to the moment\n  when request started being processed.\n- `resourceVersionMatch` set to any other value or unset\n  Invalid error is returned.\n\nDefaults to true if `resourceVersion=\"\"` or `resourceVersion=\"0\"` (for backward compatibility reasons) and to false otherwise."
        }
        "timeoutSeconds" => {
            "Timeout for the list/watch call. This limits the duration of the call, regardless of any activity or inactivity."
        }
        "watch" => {
            "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications. Specify resourceVersion."
        }
        _ => "",
    }
}

/// The `namespace` path parameter.
pub const NAMESPACE: &str = "object name and auth scope, such as for teams and projects";

/// The `name` path parameter of objects of `kind`.
pub fn name(kind: &str) -> String {
    format!("name of the {kind}")
}

/// kube's `GetArticleForNoun`: "a" or "an" before a kind (none for plurals).
fn article(noun: &str) -> &'static str {
    if noun.ends_with('s') && !noun.ends_with("ss") {
        return "";
    }
    match noun.chars().next().map(|c| c.to_ascii_lowercase()) {
        Some('a' | 'e' | 'i' | 'o' | 'u') => " an",
        _ => " a",
    }
}

/// The description kube's endpoint installer gives an operation: `action` is the
/// `x-kubernetes-action` (`list`, `post`, `get`, `put`, `patch`, `delete`,
/// `deletecollection`), `subresource` the subresource path segment, if any.
pub fn operation(action: &str, kind: &str, subresource: Option<&str>) -> String {
    let of_the = match subresource {
        Some(sub) => format!("{sub} of the specified {kind}"),
        None => format!("the specified {kind}"),
    };
    match action {
        "list" => format!("list or watch objects of kind {kind}"),
        "post" => format!("create{} {kind}", article(kind)),
        "get" => format!("read {of_the}"),
        "put" => format!("replace {of_the}"),
        "patch" => format!("partially update {of_the}"),
        "delete" => format!("delete{} {kind}", article(kind)),
        "deletecollection" => format!("delete collection of {kind}"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_descriptions_as_kube_words_them() {
        assert_eq!(operation("post", "ConfigMap", None), "create a ConfigMap");
        assert_eq!(operation("post", "Event", None), "create an Event");
        assert_eq!(operation("delete", "Lease", None), "delete a Lease");
        assert_eq!(
            operation("list", "Secret", None),
            "list or watch objects of kind Secret"
        );
        assert_eq!(
            operation("patch", "Widget", Some("scale")),
            "partially update scale of the specified Widget"
        );
        assert_eq!(
            operation("get", "Namespace", Some("status")),
            "read status of the specified Namespace"
        );
        assert_eq!(
            operation("deletecollection", "Widget", None),
            "delete collection of Widget"
        );
    }
}
