// Shared by the tests: a live `proem serve`, `proem build` to compare with,
// and tiny hostile servers, all on loopback. host/clients/test.sh copies
// these files next to the package installed from its `npm pack` tarball
// and sets PROEM_BIN (target/release/proem-full) and PROEM_REPO; without
// them every test fails, none is skipped.

import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, mkdirSync, writeFileSync, existsSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import readline from "node:readline";

function required(name) {
  const value = process.env[name];
  if (!value || !existsSync(value)) {
    throw new Error(`${name}=${value ?? ""} is not there: run host/clients/test.sh (it sets PROEM_BIN and PROEM_REPO)`);
  }
  return value;
}

export const PROEM_BIN = required("PROEM_BIN");
export const REPO = required("PROEM_REPO");
export const MARLOW = path.join(REPO, "examples", "marlow");
export const NOW = "2026-11-21T09:30:00Z";
const scratchRoot = mkdtempSync(path.join(process.env.PROEM_TMP ?? tmpdir(), "proem-node-"));
export const CACHE = path.join(scratchRoot, "cache");
mkdirSync(CACHE);

/** A small agent made here, whose one plugin never loads (for --strict). */
export const SCRATCH = (() => {
  const agent = path.join(scratchRoot, "agents", "scratch");
  mkdirSync(agent, { recursive: true });
  writeFileSync(
    path.join(agent, "proem.toml"),
    '[agent]\nid = "scratch"\nname = "Scratch"\n\n[[plugins]]\nid = "ghost"\npath = "plugins/ghost.wasm"\n',
  );
  writeFileSync(path.join(agent, "SOUL.md"), "You are terse, and kind.\n");
  writeFileSync(path.join(agent, "AGENTS.md"), "# Rules\n\nAnswer in one line. Ünïcödé is fine: ✓\n");
  return agent;
})();

export const env = { ...process.env, PROEM_CACHE_DIR: CACHE, PROEM_LOG: "error" };

/** Starts `proem serve ARGS --listen 127.0.0.1:0`: {url, stop()}. */
export async function serve(args) {
  const child = spawn(PROEM_BIN, ["serve", ...args, "--listen", "127.0.0.1:0"], {
    env,
    stdio: ["ignore", "pipe", "ignore"],
  });
  const lines = readline.createInterface({ input: child.stdout });
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("proem serve printed no `listening on` line within 30 s")), 30_000);
    lines.once("line", (line) => {
      clearTimeout(timer);
      const match = /^listening on (http:\/\/\S+)/.exec(line);
      match ? resolve(match[1]) : reject(new Error(`proem serve printed ${JSON.stringify(line)}`));
    });
    child.once("exit", (code) => reject(new Error(`proem serve exited (${code}) before listening`)));
  });
  return {
    url,
    stop: () =>
      new Promise((resolve) => {
        child.once("exit", resolve);
        child.kill("SIGTERM");
      }),
  };
}

/** `proem build AGENT_DIR ARGS`: {status, stdout (Buffer), stderr}. */
export function cli(agentDir, args) {
  const out = spawnSync(PROEM_BIN, ["build", agentDir, ...args], { env, timeout: 60_000 });
  return { status: out.status, stdout: out.stdout, stderr: out.stderr.toString() };
}

/** A JSON report with each plugin's elapsed_us (a measurement) zeroed and
 * remembered (whether a memo answered) false. */
export function withoutTimings(bytes) {
  return Buffer.from(bytes)
    .toString("utf8")
    .replace(/"elapsed_us": \d+/g, '"elapsed_us": 0')
    .replace(/"remembered": (true|false)/g, '"remembered": false');
}

// ------------------------------------------------------------------ hostile servers

/** Reads one HTTP/1.1 request from a socket: {line, headers, body, at}. */
function readRequest(socket) {
  return new Promise((resolve) => {
    let data = Buffer.alloc(0);
    const onData = (chunk) => {
      data = Buffer.concat([data, chunk]);
      const end = data.indexOf("\r\n\r\n");
      if (end < 0) return;
      const [line, ...rest] = data.subarray(0, end).toString("latin1").split("\r\n");
      const headers = {};
      for (const h of rest) {
        const i = h.indexOf(":");
        headers[h.slice(0, i).trim().toLowerCase()] = h.slice(i + 1).trim();
      }
      const length = Number(headers["content-length"] ?? 0);
      if (data.length - end - 4 < length) return;
      socket.off("data", onData);
      resolve({ line, headers, body: data.subarray(end + 4, end + 4 + length).toString(), at: performance.now() });
    };
    socket.on("data", onData);
    socket.once("close", () => resolve(null));
  });
}

/** An answer with Content-Length and `Connection: close`. */
export function respond(socket, status, headers = {}, body = "") {
  const bytes = Buffer.from(body);
  const head =
    `HTTP/1.1 ${status}\r\n` +
    Object.entries(headers)
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join("") +
    `Content-Length: ${bytes.length}\r\nConnection: close\r\n\r\n`;
  socket.end(Buffer.concat([Buffer.from(head, "latin1"), bytes]));
}

export function problem(status, detail) {
  return JSON.stringify({ type: "urn:test", title: "t", status, detail });
}

/**
 * A loopback server answering each connection with `handle(socket,
 * request, n)`; it records the requests. Every socket is destroyed by
 * `close()`, so no hostile server outlives its test.
 */
export async function hostile(handle) {
  const state = { requests: [], connections: 0, sockets: new Set() };
  const server = net.createServer(async (socket) => {
    const n = state.connections++;
    state.sockets.add(socket);
    socket.on("error", () => {});
    socket.once("close", () => state.sockets.delete(socket));
    const request = await readRequest(socket);
    if (request) state.requests.push(request);
    if (!socket.destroyed) handle(socket, request, n);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    host: `127.0.0.1:${port}`,
    get requests() {
      return state.requests;
    },
    get connections() {
      return state.connections;
    },
    close: () =>
      new Promise((resolve) => {
        for (const s of state.sockets) s.destroy();
        server.close(resolve);
      }),
  };
}

/** How long a promise takes to settle: {value | error, ms}. */
export async function timed(promise) {
  const started = performance.now();
  try {
    return { value: await promise, ms: performance.now() - started };
  } catch (error) {
    return { error, ms: performance.now() - started };
  }
}
