#!/usr/bin/env bash
# `sidecar-injector doctor` and live `explain` end to end, against the real kube-apiserver and
# kube-controller-manager of tests/e2e/control-plane.sh. Each fault of the troubleshooting page
# is induced for real and doctor must name it and print its fix:
#
#   1. a healthy cluster: every check passes (exit 0), the probe comes back injected
#   2. RBAC that forbids reads (a ServiceAccount token without events and secrets): those checks
#      say which permission they need, the others still run (exit 2)
#   3. an unknown policy value in the injector ConfigMap
#   4. sidecar.istio.io/inject on a Deployment's own metadata (the Deployment trap), and a hostile
#      value there: the printed fixes, pasted into bash, run only kubectl
#   5. a Fail webhook covering the injector's own namespace
#   6. an empty caBundle; 7. a caBundle of another CA (the probe sees the API server's x509 error)
#   8. the injector stopped: FailedCreate events from the real controller-manager for a
#      Deployment, classified "no endpoints", and nothing answering at the webhook's url
#   9. an expired serving certificate (file-mode serve with an expired certificate made here)
#  10. no API server: every check says it cannot run, within the timeout
#  11. live explain of a Pod and a Deployment from the cluster (and an existing injected pod)
#
# Webhooks that are called are registered by `url: https://127.0.0.1:PORT/inject` only. The one
# Service-referenced webhook (for the endpoints check) has selectors no namespace matches: it is
# read, never called, and doctor never dials a Service or any non-loopback address.
#
# Prints every check and last exactly one line "N passed, M failed"; exits non-zero on failure.
#   DOCTOR_E2E_KEEP=1        keep the temp dir; kept anyway on failure
#   DOCTOR_E2E_TIMEOUT=60    seconds per poll
#   DOCTOR_E2E_BUDGET=400    seconds for the whole run after the control plane is up
#   SIDECAR_INJECTOR_BIN=... use this binary instead of building target/release/sidecar-injector
# shellcheck disable=SC2317
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
E2E=doctor
WAIT=${DOCTOR_E2E_TIMEOUT:-60}
DEADLINE=""
T0=$(date +%s%N)
DIR=$(mktemp -d "${TMPDIR:-/tmp}/sidecar-e2e-doctor.XXXXXX")
CP_STARTED=""
declare -A PID=()
# shellcheck source=tests/e2e/lib.sh
. "$HERE/lib.sh"

KEEP=${DOCTOR_E2E_KEEP:-}
FAILURE_LOGS=("$DIR/logs/kube-apiserver.log" "$DIR/*.log")
stop_processes() { local name; for name in "${!PID[@]}"; do stop_pid "${PID[$name]}"; done; }
trap e2e_finish EXIT
trap e2e_interrupted INT TERM

# ---------------------------------------------------------------------------- set-up
build_release || exit 1
command -v curl >/dev/null || { bad "curl is needed"; exit 1; }
command -v openssl >/dev/null || { bad "openssl is needed"; exit 1; }
control_plane_up "${DOCTOR_E2E_BUDGET:-400}"
b64() { base64 -w0 < "$1"; }

# serve NAME PORT [ARGS...]: a file-mode injector on 127.0.0.1:PORT, waited for until ready
serve() {
  local name=$1 port=$2 mon; shift 2
  alloc_port mon
  "$BIN" serve --addr "127.0.0.1:$port" --monitoring-addr "127.0.0.1:$mon" --log-format json "$@" \
    >> "$DIR/serve-$name.log" 2>&1 &
  PID[$name]=$!
  poll "$WAIT" bash -c "curl -sS --max-time 2 http://127.0.0.1:$mon/readyz | grep -q '\"ready\":true'"
}
# doctor OUT [ARGS...]: runs doctor into $DIR/OUT (table) and sets RC
doctor() {
  local out=$1; shift
  RC=0
  "$BIN" doctor --kubeconfig "${DOCTOR_KUBECONFIG:-$KUBECONFIG}" --timeout 5s "$@" > "$DIR/$out" 2> "$DIR/$out.err" || RC=$?
}
# expect OUT RC PATTERN... : the last doctor run exited RC and its output matches every
# extended regex (each on one line)
expect() {
  local out=$1 want=$2 pattern; shift 2
  [ "$RC" = "$want" ] || { echo "exit status $RC, expected $want"; cat "$DIR/$out" "$DIR/$out.err"; return 1; }
  for pattern in "$@"; do
    grep -Eq -- "$pattern" "$DIR/$out" || { echo "no line matches /$pattern/:"; cat "$DIR/$out"; return 1; }
  done
}

