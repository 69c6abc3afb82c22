#!/usr/bin/env bash
# Install end to end: the Helm chart (deploy/helm/sidecar-injector) and the plain manifests
# (deploy/manifests) against the real kube-apiserver of tests/e2e/control-plane.sh, with Helm
# built from the Go module proxy (tools/helm/build.sh, cached outside the checkout).
#
#   1. static: the manifests, deploy/rbac-cluster-mode.yaml and the chart's default configuration
#      are in sync with the chart (deploy/render-manifests.sh --check); the chart's version is the
#      workspace's
#   2. `helm lint --strict` and `helm template` of each preset; NOTES warn about one replica
#      with failurePolicy Fail; invalid values (an unknown key, a wrong type, a policy other
#      than enabled/disabled) fail naming the value
#   3. every object rendered for each preset, and every deploy/manifests file, passes
#      `kubectl apply --dry-run=server` (schema and admission of the real API server)
#   4. `helm install` (webhook.url = a loopback port), then the chart's own pod spec is run:
#      the binary with exactly the installed Deployment's args and env (POD_NAME/POD_NAMESPACE
#      as the downward API gives them, mounted ConfigMaps/Secrets written as files under a temp
#      root) and a `kubectl create token` of the chart's ServiceAccount as its only credential,
#      under the container's securityContext (setpriv: runAsUser/runAsGroup, no new privileges,
#      no capabilities) and, the first time, strace: readOnlyRootFilesystem holds (no file
#      created, written, renamed or removed); its probes answer on the Deployment's probe ports
#   5. the troubleshooting page's scenarios through it: a labelled namespace's pod injected, an opted-out pod
#      not, the annotation on a Deployment's own metadata ignored (its pod template's honoured),
#      fail-closed while it is down (creation refused), back when it is up
#   6. `helm upgrade` with a changed template value changes the next injection; the caBundle
#      the injector set survives the upgrade
#   7. `helm uninstall` leaves no webhook behind; the CA Secret stays (resource-policy keep), a
#      reinstall of the release adopts it with its CA, and the README's command removes it
#   8. the Istio drop-in (values-istio.yaml, injectorConfig.create=false) over Istio's own
#      istio-sidecar-injector and istio ConfigMaps (rendered from Istio's istiod chart in
#      $SIDECAR_INJECTOR_SHARED): istio.io/rev and istio-injection namespaces and
#      sidecar.istio.io/inject=true pods injected with Istio's templates and values, a revision
#      tag's caBundle kept, a foreign configuration labelled istio.io/rev=default neither written
#      nor waited for (reported on /readyz), uninstall leaves Istio's configuration
#   9. least privilege, per preset: the chart's ServiceAccount's effective permissions (`kubectl
#      auth can-i --list` with its token: its namespace, any other, the probe's) are exactly
#      deploy/helm/sidecar-injector/tests/permissions/PRESET.txt; with its token, creating a
#      Secret, reading another Secret, creating or updating another Lease (istiod's), writing a
#      foreign webhook configuration, changing its own webhook's url or rules, and creating a
#      real pod are refused (RBAC or the admission policy), a dry-run pod is not
#
# Prints every check and last exactly one line "N passed, M failed"; exits non-zero on failure.
#   INSTALL_E2E_KEEP=1       keep the temp dir (logs); kept anyway on failure
#   INSTALL_E2E_TIMEOUT=60   seconds per poll
#   INSTALL_E2E_BUDGET=600   seconds for everything after the control plane is up
#   SIDECAR_INJECTOR_BIN=... use this binary instead of building target/release/sidecar-injector
#   HELM=...                 use this helm instead of building it
# Nothing dials a Service or pod IP: the webhook is registered by url: https://127.0.0.1:PORT.
# shellcheck disable=SC2317
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
E2E=install
WAIT=${INSTALL_E2E_TIMEOUT:-60}
DEADLINE=""
T0=$(date +%s%N)
DIR=$(mktemp -d "${TMPDIR:-/tmp}/sidecar-e2e-install.XXXXXX")
CP_STARTED=""
INJ_PID=""
TRACER_PID=""
DURATIONS=()
CHART=$ROOT/deploy/helm/sidecar-injector
NS=sidecar-injector
REL=sidecar-injector
# shellcheck source=tests/e2e/lib.sh
. "$HERE/lib.sh"

KEEP=${INSTALL_E2E_KEEP:-}
FAILURE_LOGS=("$DIR/logs/kube-apiserver.log" "$DIR/injector.log")
stop_processes() { stop_injector; }
trap e2e_finish EXIT
trap e2e_interrupted INT TERM


# ---------------------------------------------------------------------------- set-up
build_release || exit 1
command -v curl >/dev/null || { bad "curl is needed"; exit 1; }
command -v python3 >/dev/null || { bad "python3 is needed"; exit 1; }
python3 -c 'import yaml' 2>/dev/null || { bad "python3's yaml module is needed (Debian: python3-yaml)"; exit 1; }
if [ -z "${HELM:-}" ]; then
  t=$(date +%s%N)
  if HELM=$("$ROOT/tools/helm/build.sh" 2> "$DIR/helm-build.log" | tail -n 1) && [ -x "$HELM" ]; then
    ok "helm $("$HELM" version --template '{{.Version}}') from the Go module proxy ($(secs_since "$t") s; tools/helm/build.sh)"
  else
    bad "tools/helm/build.sh"; tail -n 20 "$DIR/helm-build.log" | sed 's/^/    /'; exit 1
  fi
fi
export HELM
# Helm's own state (cache, config, plugins) in the temp dir, never in the user's home.
export HELM_CACHE_HOME=$DIR/helm/cache HELM_CONFIG_HOME=$DIR/helm/config HELM_DATA_HOME=$DIR/helm/data
control_plane_up "${INSTALL_E2E_BUDGET:-600}"
H() { "$HELM" --kubeconfig "$DIR/kubeconfig" "$@"; }

# ---------------------------------------------------------------------------- 1
scenario "1: manifests, RBAC and version in sync with the chart"
check "deploy/manifests, deploy/rbac-cluster-mode.yaml and the chart's files/ are what the chart renders (deploy/render-manifests.sh --check)" \
  "$ROOT/deploy/render-manifests.sh" --check
check "Chart.yaml version and appVersion are the workspace version of Cargo.toml" python3 - "$ROOT/Cargo.toml" "$CHART/Chart.yaml" <<'PY'
import re, sys, yaml
cargo = open(sys.argv[1]).read()
want = re.search(r'^\[workspace\.package\][^\[]*?^version\s*=\s*"([^"]+)"', cargo, re.M | re.S).group(1)
chart = yaml.safe_load(open(sys.argv[2]))
got = (chart["version"], chart["appVersion"])
assert got == (want, want), f"Chart.yaml version/appVersion {got}, workspace version {want}"
PY
scenario_end

# ---------------------------------------------------------------------------- 2
scenario "2: helm lint, helm template, NOTES and invalid values"
render_to() { local out=$1; shift; "$HELM" template "$REL" "$CHART" "$@" > "$out"; }
PRESETS=("default::sidecar-injector" "opt-out:values-opt-out.yaml:sidecar-injector" "istio:values-istio.yaml:istio-system")
for p in "${PRESETS[@]}"; do
  IFS=: read -r pname pvalues pns <<< "$p"
  vargs=(); [ -n "$pvalues" ] && vargs=(-f "$CHART/$pvalues")
  check "helm lint --strict ($pname)" "$HELM" lint --strict "$CHART" --namespace "$pns" "${vargs[@]}"
  check "helm template ($pname) renders" render_to "$DIR/render-$pname.yaml" --namespace "$pns" "${vargs[@]}"
done
check "default: a Deployment of 2 replicas, a PDB, probes on /readyz and /healthz, non-root, read-only root, seccomp RuntimeDefault, no capabilities" \
  python3 - "$DIR/render-default.yaml" <<'PY'
