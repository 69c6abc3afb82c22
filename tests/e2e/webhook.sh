#!/usr/bin/env bash
# End-to-end scenarios of Istio's injection troubleshooting page
# (https://istio.io/latest/docs/ops/common-problems/injection/) through a real kube-apiserver (tests/e2e/control-plane.sh) and the real
# `sidecar-injector serve` binary, registered as a MutatingWebhookConfiguration with
# `clientConfig.url: https://127.0.0.1:PORT/inject` + caBundle (never a `service:` reference).
#
#   1. the page's decision table: opt-in and opt-out namespaceSelectors x policy enabled
#      (embedded default) / disabled (examples/injector-configmap.yaml) x namespaces labelled
#      istio-injection=enabled / =disabled / unlabelled x pod annotation
#      sidecar.istio.io/inject "true" / "false" / absent  (36 pods, really created)
#   2. the annotation on a Deployment's own metadata has no effect, on its pod template it
#      does (policy disabled; Deployment -> ReplicaSet -> Pod via kube-controller-manager)
#   3. fail-closed: serve stopped + failurePolicy Fail -> pod creation refused
#      ("connection refused", webhook named), a Deployment's ReplicaSet records FailedCreate;
#      failurePolicy Ignore -> created without sidecar; serve back -> injects again
#   4. TLS: wrong caBundle / empty caBundle -> "x509: certificate signed by unknown authority";
#      the right caBundle -> works
#   5. admissionReviewVersions [v1beta1] and [v1] both inject; server-side dry-run returns the
#      injected pod without storing it
#   6. an invalid annotation value is refused with a clear "admission webhook ... denied" error
#   7. a Deployment's replicas, whose token volumes ServiceAccount admission names apart, are
#      answered from serve's outcome cache after the first, each with its own volume
#
# Only one MutatingWebhookConfiguration (sidecar-injector-e2e) exists at any time; every change
# is an update of that one object and gives its webhook a new name (gen<N>.…) so that the
# API server's asynchronous pick-up can be awaited precisely: before each scenario a
# server-side dry-run probe pod is polled until it comes back as the new configuration must
# make it (research note real-control-plane.md §4.3).
#
# Always stops what it started (serve processes by pid, the control plane by
# `control-plane.sh down`). Prints every check, the durations, and last exactly one line
# "N passed, M failed"; exits non-zero on any failure.
#
# Usage: tests/e2e/webhook.sh
#   WEBHOOK_E2E_KEEP=1        keep the temp dir (logs, CA, serve logs); kept anyway on failure
#   WEBHOOK_E2E_TIMEOUT=60    seconds for each poll (webhook live, pods from Deployments, ...)
#   WEBHOOK_E2E_BUDGET=480    seconds for all scenarios together; once spent, polls give up at once
#   SIDECAR_INJECTOR_BIN=...  use this binary instead of building target/release/sidecar-injector
# shellcheck disable=SC2317  # functions are called indirectly (trap, check, poll)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
WAIT=${WEBHOOK_E2E_TIMEOUT:-60}
BUDGET=${WEBHOOK_E2E_BUDGET:-480}   # seconds for everything after the control plane is up
DEADLINE=""                         # epoch seconds; set once the control plane is up
PASS=0
FAIL=0
T0=$(date +%s%N)
DIR=$(mktemp -d "${TMPDIR:-/tmp}/sidecar-e2e-webhook.XXXXXX")
CP_STARTED=""
declare -A SERVE_PID=()     # instance name -> pid
DURATIONS=()

E2E=webhook
# shellcheck source=tests/e2e/lib.sh
. "$HERE/lib.sh"

KEEP=${WEBHOOK_E2E_KEEP:-}
FAILURE_LOGS=("$DIR/logs/*.log" "$DIR/serve-*.log")
stop_processes() { local name; for name in "${!SERVE_PID[@]}"; do stop_pid "${SERVE_PID[$name]}"; done; }
trap e2e_finish EXIT
trap e2e_interrupted INT TERM


