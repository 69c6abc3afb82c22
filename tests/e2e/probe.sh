#!/usr/bin/env bash
# The synthetic admission probe end to end: `sidecar-injector serve --cluster --probe-namespace`
# against the real kube-apiserver of tests/e2e/control-plane.sh, with a ServiceAccount token bound
# to exactly deploy/rbac-cluster-mode.yaml (its optional probe part included) as its only
# credential. Webhooks are registered by `url: https://127.0.0.1:PORT/inject` only.
#
#   1. healthy: both probes green (injected in sidecar-injector-probe, not in
#      sidecar-injector-probe-opted-out), one log line each, nothing stored, no Events
#   2. a webhook configuration restored from another cluster (another CA's caBundle, not one of
#      ours, pointing at the injector): red within one interval, class x509, in metrics and
#      /readyz, the replica stays ready; labelled istio.io/rev=default, the leader adopts it and
#      patches its caBundle: green again
#   3. a webhook pointing at a closed port: class no-endpoints (connection refused); removed: green
#   4. a webhook that accepts connections and never answers: class timeout; removed: green
#   5. wrong results: the opted-out namespace relabelled for injection (injected where it should
#      not be), the probe namespace unlabelled (not injected where it should be); fixed: green
#  5b. Pod Security restricted on both namespaces: the opted-out probe stays green (the canary
#      itself passes), the injected one fails as other with PodSecurity's message
#   6. a template edit that fails for the probe namespace's pods: class denied, with the
#      injector's message; restored: green
#   7. leader only: a second replica does not probe; the leader is SIGKILLed, the second takes
#      over and probes
#   8. least privilege: the token may create pods in the probe namespaces and nothing more, and
#      only as dry runs (the admission policy); a probe of another namespace fails as other and
#      says which permission is missing
#
# Prints every check and last exactly one line "N passed, M failed"; exits non-zero on failure.
#   PROBE_E2E_KEEP=1       keep the temp dir (logs); kept anyway on failure
#   PROBE_E2E_TIMEOUT=60   seconds per poll
#   PROBE_E2E_BUDGET=300   seconds for all scenarios together (then every poll gives up at once)
#   SIDECAR_INJECTOR_BIN=... use this binary instead of building target/release/sidecar-injector
# shellcheck disable=SC2317
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
E2E=probe
WAIT=${PROBE_E2E_TIMEOUT:-60}
DEADLINE=""
T0=$(date +%s%N)
DIR=$(mktemp -d "${TMPDIR:-/tmp}/sidecar-e2e-probe.XXXXXX")
CP_STARTED=""
HANG_PID=""
declare -A PID=() ADDR=() MON=()
DURATIONS=()
INTERVAL=3                                 # --probe-interval, seconds
ON=sidecar-injector-probe                  # namespaces of deploy/rbac-cluster-mode.yaml
OFF=sidecar-injector-probe-opted-out
# shellcheck source=tests/e2e/lib.sh
. "$HERE/lib.sh"

KEEP=${PROBE_E2E_KEEP:-}
FAILURE_LOGS=("$DIR/injector-*.log")
stop_processes() {
  local name
  for name in "${!PID[@]}"; do stop_pid "${PID[$name]}"; done
  [ -n "$HANG_PID" ] && stop_pid "$HANG_PID"
}
trap e2e_finish EXIT
trap e2e_interrupted INT TERM


# ---------------------------------------------------------------------------- set-up
build_release || exit 1
command -v curl >/dev/null || { bad "curl is needed"; exit 1; }
command -v python3 >/dev/null || { bad "python3 is needed"; exit 1; }
control_plane_up "${PROBE_E2E_BUDGET:-300}"
SA() { K --kubeconfig "$DIR/sa.kubeconfig" "$@"; }

check "namespace istio-system and deploy/rbac-cluster-mode.yaml with its optional probe part (namespaces $ON, $OFF; 127.0.0.1 among the policy's hosts)" bash -c "
  $(declare -f cluster_mode_rbac); ROOT='$ROOT'
  '$DIR/kubectl' create namespace istio-system && cluster_mode_rbac | '$DIR/kubectl' apply -f -"
