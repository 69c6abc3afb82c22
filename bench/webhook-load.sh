#!/usr/bin/env bash
# Load benchmark of the webhook HTTPS server (crates/injector-server) on loopback.
#
# ENGINE=real (default) runs `sidecar-injector serve` on its embedded Istio configuration, so
# every admission renders Istio's sidecar template, merges, post-processes and builds the
# JSON Patch. ENGINE=fake runs `crates/injector-server/examples/fake_injector.rs`, which answers
# with a canned Istio-sized patch: its numbers measure only TLS + HTTP + AdmissionReview
# decode/encode + the blocking-pool hand-off.
#
# h2load posts one body over and over, like the replicas of a scale-up (which reach the webhook
# before they get a name, as the same object): the real engine then answers all but the first
# from its outcome cache. SERVER_ARGS="--outcome-cache-mib 0" makes every admission run the
# engine, as for pods that all differ.
#
# Load tool: h2load (Debian package nghttp2-client), over keep-alive HTTPS, HTTP/2 by default
# (PROTO=h1 for HTTP/1.1). The server is pinned to CPU 0 and h2load to CPU 1 (taskset;
# PIN=0 lets both float over the two cores).
#
# Usage: bench/webhook-load.sh            # 20 s, 8 connections x 10 streams, HTTP/2
#        DURATION=10 CLIENTS=16 STREAMS=4 PROTO=h1 bench/webhook-load.sh
#        ENGINE=fake SERVER_ARGS=--inline bench/webhook-load.sh   # fake engine on the async worker
#        SERVER_ARGS="--outcome-cache-mib 0" bench/webhook-load.sh # every admission runs the engine
# Output: throughput (admissions/s), latency p50/p90/p99/max, peak RSS (VmHWM) of the server.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-20}
WARMUP=${WARMUP:-2}
CLIENTS=${CLIENTS:-8}
STREAMS=${STREAMS:-10}
PROTO=${PROTO:-h2}
PORT=${PORT:-18443}
PIN=${PIN:-1}   # 1: server on CPU 0, h2load on CPU 1; 0: no pinning
if [ "$PIN" = 1 ]; then server_cpu=(taskset -c 0); load_cpu=(taskset -c 1); else server_cpu=(); load_cpu=(); fi
MON_PORT=${MON_PORT:-18014}

if ! command -v h2load >/dev/null; then
  echo "h2load not found: apt-get install -y nghttp2-client" >&2
  exit 1
fi

ENGINE=${ENGINE:-real}
case "$ENGINE" in
  real)
    [ -n "${SKIP_BUILD:-}" ] || cargo build --release --quiet -p sidecar-injector
    cmd=(target/release/sidecar-injector serve) ;;
  fake)
    [ -n "${SKIP_BUILD:-}" ] || cargo build --release --quiet -p injector-server --example fake_injector
    cmd=(target/release/examples/fake_injector) ;;
  *) echo "ENGINE must be real or fake" >&2; exit 2 ;;
esac
work=$(mktemp -d)
trap 'kill -TERM "${pid:-}" 2>/dev/null || true; rm -rf "$work"' EXIT

