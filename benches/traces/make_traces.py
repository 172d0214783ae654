#!/usr/bin/env python3
"""Writes the two traces of the cache-reuse benchmark (deterministic: a fixed
seed, no network, the same bytes under any hash seed).
`python3 benches/traces/make_traces.py [OUT_DIR [NAME...]]` writes the
named traces (default: both) into OUT_DIR (default: beside this file); the
format is host/full/src/replay/trace.rs's. week.jsonl is tracked beside
this file; support.jsonl (2.6 MB) is not: `proem_full::replay::traces`
writes it into the target folder with this script when it is missing.

- week.jsonl: a week of one personal agent: a Telegram DM with its owner in
  bursts through the day, a Discord group with gaps of minutes to an hour
  (the group's recent messages as the per-turn extra prompt), two cron
  sub-agent runs a day, a heartbeat every 30 minutes from 08:00 to 22:00;
  MEMORY.md grows a few times a day, USER.md changes once, sessions reset
  daily at 04:00 as OpenClaw's do.
- support.jsonl: a day of a busy support agent on web chat: 150 customer
  sessions of 3 to 8 turns, overlapping, each turn with per-turn extra
  context (the customer record and retrieved help-centre articles); the
  refund policy in AGENTS.md is edited once at midday.
"""
import json, random, os, sys, datetime

HERE = os.path.dirname(os.path.abspath(__file__))
WORDS = ("the a to of and in that is for it on with as you this be are or your can at by from we will have not "
         "please order account invoice payment refund shipping delivery package tracking address update change "
         "check status today tomorrow morning evening meeting calendar reminder note list plan project draft review "
         "email message team family dinner trip flight hotel booking weather rain sunny garden kids school doctor "
         "appointment budget bill bank card subscription plan upgrade cancel issue error login password reset "
         "device app version install support ticket agent customer product price discount code week month year "
         "time later soon again thanks great sure maybe need want know think look find send share call write read "
         "start stop finish open close move keep make take give get help show tell ask try use work run fix").split()

def text(rng, lo, hi):
    n = rng.randint(lo, hi)
    out, sentence = [], []
    for _ in range(n):
        sentence.append(rng.choice(WORDS))
        if len(sentence) >= rng.randint(6, 16):
            out.append(" ".join(sentence).capitalize() + ".")
            sentence = []
    if sentence:
        out.append(" ".join(sentence).capitalize() + ".")
    return " ".join(out)

def paragraphs(rng, n, lo=40, hi=90, heading=None):
    parts = [heading] if heading else []
    for i in range(n):
        parts.append(f"## {text(rng, 2, 4).rstrip('.')}\n\n{text(rng, lo, hi)}")
    return "\n\n".join(parts) + "\n"

def tool(rng, name, params):
    props = {p: {"type": "string", "description": text(rng, 6, 14)} for p in params}
    return {"name": name, "description": text(rng, 15, 40),
            "parameters": {"type": "object", "properties": props, "required": params[:1]}}

def iso(t):
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")

def write(out_dir, name, lines):
    """Writes the trace whole, then renames it: a reader never sees half."""
    path = os.path.join(out_dir, name)
    part = f"{path}.{os.getpid()}.part"
    with open(part, "w", encoding="utf-8", newline="\n") as f:
        for line in lines:
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
    os.replace(part, path)

