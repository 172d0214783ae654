// What a hostile or broken server can make the client do: every bound
// (time, size, retries) holds whatever it sends. The time bounds are
// generous (seconds where the client takes tenths) and fail only when a
// bound does not hold.

import assert from "node:assert/strict";
import net from "node:net";
import { gzipSync } from "node:zlib";
import { afterEach, test } from "node:test";

import { Client, ProemError } from "@proem/client";

import { hostile as start, problem, respond, timed } from "./helpers.js";

const OK = { "Content-Type": "text/plain; charset=utf-8" };
const servers = [];
async function hostile(handle) {
  const server = await start(handle);
  servers.push(server);
  return server;
}
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

test("a 503 with Retry-After is retried after that wait", async () => {
  const server = await hostile((socket, request, n) =>
    n === 0
      ? respond(socket, "503 Service Unavailable", { "Retry-After": "1", "Content-Type": "application/problem+json" }, problem(503, "busy"))
      : respond(socket, "200 OK", OK, "prompt\n"),
  );
  const { value, ms } = await timed(new Client(server.url).build("a", { now: "x" }));
  assert.equal(value, "prompt\n");
  const [first, second] = server.requests;
  assert.ok(second.at - first.at >= 990, "came back before Retry-After"); // timers may fire a little early
  assert.ok(ms < 5000);
  for (const r of [first, second]) {
    assert.equal(r.line, "POST /v1/agents/a/build HTTP/1.1");
    assert.equal(r.headers["content-type"], "application/json");
    assert.equal(r.headers.host, server.host);
    assert.deepEqual(JSON.parse(r.body), { now: "x" });
  }
});

test("Retry-After as an HTTP date is honoured", async () => {
  const when = [];
  const server = await hostile((socket, request, n) => {
    if (n === 0) {
      const date = Date.now() + 2000;
      when.push(Math.floor(date / 1000) * 1000);
      respond(socket, "429 Too Many Requests", { "Retry-After": new Date(date).toUTCString() });
    } else {
      when.push(Date.now());
      respond(socket, "200 OK", OK, "ok\n");
    }
  });
  assert.equal(await new Client(server.url).build("a"), "ok\n");
  assert.ok(when[1] >= when[0] - 10, "came back before the date Retry-After named"); // timers may fire a little early
});

test("a Retry-After past the budget ends the call at once", async () => {
  const server = await hostile((socket) => respond(socket, "503 Service Unavailable", { "Retry-After": "10000" }));
  const { error, ms } = await timed(new Client(server.url, { retries: 5, retryBudgetMs: 10_000 }).build("a"));
  assert.ok(error instanceof ProemError && error.status === 503, String(error));
  assert.match(error.detail, /retry budget/);
  assert.equal(server.requests.length, 1);
  assert.ok(ms < 3000, `waited ${ms} ms`);
});

test("options out of range are refused when the client is made", () => {
  // setTimeout fires at once past 2^31-1 ms: a budget that could ask for
  // such a wait is refused when the client is made.
  assert.throws(() => new Client("http://127.0.0.1:1", { retryBudgetMs: 2 ** 31 }), RangeError);
  assert.throws(() => new Client("http://127.0.0.1:1", { timeoutMs: Infinity }), RangeError);
  assert.throws(() => new Client("http://127.0.0.1:1", { retries: -1 }), RangeError);
  assert.throws(() => new Client("http://127.0.0.1:1", { maxResponseBytes: 0 }), RangeError);
  // A token with a line break would forge a header.
  assert.throws(() => new Client("http://127.0.0.1:1", { token: "a\r\nX-Evil: 1" }), TypeError);
  for (const baseUrl of ["127.0.0.1:7878", "ftp://h", "http://", "http://u:p@h", "http://h/?q=1"]) {
    assert.throws(() => new Client(baseUrl), TypeError, baseUrl);
  }
});

test("a huge Retry-After number is a give-up, not an overflow", async () => {
  const server = await hostile((socket) => respond(socket, "503 Service Unavailable", { "Retry-After": "9".repeat(5000) }));
  const { error, ms } = await timed(new Client(server.url).build("a"));
  assert.ok(error instanceof ProemError && error.status === 503);
  assert.ok(ms < 3000);
});

