//! Discovery documents (`DISC-01`..`DISC-04`, `GAP-01`): legacy `APIVersions`,
//! `APIGroupList`, `APIGroup`, `APIResourceList`, and aggregated `APIGroupDiscoveryList`
//! (v2 and v2beta1), whose ETag changes whenever the set of types does.

use bytes::Bytes;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use wasmgate_apimachinery::media::DiscoveryOutput;

use crate::{Catalog, ResourceType};

/// `GET /api` (`core`) or `GET /apis` as `out`: the body and its ETag (the quoted
/// lower-hex SHA-256 of the body). Cached per catalog by [`Catalog::root_discovery`].
pub fn root(
    cat: &Catalog,
    core: bool,
    out: DiscoveryOutput,
    server_address: &str,
) -> (Bytes, String) {
    let doc = match out {
        DiscoveryOutput::Legacy if core => api_versions(server_address),
        DiscoveryOutput::Legacy => api_group_list(cat),
        agg => aggregated(cat, core, agg),
    };
    let bytes = serde_json::to_vec(&doc).unwrap_or_default();
    let etag = format!("\"{:x}\"", Sha256::digest(&bytes));
    (Bytes::from(bytes), etag)
}

/// `GET /api` (legacy).
pub fn api_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    })
}

fn group_versions(group: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
        .collect();
    let preferred = vs.first().cloned().unwrap_or(Value::Null);
    json!({"name": group, "versions": vs, "preferredVersion": preferred})
}

/// `GET /apis` (legacy).
pub fn api_group_list(cat: &Catalog) -> Value {
    let groups: Vec<Value> = cat
        .groups()
        .into_iter()
        .filter(|(g, _)| !g.is_empty())
        .map(|(g, vs)| group_versions(&g, &vs))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `GET /apis/{group}`.
pub fn api_group(cat: &Catalog, group: &str) -> Option<Value> {
    let (g, vs) = cat
        .groups()
        .into_iter()
        .find(|(g, _)| !g.is_empty() && g == group)?;
    let mut v = group_versions(&g, &vs);
    v["kind"] = json!("APIGroup");
    v["apiVersion"] = json!("v1");
    Some(v)
}

/// `GET /api/v1`, `GET /apis/{group}/{version}`.
pub fn api_resource_list(cat: &Catalog, group: &str, version: &str) -> Option<Value> {
    let types = cat.in_group_version(group, version);
    if types.is_empty() {
        return None;
    }
    let gv = if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    };
    let mut resources = Vec::new();
    for t in types {
        let mut r = Map::new();
        r.insert("name".into(), json!(t.resource));
        r.insert("singularName".into(), json!(t.singular));
        r.insert("namespaced".into(), json!(t.namespaced));
        r.insert("kind".into(), json!(t.kind));
        r.insert("verbs".into(), json!(t.verbs));
        if !t.short_names.is_empty() {
            r.insert("shortNames".into(), json!(t.short_names));
        }
        if !t.categories.is_empty() {
            r.insert("categories".into(), json!(t.categories));
        }
        // Legacy discovery only: kube's aggregated `APIResourceDiscovery` has no such field;
        // kinds never stored (the reviews) have none.
        if t.is_stored() {
            r.insert("storageVersionHash".into(), json!(t.storage_version_hash()));
        }
        resources.push(Value::Object(r));
        for s in &t.subresources_for(version) {
            resources.push(json!({
                "name": format!("{}/{}", t.resource, s.name),
                "singularName": "",
                "namespaced": t.namespaced,
                "kind": s.kind,
                "verbs": s.verbs,
            }));
        }
    }
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}),
    )
}

fn aggregated_resource(t: &ResourceType, version: &str) -> Value {
    let mut r = Map::new();
    r.insert("resource".into(), json!(t.resource));
    r.insert(
        "responseKind".into(),
        json!({"group": t.group, "version": version, "kind": t.kind}),
    );
    r.insert(
        "scope".into(),
        json!(if t.namespaced {
            "Namespaced"
        } else {
            "Cluster"
        }),
    );
    r.insert("singularResource".into(), json!(t.singular));
    r.insert("verbs".into(), json!(t.verbs));
    if !t.short_names.is_empty() {
        r.insert("shortNames".into(), json!(t.short_names));
    }
    if !t.categories.is_empty() {
        r.insert("categories".into(), json!(t.categories));
    }
    let subresources = t.subresources_for(version);
    if !subresources.is_empty() {
        let subs: Vec<Value> = subresources
            .iter()
            .map(|s| {
                let (group, version) = match s.group_version.split_once('/') {
                    Some((g, v)) => (g.to_owned(), v.to_owned()),
                    None => (t.group.clone(), version.to_owned()),
                };
                json!({
                    "subresource": s.name,
                    "responseKind": {"group": group, "version": version, "kind": s.kind},
                    "verbs": s.verbs,
                })
            })
            .collect();
        r.insert("subresources".into(), Value::Array(subs));
    }
    Value::Object(r)
}

/// Aggregated discovery for `/api` (`core: true`) or `/apis`.
pub fn aggregated(cat: &Catalog, core: bool, out: DiscoveryOutput) -> Value {
    let api_version = match out {
        DiscoveryOutput::AggregatedV2beta1 => "apidiscovery.k8s.io/v2beta1",
        _ => "apidiscovery.k8s.io/v2",
    };
    let items: Vec<Value> = cat
        .groups()
        .into_iter()
        .filter(|(g, _)| g.is_empty() == core)
        .map(|(g, vs)| {
            let versions: Vec<Value> = vs
                .iter()
                .map(|v| {
                    let resources: Vec<Value> = cat
                        .in_group_version(&g, v)
                        .into_iter()
                        .map(|t| aggregated_resource(t, v))
                        .collect();
                    json!({"version": v, "resources": resources, "freshness": "Current"})
                })
                .collect();
            let mut meta = json!({"creationTimestamp": null});
            if !g.is_empty() {
                meta["name"] = json!(g);
            }
            json!({"metadata": meta, "versions": versions})
        })
        .collect();
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": api_version, "metadata": {}, "items": items})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Registry, builtin_types};

    #[test]
    fn disc_03_aggregated_has_names_scope_and_short_names() {
        let cat = Registry::new(builtin_types()).snapshot();
        let core = aggregated(&cat, true, DiscoveryOutput::AggregatedV2);
        let resources = &core["items"][0]["versions"][0]["resources"];
        let cm = resources
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["resource"] == "configmaps")
            .unwrap();
        assert_eq!(cm["shortNames"], json!(["cm"]));
        assert_eq!(cm["scope"], "Namespaced");
        let ns = resources
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["resource"] == "namespaces")
            .unwrap();
        assert_eq!(ns["scope"], "Cluster");
        let apis = aggregated(&cat, false, DiscoveryOutput::AggregatedV2);
        let names: Vec<&str> = apis["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "admissionregistration.k8s.io",
                "apiextensions.k8s.io",
                "apiregistration.k8s.io",
                "authentication.k8s.io",
                "authorization.k8s.io",
                "coordination.k8s.io",
                "events.k8s.io",
                "rbac.authorization.k8s.io",
            ]
        );
        let list = api_resource_list(&cat, "", "v1").unwrap();
        assert!(
            list["resources"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r["name"] == "namespaces/status")
        );
        assert!(api_resource_list(&cat, "", "v2").is_none());
        assert_eq!(
            api_group(&cat, "coordination.k8s.io").unwrap()["preferredVersion"]["version"],
            "v1"
        );
    }
}
