"""One HTTP exchange, bounded in time and size whatever the server does.

`exchange` sends one request and reads one answer. Every byte it sends
or receives goes through a `_DeadlineSocket`, which gives each socket
operation only the time left until the exchange's deadline: so a server
that never answers, or answers one byte at a time, or sends headers
forever, costs at most `timeout` seconds in all (a plain socket timeout
would restart at every byte). The body is read up to `max_bytes` and no
further. Redirects are not followed (the token goes only to the server
named), and nothing is decompressed (no Accept-Encoding is sent).
Header lines and counts are bounded by http.client (64 KiB, 100 headers).
"""

import http.client
import io
import socket
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from . import _errors
from ._errors import ProemError

#: How much of the body is read per call into the socket.
_CHUNK = 64 * 1024


@dataclass(frozen=True)
class Response:
    """An HTTP answer as it came: status, headers (names lowercased, repeated
    ones joined with ", ") and the body's bytes."""

    status: int
    reason: str
    headers: Dict[str, str] = field(repr=False)
    body: bytes = field(repr=False)

    @property
    def text(self) -> str:
        """The body as UTF-8 text."""
        return self.body.decode("utf-8")

    @property
    def content_type(self) -> str:
        """The media type without parameters (`application/json`)."""
        return self.headers.get("content-type", "").split(";")[0].strip().lower()


class _DeadlineSocket:
    """A connected socket whose sends and receives all end by one deadline.

    Like a plain socket, it stays open while a reader made by `makefile`
    is: http.client closes the connection as soon as it has the status
    line of a `Connection: close` answer, and reads the body after."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self._sock = sock
        self._deadline = deadline
        self._readers = 0
        self._closing = False

    def _arm(self) -> None:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout("the exchange's deadline passed")
        self._sock.settimeout(left)

    def sendall(self, data: Any) -> None:
        self._arm()
        self._sock.sendall(data)

    def recv_into(self, buffer: Any) -> int:
        self._arm()
        return self._sock.recv_into(buffer)

    def makefile(self, mode: str = "rb", *args: Any, **kwargs: Any) -> io.BufferedReader:
        self._readers += 1
        return io.BufferedReader(_DeadlineReader(self))

    def reader_closed(self) -> None:
        self._readers -= 1
        self._close_when_unused()

    def close(self) -> None:
        self._closing = True
        self._close_when_unused()

    def _close_when_unused(self) -> None:
        if self._closing and self._readers <= 0:
            self._sock.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


class _DeadlineReader(io.RawIOBase):
    """The raw stream http.client reads an answer from."""

    def __init__(self, sock: _DeadlineSocket) -> None:
        self._sock = sock

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        return self._sock.recv_into(buffer)

    def close(self) -> None:
        if not self.closed:
            self._sock.reader_closed()
        super().close()


def _remaining(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise socket.timeout("the exchange's deadline passed")
    return left


class _Connection(http.client.HTTPConnection):
    def __init__(self, host: str, port: Optional[int], deadline: float) -> None:
        super().__init__(host, port, timeout=_remaining(deadline))
        self._deadline = deadline

    def connect(self) -> None:
        self.timeout = _remaining(self._deadline)
        super().connect()
        self.sock = _DeadlineSocket(self.sock, self._deadline)


class _TlsConnection(http.client.HTTPSConnection):
    def __init__(self, host: str, port: Optional[int], deadline: float) -> None:
        super().__init__(host, port, timeout=_remaining(deadline))
        self._deadline = deadline

    def connect(self) -> None:
        self.timeout = _remaining(self._deadline)
        super().connect()
        self.sock = _DeadlineSocket(self.sock, self._deadline)


def split_base_url(base_url: str) -> Tuple[str, str, Optional[int], str]:
    """(scheme, host, port, path prefix) of `http://HOST[:PORT][/PREFIX]`."""
    parts = urllib.parse.urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"base_url {base_url!r} is not an http:// or https:// address (e.g. http://127.0.0.1:7878)")
    if parts.query or parts.fragment or parts.username or parts.password:
        raise ValueError(f"base_url {base_url!r} must be scheme, host, port and path only (the token goes in token=)")
    try:
        port = parts.port
    except ValueError as e:
        raise ValueError(f"base_url {base_url!r}: {e}") from None
    return parts.scheme, parts.hostname, port, parts.path.rstrip("/")


def exchange(
    base_url: str,
    method: str,
    path: str,
    headers: Dict[str, str],
    body: Optional[bytes],
    *,
    timeout: float,
    max_bytes: int,
) -> Response:
    """Sends one request and reads its whole answer, within `timeout` seconds
    and `max_bytes` of body. Raises ProemError: `CONNECTION` when no answer
    came (refused, reset, closed before a status line: worth retrying),
    `TIMEOUT`, `TOO_LARGE`, or `BAD_RESPONSE` (not HTTP)."""
    scheme, host, port, prefix = split_base_url(base_url)
    deadline = time.monotonic() + timeout
    kind = _TlsConnection if scheme == "https" else _Connection
    connection: Optional[http.client.HTTPConnection] = None
    answer: Optional[http.client.HTTPResponse] = None
    try:
        connection = kind(host, port, deadline)
        connection.request(method, prefix + path, body=body, headers=headers)
        answer = connection.getresponse()
        answer_headers = _headers(answer)
        data = _read_capped(answer, answer_headers, max_bytes)
        return Response(answer.status, answer.reason, answer_headers, data)
    except socket.timeout:
        raise ProemError(
            f"{base_url}{path}: no complete answer within {timeout:g} s (timeout)", type=_errors.TIMEOUT
        ) from None
    except ProemError:
        raise
    except (http.client.RemoteDisconnected, ConnectionError) as e:
        raise ProemError(f"{base_url}{path}: the connection failed: {e}", type=_errors.CONNECTION) from None
    except http.client.HTTPException as e:
        raise ProemError(
            f"{base_url}{path}: the answer is not valid HTTP: {type(e).__name__}: {str(e)[:200]}",
            type=_errors.BAD_RESPONSE,
        ) from None
    except OSError as e:
        raise ProemError(f"{base_url}{path}: cannot connect: {e}", type=_errors.CONNECTION) from None
    finally:
        if answer is not None:
            answer.close()
        if connection is not None:
            connection.close()


def _headers(answer: http.client.HTTPResponse) -> Dict[str, str]:
    headers: Dict[str, str] = {}
    for name, value in answer.getheaders():
        key = name.lower()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    return headers


def _read_capped(answer: http.client.HTTPResponse, headers: Dict[str, str], max_bytes: int) -> bytes:
    declared = headers.get("content-length", "").strip()
    if declared.isdigit() and len(declared) < 20 and int(declared) > max_bytes:
        raise _too_large(max_bytes, f"it declares {declared} bytes")
    chunks: List[bytes] = []
    total = 0
    while True:
        chunk = answer.read(min(_CHUNK, max_bytes + 1 - total))
        if not chunk:
            return b"".join(chunks)
        total += len(chunk)
        if total > max_bytes:
            raise _too_large(max_bytes, "it sent more")
        chunks.append(chunk)


def _too_large(max_bytes: int, why: str) -> ProemError:
    return ProemError(
        f"the answer is over the client's {max_bytes} byte limit ({why}); raise max_response_bytes if it is legitimate",
        type=_errors.TOO_LARGE,
    )
