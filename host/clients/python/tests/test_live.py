"""The installed package against a live `proem serve`: the same bytes as
`proem build` for the same turns, typed results, errors, the token."""

import asyncio
import json
import urllib.request
from pathlib import Path

import pytest

import proem_client
from proem_client import AsyncClient, Build, Client, ProemError, Turn

from conftest import MARLOW, NOW, REPO, error_line, python_cli, without_timings

TOOLS = str(MARLOW / "tools.json")

#: (agent, `proem build` flags): every flag, each format, several turns.
TURNS = [
    ("marlow", ["--now", NOW]),
    ("marlow", ["--now", NOW, "--channel", "telegram", "--chat-kind", "group", "--group-title", "Lab", "--format", "anthropic"]),
    ("marlow", ["--now", NOW, "--owner", "u-1", "--owner", "u-2", "--heartbeat", "--format", "openai"]),
    ("marlow", ["--now", NOW, "--replies-optional", "--session-key", "agent:main:subagent:x", "--mode", "task"]),
    ("marlow", ["--now", NOW, "--tools", TOOLS, "--format", "json"]),
    ("marlow", ["--now", NOW, "--extra", "Be brief. ✓", "--timezone", "Europe/Paris", "--budget", "20000"]),
    ("marlow", ["--now", NOW, "--thinking", "high", "--provider", "anthropic", "--model", "claude-sonnet-4-5", "--strict"]),
    ("marlow", ["--now", NOW, "--session-key", "agent:main:heartbeat", "--format", "json", "--strict"]),
    ("scratch", ["--now", NOW, "--heartbeat", "--owner", "me"]),
    ("scratch", ["--now", NOW, "--format", "json"]),
]


def dir_of(agent: str, scratch: Path) -> Path:
    return MARLOW if agent == "marlow" else scratch


def as_fields(flags):
    """`proem build` flags as the request's fields (the mapping the
    package's command line makes), to call the library with."""
    fields = {}
    i = 0
    while i < len(flags):
        name = flags[i][2:].replace("-", "_")
        if name in ("heartbeat", "replies_optional", "strict"):
            fields[name] = True
            i += 1
            continue
        value = flags[i + 1]
        i += 2
        if name == "owner":
            fields.setdefault("owners", []).append(value)
        elif name == "budget":
            fields[name] = int(value)
        elif name == "tools":
            fields[name] = json.loads(Path(value).read_text())
        else:
            fields[name] = value
    return fields


def test_the_package_under_test_is_the_installed_one():
    # Not the source tree: the tests import what `pip install` put in the venv.
    assert "site-packages" in Path(proem_client.__file__).parts, proem_client.__file__
    assert (Path(proem_client.__file__).parent / "py.typed").is_file()


@pytest.mark.parametrize("agent,flags", TURNS)
def test_the_command_line_prints_what_proem_build_prints(server, cli, scratch, agent, flags):
    expected = cli(dir_of(agent, scratch), flags)
    assert expected.returncode == 0, expected.stderr.decode()
    got = python_cli([server, agent, *flags])
    assert got.returncode == 0, got.stderr.decode()
    assert without_timings(got.stdout) == without_timings(expected.stdout)


@pytest.mark.parametrize("agent,flags", TURNS)
def test_build_raw_answers_proem_builds_bytes(server, cli, scratch, agent, flags):
    expected = cli(dir_of(agent, scratch), flags).stdout
    response = Client(server).build_raw(agent, **as_fields(flags))
    assert response.status == 200
    assert without_timings(response.body) == without_timings(expected)


def test_a_time_that_is_not_rfc3339_is_refused_naming_now(server, cli):
    # `proem build` refuses it as a usage error (exit 2); the service as a
    # 400 naming the field, which the client's command line prints (exit 1).
    assert cli(MARLOW, ["--now", "not-a-time"]).returncode == 2
    got = python_cli([server, "marlow", "--now", "not-a-time"])
    assert got.returncode == 1 and b"now" in got.stderr and b"RFC 3339" in got.stderr


