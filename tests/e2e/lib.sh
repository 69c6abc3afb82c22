# Helpers shared by the end-to-end scripts (sourced, not run). The script sets E2E (the prefix
# of its lines), DIR (its temp dir), WAIT (seconds per poll) and optionally DEADLINE (epoch
# seconds after which every poll gives up at once).
# shellcheck shell=bash disable=SC2317

PASS=${PASS:-0}
FAIL=${FAIL:-0}

log() { echo "$E2E: $*"; }
ok()  { PASS=$((PASS + 1)); echo "$E2E: ok   - $*"; }
bad() { FAIL=$((FAIL + 1)); echo "$E2E: FAIL - $*"; }
secs_since() { local ns=$(( $(date +%s%N) - $1 )); printf '%d.%d' $(( ns / 1000000000 )) $(( ns / 100000000 % 10 )); }

alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }

stop_pid() {   # stop_pid PID [SIGNAL]: SIGNAL (TERM), up to 30 s, then KILL; reaps it
  local pid=$1 sig=${2:-TERM} i
  alive "$pid" || { wait "$pid" 2>/dev/null || true; return 0; }
  kill "-$sig" "$pid" 2>/dev/null || true
  for ((i = 0; i < 300; i++)); do alive "$pid" || break; sleep 0.1; done
  if alive "$pid"; then echo "$E2E: pid $pid ignored SIG$sig for 30 s: KILL" >&2; kill -KILL "$pid" 2>/dev/null || true; fi
  wait "$pid" 2>/dev/null || true
}

# check DESCRIPTION COMMAND... : one check; the command's output is shown on failure
check() {
  local what=$1 out; shift
  if out=$("$@" 2>&1); then ok "$what"; else bad "$what"; printf '%s\n' "$out" | tail -n 20 | sed 's/^/    /'; fi
}

# run DESCRIPTION COMMAND... : like check, but COMMAND runs in this shell (it may start
# background processes or set variables); its output goes to a file, shown on failure
run() {
  local what=$1; shift
  if "$@" > "$DIR/run.out" 2>&1; then ok "$what"; else bad "$what"; tail -n 20 "$DIR/run.out" | sed 's/^/    /'; fi
}

# poll TIMEOUT COMMAND... : until COMMAND succeeds (its output is discarded); gives up after
# TIMEOUT seconds or at DEADLINE, whichever comes first
poll() {
  local end=$(( $(date +%s) + $1 )); shift
  if [ -n "${DEADLINE:-}" ] && [ "$DEADLINE" -lt "$end" ]; then end=$DEADLINE; fi
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -ge "$end" ] && return 1
    sleep 0.3
  done
}

# alloc_port VAR: a port nothing on 127.0.0.1 listens on, not handed out before by this script
alloc_port() {
  local p hex
  while :; do
    p=$(( 20000 + RANDOM % 12000 )); hex=$(printf '%04X' "$p")
    case " ${USED_PORTS:-} " in *" $p "*) continue ;; esac
    # shellcheck disable=SC2046
    awk -v h="$hex" 'FNR>1 { split($2,a,":"); if (a[2]==h) f=1 } END { exit !f }' \
      $(ls /proc/net/tcp /proc/net/tcp6 2>/dev/null) </dev/null && continue
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && continue
    USED_PORTS="${USED_PORTS:-} $p"
    printf -v "$1" '%s' "$p"; return
  done
}

# build_release: builds target/release/sidecar-injector unless SIDECAR_INJECTOR_BIN is set; sets BIN
build_release() {
  if [ -n "${SIDECAR_INJECTOR_BIN:-}" ]; then
    BIN=$SIDECAR_INJECTOR_BIN
  else
    BIN=$ROOT/target/release/sidecar-injector
    local t; t=$(date +%s%N)
    if (cd "$ROOT" && cargo build --release --locked -p sidecar-injector) > "$DIR/cargo-build.log" 2>&1; then
      ok "cargo build --release --locked -p sidecar-injector ($(secs_since "$t") s)"
    else
      tail -n 30 "$DIR/cargo-build.log" | sed 's/^/    /'
      bad "cargo build --release --locked -p sidecar-injector"
      return 1
    fi
  fi
  [ -x "$BIN" ] || { bad "no executable $BIN"; return 1; }
}

# ---------------------------------------------------------------------------- the harness
# What every script shares around its scenarios. A script sets, before `trap e2e_finish EXIT`:
#   KEEP          non-empty: keep DIR even when everything passed (it is kept on failure anyway)
#   FAILURE_LOGS  globs (quoted, expanded at the end) of logs whose last lines a failure prints
#   stop_processes()  optional: stops what the script started, before the control plane goes
# and may fill DURATIONS with "what: N s" lines. T0 is the script's start (date +%s%N).