import sys, yaml
docs = {d["kind"]: d for d in yaml.safe_load_all(open(sys.argv[1])) if d}
dep = docs["Deployment"]; spec = dep["spec"]; pod = spec["template"]["spec"]; c = pod["containers"][0]
assert spec["replicas"] == 2, spec["replicas"]
assert docs["PodDisruptionBudget"]["spec"]["maxUnavailable"] == 1
assert c["readinessProbe"]["httpGet"]["path"] == "/readyz" and c["livenessProbe"]["httpGet"]["path"] == "/healthz"
assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] == 65532
assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
sc = c["securityContext"]
assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False and sc["capabilities"]["drop"] == ["ALL"]
assert c["args"][:2] == ["serve", "--cluster"], c["args"]
assert c["image"] == "sidecar-injector:0.1.0" or c["image"].startswith("sidecar-injector:"), c["image"]
assert pod["topologySpreadConstraints"] and pod["affinity"]["podAntiAffinity"]
assert c["resources"]["limits"]["memory"] and c["resources"]["requests"]["memory"]
PY
check "every webhook: failurePolicy Fail, sideEffects NoneOnDryRun (Events on), the release namespace and kube-system excluded, sidecar.istio.io/inject=false pods left out" \
  python3 - "$DIR"/render-default.yaml "$DIR"/render-opt-out.yaml "$DIR"/render-istio.yaml <<'PY'
import sys, yaml
for path in sys.argv[1:]:
    docs = [d for d in yaml.safe_load_all(open(path)) if d]
    mwc = [d for d in docs if d["kind"] == "MutatingWebhookConfiguration"]
    assert len(mwc) == 1, path
    ns = [d for d in docs if d["kind"] == "Deployment"][0]["metadata"]["namespace"]
    for w in mwc[0]["webhooks"]:
        assert w["failurePolicy"] == "Fail" and w["sideEffects"] == "NoneOnDryRun", (path, w["name"])
        assert "caBundle" not in w["clientConfig"], (path, w["name"])
        exprs = w["namespaceSelector"]["matchExpressions"]
        names = [e for e in exprs if e["key"] == "kubernetes.io/metadata.name"][0]
        assert names["operator"] == "NotIn" and {ns, "kube-system"} <= set(names["values"]), (path, names)
        obj = w["objectSelector"]["matchExpressions"][0]
        assert obj["key"] == "sidecar.istio.io/inject" and (obj["operator"], obj["values"]) in [("NotIn", ["false"]), ("In", ["true"])], obj
print("ok")
PY
check "opt-in selects istio-injection=enabled; opt-out selects istio-injection NotIn disabled" python3 - "$DIR/render-default.yaml" "$DIR/render-opt-out.yaml" <<'PY'
import sys, yaml
def expr(path):
    mwc = [d for d in yaml.safe_load_all(open(path)) if d and d["kind"] == "MutatingWebhookConfiguration"][0]
    return [e for e in mwc["webhooks"][0]["namespaceSelector"]["matchExpressions"] if e["key"] == "istio-injection"]
assert expr(sys.argv[1]) == [{"key": "istio-injection", "operator": "In", "values": ["enabled"]}], expr(sys.argv[1])
assert expr(sys.argv[2]) == [{"key": "istio-injection", "operator": "NotIn", "values": ["disabled"]}], expr(sys.argv[2])
PY
check "Istio drop-in: Istio's names (istio-sidecar-injector webhook and ConfigMap, Service istiod, mesh ConfigMap istio read, not created), istio.io/rev label, Istio's four webhooks" \
  python3 - "$DIR/render-istio.yaml" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
by = {}
for d in docs: by.setdefault(d["kind"], []).append(d)
mwc = by["MutatingWebhookConfiguration"][0]
assert mwc["metadata"]["name"] == "istio-sidecar-injector" and mwc["metadata"]["labels"]["istio.io/rev"] == "default"
assert [w["name"] for w in mwc["webhooks"]] == ["rev.namespace.sidecar-injector.istio.io", "rev.object.sidecar-injector.istio.io", "namespace.sidecar-injector.istio.io", "object.sidecar-injector.istio.io"]
assert [c["metadata"]["name"] for c in by["ConfigMap"]] == ["istio-sidecar-injector"], [c["metadata"]["name"] for c in by["ConfigMap"]]
assert by["Service"][0]["metadata"]["name"] == "istiod" and by["Service"][0]["metadata"]["namespace"] == "istio-system"
args = by["Deployment"][0]["spec"]["template"]["spec"]["containers"][0]["args"]
for a in ["--service-name=istiod", "--webhook-config=istio-sidecar-injector", "--injector-configmap=istio-sidecar-injector", "--mesh-configmap=istio", "--ca-secret=sidecar-injector-ca", "--lease-name=sidecar-injector-leader"]:
    assert a in args, (a, args)
PY
check "least privilege as rendered: every Secret, Lease and ConfigMap rule names its objects, nothing creates Secrets or Leases; the CA Secret (empty, kept on uninstall) and the Lease are the chart's; webhooks patched by name but in the Istio drop-in; the admission policy bound to the ServiceAccount; the Service without the monitoring port; a NetworkPolicy" \
  python3 - "$DIR"/render-default.yaml "$DIR"/render-opt-out.yaml "$DIR"/render-istio.yaml <<'PY'