# Scenario 8's replica leads with a Lease of its own: granted by name and created, as the chart does.
check "the Lease sidecar-injector-leader-c, granted by name and created" K apply -f - <<'EOF'
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: sidecar-injector-e2e-lease-c, namespace: istio-system}
rules: [{apiGroups: [coordination.k8s.io], resources: [leases], resourceNames: [sidecar-injector-leader-c], verbs: [get, patch]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: sidecar-injector-e2e-lease-c, namespace: istio-system}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: sidecar-injector-e2e-lease-c}
subjects: [{kind: ServiceAccount, name: sidecar-injector, namespace: istio-system}]
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: sidecar-injector-leader-c, namespace: istio-system}
EOF
make_sa_kubeconfig() { sa_kubeconfig istio-system sidecar-injector "$DIR/sa.kubeconfig"; }
check "a kubeconfig with the ServiceAccount's token only (kubectl create token)" make_sa_kubeconfig
for ns in "$ON" "$OFF"; do
  check "serviceaccount default exists in $ns" poll "$WAIT" K -n "$ns" get serviceaccount default
done
DEFAULTS=$ROOT/crates/injector-engine/defaults
check "ConfigMaps istio-sidecar-injector (the embedded default configuration) and istio (mesh)" bash -c "
  k='$DIR/kubectl'
  \$k -n istio-system create configmap istio-sidecar-injector --from-file=config='$DEFAULTS/injector-config.yaml' --from-file=values='$DEFAULTS/values.json' &&
  \$k -n istio-system create configmap istio --from-file=mesh='$DEFAULTS/mesh.yaml'"

# mwc NAME URL SELECTOR [CABUNDLE] [TIMEOUT] [LABELS]: a MutatingWebhookConfiguration for pods
# in the namespaces matching SELECTOR (a matchLabels map)
mwc() {
  local name=$1 url=$2 selector=$3 bundle=${4:-} timeout=${5:-10} labels=${6:-}
  K apply -f - <<EOF2
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: $name
  labels: {e2e: probe${labels:+, $labels}}
webhooks:
- name: $name.sidecar-injector.e2e.invalid
  clientConfig: {url: "$url"${bundle:+, caBundle: "$bundle"}}
  rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [pods], scope: Namespaced}]
  namespaceSelector: {matchLabels: $selector}
  sideEffects: NoneOnDryRun
  admissionReviewVersions: [v1]
  failurePolicy: Fail
  timeoutSeconds: $timeout
EOF2
}
has_bundle() { [ -n "$(K get mutatingwebhookconfiguration "$1" -o jsonpath='{.webhooks[0].clientConfig.caBundle}')" ]; }

