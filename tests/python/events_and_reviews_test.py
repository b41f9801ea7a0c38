"""The Python `kubernetes` client against a running gateway (issue 24, items 5 and 9):
EventsV1Api as kube-rs's Recorder and client-go's events broadcaster use it (create,
then the series patched on a repeat), the same events through CoreV1Api, a watch of the
events API seeing a core write, field selectors, a 422; AuthenticationV1Api TokenReviews
made by an extension server's account bound to `system:auth-delegator`.

Usage: python events_and_reviews_test.py KUBECONFIG
Prints one line per check and exits non-zero on the first failure.
"""

import datetime
import json
import sys
import threading
import time

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

NS = "py-events"
ISSUER = "https://kubernetes.default.svc.cluster.local"


def check(name, condition, detail=""):
    if not condition:
        raise AssertionError(f"{name}: {detail}")
    print(f"ok: {name}")


def now():
    return datetime.datetime.now(datetime.timezone.utc)


def recorded(name, note):
    """The event kube-rs's Recorder publishes (reporter, regarding, eventTime, no series)."""
    return client.EventsV1Event(
        metadata=client.V1ObjectMeta(name=name, namespace=NS),
        event_time=now(),
        reporting_controller="example.com/py-ctl",
        reporting_instance="py-ctl-1",
        action="Reconcile",
        reason="Synced",
        type="Normal",
        note=note,
        regarding=client.V1ObjectReference(api_version="v1", kind="ConfigMap", name="app", namespace=NS),
    )


def events(core, events_v1):
    core.create_namespace({"metadata": {"name": NS}})

    # 1. Create through the events API; read through both.
    name = f"app.{time.time_ns():x}"
    made = events_v1.create_namespaced_event(NS, recorded(name, "first sync"))
    check("events.k8s.io create", made.note == "first sync" and made.regarding.name == "app" and made.event_time is not None, made)
    legacy = core.read_namespaced_event(name, NS)
    check(
        "the same event through CoreV1Api",
        legacy.message == "first sync"
        and legacy.involved_object.kind == "ConfigMap"
        and legacy.reporting_component == "example.com/py-ctl"
        and legacy.reporting_instance == "py-ctl-1"
        and legacy.metadata.uid == made.metadata.uid,
        legacy,
    )

    # 2. A repeat: the series patched (kube-rs's merge patch of the whole event).
    repeat = recorded(name, "first sync")
    repeat.event_time = made.event_time
    repeat.series = client.EventsV1EventSeries(count=2, last_observed_time=now())
    patched = events_v1.patch_namespaced_event(name, NS, client.ApiClient().sanitize_for_serialization(repeat))
    check("series patched", patched.series is not None and patched.series.count == 2, patched.series)
    check("the core event has the series", core.read_namespaced_event(name, NS).series.count == 2)

    # 3. A watch of the events API sees an event written through the core API.
    listed = events_v1.list_namespaced_event(NS)
    seen = []

    def follow():
        w = watch.Watch()
        for ev in w.stream(events_v1.list_namespaced_event, NS, resource_version=listed.metadata.resource_version, timeout_seconds=10):
            seen.append((ev["type"], ev["object"].metadata.name, ev["object"].note))
            if ev["object"].metadata.name == "core-write":
                w.stop()

    t = threading.Thread(target=follow)
    t.start()
    time.sleep(0.5)
    core.create_namespaced_event(NS, {
        "metadata": {"name": "core-write"},
        "eventTime": now().isoformat(),
        "reportingComponent": "py-core", "reportingInstance": "i-1", "action": "Write", "reason": "Written",
        "involvedObject": {"kind": "Secret", "name": "s", "namespace": NS},
        "message": "through v1", "type": "Warning",
    })
    t.join(15)
    check("events.k8s.io watch sees a core write", ("ADDED", "core-write", "through v1") in seen, seen)

    # 4. Field selectors of the events API.
    names = [e.metadata.name for e in events_v1.list_namespaced_event(NS, field_selector="regarding.kind=Secret").items]
    check("field selector regarding.kind", names == ["core-write"], names)
    names = [e.metadata.name for e in events_v1.list_namespaced_event(NS, field_selector="reportingController=example.com/py-ctl").items]
    check("field selector reportingController", names == [name], names)

    # 5. kube's events.k8s.io/v1 validation (the client checks eventTime itself): an
    # unknown type and too long an action are a 422 with one cause each.
    bad = recorded("bad", "x")
    bad.type = "Fatal"
    bad.action = "a" * 129
    try:
        events_v1.create_namespaced_event(NS, bad)
        check("an invalid event is refused", False, "accepted")
    except ApiException as e:
        status = json.loads(e.body)
        causes = [(c["field"], c["message"]) for c in status["details"]["causes"]]
        check("an invalid event is a 422 with kube's causes", e.status == 422 and causes == [
            ("action", 'Invalid value: "": can have at most 128 characters'),
            ("type", 'Invalid value: "": has invalid value: Fatal'),
        ], e.body)

    events_v1.delete_namespaced_event(name, NS)
    try:
        core.read_namespaced_event(name, NS)
        check("deleted through events.k8s.io", False, "still there")
    except ApiException as e:
        check("deleted through events.k8s.io, gone from v1", e.status == 404, e.body)


