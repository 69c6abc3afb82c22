#!/usr/bin/env bash
# Cluster mode end to end: `sidecar-injector serve --cluster` as local processes against the real
# kube-apiserver of tests/e2e/control-plane.sh, with a ServiceAccount token bound to exactly the
# documented permissions (deploy/rbac-cluster-mode.yaml, its admission policy included) as its
# only credential. Webhooks are registered by `url: https://127.0.0.1:PORT/inject` only; nothing
# dials a Service or pod IP. The API server presents a client certificate to webhooks (its
# admission configuration), for scenario 8.
#
#   1. a MutatingWebhookConfiguration created with an EMPTY caBundle is filled by the injector
#      and pods are then injected; another one it does not manage shows the x509 error until it
#      is labelled istio.io/rev=default, then it is cured too (time to a patched caBundle and to
#      the first admission are printed); the empty CA Secret of the manifests is filled
#   2. two replicas: one CA (one Secret, no Secret created), one leader (Lease); the leader is
#      SIGKILLed, the other takes over within the Lease duration; a caBundle edited by hand is
#      put back
#   3. CA rotation (CA validity shortened to 60 s) while pods are created in a loop: zero
#      failed creations, and the CA Secret went through at least one promotion, although a
#      foreign configuration labelled istio.io/rev=default (another Service, another CA) never
#      trusts the new CA: it is never written, /readyz and the log report it, and so does doctor
#   4. ConfigMap edits: a good one changes the next injection, a bad one is rejected (readyz,
#      metric) while the previous behaviour continues; deleting the ConfigMap keeps the last
#      good one; a replica whose ConfigMap does not exist is not ready and says why; one whose CA
#      Secret and Lease do not exist creates neither and says what creates them
#   5. revision `canary` beside `default`, each injecting its own namespaces, and the revision
#      tag `prod` (istio-revision-tag-prod, created with an empty caBundle) patched by canary
#   6. Events on the owning Deployment for injected and skipped pods; a scale-up to 40 replicas
#      makes one Event whose series count is 40; reviews POSTed straight to the webhook port (as
#      anyone who reaches it could) make no Event for a namespace no webhook of ours selects, a
#      namespace that does not exist, or a ReplicaSet that does not exist; 300 distinct pods
#      POSTed so make about 100 Events (the namespace's budget), not 300
#   7. least privilege: the token cannot read, create or take what it does not need
#   8. caller authentication: a replica with --client-ca answers the API server (which presents
#      its client certificate) and refuses callers without one or with another CA's; a replica
#      trusting another CA makes the API server's calls fail closed; the file is reloaded
#
# Prints every check and last exactly one line "N passed, M failed"; exits non-zero on failure.
#   CLUSTER_E2E_KEEP=1       keep the temp dir (logs); kept anyway on failure
#   CLUSTER_E2E_TIMEOUT=60   seconds per poll
#   SIDECAR_INJECTOR_BIN=... use this binary instead of building target/release/sidecar-injector
# shellcheck disable=SC2317
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
E2E=cluster
WAIT=${CLUSTER_E2E_TIMEOUT:-60}
DEADLINE=""
T0=$(date +%s%N)
DIR=$(mktemp -d "${TMPDIR:-/tmp}/sidecar-e2e-cluster.XXXXXX")
CP_STARTED=""
declare -A PID=() ADDR=() MON=() ARGS=()
DURATIONS=()
# shellcheck source=tests/e2e/lib.sh
. "$HERE/lib.sh"

KEEP=${CLUSTER_E2E_KEEP:-}
FAILURE_LOGS=("$DIR/logs/kube-apiserver.log" "$DIR/injector-*.log")
stop_processes() { local name; for name in "${!PID[@]}"; do stop_pid "${PID[$name]}"; done; }
trap e2e_finish EXIT
trap e2e_interrupted INT TERM


# ---------------------------------------------------------------------------- set-up
build_release || exit 1
command -v curl >/dev/null || { bad "curl is needed"; exit 1; }
# Caller authentication (scenario 8): the API server presents a client certificate to webhooks,
# as its admission configuration's kubeconfig says (docs/security.md). The CA that signed it is
# what `serve --client-ca` trusts.
client_pki() {
  local p=$DIR/client-pki
  mkdir -p "$p" && cd "$p" || return 1
  for ca in apiserver-client-ca other-client-ca; do
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=$ca" \
      -keyout "$ca.key" -out "$ca.crt" -addext basicConstraints=critical,CA:TRUE \
      -addext keyUsage=critical,keyCertSign 2>/dev/null || return 1
  done
  leaf() {   # leaf NAME CA
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$1" -keyout "$1.key" -out "$1.csr" 2>/dev/null &&
    printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n' > "$1.ext" &&
    openssl x509 -req -in "$1.csr" -CA "$2.crt" -CAkey "$2.key" -CAcreateserial -days 2 -extfile "$1.ext" -out "$1.crt" 2>/dev/null
  }
  leaf kube-apiserver-webhook-client apiserver-client-ca && leaf stranger other-client-ca || return 1
  cat > webhook-kubeconfig.yaml <<EOF2
apiVersion: v1
kind: Config
users:
- name: "*"
  user:
    client-certificate: $p/kube-apiserver-webhook-client.crt
    client-key: $p/kube-apiserver-webhook-client.key
EOF2
  cat > admission.yaml <<EOF2
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: MutatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: $p/webhook-kubeconfig.yaml
EOF2
  cp apiserver-client-ca.crt client-ca.pem
}
check "a client CA, the API server's webhook client certificate from it, and the admission configuration that makes the API server present it" client_pki
export KUBE_APISERVER_EXTRA_ARGS="${KUBE_APISERVER_EXTRA_ARGS:-} --admission-control-config-file=$DIR/client-pki/admission.yaml"
control_plane_up "${CLUSTER_E2E_BUDGET:-600}"
SA() { K --kubeconfig "$DIR/sa.kubeconfig" "$@"; }