test("the retries end within the budget", async () => {
  const server = await hostile((socket) => respond(socket, "429 Too Many Requests", { "Retry-After": "1" }));
  const { error, ms } = await timed(new Client(server.url, { retries: 5, retryBudgetMs: 2500 }).build("a"));
  assert.ok(error instanceof ProemError && error.status === 429);
  assert.equal(server.requests.length, 3, "two waits of 1 s fit in 2.5 s, a third does not");
  assert.ok(ms >= 1980 && ms < 5000, `${ms} ms`);
});

test("retries stop at the count", async () => {
  const server = await hostile((socket) => respond(socket, "503 Service Unavailable", { "Retry-After": "0" }));
  const { error } = await timed(new Client(server.url, { retries: 2 }).build("a"));
  assert.match(error.detail, /gave up after 3 attempts/);
  assert.equal(server.requests.length, 3);
});

for (const status of ["400 Bad Request", "401 Unauthorized", "404 Not Found", "422 Unprocessable Entity", "500 Internal Server Error", "502 Bad Gateway"]) {
  test(`${status} is never retried`, async () => {
    const code = Number(status.split(" ")[0]);
    const server = await hostile((socket) =>
      respond(socket, status, { "Content-Type": "application/problem+json", "Retry-After": "0" }, problem(code, "no")),
    );
    const { error } = await timed(new Client(server.url, { retries: 3 }).build("a"));
    assert.ok(error instanceof ProemError && error.status === code && error.detail === "no");
    assert.equal(server.requests.length, 1);
  });
}

test("a server that never answers costs one timeout", async () => {
  const server = await hostile(() => {});
  const { error, ms } = await timed(new Client(server.url, { timeoutMs: 500, retries: 3 }).build("a"));
  assert.ok(error instanceof ProemError && error.type === "urn:proem:client:timeout" && error.status === null, String(error));
  assert.equal(server.requests.length, 1, "a timeout is not retried");
  assert.ok(ms >= 450 && ms < 3000, `${ms} ms`); // timers may fire a little early
});

test("a server that drips its headers is cut off at the timeout", async () => {
  const server = await hostile((socket) => {
    socket.write("HTTP/1.1 200 OK\r\n");
    let left = 400;
    const drip = setInterval(() => {
      if (socket.destroyed || left-- === 0) return clearInterval(drip);
      socket.write("X");
    }, 50);
    socket.once("close", () => clearInterval(drip));
  });
  const { error, ms } = await timed(new Client(server.url, { timeoutMs: 500 }).build("a"));
  assert.ok(error instanceof ProemError && error.type === "urn:proem:client:timeout", String(error));
  assert.ok(ms < 3000);
});

test("a server that drips its body is cut off at the timeout", async () => {
  const server = await hostile((socket) => {
    socket.write("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100000\r\n\r\n");
    let left = 400;
    const drip = setInterval(() => {
      if (socket.destroyed || left-- === 0) return clearInterval(drip);
      socket.write("x");
    }, 50);
    socket.once("close", () => clearInterval(drip));
  });
  const { error, ms } = await timed(new Client(server.url, { timeoutMs: 500 }).build("a"));
  assert.ok(error instanceof ProemError && error.type === "urn:proem:client:timeout", String(error));
  assert.ok(ms < 3000);
});

test("a body over the cap is refused", async () => {
  const endless = await hostile((socket) => {
    socket.write("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n");
    const chunk = Buffer.from(`10000\r\n${"a".repeat(65536)}\r\n`);
    let left = 1024; // 64 MiB at most
    const pump = () => {
      while (left > 0 && !socket.destroyed) {
        left -= 1;
        if (!socket.write(chunk)) return socket.once("drain", pump);
      }
    };
    pump();
  });
  const { error } = await timed(new Client(endless.url, { maxResponseBytes: 1 << 20 }).build("a"));
  assert.ok(error instanceof ProemError && error.type === "urn:proem:client:too-large", String(error));
  const declared = await hostile((socket) => socket.write("HTTP/1.1 200 OK\r\nContent-Length: 1000000000000\r\n\r\nabc"));
  const { error: declaredError, ms } = await timed(new Client(declared.url).build("a"));
  assert.match(declaredError.detail, /declares/);
  assert.ok(ms < 3000);
});

