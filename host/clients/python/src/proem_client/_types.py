"""The typed results: a build's JSON report, an inspection, the agents.

Each is a frozen dataclass read from the server's JSON with every member's
type checked, so a server that answers something else raises ProemError
(`BAD_RESPONSE`) instead of handing on a half-built object. Each keeps the
whole document in `raw`: members a newer server adds are there before this
package knows their names.
"""

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Type, TypeVar

from . import _errors
from ._errors import ProemError

T = TypeVar("T")


class _Doc:
    """Reads members of one JSON object, naming the path of a bad one."""

    def __init__(self, value: Any, path: str) -> None:
        if not isinstance(value, dict):
            raise _bad(path, "an object", value)
        self.value: Dict[str, Any] = value
        self.path = path

    def get(self, key: str, kind: Type[T], *, optional: bool = False) -> T:
        value = self.value.get(key)
        if value is None and optional:
            return value  # type: ignore[return-value]
        ok = isinstance(value, kind) and not (kind is int and isinstance(value, bool))
        if not ok:
            raise _bad(f"{self.path}.{key}", kind.__name__, value)
        return value  # type: ignore[return-value]

    def list_of(self, key: str, read: Callable[[Any, str], T]) -> List[T]:
        items = self.get(key, list)
        return [read(item, f"{self.path}.{key}[{i}]") for i, item in enumerate(items)]


def _bad(path: str, wanted: str, value: Any) -> ProemError:
    return ProemError(
        f"the server's answer is not what this client reads: {path} should be {wanted}, "
        f"not {type(value).__name__}",
        type=_errors.BAD_RESPONSE,
    )


