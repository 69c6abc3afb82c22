#!/usr/bin/env bash
# `preview` and `outdated` end to end: a real kube-apiserver and kube-controller-manager
# (tests/e2e/control-plane.sh), and `sidecar-injector serve` registered as the cluster's
# injection webhook (`url: https://127.0.0.1:PORT/inject`, never a Service). The
# controller-manager creates the ReplicaSets and their pods, which go through the webhook;
# with no kubelet they stay Pending.
#
#   1. preview (live, and offline from a `kubectl get -A -o yaml` snapshot) of a template that
#      fails for the workloads labelled class=batch: exactly those are reported broken, with
#      the template line, and preview exits 3
#   2. preview of a proxy image bump: every injected workload in one group with an image-only
#      diff; the workload of the namespace without the label is not injected under either; exit 0
#   3. outdated: nothing stale before the change; after it (the webhook's values and the
#      ConfigMap both move to a new tag), exactly the pods created before it, by Deployment,
#      image only, with the rollout commands; a Deployment created after is not listed
#   4. outdated --restart: --dry-run patches nothing; then --max-concurrent 2 with a 3 s wait:
#      the Deployment whose PodDisruptionBudget allows 0 disruptions is skipped with the reason,
#      the next two are restarted at once (restartedAt on their templates, new ReplicaSets made
#      by the controller-manager), their rollouts never finish (no kubelet), so the rest is not
#      started and the exit status is 3; then --wait=false restarts the rest, one at a time
#
# Prints every check and last exactly one line "N passed, M failed"; exits non-zero on failure.
#   FLEET_E2E_KEEP=1       keep the temp dir (logs); kept anyway on failure
#   FLEET_E2E_TIMEOUT=60   seconds per poll
#   FLEET_E2E_BUDGET=300   seconds for the whole run after the control plane is up
#   SIDECAR_INJECTOR_BIN=... use this binary instead of building target/release/sidecar-injector
# shellcheck disable=SC2317
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
E2E=fleet
WAIT=${FLEET_E2E_TIMEOUT:-60}
DEADLINE=""
T0=$(date +%s%N)
DIR=$(mktemp -d "${TMPDIR:-/tmp}/sidecar-e2e-fleet.XXXXXX")
CP_STARTED=""
SERVE_PID=""
# shellcheck source=tests/e2e/lib.sh
. "$HERE/lib.sh"

KEEP=${FLEET_E2E_KEEP:-}
FAILURE_LOGS=("$DIR/serve.log")
stop_processes() { [ -n "$SERVE_PID" ] && stop_pid "$SERVE_PID"; }
trap e2e_finish EXIT
trap e2e_interrupted INT TERM

# ---------------------------------------------------------------------------- set-up
build_release || exit 1
command -v python3 >/dev/null || { bad "python3 is needed"; exit 1; }
control_plane_up "${FLEET_E2E_BUDGET:-300}"
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
# the embedded sidecar template, failing for pods labelled class=batch
# (the block scalar under `  sidecar: |`, read without a YAML library: a fresh machine may lack one)
python3 - "$DEFAULTS/injector-config.yaml" > "$DIR/breaking.tmpl" <<'PY'
import sys
lines = open(sys.argv[1]).read().split("\n")
start = lines.index("  sidecar: |") + 1
body = []
for line in lines[start:]:
    if line and not line.startswith("    "):
        break
    body.append(line[4:])
print('{{- if eq (index .ObjectMeta.Labels "class") "batch" }}{{ fail "batch pods are not supported" }}{{ end }}')
print("\n".join(body).rstrip("\n"))
PY

alloc_port ADDR; alloc_port MON
"$BIN" serve --addr "127.0.0.1:$ADDR" --monitoring-addr "127.0.0.1:$MON" --write-ca "$DIR/ca.pem" \
  --values "$DIR/values.json" --log-format json >> "$DIR/serve.log" 2>&1 &
SERVE_PID=$!
ready() { curl -fsS --max-time 2 "http://127.0.0.1:$MON/readyz" | grep -q '"ready":true'; }
run "serve ready (embedded configuration, values with tag e2e-1)" poll "$WAIT" ready

configmap() {   # configmap VALUES_FILE: the injector ConfigMap as the cluster's configuration
  K -n istio-system create configmap istio-sidecar-injector --from-file=config="$DEFAULTS/injector-config.yaml" \
    --from-file=values="$1" --dry-run=client -o yaml | K apply -f -
}
check "namespaces istio-system, fleet-a (istio-injection=enabled), fleet-off (no label)" bash -c "
  k='$DIR/kubectl'
  \$k create namespace istio-system && \$k create namespace fleet-a && \$k label namespace fleet-a istio-injection=enabled &&
  \$k create namespace fleet-off"
