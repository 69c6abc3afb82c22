#!/usr/bin/env bash
# Side by side with Istio's own injector, on loopback, same inputs and settings, servers run back
# to back in rounds:
#
#   istio     Istio's real webhook (inject.NewWebhook behind TLS; tools/istio-webhook)
#   cached    `sidecar-injector serve` (its outcome cache answers repeats of one review)
#   engine    `sidecar-injector serve --outcome-cache-mib 0` (every admission runs the engine)
#   ceiling   our server answering the engine's own patch bytes for this review without running
#             the engine (crates/injector-server/examples/fake_injector.rs --patch-from), on the
#             same allocator and purge delay: the most our server can carry
#
# All four read the same injector config, values and mesh config (Istio's default chart,
# $SIDECAR_INJECTOR_SHARED/istio/derived; CONFIG=, VALUES=, MESH= to change), with native
# sidecars on. Before any load, both injectors' patches are applied to the four measured pods
# and the script stops unless the pods are identical.
#
# Load: h2load (nghttp2-client) over HTTP/2 with one 3,138-byte AdmissionReview of a
# ReplicaSet pod with managedFields; for each in-flight count N in CONCURRENCY, min(N, 8)
# connections x N/connections streams. Server pinned to CPU 0, h2load to CPU 1 (PIN=0: no pinning).
# Per server start: start-to-ready (spawn to the first 200 admission, curl-polled every 10 ms).
# Per run: throughput, p50/p99 of the 200s, CPU per admission (utime+stime of the server from
# /proc, from the end of the warm-up to the end of the run), peak RSS (VmHWM). h2load's status-0
# rows (requests started in the warm-up) are counted apart, not as failures. The table shows the median over rounds, ratios vs Istio.
#
# Then distinct pods (DISTINCT=0 to skip): Istio (when in SERVERS), the engine server (outcome
# cache off) and the ceiling again, loaded by crates/injector-server/examples/webhook_client.rs
# `load` (a real HTTP/2 client, the same connections x streams) with 1,000 distinct reviews in
# turn (bench/reviews.py's distinct.jsonl: Deployment, Indexed Job and StatefulSet pods), rows
# `istio-distinct`, `engine-distinct` and `ceiling-distinct`: the engine's render cache cannot
# answer from one repeated body there.
#
# Then CPU per injection: the Go testing.Benchmark of Istio's /inject handler and our engine's
# inject_cpu, alternating, for the typical pod, the 64 KB pod and the 2,000-env pod (and Istio's
# figure for the ReplicaSet review).
#
# Usage: bench/side-by-side.sh
#        ROUNDS=3 DURATION=15 CONCURRENCY="2 8 64" bench/side-by-side.sh
#        SERVERS="istio engine" SKIP_CPU=1 bench/side-by-side.sh   # a subset, no CPU comparison
#        SKIP_BUILD=1 PLOT=docs/side-by-side.png OUT=/tmp/sbs bench/side-by-side.sh
# Output: the table on stdout (also $OUT/table.md), raw runs in $OUT/runs.tsv, the plot in $PLOT
# (default bench/side-by-side.png). Not in .ci/run: minutes long and noisy on a shared machine.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-1}
CONCURRENCY=${CONCURRENCY:-2 8 64}
PIN=${PIN:-1}
CPU_ROUNDS=${CPU_ROUNDS:-2}
SERVERS=${SERVERS:-istio cached engine ceiling}
PLOT=${PLOT:-bench/side-by-side.png}
PORT=${PORT:-18643}
MON_PORT=${MON_PORT:-18614}
SHARED=${SIDECAR_INJECTOR_SHARED:-../shared}
CONFIG=${CONFIG:-$SHARED/istio/derived/config/default.yaml}
VALUES=${VALUES:-$SHARED/istio/derived/values/default.json}
MESH=${MESH:-$SHARED/istio/derived/mesh/default.yaml}
if [ "$PIN" = 1 ]; then server_cpu=(taskset -c 0); load_cpu=(taskset -c 1); else server_cpu=(); load_cpu=(); fi

