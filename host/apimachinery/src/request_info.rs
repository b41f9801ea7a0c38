//! Request paths to [`RequestInfo`], the way kube-apiserver's `RequestInfoFactory` reads them
//! (`URL-01`..`URL-06`, `VERB-01`).

use http::Method;

/// A Kubernetes verb (lower case on the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verb {
    /// GET on an object.
    Get,
    /// GET on a collection.
    List,
    /// GET with `watch`.
    Watch,
    /// POST to a collection.
    Create,
    /// PUT.
    Update,
    /// PATCH.
    Patch,
    /// DELETE on an object.
    Delete,
    /// DELETE on a collection.
    DeleteCollection,
}

impl Verb {
    /// The verb as Kubernetes names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
            Verb::DeleteCollection => "deletecollection",
        }
    }
}

/// A request for a resource (or a collection, or a subresource).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceRequest {
    /// API group; empty for the core group.
    pub group: String,
    /// API version.
    pub version: String,
    /// Namespace from the path, if any.
    pub namespace: Option<String>,
    /// The resource (lower-case plural).
    pub resource: String,
    /// The object name, for object requests.
    pub name: Option<String>,
    /// The subresource, if any (`status`, `scale`, `finalize`).
    pub subresource: Option<String>,
    /// The verb.
    pub verb: Verb,
}

/// What a path asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestInfo {
    /// A resource request.
    Resource(ResourceRequest),
    /// `GET /api`.
    LegacyRoot,
    /// `GET /apis`.
    GroupsRoot,
    /// `GET /apis/{group}`.
    Group(String),
    /// `GET /api/v1` or `GET /apis/{group}/{version}`: the resources of one group-version.
    GroupVersion {
        /// Group (empty: core).
        group: String,
        /// Version.
        version: String,
    },
    /// Any other path (`/version`, `/openapi/...`, health checks); routed by the caller.
    NonResource,
}

/// Why a path could not be understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestInfoError {
    /// The method does not apply to the path (e.g. POST to an object).
    #[error("the server does not allow this method on the requested resource")]
    MethodNotAllowed,
    /// The path is malformed (empty segments, `.` or `..`).
    #[error("the server could not find the requested resource")]
    NotFound,
}

/// Subresources of a namespace object, told apart from namespaced resources of the same
/// name as kube-apiserver does.
const NAMESPACE_SUBRESOURCES: [&str; 2] = ["status", "finalize"];

