#!/usr/bin/env bash
# Where users already look, end to end: the chart's API-server-side features and the injector's
# answers through the real kube-apiserver of tests/e2e/control-plane.sh, started with an audit
# policy and a tracing configuration that exports to a loopback OTLP receiver this script runs.
#
#   1. warnings at `kubectl apply`: with the chart installed (its ValidatingAdmissionPolicies,
#      Warn and Audit), each mistaken object (the inject setting on a Deployment's, StatefulSet's,
#      DaemonSet's, ReplicaSet's, Job's and CronJob's own metadata; an inject value other than
#      true/false; a label hiding the annotation; host network or an ignored namespace asking for
#      a sidecar; an annotation without effect; istio-injection=enable; both istio-injection and
#      istio.io/rev) prints its warning on kubectl's stderr, in the injector's words, and is
#      created; a correct one prints none
#   2. answers that carry their reason: the injector's warnings reach kubectl (a deprecated
#      annotation form, an ignored inject value); the audit log holds every admission's decision,
#      reason and revision under the webhook's name, and the policies' warnings
#   3. admissions in the trace: the API server's call to the webhook carries its traceparent, and
#      the injector's admission span (exported with `serve --otlp-endpoint`) has the API server's
#      trace id and a span of the API server as its parent; decode and engine are its children,
#      the engine's stages (decide, prepare, render, merge, post, patch) the engine's
#   4. fewer calls: with no injector running, the pods the chart's matchConditions skip (host
#      network, the inject annotation "false" without a label) are created, and every other pod
#      in scope is refused as before (no choice, "true", a label "true" over an annotation
#      "false", an earlier injection's status annotation)
#
# The injector is `serve` in file mode on 127.0.0.1 (--write-ca), registered through the chart's
# own MutatingWebhookConfiguration (webhook.url, the caBundle patched in). Nothing dials a
# Service or pod IP.
#
# Prints every check and last exactly one line "N passed, M failed"; exits non-zero on failure.
#   NATIVE_E2E_KEEP=1        keep the temp dir (logs, audit log, spans); kept anyway on failure
#   NATIVE_E2E_TIMEOUT=60    seconds per poll
#   NATIVE_E2E_BUDGET=400    seconds for everything after the control plane is up
#   SIDECAR_INJECTOR_BIN=... use this binary instead of building target/release/sidecar-injector
#   HELM=...                 use this helm instead of building it (tools/helm/build.sh)
#   OTLP_RECEIVER=...        use this receiver instead of building injector-server's example
# shellcheck disable=SC2317
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
E2E=native
WAIT=${NATIVE_E2E_TIMEOUT:-60}
DEADLINE=""
T0=$(date +%s%N)
DIR=$(mktemp -d "${TMPDIR:-/tmp}/sidecar-e2e-native.XXXXXX")
CP_STARTED=""
SERVE_PID=""
RECEIVER_PID=""
DURATIONS=()
CHART=$ROOT/deploy/helm/sidecar-injector
NS=sidecar-injector
REL=sidecar-injector
# shellcheck source=tests/e2e/lib.sh
. "$HERE/lib.sh"

KEEP=${NATIVE_E2E_KEEP:-}
FAILURE_LOGS=("$DIR/logs/kube-apiserver.log" "$DIR/serve.log" "$DIR/receiver.err")
stop_processes() { stop_serve; [ -n "$RECEIVER_PID" ] && stop_pid "$RECEIVER_PID"; RECEIVER_PID=""; }
trap e2e_finish EXIT
trap e2e_interrupted INT TERM

# ---------------------------------------------------------------------------- set-up
build_release || exit 1
command -v python3 >/dev/null || { bad "python3 is needed"; exit 1; }
if [ -z "${HELM:-}" ]; then
  if HELM=$("$ROOT/tools/helm/build.sh" 2> "$DIR/helm-build.log" | tail -n 1) && [ -x "$HELM" ]; then
    ok "helm $("$HELM" version --template '{{.Version}}') (tools/helm/build.sh)"
  else
    bad "tools/helm/build.sh"; tail -n 20 "$DIR/helm-build.log" | sed 's/^/    /'; exit 1
  fi