import sys, yaml
for path in sys.argv[1:]:
    docs = [d for d in yaml.safe_load_all(open(path)) if d]
    by = {}
    for d in docs: by.setdefault(d["kind"], []).append(d)
    ns = by["Deployment"][0]["metadata"]["namespace"]
    sa = by["ServiceAccount"][0]["metadata"]["name"]
    role = [r for r in by["Role"] if r["metadata"]["namespace"] == ns][0]
    for rule in role["rules"]:
        assert "create" not in rule["verbs"], (path, rule)
        if set(rule["resources"]) & {"secrets", "leases", "configmaps"}:
            assert rule.get("resourceNames"), (path, "a rule without resourceNames", rule)
    names = {r["resources"][0]: r["resourceNames"] for r in role["rules"]}
    secret, lease = by["Secret"][0], by["Lease"][0]
    assert names["secrets"] == [secret["metadata"]["name"]] and "data" not in secret, (path, names, secret)
    assert secret["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep", path
    assert names["leases"] == [lease["metadata"]["name"]], (path, names)
    cluster = by["ClusterRole"][0]["rules"]
    mwc = [r for r in cluster if r["resources"] == ["mutatingwebhookconfigurations"]][0]
    webhook = by["MutatingWebhookConfiguration"][0]["metadata"]["name"]
    if path.endswith("render-istio.yaml"):
        assert "resourceNames" not in mwc, (path, mwc)   # revision tags have any name
    else:
        assert mwc.get("resourceNames") == [webhook], (path, mwc)
    assert all("create" not in r["verbs"] for r in cluster if r["resources"] != ["events"]), (path, cluster)
    # The guards on the ServiceAccount (Deny), and the warnings at `kubectl apply` (Warn, Audit).
    guards = {b["spec"]["policyName"] for b in by["ValidatingAdmissionPolicyBinding"] if b["spec"]["validationActions"] == ["Deny"]}
    warns = {b["spec"]["policyName"] for b in by["ValidatingAdmissionPolicyBinding"] if b["spec"]["validationActions"] == ["Warn", "Audit"]}
    policies = {p["metadata"]["name"]: p for p in by["ValidatingAdmissionPolicy"] if p["metadata"]["name"] in guards}
    assert set(policies) == guards and len(policies) == 1, (path, set(policies), guards)
    assert len(warns) == 3 and warns <= {p["metadata"]["name"] for p in by["ValidatingAdmissionPolicy"]}, (path, warns)
    assert all(p["spec"]["failurePolicy"] == "Ignore" for p in by["ValidatingAdmissionPolicy"] if p["metadata"]["name"] in warns), path
    conditions = [[c["name"] for c in w.get("matchConditions", [])] for w in by["MutatingWebhookConfiguration"][0]["webhooks"]]
    assert all(c == ["not-host-network", "not-opted-out", "not-ignored-namespace"] for c in conditions), (path, conditions)
    for p in policies.values():
        want = f'request.userInfo.username == "system:serviceaccount:{ns}:{sa}"'
        assert p["spec"]["matchConditions"][0]["expression"] == want, p["spec"]["matchConditions"]
    assert [p["name"] for p in by["Service"][0]["spec"]["ports"]] == ["https-webhook"], path
    ingress = by["NetworkPolicy"][0]["spec"]["ingress"]
    assert ingress[0]["ports"][0]["port"] == 15017 and "from" not in ingress[0], ingress
    assert ingress[1]["ports"][0]["port"] == 15014 and ingress[1]["from"][0]["namespaceSelector"], ingress
print("ok")
PY
# kinds_of HELM-ARGS...: the kinds `helm template` renders, one per line
kinds_of() { "$HELM" template "$REL" "$CHART" --namespace "$NS" "$@" | sed -n 's/^kind: //p'; }
no_policy_when() { ! kinds_of "$@" | grep -qx ValidatingAdmissionPolicy; }
check "no admission policy with admissionPolicy.enabled=false and applyWarnings.enabled=false" no_policy_when --set admissionPolicy.enabled=false --set applyWarnings.enabled=false
check "no admission policy for a Kubernetes before 1.30 (no admissionregistration.k8s.io/v1 policies)" no_policy_when --kube-version 1.29.0
no_conditions_before_1_30() { ! "$HELM" template "$REL" "$CHART" --namespace "$NS" --kube-version 1.29.0 | grep -q 'matchConditions:'; }
check "no webhook matchConditions for a Kubernetes before 1.30" no_conditions_before_1_30
external_reads_only() {
  local out; out=$("$HELM" template "$REL" "$CHART" --namespace "$NS" --set certificates.mode=external) || return 1
  ! sed -n 's/^kind: //p' <<< "$out" | grep -qx Secret &&
  grep -A1 "resourceNames: \[$REL-tls\]" <<< "$out" | grep -q 'verbs: \[list, watch\]'
}
check "certificates.mode=external: no CA Secret, and the tls Secret is only listed and watched" external_reads_only
probe_policy() {
  [ "$(kinds_of --set probe.enabled=true --set applyWarnings.enabled=false | grep -cx ValidatingAdmissionPolicy)" = 2 ] &&
  "$HELM" template "$REL" "$CHART" --namespace "$NS" --set probe.enabled=true | grep -q 'expression: request.dryRun == true'
}
check "the probe adds the policy that lets the ServiceAccount create pods only as dry runs" probe_policy
fewer_rules() {
  ! "$HELM" template "$REL" "$CHART" --set-string nativeSidecars=true --show-only templates/clusterrole.yaml | grep -q nodes &&
  ! "$HELM" template "$REL" "$CHART" --set events=false --show-only templates/clusterrole.yaml | grep -Eq 'events|replicasets|jobs'
}
check "nativeSidecars fixed: no nodes rule; events=false: no Events nor owners' rules" fewer_rules
client_ca_mounted() {
  "$HELM" template "$REL" "$CHART" --namespace "$NS" --set clientCA.configMap=apiserver-client-ca \
    --show-only templates/deployment.yaml | python3 -c '
import sys, yaml
pod = yaml.safe_load(sys.stdin)["spec"]["template"]["spec"]; c = pod["containers"][0]
assert "--client-ca=/etc/sidecar-injector/client-ca/ca.crt" in c["args"], c["args"]
assert {"name": "client-ca", "mountPath": "/etc/sidecar-injector/client-ca", "readOnly": True} in c["volumeMounts"], c["volumeMounts"]
assert {"name": "client-ca", "configMap": {"name": "apiserver-client-ca"}} in pod["volumes"], pod["volumes"]' &&
  ! "$HELM" template "$REL" "$CHART" --namespace "$NS" --show-only templates/deployment.yaml | grep -q client-ca
}
check "clientCA.configMap mounts the ConfigMap read-only and passes --client-ca (nothing of it without)" client_ca_mounted
# The chart's ConfigMap with every injectorConfig key set, read by the injector's own strict
# loader (`inject`, the same loader as serve's ConfigMap watch).
cat > "$DIR/all-keys.yaml" <<'EOF'
injectorConfig:
  policy: disabled
  defaultTemplates: [sidecar, extra]
  templates:
    extra: |
      metadata:
        labels:
          chart-extra: "yes"
  neverInjectSelector:
  - matchExpressions: [{key: never, operator: Exists}]
  alwaysInjectSelector:
  - matchLabels: {always: "yes"}
  injectedAnnotations: {chart.example/injected: "true"}
  aliases: {both: [sidecar, extra]}
  values: {global: {tag: chart-values}}
meshConfig:
  mesh: {defaultConfig: {proxyMetadata: {CHART_MESH: from-mesh-config}}}
EOF
loader_accepts() {
  "$HELM" template "$REL" "$CHART" -f "$DIR/all-keys.yaml" --show-only templates/configmap-injector.yaml > "$DIR/cm-all.yaml" &&
  "$HELM" template "$REL" "$CHART" -f "$DIR/all-keys.yaml" --show-only templates/configmap-mesh.yaml > "$DIR/mesh-all.yaml" || return 1
  local out
  printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: web, labels: {always: "yes"}, annotations: {inject.istio.io/templates: "sidecar,extra"}}\nspec:\n  containers: [{name: web, image: nginx}]\n' > "$DIR/all-keys-pod.yaml"
  out=$("$BIN" inject -f "$DIR/all-keys-pod.yaml" --injector-config "$DIR/cm-all.yaml" --values "$DIR/cm-all.yaml" --mesh "$DIR/mesh-all.yaml") || return 1
  grep -q 'proxyv2:chart-values' <<< "$out" && grep -q 'chart-extra: "yes"' <<< "$out" && grep -q from-mesh-config <<< "$out" \
    || { echo "$out" | head -n 40; return 1; }
}
check "the chart's ConfigMaps with every injectorConfig key set are accepted by the injector's strict loader (values, extra template and mesh applied)" loader_accepts
notes() { H install "$REL" "$CHART" --namespace "$NS" --dry-run=client "$@" 2>&1; }
warns_one_replica() { notes --set replicaCount=1 | grep -q 'WARNING: replicaCount is 1 with failurePolicy Fail'; }
no_warning() { local out; out=$(notes); echo "$out" | grep -q 'NOTES:' && ! echo "$out" | grep -q WARNING; }
check "NOTES warn about one replica with failurePolicy Fail" warns_one_replica
warns_ignore() { notes --set webhook.failurePolicy=Ignore | grep -q 'WARNING: failurePolicy Ignore: while no replica answers, pods are created WITHOUT a sidecar'; }
check "NOTES warn about failurePolicy Ignore" warns_ignore
warns_url_host() {
  notes --set webhook.url=https://127.0.0.1:8443/inject | grep -q 'WARNING: 127.0.0.1 is not in certificates.dnsNames' &&
  ! notes --set webhook.url=https://127.0.0.1:8443/inject --set 'certificates.dnsNames={127.0.0.1}' | grep -q WARNING
}
check "NOTES warn when webhook.url's host is not in certificates.dnsNames (x509), and not once it is" warns_url_host
check "NOTES of the defaults (2 replicas) carry no warning" no_warning
# refused DESCRIPTION PATTERN HELM-ARGS...: helm template fails and its message matches PATTERN
refused() {
  local what=$1 pat=$2 out; shift 2
  if out=$("$HELM" template "$REL" "$CHART" --namespace "$NS" "$@" 2>&1); then bad "$what: accepted"; return; fi
  if printf '%s\n' "$out" | grep -Eq "$pat"; then ok "$what"; log "    helm said: $(printf '%s' "$out" | tr '\n' ' ' | cut -c1-220)"
  else bad "$what: message does not match /$pat/"; printf '%s\n' "$out" | head -n 10 | sed 's/^/    /'; fi
}
refused "an unknown key (webhook.failurPolicy) is refused, naming it" "at '/webhook': additional properties 'failurPolicy' not allowed" --set webhook.failurPolicy=Fail
refused "an unknown top-level key (replicas) is refused, naming it" "additional properties 'replicas' not allowed" --set replicas=3
refused "a wrong type (replicaCount=two) is refused, naming the value" "at '/replicaCount': got string, want integer" --set replicaCount=two
refused "a wrong type (events: \"yes\") is refused, naming the value" "at '/events': got string, want boolean" --set-string events=yes
refused "a policy other than enabled/disabled (injectorConfig.policy=enable) is refused, naming it" "at '/injectorConfig/policy': value must be one of 'enabled', 'disabled'" --set injectorConfig.policy=enable
refused "a namespaceSelection outside opt-in/opt-out/istio is refused, naming it" "at '/webhook/namespaceSelection'" --set webhook.namespaceSelection=all
refused "timeoutSeconds above 30 is refused, naming it" "at '/webhook/timeoutSeconds'" --set webhook.timeoutSeconds=45
scenario_end