# ---------------------------------------------------------------------------- build + control plane
build_release || exit 1
command -v openssl >/dev/null || { bad "openssl is needed"; exit 1; }
command -v curl >/dev/null || { bad "curl is needed"; exit 1; }

log "control plane in $DIR"
control_plane_up "$BUDGET"

# ---------------------------------------------------------------------------- serve instances
CA=$DIR/webhook-ca.pem            # written by `serve --write-ca`, shared by both instances
declare -A SERVE_ADDR=() SERVE_MON=() SERVE_ARGS=()

# start_serve NAME [EXTRA ARGS...]: start (or restart, same ports) and wait for /readyz
start_serve() {
  local name=$1 pid start body=""; shift
  if [ -z "${SERVE_ADDR[$name]:-}" ]; then
    local a m; alloc_port a; alloc_port m
    SERVE_ADDR[$name]=$a; SERVE_MON[$name]=$m; SERVE_ARGS[$name]="$*"
  fi
  # shellcheck disable=SC2086  # SERVE_ARGS holds words without spaces
  "$BIN" serve --addr "127.0.0.1:${SERVE_ADDR[$name]}" --monitoring-addr "127.0.0.1:${SERVE_MON[$name]}" \
    --write-ca "$CA" --log-format json ${SERVE_ARGS[$name]} >> "$DIR/serve-$name.log" 2>&1 &
  pid=$!
  SERVE_PID[$name]=$pid
  start=$(date +%s)
  while :; do
    body=$(curl -sS --max-time 2 "http://127.0.0.1:${SERVE_MON[$name]}/readyz" 2>/dev/null || true)
    case "$body" in *'"ready":true'*) return 0 ;; esac
    alive "$pid" || { echo "serve $name exited; log:"; tail -n 20 "$DIR/serve-$name.log"; return 1; }
    if [ $(( $(date +%s) - start )) -ge "$WAIT" ] || [ "$(date +%s)" -ge "$DEADLINE" ]; then
      echo "serve $name not ready after $(( $(date +%s) - start )) s: $body"; return 1
    fi
    sleep 0.2
  done
}
stop_serve() {   # stop_serve NAME
  local pid=${SERVE_PID[$1]:-}
  [ -n "$pid" ] || return 0
  stop_pid "$pid"
  unset "SERVE_PID[$1]"
}
url_of() { echo "https://127.0.0.1:${SERVE_ADDR[$1]}/inject"; }

# ---------------------------------------------------------------------------- webhook configuration
GEN=0
WEBHOOK=""            # name of the current webhook (gen<N>.sidecar-injector.e2e.invalid)
# webhook URL SELECTOR(in|out) FAILURE(Fail|Ignore) VERSIONS CABUNDLE_B64 : create or replace
# the one MutatingWebhookConfiguration; the webhook gets a new name each time
webhook() {
  local url=$1 sel=$2 failure=$3 versions=$4 cab=$5 selector verb
  if [ "$sel" = in ]; then
    selector='matchLabels: {istio-injection: enabled}'
  else
    selector='matchExpressions: [{key: istio-injection, operator: NotIn, values: [disabled]}]'
  fi
  verb=create
  if K get mutatingwebhookconfiguration sidecar-injector-e2e >/dev/null 2>&1; then verb=replace; fi
  K "$verb" -f - <<EOF
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: sidecar-injector-e2e
webhooks:
- name: $WEBHOOK
  clientConfig:
    url: "$url"
    caBundle: "$cab"
  rules:
  - operations: [CREATE]
    apiGroups: [""]
    apiVersions: [v1]
    resources: [pods]
    scope: Namespaced
  namespaceSelector:
    $selector
  sideEffects: None
  admissionReviewVersions: $versions
  failurePolicy: $failure
  timeoutSeconds: 10
  reinvocationPolicy: Never
EOF
}
# configure DESCRIPTION ARGS... : `webhook ARGS...` as a check, with the next generation's name
configure() {
  local what=$1; shift
  GEN=$((GEN + 1)); WEBHOOK="gen$GEN.sidecar-injector.e2e.invalid"
  check "webhook config gen$GEN ($WEBHOOK): $what" webhook "$@"
}

