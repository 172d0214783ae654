//! The Python and JavaScript plugin templates of `proem plugin new --lang`.
//!
//! Each is a folder that builds on a fresh machine with its own pinned
//! toolchain from its registry, and tests its hook logic natively:
//!
//! - Python: componentize-py (PyPI) turns `app.py` into a component from
//!   `wit/proem.wit` as it is; pytest runs `test_app.py` against the same
//!   bindings, generated into `bindings/`. `build.sh` installs the pinned
//!   requirements into `.venv` the first time.
//! - JavaScript: componentize-qjs (npm, QuickJS: the smallest and fastest
//!   component of the backends measured, see docs/plugins/README.md) turns
//!   `app.js` into a component; `node --test` runs `app.test.js`.
//!
//! The hooks asked for are implemented; the others are no-ops (every export
//! of the WIT world must exist) and are not declared, so proem never calls
//! them.

use super::ScaffoldHook;

/// The plugin API's WIT, copied into every Python and JS plugin (the
/// toolchains build from it as it is).
pub const WIT: &str = include_str!("../../../../wit/0.2.0/proem.wit");

/// The pinned componentize-py (PyPI).
pub const COMPONENTIZE_PY: &str = "0.25.1";
/// The pinned pytest (PyPI).
pub const PYTEST: &str = "8.3.4";
/// The pinned componentize-qjs (npm).
pub const COMPONENTIZE_QJS: &str = "0.4.5";

/// The files of a Python plugin `name` with `hooks`, as (path, text).
pub fn python(name: &str, hooks: &[ScaffoldHook]) -> Vec<(&'static str, String)> {
    let wasm = wasm_name(name);
    vec![
        ("wit/proem.wit", WIT.to_string()),
        ("app.py", python_app(name, hooks)),
        ("test_app.py", python_tests(hooks)),
        ("conftest.py", PY_CONFTEST.to_string()),
        ("config.schema.json", CONFIG_SCHEMA.to_string()),
        ("config.json", "{\"note\": \"Be brief.\"}\n".to_string()),
        ("requirements.txt", format!("componentize-py=={COMPONENTIZE_PY}\npytest=={PYTEST}\n")),
        ("build.sh", PY_BUILD.replace("{WASM}", &wasm)),
        (".gitignore", format!(".venv/\nbindings/\n__pycache__/\n{wasm}\n")),
        ("README.md", readme(name, &wasm, "Python", PY_COMMANDS)),
    ]
}

/// The files of a JavaScript plugin `name` with `hooks`, as (path, text).
pub fn javascript(name: &str, hooks: &[ScaffoldHook]) -> Vec<(&'static str, String)> {
    let wasm = wasm_name(name);
    vec![
        ("wit/proem.wit", WIT.to_string()),
        ("app.js", js_app(name, hooks)),
        ("app.test.js", js_tests(hooks)),
        ("config.schema.json", CONFIG_SCHEMA.to_string()),
        ("config.json", "{\"note\": \"Be brief.\"}\n".to_string()),
        ("stamp-schema.mjs", JS_STAMP.to_string()),
        (
            "package.json",
            JS_PACKAGE.replace("{NAME}", name).replace("{WASM}", &wasm).replace("{QJS}", COMPONENTIZE_QJS),
        ),
        (".gitignore", format!("node_modules/\n{wasm}\n")),
        ("README.md", readme(name, &wasm, "JavaScript", JS_COMMANDS)),
    ]
}

/// The JSON Schema of the template's `[[plugins]] config` table, which its
/// build appends to the component as the `proem:config-schema` section.
const CONFIG_SCHEMA: &str = r#"{
  "type": "object",
  "properties": {
    "note": { "type": "string", "maxLength": 2000, "description": "The note's text." }
  },
  "additionalProperties": false
}
"#;

/// Appends config.schema.json to the component as the custom section
/// `proem:config-schema` (JS; build.sh does the same in Python).
const JS_STAMP: &str = r#"// Appends config.schema.json to the component as the custom section proem
// reads the plugin's config schema from (proem:config-schema).
import { appendFileSync, readFileSync } from "node:fs";