die() { echo "side-by-side: ERROR: $*" >&2; exit 1; }
for f in "$CONFIG" "$VALUES" "$MESH"; do [ -f "$f" ] || die "$f not found (set SIDECAR_INJECTOR_SHARED or CONFIG/VALUES/MESH)"; done

need_apt() { # command, package
  command -v "$1" >/dev/null && return 0
  [ "$(id -u)" = 0 ] || die "$1 not found: apt-get install -y $2"
  echo "side-by-side: installing $2" >&2
  apt-get install -y "$2" >/dev/null || die "apt-get install -y $2 failed"
}
need_apt h2load nghttp2-client
# The plot needs matplotlib: the first python3 on PATH that has it, else the system's (apt's
# python3-matplotlib installs into /usr/bin/python3's packages, not a pyenv's).
plot_python=
for py in python3 /usr/bin/python3; do
  "$py" -c 'import matplotlib' 2>/dev/null && { plot_python=$py; break; }
done
if [ -z "$plot_python" ]; then
  [ "$(id -u)" = 0 ] || die "no python3 with matplotlib: apt-get install -y python3-matplotlib"
  echo "side-by-side: installing python3-matplotlib" >&2
  apt-get install -y python3-matplotlib >/dev/null || die "apt-get install -y python3-matplotlib failed"
  plot_python=/usr/bin/python3
fi

if [ -z "${SKIP_BUILD:-}" ]; then
  cargo build --release --quiet -p sidecar-injector
  cargo build --release --quiet -p injector-server -p injector-engine --example fake_injector --example inject_cpu \
    --example webhook_client
fi
istio_webhook=$(tools/istio-webhook/build.sh | tail -1)
ours=target/release/sidecar-injector
ceiling=target/release/examples/fake_injector
load_client=target/release/examples/webhook_client

OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
pid=
stop_server() { if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; pid=; fi; }
trap stop_server EXIT
python3 bench/reviews.py "$OUT/reviews"
review=$OUT/reviews/replicaset.json

start_server() { # kind
  local kind=$1
  case "$kind" in
    istio) cmd=(env ENABLE_NATIVE_SIDECARS=true "$istio_webhook" serve -config "$CONFIG" -values "$VALUES" -mesh "$MESH"
                -addr "127.0.0.1:$PORT" -monitoring-addr "127.0.0.1:$MON_PORT" -cert-out "$OUT/istio-cert.pem") ;;
    cached) cmd=("$ours" serve --injector-config "$CONFIG" --values "$VALUES" --mesh "$MESH" --native-sidecars true
                 --addr "127.0.0.1:$PORT" --monitoring-addr "127.0.0.1:$MON_PORT" --write-ca "$OUT/ca.pem") ;;
    engine) cmd=("$ours" serve --injector-config "$CONFIG" --values "$VALUES" --mesh "$MESH" --native-sidecars true
                 --addr "127.0.0.1:$PORT" --monitoring-addr "127.0.0.1:$MON_PORT" --write-ca "$OUT/ca.pem"
                 --outcome-cache-mib 0) ;;
    # The ceiling runs mimalloc with the purge delay `serve` sets for itself
    # (crates/sidecar-injector/src/cli/memory_return.rs), so that the two differ by the engine only.
    ceiling) cmd=(env MIMALLOC_PURGE_DELAY=100 "$ceiling" --patch-from "$OUT/ours-replicaset.out" --outcome-cache-mib 0 --addr "127.0.0.1:$PORT"
                  --monitoring-addr "127.0.0.1:$MON_PORT" --write-ca "$OUT/ca.pem") ;;
  esac
  local t0; t0=$(date +%s%N)
  RUST_LOG=warn "${server_cpu[@]}" "${cmd[@]}" 2>>"$OUT/$kind.log" &
  pid=$!
  for _ in $(seq 1000); do
    code=$(curl -sk -o /dev/null -w '%{http_code}' -H 'content-type: application/json' --data-binary "@$review" \
      "https://127.0.0.1:$PORT/inject?timeout=10s" 2>/dev/null || true)
    [ "$code" = 200 ] && { ready_ms=$(( ($(date +%s%N) - t0) / 1000000 )); return 0; }
    kill -0 "$pid" 2>/dev/null || { cat "$OUT/$kind.log" >&2; die "$kind server exited"; }
    sleep 0.01
  done
  cat "$OUT/$kind.log" >&2; die "$kind server not ready after 10 s"
}

