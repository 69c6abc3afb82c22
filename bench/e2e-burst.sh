#!/usr/bin/env bash
# End to end through the real API server: the latency injection adds to pod creation.
#
# On the test control plane (tests/e2e/control-plane.sh: etcd, kube-apiserver and
# kube-controller-manager on 127.0.0.1; no kubelet, admission needs none) this registers in turn,
# as the one MutatingWebhookConfiguration (url: https://127.0.0.1:PORT/inject + caBundle, pods,
# CREATE, namespaceSelector burst-injection=enabled, failurePolicy Fail, timeout 10 s):
#
#   none     no webhook at all
#   canned   our server answering, without running the engine, the patch bytes our engine gives
#            for the burst's pod (crates/injector-server/examples/fake_injector.rs --patch-from):
#            the API server's own cost of calling a webhook and applying that patch, the limit
#   cached   `sidecar-injector serve` (outcome cache on)
#   engine   `sidecar-injector serve --outcome-cache-mib 0`
#   istio    Istio's injector (tools/istio-webhook serve: its real inject.NewWebhook over TLS)
#
# and, to take the limit apart (not run unless named in VARIANTS; bench/patch_variants.py):
#
#   tiny     the canned server answering a one-operation patch (the status annotation): the
#            API server's cost of the webhook call alone, the pod hardly grows
#   coarse   the canned server answering the same injected pod as one add/replace per changed
#            field of metadata and spec (whole arrays), instead of the engine's fine-grained ops
#
# Both injectors read Istio's default chart configuration ($SIDECAR_INJECTOR_SHARED/istio/derived,
# as bench/side-by-side.sh), native sidecars on. For each variant, two bursts of COUNT pods, each
# in a fresh namespace that is deleted (and awaited) afterwards:
#
#   post        COUNT distinct pods (names and an env var differ) POSTed by PARALLEL workers over
#               one HTTP/2 connection (tools/pod-burst, as client-go does); each POST timed
#   deployment  a Deployment scaled 0 -> COUNT: the ReplicaSet controller creates the pods (its
#               client limits raised to --kube-api-qps=1000 --kube-api-burst=2000, so admission,
#               not the controller's rate limiter, sets the pace); wall time to the COUNT-th pod
#   deployment-token  the same Deployment with the ServiceAccount token mounted, as by default:
#               ServiceAccount admission names each pod's token volume kube-api-access-<random>,
#               so no two pods reach the webhook identical (not run for the canned variants,
#               whose one patch lists fixed volume names)
#
# Latency of each pod create as the API server saw it comes from its audit log (requestReceived to
# ResponseComplete, microsecond stamps; pod creates only, batch mode); its /metrics are read
# before and after each burst and differenced (apiserver_request_duration_seconds for POST pods,
# apiserver_admission_webhook_admission_duration_seconds for the webhook's calls). During each
# burst the webhook's established connections are sampled with ss. Rounds alternate the variants
# (every other round in reverse order) so that the machine's load hits them alike. Every pod of a
# burst must come out injected (none: not injected), else the run counts as failed. For our
# server, how many of the burst's admissions its outcome cache answered (its /metrics before and
# after).
#
# Usage: bench/e2e-burst.sh
#        ROUNDS=3 COUNT=1000 PARALLEL=4 bench/e2e-burst.sh
#        VARIANTS="none canned engine" BURSTS=post SKIP_BUILD=1 OUT=/tmp/burst bench/e2e-burst.sh
# Output: the table on stdout (also $OUT/table.md), raw runs in $OUT/runs.tsv, per-pod latencies
# ($OUT/lat-*.tsv), the API server's metrics, ss samples and our server's /metrics per run.
# Ends with "N passed, M failed" like the e2e scripts. Not in .ci/run: tens of minutes.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
HERE=$ROOT/tests/e2e
E2E=e2e-burst
# shellcheck source=../tests/e2e/lib.sh
. "$HERE/lib.sh"
T0=$(date +%s%N)

