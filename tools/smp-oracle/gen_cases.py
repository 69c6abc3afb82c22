#!/usr/bin/env python3
"""Writes the strategic-merge oracle corpus: crates/strategic-merge/tests/oracle/cases/*.json.

Each file is an array of {"name", "original", "patch"}. The expected outcomes are produced by
the Go oracle (regen.sh), never by hand. Deterministic: rerunning rewrites identical files.
"""
import copy
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "..", "crates", "strategic-merge", "tests", "oracle", "cases")

FILES = {}


def case(file, name, original, patch):
    FILES.setdefault(file, [])
    assert name not in [c["name"] for c in FILES[file]], name
    FILES[file].append({"name": name, "original": copy.deepcopy(original), "patch": copy.deepcopy(patch)})


def pod(containers=None, init=None, volumes=None, labels=None, annotations=None, **spec):
    p = {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": "app-6d4cf56db6-abcde", "namespace": "default"},
         "spec": {"containers": containers if containers is not None else [app()]}}
    if labels is not None:
        p["metadata"]["labels"] = labels
    if annotations is not None:
        p["metadata"]["annotations"] = annotations
    if init is not None:
        p["spec"]["initContainers"] = init
    if volumes is not None:
        p["spec"]["volumes"] = volumes
    p["spec"].update(spec)
    return p


def app(name="app", **extra):
    c = {"name": name, "image": "docker.io/library/%s:1.0" % name, "resources": {}}
    c.update(extra)
    return c


KUBE_API = {"name": "kube-api-access-x7k2p", "projected": {"defaultMode": 420, "sources": [
    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
    {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}}]}}
