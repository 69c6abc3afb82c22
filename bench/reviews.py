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
"""
import argparse
import json
import os


def review(pod, namespace, uid):
    return {
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
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
            "object": pod, "oldObject": None, "dryRun": False,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
        },
    }


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
                "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}, {"name": "wlp-output", "mountPath": "/opt/ibm/wlp/output"},
                                 {"name": "kube-api-access-abcde", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                                  "readOnly": True}],
                "securityContext": {"runAsUser": 1000},
            }],
            "volumes": [{"name": "wlp-output", "emptyDir": {}}, {"name": "tmp", "emptyDir": {}},
                        {"name": "kube-api-access-abcde", "projected": {"defaultMode": 420, "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                            {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1",
                                                                                          "fieldPath": "metadata.namespace"}}]}}]}}],
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
            "schedulerName": "default-scheduler", "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority", "priority": 0,
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                             "tolerationSeconds": 300},
                            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
                             "tolerationSeconds": 300}],
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
    metadata = {"namespace": "load", "labels": labels, "annotations": annotations,
                "ownerReferences": [{"apiVersion": "batch/v1" if kind == "Job" else "apps/v1", "kind": kind,
                                     "name": owner, "uid": f"uid-{owner}", "controller": True,
                                     "blockOwnerDeletion": True}]}
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
    reviews = {
        "replicaset": review(replicaset_pod(), "bookinfo", "705ab4f5-6393-11e8-b7cc-42010a800002"),
        "typical": review(bench_pod([bench_container("web", 8)]), "shop", "705ab4f5-6393-11e8-b7cc-42010a800003"),
        "64kb": review(bench_pod([bench_container(f"c{i}", 40) for i in range(32)]), "shop",
                       "705ab4f5-6393-11e8-b7cc-42010a800004"),
        "env2000": review(bench_pod([bench_container("web", 2000)]), "shop", "705ab4f5-6393-11e8-b7cc-42010a800005"),
    }
    for name, body in reviews.items():
        with open(os.path.join(out, name + ".json"), "w") as f:
            json.dump(body, f)
    with open(os.path.join(out, "distinct.jsonl"), "w") as f:
        for i, pod in enumerate(distinct_pods()):
            f.write(json.dumps(review(pod, "load", f"distinct-{i:04d}")) + "\n")


if __name__ == "__main__":
    main()
