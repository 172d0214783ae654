#!/usr/bin/env bash
# docs/PERFORMANCE.md's fresh-install figures: each step a new user runs,
# timed, with the wheel and the tarball host/bindings/test.sh made:
#   python: a fresh venv, `pip install` of the wheel (nothing else: it has
#           no dependency), the first `import proem`, the first build of
#           examples/atlas in that process (opening the agent: its plugins
#           compiled or read from the cache), the same in a second process;
#   node:   `npm install` of the tarball into a fresh folder, the first
#           import, the first build, the same in a second process.
# Runs in a temporary folder it removes; PROEM_CACHE_DIR points into it (one
# folder per language), so each first process compiles the plugins as on a
# new machine.
#   host/bindings/bench/fresh_install.sh   (after host/bindings/test.sh)
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
wheel="$(ls "$root"/target/bindings/python/dist/*.whl)"
tarball="$(ls "$root"/target/bindings/node/*.tgz)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
step() { printf '%-58s %6s ms\n' "$1" "$2"; }

t=$(date +%s%N); python3 -m venv "$tmp/venv"; step "python: python3 -m venv" "$(ms "$t")"
t=$(date +%s%N); "$tmp/venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-index "$wheel"
step "python: pip install the wheel ($(du -m "$wheel" | cut -f1) MB)" "$(ms "$t")"
probe='import time, sys
t = time.perf_counter(); import proem; i = time.perf_counter() - t
t = time.perf_counter(); a = proem.Agent(sys.argv[1] + "/examples/atlas"); o = time.perf_counter() - t
t = time.perf_counter(); a.build(channel="telegram"); b = time.perf_counter() - t
print(f"{i*1000:.0f} {o*1000:.0f} {b*1000:.1f}")'
export PROEM_CACHE_DIR="$tmp/cache-python"
for run in first second; do
    read -r imp open build < <("$tmp/venv/bin/python" -c "$probe" "$root")
    step "python: $run process: import proem" "$imp"
    step "python: $run process: Agent(examples/atlas)" "$open"
    step "python: $run process: first build" "$build"
done

mkdir -p "$tmp/app" && echo '{"private": true, "type": "module"}' > "$tmp/app/package.json"
t=$(date +%s%N); (cd "$tmp/app" && npm install --silent --no-audit --no-fund --offline "$tarball" > /dev/null)
step "node: npm install the tarball ($(du -m "$tarball" | cut -f1) MB)" "$(ms "$t")"
cat > "$tmp/app/probe.mjs" <<'JS'
const t0 = performance.now();
const { default: proem } = await import("@proem/proem");
const t1 = performance.now();
const agent = new proem.Agent(`${process.argv[2]}/examples/atlas`);
const t2 = performance.now();
agent.buildSync({ channel: "telegram" });
const t3 = performance.now();
console.log(`${(t1 - t0).toFixed(0)} ${(t2 - t1).toFixed(0)} ${(t3 - t2).toFixed(1)}`);
JS
export PROEM_CACHE_DIR="$tmp/cache-node"
for run in first second; do
    read -r imp open build < <(cd "$tmp/app" && node probe.mjs "$root")
    step "node: $run process: import @proem/proem" "$imp"
    step "node: $run process: new Agent(examples/atlas)" "$open"
    step "node: $run process: first build" "$build"
done