check "namespace istio-system and the injector's permissions (deploy/rbac-cluster-mode.yaml, 127.0.0.1 among its hosts)" bash -c "
  $(declare -f cluster_mode_rbac); ROOT='$ROOT'
  '$DIR/kubectl' create namespace istio-system && cluster_mode_rbac | '$DIR/kubectl' apply -f -"
# The other revision (canary) and two replicas started with objects that do not exist get names
# of their own, granted the way the chart grants its release's, and created the way it does.
check "the canary revision's names (its CA Secret, Lease and ConfigMaps) and those of the missing-object replicas, granted by name; the canary's empty Secret and Lease created" \
  K apply -f - <<'EOF'
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: sidecar-injector-e2e-names, namespace: istio-system}
rules:
- apiGroups: [""]
  resources: [secrets]
  resourceNames: [sidecar-injector-ca-canary, sidecar-injector-ca-missing]
  verbs: [list, watch, update]
- apiGroups: [""]
  resources: [configmaps]
  resourceNames: [istio-sidecar-injector-canary, istio-canary, missing-e2e]
  verbs: [list, watch]
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  resourceNames: [sidecar-injector-leader-canary, sidecar-injector-leader-missing]
  verbs: [get, patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: sidecar-injector-e2e-names, namespace: istio-system}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: sidecar-injector-e2e-names}
subjects: [{kind: ServiceAccount, name: sidecar-injector, namespace: istio-system}]
---
apiVersion: v1
kind: Secret
metadata: {name: sidecar-injector-ca-canary, namespace: istio-system}
type: Opaque
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: sidecar-injector-leader-canary, namespace: istio-system}
EOF
SECRETS_BEFORE=$(K -n istio-system get secrets -o name | sort | tr '\n' ' ')
make_sa_kubeconfig() { sa_kubeconfig istio-system sidecar-injector "$DIR/sa.kubeconfig"; }
check "a kubeconfig with the ServiceAccount's token only (kubectl create token)" make_sa_kubeconfig
check "namespaces: e2e-enabled (istio-injection=enabled), e2e-unmanaged, e2e-canary (istio.io/rev=canary), e2e-prod (istio.io/rev=prod)" bash -c "
  k='$DIR/kubectl'
  \$k create namespace e2e-enabled && \$k label namespace e2e-enabled istio-injection=enabled &&
  \$k create namespace e2e-unmanaged && \$k label namespace e2e-unmanaged e2e=unmanaged &&
  \$k create namespace e2e-canary && \$k label namespace e2e-canary istio.io/rev=canary &&
  \$k create namespace e2e-prod && \$k label namespace e2e-prod istio.io/rev=prod"
for ns in e2e-enabled e2e-unmanaged e2e-canary e2e-prod; do
  check "serviceaccount default exists in $ns" poll "$WAIT" K -n "$ns" get serviceaccount default
done

DEFAULTS=$ROOT/crates/injector-engine/defaults
# configmap NAME TAG: the injector ConfigMap from the embedded default configuration, with the
# proxy image tag TAG (so that each configuration's pods can be told apart)
configmap() {
  local name=$1 tag=$2
  python3 - "$DEFAULTS/values.json" "$tag" > "$DIR/values-$name.json" <<'PY'
import json, sys
v = json.load(open(sys.argv[1])); v.setdefault("global", {})["tag"] = sys.argv[2]; print(json.dumps(v))
PY
  K -n istio-system create configmap "$name" --from-file=config="$DEFAULTS/injector-config.yaml" \
    --from-file=values="$DIR/values-$name.json" --dry-run=client -o yaml | K apply -f -
}
check "ConfigMap istio-sidecar-injector (embedded default, tag e2e-1) and istio (mesh)" bash -c "
  $(declare -f K configmap); DIR='$DIR'; DEFAULTS='$DEFAULTS'
  configmap istio-sidecar-injector e2e-1 && K -n istio-system create configmap istio --from-file=mesh='$DEFAULTS/mesh.yaml'"

# mwc NAME URL NSKEY NSVALUE [LABELS]: a MutatingWebhookConfiguration with an empty caBundle
mwc() {
  local name=$1 url=$2 key=$3 value=$4 labels=${5:-}
  K apply -f - <<EOF2
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: $name
  labels: {e2e: cluster${labels:+, $labels}}
webhooks:
- name: $name.sidecar-injector.e2e.invalid
  clientConfig: {url: "$url"}
  rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [pods], scope: Namespaced}]
  namespaceSelector: {matchLabels: {$key: $value}}
  sideEffects: None
  admissionReviewVersions: [v1]
  failurePolicy: Fail
  timeoutSeconds: 10
EOF2
}
bundle_of() { K get mutatingwebhookconfiguration "$1" -o jsonpath='{.webhooks[0].clientConfig.caBundle}'; }
has_bundle() { [ -n "$(bundle_of "$1")" ]; }
secret_ca() { K -n istio-system get secret "${1:-sidecar-injector-ca}" -o jsonpath='{.data.ca\.crt}'; }
holder() { K -n istio-system get lease "${1:-sidecar-injector-leader}" -o jsonpath='{.spec.holderIdentity}'; }

