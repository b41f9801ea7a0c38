"""The Python `kubernetes` client against a running gateway, as its users write code
(issue 7): bodies without kind/apiVersion (dicts and models), a stale-resourceVersion
update (409), a paged list, a watch from the list's resourceVersion, deletecollection,
and custom resources through CustomObjectsApi.

Usage: python client_test.py KUBECONFIG WIDGETS_CRD_YAML
Prints one line per check and exits non-zero on the first failure.
"""

import sys
import threading
import time

import yaml
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

NS = "py"


def check(name, condition, detail=""):
    if not condition:
        raise AssertionError(f"{name}: {detail}")
    print(f"ok: {name}")


def main(kubeconfig, crd_path):
    config.load_kube_config(config_file=kubeconfig)
    core = client.CoreV1Api()

    core.create_namespace({"metadata": {"name": NS}})

    # 1. Bodies without kind/apiVersion: a dict, and a model with both unset.
    made = core.create_namespaced_config_map(NS, body={"metadata": {"name": "from-dict"}, "data": {"k": "v"}})
    check("create from a dict without kind", made.kind == "ConfigMap" and made.api_version == "v1", made)
    model = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="from-model"), data={"a": "b"})
    made = core.create_namespaced_config_map(NS, body=model)
    check("create from a model without kind", made.metadata.name == "from-model" and made.data == {"a": "b"})

    # 2. Update with the current resourceVersion, then with the stale one: 409.
    cm = core.read_namespaced_config_map("from-dict", NS)
    stale = cm.metadata.resource_version
    cm.data = {"k": "w"}
    core.replace_namespaced_config_map("from-dict", NS, body={"metadata": {"name": "from-dict", "resourceVersion": stale}, "data": {"k": "w"}})
    try:
        core.replace_namespaced_config_map("from-dict", NS, body={"metadata": {"name": "from-dict", "resourceVersion": stale}, "data": {"k": "x"}})
        check("stale update refused", False, "accepted")
    except ApiException as e:
        check("stale update is 409 Conflict", e.status == 409 and '"reason":"Conflict"' in e.body.replace(" ", ""), e.body)

    # 2b. The JSON patch kube-runtime's finalizer() sends for an object without
    # finalizers: test of null on a missing member, then add (ISSUE-24.6, PATCH-02).
    patched = core.patch_namespaced_config_map("from-model", NS, body=[
        {"op": "test", "path": "/metadata/finalizers", "value": None},
        {"op": "add", "path": "/metadata/finalizers", "value": ["py.example.com/cleanup"]},
    ])
    check("json patch test of null on a missing member", patched.metadata.finalizers == ["py.example.com/cleanup"], patched.metadata)
    core.patch_namespaced_config_map("from-model", NS, body=[
        {"op": "test", "path": "/metadata/finalizers/0", "value": "py.example.com/cleanup"},
        {"op": "remove", "path": "/metadata/finalizers/0"},
    ])

    # 3. A paged list: every object once, all pages at one resourceVersion.
    for i in range(7):
        core.create_namespaced_config_map(NS, body={"metadata": {"name": f"paged-{i}", "labels": {"py": "paged"}}})
    names, token, pages, list_rv = [], None, 0, None
    while True:
        page = core.list_namespaced_config_map(NS, label_selector="py=paged", limit=3, _continue=token)
        pages += 1
        names += [c.metadata.name for c in page.items]
        list_rv = list_rv or page.metadata.resource_version
        token = page.metadata._continue
        if not token:
            break
    check("paged list", sorted(names) == [f"paged-{i}" for i in range(7)] and pages == 3, (names, pages))

    # 4. A watch from the list's resourceVersion sees what happens after the list.
    listed = core.list_namespaced_config_map(NS)
    seen = []

    def follow():
        w = watch.Watch()
        for ev in w.stream(core.list_namespaced_config_map, NS, resource_version=listed.metadata.resource_version, timeout_seconds=10):
            seen.append((ev["type"], ev["object"].metadata.name))
            if ev["object"].metadata.name == "watched":
                w.stop()

    t = threading.Thread(target=follow)
    t.start()
    time.sleep(0.5)
    core.create_namespaced_config_map(NS, body={"metadata": {"name": "watched"}})
    t.join(15)
    check("watch from the list's resourceVersion", ("ADDED", "watched") in seen and len(seen) == 1, seen)

    # 5. deletecollection.
    core.delete_collection_namespaced_config_map(NS, label_selector="py=paged")
    left = core.list_namespaced_config_map(NS, label_selector="py=paged").items
    check("deletecollection", left == [], [c.metadata.name for c in left])

    # 6. Custom resources through CustomObjectsApi.
    with open(crd_path) as f:
        crd = next(d for d in yaml.safe_load_all(f) if d and d.get("kind") == "CustomResourceDefinition")
    client.ApiextensionsV1Api().create_custom_resource_definition(crd)
    group, plural = crd["spec"]["group"], crd["spec"]["names"]["plural"]
    version = next(v["name"] for v in crd["spec"]["versions"] if v.get("storage"))
    custom = client.CustomObjectsApi()
    body = {"apiVersion": f"{group}/{version}", "kind": crd["spec"]["names"]["kind"], "metadata": {"name": "py-widget"}, "spec": {"color": "blue"}}
    for attempt in range(50):
        try:
            custom.create_namespaced_custom_object(group, version, NS, plural, body)
            break
        except ApiException as e:
            if e.status != 404 or attempt == 49:
                raise
            time.sleep(0.1)
    got = custom.get_namespaced_custom_object(group, version, NS, plural, "py-widget")
    check("custom resource round trip", got["spec"]["color"] == "blue", got)
    listed = custom.list_namespaced_custom_object(group, version, NS, plural)
    check("custom resource list", [i["metadata"]["name"] for i in listed["items"]] == ["py-widget"], listed)
    custom.delete_namespaced_custom_object(group, version, NS, plural, "py-widget")
    print("python client: all checks passed")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