@pytest.mark.parametrize(
    "agent,flags",
    [
        ("scratch", ["--now", NOW, "--strict"]),
        ("marlow", ["--now", NOW, "--budget", "10"]),
        ("marlow", ["--now", NOW, "--timezone", "Mars/Olympus"]),
    ],
)
def test_a_failed_build_prints_proem_builds_error_line(server, cli, scratch, agent, flags):
    expected = cli(dir_of(agent, scratch), flags)
    got = python_cli([server, agent, *flags])
    assert (got.returncode, expected.returncode) == (1, 1)
    assert got.stdout == expected.stdout == b""
    # The service names files relative to the agent folder (it never
    # prints its own paths); the CLI prints the path as given.
    folder = str(dir_of(agent, scratch)).rstrip("/") + "/"
    # The service speaks in the request's words: the body's fields where
    # the CLI names its flags.
    if "--budget" in flags:
        line = error_line(got.stderr)
        assert "send a `budget` of at least" in line and "--budget" not in line, line
        return
    in_fields = error_line(expected.stderr).replace(folder, "")
    for flag, field in (("--strict: ", "field `strict`: "), ("--timezone: ", "field `timezone`: ")):
        in_fields = in_fields.replace(flag, field)
    assert error_line(got.stderr) == in_fields


def test_the_json_format_is_a_typed_build(server, cli):
    built = Client(server).build("marlow", now=NOW, owners=["u-1"], format="json")
    assert isinstance(built, Build)
    report = json.loads(cli(MARLOW, ["--now", NOW, "--owner", "u-1", "--format", "json"]).stdout)
    assert built.prompt == report["prompt"] and built.stable + built.dynamic != ""
    assert built.stable_hash == report["stable_hash"] and len(built.stable_hash) == 64
    assert built.tokens.total == report["tokens"]["total"] > 0
    assert [s.id for s in built.sections] == [s["id"] for s in report["sections"]]
    assert [f.name for f in built.files] == [f["name"] for f in report["files"]]
    assert sorted(p.id for p in built.plugins) == ["gpt5-overlay", "hardware-access"]
    assert [p.remembered for p in built.plugins] == [p["remembered"] for p in report["plugins"]]
    again = Client(server).build("marlow", now=NOW, owners=["u-1"], format="json")
    assert [p.remembered for p in again.plugins] == [True, True], "the same turn again is the memo's answer"
    assert all(d.level in ("info", "warn", "error") for d in built.diagnostics)
    assert built.raw["stable_hash"] == built.stable_hash
    assert built.headers["content-type"] == "application/json"


