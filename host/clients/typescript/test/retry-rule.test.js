// The retry rule, for any sequence of answers, waits, budgets and clocks
// (generated from a fixed seed): no wait ends past the budget, none is
// shorter than the Retry-After asked, no more retries than allowed, and
// only 503, 429 and a failed connection are ever retried.

import assert from "node:assert/strict";
import { test } from "node:test";

import { Attempts, ProemError, parseRetryAfter } from "@proem/client";

const CASES = 3000;

/** A small seeded generator (mulberry32): the same cases every run. */
function rng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  next.int = (lo, hi) => lo + Math.floor(next() * (hi - lo + 1));
  next.pick = (list) => list[Math.floor(next() * list.length)];
  return next;
}

function retryAfter(r, wallMs) {
  return r.pick([
    null,
    "0",
    String(r.int(0, 5)),
    String(r.int(0, 1e6)),
    "9".repeat(r.int(1, 40)),
    new Date(wallMs + (r() * 200 - 100) * 1000).toUTCString(),
    "soon",
    "-3",
    "1.5",
    "",
  ]);
}

function outcome(r, wallMs) {
  const kind = r();
  if (kind < 0.15) return new ProemError("refused", { type: "urn:proem:client:connection" });
  if (kind < 0.2) return new ProemError("slow", { type: "urn:proem:client:timeout" });
  const status = r.pick([200, 204, 301, 400, 401, 404, 422, 429, 429, 500, 502, 503, 503, 503]);
  const value = retryAfter(r, wallMs);
  return { status, headers: value === null ? {} : { "retry-after": value } };
}

test("no wait ends past the budget or before Retry-After", () => {
  const r = rng(28);
  for (let c = 0; c < CASES; c++) {
    const policy = {
      retries: r.int(0, 8),
      retryBudgetMs: r.pick([0, 500, 3000, 10000, r() * 60000]),
      backoffMs: r() * 2000,
      maxBackoffMs: r() * 8000,
    };
    let now = 0;
    const wall = 1_800_000_000_000 + r() * 1e9;
    const attempts = new Attempts(policy, { clock: () => now, wallClock: () => wall + now, jitter: r });
    let waits = 0;
    for (;;) {
      now += r.pick([0, r() * 2000]); // the attempt's own time
      const answer = outcome(r, wall + now);
      const waitMs = attempts.nextWaitMs(answer);
      const retryable =
        answer instanceof ProemError ? answer.type === "urn:proem:client:connection" : [429, 503].includes(answer.status);
      if (!retryable) assert.equal(waitMs, null);
      if (waitMs === null) break;
      assert.ok(retryable && waitMs >= 0 && Number.isFinite(waitMs));
      if (!(answer instanceof ProemError)) {
        const asked = parseRetryAfter(answer.headers["retry-after"] ?? null, wall + now);
        if (asked !== null) assert.equal(waitMs, asked * 1000, "the wait is what Retry-After asked, never shorter");
      }
      now += waitMs;
      waits += 1;
      assert.ok(now <= policy.retryBudgetMs + 1e-6, "a wait ended past the budget");
      assert.ok(waits <= policy.retries);
    }
  }
});

test("reading Retry-After never throws", () => {
  const r = rng(9110);
  const alphabet = "0123456789 -+.,:GMTSunMonDecNov\t\u00e9\u2028";
  for (let c = 0; c < CASES; c++) {
    let value = "";
    for (let i = r.int(0, 40); i > 0; i--) value += r.pick([...alphabet]);
    const seconds = parseRetryAfter(value, 1_800_000_000_000);
    assert.ok(seconds === null || seconds >= 0);
  }
});

test("Retry-After values", () => {
  const now = 1_800_000_000_000;
  assert.equal(parseRetryAfter("120", now), 120);
  assert.equal(parseRetryAfter(" 7 ", now), 7);
  assert.equal(parseRetryAfter("9".repeat(30), now), Infinity);
  assert.equal(parseRetryAfter(new Date(now + 30_000).toUTCString(), now), 30);
  assert.equal(parseRetryAfter(new Date(now - 30_000).toUTCString(), now), 0);
  for (const unreadable of [null, undefined, "", "soon", "-1", "1.5", "2026-11-21", "\u0663"]) {
    assert.equal(parseRetryAfter(unreadable, now), null, String(unreadable));
  }
});