# e2e_finish: the EXIT trap. Stops processes and the control plane, keeps or removes DIR, prints
# the durations and "N passed, M failed", and exits 1 unless something passed and nothing failed.
e2e_finish() {
  local rc=$? pattern f
  set +e
  trap - INT TERM
  if [ "$rc" -ne 0 ] && [ "$FAIL" -eq 0 ]; then bad "aborted (exit status $rc)"; fi
  if declare -F stop_processes >/dev/null; then stop_processes; fi
  if [ -n "${CP_STARTED:-}" ]; then "$HERE/control-plane.sh" down "$DIR" >&2 || bad "control plane did not stop cleanly"; fi
  if [ "$FAIL" -gt 0 ] || [ -n "${KEEP:-}" ]; then
    if [ "$FAIL" -gt 0 ]; then
      for pattern in "${FAILURE_LOGS[@]}"; do
        # shellcheck disable=SC2086  # the pattern is a glob
        for f in $pattern; do
          [ -f "$f" ] || continue
          echo "---- last 30 lines of $f ----" >&2; tail -n 30 "$f" >&2
        done
      done
    fi
    echo "$E2E: kept $DIR" >&2
  else
    rm -rf "$DIR"
  fi
  for f in "${DURATIONS[@]}"; do log "duration: $f"; done
  log "duration: total $(secs_since "$T0") s"
  echo "$PASS passed, $FAIL failed"
  if [ "$FAIL" -gt 0 ] || [ "$PASS" -eq 0 ]; then exit 1; fi
  exit 0
}

# e2e_interrupted: the INT/TERM trap (counts as a failure; e2e_finish runs on the way out)
e2e_interrupted() { echo "$E2E: interrupted" >&2; FAIL=$((FAIL + 1)); exit 130; }

# scenario NAME / scenario_end: a scenario's heading and its duration (into DURATIONS)
scenario() { SC_NAME=$1; SC_T0=$(date +%s%N); echo; log "==== scenario $1"; }
scenario_end() { local d; d=$(secs_since "$SC_T0"); DURATIONS+=("scenario $SC_NAME: $d s"); log "==== scenario $SC_NAME took $d s"; }

# control_plane_up BUDGET: starts the control plane in DIR (built on first use), reads its env
# (KUBE_API_SERVER, KUBE_CA_FILE, ...), defines K (kubectl with its admin kubeconfig) and sets
# DEADLINE to BUDGET seconds from now; exits the script if it does not come up
control_plane_up() {
  local t; t=$(date +%s%N)
  CP_STARTED=1
  if "$HERE/control-plane.sh" up "$DIR" > "$DIR/up.out"; then ok "control plane up ($(secs_since "$t") s)"; else bad "control plane up"; exit 1; fi
  DURATIONS+=("control plane up: $(secs_since "$t") s")
  DEADLINE=$(( $(date +%s) + $1 ))
  # shellcheck disable=SC1091
  . "$DIR/env"
  K() { "$DIR/kubectl" --request-timeout=30s "$@"; }
}

# sa_kubeconfig NAMESPACE SERVICEACCOUNT FILE [DURATION]: a kubeconfig whose only credential is
# a `kubectl create token` of that ServiceAccount (DURATION, default 2h): real RBAC
sa_kubeconfig() {
  local token kc=(--kubeconfig "$3")
  token=$(K -n "$1" create token "$2" --duration="${4:-2h}") || return 1
  K "${kc[@]}" config set-cluster e2e --server="$KUBE_API_SERVER" \
    --certificate-authority="$KUBE_CA_FILE" --embed-certs=true >/dev/null &&
  K "${kc[@]}" config set-credentials injector --token="$token" >/dev/null &&
  K "${kc[@]}" config set-context e2e --cluster=e2e --user=injector >/dev/null &&
  K "${kc[@]}" config use-context e2e >/dev/null
}

# cluster_mode_rbac: deploy/rbac-cluster-mode.yaml as the tests apply it. Their injectors run
# with --dns-name 127.0.0.1 and their webhooks are registered by url to 127.0.0.1, so the
# admission policy gets that host among the injector's names, as the chart's
# certificates.dnsNames would add it. Fails if the file no longer has the list to add it to.
cluster_mode_rbac() {
  local file=$ROOT/deploy/rbac-cluster-mode.yaml
  grep -q 'in \["istiod\.istio-system\.svc",' "$file" || { echo "no host list in $file's admission policy" >&2; return 1; }
  sed 's/in \["istiod\.istio-system\.svc",/in ["127.0.0.1","istiod.istio-system.svc",/' "$file"
}