# ---------------------------------------------------------------------------- 3
scenario "3: server-side dry run of every rendered object and every manifest"
check "namespaces sidecar-injector and istio-system" bash -c "'$DIR/kubectl' create namespace sidecar-injector && '$DIR/kubectl' create namespace istio-system"
for p in "${PRESETS[@]}"; do
  IFS=: read -r pname _ _ <<< "$p"
  n=$(grep -c '^kind:' "$DIR/render-$pname.yaml")
  check "$pname: all $n rendered objects pass kubectl apply --dry-run=server" K apply --dry-run=server -f "$DIR/render-$pname.yaml"
done
for f in "$ROOT"/deploy/manifests/*.yaml; do
  check "deploy/manifests/$(basename "$f") passes kubectl apply --dry-run=server" K apply --dry-run=server -f "$f"
done
check "nothing was created by the dry runs (no MutatingWebhookConfiguration)" bash -c "[ -z \"\$('$DIR/kubectl' get mutatingwebhookconfigurations -o name)\" ]"
scenario_end

# ---------------------------------------------------------------------------- 4
scenario "4: helm install, then the chart's own pod spec run with the chart's ServiceAccount"
alloc_port PORT; alloc_port MPORT
INSTALL_ARGS=(--namespace "$NS" --set "webhook.url=https://127.0.0.1:$PORT/inject" --set "certificates.dnsNames={127.0.0.1}"
  --set listenAddress=127.0.0.1 --set "ports.webhook=$PORT" --set "ports.monitoring=$MPORT"
  --set injectorConfig.values.global.tag=e2e-1
  --set probe.enabled=true --set probe.interval=2s --set probe.timeout=2s)
t=$(date +%s%N)
check "helm install $REL (webhook.url=https://127.0.0.1:$PORT/inject)" H install "$REL" "$CHART" "${INSTALL_ARGS[@]}"
log "helm install took $(secs_since "$t") s"
check "helm status: deployed" bash -c "'$HELM' --kubeconfig '$DIR/kubeconfig' status $REL -n $NS -o json | grep -q '\"status\":\"deployed\"'"
WEBHOOK=$(K get mutatingwebhookconfigurations -l "app.kubernetes.io/instance=$REL" -o jsonpath='{.items[0].metadata.name}')
check "the installed MutatingWebhookConfiguration $WEBHOOK has no caBundle yet" bash -c "[ -z \"\$('$DIR/kubectl' get mutatingwebhookconfiguration '$WEBHOOK' -o jsonpath='{.webhooks[0].clientConfig.caBundle}')\" ]"
check "the injector's own pods are created although no replica answers yet (its namespace is excluded)" \
  poll "$WAIT" bash -c "[ \"\$('$DIR/kubectl' -n $NS get pods -l app.kubernetes.io/instance=$REL -o name | wc -l)\" -ge 2 ]"

K -n "$NS" get deployment "$REL" -o json > "$DIR/deployment.json"
SA_NAME=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["spec"]["template"]["spec"]["serviceAccountName"])' "$DIR/deployment.json")
# The token of the chart's ServiceAccount: the only credential the injector gets.
make_sa_kubeconfig() { sa_kubeconfig "$NS" "$SA_NAME" "$DIR/sa.kubeconfig" 1h; }
check "kubectl create token of the chart's ServiceAccount $NS/$SA_NAME" make_sa_kubeconfig

# The pod as the kubelet would run it: args, env (downward API), mounted ConfigMaps and Secrets
# as files under $DIR/root. Writes $DIR/pod.env (NAME=VALUE lines), $DIR/pod.args (one per
# line) and $DIR/pod.probes (readiness and liveness URLs).
POD_NAME_GIVEN="$REL-e2e-0"
pod_spec() {
  python3 - "$DIR/deployment.json" "$DIR" "$POD_NAME_GIVEN" <<'PY'
import base64, json, os, subprocess, sys
dep = json.load(open(sys.argv[1])); out = sys.argv[2]; pod_name = sys.argv[3]
pod = dep["spec"]["template"]["spec"]; c = pod["containers"][0]; ns = dep["metadata"]["namespace"]
kubectl = [os.path.join(out, "kubectl"), "--request-timeout=30s", "-n", ns]
def get(kind, name):
    return json.loads(subprocess.check_output(kubectl + ["get", kind, name, "-o", "json"]))
field = {"metadata.name": pod_name, "metadata.namespace": ns, "spec.serviceAccountName": pod["serviceAccountName"]}
env = {}
for e in c.get("env", []):
    if "value" in e: env[e["name"]] = e["value"]; continue
    src = e["valueFrom"]
    if "fieldRef" in src: env[e["name"]] = field[src["fieldRef"]["fieldPath"]]
    elif "configMapKeyRef" in src: env[e["name"]] = get("configmap", src["configMapKeyRef"]["name"])["data"][src["configMapKeyRef"]["key"]]
    elif "secretKeyRef" in src: env[e["name"]] = base64.b64decode(get("secret", src["secretKeyRef"]["name"])["data"][src["secretKeyRef"]["key"]]).decode()
    else: sys.exit(f"env {e['name']}: unsupported source {src}")
volumes = {v["name"]: v for v in pod.get("volumes", [])}
for m in c.get("volumeMounts", []):
    v = volumes[m["name"]]; root = os.path.join(out, "root") + m["mountPath"]
    os.makedirs(root, exist_ok=True)
    if "configMap" in v:
        for k, val in get("configmap", v["configMap"]["name"]).get("data", {}).items():
            open(os.path.join(root, k), "w").write(val)
    elif "secret" in v:
        for k, val in get("secret", v["secret"]["secretName"]).get("data", {}).items():
            open(os.path.join(root, k), "wb").write(base64.b64decode(val))
    elif "emptyDir" not in v:
        sys.exit(f"volume {m['name']}: unsupported type {v}")
if c.get("command"): sys.exit(f"the container has a command {c['command']}: the image's entrypoint is /sidecar-injector")
with open(os.path.join(out, "pod.env"), "w") as f:
    for k, val in env.items(): f.write(f"{k}={val}\n")
open(os.path.join(out, "pod.args"), "w").write("".join(a + "\n" for a in c["args"]))
psc, csc = pod.get("securityContext", {}), c.get("securityContext", {})
sec = {
    "uid": csc.get("runAsUser", psc.get("runAsUser", 0)),
    "gid": csc.get("runAsGroup", psc.get("runAsGroup", 0)),
    "no_new_privs": csc.get("allowPrivilegeEscalation", True) is False,
    "drop_all": "ALL" in csc.get("capabilities", {}).get("drop", []),
    "read_only_root": csc.get("readOnlyRootFilesystem", False) is True,
    "writable": [m["mountPath"] for m in c.get("volumeMounts", []) if not m.get("readOnly")],
}
if (csc.get("runAsNonRoot", psc.get("runAsNonRoot")) is True) and sec["uid"] == 0:
    sys.exit("runAsNonRoot with UID 0: the kubelet would refuse to start this container")
json.dump(sec, open(os.path.join(out, "pod.security.json"), "w"))
ports = {p["name"]: p["containerPort"] for p in c["ports"]}
with open(os.path.join(out, "pod.probes"), "w") as f:
    for probe in ("readinessProbe", "livenessProbe"):
        g = c[probe]["httpGet"]; port = ports.get(g["port"], g["port"])
        f.write(f"http://127.0.0.1:{port}{g['path']}\n")
PY
}
check "the installed Deployment's container: args, env (downward API), mounts and probes extracted" pod_spec
log "    args: $(tr '\n' ' ' < "$DIR/pod.args")"
log "    env:  $(tr '\n' ' ' < "$DIR/pod.env")"
mapfile -t POD_ARGS < "$DIR/pod.args"
mapfile -t POD_ENV < "$DIR/pod.env"
mapfile -t PROBES < "$DIR/pod.probes"
# security_wrap: setpriv with the container's securityContext (runAsUser/runAsGroup, no new
# privileges, every capability dropped) when this script runs as root; sets WRAP
security_wrap() {
  WRAP=()
  command -v setpriv >/dev/null && [ "$(id -u)" = 0 ] || return 0
  local uid gid nnp drop
  read -r uid gid nnp drop < <(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(s["uid"], s["gid"], int(s["no_new_privs"]), int(s["drop_all"]))' "$DIR/pod.security.json")
  WRAP=(setpriv "--reuid=$uid" "--regid=$gid" --clear-groups)
  [ "$nnp" = 1 ] && WRAP+=(--no-new-privs)
  [ "$drop" = 1 ] && WRAP+=(--bounding-set=-all --inh-caps=-all)
  # The pod's user reads its kubeconfig (as it would read its token), nothing else of $DIR.
  chmod 711 "$DIR" && chown "$uid:$gid" "$DIR/sa.kubeconfig"
}
# start_injector [TRACE]: TRACE=trace runs it under strace, recording every file it creates,
# opens for writing, renames or removes (readOnlyRootFilesystem)
start_injector() {
  security_wrap
  local trace=()
  # (only where ptrace is allowed: some CI sandboxes forbid it)
  if [ "${1:-}" = trace ] && command -v strace >/dev/null && strace -f -qq -o /dev/null true 2>/dev/null; then
    trace=(strace -f --seccomp-bpf -qq -e trace=open,openat,creat,mkdir,mkdirat,rename,renameat,renameat2,unlink,unlinkat,truncate,symlink,symlinkat,link,linkat -o "$DIR/strace.log")
  fi
  # Only the pod's environment, and the token's kubeconfig as the service account would be.
  "${trace[@]}" "${WRAP[@]}" env -i PATH=/usr/bin:/bin HOME="$DIR/root" "KUBECONFIG=$DIR/sa.kubeconfig" "${POD_ENV[@]}" \
    "$BIN" "${POD_ARGS[@]}" >> "$DIR/injector.log" 2>&1 &
  INJ_PID=$! TRACER_PID=""
  if [ ${#trace[@]} -gt 0 ]; then
    # strace's child (setpriv, env and the binary exec in turn in it) is the injector. It is
    # found by its own command line once the last exec happened: a child of strace found earlier
    # can be another process (seen once: SIGTERM went elsewhere, the injector kept serving and the
    # fail-closed check failed).
    TRACER_PID=$INJ_PID INJ_PID=""
    local i
    for ((i = 0; i < 200; i++)); do
      INJ_PID=$(pgrep -f -- "^$BIN serve .*--addr=127\.0\.0\.1:$PORT( |\$)" | head -n 1) && [ -n "$INJ_PID" ] && break
      sleep 0.05
    done
    [ -n "$INJ_PID" ] || { echo "$E2E: strace started no injector" >&2; INJ_PID=$TRACER_PID TRACER_PID=""; }
  fi
}
# stop_injector: SIGTERM to the injector (graceful drain), then its tracer ends on its own
stop_injector() {
  [ -n "$INJ_PID" ] && stop_pid "$INJ_PID"
  [ -n "${TRACER_PID:-}" ] && stop_pid "$TRACER_PID"
  INJ_PID="" TRACER_PID=""
}
# no_writes: the strace log shows no file created, opened for writing, renamed or removed
# outside /dev, /proc and the container's writable mounts
no_writes() {
  python3 - "$DIR/strace.log" "$DIR/pod.security.json" <<'PY2'
import json, re, sys
sec = json.load(open(sys.argv[2]))
allowed = ("/dev/", "/proc/", "/sys/") + tuple(m.rstrip("/") + "/" for m in sec["writable"])
bad = []
for line in open(sys.argv[1]):
    m = re.search(r'(\w+)\((?:[^"]*)"([^"]*)"(.*)', line)
    if not m or "= -1" in line: continue
    call, path, rest = m.groups()
    writes = call in ("creat", "mkdir", "mkdirat", "rename", "renameat", "renameat2", "unlink", "unlinkat", "truncate", "symlink", "symlinkat", "link", "linkat") \
        or (call in ("open", "openat") and re.search(r"O_WRONLY|O_RDWR|O_CREAT|O_TRUNC", rest))
    if writes and not path.startswith(allowed): bad.append(line.strip())
if bad: sys.exit("writes outside the writable mounts:\n" + "\n".join(bad[:10]))
print(f"read_only_root={sec['read_only_root']}")
PY2
}
T_START=$(date +%s%N)
start_injector trace
if [ ${#WRAP[@]} -gt 0 ]; then log "    as the container's securityContext: ${WRAP[*]}"; else log "    not root or no setpriv: running as $(id -un), the securityContext is not applied"; fi
http_ok() { curl -fsS --max-time 2 -o /dev/null "$1"; }
run "the readiness probe ${PROBES[0]} answers 200 (configuration from the chart's ConfigMap, certificate from a new CA)" poll "$WAIT" http_ok "${PROBES[0]}"
T_READY=$(secs_since "$T_START")
check "the liveness probe ${PROBES[1]} answers 200" http_ok "${PROBES[1]}"
bundle() { K get mutatingwebhookconfiguration "$WEBHOOK" -o jsonpath='{.webhooks[0].clientConfig.caBundle}'; }
has_bundle() { [ -n "$(bundle)" ]; }
run "the injector filled the caBundle of $WEBHOOK" poll "$WAIT" has_bundle
T_BUNDLE=$(secs_since "$T_START")
filled() { [ "$(K -n "$NS" get secret "$REL-ca" -o jsonpath='{.data.ca\.crt}' | base64 -d | head -c 27)" = '-----BEGIN CERTIFICATE-----' ]; }
check "it filled the chart's empty CA Secret $NS/$REL-ca (an update: it may not create Secrets)" filled
check "it holds the chart's Lease ($REL-leader) as $POD_NAME_GIVEN (POD_NAME)" poll "$WAIT" bash -c \
  "[ \"\$('$DIR/kubectl' -n $NS get lease $REL-leader -o jsonpath='{.spec.holderIdentity}')\" = '$POD_NAME_GIVEN' ]"
# The chart's probe (probe.enabled): its namespaces and Roles from the chart, the canary through
# the API server and this injector, injected in one namespace and not in the other.
probe_green() {
  curl -fsS --max-time 2 "${PROBES[0]}" | python3 -c '
import json, sys
probe = json.load(sys.stdin)["cluster"]["probe"]
states = {t["namespace"]: t["state"] for t in probe["targets"]}
sys.exit(not (probe["probing"] and states == {"sidecar-injector-probe": "ok", "sidecar-injector-probe-opted-out": "ok"}))'
}
run "the chart's synthetic probe is green in both of its namespaces, with only the chart's probe Roles (/readyz cluster.probe)" poll "$WAIT" probe_green
DURATIONS+=("injector start -> ready $T_READY s, -> caBundle patched $T_BUNDLE s")
scenario_end

# ---------------------------------------------------------------------------- 5
scenario "5: the troubleshooting scenarios through the chart's injector"
check "namespaces e2e-enabled (istio-injection=enabled) and e2e-plain (no label)" bash -c "
  '$DIR/kubectl' create namespace e2e-enabled && '$DIR/kubectl' label namespace e2e-enabled istio-injection=enabled &&
  '$DIR/kubectl' create namespace e2e-plain"
for ns in e2e-enabled e2e-plain; do check "serviceaccount default exists in $ns" poll "$WAIT" K -n "$ns" get serviceaccount default; done
# pod NS NAME [LABEL]: create a pod; prints the istio-proxy image (empty: not injected) or fails
pod() {
  local ns=$1 name=$2 label=${3:-} labels=""
  [ -n "$label" ] && labels="  labels: {$label}"
  K -n "$ns" create -o jsonpath='{range .spec.initContainers[?(@.name=="istio-proxy")]}{.image}{end}{range .spec.containers[?(@.name=="istio-proxy")]}{.image}{end}' -f - <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $name
$labels
spec:
  containers: [{name: app, image: registry.invalid/pause:1}]
EOF
}
injected_with() { local got; got=$(pod "$1" "$2" "${4:-}") || return 1; case "$got" in *":$3") return 0 ;; esac; echo "got image '$got', want tag $3"; return 1; }
not_injected() { local got; got=$(pod "$@") || return 1; [ -z "$got" ] || { echo "injected: $got"; return 1; }; }
N=0
run "a pod in the labelled namespace e2e-enabled is injected (proxy tag e2e-1)" poll "$WAIT" injected_with e2e-enabled "p$((++N))" e2e-1
T_FIRST=$(secs_since "$T_START")
DURATIONS+=("injector start -> first admission through the API server $T_FIRST s")
check "a pod labelled sidecar.istio.io/inject=false in e2e-enabled is created and not injected" not_injected e2e-enabled "p$((++N))" 'sidecar.istio.io/inject: "false"'
check "a pod in the unlabelled namespace e2e-plain is not injected" not_injected e2e-plain "p$((++N))"
check "a pod in the injector's own namespace is not injected" not_injected "$NS" "p$((++N))"
# deployment NAME WHERE(metadata|template): sidecar.istio.io/inject: "false" on the Deployment's
# own metadata, or on its pod template
deployment() {
  local name=$1 where=$2 meta="" tmpl=""
  if [ "$where" = metadata ]; then meta='  annotations: {sidecar.istio.io/inject: "false"}'; else tmpl='      annotations: {sidecar.istio.io/inject: "false"}'; fi
  K -n e2e-enabled apply -f - <<EOF
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
      containers: [{name: app, image: registry.invalid/pause:1}]
EOF
}
# deployment_pod NAME WANT(injected|plain)
deployment_pod() {
  local img
  img=$(K -n e2e-enabled get pods -l "app=$1" -o jsonpath='{range .items[0].spec.initContainers[?(@.name=="istio-proxy")]}{.image}{end}{range .items[0].spec.containers[?(@.name=="istio-proxy")]}{.image}{end}') || return 1
  [ "$(K -n e2e-enabled get pods -l "app=$1" -o name | wc -l)" -ge 1 ] || return 1
  if [ "$2" = injected ]; then [ -n "$img" ]; else [ -z "$img" ]; fi
}
check "Deployment on-meta (sidecar.istio.io/inject: \"false\" on the Deployment's metadata)" deployment on-meta metadata
check "Deployment on-template (the annotation on its pod template)" deployment on-template template
check "on-meta: its pod is injected anyway (the annotation on the Deployment's metadata is ignored)" poll "$WAIT" deployment_pod on-meta injected
check "on-template: its pod is not injected" poll "$WAIT" deployment_pod on-template plain
stop_injector
if [ -f "$DIR/strace.log" ]; then
  check "readOnlyRootFilesystem holds: through start, certificates, leadership and these admissions it created, wrote, renamed or removed no file (strace)" no_writes
else
  log "strace not found or ptrace not allowed: the read-only root filesystem is not checked"
fi
if [ ${#WRAP[@]} -gt 0 ]; then
  ran_as_chart_user() { [ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["uid"])' "$DIR/pod.security.json")" = 65532 ] && grep -q -- '--reuid=65532' <<< "${WRAP[*]}"; }
  check "it ran as the chart's runAsUser 65532 (the image's user), without privileges or capabilities" ran_as_chart_user
fi
refused_down() {
  local out
  if out=$(pod e2e-enabled "p$((++N))" 2>&1); then echo "created: $out"; return 1; fi
  echo "$out" | grep -q "failed calling webhook" || { echo "$out"; return 1; }
  log "    kubectl said: $(echo "$out" | cut -c1-200)"
}
run "fail-closed: while the injector is down, a pod in e2e-enabled is refused (failed calling webhook)" refused_down
check "  ... and a pod in e2e-plain is still created" not_injected e2e-plain "p$((++N))"
start_injector
run "the injector started again with the same pod spec is ready" poll "$WAIT" http_ok "${PROBES[0]}"
run "pods in e2e-enabled are injected again" poll "$WAIT" injected_with e2e-enabled "p$((++N))" e2e-1
scenario_end

# ---------------------------------------------------------------------------- 6
scenario "6: helm upgrade with a changed template value"
BUNDLE_BEFORE=$(bundle)
check "helm upgrade --reuse-values --set injectorConfig.values.global.tag=e2e-2" H upgrade "$REL" "$CHART" --namespace "$NS" --reuse-values --set injectorConfig.values.global.tag=e2e-2
check "the caBundle the injector set survived the upgrade (Helm does not own it)" bash -c "[ \"\$('$DIR/kubectl' get mutatingwebhookconfiguration '$WEBHOOK' -o jsonpath='{.webhooks[0].clientConfig.caBundle}')\" = '$BUNDLE_BEFORE' ]"
t=$(date +%s%N)
run "the next injection uses the upgraded value (proxy tag e2e-2)" poll "$WAIT" injected_with e2e-enabled "p$((++N))" e2e-2
log "upgrade to a changed injection: $(secs_since "$t") s"
check "helm history shows 2 revisions" bash -c "[ \"\$('$HELM' --kubeconfig '$DIR/kubeconfig' history $REL -n $NS -o json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')\" = 2 ]"
scenario_end

# ---------------------------------------------------------------------------- 7
scenario "7: helm uninstall"
check "helm uninstall $REL" H uninstall "$REL" --namespace "$NS"
check "no MutatingWebhookConfiguration is left" bash -c "[ -z \"\$('$DIR/kubectl' get mutatingwebhookconfigurations -o name)\" ]"
check "no object of the release is left (Deployment, Service, ConfigMaps, RBAC, Lease, NetworkPolicy, admission policy)" bash -c "
  [ -z \"\$('$DIR/kubectl' -n $NS get deployment,service,configmap,serviceaccount,role,rolebinding,poddisruptionbudget,lease,networkpolicy -l app.kubernetes.io/instance=$REL -o name)\" ] &&
  [ -z \"\$('$DIR/kubectl' get clusterrole,clusterrolebinding,validatingadmissionpolicy,validatingadmissionpolicybinding -l app.kubernetes.io/instance=$REL -o name)\" ]"
stop_injector
check "with the injector gone, pods in e2e-enabled are created (not injected): no webhook points at nothing" not_injected e2e-enabled "p$((++N))"
CA_KEPT=$(K -n "$NS" get secret "$REL-ca" -o jsonpath='{.data.ca\.crt}')
check "left behind, as the README says: the CA Secret $REL-ca with its CA (helm.sh/resource-policy: keep)" test -n "$CA_KEPT"
readopted() {
  H install "$REL" "$CHART" "${INSTALL_ARGS[@]}" --set probe.enabled=false >/dev/null &&
  [ "$(K -n "$NS" get secret "$REL-ca" -o jsonpath='{.data.ca\.crt}')" = "$CA_KEPT" ] &&
  [ "$(K -n "$NS" get secret "$REL-ca" -o jsonpath='{.metadata.annotations.meta\.helm\.sh/release-name}')" = "$REL" ] &&
  H uninstall "$REL" --namespace "$NS" >/dev/null
}
check "installed again, the release adopts the kept Secret and its CA (the webhooks' trust survives a reinstall); uninstalled again" readopted
check "the README's command removes it" K -n "$NS" delete secret "$REL-ca"
scenario_end

# ---------------------------------------------------------------------------- 8
scenario "8: the Istio drop-in over Istio's own configuration"
SHARED=${SIDECAR_INJECTOR_SHARED:-$ROOT/../shared}
ISTIO_CHART=$SHARED/istio/manifests/charts/istio-control/istio-discovery
INS=istio-system
if [ -d "$ISTIO_CHART" ]; then
  # Istio's configuration as its istiod chart writes it: the istio-sidecar-injector ConfigMap
  # (Istio's templates and values) and the mesh ConfigMap istio.
  check "Istio's own istio-sidecar-injector and istio ConfigMaps (helm template of Istio's istiod chart, tag istio-e2e), applied as Istio would leave them" bash -c '
    "$0" template istiod "$1" --namespace "$2" --set global.hub=docker.io/istio --set global.tag=istio-e2e \
      --show-only templates/istiod-injector-configmap.yaml --show-only templates/configmap.yaml > "$3/istio-config.yaml" &&
    "$4" apply -f "$3/istio-config.yaml"' "$HELM" "$ISTIO_CHART" "$INS" "$DIR" "$DIR/kubectl"
  WANT_TAG=istio-e2e
else
  log "no Istio chart at $ISTIO_CHART (SIDECAR_INJECTOR_SHARED): the embedded configuration stands in for Istio's"
  check "an istio-sidecar-injector ConfigMap (the embedded configuration, tag istio-e2e)" bash -c "
    sed 's/\"tag\": \"[^\"]*\"/\"tag\": \"istio-e2e\"/' '$ROOT/crates/injector-engine/defaults/values.json' > '$DIR/istio-values.json' &&
    '$DIR/kubectl' -n $INS create configmap istio-sidecar-injector --from-file=config='$ROOT/crates/injector-engine/defaults/injector-config.yaml' --from-file=values='$DIR/istio-values.json'"
  WANT_TAG=istio-e2e
fi
check "namespaces labelled for Istio: e2e-rev (istio.io/rev=default); e2e-enabled keeps istio-injection=enabled" bash -c "
  '$DIR/kubectl' create namespace e2e-rev && '$DIR/kubectl' label namespace e2e-rev istio.io/rev=default"
check "serviceaccount default exists in e2e-rev" poll "$WAIT" K -n e2e-rev get serviceaccount default
alloc_port IPORT; alloc_port IMPORT
# An Istio revision tag (istioctl tag set prod) pointing at the injector, with an empty caBundle.
check "an Istio revision tag istio-revision-tag-prod (istio.io/rev=default, empty caBundle)" K apply -f - <<EOF2
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: istio-revision-tag-prod
  labels: {istio.io/rev: default, istio.io/tag: prod}
webhooks:
- name: rev.namespace.sidecar-injector.istio.io
  clientConfig: {url: "https://127.0.0.1:$IPORT/inject"}
  rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [pods]}]
  namespaceSelector: {matchLabels: {istio.io/rev: prod}}
  sideEffects: None
  admissionReviewVersions: [v1]
  failurePolicy: Fail
EOF2
# Someone else's webhook, labelled to look like one of the revision's: it points at another
# Service and selects nothing, so the API server never calls it.
check "a foreign configuration not-the-injector labelled istio.io/rev=default (service other/hooks, another CA's caBundle, selects nothing)" K apply -f - <<EOF2
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: not-the-injector
  labels: {istio.io/rev: default}
webhooks:
- name: hooks.example.com
  clientConfig: {service: {namespace: other, name: hooks}, caBundle: "$(base64 -w0 < "$KUBE_CA_FILE")"}
  rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [pods]}]
  namespaceSelector: {matchLabels: {never: selected}}
  sideEffects: None
  admissionReviewVersions: [v1]
  failurePolicy: Ignore
EOF2
check "helm install $REL -n $INS -f values-istio.yaml --set injectorConfig.create=false (Istio's ConfigMap read as it is)" \
  H install "$REL" "$CHART" --namespace "$INS" -f "$CHART/values-istio.yaml" --set injectorConfig.create=false \
    --set "webhook.url=https://127.0.0.1:$IPORT/inject" --set "certificates.dnsNames={127.0.0.1}" \
    --set listenAddress=127.0.0.1 --set "ports.webhook=$IPORT" --set "ports.monitoring=$IMPORT"
check "Istio's ConfigMap is unchanged and still Istio's release's (managed by Helm release istiod)" bash -c "
  [ \"\$('$DIR/kubectl' -n $INS get configmap istio-sidecar-injector -o jsonpath='{.metadata.labels.app\.kubernetes\.io/instance}')\" = istiod ] || [ ! -d '$ISTIO_CHART' ]"
K -n "$INS" get deployment "$REL" -o json > "$DIR/deployment.json"
NS=$INS
SA_NAME=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["spec"]["template"]["spec"]["serviceAccountName"])' "$DIR/deployment.json")
check "kubectl create token of $INS/$SA_NAME" make_sa_kubeconfig
check "the drop-in Deployment's container extracted" pod_spec
mapfile -t POD_ARGS < "$DIR/pod.args"
mapfile -t POD_ENV < "$DIR/pod.env"
mapfile -t PROBES < "$DIR/pod.probes"
start_injector
run "the drop-in injector is ready on its readiness probe (Istio's ConfigMap loaded)" poll "$WAIT" http_ok "${PROBES[0]}"
WEBHOOK=istio-sidecar-injector
run "it filled the caBundle of istio-sidecar-injector" poll "$WAIT" has_bundle
tag_bundle() { [ -n "$(K get mutatingwebhookconfiguration istio-revision-tag-prod -o jsonpath='{.webhooks[0].clientConfig.caBundle}')" ]; }
run "and of the revision tag istio-revision-tag-prod (labelled istio.io/rev=default)" poll "$WAIT" tag_bundle
foreign_reported() {
  curl -fsS --max-time 2 "${PROBES[0]}" | python3 -c '
import json, sys
foreign = json.load(sys.stdin)["cluster"]["foreignWebhooks"]
sys.exit(not any(f["configuration"] == "not-the-injector" and f["target"] == "service other/hooks:443" for f in foreign))'
}
run "the foreign configuration is reported on /readyz (cluster.foreignWebhooks)" poll "$WAIT" foreign_reported
untouched() {
  [ "$(K get mutatingwebhookconfiguration not-the-injector -o jsonpath='{.webhooks[0].clientConfig.caBundle}')" = "$(base64 -w0 < "$KUBE_CA_FILE")" ] &&
  ! K get mutatingwebhookconfiguration not-the-injector -o jsonpath='{.metadata.managedFields[*].manager}' | grep -q sidecar-injector
}
check "and never written: its caBundle is its own, no field of it is managed by sidecar-injector" untouched
check "remove the foreign configuration" K delete mutatingwebhookconfiguration not-the-injector
run "a pod in e2e-rev (istio.io/rev=default) is injected with Istio's template and values (tag $WANT_TAG)" poll "$WAIT" injected_with e2e-rev "p$((++N))" "$WANT_TAG"
check "a pod in e2e-enabled (istio-injection=enabled) is injected" injected_with e2e-enabled "p$((++N))" "$WANT_TAG"
check "a pod labelled sidecar.istio.io/inject=true in the unlabelled e2e-plain is injected (Istio's object webhook)" injected_with e2e-plain "p$((++N))" "$WANT_TAG" 'sidecar.istio.io/inject: "true"'
check "a pod without the label in e2e-plain is not" not_injected e2e-plain "p$((++N))"
check "a pod labelled sidecar.istio.io/inject=false in e2e-rev is not" not_injected e2e-rev "p$((++N))" 'sidecar.istio.io/inject: "false"'
check "helm uninstall the drop-in" H uninstall "$REL" --namespace "$INS"
check "no istio-sidecar-injector webhook is left (the revision tag, not the chart's, stays)" bash -c "
  [ \"\$('$DIR/kubectl' get mutatingwebhookconfigurations -o name)\" = mutatingwebhookconfiguration.admissionregistration.k8s.io/istio-revision-tag-prod ]"
check "Istio's ConfigMap is still there" K -n "$INS" get configmap istio-sidecar-injector
stop_injector
scenario_end

# ---------------------------------------------------------------------------- 9
scenario "9: least privilege, per preset: effective permissions and refused attempts"
PERMISSIONS=$CHART/tests/permissions
# permissions KUBECONFIG RELEASE-NS PROBE-NS OPTED-OUT-NS: the effective permissions of the
# kubeconfig's credential, one rule per line: "SCOPE RESOURCE NON-RESOURCE-URLS NAMES VERBS"
permissions() {
  local kc=$1 scope
  for scope in "release:$2" "elsewhere:default" "probe:$3" "probe-opted-out:$4"; do
    K --kubeconfig "$kc" auth can-i --list -n "${scope#*:}" | awk -v s="${scope%%:*}" 'NR > 1 { $1 = $1; print s, $0 }' ||
      return 1
  done | LC_ALL=C sort
}
# same_permissions PRESET ARGS-OF-permissions...: equal to tests/permissions/PRESET.txt (without
# its comments); INSTALL_E2E_WRITE_PERMISSIONS=1 rewrites the file instead
same_permissions() {
  local preset=$1 want=$PERMISSIONS/$1.txt got; shift
  got=$(permissions "$@") || return 1
  if [ -n "${INSTALL_E2E_WRITE_PERMISSIONS:-}" ]; then
    { sed -n '/^#/p' "$want" 2>/dev/null; printf '%s\n' "$got"; } > "$want.new" && mv "$want.new" "$want"
  fi
  diff -u <(grep -v '^#' "$want") <(printf '%s\n' "$got") || { echo "(differences: - the list kept in the repository, + what the API server says)"; return 1; }
}
# denied DESCRIPTION PATTERN COMMAND...: the command fails and its message matches PATTERN
denied() {
  local what=$1 pat=$2 out; shift 2
  if out=$("$@" 2>&1); then bad "$what: it was allowed"; printf '%s\n' "$out" | head -n 5 | sed 's/^/    /'; return; fi
  if grep -Eq "$pat" <<< "$out"; then ok "$what"; log "    the API server said: $(tr '\n' ' ' <<< "$out" | cut -c1-240)"
  else bad "$what: the message does not match /$pat/"; printf '%s\n' "$out" | head -n 5 | sed 's/^/    /'; fi
}
# apply_as KUBECONFIG: server-side apply of stdin as the injector does it (its field manager, forced)
apply_as() { local kc=$1; shift; K --kubeconfig "$kc" apply --server-side --force-conflicts --field-manager=sidecar-injector "$@" -f -; }
# policy_denies KUBECONFIG: the webhooks policy denies a dry-run change of the chart's webhook url
policy_denies() {
  local out
  out=$(own "$1" "clientConfig: {url: \"https://127.0.0.1:1/elsewhere\"}" --dry-run=server 2>&1) && return 1
  grep -q 'may change only webhooks\[\*\]\.clientConfig\.caBundle' <<< "$out"
}
for p in "default::perm-default" "opt-out:values-opt-out.yaml:perm-opt-out" "istio:values-istio.yaml:istio-system"; do
  IFS=: read -r pname pvalues pns <<< "$p"
  vargs=(); [ -n "$pvalues" ] && vargs=(-f "$CHART/$pvalues")
  [ "$pname" = istio ] && vargs+=(--set injectorConfig.create=false)
  on=perm-$pname-probe off=perm-$pname-off kc=$DIR/perm-$pname.kubeconfig
  alloc_port closed
  check "$pname: helm install in $pns (probe on in $on and $off; webhook url to a closed loopback port, failurePolicy Ignore: nothing waits for it)" \
    H install "$REL" "$CHART" --namespace "$pns" --create-namespace "${vargs[@]}" \
      --set "webhook.url=https://127.0.0.1:$closed/inject" --set "certificates.dnsNames={127.0.0.1}" --set webhook.failurePolicy=Ignore \
      --set probe.enabled=true --set "probe.namespace=$on" --set "probe.optedOutNamespace=$off"
  sa=$(K -n "$pns" get deployment "$REL" -o jsonpath='{.spec.template.spec.serviceAccountName}')
  check "$pname: a kubeconfig with a token of $pns/$sa only" sa_kubeconfig "$pns" "$sa" "$kc" 10m
  check "$pname: its effective permissions (in $pns, elsewhere, in $on and $off) are exactly tests/permissions/$pname.txt" \
    same_permissions "$pname" "$kc" "$pns" "$on" "$off"
  mwc=$(K get mutatingwebhookconfigurations -l "app.kubernetes.io/instance=$REL" -o jsonpath='{.items[0].metadata.name}')
  hook=$(K get mutatingwebhookconfiguration "$mwc" -o jsonpath='{.webhooks[0].name}')
  own() {   # own KUBECONFIG CLIENT-CONFIG-AND-MORE [APPLY-ARGS...]: apply to the first webhook of the chart's configuration
    local kc=$1 change=$2; shift 2
    apply_as "$kc" "$@" <<EOF2
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: $mwc}
webhooks:
- name: $hook
  $change
EOF2
  }
  # The API server loads a new admission policy asynchronously: until the chart's are in force, what
  # they deny would pass, so wait for a dry run they deny (nothing is changed by it).
  run "$pname: the chart's admission policies are in force" poll "$WAIT" policy_denies "$kc"
  # What a compromised injector would try first, with the ServiceAccount's own token.
  denied "$pname: it cannot create a Secret (a token Secret, a mesh CA)" 'forbidden.*cannot create resource "secrets"' \
    K --kubeconfig "$kc" -n "$pns" create secret generic e2e-minted --from-literal=k=v
  K -n "$pns" create secret generic e2e-other --from-literal=k=v >/dev/null
  denied "$pname: it cannot read another Secret of its namespace" 'forbidden.*cannot get resource "secrets"' \
    K --kubeconfig "$kc" -n "$pns" get secret e2e-other
  denied "$pname: it cannot list the Secrets of its namespace" 'forbidden.*cannot list resource "secrets"' \
    K --kubeconfig "$kc" -n "$pns" get secrets
  # istiod's leader-election Leases (the Istio drop-in shares istio-system with istiod).
  for lease in istio-namespace-controller-election istio-gateway-status-leader; do
    K -n "$pns" apply -f - >/dev/null <<EOF2
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: $lease}
spec: {holderIdentity: istiod-0, leaseDurationSeconds: 30}
EOF2
  done
  denied "$pname: it cannot update istiod's Lease istio-namespace-controller-election" 'forbidden.*cannot update resource "leases"' \
    bash -c "'$DIR/kubectl' -n '$pns' get lease istio-namespace-controller-election -o json | '$DIR/kubectl' --kubeconfig '$kc' replace -f -"
  denied "$pname: it cannot take istiod's Lease istio-gateway-status-leader (patch)" 'forbidden.*cannot patch resource "leases"' \
    apply_as "$kc" <<EOF2
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: istio-gateway-status-leader, namespace: $pns}
spec: {holderIdentity: injector}
EOF2
  K apply -f - >/dev/null <<EOF2
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: not-the-injector
  labels: {istio.io/rev: default}
webhooks:
- name: hooks.example.com
  clientConfig: {service: {namespace: other, name: hooks}}
  rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [pods]}]
  namespaceSelector: {matchLabels: {never: selected}}
  sideEffects: None
  admissionReviewVersions: [v1]
  failurePolicy: Ignore
EOF2
  # Denied by RBAC where the chart's configuration is patched by name, by the admission policy in
  # the drop-in (which may patch any configuration: revision tags).
  denied "$pname: it cannot write the caBundle of a foreign configuration labelled istio.io/rev=default" \
    'forbidden.*cannot patch resource "mutatingwebhookconfigurations"|may change the caBundle only of webhooks that point at the injector' \
    apply_as "$kc" <<EOF2
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: not-the-injector}
webhooks:
- name: hooks.example.com
  clientConfig: {caBundle: "$(base64 -w0 < "$KUBE_CA_FILE")"}
EOF2
  check "$pname: it may set the caBundle of its own webhook $mwc/$hook (what it is for)" \
    own "$kc" "clientConfig: {caBundle: \"$(base64 -w0 < "$KUBE_CA_FILE")\"}"
  denied "$pname: it cannot change its webhook's url (the admission policy)" 'may change only webhooks\[\*\]\.clientConfig\.caBundle' \
    own "$kc" "clientConfig: {url: \"https://127.0.0.1:1/elsewhere\"}"
  denied "$pname: it cannot change its webhook's rules (the admission policy)" 'may change only webhooks\[\*\]\.clientConfig\.caBundle' \
    own "$kc" "rules: [{operations: [CREATE, UPDATE], apiGroups: ['*'], apiVersions: ['*'], resources: ['*']}]"
  denied "$pname: it cannot create a real pod in the probe namespace $off (the admission policy: dry runs only)" \
    'may create pods only as dry runs' K --kubeconfig "$kc" -n "$off" run e2e-real --image=registry.invalid/pause:1
  check "$pname: ... while the probe's dry-run create there is allowed" \
    K --kubeconfig "$kc" -n "$off" run e2e-dry --image=registry.invalid/pause:1 --dry-run=server
  denied "$pname: it cannot create a pod outside the probe namespaces" 'forbidden.*cannot create resource "pods"' \
    K --kubeconfig "$kc" -n "$pns" run e2e-real --image=registry.invalid/pause:1 --dry-run=server
  check "$pname: helm uninstall; the kept CA Secret, the test's Secret, Leases and foreign configuration removed" bash -c "
    '$HELM' --kubeconfig '$DIR/kubeconfig' uninstall $REL --namespace '$pns' >/dev/null &&
    '$DIR/kubectl' -n '$pns' delete secret $REL-ca e2e-other --ignore-not-found >/dev/null &&
    '$DIR/kubectl' -n '$pns' delete lease istio-namespace-controller-election istio-gateway-status-leader >/dev/null &&
    '$DIR/kubectl' delete mutatingwebhookconfiguration not-the-injector >/dev/null"
done
scenario_end
