#!/usr/bin/env bash
# Smoke test of the local Kubernetes control plane (tests/e2e/control-plane.sh):
#   * the API answers, the default namespace exists, the server reports the pinned version;
#   * kube-controller-manager works: a Deployment gets a ReplicaSet which creates a Pod
#     (the Pod stays Pending: there is no scheduler/kubelet; the image is never pulled);
#   * ServiceAccount admission ran on that Pod (projected kube-api-access volume);
#   * MutatingAdmissionWebhook works: a webhook with url https://127.0.0.1:<closed port>/inject,
#     failurePolicy Fail and a namespaceSelector makes pod creation in the labelled namespace
#     fail with the API server's "failed calling webhook ... connection refused" error, while
#     other namespaces are unaffected; after deleting it, pod creation works again.
# Always stops the control plane on exit. Last line: "N passed, M failed"; exit 1 on any failure.
#
# Usage: tests/e2e/smoke.sh        (SMOKE_KEEP=1 keeps the temp dir with logs)
# shellcheck disable=SC2317  # functions are called indirectly (trap, check, poll)
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
KUBE_VERSION=$(sed -n 's/^KUBE_VERSION=\([0-9.]*\).*/\1/p' "$HERE/build-control-plane.sh")
WAIT=${SMOKE_TIMEOUT:-180}
PASS=0
FAIL=0
DIR=$(mktemp -d "${TMPDIR:-/tmp}/sidecar-e2e-smoke.XXXXXX")