/// Parses a request. `watch` is the parsed `watch` query parameter.
pub fn parse(method: &Method, path: &str, watch: bool) -> Result<RequestInfo, RequestInfoError> {
    let trimmed = path.trim_matches('/');
    let parts: Vec<&str> = if trimmed.is_empty() {
        Vec::new()
    } else {
        trimmed.split('/').collect()
    };
    if parts
        .iter()
        .any(|p| p.is_empty() || *p == "." || *p == "..")
    {
        return Err(RequestInfoError::NotFound);
    }
    let (group, version, rest) = match parts.as_slice() {
        ["api"] => return Ok(RequestInfo::LegacyRoot),
        ["apis"] => return Ok(RequestInfo::GroupsRoot),
        ["apis", g] => return Ok(RequestInfo::Group((*g).to_owned())),
        ["api", v] => {
            return Ok(RequestInfo::GroupVersion {
                group: String::new(),
                version: (*v).to_owned(),
            });
        }
        ["apis", g, v] => {
            return Ok(RequestInfo::GroupVersion {
                group: (*g).to_owned(),
                version: (*v).to_owned(),
            });
        }
        ["api", v, rest @ ..] => ("", *v, rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return Ok(RequestInfo::NonResource),
    };
    // Deprecated `/api/v1/watch/...` paths mean `?watch=true`.
    let (rest, watch) = match rest {
        ["watch", more @ ..] if !more.is_empty() => (more, true),
        other => (other, watch),
    };
    let mut namespace = None;
    let mut cur: &[&str] = rest;
    if cur.first() == Some(&"namespaces") && cur.len() > 1 {
        namespace = Some(cur[1].to_owned());
        if cur.len() > 2 && !NAMESPACE_SUBRESOURCES.contains(&cur[2]) {
            cur = &cur[2..];
        } else {
            // The namespace object itself (or its subresource): cluster-scoped.
            namespace = None;
        }
    }
    let (resource, name, subresource) = match cur {
        [r] => (*r, None, None),
        [r, n] => (*r, Some(*n), None),
        [r, n, s] => (*r, Some(*n), Some(*s)),
        _ => return Err(RequestInfoError::NotFound),
    };
    let verb = match (method, name.is_some()) {
        (m, true) if *m == Method::GET || *m == Method::HEAD => {
            if watch {
                Verb::Watch
            } else {
                Verb::Get
            }
        }
        (m, false) if *m == Method::GET || *m == Method::HEAD => {
            if watch {
                Verb::Watch
            } else {
                Verb::List
            }
        }
        (m, false) if *m == Method::POST => Verb::Create,
        (m, true) if *m == Method::PUT => Verb::Update,
        (m, true) if *m == Method::PATCH => Verb::Patch,
        (m, true) if *m == Method::DELETE => Verb::Delete,
        (m, false) if *m == Method::DELETE => Verb::DeleteCollection,
        (m, true) if *m == Method::POST && subresource.is_some() => Verb::Create,
        _ => return Err(RequestInfoError::MethodNotAllowed),
    };
    Ok(RequestInfo::Resource(ResourceRequest {
        group: group.to_owned(),
        version: version.to_owned(),
        namespace,
        resource: resource.to_owned(),
        name: name.map(str::to_owned),
        subresource: subresource.map(str::to_owned),
        verb,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(method: Method, path: &str) -> ResourceRequest {
        match parse(&method, path, false).unwrap() {
            RequestInfo::Resource(r) => r,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn url_01_02_core_and_named_groups() {
        let r = res(Method::GET, "/api/v1/namespaces/ns/configmaps/c");
        assert_eq!(
            (
                r.group.as_str(),
                r.version.as_str(),
                r.namespace.as_deref(),
                r.resource.as_str()
            ),
            ("", "v1", Some("ns"), "configmaps")
        );
        assert_eq!((r.name.as_deref(), r.verb), (Some("c"), Verb::Get));
        let r = res(
            Method::GET,
            "/apis/coordination.k8s.io/v1/namespaces/ns/leases",
        );
        assert_eq!(
            (r.group.as_str(), r.verb),
            ("coordination.k8s.io", Verb::List)
        );
    }

    #[test]
    fn url_04_05_namespaces_are_told_apart_by_segment_count() {
        let r = res(Method::GET, "/api/v1/namespaces");
        assert_eq!(
            (r.resource.as_str(), r.namespace, r.verb),
            ("namespaces", None, Verb::List)
        );
        let r = res(Method::DELETE, "/api/v1/namespaces/demo");
        assert_eq!(
            (r.resource.as_str(), r.name.as_deref()),
            ("namespaces", Some("demo"))
        );
        assert_eq!(r.namespace, None);
        let r = res(Method::PUT, "/api/v1/namespaces/demo/finalize");
        assert_eq!(
            (
                r.resource.as_str(),
                r.name.as_deref(),
                r.subresource.as_deref()
            ),
            ("namespaces", Some("demo"), Some("finalize"))
        );
        let r = res(Method::GET, "/api/v1/namespaces/demo/configmaps");
        assert_eq!(
            (r.resource.as_str(), r.namespace.as_deref()),
            ("configmaps", Some("demo"))
        );
        let r = res(Method::GET, "/api/v1/configmaps");
        assert_eq!((r.resource.as_str(), r.namespace), ("configmaps", None));
    }

    #[test]
    fn url_06_subresources_and_verbs() {
        let r = res(
            Method::PATCH,
            "/apis/example.com/v1/namespaces/n/widgets/w/status",
        );
        assert_eq!(
            (r.subresource.as_deref(), r.verb),
            (Some("status"), Verb::Patch)
        );
        assert_eq!(
            res(Method::POST, "/api/v1/namespaces/n/configmaps").verb,
            Verb::Create
        );
        assert_eq!(
            res(Method::DELETE, "/api/v1/namespaces/n/configmaps").verb,
            Verb::DeleteCollection
        );
        assert_eq!(
            parse(&Method::POST, "/api/v1/namespaces/n/configmaps/x", false),
            Err(RequestInfoError::MethodNotAllowed)
        );
        assert_eq!(
            parse(&Method::PUT, "/api/v1/namespaces/n/configmaps", false),
            Err(RequestInfoError::MethodNotAllowed)
        );
    }

    #[test]
    fn verb_01_watch_by_parameter_or_legacy_path() {
        match parse(&Method::GET, "/api/v1/namespaces/n/configmaps", true).unwrap() {
            RequestInfo::Resource(r) => assert_eq!(r.verb, Verb::Watch),
            other => panic!("{other:?}"),
        }
        let r = res(Method::GET, "/api/v1/watch/namespaces/n/configmaps");
        assert_eq!((r.verb, r.namespace.as_deref()), (Verb::Watch, Some("n")));
    }

    #[test]
    fn discovery_paths() {
        assert_eq!(
            parse(&Method::GET, "/api", false),
            Ok(RequestInfo::LegacyRoot)
        );
        assert_eq!(
            parse(&Method::GET, "/apis/", false),
            Ok(RequestInfo::GroupsRoot)
        );
        assert_eq!(
            parse(&Method::GET, "/apis/g.io", false),
            Ok(RequestInfo::Group("g.io".into()))
        );
        assert_eq!(
            parse(&Method::GET, "/api/v1", false),
            Ok(RequestInfo::GroupVersion {
                group: String::new(),
                version: "v1".into()
            })
        );
        assert_eq!(
            parse(&Method::GET, "/version", false),
            Ok(RequestInfo::NonResource)
        );
        assert_eq!(
            parse(&Method::GET, "/api/v1/a/b/c/d", false),
            Err(RequestInfoError::NotFound)
        );
        assert_eq!(
            parse(&Method::GET, "/api/v1//configmaps", false),
            Err(RequestInfoError::NotFound)
        );
    }
}
