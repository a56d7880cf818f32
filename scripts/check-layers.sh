#!/usr/bin/env bash
# Keeps the layering of docs/organization.md true: a layer includes headers
# only from itself and the layers listed as its dependencies.
set -euo pipefail
cd "$(dirname "$0")/.."

declare -A allowed=(
  [base]="base"
  [metrics]="base metrics"
  [proto]="base proto"
  [config]="base config"
  [io]="base io"
  [http]="base io http"
  [storage]="base storage"
  [drive]="base storage drive"   # storage: the policy kit (src/storage/policy) only
  [tier]="base storage drive tier"
  [verbs]="base verbs"
  [events]="base events"
  [server]="base proto config io http storage drive tier verbs metrics events server"
  [client]="base proto config io verbs http metrics client"
  [capi]="base client capi"
  [kvstore]="kvstore"   # plugins over the public API only (include/memkv)
  [nixl]="nixl"
  [preload]="preload"
  [doctor]="base config verbs client doctor"
  [cli]="base proto config io http server storage drive tier verbs metrics events client doctor cli"
)

status=0
for layer in "${!allowed[@]}"; do
  [ -d "src/$layer" ] || continue
  while IFS=: read -r file line include; do
    dep="$(sed -E 's/.*#include "([a-z_]+)\/.*/\1/' <<<"$include")"
    [ "$dep" = "memkv" ] && continue   # public headers, include/memkv
    # The annotated Mutex (header only, no symbols, no dependencies): every
    # layer's locks are checked by the compiler, the plugins' too.
    [[ "$include" == *'"base/mutex.h"'* ]] && continue
    # The option samples every integration's test walks (a test helper, no code).
    [[ "$file" == *_test.cc && "$include" == *'"config/client_option_samples.h"'* ]] && continue
    # The drives use storage's policy kit and nothing else of the DRAM tier.
    if [ "$layer" = drive ] && [ "$dep" = storage ] && [[ "$include" != *'"storage/policy/'* ]]; then
      echo "layering: $file:$line: src/drive may include only storage/policy/ of storage" >&2
      status=1
      continue
    fi
    if ! grep -qw "$dep" <<<"${allowed[$layer]}"; then
      echo "layering: $file:$line: src/$layer must not include $dep/ (allowed: ${allowed[$layer]})" >&2
      status=1
    fi
  done < <(grep -Hn '^#include "[a-z_]*/' -r "src/$layer" --include='*.h' --include='*.cc' || true)
done
exit $status
