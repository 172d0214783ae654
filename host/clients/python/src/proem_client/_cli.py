"""The command line: `proem build`'s flags, answered by a `proem serve`.

It prints exactly what `proem build AGENT_DIR FLAGS` prints for the same
turn (the answer's bytes, unchanged), and on a failed build the same
`proem: error: …` line, exit status 1. Usage errors exit 2, as proem's do.
"""

import argparse
import os
import sys
from typing import Any, Dict, List, Optional

from ._client import DEFAULT_RETRIES, DEFAULT_RETRY_BUDGET, DEFAULT_TIMEOUT, Client
from ._errors import ProemError

#: The largest tools file read, as `proem build --tools` reads.
MAX_TOOLS_FILE_BYTES = 64 * 1024 * 1024

_EPILOG = """\
The token (the content of the server's --token-file) comes from
--token-file FILE or the PROEM_TOKEN environment variable.
Exit status: 0 built, 1 the build or the call failed (the message says why), 2 usage error."""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m proem_client",
        description="Build one turn's system prompt on a proem serve and print it, as `proem build` does.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    p.add_argument("url", metavar="URL", help="the server, as it prints it (http://127.0.0.1:7878)")
    p.add_argument("agent", metavar="AGENT", help="the agent's id (its folder name on the server)")
    turn = p.add_argument_group("the turn (proem build's flags)")
    turn.add_argument("--config", metavar="FILE", help="not available: the server builds with its own proem.toml")
    turn.add_argument("--mode", choices=["full", "task", "minimal", "none"], help="force a prompt mode")
    turn.add_argument("--session-key", metavar="KEY", help="session key (…:heartbeat…, …:subagent:…, …:cron:…)")
    turn.add_argument("--heartbeat", action="store_true", default=None, help="this turn is a heartbeat")
    turn.add_argument(
        "--replies-optional", action="store_true", default=None, help="the agent may stay silent this turn"
    )
    turn.add_argument("--thinking", metavar="LEVEL", help="the thinking level, for the runtime line")
    turn.add_argument("--provider", metavar="P", help="provider name")
    turn.add_argument("--model", metavar="M", help="model id (picks the tokenizer)")
    turn.add_argument("--channel", metavar="C", help="the channel the message came from")
    turn.add_argument("--chat-kind", choices=["direct", "group"], help="direct message or group chat")
    turn.add_argument("--group-title", metavar="T", help="the group chat's title")
    turn.add_argument("--extra", metavar="TEXT", help="extra system prompt for this turn")
    turn.add_argument(
        "--owner", dest="owners", metavar="ID", action="append", help="an owner's sender id (repeat for several)"
    )
    turn.add_argument("--tools", metavar="FILE", help="a tools JSON file here, sent inline")
    turn.add_argument("--now", metavar="RFC3339", help="the turn's time (default: the server's now)")
    turn.add_argument("--timezone", metavar="TZ", help="IANA time zone for the date")
    turn.add_argument("--budget", metavar="TOKENS", type=_whole_number, help="whole-prompt token budget")
    turn.add_argument(
        "--format", choices=["text", "json", "anthropic", "openai", "prefix", "provider"], default="text", help="output (default: text)"
    )
    turn.add_argument("--strict", action="store_true", default=None, help="fail when any plugin failed")
    call = p.add_argument_group("the call")
    call.add_argument("--token-file", metavar="FILE", help="a file holding the bearer token")
    call.add_argument(
        "--timeout", metavar="SECONDS", type=float, default=DEFAULT_TIMEOUT, help="the most one attempt takes"
    )
    call.add_argument(
        "--retries", metavar="N", type=_whole_number, default=DEFAULT_RETRIES, help="attempts after the first"
    )
    call.add_argument(
        "--retry-budget",
        metavar="SECONDS",
        type=float,
        default=DEFAULT_RETRY_BUDGET,
        help="every wait before a retry ends within this many seconds of the start",
    )
    return p


def _whole_number(text: str) -> int:
    if not text.isdigit() or not text.isascii() or len(text) > 19:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number")
    return int(text)


def _tools(path: str) -> Any:
    """A tools file's JSON, read as `proem build --tools` reads it."""
    import json

    try:
        with open(path, "rb") as f:
            data = f.read(MAX_TOOLS_FILE_BYTES + 1)
    except OSError as e:
        raise ProemError(f"tools file {path}: cannot read: {e.strerror or e}") from None
    if len(data) > MAX_TOOLS_FILE_BYTES:
        raise ProemError(f"tools file {path}: cannot read: over the {MAX_TOOLS_FILE_BYTES} byte limit")
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise ProemError(f"tools file {path}: is not valid UTF-8") from None
    except ValueError as e:
        raise ProemError(f"tools file {path}: invalid JSON: {e}") from None


def _token(token_file: Optional[str]) -> Optional[str]:
    if token_file is None:
        return os.environ.get("PROEM_TOKEN") or None
    try:
        with open(token_file, encoding="utf-8") as f:
            return f.read(4096).strip() or None
    except (OSError, UnicodeDecodeError) as e:
        raise ProemError(f"--token-file {token_file}: cannot read the token: {e}") from None


def main(argv: List[str]) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.config is not None:
        parser.error(
            "--config: the server builds with the proem.toml it serves the agent with; "
            "run `proem build --config FILE` locally, or serve an agent folder with that config"
        )
    turn: Dict[str, Any] = {
        key: getattr(args, key)
        for key in (
            "mode session_key heartbeat replies_optional thinking provider model channel chat_kind "
            "group_title extra owners now timezone budget strict"
        ).split()
    }
    try:
        if args.tools is not None:
            turn["tools"] = _tools(args.tools)
        client = Client(
            args.url, _token(args.token_file), args.timeout, args.retries, retry_budget=args.retry_budget
        )
        response = client.build_raw(args.agent, format=args.format, **turn)
    except ValueError as e:
        parser.error(str(e))
    except ProemError as e:
        print(f"proem: error: {e.detail}", file=sys.stderr)
        return 1
    sys.stdout.buffer.write(response.body)
    sys.stdout.buffer.flush()
    return 0


def run() -> None:
    """The `proem-client` console script."""
    sys.exit(main(sys.argv[1:]))