fi
export HELM_CACHE_HOME=$DIR/helm/cache HELM_CONFIG_HOME=$DIR/helm/config HELM_DATA_HOME=$DIR/helm/data
if [ -z "${OTLP_RECEIVER:-}" ]; then
  OTLP_RECEIVER=$ROOT/target/debug/examples/otlp_receiver
  if (cd "$ROOT" && cargo build --locked -p injector-server --example otlp_receiver) > "$DIR/receiver-build.log" 2>&1; then
    ok "cargo build -p injector-server --example otlp_receiver"
  else
    bad "cargo build -p injector-server --example otlp_receiver"; tail -n 20 "$DIR/receiver-build.log" | sed 's/^/    /'; exit 1
  fi
fi

# The loopback OTLP/gRPC receiver: the API server and the injector export their spans to it.
SPANS=$DIR/spans.jsonl
start_receiver() {
  "$OTLP_RECEIVER" 127.0.0.1:0 > "$SPANS" 2> "$DIR/receiver.err" &
  RECEIVER_PID=$!
  poll 10 grep -q listening "$SPANS" || { echo "the receiver did not start"; return 1; }
  RECEIVER_ADDR=$(head -n 1 "$SPANS" | python3 -c 'import json, sys; print(json.load(sys.stdin)["listening"])')
}
run "OTLP receiver listening on 127.0.0.1" start_receiver
[ -n "${RECEIVER_ADDR:-}" ] || exit 1

# Audit: every write at Metadata (annotations: the webhook's decision, the policies' warnings).
cat > "$DIR/audit-policy.yaml" <<'EOF'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  verbs: [create, update, patch]
- level: None
EOF
# Tracing: every request sampled, spans to the receiver (OTLP/gRPC).
cat > "$DIR/tracing.yaml" <<EOF
apiVersion: apiserver.config.k8s.io/v1beta1
kind: TracingConfiguration
endpoint: $RECEIVER_ADDR
samplingRatePerMillion: 1000000
EOF
AUDIT=$DIR/audit.log
export KUBE_APISERVER_EXTRA_ARGS="--audit-policy-file=$DIR/audit-policy.yaml --audit-log-path=$AUDIT --audit-log-mode=blocking --tracing-config-file=$DIR/tracing.yaml"
control_plane_up "${NATIVE_E2E_BUDGET:-400}"
H() { "$HELM" --kubeconfig "$DIR/kubeconfig" "$@"; }

# The injector: file mode, embedded configuration (policy enabled), spans to the receiver.
CA=$DIR/webhook-ca.pem
alloc_port SERVE_PORT; alloc_port MON_PORT
start_serve() {
  "$BIN" serve --addr "127.0.0.1:$SERVE_PORT" --monitoring-addr "127.0.0.1:$MON_PORT" --write-ca "$CA" \
    --log-format json --otlp-endpoint "http://$RECEIVER_ADDR" >> "$DIR/serve.log" 2>&1 &
  SERVE_PID=$!
  poll "$WAIT" sh -c "curl -sS --max-time 2 http://127.0.0.1:$MON_PORT/readyz | grep -q '\"ready\":true'" ||
    { echo "serve not ready"; tail -n 20 "$DIR/serve.log"; return 1; }
}
stop_serve() { [ -n "$SERVE_PID" ] && stop_pid "$SERVE_PID"; SERVE_PID=""; }
run "serve --otlp-endpoint http://$RECEIVER_ADDR ready on 127.0.0.1:$SERVE_PORT" start_serve

# The chart, its webhook by url to serve, the caBundle serve's CA.
run "helm install (webhook.url to serve, matchConditions and warning policies on by default)" \
  H install "$REL" "$CHART" --namespace "$NS" --create-namespace --set "webhook.url=https://127.0.0.1:$SERVE_PORT/inject"
WEBHOOK=$(K get mutatingwebhookconfiguration -l "app.kubernetes.io/instance=$REL" -o jsonpath='{.items[0].metadata.name}')
HOOK=$(K get mutatingwebhookconfiguration "$WEBHOOK" -o jsonpath='{.webhooks[0].name}')
check "the webhook $HOOK has the chart's matchConditions" sh -c \
  "'$DIR/kubectl' get mutatingwebhookconfiguration '$WEBHOOK' -o jsonpath='{.webhooks[0].matchConditions[*].name}' | grep -qx 'not-host-network not-opted-out not-ignored-namespace'"