finish() {
  local rc=$?
  "$HERE/control-plane.sh" down "$DIR" >&2 || { echo "smoke: FAIL: control plane did not stop cleanly" >&2; FAIL=$((FAIL + 1)); }
  if [ "$FAIL" -gt 0 ] || [ -n "${SMOKE_KEEP:-}" ]; then
    if [ "$FAIL" -gt 0 ] && [ -d "$DIR/logs" ]; then
      for f in "$DIR"/logs/*.log; do
        echo "---- last 25 lines of $f ----" >&2; tail -n 25 "$f" >&2
      done
    fi
    echo "smoke: kept $DIR (logs in $DIR/logs/)" >&2
  else
    rm -rf "$DIR"
  fi
  echo "$PASS passed, $FAIL failed"
  if [ "$FAIL" -gt 0 ] || [ "$PASS" -eq 0 ]; then exit 1; fi
  exit "$rc"
}
trap finish EXIT
trap 'echo "smoke: interrupted" >&2; FAIL=$((FAIL + 1)); exit 130' INT TERM

ok()  { PASS=$((PASS + 1)); echo "smoke: ok   - $*"; }
bad() { FAIL=$((FAIL + 1)); echo "smoke: FAIL - $*"; }

# check DESCRIPTION COMMAND... : one check, output of the command shown on failure
check() {
  local what=$1 out; shift
  if out=$("$@" 2>&1); then ok "$what"; else bad "$what"; printf '%s\n' "$out" | tail -n 20 | sed 's/^/    /'; fi
}

# poll TIMEOUT COMMAND... : until COMMAND succeeds
poll() {
  local t=$1 start; shift
  start=$(date +%s)
  until "$@" >/dev/null 2>&1; do
    [ $(( $(date +%s) - start )) -ge "$t" ] && return 1
    sleep 0.5
  done
}

free_port() {   # a port nothing on 127.0.0.1 listens on
  local p hex
  while :; do
    p=$(( 20000 + RANDOM % 12000 )); hex=$(printf '%04X' "$p")
    # shellcheck disable=SC2046
    awk -v h="$hex" 'FNR>1 { split($2,a,":"); if (a[2]==h) f=1 } END { exit !f }' \
      $(ls /proc/net/tcp /proc/net/tcp6 2>/dev/null) </dev/null && continue
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && continue
    echo "$p"; return
  done
}

echo "smoke: control plane in $DIR"
start=$(date +%s)
if "$HERE/control-plane.sh" up "$DIR" > "$DIR.env.out"; then
  ok "control plane up ($(( $(date +%s) - start )) s incl. build check)"
else
  rm -f "$DIR.env.out"
  bad "control plane up"
  exit 1
fi
rm -f "$DIR.env.out"
# shellcheck disable=SC1091
. "$DIR/env"
K="$DIR/kubectl"

# ---------------------------------------------------------------- basics
check "kubectl get ns default" "$K" get ns default
check "server version is v$KUBE_VERSION" bash -c "'$K' version -o json | grep -q '\"gitVersion\": \"v$KUBE_VERSION\"'"
check "MutatingAdmissionWebhook API served" "$K" api-resources --api-group=admissionregistration.k8s.io -o name

# ---------------------------------------------------------------- controller-manager
check "create namespace smoke-plain" "$K" create namespace smoke-plain
check "serviceaccount default created in new namespace (KCM)" \
  poll "$WAIT" "$K" -n smoke-plain get serviceaccount default
check "create Deployment web (image registry.invalid/pause:1)" \
  "$K" -n smoke-plain create deployment web --image=registry.invalid/pause:1 --replicas=1
pod_of_deploy() {
  "$K" -n smoke-plain get pods -l app=web -o jsonpath='{.items[0].metadata.name}' | grep -q .
}
check "Deployment -> ReplicaSet -> Pod object created (KCM)" poll "$WAIT" pod_of_deploy
check "Pod is owned by a ReplicaSet" bash -c \
  "'$K' -n smoke-plain get pods -l app=web -o jsonpath='{.items[0].metadata.ownerReferences[0].kind}' | grep -qx ReplicaSet"
check "Pod stays Pending (no scheduler/kubelet)" bash -c \
  "'$K' -n smoke-plain get pods -l app=web -o jsonpath='{.items[0].status.phase}' | grep -qx Pending"
check "ServiceAccount admission added kube-api-access volume" bash -c \
  "'$K' -n smoke-plain get pods -l app=web -o jsonpath='{.items[0].spec.volumes[*].name}' | grep -q kube-api-access-"

# ---------------------------------------------------------------- webhook (nothing listening)
PORT=$(free_port)
check "create namespace smoke-inject labelled sidecar-injection=enabled" bash -c \
  "'$K' create namespace smoke-inject && '$K' label namespace smoke-inject sidecar-injection=enabled"
poll "$WAIT" "$K" -n smoke-inject get serviceaccount default || true
check "create MutatingWebhookConfiguration (url: https://127.0.0.1:$PORT/inject, Fail)" \
  "$K" apply -f - <<EOF
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: smoke-closed-port
webhooks:
- name: inject.smoke.sidecar-injector.invalid
  clientConfig:
    url: https://127.0.0.1:$PORT/inject
  rules:
  - operations: [CREATE]
    apiGroups: [""]
    apiVersions: [v1]
    resources: [pods]
    scope: Namespaced
  namespaceSelector:
    matchLabels:
      sidecar-injection: enabled
  sideEffects: None
  admissionReviewVersions: [v1]
  failurePolicy: Fail
  timeoutSeconds: 5
EOF

run_pod() {   # run_pod NAMESPACE NAME [--dry-run=server]
  "$K" -n "$1" run "$2" --image=registry.invalid/pause:1 --restart=Never ${3:+"$3"}
}
webhook_live() {   # the API server's admission informer has picked the configuration up
  local out
  out=$(run_pod smoke-inject probe --dry-run=server 2>&1) && return 1
  printf '%s' "$out" | grep -q 'failed calling webhook'
}
check "webhook becomes active (server-side dry-run is rejected)" poll 60 webhook_live

out=$(run_pod smoke-inject p1 2>&1); rc=$?
echo "smoke: labelled namespace -> $out"
expect_re="failed calling webhook \"inject.smoke.sidecar-injector.invalid\": failed to call webhook: Post \"https://127.0.0.1:$PORT/inject\?timeout=5s\": dial tcp 127.0.0.1:$PORT: connect: connection refused"
if [ "$rc" -ne 0 ] && printf '%s' "$out" | grep -Eq "$expect_re"; then
  ok "pod creation in labelled namespace fails with 'failed calling webhook ... connection refused'"
else
  bad "pod creation in labelled namespace should fail with the webhook error (rc=$rc)"
fi
check "no pod was stored in the labelled namespace" bash -c \
  "! '$K' -n smoke-inject get pod p1 >/dev/null 2>&1"
check "pod creation in unlabelled namespace still works" run_pod smoke-plain p2
check "Deployment pods still created in unlabelled namespace" bash -c \
  "'$K' -n smoke-plain get pods -l app=web -o name | grep -q ."

check "delete MutatingWebhookConfiguration" "$K" delete mutatingwebhookconfiguration smoke-closed-port
check "pod creation in labelled namespace works after deletion" \
  poll 60 run_pod smoke-inject p3

exit 0
