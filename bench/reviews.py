#!/usr/bin/env python3
"""Writes the AdmissionReviews bench/side-by-side.sh sends to both injectors, into DIR:

  replicaset.json   a ReplicaSet-created pod with managedFields (bench/webhook-load.sh's review)
  typical.json      the engine bench's typical pod (crates/injector-engine/benches/pods.rs)
  64kb.json         its ~64 KB pod: 32 containers of 40 env vars
  env2000.json      its pod with one container of 2,000 env vars
  distinct.jsonl    1,000 distinct reviews, one per line, interleaved: 300 pods of 10 Deployments,
                    400 pods of 8 Indexed Jobs (per-pod completion index label, annotation,
                    hostname and env) and 300 pods of 6 StatefulSets (per-pod name, pod-name and
                    pod-index labels, hostname and volume claim), as their controllers create them
  mixed.jsonl       distinct.jsonl with each Deployment pod given an `app` label of its own, which
                    Istio's template reads: 30% of the admissions render (bench/README.md)

Every review is written as the API server writes it: the envelope's and every object's keys in
the order of the Go struct fields (`kind` before `apiVersion`, `containers` before
`serviceAccountName`, ...), map keys sorted, compact. The order is taken from the engine's table
of the Go types (crates/injector-engine/src/normalize/schema.json). The ReplicaSet review and the
distinct pods also carry what the API server adds before it calls a webhook (defaults, the
service-account token volume, the default tolerations); the three engine-bench pods keep the
content of crates/injector-engine/benches/pods.rs, so both injectors' per-injection figures
measure the same pods. Istio decodes into structs, so the order costs it nothing either way.
"""
import argparse
import json
import os

SCHEMA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates", "injector-engine", "src",
                      "normalize", "schema.json")


def review(pod, namespace, uid, types):
    """The AdmissionReview, envelope in admission/v1's Go field order, the pod in core/v1's."""
    return {
        "kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1",
        "request": {
            "uid": uid,
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
            "requestResource": {"group": "", "version": "v1", "resource": "pods"},
            "namespace": namespace, "operation": "CREATE",
            "userInfo": {"username": "system:serviceaccount:kube-system:replicaset-controller",
                         "uid": "a1b2c3", "groups": ["system:serviceaccounts", "system:serviceaccounts:kube-system",
                                                     "system:authenticated"]},
            "object": go_order(pod, {"kind": "struct", "type": types["roots"]["v1/Pod"]}, types["types"]),
            "oldObject": None, "dryRun": False,
            "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"},
        },
    }


def go_order(value, shape, types):
    """`value` with its keys as Go's encoding/json writes them for `shape`: struct fields in
    declaration order (unknown keys after them), map keys and raw objects sorted."""
    kind = shape.get("kind")
    if kind == "ptr":
        return go_order(value, shape["elem"], types)
    if kind == "struct" and isinstance(value, dict):
        fields = types.get(shape["type"], [])
        ordered = {f["name"]: go_order(value[f["name"]], f["shape"], types) for f in fields if f["name"] in value}
        ordered.update((k, v) for k, v in value.items() if k not in ordered)
        return ordered
    if kind == "slice" and isinstance(value, list):
        return [go_order(item, shape["elem"], types) for item in value]
    if kind in ("map", "raw") and isinstance(value, dict):
        elem = shape.get("elem", {"kind": "raw"})
        return {k: go_order(value[k], elem, types) for k in sorted(value)}
    return value


