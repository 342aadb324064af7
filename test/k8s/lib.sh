# Shared settings and helpers of the test cluster scripts (test/k8s/up,
# down, import-image, netpol-ctl). Sourced, never run. Every path the
# cluster uses is under one state directory, $STATE, so that `down` can
# remove all of it; the built Kubernetes binaries live in a per-machine
# cache outside the clone, $CACHE, kept across bring-ups.
#
# Settings (environment, with defaults):
#   RUNNER_K8S_STATE  state dir: certificates, etcd, containerd, kubelet,
#                     logs, pid files, admin.kubeconfig (/var/lib/runner-k8s)
#   RUNNER_K8S_CACHE  binary cache (/var/cache/runner-k8s)
#   RUNNER_K8S_BIN    a directory that already holds the Kubernetes binaries
#                     (skips test/k8s/build)
#   RUNNER_K8S_NODE_IP  the node's IP (default: the source address of the
#                     default route; never loopback)

K8S_VERSION=v1.37.2
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
STATE=${RUNNER_K8S_STATE:-/var/lib/runner-k8s}
CACHE=${RUNNER_K8S_CACHE:-/var/cache/runner-k8s}

PKI=$STATE/pki
LOGS=$STATE/logs
RUN=$STATE/run
KUBECONFIG_ADMIN=$STATE/admin.kubeconfig
CTRD_DIR=$STATE/containerd
CTRD_SOCK=$CTRD_DIR/containerd.sock
KUBELET_DIR=$STATE/kubelet
CNI_CONF_DIR=$STATE/cni/net.d

ETCD_CLIENT=127.0.0.1:23790
ETCD_PEER=127.0.0.1:23800
API_PORT=6443
POD_CIDR=10.244.0.0/24
SERVICE_CIDR=10.96.0.0/16
SERVICE_IP=10.96.0.1
BRIDGE=runnerk8s0
CNI_NET=runner-k8s
# The filter chain that lets pod traffic through FORWARD (Docker sets its
# policy to DROP); the NetworkPolicy enforcer's chain goes before it.
FWD_CHAIN=RUNNER-K8S-FWD
PAUSE_IMAGE=runner.local/pause:1

log() { printf '%s %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { printf 'test/k8s: %s\n' "$*" >&2; exit 1; }

node_name() { hostname | tr '[:upper:]' '[:lower:]'; }

node_ip() {
  if [ -n "${RUNNER_K8S_NODE_IP:-}" ]; then echo "$RUNNER_K8S_NODE_IP"; return; fi
  local ip
  # A route lookup only: nothing is sent.
  ip=$(ip -4 route get 192.0.2.255 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/\1/p' | head -1)
  if [ -z "$ip" ] || [[ $ip == 127.* ]]; then
    ip=$(ip -4 -o addr show scope global | awk '$2 != "docker0" && $2 != "'"$BRIDGE"'" {split($4, a, "/"); print a[1]; exit}')
  fi
  [ -n "$ip" ] || die "no non-loopback IPv4 address for the node; set RUNNER_K8S_NODE_IP"
  echo "$ip"
}

# pid_alive NAME: the process `up` started as NAME still runs (its pid file
# names a live process whose command line still has the recorded binary).
pid_alive() {
  local f=$RUN/$1.pid pid exe
  [ -f "$f" ] || return 1
  read -r pid exe <"$f" || return 1
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$exe"
}

# start NAME BINARY ARGS...: runs BINARY in its own session, logs to
# $LOGS/NAME.log, records "pid binary" in $RUN/NAME.pid.
start() {
  local name=$1; shift
  mkdir -p "$RUN" "$LOGS"
  setsid "$@" >>"$LOGS/$name.log" 2>&1 </dev/null &
  local pid=$!
  echo "$pid $1" >"$RUN/$name.pid"
  # Until it has run BINARY, the process is this shell's fork, whose
  # command line pid_alive does not recognise: wait (up to 5 s) for it to
  # show BINARY or to end, so that a process still starting is not taken
  # for one that exited.
  for _ in $(seq 1 100); do
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$1" && break
    [ -d "/proc/$pid" ] || break
    sleep 0.05
  done
  log "started $name (pid $pid)"
}

# stop NAME: SIGTERM, then SIGKILL after 15 s, the process recorded as NAME.
stop() {
  local name=$1 pid
  if pid_alive "$name"; then
    read -r pid _ <"$RUN/$name.pid"
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 150); do
      [ -d "/proc/$pid" ] && ! grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null || break
      sleep 0.1
    done
    if [ -d "/proc/$pid" ]; then kill -KILL "$pid" 2>/dev/null || true; fi
    log "stopped $name (pid $pid)"
  fi
  rm -f "$RUN/$name.pid"
}

# wait_for WHAT SECONDS CMD...: runs CMD until it succeeds, or fails naming
# WHAT and the log to read.
wait_for() {
  local what=$1 secs=$2; shift 2
  local end=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $end ] || die "$what not ready after ${secs}s (logs: $LOGS)"
    sleep 0.2
  done
}

# kc runs the built kubectl (one on PATH when $BIN has none) as the admin.
kc() {
  local k=$BIN/kubectl
  [ -x "$k" ] || k=kubectl
  "$k" --kubeconfig "$KUBECONFIG_ADMIN" "$@"
}
