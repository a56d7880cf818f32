#!/usr/bin/env bash
# libmemkv_preload.so against a real `memkv start` server (docs/preload.md):
#   1. the MLPerf-style entry loop in C and in Python (/usr/bin/python3),
#      each leaving a file that must hold the same bytes in MemKV (memkv get)
#      and on the real filesystem (outside the prefix: not intercepted);
#   2. cp, cat, ls, rm, dd and sha256sum under the shim, each checked against
#      the bytes MemKV holds (memkv get / memkv ls, without the shim);
#   3. shell redirections in bash under the shim (descriptors inherited across
#      exec, appends by builtins), each run again in a local directory and
#      MemKV's value checked against the local file;
#   4. tree commands (mkdir -p, tar x, cp -a, mv and rm -r of a directory,
#      sed -i, touch, find -delete, rsync -a), each run in a local directory
#      and under the shim, MemKV's keys (memkv ls: directories as their
#      markers "dir/") and values (memkv get) checked against the local tree;
#   4b. directories implied by keys alone (memkv put, open(O_CREAT) below no
#      directory): rm -r, rm -rf, find -delete exit 0 and leave the parent;
#      rm or mv of the last file leaves the directory, for rmdir;
#   5. failed stores: against a second server whose memory.max_value_size is
#      1 MiB, then the same server stopped, every call that stores (close,
#      fclose, fsync, fdatasync, Python's close) returns -1 with EFBIG, then
#      ENOTCONN; `cat f > x` fails, and a put no call could report (a shell
#      builtin's redirection, a file open at exit) makes the exit status 74.
#
# Usage: preload_test.sh MEMKV_BINARY PRELOAD_LIBRARY C_PROGRAM PY_PROGRAM FAILED_PUTS_PROGRAM
set -euo pipefail

