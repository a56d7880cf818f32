# Helpers for the MemKV scenarios inside a guest (sourced by healthy.sh and
# lossy-hop.sh; POSIX sh, runs chrooted in the host root with cwd /run/out).
# Every wait is bounded; every client run has a `timeout`.
#
# Environment from memkv-scenarios.sh: MEMKV (the memkv binary), PROBE
# (memkv-rdma-probe), AUTH_KEY (64 hex), RDMA (the MEMKV_TRANSPORT of steps
# meant for rdma: rdma, or tcp to try the harness without RDMA); from
# run-pair.sh: NAME, SELF, PEER.
#
# Results, one set per step, in /run/out (the host sees them under
# RESULTS/<boot>/<guest>/): STEP.out (stdout), STEP.err (stderr), STEP.rc,
# hw_LABEL.txt (rxe0 hw_counters as "name value" lines), and log lines
# "step ..." in the guest's log.

PAIR=/run/pair
# memkv start needs the pinned (RDMA-registered) pool on 2 MiB hugepages:
# two 64 MiB servers at once in lossy-hop.
echo 64 > /proc/sys/vm/nr_hugepages
HW=/sys/class/infiniband/rxe0/ports/1/hw_counters

now() { cut -d' ' -f1 /proc/uptime; }
say() { echo "[$NAME $(now)s] $*"; }

# signal NAME: tell the other guest that NAME happened.
signal() { : > "$PAIR/$1"; say "signal $1"; }

# await NAME SECONDS [ABORT]: wait for the other guest's signal NAME; 1 on
# timeout or when the signal ABORT comes first (the other side gave up).
await() {
  i=0
  while [ ! -e "$PAIR/$1" ]; do
    i=$((i + 1))
    if [ -n "${3:-}" ] && [ -e "$PAIR/$3" ]; then say "got $3 while waiting for $1"; return 1; fi
    if [ $i -gt $(($2 * 5)) ]; then say "gave up waiting for $1 after $2 s"; return 1; fi
    sleep 0.2
  done
  say "got $1"
}

# counters LABEL: snapshot rxe0's hw_counters into hw_LABEL.txt.
counters() {
  for f in "$HW"/*; do echo "${f##*/} $(cat "$f")"; done > "hw_$1.txt"
}

# active_mtu: rxe0 port 1 active MTU in bytes (256..4096).
active_mtu() { ibv_devinfo -d rxe0 | sed -n 's/.*active_mtu:[[:space:]]*\([0-9]*\).*/\1/p'; }

# await_active_mtu BYTES SECONDS: after an `ip link set mtu`, rxe follows.
await_active_mtu() {
  i=0
  while [ "$(active_mtu)" != "$1" ]; do
    i=$((i + 1))
    if [ $i -gt $(($2 * 5)) ]; then say "active_mtu stays $(active_mtu), wanted $1"; return 1; fi
    sleep 0.2
  done
  say "active_mtu $1"
}

# server_config FILE PORT MTU [TRAFFIC_CLASS SERVICE_LEVEL]
server_config() {
  cat > "$1" <<EOF
network:
  address: $SELF:$2
  auth_key: $AUTH_KEY
memory:
  max_size: 64 MiB
  block_size: 1 MiB
storage:
  mode: memory
rdma:
  device: rxe0
  mtu: $3
  traffic_class: ${4:-104}
  service_level: ${5:-3}
EOF
}

# start_server NAME PORT MTU: runs `memkv start` in the background (the
# guest's power-off ends it), waits up to 60 s for its "ready" line.
# Leaves the pid in NAME.pid; 1 when it exited or never got ready.
start_server() {
  server_config "$1.yaml" "$2" "$3"
  mkdir -p "/tmp/$1"
  "$MEMKV" start --config "$1.yaml" --data-dir "/tmp/$1" > "$1.out" 2> "$1.err" &
  echo $! > "$1.pid"
  i=0
  while ! grep -q '^ready ' "$1.out"; do
    i=$((i + 1))
    if ! kill -0 "$(cat "$1.pid")" 2>/dev/null || [ $i -gt 300 ]; then
      say "server $1 did not get ready"; cat "$1.err"; return 1
    fi
    sleep 0.2
  done
  say "server $1: $(cat "$1.out")"
}

# run_step NAME TIMEOUT_S BINARY... ENV... -- ARGS...: one client-side run
# with the client environment (servers, key, rxe0), bounded by TIMEOUT_S;
# NAME.out / NAME.err / NAME.rc in the cwd.
run_step() {
  n=$1; t=$2; bin=$3; shift 3
  envs=""
  while [ $# -gt 0 ] && [ "$1" != -- ]; do envs="$envs $1"; shift; done
  shift
  say "step $n:$envs $*"
  # shellcheck disable=SC2086  # envs is a list of VAR=value words, bin may carry a sub-command
  env MEMKV_SERVERS="$SERVERS" MEMKV_AUTH_KEY="$AUTH_KEY" MEMKV_RDMA_DEVICES=rxe0 $envs \
    timeout -s KILL "$t" $bin "$@" > "$n.out" 2> "$n.err"
  echo $? > "$n.rc"
  say "step $n: rc=$(cat "$n.rc"); $(tail -n 1 "$n.out" | cut -c1-300)"
}

# step NAME TIMEOUT_S ENV... -- ARGS...: one probe run.
step() { n=$1; t=$2; shift 2; run_step "$n" "$t" "$PROBE" "$@"; }

# doctor_step NAME TIMEOUT_S ENV... -- ARGS...: one `memkv doctor` run.
doctor_step() { n=$1; t=$2; shift 2; run_step "$n" "$t" "$MEMKV doctor" "$@"; }