ROUNDS=${ROUNDS:-2}
COUNT=${COUNT:-1000}
PARALLEL=${PARALLEL:-4}
VARIANTS=${VARIANTS:-none canned cached engine istio}
BURSTS=${BURSTS:-post deployment deployment-token}
SHARED=${SIDECAR_INJECTOR_SHARED:-$ROOT/../shared}
CONFIG=${CONFIG:-$SHARED/istio/derived/config/default.yaml}
VALUES=${VALUES:-$SHARED/istio/derived/values/default.json}
MESH=${MESH:-$SHARED/istio/derived/mesh/default.yaml}
WAIT=${WAIT:-120}

for f in "$CONFIG" "$VALUES" "$MESH"; do
  [ -f "$f" ] || { echo "$E2E: $f not found (set SIDECAR_INJECTOR_SHARED or CONFIG/VALUES/MESH)" >&2; exit 1; }
done
for v in $VARIANTS; do
  case "$v" in none | canned | cached | engine | istio | tiny | coarse) ;; *) echo "$E2E: unknown variant $v" >&2; exit 2 ;; esac
done
for b in $BURSTS; do
  case "$b" in post | deployment | deployment-token) ;; *) echo "$E2E: unknown burst $b" >&2; exit 2 ;; esac
done

DIR=${OUT:-$(mktemp -d /tmp/e2e-burst.XXXXXX)}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
KEEP=1   # the results live in DIR
FAILURE_LOGS=("$DIR/logs/kube-apiserver.log" "$DIR/webhook-*.log")
DURATIONS=()
WH_PID=
stop_processes() { stop_webhook; }
trap e2e_finish EXIT
trap e2e_interrupted INT TERM

# ---------------------------------------------------------------------------- builds
if [ -z "${SKIP_BUILD:-}" ]; then
  run "cargo build --release --locked (sidecar-injector, fake_injector)" bash -c \
    "cd '$ROOT' && nice -n 10 cargo build --release --locked -p sidecar-injector &&
     nice -n 10 cargo build --release --locked -p injector-server --example fake_injector"
fi
OURS=${SIDECAR_INJECTOR_BIN:-$ROOT/target/release/sidecar-injector}
CANNED=$ROOT/target/release/examples/fake_injector
case " $VARIANTS " in *" istio "*)
  ISTIO=$("$ROOT/tools/istio-webhook/build.sh" | tail -1) || { bad "tools/istio-webhook/build.sh"; exit 1; } ;;
esac
run "go build tools/pod-burst" bash -c "cd '$ROOT/tools/pod-burst' && go build -o '$DIR/pod-burst' ."
needs=("$DIR/pod-burst")
[ -n "$(echo "$VARIANTS" | tr ' ' '\n' | grep -vx none)" ] && needs+=("$OURS")   # the canned patch is our engine's
case " $VARIANTS " in *" canned "* | *" tiny "* | *" coarse "*) needs+=("$CANNED") ;; esac
for b in "${needs[@]}"; do [ -x "$b" ] || { bad "no executable $b"; exit 1; }; done

# ---------------------------------------------------------------------------- control plane
cat >"$DIR/audit-policy.yaml" <<'EOF'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  verbs: [create]
  resources: [{group: "", resources: [pods]}]
- level: None
EOF
export KUBE_APISERVER_EXTRA_ARGS="--audit-policy-file=$DIR/audit-policy.yaml --audit-log-path=$DIR/audit.log
  --audit-log-mode=batch --audit-log-batch-max-wait=1s --audit-log-maxsize=0"
