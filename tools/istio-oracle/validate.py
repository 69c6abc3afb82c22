#!/usr/bin/env python3
"""Asks a real API server whether the generated workloads are valid (run by validate.sh).

    validate.py KUBECTL CASES_JSON REPORT_JSON

Every case is sent as `kubectl create --dry-run=server` (decoding, defaulting and validation
of the API server, nothing stored). Fields only the server sets (resourceVersion) are dropped
first, as a user re-creating an object from `kubectl get -o yaml` output drops them. Writes
{case: "ok" | the server's error} to REPORT_JSON and exits 1 when any case is rejected.
"""
import concurrent.futures
import json
import subprocess
import sys

import yaml


def strip(obj):
    if isinstance(obj, dict):
        meta = obj.get("metadata")
        if isinstance(meta, dict):
            meta.pop("resourceVersion", None)
        for item in obj.get("items", []) if obj.get("kind") == "List" else []:
            strip(item)
    return obj


def check(kubectl, case):
    docs = [strip(d) for d in yaml.safe_load_all(case["input"]) if d]
    if not docs:
        return "ok"
    text = "\n---\n".join(json.dumps(d) for d in docs)
    p = subprocess.run([kubectl, "create", "--dry-run=server", "-o", "name", "-f", "-"], input=text,
                       capture_output=True, text=True, timeout=60)
    return "ok" if p.returncode == 0 else p.stderr.strip()


def main():
    kubectl, cases_json, report_json = sys.argv[1:4]
    cases = json.load(open(cases_json))
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        verdicts = list(pool.map(lambda c: check(kubectl, c), cases))
    report = {c["name"]: v for c, v in zip(cases, verdicts)}
    with open(report_json, "w") as f:
        json.dump(report, f, indent=1, sort_keys=True)
        f.write("\n")
    rejected = {k: v for k, v in report.items() if v != "ok"}
    print("%d cases: %d accepted by the API server, %d rejected" % (len(report), len(report) - len(rejected),
                                                                   len(rejected)))
    for name, error in sorted(rejected.items()):
        print("  %s: %s" % (name, error.splitlines()[0] if error else "?"))
    sys.exit(1 if rejected else 0)


if __name__ == "__main__":
    main()
