#!/usr/bin/env bash
# Soak with faults: two `sidecar-injector serve` replicas behind a client that alternates between
# them and retries a failed admission on the other (as the API server's retry would), at a steady
# rate, while, during the run:
#   - the serving certificate (--tls-cert/--tls-key, shared by both) is rotated every 30 s,
#   - the configuration (--mesh) is edited every 20 s, alternately to a good and a bad version
#     (a bad one must be rejected, the last good one kept),
#   - one replica, in turn, gets SIGTERM every 2 minutes and is started again.
# Loopback only. Not a test and not in CI: it takes SECONDS (default 600) plus the build.
#
# Usage: nice -n 10 bench/soak.sh                 # 10 minutes at 200 admissions/s
#        SECONDS_TOTAL=120 RATE=100 bench/soak.sh  # shorter
#        SKIP_BUILD=1 bench/soak.sh                # use the existing release binaries
# Output: the client's result line (sent, ok, retried, failed, p50/p99/max), its error counts by
# replica, the peak RSS (VmHWM) of every replica process, restarts, rotations and config edits
# with the reload counters each replica reported.
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_TOTAL=${SECONDS_TOTAL:-600}
RATE=${RATE:-200}
PORT_A=${PORT_A:-18541}
PORT_B=${PORT_B:-18542}
MON_A=${MON_A:-18551}
MON_B=${MON_B:-18552}

if [ -z "${SKIP_BUILD:-}" ]; then
  cargo build --release --quiet -p sidecar-injector
  cargo build --release --quiet -p injector-server --example webhook_client
fi
bin=target/release/sidecar-injector
client=target/release/examples/webhook_client

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]:-}"; do kill -TERM "$p" 2>/dev/null || true; done
  [ -n "${client_pid:-}" ] && kill -TERM "$client_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# A CA, and serving certificates for localhost signed by it (new key each time).
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=soak-ca \
  -keyout "$work/ca.key" -out "$work/ca.pem" 2>/dev/null
issue_cert() {
  local n=$1
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=soak-$n" \
    -keyout "$work/new.key" -out "$work/new.csr" 2>/dev/null
  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >"$work/ext"
  openssl x509 -req -in "$work/new.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" -days 1 \
    -set_serial "$((1000 + n))" -extfile "$work/ext" -out "$work/new.crt" 2>/dev/null
  # Replace both files by rename, as a Kubernetes Secret volume update does.
  mv "$work/new.key" "$work/tls.key.next"
  mv "$work/new.crt" "$work/tls.crt.next"
  mv "$work/tls.crt.next" "$work/tls.crt"
  mv "$work/tls.key.next" "$work/tls.key"
}
issue_cert 0

good_mesh() {
  printf 'defaultConfig:\n  discoveryAddress: istiod.istio-system.svc:15012\n  concurrency: %s\n' "$1" >"$work/mesh.next"
  mv "$work/mesh.next" "$work/mesh"
}
bad_mesh() {
  printf 'defaultConfig: [unclosed\n  concurrency: {\n' >"$work/mesh.next"
  mv "$work/mesh.next" "$work/mesh"
}
good_mesh 2

declare -A pid_of peak_of
start_replica() {
  local name=$1 port=$2 mon=$3
  RUST_LOG=warn "$bin" serve --addr "127.0.0.1:$port" --monitoring-addr "127.0.0.1:$mon" \
    --tls-cert "$work/tls.crt" --tls-key "$work/tls.key" --mesh "$work/mesh" \
    --grace-period 5s >>"$work/$name.log" 2>&1 &
  pid_of[$name]=$!
  pids+=("$!")
  for _ in $(seq 1 100); do
    curl -sf "http://127.0.0.1:$mon/readyz" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "replica $name did not become ready" >&2
  return 1
}
record_peak() {
  local name=$1 pid=${pid_of[$1]}
  local hwm
  hwm=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
  if [ "${hwm:-0}" -gt "${peak_of[$name]:-0}" ]; then peak_of[$name]=$hwm; fi
}
reload_counts() {
  curl -s "http://127.0.0.1:$1/metrics" | grep -E '^sidecar_injector_(config|cert)_reloads_total' | tr '\n' ' '
}

start_replica a "$PORT_A" "$MON_A"
start_replica b "$PORT_B" "$MON_B"

"$client" soak --addr "127.0.0.1:$PORT_A" --addr "127.0.0.1:$PORT_B" --ca "$work/ca.pem" \
  --rate "$RATE" --seconds "$SECONDS_TOTAL" >"$work/client.out" 2>&1 &
client_pid=$!

rotations=0 edits=0 bad_edits=0 restarts=0 t=0 next_victim=a
while kill -0 "$client_pid" 2>/dev/null; do
  sleep 1
  t=$((t + 1))
  record_peak a
  record_peak b
  if [ $((t % 30)) -eq 0 ]; then
    rotations=$((rotations + 1))
    issue_cert "$rotations"
  fi
  if [ $((t % 20)) -eq 0 ]; then
    edits=$((edits + 1))
    if [ $((edits % 2)) -eq 0 ]; then bad_mesh; bad_edits=$((bad_edits + 1)); else good_mesh $((edits % 4 + 1)); fi
  fi
  # Restarts fall 5 s after a good edit: a replica started on a bad configuration has no last
  # good one to keep and rightly stays unready.
  if [ $((t % 120)) -eq 25 ] && [ "$t" -lt "$SECONDS_TOTAL" ]; then
    restarts=$((restarts + 1))
    victim=$next_victim
    if [ "$victim" = a ]; then port=$PORT_A mon=$MON_A next_victim=b; else port=$PORT_B mon=$MON_B next_victim=a; fi
    echo "t=${t}s SIGTERM replica $victim (reloads so far: $(reload_counts "$mon"))"
    kill -TERM "${pid_of[$victim]}"
    wait "${pid_of[$victim]}" || echo "replica $victim exited with $?"
    start_replica "$victim" "$port" "$mon" || echo "t=${t}s replica $victim not ready after restart"
  fi
done
wait "$client_pid" || true
echo "--- reloads: a: $(reload_counts "$MON_A")"
echo "--- reloads: b: $(reload_counts "$MON_B")"
cat "$work/client.out"
echo "duration_s=$SECONDS_TOTAL rate=$RATE cert_rotations=$rotations config_edits=$edits bad_edits=$bad_edits restarts=$restarts"
echo "peak_rss_kib a=${peak_of[a]:-0} b=${peak_of[b]:-0}"
grep -ciE '"level":"(ERROR)"|ERROR' "$work/a.log" "$work/b.log" || true
