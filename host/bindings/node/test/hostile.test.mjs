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

// A turn whose member `name` is read by a getter that throws.
const throwing = (name) =>
  Object.defineProperty({ now: NOW }, name, { enumerable: true, get() { throw new Error("boom from a getter"); } });
// A turn that is a Proxy whose `trap` throws.
const trapping = (trap) => new Proxy({ now: NOW }, { [trap]() { throw new RangeError(`boom from ${trap}`); } });
class TurnClass {}

// Each turn, whole (spreading it would run its getters here), and the
// field the refusal names (null: the turn as a whole).
const HOSTILE = [
  ...[
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
    [{ tools: [{ name: "a", parameters: new Map([["a", 1]]) }] }, "tools"],
    [{ tools: [{ name: "a", parameters: new Date(0) }] }, "tools"],
    [{ sessionKey: 42 }, "sessionKey"],
    [{ session_key: 42 }, "session_key"],
    [{ owners: sparse(2 ** 32 - 1) }, "owners"],
    [{ owners: sparse(1_000_001) }, "owners"],
    [{ tools: [{ name: "a", parameters: sparse(2 ** 31) }] }, "tools"],
    [{ tools: [{ name: "a", parameters: shared }] }, "tools"],
    [{ extra: "\ud800" }, "extra"],
    [{ groupTitle: "a\udfffb" }, "groupTitle"],
    [{ owners: ["ok", "\ud83d"] }, "owners"],
    [{ tools: [{ name: "a", description: "x\udc00" }] }, "tools"],
    [{ budget: 10n }, "budget"],
  ].map(([turn, field]) => [{ now: NOW, ...turn }, field]),
  [JSON.parse('{"__proto__": 1}'), "__proto__"],
  [{ ["__proto__"]: { channel: "x" } }, "__proto__"],
  [{ now: NOW, "\ud800": 1 }, null],
  [throwing("channel"), "channel"],
  [throwing("sessionKey"), "sessionKey"],
  [{ now: NOW, tools: [Object.defineProperty({}, "name", { enumerable: true, get() { throw new Error("boom"); } })] }, "tools"],
  [trapping("ownKeys"), null],
  [trapping("get"), "now"],
  [new Map([["now", NOW]]), null],
  [new Date(0), null],
  [new TurnClass(), null],
  [Object.assign(new TurnClass(), { now: NOW }), null],
  [[], null],
  [[{ channel: "x" }], null],
  ["channel", null],
  [42, null],
  [true, null],
  [() => ({ now: NOW }), null],
];

/** What `run()` threw (null: it did not throw). */
const thrown = (run) => {
  try {
    run();
    return null;
  } catch (e) {
    return e;
  }
};

test("a hostile turn is a bad request naming its field as the caller spelled it", async () => {
  for (const [turn, field] of HOSTILE) {
    const error = thrown(() => agent.buildSync(turn));
    const label = `${typeof turn} ${field}`;
    assert.ok(error, `${label}: built`);
    assert.equal(error.code, "bad-request", `${label}: ${error.message}`);
    assert.equal(error.field, field, `${label}: ${error.message}`);
    assert.ok(error.message.startsWith(field === null ? "the turn is not a build request: " : `field \``), error.message);
  }
});

test("build() rejects every hostile turn, never throws, with buildSync's code, field and exit code", async () => {
  for (const [turn, field] of HOSTILE) {
    let promise;
    const label = `${typeof turn} ${field}`;
    assert.equal(thrown(() => { promise = agent.build(turn); }), null, `${label}: build() threw`);
    assert.ok(promise instanceof Promise, label);
    const sync = thrown(() => agent.buildSync(turn));
    await assert.rejects(promise, (e) => {
      assert.deepEqual([e.code, e.field, e.exitCode, e.message], [sync.code, sync.field, sync.exitCode, sync.message], label);
      return true;
    });
  }
});

test("a refused turn exits as a usage error (2); a tools list as the --tools file's content (1)", () => {
  assert.equal(thrown(() => agent.buildSync({ now: NOW, chatKind: "crowd" })).exitCode, 2);
  assert.equal(thrown(() => agent.buildSync(new Map())).exitCode, 2);
  assert.equal(thrown(() => agent.buildSync({ now: NOW, tools: [{ description: "no name" }] })).exitCode, 1);
  assert.equal(thrown(() => agent.buildSync({ now: NOW, budget: 10 })).exitCode, 1);
});

test("a lone surrogate is refused in Python's words; a paired one builds", () => {
  const error = thrown(() => agent.buildSync({ now: NOW, extra: "\ud800" }));
  assert.ok(error.message.includes("lone surrogate"), error.message);
  assert.ok(agent.buildSync({ now: NOW, extra: "\ud83d\ude00 paired" }).prompt.includes("\u{1F600} paired"));
});

test("a getter is read once: what is bounded is what is built", () => {
  let reads = 0;
  const turn = { now: NOW, get owners() { return reads++ ? sparse(2 ** 32 - 1) : ["a"]; } };
  assert.equal(agent.buildSync(turn).mode, "full");
  assert.equal(reads, 1);
});

test("only own members count: an inherited one (a polluted Object.prototype) is not a turn field", () => {
  Object.prototype.bogusField = "x";
  try {
    assert.equal(agent.buildSync({ now: NOW }).stableHash, agent.buildSync(Object.assign(Object.create(null), { now: NOW })).stableHash);
  } finally {
    delete Object.prototype.bogusField;
  }
});

test("an empty turn is null, undefined or a plain object", () => {
  assert.equal(agent.buildSync(null).stableHash, agent.buildSync(undefined).stableHash);
  assert.equal(agent.buildSync({}).stableHash, agent.buildSync(Object.create(null)).stableHash);
});

test("a getter that throws is a bad request, and the addon goes on", () => {
  const error = thrown(() => agent.buildSync(throwing("channel")));
  assert.ok(error.message.includes("boom from a getter"), error.message);
  assert.equal(agent.buildSync({ now: NOW, channel: "slack" }).mode, "full");
});

test("a huge string is budgeted, not refused", () => {
  const built = agent.buildSync({ now: NOW, extra: "x ".repeat(2_000_000), budget: 20_000 });
  assert.ok(built.tokens.total <= 20_000, String(built.tokens.total));
  assert.ok(built.prompt.length < 4_000_000);
});
