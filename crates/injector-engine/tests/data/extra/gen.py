#!/usr/bin/env python3
"""Regenerates the `istio-extra` oracle group: inline templates on sidecar fixtures and on JSON
data that the shared oracle groups do not cover (otelResourceAttributes variants, structToJSON
and toYaml of Kubernetes structs, ProxyConfig/MeshConfig fields, function edge cases).

    gen.py SHARED_DIR ISTIO_ORACLE_BIN

writes cases/istio-extra.json and fixtures/*.yaml, then runs the istio oracle into expected/.
"""
import json, os, subprocess, sys

shared, oracle = sys.argv[1], sys.argv[2]
here = os.path.dirname(os.path.abspath(__file__))
for d in ("cases", "expected", "fixtures"):
    os.makedirs(f"{here}/{d}", exist_ok=True)

OTEL = """extensionProviders:
- name: otel
  opentelemetry:
    service: otel.svc
    port: 4317
    serviceAttributeEnrichment: OTEL_SEMANTIC_CONVENTIONS
"""


def fx(name, pod, values="default", overlay=None, native=False):
    f = {"kind": "sidecar", "valuesFile": f"istio/derived/values/{values}.json",
         "meshFile": "istio/derived/mesh/default.yaml", "revision": "default",
         "nativeSidecars": native, "compliancePolicy": "", "pod": pod}
    if overlay:
        f["meshOverlay"] = overlay
    json.dump(f, open(f"{here}/fixtures/{name}.yaml", "w"), indent=1)


