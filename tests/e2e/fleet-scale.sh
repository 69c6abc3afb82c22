#!/usr/bin/env bash
# `doctor`, `preview` and `outdated` on a large cluster: the real kube-apiserver and
# kube-controller-manager (tests/e2e/control-plane.sh), `sidecar-injector serve` as the injection
# webhook, and a generator that makes Deployments of 10 replicas spread over namespaces of 100
# pods each; the controller-manager creates their pods through the webhook (injected, Pending:
# there is no kubelet). For each size in FLEET_SCALE_PODS the three tools are run on the whole
# cluster and their answers checked (every pod counted, injected and up to date; a proxy tag
# bump changes every Deployment, image only); their peak memory (`/usr/bin/time`), wall and CPU
# time are printed, and at the end the memory each grew per 1,000 more pods. The figures are a
# benchmark to read, not asserted.
#
# Prints every check and last exactly one line "N passed, M failed"; exits non-zero on failure.
#   FLEET_SCALE_PODS="1000 2000"   cluster sizes, in pods, growing (multiples of 100)
#   FLEET_SCALE_KEEP=1             keep the temp dir (logs, reports); kept anyway on failure
#   FLEET_SCALE_TIMEOUT=600        seconds to wait for the pods of one size
#   FLEET_SCALE_ENV=0              env variables in each generated container (larger templates)
#   SIDECAR_INJECTOR_BIN=...       use this binary instead of building target/release/sidecar-injector
# shellcheck disable=SC2317
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
E2E=fleet-scale
WAIT=${FLEET_SCALE_TIMEOUT:-600}
SIZES=${FLEET_SCALE_PODS:-1000 2000}
DEADLINE=""
T0=$(date +%s%N)
DIR=$(mktemp -d "${TMPDIR:-/tmp}/sidecar-e2e-fleet-scale.XXXXXX")
CP_STARTED=""
SERVE_PID=""
# shellcheck source=tests/e2e/lib.sh
. "$HERE/lib.sh"

KEEP=${FLEET_SCALE_KEEP:-}
FAILURE_LOGS=("$DIR/serve.log" "$DIR/logs/kube-controller-manager.log")
stop_processes() { [ -n "$SERVE_PID" ] && stop_pid "$SERVE_PID"; }
trap e2e_finish EXIT
trap e2e_interrupted INT TERM

# ---------------------------------------------------------------------------- set-up
build_release || exit 1
command -v python3 >/dev/null || { bad "python3 is needed"; exit 1; }
[ -x /usr/bin/time ] || { bad "/usr/bin/time is needed (GNU time) for the peak memory"; exit 1; }
# The controller-manager creates the pods as fast as the API server takes them.
export KCM_EXTRA_ARGS="--kube-api-qps=400 --kube-api-burst=800 --concurrent-deployment-syncs=20 --concurrent-replicaset-syncs=20"
control_plane_up 3600
SI() { "$BIN" "$@" --kubeconfig "$DIR/kubeconfig"; }

DEFAULTS=$ROOT/crates/injector-engine/defaults
values() {   # values TAG > FILE: the embedded values with the proxy tag TAG
  python3 - "$DEFAULTS/values.json" "$1" <<'PY'
import json, sys
v = json.load(open(sys.argv[1])); v.setdefault("global", {})["tag"] = sys.argv[2]; print(json.dumps(v))
PY
}
values e2e-1 > "$DIR/values.json"
values e2e-2 > "$DIR/values-e2e-2.json"

alloc_port ADDR; alloc_port MON
"$BIN" serve --addr "127.0.0.1:$ADDR" --monitoring-addr "127.0.0.1:$MON" --write-ca "$DIR/ca.pem" \
  --values "$DIR/values.json" --log-format json >> "$DIR/serve.log" 2>&1 &
SERVE_PID=$!
ready() { curl -fsS --max-time 2 "http://127.0.0.1:$MON/readyz" | grep -q '"ready":true'; }
run "serve ready (embedded configuration, values with tag e2e-1)" poll 60 ready
check "namespace istio-system and ConfigMap istio-sidecar-injector (tag e2e-1)" bash -c "
  k='$DIR/kubectl'
  \$k create namespace istio-system >/dev/null &&
  \$k -n istio-system create configmap istio-sidecar-injector --from-file=config='$DEFAULTS/injector-config.yaml' \
    --from-file=values='$DIR/values.json' >/dev/null"
check "MutatingWebhookConfiguration istio-sidecar-injector -> serve (istio-injection=enabled)" bash -c "
  cat <<EOF2 | '$DIR/kubectl' apply -f - >/dev/null
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: istio-sidecar-injector}
webhooks:
- name: sidecar-injector.fleet-scale.e2e.invalid
  clientConfig: {url: 'https://127.0.0.1:$ADDR/inject', caBundle: '$(base64 -w0 < "$DIR/ca.pem")'}
  rules: [{operations: [CREATE], apiGroups: [''], apiVersions: [v1], resources: [pods], scope: Namespaced}]
  namespaceSelector: {matchLabels: {istio-injection: enabled}}
  sideEffects: None
  admissionReviewVersions: [v1]
  failurePolicy: Fail
  timeoutSeconds: 10
EOF2"