const leb = (n) => {
  const out = [];
  do {
    const byte = n & 0x7f;
    n >>>= 7;
    out.push(n ? byte | 0x80 : byte);
  } while (n);
  return Buffer.from(out);
};
const [wasm, schemaFile] = process.argv.slice(2);
const schema = readFileSync(schemaFile);
JSON.parse(schema); // a typo stops the build here, not at load
const name = Buffer.from("proem:config-schema");
const body = Buffer.concat([leb(name.length), name, schema]);
appendFileSync(wasm, Buffer.concat([Buffer.from([0]), leb(body.length), body]));
"#;

/// The component file a template builds: the name with `_` for `-`.
pub fn wasm_name(name: &str) -> String {
    format!("{}.wasm", name.replace('-', "_"))
}

fn has(hooks: &[ScaffoldHook], hook: ScaffoldHook) -> bool {
    hooks.contains(&hook)
}

fn stable(hooks: &[ScaffoldHook]) -> bool {
    has(hooks, ScaffoldHook::Sections) || has(hooks, ScaffoldHook::Overlay)
}

fn python_app(name: &str, hooks: &[ScaffoldHook]) -> String {
    let mut flags = Vec::new();
    if stable(hooks) {
        flags.push("types.Hooks.STABLE");
    }
    if has(hooks, ScaffoldHook::Turn) {
        flags.push("types.Hooks.TURN");
    }
    if has(hooks, ScaffoldHook::Bootstrap) {
        flags.push("types.Hooks.BOOTSTRAP");
    }
    let mut stable_body = String::from("        sections = []\n        prefix = None\n");
    if has(hooks, ScaffoldHook::Sections) {
        stable_body.push_str(PY_STABLE_SECTION);
    }
    if has(hooks, ScaffoldHook::Overlay) {
        stable_body.push_str(PY_STABLE_PREFIX);
    }
    stable_body.push_str("        return types.StableOutput(sections=sections, prefix=prefix)\n");
    let turn_body = if has(hooks, ScaffoldHook::Turn) { PY_TURN } else { PY_NO_TURN };
    PY_APP
        .replace("{NAME}", name)
        .replace("{HOOKS}", &flags.join(" | "))
        .replace("{STABLE}", if stable(hooks) { &stable_body } else { PY_NO_STABLE })
        .replace("{TURN}", turn_body)
}

fn python_tests(hooks: &[ScaffoldHook]) -> String {
    let mut out = String::from(PY_TEST_HEAD);
    if has(hooks, ScaffoldHook::Sections) {
        out.push_str(PY_TEST_SECTION);
    }
    if has(hooks, ScaffoldHook::Overlay) {
        out.push_str(PY_TEST_PREFIX);
    }
    if has(hooks, ScaffoldHook::Turn) {
        out.push_str(PY_TEST_TURN);
    }
    out.push_str(PY_TEST_DESCRIBE);
    out
}

fn js_app(name: &str, hooks: &[ScaffoldHook]) -> String {
    let mut stable_body = String::from("    const sections = [];\n    let prefix;\n");
    if has(hooks, ScaffoldHook::Sections) {
        stable_body.push_str(JS_STABLE_SECTION);
    }
    if has(hooks, ScaffoldHook::Overlay) {
        stable_body.push_str(JS_STABLE_PREFIX);
    }
    stable_body.push_str("    return { sections, prefix };\n");
    JS_APP
        .replace("{NAME}", name)
        .replace("{STABLE_FLAG}", if stable(hooks) { "true" } else { "false" })
        .replace("{TURN_FLAG}", if has(hooks, ScaffoldHook::Turn) { "true" } else { "false" })
        .replace("{BOOTSTRAP_FLAG}", if has(hooks, ScaffoldHook::Bootstrap) { "true" } else { "false" })
        .replace("{STABLE}", if stable(hooks) { &stable_body } else { "    return { sections: [] };\n" })
        .replace("{TURN}", if has(hooks, ScaffoldHook::Turn) { JS_TURN } else { "    return { sections: [] };\n" })
}

