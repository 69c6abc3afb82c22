#!/usr/bin/env python3
"""The istioctl side of the differential corpus (run by regen.sh, which builds istioctl).

    oracle.py profiles ISTIOCTL PROFILES_DIR
        For each settings profile, runs `istioctl manifest generate` and extracts what offline
        `kube-inject` needs: PROFILES_DIR/<profile>/injector-config.yaml (the
        `istio-sidecar-injector` ConfigMap's `config`), values.json (its `values`) and mesh.yaml
        (the `istio` ConfigMap's `mesh`), plus profile.json (how istioctl is run).

    oracle.py record ISTIOCTL CASES_JSON PROFILES_DIR OUT_DIR
        Runs `istioctl kube-inject` on every case under every profile, then once more on
        istioctl's own output of every REINJECT_EVERY-th successful case (a re-injection), and
        writes OUT_DIR/cases.json.gz (the generated cases) and OUT_DIR/<profile>.json.gz:
        {"istioctl": version, "results": {case: {"exit", "stdout", "stderr"[, "input"]}}}.
        Re-injection results carry their own input. Files are gzip with a zero mtime, so
        recording twice gives identical bytes.
"""
import concurrent.futures
import gzip
import io
import json
import os
import re
import subprocess
import sys
import tempfile

import yaml

# name -> (manifest generate --set flags, env for kube-inject, what it is)
PROFILES = {
    "default": ([], {"ENABLE_NATIVE_SIDECARS": "false"},
                "Istio's default profile: the proxy as a regular container, istio-init for iptables"),
    "native-sidecars": (["values.pilot.env.ENABLE_NATIVE_SIDECARS=true"], {"ENABLE_NATIVE_SIDECARS": "true"},
                        "the default profile with native sidecars (the proxy as an init container with "
                        "restartPolicy: Always); kube-inject reads ENABLE_NATIVE_SIDECARS from its environment"),
    "cni-hold": (["components.cni.enabled=true", "values.global.proxy.holdApplicationUntilProxyStarts=true"],
                 {"ENABLE_NATIVE_SIDECARS": "false"},
                 "Istio CNI (istio-validation instead of istio-init) with holdApplicationUntilProxyStarts"),
}

REINJECT_EVERY = 4
LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\dT[0-9:.]+Z\s+(debug|info|warn|error)\s")


def istioctl_env(extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    env["KUBECONFIG"] = "/nonexistent/kubeconfig"  # never a cluster
    env.update(extra)
    return env


def profiles(istioctl, out_dir):
    for name, (sets, env, about) in PROFILES.items():
        args = [istioctl, "manifest", "generate"]
        for s in sets:
            args += ["--set", s]
        text = subprocess.run(args, check=True, capture_output=True, text=True, env=istioctl_env(env)).stdout
        config = values = mesh = None
        for doc in yaml.safe_load_all(text):
            if not doc or doc.get("kind") != "ConfigMap":
                continue
            meta_name = doc["metadata"]["name"]
            if meta_name == "istio-sidecar-injector":
                config, values = doc["data"]["config"], doc["data"]["values"]
            elif meta_name == "istio":
                mesh = doc["data"]["mesh"]
        if None in (config, values, mesh):
            sys.exit("profile %s: manifest generate gave no injector or mesh ConfigMap" % name)
        d = os.path.join(out_dir, name)
        os.makedirs(d, exist_ok=True)
        for file, content in [("injector-config.yaml", config), ("values.json", values), ("mesh.yaml", mesh)]:
            with open(os.path.join(d, file), "w") as f:
                f.write(content)
        with open(os.path.join(d, "profile.json"), "w") as f:
            json.dump({"about": about, "manifestGenerateSet": sets, "env": env,
                       "nativeSidecars": env["ENABLE_NATIVE_SIDECARS"] == "true"}, f, indent=2)
            f.write("\n")
        print("profile %s: %d bytes of templates" % (name, len(config)), file=sys.stderr)


def clean_stderr(text):
    return "".join(line for line in text.splitlines(keepends=True) if not LOG_LINE.match(line))


def kube_inject(istioctl, profile_dir, env, text):
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(text)
        path = f.name
    try:
        p = subprocess.run([istioctl, "kube-inject", "-f", path,
                            "--injectConfigFile", os.path.join(profile_dir, "injector-config.yaml"),
                            "--valuesFile", os.path.join(profile_dir, "values.json"),
                            "--meshConfigFile", os.path.join(profile_dir, "mesh.yaml"),
                            "--revision", "default"],
                           capture_output=True, text=True, env=istioctl_env(env), timeout=120)
    finally:
        os.unlink(path)
    return {"exit": p.returncode, "stdout": p.stdout, "stderr": clean_stderr(p.stderr)}


def write_gz(path, obj):
    raw = json.dumps(obj, ensure_ascii=False, sort_keys=True, indent=0).encode()
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", compresslevel=9, mtime=0) as g:
        g.write(raw)
    with open(path, "wb") as f:
        f.write(buf.getvalue())
    return len(raw), len(buf.getvalue())


def record(istioctl, cases_json, profiles_dir, out_dir):
    cases = json.load(open(cases_json))
    # A `go install`ed istioctl reports no version of its own: regen.sh passes the module's.
    version = "istio.io/istio@" + os.environ.get("ISTIO_VERSION", "unknown")
    os.makedirs(out_dir, exist_ok=True)
    print("cases.json.gz: %d -> %d bytes" % write_gz(os.path.join(out_dir, "cases.json.gz"), cases), file=sys.stderr)
    workers = int(os.environ.get("ORACLE_JOBS", "2"))
    for name in PROFILES:
        d = os.path.join(profiles_dir, name)
        env = json.load(open(os.path.join(d, "profile.json")))["env"]
        with concurrent.futures.ThreadPoolExecutor(workers) as pool:
            outcomes = list(pool.map(lambda c: kube_inject(istioctl, d, env, c["input"]), cases))
        results = {c["name"]: o for c, o in zip(cases, outcomes)}
        again = [(c["name"] + "~reinjected", o["stdout"]) for i, (c, o) in enumerate(zip(cases, outcomes))
                 if o["exit"] == 0 and i % REINJECT_EVERY == 0]
        with concurrent.futures.ThreadPoolExecutor(workers) as pool:
            outcomes = list(pool.map(lambda a: kube_inject(istioctl, d, env, a[1]), again))
        for (case_name, text), o in zip(again, outcomes):
            o["input"] = text
            results[case_name] = o
        failed = sum(1 for r in results.values() if r["exit"] != 0)
        sizes = write_gz(os.path.join(out_dir, name + ".json.gz"), {"istioctl": version, "results": results})
        print("profile %s: %d results (%d refused), %d -> %d bytes" % ((name, len(results), failed) + sizes),
              file=sys.stderr)


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "profiles":
        profiles(sys.argv[2], sys.argv[3])
    elif len(sys.argv) >= 6 and sys.argv[1] == "record":
        record(*sys.argv[2:6])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