KUBE_API_MOUNT = {"name": "kube-api-access-x7k2p", "readOnly": True,
                  "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}


def istio_init(image="docker.io/istio/proxyv2:1.28.0"):
    return {"name": "istio-init", "image": image,
            "args": ["istio-iptables", "-p", "15001", "-z", "15006", "-u", "1337", "-m", "REDIRECT",
                     "-i", "*", "-x", "", "-b", "*", "-d", "15090,15021,15020", "--log_output_level=default:info"],
            "resources": {"limits": {"cpu": "2", "memory": "1Gi"}, "requests": {"cpu": "100m", "memory": "128Mi"}},
            "securityContext": {"allowPrivilegeEscalation": False,
                                "capabilities": {"add": ["NET_ADMIN", "NET_RAW"], "drop": ["ALL"]},
                                "privileged": False, "readOnlyRootFilesystem": False, "runAsGroup": 0,
                                "runAsNonRoot": False, "runAsUser": 0}}


def istio_proxy(image="docker.io/istio/proxyv2:1.28.0", native=False):
    c = {"name": "istio-proxy", "image": image,
         "ports": [{"containerPort": 15090, "protocol": "TCP", "name": "http-envoy-prom"}],
         "args": ["proxy", "sidecar", "--domain", "$(POD_NAMESPACE).svc.cluster.local",
                  "--proxyLogLevel=warning", "--proxyComponentLogLevel=misc:error", "--log_output_level=default:info"],
         "env": [{"name": "PILOT_CERT_PROVIDER", "value": "istiod"},
                 {"name": "CA_ADDR", "value": "istiod.istio-system.svc:15012"},
                 {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                 {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                 {"name": "INSTANCE_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                 {"name": "ISTIO_META_APP_CONTAINERS", "value": "app"}],
         "resources": {"limits": {"cpu": "2", "memory": "1Gi"}, "requests": {"cpu": "100m", "memory": "128Mi"}},
         "volumeMounts": [{"mountPath": "/var/run/secrets/workload-spiffe-uds", "name": "workload-socket"},
                          {"mountPath": "/var/run/secrets/credential-uds", "name": "credential-socket"},
                          {"mountPath": "/var/run/secrets/workload-spiffe-credentials", "name": "workload-certs"},
                          {"mountPath": "/var/run/secrets/istio", "name": "istiod-ca-cert"},
                          {"mountPath": "/var/lib/istio/data", "name": "istio-data"},
                          {"mountPath": "/etc/istio/proxy", "name": "istio-envoy"},
                          {"mountPath": "/var/run/secrets/tokens", "name": "istio-token"},
                          {"mountPath": "/etc/istio/pod", "name": "istio-podinfo"}],
         "readinessProbe": {"httpGet": {"path": "/healthz/ready", "port": 15021}, "initialDelaySeconds": 0,
                            "periodSeconds": 15, "timeoutSeconds": 3, "failureThreshold": 4},
         "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                             "privileged": False, "readOnlyRootFilesystem": True, "runAsGroup": 1337,
                             "runAsNonRoot": True, "runAsUser": 1337}}
    if native:
        c["restartPolicy"] = "Always"
    return c


def istio_volumes():
    return [{"name": "workload-socket", "emptyDir": None},
            {"name": "credential-socket", "emptyDir": None},
            {"name": "workload-certs", "emptyDir": None},
            {"name": "istio-envoy", "emptyDir": {"medium": "Memory"}},
            {"name": "istio-data", "emptyDir": {}},
            {"name": "istio-podinfo", "downwardAPI": {"items": [
                {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
                {"path": "annotations", "fieldRef": {"fieldPath": "metadata.annotations"}}]}},
            {"name": "istio-token", "projected": {"sources": [{"serviceAccountToken": {
                "audience": "istio-ca", "expirationSeconds": 43200, "path": "istio-token"}}]}},
            {"name": "istiod-ca-cert", "configMap": {"name": "istio-ca-root-cert"}}]


def sidecar_template(native=False, pull_secrets=None, fs_group=True, init=True):
    spec = {}
    if init and not native:
        spec["initContainers"] = [istio_init()]
    if native:
        spec["initContainers"] = [istio_init(), istio_proxy(native=True)]
        spec["containers"] = []
    else:
        spec["containers"] = [istio_proxy()]
    spec["volumes"] = istio_volumes()
    if pull_secrets:
        spec["imagePullSecrets"] = [{"name": n} for n in pull_secrets]
    if fs_group:
        spec["securityContext"] = {"fsGroup": 1337}
    return {"metadata": {
        "labels": {"security.istio.io/tlsMode": "istio", "service.istio.io/canonical-name": "app",
                   "service.istio.io/canonical-revision": "latest"},
        "annotations": {"istio.io/rev": "default", "kubectl.kubernetes.io/default-container": "app",
                        "kubectl.kubernetes.io/default-logs-container": "app",
                        "prometheus.io/path": "/stats/prometheus", "prometheus.io/port": "15020",
                        "prometheus.io/scrape": "true", "sidecar.istio.io/status": "{\"initContainers\":[\"istio-init\"]}"}},
        "spec": spec}


def istio_cases():
    f = "istio"
    user_proxy = {"name": "istio-proxy", "image": "auto",
                  "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}, "limits": {"cpu": "1"}},
                  "readinessProbe": {"httpGet": {"path": "/custom", "port": 15021}, "periodSeconds": 5},
                  "lifecycle": {"preStop": {"exec": {"command": ["sleep", "5"]}}}}
    originals = {
        "minimal": pod(),
        "labels-annotations": pod(labels={"app": "app", "version": "v1"}, annotations={"team": "a", "prometheus.io/scrape": "false"}),
        "kube-api-volume": pod(containers=[app(volumeMounts=[KUBE_API_MOUNT])], volumes=[KUBE_API]),
        "two-containers": pod(containers=[app(), app("sidecar-logger", ports=[{"containerPort": 9000}])]),
        "ports-env": pod(containers=[app(ports=[{"containerPort": 8080, "protocol": "TCP", "name": "http"}, {"containerPort": 8443}],
                                         env=[{"name": "A", "value": "1"}, {"name": "B", "value": "2"}])]),
        "user-init": pod(init=[app("migrate")], volumes=[KUBE_API, {"name": "data", "emptyDir": {}}]),
        "pull-secret": pod(imagePullSecrets=[{"name": "fooSecret"}]),
        "user-istio-proxy": pod(containers=[app(), user_proxy]),
        "user-istio-proxy-first": pod(containers=[user_proxy, app()]),
        "security-context": pod(securityContext={"runAsUser": 1000, "runAsGroup": 3000, "fsGroup": 2000}),
        "user-volume-same-name": pod(volumes=[{"name": "istio-envoy", "emptyDir": {}}, {"name": "cache", "emptyDir": {"sizeLimit": "1Gi"}}]),
        "already-injected": pod(containers=[app(), istio_proxy()], init=[istio_init()], volumes=istio_volumes()[3:] + [KUBE_API]),
        "tolerations-affinity": pod(tolerations=[{"key": "k", "operator": "Exists"}],
                                    affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}}),
        "empty-lists": pod(containers=[app()], init=[], volumes=[], imagePullSecrets=[]),
    }
    patches = {
        "sidecar": sidecar_template(),
        "native": sidecar_template(native=True),
        "pull-secrets": sidecar_template(pull_secrets=["barSecret", "fooSecret"]),
        "no-init-no-fsgroup": sidecar_template(init=False, fs_group=False),
    }
    for on, o in originals.items():
        for pn, p in patches.items():
            case(f, "%s/%s" % (pn, on), o, p)
    # Istio's templatePod starts as an empty corev1.Pod, JSON-marshalled by Go.
    empty = {"metadata": {}, "spec": {"containers": None}, "status": {}}
    for pn, p in patches.items():
        case(f, "%s/template-pod" % pn, empty, p)
    case(f, "sidecar/template-pod-twice", empty, sidecar_template())
    # Go marshals Container.resources ({}) even when empty: merging into it vs copying differs
    # for directives inside the patch value.
    case(f, "resources-empty-struct-replace", pod(containers=[{"name": "app", "resources": {}}]),
         {"spec": {"containers": [{"name": "app", "resources": {"$patch": "replace", "limits": {"cpu": "1", "memory": None}}}]}})
    case(f, "resources-absent-replace", pod(containers=[{"name": "app"}]),
         {"spec": {"containers": [{"name": "app", "resources": {"$patch": "replace", "limits": {"cpu": "1", "memory": None}}}]}})
    # Re-applying the user's istio-proxy over the merged pod (reapplyOverwrittenContainers).
    merged_like = pod(containers=[istio_proxy(), app()], init=[istio_init()])
    case(f, "reapply-user-proxy", merged_like, {"spec": {"containers": [dict(user_proxy, image="")]}})
    case(f, "reapply-user-proxy-args", merged_like, {"spec": {"containers": [{"name": "istio-proxy", "args": ["proxy", "router"], "env": [{"name": "EXTRA", "value": "x"}]}]}})
    case(f, "reapply-user-init-override", merged_like, {"spec": {"initContainers": [{"name": "istio-init", "securityContext": {"runAsUser": 0, "capabilities": {"add": ["NET_ADMIN"]}}}]}})
    # Template applied twice (inject.istio.io/templates: sidecar,sidecar).
    case(f, "twice/sidecar", pod(containers=[istio_proxy(), app()], init=[istio_init()], volumes=istio_volumes()), sidecar_template())
    # The grpc-agent / custom templates that touch app containers.
    case(f, "custom/app-env", pod(containers=[app(env=[{"name": "A", "value": "1"}])]),
         {"spec": {"containers": [{"name": "app", "env": [{"name": "GRPC_XDS_BOOTSTRAP", "value": "/etc/istio/proxy/grpc-bootstrap.json"}],
                                   "volumeMounts": [{"name": "istio-xds", "mountPath": "/etc/istio/proxy"}]}]}})
    case(f, "custom/status-annotation-replace", pod(annotations={"sidecar.istio.io/status": "old", "a": "b"}),
         {"metadata": {"annotations": {"sidecar.istio.io/status": "new", "a": None}}})


def map_cases():
    f = "maps"
    o = pod(labels={"app": "a", "version": "v1"}, annotations={"x": "1"})
    case(f, "empty-patch", o, {})
    case(f, "null-patch-value-deletes", o, {"metadata": {"labels": {"version": None}}})
    case(f, "null-deletes-missing-key", o, {"metadata": {"labels": {"nope": None}}})
    case(f, "null-deletes-whole-map", o, {"metadata": {"annotations": None}})
    case(f, "new-map-drops-nulls", pod(), {"metadata": {"labels": {"a": "1", "b": None}}})
    case(f, "new-nested-drops-nulls", pod(), {"spec": {"securityContext": {"runAsUser": 1, "fsGroup": None, "seLinuxOptions": {"level": None, "user": "u"}}}})
    case(f, "replace-labels", o, {"metadata": {"labels": {"$patch": "replace", "only": "this"}}})
    case(f, "replace-labels-keeps-nulls", o, {"metadata": {"labels": {"$patch": "replace", "only": "this", "gone": None}}})
    case(f, "delete-labels", o, {"metadata": {"labels": {"$patch": "delete"}}})
    case(f, "delete-new-map", o, {"spec": {"securityContext": {"$patch": "delete"}}})
    case(f, "replace-new-map", o, {"spec": {"securityContext": {"$patch": "replace", "runAsUser": 5}}})
    case(f, "merge-directive-on-map-errors", o, {"metadata": {"labels": {"$patch": "merge", "a": "b"}}})
    case(f, "unknown-directive-errors", o, {"metadata": {"labels": {"$patch": "frobnicate"}}})
    case(f, "top-level-replace", o, {"$patch": "replace", "kind": "Pod"})
    case(f, "top-level-delete", o, {"$patch": "delete"})
    case(f, "scalar-overwrite", o, {"metadata": {"name": "other"}, "spec": {"restartPolicy": "Never"}})
    case(f, "type-change-map-to-scalar", o, {"metadata": {"labels": "oops"}})
    case(f, "type-change-list-to-map", pod(), {"spec": {"containers": {"name": "x"}}})
    case(f, "type-change-int-to-float", pod(terminationGracePeriodSeconds=30), {"spec": {"terminationGracePeriodSeconds": 30.5}})
    case(f, "type-change-with-nested-nulls", pod(nodeSelector="x"), {"spec": {"nodeSelector": {"a": "b", "c": None}}})
    case(f, "unknown-field-both-maps-errors", dict(pod(), extra={"a": 1}), {"extra": {"b": 2}})
    case(f, "unknown-field-quoting-errors", dict(pod(), **{"a\"\u0001\u00e9\u200b\t": {"a": 1}}), {"a\"\u0001\u00e9\u200b\t": {"b": 2}})
    case(f, "unknown-field-new-is-copied", pod(), {"extra": {"b": 2, "c": None}})
    case(f, "unknown-field-scalar", dict(pod(), extra=1), {"extra": 2})
    case(f, "unknown-nested-field-errors", pod(containers=[app(foo={"a": 1})]), {"spec": {"containers": [{"name": "app", "foo": {"b": 1}}]}})
    case(f, "case-insensitive-field", pod(), {"Spec": {"hostname": "h"}})
    case(f, "unicode-fold-field-merge", dict(pod(), **{"\u017fpec": {"hostname": "a"}}), {"\u017fpec": {"subdomain": "s"}})
    case(f, "unicode-fold-field-kelvin-errors", dict(pod(), **{"\u212aind": {"a": 1}, "kinds": {"a": 1}}), {"kinds": {"b": 2}})
    case(f, "unicode-fold-kelvin-on-struct", dict(pod(), **{"\u212aind": {"a": 1}}), {"\u212aind": {"b": 2}})
    case(f, "case-insensitive-field-merge", dict(pod(), Spec={"hostname": "a"}), {"Spec": {"subdomain": "s"}})
    case(f, "map-inside-string-map-errors", pod(labels={"a": {"x": 1}}), {"metadata": {"labels": {"a": {"y": 2}}}})
    case(f, "resources-merge", pod(containers=[app(resources={"limits": {"cpu": "1"}, "requests": {"cpu": "100m"}})]),
         {"spec": {"containers": [{"name": "app", "resources": {"limits": {"memory": "1Gi", "cpu": None}}}]}})
    case(f, "retainkeys-on-map", o, {"metadata": {"labels": {"$retainKeys": ["app", "new"], "new": "n"}}})
    case(f, "retainkeys-on-map-missing-key-errors", o, {"metadata": {"labels": {"$retainKeys": ["app"], "new": "n"}}})
    case(f, "retainkeys-not-list-errors", o, {"metadata": {"labels": {"$retainKeys": "app"}}})
    case(f, "retainkeys-null-value-allowed", o, {"metadata": {"labels": {"$retainKeys": ["app"], "version": None}}})
    case(f, "retainkeys-unhashable", o, {"metadata": {"labels": {"$retainKeys": [{"a": 1}]}}})
    case(f, "directive-in-new-list-item-dropped", pod(), {"spec": {"volumes": [{"name": "a", "$patch": "delete"}, {"name": "b", "emptyDir": {}}]}})
    case(f, "nested-directive-in-new-value-dropped", pod(), {"spec": {"securityContext": {"seLinuxOptions": {"$patch": "replace", "level": "s0"}, "runAsUser": 1}}})
    case(f, "retainkeys-in-new-value-kept", pod(), {"spec": {"volumes": [{"name": "a", "$retainKeys": ["name", "emptyDir"], "emptyDir": {}}]}})
    case(f, "null-original-document", None, {"metadata": {"name": "x"}})
    case(f, "null-patch-document", pod(), None)
    case(f, "null-original-value-replaced", dict(pod(), status=None), {"status": {"phase": "Running"}})
    case(f, "status-merge", dict(pod(), status={"phase": "Pending", "conditions": [{"type": "Ready", "status": "False"}]}),
         {"status": {"conditions": [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}]}})
    case(f, "appended-item-keeps-nested-directives", pod(), {"spec": {"containers": [{"name": "n", "securityContext": {"$patch": "delete"}, "$setElementOrder/env": [{"name": "A"}], "env": [{"name": "A", "value": None}]}]}})
    case(f, "new-value-keeps-seo-and-delete-lists", pod(), {"spec": {"initContainers": [{"name": "n", "$setElementOrder/env": [{"name": "A"}]}]}, "metadata": {"labels": {"$deleteFromPrimitiveList/x": ["a"]}}})
    case(f, "new-value-null-directive-kept", pod(), {"spec": {"securityContext": {"$patch": None, "runAsUser": 1}}})
    case(f, "null-directive-on-merge-errors", pod(labels={"a": "b"}), {"metadata": {"labels": {"$patch": None}}})
    case(f, "numeric-directive-errors", pod(labels={"a": "b"}), {"metadata": {"labels": {"$patch": 1.5}}})
    case(f, "float-merge-key-in-error", pod(containers=[app(ports=[{"containerPort": 1.5}])]), {"spec": {"containers": [{"name": "app", "ports": [{"hostPort": 1e6}]}]}})
    case(f, "spec-replace-strategy-free", pod(), {"spec": {"$patch": "replace", "containers": [{"name": "z"}]}})


def list_cases():
    f = "lists"
    o = pod(containers=[app("a", env=[{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]), app("b")])
    case(f, "add-container", o, {"spec": {"containers": [{"name": "c", "image": "c"}]}})
    case(f, "merge-container", o, {"spec": {"containers": [{"name": "b", "image": "b2"}]}})
    case(f, "merge-and-add", o, {"spec": {"containers": [{"name": "b", "image": "b2"}, {"name": "c"}]}})
    case(f, "env-merge-nested", o, {"spec": {"containers": [{"name": "a", "env": [{"name": "Y", "value": "3"}, {"name": "Z", "value": "4"}]}]}})
    case(f, "env-valuefrom-replaces-value", o, {"spec": {"containers": [{"name": "a", "env": [{"name": "X", "value": None, "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]}]}})
    case(f, "new-item-keeps-nulls", o, {"spec": {"containers": [{"name": "c", "image": None, "args": ["x"]}]}})
    case(f, "delete-item", o, {"spec": {"containers": [{"name": "a", "$patch": "delete"}]}})
    case(f, "delete-missing-item", o, {"spec": {"containers": [{"name": "zz", "$patch": "delete"}]}})
    case(f, "delete-without-key-errors", o, {"spec": {"containers": [{"$patch": "delete"}]}})
    case(f, "delete-and-add", o, {"spec": {"containers": [{"name": "a", "$patch": "delete"}, {"name": "n"}]}})
    case(f, "replace-list", o, {"spec": {"containers": [{"name": "only"}, {"$patch": "replace"}]}})
    case(f, "replace-list-first", o, {"spec": {"containers": [{"$patch": "replace"}, {"name": "y"}, {"name": "x"}]}})
    case(f, "replace-list-with-delete", o, {"spec": {"containers": [{"name": "a", "$patch": "delete"}, {"$patch": "replace"}, {"name": "q"}]}})
    case(f, "replace-list-empty", o, {"spec": {"containers": [{"$patch": "replace"}]}})
    case(f, "replace-list-item-without-key-errors", o, {"spec": {"containers": [{"$patch": "replace"}, {"image": "x"}]}})
    case(f, "merge-directive-in-list-errors", o, {"spec": {"containers": [{"name": "a", "$patch": "merge"}]}})
    case(f, "bad-directive-in-list-errors", o, {"spec": {"containers": [{"name": "a", "$patch": "nope"}]}})
    case(f, "item-without-merge-key-errors", o, {"spec": {"containers": [{"image": "x"}]}})
    case(f, "original-item-without-merge-key-errors", pod(containers=[{"image": "x"}]), {"spec": {"containers": [{"name": "a"}]}})
    case(f, "new-list-item-without-merge-key-ok", pod(), {"spec": {"initContainers": [{"image": "x"}]}})
    case(f, "duplicate-key-in-original", pod(containers=[app("a"), app("b"), app("a", image="second")]), {"spec": {"containers": [{"name": "a", "image": "patched"}]}})
    case(f, "duplicate-key-in-original-new-item", pod(containers=[app("a"), app("b"), app("a", image="second")]), {"spec": {"containers": [{"name": "c"}]}})
    case(f, "duplicate-key-in-patch", o, {"spec": {"containers": [{"name": "c", "image": "1"}, {"name": "c", "args": ["2"]}]}})
    case(f, "duplicate-key-in-patch-existing", o, {"spec": {"containers": [{"name": "b", "image": "1"}, {"name": "b", "args": ["2"]}]}})
    case(f, "delete-duplicates", pod(containers=[app("a"), app("b"), app("a")]), {"spec": {"containers": [{"name": "a", "$patch": "delete"}]}})
    case(f, "empty-patch-list", o, {"spec": {"containers": []}})
    case(f, "empty-original-list", pod(containers=[]), {"spec": {"containers": [{"name": "x"}, {"name": "y"}]}})
    case(f, "both-empty", pod(containers=[]), {"spec": {"containers": []}})
    case(f, "ports-by-containerport", pod(containers=[app(ports=[{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 80, "protocol": "UDP"}])]),
         {"spec": {"containers": [{"name": "app", "ports": [{"containerPort": 80, "protocol": "SCTP"}, {"containerPort": 90}]}]}})
    case(f, "ports-key-type-mismatch", pod(containers=[app(ports=[{"containerPort": 80}])]),
         {"spec": {"containers": [{"name": "app", "ports": [{"containerPort": "80", "name": "s"}]}]}})
    case(f, "ports-key-float-vs-int", pod(containers=[app(ports=[{"containerPort": 80}])]),
         {"spec": {"containers": [{"name": "app", "ports": [{"containerPort": 80.0, "name": "f"}]}]}})
    case(f, "volume-mounts-by-path", pod(containers=[app(volumeMounts=[{"name": "a", "mountPath": "/a"}, {"name": "b", "mountPath": "/b"}])]),
         {"spec": {"containers": [{"name": "app", "volumeMounts": [{"name": "c", "mountPath": "/b"}, {"name": "d", "mountPath": "/d"}]}]}})
    case(f, "volume-devices", pod(containers=[app(volumeDevices=[{"name": "a", "devicePath": "/dev/a"}])]),
         {"spec": {"containers": [{"name": "app", "volumeDevices": [{"name": "b", "devicePath": "/dev/b"}]}]}})
    case(f, "host-aliases-by-ip", pod(hostAliases=[{"ip": "1.1.1.1", "hostnames": ["a"]}]), {"spec": {"hostAliases": [{"ip": "1.1.1.1", "hostnames": ["b"]}, {"ip": "2.2.2.2", "hostnames": ["c"]}]}})
    case(f, "topology-spread", pod(topologySpreadConstraints=[{"topologyKey": "zone", "maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule"}]),
         {"spec": {"topologySpreadConstraints": [{"topologyKey": "zone", "maxSkew": 2}, {"topologyKey": "host", "maxSkew": 1}]}})
    case(f, "scheduling-gates", pod(schedulingGates=[{"name": "g1"}]), {"spec": {"schedulingGates": [{"name": "g2"}]}})
    case(f, "resource-claims-retainkeys", pod(resourceClaims=[{"name": "gpu", "resourceClaimName": "c1"}]),
         {"spec": {"resourceClaims": [{"name": "gpu", "$retainKeys": ["name", "resourceClaimTemplateName"], "resourceClaimTemplateName": "t"}]}})
    case(f, "owner-references-by-uid", dict(pod(), metadata={"name": "p", "ownerReferences": [{"uid": "1", "name": "rs", "kind": "ReplicaSet", "apiVersion": "apps/v1"}]}),
         {"metadata": {"ownerReferences": [{"uid": "2", "name": "rs2", "kind": "ReplicaSet", "apiVersion": "apps/v1"}, {"uid": "1", "controller": True}]}})
    case(f, "ephemeral-containers", pod(ephemeralContainers=[{"name": "debug", "image": "busybox"}]),
         {"spec": {"ephemeralContainers": [{"name": "debug2", "image": "busybox"}, {"name": "debug", "stdin": True}]}})
    case(f, "pull-secrets", pod(imagePullSecrets=[{"name": "fooSecret"}]), {"spec": {"imagePullSecrets": [{"name": "barSecret"}]}})
    case(f, "pull-secrets-same", pod(imagePullSecrets=[{"name": "fooSecret"}, {"name": "barSecret"}]), {"spec": {"imagePullSecrets": [{"name": "barSecret"}]}})
    # Atomic lists.
    case(f, "atomic-args", pod(containers=[app(args=["a", "b"])]), {"spec": {"containers": [{"name": "app", "args": ["c"]}]}})
    case(f, "atomic-command-empty", pod(containers=[app(command=["sh"])]), {"spec": {"containers": [{"name": "app", "command": []}]}})
    case(f, "atomic-tolerations", pod(tolerations=[{"key": "a", "operator": "Exists"}]), {"spec": {"tolerations": [{"key": "b", "operator": "Exists", "effect": None}]}})
    case(f, "atomic-tolerations-new-drops-nulls", pod(), {"spec": {"tolerations": [{"key": "b", "operator": "Exists", "effect": None}]}})
    case(f, "atomic-envfrom", pod(containers=[app(envFrom=[{"configMapRef": {"name": "a"}}])]), {"spec": {"containers": [{"name": "app", "envFrom": [{"secretRef": {"name": "b"}}]}]}})
    case(f, "atomic-capabilities", pod(containers=[app(securityContext={"capabilities": {"add": ["A"], "drop": ["ALL"]}})]),
         {"spec": {"containers": [{"name": "app", "securityContext": {"capabilities": {"add": ["B"]}}}]}})
    case(f, "atomic-resize-policy", pod(containers=[app(resizePolicy=[{"resourceName": "cpu", "restartPolicy": "NotRequired"}])]),
         {"spec": {"containers": [{"name": "app", "resizePolicy": [{"resourceName": "memory", "restartPolicy": "RestartContainer"}]}]}})
    case(f, "atomic-readiness-gates", pod(readinessGates=[{"conditionType": "a"}]), {"spec": {"readinessGates": [{"conditionType": "b"}]}})
    case(f, "atomic-sysctls-supplemental", pod(securityContext={"sysctls": [{"name": "a", "value": "1"}], "supplementalGroups": [1, 2]}),
         {"spec": {"securityContext": {"sysctls": [{"name": "b", "value": "2"}], "supplementalGroups": [3]}}})
    case(f, "atomic-list-keeps-directives", pod(tolerations=[{"key": "a"}]), {"spec": {"tolerations": [{"key": "b", "$patch": "delete"}]}})
    case(f, "atomic-list-of-scalars-dup", pod(containers=[app(args=["a"])]), {"spec": {"containers": [{"name": "app", "args": ["x", "x"]}]}})
    # Lists of odd shapes.
    case(f, "list-of-lists-errors", pod(containers=[app(ports=[[1]])]), {"spec": {"containers": [{"name": "app", "ports": [[2]]}]}})
    case(f, "mixed-types-errors", pod(containers=[app(ports=[{"containerPort": 1}])]), {"spec": {"containers": [{"name": "app", "ports": ["x"]}]}})
    case(f, "null-first-item-panics", pod(), {"spec": {"containers": [None]}})
    case(f, "null-later-item-errors", pod(), {"spec": {"containers": [{"name": "x"}, None]}})
    case(f, "null-first-item-empty-original-panics", pod(containers=[]), {"spec": {"containers": [None, {"name": "x"}]}})
    case(f, "null-first-item-original-panics", pod(containers=[None]), {"spec": {"containers": [{"name": "x"}]}})
    case(f, "delete-list-empty-name", dict(pod(), metadata={"finalizers": ["a"]}), {"metadata": {"$deleteFromPrimitiveList/": ["a"]}})
    case(f, "seo-empty-name", pod(), {"spec": {"$setElementOrder/": []}})
    case(f, "scalars-in-keyed-list", pod(containers=["a"]), {"spec": {"containers": ["b"]}})
    case(f, "maps-in-primitive-merge-list-errors", dict(pod(), metadata={"finalizers": [{"a": 1}]}), {"metadata": {"finalizers": [{"b": 1}]}})
    case(f, "object-merge-key-panics", pod(containers=[{"name": {"a": 1}}]), {"spec": {"containers": [{"name": {"a": 1}}]}})
    case(f, "object-merge-key-vs-string", pod(containers=[{"name": {"a": 1}}]), {"spec": {"containers": [{"name": "x"}]}})
    case(f, "null-merge-key", pod(containers=[app("a")]), {"spec": {"containers": [{"name": None, "image": "i"}]}})
    case(f, "null-merge-key-both", pod(containers=[{"name": None, "image": "o"}]), {"spec": {"containers": [{"name": None, "image": "i"}]}})
    case(f, "numeric-merge-key-names", pod(containers=[{"name": 1, "image": "o"}, {"name": "1"}]), {"spec": {"containers": [{"name": 1, "image": "i"}]}})
    case(f, "list-vs-scalar-in-slice-lookup-errors", dict(pod(), metadata={"labels": ["a"]}), {"metadata": {"labels": ["b"]}})
    case(f, "pointer-field-as-list", pod(containers=[app(securityContext=[{"a": 1}])]), {"spec": {"containers": [{"name": "app", "securityContext": [{"b": 1}]}]}})
    # Primitive merge list: finalizers.
    fin = dict(pod(), metadata={"name": "p", "finalizers": ["a", "b", "c"]})
    case(f, "finalizers-merge", fin, {"metadata": {"finalizers": ["d", "b"]}})
    case(f, "finalizers-merge-dups", dict(pod(), metadata={"name": "p", "finalizers": ["a", "a", "b"]}), {"metadata": {"finalizers": ["c"]}})
    case(f, "finalizers-merge-dups-2", dict(pod(), metadata={"name": "p", "finalizers": ["x", "a", "a", "b", "y"]}), {"metadata": {"finalizers": ["c", "b"]}})
    case(f, "finalizers-merge-dups-big", dict(pod(), metadata={"name": "p", "finalizers": ["a", "b", "a", "c", "d"]}), {"metadata": {"finalizers": ["e", "d", "b"]}})
    case(f, "finalizers-delete", fin, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["b", "zz"]}})
    case(f, "finalizers-delete-and-add", fin, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"], "finalizers": ["e"]}})
    case(f, "finalizers-delete-missing-list", pod(), {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}})
    case(f, "finalizers-delete-null", fin, {"metadata": {"$deleteFromPrimitiveList/finalizers": None}})
    case(f, "finalizers-delete-bad-prefix", fin, {"metadata": {"$deleteFromPrimitiveListX/finalizers": ["a"]}})
    case(f, "finalizers-delete-no-slash", fin, {"metadata": {"$deleteFromPrimitiveList": ["a"]}})
    case(f, "delete-list-on-atomic-list", pod(containers=[app(args=["a", "b"])]), {"spec": {"containers": [{"name": "app", "$deleteFromPrimitiveList/args": ["a"]}]}})
    case(f, "delete-list-on-keyed-list", o, {"spec": {"$deleteFromPrimitiveList/containers": [{"name": "a"}]}})
    case(f, "delete-list-type-mismatch", fin, {"metadata": {"$deleteFromPrimitiveList/finalizers": "a"}})
    case(f, "finalizers-int-vs-string", dict(pod(), metadata={"finalizers": ["1"]}), {"metadata": {"finalizers": [1]}})
    case(f, "finalizers-new", pod(), {"metadata": {"finalizers": ["x", "x"]}})


def order_cases():
    f = "order"
    names = lambda *ns: [{"name": n} for n in ns]
    o = pod(containers=names("a", "b", "c", "d"))
    case(f, "patch-new-first", o, {"spec": {"containers": names("x")}})
    case(f, "patch-existing-last", o, {"spec": {"containers": names("d")}})
    case(f, "patch-reversed", o, {"spec": {"containers": names("d", "c", "b", "a")}})
    case(f, "patch-middle-and-new", o, {"spec": {"containers": names("x", "c", "y")}})
    case(f, "patch-c-a", o, {"spec": {"containers": names("c", "a")}})
    case(f, "patch-b-new-d", o, {"spec": {"containers": names("b", "n", "d")}})
    case(f, "patch-d-new-a", o, {"spec": {"containers": names("d", "n", "a")}})
    case(f, "patch-new-c-new", o, {"spec": {"containers": names("n1", "c", "n2")}})
    case(f, "patch-delete-b-add", o, {"spec": {"containers": names("x") + [{"name": "b", "$patch": "delete"}]}})
    case(f, "istio-volumes-before-user", pod(volumes=[{"name": "user-a", "emptyDir": {}}, {"name": "istio-data", "emptyDir": {"medium": "x"}}, {"name": "user-b", "emptyDir": {}}]),
         {"spec": {"volumes": istio_volumes()}})
    big = pod(containers=names(*["c%02d" % i for i in range(30)]))
    case(f, "big-list-new-items", big, {"spec": {"containers": names("z1", "c15", "z2", "c03")}})
    case(f, "big-list-reverse", big, {"spec": {"containers": names(*["c%02d" % i for i in reversed(range(30))])}})
    # $setElementOrder
    case(f, "seo-reorder-only", o, {"spec": {"$setElementOrder/containers": names("d", "c", "b", "a")}})
    case(f, "seo-partial", o, {"spec": {"$setElementOrder/containers": names("c", "a")}})
    case(f, "seo-with-patch", o, {"spec": {"$setElementOrder/containers": names("c", "x", "a"), "containers": [{"name": "x", "image": "x"}]}})
    case(f, "seo-with-patch-merge", o, {"spec": {"$setElementOrder/containers": names("b", "a"), "containers": [{"name": "a", "image": "new"}]}})
    case(f, "seo-mismatch-errors", o, {"spec": {"$setElementOrder/containers": names("a"), "containers": [{"name": "x"}]}})
    case(f, "seo-wrong-relative-order-errors", o, {"spec": {"$setElementOrder/containers": names("a", "x"), "containers": names("x", "a")}})
    case(f, "seo-empty-order-new-list-reverses", pod(containers=[]), {"spec": {"initContainers": names("a", "b", "c"), "$setElementOrder/initContainers": []}})
    case(f, "seo-empty-order-merge", o, {"spec": {"containers": names("x", "b"), "$setElementOrder/containers": []}})
    case(f, "seo-new-list", pod(), {"spec": {"$setElementOrder/initContainers": names("b", "a"), "initContainers": names("b", "a")}})
    case(f, "seo-new-list-with-nulls", pod(), {"spec": {"$setElementOrder/initContainers": names("b"), "initContainers": [{"name": "b", "image": None}]}})
    case(f, "seo-neither", pod(), {"spec": {"$setElementOrder/initContainers": names("b")}})
    case(f, "seo-with-delete", o, {"spec": {"$setElementOrder/containers": names("x", "d", "a"), "containers": [{"name": "b", "$patch": "delete"}, {"name": "x"}]}})
    case(f, "seo-with-delete-2", o, {"spec": {"$setElementOrder/containers": names("d", "x", "y"), "containers": [{"name": "a", "$patch": "delete"}, {"name": "x"}, {"name": "y"}]}})
    case(f, "seo-delete-append-aliasing", o, {"spec": {"$setElementOrder/containers": names("x", "b"), "containers": [{"name": "a", "$patch": "delete"}, {"name": "x"}]}})
    case(f, "seo-delete-append-aliasing-2", pod(containers=names("a", "b", "c", "d", "e")), {"spec": {"$setElementOrder/containers": names("y", "x", "c"), "containers": [{"name": "b", "$patch": "delete"}, {"name": "y"}, {"name": "x"}]}})
    case(f, "seo-delete-append-no-room", pod(containers=names("a", "b", "c", "d", "e", "f", "g", "h")), {"spec": {"$setElementOrder/containers": names("x", "b"), "containers": [{"name": "a", "$patch": "delete"}, {"name": "x"}]}})
    case(f, "seo-finalizers-dups-aliasing", dict(pod(), metadata={"name": "p", "finalizers": ["a", "a", "b"]}), {"metadata": {"$setElementOrder/finalizers": ["c", "b"], "finalizers": ["c"]}})
    case(f, "seo-with-replace", o, {"spec": {"$setElementOrder/containers": names("y", "x"), "containers": [{"$patch": "replace"}, {"name": "x"}, {"name": "y"}]}})
    case(f, "seo-not-a-list-errors", o, {"spec": {"$setElementOrder/containers": "a"}})
    case(f, "seo-bad-prefix-errors", o, {"spec": {"$setElementOrderX/containers": names("a")}})
    case(f, "seo-unknown-field-errors", o, {"spec": {"$setElementOrder/nope": names("a")}})
    case(f, "seo-item-without-key-errors", o, {"spec": {"$setElementOrder/containers": [{"image": "a"}], "containers": names("a")}})
    case(f, "seo-atomic-list", pod(containers=[app(args=["a", "b"])]), {"spec": {"containers": [{"name": "app", "$setElementOrder/args": ["b", "a"]}]}})
    case(f, "seo-atomic-list-with-patch", pod(containers=[app(args=["a", "b"])]), {"spec": {"containers": [{"name": "app", "$setElementOrder/args": ["c", "a"], "args": ["c", "a"]}]}})
    fin = dict(pod(), metadata={"name": "p", "finalizers": ["a", "b", "c"]})
    case(f, "seo-finalizers", fin, {"metadata": {"$setElementOrder/finalizers": ["c", "x", "a"], "finalizers": ["x"]}})
    case(f, "seo-finalizers-reorder", fin, {"metadata": {"$setElementOrder/finalizers": ["c", "b"]}})
    case(f, "seo-finalizers-dups", dict(pod(), metadata={"name": "p", "finalizers": ["a", "a", "b"]}), {"metadata": {"$setElementOrder/finalizers": ["c", "b"], "finalizers": ["c"]}})
    case(f, "seo-finalizers-empty-original-errors", dict(pod(), metadata={"name": "p", "finalizers": []}), {"metadata": {"$setElementOrder/finalizers": ["c"]}})
    case(f, "seo-env-nested", pod(containers=[app(env=[{"name": "A"}, {"name": "B"}, {"name": "C"}])]),
         {"spec": {"containers": [{"name": "app", "$setElementOrder/env": names("C", "N", "A"), "env": [{"name": "N", "value": "n"}]}]}})
    case(f, "seo-volumes-retainkeys", pod(volumes=[{"name": "a", "emptyDir": {}}, {"name": "b", "hostPath": {"path": "/x"}}]),
         {"spec": {"$setElementOrder/volumes": names("b", "a"), "volumes": [{"name": "b", "$retainKeys": ["name", "emptyDir"], "emptyDir": {}}]}})


def retain_cases():
    f = "retainkeys"
    o = pod(volumes=[{"name": "v", "hostPath": {"path": "/x"}}, {"name": "w", "emptyDir": {}}])
    case(f, "volume-switch-source", o, {"spec": {"volumes": [{"name": "v", "$retainKeys": ["name", "emptyDir"], "emptyDir": {}}]}})
    case(f, "volume-switch-source-no-retain", o, {"spec": {"volumes": [{"name": "v", "emptyDir": {}}]}})
    case(f, "volume-retain-missing-patch-key-errors", o, {"spec": {"volumes": [{"name": "v", "$retainKeys": ["name"], "emptyDir": {}}]}})
    case(f, "volume-retain-drops-name", o, {"spec": {"volumes": [{"name": "v", "$retainKeys": ["emptyDir"], "emptyDir": {}}]}})
    case(f, "volume-null-source", o, {"spec": {"volumes": [{"name": "v", "hostPath": None, "emptyDir": {}}]}})
    case(f, "volume-new-with-null", o, {"spec": {"volumes": [{"name": "n", "emptyDir": None}]}})
    case(f, "volume-delete", o, {"spec": {"volumes": [{"name": "w", "$patch": "delete"}]}})
    case(f, "retain-on-container", pod(containers=[app(args=["x"], command=["y"])]), {"spec": {"containers": [{"name": "app", "$retainKeys": ["name", "image"], "image": "z"}]}})
    case(f, "retain-empty-list", pod(containers=[app(args=["x"])]), {"spec": {"containers": [{"name": "app", "$retainKeys": []}]}})
    case(f, "retain-with-delete-list-key", dict(pod(), metadata={"name": "p", "finalizers": ["a"], "labels": {"x": "y"}}),
         {"metadata": {"$retainKeys": ["name", "finalizers"], "$deleteFromPrimitiveList/finalizers": ["a"]}})
    case(f, "retain-with-seo", o, {"spec": {"$retainKeys": ["containers", "volumes"], "$setElementOrder/volumes": [{"name": "w"}, {"name": "v"}]}})
    case(f, "volume-patch-directive-replace-item", o, {"spec": {"volumes": [{"name": "v", "hostPath": {"$patch": "replace", "path": "/y"}}]}})
    case(f, "volume-patch-directive-delete-nested", o, {"spec": {"volumes": [{"name": "v", "hostPath": {"$patch": "delete"}}]}})


def random_cases(count=220, seed=20261130):
    """Seeded random pods and patches over a small vocabulary, so that merge keys collide often:
    keyed lists (containers, env, ports, volumes), the primitive merge list (finalizers),
    directives, duplicates, `$setElementOrder` lists (mostly valid, sometimes not)."""
    import random
    rnd = random.Random(seed)
    f = "random"
    cnames = ["a", "b", "c", "d", "e", "istio-proxy"]
    enames = ["X", "Y", "Z", "W"]
    fins = ["f1", "f2", "f3", "f4", "f5"]
    vols = ["v1", "v2", "v3", "istio-envoy"]

    def pick(pool, lo, hi, dups=0.0):
        out = rnd.sample(pool, rnd.randint(lo, min(hi, len(pool))))
        if out and rnd.random() < dups:
            out.insert(rnd.randrange(len(out) + 1), rnd.choice(out))
        return out

    def env_list(dups):
        return [{"name": n, "value": str(rnd.randint(0, 9))} for n in pick(enames, 0, 4, dups)]

    def container(name, dups):
        c = {"name": name}
        r = rnd.random()
        if r < 0.5:
            c["image"] = "img-%s:%d" % (name, rnd.randint(1, 3))
        if rnd.random() < 0.5:
            c["env"] = env_list(dups)
        if rnd.random() < 0.3:
            c["ports"] = [{"containerPort": p} for p in pick([80, 443, 8080], 0, 3, dups)]
        if rnd.random() < 0.3:
            c["args"] = pick(["x", "y", "z"], 0, 3, dups)
        if rnd.random() < 0.15:
            c["image"] = None
        return c

    def volume(name):
        src = rnd.choice([{"emptyDir": {}}, {"emptyDir": None}, {"hostPath": {"path": "/" + name}},
                          {"configMap": {"name": name}}])
        v = {"name": name}
        v.update(src)
        if rnd.random() < 0.2:
            v["$retainKeys"] = ["name"] + [k for k in src]
        return v

    def original():
        spec = {"containers": [container(n, 0.1) for n in pick(cnames, 0, 6, 0.15)]}
        if rnd.random() < 0.5:
            spec["initContainers"] = [container(n, 0.05) for n in pick(cnames, 0, 3)]
        if rnd.random() < 0.5:
            spec["volumes"] = [volume(n) for n in pick(vols, 0, 4, 0.1)]
            for v in spec["volumes"]:
                v.pop("$retainKeys", None)
        meta = {"name": "p"}
        if rnd.random() < 0.5:
            meta["finalizers"] = pick(fins, 0, 5, 0.3)
        if rnd.random() < 0.5:
            meta["labels"] = {k: "o" for k in pick(["l1", "l2", "l3"], 0, 3)}
        return {"metadata": meta, "spec": spec}

    def keyed_patch(pool, make, orig_items, dups):
        items = [make(n) for n in pick(pool, 0, len(pool), dups)]
        for it in items:
            r = rnd.random()
            if r < 0.12:
                for k in list(it):
                    if k != "name":
                        del it[k]
                it["$patch"] = "delete"
        if rnd.random() < 0.05:
            items.insert(rnd.randrange(len(items) + 1), {"$patch": "replace"})
        return items

    def seo_for(items, orig_items, key="name"):
        """A $setElementOrder list: the non-deleted patch keys in order, with original keys mixed in."""
        keys = [it[key] for it in items if it.get("$patch") is None and key in it]
        extra = [it[key] for it in orig_items if key in it and it[key] not in keys]
        rnd.shuffle(extra)
        order = list(keys)
        for e in extra:
            if rnd.random() < 0.6:
                order.insert(rnd.randrange(len(order) + 1), e)
        if rnd.random() < 0.1:
            rnd.shuffle(order)  # usually invalid
        return [{key: k} for k in order]

    for i in range(count):
        o = original()
        p = {}
        spec = {}
        meta = {}
        if rnd.random() < 0.8:
            spec["containers"] = keyed_patch(cnames, lambda n: container(n, 0.1), o["spec"]["containers"], 0.1)
            if rnd.random() < 0.25:
                spec["$setElementOrder/containers"] = seo_for(spec["containers"], o["spec"]["containers"])
        elif rnd.random() < 0.5:
            spec["$setElementOrder/containers"] = seo_for([], o["spec"]["containers"])
        if rnd.random() < 0.3:
            spec["initContainers"] = keyed_patch(cnames, lambda n: container(n, 0.0), o["spec"].get("initContainers", []), 0.0)
        if rnd.random() < 0.4:
            spec["volumes"] = keyed_patch(vols, volume, o["spec"].get("volumes", []), 0.05)
        if rnd.random() < 0.4:
            fl = pick(fins, 0, 3, 0.2)
            r = rnd.random()
            if r < 0.5:
                meta["finalizers"] = fl
            elif r < 0.75:
                # Never name in both the list and its delete list: Go's outcome would depend on
                # its random map iteration order.
                meta["$deleteFromPrimitiveList/finalizers"] = fl
            else:
                meta["finalizers"] = fl
                base = [x for x in o["metadata"].get("finalizers", []) if x not in fl]
                order = list(dict.fromkeys(fl))
                for e in dict.fromkeys(base):
                    if rnd.random() < 0.6:
                        order.insert(rnd.randrange(len(order) + 1), e)
                meta["$setElementOrder/finalizers"] = order
        if rnd.random() < 0.3:
            labels = {k: rnd.choice(["p", None]) for k in pick(["l1", "l2", "l4"], 0, 3)}
            if rnd.random() < 0.2:
                labels["$patch"] = "replace"
            meta["labels"] = labels
        if spec:
            p["spec"] = spec
        if meta:
            p["metadata"] = meta
        case(f, "r%03d" % i, o, p)

    # Large lists: Go's stable sort switches from insertion sort to symMerge above 20 items,
    # which matters when its comparator is inconsistent (empty $setElementOrder).
    for n in (21, 25, 41, 64):
        names = ["n%02d" % k for k in range(n)]
        case(f, "large-new-list-empty-order-%d" % n, pod(), {"spec": {"initContainers": [{"name": x} for x in names], "$setElementOrder/initContainers": []}})
        orig = pod(containers=[{"name": x} for x in names[::3]])
        case(f, "large-merge-empty-order-%d" % n, orig, {"spec": {"containers": [{"name": x} for x in names[::2]], "$setElementOrder/containers": []}})
        case(f, "large-merge-%d" % n, orig, {"spec": {"containers": [{"name": x} for x in reversed(names[::2])]}})


def random_nested_cases(count=120, seed=7):
    """Seeded random patches with directives nested inside list items: `$patch` on sub-maps,
    `$retainKeys` on items and maps, `$setElementOrder/env`, delete lists on atomic lists."""
    import random
    rnd = random.Random(seed)
    f = "random-nested"
    enames = ["A", "B", "C"]

    def maybe(p):
        return rnd.random() < p

    def env():
        return [{"name": n, "value": rnd.choice(["1", "2", None])} for n in rnd.sample(enames, rnd.randint(0, 3))]

    def sub_map(keys):
        m = {k: rnd.choice([1, "x", None, {"n": rnd.choice([1, None])}]) for k in rnd.sample(keys, rnd.randint(0, len(keys)))}
        r = rnd.random()
        if r < 0.15:
            m["$patch"] = "replace"
        elif r < 0.25:
            m["$patch"] = "delete"
        elif r < 0.35:
            m["$retainKeys"] = rnd.sample(keys, rnd.randint(0, len(keys)))
        return m

    def container(name, patchy):
        c = {"name": name}
        if maybe(0.6):
            c["env"] = env()
        if maybe(0.5):
            c["securityContext"] = sub_map(["runAsUser", "runAsGroup", "privileged"]) if patchy else {"runAsUser": 1, "privileged": False}
        if maybe(0.5):
            c["resources"] = {"limits": sub_map(["cpu", "memory"]) if patchy else {"cpu": "1"}}
        if maybe(0.4):
            c["args"] = rnd.sample(["x", "y", "z"], rnd.randint(0, 3))
        if patchy:
            if maybe(0.15):
                c["$retainKeys"] = ["name"] + rnd.sample(["env", "securityContext", "resources", "args", "image"], rnd.randint(0, 4))
            if maybe(0.2) and c.get("env"):
                order = [e["name"] for e in c["env"]]
                for extra in enames:
                    if extra not in order and maybe(0.5):
                        order.insert(rnd.randrange(len(order) + 1), extra)
                c["$setElementOrder/env"] = [{"name": n} for n in order]
            if maybe(0.1):
                c["$deleteFromPrimitiveList/args"] = rnd.sample(["x", "y"], rnd.randint(0, 2))
            if maybe(0.1):
                c["env"] = (c.get("env") or []) + [{"name": rnd.choice(enames), "$patch": "delete"}]
        return c

    for i in range(count):
        names = rnd.sample(["a", "b", "c", "istio-proxy"], rnd.randint(0, 4))
        o = pod(containers=[container(n, False) for n in names], labels={"l1": "a", "l2": "b"})
        pnames = rnd.sample(["a", "b", "c", "istio-proxy"], rnd.randint(1, 3))
        p = {"spec": {"containers": [container(n, True) for n in pnames]}}
        if maybe(0.3):
            p["metadata"] = {"labels": sub_map(["l1", "l2", "l3"])}
        case(f, "n%03d" % i, o, p)


def main():
    # Ad-hoc fuzzing: `gen_cases.py --random-only SEED COUNT DIR` writes only random cases.
    out = OUT
    if len(sys.argv) == 5 and sys.argv[1] == "--random-only":
        random_cases(count=int(sys.argv[3]), seed=int(sys.argv[2]))
        out = sys.argv[4]
    else:
        random_cases()
        random_nested_cases()
        istio_cases()
        map_cases()
        list_cases()
        order_cases()
        retain_cases()
    os.makedirs(out, exist_ok=True)
    total = 0
    for name, cases in sorted(FILES.items()):
        with open(os.path.join(out, name + ".json"), "w") as fh:
            json.dump(cases, fh, indent=1)
            fh.write("\n")
        total += len(cases)
    print("wrote %d cases in %d files" % (total, len(FILES)), file=sys.stderr)


if __name__ == "__main__":
    main()
