"""When to try a call again, and after how long: the one rule both clients use.

A call is tried again only when no answer came (`CONNECTION`: refused,
reset, closed before answering) or the answer was 503 or 429; never after
a timeout (the caller's `timeout` is how long they wait for an answer) or
any other status. The wait is the server's `Retry-After` when it sends one
(seconds or an HTTP date), else an exponential backoff with jitter. A retry
is made only if its wait ends within `retry_budget` seconds of the call's
start: a `Retry-After` that asks for longer ends the call at once with the
server's answer, rather than sleeping past the budget or coming back early.
So a call takes at most `retry_budget + timeout` seconds.
"""

import email.utils
import math
import random
import time
from dataclasses import dataclass
from typing import Callable, Optional

from . import _errors
from ._errors import ProemError
from ._http import Response

#: Statuses that say "come back later".
RETRY_STATUSES = (429, 503)

#: The longest time a client option may name, in seconds: 2^31−1 ms (24.8
#: days), the longest timer Node keeps, so both packages take the same
#: values (a socket refuses a timeout past its platform's time_t anyway).
MAX_SECONDS = 2147483.647


@dataclass(frozen=True)
class RetryPolicy:
    """How a client retries; the defaults are the package's documented ones."""

    #: Attempts after the first.
    retries: int = 3
    #: Seconds from the call's start within which every wait must end.
    retry_budget: float = 10.0
    #: The first backoff wait when the server gives no Retry-After; doubled
    #: per retry, up to `max_backoff`, each scaled by a random 0.5–1.
    backoff: float = 0.25
    #: The longest backoff wait.
    max_backoff: float = 4.0

    def __post_init__(self) -> None:
        if not isinstance(self.retries, int) or self.retries < 0:
            raise ValueError(f"retries must be a whole number ≥ 0, not {self.retries!r}")
        for name in ("retry_budget", "backoff", "max_backoff"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not 0 <= value <= MAX_SECONDS:
                raise ValueError(f"{name} must be a number of seconds from 0 to {MAX_SECONDS}, not {value!r}")


def parse_retry_after(value: Optional[str], now: float) -> Optional[float]:
    """The seconds a `Retry-After` value asks to wait (RFC 9110 §10.2.3):
    whole seconds, or an HTTP date (a past date is 0). None when absent or
    unreadable. A number too long to be a wait anyone means is infinite."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit() and value.isascii():
        return math.inf if len(value) > 12 else float(int(value))
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when is None or when.tzinfo is None:
        return None
    try:
        return max(0.0, when.timestamp() - now)
    except (OverflowError, OSError, ValueError):
        return None


class Attempts:
    """The retry state of one call. `next_wait` says, after each attempt,
    how long to wait before the next one, or None when the call ends here."""

    def __init__(
        self,
        policy: RetryPolicy,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self._policy = policy
        self._clock = clock
        self._wall_clock = wall_clock
        self._jitter = jitter
        self._started = clock()
        self._made = 0
        #: Why the last retry was not made, for the error message.
        self.gave_up: Optional[str] = None

    def next_wait(self, outcome: "Response | ProemError") -> Optional[float]:
        """The wait before the next attempt, or None: a success, an answer
        not worth retrying, no retries left, or a wait past the budget."""
        if isinstance(outcome, ProemError):
            if outcome.type != _errors.CONNECTION:
                return None
            asked = None
        else:
            if outcome.status not in RETRY_STATUSES:
                return None
            asked = parse_retry_after(outcome.headers.get("retry-after"), self._wall_clock())
        policy = self._policy
        if self._made >= policy.retries:
            self.gave_up = f"gave up after {self._made + 1} attempts (retries={policy.retries})"
            return None
        wait = asked if asked is not None else self._backoff()
        left = policy.retry_budget - (self._clock() - self._started)
        if wait > left:
            what = f"Retry-After asks for {wait:g} s" if asked is not None else f"the next wait ({wait:.2f} s)"
            self.gave_up = f"{what}, past what is left of the {policy.retry_budget:g} s retry budget"
            return None
        self._made += 1
        return wait

    def _backoff(self) -> float:
        policy = self._policy
        base = min(policy.max_backoff, policy.backoff * (2.0 ** min(self._made, 30)))
        return base * (0.5 + 0.5 * self._jitter())


def result(outcome: "Response | ProemError", attempts: Attempts) -> Response:
    """The 2xx answer a call ends with, or the error it raises: the server's
    problem for any other status, with the reason no retry was made."""
    if isinstance(outcome, Response):
        if 200 <= outcome.status < 300:
            return outcome
        error = _errors.from_response(outcome.status, outcome.reason, outcome.headers, outcome.body)
        if 300 <= outcome.status < 400:
            attempts.gave_up = "the client follows no redirect: give it the server's own address"
    else:
        error = outcome
    if attempts.gave_up:
        error.detail = f"{error.detail} ({attempts.gave_up})"
        error.args = (error.detail,)
    raise error
