"""`Turn`: the fields of a build request, for type checkers.

The same inputs as `proem build`'s flags (`--chat-kind` is `chat_kind`,
repeated `--owner` is `owners`). Every field is optional. Pass them as
keywords (`client.build("marlow", channel="telegram")`) or spread a
`Turn` (`client.build("marlow", **turn)`); fields a newer server takes
and this list lacks go through as they are.
"""

from typing import Any, Dict, List, Literal, TypedDict, Union


class Turn(TypedDict, total=False):
    """One turn's inputs (`POST /v1/agents/{id}/build`'s body)."""

    #: Force a prompt mode (otherwise: session key, then config, then full).
    mode: Literal["full", "task", "minimal", "none"]
    #: `…:heartbeat…` caps the mode at minimal; `…:subagent:…`, `…:cron:…` at task.
    session_key: str
    #: A heartbeat turn: HEARTBEAT.md and the ack contract, mode at most minimal.
    heartbeat: bool
    #: The agent may stay silent this turn.
    replies_optional: bool
    #: The thinking level for the runtime line.
    thinking: str
    #: Provider name (overrides [provider] name).
    provider: str
    #: Model id (overrides [provider] model; picks the tokenizer).
    model: str
    #: The channel the message came from (telegram, slack, …).
    channel: str
    #: Direct message or group chat.
    chat_kind: Literal["direct", "group"]
    #: The group chat's title.
    group_title: str
    #: Extra system prompt for this turn.
    extra: str
    #: The owners' sender ids.
    owners: List[str]
    #: Tools inline (a list of {name, description, parameters}, OpenAI
    #: function entries, or {"tools": [...]}) or the name of a tools JSON
    #: file inside the agent directory.
    tools: Union[str, List[Any], Dict[str, Any]]
    #: The turn's time, RFC 3339 (only the date reaches the prompt).
    now: str
    #: IANA time zone for the date.
    timezone: str
    #: Whole-prompt token budget.
    budget: int
    #: What to answer: the text (default), the JSON report, Anthropic system
    #: blocks, or one OpenAI system message.
    format: Literal["text", "json", "anthropic", "openai", "prefix", "provider"]
    #: Fail (502) when any plugin failed, instead of building without it.
    strict: bool
