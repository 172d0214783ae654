"""Type stubs of the proem package (proem in process)."""

import os
from typing import Any, Literal, Mapping, Optional, Sequence, Union

BOUNDARY_MARKER: str

Format = Literal["text", "json", "anthropic", "openai"]
Caching = Union[bool, Mapping[str, bool]]

class ProemError(Exception):
    """A build that could not produce a prompt."""

    message: str
    """What `proem build` prints after `proem: error: `."""
    code: str
    """`bad-request`, `budget-too-small`, `plugin-failed` or `agent-unavailable`
    (the service's problem types)."""
    field: Optional[str]
    """The turn field at fault (`budget`, `now`, `tools`, …), if any."""
    exit_code: int
    """What `proem build` exits with for the same mistake: 2 for a turn
    refused before the build (as the CLI's usage errors), else 1."""

class TokenReport:
    """Token counts of the rendered prompt."""

    total: int
    stable: int
    dynamic: int
    budget: int
    tool_schemas: int

class SectionReport:
    """One section of the final prompt."""

    id: str
    source: str
    zone: Literal["stable", "dynamic"]
    chars: int
    tokens: int
    truncated: bool

class FileReport:
    """One bootstrap file."""

    name: str
    raw_chars: int
    injected_chars: int
    truncated: bool
    missing: bool
    source: str

class PluginReport:
    """One plugin's outcome."""

    id: str
    status: str
    elapsed_us: int
    """Time spent in the plugin this build; 0 when it was `remembered`."""
    remembered: bool
    """Whether this build made no call to the plugin because every answer
    it needed was remembered (the build memo, the plugin answers' memo)."""

class StableInput:
    """One input of the stable part and its digest."""

    section: str
    input: str
    digest: str

class Diagnostic:
    """One thing the build wants its caller to know."""

    level: Literal["info", "warn", "error"]
    code: str
    message: str

class Built:
    """A built prompt and its report."""

    @property
    def prompt(self) -> str:
        """stable + "\\n" + BOUNDARY_MARKER + "\\n" + dynamic."""
    @property
    def stable(self) -> str:
        """The part above the cache boundary: cache it."""
    @property
    def dynamic(self) -> str:
        """This turn's part, below the boundary."""
    @property
    def stable_hash(self) -> str:
        """SHA-256 (hex) of `stable`."""
    @property
    def mode(self) -> Literal["full", "task", "minimal", "none"]: ...
    @property
    def tokenizer(self) -> str: ...
    @property
    def turn_context(self) -> Optional[str]:
        """With `[cache] per_turn = "user_message"`, the per-turn sections
        for the newest user message (else None)."""
    @property
    def exact(self) -> bool:
        """Whether the token counts are the model's own tokenizer's."""
    @property
    def tokens(self) -> TokenReport: ...
    @property
    def stable_inputs(self) -> list[StableInput]:
        """What fed the stable part, with digests."""
    @property
    def sections(self) -> list[SectionReport]: ...
    @property
    def files(self) -> list[FileReport]: ...
    @property
    def plugins(self) -> list[PluginReport]: ...
    @property
    def diagnostics(self) -> list[Diagnostic]: ...
    def render(self, format: Format = "text") -> str:
        """Exactly what `proem build --format FORMAT` prints."""
    def to_anthropic(self) -> dict[str, Any]:
        """`{"system": [...]}`, as `proem build --format anthropic` prints it."""
    def to_openai(self) -> dict[str, Any]:
        """`{"messages": [...]}`, as `proem build --format openai` prints it."""
    def to_dict(self) -> dict[str, Any]:
        """The JSON report (`proem build --format json`)."""

class Agent:
    """One agent folder, opened once: build it once per turn."""

    def __init__(
        self,
        path: Union[str, os.PathLike[str]],
        config: Optional[Union[str, os.PathLike[str]]] = None,
        caching: Optional[Caching] = None,
    ) -> None: ...
    @property
    def path(self) -> os.PathLike[str]: ...
    @property
    def memo_hits(self) -> int:
        """How many builds were answered from the build memo."""
    def build(
        self,
        turn: Optional[Mapping[str, Any]] = None,
        /,
        *,
        mode: Optional[Literal["full", "task", "minimal", "none"]] = ...,
        session_key: Optional[str] = ...,
        heartbeat: bool = ...,
        replies_optional: bool = ...,
        thinking: Optional[str] = ...,
        provider: Optional[str] = ...,
        model: Optional[str] = ...,
        channel: Optional[str] = ...,
        chat_kind: Optional[Literal["direct", "group"]] = ...,
        group_title: Optional[str] = ...,
        extra: Optional[str] = ...,
        owners: Sequence[str] = ...,
        tools: Optional[Union[str, Sequence[Mapping[str, Any]]]] = ...,
        now: Optional[Any] = ...,
        timezone: Optional[str] = ...,
        budget: Optional[int] = ...,
        strict: bool = ...,
    ) -> Built:
        """Builds the prompt for one turn (the GIL released meanwhile)."""
    async def build_async(
        self,
        turn: Optional[Mapping[str, Any]] = None,
        /,
        **fields: Any,
    ) -> Built:
        """`build` on a worker thread, for asyncio."""
