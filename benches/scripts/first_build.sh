#!/bin/bash
# first_build.sh BIN_DIR PLUGIN.wasm: CPU and wall time of `plugin add`,
# the first `proem build` after it, a warm build of the same turn, and two
# builds of new turns (the hooks run, every cache warm), in a fresh cache
# folder and agent (docs/PERFORMANCE.md, "Interpreted plugins").
set -euo pipefail
bin="$1"
wasm="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export PROEM_CACHE_DIR="$work/cache"
timed() {
    local label="$1"
    shift
    /usr/bin/time -f "%U %S %e" -o "$work/time" "$@" > /dev/null 2> "$work/err"
    awk -v n="$label" '{ printf "%-28s cpu %4.0f ms  wall %4.0f ms\n", n, ($1 + $2) * 1000, $3 * 1000 }' "$work/time"
}
timed "plugin add" "$bin/proem-full" plugin add "$wasm" --into "$work/agent"
timed "first build (proem)" "$bin/proem" build "$work/agent" --channel telegram --now 2026-11-23T08:15:00+01:00
timed "warm build (proem)" "$bin/proem" build "$work/agent" --channel telegram --now 2026-11-23T08:15:00+01:00
timed "new turn (proem-full)" "$bin/proem-full" build "$work/agent" --channel slack --now 2026-11-24T08:15:00+01:00
timed "new turn 2 (proem-full)" "$bin/proem-full" build "$work/agent" --channel discord --now 2026-11-25T08:15:00+01:00