# start NAME [ARGS...]: start an injector (or restart it on the same ports); does not wait
start() {
  local name=$1; shift
  if [ -z "${ADDR[$name]:-}" ]; then
    local a m; alloc_port a; alloc_port m; ADDR[$name]=$a; MON[$name]=$m; ARGS[$name]="$*"
  fi
  # shellcheck disable=SC2086
  "$BIN" serve --cluster --kubeconfig "$DIR/sa.kubeconfig" --namespace istio-system --service-name istiod \
    --dns-name 127.0.0.1 --addr "127.0.0.1:${ADDR[$name]}" --monitoring-addr "127.0.0.1:${MON[$name]}" \
    --identity "injector-$name" --ca-validity 60s --ca-overlap 8s --ca-settle 2s --cert-validity 30s \
    --resync 1s --lease-duration 6s --log-format json ${ARGS[$name]} >> "$DIR/injector-$name.log" 2>&1 &
  PID[$name]=$!
}
readyz() { curl -sS --max-time 2 "http://127.0.0.1:${MON[$1]}/readyz"; }
is_ready() { readyz "$1" | grep -q '"ready":true'; }
metric() { curl -sS --max-time 2 "http://127.0.0.1:${MON[$1]}/metrics" | awk -v m="$2" '$1 == m { print $2 }'; }
url() { echo "https://127.0.0.1:${ADDR[$1]}/inject"; }

# pod NS NAME [dry]: create a pod; prints the istio-proxy image (empty: not injected) or fails
pod() {
  local ns=$1 name=$2 extra=()
  [ "${3:-}" = dry ] && extra=(--dry-run=server)
  printf 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\nspec:\n  containers:\n  - name: app\n    image: registry.invalid/pause:1\n' "$name" |
    K -n "$ns" create -f - "${extra[@]}" -o jsonpath='{range .spec.initContainers[?(@.name=="istio-proxy")]}{.image}{end}{range .spec.containers[?(@.name=="istio-proxy")]}{.image}{end}'
}
injected_with() { local got; got=$(pod "$1" "$2" "${4:-}") || return 1; case "$got" in *":$3") return 0 ;; esac; echo "got image '$got', want tag $3"; return 1; }
N=0   # pod names are p1, p2, ...: "p$((++N))" (arithmetic expansion runs in this shell)

# ---------------------------------------------------------------------------- 1
scenario "1: empty caBundle filled, x509 shown and cured"
alloc_port PA; alloc_port MA; ADDR[a]=$PA; MON[a]=$MA; ARGS[a]=""
check "MutatingWebhookConfiguration istio-sidecar-injector (managed) created with an empty caBundle" mwc istio-sidecar-injector "$(url a)" istio-injection enabled
check "MutatingWebhookConfiguration unmanaged-e2e (not ours yet) created with an empty caBundle" mwc unmanaged-e2e "$(url a)" e2e unmanaged
T_START=$(date +%s%N)
start a
run "injector a ready (config from its ConfigMap, certificate from a new CA)" poll "$WAIT" is_ready a
T_READY=$(secs_since "$T_START")
run "the caBundle of istio-sidecar-injector is filled" poll "$WAIT" has_bundle istio-sidecar-injector
T_BUNDLE=$(secs_since "$T_START")
run "a pod in e2e-enabled is injected (proxy tag e2e-1)" poll "$WAIT" injected_with e2e-enabled "p$((++N))" e2e-1 dry
T_FIRST=$(secs_since "$T_START")
log "start to ready: $T_READY s; to a patched caBundle: $T_BUNDLE s; to the first admission served through the API server: $T_FIRST s"
DURATIONS+=("injector start -> ready $T_READY s, -> caBundle patched $T_BUNDLE s, -> first admission $T_FIRST s")
check "the empty CA Secret istio-system/sidecar-injector-ca (from the manifests) was filled, and the caBundle holds its CA" bash -c "
  [ \"\$('$DIR/kubectl' -n istio-system get secret sidecar-injector-ca -o jsonpath='{.data.ca\.crt}' | base64 -d | head -c 27)\" = '-----BEGIN CERTIFICATE-----' ]"
check "unmanaged-e2e keeps its empty caBundle" bash -c "[ -z \"\$('$DIR/kubectl' get mutatingwebhookconfiguration unmanaged-e2e -o jsonpath='{.webhooks[0].clientConfig.caBundle}')\" ]"
expect_x509() { local out; if out=$(pod e2e-unmanaged "p$((++N))" 2>&1); then echo "created: $out"; return 1; fi; echo "$out" | grep -q 'x509: certificate signed by unknown authority' || { echo "$out"; return 1; }; log "    kubectl said: $out"; }
run "a pod in e2e-unmanaged fails: x509: certificate signed by unknown authority" expect_x509
check "label unmanaged-e2e istio.io/rev=default" K label mutatingwebhookconfiguration unmanaged-e2e istio.io/rev=default
t=$(date +%s%N)
run "its caBundle is filled" poll "$WAIT" has_bundle unmanaged-e2e
log "labelled to patched: $(secs_since "$t") s"
run "a pod in e2e-unmanaged is now created and injected" poll "$WAIT" injected_with e2e-unmanaged "p$((++N))" e2e-1
scenario_end

# ---------------------------------------------------------------------------- 2
scenario "2: two replicas, one CA, one leader; failover; a hand-edited caBundle is put back"
CA_BEFORE=$(secret_ca)
start b
run "injector b ready" poll "$WAIT" is_ready b
no_new_secret() { [ "$(K -n istio-system get secrets -o name | sort | tr '\n' ' ')" = "$SECRETS_BEFORE" ]; }
check "b reuses the CA Secret (no Secret was created: the same as before, $SECRETS_BEFORE)" no_new_secret
run "the Lease is held by injector-a" poll "$WAIT" bash -c "[ \"\$('$DIR/kubectl' -n istio-system get lease sidecar-injector-leader -o jsonpath='{.spec.holderIdentity}')\" = injector-a ]"
check "b reports itself not leading (metric sidecar_injector_leader 0)" bash -c "[ \"\$(curl -s http://127.0.0.1:${MON[b]}/metrics | awk '\$1==\"sidecar_injector_leader\"{print \$2}')\" = 0 ]"
check "point istio-sidecar-injector at b" K patch mutatingwebhookconfiguration istio-sidecar-injector --type=json \
  -p "[{\"op\":\"replace\",\"path\":\"/webhooks/0/clientConfig/url\",\"value\":\"$(url b)\"}]"
run "pods are injected through b" poll "$WAIT" injected_with e2e-enabled "p$((++N))" e2e-1
t=$(date +%s%N)
stop_pid "${PID[a]}" KILL; unset "PID[a]"
run "after SIGKILL of the leader a, b holds the Lease" poll 30 bash -c "[ \"\$('$DIR/kubectl' -n istio-system get lease sidecar-injector-leader -o jsonpath='{.spec.holderIdentity}')\" = injector-b ]"
T_TAKEOVER=$(secs_since "$t")
check "b took over within the Lease duration (6 s) plus one renewal ($T_TAKEOVER s)" bash -c "awk -v t=$T_TAKEOVER 'BEGIN { exit !(t <= 9) }'"
DURATIONS+=("leader failover after SIGKILL: $T_TAKEOVER s (Lease duration 6 s)")
GOOD=$(bundle_of istio-sidecar-injector)
check "edit the caBundle of istio-sidecar-injector by hand (another CA)" K patch mutatingwebhookconfiguration istio-sidecar-injector --type=json \
  -p "[{\"op\":\"replace\",\"path\":\"/webhooks/0/clientConfig/caBundle\",\"value\":\"$(printf 'not a CA' | base64)\"}]"
t=$(date +%s%N)
run "the leader puts our caBundle back" poll "$WAIT" bash -c "b=\$('$DIR/kubectl' get mutatingwebhookconfiguration istio-sidecar-injector -o jsonpath='{.webhooks[0].clientConfig.caBundle}'); [ -n \"\$b\" ] && [ \"\$b\" != \"$(printf 'not a CA' | base64)\" ]"
log "hand edit put back after $(secs_since "$t") s"
run "pods are injected again" poll "$WAIT" injected_with e2e-enabled "p$((++N))" e2e-1
start a
run "a restarted and ready again, following b" poll "$WAIT" is_ready a
check "still no Secret created" no_new_secret
[ -n "$CA_BEFORE" ] && ok "CA fingerprint before: recorded" || bad "no CA before"
scenario_end

# ---------------------------------------------------------------------------- 3
scenario "3: CA rotation while pods are being created"
check "point istio-sidecar-injector at a (a follower: rotation is the leader's, serving is everyone's)" K patch mutatingwebhookconfiguration istio-sidecar-injector --type=json \
  -p "[{\"op\":\"replace\",\"path\":\"/webhooks/0/clientConfig/url\",\"value\":\"$(url a)\"}]"
run "pods are injected through a" poll "$WAIT" injected_with e2e-enabled "p$((++N))" e2e-1
# Someone else's webhook labelled like one of ours: it points at another Service, trusts another
# CA and selects nothing (the API server never calls it). Before, a rotation waited for every
# selected webhook to trust the next CA, so this one would have held it up until the CA expired.
FOREIGN_BUNDLE=$(base64 -w0 < "$KUBE_CA_FILE")
check "a foreign MutatingWebhookConfiguration not-the-injector labelled istio.io/rev=default (service other/hooks, another CA, selects nothing)" K apply -f - <<EOF2
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: not-the-injector
  labels: {istio.io/rev: default}
webhooks:
- name: hooks.example.com
  clientConfig: {service: {namespace: other, name: hooks}, caBundle: "$FOREIGN_BUNDLE"}
  rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [pods]}]
  namespaceSelector: {matchLabels: {never: selected}}
  sideEffects: None
  admissionReviewVersions: [v1]
  failurePolicy: Ignore
