"""docs/PERFORMANCE.md's binding figures, Python side: a warm build of
examples/atlas (3 plugins) through `proem.Agent.build` against the same
builds timed in Rust inside the same process (`Agent._time_in_rust`), the
same minute: memoised (the same turn again) and a new clock (a new second
each build, so the build memo misses and the plugins run).

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
turn = {"channel": "telegram", "now": base.isoformat()}
body = ('{"channel": "telegram", "now": "%s"}' % base.isoformat()).encode()
agent = proem.Agent(f"{repo}/examples/atlas")


def p50(ns):
    return statistics.median(ns) / 1000


def python_times(new_clock, count):
    times = []
    for i in range(count):
        t = dict(turn, now=(base + datetime.timedelta(seconds=i)).isoformat()) if new_clock else turn
        started = time.perf_counter_ns()
        agent.build(t)
        times.append(time.perf_counter_ns() - started)
    return times


for label, new_clock, count in (("memoised", False, n), ("new clock", True, max(n // 10, 50))):
    for _ in range(2):  # warm both paths, then measure them interleaved
        agent._time_in_rust(body, 20, new_clock)
        python_times(new_clock, 20)
    rust = agent._time_in_rust(body, count, new_clock)
    py = python_times(new_clock, count)
    r, p = p50(rust), p50(py)
    print(f"python {label}: rust p50 {r:.1f} µs, python p50 {p:.1f} µs, +{p - r:.1f} µs ({(p / r - 1) * 100:+.1f}%), n={count}")
