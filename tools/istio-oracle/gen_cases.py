#!/usr/bin/env python3
"""Generates the workloads of the istioctl differential corpus.

Writes a JSON array of {"name", "input"} (input: the manifest text handed to `kube-inject -f`) to
the path given as the first argument. Seeded and deterministic: the same seed and count give the
same file byte for byte.

The workloads are what users really feed `istioctl kube-inject`: Deployments and the other
workload kinds, bare Pods as `kubectl get -o yaml` prints them (managedFields, status, server
defaults, a ReplicaSet owner), several containers with named and numbered ports, HTTP, TCP, gRPC
and exec probes, lifecycle hooks, a user `istio-proxy` container overriding the injected one,
native-sidecar init containers, Istio's annotations with valid and invalid values, and the ways
YAML gets written: multi-document files with Services and ConfigMaps, `kind: List`, JSON,
anchors and merge keys, block scalars, flow style, shuffled keys.

Every workload is meant to be valid for the API server (see `validate.sh`): invalid *annotation
values* are there on purpose (the injector must refuse them), invalid objects are not.
"""
import copy
import json
import random
import sys

import yaml

NAMESPACES = ["default", "shop", "payments", None]
APPS = ["web", "api", "cart", "checkout", "ledger", "search", "auth", "billing"]
IMAGES = ["nginx:1.27", "ghcr.io/example/api:2.3.1", "registry.example.com/team/worker@sha256:" + "ab" * 32,
          "busybox", "python:3.12-slim", "envoyproxy/ratelimit:master"]
PORT_NAMES = ["http", "grpc", "metrics", "http-admin", "tcp-db", "https", "grpc-web", "debug"]


class Literal(str):
    """A string dumped as a YAML block scalar."""


def literal_representer(dumper, data):
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", str(data), style=style)


class Dumper(yaml.SafeDumper):
    pass


Dumper.add_representer(Literal, literal_representer)


def dump(obj, rng, flow=False):
    return yaml.dump(obj, Dumper=Dumper, sort_keys=False, default_flow_style=None if flow else False,
                     width=rng.choice([80, 4096]), allow_unicode=True)


