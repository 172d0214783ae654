"""A turn from Python is untrusted input (docs/SECURITY.md §0, "Python
binding: a turn's values"): whatever it holds, the binding answers a
ProemError naming the field, or builds; it never crashes, recurses without
bound or raises something else."""

import math

import pytest

import proem
from conftest import NOW


def cyclic_list():
    items = []
    items.append(items)
    return items


def cyclic_dict():
    d = {}
    d["self"] = d
    return d


def nested(depth):
    value = "leaf"
    for _ in range(depth):
        value = [value]
    return value


HOSTILE = [
    ({"channel": object()}, "channel"),
    ({"channel": b"telegram"}, "channel"),
    ({"owners": {"a", "b"}}, "owners"),
    ({"extra": lambda: "x"}, "extra"),
    ({"extra": "\ud800"}, "extra"),
    ({"tools": [{"name": "a", "description": "x\udc00"}]}, "tools"),
    ({"tools": [{"name": "a", "parameters": {"\ud800": 1}}]}, "tools"),
    ({"budget": math.nan}, "budget"),
    ({"budget": math.inf}, "budget"),
    ({"budget": 10**100}, "budget"),
    ({"budget": -(10**100)}, "budget"),
    ({"tools": [{"name": "a", "parameters": {1: "non-str key"}}]}, "tools"),
    ({"tools": [{"name": "a", "parameters": cyclic_list()}]}, "tools"),
    ({"tools": [{"name": "a", "parameters": cyclic_dict()}]}, "tools"),
    ({"tools": [{"name": "a", "parameters": nested(100_000)}]}, "tools"),
    ({"heartbeat": "yes"}, "heartbeat"),
    ({"now": 1.5}, "now"),
]


@pytest.mark.parametrize("turn, field", HOSTILE, ids=[str(i) for i in range(len(HOSTILE))])
def test_a_hostile_value_is_a_bad_request_naming_its_field(repo, turn, field):
    agent = proem.Agent(repo / "examples" / "marlow")
    with pytest.raises(proem.ProemError) as raised:
        agent.build(dict(turn, now=NOW) if "now" not in turn else turn)
    assert raised.value.code == "bad-request", raised.value.message
    assert raised.value.field == field, raised.value.message
    assert raised.value.message.startswith(f"field `{field}`: ")


def test_a_non_str_key_is_refused_and_a_mapping_is_a_dict(repo):
    agent = proem.Agent(repo / "examples" / "marlow")
    with pytest.raises(proem.ProemError) as raised:
        agent.build({1: "x"})
    assert raised.value.code == "bad-request" and "str" in raised.value.message
    from types import MappingProxyType

    assert agent.build(MappingProxyType({"now": NOW})).prompt == agent.build(now=NOW).prompt
    for not_a_turn in (["channel"], "channel", 42):
        with pytest.raises(TypeError):
            agent.build(not_a_turn)


class EndlessMapping:
    """A Mapping whose keys never end (each one a new str)."""

    def __getitem__(self, key):
        return "x"

    def __iter__(self):
        n = 0
        while True:
            n += 1
            yield f"k{n}"

    def __len__(self):
        return 1


class FailingMapping(EndlessMapping):
    def __getitem__(self, key):
        raise RuntimeError("no")

    def __iter__(self):
        yield "channel"


class IntKeyedMapping(EndlessMapping):
    def __iter__(self):
        while True:
            yield 1


def test_a_mapping_that_never_ends_or_fails_is_a_bad_request(repo):
    import collections.abc

    for cls in (EndlessMapping, FailingMapping, IntKeyedMapping):
        collections.abc.Mapping.register(cls)
    agent = proem.Agent(repo / "examples" / "marlow")
    for turn, words in ((EndlessMapping(), "more than"), (FailingMapping(), "RuntimeError"), (IntKeyedMapping(), "str")):
        with pytest.raises(proem.ProemError) as raised:
            agent.build(turn)
        assert raised.value.code == "bad-request", raised.value.message
        assert words in raised.value.message, raised.value.message
        assert raised.value.exit_code == 2, "a refused turn is a usage error, as the native half's refusals"


def test_a_huge_string_is_budgeted_not_refused(repo):
    agent = proem.Agent(repo / "examples" / "marlow")
    built = agent.build(now=NOW, extra="x " * 2_000_000, budget=20_000)
    assert built.tokens.total <= 20_000
    assert len(built.prompt) < 4_000_000


def test_a_lone_surrogate_is_refused_in_the_words_node_uses(repo):
    """One rule for both bindings: a string that is not Unicode text is a
    bad request naming its field (the HTTP route refuses it as bad JSON)."""
    agent = proem.Agent(repo / "examples" / "marlow")
    for turn, field in (({"now": NOW, "group_title": "a\udfffb"}, "group_title"), ({"now": NOW, "owners": ["\ud83d"]}, "owners")):
        with pytest.raises(proem.ProemError) as raised:
            agent.build(turn)
        assert (raised.value.code, raised.value.field, raised.value.exit_code) == ("bad-request", field, 2)
        assert "lone surrogate" in raised.value.message, raised.value.message
    assert "\U0001f600 paired" in agent.build(now=NOW, extra="\U0001f600 paired").prompt