# ---------------------------------------------------------------------------- pods
# pod_manifest NAME [KEY=VALUE annotation...]
pod_manifest() {
  local name=$1 kv; shift
  printf 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n' "$name"
  if [ $# -gt 0 ]; then
    printf '  annotations:\n'
    for kv in "$@"; do printf '    %s: "%s"\n' "${kv%%=*}" "${kv#*=}"; done
  fi
  printf 'spec:\n  containers:\n  - name: app\n    image: registry.invalid/pause:1\n'
}
# the names of the init containers and containers: "INIT...|CONTAINERS..."
SHAPE='{range .spec.initContainers[*]}{.name}{" "}{end}|{range .spec.containers[*]}{.name}{" "}{end}'
# shape_of "INIT|CONTAINERS" -> init (istio-proxy is an init container: native sidecar),
# container (istio-proxy is a regular container) or none
shape_of() {
  local init=${1%%|*} ctr=${1#*|}
  case " $init " in *" istio-proxy "*) echo init; return ;; esac
  case " $ctr " in *" istio-proxy "*) echo container; return ;; esac
  echo none
}
# try_pod MODE(create|dry) NS NAME [ANNOTATION...]: sets OUT (kubectl's output: the SHAPE of the
# pod the API server returned, or the error); returns kubectl's status
try_pod() {
  local mode=$1 ns=$2 name=$3 extra=(); shift 3
  [ "$mode" = dry ] && extra=(--dry-run=server)
  OUT=$(pod_manifest "$name" "$@" | K -n "$ns" create -f - "${extra[@]}" -o jsonpath="$SHAPE" 2>&1)
}
# expect_pod WANT MODE NS NAME [ANNOTATION...]: WANT is init|container|none|injected or
# error:EXTENDED-REGEX (creation must fail and the error match)
expect_pod() {
  local want=$1 rc=0 got; shift
  try_pod "$@" || rc=$?
  case "$want" in
    error:*)
      [ "$rc" -ne 0 ] || { echo "created, but an error was expected: $OUT"; return 1; }
      printf '%s' "$OUT" | tr '\n\t' '  ' | grep -Eq -- "${want#error:}" || { echo "error does not match /${want#error:}/: $OUT"; return 1; }
      ;;
    *)
      [ "$rc" -eq 0 ] || { echo "creation failed: $OUT"; return 1; }
      got=$(shape_of "$OUT")
      if [ "$want" = injected ]; then [ "$got" != none ] || { echo "not injected: $OUT"; return 1; }
      else [ "$got" = "$want" ] || { echo "expected $want, got $got: $OUT"; return 1; }
      fi
      ;;
  esac
}
# live DESCRIPTION WANT NS [ANNOTATION...]: poll a server-side dry-run probe pod until the API
# server's admission chain answers as the new configuration must
live() {
  local what=$1 want=$2 ns=$3 start; shift 3
  start=$(date +%s%N)
  if poll "$WAIT" expect_pod "$want" dry "$ns" probe "$@"; then
    ok "webhook gen$GEN live: $what (after $(secs_since "$start") s)"
  else
    expect_pod "$want" dry "$ns" probe "$@" | sed 's/^/    /' || true
    bad "webhook gen$GEN live within $WAIT s: $what"
  fi
}
no_pod() { ! K -n "$1" get pod "$2" >/dev/null 2>&1; }
# error_check DESCRIPTION ARGS... : `expect_pod ARGS...` as a check (run in this shell), then
# prints the API server's error message as the user sees it
error_check() {
  local what=$1; shift
  run "$what" expect_pod "$@"
  log "    kubectl said: $(printf '%s' "$OUT" | tr '\n\t' '  ')"
}

# ---------------------------------------------------------------------------- setup
check "create namespaces e2e-enabled / e2e-disabled (istio-injection=...) and e2e-plain" bash -c "
  '$DIR/kubectl' create namespace e2e-enabled && '$DIR/kubectl' label namespace e2e-enabled istio-injection=enabled &&
  '$DIR/kubectl' create namespace e2e-disabled && '$DIR/kubectl' label namespace e2e-disabled istio-injection=disabled &&
  '$DIR/kubectl' create namespace e2e-plain"