def test_each_format_has_its_type(server):
    client = Client(server)
    report = client.build("marlow", now=NOW, format="json")
    assert client.build("marlow", now=NOW) == report.prompt + "\n"
    anthropic = client.build("marlow", now=NOW, format="anthropic")
    texts = [b["text"] for b in anthropic["system"]]
    assert texts[0] == report.stable and "\n\n".join(texts[1:]) == report.dynamic
    assert anthropic["system"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert anthropic["breakpoints"]["conversation"] == {"type": "ephemeral", "ttl": "5m"}
    openai = client.build("marlow", now=NOW, format="openai")
    assert openai["messages"] == [{"role": "system", "content": report.stable + "\n\n" + report.dynamic}]


def test_inspect_agents_and_agent(server, scratch):
    client = Client(server)
    inspection = client.inspect("marlow", now=NOW)
    assert [h.id for h in inspection.section_hashes] == [s.id for s in inspection.build.sections]
    assert all(len(h.hash) == 16 for h in inspection.section_hashes)
    assert [a.id for a in client.agents()] == ["marlow", "scratch"]
    marlow = client.agent("marlow")
    assert marlow.status == "ok" and marlow.config is not None
    assert marlow.config.budget_tokens == 24000 and marlow.config.model == "gpt-5.1"
    assert sorted(p.id for p in marlow.plugins) == ["gpt5-overlay", "hardware-access"]
    ghost = [p for p in client.agent("scratch").plugins if p.id == "ghost"]
    assert ghost and ghost[0].status == "load_failed" and ghost[0].error


def test_errors_carry_the_problem_document(server):
    client = Client(server)
    with pytest.raises(ProemError) as e:
        client.build("marlow", now=NOW, budget=10)
    assert e.value.status == 422 and e.value.type == "urn:proem:problem:budget-too-small"
    assert e.value.field == "budget" and e.value.problem["needed"] > 10
    with pytest.raises(ProemError) as e:
        client.build("nobody")
    assert e.value.status == 404 and "marlow" in e.value.detail
    with pytest.raises(ProemError) as e:
        client.build("marlow", chat_kind="crowd")
    assert e.value.status == 400 and e.value.field == "chat_kind"


def test_an_unknown_field_goes_through_for_the_server_to_judge(server):
    # A field this package does not know is sent as it is: a newer server
    # takes it, this one names it.
    with pytest.raises(ProemError) as e:
        Client(server).build("marlow", include_everything=True)
    assert e.value.status == 400 and "include_everything" in e.value.detail


def test_every_request_field_is_a_turn_field_and_a_flag(server):
    with urllib.request.urlopen(f"{server}/v1/openapi.json", timeout=10) as r:
        document = json.load(r)
    fields = set(document["components"]["schemas"]["BuildRequest"]["properties"])
    assert set(Turn.__annotations__) == fields
    help_text = python_cli(["--help"]).stdout.decode()
    flags = {f"--{f.replace('_', '-')}" for f in fields - {"owners"}} | {"--owner"}
    assert {f for f in flags if f not in help_text} == set()


def test_the_token_is_sent_as_a_bearer(token_server, cli):
    url, token = token_server
    with pytest.raises(ProemError) as e:
        Client(url).agents()
    assert e.value.status == 401 and e.value.headers.get("www-authenticate") == "Bearer"
    assert [a.id for a in Client(url, token=token).agents()] == ["marlow"]
    out = python_cli([url, "marlow", "--now", NOW], env={"PROEM_TOKEN": token})
    assert out.returncode == 0 and out.stdout == cli(MARLOW, ["--now", NOW]).stdout
    refused = python_cli([url, "marlow", "--now", NOW], env={"PROEM_TOKEN": ""})
    assert refused.returncode == 1 and b"Authorization: Bearer" in refused.stderr


def test_the_async_client_gives_the_same_answers(server, cli):
    turns = [as_fields(flags) for agent, flags in TURNS if agent == "marlow"]

    async def main():
        client = AsyncClient(server)
        raws = await asyncio.gather(*(client.build_raw("marlow", **t) for t in turns * 3))
        built = await client.build("marlow", now=NOW, format="json")
        agents = await client.agents()
        agent = await client.agent("marlow")
        inspection = await client.inspect("marlow", now=NOW)
        return raws, built, agents, agent, inspection

    raws, built, agents, agent, inspection = asyncio.run(main())
    expected = [cli(MARLOW, flags).stdout for agent_, flags in TURNS if agent_ == "marlow"]
    assert [without_timings(r.body) for r in raws] == [without_timings(e) for e in expected * 3]
    assert isinstance(built, Build) and built.stable_hash == inspection.build.stable_hash
    assert [a.id for a in agents] == ["marlow", "scratch"] and agent.id == "marlow"


def test_the_command_line_refuses_what_it_cannot_send(server):
    config = python_cli([server, "marlow", "--config", str(MARLOW / "proem.toml")])
    assert config.returncode == 2 and b"--config" in config.stderr
    assert python_cli([server, "marlow", "--budget", "-5"]).returncode == 2
    missing = python_cli([server, "marlow", "--tools", str(REPO / "no-such-tools.json")])
    assert missing.returncode == 1 and b"tools file" in missing.stderr