check "ConfigMap istio-system/istio-sidecar-injector (tag e2e-1)" bash -c "$(declare -f K configmap); DIR='$DIR'; DEFAULTS='$DEFAULTS'; configmap '$DIR/values.json'"
check "MutatingWebhookConfiguration istio-sidecar-injector -> serve (istio-injection=enabled, Fail)" bash -c "
  cat <<EOF2 | '$DIR/kubectl' apply -f -
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: istio-sidecar-injector}
webhooks:
- name: sidecar-injector.fleet.e2e.invalid
  clientConfig: {url: 'https://127.0.0.1:$ADDR/inject', caBundle: '$(base64 -w0 < "$DIR/ca.pem")'}
  rules: [{operations: [CREATE], apiGroups: [''], apiVersions: [v1], resources: [pods], scope: Namespaced}]
  namespaceSelector: {matchLabels: {istio-injection: enabled}}
  sideEffects: None
  admissionReviewVersions: [v1]
  failurePolicy: Fail
  timeoutSeconds: 10
EOF2"

deployment() {   # deployment NS NAME [CLASS]
  local class=${3:+", class: $3"}
  K apply -f - <<EOF2
apiVersion: apps/v1
kind: Deployment
metadata: {name: $2, namespace: $1}
spec:
  replicas: 1
  selector: {matchLabels: {app: $2}}
  template:
    metadata: {labels: {app: $2$class}}
    spec:
      containers: [{name: app, image: "registry.invalid/$2:1"}]
EOF2
}
proxy_tag_of() {   # proxy_tag_of NS APP: the proxy image tags of the app's pods, one a line
  K -n "$1" get pods -l "app=$2" -o jsonpath='{range .items[*]}{range .spec.initContainers[?(@.name=="istio-proxy")]}{.image}{"\n"}{end}{range .spec.containers[?(@.name=="istio-proxy")]}{.image}{"\n"}{end}{end}' | sed 's/.*://'
}
has_pod_with() { proxy_tag_of "$1" "$2" | grep -qx "$3"; }
for app in web api batch-1 batch-2; do
  class=""; case $app in batch-*) class=batch ;; esac
  check "Deployment fleet-a/$app${class:+ (class=$class)}" deployment fleet-a "$app" $class
done
check "Deployment fleet-off/plain" deployment fleet-off plain
for app in web api batch-1 batch-2; do
  run "the controller-manager's pod of $app went through the webhook (proxy tag e2e-1)" poll "$WAIT" has_pod_with fleet-a "$app" e2e-1
done
run "the pod of fleet-off/plain exists, not injected" poll "$WAIT" bash -c "[ \"\$('$DIR/kubectl' -n fleet-off get pods -l app=plain -o name | wc -l)\" = 1 ] && [ -z \"\$('$DIR/kubectl' -n fleet-off get pods -l app=plain -o jsonpath='{..initContainers}')\" ]"

# json FILE PYTHON-EXPRESSION: evaluates the expression with `r` the parsed report; passes when true
json() {
  python3 - "$1" "$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
ok = eval("(" + sys.argv[2] + ")")
if not ok:
    print(json.dumps(r, indent=1)[:3000])
sys.exit(0 if ok else 1)
PY
}
status_of() { local rc=0; "$@" > "$DIR/out" 2> "$DIR/err" || rc=$?; echo "$rc"; }

# ---------------------------------------------------------------------------- 1
log "==== 1: preview of a template that breaks the class=batch workloads"
rc=$(status_of SI preview --template "$DIR/breaking.tmpl" -o json); cp "$DIR/out" "$DIR/preview-break.json"
check "live preview exits 3 (got $rc)" test "$rc" = 3
BROKEN='sorted(w["name"] for g in r["groups"] if g["change"] == "breaks" for w in g["workloads"])'
check "exactly Deployments fleet-a/batch-1 and batch-2 are reported broken" json "$DIR/preview-break.json" "$BROKEN == ['batch-1', 'batch-2'] and r['counts']['broken'] == 2"
check "the error names the template line and the failure" json "$DIR/preview-break.json" \
  "all('inject:1:' in g['error'] and 'batch pods are not supported' in g['error'] for g in r['groups'] if g['change'] == 'breaks')"
check "the current configuration was read from the cluster's ConfigMap" json "$DIR/preview-break.json" "r['current'].startswith('configmap/istio-system/istio-sidecar-injector')"
rc=$(status_of SI preview --template "$DIR/breaking.tmpl"); cp "$DIR/out" "$DIR/preview-break.txt"
check "the table says BREAKS 2 workloads and what exit status 3 means (exit $rc)" bash -c "[ $rc = 3 ] && grep -q '^BREAKS 2 workloads' '$DIR/preview-break.txt' && grep -q '^Exit status 3: the proposal breaks 2 workloads' '$DIR/preview-break.txt'"
check "kubectl get -A -o yaml snapshot (workloads, namespaces) and the ConfigMap" bash -c "
  '$DIR/kubectl' get deploy,sts,ds,rs,job,cronjob,pod,ns -A -o yaml > '$DIR/snapshot.yaml' &&
  '$DIR/kubectl' -n istio-system get configmap istio-sidecar-injector -o yaml > '$DIR/cm.yaml'"
