#!/usr/bin/env bash
# Big pods against `sidecar-injector serve` (loopback): one admission at a time, each to a fresh
# server, measuring the time to the answer and the server's CPU time (utime + stime from
# /proc/PID/stat, in 10 ms ticks) during the admission, in the 100 ms after the answer and in the
# 12 s after it. A server that stops working when it answers shows 0 after the answer.
# Not a test and not in CI (about 15 s a pod).
#
# Usage: bench/big-pods.sh                       # embedded default configuration
#        ISTIO=1 bench/big-pods.sh               # Istio's default templates ($SIDECAR_INJECTOR_SHARED,
#                                                # default ../shared)
#        TEMPLATE='{{ range 2000000000 }}{{ $x := repeat 100000 "x" }}{{ end }}' \
#          bench/big-pods.sh containers=1:3s      # a configuration of that one template
#        BIN=path/to/sidecar-injector bench/big-pods.sh   # another binary (default: release build)
#        bench/big-pods.sh containers=40000:100ms        # only these cases (KIND=N[:TIMEOUT])
# Cases: containers=5000 ... 40000, env=10000 (entries of one container), annotations=100000.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet -p sidecar-injector
  BIN=target/release/sidecar-injector
fi
serve_args=()
if [ -n "${ISTIO:-}" ]; then
  derived=${SIDECAR_INJECTOR_SHARED:-../shared}/istio/derived
  serve_args=(--injector-config "$derived/config/default.yaml" --values "$derived/values/default.json"
    --mesh "$derived/mesh/default.yaml")
fi
work=$(mktemp -d)
if [ -n "${TEMPLATE:-}" ]; then
  python3 -c 'import json, sys; print(json.dumps({"policy": "enabled", "defaultTemplates": ["bench"],
    "templates": {"bench": sys.argv[1]}}))' "$TEMPLATE" >"$work/config.json"
  serve_args=(--injector-config "$work/config.json")
fi
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(containers=5000 containers=10000 containers=20000 containers=40000
  env=10000 annotations=100000)

pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }

for case in "${cases[@]}"; do
  kind=${case%%=*}
  rest=${case#*=}
  n=${rest%%:*}
  timeout=10s
  [ "$rest" != "$n" ] && timeout=${rest#*:}
  python3 - "$kind" "$n" >"$work/review.json" <<'EOF'
import json, sys
kind, n = sys.argv[1], int(sys.argv[2])
containers = [{"name": "app", "image": "nginx"}]
metadata = {"name": "big", "namespace": "bench", "labels": {"app": "big"}}
if kind == "containers":
    containers = [{"name": f"c{i}", "image": "nginx"} for i in range(n)]
elif kind == "env":
    containers[0]["env"] = [{"name": f"E{i}", "value": "v"} for i in range(n)]
elif kind == "annotations":
    metadata["annotations"] = {f"a{i}.example.com/k": "v" for i in range(n)}
else:
    sys.exit(f"unknown case {kind}")
pod = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": {"containers": containers}}
json.dump({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
           "request": {"uid": "u1", "namespace": "bench", "operation": "CREATE",
                       "kind": {"group": "", "version": "v1", "kind": "Pod"}, "object": pod}},
          sys.stdout)
EOF
  port=$((20000 + RANDOM % 20000))
  rm -f "$work/ca.pem"
  "$BIN" serve --addr "127.0.0.1:$port" --monitoring-addr "127.0.0.1:$((port + 1))" \
    --write-ca "$work/ca.pem" --log-format json "${serve_args[@]}" >"$work/log" 2>&1 &
  pid=$!
  for _ in $(seq 300); do
    [ -f "$work/ca.pem" ] && curl -s -o /dev/null --cacert "$work/ca.pem" "https://127.0.0.1:$port/" && break
    sleep 0.1
  done
  before=$(ticks)
  start=$(date +%s.%N)
  status=$(curl -s --cacert "$work/ca.pem" -H 'Content-Type: application/json' \
    --data-binary "@$work/review.json" -o "$work/answer.json" -w '%{http_code}' \
    "https://127.0.0.1:$port/inject?timeout=$timeout")
  end=$(date +%s.%N)
  answered=$(ticks)
  sleep 0.1
  after_100ms=$(ticks)
  sleep 11.9
  after_12s=$(ticks)
  verdict=$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["response"]
if r.get("allowed") and r.get("patch"):
    print("injected")
else:
    print("allowed" if r.get("allowed") else "denied: " + (r.get("status") or {}).get("message", "")[:160])
' "$work/answer.json")
  printf '%s=%s (timeout %s, %s bytes): HTTP %s in %.3f s, CPU during %d ms, after the answer %d ms in 100 ms, %d ms in 12 s; %s\n' \
    "$kind" "$n" "$timeout" "$(stat -c%s "$work/review.json")" "$status" "$(echo "$end - $start" | bc)" \
    $(((answered - before) * 10)) $(((after_100ms - answered) * 10)) $(((after_12s - answered) * 10)) "$verdict"
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  pid=
done