def as_the_api_server_sends(pod, token_volume, manager=None):
    """`pod` as a webhook receives it from the API server: defaulted, with the managed fields of
    `manager` (when given) for what its creator sent, then the admission plugins' additions (the
    service-account token volume and mounts, the default tolerations, the preemption policy).
    Checked against reviews the test control plane sent, 2026-12-04: the same bytes but for the
    managed fields' times."""
    spec = pod["spec"]
    for container in spec["containers"]:
        for port in container.get("ports", []):
            port.setdefault("protocol", "TCP")
        for variable in container.get("env", []):
            field = variable.get("valueFrom", {}).get("fieldRef")
            if field is not None:
                field.setdefault("apiVersion", "v1")
        for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
            if probe in container:
                if "httpGet" in container[probe]:
                    container[probe]["httpGet"].setdefault("scheme", "HTTP")
                for key, default in (("timeoutSeconds", 1), ("periodSeconds", 10), ("successThreshold", 1),
                                     ("failureThreshold", 3)):
                    container[probe].setdefault(key, default)
        container.setdefault("resources", {})
        container.setdefault("terminationMessagePath", "/dev/termination-log")
        container.setdefault("terminationMessagePolicy", "File")
        container.setdefault("imagePullPolicy", "Always" if container["image"].endswith(":latest") else "IfNotPresent")
    for key, default in (("restartPolicy", "Always"), ("terminationGracePeriodSeconds", 30),
                         ("dnsPolicy", "ClusterFirst"), ("securityContext", {}),
                         ("schedulerName", "default-scheduler"), ("enableServiceLinks", True)):
        spec.setdefault(key, default)
    if "serviceAccountName" in spec:
        spec.setdefault("serviceAccount", spec["serviceAccountName"])
    if manager:
        pod["metadata"]["managedFields"] = [{
            "manager": manager, "operation": "Update", "apiVersion": "v1", "time": "2026-11-30T08:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": fields_of(pod["metadata"], "metadata"), "f:spec": fields_of(spec, "spec")}}]
    for container in spec["containers"]:
        container.setdefault("volumeMounts", []).append(
            {"name": token_volume, "readOnly": True, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"})
    spec.setdefault("volumes", []).append({"name": token_volume, "projected": {"sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1",
                                                                      "fieldPath": "metadata.namespace"}}]}}],
        "defaultMode": 420}})
    spec.setdefault("serviceAccountName", "default")
    spec.setdefault("serviceAccount", spec["serviceAccountName"])
    spec.setdefault("tolerations", [
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
         "tolerationSeconds": 300}])
    spec.setdefault("priority", 0)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    pod.setdefault("status", {})
    return pod


# The pod's lists that merge by key in server-side apply, and their keys; other lists are atomic.
LIST_KEYS = {"containers": ("name",), "initContainers": ("name",), "volumes": ("name",), "env": ("name",),
             "ports": ("containerPort", "protocol"), "ownerReferences": ("uid",), "volumeMounts": ("mountPath",)}
# The pod's structs that server-side apply owns whole.
ATOMIC_STRUCTS = {"fieldRef"}


def fields_of(value, name):
    """The FieldsV1 set of `value`: every field as `f:NAME`, keyed list items as `k:{...}`."""
    if isinstance(value, dict) and name in ATOMIC_STRUCTS:
        return {}
    if isinstance(value, dict):
        out = {".": {}} if value and name not in ("metadata", "spec") else {}
        for key, child in value.items():
            if not (name == "metadata" and key in ("name", "namespace")):
                out["f:" + key] = fields_of(child, key)
        return out
    if isinstance(value, list) and name in LIST_KEYS:
        # The containers are required, so their list has no presence mark of its own; owner
        # references are atomic items.
        out = {} if name == "containers" else {".": {}}
        for item in value:
            key = {k: item[k] for k in LIST_KEYS[name] if k in item}
            out["k:" + json.dumps(key, separators=(",", ":"))] = {} if name == "ownerReferences" else fields_of(item, "")
        return out
    return {}