for ns in e2e-enabled e2e-disabled e2e-plain; do
  check "serviceaccount default exists in $ns (KCM)" poll "$WAIT" K -n "$ns" get serviceaccount default
done
t=$(date +%s%N)
run "serve A (embedded configuration, policy enabled) ready on 127.0.0.1 with --write-ca" start_serve A
run "serve B (--injector-config examples/injector-configmap.yaml, policy disabled) ready" \
  start_serve B --injector-config "$ROOT/examples/injector-configmap.yaml"
DURATIONS+=("serve A and B ready: $(secs_since "$t") s")
check "--write-ca wrote a CA certificate" openssl x509 -in "$CA" -noout -subject
CAB=$(base64 -w0 < "$CA")
log "serve A: $(url_of A) (pid ${SERVE_PID[A]:-?}), serve B: $(url_of B) (pid ${SERVE_PID[B]:-?})"

# ---------------------------------------------------------------------------- 1. decision table
ANN=sidecar.istio.io/inject
scenario "1 (decision table: selector x policy x namespace label x annotation)"
# table SEL POLICY: 18 real pod creations; the expected result is the troubleshooting page's table
table() {
  local sel=$1 pol=$2 ns match want name ann args
  for ns in e2e-enabled e2e-disabled e2e-plain; do
    match=no
    case "$sel:$ns" in in:e2e-enabled | out:e2e-enabled | out:e2e-plain) match=yes ;; esac
    for ann in true false absent; do
      want=none
      if [ "$match" = yes ]; then
        case "$pol:$ann" in enabled:true | enabled:absent | disabled:true) want=injected ;; esac
      fi
      args=(); [ "$ann" = absent ] || args=("$ANN=$ann")
      name="$sel-$pol-$ann"
      check "opt-$sel selector, policy $pol, ns $ns (selector matches: $match), annotation $ann -> $( [ "$want" = none ] && echo 'not injected' || echo injected)" \
        expect_pod "$want" create "$ns" "$name" "${args[@]}"
    done
  done
}
configure "opt-in selector -> serve A (policy enabled)" "$(url_of A)" in Fail '[v1]' "$CAB"
live "e2e-enabled pod injected (native sidecar)" init e2e-enabled
table in enabled
configure "opt-out selector -> serve A (policy enabled)" "$(url_of A)" out Fail '[v1]' "$CAB"
live "unlabelled namespace now injected" init e2e-plain
table out enabled
configure "opt-out selector -> serve B (policy disabled)" "$(url_of B)" out Fail '[v1]' "$CAB"
live "serve B's template (istio-proxy container) on inject=true" container e2e-plain "$ANN=true"
table out disabled
configure "opt-in selector -> serve B (policy disabled)" "$(url_of B)" in Fail '[v1]' "$CAB"
live "unlabelled namespace no longer injected" none e2e-plain "$ANN=true"
table in disabled
scenario_end

# ---------------------------------------------------------------------------- 2. Deployment annotation
scenario "2 (annotation on the Deployment's metadata vs its pod template; policy disabled)"
# deployment NS NAME WHERE(metadata|template|none)
deployment() {
  local ns=$1 name=$2 where=$3 meta="" tmpl=""
  [ "$where" = metadata ] && meta="  annotations: {$ANN: \"true\"}"
  [ "$where" = template ] && tmpl="      annotations: {$ANN: \"true\"}"
  K -n "$ns" create -f - <<EOF
apiVersion: apps/v1
kind: Deployment
metadata:
  name: $name
$meta
spec:
  replicas: 1
  selector: {matchLabels: {app: $name}}
  template:
    metadata:
      labels: {app: $name}
$tmpl
    spec:
      containers:
      - name: app
        image: registry.invalid/pause:1
EOF
}
# deployment_pod NS NAME WANT: the Deployment's (first) pod has shape WANT (init|container|none)
deployment_pod() {
  local s
  s=$(K -n "$1" get pods -l "app=$2" -o jsonpath="{range .items[0]}$SHAPE{end}") || return 1
  [ -n "$s" ] && [ "$(shape_of "$s")" = "$3" ]
}
owned_by_rs() {
  K -n "$1" get pods -l "app=$2" -o jsonpath='{.items[0].metadata.ownerReferences[0].kind}' | grep -qx ReplicaSet
}
log "current webhook: gen$GEN (opt-in -> serve B, policy disabled)"
check "create Deployment on-meta (annotation $ANN=true on the Deployment's metadata)" deployment e2e-enabled on-meta metadata
check "create Deployment on-template (annotation on spec.template.metadata)" deployment e2e-enabled on-template template
check "Deployment's metadata really carries the annotation" bash -c \
  "'$DIR/kubectl' -n e2e-enabled get deploy on-meta -o jsonpath='{.metadata.annotations}' | grep -q 'sidecar.istio.io/inject'"