def pod(name="p", ns="shop", labels=None, ann=None, containers=None, spec_extra=None, owner=True):
    md = {}
    if ns is not None:
        md["namespace"] = ns
    if owner:
        md["generateName"] = name + "-abc12-"
        md["labels"] = dict({"app": name, "pod-template-hash": "abc12"}, **(labels or {}))
        md["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                  "name": name + "-abc12", "uid": "", "controller": True}]
    else:
        md["name"] = name
        if labels:
            md["labels"] = labels
    if ann:
        md["annotations"] = ann
    spec = {"containers": containers or [{"name": "app", "image": "nginx:1.25"}]}
    spec.update(spec_extra or {})
    return {"metadata": md, "spec": spec}


fx("otel-digest", pod(containers=[{"name": "web", "image": "reg.io:5000/team/web:1.2@sha256:abcd"}]), overlay=OTEL)
fx("otel-digest-only", pod(containers=[{"name": "web", "image": "web@sha256:abcd"}]), overlay=OTEL)
fx("otel-no-tag", pod(containers=[{"name": "web", "image": "reg.io:5000/web"}]), overlay=OTEL)
fx("otel-two-containers", pod(containers=[{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:2"}]), overlay=OTEL)
fx("otel-annotations", pod(ann={"resource.opentelemetry.io/service.version": "9",
                                "resource.opentelemetry.io/service.instance.id": "id-1",
                                "resource.opentelemetry.io/service.namespace": ""}), overlay=OTEL)
fx("otel-no-namespace", pod(ns=None, owner=False, containers=[{"name": "x", "image": "x:7"}]), overlay=OTEL)
fx("rich-container", pod(containers=[{
    "name": "app", "image": "app:1", "command": ["/bin/app"], "args": ["--port", "8080"], "workingDir": "/w",
    "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP", "hostPort": 18080, "hostIP": "0.0.0.0"},
              {"containerPort": 9090}],
    "env": [{"name": "A", "value": "1"}, {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
    "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "100m"}},
    "volumeMounts": [{"name": "v", "mountPath": "/v", "readOnly": True}],
    "livenessProbe": {"httpGet": {"path": "/live", "port": "http"}, "initialDelaySeconds": 3},
    "securityContext": {"runAsUser": 1000, "runAsNonRoot": True, "capabilities": {"drop": ["ALL"]}},
    "imagePullPolicy": "IfNotPresent", "stdin": True, "tty": False,
    "terminationMessagePath": "/dev/termination-log"}],
    spec_extra={"serviceAccountName": "sa", "nodeSelector": {"disk": "ssd"}, "hostNetwork": True, "priority": 5,
                "terminationGracePeriodSeconds": 30, "volumes": [{"name": "v", "emptyDir": {}}],
                "initContainers": [{"name": "init", "image": "busybox"}], "securityContext": {"fsGroup": 2000},
                "tolerations": [{"key": "k", "operator": "Exists"}], "dnsPolicy": "ClusterFirst"}))
fx("proxy-config-rich", pod(ann={"proxy.istio.io/config": json.dumps({
    "concurrency": 0, "terminationDrainDuration": "30s", "drainDuration": "1.5s",
    "proxyMetadata": {"B": "2", "A": "1"}, "interceptionMode": "NONE",
    "tracing": {"zipkin": {"address": "z:9411"}, "sampling": 1.5}, "statusPort": 15021,
    "image": {"imageType": "distroless"}, "extraStatTags": ["a", "b"],
    "holdApplicationUntilProxyStarts": False})}))

cases = []


def c(name, tpl, fixture=None, data=None):
    d = {"name": "istio-extra/" + name, "template": tpl}
    if fixture:
        d["data_kind"] = "istio-sidecar"
        d["fixture"] = fixture
    else:
        d["data_kind"] = "istio-json"
        d["data"] = data
    cases.append(d)


OT = "[{{otelResourceAttributes .MeshConfig .ObjectMeta.Annotations .ObjectMeta.Labels .DeploymentMeta.Namespace .Spec.Containers}}]"
for f in ["otel-digest", "otel-digest-only", "otel-no-tag", "otel-two-containers", "otel-annotations", "otel-no-namespace"]:
    c("otel/" + f, OT, f)
for t, name in [
    ("{{structToJSON .Spec}}", "struct-spec"),
    ("{{structToJSON (index .Spec.Containers 0)}}", "struct-container"),
    ("{{range (index .Spec.Containers 0).Ports}}{{structToJSON .}}|{{.}}|{{end}}", "ports"),
    ("{{toYaml (index .Spec.Containers 0)}}", "yaml-container"),
    ("{{toYaml .Spec}}", "yaml-spec"),
    ("{{structToJSON .TypeMeta}} {{structToJSON .DeploymentMeta}} {{.TypeMeta}} {{.DeploymentMeta}} {{.DeploymentMeta.String}}", "meta"),
    ("{{toYaml .ObjectMeta.Labels}}{{toJSON .ObjectMeta.Labels}}", "labels"),
    ("{{len .Spec.Volumes}} {{len .Spec.InitContainers}} {{(index .Spec.InitContainers 0).Name}} {{.Spec.HostNetwork}} {{.Spec.NodeSelector}} {{.Spec.DNSPolicy}} {{.Spec.ServiceAccountName}}", "spec-fields"),
    ("{{ $c := index .Spec.Containers 0 }}{{$c.Command}} {{$c.Args}} {{$c.WorkingDir}} {{$c.ImagePullPolicy}} {{$c.Stdin}} {{$c.TTY}} {{len $c.Env}} {{$c.TerminationMessagePath}}", "container-fields"),
    ("{{includeInboundPorts .Spec.Containers}} {{applicationPorts .Spec.Containers}}", "ports-funcs"),
]:
    c("rich/" + name, t, "rich-container")
for t, name in [
    ("{{protoToJSON .ProxyConfig}}", "proto-json"),
    ("{{.ProxyConfig.InterceptionMode}} {{.ProxyConfig.ControlPlaneAuthPolicy}} {{.ProxyConfig.GetTracingServiceName}} {{.ProxyConfig.GetServiceCluster}} {{.ProxyConfig.StatusPort}}", "enums"),
    ("{{formatDuration .ProxyConfig.TerminationDrainDuration}} {{formatDuration .ProxyConfig.DrainDuration}} {{.ProxyConfig.DrainDuration.Nanos}} {{formatDuration .ProxyConfig.DiscoveryRefreshDelay}}", "durations"),
    ("{{.ProxyConfig.ParentShutdownDuration}}", "removed-field-error"),
    ("{{.ProxyConfig.Concurrency.GetValue}} {{.ProxyConfig.HoldApplicationUntilProxyStarts.GetValue}} {{.ProxyConfig.ExtraStatTags}} {{.ProxyConfig.ProxyMetadata}} {{.ProxyConfig.Tracing.Sampling}} {{.ProxyConfig.GetTracing.GetTlsSettings}}", "wrappers"),
    ("{{.ProxyImage}} {{.ProxyInitImage}}", "images"),
    ("{{.MeshConfig.IngressControllerMode}} {{.MeshConfig.EnableAutoMtls.GetValue}} {{.MeshConfig.TrustDomainAliases}} {{len .MeshConfig.ExtensionProviders}} {{(index .MeshConfig.ExtensionProviders 0).Name}} {{.MeshConfig.RootNamespace}} {{formatDuration .MeshConfig.ConnectTimeout}} {{.MeshConfig.EnableTracing}} {{.MeshConfig.AccessLogFile}}", "mesh"),
]:
    c("proxy/" + name, t, "proxy-config-rich")
long = "word " * 30
J = {"long": long.strip(), "s": "a: b", "n": 1.5, "list": [long, {"k": long}], "nested": {"a": {"b": [1, [2, [3]]]}},
     "e": "", "t": "tab\there", "u": "é\u00a0x", "big": 12345678901234567890, "neg": -0.5, "tiny": 1e-9,
     "x": {"a": [None, {"b": None}], "c": [[None]], "d": {"e": {}}}, "l": [], "m": {}, "f": False,
     "meta": {"annotations": {}}}
for t, name in [
    ("{{toYaml .}}", "yaml-all"),
    ("{{toYaml .nested | indent 4}}", "yaml-indent"),
    ("{{structToJSON .}}", "json-all"),
    ('{{toJsonMap (strdict "a" "1") nil}}', "tojsonmap-nil"),
    ('{{mergeMaps (strdict "a" "1") (strdict)}}', "merge-empty"),
    ("{{omitNil .x}}|{{toYaml (omitNil .x)}}", "omitnil-deep"),
    ('{{valueOrDefault .l "d"}} {{valueOrDefault .m "d"}} {{valueOrDefault .f 1}}', "vod-containers"),
    ('{{fromJSON "[1, \\"a\\", null, {\\"b\\": 1e2}]"}} {{fromJSON " 5 "}} {{fromJSON "1e400"}} {{fromJSON "{\\"a\\":1,\\"a\\":2}"}}', "fromjson-misc"),
    ('{{appendMultusNetwork "[]" "istio-cni"}}|{{appendMultusNetwork "[{\\"name\\":\\"istio-cni\\"}]" "istio-cni"}}|{{appendMultusNetwork "[{\\"name\\":\\"istio-cni\\",\\"namespace\\":\\"x\\"}]" "istio-cni"}}|{{appendMultusNetwork "a,b" "b"}}|{{appendMultusNetwork "[1]" "x"}}|{{appendMultusNetwork "[null]" "a/b/c"}}', "multus-misc"),
    ('{{excludeInboundPort .n ""}} {{excludeInboundPort true "1"}} {{excludeInboundPort "15020" "15020 ,1"}} {{excludeInboundPort .list "x"}}', "exclude-misc"),
    ('{{indent 3 "a\\r\\nb"}}|{{directory "a/b"}}|{{directory "//x"}}', "text-misc"),
    ('{{toJson .m}} {{toJson (strdict "a" "<")}}', "sprig-tojson"),
    ('{{annotation .meta "x" "y"}}', "annotation-map-error"),
]:
    c("json/" + name, t, data=J)
json.dump(cases, open(f"{here}/cases/istio-extra.json", "w"), indent=1)
subprocess.run([oracle, "-cases", f"{here}/cases", "-expected", f"{here}/expected", "-shared", shared,
                "-fixtures", f"{here}/fixtures"], check=True)