export KCM_EXTRA_ARGS="--kube-api-qps=1000 --kube-api-burst=2000"
control_plane_up $((24 * 3600))
P=$DIR/pki
api() { curl -fsS --max-time 30 --cacert "$P/ca.crt" --cert "$P/admin.crt" --key "$P/admin.key" "$KUBE_API_SERVER$1"; }
burst_tool() { "$DIR/pod-burst" "$1" -server "$KUBE_API_SERVER" -ca "$P/ca.crt" -cert "$P/admin.crt" -key "$P/admin.key" "${@:2}"; }

# The pod: a bookinfo-like ReplicaSet pod (reviews), on the namespace's default ServiceAccount,
# without the token volume: ServiceAccount admission names that volume kube-api-access-<random>
# per pod, so one canned patch (which lists the pod's volumes) could not fit every pod.
cat >"$DIR/pod.json" <<'EOF'
{"apiVersion": "v1", "kind": "Pod",
 "metadata": {"labels": {"app": "reviews", "version": "v1"},
              "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-11-30T08:00:00Z"}},
 "spec": {"automountServiceAccountToken": false,
          "containers": [{"name": "reviews", "image": "docker.io/istio/examples-bookinfo-reviews-v1:1.20.2",
                          "imagePullPolicy": "IfNotPresent", "ports": [{"containerPort": 9080, "protocol": "TCP"}],
                          "env": [{"name": "LOG_DIR", "value": "/tmp/logs"}],
                          "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                          "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"},
                                           {"name": "wlp-output", "mountPath": "/opt/ibm/wlp/output"}],
                          "securityContext": {"runAsUser": 1000}}],
          "volumes": [{"name": "wlp-output", "emptyDir": {}}, {"name": "tmp", "emptyDir": {}}]}}
EOF
"$DIR/pod-burst" render -pod "$DIR/pod.json" -index 0 >"$DIR/pod-0.json"
# The Deployment's template is pod 0 of the POST burst (so the canned patch fits its pods too);
# deployment-token.json mounts the token.
python3 - "$DIR/pod-0.json" "$COUNT" <<'PY'
import json, sys
pod = json.load(open(sys.argv[1]))
meta = {k: v for k, v in pod["metadata"].items() if k in ("labels", "annotations")}
deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "reviews"},
              "spec": {"replicas": 0, "selector": {"matchLabels": pod["metadata"]["labels"]},
                       "template": {"metadata": meta, "spec": pod["spec"]}}}
json.dump(deployment, open(sys.argv[1].replace("pod-0.json", "deployment.json"), "w"))
# The same with the ServiceAccount token mounted, as Kubernetes does by default.
del deployment["spec"]["template"]["spec"]["automountServiceAccountToken"]
json.dump(deployment, open(sys.argv[1].replace("pod-0.json", "deployment-token.json"), "w"))
PY

namespace_up() { # NAME: a labelled namespace whose default ServiceAccount exists
  K create namespace "$1" >/dev/null && K label namespace "$1" burst-injection=enabled >/dev/null &&
    poll "$WAIT" K -n "$1" get serviceaccount default
}
namespace_gone() { K delete namespace "$1" --wait=false >/dev/null && poll 600 bash -c "! '$DIR/kubectl' get namespace '$1'"; }
run "probe namespace burst-probe" namespace_up burst-probe

# dry_run: pod 0 as the API server would store it in burst-probe, after admission (nothing stored)
dry_run() { K -n burst-probe create --dry-run=server -o json -f "$DIR/pod-0.json"; }
injected_dry_run() { dry_run | grep -q '"sidecar.istio.io/status"'; }
plain_dry_run() { local out; out=$(dry_run) && ! grep -q '"sidecar.istio.io/status"' <<<"$out"; }

