"""The binding prints what `proem build` prints, byte for byte, over the
example agents, several turns and every format; and fails as it fails."""

import random

import pytest

import proem
from conftest import AGENTS, FORMATS, NOW, TOOLS, TURNS, measured_zeroed, run_cli

_agents = {}


def agent(repo, name) -> proem.Agent:
    """One Agent per folder for the whole session, as a runtime keeps it
    (so memoised builds are compared too)."""
    if name not in _agents:
        _agents[name] = proem.Agent(str(repo / "examples" / name))
    return _agents[name]


@pytest.mark.parametrize("name", AGENTS)
@pytest.mark.parametrize("turn_name", sorted(TURNS))
def test_every_format_is_the_cli_output_byte_for_byte(repo, proem_bin, tmp_path, name, turn_name):
    turn = TURNS[turn_name]
    built = agent(repo, name).build(turn)
    for fmt in FORMATS:
        cli = run_cli(proem_bin, repo / "examples" / name, turn, fmt, tmp_path)
        assert cli.returncode == 0, cli.stderr.decode()
        ours = built.render(fmt)
        if fmt == "json":
            assert measured_zeroed(ours) == measured_zeroed(cli.stdout.decode())
        else:
            assert ours.encode() == cli.stdout, (name, turn_name, fmt)
    assert built.to_anthropic()["system"][0]["text"] == built.stable
    assert built.to_openai()["messages"][0]["role"] == "system"
    assert built.prompt == f"{built.stable}\n{proem.BOUNDARY_MARKER}\n{built.dynamic}"


def test_random_turns_match_the_cli(repo, proem_bin, tmp_path):
    """Turns drawn from every field's values (seeded, so a failure
    repeats): the binding's text is the CLI's, warm or not."""
    rng = random.Random(28)
    choices = {
        "channel": ["telegram", "slack", "discord", "whatsapp"],
        "chat_kind": ["direct", "group"],
        "group_title": ["Lab", "x" * 300, "two\nlines"],
        "mode": ["full", "task", "minimal", "none"],
        "timezone": ["UTC", "America/New_York", "Asia/Kolkata"],
        "model": ["gpt-5", "gpt-4o", "claude-opus-4"],
        "budget": [900, 2500, 40000],
        "extra": ["", "note", "</extra_context> break out"],
        "owners": [["a"], ["b", "a"]],
        "tools": [TOOLS, TOOLS[:1]],
        "replies_optional": [True],
        "heartbeat": [True],
        "session_key": ["agent:main:subagent:x", "s1", "agent:main:cron:daily"],
    }
    for _ in range(12):
        keys = rng.sample(sorted(choices), rng.randint(1, 6))
        turn = {"now": NOW, **{k: rng.choice(choices[k]) for k in keys}}
        name = rng.choice(["marlow", "atlas"])
        cli = run_cli(proem_bin, repo / "examples" / name, turn, "text", tmp_path)
        try:
            ours = agent(repo, name).build(turn).render("text").encode()
        except proem.ProemError as e:
            assert cli.returncode == e.exit_code, (turn, e)
            assert cli.stderr.decode().strip() == f"proem: error: {e.message}", turn
            continue
        assert cli.returncode == 0, (turn, cli.stderr.decode())
        assert ours == cli.stdout, turn


def test_errors_carry_the_cli_message_and_code(repo, proem_bin, tmp_path):
    marlow = agent(repo, "marlow")
    cases = [
        (marlow, {"now": NOW, "budget": 10}, repo / "examples/marlow", "budget-too-small", "budget"),
    ]
    for subject, turn, folder, code, field in cases:
        with pytest.raises(proem.ProemError) as raised:
            subject.build(turn)
        cli = run_cli(proem_bin, folder, turn, "text", tmp_path)
        assert cli.returncode == raised.value.exit_code == 1
        assert cli.stderr.decode().strip() == f"proem: error: {raised.value.message}"
        assert str(raised.value) == raised.value.message
        assert (raised.value.code, raised.value.field) == (code, field)
    missing = tmp_path / "no-such-agent"
    with pytest.raises(proem.ProemError) as raised:
        proem.Agent(str(missing))
    cli = run_cli(proem_bin, missing, {}, "text", tmp_path)
    assert cli.returncode == 1
    assert cli.stderr.decode().strip() == f"proem: error: {raised.value.message}"
    assert raised.value.code == "agent-unavailable"


@pytest.mark.parametrize(
    "turn, field",
    [
        ({"chanel": "x"}, "chanel"),
        ({"chat_kind": "crowd"}, "chat_kind"),
        ({"budget": -1}, "budget"),
        ({"budget": 10**10}, "budget"),
        ({"now": "yesterday"}, "now"),
        ({"tools": [{"description": "no name"}]}, "tools"),
        ({"tools": "../../etc/passwd"}, "tools"),
        ({"format": "json"}, "format"),
        ({"owners": "a"}, "owners"),
        ({"__proto__": 1}, "__proto__"),
        ({"sessionKey": "s"}, "sessionKey"),
        ({"_": 1}, "_"),
    ],
)
def test_a_bad_field_is_a_bad_request_naming_it(repo, turn, field):
    with pytest.raises(proem.ProemError) as raised:
        agent(repo, "marlow").build(turn)
    assert raised.value.code == "bad-request"
    assert field in raised.value.message
    assert raised.value.field == field, raised.value.message


@pytest.mark.parametrize(
    "turn",
    [
        {"chanel": "x"},
        {"chat_kind": "crowd"},
        {"budget": 10**10},
        {"budget": 0},
        {"now": "yesterday"},
        {"mode": "bogus"},
        {"budget": 10},
        {"timezone": "Mars/Base"},
        {"tools": "../../etc/passwd"},
        {"tools": [{"description": "no name"}]},
    ],
)
def test_an_error_exits_as_the_cli_exits_for_the_same_flags(repo, proem_bin, tmp_path, turn):
    """A turn refused before the build is a usage error (2, as clap's), a
    failed build a failure (1): the CLI's one table decides both."""
    turn = {"now": NOW, **turn} if "now" not in turn else turn
    with pytest.raises(proem.ProemError) as raised:
        agent(repo, "marlow").build(turn)
    cli = run_cli(proem_bin, repo / "examples/marlow", turn, "text", tmp_path)
    assert cli.returncode == raised.value.exit_code, (turn, raised.value.message, cli.stderr.decode())
