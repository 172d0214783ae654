"""`Client` and `AsyncClient`: the API of `proem serve`, one method a route.

Both share everything but waiting: `_Api` turns a call into a request and
an answer into a result; `Client` runs the attempts in the calling thread,
`AsyncClient` runs each attempt with `asyncio.to_thread` and waits between
attempts with `asyncio.sleep`. So both have the same bounds, retries and
errors (see the package README for why threads and not asyncio streams).
"""

import asyncio
import json
import time
import urllib.parse
from typing import Any, Dict, List, Literal, Optional, Union, overload

from . import _errors, _http, _retry
from ._errors import ProemError
from ._http import Response
from ._retry import MAX_SECONDS, Attempts, RetryPolicy
from ._types import Agent, AgentSummary, Build, Inspection, agent_list

__version__ = "0.2.0"

#: The documented defaults.
DEFAULT_TIMEOUT = 30.0
DEFAULT_RETRIES = 3
DEFAULT_RETRY_BUDGET = 10.0
DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024

#: What a build answers for each format: the report, the prompt's text, or
#: the provider's JSON (`{"system": [...]}`, `{"messages": [...]}`).
BuildResult = Union[Build, str, Dict[str, Any]]


class _Api:
    """Requests and results: everything about a call but how it waits."""

    def __init__(
        self,
        base_url: str,
        token: Optional[str],
        timeout: float,
        retries: int,
        retry_budget: float,
        max_response_bytes: int,
    ) -> None:
        _http.split_base_url(base_url)  # a bad address fails here, not at the first call
        if not isinstance(timeout, (int, float)) or not 0 < timeout <= MAX_SECONDS:
            raise ValueError(f"timeout must be a number of seconds above 0, at most {MAX_SECONDS}, not {timeout!r}")
        if not isinstance(max_response_bytes, int) or max_response_bytes < 1:
            raise ValueError(f"max_response_bytes must be a whole number ≥ 1, not {max_response_bytes!r}")
        if token is not None and (not token or any(c in token for c in "\r\n")):
            raise ValueError("token must be one non-empty line (the content of the server's --token-file)")
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = float(timeout)
        self.policy = RetryPolicy(retries=retries, retry_budget=retry_budget)
        self.max_response_bytes = max_response_bytes

    def headers(self, with_body: bool) -> Dict[str, str]:
        headers = {"User-Agent": f"proem-client-python/{__version__}", "Accept": "application/json, text/plain"}
        if with_body:
            headers["Content-Type"] = "application/json"
        if self.token is not None:
            headers["Authorization"] = f"Bearer {self.token}"
        return headers

    def attempt(self, method: str, path: str, body: Optional[bytes]) -> "Response | ProemError":
        """One exchange; a failure is returned, for the retry rule to judge."""
        try:
            return _http.exchange(
                self.base_url,
                method,
                path,
                self.headers(body is not None),
                body,
                timeout=self.timeout,
                max_bytes=self.max_response_bytes,
            )
        except ProemError as e:
            return e


def _agent_path(agent: str, action: str = "") -> str:
    if not isinstance(agent, str) or not agent:
        raise ValueError(f"agent must be an agent id (its folder name), not {agent!r}")
    return f"/v1/agents/{urllib.parse.quote(agent, safe='')}{action}"


def _turn_body(turn: Dict[str, Any]) -> bytes:
    """The request body: every field given, None meaning "not given".
    Fields this package does not know go as they are: the server names
    any it does not take (400, `field`)."""
    fields = {key: value for key, value in turn.items() if value is not None}
    try:
        return json.dumps(fields, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError) as e:
        raise ValueError(f"the turn cannot be sent as JSON: {e}") from None