# ---------------------------------------------------------------------------- webhooks
start_webhook() { # VARIANT: starts its server on fresh ports; sets WH_PORT, WH_MON, WH_CAB
  local v=$1 cmd ca=$DIR/webhook-$1-ca.pem
  alloc_port WH_PORT; alloc_port WH_MON
  local common=(--addr "127.0.0.1:$WH_PORT" --monitoring-addr "127.0.0.1:$WH_MON" --write-ca "$ca")
  local ours=("$OURS" serve --injector-config "$CONFIG" --values "$VALUES" --mesh "$MESH" --native-sidecars true "${common[@]}")
  case "$v" in
    canned) cmd=("$CANNED" --patch-from "$DIR/canned-response.json" "${common[@]}") ;;
    tiny | coarse) cmd=("$CANNED" --patch-from "$DIR/$v-response.json" "${common[@]}") ;;
    cached) cmd=("${ours[@]}") ;;
    engine) cmd=("${ours[@]}" --outcome-cache-mib 0) ;;
    istio) cmd=(env ENABLE_NATIVE_SIDECARS=true "$ISTIO" serve -config "$CONFIG" -values "$VALUES" -mesh "$MESH"
                -addr "127.0.0.1:$WH_PORT" -monitoring-addr "127.0.0.1:$WH_MON") ;;
  esac
  RUST_LOG=warn "${cmd[@]}" >>"$DIR/webhook-$v.log" 2>&1 &
  WH_PID=$!
  # ready: it answers the review of pod 0 (Istio's /readyz is up before its configuration is read)
  poll 30 curl -fsSk -o /dev/null -H 'content-type: application/json' --data-binary "@$DIR/review.json" \
    "https://127.0.0.1:$WH_PORT/inject?timeout=10s" || { echo "$v not ready" >&2; return 1; }
  if [ "$v" = istio ]; then   # its certificate is self-signed: the served certificate is its own CA
    openssl s_client -connect "127.0.0.1:$WH_PORT" -servername localhost </dev/null 2>/dev/null | openssl x509 >"$ca"
  fi
  WH_CAB=$(base64 -w0 <"$ca")
}
stop_webhook() { if [ -n "$WH_PID" ]; then stop_pid "$WH_PID"; WH_PID=; fi; }

register() { # VARIANT: the one MutatingWebhookConfiguration, pointing at the running server
  K apply -f - >/dev/null <<EOF
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: e2e-burst
webhooks:
- name: $1.burst.sidecar-injector.invalid
  clientConfig:
    url: https://127.0.0.1:$WH_PORT/inject
    caBundle: $WH_CAB
  rules:
  - operations: [CREATE]
    apiGroups: [""]
    apiVersions: [v1]
    resources: [pods]
  namespaceSelector:
    matchLabels:
      burst-injection: enabled
  failurePolicy: Fail
  sideEffects: None
  admissionReviewVersions: [v1]
  timeoutSeconds: 10
  reinvocationPolicy: Never
EOF
}