EOF2
declare -A SEEN_CA=()
SEEN_CA[$(secret_ca)]=1
created=0; failed=0; end=$(( $(date +%s) + ${CLUSTER_E2E_ROTATION_SECONDS:-75} ))
while [ "$(date +%s)" -lt "$end" ]; do
  N=$((N + 1)); name=p$N
  if out=$(injected_with e2e-enabled "$name" e2e-1 2>&1); then created=$((created + 1)); else failed=$((failed + 1)); log "    creation of $name failed: $out"; fi
  ca=$(secret_ca 2>/dev/null || true); [ -n "$ca" ] && SEEN_CA[$ca]=1
done
log "pods created: $created, failed: $failed; CAs seen in the Secret: ${#SEEN_CA[@]}"
DURATIONS+=("rotation scenario: $created pods created, $failed failed, ${#SEEN_CA[@]} CAs")
check "zero failed creations during the rotations ($created created)" bash -c "[ $failed -eq 0 ] && [ $created -gt 20 ]"
check "the CA was rotated at least once (current CA changed in the Secret)" bash -c "[ ${#SEEN_CA[@]} -ge 2 ]"
check "a rotation step was logged by the leader" bash -c "cat '$DIR'/injector-*.log | grep -q 'every webhook trusts the next CA'"
check "the served certificate switched CA without a restart" bash -c "cat '$DIR'/injector-*.log | grep -q 'serving certificate issued by the new CA'"
foreign_untouched() {
  [ "$(K get mutatingwebhookconfiguration not-the-injector -o jsonpath='{.webhooks[0].clientConfig.caBundle}')" = "$FOREIGN_BUNDLE" ] &&
  ! K get mutatingwebhookconfiguration not-the-injector -o jsonpath='{.metadata.managedFields[*].manager}' | grep -q sidecar-injector
}
check "the foreign configuration was never written (its own caBundle; no field managed by sidecar-injector) and did not hold up the rotation" foreign_untouched
foreign_on_readyz() {
  local name
  for name in a b; do
    readyz "$name" | python3 -c '
import json, sys
f = json.load(sys.stdin)["cluster"]["foreignWebhooks"]
sys.exit(f != [{"configuration": "not-the-injector", "webhook": "hooks.example.com", "target": "service other/hooks:443"}])' || return 1
  done
}
check "each replica's /readyz reports it (cluster.foreignWebhooks)" foreign_on_readyz
check "it was logged as not ours" bash -c "[ \"\$(cat '$DIR'/injector-*.log | grep -c 'selected as ours but points elsewhere')\" -ge 1 ]"
doctor_reports_foreign() {
  local out
  out=$("$BIN" doctor --kubeconfig "$DIR/kubeconfig" --service-name istiod --dns-name 127.0.0.1 --no-probe --timeout 5s -o json 2>&1) || true
  python3 -c '
import json, sys
report = json.loads(sys.argv[1])
check = [c for c in report["checks"] if c["id"] == "foreign"]
assert check and check[0]["verdict"] == "warning", check
assert any(e.startswith("not-the-injector/hooks.example.com: service other/hooks:443, not the injector") for e in check[0]["evidence"]), check
assert "kubectl label mutatingwebhookconfiguration not-the-injector istio.io/rev-" in check[0]["fixes"][0], check
' "$out" || { echo "$out" | head -n 40; return 1; }
  log "    doctor: $(python3 -c 'import json,sys; c=[c for c in json.loads(sys.argv[1])["checks"] if c["id"]=="foreign"][0]; print(c["summary"], "|", c["evidence"][0])' "$out")"
}
check "doctor reports the foreign webhook (the foreign check: warning, where it points, the label to remove)" doctor_reports_foreign
check "remove the foreign configuration" K delete mutatingwebhookconfiguration not-the-injector
scenario_end