admit() { # review file -> response file
  curl -fsk -H 'content-type: application/json' --data-binary "@$1" "https://127.0.0.1:$PORT/inject?timeout=10s" >"$2" \
    || die "posting $1 failed"
}

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# The server's CPU ticks once the load's warm-up is over, read in the background while the load
# runs (both h2load and webhook_client measure from WARMUP seconds after they start): the CPU per
# admission then counts only the work of the admissions it is divided by.
cpu_after_warmup() { (sleep "$WARMUP"; cpu_ticks "$pid" >"$OUT/cpu-before") & snapshot=$!; }
cpu_at_warmup_end() { wait "$snapshot"; cat "$OUT/cpu-before"; }

echo "== identical pods? (ours vs Istio's, patches applied to the pod)" >&2
for kind in engine istio; do
  start_server "$kind"
  for r in replicaset typical 64kb env2000; do admit "$OUT/reviews/$r.json" "$OUT/$( [ $kind = engine ] && echo ours || echo istio )-$r.out"; done
  stop_server
done
for r in replicaset typical 64kb env2000; do
  "$istio_webhook" check -review "$OUT/reviews/$r.json" -ours "$OUT/ours-$r.out" -istio "$OUT/istio-$r.out" >&2 \
    || die "ours and Istio's injector give different pods for $r (see above): no comparison is fair"
done

hz=$(getconf CLK_TCK)
printf 'round\tserver\tinflight\tok\tstatus0\tfailed\trps\tp50_ms\tp99_ms\tcpu_ms\trss_kb\tready_ms\n' >"$OUT/runs.tsv"
for round in $(seq "$ROUNDS"); do
  for kind in $SERVERS; do
    start_server "$kind"
    for n in $CONCURRENCY; do
      c=$(( n < 8 ? n : 8 )); m=$(( n / c ))
      rm -f "$OUT/requests.tsv"   # h2load appends to its log file
      cpu_after_warmup
      "${load_cpu[@]}" h2load -c "$c" -m "$m" -t 1 -D "$DURATION" --warm-up-time "$WARMUP" -d "$review" \
        -H 'content-type: application/json' --log-file "$OUT/requests.tsv" "https://127.0.0.1:$PORT/inject?timeout=10s" \
        >"$OUT/h2load.txt" 2>&1 || { cat "$OUT/h2load.txt" >&2; die "h2load failed against $kind"; }
      after=$(cpu_ticks "$pid"); before=$(cpu_at_warmup_end)
      rss=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
      python3 - "$OUT/requests.tsv" "$DURATION" "$round" "$kind" "$n" "$((after - before))" "$hz" "$rss" "$ready_ms" \
        >>"$OUT/runs.tsv" <<'PY'
import sys
log, duration, rnd, kind, n, ticks, hz, rss, ready = sys.argv[1:]
lat, status0, failed = [], 0, 0
for line in open(log):
    parts = line.split()
    if len(parts) < 3:
        continue
    if parts[1] == "200":
        lat.append(int(parts[2]) / 1000.0)
    elif parts[1] == "0":
        status0 += 1
    else:
        failed += 1
