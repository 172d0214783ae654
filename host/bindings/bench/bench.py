"""docs/PERFORMANCE.md's binding figures, Python side: a warm build of
examples/atlas (3 plugins) through `proem.Agent.build` against the same
build timed in Rust inside the same process (`Agent._time_in_rust(turn,
1)`: the call the binding makes, timed around it in Rust), memoised (the
same turn again) and a new clock (a new day each build: a new date in the
prompt, so the build memo misses). The two are interleaved build by build,
so each is measured with the same caches and allocator state (and the same
load, on a shared machine).

    python bench.py REPO [N]
"""

import datetime
import statistics
import sys
import time

import proem

repo = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
base = datetime.datetime(2026, 11, 21, 9, 30, tzinfo=datetime.timezone.utc)
agent = proem.Agent(f"{repo}/examples/atlas")


def p50(ns):
    return statistics.median(ns) / 1000


def measure(new_clock, count):
    rust, py = [], []
    for i in range(count + 20):
        day = i if new_clock else 0
        turn = {"channel": "telegram", "now": (base + datetime.timedelta(days=day)).isoformat()}
        if i % 2 == 0:
            ns = agent._time_in_rust(turn, 1, False)[0]
        else:
            started = time.perf_counter_ns()
            agent.build(turn)
            ns = time.perf_counter_ns() - started
        if i >= 20:  # the first ten of each warm up
            (rust if i % 2 == 0 else py).append(ns)
    return rust, py


for label, new_clock, count in (("memoised", False, n), ("new clock", True, max(n // 4, 150))):
    rust, py = measure(new_clock, count)
    r, p = p50(rust), p50(py)
    print(
        f"python {label}: rust p50 {r:.1f} µs, python p50 {p:.1f} µs, +{p - r:.1f} µs ({(p / r - 1) * 100:+.1f}%), "
        f"n={len(rust)} each"
    )
