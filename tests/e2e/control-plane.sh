#!/usr/bin/env bash
# A real Kubernetes control plane (etcd + kube-apiserver + kube-controller-manager) on
# 127.0.0.1 for end-to-end tests of the sidecar-injection webhook. No kubelet, no scheduler,
# no containers: Pods are stored and admitted (webhooks run) but stay Pending.
#
#   tests/e2e/control-plane.sh up DIR      start (building the binaries first if needed)
#   tests/e2e/control-plane.sh down DIR    stop everything started in DIR (idempotent)
#   tests/e2e/control-plane.sh status DIR  exit 0 when all components are running
#
# `up` writes into DIR:
#   kubeconfig          admin (system:masters) kubeconfig, CA/cert/key embedded
#   kubectl             wrapper: the built kubectl with --kubeconfig DIR/kubeconfig
#   env                 shell-sourceable: KUBECONFIG, KUBE_API_SERVER, KUBE_API_PORT, ...
#   pki/                CA, serving/client certs, service-account key pair
#   *.pid               pids of etcd, kube-apiserver, kube-controller-manager
#   logs/*.log          their logs
# and prints `export KUBECONFIG=DIR/kubeconfig` (and the other env lines) on stdout.
#
# Environment knobs:
#   CONTROL_PLANE_TIMEOUT        seconds to wait for each start-up phase (default 180)
#   CONTROL_PLANE_BIN            use binaries from this dir instead of building
#   KUBE_APISERVER_EXTRA_ARGS    extra kube-apiserver flags (word-split), e.g. audit flags
#   KCM_EXTRA_ARGS               extra kube-controller-manager flags (word-split)
#   NO_KCM=1                     do not start kube-controller-manager (envtest-like; then
#                                ServiceAccount admission is disabled, as envtest does)
# Everything binds 127.0.0.1 only. The service CIDR (10.0.0.0/24) is only an allocation range
# for Service objects; nothing is ever sent there (no kube-proxy, and tests must only use
# `url: https://127.0.0.1:...` webhooks, never `service:` references).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TIMEOUT=${CONTROL_PLANE_TIMEOUT:-180}
COMPONENTS=(etcd kube-apiserver kube-controller-manager)   # start order

log() { echo "control-plane: $*" >&2; }
die() { echo "control-plane: ERROR: $*" >&2; exit 1; }
usage() { echo "usage: $0 up|down|status DIR" >&2; exit 2; }

ensure_cmd() {   # ensure_cmd COMMAND DEBIAN_PACKAGE
  command -v "$1" >/dev/null 2>&1 && return 0
  command -v apt-get >/dev/null 2>&1 || die "'$1' is missing and apt-get is not available; install package $2"
  log "'$1' missing: installing Debian package $2"
  local sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get install -y -q "$2" >/dev/null 2>&1 \
    || { $sudo apt-get update -q >/dev/null 2>&1 && $sudo apt-get install -y -q "$2" >/dev/null; } \
    || die "could not install $2"
  command -v "$1" >/dev/null 2>&1 || die "'$1' still missing after installing $2"
}

alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }

# pid_of DIR NAME -> pid from DIR/NAME.pid if that process is alive and is that binary
pid_of() {
  local f=$1/$2.pid pid exe
  [ -f "$f" ] || return 1
  pid=$(cat "$f" 2>/dev/null) || return 1
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  alive "$pid" || return 1
  exe=$(readlink "/proc/$pid/exe" 2>/dev/null || true)
  # guard against pid reuse: the process must still be running the binary we started
  case "$exe" in */"$2"|*/"$2"" (deleted)") ;; *) return 1 ;; esac
  echo "$pid"
}

stop_one() {   # stop_one DIR NAME
  local d=$1 n=$2 pid i
  if pid=$(pid_of "$d" "$n"); then
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 1 100); do alive "$pid" || break; sleep 0.2; done   # 20 s
    if alive "$pid"; then
      log "$n (pid $pid) did not exit after TERM; sending KILL"
      kill -KILL "$pid" 2>/dev/null || true
      for i in $(seq 1 50); do alive "$pid" || break; sleep 0.2; done
    fi
    if alive "$pid"; then log "$n (pid $pid) is still running"; return 1; fi
    log "stopped $n (pid $pid)"
  fi
  rm -f "$d/$n.pid"
}