# generate FROM TO: namespaces scale-FROM/100 .. and Deployments app-FROM/10 .. of 10 replicas
# each, for pods FROM..TO-1, applied server-side in chunks, 4 kubectl at a time
generate() {
  python3 - "$1" "$2" "$DIR/gen" "${FLEET_SCALE_ENV:-0}" <<'PY'
import os, sys
start, end, out, env = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
env_block = ("\n        env:" + "".join(f"\n        - {{name: SETTING_{i}, value: value-{i}}}" for i in range(env))) if env else ""
os.makedirs(out, exist_ok=True)
for f in os.listdir(out):
    os.remove(os.path.join(out, f))
for ns in range(start // 100, end // 100):
    docs = [f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: scale-{ns}, labels: {{istio-injection: enabled}}}}\n"]
    for d in range(ns * 10, ns * 10 + 10):
        docs.append(f"""apiVersion: apps/v1
kind: Deployment
metadata: {{name: app-{d}, namespace: scale-{ns}}}
spec:
  replicas: 10
  selector: {{matchLabels: {{app: app-{d}}}}}
  template:
    metadata:
      labels: {{app: app-{d}, version: v1}}
      annotations: {{prometheus.io/scrape: "true", prometheus.io/port: "8080"}}
    spec:
      containers:
      - name: app
        image: registry.invalid/app-{d % 50}:1.{d % 7}
        ports: [{{containerPort: 8080, name: http}}]
        readinessProbe: {{httpGet: {{path: /ready, port: 8080}}}}
        resources: {{requests: {{cpu: 100m, memory: 128Mi}}}}{env_block}
""")
    open(os.path.join(out, f"ns-{ns:05d}.yaml"), "w").write("---\n".join(docs))
PY
  find "$DIR/gen" -name '*.yaml' | sort | xargs -P 4 -n 5 sh -c '
    for f; do "$0" apply --server-side --field-manager=fleet-scale -f "$f" >/dev/null || exit 1; done' "$DIR/kubectl"
}
# pods: how many pods the cluster has (one list request of one item: remainingItemCount)
pods() {
  K get --raw '/api/v1/pods?limit=1' | python3 -c '
import json, sys
r = json.load(sys.stdin); print(len(r["items"]) + (r["metadata"].get("remainingItemCount") or 0))'
}
has_pods() { [ "$(pods)" -ge "$1" ]; }

# measure NAME ARGS...: runs `sidecar-injector ARGS`, its report in DIR/NAME.json, its peak
# memory (KiB), wall and CPU seconds in MEASURED ("KIB WALL CPU")
measure() {
  local name=$1; shift
  /usr/bin/time -f "%M %e %U %S" -o "$DIR/$name.time" "$BIN" "$@" --kubeconfig "$DIR/kubeconfig" \
    > "$DIR/$name.json" 2> "$DIR/$name.err" || true
  read -r kib wall user sys < "$DIR/$name.time"
  MEASURED="$kib $wall $(python3 -c "print(round($user + $sys, 2))")"
}
json() {   # json FILE PYTHON-EXPRESSION: passes when true, with `r` the report
  python3 - "$1" "$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
ok = eval("(" + sys.argv[2] + ")")
if not ok:
    print(json.dumps(r, indent=1)[:2000])
sys.exit(0 if ok else 1)
PY
}

declare -A MEMORY
previous=0
for size in $SIZES; do
  log "==== $size pods"
  t=$(date +%s%N)
  check "generate Deployments for pods $previous..$((size - 1)) (server-side apply)" generate "$previous" "$size"
  run "the controller-manager created $size pods through the webhook" poll "$WAIT" has_pods "$size"
  DURATIONS+=("$size pods created: $(secs_since "$t") s")
  deployments=$((size / 10))

  measure "doctor-$size" doctor --no-probe -o json
  MEMORY[doctor-$size]=${MEASURED%% *}
  log "doctor ($size pods): peak ${MEASURED%% *} KiB, wall/CPU s: ${MEASURED#* }"
  check "doctor looked at every workload ($size pods)" json "$DIR/doctor-$size.json" \
    "any(c['id'] == 'annotationPlacement' and '$deployments workload(s) examined' in c['summary'] for c in r['checks'])"

  measure "preview-$size" preview --values "$DIR/values-e2e-2.json" -o json
  MEMORY[preview-$size]=${MEASURED%% *}
  log "preview ($size pods): peak ${MEASURED%% *} KiB, wall/CPU s: ${MEASURED#* }"
  check "preview: every Deployment ($deployments) changes by the proxy image only" json "$DIR/preview-$size.json" \
    "r['counts']['changed'] == $deployments and r['counts']['workloads'] == $deployments and len(r['groups']) == 1"

  measure "outdated-$size" outdated -o json
  MEMORY[outdated-$size]=${MEASURED%% *}
  log "outdated ($size pods): peak ${MEASURED%% *} KiB, wall/CPU s: ${MEASURED#* }"
  check "outdated: $size pods, all injected and up to date" json "$DIR/outdated-$size.json" \
    "r['pods'] == $size and r['injected'] == $size and r['upToDate'] == $size and r['owners'] == []"
  previous=$size
done

first=${SIZES%% *}; last=${SIZES##* }
if [ "$first" != "$last" ]; then
  for tool in doctor preview outdated; do
    log "$tool: $(python3 -c "print(round((${MEMORY[$tool-$last]} - ${MEMORY[$tool-$first]}) / 1024 / (($last - $first) / 1000), 2))") MB more per 1,000 more pods ($first -> $last pods)"
  done
fi
