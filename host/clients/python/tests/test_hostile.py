"""What a hostile or broken server can make the client do: every bound
(time, size, retries) holds whatever it sends. Each server here is a tiny
loopback one from conftest; the time bounds are generous (seconds where
the client takes tenths) and fail only when a bound does not hold."""

import asyncio
import email.utils
import json
import socket
import time

import pytest

from proem_client import AsyncClient, Client, ProemError

from conftest import hold_until_closed, problem, respond

OK = {"Content-Type": "text/plain; charset=utf-8"}


def timed(call):
    started = time.monotonic()
    try:
        result = call()
    except ProemError as e:
        return e, time.monotonic() - started
    return result, time.monotonic() - started


def test_a_503_with_retry_after_is_retried_after_that_wait(hostile):
    def handle(conn, request, n):
        if n == 0:
            respond(conn, "503 Service Unavailable", {"Retry-After": "1", "Content-Type": "application/problem+json"}, problem(503, "busy"))
        else:
            respond(conn, "200 OK", OK, b"prompt\n")

    server = hostile(handle)
    text, elapsed = timed(lambda: Client(server.url).build("a", now="x"))
    assert text == "prompt\n"
    first, second = server.requests
    assert second.at - first.at >= 1.0, "came back before Retry-After"
    assert elapsed < 5
    # What every request carries: the JSON type, the address the server
    # listens on, the body.
    for r in (first, second):
        assert r.line == "POST /v1/agents/a/build HTTP/1.1"
        assert r.headers["content-type"] == "application/json"
        assert r.headers["host"] == server.url.removeprefix("http://")
        assert json.loads(r.body) == {"now": "x"}


def test_retry_after_as_an_http_date_is_honoured(hostile):
    when = []

    def handle(conn, request, n):
        if n == 0:
            date = time.time() + 2
            when.append(float(int(date)))
            respond(conn, "429 Too Many Requests", {"Retry-After": email.utils.formatdate(date, usegmt=True)})
        else:
            when.append(time.time())
            respond(conn, "200 OK", OK, b"ok\n")

    server = hostile(handle)
    assert Client(server.url).build("a") == "ok\n"
    assert when[1] >= when[0], "came back before the date Retry-After named"


def test_a_retry_after_past_the_budget_ends_the_call_at_once(hostile):
    server = hostile(lambda conn, r, n: respond(conn, "503 Service Unavailable", {"Retry-After": "10000"}, b""))
    error, elapsed = timed(lambda: Client(server.url, retries=5, retry_budget=10).build("a"))
    assert isinstance(error, ProemError) and error.status == 503
    assert "retry budget" in error.detail and len(server.requests) == 1
    assert elapsed < 3, f"slept {elapsed:.1f} s"


def test_a_huge_retry_after_number_is_a_give_up_not_an_overflow(hostile):
    server = hostile(lambda conn, r, n: respond(conn, "503 Service Unavailable", {"Retry-After": "9" * 5000}))
    error, elapsed = timed(lambda: Client(server.url).build("a"))
    assert isinstance(error, ProemError) and error.status == 503 and elapsed < 3


def test_the_retries_end_within_the_budget(hostile):
    # 429 every time, Retry-After 1 s: with a 2.5 s budget only two
    # waits fit, though five retries are allowed.
    server = hostile(lambda conn, r, n: respond(conn, "429 Too Many Requests", {"Retry-After": "1"}))
    error, elapsed = timed(lambda: Client(server.url, retries=5, retry_budget=2.5).build("a"))
    assert isinstance(error, ProemError) and error.status == 429
    assert len(server.requests) == 3, "two waits of 1 s fit in 2.5 s, a third does not"
    assert 2.0 <= elapsed < 5


def test_retries_stop_at_the_count(hostile):
    server = hostile(lambda conn, r, n: respond(conn, "503 Service Unavailable", {"Retry-After": "0"}))
    error, _ = timed(lambda: Client(server.url, retries=2).build("a"))
    assert isinstance(error, ProemError) and "gave up after 3 attempts" in error.detail
    assert len(server.requests) == 3


@pytest.mark.parametrize("status", ["400 Bad Request", "401 Unauthorized", "404 Not Found", "422 Unprocessable Entity", "500 Internal Server Error", "502 Bad Gateway"])
def test_other_statuses_are_never_retried(hostile, status):
    code = int(status.split()[0])
    server = hostile(
        lambda conn, r, n: respond(conn, status, {"Content-Type": "application/problem+json", "Retry-After": "0"}, problem(code, "no"))
    )
    error, _ = timed(lambda: Client(server.url, retries=3).build("a"))
    assert isinstance(error, ProemError) and error.status == code and error.detail == "no"
    assert len(server.requests) == 1


def test_a_server_that_never_answers_costs_one_timeout(hostile):
    server = hostile(lambda conn, r, n: hold_until_closed(conn, 20))
    error, elapsed = timed(lambda: Client(server.url, timeout=0.5, retries=3).build("a"))
    assert isinstance(error, ProemError) and error.type == "urn:proem:client:timeout" and error.status is None
    assert len(server.requests) == 1, "a timeout is not retried"
    assert 0.45 <= elapsed < 3  # timers may fire a little early


def test_a_server_that_drips_its_headers_is_cut_off_at_the_timeout(hostile):
    # One byte every 50 ms never trips a per-read timeout; the client's
    # deadline covers the whole exchange.
    def handle(conn, request, n):
        conn.sendall(b"HTTP/1.1 200 OK\r\n")
        for _ in range(400):
            conn.sendall(b"X")
            time.sleep(0.05)

    server = hostile(handle)
    error, elapsed = timed(lambda: Client(server.url, timeout=0.5).build("a"))
    assert isinstance(error, ProemError) and error.type == "urn:proem:client:timeout"
    assert elapsed < 3


