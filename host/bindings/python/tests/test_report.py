"""Every field of the JSON report (`proem build --format json`) is on the
binding's objects, with the CLI's value: walked from the CLI's own report,
so a field added to it and forgotten here fails."""

import pytest

import proem
from conftest import AGENTS, NOW, TURNS, cli_report, per_turn_config

# What a build measured (how it ran, never what it built).
MEASURED = {"elapsed_us", "remembered"}


def assert_has_report(ours, report, path):
    """`ours` (a Built, a row object) has every key of `report`, equal."""
    for key, value in report.items():
        where = f"{path}.{key}"
        assert hasattr(ours, key), f"{where} is in the CLI's JSON report and not on {type(ours).__name__}"
        mine = getattr(ours, key)
        if isinstance(value, dict):
            assert_has_report(mine, value, where)
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            assert len(mine) == len(value), where
            for i, (row, expected) in enumerate(zip(mine, value)):
                assert_has_report(row, expected, f"{where}[{i}]")
        elif key not in MEASURED:
            assert mine == value, where


@pytest.mark.parametrize("name", AGENTS)
def test_every_report_field_is_on_the_binding_objects(repo, proem_bin, tmp_path, name):
    agent = proem.Agent(repo / "examples" / name)
    for turn in TURNS.values():
        assert_has_report(agent.build(turn), cli_report(proem_bin, repo / "examples" / name, turn, tmp_path), name)


def test_turn_context_is_on_the_binding_object_when_the_report_has_it(repo, proem_bin, tmp_path):
    config = per_turn_config(repo, tmp_path)
    marlow = repo / "examples" / "marlow"
    report = cli_report(proem_bin, marlow, {"now": NOW}, tmp_path, config)
    assert report.get("turn_context"), "the per-turn config gave no turn_context"
    assert_has_report(proem.Agent(marlow, config=config).build(now=NOW), report, "marlow+per_turn")
    assert proem.Agent(marlow).build(now=NOW).turn_context is None


def test_the_same_turn_built_twice_is_remembered_the_second_time(repo):
    agent = proem.Agent(repo / "examples" / "marlow")
    turn = {"now": NOW, "channel": "slack", "extra": "remembered?"}
    agent.build(turn)
    again = agent.build(turn)
    assert again.plugins, "marlow has plugins"
    assert all(p.remembered and p.elapsed_us == 0 for p in again.plugins), again.plugins
    assert [p["remembered"] for p in again.to_dict()["plugins"]] == [p.remembered for p in again.plugins]
    assert "remembered=True" in repr(again.plugins[0])