check "caBundle set to serve's CA" K patch mutatingwebhookconfiguration "$WEBHOOK" --type json \
  -p "[{\"op\":\"add\",\"path\":\"/webhooks/0/clientConfig/caBundle\",\"value\":\"$(base64 -w0 < "$CA")\"}]"
check "namespace shop labelled istio-injection=enabled" sh -c "'$DIR/kubectl' create namespace shop && '$DIR/kubectl' label namespace shop istio-injection=enabled"

# pod NAME [LABELS-JSON] [ANNOTATIONS-JSON] [HOSTNETWORK]: a Pod manifest in shop
pod() {
  printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s","namespace":"shop","labels":%s,"annotations":%s},"spec":{"hostNetwork":%s,"containers":[{"name":"app","image":"registry.invalid/app:1"}]}}' \
    "$1" "${2:-{\}}" "${3:-{\}}" "${4:-false}"
}
injected() { [ -n "$(K -n shop get pod "$1" -o jsonpath='{.spec.initContainers[?(@.name=="istio-proxy")].name}{.spec.containers[?(@.name=="istio-proxy")].name}')" ]; }
webhook_answers() { pod probe-$RANDOM | K create --dry-run=server -o jsonpath='{.metadata.annotations.sidecar\.istio\.io/status}' -f - | grep -q istio-proxy; }
check "the API server calls serve through the chart's webhook (a dry-run pod comes back injected)" poll "$WAIT" webhook_answers

# ---------------------------------------------------------------------------- 1
scenario "1: warnings at kubectl apply, from the chart's admission policies"
# workload KIND NAME OWN-ANNOTATIONS TEMPLATE-LABELS TEMPLATE-ANNOTATIONS [HOSTNETWORK] [NAMESPACE] [OWN-LABELS]
workload() {
  local kind=$1 name=$2 own=$3 labels=$4 annotations=$5 host=${6:-false} ns=${7:-shop} ownlabels=${8:-{\}} group=apps/v1 spec
  local template="{\"metadata\":{\"labels\":$(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); d["app"]=sys.argv[2]; print(json.dumps(d))' "$labels" "$name"),\"annotations\":$annotations},\"spec\":{\"hostNetwork\":$host,\"restartPolicy\":\"$( [ "$kind" = Job ] || [ "$kind" = CronJob ] && echo Never || echo Always)\",\"containers\":[{\"name\":\"app\",\"image\":\"registry.invalid/app:1\"}]}}"
  local selector="{\"matchLabels\":{\"app\":\"$name\"}}"
  case $kind in
    Job) group=batch/v1; spec="{\"template\":$template}" ;;
    CronJob) group=batch/v1; spec="{\"schedule\":\"0 0 1 1 *\",\"jobTemplate\":{\"spec\":{\"template\":$template}}}" ;;
    *) spec="{\"replicas\":0,\"selector\":$selector,\"template\":$template}"
       [ "$kind" = DaemonSet ] && spec="{\"selector\":$selector,\"template\":$template}"
       [ "$kind" = StatefulSet ] && spec="{\"replicas\":0,\"serviceName\":\"$name\",\"selector\":$selector,\"template\":$template}" ;;
  esac
  printf '{"apiVersion":"%s","kind":"%s","metadata":{"name":"%s","namespace":"%s","labels":%s,"annotations":%s},"spec":%s}' \
    "$group" "$kind" "$name" "$ns" "$ownlabels" "$own" "$spec"
}
# Each message, in the injector's words (injector-core's mistakes and ignored_annotations).
M_MISPLACED='sidecar.istio.io/inject has no effect here; move it to spec.template.metadata (the injector sees only the pods, which are built from the pod template)'
M_MISPLACED_CRON='sidecar.istio.io/inject has no effect here; move it to spec.jobTemplate.spec.template.metadata'
M_VALUE='sidecar.istio.io/inject on the pod template is neither "true" nor "false": the injector ignores it and applies its default policy'
M_HIDES='the pod template has both the label and the annotation sidecar.istio.io/inject, with different values: the label wins and the annotation is ignored'
M_HOST='but uses the host network (spec.hostNetwork: true): such pods are never injected'
M_IGNORED_NS='but its namespace is one the injector always ignores'
M_NO_EFFECT='annotation sidecar.istio.io/enableCoreDump has no effect'
M_NS_VALUE='the label istio-injection is neither "enabled" nor "disabled", the only values the injection webhooks act on: use one of them'
M_NS_BOTH='the namespace has both istio-injection and istio.io/rev: istio-injection takes precedence and istio.io/rev is ignored; keep only one'
# The policies take effect asynchronously: wait until a server-side dry run warns.
policies_active() {
  workload Deployment probe '{"sidecar.istio.io/inject":"true"}' '{}' '{}' | K apply --dry-run=server -f - 2>&1 >/dev/null | grep -qF "$M_MISPLACED"
}
check "the warning policies are in force (a server-side dry run warns)" poll "$WAIT" policies_active
# applied WHAT KIND/NAME NAMESPACE MESSAGE: kubectl apply of stdin printed MESSAGE on stderr, and the object exists
applied() {
  local what=$1 object=$2 ns=$3 message=$4 manifest
  manifest=$(cat)
  if ! printf '%s' "$manifest" | K apply -f - > "$DIR/apply.out" 2> "$DIR/apply.err"; then
    bad "$what: kubectl apply failed"; sed 's/^/    /' "$DIR/apply.err"; return
  fi
  if [ -n "$message" ] && ! grep -F "Warning: " "$DIR/apply.err" | grep -qF "$message"; then
    bad "$what: no warning \"$message\" on kubectl's stderr"; sed 's/^/    /' "$DIR/apply.err"; return
  fi
  if [ -z "$message" ] && grep -q "Warning: " "$DIR/apply.err"; then
    bad "$what: warned although nothing is wrong"; sed 's/^/    /' "$DIR/apply.err"; return
  fi
  if ! K ${ns:+-n "$ns"} get "$object" >/dev/null 2>&1; then bad "$what: $object was not created"; return; fi
  ok "$what${message:+: $(grep -F "Warning: " "$DIR/apply.err" | grep -F "$message" | head -n 1 | sed "s/^Warning: Validation failed for ValidatingAdmissionPolicy '\([^']*\)' with binding '[^']*': /[\1] /" | cut -c1-150)…}"
}
for kind in Deployment StatefulSet DaemonSet ReplicaSet Job; do
  lower=$(echo "$kind" | tr '[:upper:]' '[:lower:]')
  workload "$kind" "own-$lower" '{"sidecar.istio.io/inject":"true"}' '{}' '{}' |
    applied "$kind with sidecar.istio.io/inject on its own metadata" "$lower/own-$lower" shop "$M_MISPLACED"