# ---------------------------------------------------------------------------- 4
scenario "4: ConfigMap edits: good, bad, deleted"
check "good edit: the proxy tag becomes e2e-2" bash -c "$(declare -f K configmap); DIR='$DIR'; DEFAULTS='$DEFAULTS'; configmap istio-sidecar-injector e2e-2"
run "the next pod gets tag e2e-2" poll "$WAIT" injected_with e2e-enabled "p$((++N))" e2e-2 dry
check "bad edit: data.config is not YAML" bash -c "'$DIR/kubectl' -n istio-system create configmap istio-sidecar-injector \
  --from-literal=config=\$'policy: [enabled\n  templates: {\n' --from-file=values='$DIR/values-istio-sidecar-injector.json' --dry-run=client -o yaml | '$DIR/kubectl' apply -f -"
rejected() { readyz "$1" | grep -q '"lastReloadError":"[^"]' && [ "$(metric "$1" sidecar_injector_config_last_reload_success)" = 0 ]; }
run "a rejects it: /readyz shows the error and sidecar_injector_config_last_reload_success is 0" poll "$WAIT" rejected a
check "a stays ready" is_ready a
log "    readyz: $(readyz a | head -c 400)"
run "pods are still injected with the last good configuration (tag e2e-2)" injected_with e2e-enabled "p$((++N))" e2e-2
check "delete the ConfigMap" K -n istio-system delete configmap istio-sidecar-injector
deleted() { readyz a | grep -q 'was deleted; keeping the last good configuration'; }
run "a says the ConfigMap was deleted and keeps the last good configuration" poll "$WAIT" deleted
run "pods are still injected (tag e2e-2)" injected_with e2e-enabled "p$((++N))" e2e-2
check "recreate it with tag e2e-3" bash -c "$(declare -f K configmap); DIR='$DIR'; DEFAULTS='$DEFAULTS'; configmap istio-sidecar-injector e2e-3"
run "the next pod gets tag e2e-3, and the error is gone" poll "$WAIT" bash -c "$(declare -f K pod injected_with readyz); DIR='$DIR'; MON_a=${MON[a]}; injected_with e2e-enabled probe e2e-3 dry && ! curl -s http://127.0.0.1:\$MON_a/readyz | grep -q '\"lastReloadError\":\"'"
start missing --injector-configmap missing-e2e --lease-name sidecar-injector-leader-missing
notready_why() { local body; body=$(readyz missing) || return 1; echo "$body" | grep -q '"ready":false' && echo "$body" | grep -q 'ConfigMap istio-system/missing-e2e does not exist'; }
run "a replica whose ConfigMap does not exist is not ready and says why" poll "$WAIT" notready_why
stop_pid "${PID[missing]}"; unset "PID[missing]"
start nosecret --ca-secret sidecar-injector-ca-missing --lease-name sidecar-injector-leader-missing
nosecret_why() {
  readyz nosecret | python3 -c '
import json, sys
r = json.load(sys.stdin)
assert r["ready"] is False, r
assert r["certificate"]["lastReloadError"].startswith("Secret istio-system/sidecar-injector-ca-missing does not exist: the chart and deploy/manifests create it empty"), r["certificate"]
assert "does not exist and this ServiceAccount may not create it" in (r["cluster"]["leaseError"] or ""), r["cluster"]'
}
run "a replica whose CA Secret and Lease do not exist creates neither: not ready, and /readyz says what creates them" poll "$WAIT" nosecret_why
log "    readyz: $(readyz nosecret | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["certificate"]["lastReloadError"], "|", r["cluster"]["leaseError"])')"
check "  ... and no Secret or Lease was created" bash -c "
  $(declare -f K no_new_secret); DIR='$DIR'; SECRETS_BEFORE='$SECRETS_BEFORE'
  no_new_secret && ! K -n istio-system get lease sidecar-injector-leader-missing"
stop_pid "${PID[nosecret]}"; unset "PID[nosecret]"
scenario_end

# ---------------------------------------------------------------------------- 5
scenario "5: revision canary beside default, and the revision tag prod"
check "ConfigMaps istio-sidecar-injector-canary (tag canary-1) and istio-canary" bash -c "
  $(declare -f K configmap); DIR='$DIR'; DEFAULTS='$DEFAULTS'
  configmap istio-sidecar-injector-canary canary-1 && K -n istio-system create configmap istio-canary --from-file=mesh='$DEFAULTS/mesh.yaml'"