def _strings(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise _bad(path, "str", value)
    return value


@dataclass(frozen=True)
class Tokens:
    """Token counts of the prompt and its parts, and the budget."""

    total: int
    stable: int
    dynamic: int
    budget: int
    tool_schemas: int

    @staticmethod
    def read(value: Any, path: str) -> "Tokens":
        d = _Doc(value, path)
        return Tokens(*(d.get(k, int) for k in ("total", "stable", "dynamic", "budget", "tool_schemas")))


@dataclass(frozen=True)
class Section:
    """One section of the prompt: where it came from, its zone and size."""

    id: str
    source: str
    zone: str
    chars: int
    tokens: int
    truncated: bool

    @staticmethod
    def read(value: Any, path: str) -> "Section":
        d = _Doc(value, path)
        return Section(
            d.get("id", str),
            d.get("source", str),
            d.get("zone", str),
            d.get("chars", int),
            d.get("tokens", int),
            d.get("truncated", bool),
        )


@dataclass(frozen=True)
class File:
    """One workspace file: its size on disk and as injected."""

    name: str
    raw_chars: int
    injected_chars: int
    truncated: bool
    missing: bool
    source: str

    @staticmethod
    def read(value: Any, path: str) -> "File":
        d = _Doc(value, path)
        return File(
            d.get("name", str),
            d.get("raw_chars", int),
            d.get("injected_chars", int),
            d.get("truncated", bool),
            d.get("missing", bool),
            d.get("source", str),
        )


@dataclass(frozen=True)
class Plugin:
    """One plugin's part in the build."""

    id: str
    status: str
    elapsed_us: int
    #: True when no call reached the plugin this build: every answer it
    #: needed was remembered (elapsed_us is then 0). False from a server
    #: older than the field.
    remembered: bool = False

    @staticmethod
    def read(value: Any, path: str) -> "Plugin":
        d = _Doc(value, path)
        remembered = d.get("remembered", bool, optional=True)
        return Plugin(d.get("id", str), d.get("status", str), d.get("elapsed_us", int), bool(remembered))


@dataclass(frozen=True)
class Diagnostic:
    """Something the build wants the operator to know (a cut, a failed plugin)."""

    level: str
    code: str
    message: str

    @staticmethod
    def read(value: Any, path: str) -> "Diagnostic":
        d = _Doc(value, path)
        return Diagnostic(d.get("level", str), d.get("code", str), d.get("message", str))


@dataclass(frozen=True)
class Build:
    """A build's JSON report (`format="json"`): the prompt, its cacheable
    `stable` part and per-turn `dynamic` part, the stable part's hash, and
    where every token came from."""

    prompt: str
    stable: str
    dynamic: str
    stable_hash: str
    mode: str
    tokenizer: str
    tokens: Tokens
    sections: List[Section]
    files: List[File]
    plugins: List[Plugin]
    diagnostics: List[Diagnostic]
    #: The whole JSON document, members newer than this package included.
    raw: Dict[str, Any] = field(repr=False, compare=False)
    #: The answer's headers (names lowercased).
    headers: Dict[str, str] = field(default_factory=dict, repr=False, compare=False)

    @staticmethod
    def read(value: Any, path: str = "$", headers: Optional[Mapping[str, str]] = None) -> "Build":
        d = _Doc(value, path)
        return Build(
            prompt=d.get("prompt", str),
            stable=d.get("stable", str),
            dynamic=d.get("dynamic", str),
            stable_hash=d.get("stable_hash", str),
            mode=d.get("mode", str),
            tokenizer=d.get("tokenizer", str),
            tokens=Tokens.read(d.get("tokens", dict), f"{path}.tokens"),
            sections=d.list_of("sections", Section.read),
            files=d.list_of("files", File.read),
            plugins=d.list_of("plugins", Plugin.read),
            diagnostics=d.list_of("diagnostics", Diagnostic.read),
            raw=d.value,
            headers=dict(headers or {}),
        )


@dataclass(frozen=True)
class SectionHash:
    """A hash of one section's text: equal hashes, unchanged section."""

    id: str
    source: str
    hash: str

    @staticmethod
    def read(value: Any, path: str) -> "SectionHash":
        d = _Doc(value, path)
        return SectionHash(d.get("id", str), d.get("source", str), d.get("hash", str))


@dataclass(frozen=True)
class Inspection:
    """`inspect`: the build's report and a hash of every section."""

    build: Build
    section_hashes: List[SectionHash]
    raw: Dict[str, Any] = field(repr=False, compare=False)

    @staticmethod
    def read(value: Any, headers: Optional[Mapping[str, str]] = None) -> "Inspection":
        d = _Doc(value, "$")
        return Inspection(
            Build.read(d.get("build", dict), "$.build", headers),
            d.list_of("section_hashes", SectionHash.read),
            d.value,
        )


@dataclass(frozen=True)
class AgentSummary:
    """An agent as `agents()` lists it. `status`: ok, stale (the last reload
    failed and the previous config still serves) or not_loaded."""

    id: str
    status: str
    last_error: Optional[str]
    reloads: int
    loaded_at: int
    raw: Dict[str, Any] = field(repr=False, compare=False)

    @staticmethod
    def read(value: Any, path: str) -> "AgentSummary":
        d = _Doc(value, path)
        return AgentSummary(
            d.get("id", str),
            d.get("status", str),
            d.get("last_error", str, optional=True),
            d.get("reloads", int),
            d.get("loaded_at", int),
            d.value,
        )


@dataclass(frozen=True)
class AgentConfig:
    """The parts of an agent's proem.toml that say what it builds."""

    agent_id: Optional[str]
    kind: str
    mode: Optional[str]
    provider: Optional[str]
    model: Optional[str]
    budget_tokens: int

    @staticmethod
    def read(value: Any, path: str) -> "AgentConfig":
        d = _Doc(value, path)
        return AgentConfig(
            d.get("agent_id", str, optional=True),
            d.get("kind", str),
            d.get("mode", str, optional=True),
            d.get("provider", str, optional=True),
            d.get("model", str, optional=True),
            d.get("budget_tokens", int),
        )


@dataclass(frozen=True)
class AgentPlugin:
    """One of an agent's configured plugins, and whether it loads."""

    id: str
    origin: str
    status: str
    error: Optional[str]
    version: Optional[str]
    api_version: Optional[str]
    hooks: Optional[str]
    asks_for: List[str]
    granted: List[str]
    required: bool

    @staticmethod
    def read(value: Any, path: str) -> "AgentPlugin":
        d = _Doc(value, path)
        return AgentPlugin(
            d.get("id", str),
            d.get("origin", str),
            d.get("status", str),
            d.get("error", str, optional=True),
            d.get("version", str, optional=True),
            d.get("api_version", str, optional=True),
            d.get("hooks", str, optional=True),
            d.list_of("asks_for", _strings),
            d.list_of("granted", _strings),
            d.get("required", bool),
        )


@dataclass(frozen=True)
class Agent:
    """`agent(id)`: the summary, and when loaded its config and plugins."""

    id: str
    status: str
    last_error: Optional[str]
    reloads: int
    loaded_at: int
    config: Optional[AgentConfig]
    plugins: List[AgentPlugin]
    memo_hits: Optional[int]
    raw: Dict[str, Any] = field(repr=False, compare=False)

    @staticmethod
    def read(value: Any) -> "Agent":
        summary = AgentSummary.read(value, "$")
        d = _Doc(value, "$")
        config = d.value.get("config")
        return Agent(
            summary.id,
            summary.status,
            summary.last_error,
            summary.reloads,
            summary.loaded_at,
            AgentConfig.read(config, "$.config") if config is not None else None,
            d.list_of("plugins", AgentPlugin.read) if d.value.get("plugins") is not None else [],
            d.get("memo_hits", int, optional=True),
            d.value,
        )


def agent_list(value: Any) -> List[AgentSummary]:
    """`GET /v1/agents`'s `{"agents": [...]}`."""
    return _Doc(value, "$").list_of("agents", AgentSummary.read)