test("a compressed body is capped by its decoded size", async () => {
  // fetch decodes gzip on its own: 64 MiB of zeros in 64 KiB on the wire.
  const bomb = gzipSync(Buffer.alloc(64 << 20));
  const server = await hostile((socket) =>
    respond(socket, "200 OK", { "Content-Type": "text/plain", "Content-Encoding": "gzip" }, bomb),
  );
  const { error } = await timed(new Client(server.url, { maxResponseBytes: 1 << 20 }).build("a"));
  assert.ok(bomb.length < 1 << 20);
  assert.ok(error instanceof ProemError && error.type === "urn:proem:client:too-large", String(error));
});

test("a redirect is not followed", async () => {
  const elsewhere = await hostile((socket) => respond(socket, "200 OK", OK, "other\n"));
  const server = await hostile((socket) =>
    respond(socket, "307 Temporary Redirect", { Location: `${elsewhere.url}/v1/agents/a/build` }),
  );
  const { error } = await timed(new Client(server.url, { token: "t".repeat(20) }).build("a"));
  assert.ok(error instanceof ProemError && error.status === 307, String(error));
  assert.match(error.detail, /redirect/);
  assert.equal(elsewhere.requests.length, 0);
});

test("a dropped connection is retried", async () => {
  const server = await hostile((socket, request, n) => (n < 2 ? socket.destroy() : respond(socket, "200 OK", OK, "third time\n")));
  assert.equal(await new Client(server.url, { retries: 3 }).build("a"), "third time\n");
  assert.equal(server.connections, 3);
});

test("a refused connection gives up within the budget", async () => {
  const probe = net.createServer();
  await new Promise((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address();
  await new Promise((resolve) => probe.close(resolve));
  const { error, ms } = await timed(new Client(`http://127.0.0.1:${port}`, { retries: 50, retryBudgetMs: 1000 }).agents());
  assert.ok(error instanceof ProemError && error.type === "urn:proem:client:connection", String(error));
  assert.ok(ms < 3000);
});

for (const [name, answer] of [
  ["not HTTP at all", "NOT HTTP AT ALL\r\n\r\n"],
  ["a header over 64 KiB", `HTTP/1.1 200 OK\r\nX: ${"a".repeat(70000)}\r\n\r\n`],
]) {
  test(`${name} is a bad response`, async () => {
    const server = await hostile((socket) => socket.end(answer));
    const { error } = await timed(new Client(server.url).build("a"));
    assert.ok(error instanceof ProemError && error.type === "urn:proem:client:bad-response", String(error));
  });
}

for (const body of [
  "not json",
  "[1, 2]",
  '{"prompt": 5}',
  '{"prompt": "p", "stable": "s", "dynamic": "d", "stable_hash": "h", "mode": "full", "tokenizer": "t", "tokens": {"total": true}, "sections": [], "files": [], "plugins": [], "diagnostics": []}',
]) {
  test(`a report of the wrong shape is a bad response: ${body.slice(0, 20)}`, async () => {
    const server = await hostile((socket) => respond(socket, "200 OK", { "Content-Type": "application/json" }, body));
    const { error } = await timed(new Client(server.url).build("a", { format: "json" }));
    assert.ok(error instanceof ProemError && error.type === "urn:proem:client:bad-response", String(error));
  });
}

test("an error page that is not a problem is still an error", async () => {
  const server = await hostile((socket) => respond(socket, "502 Bad Gateway", { "Content-Type": "text/html" }, "<h1>proxy</h1>".repeat(1000)));
  const { error } = await timed(new Client(server.url).build("a"));
  assert.equal(error.status, 502);
  assert.ok(error.detail.startsWith("HTTP 502 Bad Gateway: <h1>proxy</h1>") && error.detail.length < 300);
});

test("aborting a call during its wait settles at once", async () => {
  const server = await hostile((socket) => respond(socket, "503 Service Unavailable", { "Retry-After": "5" }));
  const controller = new AbortController();
  const call = new Client(server.url).build("a", {}, { signal: controller.signal });
  while (server.requests.length === 0) await new Promise((r) => setTimeout(r, 10));
  await new Promise((r) => setTimeout(r, 100)); // now waiting out the 5 s Retry-After
  const started = performance.now();
  controller.abort();
  await assert.rejects(call, (e) => e.name === "AbortError");
  assert.ok(performance.now() - started < 1000);
  assert.equal(server.requests.length, 1);
});
