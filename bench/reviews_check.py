#!/usr/bin/env python3
"""Checks that bench/reviews.py writes its pods as the API server sends them to a webhook.

Starts the test control plane (tests/e2e/control-plane.sh, in a temporary directory), registers a
webhook at https://127.0.0.1:PORT that records every AdmissionReview it is sent and allows the
pod unchanged, creates the ReplicaSet review's pod and a Deployment, a Job and a StatefulSet pod
of distinct.jsonl as their creators send them (through kubectl, so the managed fields are
kubectl's), and compares each recorded pod with what reviews.py makes of the same pod, byte for
byte: key order, defaults, admission plugins' additions and managed fields. Only the managed
fields' time and, for the ReplicaSet review, its hand-written managed fields are left out; the
token volume's random name is taken from the recorded pod.

  python3 bench/reviews_check.py [--keep DIR]

Exits 0 when every pod matches, 1 with a diff when one does not. Loopback only.
"""
import argparse
import base64
import copy
import difflib
import http.server
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import reviews  # noqa: E402  (the module under check, beside this script)

REPO = os.path.dirname(HERE)


class Recorder(http.server.BaseHTTPRequestHandler):
    """Records each AdmissionReview's pod by its generateName or name and allows it unchanged."""

    received = {}

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        pod = body["request"]["object"]
        meta = pod["metadata"]
        Recorder.received[meta.get("name") or meta["generateName"]] = (body, pod)
        answer = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                             "response": {"uid": body["request"]["uid"], "allowed": True}}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_recorder(work):
    cert, key = os.path.join(work, "hook.crt"), os.path.join(work, "hook.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Recorder)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, cert


def webhook_configuration(port, cert):
    with open(cert, "rb") as f:
        bundle = base64.b64encode(f.read()).decode()
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "reviews-check"},
            "webhooks": [{"name": "record.reviews-check.test", "sideEffects": "None", "failurePolicy": "Fail",
                          "admissionReviewVersions": ["v1"],
                          "clientConfig": {"url": f"https://127.0.0.1:{port}/record", "caBundle": bundle},
                          "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                                     "resources": ["pods"]}]}]}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keep", metavar="DIR", help="use DIR for the control plane and leave it running")
    args = parser.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="reviews-check-")
    plane = os.path.join(work, "control-plane")
    script = os.path.join(REPO, "tests", "e2e", "control-plane.sh")
    with open(reviews.SCHEMA) as f:
        types = json.load(f)
    failed = False
    try:
        if subprocess.run([script, "up", plane], stdout=subprocess.DEVNULL).returncode != 0:
            print("reviews_check: the test control plane did not come up (its errors above)")
            return True

        def kubectl(*words, stdin=None):
            return subprocess.run([os.path.join(plane, "kubectl"), *words], input=stdin, capture_output=True,
                                  text=True)

        server, cert = start_recorder(work)
        kubectl("apply", "-f", "-", stdin=json.dumps(webhook_configuration(server.server_address[1], cert)))
        distinct = reviews.distinct_pods()
        # One pod of each kind: a Deployment's (0), an Indexed Job's (10), a StatefulSet's (18).
        pods = [("replicaset", reviews.replicaset_pod(), "bookinfo", None)]
        pods += [(f"distinct.jsonl #{i}", distinct[i], "load", "kubectl-create") for i in (0, 10, 18)]
        for namespace in ("bookinfo", "load"):
            kubectl("create", "namespace", namespace)
        for label, pod, namespace, manager in pods:
            account = pod["spec"].get("serviceAccountName")
            if account:
                kubectl("-n", namespace, "create", "serviceaccount", account)
            created = kubectl("create", "-f", "-", stdin=json.dumps(pod))
            meta = pod["metadata"]
            seen = Recorder.received.get(meta.get("name") or meta["generateName"])
            if seen is None:
                print(f"{label}: no review recorded: {created.stderr.strip()}")
                failed = True
                continue
            body, sent = seen
            token = next(v["name"] for v in sent["spec"]["volumes"] if v["name"].startswith("kube-api-access-"))
            ours = reviews.review(reviews.as_the_api_server_sends(copy.deepcopy(pod), token, manager), namespace,
                                  body["request"]["uid"], types)["request"]["object"]
            for one in (sent, ours):
                if manager is None:
                    one["metadata"].pop("managedFields", None)
                else:
                    for entry in one["metadata"].get("managedFields", []):
                        entry["time"] = "(time)"
            if reviews.compact(sent) == reviews.compact(ours):
                print(f"{label}: the same bytes as the API server's")
                continue
            failed = True
            print(f"{label}: differs from the API server's")
            print("\n".join(difflib.unified_diff(json.dumps(sent, indent=1).splitlines(),
                                                 json.dumps(ours, indent=1).splitlines(), "API server",
                                                 "bench/reviews.py", lineterm="")))
        sent_keys = list(body["request"])
        our_keys = list(reviews.review({}, "", "", types)["request"])
        if [k for k in our_keys if k in sent_keys] != [k for k in sent_keys if k in our_keys]:
            failed = True
            print(f"the request's keys are in another order: API server {sent_keys}, reviews.py {our_keys}")
        else:
            print("the request's keys: in the API server's order")
        server.shutdown()
    finally:
        if not args.keep:
            subprocess.run([script, "down", plane], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            shutil.rmtree(work, ignore_errors=True)
    return failed


if __name__ == "__main__":
    sys.exit(1 if main() else 0)
