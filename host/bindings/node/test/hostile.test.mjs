// A turn from JS is untrusted input (docs/SECURITY.md §0, "Node binding: a
// turn's values"): whatever it holds, the addon throws (or rejects with) a
// bad-request error naming the field, or builds; it never crashes the
// process, recurses without bound or throws something else.
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import proem from "@proem/proem";

const repo = process.env.PROEM_REPO;
if (!repo) throw new Error("PROEM_REPO is not set: run these tests with host/bindings/test.sh");
const NOW = "2026-11-21T09:30:00Z";
const agent = new proem.Agent(join(repo, "examples", "marlow"));

const cyclic = {};
cyclic.self = cyclic;
let deep = "leaf";
for (let i = 0; i < 100_000; i++) deep = [deep];
// Arrays that claim more elements than a turn may hold, none of them there
// (a converter that reserves room for `length` first would abort).
const sparse = (length) => {
  const items = [];
  items.length = length;
  return items;
};
// One array reached along 2^60 paths: a walk that visits shared values
// again must still be bounded.
let shared = ["x", "y"];
for (let i = 0; i < 60; i++) shared = [shared, shared];

const HOSTILE = [
  [{ channel: () => "telegram" }, "channel"],
  [{ channel: Symbol("x") }, "channel"],
  [{ owners: "a" }, "owners"],
  [{ budget: Number.NaN }, "budget"],
  [{ budget: 1e300 }, "budget"],
  [{ budget: -1 }, "budget"],
  [{ heartbeat: "yes" }, "heartbeat"],
  [{ tools: [{ name: "a", parameters: cyclic }] }, "tools"],
  [{ tools: [{ name: "a", parameters: deep }] }, "tools"],
  [{ tools: [{ name: "a", parameters: () => 1 }] }, "tools"],
  [{ sessionKey: 42 }, "sessionKey"],
  [{ owners: sparse(2 ** 32 - 1) }, "owners"],
  [{ owners: sparse(1_000_001) }, "owners"],
  [{ tools: [{ name: "a", parameters: sparse(2 ** 31) }] }, "tools"],
  [{ tools: [{ name: "a", parameters: shared }] }, "tools"],
];

test("a hostile value is a bad request naming its field", async () => {
  for (const [turn, field] of HOSTILE) {
    const label = String(Object.keys(turn));
    const check = (e) => {
      assert.equal(e.code, "bad-request", `${label}: ${e.message}`);
      assert.ok(String(e.field).startsWith(field), `${label}: ${e.field}`);
      assert.equal(e.exitCode, 1);
      return true;
    };
    assert.throws(() => agent.buildSync({ now: NOW, ...turn }), check);
    await assert.rejects(agent.build({ now: NOW, ...turn }), check);
  }
});

test("a turn that is not an object is a bad request", () => {
  for (const turn of ["channel", 42, [], [{ channel: "x" }], true]) {
    assert.throws(() => agent.buildSync(turn), (e) => e.code === "bad-request" && e.field === null);
  }
  assert.equal(agent.buildSync(null).stableHash, agent.buildSync(undefined).stableHash);
});

test("a getter that throws is the caller's own error, and the addon goes on", () => {
  const turn = { now: NOW, get channel() { throw new Error("boom from a getter"); } };
  assert.throws(() => agent.buildSync(turn));
  assert.equal(agent.buildSync({ now: NOW, channel: "slack" }).mode, "full");
});

test("a huge string is budgeted, not refused", () => {
  const built = agent.buildSync({ now: NOW, extra: "x ".repeat(2_000_000), budget: 20_000 });
  assert.ok(built.tokens.total <= 20_000, String(built.tokens.total));
  assert.ok(built.prompt.length < 4_000_000);
});
