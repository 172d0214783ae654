#!/bin/bash
# usage: benches/order/floor.sh [AGENT_DIR]   (default: target/round3/agent)
# The physical floor of a warm `proem build` (docs/PERFORMANCE.md, round
# three, tenth session): a static C program (floor.c) that opens, stats,
# reads and closes the very files a warm build reads (taken from strace of
# one) and writes as many bytes as the prompt, timed beside `/bin/true` and
# `proem` itself. Needs strace, gcc, perf.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
AGENT=${1:-target/round3/agent}
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
export PROEM_CACHE_DIR=$WORK/cache; mkdir -m 700 "$PROEM_CACHE_DIR"
BUILD=(target/release/proem build "$AGENT" --now 2026-11-21T09:30:00Z)
"${BUILD[@]}" > /dev/null 2>&1; "${BUILD[@]}" > /dev/null 2>&1   # warm: the plugins' answers kept
BYTES=$("${BUILD[@]}" 2>/dev/null | wc -c)
strace -y -e trace=openat,openat2 -o "$WORK/trace" "${BUILD[@]}" > /dev/null 2>&1
# Each file opened for reading (not O_PATH, not a directory), by the
# absolute path strace -y prints for the descriptor it got.
python3 - "$WORK/trace" > "$WORK/files" <<'PY'
import re, sys
for line in open(sys.argv[1]):
    m = re.search(r'\) = \d+<([^>]*)>$', line.rstrip())
    if m and 'O_PATH' not in line and 'O_DIRECTORY' not in line and '/proc/' not in line:
        print(m.group(1))
PY
gcc -O2 -static-pie -o "$WORK/floor" benches/order/floor.c
echo "$(wc -l < "$WORK/files") files, $BYTES bytes written"
for run in "/bin/true" "$WORK/floor $WORK/files $BYTES" "${BUILD[*]}"; do
    # shellcheck disable=SC2086
    perf stat -r 200 -e task-clock,page-faults $run 2>&1 >/dev/null | grep -E 'task-clock|page-faults|elapsed' \
        | awk -v run="${run%% *}" '{v = v " " $1} END {print run ": CPU ms, faults, wall s:" v}'
done
