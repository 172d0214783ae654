#!/usr/bin/env bash
# Tests the two client packages as a user gets them, against a live
# `proem serve` (target/release/proem-full, which the README's test command
# builds) and tiny hostile servers, all on loopback:
#   python: host/clients/python installed with pip into a fresh virtual
#           environment, then its tests/ run with pytest;
#   node:   host/clients/typescript packed with `npm pack`, the tarball
#           installed into a fresh folder, then its test/ run there with
#           `node --test` (plus tsc and amaro for the types).
# Everything it makes is under target/clients. A missing python3, node or
# npm fails the run; nothing is skipped. .ci/run calls it after cargo test.
# The last line is `clients: N passed, N failed`.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="$root/target/release/proem-full"
work="$root/target/clients"
fail() {
    echo "clients: $*" >&2
    exit 1
}

[ -x "$bin" ] || fail "$bin is missing: run \`cargo test --release --workspace --locked\` (or \`cargo build --release -p proem-full\`) first"
command -v python3 > /dev/null || fail "python3 is missing: the Python client's tests need CPython 3.9+ with venv"
command -v node > /dev/null || fail "node is missing: the JavaScript client's tests need Node.js 20+"
command -v npm > /dev/null || fail "npm is missing: the JavaScript client's tests pack and install with it"
node_major="$(node -p 'process.versions.node.split(".")[0]')"
[ "$node_major" -ge 20 ] || fail "node $(node --version) is too old: the JavaScript client needs Node.js 20+"

rm -rf "$work/py" "$work/node"
mkdir -p "$work/py/tmp" "$work/node/app/test" "$work/node/tmp" "$work/ts-tools"
export PROEM_BIN="$bin" PROEM_REPO="$root"

# The two packages are tested at the same time (each mostly waits: on pip,
# npm, its servers), each into its own log, printed when both are done.
python_tests() {
    local started=$SECONDS py="$work/py/venv/bin/python"
    # pip builds in the folder it installs from, so it gets a copy: the
    # repository stays as it was.
    cp -r "$root/host/clients/python" "$work/py/src"
    rm -rf "$work/py/src/build" "$work/py/src"/src/*.egg-info
    python3 -m venv "$work/py/venv" || fail "python3 -m venv failed (Debian: apt-get install python3-venv)"
    # The fresh environment has no pytest: one pip run installs both.
    "$py" -m pip install --quiet --disable-pip-version-check "$work/py/src" pytest \
        || fail "pip could not install host/clients/python and pytest (it needs PyPI for pytest and the setuptools build backend)"
    local status=0
    PYTHONDONTWRITEBYTECODE=1 "$py" -m pytest -q -p no:cacheprovider --basetemp "$work/py/tmp" \
        "$root/host/clients/python/tests" || status=$?
    echo "clients: python took $((SECONDS - started)) s"
    return $status
}

node_tests() {
    local started=$SECONDS tarball
    tarball="$(cd "$work/node" && npm pack --silent "$root/host/clients/typescript")"
    cd "$work/node/app"
    echo '{"private": true, "type": "module"}' > package.json
    npm install --silent --no-audit --no-fund "../$tarball" || fail "npm could not install $tarball"
    cp "$root"/host/clients/typescript/test/*.js test/
    # The type checker and Node 22's type stripper, pinned; kept between runs.
    (cd "$work/ts-tools" && { [ -f package.json ] || echo '{"private": true}' > package.json; } \
        && npm install --silent --no-audit --no-fund typescript@7.0.2 amaro@0.1.9 @types/node@20) \
        || fail "npm could not install typescript, amaro and @types/node for the type tests"
    local status=0
    PROEM_TS_TOOLS="$work/ts-tools" PROEM_TMP="$work/node/tmp" \
        node --test --test-reporter=spec test/*.test.js || status=$?
    echo "clients: node took $((SECONDS - started)) s"
    return $status
}

python_tests > "$work/py/log" 2>&1 &
py_pid=$!
node_tests > "$work/node/log" 2>&1 &
node_pid=$!
py_status=0
node_status=0
wait "$py_pid" || py_status=$?
wait "$node_pid" || node_status=$?
cat "$work/py/log" "$work/node/log"

# ---------------------------------------------------------------- summary
count() { grep -Eo "$2" "$1" | tail -1 | grep -Eo '[0-9]+' || echo 0; }
passed=$(($(count "$work/py/log" '[0-9]+ passed') + $(count "$work/node/log" 'ℹ pass [0-9]+')))
failed=$(($(count "$work/py/log" '[0-9]+ (failed|error)') + $(count "$work/node/log" 'ℹ fail [0-9]+')))
if [ "$py_status" -ne 0 ] || [ "$node_status" -ne 0 ]; then
    [ "$failed" -gt 0 ] || failed=1
fi
echo "clients: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
