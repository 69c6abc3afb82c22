#!/usr/bin/env python3
"""Regenerates pods.json and expected.json: Istio's rendering of its chart templates on the
golden-corpus pods (pkg/kube/inject/testdata/inject/*.yaml), for several values profiles.

Needs PyYAML and the istio oracle binary (tools/template-oracle/regen.sh builds it):
    gen.py SHARED_DIR ISTIO_ORACLE_BIN
Each pod (namespace "default" when absent; pods with a previous injection status skipped)
is rendered with every chart sidecar template and default values, and with the sidecar
template under a rotating subset of other values profiles; nativeSidecars is on for every
fourth pod. expected.json keeps the SHA-256 of each output, its length and the error.
"""
import glob, hashlib, json, os, subprocess, sys, tempfile

shared, oracle = sys.argv[1], sys.argv[2]
here = os.path.dirname(os.path.abspath(__file__))
import yaml

corpus = f"{shared}/istio/pkg/kube/inject/testdata/inject"
files = "istio/manifests/charts/istio-control/istio-discovery/files"
values_files = ["default", "cni-network1", "hold-application", "traffic-params", "status-params",
                "proxy-resources-null", "proxy-resources-mixed-null", "mount-mtls-certs",
                "image-secrets-in-values", "pull-policy-always"]
templates = {"sidecar": "injection-template.yaml", "gateway": "gateway-injection-template.yaml",
             "grpc-agent": "grpc-agent.yaml", "grpc-simple": "grpc-simple.yaml"}


def pods(doc):
    if not isinstance(doc, dict):
        return []
    if doc.get("kind") == "Pod":
        return [doc]
    out = []
    spec = doc.get("spec") or {}
    if isinstance(spec.get("template"), dict):
        out.append(spec["template"])
    jt = ((spec.get("jobTemplate") or {}).get("spec") or {}).get("template")
    if isinstance(jt, dict):
        out.append(jt)
    for item in doc.get("items") or []:
        out += pods(item)
    return out


tmp = tempfile.mkdtemp()
for d in ("cases", "expected", "fixtures"):
    os.makedirs(f"{tmp}/{d}")
cases, meta, all_pods, n = [], {}, {}, 0
for path in sorted(glob.glob(corpus + "/*.yaml")):
    if path.endswith(".iop.yaml"):
        continue
    base = os.path.basename(path)[:-5]
    try:
        docs = list(yaml.safe_load_all(open(path)))
    except Exception:
        continue
    k = 0
    for doc in docs:
        for pod in pods(doc):
            md = pod.get("metadata") or {}
            pod["metadata"] = md
            ann = md.get("annotations") or {}
            if "sidecar.istio.io/status" in ann or "proxy.istio.io/overrides" in ann:
                continue
            md.setdefault("namespace", "default")
            k += 1
            pod_name = f"{base}-{k}"
            all_pods[pod_name] = pod
            for vi, vf in enumerate(values_files):
                if vi > 0 and (n + vi) % 3 != 0:
                    continue
                name = f"{pod_name}-{vf}"
                native = n % 4 == 0
                fx = {"kind": "sidecar", "valuesFile": f"istio/derived/values/{vf}.json",
                      "meshFile": "istio/derived/mesh/default.yaml", "revision": "default",
                      "nativeSidecars": native, "compliancePolicy": "", "pod": pod}
                json.dump(fx, open(f"{tmp}/fixtures/{name}.yaml", "w"))
                for tn, tf in templates.items():
                    if tn != "sidecar" and vi > 0:
                        continue
                    case = f"istio-corpus/{tn}/{name}"
                    cases.append({"name": case, "template_file": f"{files}/{tf}",
                                  "data_kind": "istio-sidecar", "fixture": name})
                    meta[case] = {"pod": pod_name, "values": vf, "native": native, "template": tf}
            n += 1
json.dump(cases, open(f"{tmp}/cases/istio-corpus.json", "w"))
subprocess.run([oracle, "-cases", f"{tmp}/cases", "-expected", f"{tmp}/expected", "-shared", shared,
                "-fixtures", f"{tmp}/fixtures"], check=True)
expected = json.load(open(f"{tmp}/expected/istio-corpus.json"))
rows = []
for c in cases:
    r = expected[c["name"]]
    out = r["output"].encode()
    rows.append({"name": c["name"], **meta[c["name"]], "sha256": hashlib.sha256(out).hexdigest(),
                 "error": r["error"], "bytes": len(out)})
json.dump(dict(sorted(all_pods.items())), open(f"{here}/pods.json", "w"), separators=(",", ":"))
with open(f"{here}/expected.json", "w") as f:
    f.write("[\n" + ",\n".join(json.dumps(r, separators=(",", ":")) for r in rows) + "\n]\n")
