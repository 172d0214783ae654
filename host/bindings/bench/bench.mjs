// docs/PERFORMANCE.md's binding figures, Node side: a warm build of
// examples/atlas (3 plugins) through `agent.buildSync` and `await
// agent.build` against the same builds timed in Rust inside the same
// process (`agent._timeInRust`), the same minute: memoised and a new clock.
//
//   node bench.mjs REPO [N]   (from a folder where @proem/proem is installed)
import proem from "@proem/proem";

const [repo, nArg] = process.argv.slice(2);
const n = Number(nArg ?? 2000);
const base = Date.parse("2026-11-21T09:30:00Z");
const iso = (i) => new Date(base + i * 1000).toISOString().replace(".000Z", "Z");
const turn = { channel: "telegram", now: iso(0) };
const agent = new proem.Agent(`${repo}/examples/atlas`);
const p50 = (ns) => [...ns].sort((a, b) => a - b)[Math.floor(ns.length / 2)] / 1000;

async function jsTimes(newClock, count, asynchronous) {
  const times = [];
  for (let i = 0; i < count; i++) {
    const t = newClock ? { ...turn, now: iso(i) } : turn;
    const started = process.hrtime.bigint();
    if (asynchronous) await agent.build(t);
    else agent.buildSync(t);
    times.push(Number(process.hrtime.bigint() - started));
  }
  return times;
}

for (const [label, newClock, count] of [["memoised", false, n], ["new clock", true, Math.max(n / 10, 50)]]) {
  for (let w = 0; w < 2; w++) {
    agent._timeInRust(turn, 20, newClock);
    await jsTimes(newClock, 20, false);
    await jsTimes(newClock, 20, true);
  }
  const rust = p50(agent._timeInRust(turn, count, newClock));
  const sync = p50(await jsTimes(newClock, count, false));
  const promised = p50(await jsTimes(newClock, count, true));
  const pct = (x) => `${((x / rust - 1) * 100).toFixed(1)}%`;
  console.log(
    `node ${label}: rust p50 ${rust.toFixed(1)} µs, buildSync p50 ${sync.toFixed(1)} µs (+${(sync - rust).toFixed(1)} µs, ${pct(sync)}), ` +
      `await build p50 ${promised.toFixed(1)} µs (+${(promised - rust).toFixed(1)} µs, ${pct(promised)}), n=${count}`,
  );
}