check "namespaces: istio-system, shop (istio-injection=enabled), plain" bash -c "
  k='$DIR/kubectl'
  \$k create namespace istio-system && \$k create namespace shop && \$k label namespace shop istio-injection=enabled &&
  \$k create namespace plain"
for ns in shop plain; do check "serviceaccount default exists in $ns" poll "$WAIT" K -n "$ns" get serviceaccount default; done
DEFAULTS=$ROOT/crates/injector-engine/defaults
check "the injector ConfigMap istio-system/istio-sidecar-injector (policy enabled)" bash -c "
  '$DIR/kubectl' -n istio-system create configmap istio-sidecar-injector \
    --from-file=config='$DEFAULTS/injector-config.yaml' --from-file=values='$DEFAULTS/values.json'"
alloc_port PORT_A
run "serve A (file mode, self-signed, --write-ca) ready on 127.0.0.1:$PORT_A" serve A "$PORT_A" --write-ca "$DIR/ca.pem"
URL_A="https://127.0.0.1:$PORT_A/inject"
# webhook_config CABUNDLE_B64 [SELECTOR]: Istio's configuration, by url to serve A
webhook_config() {
  local cab=$1 selector=${2:-'matchLabels: {istio-injection: enabled}'}
  K apply -f - <<YAML
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: istio-sidecar-injector
webhooks:
- name: namespace.sidecar-injector.istio.io
  clientConfig: {url: "$URL_A", caBundle: "$cab"}
  rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [pods], scope: Namespaced}]
  namespaceSelector: {$selector}
  sideEffects: None
  admissionReviewVersions: [v1]
  failurePolicy: Fail
  timeoutSeconds: 10
YAML
}
check "MutatingWebhookConfiguration istio-sidecar-injector: url $URL_A, caBundle from --write-ca, opt-in, Fail" \
  webhook_config "$(b64 "$DIR/ca.pem")"
# A Service-referenced webhook of ours (a revision tag), only ever read: no namespace carries
# the label its namespaceSelector wants, and its objectSelector matches no pod.
check "revision tag istio-revision-tag-svc by service istio-system/istiod (selectors match nothing), a Service without selector and a hand-made EndpointSlice (address never dialled), the CA Secret" bash -c "
  k='$DIR/kubectl'
  \$k apply -f - <<YAML
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: istio-revision-tag-svc
  labels: {istio.io/rev: default}