check "on-meta: its ReplicaSet's pod is created and NOT injected" poll "$WAIT" deployment_pod e2e-enabled on-meta none
check "on-template: its ReplicaSet's pod is created and injected" poll "$WAIT" deployment_pod e2e-enabled on-template container
check "on-template: the injected pod is owned by a ReplicaSet (KCM)" owned_by_rs e2e-enabled on-template
scenario_end

# ---------------------------------------------------------------------------- 3. fail-closed
scenario "3 (fail-closed: serve stopped, failurePolicy Fail vs Ignore, recovery)"
configure "opt-in selector -> serve A, failurePolicy Fail" "$(url_of A)" in Fail '[v1]' "$CAB"
live "e2e-enabled pod injected by serve A" init e2e-enabled
run "stop serve A (SIGTERM, pid ${SERVE_PID[A]:-?})" stop_serve A
REFUSED="failed calling webhook \"$WEBHOOK\".*connection refused"
check "API server sees serve A gone (dry-run probe: connection refused)" \
  poll "$WAIT" expect_pod "error:$REFUSED" dry e2e-enabled probe
error_check "pod creation refused: failed calling webhook \"$WEBHOOK\" ... connection refused" \
  "error:Internal error occurred: $REFUSED" create e2e-enabled closed-1
check "the refused pod was not stored" no_pod e2e-enabled closed-1
check "pod creation in a namespace the selector does not match still works" expect_pod none create e2e-plain closed-plain
check "create Deployment fail-closed in e2e-enabled" deployment e2e-enabled fail-closed none
rs_failed_create() {   # a FailedCreate event of the Deployment's ReplicaSet names the webhook
  K -n e2e-enabled get events --field-selector reason=FailedCreate \
    -o jsonpath='{range .items[*]}{.involvedObject.kind}/{.involvedObject.name}: {.message}{"\n"}{end}' |
    grep -E "^ReplicaSet/fail-closed-[a-z0-9]+: .*$REFUSED"
}
check "ReplicaSet records FailedCreate naming \"$WEBHOOK\" and connection refused" poll "$WAIT" rs_failed_create
deploy_replica_failure() {
  K -n e2e-enabled get deploy fail-closed -o jsonpath='{.status.conditions[?(@.type=="ReplicaFailure")].message}' |
    grep -E "$REFUSED"
}
check "Deployment condition ReplicaFailure carries the webhook error" poll "$WAIT" deploy_replica_failure
check "no pod exists for Deployment fail-closed" bash -c \
  "[ -z \"\$('$DIR/kubectl' -n e2e-enabled get pods -l app=fail-closed -o name)\" ]"
run "restart serve A (same ports, reuses the CA from --write-ca)" start_serve A
check "the restarted serve A kept the CA (caBundle unchanged)" bash -c "[ \"\$(base64 -w0 < '$CA')\" = '$CAB' ]"
live "serve A back: the same configuration injects again" init e2e-enabled
check "serve back: pod creation works and injects again" expect_pod init create e2e-enabled back-1
check "Deployment fail-closed recovers by itself: the ReplicaSet's retry creates an injected pod" \
  poll "$WAIT" deployment_pod e2e-enabled fail-closed init
run "stop serve A again (pid ${SERVE_PID[A]:-?})" stop_serve A
check "API server sees serve A gone again (dry-run probe: connection refused)" \
  poll "$WAIT" expect_pod "error:$REFUSED" dry e2e-enabled probe
