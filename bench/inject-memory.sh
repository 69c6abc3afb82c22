#!/usr/bin/env bash
# Peak memory of `sidecar-injector inject` on a large multi-document stream.
#
# Generates a stream of about SIZE_MB megabytes (default 50): Deployments (each injected) and,
# between them, Services and ConfigMaps (written back byte for byte), then runs
# `sidecar-injector inject -f STREAM -o OUT` under /usr/bin/time -v and prints the peak RSS
# (maximum resident set size), the wall time and the sizes.
#
# Usage: bench/inject-memory.sh                 # builds the release binary first
#        SKIP_BUILD=1 SIZE_MB=50 bench/inject-memory.sh
#        BIN=/path/to/sidecar-injector bench/inject-memory.sh   # another build, e.g. main's
set -euo pipefail
cd "$(dirname "$0")/.."

SIZE_MB=${SIZE_MB:-50}
BIN=${BIN:-target/release/sidecar-injector}
if [ -z "${SKIP_BUILD:-}" ] && [ "$BIN" = target/release/sidecar-injector ]; then
  cargo build --release --locked -p sidecar-injector
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 - "$work/stream.yaml" "$SIZE_MB" <<'PY'
import sys
path, size_mb = sys.argv[1], int(sys.argv[2])
limit = size_mb * 1_000_000
with open(path, "w") as out:
    written, i = 0, 0
    while written < limit:
        env = "".join(f"        - name: VAR_{k}\n          value: \"value-{i}-{k}\"\n" for k in range(20))
        doc = f"""apiVersion: apps/v1
kind: Deployment
metadata:
  name: app-{i}
  namespace: shop
  labels: {{app: app-{i}, tier: web}}
spec:
  replicas: 2
  selector:
    matchLabels: {{app: app-{i}}}
  template:
    metadata:
      labels: {{app: app-{i}, version: v1}}
      annotations: {{prometheus.io/scrape: "true", prometheus.io/port: "8080"}}
    spec:
      serviceAccountName: app-{i}
      containers:
      - name: app
        image: registry.example.com/app-{i}:1.{i % 10}.0
        ports:
        - containerPort: 8080
          name: http
        readinessProbe:
          httpGet: {{path: /ready, port: 8080}}
        resources:
          requests: {{cpu: 100m, memory: 128Mi}}
          limits: {{cpu: "1", memory: 512Mi}}
        env:
{env}---
apiVersion: v1
kind: Service
metadata: {{name: app-{i}, namespace: shop}}
spec:
  selector: {{app: app-{i}}}
  ports: [{{port: 80, targetPort: 8080, name: http}}]
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: app-{i}-config, namespace: shop}}
data:
  settings.yaml: |
    level: info
    id: {i}
---
"""
        out.write(doc)
        written += len(doc)
        i += 1
PY

input_bytes=$(stat -c %s "$work/stream.yaml")
documents=$(grep -c '^---$' "$work/stream.yaml")
/usr/bin/time -v "$BIN" inject -f "$work/stream.yaml" -o "$work/out.yaml" 2>"$work/time.txt" >/dev/null || {
  cat "$work/time.txt" >&2
  exit 1
}
output_bytes=$(stat -c %s "$work/out.yaml")
peak_kb=$(awk -F: '/Maximum resident set size/ {gsub(/ /, "", $2); print $2}' "$work/time.txt")
wall=$(awk '/Elapsed \(wall clock\)/ {print $NF}' "$work/time.txt")
awk -v i="$input_bytes" -v d="$documents" -v o="$output_bytes" -v p="$peak_kb" -v w="$wall" 'BEGIN {
  printf "input %.1f MB (%d documents), output %.1f MB, peak RSS %.1f MB, wall %s\n", i / 1e6, d, o / 1e6, p / 1024, w
}'