[ $# -eq 5 ] || { echo "usage: $0 MEMKV PRELOAD_LIB C_PROGRAM PY_PROGRAM FAILED_PUTS_PROGRAM" >&2; exit 2; }
memkv=$1 lib=$2 c_program=$3 py_program=$4 failed_puts=$5
. "$(dirname "$0")/../shell_test.sh" preload_test

export HOME="$scratch/home"
mkdir -p "$HOME" "$scratch/real"
start_memory_server "$memkv" "512 MiB"
export MEMKV_SERVERS=$address
export MEMKV_AUTH_KEY=$key MEMKV_TRANSPORT=tcp
# The prefix is a directory that does not exist on disk: nothing under it
# can be served by the filesystem by mistake.
kv=$scratch/kv
export MEMKV_PRELOAD_PREFIX=$kv
log "server ready on $MEMKV_SERVERS; prefix $kv"

shim() { LD_PRELOAD=$lib "$@"; }
# same_as_memkv KEY FILE: MemKV's value of KEY is FILE's bytes.
same_as_memkv() {
  "$memkv" get "$1" -o "$scratch/got" || fail "memkv get $1 failed"
  cmp -s "$scratch/got" "$2" || fail "MemKV's '$1' differs from $2"
}

# --- 1. The entry loop in C and Python --------------------------------------
shim "$c_program" "$kv/c" "$scratch/real" || fail "the C entry loop failed"
same_as_memkv c/keep.bin "$scratch/real/keep.bin"
[ -f "$scratch/real/keep.bin" ] || fail "a path outside the prefix did not reach the filesystem"
log "C entry loop: ok"
shim /usr/bin/python3 "$py_program" "$kv/py" "$scratch/real" || fail "the Python entry loop failed"
same_as_memkv py/py-keep.bin "$scratch/real/py-keep.bin"
log "Python entry loop: ok"

# --- 2. Tools ---------------------------------------------------------------
head -c $((5 << 20)) /dev/urandom >"$scratch/src.bin"
shim cp "$scratch/src.bin" "$kv/tools/a.bin" || fail "cp into the prefix failed"
same_as_memkv tools/a.bin "$scratch/src.bin"
shim cp "$kv/tools/a.bin" "$kv/tools/b.bin" || fail "cp within the prefix failed"
same_as_memkv tools/b.bin "$scratch/src.bin"
shim cp "$kv/tools/a.bin" "$scratch/copied.bin" || fail "cp out of the prefix failed"
cmp -s "$scratch/copied.bin" "$scratch/src.bin" || fail "cp out of the prefix copied other bytes"
shim cat "$kv/tools/a.bin" >"$scratch/cat.out" || fail "cat failed"
cmp -s "$scratch/cat.out" "$scratch/src.bin" || fail "cat printed other bytes"
shim dd if="$scratch/src.bin" of="$kv/tools/dd.bin" bs=1M status=none || fail "dd into the prefix failed"
same_as_memkv tools/dd.bin "$scratch/src.bin"
shim dd if="$kv/tools/dd.bin" of="$scratch/dd.out" bs=64K status=none || fail "dd out of the prefix failed"
cmp -s "$scratch/dd.out" "$scratch/src.bin" || fail "dd read other bytes"
want=$(sha256sum <"$scratch/src.bin" | cut -d' ' -f1)
got=$(shim sha256sum "$kv/tools/b.bin" | cut -d' ' -f1) || fail "sha256sum failed"
[ "$got" = "$want" ] || fail "sha256sum of the value is $got, not $want"
# stat asks the server for the size alone: no value bytes move.
admin=$(sed -n 's|.*admin endpoint on \(http://[0-9.:]*\).*|\1|p' "$scratch/server.err" | head -n 1)
[ -n "$admin" ] || fail "no admin endpoint in the server's log"
get_bytes() { curl -fs "$admin/metrics" | awk '/^memkv_value_bytes_total\{op="get"/ { n += $2 } END { print n + 0 }'; }
before=$(get_bytes)
size=$(shim stat -c %s "$kv/tools/a.bin") || fail "stat failed"
[ "$size" = $((5 << 20)) ] || fail "stat gives size $size, not $((5 << 20))"
after=$(get_bytes)
[ "$after" = "$before" ] || fail "stat moved value bytes: memkv_value_bytes_total{op=get} $before -> $after"
listing=$(shim ls "$kv/tools" | tr '\n' ' ')
[ "$listing" = "a.bin b.bin dd.bin " ] || fail "ls lists '$listing'"
size=$(shim ls -l "$kv/tools/a.bin" | awk '{print $5}')
[ "$size" = $((5 << 20)) ] || fail "ls -l shows size $size"
top=$(shim ls "$kv" | tr '\n' ' ')
[ "$top" = "c py tools " ] || fail "ls of the prefix lists '$top'"
shim rm "$kv/tools/b.bin" || fail "rm failed"
# tools/ was implied by its keys; deleting one made it explicit (its marker).
"$memkv" ls tools/ >"$scratch/ls.out" || fail "memkv ls failed"
[ "$(tr '\n' ' ' <"$scratch/ls.out")" = "tools/ tools/a.bin tools/dd.bin " ] ||
  fail "after rm MemKV holds: $(cat "$scratch/ls.out")"
if shim cat "$kv/tools/b.bin" 2>"$scratch/cat.err"; then fail "cat of a removed value succeeded"; fi
grep -q 'No such file or directory' "$scratch/cat.err" || fail "cat of a miss said: $(cat "$scratch/cat.err")"
log "cp, cat, dd, sha256sum, ls, rm: ok"
# A value over the 256 MiB the shim once capped values at: the server's
# memory.max_value_size (16 GiB by default) is the only limit.
head -c $((300 << 20)) /dev/urandom >"$scratch/big.bin"
shim cp "$scratch/big.bin" "$kv/big/big.bin" || fail "cp of a 300 MiB file into the prefix failed"
same_as_memkv big/big.bin "$scratch/big.bin"
want=$(sha256sum <"$scratch/big.bin" | cut -d' ' -f1)
got=$(shim sha256sum "$kv/big/big.bin" | cut -d' ' -f1) || fail "sha256sum of the 300 MiB value failed"
[ "$got" = "$want" ] || fail "sha256sum of the 300 MiB value is $got, not $want"
shim rm "$kv/big/big.bin" || fail "rm of the 300 MiB value failed"
rm -f "$scratch/big.bin" "$scratch/got"
log "a 300 MiB value: ok"

# --- 3. Shell redirections --------------------------------------------------
# same_as_local NAME 'COMMANDS': COMMANDS run by bash with $D a local
# directory, then under the shim with $D the prefix's sh/; MemKV's sh/NAME
# must then be the local $D/NAME. $D/existing holds "old" in both beforehand.
mkdir -p "$scratch/sh"
printf 'old\n' >"$scratch/sh/existing"
same_as_local() {
  local name=$1 commands=$2
  printf 'old\n' >"$scratch/sh/existing"
  "$memkv" put sh/existing "$scratch/sh/existing" || fail "memkv put sh/existing failed"
  D=$scratch/sh bash -c "$commands" || fail "'$commands' failed in a local directory"
  D=$kv/sh shim bash -c "$commands" 2>"$scratch/sh.err" || fail "'$commands' failed under the shim: $(cat "$scratch/sh.err")"
  [ ! -s "$scratch/sh.err" ] || fail "'$commands' under the shim said: $(cat "$scratch/sh.err")"
  same_as_memkv "sh/$name" "$scratch/sh/$name"
}
same_as_local cat.out 'cat '"$scratch/src.bin"' >"$D/cat.out"'
same_as_local echo.out '/bin/echo x >"$D/echo.out"'
same_as_local empty.out 'true >"$D/empty.out"'
same_as_local append.out 'printf "1\n" | cat >>"$D/append.out"; printf "2\n" | cat >>"$D/append.out"'
same_as_local existing 'echo y >>"$D/existing"'
same_as_local existing 'printf "z\n" >>"$D/existing"'
same_as_local existing '/bin/echo w >>"$D/existing"; cat '"$scratch/src.bin"' >>"$D/existing"'
same_as_local fd3.out 'exec 3>"$D/fd3.out"; echo a >&3; echo b >&3; exec 3>&-'
same_as_local fd3x.out 'exec 3>"$D/fd3x.out"; /bin/echo a >&3; echo b >&3; /bin/echo c >&3; exec 3>&-'
same_as_local sub.out '( echo s; /bin/echo t ) >"$D/sub.out"'
same_as_local read.out 'cat <"$D/existing" >"$D/read.out"'
log "redirections (exec'd commands, builtins, >>, exec 3>): ok"

# --- 4. Trees ---------------------------------------------------------------
# same_tree NAME 'COMMANDS': COMMANDS run by bash with $D the fresh local
# directory $scratch/tree/NAME, then under the shim with $D the prefix's
# tree/NAME (made by mkdir, as the local one is); $S is a local source tree.
# MemKV must then hold under tree/NAME/ one key per local directory (its
# marker, "rel/") and per file ("rel", the file's bytes), and nothing else;
# find under the shim must list what it lists locally.
src=$scratch/srctree
mkdir -p "$src/sub/deeper" "$src/empty"
printf 'line one\nline two\n' >"$src/a.txt"
head -c 100000 /dev/urandom >"$src/sub/b.bin"
printf 'deep\n' >"$src/sub/deeper/c.txt"
: >"$src/sub/zero"
tar cf "$scratch/src.tar" -C "$src" .
same_tree() {
  local name=$1 commands=$2 local_dir=$scratch/tree/$1
  mkdir -p "$local_dir"
  S=$src D=$local_dir bash -c "$commands" || fail "'$commands' failed in a local directory"
  shim mkdir -p "$kv/tree/$name" || fail "mkdir -p of the prefix's tree/$name failed"
  S=$src D=$kv/tree/$name shim bash -c "$commands" 2>"$scratch/tree.err" ||
    fail "'$commands' failed under the shim: $(cat "$scratch/tree.err")"
  [ ! -s "$scratch/tree.err" ] || fail "'$commands' under the shim said: $(cat "$scratch/tree.err")"
  (cd "$local_dir" && find . -mindepth 1 \( -type d -printf "tree/$name/%P/\n" \) -o -printf "tree/$name/%P\n";
    echo "tree/$name/") | LC_ALL=C sort >"$scratch/tree.want"
  "$memkv" ls "tree/$name/" | LC_ALL=C sort >"$scratch/tree.got" || fail "memkv ls tree/$name/ failed"
  cmp -s "$scratch/tree.want" "$scratch/tree.got" ||
    fail "after '$commands' MemKV holds $(tr '\n' ' ' <"$scratch/tree.got"), not $(tr '\n' ' ' <"$scratch/tree.want")"
  while read -r file; do
    same_as_memkv "tree/$name/$file" "$local_dir/$file"
  done < <(cd "$local_dir" && find . -mindepth 1 -type f -printf '%P\n')
  (cd "$local_dir" && find . -mindepth 1 -printf '%P %y\n') | LC_ALL=C sort >"$scratch/find.want"
  shim find "$kv/tree/$name" -mindepth 1 -printf '%P %y\n' | LC_ALL=C sort >"$scratch/find.got" ||
    fail "find under the shim failed"
  cmp -s "$scratch/find.want" "$scratch/find.got" ||
    fail "after '$commands' find under the shim lists $(tr '\n' ' ' <"$scratch/find.got")"
}
same_tree mkdir_p 'mkdir -p "$D/a/b/c" && mkdir -p "$D/a/b" && mkdir -p "$D/a"'
# An empty directory made by one process is there for the next.
same_tree mkdir_then_write 'mkdir "$D/d" "$D/e" && echo hi >"$D/d/f" && cat "$S/a.txt" >"$D/d/g" && ls "$D/e"'
same_tree tar_x 'mkdir "$D/d" && tar x -C "$D/d" -f '"$scratch/src.tar"
same_tree cp_a 'cp -a "$S" "$D/copy" && cp -a "$S/." "$D/"'
same_tree mv_dir 'cp -a "$S" "$D/dir1" && mkdir "$D/empty" && mv "$D/dir1" "$D/dir2" && mv "$D/dir2/sub" "$D/empty"'
same_tree rm_r 'cp -a "$S" "$D/dir" && mkdir "$D/keep" && cp "$S/a.txt" "$D/keep/" && rm -r "$D/dir"'
same_tree sed_i 'cp "$S/a.txt" "$D/s.txt" && sed -i "s/line/LINE/" "$D/s.txt"'
same_tree touch 'touch "$D/x" && cp "$S/a.txt" "$D/y" && touch "$D/y" "$D/x"'
same_tree find_delete 'cp -a "$S" "$D/t" && cp -a "$S" "$D/u" && find "$D/t" -delete && find "$D/u/sub" -delete'
same_tree rsync_a 'rsync -a "$S/" "$D/dst/" && rsync -a "$S/" "$D/dst/"'
log "trees (mkdir -p, tar x, cp -a, mv, rm -r, sed -i, touch, find -delete, rsync -a): ok"

# --- 4b. Directories implied by keys -----------------------------------------
# A directory that exists only because keys lie below it (put by memkv put,
# or by open(O_CREAT) below a directory never made) stays until rmdir, as a
# local one does: rm -r, rm -rf and find -delete of it exit 0 and leave its
# parent; unlink or mv of its last file leaves it, empty, for rmdir.
# keys_are PREFIX 'KEYS ' WHAT: memkv ls PREFIX lists exactly KEYS.
keys_are() {
  "$memkv" ls "$1" >"$scratch/ls.out" || fail "$3: memkv ls $1 failed"
  [ "$(LC_ALL=C sort "$scratch/ls.out" | tr '\n' ' ')" = "$2" ] ||
    fail "after $3 MemKV holds under $1: '$(tr '\n' ' ' <"$scratch/ls.out")', not '$2'"
}
printf 'x\n' >"$scratch/x"
put_keys() { for k in "$@"; do "$memkv" put "$k" "$scratch/x" >/dev/null || fail "memkv put $k failed"; done; }
put_keys im/rm/a im/rm/sub/b im/rm/sub/deeper/c
shim rm -r "$kv/im/rm" || fail "rm -r of a directory implied by keys failed"
keys_are im/ "im/ " "rm -r of im/rm"
put_keys im/rf/a im/rf/sub/b
shim rm -rf "$kv/im/rf" || fail "rm -rf of a directory implied by keys failed"
keys_are im/ "im/ " "rm -rf of im/rf"
put_keys im/fd/a im/fd/sub/b im/fd/sub/deeper/c
shim find "$kv/im/fd" -delete || fail "find -delete of a directory implied by keys failed"
keys_are im/ "im/ " "find -delete of im/fd"
shim bash -c 'echo a >"$1/a" && /bin/echo b >"$1/sub/b"' _ "$kv/im/oc" || fail "writes below no directory failed"
keys_are im/oc/ "im/oc/a im/oc/sub/b " "open(O_CREAT) below no directory"
shim rm -r "$kv/im/oc" || fail "rm -r of a directory made by open(O_CREAT) failed"
keys_are im/ "im/ " "rm -r of im/oc"
put_keys im/un/f
shim rm "$kv/im/un/f" || fail "rm of the last file of an implied directory failed"
keys_are im/un/ "im/un/ " "rm of im/un/f"
[ "$(shim ls -A "$kv/im/un")" = "" ] || fail "ls of the emptied directory lists $(shim ls -A "$kv/im/un")"
shim rmdir "$kv/im/un" || fail "rmdir of the emptied directory failed"
keys_are im/un/ "" "rmdir of im/un"
# A miss makes no directory.
shim rm -f "$kv/im/none/f" || fail "rm -f of a miss failed"
if shim rm "$kv/im/none/f" 2>/dev/null; then fail "rm of a miss succeeded"; fi
keys_are im/none/ "" "rm of a miss"
put_keys im/mv/src/f im/rd/p/q/f
shim mv "$kv/im/mv/src/f" "$kv/im/mv/g" || fail "mv of the last file out of an implied directory failed"
keys_are im/mv/ "im/mv/g im/mv/src/ " "mv of im/mv/src/f"
shim rmdir "$kv/im/mv/src" || fail "rmdir of the directory mv emptied failed"
shim mv "$kv/im/rd/p/q" "$kv/im/rd/q2" || fail "mv of the only directory out of an implied one failed"
keys_are im/rd/ "im/rd/p/ im/rd/q2/f " "mv of im/rd/p/q"
shim rm -r "$kv/im" || fail "rm -r of im failed"
keys_are im "" "rm -r of im"
# A directory with its marker (made by another process) gets no second one:
# rm finds it, and MLPerf's pattern (makedirs of the existing directory, then
# unlink of every file in it) learns it from mkdir's check.
shim mkdir "$kv/im2" || fail "mkdir im2 failed"
put_keys im2/f1 im2/f2 im2/f3
MEMKV_PRELOAD_STATS=$scratch/unlink.stats shim rm "$kv/im2/f1" || fail "rm im2/f1 failed"
MEMKV_PRELOAD_STATS=$scratch/unlink.stats shim /usr/bin/python3 -c '
import os, sys
os.makedirs(sys.argv[1], exist_ok=True)
for name in ("f2", "f3"):
    os.unlink(os.path.join(sys.argv[1], name))' "$kv/im2" || fail "makedirs and unlink under the shim failed"
[ "$(grep -c "stats: puts 0 " "$scratch/unlink.stats")" = 2 ] ||
  fail "unlink in a directory with its marker put: $(cat "$scratch/unlink.stats")"
keys_are im2/ "im2/ " "unlink of every file in im2"
shim rmdir "$kv/im2" || fail "rmdir im2 failed"
log "directories implied by keys (rm -r, rm -rf, find -delete, rm and mv of the last file): ok"

# --- 5. Failed stores --------------------------------------------------------
# A second server, whose value limit is 1 MiB (its own stdout/stderr and
# data directory; killed by the EXIT trap below as the first is by cleanup).
small_pid=""
trap '[ -n "$small_pid" ] && kill -KILL "$small_pid" 2>/dev/null; cleanup' EXIT
start_server "$memkv" small "memory:\n  max_size: 64 MiB\n  max_value_size: 1 MiB\nstorage:\n  mode: memory\n"
small_pid=$started_pid
small=$started_address
on_small() { MEMKV_SERVERS=$small LD_PRELOAD=$lib "$@"; }
# 2 MiB is over the limit: the client refuses the put (TooLarge), EFBIG.
on_small "$failed_puts" "$kv/fail" $((2 << 20)) EFBIG 2>"$scratch/fail.err" ||
  fail "stores over the server's value limit: $(cat "$scratch/fail.err")"
grep -q "put 'fail/close.bin' failed" "$scratch/fail.err" || fail "no stderr line for the failed put: $(cat "$scratch/fail.err")"
on_small /usr/bin/python3 -c '
import errno, sys
f = open(sys.argv[1], "wb")
f.write(b"v" * (2 << 20))
try:
    f.close()
except OSError as e:
    sys.exit(0 if e.errno == errno.EFBIG else f"close raised errno {e.errno}, not EFBIG")
sys.exit("close of a file over the value limit succeeded")' "$kv/fail/py.bin" 2>/dev/null || fail "Python's close over the value limit"
# Below the limit all is well, and the failed files left no key (fail/, a
# directory once huge.bin was there, stays after its unlink: its marker).
head -c $((1 << 19)) /dev/urandom >"$scratch/half.bin"
on_small cp "$scratch/half.bin" "$kv/fail/ok.bin" || fail "cp of 512 KiB to the 1 MiB-limit server failed"
MEMKV_SERVERS=$small "$memkv" ls fail/ >"$scratch/ls.out" || fail "memkv ls of the 1 MiB-limit server failed"
[ "$(tr '\n' ' ' <"$scratch/ls.out")" = "fail/ fail/ok.bin " ] || fail "after the failed puts the server holds: $(cat "$scratch/ls.out")"
log "stores over memory.max_value_size: close, fclose, fsync, fdatasync and Python's close give EFBIG: ok"

# The server stopped: nothing can be stored.
kill -KILL "$small_pid"
wait "$small_pid" 2>/dev/null || true
small_pid=""
on_small "$failed_puts" "$kv/dead" 4096 ENOTCONN 2>"$scratch/fail.err" ||
  fail "stores to a stopped server: $(cat "$scratch/fail.err")"
if on_small bash -c 'cat "$1" >"$2"' _ "$scratch/half.bin" "$kv/dead/cat.out" 2>"$scratch/fail.err"; then
  fail "cat f > x with the server stopped exited 0"
fi
grep -q 'write error' "$scratch/fail.err" || fail "cat did not report the failed store: $(cat "$scratch/fail.err")"
# No call returns these errors (bash ignores dup2's; the file is open at
# exit): the exit status says it.
status=0
on_small bash -c 'echo x >"$1"; exit 0' _ "$kv/dead/builtin.out" 2>"$scratch/fail.err" || status=$?
[ "$status" = 74 ] || fail "bash's 'echo x > f' with the server stopped exited $status, not 74: $(cat "$scratch/fail.err")"
grep -q "exit status 74 instead of 0" "$scratch/fail.err" || fail "no stderr line for the exit status: $(cat "$scratch/fail.err")"
status=0
on_small /usr/bin/python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
os.write(fd, b"left open")
sys.exit(0)' "$kv/dead/open-at-exit.bin" 2>"$scratch/fail.err" || status=$?
[ "$status" = 74 ] || fail "a file open at exit, the server stopped: exit status $status, not 74"
grep -q "put of 'dead/open-at-exit.bin' at exit failed" "$scratch/fail.err" || fail "no stderr line: $(cat "$scratch/fail.err")"
# A program's own failure status is kept.
status=0
on_small /usr/bin/python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
sys.exit(3)' "$kv/dead/exit3.bin" 2>/dev/null || status=$?
[ "$status" = 3 ] || fail "a program exiting with 3 and a failed put at exit exited $status"
# A close error the program ignores (Python closing a file object it never
# closed) counts only with MEMKV_PRELOAD_EXIT_ON_LOSS=any.
ignored='f = open(__import__("sys").argv[1], "wb"); f.write(b"x")'
on_small /usr/bin/python3 -c "$ignored" "$kv/dead/ignored.bin" 2>/dev/null || fail "an ignored close error changed the exit status"
status=0
MEMKV_PRELOAD_EXIT_ON_LOSS=any on_small /usr/bin/python3 -c "$ignored" "$kv/dead/ignored.bin" 2>/dev/null || status=$?
[ "$status" = 74 ] || fail "MEMKV_PRELOAD_EXIT_ON_LOSS=any: an ignored close error gave exit status $status, not 74"
log "stores to a stopped server: ENOTCONN from every call, cat fails, exit status 74 where no call could report: ok"
log "PASS"
