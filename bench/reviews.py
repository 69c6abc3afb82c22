#!/usr/bin/env python3
"""Writes the AdmissionReviews bench/side-by-side.sh sends to both injectors, into DIR:

  replicaset.json   a ReplicaSet-created pod with managedFields (bench/webhook-load.sh's review)
  typical.json      the engine bench's typical pod (crates/injector-engine/benches/pods.rs)
  64kb.json         its ~64 KB pod: 32 containers of 40 env vars
  env2000.json      its pod with one container of 2,000 env vars

Usage: bench/reviews.py DIR
"""
import json
import os
import sys


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


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
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


if __name__ == "__main__":
    main()
