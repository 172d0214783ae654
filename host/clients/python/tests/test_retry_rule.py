"""The retry rule, for any sequence of answers, waits, budgets and clocks
(generated from fixed seeds): no wait ends past the budget, none is
shorter than the Retry-After asked, no more retries than allowed, and
only 503, 429 and a failed connection are ever retried."""

import email.utils
import math
import random

from proem_client import ProemError
from proem_client._http import Response
from proem_client._retry import Attempts, RetryPolicy, parse_retry_after

CASES = 3000


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def retry_after(rng: random.Random, wall: float):
    return rng.choice(
        [
            None,
            "0",
            str(rng.randint(0, 5)),
            str(rng.randint(0, 10**6)),
            "9" * rng.randint(1, 40),
            email.utils.formatdate(wall + rng.uniform(-100, 100), usegmt=True),
            "soon",
            "-3",
            "1.5",
            "",
        ]
    )


def outcome(rng: random.Random, wall: float):
    kind = rng.random()
    if kind < 0.15:
        return ProemError("refused", type="urn:proem:client:connection")
    if kind < 0.2:
        return ProemError("slow", type="urn:proem:client:timeout")
    status = rng.choice([200, 204, 301, 400, 401, 404, 422, 429, 429, 500, 502, 503, 503, 503])
    headers = {}
    value = retry_after(rng, wall)
    if value is not None:
        headers["retry-after"] = value
    return Response(status, "", headers, b"")


def test_no_wait_ends_past_the_budget_or_before_retry_after():
    rng = random.Random(28)
    for _ in range(CASES):
        policy = RetryPolicy(
            retries=rng.randint(0, 8),
            retry_budget=rng.choice([0.0, 0.5, 3.0, 10.0, rng.uniform(0, 60)]),
            backoff=rng.uniform(0, 2),
            max_backoff=rng.uniform(0, 8),
        )
        clock = Clock()
        wall = 1_800_000_000.0 + rng.uniform(0, 1e6)
        attempts = Attempts(policy, clock=clock, wall_clock=lambda: wall + clock.now, jitter=rng.random)
        waits = 0
        while True:
            clock.now += rng.choice([0.0, rng.uniform(0, 2)])  # the attempt's own time
            answer = outcome(rng, wall + clock.now)
            wait = attempts.next_wait(answer)
            retryable = (
                answer.type == "urn:proem:client:connection"
                if isinstance(answer, ProemError)
                else answer.status in (429, 503)
            )
            if not retryable:
                assert wait is None
            if wait is None:
                break
            assert retryable and 0 <= wait and math.isfinite(wait)
            if isinstance(answer, Response):
                asked = parse_retry_after(answer.headers.get("retry-after"), wall + clock.now)
                if asked is not None:
                    assert wait == asked, "the wait is what Retry-After asked, never shorter"
            clock.now += wait
            waits += 1
            assert clock.now <= policy.retry_budget + 1e-9, "a wait ended past the budget"
            assert waits <= policy.retries


def test_retry_after_reading_never_raises():
    rng = random.Random(9110)
    alphabet = "0123456789 -+.,:GMTSunMonDecNov\t" + "\u00e9\u2028"
    for _ in range(CASES):
        value = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        seconds = parse_retry_after(value, 1_800_000_000.0)
        assert seconds is None or seconds >= 0


def test_retry_after_values():
    now = 1_800_000_000.0
    assert parse_retry_after("120", now) == 120.0
    assert parse_retry_after(" 7 ", now) == 7.0
    assert parse_retry_after("9" * 30, now) == math.inf
    assert parse_retry_after(email.utils.formatdate(now + 30, usegmt=True), now) == 30.0
    assert parse_retry_after(email.utils.formatdate(now - 30, usegmt=True), now) == 0.0
    for unreadable in (None, "", "soon", "-1", "1.5", "\u0663"):
        assert parse_retry_after(unreadable, now) is None
