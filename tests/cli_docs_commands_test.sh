#!/usr/bin/env bash
# scripts/check-docs.sh --commands: a `memkv COMMAND` in a docs example that
# the dispatcher does not know (src/cli/commands.h), a signal sent to memkv
# by process name and an events socket bound on every interface fail the
# docs check, naming the file, the line and what is allowed; the examples
# of docs/*.md and README.md pass it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
scratch=$(mktemp -d "${TMPDIR:-/tmp}/cli-docs-commands-test.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
fail() {
  echo "cli_docs_commands_test: FAIL: $*" >&2
  exit 1
}
rel=$scratch

cat >"$scratch/bad.md" <<'MD'
List the keys with `memkv list`.

```
$ MEMKV_SERVERS=10.0.0.7:9900 memkv admin restart
memkv put: TooLarge: an error message, not a command
```
MD
if out=$(bash "$root/scripts/check-docs.sh" --commands "$rel/bad.md" 2>&1); then
  fail "a doc with 'memkv list' passed: $out"
fi
grep -q "$rel/bad.md:1: 'memkv list' is not a memkv command; the commands are: admin, del, doctor, drive, exists, get, ls, match-prefix, put, setup, start, stats" <<<"$out" ||
  fail "no line naming 'memkv list': $out"
grep -q "$rel/bad.md:4: 'memkv admin restart' is not an action of memkv admin; allowed: drain, reload, status, undrain" <<<"$out" ||
  fail "no line naming 'memkv admin restart': $out"
[ "$(grep -c . <<<"$out")" -eq 2 ] || fail "expected two problems (the error message is not a command): $out"

# A signal by process name reaches every server on the host; an events
# socket bound on every interface takes no credential.
cat >"$scratch/wide.md" <<'MD'
Reload the keys with `kill -HUP $(pidof memkv)`.

```yaml
events:
  publish: tcp://*:5557
  replay: "tcp://0.0.0.0:5558"
```

```
$ sudo pkill -HUP -x memkv
```
MD
if out=$(bash "$root/scripts/check-docs.sh" --commands "$rel/wide.md" 2>&1); then
  fail "a doc signalling every memkv and binding events everywhere passed: $out"
fi
grep -q "$rel/wide.md:1: signals memkv by process name, which reaches every memkv server on the host" <<<"$out" ||
  fail "no line naming the pidof signal: $out"
grep -q "$rel/wide.md:5: 'publish: tcp://\*:5557' binds an events socket on every interface" <<<"$out" ||
  fail "no line naming publish on tcp://*: $out"
grep -q "$rel/wide.md:6: 'replay: tcp://0.0.0.0:5558' binds an events socket on every interface" <<<"$out" ||
  fail "no line naming replay on 0.0.0.0: $out"
grep -q "$rel/wide.md:10: signals memkv by process name" <<<"$out" || fail "no line naming pkill: $out"
[ "$(grep -c . <<<"$out")" -eq 4 ] || fail "expected four problems: $out"

cat >"$scratch/good.md" <<'MD'
List the keys with `memkv ls`, reload with `memkv admin reload`.

```
$ MEMKV_SERVERS=10.0.0.7:9900 memkv ls | head && sudo ./build/memkv drive verify --config c.yaml
```
MD
out=$(bash "$root/scripts/check-docs.sh" --commands "$rel/good.md" 2>&1) || fail "a doc of real commands failed: $out"

out=$(bash "$root/scripts/check-docs.sh" --commands 2>&1) || fail "the docs name commands that do not exist: $out"
echo "cli_docs_commands_test: ok"