done
workload CronJob own-cronjob '{}' '{}' '{}' false shop '{"sidecar.istio.io/inject":"true"}' |
  applied "CronJob with the sidecar.istio.io/inject label on its own metadata" cronjob/own-cronjob shop "$M_MISPLACED_CRON"
workload Deployment value-yes '{}' '{}' '{"sidecar.istio.io/inject":"yes"}' |
  applied "pod template with sidecar.istio.io/inject: yes" deployment/value-yes shop "$M_VALUE"
workload Deployment label-hides '{}' '{"sidecar.istio.io/inject":"true"}' '{"sidecar.istio.io/inject":"false"}' |
  applied "pod template whose label hides an annotation of another value" deployment/label-hides shop "$M_HIDES"
workload Deployment host-asks '{}' '{"sidecar.istio.io/inject":"true"}' '{}' true |
  applied "pod template on the host network asking for a sidecar" deployment/host-asks shop "$M_HOST"
workload Deployment public-asks '{}' '{"sidecar.istio.io/inject":"true"}' '{}' false kube-public |
  applied "pod template in kube-public asking for a sidecar" deployment/public-asks kube-public "$M_IGNORED_NS"
workload Deployment core-dump '{}' '{}' '{"sidecar.istio.io/enableCoreDump":"true"}' |
  applied "pod template with an annotation the injector does not act on" deployment/core-dump shop "$M_NO_EFFECT"
workload Deployment correct '{}' '{"sidecar.istio.io/inject":"true"}' '{}' |
  applied "a correct Deployment: no warning" deployment/correct shop ""
echo '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"typo","labels":{"istio-injection":"enable"}}}' |
  applied "Namespace labelled istio-injection=enable" namespace/typo "" "$M_NS_VALUE"
echo '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"both","labels":{"istio-injection":"enabled","istio.io/rev":"canary"}}}' |
  applied "Namespace with both istio-injection and istio.io/rev" namespace/both "" "$M_NS_BOTH"
