#!/usr/bin/env python3
"""The default profile's cases of Istio's injector test (TestInjection in
pkg/kube/inject/inject_test.go), read from the Go source's test table, printed as JSON in the
form of the shared corpus's cases.json.

A case of the default profile needs no settings beyond what the istiod chart renders for Istio's
test profile: no `setFlags`, no IstioOperator file (`inFilePath`), no `mesh` edit, and no `setup`
other than turning native sidecars off. The test also runs every input of testdata/inject whose
`<input>.injected` golden no case names; those are default-profile cases too.

Usage: default_profile_cases.py INJECT_TEST_GO TESTDATA_INJECT_DIR
"""

import json
import os
import re
import sys

TESTDATA = "pkg/kube/inject/testdata/inject/"


def table_entries(source):
    """The text inside each top-level `{...}` of `cases := []testCase{...}`."""
    opening = "cases := []testCase{"
    body = source[source.index(opening) + len(opening):]
    entries, depth, start, i = [], 1, 0, 0
    while depth:
        c = body[i]
        if c == "`":
            i = body.index("`", i + 1)
        elif c == '"':
            i += 1
            while body[i] != '"':
                i += 2 if body[i] == "\\" else 1
        elif c == "{":
            depth += 1
            if depth == 2:
                start = i + 1
        elif c == "}":
            depth -= 1
            if depth == 1:
                entries.append(body[start:i])
        i += 1
    return entries


def string_field(entry, name):
    """A field given as a Go interpreted string literal, decoded (None when absent)."""
    match = re.search(r"\b" + name + r':\s*"((?:[^"\\]|\\.)*)"', entry)
    return json.loads('"' + match.group(1) + '"') if match else None


def case(input_name, golden, native, kube_inject, webhook, error, log):
    params = {
        "profile": "default",
        "values": "derived/values/default.json",
        "config": "derived/config/default.yaml",
        "mesh": "derived/mesh/default.yaml",
        "meshOverlay": None,
        "nativeSidecars": native,
        "compliancePolicy": "",
        "platform": "",
        "kubeInjectRevision": "",
        "webhookRevision": "default",
        "kubeInject": kube_inject,
        "webhook": webhook,
        "expectedError": error,
        "expectedLog": log,
    }
    return {
        "name": "TestInjection/" + (golden or input_name),
        "suite": "TestInjection",
        "input": TESTDATA + input_name,
        "golden": golden and TESTDATA + golden,
        "params": params,
    }


def default_profile_cases(test_go, inject_dir):
    cases, tested = [], set()
    for entry in table_entries(open(test_go).read()):
        fields = set(re.findall(r"^\s*(\w+):", entry, re.M))
        input_name, golden = string_field(entry, "in"), string_field(entry, "want")
        tested.add(golden or input_name + ".injected")
        native = True
        if "setup" in fields:
            settings_changed = entry.count("SetForTest") + entry.count("SetEnvForTest")
            if "NativeSidecarModeDisabled" not in entry or settings_changed != 1:
                continue
            native = False
        if fields & {"setFlags", "inFilePath", "mesh"}:
            continue
        error = string_field(entry, "expectedError")
        cases.append(case(input_name, golden, native, "skipInjection" not in fields,
                          "skipWebhook" not in fields and error is None, error,
                          string_field(entry, "expectedLog")))
    for name in sorted(os.listdir(inject_dir)):
        if name.endswith(".yaml") and not name.endswith(".iop.yaml") and name + ".injected" not in tested:
            cases.append(case(name, name + ".injected", True, True, True, None, None))
    return cases


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    found = default_profile_cases(sys.argv[1], sys.argv[2])
    if len(found) < 10:
        sys.exit(f"only {len(found)} default-profile cases found in {sys.argv[1]}: has its table changed?")
    json.dump({"cases": found}, sys.stdout, indent=1)
    sys.stdout.write("\n")