alloc_port PC; alloc_port MC; ADDR[c]=$PC; MON[c]=$MC; ARGS[c]="--revision canary --ca-secret sidecar-injector-ca-canary"
check "istio-sidecar-injector-canary (for istio.io/rev=canary) and istio-revision-tag-prod (istio.io/rev=canary, istio.io/tag=prod; for istio.io/rev=prod), empty caBundles" bash -c "
  $(declare -f K mwc); DIR='$DIR'
  mwc istio-sidecar-injector-canary '$(url c)' istio.io/rev canary 'istio.io/rev: canary' &&
  mwc istio-revision-tag-prod '$(url c)' istio.io/rev prod 'istio.io/rev: canary, istio.io/tag: prod'"
start c
run "injector c (revision canary) ready" poll "$WAIT" is_ready c
run "c patched the canary webhook" poll "$WAIT" has_bundle istio-sidecar-injector-canary
run "c patched the revision tag's webhook" poll "$WAIT" has_bundle istio-revision-tag-prod
CANARY_POD=p$((++N))
run "e2e-canary pods get canary's proxy (tag canary-1)" poll "$WAIT" injected_with e2e-canary "$CANARY_POD" canary-1
run "e2e-prod pods (tag prod -> canary) get canary's proxy" poll "$WAIT" injected_with e2e-prod "p$((++N))" canary-1
run "e2e-enabled pods still get default's (tag e2e-3)" injected_with e2e-enabled "p$((++N))" e2e-3
status_rev() { K -n e2e-canary get pod "$1" -o jsonpath='{.metadata.annotations.sidecar\.istio\.io/status}' | grep -q '"revision":"canary"'; }
run "the canary pod's status annotation names revision canary" status_rev "$CANARY_POD"
check "the default revision's caBundle is not canary's" bash -c "[ \"\$('$DIR/kubectl' get mutatingwebhookconfiguration istio-sidecar-injector-canary -o jsonpath='{.webhooks[0].clientConfig.caBundle}')\" != \"\$('$DIR/kubectl' get mutatingwebhookconfiguration istio-sidecar-injector -o jsonpath='{.webhooks[0].clientConfig.caBundle}')\" ]"
run "the canary Lease is held by c" poll "$WAIT" bash -c "[ \"\$('$DIR/kubectl' -n istio-system get lease sidecar-injector-leader-canary -o jsonpath='{.spec.holderIdentity}')\" = injector-c ]"
scenario_end

# ---------------------------------------------------------------------------- 6
scenario "6: Events on the Deployment: injected, skipped; one Event for a scale-up"
# A namespace of its own: each namespace has its own budget of new Events, and scenario 3's
# hundreds of bare pods spent e2e-enabled's.
check "namespace e2e-events (istio-injection=enabled)" bash -c "
  '$DIR/kubectl' create namespace e2e-events && '$DIR/kubectl' label namespace e2e-events istio-injection=enabled"
check "serviceaccount default exists in e2e-events" poll "$WAIT" K -n e2e-events get serviceaccount default
deployment() {   # deployment NAME REPLICAS HOSTNETWORK
  K -n e2e-events apply -f - <<EOF2
apiVersion: apps/v1
kind: Deployment
metadata: {name: $1}
spec:
  replicas: $2
  selector: {matchLabels: {app: $1}}
  template:
    metadata: {labels: {app: $1}}
    spec:
      hostNetwork: $3
      containers: [{name: app, image: registry.invalid/pause:1}]
EOF2
}
# events_of NAME REASON: "count series.count" of the Events of ours regarding Deployment NAME
events_of() {
  K -n e2e-events get events.v1.events.k8s.io -o json | python3 -c '
import json, sys
name, reason = sys.argv[1], sys.argv[2]
items = [e for e in json.load(sys.stdin)["items"]
         if e.get("regarding", {}).get("kind") == "Deployment" and e["regarding"].get("name") == name
         and e.get("reason") == reason and e.get("reportingController") == "sidecar-injector.istio.io"]
print(len(items), max([(e.get("series") or {}).get("count", 1) for e in items] or [0]))' "$1" "$2"
}
check "Deployment web (3 replicas) and Deployment hostnet (hostNetwork: true, 1 replica)" bash -c "$(declare -f K deployment); DIR='$DIR'; deployment web 3 false && deployment hostnet 1 true"
run "an Event SidecarInjected on Deployment web" poll "$WAIT" bash -c "$(declare -f K events_of); DIR='$DIR'; [ \"\$(events_of web SidecarInjected | cut -d' ' -f1)\" = 1 ]"
run "an Event SidecarInjectionSkipped on Deployment hostnet (host network)" poll "$WAIT" bash -c "$(declare -f K events_of); DIR='$DIR'; [ \"\$(events_of hostnet SidecarInjectionSkipped | cut -d' ' -f1)\" = 1 ]"
check "scale web to 40 replicas" K -n e2e-events scale deployment web --replicas=40
run "40 pods of web exist" poll 120 bash -c "[ \"\$('$DIR/kubectl' -n e2e-events get pods -l app=web -o name | wc -l)\" = 40 ]"
run "still one Event for web, its count 40" poll "$WAIT" bash -c "$(declare -f K events_of); DIR='$DIR'; [ \"\$(events_of web SidecarInjected)\" = '1 40' ]"
log "    events for web: $(events_of web SidecarInjected) (Events, series count)"
# direct_review NS NAME [OWNER]: an AdmissionReview for a pod NAME in NS (controller OWNER, JSON)
direct_review() {
  python3 - "$@" <<'PY2'
import json, sys
ns, name = sys.argv[1], sys.argv[2]
meta = {"name": name, "namespace": ns}
if len(sys.argv) > 3:
    meta["ownerReferences"] = [json.loads(sys.argv[3])]
print(json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
    "uid": "direct-" + name, "namespace": ns, "operation": "CREATE",
    "kind": {"group": "", "version": "v1", "kind": "Pod"},
    "object": {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
               "spec": {"containers": [{"name": "app", "image": "registry.invalid/pause:1"}]}}}}))