lat.sort()
pct = lambda p: lat[min(len(lat) - 1, int(len(lat) * p / 100.0))] if lat else float("nan")
cpu_ms = int(ticks) * 1000.0 / int(hz) / max(1, len(lat))
print(f"{rnd}\t{kind}\t{n}\t{len(lat)}\t{status0}\t{failed}\t{len(lat) / float(duration):.0f}\t"
      f"{pct(50):.2f}\t{pct(99):.2f}\t{cpu_ms:.3f}\t{rss}\t{ready}")
PY
      tail -1 "$OUT/runs.tsv" >&2
    done
    stop_server
  done
done

if [ "${DISTINCT:-1}" != 0 ]; then
  echo "== distinct pods: $(wc -l <"$OUT/reviews/distinct.jsonl") reviews in turn (webhook_client load)" >&2
  for round in $(seq "$ROUNDS"); do
    distinct_servers="ceiling engine"
    case " $SERVERS " in *" istio "*) distinct_servers="istio $distinct_servers" ;; esac
    for kind in $distinct_servers; do
      start_server "$kind"
      ca=$OUT/ca.pem; [ "$kind" = istio ] && ca=$OUT/istio-cert.pem
      for n in $CONCURRENCY; do
        c=$(( n < 8 ? n : 8 )); m=$(( n / c ))
        cpu_after_warmup
        "${load_cpu[@]}" "$load_client" load --addr "127.0.0.1:$PORT" --ca "$ca" --bodies "$OUT/reviews/distinct.jsonl" \
          --connections "$c" --streams "$m" --warmup "$WARMUP" --seconds "$DURATION" >"$OUT/load.txt" 2>&1 \
          || { cat "$OUT/load.txt" >&2; die "webhook_client load failed against $kind"; }
        after=$(cpu_ticks "$pid"); before=$(cpu_at_warmup_end)
        rss=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
        python3 - "$OUT/load.txt" "$round" "$kind-distinct" "$n" "$((after - before))" "$hz" "$rss" "$ready_ms" \
          >>"$OUT/runs.tsv" <<'PY'
import sys
out, rnd, kind, n, ticks, hz, rss, ready = sys.argv[1:]
line = next(l for l in open(out) if l.startswith("result "))
f = dict(kv.split("=", 1) for kv in line.split()[1:])
ok = int(f["ok"])
cpu_ms = int(ticks) * 1000.0 / int(hz) / max(1, ok)
print(f"{rnd}\t{kind}\t{n}\t{ok}\t0\t{f['failed']}\t{f['rps']}\t{float(f['p50_ms']):.2f}\t{float(f['p99_ms']):.2f}\t"
      f"{cpu_ms:.3f}\t{rss}\t{ready}")
PY
        tail -1 "$OUT/runs.tsv" >&2
      done
      stop_server
    done
  done
fi

if [ -z "${SKIP_CPU:-}" ]; then
  echo "== CPU per injection: Istio's /inject handler (Go testing.Benchmark) and our engine (inject_cpu), alternating" >&2
  : >"$OUT/cpu-istio.tsv"; : >"$OUT/cpu-ours.txt"
  for _ in $(seq "$CPU_ROUNDS"); do
    ENABLE_NATIVE_SIDECARS=true "${server_cpu[@]}" "$istio_webhook" bench -config "$CONFIG" -values "$VALUES" -mesh "$MESH" -rounds 2 \
      "typical pod=$OUT/reviews/typical.json" "64 KB pod=$OUT/reviews/64kb.json" "2000 env vars=$OUT/reviews/env2000.json" \
      "replicaset review=$OUT/reviews/replicaset.json" >>"$OUT/cpu-istio.tsv"
    SIDECAR_INJECTOR_SHARED=$SHARED "${server_cpu[@]}" target/release/examples/inject_cpu all >>"$OUT/cpu-ours.txt"
  done
fi

"$plot_python" bench/side_by_side_report.py "$OUT" "$PLOT" | tee "$OUT/table.md"
echo "raw runs: $OUT/runs.tsv; plot: $PLOT" >&2
