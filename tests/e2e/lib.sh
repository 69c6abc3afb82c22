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