label_warns() { K label namespace shop istio.io/rev=canary 2>&1 >/dev/null | grep -qF "$M_NS_BOTH"; }
check "kubectl label adding istio.io/rev to an istio-injection namespace warns too" label_warns
K label namespace shop istio.io/rev- >/dev/null 2>&1 || true
scenario_end

# ---------------------------------------------------------------------------- 2
scenario "2: the injector's warnings on kubectl, its decisions in the audit log"
created_warns() {   # created_warns NAME MESSAGE LABELS ANNOTATIONS
  pod "$1" "$3" "$4" | K create -f - 2> "$DIR/create.err" >/dev/null || { cat "$DIR/create.err"; return 1; }
  grep -F "Warning: " "$DIR/create.err" | grep -qF "$2" || { cat "$DIR/create.err"; return 1; }
}
check "annotation sidecar.istio.io/inject: \"yes\": kubectl prints the injector's warning that it was ignored (and injected by policy)" \
  created_warns ann-yes 'sidecar.istio.io/inject annotation value "yes" is neither "true" nor "false": ignored, the injector'"'"'s policy decided (injected)' '{}' '{"sidecar.istio.io/inject":"yes"}'
check "the annotation form: kubectl prints that it is deprecated in favor of the label" \
  created_warns ann-true 'the annotation sidecar.istio.io/inject is deprecated in favor of the label' '{}' '{"sidecar.istio.io/inject":"true"}'
both_injected() { injected ann-yes && injected ann-true; }
check "both pods were injected" both_injected
plain_created() { pod plain | K create -f - >/dev/null && injected plain; }
check "a plain pod in shop is injected" plain_created
# audited POD DECISION REASON: the audit log's create of POD holds the webhook's annotations
audited() {
  python3 - "$AUDIT" "$HOOK" "$@" <<'PY'
import json, sys
path, hook, pod, decision, reason = sys.argv[1:]
for line in open(path):
    event = json.loads(line)
    ref = event.get("objectRef") or {}
    if event.get("verb") != "create" or ref.get("resource") != "pods" or ref.get("name") != pod or ref.get("subresource"):
        continue
    if event.get("stage") != "ResponseComplete":
        continue
    got = {k[len(hook) + 1:]: v for k, v in (event.get("annotations") or {}).items() if k.startswith(hook + "/")}
    want = {"decision": decision, "reason": reason, "revision": "default"}
    if reason.endswith("..."):
        assert got["reason"].startswith(reason[:-3]), (got, want)
        got["reason"] = reason
    assert got == want, (got, want)
    print(got)
    sys.exit(0)
sys.exit(f"no audit event for the creation of pod {pod}")
PY
}
check "audit log: pod plain's creation holds $HOOK/decision=injected, reason=defaultPolicy, revision=default" poll "$WAIT" audited plain injected defaultPolicy
denied_created() {
  local out
  out=$(pod denied '{}' '{"traffic.sidecar.istio.io/includeOutboundIPRanges":"bad"}' | K create -f - 2>&1) && return 1
  grep -q "denied the request" <<< "$out"
}
check "a pod the injector refuses (includeOutboundIPRanges: bad) is not created" denied_created
check "audit log: its refusal holds decision=denied and the injector's message as the reason" poll "$WAIT" audited denied denied "failed to run injection template: 1 error occurred:..."
policy_warning_audited() {
  python3 - "$AUDIT" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    event = json.loads(line)
    ref = event.get("objectRef") or {}
    if ref.get("resource") == "deployments" and ref.get("name") == "value-yes" and event.get("verb") == "create":
        failures = (event.get("annotations") or {}).get("validation.policy.admission.k8s.io/validation_failure", "")
        assert "neither" in failures, event.get("annotations")
        sys.exit(0)
sys.exit("no audited creation of deployment value-yes")
PY
}
check "audit log: the policy's warning on deployment value-yes (validation_failure annotation)" poll "$WAIT" policy_warning_audited
scenario_end