PY2
}
# post_direct NS NAME [OWNER]: POSTs it to injector a's port, as a client that is not the API
# server (no certificate checked either); succeeds when answered 200
post_direct() {
  direct_review "$@" | curl -sk --max-time 5 -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \
    --data-binary @- "$(url a)" | grep -qx 200
}
# ours_in NS [NAME]: how many Events of ours are in NS (regarding NAME, when given)
ours_in() {
  K -n "$1" get events.v1.events.k8s.io -o json | python3 -c '
import json, sys
name = sys.argv[1] if len(sys.argv) > 1 else None
print(sum(1 for e in json.load(sys.stdin)["items"] if e.get("reportingController") == "sidecar-injector.istio.io"
          and (name is None or e.get("regarding", {}).get("name") == name)))' "${@:2}"
}
skipped() { local v; v=$(metric a "sidecar_injector_events_skipped_total{reason=\"$1\"}"); echo "${v:-0}"; }
UNSERVED_BEFORE=$(skipped unserved); NO_OWNER_BEFORE=$(skipped no_owner)
GHOST='{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "ghost-5d8f9", "uid": "6f1b7c2e-0000-4000-8000-000000000000", "controller": true}'
check "a review POSTed straight to the port for a pod in kube-system (no webhook of ours selects it) is answered" post_direct kube-system direct-system
check "one for a namespace that does not exist is answered" post_direct e2e-nowhere direct-nowhere
check "one in e2e-events whose owner is a ReplicaSet that does not exist is answered" post_direct e2e-events direct-ghost "$GHOST"
check "one in e2e-events for a bare pod (the control: a namespace we serve) is answered" post_direct e2e-events direct-control
run "the control makes its Event (regarding Pod direct-control)" poll "$WAIT" bash -c "$(declare -f K ours_in); DIR='$DIR'; [ \"\$(ours_in e2e-events direct-control)\" = 1 ]"
check "no Event of ours in kube-system" bash -c "$(declare -f K ours_in); DIR='$DIR'; [ \"\$(ours_in kube-system)\" = 0 ]"
check "none regarding the ReplicaSet that does not exist" bash -c "$(declare -f K ours_in); DIR='$DIR'; [ \"\$(ours_in e2e-events ghost-5d8f9)\" = 0 ] && [ \"\$(ours_in e2e-events direct-ghost)\" = 0 ]"
check "counted in sidecar_injector_events_skipped_total: 2 more unserved, 1 more with no such owner" bash -c "
  [ \"$(skipped unserved)\" = $((UNSERVED_BEFORE + 2)) ] && [ \"$(skipped no_owner)\" = $((NO_OWNER_BEFORE + 1)) ]"
# flood NS N: POSTs N reviews of distinct bare pods in NS straight to injector a; prints the seconds
flood() {
  python3 - "$(url a)" "$1" "$2" <<'PY2'
import http.client, json, ssl, sys, time, urllib.parse
url, ns, n = urllib.parse.urlparse(sys.argv[1]), sys.argv[2], int(sys.argv[3])
ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
conn = http.client.HTTPSConnection(url.hostname, url.port, context=ctx, timeout=10)
start = time.time()
for i in range(n):
    review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": f"flood-{i}", "namespace": ns, "operation": "CREATE",
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"flood-{i}", "namespace": ns},
                   "spec": {"containers": [{"name": "app", "image": "registry.invalid/pause:1"}]}}}}
    conn.request("POST", url.path, json.dumps(review), {"Content-Type": "application/json"})
    r = conn.getresponse(); r.read()
    assert r.status == 200, r.status
print(round(time.time() - start, 1))
PY2
}
check "namespace e2e-flood (istio-injection=enabled)" bash -c "
  '$DIR/kubectl' create namespace e2e-flood && '$DIR/kubectl' label namespace e2e-flood istio-injection=enabled"
LIMITED_BEFORE=$(skipped rate_limited)
FLOOD_SECONDS=$(flood e2e-flood 300) || FLOOD_SECONDS=fail
check "300 reviews of distinct bare pods in e2e-flood POSTed straight to the port are answered" [ "$FLOOD_SECONDS" != fail ]
run "the namespace's budget holds: 100 Events at once, then one a second (at most 130 of 300 in all)" poll "$WAIT" bash -c "
  $(declare -f K ours_in skipped metric); DIR='$DIR'; declare -A MON=([a]=${MON[a]})
  events=\$(ours_in e2e-flood); limited=\$(( \$(skipped rate_limited) - $LIMITED_BEFORE ))
  echo \"Events \$events, rate-limited \$limited\"
  [ \$(( events + limited )) -eq 300 ] && [ \$events -ge 100 ] && [ \$events -le 130 ]"
log "    300 distinct pods POSTed in $FLOOD_SECONDS s: $(ours_in e2e-flood) Events written in e2e-flood, $(( $(skipped rate_limited) - LIMITED_BEFORE )) left out"
scenario_end

