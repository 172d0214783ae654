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
    StableInput,
    TokenReport,
    _refused,
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
    "StableInput",
    "TokenReport",
]


# A turn has fewer members than this; a Mapping that yields more (one that
# never ends, say) is refused before it is copied, as is a key that is not
# a str: the copy is bounded whatever the Mapping does.
_MAX_MEMBERS = 256


def _bad_turn(message: str) -> ProemError:
    """The native half's own refusal of a turn (its message, code and exit
    status: one rule for both halves)."""
    return _refused(message)


def _as_dict(turn: Optional[Mapping[str, Any]]) -> Any:
    """A Mapping that is not a dict, as a dict (the native half reads dicts),
    copied a member at a time up to ``_MAX_MEMBERS``."""
    if turn is None or type(turn) is dict or not isinstance(turn, Mapping):
        return turn
    copied = {}
    try:
        for count, key in enumerate(turn):
            if count >= _MAX_MEMBERS:
                raise _bad_turn(f"it has more than {_MAX_MEMBERS} members")
            if not isinstance(key, str):
                raise _bad_turn(f"a turn member's name must be a str, not {type(key).__name__}")
            copied[key] = turn[key]
    except ProemError:
        raise
    except Exception as e:  # the Mapping's own code failed: say so as a bad turn
        raise _bad_turn(f"it could not be read: {type(e).__name__}: {e}") from e
    return copied


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
        return self._build(_as_dict(turn), fields)

    async def build_async(self, turn: Optional[Mapping[str, Any]] = None, /, **fields: Any) -> Built:
        """:meth:`build` on a worker thread (``asyncio.to_thread``), so the
        event loop goes on while it builds."""
        request = self._request(_as_dict(turn), fields)
        return await asyncio.to_thread(self._build_request, request)

    def __repr__(self) -> str:
        return f"Agent({str(self.path)!r})"

