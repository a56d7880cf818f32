#!/usr/bin/env bash
# The server's instructions per put (or per get, with --op get), by stage of the request path: a memkv
# server under callgrind (one worker, instrumentation on only while the
# puts run), driven over TCP by memkv-rdma-probe's bench (docs/benchmarks.md,
# "Batched 4 KiB puts: the request path's instructions"). Instruction counts
# do not move with the machine's load, so two builds compare on a shared VM.
# usage: bench/put_profile.sh [--op put|get] [--memkv BIN] [--probe BIN] [--mode memory|file]
#                             [--size S] [--depth D] [--batch B] [--seconds T]
#                             [--out DIR]
#   --op O        put (default) or get: gets read the keys the warm-up put
#                 wrote (depth x batch keys)
#   --memkv BIN   the server (default build/memkv); any build, also an old one
#   --probe BIN   the client (default build/memkv-rdma-probe)
#   --mode M      storage.mode (default memory; file: one 512 MiB drive file)
#   --size S      value size (default 4k); --depth D threads (default 4),
#   --batch B     keys per BatchPut (default 16; 1: single puts)
#   --seconds T   puts under callgrind (default 20; a 3 s warm-up runs first)
#   --prefix P    the keys' prefix (default w-: keys of 14 to 15 bytes, kept
#                 inline by std::string; longer keys add their heap copies)
#   --out DIR     callgrind's file and the logs (default a temporary directory)
# Prints puts (gets), Ir per op and the inclusive Ir per op of the request path's
# stages that the build has (names of older builds differ: Connection:: for
# Session::). Needs valgrind (apt-get install valgrind).
set -euo pipefail
OP=put; MEMKV=build/memkv; PROBE=build/memkv-rdma-probe; MODE=memory; SIZE=4k; DEPTH=4; BATCH=16; SECS=20; OUT=""; PREFIX=w-
while [ $# -gt 0 ]; do
  case "$1" in
    --op) OP="$2"; shift 2;;
    --memkv) MEMKV="$2"; shift 2;;
    --probe) PROBE="$2"; shift 2;;
    --mode) MODE="$2"; shift 2;;
    --size) SIZE="$2"; shift 2;;
    --depth) DEPTH="$2"; shift 2;;
    --batch) BATCH="$2"; shift 2;;
    --seconds) SECS="$2"; shift 2;;
    --out) OUT="$2"; shift 2;;
    --prefix) PREFIX="$2"; shift 2;;
    -h|--help) sed -n '2,23p' "$0"; exit 0;;
    *) echo "put_profile: unknown argument '$1'" >&2; sed -n '2,23p' "$0" >&2; exit 2;;
  esac
done
case "$MODE" in memory|file) ;; *) echo "put_profile: --mode is memory or file, not '$MODE'" >&2; exit 2;; esac
case "$OP" in put|get) ;; *) echo "put_profile: --op is put or get, not '$OP'" >&2; exit 2;; esac
for tool in valgrind callgrind_control callgrind_annotate; do
  command -v "$tool" > /dev/null || { echo "put_profile: $tool not found (apt-get install valgrind)" >&2; exit 2; }
done
[ -x "$MEMKV" ] && [ -x "$PROBE" ] || { echo "put_profile: $MEMKV or $PROBE is missing (build them first)" >&2; exit 2; }
MEMKV="$(cd "$(dirname "$MEMKV")" && pwd)/$(basename "$MEMKV")"
PROBE="$(cd "$(dirname "$PROBE")" && pwd)/$(basename "$PROBE")"
[ -n "$OUT" ] || OUT="$(mktemp -d)"
mkdir -p "$OUT"; cd "$OUT"
# A free port whose next one (the admin endpoint's) is free too.
PORT=$(python3 - <<'PY'
import socket
for _ in range(100):
    a = socket.socket(); a.bind(("127.0.0.1", 0)); port = a.getsockname()[1]
    b = socket.socket()
    try:
        b.bind(("127.0.0.1", port + 1))
    except OSError:
        continue
    finally:
        a.close(); b.close()
    print(port); break
PY
)
KEY=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
{
  printf 'network:\n  address: 127.0.0.1:%s\n  auth_key: %s\nmemory:\n  max_size: 64MiB\nstorage:\n  mode: %s\n' \
    "$PORT" "$KEY" "$MODE"
  [ "$MODE" = file ] && printf '  drives:\n    - {media: %s/drive0.memkv, size: 512MiB}\n' "$OUT"
} > config.yaml
valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$OUT/callgrind.out" \
  "$MEMKV" start --config config.yaml --workers 1 > server.log 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
