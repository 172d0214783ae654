#!/bin/bash
# first_build.sh BIN_DIR PLUGIN.wasm [ROUNDS]: CPU time (perf stat's
# task-clock, the median over ROUNDS, default 7) of the first `proem build`
# after `plugin add`, a warm build of the same turn, and a build of a new
# turn (the hooks run, every cache warm), each round in a fresh cache
# folder and agent (docs/PERFORMANCE.md, "Interpreted plugins"). Needs
# `perf` (Debian: linux-perf).
set -euo pipefail
bin="$1"
wasm="$2"
rounds="${3:-7}"
command -v perf > /dev/null || { echo "first_build.sh: perf is missing (Debian: apt-get install linux-perf)"; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cpu_ms() { perf stat -x, -e task-clock "$@" 2>&1 > /dev/null | awk -F, '/task-clock/ { print $1 }'; }
for round in $(seq "$rounds"); do
    export PROEM_CACHE_DIR="$work/$round/cache"
    agent="$work/$round/agent"
    "$bin/proem" plugin add "$wasm" --into "$agent" > /dev/null 2>&1
    first="$(cpu_ms "$bin/proem" build "$agent" --channel telegram --now 2026-11-23T08:15:00+01:00)"
    warm="$(cpu_ms "$bin/proem" build "$agent" --channel telegram --now 2026-11-23T08:15:00+01:00)"
    new_turn="$(cpu_ms "$bin/proem" build "$agent" --channel "c$round" --now 2026-11-24T08:15:00+01:00)"
    echo "$first $warm $new_turn"
done | python3 -c '
import statistics, sys
rows = [[float(x) for x in line.split()] for line in sys.stdin]
first, warm, new_turn = (statistics.median(column) for column in zip(*rows))
print(f"first build after plugin add  {first:6.1f} ms CPU")
print(f"warm build, same turn         {warm:6.1f} ms CPU")
print(f"new turn, caches warm         {new_turn:6.1f} ms CPU")
print(f"first / warm                  {first / warm:6.1f}x   (medians of {len(rows)} rounds)")'