rc=$(status_of "$BIN" preview -f "$DIR/snapshot.yaml" --current-injector-config "$DIR/cm.yaml" --template "$DIR/breaking.tmpl" -o json)
cp "$DIR/out" "$DIR/preview-break-offline.json"
check "offline preview of the snapshot exits 3 (got $rc)" test "$rc" = 3
check "offline: the same two workloads are broken" json "$DIR/preview-break-offline.json" "$BROKEN == ['batch-1', 'batch-2']"

# ---------------------------------------------------------------------------- 2
log "==== 2: preview of a proxy image bump"
rc=$(status_of SI preview --values "$DIR/values-e2e-2.json" -o json); cp "$DIR/out" "$DIR/preview-bump.json"
check "preview exits 0 (got $rc)" test "$rc" = 0
check "every injected workload (4) is in one group with an image-only diff" json "$DIR/preview-bump.json" "
[len(g['workloads']) for g in r['groups'] if g['change'] == 'changed'] == [4] and
all(f['field'] == 'image' and f['after'].endswith(':e2e-2') for g in r['groups'] if g['change'] == 'changed'
    for c in g['diff']['containers'] for f in c['fields']) and
[g for g in r['groups'] if g['change'] == 'changed'][0]['diff'].keys() == {'containers'}"
check "fleet-off/plain is not injected under either" json "$DIR/preview-bump.json" \
  "[w['name'] for g in r['groups'] if g['change'] == 'notInjected' for w in g['workloads']] == ['plain']"
SI preview --values "$DIR/values-e2e-2.json" > "$DIR/preview-bump.txt" || true
log "preview table:"; sed 's/^/    /' "$DIR/preview-bump.txt"

# ---------------------------------------------------------------------------- 3
log "==== 3: outdated after a configuration change"
rc=$(status_of SI outdated -o json); cp "$DIR/out" "$DIR/outdated-before.json"
check "before the change: 4 injected pods, all up to date (exit $rc)" json "$DIR/outdated-before.json" "r['injected'] == 4 and r['upToDate'] == 4 and r['owners'] == []"
cp "$DIR/values-e2e-2.json" "$DIR/values.json.new" && mv "$DIR/values.json.new" "$DIR/values.json"
check "the cluster's ConfigMap moves to tag e2e-2" bash -c "$(declare -f K configmap); DIR='$DIR'; DEFAULTS='$DEFAULTS'; configmap '$DIR/values.json'"
probe() { K -n fleet-a run "probe-$RANDOM" --image=registry.invalid/p:1 --restart=Never --dry-run=server -o jsonpath='{..image}' | grep -q ':e2e-2'; }
run "serve reloaded its values: a dry-run pod gets tag e2e-2" poll "$WAIT" probe
check "Deployment fleet-a/fresh created after the change" deployment fleet-a fresh
run "its pod has tag e2e-2" poll "$WAIT" has_pod_with fleet-a fresh e2e-2
rc=$(status_of SI outdated -o json); cp "$DIR/out" "$DIR/outdated.json"
check "outdated lists exactly the 4 Deployments whose pods were created before (exit $rc)" json "$DIR/outdated.json" \
  "[o['owner']['name'] for o in r['owners']] == ['api', 'batch-1', 'batch-2', 'web'] and r['upToDate'] == 1"
check "each with its one pod, an image-only difference" json "$DIR/outdated.json" \
  "all(o['imageOnly'] and len(o['pods']) == 1 and o['pods'][0]['difference'] == 'image' and o['pods'][0]['pod'].startswith(o['owner']['name'] + '-') for o in r['owners'])"
SI outdated > "$DIR/outdated.txt" || true
check "the table prints the rollout commands" bash -c "grep -q '^  kubectl rollout restart deployment/web -n fleet-a$' '$DIR/outdated.txt' && grep -q 'Deployment fleet-a/api — 1 pod: image only' '$DIR/outdated.txt'"
log "outdated table:"; sed 's/^/    /' "$DIR/outdated.txt"
rc=$(status_of "$BIN" outdated -f <(K get pod,rs,deploy,ns -A -o yaml) --current-injector-config <(K -n istio-system get cm istio-sidecar-injector -o yaml) -o json)
cp "$DIR/out" "$DIR/outdated-offline.json"
check "offline, from a snapshot with pods and their owners: the same 4 owners (exit $rc)" json "$DIR/outdated-offline.json" \
  "[o['owner']['name'] for o in r['owners']] == ['api', 'batch-1', 'batch-2', 'web']"

