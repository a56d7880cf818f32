# Boot "bench": MemKV's RDMA path against perftest between the same two
# guests (tests/rdma/README.md, bench-scenarios.sh). Guest a runs `memkv
# start` (lib.sh's config: rxe0, mtu 4096) and the perftest servers, guest b
# the clients. The cells of $CELLS (comma-separated OP:BYTES:FLIGHT; OP is put
# or get for memkv-rdma-probe bench, write or read for ib_write_bw /
# ib_read_bw; FLIGHT is dN, N ops in flight: the probe's --depth N over N
# connections, perftest's -t N, or bN, batches of N: the probe's --batch N,
# perftest's -t N) run one at a time in that order, in lockstep: b signals cN-go, a notes its CPU
# counters and answers cN-ack (starting the perftest server first), b runs
# the cell and signals cN-end, a notes its counters again.
# Per cell in /run/out: cN.out / cN.err / cN.rc (guest b), and in each guest
# cpu.txt: "cN start|end UPTIME cpu USER NICE SYSTEM IDLE IOWAIT IRQ SOFTIRQ ..."
# (/proc/stat's first line), hw.txt: "cN start|end hw_counters(G): NAME=VALUE..."
# (rxe0's non-zero counters); ping.out (b): 20 pings of a.
# $SECS: seconds of traffic per cell.
# Sourced with lib.sh.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
G=$(dirname "$0")
# perftest measures the middle SECS seconds of SECS + 2
PT="-m 4096 -D $((SECS + 2)) -f 1 --tclass=104${RDMA_TIMEOUT:+ -u $RDMA_TIMEOUT}"
# cn counts the cells: lib.sh's await and signal use i, n and t.
# cell OP:BYTES:FLIGHT -> op, size, depth (N of dN, else 1), batch (N of bN, else 1)
parse_cell() {
  op=${1%%:*}; rest=${1#*:}; size=${rest%%:*}; flight=${rest#*:}
  [ "$flight" = "$rest" ] && flight=d1
  depth=1; batch=1
  case $flight in d*) depth=${flight#d};; b*) batch=${flight#b};; esac
  inflight=$((depth * batch))
}
mark() {
  echo "$1 $2 $(now) $(head -n 1 /proc/stat)" >> cpu.txt
  echo "$1 $2 $("$G/counters.sh")" >> hw.txt
}

if [ "$NAME" = a ]; then
  if start_server bench 9900 4096; then signal a-ready; else signal a-failed; exit 1; fi
  cn=0
  for cell in $(echo "$CELLS" | tr , ' '); do
    cn=$((cn + 1)); parse_cell "$cell"
    await "c$cn-go" 120 b-done || exit 1
    mark "c$cn" start
    case $op in
      write|read)
        # shellcheck disable=SC2086  # PT is perftest's flags
        "$G/perftest.sh" "ib_${op}_bw" $((SECS + 42)) $PT -t "$inflight" -s "$size" > "c$cn.out" 2>&1 &
        sleep 1; signal "c$cn-ack"; wait $!;;
      *) signal "c$cn-ack";;
    esac
    await "c$cn-end" $((SECS + 90)) b-done
    mark "c$cn" end
  done
  await b-done 60
  exit 0
fi

# --- guest b ---
trap 'signal b-done' EXIT
await a-ready 120 a-failed || exit 1
# shellcheck disable=SC2034  # read by step (lib.sh)
SERVERS=$PEER:9900
step wait 90 MEMKV_TRANSPORT=tcp -- wait --seconds 60
# the IP round trip through both guests' stacks and the switch (no RDMA)
busybox ping -c 20 -i 0.2 "$PEER" > ping.out 2>&1; say "$(tail -n 1 ping.out)"
RDMA_ENV="MEMKV_TRANSPORT=$RDMA MEMKV_RDMA_MTU=4096${RDMA_TIMEOUT:+ MEMKV_RDMA_TIMEOUT=$RDMA_TIMEOUT}"
cn=0
for cell in $(echo "$CELLS" | tr , ' '); do
  cn=$((cn + 1)); parse_cell "$cell"
  FLIGHT="--depth $depth --batch $batch"
  # depth + 1: stores may hold all but one connection, so each put thread has its own
  CONNS="MEMKV_NUM_CONNECTIONS=$((depth >= 4 ? depth + 1 : 4))"
  # untimed: the keys exist, the values' registrations are cached
  # shellcheck disable=SC2086  # RDMA_ENV is VAR=value words, FLIGHT the probe's flags
  [ "$op" = put ] && step "c$cn-warm" 60 $RDMA_ENV $CONNS -- bench --op put --size "$size" --seconds 1 $FLIGHT --prefix bench-
  signal "c$cn-go"
  await "c$cn-ack" 60 || exit 1
  mark "c$cn" start
  case $op in
    write|read)
      # shellcheck disable=SC2086
      "$G/perftest.sh" "ib_${op}_bw" $((SECS + 42)) $PT -t "$inflight" -s "$size" > "c$cn.out" 2> "c$cn.err"
      echo $? > "c$cn.rc"
      say "cell c$cn $op $size $flight: $(grep -A1 'BW average' "c$cn.out" | tail -n 1)";;
    *)
      # shellcheck disable=SC2086
      step "c$cn" $((SECS + 60)) $RDMA_ENV $CONNS -- bench --op "$op" --size "$size" --seconds "$SECS" $FLIGHT --prefix bench-;;
  esac
  mark "c$cn" end
  signal "c$cn-end"
done
exit 0
