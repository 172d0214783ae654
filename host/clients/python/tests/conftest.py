"""Fixtures: a live `proem serve`, `proem build` to compare with, and tiny
hostile HTTP servers, all on loopback.

PROEM_BIN names the proem-full executable (host/clients/test.sh passes
target/release/proem-full); without it every test fails, none is skipped.
"""

import json
import os
import queue
import re
import socket
import socketserver
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import pytest

REPO = Path(__file__).resolve().parents[4]
MARLOW = REPO / "examples" / "marlow"
NOW = "2026-11-21T09:30:00Z"


def proem_bin() -> Path:
    value = os.environ.get("PROEM_BIN")
    if not value:
        pytest.fail("PROEM_BIN is not set: run host/clients/test.sh, or set it to target/release/proem-full")
    path = Path(value)
    if not path.is_file():
        pytest.fail(f"PROEM_BIN={value} is not a file: `cargo build --release -p proem-full` makes it")
    return path


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """proem's cache for every server and CLI run here (never ~/.cache)."""
    return tmp_path_factory.mktemp("proem-cache")


@pytest.fixture(scope="session")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small agent made here, whose one plugin never loads (for --strict)."""
    agent = tmp_path_factory.mktemp("agents") / "scratch"
    agent.mkdir()
    (agent / "proem.toml").write_text(
        '[agent]\nid = "scratch"\nname = "Scratch"\n\n[[plugins]]\nid = "ghost"\npath = "plugins/ghost.wasm"\n'
    )
    (agent / "SOUL.md").write_text("You are terse, and kind.\n")
    (agent / "AGENTS.md").write_text("# Rules\n\nAnswer in one line. Ünïcödé is fine: ✓\n")
    (agent / "HEARTBEAT.md").write_text("Check the build queue.\n")
    return agent


class Proem:
    """A running `proem serve`, stopped by `stop`."""

    def __init__(self, args: List[str], cache: Path) -> None:
        env = dict(os.environ, PROEM_CACHE_DIR=str(cache), PROEM_LOG="error")
        self.process = subprocess.Popen(
            [str(proem_bin()), "serve", *args, "--listen", "127.0.0.1:0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        lines: "queue.Queue[str]" = queue.Queue()
        threading.Thread(target=lambda: [lines.put(l.decode()) for l in self.process.stdout], daemon=True).start()
        try:
            line = lines.get(timeout=30)
        except queue.Empty:
            self.stop()
            pytest.fail("proem serve printed no `listening on` line within 30 s")
        match = re.match(r"listening on (http://\S+)", line)
        if not match:
            self.stop()
            pytest.fail(f"proem serve printed {line!r}, not `listening on http://ADDR`")
        self.url = match.group(1)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture(scope="session")
def server(cache_dir: Path, scratch: Path):
    """`proem serve examples/marlow SCRATCH`: its URL."""
    proem = Proem([str(MARLOW), str(scratch)], cache_dir)
    yield proem.url
    proem.stop()


@pytest.fixture(scope="session")
def token_server(cache_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    """A server that needs a bearer token: (URL, token)."""
    token = "s3cret-token-for-the-tests"
    token_file = tmp_path_factory.mktemp("token") / "token"
    token_file.write_text(token + "\n")
    proem = Proem([str(MARLOW), "--token-file", str(token_file)], cache_dir)
    yield proem.url, token
    proem.stop()


@pytest.fixture(scope="session")
def cli(cache_dir: Path) -> Callable[..., subprocess.CompletedProcess]:
    """`proem build AGENT_DIR ARGS` (bytes out)."""

    def run(agent: Path, args: List[str]) -> subprocess.CompletedProcess:
        env = dict(os.environ, PROEM_CACHE_DIR=str(cache_dir), PROEM_LOG="error")
        return subprocess.run([str(proem_bin()), "build", str(agent), *args], capture_output=True, env=env, timeout=60)

    return run


def python_cli(args: List[str], env: Optional[Dict[str, str]] = None) -> subprocess.CompletedProcess:
    """`python -m proem_client ARGS`, with the interpreter running the tests."""
    return subprocess.run(
        [sys.executable, "-m", "proem_client", *args],
        capture_output=True,
        env=dict(os.environ, **(env or {})),
        timeout=60,
    )


def without_timings(body: bytes) -> bytes:
    """A JSON report with each plugin's elapsed_us (a measurement) zeroed and
    remembered (whether a memo answered) false."""
    body = re.sub(rb'"elapsed_us": \d+', b'"elapsed_us": 0', body)
    return re.sub(rb'"remembered": (true|false)', b'"remembered": false', body)


def error_line(stderr: bytes) -> str:
    """The `proem: error: …` line of a run's stderr (log lines aside)."""
    lines = [l for l in stderr.decode().splitlines() if l.startswith("proem: error:")]
    assert len(lines) == 1, stderr.decode()
    return lines[0]


# ---------------------------------------------------------------- hostile servers


class Request:
    """One request a hostile server received."""

    def __init__(self, line: str, headers: Dict[str, str], body: bytes, at: float) -> None:
        self.line = line
        self.headers = headers
        self.body = body
        self.at = at


def read_request(conn: socket.socket) -> Optional[Request]:
    """Reads one HTTP/1.1 request (head, then Content-Length bytes)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        data += chunk
        if len(data) > 1 << 20:
            return None
    head, _, body = data.partition(b"\r\n\r\n")
    line, *rest = head.decode("latin-1").split("\r\n")
    headers = {}
    for h in rest:
        name, _, value = h.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return Request(line, headers, body, time.monotonic())


def respond(conn: socket.socket, status: str, headers: Dict[str, str], body: bytes = b"") -> None:
    head = f"HTTP/1.1 {status}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    head += f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    conn.sendall(head.encode("latin-1") + body)


def problem(status: int, detail: str) -> bytes:
    return json.dumps({"type": "urn:test", "title": "t", "status": status, "detail": detail}).encode()


def hold_until_closed(conn: socket.socket, seconds: float) -> None:
    """Keeps a connection open without answering, until the client closes
    it or `seconds` pass (so no hostile server outlives its test)."""
    conn.settimeout(0.1)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            if conn.recv(65536) == b"":
                return
        except socket.timeout:
            continue
        except OSError:
            return


class Hostile:
    """A loopback server answering each connection with `handle(conn,
    request, n)` (n: the connection's number, from 0); it records the
    requests."""

    def __init__(self, handle: Callable[[socket.socket, Optional[Request], int], None]) -> None:
        self.requests: List[Request] = []
        self.connections = 0
        lock = threading.Lock()
        outer = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                with lock:
                    n = outer.connections
                    outer.connections += 1
                try:
                    request = read_request(self.request)
                    if request is not None:
                        with lock:
                            outer.requests.append(request)
                    handle(self.request, request, n)
                except OSError:
                    pass

        socketserver.ThreadingTCPServer.allow_reuse_address = True
        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        host, port = self.server.server_address[:2]
        self.url = f"http://{host}:{port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hostile():
    """`hostile(handle)` starts a Hostile server, closed after the test."""
    started: List[Hostile] = []

    def start(handle: Callable[[socket.socket, Optional[Request], int], Any]) -> Hostile:
        h = Hostile(handle)
        started.append(h)
        return h

    yield start
    for h in started:
        h.close()