fn js_tests(hooks: &[ScaffoldHook]) -> String {
    let mut out = String::from(JS_TEST_HEAD);
    if has(hooks, ScaffoldHook::Sections) {
        out.push_str(JS_TEST_SECTION);
    }
    if has(hooks, ScaffoldHook::Overlay) {
        out.push_str(JS_TEST_PREFIX);
    }
    if has(hooks, ScaffoldHook::Turn) {
        out.push_str(JS_TEST_TURN);
    }
    out.push_str(JS_TEST_DESCRIBE);
    out
}

fn readme(name: &str, wasm: &str, language: &str, commands: &str) -> String {
    format!(
        "# {name}\n\nA proem plugin in {language}. `describe` declares the hooks it implements; proem calls only \
         those.\n\n```sh\n{}```\n\nThe plugin API is `wit/proem.wit` (proem:plugin@0.2.0): every type and field is \
         documented there.\n",
        commands.replace("{WASM}", wasm)
    )
}

const PY_COMMANDS: &str =
    "sh build.sh                                   # .venv with the pinned toolchain, then {WASM}\n\
.venv/bin/python -m pytest -q                 # the hooks' logic, natively\n\
proem plugin check {WASM} --config config.json  # and the config against config.schema.json\n\
proem plugin run {WASM} --config config.json  # the hooks' raw output, no agent needed\n\
proem plugin add {WASM} --into ../my-agent\n";

const JS_COMMANDS: &str = "npm install                                   # the pinned toolchain\n\
npm test                                      # the hooks' logic, natively (node:test)\n\
npm run build                                 # {WASM}, config.schema.json appended\n\
proem plugin check {WASM} --config config.json  # and the config against config.schema.json\n\
proem plugin add {WASM} --into ../my-agent\n";

const PY_APP: &str = r###""""{NAME}: a proem plugin in Python, built with componentize-py.

