"""proem in process: build an LLM agent's system prompt from its folder.

>>> import proem
>>> agent = proem.Agent("examples/marlow")            # once per agent folder
>>> built = agent.build(channel="telegram")            # once per turn
>>> built.stable                                        # cache this part
>>> await agent.build_async(channel="telegram")        # from asyncio

A turn takes the fields of ``proem build``'s flags and of ``proem serve``'s
JSON body (``mode``, ``session_key``, ``heartbeat``, ``replies_optional``,
``thinking``, ``provider``, ``model``, ``channel``, ``chat_kind``,
``group_title``, ``extra``, ``owners``, ``tools``, ``now``, ``timezone``,
``budget``, and ``strict``), as keywords or as one dict. Errors are
:class:`ProemError`, carrying the CLI's message.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import json as _json
from typing import Any, Mapping, Optional

from ._proem import (
    BOUNDARY_MARKER,
    Built,
    Diagnostic,
    FileReport,
    NativeAgent as _NativeAgent,
    PluginReport,
    ProemError,
    SectionReport,
    TokenReport,
)

__all__ = [
    "Agent",
    "BOUNDARY_MARKER",
    "Built",
    "Diagnostic",
    "FileReport",
    "PluginReport",
    "ProemError",
    "SectionReport",
    "TokenReport",
]


def _field(value: Any) -> Any:
    """A turn field as the JSON body has it (a datetime as RFC 3339)."""
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            raise _bad_field("now", "a datetime needs a time zone (tzinfo), e.g. datetime.now(timezone.utc)")
        return value.isoformat()
    return value


def _bad_field(field: str, message: str) -> ProemError:
    """A bad-request ProemError about ``field`` (raised before the build)."""
    err = ProemError(f"field `{field}`: {message}")
    err.message, err.code, err.field, err.exit_code = str(err), "bad-request", field, 1
    return err


def _body(turn: Optional[Mapping[str, Any]], fields: Mapping[str, Any]) -> bytes:
    merged: dict = {}
    if turn is not None:
        if not isinstance(turn, Mapping):
            raise TypeError(f"turn: expected a dict of turn fields, got {type(turn).__name__}")
        merged.update(turn)
    merged.update(fields)
    merged = {k: _field(v) for k, v in merged.items() if v is not None}
    return _json.dumps(merged, ensure_ascii=False).encode("utf-8")


class Agent(_NativeAgent):
    """One agent folder, opened once (its proem.toml read, its plugins
    loaded): build it once per turn. Keep one per agent for the life of the
    process; it reuses what did not change between builds.

    ``config``: a proem.toml to use instead of the folder's.
    ``caching``: ``True`` (everything kept between builds, the default),
    ``False`` (nothing), or a dict of flags (``builds``, ``plugin_outputs``,
    ``token_counts``, ``file_events``, ``prepared_tools``,
    ``workspace_reads``); the prompt is the same either way.
    """

    def build(self, turn: Optional[Mapping[str, Any]] = None, /, **fields: Any) -> Built:
        """Builds the prompt for one turn. The GIL is released while it
        builds. Raises :class:`ProemError` on a bad field or a failed build."""
        return self._build_json(_body(turn, fields))

    async def build_async(self, turn: Optional[Mapping[str, Any]] = None, /, **fields: Any) -> Built:
        """:meth:`build` on a worker thread (``asyncio.to_thread``), so the
        event loop goes on while it builds."""
        body = _body(turn, fields)
        return await asyncio.to_thread(self._build_json, body)

    def __repr__(self) -> str:
        return f"Agent({str(self.path)!r})"