# ---------------------------------------------------------------------------- 3
scenario "3: the admission in the API server's trace"
traced_created() { pod traced | K create -f - >/dev/null && injected traced; }
check "a pod created for the trace is injected" traced_created
# joined: the injector's admission span of pod `traced` is in a trace of the API server's, its
# parent one of the API server's spans; decode and engine are its children, the six stages the
# engine's
joined() {
  python3 - "$SPANS" <<'PY'
import json, sys
spans = [json.loads(l) for l in open(sys.argv[1]) if l.startswith('{"service"')]
ours = [s for s in spans if s["service"] == "sidecar-injector" and s["name"] == "admission" and s["attributes"].get("pod") == "traced"]
assert ours, "no admission span for pod traced yet"
admission = ours[-1]
apiserver = {s["spanId"]: s for s in spans if s["service"] == "apiserver" and s["traceId"] == admission["traceId"]}
assert apiserver, f"no API server span in trace {admission['traceId']}"
assert admission["parentSpanId"] in apiserver, (admission["parentSpanId"], sorted(apiserver))
children = {s["name"]: s for s in spans if s["parentSpanId"] == admission["spanId"]}
assert {"decode", "engine"} <= set(children), sorted(children)
engine = children["engine"]
stages = {s["name"]: s for s in spans if s["parentSpanId"] == engine["spanId"]}
assert set(stages) == {"decide", "prepare", "render", "merge", "post", "patch"}, sorted(stages)
assert stages["render"]["attributes"].get("source") in ("rendered", "kept", "shared"), stages["render"]
assert engine["attributes"].get("cache") == "miss", engine["attributes"]
assert isinstance(engine["attributes"].get("engine_cache"), bool), engine["attributes"]
assert admission["attributes"]["decision"] == "injected", admission["attributes"]
parent = apiserver[admission["parentSpanId"]]
print(f"trace {admission['traceId']}: admission span {admission['spanId']} under the API server's {parent['name']!r} "
      f"({len(apiserver)} API server spans in the trace); children {sorted(children)}; engine stages {sorted(stages)}, "
      f"renders {stages['render']['attributes'].get('source')}, engine attributes {engine['attributes']}")
PY
}
check "the admission span has the API server's trace id and an API server span as its parent; decode and engine are its children, the engine's stages theirs" poll "$WAIT" joined
joined > "$DIR/joined.out" 2>&1 && log "$(cat "$DIR/joined.out")"
scenario_end

# ---------------------------------------------------------------------------- 4
scenario "4: while no injector runs, the pods the matchConditions skip are created, the rest refused"
run "serve stopped (SIGTERM)" stop_serve
refused_now() { ! pod refused-probe-$RANDOM | K create --dry-run=server -f - >/dev/null 2>&1; }
check "a plain pod is refused (the webhook fails closed)" poll "$WAIT" refused_now
created_uninjected() {   # created_uninjected NAME LABELS ANNOTATIONS HOSTNETWORK
  pod "$@" | K create -f - >/dev/null && ! injected "$1"
}
refused() {   # refused NAME LABELS ANNOTATIONS: creation fails calling the webhook, nothing stored
  local out
  out=$(pod "$@" | K create -f - 2>&1) && { echo "created: $out"; return 1; }
  grep -q "failed calling webhook \"$HOOK\"" <<< "$out" || { echo "$out"; return 1; }
  ! K -n shop get pod "$1" >/dev/null 2>&1
}
check "hostNetwork pod: created, not injected (not-host-network)" created_uninjected down-host '{}' '{}' true
check "annotation sidecar.istio.io/inject: false: created, not injected (not-opted-out)" created_uninjected down-ann-false '{}' '{"sidecar.istio.io/inject":"false"}'
check "label sidecar.istio.io/inject=false: created, not injected (the objectSelector)" created_uninjected down-label-false '{"sidecar.istio.io/inject":"false"}' '{}'
check "no choice: refused" refused down-plain '{}' '{}'
check "annotation \"true\": refused" refused down-ann-true '{}' '{"sidecar.istio.io/inject":"true"}'
check "label \"true\" over annotation \"false\" (the label wins): refused" refused down-label-wins '{"sidecar.istio.io/inject":"true"}' '{"sidecar.istio.io/inject":"false"}'
check "an earlier injection's status annotation (injected again): refused" refused down-status '{}' '{"sidecar.istio.io/status":"{\"containers\":[\"istio-proxy\"]}"}'
check "annotation \"yes\" (the policy decides): refused" refused down-ann-yes '{}' '{"sidecar.istio.io/inject":"yes"}'
scenario_end