def week():
    rng = random.Random(30)
    tools = [tool(rng, n, p) for n, p in [
        ("exec", ["command", "cwd"]), ("read", ["path"]), ("write", ["path", "content"]), ("edit", ["path", "old", "new"]),
        ("web_search", ["query"]), ("web_fetch", ["url"]), ("memory_search", ["query"]), ("memory_get", ["path"]),
        ("message", ["to", "text"]), ("cron", ["schedule", "task"]), ("sessions_spawn", ["task", "agent"]),
        ("calendar", ["range"]), ("image", ["prompt"]), ("browser", ["url", "action"]), ("tts", ["text"])]]
    names = [t["name"] for t in tools]
    files = {
        "proem.toml": "[agent]\nname = \"Juno\"\n\n[provider]\nname = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\n\n[budget]\ntokens = 60000\n",
        "SOUL.md": paragraphs(rng, 4, heading="# Soul"),
        "IDENTITY.md": "# Identity\n\n- Name: Juno\n- Vibe: calm, dry, practical\n",
        "AGENTS.md": paragraphs(rng, 12, heading="# Operating rules"),
        "TOOLS.md": paragraphs(rng, 4, heading="# Tool notes"),
        "USER.md": paragraphs(rng, 2, heading="# Ana"),
        "MEMORY.md": paragraphs(rng, 5, 20, 40, heading="# Memory"),
        "HEARTBEAT.md": "# Heartbeat\n\n- Check the calendar for the next two hours.\n- Check unread mail from family.\n",
    }
    lines = [{"agent": "juno", "files": files, "tools": tools}]
    events = []
    start = datetime.datetime(2026, 11, 23, 4, 0)
    for day in range(7):
        d0 = start + datetime.timedelta(days=day)
        date = d0.strftime("%Y-%m-%d")
        dm = f"agent:juno:telegram:direct:ana:{date}"
        group = f"agent:juno:discord:group:family:{date}"
        # DM bursts: a few turns a minute or two apart.
        for hour in sorted(rng.sample(range(7, 23), 4)):
            t = d0.replace(hour=hour, minute=rng.randint(0, 40))
            for _ in range(rng.randint(2, 5)):
                events.append((t, dict(session=dm, channel="telegram", chat="direct",
                                       tools=names, user=text(rng, 8, 40), reply=text(rng, 40, 220))))
                t += datetime.timedelta(seconds=rng.randint(40, 240))
        # The group: turns minutes to an hour apart, the recent messages as extra.
        t = d0.replace(hour=9, minute=rng.randint(0, 59))
        for _ in range(rng.randint(6, 10)):
            recent = "\n".join(f"[{rng.choice(['Ben', 'Cleo', 'Dad'])}] {text(rng, 5, 25)}" for _ in range(rng.randint(2, 6)))
            events.append((t, dict(session=group, channel="discord", chat="group", group_title="Family",
                                   extra=f"Recent messages:\n{recent}", tools=names[:9],
                                   user=text(rng, 6, 30), reply=text(rng, 20, 120))))
            t += datetime.timedelta(minutes=rng.randint(3, 70))
        # Cron sub-agents: a morning digest and an evening summary.
        for hour, job in [(7, "digest"), (18, "summary")]:
            events.append((d0.replace(hour=hour, minute=0), dict(
                session=f"agent:juno:cron:{job}:{date}", tools=names[:8],
                extra=f"Scheduled job {job}: {text(rng, 10, 20)}", user=f"Run the {job}.", reply=text(rng, 60, 200))))
        # Heartbeats every 30 minutes, 08:00 to 22:00.
        for k in range(29):
            t = d0.replace(hour=8) + datetime.timedelta(minutes=30 * k)
            events.append((t, dict(session=f"agent:juno:heartbeat:{date}", tools=names[:6],
                                   user="Heartbeat: read HEARTBEAT.md and act on it; reply HEARTBEAT_OK when nothing needs attention.",
                                   reply="HEARTBEAT_OK" if rng.random() < 0.8 else text(rng, 10, 40))))
        # Memory: the agent writes to MEMORY.md after a few DM bursts.
        for hour in sorted(rng.sample(range(9, 22), 3)):
            events.append((d0.replace(hour=hour, minute=50), {"edit": {"file": "MEMORY.md", "append": f"\n- {date}: {text(rng, 8, 24)}\n"}}))
        if day == 3:
            events.append((d0.replace(hour=12, minute=5), {"edit": {"file": "USER.md", "append": f"\n{text(rng, 20, 40)}\n"}}))
    return finish(lines, events, "juno")

def support():
    rng = random.Random(31)
    tools = [tool(rng, f"{area}_{verb}", ["id", "note"]) for area in
             ["order", "refund", "ticket", "customer", "subscription", "shipment", "invoice", "kb"]
             for verb in ["get", "update", "search"]]
    names = [t["name"] for t in tools]
    files = {
        "proem.toml": "[agent]\nname = \"Sam\"\nkind = \"predefined\"\n\n[provider]\nname = \"openai\"\nmodel = \"gpt-5.1\"\n\n[budget]\ntokens = 60000\n",
        "SOUL.md": paragraphs(rng, 2, heading="# Voice"),
        "AGENTS.md": paragraphs(rng, 18, heading="# Support policies"),
        "TOOLS.md": paragraphs(rng, 6, heading="# Tool notes"),
    }
    lines = [{"agent": "sam", "files": files, "tools": tools}]
    events = []
    d0 = datetime.datetime(2026, 11, 24, 8, 0)
    for c in range(150):
        t = d0 + datetime.timedelta(seconds=rng.randint(0, 10 * 3600))
        session = f"agent:sam:webchat:direct:c{c:04d}"
        record = f"Customer c{c:04d}: plan {rng.choice(['basic', 'pro', 'team'])}, {rng.randint(1, 40)} orders, {text(rng, 10, 30)}"
        for _ in range(rng.randint(3, 8)):
            articles = "\n\n".join(f"Article {rng.randint(100, 999)}: {text(rng, 80, 200)}" for _ in range(rng.randint(1, 3)))
            events.append((t, dict(session=session, channel="webchat", chat="direct", tools=names,
                                   extra=f"{record}\n\nRetrieved help-centre articles:\n{articles}",
                                   user=text(rng, 8, 50), reply=text(rng, 40, 180))))
            t += datetime.timedelta(seconds=rng.randint(30, 300))
    events.append((d0.replace(hour=12, minute=0), {"edit": {"file": "AGENTS.md", "append": f"\n## Refunds from today\n\n{text(rng, 40, 80)}\n"}}))
    return finish(lines, events, "sam")

def finish(lines, events, agent):
    events.sort(key=lambda e: e[0])
    pending = []
    for t, e in events:
        if "edit" in e:
            pending.append(e["edit"])
            continue
        line = {"agent": agent, "time": iso(t), **e}
        if pending:
            line["edits"], pending = pending, []
        lines.append(line)
    return lines

TRACES = {"week.jsonl": week, "support.jsonl": support}

if __name__ == "__main__":
    out_dir = sys.argv[1] if len(sys.argv) > 1 else HERE
    names = sys.argv[2:] or sorted(TRACES)
    unknown = [n for n in names if n not in TRACES]
    if unknown:
        sys.exit(f"make_traces.py: unknown trace {unknown[0]!r} (known: {', '.join(sorted(TRACES))})")
    os.makedirs(out_dir, exist_ok=True)
    for name in names:
        write(out_dir, name, TRACES[name]())