cmd_down() {
  local d=$1 n rc=0 i
  if [ ! -d "$d" ]; then log "$d does not exist; nothing to stop"; return 0; fi
  for (( i=${#COMPONENTS[@]}-1; i>=0; i-- )); do
    stop_one "$d" "${COMPONENTS[$i]}" || rc=1
  done
  for n in "${COMPONENTS[@]}"; do
    if pid_of "$d" "$n" >/dev/null; then log "still running: $n"; rc=1; fi
  done
  [ "$rc" = 0 ] && log "down: nothing left running for $d"
  return $rc
}

cmd_status() {
  local d=$1 n rc=0 pid
  for n in "${COMPONENTS[@]}"; do
    if pid=$(pid_of "$d" "$n"); then echo "$n running (pid $pid)"
    elif [ "$n" = kube-controller-manager ] && [ -f "$d/.no-kcm" ]; then echo "$n not started (NO_KCM)"
    else echo "$n not running"; rc=1; fi
  done
  return $rc
}

# ---------------------------------------------------------------- up
FAILED_DIR=""
on_up_failure() {
  local rc=$?
  if [ "$rc" != 0 ] && [ -n "$FAILED_DIR" ]; then
    log "start-up failed; stopping what was started"
    cmd_down "$FAILED_DIR" || true
  fi
}

# A free TCP port on 127.0.0.1, below the ephemeral range, not LISTENing (v4 or v6) and not
# handed out before by this script. Usage: free_port VARNAME (no subshell, so USED_PORTS sticks)
USED_PORTS=" "
free_port() {
  local p hex i
  for i in $(seq 1 200); do
    p=$(( 20000 + RANDOM % 12000 ))
    case "$USED_PORTS" in *" $p "*) continue ;; esac
    hex=$(printf '%04X' "$p")
    # shellcheck disable=SC2046
    if awk -v h="$hex" 'FNR>1 { split($2,a,":"); if (a[2]==h) found=1 } END { exit !found }' \
        $(ls /proc/net/tcp /proc/net/tcp6 2>/dev/null) </dev/null; then continue; fi
    if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then continue; fi
    USED_PORTS="$USED_PORTS$p "
    printf -v "$1" '%s' "$p"; return 0
  done
  die "could not find a free port"
}

tail_log() {   # tail_log NAME
  local f=$DIR/logs/$1.log
  if [ -f "$f" ]; then
    echo "---- last 40 lines of $f ----" >&2
    tail -n 40 "$f" >&2
    echo "---- end of $f ----" >&2
  fi
}

# wait_until NAME DESCRIPTION TIMEOUT COMMAND... : poll COMMAND until it succeeds; fail early if
# component NAME's process died.
wait_until() {
  local name=$1 what=$2 t=$3 start pid
  shift 3
  start=$(date +%s)
  while :; do
    if "$@" >/dev/null 2>&1; then
      log "$what (after $(( $(date +%s) - start )) s)"
      return 0
    fi
    pid=$(cat "$DIR/$name.pid" 2>/dev/null || true)
    if ! alive "$pid"; then
      tail_log "$name"
      die "$name exited during start-up (waiting for: $what)"
    fi
    if [ $(( $(date +%s) - start )) -ge "$t" ]; then
      tail_log "$name"
      die "timed out after ${t}s waiting for: $what"
    fi
    sleep 0.5
  done
}

gen_pki() {
  local P=$DIR/pki
  mkdir -p "$P"
  openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj /CN=sidecar-injector-e2e-ca \
    -keyout "$P/ca.key" -out "$P/ca.crt" \
    -addext basicConstraints=critical,CA:TRUE \
    -addext keyUsage=critical,keyCertSign,cRLSign,digitalSignature >/dev/null 2>&1 \
    || die "openssl: could not create the CA"
  issue() {   # issue NAME SUBJECT EXTENSION...
    local n=$1 s=$2; shift 2
    openssl req -newkey rsa:2048 -nodes -subj "$s" -keyout "$P/$n.key" -out "$P/$n.csr" >/dev/null 2>&1 \
      || die "openssl: could not create key/CSR for $n"
    printf '%s\n' "$@" basicConstraints=CA:FALSE keyUsage=critical,digitalSignature,keyEncipherment > "$P/$n.ext"
    openssl x509 -req -in "$P/$n.csr" -CA "$P/ca.crt" -CAkey "$P/ca.key" -CAcreateserial -days 30 \
      -extfile "$P/$n.ext" -out "$P/$n.crt" >/dev/null 2>&1 || die "openssl: could not sign $n"
    rm -f "$P/$n.csr" "$P/$n.ext"
  }
  issue apiserver /CN=kube-apiserver extendedKeyUsage=serverAuth \
    subjectAltName=IP:127.0.0.1,DNS:localhost,IP:10.0.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local
  issue admin "/O=system:masters/CN=admin" extendedKeyUsage=clientAuth
  issue kube-controller-manager /CN=system:kube-controller-manager extendedKeyUsage=clientAuth
  openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$P/sa.key" >/dev/null 2>&1 \
    || die "openssl: could not create the service-account key"
  openssl pkey -in "$P/sa.key" -pubout -out "$P/sa.pub" >/dev/null 2>&1 \
    || die "openssl: could not write the service-account public key"
  chmod 600 "$P"/*.key
}

write_kubeconfig() {   # write_kubeconfig FILE USER-CERT-NAME
  local P=$DIR/pki
  cat > "$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority-data: $(base64 -w0 "$P/ca.crt")
users:
- name: $2
  user:
    client-certificate-data: $(base64 -w0 "$P/$2.crt")
    client-key-data: $(base64 -w0 "$P/$2.key")
contexts:
- name: e2e
  context:
    cluster: e2e
    user: $2
current-context: e2e
EOF
  chmod 600 "$1"
}

api_get() {   # api_get PATH  (as admin)
  curl -fsS --max-time 10 --cacert "$DIR/pki/ca.crt" --cert "$DIR/pki/admin.crt" --key "$DIR/pki/admin.key" \
    "https://127.0.0.1:$API_PORT$1"
}

cmd_up() {
  mkdir -p "$DIR"
  DIR=$(cd "$DIR" && pwd)
  local n pid
  for n in "${COMPONENTS[@]}"; do
    if pid=$(pid_of "$DIR" "$n"); then
      die "$n is already running in $DIR (pid $pid); run '$0 down $DIR' first"
    fi
  done

  ensure_cmd openssl openssl
  ensure_cmd curl curl
  ensure_cmd flock util-linux
  ensure_cmd base64 coreutils

  local BIN
  if [ -n "${CONTROL_PLANE_BIN:-}" ]; then
    BIN=$CONTROL_PLANE_BIN
  else
    BIN=$("$HERE/build-control-plane.sh" | tail -n 1) || die "building the control-plane binaries failed"
  fi
  for n in etcd kube-apiserver kube-controller-manager kubectl; do
    [ -x "$BIN/$n" ] || die "missing binary $BIN/$n"
  done

  FAILED_DIR=$DIR
  trap on_up_failure EXIT
  trap 'exit 130' INT TERM HUP

  rm -rf "$DIR/pki" "$DIR/etcd-data" "$DIR/logs" "$DIR/.no-kcm"
  mkdir -p "$DIR/logs"
  local t0; t0=$(date +%s)
  gen_pki
  local P=$DIR/pki

  free_port ETCD_PORT; free_port ETCD_PEER_PORT; free_port API_PORT

  # ---- etcd
  local ex=()
  "$BIN/etcd" --help 2>&1 | grep -q -- --unsafe-no-fsync && ex+=(--unsafe-no-fsync)
  "$BIN/etcd" --name e2e --data-dir "$DIR/etcd-data" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "e2e=http://127.0.0.1:$ETCD_PEER_PORT" "${ex[@]}" \
    </dev/null >"$DIR/logs/etcd.log" 2>&1 &
  echo $! > "$DIR/etcd.pid"
  wait_until etcd "etcd healthy on 127.0.0.1:$ETCD_PORT" "$TIMEOUT" \
    curl -fsS --max-time 5 "http://127.0.0.1:$ETCD_PORT/health"

  # ---- kube-apiserver
  local aargs=()
  [ -n "${NO_KCM:-}" ] && aargs+=(--disable-admission-plugins=ServiceAccount)
  # shellcheck disable=SC2206
  [ -n "${KUBE_APISERVER_EXTRA_ARGS:-}" ] && aargs+=($KUBE_APISERVER_EXTRA_ARGS)
  "$BIN/kube-apiserver" \
    --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
    --bind-address=127.0.0.1 --secure-port="$API_PORT" \
    --advertise-address=127.0.0.1 --endpoint-reconciler-type=none \
    --tls-cert-file="$P/apiserver.crt" --tls-private-key-file="$P/apiserver.key" \
    --client-ca-file="$P/ca.crt" --authorization-mode=Node,RBAC \
    --service-account-issuer="https://127.0.0.1:$API_PORT" \
    --service-account-key-file="$P/sa.pub" --service-account-signing-key-file="$P/sa.key" \
    --service-cluster-ip-range=10.0.0.0/24 --allow-privileged=true \
    --profiling=false --v=1 "${aargs[@]}" \
    </dev/null >"$DIR/logs/kube-apiserver.log" 2>&1 &
  echo $! > "$DIR/kube-apiserver.pid"
  wait_until kube-apiserver "kube-apiserver /readyz ok on https://127.0.0.1:$API_PORT" "$TIMEOUT" \
    api_get /readyz

  write_kubeconfig "$DIR/kubeconfig" admin
  write_kubeconfig "$DIR/kube-controller-manager.kubeconfig" kube-controller-manager
  cat > "$DIR/kubectl" <<EOF
#!/bin/sh
exec "$BIN/kubectl" --kubeconfig "$DIR/kubeconfig" "\$@"
EOF
  chmod +x "$DIR/kubectl"

  # ---- kube-controller-manager (Deployments -> ReplicaSets -> Pods, default ServiceAccounts, GC, ...)
  if [ -z "${NO_KCM:-}" ]; then
    local kargs=() K=$DIR/kube-controller-manager.kubeconfig
    # shellcheck disable=SC2206
    [ -n "${KCM_EXTRA_ARGS:-}" ] && kargs+=($KCM_EXTRA_ARGS)
    "$BIN/kube-controller-manager" --kubeconfig="$K" \
      --authentication-kubeconfig="$K" --authorization-kubeconfig="$K" \
      --bind-address=127.0.0.1 --secure-port=0 --leader-elect=false --use-service-account-credentials=true \
      --service-account-private-key-file="$P/sa.key" --root-ca-file="$P/ca.crt" \
      --cluster-signing-cert-file="$P/ca.crt" --cluster-signing-key-file="$P/ca.key" \
      --controllers='*' --v=1 "${kargs[@]}" \
      </dev/null >"$DIR/logs/kube-controller-manager.log" 2>&1 &
    echo $! > "$DIR/kube-controller-manager.pid"
    wait_until kube-controller-manager "namespace 'default' and serviceaccount default/default exist" "$TIMEOUT" \
      api_get /api/v1/namespaces/default/serviceaccounts/default
  else
    touch "$DIR/.no-kcm"
    wait_until kube-apiserver "namespace 'default' exists" "$TIMEOUT" api_get /api/v1/namespaces/default
  fi

  cat > "$DIR/env" <<EOF
export KUBECONFIG=$DIR/kubeconfig
export KUBE_API_SERVER=https://127.0.0.1:$API_PORT
export KUBE_API_PORT=$API_PORT
export KUBE_CA_FILE=$P/ca.crt
export ETCD_ENDPOINT=http://127.0.0.1:$ETCD_PORT
export CONTROL_PLANE_DIR=$DIR
export CONTROL_PLANE_BIN=$BIN
EOF
  trap - EXIT INT TERM HUP
  log "up in $(( $(date +%s) - t0 )) s (after build check); kubectl wrapper: $DIR/kubectl; logs: $DIR/logs/"
  log "stop with: $0 down $DIR"
  cat "$DIR/env"
}

[ $# -eq 2 ] || usage
DIR=$2
case "$1" in
  up) cmd_up ;;
  down) cmd_down "$DIR" ;;
  status) cmd_status "$DIR" ;;
  *) usage ;;
esac
