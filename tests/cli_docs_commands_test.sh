#!/usr/bin/env bash
# scripts/check-docs.sh --commands: a `memkv COMMAND` in a docs example that
# the dispatcher does not know (src/cli/commands.h) fails the docs check,
# naming the file, the line and the commands there are; the examples of
# docs/*.md and README.md pass it.
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

cat >"$scratch/good.md" <<'MD'
List the keys with `memkv ls`, reload with `memkv admin reload`.

```
$ MEMKV_SERVERS=10.0.0.7:9900 memkv ls | head && sudo ./build/memkv drive verify --config c.yaml
```
MD
out=$(bash "$root/scripts/check-docs.sh" --commands "$rel/good.md" 2>&1) || fail "a doc of real commands failed: $out"

out=$(bash "$root/scripts/check-docs.sh" --commands 2>&1) || fail "the docs name commands that do not exist: $out"
echo "cli_docs_commands_test: ok"