configure "same, failurePolicy Ignore (serve A stopped)" "$(url_of A)" in Ignore '[v1]' "$CAB"
live "dry-run probe admitted without sidecar" none e2e-enabled
check "failurePolicy Ignore: pod created, without sidecar (fail-open)" expect_pod none create e2e-enabled open-1
run "restart serve A" start_serve A
configure "opt-out selector -> serve A, failurePolicy Fail" "$(url_of A)" out Fail '[v1]' "$CAB"
live "injects again (unlabelled namespace too)" init e2e-plain
check "pod creation injects" expect_pod init create e2e-enabled back-2
check "create Deployment after-recovery" deployment e2e-enabled after-recovery none
check "after-recovery: its ReplicaSet's pod is created and injected" poll "$WAIT" deployment_pod e2e-enabled after-recovery init
scenario_end

# ---------------------------------------------------------------------------- 4. TLS
scenario "4 (TLS: wrong / empty caBundle -> x509 unknown authority; fixed caBundle works)"
check "generate another self-signed CA with openssl" openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
  -nodes -keyout "$DIR/wrong-ca.key" -out "$DIR/wrong-ca.pem" -days 1 -subj /CN=wrong-ca.e2e.invalid \
  -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign
WRONG=$(base64 -w0 < "$DIR/wrong-ca.pem")
X509='x509: certificate signed by unknown authority'
configure "opt-in -> serve A, caBundle = a different CA" "$(url_of A)" in Fail '[v1]' "$WRONG"
live "dry-run probe refused by gen$GEN with an x509 error" "error:\"$WEBHOOK\".*$X509" e2e-enabled
error_check "wrong caBundle: pod creation fails: failed calling webhook \"$WEBHOOK\" ... $X509" \
  "error:failed calling webhook \"$WEBHOOK\": failed to call webhook: Post \"$(url_of A)\?timeout=10s\": .*$X509" create e2e-enabled tls-wrong
check "the refused pod was not stored" no_pod e2e-enabled tls-wrong
configure "opt-in -> serve A, caBundle empty" "$(url_of A)" in Fail '[v1]' ""
live "dry-run probe refused by gen$GEN with an x509 error" "error:\"$WEBHOOK\".*$X509" e2e-enabled
error_check "empty caBundle: pod creation fails with $X509" \
  "error:failed calling webhook \"$WEBHOOK\".*$X509" create e2e-enabled tls-empty
configure "opt-in -> serve A, caBundle = the CA serve wrote" "$(url_of A)" in Fail '[v1]' "$CAB"
live "e2e-enabled pod injected" init e2e-enabled
check "fixed caBundle: pod creation works and injects" expect_pod init create e2e-enabled tls-fixed
scenario_end

# ---------------------------------------------------------------------------- 5. review versions, dry-run
scenario "5 (admissionReviewVersions v1beta1 and v1; server-side dry-run)"
configure "opt-out -> serve A, admissionReviewVersions [v1beta1]" "$(url_of A)" out Fail '[v1beta1]' "$CAB"
live "unlabelled namespace injected via an admission.k8s.io/v1beta1 review" init e2e-plain
check "[v1beta1]: pod injected" expect_pod init create e2e-plain review-v1beta1
check "[v1beta1]: webhook config really lists only v1beta1" bash -c \
  "[ \"\$('$DIR/kubectl' get mutatingwebhookconfiguration sidecar-injector-e2e -o jsonpath='{.webhooks[0].admissionReviewVersions}')\" = '[\"v1beta1\"]' ]"
configure "opt-in -> serve A, admissionReviewVersions [v1]" "$(url_of A)" in Fail '[v1]' "$CAB"
live "unlabelled namespace no longer injected" none e2e-plain
check "[v1]: pod injected" expect_pod init create e2e-enabled review-v1
dry_run_injected() {
  local out
  out=$(pod_manifest dry-1 | K -n e2e-enabled create --dry-run=server -o json -f -) || return 1
  printf '%s' "$out" | grep -q '"name": "istio-proxy"' || { echo "no istio-proxy: $out"; return 1; }
  printf '%s' "$out" | grep -q '"sidecar.istio.io/status"' || { echo "no status annotation: $out"; return 1; }
}
check "server-side dry-run (-o json) returns the injected pod (istio-proxy, sidecar.istio.io/status)" dry_run_injected
check "the dry-run pod was not stored" no_pod e2e-enabled dry-1
scenario_end