def token_for(core, name, ns, audiences=None):
    spec = client.V1TokenRequestSpec(audiences=audiences or [])
    tr = core.create_namespaced_service_account_token(name, ns, client.AuthenticationV1TokenRequest(spec=spec))
    return tr.status.token


def bearer_client(token):
    """A client that authenticates with `token` only (no client certificate)."""
    cfg = client.Configuration.get_default_copy()
    cfg.cert_file = None
    cfg.key_file = None
    cfg.api_key = {"authorization": token}
    cfg.api_key_prefix = {"authorization": "Bearer"}
    return client.ApiClient(cfg)


def token_reviews(core):
    rbac = client.RbacAuthorizationV1Api()
    core.create_namespace({"metadata": {"name": "wardle-py"}})
    core.create_namespaced_service_account("wardle-py", {"metadata": {"name": "apiserver"}})
    core.create_namespaced_service_account(NS, {"metadata": {"name": "caller"}})
    ext = bearer_client(token_for(core, "apiserver", "wardle-py"))
    review = client.V1TokenReview(spec=client.V1TokenReviewSpec(token=token_for(core, "caller", NS)))

    # 1. Not bound yet: 403.
    try:
        client.AuthenticationV1Api(ext).create_token_review(review)
        check("an unbound account may not review", False, "accepted")
    except ApiException as e:
        check("an unbound account's TokenReview is 403", e.status == 403, e.body)

    # 2. Bound to system:auth-delegator: reviews work.
    rbac.create_cluster_role_binding({
        "metadata": {"name": "wardle-py:system:auth-delegator"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:auth-delegator"},
        "subjects": [{"kind": "ServiceAccount", "name": "apiserver", "namespace": "wardle-py"}],
    })
    got = client.AuthenticationV1Api(ext).create_token_review(review)
    check(
        "TokenReview of a service account token",
        got.status.authenticated is True
        and got.status.user.username == f"system:serviceaccount:{NS}:caller"
        and "system:authenticated" in got.status.user.groups
        and got.status.audiences == [ISSUER],
        got.status,
    )
    sar = client.AuthorizationV1Api(ext).create_subject_access_review(client.V1SubjectAccessReview(
        spec=client.V1SubjectAccessReviewSpec(user=got.status.user.username, groups=got.status.user.groups,
                                              resource_attributes=client.V1ResourceAttributes(verb="get", resource="configmaps", namespace=NS))))
    check("SubjectAccessReview by the delegating server", sar.status.allowed is False, sar.status)

    # 3. Audiences: the token was issued for the API server, not for `wardle`.
    other = client.V1TokenReview(spec=client.V1TokenReviewSpec(token=review.spec.token, audiences=["wardle"]))
    got = client.AuthenticationV1Api(ext).create_token_review(other)
    check("a token for other audiences is not authenticated",
          not got.status.authenticated and "is invalid for the target audiences" in (got.status.error or ""), got.status)
    wardle = token_for(core, "caller", NS, ["wardle"])
    got = client.AuthenticationV1Api(ext).create_token_review(
        client.V1TokenReview(spec=client.V1TokenReviewSpec(token=wardle, audiences=["wardle"])))
    check("a token issued for wardle, reviewed for wardle", got.status.authenticated is True and got.status.audiences == ["wardle"], got.status)
    got = client.AuthenticationV1Api(ext).create_token_review(client.V1TokenReview(spec=client.V1TokenReviewSpec(token="nonsense")))
    check("an unknown token", not got.status.authenticated and got.status.error == "invalid bearer token", got.status)

    # 4. The delegator role grants nothing else.
    try:
        client.CoreV1Api(ext).list_namespaced_config_map(NS)
        check("the delegating account reads nothing", False, "listed")
    except ApiException as e:
        check("the delegating account reads nothing (403)", e.status == 403, e.body)


def main(kubeconfig):
    config.load_kube_config(config_file=kubeconfig)
    core = client.CoreV1Api()
    events(core, client.EventsV1Api())
    token_reviews(core)
    print("python events and reviews: all checks passed")


if __name__ == "__main__":
    main(sys.argv[1])
