"""The Python shape of the API: typed results, keywords or a dict, the GIL
released during a build, the asyncio form, caching, the stubs."""

import asyncio
import datetime
import sys
import threading
from pathlib import Path

import pytest

import proem
from conftest import NOW


def test_results_are_typed_objects(repo):
    built = proem.Agent(repo / "examples" / "marlow").build(channel="telegram", now=NOW)
    assert isinstance(built.tokens, proem.TokenReport) and built.tokens.total > 0
    assert built.tokens.total >= built.tokens.stable + built.tokens.dynamic
    assert all(isinstance(s, proem.SectionReport) and s.zone in ("stable", "dynamic") for s in built.sections)
    assert all(isinstance(f, proem.FileReport) for f in built.files) and built.files
    assert [p.id for p in built.plugins] == sorted(p.id for p in built.plugins) and built.plugins
    assert all(p.status == "ok" for p in built.plugins)
    assert all(isinstance(d, proem.Diagnostic) and d.level in ("info", "warn", "error") for d in built.diagnostics)
    assert len(built.stable_hash) == 64 and built.mode == "full"
    assert built.to_dict()["stable_hash"] == built.stable_hash
    assert "False" in repr(built.sections[0]) or "True" in repr(built.sections[0])


def test_keywords_a_dict_and_a_datetime_are_the_same_turn(repo):
    agent = proem.Agent(str(repo / "examples" / "marlow"))
    when = datetime.datetime(2026, 11, 21, 9, 30, tzinfo=datetime.timezone.utc)
    a = agent.build({"channel": "slack", "now": NOW})
    b = agent.build(channel="slack", now=when)
    c = agent.build({"channel": "discord"}, channel="slack", now=NOW, budget=None)
    assert a.prompt == b.prompt == c.prompt
    with pytest.raises(proem.ProemError) as raised:
        agent.build(now=datetime.datetime(2026, 11, 21))
    assert raised.value.field == "now"
    with pytest.raises(TypeError):
        agent.build(["channel"])


def test_caching_off_builds_the_same_bytes_and_remembers_nothing(repo):
    cached = proem.Agent(repo / "examples" / "atlas")
    uncached = proem.Agent(repo / "examples" / "atlas", caching=False)
    partial = proem.Agent(repo / "examples" / "atlas", caching={"builds": False, "token_counts": True})
    for _ in range(3):
        prompts = {a.build(now=NOW).prompt for a in (cached, uncached, partial)}
        assert len(prompts) == 1
    assert cached.memo_hits == 2
    assert uncached.memo_hits == 0 and partial.memo_hits == 0
    for bad in ({"bulds": True}, {"builds": "yes"}, "on"):
        with pytest.raises(ValueError):
            proem.Agent(repo / "examples" / "atlas", caching=bad)


def test_the_gil_is_released_while_it_builds(repo):
    """With a switch interval longer than the test, a thread waiting for
    the GIL runs during a build only if the build released it."""
    agent = proem.Agent(repo / "examples" / "atlas", caching=False)
    building = threading.Event()
    go = threading.Event()
    seen = []

    def watcher():
        go.wait()
        seen.append(building.is_set())

    previous = sys.getswitchinterval()
    sys.setswitchinterval(100.0)
    try:
        t = threading.Thread(target=watcher)
        t.start()
        go.set()
        building.set()
        agent.build(now=NOW)
        building.clear()
        t.join()
    finally:
        sys.setswitchinterval(previous)
    assert seen == [True]


def test_build_async_runs_off_the_event_loop(repo):
    agent = proem.Agent(repo / "examples" / "atlas", caching=False)

    async def main():
        ticks = 0
        done = False

        async def ticker():
            nonlocal ticks
            while not done:
                ticks += 1
                await asyncio.sleep(0)

        task = asyncio.create_task(ticker())
        results = await asyncio.gather(*(agent.build_async(now=NOW, channel=c) for c in ("a", "b", "c")))
        done = True
        await task
        return results, ticks

    results, ticks = asyncio.run(main())
    assert [r.prompt for r in results] == [agent.build(now=NOW, channel=c).prompt for c in ("a", "b", "c")]
    assert ticks > 0


def test_the_package_ships_its_stubs_and_docstrings():
    root = Path(proem.__file__).parent
    assert (root / "py.typed").is_file()
    stubs = (root / "__init__.pyi").read_text()
    for name in ("class Agent", "def build(", "async def build_async(", "class Built", "def to_anthropic", "class ProemError"):
        assert name in stubs, name
    assert proem.Agent.build.__doc__ and proem.Agent.build_async.__doc__ and proem.Built.render.__doc__
    assert proem.__doc__ and "build_async" in proem.__doc__