# The canned patch: our engine's response for pod 0 as the API server sends it.
scenario "canned patch: our engine's response for the burst's pod"
run "no webhook: a dry run of pod 0 is not injected" poll "$WAIT" plain_dry_run
dry_run >"$DIR/pod-0-admitted.json"
python3 - "$DIR/pod-0-admitted.json" >"$DIR/review.json" <<'PY'
import json, sys
pod = json.load(open(sys.argv[1]))
pod["metadata"].pop("uid", None); pod["metadata"].pop("creationTimestamp", None)
ns = pod["metadata"]["namespace"]
print(json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
    "uid": "00000000-0000-0000-0000-000000000001",
    "kind": {"group": "", "version": "v1", "kind": "Pod"}, "resource": {"group": "", "version": "v1", "resource": "pods"},
    "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
    "requestResource": {"group": "", "version": "v1", "resource": "pods"},
    "name": pod["metadata"]["name"], "namespace": ns, "operation": "CREATE",
    "userInfo": {"username": "admin", "groups": ["system:masters", "system:authenticated"]},
    "object": pod, "oldObject": None, "dryRun": False,
    "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}}}))
PY
if [ -x "$OURS" ]; then
run "serve (--outcome-cache-mib 0) up" start_webhook engine
check "our engine's response to pod 0's review" bash -c "curl -fsS --cacert '$DIR/webhook-engine-ca.pem' \
  -H 'content-type: application/json' --data-binary @'$DIR/review.json' \
  'https://127.0.0.1:$WH_PORT/inject?timeout=10s' >'$DIR/canned-response.json'"
stop_webhook
patch_shape() { # RESPONSE: bytes and ops of its patch
  python3 -c 'import base64, json, sys
p = base64.b64decode(json.load(open(sys.argv[1]))["response"].get("patch", ""))
ops = json.loads(p) if p else []
kinds = ", ".join(sorted({o["op"] for o in ops}))
print(f"{len(p)} bytes, {len(ops)} ops ({kinds})")' "$1"
}
check "the response carries a patch" patch_shape "$DIR/canned-response.json"
log "our patch for pod 0: $(patch_shape "$DIR/canned-response.json")"
check "patch variants (coarse: the identical pod; tiny: one op)" bash -c \
  "python3 '$ROOT/bench/patch_variants.py' '$DIR/pod-0-admitted.json' '$DIR/canned-response.json' '$DIR' | tee '$DIR/patch-variants.txt'"
fi
if [ -n "${ISTIO:-}" ]; then
  ENABLE_NATIVE_SIDECARS=true "$ISTIO" respond -config "$CONFIG" -values "$VALUES" -mesh "$MESH" \
    -review "$DIR/review.json" >"$DIR/istio-response.json" 2>>"$DIR/webhook-istio.log" &&
    log "Istio's patch for pod 0: $(patch_shape "$DIR/istio-response.json")"
fi
scenario_end

# ---------------------------------------------------------------------------- bursts
metrics() { # FILE: the API server's metrics this script reads
  api /metrics | grep -E '^apiserver_(request_duration_seconds_(bucket|sum|count)\{.*resource="pods"|admission_webhook_admission_duration_seconds|admission_webhook_request_total)' >"$1" || true
}

sample_connections() { # PORT FILE: established connections to the webhook, every 0.2 s, until killed
  while :; do
    ss -Htn state established "( sport = :$1 )" 2>/dev/null | awk '{print $4}' | sort | tr '\n' ' ' >>"$2"
    echo >>"$2"
    sleep 0.2
  done
}

cache_hits() { # VARIANT: the outcome cache hits `serve` counted so far (empty for other servers)
  case "$1" in cached | engine) [ -n "$WH_MON" ] || return 0 ;; *) return 0 ;; esac
  curl -fsS "http://127.0.0.1:$WH_MON/metrics" | awk '/^sidecar_injection_cache_hits_total /{n = $2} END {print n + 0}' || true
}