def replicaset_pod():
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "generateName": "reviews-v1-7d4b9c8f6-", "namespace": "bookinfo",
            "labels": {"app": "reviews", "version": "v1", "pod-template-hash": "7d4b9c8f6"},
            "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-11-30T08:00:00Z"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "reviews-v1-7d4b9c8f6",
                                 "uid": "4f7a0c1e-9b7d-4a59-8d2a-2d1f9f1c0b11", "controller": True,
                                 "blockOwnerDeletion": True}],
            "managedFields": [{"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
                               "time": "2026-11-30T08:00:00Z", "fieldsType": "FieldsV1",
                               "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app": {}, "f:version": {}}},
                                            "f:spec": {"f:containers": {"k:{\"name\":\"reviews\"}": {".": {}, "f:image": {}, "f:ports": {}}}}}}],
        },
        "spec": {
            "serviceAccountName": "bookinfo-reviews",
            "containers": [{
                "name": "reviews", "image": "docker.io/istio/examples-bookinfo-reviews-v1:1.20.2",
                "imagePullPolicy": "IfNotPresent",
                "ports": [{"containerPort": 9080, "protocol": "TCP"}],
                "env": [{"name": "LOG_DIR", "value": "/tmp/logs"}],
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}, {"name": "wlp-output", "mountPath": "/opt/ibm/wlp/output"}],
                "securityContext": {"runAsUser": 1000},
            }],
            "volumes": [{"name": "wlp-output", "emptyDir": {}}, {"name": "tmp", "emptyDir": {}}],
        },
        "status": {},
    }


def bench_pod(containers):
    """pods.rs's `pod`, a ReplicaSet-created pod in namespace shop, with the API server's empty status."""
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "generateName": "web-5d8f9c-", "namespace": "shop",
            "labels": {"app": "web", "version": "v1", "pod-template-hash": "5d8f9c"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d8f9c",
                                 "controller": True, "uid": "0b1c"}],
        },
        "spec": {"serviceAccountName": "web", "containers": containers},
        # The API server always sends a status; without it the two injectors' pods differ by
        # an empty status object (ours adds one, Istio's does not).
        "status": {},
    }


def bench_container(name, env):
    """pods.rs's `container`."""
    return {
        "name": name, "image": "registry.example.com/shop/web:1.4.2",
        "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
        "env": [{"name": f"VARIABLE_{i}", "value": f"value-{i}"} for i in range(env)],
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}},
        "readinessProbe": {"httpGet": {"path": "/ready", "port": "http"}, "periodSeconds": 5},
        "volumeMounts": [{"name": "config", "mountPath": "/etc/web"}],
    }


def workload_pod(kind, owner, labels, annotations, containers, extra_spec=None, name=None):
    """A pod as the controller of `kind` creates it (generateName unless it names the pod)."""
    metadata = {"namespace": "load", "labels": labels,
                "ownerReferences": [{"apiVersion": "batch/v1" if kind == "Job" else "apps/v1", "kind": kind,
                                     "name": owner, "uid": f"uid-{owner}", "controller": True,
                                     "blockOwnerDeletion": True}]}
    if annotations:
        metadata["annotations"] = annotations
    if name:
        metadata["name"] = name
    else:
        metadata["generateName"] = owner + "-"
    spec = {"serviceAccountName": owner, "containers": containers, "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst", "schedulerName": "default-scheduler",
            "enableServiceLinks": True, "priority": 0}
    spec.update(extra_spec or {})
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": {}}


def app_container(name, image, env):
    return {"name": name, "image": image, "imagePullPolicy": "IfNotPresent",
            "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
            "env": [{"name": k, "value": v} for k, v in env],
            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
            "readinessProbe": {"httpGet": {"path": "/ready", "port": "http"}, "periodSeconds": 5}}


