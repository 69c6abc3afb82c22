#!/usr/bin/env python3
"""Canned responses for bench/e2e-burst.sh's patch-shape variants, from our engine's response.

  patch_variants.py POD RESPONSE OUT_DIR

POD is the pod as the API server sends it (a server-side dry run), RESPONSE our engine's
AdmissionReview response for it. Writes into OUT_DIR:

  coarse-response.json  the same injected pod as RESPONSE's patch gives, as one `add` or `replace`
                        per changed field of metadata and spec (whole arrays and maps), instead of
                        the engine's fine-grained operations
  tiny-response.json    one operation (the sidecar.istio.io/status annotation): a webhook call whose
                        patch barely changes the pod

and prints each patch's size and operation count. Exits 1 if the coarse patch does not give the
identical pod.
"""
import base64
import copy
import json
import sys


def pointer(path):
    return [p.replace("~1", "/").replace("~0", "~") for p in path.split("/")[1:]]


def apply(doc, ops):
    """RFC 6902 add/remove/replace, enough for the injectors' patches."""
    doc = copy.deepcopy(doc)
    for op in ops:
        *parents, last = pointer(op["path"])
        target = doc
        for p in parents:
            target = target[int(p)] if isinstance(target, list) else target[p]
        kind = op["op"]
        if isinstance(target, list):
            index = len(target) if last == "-" else int(last)
            if kind == "add":
                target.insert(index, copy.deepcopy(op["value"]))
            elif kind == "replace":
                target[index] = copy.deepcopy(op["value"])
            elif kind == "remove":
                del target[index]
            else:
                raise SystemExit(f"unsupported op {kind}")
        else:
            if kind in ("add", "replace"):
                target[last] = copy.deepcopy(op["value"])
            elif kind == "remove":
                del target[last]
            else:
                raise SystemExit(f"unsupported op {kind}")
    return doc


def coarse(before, after):
    ops = []
    for section in ("metadata", "spec"):
        old, new = before.get(section, {}), after.get(section, {})
        for key, value in new.items():
            if old.get(key) != value:
                ops.append({"op": "replace" if key in old else "add", "path": f"/{section}/{key}", "value": value})
        for key in old:
            if key not in new:
                ops.append({"op": "remove", "path": f"/{section}/{key}"})
    for key, value in after.items():
        if key not in ("metadata", "spec") and before.get(key) != value:
            ops.append({"op": "replace" if key in before else "add", "path": f"/{key}", "value": value})
    return ops


def response(template, ops):
    out = copy.deepcopy(template)
    out["response"]["patch"] = base64.b64encode(json.dumps(ops, separators=(",", ":")).encode()).decode()
    return out


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    pod = json.load(open(sys.argv[1]))
    ours = json.load(open(sys.argv[2]))
    fine_bytes = base64.b64decode(ours["response"]["patch"])
    fine = json.loads(fine_bytes)
    injected = apply(pod, fine)
    coarse_ops = coarse(pod, injected)
    if apply(pod, coarse_ops) != injected:
        sys.exit("patch_variants: the coarse patch does not give the same pod")
    status = injected["metadata"]["annotations"]["sidecar.istio.io/status"]
    tiny_ops = [{"op": "add", "path": "/metadata/annotations/sidecar.istio.io~1status", "value": status}]
    for name, ops in (("coarse", coarse_ops), ("tiny", tiny_ops)):
        with open(f"{sys.argv[3]}/{name}-response.json", "w") as f:
            json.dump(response(ours, ops), f)
    for name, ops in (("fine (ours)", fine), ("coarse", coarse_ops), ("tiny", tiny_ops)):
        size = len(fine_bytes) if ops is fine else len(json.dumps(ops, separators=(",", ":")))
        print(f"{name}: {size} bytes, {len(ops)} ops")


if __name__ == "__main__":
    main()
