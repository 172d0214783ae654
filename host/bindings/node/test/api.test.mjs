// The JavaScript shape of the API: typed results, the Promise built off
// the main thread, caching, the generated declarations.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import proem from "@proem/proem";

const { Agent, Built } = proem;
const repo = process.env.PROEM_REPO;
if (!repo) throw new Error("PROEM_REPO is not set: run these tests with host/bindings/test.sh");
const NOW = "2026-11-21T09:30:00Z";

test("results are typed objects", async () => {
  const built = await new Agent(join(repo, "examples", "marlow")).build({ channel: "telegram", now: NOW });
  assert.ok(built instanceof Built);
  assert.ok(built.tokens.total >= built.tokens.stable + built.tokens.dynamic && built.tokens.total > 0);
  assert.ok(built.sections.every((s) => s.zone === "stable" || s.zone === "dynamic"));
  assert.ok(built.files.length > 0 && built.plugins.length > 0);
  assert.ok(built.plugins.every((p) => p.status === "ok" && Number.isInteger(p.elapsedUs)));
  assert.equal(built.stableHash.length, 64);
  assert.equal(built.mode, "full");
  assert.equal(JSON.parse(JSON.stringify(built)).stable_hash, built.stableHash);
});

test("build runs off the main thread: the event loop turns while it builds", async () => {
  const agent = new Agent(join(repo, "examples", "atlas"), { caching: false });
  let ticks = 0;
  let done = false;
  const spin = (async () => {
    while (!done) {
      ticks++;
      await new Promise((resolve) => setImmediate(resolve));
    }
  })();
  const channels = ["a", "b", "c"];
  const results = await Promise.all(channels.map((channel) => agent.build({ now: NOW, channel })));
  done = true;
  await spin;
  assert.deepEqual(
    results.map((r) => r.prompt),
    channels.map((channel) => agent.buildSync({ now: NOW, channel }).prompt),
  );
  assert.ok(ticks > 0, "the event loop never turned during three builds");
});

test("caching off builds the same bytes and remembers nothing", () => {
  const dir = join(repo, "examples", "atlas");
  const cached = new Agent(dir);
  const uncached = new Agent(dir, { caching: false });
  const partial = new Agent(dir, { caching: { builds: false, tokenCounts: true } });
  for (let i = 0; i < 3; i++) {
    const prompts = new Set([cached, uncached, partial].map((a) => a.buildSync({ now: NOW }).prompt));
    assert.equal(prompts.size, 1);
  }
  assert.equal(cached.memoHits, 2);
  assert.equal(uncached.memoHits, 0);
  assert.equal(partial.memoHits, 0);
});

test("the package ships its generated declarations", () => {
  const require = createRequire(import.meta.url);
  const root = join(require.resolve("@proem/proem"), "..");
  const dts = readFileSync(join(root, "index.d.ts"), "utf8");
  for (const needle of ["export declare class Agent", "build(turn?: Turn): Promise<Built>", "buildSync(turn?: Turn): Built", "export interface Turn", "sessionKey?: string", "toAnthropic()"]) {
    assert.ok(dts.includes(needle), needle);
  }
  const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  assert.equal(pkg.types, "index.d.ts");
});