webhooks:
- name: svc.sidecar-injector.istio.io
  clientConfig:
    service: {namespace: istio-system, name: istiod, port: 443, path: /inject}
    caBundle: $(b64 "$DIR/ca.pem")
  rules: [{operations: [CREATE], apiGroups: [\"\"], apiVersions: [v1], resources: [pods]}]
  namespaceSelector: {matchLabels: {doctor-e2e-never: match}}
  objectSelector: {matchLabels: {doctor-e2e-never: match}}
  sideEffects: None
  admissionReviewVersions: [v1]
  failurePolicy: Ignore
---
apiVersion: v1
kind: Service
metadata: {name: istiod, namespace: istio-system}
spec:
  ports: [{name: https-webhook, port: 443, targetPort: 15017}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: istiod-manual
  namespace: istio-system
  labels: {kubernetes.io/service-name: istiod}
addressType: IPv4
endpoints: [{addresses: [192.0.2.10], conditions: {ready: true}}]
ports: [{name: https-webhook, port: 15017, protocol: TCP}]
YAML
  \$k -n istio-system create secret generic sidecar-injector-ca --from-file=ca.crt='$DIR/ca.pem'"

# ---------------------------------------------------------------------------- 1. healthy
scenario "1: a healthy cluster"
t=$(date +%s%N)
doctor healthy.txt
took=$(secs_since "$t")
check "doctor: every check passes, exit 0 (the whole run took $took s)" expect healthy.txt 0 '^✓ 10\. blast radius.*in 1 namespace\(s\): 0 workload\(s\)' \
  '^✓ 1\. webhook configuration.*namespaces in scope: shop' '^✓ 2\. default injection policy +policy: enabled' \
  '^✓ 3\. ' '^✓ 4\. caBundle.*2 webhook\(s\)' '^✓ 5\. ' '^✓ 6\. ' '^✓ 7\. ' '^✓ 8\. ' \
  '^✓ 9\. end-to-end probe.*namespace shop came back injected, as explain predicts, in [0-9]+ ms' \
  '^10 ok, 0 warning\(s\), 0 error\(s\), 0 could not run$'
check "doctor: no line is a warning, an error or unknown" bash -c "! grep -Eq '^[!✗?] ' '$DIR/healthy.txt'"
check "doctor: the namespaces as kubectl get ns -L istio-injection shows them" expect healthy.txt 0 \
  '^ +shop +enabled +yes \(namespace\.sidecar-injector\.istio\.io\)' '^ +plain +no$'
doctor healthy.json -o json
check "doctor -o json: ten checks, all ok" bash -c "python3 -c '
import json,sys; r=json.load(open(sys.argv[1])); v=[c[\"verdict\"] for c in r[\"checks\"]]
assert v==[\"ok\"]*10, v; assert r[\"summary\"]==dict(ok=10,warnings=0,errors=0,unknown=0), r[\"summary\"]' '$DIR/healthy.json'"
doctor plain.txt -n plain --no-probe
check "doctor -n plain: the focus namespace is out of scope, with the label command" expect plain.txt 0 \
  '^! 1\. .*namespace plain is not in scope' 'fix: kubectl label namespace plain istio-injection=enabled --overwrite'

# ---------------------------------------------------------------------------- 2. RBAC
scenario "2: RBAC that forbids reads"
make_partial() {
  K apply -f - <<'YAML' >/dev/null &&
apiVersion: v1
kind: ServiceAccount
metadata: {name: doctor-partial, namespace: default}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: doctor-partial}
rules:
- {apiGroups: [""], resources: [namespaces, pods, configmaps, services], verbs: [get, list]}
- {apiGroups: [admissionregistration.k8s.io], resources: [mutatingwebhookconfigurations], verbs: [get, list]}
- {apiGroups: [apps, batch], resources: [deployments, statefulsets, daemonsets, jobs, cronjobs], verbs: [list]}
- {apiGroups: [discovery.k8s.io], resources: [endpointslices], verbs: [list]}
- {apiGroups: [policy], resources: [poddisruptionbudgets], verbs: [list]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: doctor-partial}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: doctor-partial}
subjects: [{kind: ServiceAccount, name: doctor-partial, namespace: default}]
YAML
  sa_kubeconfig default doctor-partial "$DIR/partial.kubeconfig" 1h
}
check "a ServiceAccount that may read everything but events and secrets (and create nothing)" make_partial
DOCTOR_KUBECONFIG=$DIR/partial.kubeconfig doctor partial.txt
check "doctor with that token: the events check names the permission it needs, the probe too; the others run (exit 2)" \
  expect partial.txt 2 \
  '^\? 6\. .*cannot list events: forbidden; this check needs the permission to list events' \
  'fix: kubectl auth can-i list events --all-namespaces' \
  '^\? 9\. .*cannot create pods shop \(dry run\): forbidden' 'fix: kubectl auth can-i create pods -n shop' \
  '^✓ 1\. ' '^✓ 2\. ' '^✓ 5\. ' '^✓ 7\. '
check "the loopback webhook's caBundle is still verified by handshake; the Service one says the Secret it cannot read" \
  expect partial.txt 2 'serves CN=.*issued by' \
  '^\? 4\. .*svc\.sidecar-injector\.istio\.io: not dialled .*the CA Secrets cannot be read: .*get secrets istio-system/sidecar-injector-ca \(forbidden\)' 'fix: kubectl auth can-i get secrets -n istio-system'

# ---------------------------------------------------------------------------- 3. policy
scenario "3: an unknown policy value"
set_policy() {
  sed "s/^policy: .*/policy: $1/" "$DEFAULTS/injector-config.yaml" > "$DIR/config-$1.yaml"
  grep -q "^policy: $1" "$DIR/config-$1.yaml" || printf 'policy: %s\n' "$1" >> "$DIR/config-$1.yaml"
  K -n istio-system create configmap istio-sidecar-injector --from-file=config="$DIR/config-$1.yaml" \
    --from-file=values="$DEFAULTS/values.json" --dry-run=client -o yaml | K apply -f - >/dev/null
}
check "ConfigMap edited: policy: enable" set_policy enable
doctor policy.txt --no-probe
check "doctor: ✗ policy, says injection is disabled for every pod, and the edit command" expect policy.txt 1 \
  '^✗ 2\. default injection policy +policy: "enable" is not enabled or disabled: injection is DISABLED for every pod' \
  'fix: kubectl -n istio-system edit configmap istio-sidecar-injector'
check "ConfigMap restored: policy: enabled" set_policy enabled

# ---------------------------------------------------------------------------- 4. Deployment trap
scenario "4: sidecar.istio.io/inject on the Deployment's own metadata"
check "Deployment shop/trap with the annotation on its metadata only (0 replicas)" bash -c "
  '$DIR/kubectl' -n shop apply -f - <<'YAML'
apiVersion: apps/v1
kind: Deployment
metadata: {name: trap, annotations: {sidecar.istio.io/inject: \"false\"}}
spec:
  replicas: 0
  selector: {matchLabels: {app: trap}}
  template:
    metadata: {labels: {app: trap}}
    spec: {containers: [{name: app, image: registry.invalid/app:1}]}
YAML"
doctor trap.txt --no-probe
check "doctor: ! placement names Deployment shop/trap and the patch that moves it to the template" expect trap.txt 0 \
  '^! 3\. .*1 workload\(s\) with the setting on their own metadata' 'Deployment shop/trap: sidecar.istio.io/inject: "false" is on the Deployment' \
  "fix: kubectl -n shop patch deployment trap --type=merge -p '\\{\"spec\":\\{\"template\":\\{\"metadata\":\\{\"annotations\":\\{\"sidecar.istio.io/inject\":\"false\"\\}\\}\\}\\}\\}'"
check "the printed fix works: the template carries it and doctor is satisfied" bash -c "
  '$DIR/kubectl' -n shop patch deployment trap --type=merge -p '{\"spec\":{\"template\":{\"metadata\":{\"annotations\":{\"sidecar.istio.io/inject\":\"false\"}}}}}' >/dev/null &&
  '$BIN' doctor --kubeconfig '$KUBECONFIG' --no-probe | grep -q '^✓ 3\. '"

# A workload annotated by someone hostile: doctor's printed fixes, pasted into bash with a stub
# kubectl first on PATH, run nothing but kubectl, and the patch carries the value unchanged.
HOSTILE=$(python3 -c 'import json,sys; d=sys.argv[1]; print(json.dumps(
  "x\x27; touch %s/owned-1; echo \x27$(touch %s/owned-2)`touch %s/owned-3`\ntouch %s/owned-4 \x1b]0;owned\x07" % (d, d, d, d)))' "$DIR")
check "Deployment shop/hostile with a hostile sidecar.istio.io/inject on its metadata" bash -c "
  printf '%s' '{\"apiVersion\": \"apps/v1\", \"kind\": \"Deployment\",
    \"metadata\": {\"name\": \"hostile\", \"annotations\": {\"sidecar.istio.io/inject\": '\"\$1\"'}},
    \"spec\": {\"replicas\": 0, \"selector\": {\"matchLabels\": {\"app\": \"hostile\"}},
      \"template\": {\"metadata\": {\"labels\": {\"app\": \"hostile\"}},
        \"spec\": {\"containers\": [{\"name\": \"app\", \"image\": \"registry.invalid/app:1\"}]}}}}' |
  '$DIR/kubectl' -n shop apply -f - >/dev/null" _ "$HOSTILE"
doctor hostile.txt --no-probe
paste_fixes() {
  mkdir -p "$DIR/stub" && : > "$DIR/stub.log"
  printf '#!/bin/sh\nprintf "%%s\\0" "$#" "$@" >> "%s/stub.log"\n' "$DIR" > "$DIR/stub/kubectl" && chmod +x "$DIR/stub/kubectl"
  grep '^  fix: kubectl ' "$DIR/hostile.txt" | sed 's/^  fix: //' > "$DIR/hostile-fixes.sh"
  grep -q 'patch deployment hostile' "$DIR/hostile-fixes.sh" || { echo "no fix for shop/hostile:"; cat "$DIR/hostile.txt"; return 1; }
  if grep -q $'\x1b' "$DIR/hostile.txt"; then echo "a raw escape character reached the report"; return 1; fi
  PATH="$DIR/stub:$PATH" bash "$DIR/hostile-fixes.sh" 2> "$DIR/hostile-fixes.err" || { cat "$DIR/hostile-fixes.err"; return 1; }
  [ ! -s "$DIR/hostile-fixes.err" ] || { cat "$DIR/hostile-fixes.err"; return 1; }
  if ls "$DIR"/owned-* 2>/dev/null; then echo "a pasted fix ran an injected command"; return 1; fi
  python3 - "$DIR/stub.log" "$HOSTILE" <<'PY'
import json, sys
fields = open(sys.argv[1], encoding="utf-8").read().split("\0")
calls = []
while fields and fields[0]:
    n = int(fields.pop(0)); calls.append(fields[:n]); del fields[:n]
want = ["-n", "shop", "patch", "deployment", "hostile", "--type=merge", "-p"]
mine = [c for c in calls if c[:7] == want]
assert len(mine) == 1 and len(mine[0]) == 8, calls
patch = json.loads(mine[0][7])
value = patch["spec"]["template"]["metadata"]["annotations"]["sidecar.istio.io/inject"]
assert value == json.loads(sys.argv[2]), (value, sys.argv[2])
print("kubectl received exactly", mine[0][:7], "and the hostile value, unchanged;", len(calls), "call(s) in all")
PY
}
check "doctor's fixes, pasted into bash with a stub kubectl: only kubectl runs, with the intended patch" paste_fixes
check "Deployment shop/hostile removed" K -n shop delete deployment hostile

# run_fix OUT PATTERN: runs the first printed fix matching PATTERN, as printed (kubectl is the
# control plane's wrapper)
run_fix() {
  local fix; fix=$(grep -m1 -E -- "^  fix: $2" "$DIR/$1" | sed 's/^  fix: //') || return 1
  [ -n "$fix" ] || { echo "no fix matching /$2/ in $1"; return 1; }
  mkdir -p "$DIR/bin" && ln -sf "$DIR/kubectl" "$DIR/bin/kubectl" && PATH="$DIR/bin:$PATH" bash -c "$fix"
}

# ---------------------------------------------------------------------------- 5. own namespace
scenario "5: a Fail webhook covering its own namespace"
check "label istio-system istio-injection=enabled" K label namespace istio-system istio-injection=enabled
doctor own.txt --no-probe
check "doctor: ✗ self-deadlock, covers its own namespace, with the exclusion patch" expect own.txt 1 \
  '^✗ 8\. .*namespace\.sidecar-injector\.istio\.io \(failurePolicy Fail\) covers its own namespace' \
  'fix: kubectl patch mutatingwebhookconfiguration istio-sidecar-injector --type=json -p .*"operator":"NotIn","values":\["istio-system"\]'
check "the printed exclusion patch, run as printed" run_fix own.txt "kubectl patch mutatingwebhookconfiguration istio-sidecar-injector --type=json -p '.*NotIn"
doctor own-fixed.txt --no-probe
check "doctor after it: ✓ self-deadlock" expect own-fixed.txt 0 '^✓ 8\. '
check "remove the label" K label namespace istio-system istio-injection-

# ---------------------------------------------------------------------------- 6, 7. caBundle
scenario "6: an empty caBundle"
check "caBundle emptied" webhook_config ""
doctor empty.txt
check "doctor: ✗ caBundle is empty, with the patch from the CA Secret; the probe sees the x509 error" expect empty.txt 1 \
  '^✗ 4\. .*namespace\.sidecar-injector\.istio\.io: caBundle is empty' \
  "fix: kubectl patch mutatingwebhookconfiguration istio-sidecar-injector --type=json -p .*/webhooks/0/clientConfig/caBundle.*get secret sidecar-injector-ca" \
  '^✗ 9\. .*\(x509, [0-9]+ ms\)'
scenario "7: a caBundle of another CA"
check "another CA (openssl)" openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$DIR/other.key" \
  -out "$DIR/other.pem" -subj /CN=another-ca -days 30 -addext basicConstraints=critical,CA:TRUE
check "caBundle replaced by the other CA" webhook_config "$(b64 "$DIR/other.pem")"
doctor other.txt
check "doctor: ✗ caBundle, signed by unknown authority, naming both CAs; the probe's x509 error from the API server" expect other.txt 1 \
  '^✗ 4\. .*namespace\.sidecar-injector\.istio\.io: x509: certificate signed by unknown authority' \
  'caBundle holds CN=another-ca' 'serves CN=.*issued by' '^✗ 9\. .*\(x509, [0-9]+ ms\).*x509'
check "the printed caBundle fix, run as printed" run_fix other.txt 'kubectl patch mutatingwebhookconfiguration istio-sidecar-injector'
doctor fixed.txt
check "doctor after the fix: every check passes again" expect fixed.txt 0 '^10 ok, 0 warning\(s\), 0 error\(s\), 0 could not run$'

# ---------------------------------------------------------------------------- 8. injector stopped
scenario "8: the injector stopped (fail closed)"
run "stop serve A" stop_pid "${PID[A]}"
unset 'PID[A]'
check "Deployment shop/web (1 replica)" K -n shop create deployment web --image=registry.invalid/web:1
failed_create() { K -n shop get events --field-selector reason=FailedCreate -o jsonpath='{.items[*].message}' | grep -q 'failed calling webhook'; }
check "the controller-manager records FailedCreate events for the ReplicaSet" poll "$WAIT" failed_create
doctor stopped.txt --no-probe
check "doctor: ✗ nothing answers at the url, ✗ FailedCreate grouped as 'no endpoints' with the describe command" expect stopped.txt 1 \
  "^✗ 5\. .*nothing answers at $URL_A" "^✗ 6\. .*no endpoints: [0-9]+ failed creation\(s\) of 1 object\(s\)" \
  'ReplicaSet shop/web-' 'fix: kubectl -n shop describe replicaset web-'
check "Deployment shop/web deleted" K -n shop delete deployment web --wait=false
run "serve A started again on the same port" serve A "$PORT_A" --write-ca "$DIR/ca.pem"
check "caBundle follows serve A's CA" webhook_config "$(b64 "$DIR/ca.pem")"

# ---------------------------------------------------------------------------- 9. expired certificate
scenario "9: an expired serving certificate"
make_expired() {
  local d=$DIR/expired; mkdir -p "$d" && : > "$d/index.txt" && echo 01 > "$d/serial" &&
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$d/ca.key" -out "$d/ca.pem" \
    -subj /CN=expired-test-ca -days 3650 -addext basicConstraints=critical,CA:TRUE 2>/dev/null &&
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$d/tls.key" -out "$d/tls.csr" -subj /CN=127.0.0.1 2>/dev/null &&
  cat > "$d/ca.cnf" <<CNF &&
[ca]
default_ca = d
[d]
database = $d/index.txt
new_certs_dir = $d
serial = $d/serial
default_md = sha256
policy = p
unique_subject = no
[p]
commonName = supplied
[leaf]
subjectAltName = IP:127.0.0.1
extendedKeyUsage = serverAuth
CNF
  openssl ca -batch -config "$d/ca.cnf" -cert "$d/ca.pem" -keyfile "$d/ca.key" -in "$d/tls.csr" -out "$d/tls.crt" \
    -startdate 20250101000000Z -enddate 20250201000000Z -extensions leaf -notext 2>/dev/null
}
check "an expired serving certificate for 127.0.0.1 (openssl ca, valid January 2025)" make_expired
alloc_port PORT_E
run "serve E with the expired certificate on 127.0.0.1:$PORT_E" serve E "$PORT_E" --tls-cert "$DIR/expired/tls.crt" --tls-key "$DIR/expired/tls.key"
check "revision tag istio-revision-tag-expired: url serve E, caBundle its CA, for namespace label doctor-e2e=expired" bash -c "
  '$DIR/kubectl' apply -f - <<YAML
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: istio-revision-tag-expired, labels: {istio.io/rev: default}}
webhooks:
- name: expired.sidecar-injector.istio.io
  clientConfig: {url: \"https://127.0.0.1:$PORT_E/inject\", caBundle: \"$(b64 "$DIR/expired/ca.pem")\"}
  rules: [{operations: [CREATE], apiGroups: [\"\"], apiVersions: [v1], resources: [pods]}]
  namespaceSelector: {matchLabels: {doctor-e2e: expired}}
  sideEffects: None
  admissionReviewVersions: [v1]
  failurePolicy: Fail
YAML"
doctor expired.txt --no-probe
check "doctor: ✗ caBundle (certificate has expired) and ✗ expiry naming the served certificate and its date" expect expired.txt 1 \
  '^✗ 4\. .*expired\.sidecar-injector\.istio\.io: x509: certificate has expired' \
  "^✗ 7\. .*serving certificate of https://127.0.0.1:$PORT_E/inject EXPIRED on 2025-02-01" 'fix: renew the certificate the injector serves'
check "revision tag istio-revision-tag-expired deleted" K delete mutatingwebhookconfiguration istio-revision-tag-expired
run "stop serve E" stop_pid "${PID[E]}"
unset 'PID[E]'

# ---------------------------------------------------------------------------- 10. no API server
scenario "10: no API server"
check "a kubeconfig pointing at a closed loopback port" bash -c "
  sed 's#server: .*#server: https://127.0.0.1:1#' '$KUBECONFIG' > '$DIR/closed.kubeconfig'"
t=$(date +%s)
DOCTOR_KUBECONFIG=$DIR/closed.kubeconfig doctor closed.txt
check "doctor: every check says the API server is unreachable (exit 2), in $(( $(date +%s) - t )) s" expect closed.txt 2 \
  '^\? 1\. .*cannot list namespaces: the API server is unreachable' '^0 ok, 0 warning\(s\), 0 error\(s\), 9 could not run$'

# ---------------------------------------------------------------------------- 11. live explain
scenario "11: live explain of Pods and Deployments"
X() { "$BIN" explain --kubeconfig "$KUBECONFIG" "$@"; }
json_is() {   # json_is FILE PYTHON-EXPRESSION-ON-j
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); assert ($2), json.dumps(j, indent=1)[:3000]" "$1"
}
check "Deployment shop/web2 (0 replicas, nothing on its template)" K -n shop create deployment web2 --image=registry.invalid/web:1 --replicas=0
check "explain -n shop deployment/web2: INJECTED, from the cluster's webhooks and ConfigMap" bash -c "
  '$BIN' explain --kubeconfig '$KUBECONFIG' -n shop deployment/web2 | tee '$DIR/x-web2.txt' | grep -q '^Deployment shop/web2: INJECTED' &&
  grep -q 'webhook configurations: istio-revision-tag-svc, istio-sidecar-injector; injector ConfigMap: istio-system/istio-sidecar-injector' '$DIR/x-web2.txt'"
X -n shop deploy/trap -o json > "$DIR/x-trap.json" 2>&1 || true
check "explain deploy/trap -o json: not injected, decided by the pod template's annotation, webhookSource given" \
  json_is "$DIR/x-trap.json" 'j["injected"] is False and j["decidedBy"]=="podOverride" and j["webhookSource"]=="given" and j["cluster"]["revision"]=="default"'
check "a Pod shop/p1 created through the webhook (injected by serve A)" bash -c "
  '$DIR/kubectl' -n shop run p1 --image=registry.invalid/app:1 --restart=Never >/dev/null &&
  '$DIR/kubectl' -n shop get pod p1 -o jsonpath='{.metadata.annotations.sidecar\.istio\.io/status}' | grep -q istio-proxy"
X -n shop pod/p1 -o json > "$DIR/x-p1.json" 2>&1 || true
check "explain pod/p1: it was injected by revision default and carries what the current configuration injects" \
  json_is "$DIR/x-p1.json" 'j["injected"] and j["cluster"]["pod"]["injected"] and j["cluster"]["pod"]["revision"]=="default" and "istio-proxy" in j["cluster"]["pod"]["injectedContainers"] and j["cluster"]["pod"]["upToDate"] is True'
bump() {
  python3 - "$DEFAULTS/values.json" > "$DIR/values-bumped.json" <<'PY'
import json, sys
v = json.load(open(sys.argv[1])); v.setdefault("global", {})["tag"] = "9.9.9-e2e"; print(json.dumps(v))
PY
  K -n istio-system create configmap istio-sidecar-injector --from-file=config="$DEFAULTS/injector-config.yaml" \
    --from-file=values="$DIR/values-bumped.json" --dry-run=client -o yaml | K apply -f - >/dev/null
}
check "the ConfigMap's proxy image bumped (values global.tag 9.9.9-e2e)" bump
X -n shop pod/p1 > "$DIR/x-p1-bumped.txt" 2>&1 || true
check "explain pod/p1 after the bump: it differs, by the proxy image" bash -c "
  grep -q 'Pod shop/p1 WAS injected by revision default' '$DIR/x-p1-bumped.txt' &&
  grep -q 'it differs from what the current configuration injects:' '$DIR/x-p1-bumped.txt' &&
  grep -Eq -- '- istio-proxy: image .* → .*:9\.9\.9-e2e' '$DIR/x-p1-bumped.txt' || { cat '$DIR/x-p1-bumped.txt'; exit 1; }"
check "a Pod plain/p2 (namespace out of scope)" bash -c "'$DIR/kubectl' -n plain run p2 --image=registry.invalid/app:1 --restart=Never >/dev/null"
X -n plain pod/p2 -o yaml > "$DIR/x-p2.yaml" 2>&1 || true
check "explain pod/p2 -o yaml: not injected, by the namespaceSelector, and the pod says so" bash -c "
  grep -q '^injected: false' '$DIR/x-p2.yaml' && grep -q '^decidedBy: namespaceSelector' '$DIR/x-p2.yaml' && grep -q '    injected: false' '$DIR/x-p2.yaml' || { cat '$DIR/x-p2.yaml'; exit 1; }"
printf 'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: from-file}\nspec:\n  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n    spec: {containers: [{name: c, image: i}]}\n' > "$DIR/from-file.yaml"
check "explain -f FILE --kubeconfig -n shop: a manifest not yet applied, against the cluster's configuration" bash -c "
  '$BIN' explain --kubeconfig '$KUBECONFIG' -n shop -f '$DIR/from-file.yaml' | grep -q '^Deployment shop/from-file: INJECTED'"
check "explain of a Deployment that does not exist: exit 1 naming it, nothing on stdout" bash -c "
  out=\$('$BIN' explain --kubeconfig '$KUBECONFIG' -n shop deployment/missing 2>'$DIR/missing.err'); rc=\$?
  [ \$rc = 1 ] && [ -z \"\$out\" ] && grep -q 'Deployment shop/missing not found' '$DIR/missing.err'"
check "explain with no API server: exit 1, says it is unreachable" bash -c "
  '$BIN' explain --kubeconfig '$DIR/closed.kubeconfig' -n shop deployment/web2 2>&1 | grep -q 'unreachable'"

# ---------------------------------------------------------------------------- 12. blast radius
scenario "12: doctor --blast-radius"
check "Deployment kube-system/coredns (0 replicas), kube-system labelled into the Fail webhook's scope" bash -c "
  '$DIR/kubectl' -n kube-system create deployment coredns --image=registry.invalid/coredns:1 --replicas=0 >/dev/null &&
  '$DIR/kubectl' label namespace kube-system istio-injection=enabled >/dev/null"
doctor blast.txt --blast-radius
check "doctor --blast-radius: only that check; the workloads behind the Fail webhook, coredns highlighted as DNS" expect blast.txt 0 \
  '^! 10\. blast radius if the injector were down +if the injector were down, pods could not be created in 2 namespace\(s\)' \
  'CRITICAL Deployment kube-system/coredns — DNS' '^ +Deployment shop/web2$' '^ +Deployment shop/trap$' '^0 ok, 1 warning\(s\), 0 error\(s\), 0 could not run$'
check "kube-system unlabelled" K label namespace kube-system istio-injection-
