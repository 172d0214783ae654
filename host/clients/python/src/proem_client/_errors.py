"""The one exception the client raises: `ProemError`."""

import json
from typing import Any, Dict, Mapping, Optional

#: The `type` of a problem the client met itself, with no answer from the
#: server to carry one: no connection, no answer in time, an answer over
#: the size cap or not HTTP, a wait longer than the retry budget.
CONNECTION = "urn:proem:client:connection"
TIMEOUT = "urn:proem:client:timeout"
TOO_LARGE = "urn:proem:client:too-large"
BAD_RESPONSE = "urn:proem:client:bad-response"


class ProemError(Exception):
    """A call that did not give a result.

    When the server answered, `status` is its HTTP status and `problem` its
    RFC 9457 problem document (`type`, `title`, `status`, `detail`, and
    members such as `field` for a 400 or `needed` for a 422). When it did
    not, `status` is None and `type` is one of the `urn:proem:client:…`
    names above. `str(error)` is the detail, which for a failed build is the
    message `proem build` prints after `proem: error: `.
    """

    def __init__(
        self,
        detail: str,
        *,
        status: Optional[int] = None,
        type: str = "about:blank",
        title: str = "",
        problem: Optional[Dict[str, Any]] = None,
        headers: Optional[Mapping[str, str]] = None,
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.status = status
        self.type = type
        self.title = title
        self.problem: Dict[str, Any] = dict(problem) if problem else {}
        self.headers: Dict[str, str] = dict(headers) if headers else {}

    @property
    def field(self) -> Optional[str]:
        """The request field the server says is wrong (400, 422), if any."""
        value = self.problem.get("field")
        return value if isinstance(value, str) else None

    def __repr__(self) -> str:
        return f"ProemError(status={self.status!r}, type={self.type!r}, detail={self.detail!r})"


#: What is kept of a body that is not a problem document, for the message.
_SNIPPET_CHARS = 200


def from_response(status: int, reason: str, headers: Mapping[str, str], body: bytes) -> ProemError:
    """The error for a non-2xx answer: its problem document when it sent one,
    else the status and the start of whatever it sent (a proxy's HTML page)."""
    problem: Any = None
    if headers.get("content-type", "").split(";")[0].strip() in ("application/problem+json", "application/json"):
        try:
            problem = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            problem = None
    if not isinstance(problem, dict):
        snippet = body[: _SNIPPET_CHARS * 4].decode("utf-8", "replace")[:_SNIPPET_CHARS].strip()
        detail = f"HTTP {status} {reason}".strip() + (f": {snippet}" if snippet else "")
        return ProemError(detail, status=status, title=reason, headers=headers)
    given = problem.get("detail")
    kind = problem.get("type")
    title = problem.get("title")
    return ProemError(
        given if isinstance(given, str) else f"HTTP {status} {reason}".strip(),
        status=status,
        type=kind if isinstance(kind, str) else "about:blank",
        title=title if isinstance(title, str) else reason,
        problem=problem,
        headers=headers,
    )
