// The JavaScript shape of the API: typed results, the Promise built off
// the main thread, caching, the generated declarations.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
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
  for (const needle of ["export declare class Agent", "build(turn?: Turn): Promise<Built>", "buildSync(turn?: Turn): Built", "export interface Turn", "sessionKey?: string", "toAnthropic()", "remembered: boolean", "get stableInputs(): Array<StableInput>", "get exact(): boolean"]) {
    assert.ok(dts.includes(needle), needle);
  }
  const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  assert.equal(pkg.types, "index.d.ts");
});

// What a build measured (how it ran, never what it built).
const MEASURED = new Set(["elapsed_us", "remembered"]);
const camel = (key) => key.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase());

/** `ours` (a Built, a row object) has every key of the CLI's `report`, camelCased, equal. */
function assertHasReport(ours, report, path) {
  for (const [key, value] of Object.entries(report)) {
    const where = `${path}.${key}`;
    assert.ok(camel(key) in ours, `${where} is in the CLI's JSON report and not on the binding's object (${camel(key)})`);
    const mine = ours[camel(key)];
    if (Array.isArray(value) && value.length && typeof value[0] === "object") {
      assert.equal(mine.length, value.length, where);
      value.forEach((row, i) => assertHasReport(mine[i], row, `${where}[${i}]`));
    } else if (value !== null && typeof value === "object" && !Array.isArray(value)) {
      assertHasReport(mine, value, where);
    } else if (!MEASURED.has(key)) {
      assert.deepEqual(mine, value, where);
    }
  }
}

/** `proem build --format json`'s report (a tools list given as a file). */
function cliReport(agentDir, turn, config) {
  const tmp = process.env.PROEM_TMP;
  const args = ["build", agentDir, "--format", "json", ...(config ? ["--config", config] : [])];
  for (const [key, value] of Object.entries(turn)) args.push(`--${key.replace(/[A-Z]/g, (c) => "-" + c.toLowerCase())}`, String(value));
  const run = spawnSync(process.env.PROEM_BIN, args, { timeout: 120_000, cwd: tmp });
  assert.equal(run.status, 0, run.stderr.toString());
  return JSON.parse(run.stdout.toString());
}

test("every field of the CLI's JSON report is on the binding's objects", () => {
  const turns = [{ now: NOW }, { now: NOW, channel: "telegram", chatKind: "group", groupTitle: "Lab" }, { now: NOW, model: "gpt-5", mode: "minimal" }];
  for (const name of ["marlow", "atlas", "juniper", "openclaw-style", "goclaw-style", "zeroclaw-style"]) {
    const dir = join(repo, "examples", name);
    const agent = new Agent(dir);
    for (const turn of turns) assertHasReport(agent.buildSync(turn), cliReport(dir, turn), name);
  }
  const marlow = join(repo, "examples", "marlow");
  const config = join(process.env.PROEM_TMP, "per-turn.toml");
  writeFileSync(config, readFileSync(join(marlow, "proem.toml"), "utf8") + '\n[cache]\nper_turn = "user_message"\n');
  const report = cliReport(marlow, { now: NOW }, config);
  assert.ok(report.turn_context, "the per-turn config gave no turn_context");
  assertHasReport(new Agent(marlow, { config }).buildSync({ now: NOW }), report, "marlow+per_turn");
  assert.equal(new Agent(marlow).buildSync({ now: NOW }).turnContext, null);
});

test("the same turn built twice is remembered the second time", async () => {
  const agent = new Agent(join(repo, "examples", "marlow"));
  const turn = { now: NOW, channel: "slack", extra: "remembered?" };
  await agent.build(turn);
  const again = await agent.build(turn);
  assert.ok(again.plugins.length > 0, "marlow has plugins");
  assert.ok(again.plugins.every((p) => p.remembered === true && p.elapsedUs === 0), JSON.stringify(again.plugins));
  assert.deepEqual(JSON.parse(JSON.stringify(again)).plugins.map((p) => p.remembered), again.plugins.map((p) => p.remembered));
});