# ---------------------------------------------------------------------------- 7
scenario "7: least privilege"
cannot() { [ "$(SA auth can-i "$@" 2>/dev/null)" = no ]; }
check "the token cannot list pods" cannot list pods -A
check "the token cannot read other Secrets of istio-system" cannot get secret/other -n istio-system
check "the token cannot read Secrets of other namespaces" cannot get secret/sidecar-injector-ca -n e2e-enabled
check "the token cannot update ConfigMaps" cannot update configmaps -n istio-system
check "the token cannot delete webhook configurations" cannot delete mutatingwebhookconfigurations
check "the token cannot create Secrets" cannot create secrets -n istio-system
check "the token cannot read its own CA Secret but by a watch of its name (no get)" cannot get secret/sidecar-injector-ca -n istio-system
check "the token cannot create Leases, nor get or patch another one (istiod's)" bash -c "
  $(declare -f K SA cannot); DIR='$DIR'
  cannot create leases -n istio-system && cannot get lease/istio-namespace-controller-election -n istio-system &&
  cannot patch lease/istio-namespace-controller-election -n istio-system"
check "the token cannot list every ConfigMap of istio-system (only its own, by name)" cannot list configmaps -n istio-system
check "the token cannot create real pods: the probe namespaces' create is limited to dry runs by the admission policy" bash -c "
  '$DIR/kubectl' get validatingadmissionpolicy sidecar-injector-istio-system-dry-run-pods -o jsonpath='{.spec.validations[0].expression}' | grep -qx 'request.dryRun == true'"
for name in a b c; do check "injector $name still running" alive "${PID[$name]}"; done
scenario_end

# ---------------------------------------------------------------------------- 8
scenario "8: caller authentication (--client-ca) through the real API server"
CP=$DIR/client-pki
check "namespace e2e-auth (e2e=auth)" bash -c "'$DIR/kubectl' create namespace e2e-auth && '$DIR/kubectl' label namespace e2e-auth e2e=auth"
check "serviceaccount default exists in e2e-auth" poll "$WAIT" K -n e2e-auth get serviceaccount default
alloc_port PAUTH; alloc_port MAUTH; ADDR[auth]=$PAUTH; MON[auth]=$MAUTH; ARGS[auth]="--client-ca $CP/client-ca.pem"
start auth
run "injector auth (--client-ca: the API server's client CA) ready" poll "$WAIT" is_ready auth
# Labelled istio.io/rev=default and pointing at 127.0.0.1: ours, so the leader keeps its caBundle.
check "MutatingWebhookConfiguration client-auth-e2e for e2e-auth, pointing at auth (istio.io/rev=default: the leader fills its caBundle)" \
  mwc client-auth-e2e "$(url auth)" e2e auth 'istio.io/rev: default'
run "its caBundle is filled" poll "$WAIT" has_bundle client-auth-e2e
run "a pod in e2e-auth is injected: the API server presented its client certificate" poll "$WAIT" injected_with e2e-auth "p$((++N))" e2e-3
# call [CERT-NAME]: GET /healthz on auth's webhook port; prints the HTTP status, fails without one
call() {
  local id=()
  [ -n "${1:-}" ] && id=(--cert "$CP/$1.crt" --key "$CP/$1.key")
  curl -sS --max-time 5 --insecure "${id[@]}" -o /dev/null -w '%{http_code}' "https://127.0.0.1:${ADDR[auth]}/healthz"
}
refused_call() { local out; if out=$(call "$@" 2>&1); then echo "answered: $out"; return 1; fi; log "    curl said: $out"; }
check "a caller without a client certificate gets no answer (TLS refused)" refused_call
check "a caller with a certificate of another CA gets no answer" refused_call stranger
check "a caller with the API server's client certificate gets an HTTP answer" call kube-apiserver-webhook-client
# A replica that trusts another CA only: the API server's calls fail closed, with its message.
check "namespace e2e-auth-other (e2e=auth-other)" bash -c "'$DIR/kubectl' create namespace e2e-auth-other && '$DIR/kubectl' label namespace e2e-auth-other e2e=auth-other"
check "serviceaccount default exists in e2e-auth-other" poll "$WAIT" K -n e2e-auth-other get serviceaccount default
alloc_port PAO; alloc_port MAO; ADDR[auth-other]=$PAO; MON[auth-other]=$MAO; ARGS[auth-other]="--client-ca $CP/other-client-ca.crt"
start auth-other
run "injector auth-other (--client-ca: another CA) ready" poll "$WAIT" is_ready auth-other
check "MutatingWebhookConfiguration client-auth-other-e2e for e2e-auth-other, pointing at auth-other" \
  mwc client-auth-other-e2e "$(url auth-other)" e2e auth-other 'istio.io/rev: default'
run "its caBundle is filled" poll "$WAIT" has_bundle client-auth-other-e2e
refused_by_auth() {
  local out
  if out=$(pod e2e-auth-other "auth-$(date +%s%N)" 2>&1); then echo "created: $out"; return 1; fi
  grep -q 'failed calling webhook' <<< "$out" || { echo "$out"; return 1; }
  log "    kubectl said: $(cut -c1-300 <<< "$out")"
}
run "the API server's calls to it are refused: pod creation in e2e-auth-other fails closed" poll "$WAIT" refused_by_auth
# Reloading: new connections are verified against the file as it is now (a connection already
# authenticated keeps going until it closes, as with the serving certificate).
cp "$CP/other-client-ca.crt" "$CP/client-ca.new" && mv "$CP/client-ca.new" "$CP/client-ca.pem"
run "auth's --client-ca file replaced by the other CA: its caller is answered" poll "$WAIT" call stranger
check "  ... and the API server's certificate is refused" refused_call kube-apiserver-webhook-client
cp "$CP/apiserver-client-ca.crt" "$CP/client-ca.new" && mv "$CP/client-ca.new" "$CP/client-ca.pem"
run "the API server's CA back: its certificate is answered again" poll "$WAIT" call kube-apiserver-webhook-client
run "pods in e2e-auth are injected through the API server" poll "$WAIT" injected_with e2e-auth "p$((++N))" e2e-3
check "injector auth still running (reloads, no restart)" alive "${PID[auth]}"
check "remove client-auth-e2e and client-auth-other-e2e" K delete mutatingwebhookconfiguration client-auth-e2e client-auth-other-e2e
scenario_end