one_burst() { # ROUND VARIANT BURST
  local rnd=$1 v=$2 b=$3 ns="b$1-$2-$3" summary sampler conns injected want=$COUNT port=${WH_PORT:-0}
  local hits_before hits=""
  [ "$v" = none ] && want=0
  case "$b:$v" in deployment-token:canned | deployment-token:tiny | deployment-token:coarse)
    log "$b: skipped for $v (its one canned patch lists fixed volume names)"; return ;;
  esac
  namespace_up "$ns" || { bad "$ns: namespace up"; return; }
  case "$b" in
    deployment) K -n "$ns" apply -f "$DIR/deployment.json" >/dev/null ;;
    deployment-token) K -n "$ns" apply -f "$DIR/deployment-token.json" >/dev/null ;;
  esac
  hits_before=$(cache_hits "$v")
  metrics "$DIR/metrics-before.txt"
  : >"$DIR/conns-$ns.txt"
  sample_connections "$port" "$DIR/conns-$ns.txt" & sampler=$!
  if [ "$b" = post ]; then
    summary=$(burst_tool post -namespace "$ns" -pod "$DIR/pod.json" -count "$COUNT" -parallel "$PARALLEL" \
      -out "$DIR/lat-$ns.tsv" 2>>"$DIR/pod-burst.log") || bad "$ns: pod-burst post failed (see lat-$ns.tsv)"
  else
    summary=$(burst_tool scale -namespace "$ns" -deployment reviews -count "$COUNT" -timeout 300s \
      -out "$DIR/lat-$ns.tsv" 2>>"$DIR/pod-burst.log") || bad "$ns: pod-burst scale failed"
  fi
  kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null || true
  metrics "$DIR/metrics-after.txt"
  [ -n "$WH_MON" ] && [ "$v" != istio ] && { curl -fsS "http://127.0.0.1:$WH_MON/metrics" >"$DIR/server-metrics-$ns.txt" || true; }
  [ -n "$hits_before" ] && hits=$(( $(cache_hits "$v") - hits_before ))
  # busiest sample, and how many distinct connections were seen over the burst
  conns=$(awk '{ if (NF > m) m = NF; for (i = 1; i <= NF; i++) seen[$i] = 1 } END { n = 0; for (k in seen) n++; printf "%d/%d", m, n }' "$DIR/conns-$ns.txt")
  poll 30 bash -c "[ \"\$(grep -c '\"namespace\":\"$ns\"' '$DIR/audit.log')\" -ge $COUNT ]" || bad "$ns: fewer than $COUNT creates in the audit log"
  injected=$(K -n "$ns" get pods -o jsonpath='{range .items[*]}{.metadata.annotations.sidecar\.istio\.io/status}{"\n"}{end}' | grep -c . || true)
  if [ "$injected" = "$want" ]; then ok "$ns: $COUNT pods, $injected injected"; else bad "$ns: $injected of $COUNT pods injected (want $want)"; fi
  python3 "$ROOT/bench/e2e_burst_report.py" row "$DIR" "$rnd" "$v" "$b" "$ns" "$v.burst.sidecar-injector.invalid" \
    "${summary:-0	0	nan	nan	0}" "${conns%%/*}" "$injected" "$hits" >>"$DIR/runs.tsv"
  log "$(tail -1 "$DIR/runs.tsv")   connections max/distinct: $conns"
  namespace_gone "$ns" || bad "$ns: namespace not gone after 600 s"
}

printf '%s\n' "round	variant	burst	pods	wall_s	client_p50_ms	client_p99_ms	audit_p50_ms	audit_p99_ms	audit_mean_ms	metrics_post_mean_ms	metrics_post_p50_ms	metrics_post_p99_ms	webhook_calls	webhook_mean_ms	webhook_p50_ms	webhook_p99_ms	webhook_conns_max	injected	webhook_not_200	pod_creates	cache_hits" >"$DIR/runs.tsv"
read -r -a order <<<"$VARIANTS"
for rnd in $(seq "$ROUNDS"); do
  scenario "round $rnd: ${order[*]}"
  for v in "${order[@]}"; do
    WH_PORT=; WH_MON=
    if [ "$v" = none ]; then
      K delete mutatingwebhookconfiguration e2e-burst --ignore-not-found >/dev/null
      run "$v: no webhook in effect" poll "$WAIT" plain_dry_run
    else
      run "$v: server up" start_webhook "$v"
      register "$v"
      run "$v: registered and in effect (a dry run is injected)" poll "$WAIT" injected_dry_run
    fi
    for b in $BURSTS; do one_burst "$rnd" "$v" "$b"; done
    K delete mutatingwebhookconfiguration e2e-burst --ignore-not-found >/dev/null
    stop_webhook
  done
  scenario_end
  # the next round runs the variants in the reverse order
  for ((i = 0, j = ${#order[@]} - 1; i < j; i++, j--)); do t=${order[i]}; order[i]=${order[j]}; order[j]=$t; done
done

python3 "$ROOT/bench/e2e_burst_report.py" table "$DIR" | tee "$DIR/table.md"
log "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