# A realistic AdmissionReview (~4 KiB): a ReplicaSet-created pod with managedFields.
python3 - "$work/review.json" <<'PY'
import json, sys
pod = {
  "apiVersion": "v1", "kind": "Pod",
  "metadata": {
    "generateName": "reviews-v1-7d4b9c8f6-", "namespace": "bookinfo",
    "labels": {"app": "reviews", "version": "v1", "pod-template-hash": "7d4b9c8f6"},
    "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-11-30T08:00:00Z"},
    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "reviews-v1-7d4b9c8f6",
                          "uid": "4f7a0c1e-9b7d-4a59-8d2a-2d1f9f1c0b11", "controller": True, "blockOwnerDeletion": True}],
    "managedFields": [{"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
                        "time": "2026-11-30T08:00:00Z", "fieldsType": "FieldsV1",
                        "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app": {}, "f:version": {}}},
                                     "f:spec": {"f:containers": {"k:{\"name\":\"reviews\"}": {".": {}, "f:image": {}, "f:ports": {}}}}}}]
  },
  "spec": {
    "serviceAccountName": "bookinfo-reviews",
    "containers": [{
      "name": "reviews", "image": "docker.io/istio/examples-bookinfo-reviews-v1:1.20.2", "imagePullPolicy": "IfNotPresent",
      "ports": [{"containerPort": 9080, "protocol": "TCP"}],
      "env": [{"name": "LOG_DIR", "value": "/tmp/logs"}],
      "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
      "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}, {"name": "wlp-output", "mountPath": "/opt/ibm/wlp/output"},
                       {"name": "kube-api-access-abcde", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": True}],
      "securityContext": {"runAsUser": 1000}
    }],
    "volumes": [{"name": "wlp-output", "emptyDir": {}}, {"name": "tmp", "emptyDir": {}},
                {"name": "kube-api-access-abcde", "projected": {"defaultMode": 420, "sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                    {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}}],
    "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
    "schedulerName": "default-scheduler", "enableServiceLinks": True, "preemptionPolicy": "PreemptLowerPriority", "priority": 0,
    "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]
  },
  "status": {}
}
review = {
  "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
  "request": {
    "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
    "kind": {"group": "", "version": "v1", "kind": "Pod"},
    "resource": {"group": "", "version": "v1", "resource": "pods"},
    "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
    "requestResource": {"group": "", "version": "v1", "resource": "pods"},
    "namespace": "bookinfo", "operation": "CREATE",
    "userInfo": {"username": "system:serviceaccount:kube-system:replicaset-controller",
                 "uid": "a1b2c3", "groups": ["system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"]},
    "object": pod, "oldObject": None, "dryRun": False,
    "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}
  }
}
open(sys.argv[1], "w").write(json.dumps(review))
PY

RUST_LOG=${RUST_LOG:-warn} "${server_cpu[@]}" "${cmd[@]}" --addr "127.0.0.1:$PORT" --monitoring-addr "127.0.0.1:$MON_PORT" \
  --write-ca "$work/ca.pem" ${SERVER_ARGS:-} 2>"$work/server.log" &
pid=$!
for _ in $(seq 100); do
  curl -fs "http://127.0.0.1:$MON_PORT/readyz" >/dev/null && break
  sleep 0.1
done
curl -fs "http://127.0.0.1:$MON_PORT/readyz" >/dev/null || { cat "$work/server.log"; exit 1; }

proto_args=()
if [ "$PROTO" = h1 ]; then proto_args=(--h1); STREAMS=1; fi
url="https://127.0.0.1:$PORT/inject?timeout=10s"
echo "== $ENGINE engine, $PROTO, $CLIENTS connections x $STREAMS streams, ${DURATION}s (+${WARMUP}s warm-up); body $(wc -c <"$work/review.json") bytes"
"${load_cpu[@]}" h2load "${proto_args[@]}" -c "$CLIENTS" -m "$STREAMS" -t 1 -D "$DURATION" --warm-up-time "$WARMUP" \
  -d "$work/review.json" -H 'content-type: application/json' --log-file "$work/requests.tsv" "$url" \
  | tee "$work/h2load.txt" | grep -E "finished in|requests:|status codes:|traffic:|time for request:"

python3 - "$work/requests.tsv" "$DURATION" <<'PY'
import sys
lat = []
bad = 0
for line in open(sys.argv[1]):
    parts = line.split()
    if len(parts) < 3:
        continue
    if parts[1] != "200":
        bad += 1
    lat.append(int(parts[2]) / 1000.0)
lat.sort()
def pct(p):
    return lat[min(len(lat) - 1, int(len(lat) * p / 100.0))]
if lat:
    print(f"admissions: {len(lat)} ({len(lat) / float(sys.argv[2]):.0f}/s), non-200: {bad}")
    print(f"latency ms: p50 {pct(50):.2f}  p90 {pct(90):.2f}  p99 {pct(99):.2f}  max {lat[-1]:.2f}")
PY
echo "server peak RSS: $(awk '/VmHWM/ {print $2, $3}' "/proc/$pid/status")"
curl -fs "http://127.0.0.1:$MON_PORT/metrics" | grep -E "^sidecar_injection_(requests|success|patched|cache_hits)_total" || true
kill -TERM "$pid"
wait "$pid" || true
