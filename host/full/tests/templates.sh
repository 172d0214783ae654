#!/usr/bin/env bash
# The plugin templates end to end, as an author runs them (.ci/run calls
# this after the test command, on the proem it built): for Python and
# JavaScript, `proem plugin new`, the pinned toolchain from its registry,
# the native tests, build, `plugin check`, `plugin run`, `plugin add` into
# an agent and `proem build` with the plugin's sections in the prompt. (The
# Rust template's same path is tests/plugins/plugins.rs
# a_scaffolded_plugin_builds_on_its_own_and_loads.)
#
# Toolchains: each template's pinned requirements are installed the way its
# own build does (a venv with pip; npm install), once, into
# $PROEM_TOOLCHAINS (default target/plugin-toolchains/) under a folder named
# by the hash of what is pinned, and the plugin folder links to it; pip's
# and npm's download caches live there too. So a second run installs
# nothing, and a new pin installs afresh. A registry that cannot be reached
# FAILS the run: nothing here is skipped. Each step's wall time is printed;
# the last line is `templates: N passed, N failed`.
set -euo pipefail
cd "$(dirname "$0")/../../.."
root="$(pwd)"
proem="$root/target/release/proem"
full="$root/target/release/proem-full"
[ -x "$proem" ] && [ -x "$full" ] || { echo "templates: build proem first (cargo build --release)"; exit 1; }
for tool in python3 node npm; do
    command -v "$tool" > /dev/null || { echo "templates: $tool is missing: the Python and JS templates need CPython 3.10+ with venv, Node.js 20+ and npm"; exit 1; }
done
toolchains="${PROEM_TOOLCHAINS:-$root/target/plugin-toolchains}"
mkdir -p "$toolchains"
export PIP_CACHE_DIR="$toolchains/pip" npm_config_cache="$toolchains/npm" PIP_DISABLE_PIP_VERSION_CHECK=1
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export PROEM_CACHE_DIR="$work/cache"
passed=0
failed=0

step() {
    local name="$1"
    shift
    local start end
    start=$(date +%s.%N)
    if "$@" > "$work/step.log" 2>&1; then
        end=$(date +%s.%N)
        printf 'templates: %-34s %6.1f s\n' "$name" "$(awk "BEGIN { print $end - $start }")"
    else
        cat "$work/step.log"
        echo "templates: $name FAILED"
        exit 1
    fi
}

expect() {
    local what="$1" file="$2" text="$3"
    if grep -qF -- "$text" "$file"; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        echo "templates: $what: no \"$text\" in:"
        cat "$file"
    fi
}

# The venv of a Python plugin's requirements.txt, made as its build.sh
# makes one, kept under its hash; $1 is the plugin folder, linked to it.
python_toolchain() {
    local dir="$1" venv
    venv="$toolchains/py-$(sha256sum "$dir/requirements.txt" | cut -c1-16)"
    if [ ! -f "$venv/.complete" ]; then
        rm -rf "$venv"
        python3 -m venv "$venv" || { echo "templates: python3 -m venv failed (Debian: apt-get install python3-venv)"; return 1; }
        "$venv/bin/pip" install --quiet -r "$dir/requirements.txt" \
            || { echo "templates: pip could not install $dir/requirements.txt: is PyPI reachable?"; return 1; }
        touch "$venv/.complete"
    fi
    ln -s "$venv" "$dir/.venv" || return 1
}

# The node_modules of a JS plugin's pinned devDependencies, installed by
# npm once, kept under their hash; $1 is the plugin folder, linked to it.
js_toolchain() {
    local dir="$1" deps modules
    deps="$(node -p "JSON.stringify(require('$dir/package.json').devDependencies)")"
    modules="$toolchains/js-$(printf '%s' "$deps" | sha256sum | cut -c1-16)"
    if [ ! -f "$modules/.complete" ]; then
        rm -rf "$modules"
        mkdir -p "$modules" || return 1
        printf '{"private": true, "devDependencies": %s}\n' "$deps" > "$modules/package.json"
        (cd "$modules" && npm install --no-audit --no-fund) \
            || { echo "templates: npm could not install $deps: is the npm registry reachable?"; return 1; }
        touch "$modules/.complete"
    fi
    ln -s "$modules/node_modules" "$dir/node_modules" || return 1
}

cat > "$work/config.json" << 'EOF'
{"note": "Be brief."}
EOF
cat > "$work/bad-config.json" << 'EOF'
{"note": "Be brief.", "colour": "red"}
EOF
cat > "$work/turn.json" << 'EOF'
{"channel": "slack", "now": "2026-11-23T08:15:00+01:00", "timezone": "Europe/Berlin"}
EOF

for lang in python js; do
    name="$lang-notes"
    wasm="${name//-/_}.wasm"
    dir="$work/$name"
    step "$lang: plugin new" bash -c "cd '$work' && '$proem' plugin new $name --lang $lang --hooks stable,turn"
    if [ "$lang" = python ]; then
        step "$lang: toolchain (pip, cached)" python_toolchain "$dir"
        step "$lang: build (build.sh)" sh "$dir/build.sh"
        step "$lang: native tests (pytest)" bash -c "cd '$dir' && .venv/bin/python -m pytest -q"
    else
        step "$lang: toolchain (npm, cached)" js_toolchain "$dir"
        step "$lang: native tests (node --test)" bash -c "cd '$dir' && npm test"
        step "$lang: build (npm run build)" bash -c "cd '$dir' && npm run build"
    fi
    printf 'templates: %s: %s is %s bytes\n' "$lang" "$wasm" "$(stat -c %s "$dir/$wasm")"
    step "$lang: plugin check --config" bash -c "'$proem' plugin check '$dir/$wasm' --config '$work/config.json' > '$work/check.out'"
    expect "$lang check" "$work/check.out" "ok       loads in this proem"
    expect "$lang check" "$work/check.out" "matches the config schema it declares"
    # The schema the build appended is the one proem checks configs against.
    "$proem" plugin check "$dir/$wasm" --config "$work/bad-config.json" > "$work/bad.out" 2> /dev/null || true
    expect "$lang schema" "$work/bad.out" "config.colour is not a setting of this plugin (it takes: note) (schema /additionalProperties)"
    step "$lang: plugin run" bash -c "'$proem' plugin run '$dir/$wasm' --config '$work/config.json' --turn '$work/turn.json' > '$work/run.out'"
    expect "$lang run" "$work/run.out" '"body": "## Note\nBe brief."'
    expect "$lang run" "$work/run.out" 'This turn arrived on slack at 08:15.'
    step "$lang: plugin add" "$proem" plugin add "$dir/$wasm" --into "$work/agent-$lang"
    step "$lang: proem build (first)" bash -c "'$proem' build '$work/agent-$lang' --channel telegram --now 2026-11-23T08:15:00+01:00 > '$work/build.out'"
    expect "$lang build" "$work/build.out" "## Note"
    expect "$lang build" "$work/build.out" "This turn arrived on telegram"
    step "$lang: proem build (warm)" bash -c "'$proem' build '$work/agent-$lang' --channel telegram --now 2026-11-23T08:15:00+01:00 > '$work/build2.out'"
    cmp -s "$work/build.out" "$work/build2.out" && passed=$((passed + 1)) || { failed=$((failed + 1)); echo "templates: $lang: the warm build differs"; }
done

echo "templates: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