# ---------------------------------------------------------------------------- 6. rejected injection
scenario "6 (invalid annotation value -> clear API error)"
BAD=traffic.sidecar.istio.io/includeOutboundIPRanges
error_check "pod with $BAD: \"bad\" refused: admission webhook \"$WEBHOOK\" denied ... invalid value ... $BAD" \
  "error:admission webhook \"$WEBHOOK\" denied the request: .*invalid value 'bad' for annotation '$BAD'" \
  create e2e-enabled bad-annotation "$BAD=bad"
check "the refused pod was not stored" no_pod e2e-enabled bad-annotation
check "the same pod without that annotation is injected" expect_pod init create e2e-enabled good-annotation
scenario_end

# ---------------------------------------------------------------------------- 7. outcome cache
scenario "7 (a Deployment's replicas, each with a token volume of its own name, answered from the outcome cache)"
REPLICAS=6
cache_hits() {
  curl -sS --max-time 5 "http://127.0.0.1:${SERVE_MON[A]}/metrics" 2>/dev/null \
    | awk '/^sidecar_injection_cache_hits_total /{n = $2} END {print n + 0}' || echo 0
}
HITS_BEFORE=$(cache_hits)
replicas_deployment() {
  K -n e2e-enabled create -f - <<EOF
apiVersion: apps/v1
kind: Deployment
metadata:
  name: replicas
spec:
  replicas: $REPLICAS
  selector: {matchLabels: {app: replicas}}
  template:
    metadata:
      labels: {app: replicas}
    spec:
      containers:
      - name: app
        image: registry.invalid/pause:1
EOF
}
# every replica is created, injected, and mounts the token volume of its own name (a patch
# answered from the cache with another pod's name would leave a mount without its volume, which
# the API server refuses)
replicas_own_their_volume() {
  K -n e2e-enabled get pods -l app=replicas -o json | python3 -c '
import json, sys
pods = json.load(sys.stdin)["items"]
names = []
for pod in pods:
    spec = pod["spec"]
    tokens = [v["name"] for v in spec.get("volumes", []) if v["name"].startswith("kube-api-access-")]
    app = [c for c in spec["containers"] if c["name"] == "app"][0]
    mounts = [m["name"] for m in app.get("volumeMounts", []) if m["name"].startswith("kube-api-access-")]
    proxy = [c["name"] for c in spec.get("initContainers", []) + spec["containers"] if c["name"] == "istio-proxy"]
    if len(tokens) != 1 or mounts != tokens or not proxy:
        sys.exit("%s: token volumes %s, app mounts %s, istio-proxy %s" % (pod["metadata"]["name"], tokens, mounts, proxy))
    names.append(tokens[0])
if len(set(names)) != int(sys.argv[1]):
    sys.exit("%d pods, token volumes %s" % (len(pods), names))
' "$REPLICAS"
}
check "create Deployment replicas ($REPLICAS replicas; ServiceAccount admission mounts each its own token volume)" replicas_deployment
check "all $REPLICAS replicas created and injected, each mounting its own kube-api-access-* volume" \
  poll "$WAIT" replicas_own_their_volume
HITS=$(( $(cache_hits) - HITS_BEFORE ))
check "serve A answered $HITS of the $REPLICAS replicas from its outcome cache (at least $((REPLICAS - 2)) expected)" \
  test "$HITS" -ge $((REPLICAS - 2))
scenario_end

check "serve A and B still running" bash -c "kill -0 ${SERVE_PID[A]:-none} && kill -0 ${SERVE_PID[B]:-none}"
check "delete the webhook configuration" K delete mutatingwebhookconfiguration sidecar-injector-e2e
exit 0