deadline=$((SECONDS + 300))
until grep -qs '^ready' server.log; do
  kill -0 $SERVER 2>/dev/null || { echo "put_profile: the server exited:" >&2; tail -5 server.log >&2; exit 1; }
  [ $SECONDS -lt $deadline ] || { echo "put_profile: the server was not ready in 300 s" >&2; exit 1; }
  sleep 0.5
done
# DEPTH + 1: stores may hold all but one connection, so each thread has its own.
export MEMKV_SERVERS=127.0.0.1:$PORT MEMKV_AUTH_KEY=$KEY MEMKV_NUM_CONNECTIONS=$((DEPTH + 1)) MEMKV_TIMEOUT_MS=60000
FLAGS=(--size "$SIZE" --depth "$DEPTH" --batch "$BATCH" --prefix "$PREFIX")
"$PROBE" bench --op put "${FLAGS[@]}" --seconds 3 > warm.out
callgrind_control -i on $SERVER > /dev/null
"$PROBE" bench --op "$OP" "${FLAGS[@]}" --seconds "$SECS" > run.out
callgrind_control -i off $SERVER > /dev/null
kill $SERVER; wait $SERVER 2>/dev/null || true
trap - EXIT
python3 - "$OUT" <<'PY'
import glob, json, re, subprocess, sys
out = sys.argv[1]
run = json.loads([l for l in open(f"{out}/run.out") if l.startswith("{")][-1])
puts = run["ok"]
op = run["op"]
if run["failed"] or puts == 0:
    sys.exit(f"put_profile: {run['failed']} {op}s failed: {run['first_error']}")
total = int(re.search(r"Collected : (\d+)", open(f"{out}/server.log").read()).group(1))
files = sorted(glob.glob(f"{out}/callgrind.out*"), key=lambda p: -len(open(p, "rb").read()))
text = subprocess.run(["callgrind_annotate", "--inclusive=yes", files[0]], capture_output=True, text=True).stdout
print(f"{puts} {op}s of {run['size']} B (depth {run['depth']}, batch {run['batch']}), "
      f"server Ir per {op} {total // puts}")
stages = ["::OnMeta()", "FrameAuth::VerifyNext", "Session::Admit(", "DecodeRequest(", "MemoryStore::BeginPut(",
          "::HandleBatchPut(", "::ReceivePayload()", "::HashArrived(", "::CommitBatch(std", "TieredStore::WriteThrough",
          "MemoryStore::CommitPut(", "Impl::LinkLocked(std", "Impl::UnlinkLocked(std",
          "Impl::ReplaceLocked(", "Impl::AttachLocked(", "Impl::DetachLocked(", "EventScope::~EventScope() [",
          "::RespondBatchPut(", "::HandleBatchGet(", "::RespondBatchGet(", "FrameAuth::SignNext"]
for stage in stages:
    m = re.search(r"^\s*([\d,]+) \([^)]*\)\s+\S*" + re.escape(stage), text, re.M)
    if m:
        print(f"  {stage.rstrip('([ ').lstrip(':'):<28} {int(m.group(1).replace(',', '')) // puts:>7}")
print(f"callgrind's file: {files[0]} (callgrind_annotate --inclusive=yes FILE)")
PY
