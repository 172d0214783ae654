// docs/PERFORMANCE.md's binding figures, Node side: a warm build of
// examples/atlas (3 plugins) through `agent.buildSync` and `await
// agent.build` against the same build timed in Rust inside the same
// process (`agent._timeInRust(turn, 1)`: the call the addon makes, timed
// around it in Rust), memoised (the same turn again) and a new clock (a new
// day each build: a new date in the prompt, so the build memo misses).
//
// The three are interleaved build by build, and the event loop turns
// (untimed) after each, as in a program that serves one build per request:
// so each is measured with the same caches, the same collector and the
// same allocator state. (A Rust loop of back-to-back builds keeps the
// pipeline's memos hot in the CPU's caches and measured 165 µs where the
// same build between event-loop turns measured 250 µs: no baseline for a
// binding whose caller does other work between builds.)
//
//   node bench.mjs REPO [N]   (from a folder where @proem/proem is installed)
import proem from "@proem/proem";

const [repo, nArg] = process.argv.slice(2);
const n = Number(nArg ?? 2000);
const base = Date.parse("2026-11-21T09:30:00Z");
const iso = (i) => new Date(base + i * 86_400_000).toISOString().replace(".000Z", "Z");
const agent = new proem.Agent(`${repo}/examples/atlas`);
const p50 = (ns) => [...ns].sort((a, b) => a - b)[Math.floor(ns.length / 2)] / 1000;
const cpu = () => process.cpuUsage().user + process.cpuUsage().system;

async function measure(newClock, count) {
  const times = { rust: [], sync: [], promised: [] };
  for (let i = 0; i < count + 30; i++) {
    const turn = { channel: "telegram", now: iso(newClock ? i : 0) };
    // Each kind follows each other kind equally often (a build on libuv's
    // pool leaves the next build on the main thread colder caches).
    const kind = ["rust", "sync", "promised"][(i + Math.floor(i / 3)) % 3];
    let ns;
    if (kind === "rust") ns = agent._timeInRust(turn, 1, false)[0];
    else {
      const started = process.hrtime.bigint();
      if (kind === "sync") agent.buildSync(turn);
      else await agent.build(turn);
      ns = Number(process.hrtime.bigint() - started);
    }
    if (i >= 30) times[kind].push(ns); // the first ten of each warm up
    await new Promise(setImmediate);
  }
  return times;
}

for (const [label, newClock, count] of [["memoised", false, n], ["new clock", true, Math.max(n / 4, 150)]]) {
  const cpuBefore = cpu();
  const { rust, sync, promised } = await measure(newClock, count);
  const [r, s, p] = [p50(rust), p50(sync), p50(promised)];
  const pct = (x) => `${((x / r - 1) * 100).toFixed(1)}%`;
  console.log(
    `node ${label}: rust p50 ${r.toFixed(1)} µs, buildSync p50 ${s.toFixed(1)} µs (+${(s - r).toFixed(1)} µs, ${pct(s)}), ` +
      `await build p50 ${p.toFixed(1)} µs (+${(p - r).toFixed(1)} µs, ${pct(p)}), n=${rust.length} each, ` +
      `process CPU ${((cpu() - cpuBefore) / 1000).toFixed(0)} ms`,
  );
}