def test_a_body_over_the_cap_is_refused(hostile):
    def endless(conn, request, n):
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b"%x\r\n%s\r\n" % (65536, b"a" * 65536)
        for _ in range(1024):  # 64 MiB at most
            conn.sendall(chunk)

    server = hostile(endless)
    error, _ = timed(lambda: Client(server.url, max_response_bytes=1 << 20).build("a"))
    assert isinstance(error, ProemError) and error.type == "urn:proem:client:too-large"
    declared = hostile(lambda conn, r, n: conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000000000\r\n\r\nabc"))
    error, elapsed = timed(lambda: Client(declared.url).build("a"))
    assert isinstance(error, ProemError) and "declares" in error.detail and elapsed < 3


def test_a_redirect_is_not_followed(hostile):
    elsewhere = hostile(lambda conn, r, n: respond(conn, "200 OK", OK, b"other\n"))
    server = hostile(lambda conn, r, n: respond(conn, "307 Temporary Redirect", {"Location": elsewhere.url + "/v1/agents/a/build"}))
    error, _ = timed(lambda: Client(server.url, token="t" * 20).build("a"))
    assert isinstance(error, ProemError) and error.status == 307 and "redirect" in error.detail
    assert elsewhere.requests == []


def test_a_dropped_connection_is_retried(hostile):
    def handle(conn, request, n):
        if n < 2:
            conn.close()  # no status line: worth another try
        else:
            respond(conn, "200 OK", OK, b"third time\n")

    server = hostile(handle)
    assert Client(server.url, retries=3).build("a") == "third time\n"
    assert server.connections == 3


def test_a_refused_connection_gives_up_within_the_budget():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    error, elapsed = timed(lambda: Client(f"http://127.0.0.1:{port}", retries=50, retry_budget=1).agents())
    assert isinstance(error, ProemError) and error.type == "urn:proem:client:connection"
    assert elapsed < 3


@pytest.mark.parametrize(
    "answer",
    [
        b"NOT HTTP AT ALL\r\n\r\n",
        b"HTTP/1.1 200 OK\r\n" + b"X-A: b\r\n" * 200 + b"\r\n",
        b"HTTP/1.1 200 OK\r\nX: " + b"a" * 70000 + b"\r\n\r\n",
    ],
)
def test_what_is_not_http_is_a_bad_response(hostile, answer):
    server = hostile(lambda conn, r, n: conn.sendall(answer))
    error, _ = timed(lambda: Client(server.url).build("a"))
    assert isinstance(error, ProemError) and error.type == "urn:proem:client:bad-response"


@pytest.mark.parametrize(
    "body",
    [b"not json", b"[1, 2]", b'{"prompt": 5}', b'{"prompt": "p", "stable": "s", "dynamic": "d", "stable_hash": "h", "mode": "full", "tokenizer": "t", "tokens": {"total": true}}'],
)
def test_a_report_of_the_wrong_shape_is_a_bad_response(hostile, body):
    server = hostile(lambda conn, r, n: respond(conn, "200 OK", {"Content-Type": "application/json"}, body))
    error, _ = timed(lambda: Client(server.url).build("a", format="json"))
    assert isinstance(error, ProemError) and error.type == "urn:proem:client:bad-response"


def test_an_error_page_that_is_not_a_problem_is_still_an_error(hostile):
    server = hostile(lambda conn, r, n: respond(conn, "502 Bad Gateway", {"Content-Type": "text/html"}, b"<h1>proxy</h1>" * 1000))
    error, _ = timed(lambda: Client(server.url).build("a"))
    assert isinstance(error, ProemError) and error.status == 502
    assert error.detail.startswith("HTTP 502 Bad Gateway: <h1>proxy</h1>") and len(error.detail) < 300


def test_the_async_client_gives_up_at_once_and_cancels_at_once(hostile):
    far = hostile(lambda conn, r, n: respond(conn, "503 Service Unavailable", {"Retry-After": "10000"}))
    near = hostile(lambda conn, r, n: respond(conn, "503 Service Unavailable", {"Retry-After": "5"}))

    async def main():
        started = time.monotonic()
        with pytest.raises(ProemError):
            await AsyncClient(far.url).build("a")
        gave_up = time.monotonic() - started
        task = asyncio.ensure_future(AsyncClient(near.url).build("a"))
        while not near.requests:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.1)  # now waiting out the 5 s Retry-After
        started = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return gave_up, time.monotonic() - started

    gave_up, cancelled = asyncio.run(main())
    assert gave_up < 3 and cancelled < 1
    assert len(near.requests) == 1


@pytest.mark.parametrize(
    "options",
    [
        {"timeout": 0},
        {"timeout": 1e12},
        {"timeout": float("nan")},
        {"retry_budget": float("inf")},
        {"retry_budget": -1},
        {"retries": -1},
        {"max_response_bytes": 0},
        {"token": "a\r\nX-Evil: 1"},
    ],
)
def test_options_out_of_range_are_refused_when_the_client_is_made(options):
    # A timer past the platform's range would fail mid-call (socket
    # timeouts overflow time_t); a token with a line break would forge
    # a header.
    with pytest.raises(ValueError):
        Client("http://127.0.0.1:7878", **options)
    with pytest.raises(ValueError):
        AsyncClient("http://127.0.0.1:7878", **options)


@pytest.mark.parametrize("base_url", ["127.0.0.1:7878", "ftp://h", "http://", "http://h:99999", "http://u:p@h", "http://h/?q=1"])
def test_a_base_url_that_is_not_a_server_address_is_refused(base_url):
    with pytest.raises(ValueError):
        Client(base_url)