# start NAME [ARGS...]: an injector with the probe on (interval $INTERVAL s; by default of $ON and
# $OFF); does not wait
start() {
  local name=$1 a m; shift
  alloc_port a; alloc_port m; ADDR[$name]=$a; MON[$name]=$m
  [ $# -gt 0 ] || set -- --probe-namespace "$ON" --probe-opted-out-namespace "$OFF"
  "$BIN" serve --cluster --kubeconfig "$DIR/sa.kubeconfig" --namespace istio-system --service-name istiod \
    --dns-name 127.0.0.1 --addr "127.0.0.1:$a" --monitoring-addr "127.0.0.1:$m" \
    --identity "injector-$name" --resync 1s --lease-duration 6s --log-format json \
    --probe-interval "${INTERVAL}s" --probe-timeout "${INTERVAL}s" "$@" \
    >> "$DIR/injector-$name.log" 2>&1 &
  PID[$name]=$!
}
readyz() { curl -sS --max-time 2 "http://127.0.0.1:${MON[$1]}/readyz"; }
is_ready() { readyz "$1" | grep -q '"ready":true'; }
metrics() { curl -sS --max-time 2 "http://127.0.0.1:${MON[$1]}/metrics"; }
# metric REPLICA NAME{LABELS}: the sample's value (empty when absent)
metric() { metrics "$1" | awk -v m="$2" '$1 == m { print $2 }'; }
success() { metric "$1" "sidecar_injector_probe_success{namespace=\"$2\",expect=\"$3\"}"; }
failures() { local v; v=$(metric "$1" "sidecar_injector_probe_failures_total{class=\"$2\"}"); echo "${v:-0}"; }
# target REPLICA NS FIELD: a field of /readyz's cluster.probe.targets[namespace=NS]
target() {
  readyz "$1" | python3 -c '
import json, sys
probe = json.load(sys.stdin)["cluster"]["probe"]
t = [t for t in probe["targets"] if t["namespace"] == sys.argv[1]][0]
v = t[sys.argv[2]]
print("" if v is None else v)' "$2" "$3"
}
probing() { readyz "$1" | python3 -c 'import json, sys; print(json.load(sys.stdin)["cluster"]["probe"]["probing"])'; }
# green REPLICA: both probes came back as expected (metrics and /readyz)
green() {
  [ "$(success "$1" "$ON" injected)" = 1 ] && [ "$(success "$1" "$OFF" not-injected)" = 1 ] &&
    [ "$(target "$1" "$ON" state)" = ok ] && [ "$(target "$1" "$OFF" state)" = ok ]
}
# red REPLICA NS EXPECT CLASS: that probe failed with CLASS (metrics and /readyz)
red() { [ "$(success "$1" "$2" "$3")" = 0 ] && [ "$(target "$1" "$2" state)" = failing ] && [ "$(target "$1" "$2" class)" = "$4" ]; }
# log_lines REPLICA MESSAGE [NS]: how many log lines of REPLICA say MESSAGE (for namespace NS)
log_lines() {
  python3 - "$DIR/injector-$1.log" "$2" "${3:-}" <<'PY'
import json, sys
n = 0
for line in open(sys.argv[1]):
    try: j = json.loads(line)
    except ValueError: continue
    f = j.get("fields", j)
    if f.get("message", "").startswith(sys.argv[2]) and (not sys.argv[3] or f.get("namespace") == sys.argv[3]): n += 1
print(n)
PY
}
# msg_has NS TEXT: /readyz's failure message for NS contains TEXT
msg_has() { target a "$1" message | grep -qF -- "$2"; }
# breaks PATTERN: a server-side dry-run pod in $ON fails with an error matching PATTERN (the API
# server enforces the new webhook configuration)
breaks() {
  local out
  if out=$(printf 'apiVersion: v1\nkind: Pod\nmetadata: {generateName: breaks-}\nspec: {containers: [{name: c, image: registry.k8s.io/pause:3.10}]}\n' |
    K -n "$ON" create -f - --dry-run=server -o name 2>&1); then return 1; fi
  grep -q -- "$1" <<< "$out"
}
# time_to CHECK...: polls CHECK and prints the seconds it took (fails after WAIT)
time_to() { local t; t=$(date +%s%N); poll "$WAIT" "$@" || return 1; secs_since "$t"; }
# red_after NS EPOCH: seconds from EPOCH (when kubectl saw the API server enforce a break) to the
# probe's own time of turning red (/readyz "since"), so that polling this script does is not counted
red_after() {
  python3 -c '
import datetime, sys
since = datetime.datetime.fromisoformat(sys.argv[1].rstrip("Z")[:26] + "+00:00")
print("%.2f" % (since.timestamp() - float(sys.argv[2])))' "$(target a "$1" since)" "$2"
}
# within_interval SECONDS: at most one interval (plus 0.3 s: kubectl's own round trip)
within_interval() { awk -v t="$1" -v i="$INTERVAL" 'BEGIN { exit !(t <= i + 0.3) }'; }

# ---------------------------------------------------------------------------- 1
scenario "1: healthy: both probes green, quiet, nothing stored"
start a
run "injector a ready" poll "$WAIT" is_ready a
check "MutatingWebhookConfiguration istio-sidecar-injector (ours) for istio-injection=enabled, pointing at a" \
  mwc istio-sidecar-injector "https://127.0.0.1:${ADDR[a]}/inject" "{istio-injection: enabled}"
run "its caBundle is patched by the leader" poll "$WAIT" has_bundle istio-sidecar-injector
T=$(time_to green a) && ok "probes green: success 1 for $ON (injected) and $OFF (not-injected), /readyz state ok ($T s)" || bad "probes green"
DURATIONS+=("caBundle patched -> probes green: $T s")
log "    readyz cluster.probe: $(readyz a | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["cluster"]["probe"]))')"
run "several probes made (probes >= 3)" poll "$WAIT" bash -c "[ \"\$(curl -s http://127.0.0.1:${MON[a]}/readyz | python3 -c 'import json,sys; print(min(t[\"probes\"] for t in json.load(sys.stdin)[\"cluster\"][\"probe\"][\"targets\"]))')\" -ge 3 ]"
quiet() { [ "$(log_lines a 'probe ok' "$ON")" = 1 ] && [ "$(log_lines a 'probe ok' "$OFF")" = 1 ]; }
check "one log line per namespace when it turned ok, none for the next probes" quiet
check "a duration histogram per probe" bash -c "[ \"\$(curl -s http://127.0.0.1:${MON[a]}/metrics | awk '\$1 == \"sidecar_injector_probe_duration_seconds_count{namespace=\\\"$ON\\\",expect=\\\"injected\\\"}\" { print (\$2 >= 3) }')\" = 1 ]"
check "a last success timestamp within the last minute" bash -c "
  v=\$(curl -s http://127.0.0.1:${MON[a]}/metrics | awk '\$1 == \"sidecar_injector_probe_last_success_timestamp_seconds{namespace=\\\"$ON\\\",expect=\\\"injected\\\"}\" { print \$2 }')
  [ -n \"\$v\" ] && [ \$(( \$(date +%s) - v )) -le 60 ]"
check "the dry-run canaries were never stored (no pods in $ON, $OFF)" bash -c "[ -z \"\$('$DIR/kubectl' get pods -n $ON -o name)\$('$DIR/kubectl' get pods -n $OFF -o name)\" ]"
check "no Event in the probe namespaces (core/v1 and events.k8s.io/v1)" bash -c "
  for ns in $ON $OFF; do
    [ -z \"\$('$DIR/kubectl' get events -n \$ns -o name)\" ] && [ -z \"\$('$DIR/kubectl' get events.v1.events.k8s.io -n \$ns -o name)\" ] || exit 1
  done"
same_as_real_pod() {   # a real pod with the canary's label (stored) is injected the same way
  local real
  real=$(printf 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: like-the-canary\n  labels: {sidecar-injector.istio.io/probe: "true"}\nspec:\n  containers:\n  - {name: canary, image: registry.k8s.io/pause:3.10}\n' |
    K -n "$ON" create -f - -o jsonpath='{range .spec.initContainers[*]}{.name} {end}{range .spec.containers[*]}{.name} {end}') || return 1
  K -n "$ON" delete pod like-the-canary --wait=false >/dev/null
  echo "containers of the real pod: $real"
  case "$real" in *istio-proxy*) return 0 ;; esac
  return 1
}
check "a real (stored) pod shaped like the canary is injected too (the probe label changes nothing)" same_as_real_pod
scenario_end

# ---------------------------------------------------------------------------- 2
scenario "2: a caBundle of another CA on a webhook the injector does not manage: x509, then adopted"
check "another CA (openssl), as a webhook configuration restored from another cluster would carry" \
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$DIR/other-ca.key" -out "$DIR/other-ca.pem" \
  -days 1 -subj "/CN=another cluster's CA"
OTHER_BUNDLE=$(base64 -w0 < "$DIR/other-ca.pem")
X509_BEFORE=$(failures a x509)
check "MutatingWebhookConfiguration restored (not ours: no istio.io/rev label) for $ON, pointing at a, with that CA" \
  mwc restored "https://127.0.0.1:${ADDR[a]}/inject" "{kubernetes.io/metadata.name: $ON}" "$OTHER_BUNDLE"
t=$(date +%s%N)
run "the API server enforces it: a dry-run pod in $ON fails with x509" poll "$WAIT" breaks 'x509: certificate signed by unknown authority'
T_EFFECT=$(secs_since "$t"); SEEN=$(date +%s.%N)
run "the probe of $ON goes red with class x509" poll "$WAIT" red a "$ON" injected x509
T=$(red_after "$ON" "$SEEN")
DURATIONS+=("wrong caBundle -> the API server enforces it $T_EFFECT s -> probe red (x509) ${T:-?} s later by the probe's clock (interval ${INTERVAL} s)")
check "within one interval: red ${T:-?} s after the API server enforced it (interval ${INTERVAL} s)" within_interval "${T:-999}"
check "sidecar_injector_probe_failures_total{class=\"x509\"} grew" bash -c "[ $(failures a x509) -gt $X509_BEFORE ]"
MSG=$(target a "$ON" message)
log "    /readyz message: $MSG"
check "/readyz's message is the API server's: x509: certificate signed by unknown authority, webhook named" \
  grep -q 'failed calling webhook "restored.sidecar-injector.e2e.invalid".*x509: certificate signed by unknown authority' <<< "$MSG"
check "one warning in the log with the class and the API server's message" bash -c "
  [ \"\$(grep '\"probe failing' '$DIR/injector-a.log' | grep '\"class\":\"x509\"' | grep -c 'certificate signed by unknown authority')\" = 1 ]"
check "the opted-out namespace's probe stays green" bash -c "[ \"$(success a "$OFF" not-injected)\" = 1 ]"
check "the replica stays ready (an unready fail-closed injector would block every pod)" is_ready a
check "fix: label restored istio.io/rev=default, so the injector manages it" K label mutatingwebhookconfiguration restored istio.io/rev=default
T=$(time_to green a) && ok "the leader patches its caBundle and the probe is green again ($T s)" || bad "green again after the fix"
DURATIONS+=("fix (labelled) -> probe green: $T s")
check "one 'probe ok again' line naming the previous class" bash -c "grep '\"probe ok again' '$DIR/injector-a.log' | grep -q '\"previous\":\"x509\"'"
check "the restored configuration now carries our CA" bash -c "[ \"\$('$DIR/kubectl' get mutatingwebhookconfiguration restored -o jsonpath='{.webhooks[0].clientConfig.caBundle}')\" != '$OTHER_BUNDLE' ]"
check "delete restored" K delete mutatingwebhookconfiguration restored
scenario_end

# ---------------------------------------------------------------------------- 3
scenario "3: a webhook pointing at a closed port: no-endpoints"
alloc_port CLOSED
check "MutatingWebhookConfiguration closed for $ON: url https://127.0.0.1:$CLOSED/inject (nothing listens)" \
  mwc closed "https://127.0.0.1:$CLOSED/inject" "{kubernetes.io/metadata.name: $ON}"
run "the API server enforces it: a dry-run pod in $ON fails with connection refused" poll "$WAIT" breaks 'connection refused'
SEEN=$(date +%s.%N)
run "red with class no-endpoints" poll "$WAIT" red a "$ON" injected no-endpoints
T=$(red_after "$ON" "$SEEN")
DURATIONS+=("closed port -> probe red (no-endpoints): ${T:-?} s after the API server enforced it, by the probe's clock")
check "within one interval: red ${T:-?} s after the API server enforced it" within_interval "${T:-999}"
MSG=$(target a "$ON" message)
log "    /readyz message: $MSG"
check "the message says connection refused and names the webhook" grep -q 'failed calling webhook "closed.sidecar-injector.e2e.invalid".*connect: connection refused' <<< "$MSG"
check "sidecar_injector_probe_failures_total{class=\"no-endpoints\"} > 0" bash -c "[ $(failures a no-endpoints) -gt 0 ]"
check "delete closed" K delete mutatingwebhookconfiguration closed
run "green again" poll "$WAIT" green a
scenario_end

# ---------------------------------------------------------------------------- 4
scenario "4: a webhook that accepts connections and never answers: timeout"
alloc_port HANG
python3 -c '
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(64); held = []
while True:
    c, _ = s.accept(); held.append(c)' "$HANG" &
HANG_PID=$!
check "MutatingWebhookConfiguration hang for $ON: url https://127.0.0.1:$HANG/inject (accepts, never answers), timeoutSeconds 1" \
  mwc hang "https://127.0.0.1:$HANG/inject" "{kubernetes.io/metadata.name: $ON}" "" 1
T=$(time_to red a "$ON" injected timeout) && ok "red with class timeout ($T s)" || bad "red with class timeout"
MSG=$(target a "$ON" message)
log "    /readyz message: $MSG"
check "the message names the webhook and the deadline" grep -q 'failed calling webhook "hang.sidecar-injector.e2e.invalid".*context deadline exceeded' <<< "$MSG"
check "delete hang" K delete mutatingwebhookconfiguration hang
stop_pid "$HANG_PID"; HANG_PID=""
run "green again" poll "$WAIT" green a
scenario_end

# ---------------------------------------------------------------------------- 5
scenario "5: wrong results, both ways"
check "label $OFF istio-injection=enabled (an opted-out namespace now injected)" K label namespace "$OFF" istio-injection=enabled --overwrite
T=$(time_to red a "$OFF" not-injected wrong-result) && ok "the opted-out probe is red with class wrong-result ($T s)" || bad "opted-out: wrong-result"
log "    /readyz message: $(target a "$OFF" message)"
check "its message says it was injected" msg_has "$OFF" "was injected in namespace $OFF"
check "label $OFF istio-injection=disabled again" K label namespace "$OFF" istio-injection=disabled --overwrite
run "green again" poll "$WAIT" green a
check "remove the label istio-injection from $ON" K label namespace "$ON" istio-injection-
T=$(time_to red a "$ON" injected wrong-result) && ok "the probe of $ON is red with class wrong-result ($T s)" || bad "not injected: wrong-result"
check "its message says no sidecar" msg_has "$ON" "without a sidecar"
check "label $ON istio-injection=enabled again" K label namespace "$ON" istio-injection=enabled
run "green again" poll "$WAIT" green a
check "sidecar_injector_probe_failures_total{class=\"wrong-result\"} >= 2" bash -c "[ $(failures a wrong-result) -ge 2 ]"
scenario_end

# ---------------------------------------------------------------------------- 5b
scenario "5b: Pod Security restricted: the canary passes it, the injected pod does not (class other)"
check "label $OFF pod-security.kubernetes.io/enforce=restricted" K label namespace "$OFF" pod-security.kubernetes.io/enforce=restricted
check "label $ON pod-security.kubernetes.io/enforce=restricted" K label namespace "$ON" pod-security.kubernetes.io/enforce=restricted
T=$(time_to red a "$ON" injected other) && ok "the probe of $ON is red with class other: the injected pod (istio-init: NET_ADMIN, root) violates restricted ($T s)" || bad "restricted: other"
log "    /readyz message: $(target a "$ON" message)"
check "its message is PodSecurity's" msg_has "$ON" 'violates PodSecurity "restricted:latest"'
sleep "$INTERVAL"
check "the opted-out probe stays green: the canary itself passes restricted" bash -c "[ \"$(success a "$OFF" not-injected)\" = 1 ] && [ \"$(target a "$OFF" state)\" = ok ]"
check "remove the Pod Security labels" bash -c "'$DIR/kubectl' label namespace $ON pod-security.kubernetes.io/enforce- && '$DIR/kubectl' label namespace $OFF pod-security.kubernetes.io/enforce-"
run "green again" poll "$WAIT" green a
scenario_end

# ---------------------------------------------------------------------------- 6
scenario "6: a template edit that fails for the probe namespace's pods: denied, with the injector's message"
broken_configmap() {
  python3 - "$DEFAULTS/injector-config.yaml" "$ON" > "$DIR/injector-config-broken.yaml" <<'PY'
import sys
text, ns = open(sys.argv[1]).read(), sys.argv[2]
line = "  sidecar: |\n"
guard = '    {{- if eq .DeploymentMeta.Namespace "%s" }}{{ fail "e2e: this template refuses the namespace" }}{{ end }}\n' % ns
assert line in text
print(text.replace(line, line + guard, 1), end="")
PY
  K -n istio-system create configmap istio-sidecar-injector --from-file=config="$DIR/injector-config-broken.yaml" \
    --from-file=values="$DEFAULTS/values.json" --dry-run=client -o yaml | K apply -f -
}
check "edit the injector ConfigMap: the sidecar template fails for pods of $ON (it compiles, so it is accepted)" broken_configmap
T=$(time_to red a "$ON" injected denied) && ok "red with class denied ($T s)" || bad "red with class denied"
log "    /readyz message: $(target a "$ON" message)"
denied_by_injector() {
  msg_has "$ON" 'admission webhook "istio-sidecar-injector.sidecar-injector.e2e.invalid" denied the request' &&
    msg_has "$ON" 'e2e: this template refuses the namespace'
}
check "the message is the injector's refusal, naming the webhook and the template's error" denied_by_injector
check "the opted-out namespace's probe stays green" bash -c "[ \"$(success a "$OFF" not-injected)\" = 1 ]"
check "restore the ConfigMap" bash -c "'$DIR/kubectl' -n istio-system create configmap istio-sidecar-injector --from-file=config='$DEFAULTS/injector-config.yaml' --from-file=values='$DEFAULTS/values.json' --dry-run=client -o yaml | '$DIR/kubectl' apply -f -"
run "green again" poll "$WAIT" green a
check "sidecar_injector_probe_failures_total{class=\"denied\"} > 0" bash -c "[ $(failures a denied) -gt 0 ]"
scenario_end

# ---------------------------------------------------------------------------- 7
scenario "7: only the leader probes"
start b
run "injector b ready" poll "$WAIT" is_ready b
sleep $(( INTERVAL * 2 ))
check "b does not probe: /readyz probing false, targets pending, no success gauge" bash -c "
  [ \"$(probing b)\" = False ] && [ \"$(target b "$ON" state)\" = pending ] && ! curl -s http://127.0.0.1:${MON[b]}/metrics | grep -q '^sidecar_injector_probe_success{'"
check "b logged no probe result" bash -c "[ \"$(log_lines b 'probe ')\" = 0 ]"
check "point istio-sidecar-injector at b too (a second webhook entry is not needed: b serves the same CA)" K patch mutatingwebhookconfiguration istio-sidecar-injector --type=json \
  -p "[{\"op\":\"replace\",\"path\":\"/webhooks/0/clientConfig/url\",\"value\":\"https://127.0.0.1:${ADDR[b]}/inject\"}]"
run "a still green through b" poll "$WAIT" green a
t=$(date +%s%N)
stop_pid "${PID[a]}" KILL; unset "PID[a]"
b_probes() { [ "$(probing b)" = True ] && green b; }
run "after SIGKILL of the leader a, b probes and is green" poll 30 b_probes
T=$(secs_since "$t")
DURATIONS+=("leader SIGKILLed -> the other replica's probe green: $T s (Lease 6 s, interval $INTERVAL s)")
log "leader killed to b's probe green: $T s"
check "b logged that it starts probing" bash -c "[ \"$(log_lines b 'leading: the synthetic admission probe starts')\" = 1 ]"
scenario_end

# ---------------------------------------------------------------------------- 8
scenario "8: least privilege"
can() { [ "$(SA auth can-i "$@" 2>/dev/null)" = yes ]; }
cannot() { [ "$(SA auth can-i "$@" 2>/dev/null)" = no ]; }
check "the token can create pods in $ON and $OFF" bash -c "$(declare -f K SA can); DIR='$DIR'; can create pods -n $ON && can create pods -n $OFF"
check "it cannot create pods elsewhere" cannot create pods -n default
check "it cannot get, list or delete pods in the probe namespaces" bash -c "$(declare -f K SA cannot); DIR='$DIR'; cannot get pods -n $ON && cannot list pods -n $ON && cannot delete pods -n $ON"
real_pod_denied() {
  local out
  if out=$(SA -n "$OFF" run e2e-real --image=registry.invalid/pause:1 2>&1); then echo "created: $out"; return 1; fi
  grep -q 'may create pods only as dry runs' <<< "$out" || { echo "$out"; return 1; }
  log "    kubectl said: $out"
}
check "a real (not dry-run) pod in $OFF is refused by the admission policy" real_pod_denied
start c --probe-namespace default --lease-name sidecar-injector-leader-c
run "injector c (its own Lease; probe namespace default, outside the probe's Role) ready" poll "$WAIT" is_ready c
forbidden() {
  local body; body=$(readyz c) || return 1
  python3 -c '
import json, sys
t = json.loads(sys.argv[1])["cluster"]["probe"]["targets"][0]
sys.exit(not (t["state"] == "failing" and t["class"] == "other" and "cannot create resource \"pods\"" in t["message"]
              and "optional probe part of deploy/rbac-cluster-mode.yaml" in t["message"]))' "$body"
}
run "c's probe fails as other, saying which permission is missing and where it is" poll "$WAIT" forbidden
log "    /readyz message: $(readyz c | python3 -c 'import json,sys; print(json.load(sys.stdin)["cluster"]["probe"]["targets"][0]["message"])')"
check "injector b still running" alive "${PID[b]}"
scenario_end