# ---------------------------------------------------------------------------- 4
log "==== 4: outdated --restart"
check "PodDisruptionBudget fleet-a/api (minAvailable 1)" bash -c "
  '$DIR/kubectl' -n fleet-a create poddisruptionbudget api --selector=app=api --min-available=1"
pdb_observed() { [ -n "$(K -n fleet-a get pdb api -o jsonpath='{.status.observedGeneration}')" ]; }
run "the disruption controller computed its status (0 allowed: the pod is Pending)" poll "$WAIT" pdb_observed
restarted_at() { K -n fleet-a get deploy "$1" -o jsonpath='{.spec.template.metadata.annotations.kubectl\.kubernetes\.io/restartedAt}'; }
rc=$(status_of SI outdated --restart --dry-run --max-concurrent 2); cp "$DIR/out" "$DIR/restart-dry.txt"
check "--dry-run says what it would restart, patches nothing (exit $rc)" bash -c "
  grep -q 'would restart Deployment fleet-a/web: kubectl rollout restart deployment/web -n fleet-a' '$DIR/restart-dry.txt' &&
  [ -z \"\$('$DIR/kubectl' -n fleet-a get deploy web -o jsonpath='{.spec.template.metadata.annotations}')\" ]"
t=$(date +%s%N)
rc=$(status_of SI outdated --restart --max-concurrent 2 --timeout 3s); cp "$DIR/out" "$DIR/restart.txt"
log "outdated --restart --max-concurrent 2 --timeout 3s took $(secs_since "$t") s:"; sed -n '/restarting\|restart\|skipping\|stopping\|done\|rolled/p' "$DIR/restart.txt" | sed 's/^/    /'
check "exit status 3: not everything was restarted (got $rc)" test "$rc" = 3
check "api is skipped: its PodDisruptionBudget allows 0 disruptions, said so" bash -c "
  grep -q 'skipping Deployment fleet-a/api: PodDisruptionBudget fleet-a/api allows 0 disruptions now' '$DIR/restart.txt' && [ -z \"\$($(declare -f K restarted_at); DIR='$DIR'; restarted_at api)\" ]"
check "batch-1 and batch-2 were restarted together (restartedAt on their templates)" bash -c "
  $(declare -f K restarted_at); DIR='$DIR'; [ -n \"\$(restarted_at batch-1)\" ] && [ -n \"\$(restarted_at batch-2)\" ] &&
  grep -q 'restarted Deployment fleet-a/batch-1' '$DIR/restart.txt' && grep -q 'restarted Deployment fleet-a/batch-2' '$DIR/restart.txt'"
check "their rollouts did not finish in 3 s (no kubelet), so web was not started" bash -c "
  grep -q 'not rolled out after 3s' '$DIR/restart.txt' && grep -q 'not started: Deployment fleet-a/web' '$DIR/restart.txt' &&
  [ -z \"\$($(declare -f K restarted_at); DIR='$DIR'; restarted_at web)\" ]"
two_sets() { [ "$(K -n fleet-a get rs -l "app=$1" -o name | wc -l)" -ge 2 ]; }
run "the controller-manager made new ReplicaSets for batch-1 and batch-2" poll "$WAIT" bash -c "$(declare -f K two_sets); DIR='$DIR'; two_sets batch-1 && two_sets batch-2"
check "web still has one ReplicaSet" bash -c "[ \"\$('$DIR/kubectl' -n fleet-a get rs -l app=web -o name | wc -l)\" = 1 ]"
rc=$(status_of SI outdated --restart --wait=false); cp "$DIR/out" "$DIR/restart-nowait.txt"
log "outdated --restart --wait=false:"; sed -n '/restarting\|restarted\|skipping\|done/p' "$DIR/restart-nowait.txt" | sed 's/^/    /'
check "--wait=false restarts web (one at a time), api still held back, exit 3 (got $rc)" bash -c "
  [ $rc = 3 ] && [ -n \"\$($(declare -f K restarted_at); DIR='$DIR'; restarted_at web)\" ] &&
  grep -q 'restarted Deployment fleet-a/web' '$DIR/restart-nowait.txt' && grep -q 'skipping Deployment fleet-a/api' '$DIR/restart-nowait.txt' &&
  [ -z \"\$($(declare -f K restarted_at); DIR='$DIR'; restarted_at api)\" ]"
run "web gets its new ReplicaSet" poll "$WAIT" bash -c "$(declare -f K two_sets); DIR='$DIR'; two_sets web"