class Gen:
    def __init__(self, rng):
        self.r = rng

    def chance(self, p):
        return self.r.random() < p

    def pick(self, xs):
        return self.r.choice(xs)

    # ---------------------------------------------------------------- containers

    def ports(self, used):
        out = []
        for _ in range(self.r.choice([0, 1, 1, 2, 3])):
            number = self.pick([80, 443, 8080, 8443, 9090, 9000, 3000, 5432, 15090, 50051, 8081])
            if number in [p["containerPort"] for p in out]:
                continue
            port = {"containerPort": number}
            if self.chance(0.6):
                name = self.pick(PORT_NAMES)
                if name not in used:
                    used.add(name)
                    port["name"] = name
            if self.chance(0.3):
                port["protocol"] = self.pick(["TCP", "TCP", "UDP"])
            out.append(self.shuffled(port))
        return out

    def port_ref(self, container):
        named = [p["name"] for p in container.get("ports", []) if "name" in p]
        numbered = [p["containerPort"] for p in container.get("ports", [])]
        choices = [self.pick([8080, 80, 9090, 3000])]
        if named:
            choices += [self.pick(named)] * 2
        if numbered:
            choices.append(self.pick(numbered))
        return self.pick(choices)

    def handler(self, container, kinds):
        kind = self.pick(kinds)
        if kind == "httpGet":
            action = {"port": self.port_ref(container)}
            if self.chance(0.7):
                action["path"] = self.pick(["/healthz", "/ready", "/", "/health/live", "/q/health?full=1"])
            if self.chance(0.2):
                action["scheme"] = self.pick(["HTTP", "HTTPS"])
            if self.chance(0.15):
                action["httpHeaders"] = [{"name": "X-Probe", "value": self.pick(["1", "kube"])}]
            if self.chance(0.1):
                action["host"] = "127.0.0.1"
            return {"httpGet": self.shuffled(action)}
        if kind == "tcpSocket":
            return {"tcpSocket": {"port": self.port_ref(container)}}
        if kind == "grpc":
            port = [p["containerPort"] for p in container.get("ports", [])] or [50051]
            action = {"port": self.pick(port)}
            if self.chance(0.4):
                action["service"] = self.pick(["", "grpc.health.v1.Health", "readiness"])
            return {"grpc": action}
        if kind == "sleep":
            return {"sleep": {"seconds": self.pick([1, 5, 10])}}
        return {"exec": {"command": self.pick([["cat", "/tmp/healthy"], ["sh", "-c", "pg_isready -U app"],
                                                ["/bin/grpc_health_probe", "-addr=:50051"]])}}

    def probe(self, container, startup=False):
        probe = self.handler(container, ["httpGet", "httpGet", "tcpSocket", "grpc", "exec"])
        for key, values in [("initialDelaySeconds", [0, 5, 10]), ("periodSeconds", [3, 10, 15]),
                            ("timeoutSeconds", [1, 2, 5]), ("failureThreshold", [3, 30])]:
            if self.chance(0.35):
                probe[key] = self.pick(values)
        if not startup and self.chance(0.1):
            probe["successThreshold"] = 1
        return self.shuffled(probe)

    def resources(self):
        res = {}
        if self.chance(0.8):
            res["requests"] = {"cpu": self.pick(["100m", "250m", "0.5", "1", "1500m"]),
                               "memory": self.pick(["64Mi", "128Mi", "256Mi", "1Gi", "1e8"])}
        if self.chance(0.5):
            res["limits"] = {"cpu": self.pick(["2", "2000m", "4"]), "memory": self.pick(["2Gi", "4096Mi", "2G"])}
        return res

    def env(self):
        out = []
        for name in self.r.sample(["LOG_LEVEL", "PORT", "POD_NAME", "FEATURE_X", "GREETING", "DB_URL"],
                                  self.r.choice([0, 1, 2, 3])):
            if name == "POD_NAME":
                out.append({"name": name, "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}})
            elif name == "PORT":
                out.append({"name": name, "value": self.pick(["8080", "80"])})
            elif name == "GREETING":
                out.append({"name": name, "value": self.pick(["hello, world", "héllo", "a: b", "# not a comment",
                                                               "'quoted'", "line1\nline2", ""])})
            else:
                out.append({"name": name, "value": self.pick(["debug", "true", "postgres://db:5432/app", "1"])})
        return out

    def container(self, used_names, used_ports, app_name):
        name = self.pick([app_name, "app", "worker", "log-agent", "metrics-exporter", "proxy-helper"])
        while name in used_names:
            name += "-x"
        used_names.add(name)
        c = {"name": name, "image": self.pick(IMAGES)}
        ports = self.ports(used_ports)
        if ports:
            c["ports"] = ports
        if self.chance(0.3):
            c["args"] = self.pick([["--port=8080"], ["serve", "--verbose"]])
        if self.chance(0.15):
            c["command"] = ["sh", "-c", Literal("set -e\necho starting\nexec ./server --port 8080\n")]
        for kind in ["livenessProbe", "readinessProbe", "startupProbe"]:
            if self.chance({"startupProbe": 0.2}.get(kind, 0.45)):
                c[kind] = self.probe(c, startup=kind == "startupProbe")
        if self.chance(0.25):
            hooks = {}
            if self.chance(0.6):
                hooks["preStop"] = self.handler(c, ["exec", "httpGet", "sleep"])
            if self.chance(0.5):
                hooks["postStart"] = self.handler(c, ["exec", "httpGet", "tcpSocket"])
            if hooks:
                c["lifecycle"] = hooks
        if self.chance(0.6):
            res = self.resources()
            if res:
                c["resources"] = res
        env = self.env()
        if env:
            c["env"] = env
        if self.chance(0.2):
            c["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
        if self.chance(0.15):
            c["securityContext"] = self.pick([{"runAsUser": 1000, "runAsNonRoot": True},
                                              {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
                                              {"readOnlyRootFilesystem": True}])
        if self.chance(0.15):
            c["imagePullPolicy"] = self.pick(["Always", "IfNotPresent"])
        return self.shuffled(c)

    def proxy_override(self):
        c = {"name": "istio-proxy", "image": self.pick(["auto", "auto", "docker.io/istio/proxyv2:custom"])}
        if self.chance(0.6):
            c["resources"] = {"requests": {"cpu": self.pick(["50m", "200m"]), "memory": "64Mi"},
                              "limits": {"cpu": "1", "memory": "512Mi"}}
        if self.chance(0.4):
            c["env"] = [{"name": "ISTIO_META_DNS_CAPTURE", "value": "true"}]
        if self.chance(0.3):
            c["lifecycle"] = {"preStop": {"exec": {"command": ["sleep", "5"]}}}
        if self.chance(0.2):
            c["securityContext"] = {"runAsUser": 1337}
        return c

    def init_containers(self, app_name):
        out = []
        if self.chance(0.25):
            out.append({"name": "migrate", "image": self.pick(IMAGES), "command": ["./migrate", "up"]})
        if self.chance(0.2):
            native = {"name": "log-shipper", "image": "fluent/fluent-bit:3", "restartPolicy": "Always"}
            if self.chance(0.5):
                native["ports"] = [{"containerPort": 2020, "name": "fb-http"}]
                native["readinessProbe"] = {"httpGet": {"port": self.pick(["fb-http", 2020]), "path": "/api/v1/health"}}
            if self.chance(0.3):
                native["startupProbe"] = {"tcpSocket": {"port": 2020}}
            out.append(native)
        if self.chance(0.03):
            out.append({"name": "istio-proxy", "image": "auto", "restartPolicy": "Always",
                        "resources": {"requests": {"cpu": "100m"}}})
        return out

    # ---------------------------------------------------------------- pod metadata

    def annotations(self):
        a = {}
        options = [
            ("sidecar.istio.io/inject", ["true", "false", "true"]),
            ("proxy.istio.io/config", [
                "concurrency: 2", Literal("holdApplicationUntilProxyStarts: true\n"),
                Literal("terminationDrainDuration: 30s\nproxyMetadata:\n  ISTIO_META_DNS_CAPTURE: \"true\"\n"),
                "{\"concurrency\": 4}", "concurrency: 3\nnoSuchField: 1", "concurrency: [", "concurrency: abc",
                "drainDuration: 1m", "tracing:\n  sampling: 10", "interceptionMode: TPROXY",
                "proxyStatsMatcher:\n  inclusionPrefixes: [cluster.outbound]", "holdApplicationUntilProxyStarts: false",
                "image:\n  imageType: distroless",
            ]),
            ("traffic.sidecar.istio.io/includeOutboundIPRanges", ["10.0.0.0/8,172.16.0.0/12", "*", "", "10.0.0.0/33",
                                                                   "bad", "10.96.0.0/12, 10.0.0.0/8", "::/0"]),
            ("traffic.sidecar.istio.io/excludeOutboundIPRanges", ["169.254.169.254/32", "10.0.0.1", "fd00::/8"]),
            ("traffic.sidecar.istio.io/excludeInboundPorts", ["8081,9090", "abc", "70000", "15020"]),
            ("traffic.sidecar.istio.io/includeInboundPorts", ["*", "80,8080", "", "x"]),
            ("traffic.sidecar.istio.io/excludeOutboundPorts", ["5432", "0", "1-2"]),
            ("traffic.sidecar.istio.io/includeOutboundPorts", ["443"]),
            ("traffic.sidecar.istio.io/kubevirtInterfaces", ["net1"]),
            ("sidecar.istio.io/proxyCPU", ["200m", "1", "bad", "0.5"]),
            ("sidecar.istio.io/proxyMemory", ["256Mi", "1G", "lots"]),
            ("sidecar.istio.io/proxyCPULimit", ["2", "1000m"]),
            ("sidecar.istio.io/proxyMemoryLimit", ["1Gi"]),
            ("sidecar.istio.io/rewriteAppHTTPProbers", ["false", "true"]),
            ("sidecar.istio.io/interceptionMode", ["TPROXY", "REDIRECT", "NONE", "MAGIC"]),
            ("status.sidecar.istio.io/port", ["15021", "0", "abc", "99999"]),
            ("readiness.status.sidecar.istio.io/initialDelaySeconds", ["5", "x"]),
            ("readiness.status.sidecar.istio.io/periodSeconds", ["10"]),
            ("readiness.status.sidecar.istio.io/failureThreshold", ["30"]),
            ("readiness.status.sidecar.istio.io/applicationPorts", ["8080,9090", ""]),
            ("prometheus.io/scrape", ["true", "false"]),
            ("prometheus.io/port", ["8080", "9090", "15090", "15020", "http", "0"]),
            ("prometheus.io/path", ["/metrics", "/stats"]),
            ("prometheus.istio.io/merge-metrics", ["false", "true"]),
            ("prometheus.istio.io/scrape-targets", ["8080:/metrics,9100:/custom", "9100", "15000:/x", ":/x"]),
            ("sidecar.istio.io/logLevel", ["debug", "warning", "verbose"]),
            ("sidecar.istio.io/componentLogLevel", ["misc:error,upstream:debug"]),
            ("sidecar.istio.io/agentLogLevel", ["default:debug", "all:info"]),
            ("sidecar.istio.io/proxyImage", ["example.com/istio/proxyv2:1.99"]),
            ("sidecar.istio.io/enableCoreDump", ["true"]),
            ("sidecar.istio.io/statsInclusionPrefixes", ["cluster.outbound,listener"]),
            ("sidecar.istio.io/userVolume", ["{\"extra\":{\"emptyDir\":{}}}", "[{\"name\":\"v\",\"emptyDir\":{}}]"]),
            ("sidecar.istio.io/userVolumeMount", ["{\"extra\":{\"mountPath\":\"/extra\"}}"]),
            ("inject.istio.io/templates", ["sidecar", "gateway", "sidecar,nosuch"]),
            ("kubectl.kubernetes.io/default-container", ["app"]),
            ("kubectl.kubernetes.io/default-logs-container", ["app"]),
            ("cluster-autoscaler.kubernetes.io/safe-to-evict", ["true"]),
            ("example.com/team", ["payments", "héllo wörld"]),
        ]
        for key, values in self.r.sample(options, self.r.choice([0, 0, 1, 1, 2, 3, 4])):
            a[key] = self.pick(values)
        return a

    def labels(self, app_name):
        labels = {"app": app_name}
        if self.chance(0.5):
            labels["version"] = self.pick(["v1", "v2", "1.0.3"])
        if self.chance(0.15):
            labels["app.kubernetes.io/name"] = app_name
        if self.chance(0.1):
            labels["service.istio.io/canonical-name"] = app_name + "-canonical"
        if self.chance(0.05):
            labels["topology.istio.io/network"] = "network-2"
        if self.chance(0.05):
            labels["sidecar.istio.io/inject"] = self.pick(["true", "false"])
        if self.chance(0.03):
            labels["istio.io/rev"] = "default"
        return labels

    def pod_spec(self, app_name, restart=None, defaults=False):
        used_names, used_ports = set(), set()
        containers = [self.container(used_names, used_ports, app_name)
                      for _ in range(self.r.choice([1, 1, 1, 2, 2, 3]))]
        if self.chance(0.12):
            containers.insert(self.r.randrange(len(containers) + 1), self.proxy_override())
        spec = {"containers": containers}
        init = self.init_containers(app_name)
        if init:
            spec["initContainers"] = init
        if restart:
            spec["restartPolicy"] = restart
        if any("volumeMounts" in c for c in containers):
            spec["volumes"] = [self.pick([{"name": "data", "emptyDir": {}},
                                          {"name": "data", "configMap": {"name": app_name + "-config"}}])]
        if self.chance(0.2):
            spec["serviceAccountName"] = app_name
        if self.chance(0.15):
            spec["securityContext"] = self.pick([{"fsGroup": 2000}, {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}])
        if self.chance(0.1):
            spec["terminationGracePeriodSeconds"] = self.pick([10, 60])
        if self.chance(0.1):
            spec["nodeSelector"] = {"kubernetes.io/os": "linux"}
        if self.chance(0.08):
            spec["tolerations"] = [{"key": "dedicated", "operator": "Equal", "value": "mesh", "effect": "NoSchedule"}]
        if self.chance(0.05):
            spec["imagePullSecrets"] = [{"name": "registry"}]
        if self.chance(0.03):
            spec["hostNetwork"] = True
        if self.chance(0.04):
            spec["dnsConfig"] = {"options": [{"name": "ndots", "value": "2"}]}
        if defaults:
            self.server_defaults(spec, restart or "Always")
        return self.shuffled(spec, keep_first=["containers"] if self.chance(0.5) else [])

    def server_defaults(self, spec, restart):
        for c in spec["containers"] + spec.get("initContainers", []):
            c.setdefault("imagePullPolicy", "IfNotPresent")
            c.setdefault("resources", {})
            c["terminationMessagePath"] = "/dev/termination-log"
            c["terminationMessagePolicy"] = "File"
            for port in c.get("ports", []):
                port.setdefault("protocol", "TCP")
            for kind in ["livenessProbe", "readinessProbe", "startupProbe"]:
                if kind in c:
                    p = c[kind]
                    p.setdefault("periodSeconds", 10)
                    p.setdefault("timeoutSeconds", 1)
                    p.setdefault("successThreshold", 1)
                    p.setdefault("failureThreshold", 3)
                    if "httpGet" in p:
                        p["httpGet"].setdefault("path", "/")
                        p["httpGet"].setdefault("scheme", "HTTP")
        spec.setdefault("restartPolicy", restart)
        spec.setdefault("dnsPolicy", "ClusterFirst")
        spec.setdefault("schedulerName", "default-scheduler")
        spec.setdefault("securityContext", {})
        spec.setdefault("terminationGracePeriodSeconds", 30)
        if self.chance(0.5):
            spec["enableServiceLinks"] = True
            spec["preemptionPolicy"] = "PreemptLowerPriority"
            spec["priority"] = 0
        if "serviceAccountName" in spec:
            spec["serviceAccount"] = spec["serviceAccountName"]

    def timestamp(self):
        day = self.r.randrange(1, 29)
        base = "2026-%02d-%02dT%02d:%02d:%02d" % (self.r.randrange(1, 13), day, self.r.randrange(24),
                                                  self.r.randrange(60), self.r.randrange(60))
        return base + self.pick(["Z", "Z", "Z", "Z", ".5Z", "+02:00", ".123456-07:30"])

    def managed_fields(self, manager):
        return [{"apiVersion": "v1" if manager == "kubelet" else "apps/v1",
                 "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                              "f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {".": {}, "f:image": {}}}}},
                 "manager": manager,
                 "operation": "Update",
                 "time": self.timestamp()}]

    def server_metadata(self, meta, manager):
        meta["uid"] = "%08x-%04x-4%03x-8%03x-%012x" % (self.r.getrandbits(32), self.r.getrandbits(16),
                                                      self.r.getrandbits(12), self.r.getrandbits(12),
                                                      self.r.getrandbits(48))
        meta["resourceVersion"] = str(self.r.randrange(1000, 999999))
        meta["creationTimestamp"] = self.timestamp()
        if self.chance(0.7):
            meta["managedFields"] = self.managed_fields(manager)

    # ---------------------------------------------------------------- objects

    def template(self, app_name, restart=None, defaults=False):
        meta = {"labels": self.labels(app_name)}
        ann = self.annotations()
        if ann:
            meta["annotations"] = ann
        if defaults and self.chance(0.5):
            meta["creationTimestamp"] = None
        return {"metadata": self.shuffled(meta), "spec": self.pod_spec(app_name, restart, defaults)}

    def namespace(self, meta):
        ns = self.pick(NAMESPACES)
        if ns:
            meta["namespace"] = ns

    def workload(self, kind):
        app_name = self.pick(APPS)
        kubectl = self.chance(0.3)
        meta = {"name": app_name}
        self.namespace(meta)
        if self.chance(0.3):
            meta["labels"] = {"app": app_name}
        if self.chance(0.15):
            meta["annotations"] = {"deployment.kubernetes.io/revision": "3"} if kind == "Deployment" else {"owner": "team-a"}
        if kubectl:
            self.server_metadata(meta, "kubectl-client-side-apply")
            meta["generation"] = self.r.randrange(1, 9)
        restart = {"Job": self.pick(["Never", "OnFailure"]), "CronJob": "OnFailure"}.get(kind)
        template = self.template(app_name, restart, defaults=kubectl)
        selector = {"matchLabels": {"app": app_name}}
        api = {"Deployment": "apps/v1", "StatefulSet": "apps/v1", "DaemonSet": "apps/v1", "ReplicaSet": "apps/v1",
               "Job": "batch/v1", "CronJob": "batch/v1", "ReplicationController": "v1"}[kind]
        obj = {"apiVersion": api, "kind": kind, "metadata": meta}
        if kind in ("Deployment", "StatefulSet", "ReplicaSet"):
            spec = {"replicas": self.pick([1, 2, 3]), "selector": selector, "template": template}
            if kind == "StatefulSet":
                spec["serviceName"] = app_name
            if kind == "Deployment" and kubectl:
                spec.update({"progressDeadlineSeconds": 600, "revisionHistoryLimit": 10,
                             "strategy": {"type": "RollingUpdate",
                                          "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}})
            if kind == "Deployment" and self.chance(0.1):
                spec["strategy"] = {"type": "Recreate"}
        elif kind == "DaemonSet":
            spec = {"selector": selector, "template": template}
        elif kind == "ReplicationController":
            spec = {"replicas": 1, "selector": {"app": app_name}, "template": template}
        elif kind == "Job":
            spec = {"template": template}
            if self.chance(0.5):
                spec["backoffLimit"] = self.pick([0, 4])
            if self.chance(0.2):
                spec["ttlSecondsAfterFinished"] = 100
        else:  # CronJob
            spec = {"schedule": self.pick(["*/5 * * * *", "0 3 * * *"]),
                    "jobTemplate": {"spec": {"template": template}}}
            if self.chance(0.3):
                spec["concurrencyPolicy"] = "Forbid"
        obj["spec"] = spec
        if kubectl:
            obj["status"] = self.workload_status(kind)
        return obj

    def workload_status(self, kind):
        if kind in ("Deployment", "StatefulSet", "ReplicaSet", "DaemonSet"):
            status = {"observedGeneration": 2}
            if kind == "Deployment":
                status["availableReplicas"] = 1
                status["conditions"] = [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
                                         "message": "Deployment has minimum availability.",
                                         "lastTransitionTime": self.timestamp(), "lastUpdateTime": self.timestamp()}]
            if kind == "DaemonSet":
                status.update({"currentNumberScheduled": 1, "desiredNumberScheduled": 1, "numberMisscheduled": 0,
                               "numberReady": 1})
            else:
                status["replicas"] = 1
            return status
        if kind == "Job":
            return {"startTime": self.timestamp(), "active": 1}
        if kind == "CronJob":
            return {"lastScheduleTime": self.timestamp()}
        return {}

    def pod(self):
        app_name = self.pick(APPS)
        meta = {}
        owned = self.chance(0.6)
        kubectl = owned or self.chance(0.4)
        if owned:
            hash_ = "".join(self.r.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(self.pick([9, 10])))
            suffix = "".join(self.r.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5))
            owner_kind = self.pick(["ReplicaSet", "ReplicaSet", "ReplicaSet", "Job", "StatefulSet", "DaemonSet"])
            owner_name = {"ReplicaSet": "%s-%s" % (app_name, hash_), "Job": "%s-%d" % (app_name, 29000000 + self.r.randrange(999999)),
                          "StatefulSet": app_name, "DaemonSet": app_name}[owner_kind]
            meta["generateName"] = owner_name + "-"
            if self.chance(0.8):
                meta["name"] = owner_name + "-" + (suffix if owner_kind != "StatefulSet" else "0")
            labels = self.labels(app_name)
            if owner_kind == "ReplicaSet":
                labels["pod-template-hash"] = hash_
            meta["labels"] = labels
            meta["ownerReferences"] = [{"apiVersion": "batch/v1" if owner_kind == "Job" else "apps/v1",
                                        "kind": owner_kind, "name": owner_name,
                                        "uid": "0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9",
                                        "controller": True, "blockOwnerDeletion": True}]
        else:
            meta["name"] = app_name
            meta["labels"] = self.labels(app_name)
        self.namespace(meta)
        ann = self.annotations()
        if ann:
            meta["annotations"] = ann
        if kubectl:
            self.server_metadata(meta, self.pick(["kube-controller-manager", "kubectl-create", "kubelet"]))
        restart = "Never" if owned and meta["ownerReferences"][0]["kind"] == "Job" else None
        spec = self.pod_spec(app_name, restart, defaults=kubectl)
        if kubectl and self.chance(0.5):
            spec["nodeName"] = "node-%d" % self.r.randrange(1, 4)
        obj = {"apiVersion": "v1", "kind": "Pod", "metadata": self.shuffled(meta), "spec": spec}
        if kubectl:
            obj["status"] = self.pod_status(spec)
        return obj

    def pod_status(self, spec):
        started = self.timestamp()
        return {"phase": self.pick(["Running", "Pending"]),
                "conditions": [{"type": t, "status": "True", "lastProbeTime": None,
                                "lastTransitionTime": self.timestamp()} for t in ["Initialized", "Ready"]],
                "containerStatuses": [{"name": c["name"], "image": c["image"], "imageID": "", "ready": True,
                                       "restartCount": 0, "started": True,
                                       "state": {"running": {"startedAt": started}}} for c in spec["containers"]],
                "hostIP": "192.0.2.10", "podIP": "198.51.100.7", "podIPs": [{"ip": "198.51.100.7"}],
                "qosClass": "Burstable", "startTime": started}

    def other(self, app_name):
        kind = self.pick(["Service", "ConfigMap", "ServiceAccount", "Comment"])
        if kind == "Service":
            return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": app_name},
                    "spec": {"selector": {"app": app_name}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}}
        if kind == "ConfigMap":
            return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": app_name + "-config"},
                    "data": {"app.yaml": Literal("server:\n  port: 8080\n  # keep this\nfeatures: [a, b]\n"),
                             "flag": "on"}}
        if kind == "ServiceAccount":
            return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": app_name}}
        return None

    # ---------------------------------------------------------------- rendering

    def shuffled(self, d, keep_first=()):
        if not self.chance(0.3):
            return d
        keys = [k for k in d if k not in keep_first]
        self.r.shuffle(keys)
        return {k: d[k] for k in list(keep_first) + keys if k in d}

    def object(self):
        kind = self.pick(["Deployment"] * 6 + ["Pod"] * 4 + ["StatefulSet", "DaemonSet", "Job", "CronJob",
                                                               "ReplicaSet", "ReplicationController"])
        return self.pod() if kind == "Pod" else self.workload(kind)

    def render(self, obj):
        style = self.pick(["block"] * 6 + ["flow", "json", "anchors", "merge", "comments"])
        if style == "json":
            return json.dumps(obj, indent=self.pick([2, 4, None]), ensure_ascii=False) + "\n", style
        if style == "anchors":
            self.share_nodes(obj)
            return dump(obj, self.r), style
        if style == "merge":
            text = self.merge_keys(obj)
            if text:
                return text, style
            style = "block"
        text = dump(obj, self.r, flow=style == "flow")
        if style == "comments":
            text = "# generated for the differential corpus\n" + text.replace("\nspec:\n", "\nspec: # the spec\n", 1)
        return text, style

    def share_nodes(self, obj):
        """Makes containers share equal sub-objects, so PyYAML writes anchors and aliases."""
        spec = pod_spec_of(obj)
        if not spec:
            return
        containers = spec.get("containers", [])
        shared = {"requests": {"cpu": "100m", "memory": "128Mi"}}
        for c in containers:
            if c.get("name") != "istio-proxy":
                c["resources"] = shared
        labels = obj.get("metadata", {}).get("labels")
        template = obj.get("spec", {}).get("template", {})
        if labels is not None and template.get("metadata", {}).get("labels") == labels:
            template["metadata"]["labels"] = labels

    def merge_keys(self, obj):
        """A first container's env is anchored and merged (`<<`) into the others' entries."""
        spec = pod_spec_of(obj)
        if not spec or len(spec.get("containers", [])) < 1:
            return None
        marker = "__MERGE_ME__"
        first = spec["containers"][0]
        first["securityContext"] = {"runAsNonRoot": True, "runAsUser": 1000}
        for c in spec["containers"][1:]:
            if c.get("name") != "istio-proxy":
                c["securityContext"] = marker
        text = dump(obj, self.r)
        if marker not in text:
            return text
        text = text.replace("securityContext:\n", "securityContext: &ctx\n", 1)
        lines = []
        for line in text.splitlines(keepends=True):
            if line.rstrip("\n").endswith("securityContext: " + marker):
                indent = " " * (len(line) - len(line.lstrip(" ")) + 2)
                line = line.replace(marker, "\n%s<<: *ctx\n%srunAsUser: 2000" % (indent, indent))
            lines.append(line)
        return "".join(lines)

    def case(self):
        shape = self.pick(["single"] * 7 + ["multi", "multi", "list"])
        if shape == "single":
            text, style = self.render(self.object())
            return text, style
        if shape == "list":
            items = [self.object() for _ in range(self.pick([1, 2, 3]))]
            extra = self.other(self.pick(APPS))
            if extra:
                items.insert(self.r.randrange(len(items) + 1), extra)
            lst = {"apiVersion": "v1", "kind": "List", "items": items, "metadata": {"resourceVersion": ""}}
            if self.chance(0.4):
                return json.dumps(lst, indent=2) + "\n", "list-json"
            return dump(lst, self.r), "list"
        docs = []
        for _ in range(self.pick([2, 3, 4])):
            if self.chance(0.55):
                docs.append(self.render(self.object())[0])
            else:
                o = self.other(self.pick(APPS))
                docs.append(dump(o, self.r) if o else "# only a comment here\n")
        sep = self.pick(["---\n", "---\n", "--- \n", "\n---\n"])
        text = sep.join(docs)
        if self.chance(0.3):
            text = "---\n" + text
        if self.chance(0.2):
            text += "---\n"
        return text, "multi"


def pod_spec_of(obj):
    if obj.get("kind") == "Pod":
        return obj.get("spec")
    if obj.get("kind") == "CronJob":
        return obj["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    return obj.get("spec", {}).get("template", {}).get("spec")


def main():
    out = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 700
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 15
    rng = random.Random(seed)
    gen = Gen(rng)
    cases = []
    for i in range(count):
        text, style = gen.case()
        cases.append({"name": "%04d-%s" % (i, style), "input": text})
    with open(out, "w") as f:
        json.dump(cases, f, indent=0, ensure_ascii=False)
        f.write("\n")
    print("%d cases -> %s" % (len(cases), out), file=sys.stderr)


if __name__ == "__main__":
    main()