def _json(response: Response) -> Any:
    try:
        return json.loads(response.body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ProemError(f"the server's answer is not JSON: {e}", type=_errors.BAD_RESPONSE) from None


def _build_result(response: Response, format: Optional[str]) -> BuildResult:
    """A build's answer as the format asked for: `Build` for json, the
    text for text, the parsed document for the provider formats."""
    if response.content_type == "text/plain":
        try:
            return response.text
        except UnicodeDecodeError as e:
            raise ProemError(f"the server's text is not UTF-8: {e}", type=_errors.BAD_RESPONSE) from None
    document = _json(response)
    if format == "json":
        return Build.read(document, headers=response.headers)
    if not isinstance(document, dict):
        raise ProemError("the server's answer is not a JSON object", type=_errors.BAD_RESPONSE)
    return document


class Client:
    """A client of one `proem serve`.

    `base_url` is the address the server prints (`http://127.0.0.1:7878`);
    `token` the content of its `--token-file`, sent as `Authorization:
    Bearer`. `timeout` bounds one attempt, connect to last byte; a 503 or
    429 answer, or no connection, is tried again up to `retries` times,
    after the server's Retry-After or a backoff, as long as the wait ends
    within `retry_budget` seconds of the call's start. So a call returns or
    raises ProemError within `retry_budget + timeout` seconds. An answer
    over `max_response_bytes` is refused.
    """

    def __init__(
        self,
        base_url: str,
        token: Optional[str] = None,
        timeout: float = DEFAULT_TIMEOUT,
        retries: int = DEFAULT_RETRIES,
        *,
        retry_budget: float = DEFAULT_RETRY_BUDGET,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        self._api = _Api(base_url, token, timeout, retries, retry_budget, max_response_bytes)

    @property
    def base_url(self) -> str:
        return self._api.base_url

    def _call(self, method: str, path: str, body: Optional[bytes] = None) -> Response:
        attempts = Attempts(self._api.policy)
        while True:
            outcome = self._api.attempt(method, path, body)
            wait = attempts.next_wait(outcome)
            if wait is None:
                return _retry.result(outcome, attempts)
            time.sleep(wait)

    def build_raw(self, agent: str, **turn: Any) -> Response:
        """`POST /v1/agents/{agent}/build`: the answer as it came, its body
        exactly what `proem build` prints for the same turn, and its headers."""
        return self._call("POST", _agent_path(agent, "/build"), _turn_body(turn))

    @overload
    def build(self, agent: str, *, format: "Literal['json']", **turn: Any) -> Build: ...
    @overload
    def build(self, agent: str, *, format: "Literal['text', None]" = None, **turn: Any) -> str: ...
    @overload
    def build(self, agent: str, *, format: "Literal['anthropic', 'openai', 'prefix', 'provider']", **turn: Any) -> Dict[str, Any]: ...
    @overload
    def build(self, agent: str, *, format: Optional[str] = None, **turn: Any) -> BuildResult: ...

    def build(self, agent: str, *, format: Optional[str] = None, **turn: Any) -> BuildResult:
        """Builds one turn. The keywords are the request's fields (see
        `Turn`): `channel="telegram"`, `owners=["u1"]`, `tools=[...]`,
        `now="2026-11-21T09:30:00Z"`, `heartbeat=True`, `format="json"`…

        Returns a `Build` for `format="json"`, the prompt's text for
        "text" (the default), the provider's JSON as a dict for
        "anthropic", "openai", "prefix" and "provider". Raises ProemError."""
        return _build_result(self.build_raw(agent, format=format, **turn), format)

    def inspect(self, agent: str, **turn: Any) -> Inspection:
        """`POST /v1/agents/{agent}/inspect`: the build's report and a hash
        of every section's text."""
        response = self._call("POST", _agent_path(agent, "/inspect"), _turn_body(turn))
        return Inspection.read(_json(response), response.headers)

    def agents(self) -> List[AgentSummary]:
        """`GET /v1/agents`: every agent served, sorted by id."""
        return agent_list(_json(self._call("GET", "/v1/agents")))

    def agent(self, agent: str) -> Agent:
        """`GET /v1/agents/{agent}`: status, last reload error, config, plugins."""
        return Agent.read(_json(self._call("GET", _agent_path(agent))))


class AsyncClient:
    """`Client` for asyncio: the same arguments, methods, bounds and errors,
    each method a coroutine. Each attempt runs in the event loop's default
    thread pool (`asyncio.to_thread`); the waits between attempts are
    `asyncio.sleep`, so cancelling a call takes effect at once, while an
    attempt already running ends by its own `timeout`."""

    def __init__(
        self,
        base_url: str,
        token: Optional[str] = None,
        timeout: float = DEFAULT_TIMEOUT,
        retries: int = DEFAULT_RETRIES,
        *,
        retry_budget: float = DEFAULT_RETRY_BUDGET,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        self._api = _Api(base_url, token, timeout, retries, retry_budget, max_response_bytes)

    @property
    def base_url(self) -> str:
        return self._api.base_url

    async def _call(self, method: str, path: str, body: Optional[bytes] = None) -> Response:
        attempts = Attempts(self._api.policy)
        while True:
            outcome = await asyncio.to_thread(self._api.attempt, method, path, body)
            wait = attempts.next_wait(outcome)
            if wait is None:
                return _retry.result(outcome, attempts)
            await asyncio.sleep(wait)

    async def build_raw(self, agent: str, **turn: Any) -> Response:
        """See `Client.build_raw`."""
        return await self._call("POST", _agent_path(agent, "/build"), _turn_body(turn))

    @overload
    async def build(self, agent: str, *, format: "Literal['json']", **turn: Any) -> Build: ...
    @overload
    async def build(self, agent: str, *, format: "Literal['text', None]" = None, **turn: Any) -> str: ...
    @overload
    async def build(self, agent: str, *, format: "Literal['anthropic', 'openai', 'prefix', 'provider']", **turn: Any) -> Dict[str, Any]: ...
    @overload
    async def build(self, agent: str, *, format: Optional[str] = None, **turn: Any) -> BuildResult: ...

    async def build(self, agent: str, *, format: Optional[str] = None, **turn: Any) -> BuildResult:
        """See `Client.build`."""
        return _build_result(await self.build_raw(agent, format=format, **turn), format)

    async def inspect(self, agent: str, **turn: Any) -> Inspection:
        """See `Client.inspect`."""
        response = await self._call("POST", _agent_path(agent, "/inspect"), _turn_body(turn))
        return Inspection.read(_json(response), response.headers)

    async def agents(self) -> List[AgentSummary]:
        """See `Client.agents`."""
        return agent_list(_json(await self._call("GET", "/v1/agents")))

    async def agent(self, agent: str) -> Agent:
        """See `Client.agent`."""
        return Agent.read(_json(await self._call("GET", _agent_path(agent))))