def distinct_pods():
    """The 1,000 pods of distinct.jsonl, interleaved so consecutive admissions differ."""
    groups = []
    for d in range(10):
        rs = f"shop-{d}-6f9c7d8b5"
        labels = {"app": f"shop-{d}", "version": "v1", "pod-template-hash": "6f9c7d8b5"}
        pod = workload_pod("ReplicaSet", rs, labels, {}, [app_container("app", f"registry.example.com/shop-{d}:1.4", [("MODE", "web")])])
        groups.append([pod] * 30)
    for j in range(8):
        job = f"batch-{j}"
        pods = []
        for i in range(50):
            labels = {"batch.kubernetes.io/controller-uid": f"uid-{job}", "batch.kubernetes.io/job-name": job,
                      "controller-uid": f"uid-{job}", "job-name": job, "batch.kubernetes.io/job-completion-index": str(i)}
            annotations = {"batch.kubernetes.io/job-completion-index": str(i)}
            container = app_container("worker", "registry.example.com/batch:2.0", [("SHARD", str(i)), ("SHARDS", "50")])
            container["env"].append({"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
                "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}})
            pod = workload_pod("Job", job, labels, annotations, [container],
                               {"hostname": f"{job}-{i}", "subdomain": job, "restartPolicy": "Never"})
            pod["metadata"]["generateName"] = f"{job}-{i}-"
            pods.append(pod)
        groups.append(pods)
    for t in range(6):
        sts = f"db-{t}"
        pods = []
        for i in range(50):
            name = f"{sts}-{i}"
            labels = {"app": sts, "controller-revision-hash": f"{sts}-7c9d5b", "statefulset.kubernetes.io/pod-name": name,
                      "apps.kubernetes.io/pod-index": str(i)}
            container = app_container("db", "registry.example.com/db:16", [("PGDATA", "/data")])
            container["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
            pod = workload_pod("StatefulSet", sts, labels, {}, [container],
                               {"hostname": name, "subdomain": sts,
                                "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": f"data-{name}"}}]},
                               name=name)
            pods.append(pod)
        groups.append(pods)
    out, index = [], 0
    while any(groups):
        group = groups[index % len(groups)]
        if group:
            out.append(group.pop(0))
        index += 1
        groups = [g for g in groups if g] if not group else groups
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                     usage="%(prog)s DIR")
    parser.add_argument("dir", metavar="DIR", help="directory to write the reviews into (created if missing)")
    out = parser.parse_args().dir
    os.makedirs(out, exist_ok=True)
    with open(SCHEMA) as f:
        types = json.load(f)
    reviews = {
        "replicaset": review(as_the_api_server_sends(replicaset_pod(), "kube-api-access-abcde"), "bookinfo",
                             "705ab4f5-6393-11e8-b7cc-42010a800002", types),
        "typical": review(bench_pod([bench_container("web", 8)]), "shop", "705ab4f5-6393-11e8-b7cc-42010a800003",
                          types),
        "64kb": review(bench_pod([bench_container(f"c{i}", 40) for i in range(32)]), "shop",
                       "705ab4f5-6393-11e8-b7cc-42010a800004", types),
        "env2000": review(bench_pod([bench_container("web", 2000)]), "shop", "705ab4f5-6393-11e8-b7cc-42010a800005",
                          types),
    }
    for name, body in reviews.items():
        with open(os.path.join(out, name + ".json"), "w") as f:
            f.write(compact(body))
    with open(os.path.join(out, "distinct.jsonl"), "w") as distinct, \
            open(os.path.join(out, "mixed.jsonl"), "w") as mixed:
        for i, pod in enumerate(distinct_pods()):
            # The token volume's name ends in five random characters, different in every pod.
            pod = as_the_api_server_sends(json.loads(json.dumps(pod)), f"kube-api-access-{i:05x}",
                                          "kube-controller-manager")
            distinct.write(compact(review(pod, "load", f"distinct-{i:04d}", types)) + "\n")
            if pod["metadata"]["ownerReferences"][0]["kind"] == "ReplicaSet":
                pod["metadata"]["labels"]["app"] = f"uniq-{i}"
            mixed.write(compact(review(pod, "load", f"distinct-{i:04d}", types)) + "\n")


def compact(body):
    """JSON as the API server writes it: no spaces, non-ASCII as is."""
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False)


if __name__ == "__main__":
    main()
