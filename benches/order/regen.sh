#!/bin/bash
# usage: benches/order/regen.sh
# Writes host/cli/proem.order: the functions a warm `proem build` runs (the
# round-three agent of docs/PERFORMANCE.md, its plugins answered from the
# answers cache), in the order callgrind first meets them, plus those of
# `proem --version` and `proem --help`. host/cli/build.rs links `proem` with
# them first (lld's --symbol-ordering-file), so the pages of code a build
# touches are few and together: see docs/PERFORMANCE.md ("Round three",
# ninth and tenth sessions). `proem` is linked statically where glibc's
# archives are installed, so the C library's functions are listed and laid
# out too. Run it again after renaming what a build runs (an edit keeps the
# names: proem-core and proem-cli are one codegen unit each); a stale file
# only orders less, and host/cli/tests/link.rs fails when over 3% of its
# Rust names are gone. Needs valgrind (apt-get install valgrind).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
command -v valgrind >/dev/null || { echo "valgrind is not installed: apt-get install -y valgrind" >&2; exit 1; }
cargo build --release --locked -p proem-full -p proem-cli --bins --example round3
[ -d target/round3/agent ] || target/release/examples/round3 make target/round3/agent
CACHE=$(mktemp -d); chmod 700 "$CACHE"; trap 'rm -rf "$CACHE" "$CACHE.cg"*' EXIT
export PROEM_CACHE_DIR=$CACHE
BUILD=(build target/round3/agent --now 2026-11-21T09:30:00Z)
target/release/proem "${BUILD[@]}" > /dev/null 2>&1   # compiles the plugins, keeps their answers
target/release/proem "${BUILD[@]}" > /dev/null 2>&1
n=0
for run in "${BUILD[*]}" "--version" "--help"; do
    n=$((n + 1))
    # shellcheck disable=SC2086
    valgrind --tool=callgrind --demangle=no --callgrind-out-file="$CACHE.cg.$n" target/release/proem $run > /dev/null 2>&1
done
# Each function's name the first time a profile names it (`fn=(id) name`),
# without callgrind's recursion marks ('2); not its addresses (0x…, code
# without a symbol) nor the C library's versioned names (lld skips any name
# proem does not define).
cat "$CACHE".cg.* | sed -n 's/^c\{0,1\}fn=([0-9]*) //p' | sed "s/'[0-9]*\$//" \
    | grep -v -e '^0x' -e '@' -e '^(below main)$' | awk '!seen[$0]++' > host/cli/proem.order
echo "host/cli/proem.order: $(wc -l < host/cli/proem.order) functions"