`Describe.info` declares the hooks this plugin implements; proem calls only
those. Every export of the WIT world must exist, so the others are here as
no-ops. Types: wit/proem.wit (the generated `wit_world.imports.types`).
Raise `componentize_py_types.Err("why")` to fail a hook: the plugin is left
out of that build with the message as a diagnostic.
"""

import json

from wit_world import exports
from wit_world.imports import types

# What the operator may set in `[[plugins]] config` is config.schema.json:
# build.sh puts it into the component, and proem checks every agent's
# config against it when it loads the plugin (docs/plugins/README.md).


def section_after(anchor, section_id, body):
    """A section placed just after the core section `anchor`."""
    return types.Section(
        id=section_id, slot=types.Slot_After(anchor), priority=0, modes=[], body=body, max_tokens=None
    )


class Describe(exports.Describe):
    def info(self) -> types.PluginInfo:
        return types.PluginInfo(id="{NAME}", version="0.1.0", hooks={HOOKS}, capabilities=[])


class Stable(exports.Stable):
    """Above the cache boundary: sees only what stays the same for a session."""

    def contribute(self, ctx, files):
{STABLE}

class Turn(exports.Turn):
    """Below the cache boundary: sees the turn (time, channel, chat, extra)."""

    def contribute(self, ctx):
{TURN}

class Bootstrap(exports.Bootstrap):
    """Sees the stable workspace files before they are rendered; returns them."""

    def on_bootstrap(self, ctx, files):
        return files
"###;

const PY_NO_STABLE: &str = "        return types.StableOutput(sections=[], prefix=None)\n";

const PY_STABLE_SECTION: &str = r###"        # A section after Safety, from the operator's config.
        note = json.loads(ctx.config_json).get("note", "Hello from a proem plugin.")
        sections.append(section_after("safety", "note", "## Note\n" + note))
"###;

const PY_STABLE_PREFIX: &str = r###"        # A line at the top of the prompt, for one provider only.
        if ctx.provider == "openai":
            prefix = "Answer in plain prose."
"###;

const PY_NO_TURN: &str = "        return types.TurnOutput(sections=[], suffix=None)\n";

const PY_TURN: &str = r###"        if ctx.channel is None:
            return types.TurnOutput(sections=[], suffix=None)
        # The turn's local time: rfc3339 carries the zone's offset.
        local_time = ctx.now.rfc3339[11:16]
        body = "## Channel Note\nThis turn arrived on " + ctx.channel + " at " + local_time + "."
        return types.TurnOutput(sections=[section_after("time", "channel_note", body)], suffix=None)
"###;

const PY_CONFTEST: &str = r###"# The tests import the same bindings componentize-py builds the component
# from (build.sh generates them into bindings/).
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent / "bindings"))
"###;

const PY_BUILD: &str = r###"#!/bin/sh
# Builds {WASM} with the pinned componentize-py, installed into .venv the
# first time, and the bindings the tests import (bindings/).
set -eu
cd "$(dirname "$0")"
if [ ! -x .venv/bin/componentize-py ]; then
    python3 -m venv .venv
    .venv/bin/pip install --quiet -r requirements.txt
fi
rm -rf bindings
.venv/bin/componentize-py -d wit -w plugin bindings bindings
.venv/bin/componentize-py -d wit -w plugin componentize app -o {WASM}
# config.schema.json, appended as the custom section proem reads the
# plugin's config schema from (proem:config-schema).
.venv/bin/python - {WASM} config.schema.json << 'EOF'
import json, sys


def leb(n):
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


wasm, schema = sys.argv[1], open(sys.argv[2], "rb").read()
json.loads(schema)  # a typo stops the build here, not at load
name = b"proem:config-schema"
body = leb(len(name)) + name + schema
with open(wasm, "ab") as f:
    f.write(b"\0" + leb(len(body)) + body)
EOF
"###;

const PY_TEST_HEAD: &str = r###"from app import Describe, Stable, Turn
from wit_world.imports import types


def agent(config="{}", provider=None):
    return types.AgentContext(
        agent_id="test", mode=types.Mode.FULL, provider=provider, model=None, tools=[], skills=[],
        config_json=config, budget=types.Budget(tokens=24000, tokenizer="o200k_base"),
    )


def turn(channel=None, rfc3339="2026-11-21T10:30:00+01:00"):
    now = types.TurnTime(rfc3339=rfc3339, timezone="Europe/Berlin", unix_seconds=1795253400, utc_offset_seconds=3600)
    return types.TurnContext(
        agent_id="test", mode=types.Mode.FULL, provider=None, model=None, tools=[], config_json="{}",
        budget=types.Budget(tokens=24000, tokenizer="o200k_base"), now=now, channel=channel, chat_kind=None,
        group_title=None, extra=None, files=[],
    )
"###;

const PY_TEST_SECTION: &str = r###"

def test_it_adds_its_note():
    out = Stable().contribute(agent('{"note": "Be kind."}'), [])
    assert out.sections[0].body == "## Note\nBe kind."
    assert out.sections[0].slot == types.Slot_After("safety")
"###;

const PY_TEST_PREFIX: &str = r###"

def test_the_prefix_is_for_openai_only():
    assert Stable().contribute(agent(provider="openai"), []).prefix is not None
    assert Stable().contribute(agent(), []).prefix is None
"###;

const PY_TEST_TURN: &str = r###"

def test_it_notes_the_channel_at_the_local_time():
    out = Turn().contribute(turn("telegram"))
    assert out.sections[0].body.endswith("telegram at 10:30.")
    assert Turn().contribute(turn()).sections == []
"###;

const PY_TEST_DESCRIBE: &str = r###"

def test_it_declares_hooks():
    assert Describe().info().hooks
"###;

const JS_PACKAGE: &str = r###"{
  "name": "{NAME}",
  "version": "0.1.0",
  "private": true,
  "type": "module",
  "scripts": {
    "build": "componentize-qjs --wit wit --world plugin --js app.js --sync --opt-size -o {WASM} && node stamp-schema.mjs {WASM} config.schema.json",
    "test": "node --test"
  },
  "devDependencies": {
    "componentize-qjs": "{QJS}"
  }
}
"###;

const JS_APP: &str = r###"// {NAME}: a proem plugin in JavaScript, built with componentize-qjs (QuickJS).
//
// `describe.info` declares the hooks this plugin implements; proem calls only
// those. Every export of the WIT world must exist, so the others are here as
// no-ops. Types: wit/proem.wit (records are objects with camelCase fields,
// variants `{ tag, val }`, options `undefined` when absent). Throw to fail a
// hook: the plugin is left out of that build with the message as a diagnostic.

// What the operator may set in `[[plugins]] config` is config.schema.json:
// `npm run build` puts it into the component, and proem checks every
// agent's config against it when it loads the plugin (docs/plugins/README.md).

/** A section placed just after the core section `anchor`. */
function sectionAfter(anchor, id, body) {
  return { id, slot: { tag: "after", val: anchor }, priority: 0, modes: [], body };
}

export const describe = {
  info() {
    return {
      id: "{NAME}",
      version: "0.1.0",
      hooks: { stable: {STABLE_FLAG}, turn: {TURN_FLAG}, bootstrap: {BOOTSTRAP_FLAG} },
      capabilities: [],
    };
  },
};

/** Above the cache boundary: sees only what stays the same for a session. */
export const stable = {
  contribute(ctx, files) {
{STABLE}  },
};

/** Below the cache boundary: sees the turn (time, channel, chat, extra). */
export const turn = {
  contribute(ctx) {
{TURN}  },
};

/** Sees the stable workspace files before they are rendered; returns them. */
export const bootstrap = {
  onBootstrap(ctx, files) {
    return files;
  },
};
"###;

const JS_STABLE_SECTION: &str = r###"    // A section after Safety, from the operator's config.
    const note = JSON.parse(ctx.configJson).note ?? "Hello from a proem plugin.";
    sections.push(sectionAfter("safety", "note", "## Note\n" + note));
"###;

const JS_STABLE_PREFIX: &str = r###"    // A line at the top of the prompt, for one provider only.
    if (ctx.provider === "openai") prefix = "Answer in plain prose.";
"###;

const JS_TURN: &str = r###"    if (ctx.channel === undefined) return { sections: [] };
    // The turn's local time: rfc3339 carries the zone's offset.
    const localTime = ctx.now.rfc3339.slice(11, 16);
    const body = "## Channel Note\nThis turn arrived on " + ctx.channel + " at " + localTime + ".";
    return { sections: [sectionAfter("time", "channel_note", body)] };
"###;

const JS_TEST_HEAD: &str = r###"import { test } from "node:test";
import assert from "node:assert/strict";
import { describe, stable, turn } from "./app.js";

const budget = { tokens: 24000, tokenizer: "o200k_base" };
const agent = (configJson = "{}", provider = undefined) => ({
  agentId: "test", mode: "full", provider, tools: [], skills: [], configJson, budget,
});
const turnContext = (channel = undefined) => ({
  agentId: "test", mode: "full", tools: [], configJson: "{}", budget, channel, files: [],
  now: { rfc3339: "2026-11-21T10:30:00+01:00", timezone: "Europe/Berlin", unixSeconds: 1795253400n, utcOffsetSeconds: 3600 },
});
"###;

const JS_TEST_SECTION: &str = r###"
test("it adds its note", () => {
  const out = stable.contribute(agent('{"note": "Be kind."}'), []);
  assert.equal(out.sections[0].body, "## Note\nBe kind.");
  assert.deepEqual(out.sections[0].slot, { tag: "after", val: "safety" });
});
"###;

const JS_TEST_PREFIX: &str = r###"
test("the prefix is for openai only", () => {
  assert.ok(stable.contribute(agent("{}", "openai"), []).prefix);
  assert.equal(stable.contribute(agent(), []).prefix, undefined);
});
"###;

const JS_TEST_TURN: &str = r###"
test("it notes the channel at the local time", () => {
  assert.match(turn.contribute(turnContext("telegram")).sections[0].body, /telegram at 10:30\.$/);
  assert.deepEqual(turn.contribute(turnContext()).sections, []);
});
"###;

const JS_TEST_DESCRIBE: &str = r###"
test("it declares hooks", () => {
  assert.ok(Object.values(describe.info().hooks).some(Boolean));
});
"###;
