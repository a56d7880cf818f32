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

# The check of FILE (under $scratch) must fail with exactly the problem
# lines given, each a fixed string its output must contain.
expect_problems() {
  local file=$1 out
  shift
  if out=$(bash "$root/scripts/check-docs.sh" --commands "$rel/$file" 2>&1); then
    fail "$file passed the check: $out"
  fi
  for line in "$@"; do
    grep -qF "$rel/$file:$line" <<<"$out" || fail "no line '$file:$line' in: $out"
  done
  [ "$(grep -c . <<<"$out")" -eq $# ] || fail "expected $# problems in $file: $out"
}

cat >"$scratch/bad.md" <<'MD'
List the keys with `memkv list`.

```
$ MEMKV_SERVERS=10.0.0.7:9900 memkv admin restart
memkv put: TooLarge: an error message, not a command
```
MD
# The error message is not a command.
expect_problems bad.md \
  "1: 'memkv list' is not a memkv command; the commands are: admin, del, doctor, drive, exists, get, ls, match-prefix, put, setup, start, stats" \
  "4: 'memkv admin restart' is not an action of memkv admin; allowed: drain, reload, status, undrain"

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
expect_problems wide.md \
  "1: signals memkv by process name, which reaches every memkv server on the host" \
  "5: 'publish: tcp://*:5557' binds an events socket on every interface" \
  "6: 'replay: tcp://0.0.0.0:5558' binds an events socket on every interface" \
  "10: signals memkv by process name"

cat >"$scratch/good.md" <<'MD'
List the keys with `memkv ls`, reload with `memkv admin reload`.

```
$ MEMKV_SERVERS=10.0.0.7:9900 memkv ls | head && sudo ./build/memkv drive verify --config c.yaml
```
MD
out=$(bash "$root/scripts/check-docs.sh" --commands "$rel/good.md" 2>&1) || fail "a doc of real commands failed: $out"

out=$(bash "$root/scripts/check-docs.sh" --commands 2>&1) || fail "the docs name commands that do not exist: $out"
echo "cli_docs_commands_test: ok"
