// @proem/client: the client of `proem serve`'s HTTP API. Plain ESM
// JavaScript for Node 20+ (the global fetch), no dependencies and no build
// step; the types are in index.d.ts, written by hand beside it.
//
// The rules are the Python package's (host/clients/python), so both
// clients behave alike:
// - one attempt takes at most `timeoutMs`, connect to last byte (one
//   AbortSignal covers the request and the reading of the body);
// - a body is read up to `maxResponseBytes` and no further;
// - no redirect is followed (the token goes only to the server named);
// - a call is tried again only after 503 or 429 or when no answer came,
//   after the server's Retry-After or a backoff, and only if the wait ends
//   within `retryBudgetMs` of the call's start; so a call settles within
//   `retryBudgetMs + timeoutMs`.

export const VERSION = "0.2.0";

/** The documented defaults. */
export const DEFAULTS = Object.freeze({
  timeoutMs: 30_000,
  retries: 3,
  retryBudgetMs: 10_000,
  maxResponseBytes: 32 * 1024 * 1024,
  backoffMs: 250,
  maxBackoffMs: 4_000,
});

/** The `type` of a problem the client met itself (no answer to carry one). */
export const CONNECTION = "urn:proem:client:connection";
export const TIMEOUT = "urn:proem:client:timeout";
export const TOO_LARGE = "urn:proem:client:too-large";
export const BAD_RESPONSE = "urn:proem:client:bad-response";

/** The longest delay setTimeout keeps (a longer one fires at once). */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** What is kept of a body that is not a problem document, for the message. */
const SNIPPET_CHARS = 200;

/**
 * A call that did not give a result: the server's RFC 9457 problem
 * (`status`, `type`, `title`, `detail`, `problem`, `headers`), or, with
 * `status` null, one of the `urn:proem:client:…` types.
 */
export class ProemError extends Error {
  constructor(detail, { status = null, type = "about:blank", title = "", problem = {}, headers = {} } = {}) {
    super(detail);
    this.name = "ProemError";
    this.detail = detail;
    this.status = status;
    this.type = type;
    this.title = title;
    this.problem = problem;
    this.headers = headers;
  }

  /** The request field the server says is wrong (400, 422), if any. */
  get field() {
    return typeof this.problem.field === "string" ? this.problem.field : undefined;
  }
}

// ------------------------------------------------------------------ the retry rule

/**
 * The seconds a Retry-After value asks to wait (RFC 9110 §10.2.3): whole
 * seconds, or an HTTP date (a past one is 0). null when absent or
 * unreadable; a number too long to mean anything is Infinity.
 */
export function parseRetryAfter(value, nowMs = Date.now()) {
  if (value === null || value === undefined) return null;
  const text = String(value).trim();
  if (/^[0-9]+$/.test(text)) return text.length > 12 ? Infinity : Number(text);
  // Only the HTTP date forms (they start with a day name): Date.parse
  // alone reads "1.5" or "2026" as dates.
  if (!/^(Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*,? /.test(text)) return null;
  const when = Date.parse(text);
  return Number.isFinite(when) ? Math.max(0, (when - nowMs) / 1000) : null;
}

/**
 * The retry state of one call: after each attempt, `nextWaitMs(outcome)`
 * gives the wait before the next one, or null when the call ends there.
 * An outcome is an answer (`{status, headers}`) or a ProemError.
 */
export class Attempts {
  constructor(policy, { clock = () => performance.now(), wallClock = () => Date.now(), jitter = Math.random } = {}) {
    this.policy = policy;
    this.clock = clock;
    this.wallClock = wallClock;
    this.jitter = jitter;
    this.started = clock();
    this.made = 0;
    /** Why the last retry was not made, for the error message. */
    this.gaveUp = null;
  }

  nextWaitMs(outcome) {
    let askedMs = null;
    if (outcome instanceof ProemError) {
      if (outcome.type !== CONNECTION) return null;
    } else {
      if (outcome.status !== 429 && outcome.status !== 503) return null;
      const asked = parseRetryAfter(outcome.headers["retry-after"] ?? null, this.wallClock());
      askedMs = asked === null ? null : asked * 1000;
    }
    const p = this.policy;
    if (this.made >= p.retries) {
      this.gaveUp = `gave up after ${this.made + 1} attempts (retries=${p.retries})`;
      return null;
    }
    const waitMs = askedMs ?? this.backoffMs();
    const leftMs = p.retryBudgetMs - (this.clock() - this.started);
    if (waitMs > leftMs) {
      const what = askedMs !== null ? `Retry-After asks for ${waitMs / 1000} s` : `the next wait (${Math.round(waitMs)} ms)`;
      this.gaveUp = `${what}, past what is left of the ${p.retryBudgetMs / 1000} s retry budget`;
      return null;
    }
    this.made += 1;
    return waitMs;
  }

  backoffMs() {
    const p = this.policy;
    const base = Math.min(p.maxBackoffMs, p.backoffMs * 2 ** Math.min(this.made, 30));
    return base * (0.5 + 0.5 * this.jitter());
  }
}

// ------------------------------------------------------------------ one exchange

function headersOf(response) {
  const headers = {};
  for (const [name, value] of response.headers) headers[name] = value;
  return headers;
}

function mediaType(headers) {
  return (headers["content-type"] ?? "").split(";")[0].trim().toLowerCase();
}

async function readCapped(response, maxBytes) {
  const declared = response.headers.get("content-length");
  if (declared !== null && /^[0-9]+$/.test(declared) && Number(declared) > maxBytes) {
    await response.body?.cancel().catch(() => {});
    throw tooLarge(maxBytes, `it declares ${declared} bytes`);
  }
  if (response.body === null) return new Uint8Array(0);
  const reader = response.body.getReader();
  const chunks = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => {});
      throw tooLarge(maxBytes, "it sent more");
    }
    chunks.push(value);
  }
  const body = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    body.set(chunk, at);
    at += chunk.byteLength;
  }
  return body;
}

function tooLarge(maxBytes, why) {
  return new ProemError(
    `the answer is over the client's ${maxBytes} byte limit (${why}); raise maxResponseBytes if it is legitimate`,
    { type: TOO_LARGE },
  );
}

/** Whether a fetch failure is an answer that is not HTTP (undici's parser). */
function notHttp(error) {
  const code = String(error?.cause?.code ?? "");
  return code.startsWith("HPE_") || code === "UND_ERR_HEADERS_OVERFLOW";
}

function describe(error) {
  const cause = error?.cause;
  return cause ? `${cause.code ?? cause.name ?? "error"}: ${cause.message ?? cause}` : String(error?.message ?? error);
}

/**
 * One request and its whole answer, within `timeoutMs` and
 * `maxResponseBytes`. A failure is thrown as a ProemError (CONNECTION when
 * no answer came, TIMEOUT, TOO_LARGE, BAD_RESPONSE), or as the caller's
 * abort reason when `signal` aborted.
 */
async function exchange(url, init, { timeoutMs, maxResponseBytes, signal }) {
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, timeoutMs);
  const onAbort = () => controller.abort();
  signal?.addEventListener("abort", onAbort, { once: true });
  let answered = false;
  try {
    signal?.throwIfAborted();
    const response = await fetch(url, { ...init, redirect: "manual", signal: controller.signal });
    answered = true;
    const headers = headersOf(response);
    const body = await readCapped(response, maxResponseBytes);
    return { status: response.status, statusText: response.statusText, headers, body };
  } catch (error) {
    if (error instanceof ProemError) throw error;
    if (signal?.aborted) throw signal.reason;
    if (timedOut) {
      throw new ProemError(`${url}: no complete answer within ${timeoutMs} ms (timeout)`, { type: TIMEOUT });
    }
    if (answered || notHttp(error)) {
      throw new ProemError(`${url}: the answer is not valid HTTP or was cut off: ${describe(error)}`, {
        type: BAD_RESPONSE,
      });
    }
    throw new ProemError(`${url}: the connection failed: ${describe(error)}`, { type: CONNECTION });
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener("abort", onAbort);
  }
}

function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** The error for a non-2xx answer: its problem document, else the status
 * and the start of what it sent (a proxy's HTML page). */
function errorOf(answer) {
  const { status, statusText, headers, body } = answer;
  let problem = null;
  if (["application/problem+json", "application/json"].includes(mediaType(headers))) {
    try {
      problem = JSON.parse(new TextDecoder().decode(body));
    } catch {
      problem = null;
    }
  }
  const fallback = `HTTP ${status} ${statusText}`.trim();
  if (problem === null || typeof problem !== "object" || Array.isArray(problem)) {
    const snippet = new TextDecoder().decode(body.subarray(0, SNIPPET_CHARS * 4)).slice(0, SNIPPET_CHARS).trim();
    return new ProemError(snippet ? `${fallback}: ${snippet}` : fallback, { status, title: statusText, headers });
  }
  return new ProemError(typeof problem.detail === "string" ? problem.detail : fallback, {
    status,
    type: typeof problem.type === "string" ? problem.type : "about:blank",
    title: typeof problem.title === "string" ? problem.title : statusText,
    problem,
    headers,
  });
}

// ------------------------------------------------------------------ results

function badResponse(what) {
  return new ProemError(`the server's answer is not what this client reads: ${what}`, { type: BAD_RESPONSE });
}

function checkObject(value, path) {
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw badResponse(`${path} should be an object`);
  return value;
}

function checkMembers(value, path, members) {
  checkObject(value, path);
  for (const [key, kind] of Object.entries(members)) {
    const member = value[key];
    const ok =
      kind === "array" ? Array.isArray(member) : kind === "integer" ? Number.isInteger(member) : typeof member === kind;
    if (!ok) throw badResponse(`${path}.${key} should be ${kind === "integer" ? "an integer" : `a ${kind}`}`);
  }
  return value;
}

function checkList(list, path, members) {
  list.forEach((item, i) => checkMembers(item, `${path}[${i}]`, members));
}

/** A build's JSON report, each member's type checked (a server that sends
 * something else is a BAD_RESPONSE, not a half-typed object). */
function checkBuild(value, path = "$") {
  checkMembers(value, path, {
    prompt: "string",
    stable: "string",
    dynamic: "string",
    stable_hash: "string",
    mode: "string",
    tokenizer: "string",
    tokens: "object",
    sections: "array",
    files: "array",
    plugins: "array",
    diagnostics: "array",
  });
  checkMembers(value.tokens, `${path}.tokens`, {
    total: "integer",
    stable: "integer",
    dynamic: "integer",
    budget: "integer",
    tool_schemas: "integer",
  });
  checkList(value.sections, `${path}.sections`, {
    id: "string",
    source: "string",
    zone: "string",
    chars: "integer",
    tokens: "integer",
    truncated: "boolean",
  });
  checkList(value.files, `${path}.files`, {
    name: "string",
    raw_chars: "integer",
    injected_chars: "integer",
    truncated: "boolean",
    missing: "boolean",
    source: "string",
  });
  checkList(value.plugins, `${path}.plugins`, { id: "string", status: "string", elapsed_us: "integer" });
  checkList(value.diagnostics, `${path}.diagnostics`, { level: "string", code: "string", message: "string" });
  return value;
}

const SUMMARY = { id: "string", status: "string", reloads: "integer", loaded_at: "integer" };

function json(answer) {
  try {
    return JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(answer.body));
  } catch (error) {
    throw new ProemError(`the server's answer is not JSON: ${error.message}`, { type: BAD_RESPONSE });
  }
}

function buildResult(answer, format) {
  if (mediaType(answer.headers) === "text/plain") {
    try {
      return new TextDecoder("utf-8", { fatal: true }).decode(answer.body);
    } catch (error) {
      throw new ProemError(`the server's text is not UTF-8: ${error.message}`, { type: BAD_RESPONSE });
    }
  }
  const document = json(answer);
  return format === "json" ? checkBuild(document) : checkObject(document, "$");
}

// ------------------------------------------------------------------ the client

function positiveMs(name, value, max = MAX_TIMER_MS) {
  if (!Number.isFinite(value) || value < 0 || value > max) {
    throw new RangeError(`${name} must be a number of milliseconds from 0 to ${max}, not ${value}`);
  }
  return value;
}

function agentPath(agent, action = "") {
  if (typeof agent !== "string" || agent === "") {
    throw new TypeError(`agent must be an agent id (its folder name), not ${JSON.stringify(agent)}`);
  }
  return `/v1/agents/${encodeURIComponent(agent)}${action}`;
}

/** The body: every field given (null and undefined mean "not given");
 * fields this package does not know go as they are, for the server to judge. */
function turnBody(turn) {
  if (turn === null || typeof turn !== "object" || Array.isArray(turn)) {
    throw new TypeError("the turn must be an object of request fields ({channel: 'telegram', ...})");
  }
  const fields = {};
  for (const [key, value] of Object.entries(turn)) if (value !== undefined && value !== null) fields[key] = value;
  return JSON.stringify(fields);
}

/**
 * A client of one `proem serve`: `new Client("http://127.0.0.1:7878",
 * {token})`. Options: token, timeoutMs, retries, retryBudgetMs,
 * maxResponseBytes (defaults in DEFAULTS).
 */
export class Client {
  #base;
  #token;
  #policy;
  #timeoutMs;
  #maxResponseBytes;

  constructor(baseUrl, options = {}) {
    let url;
    try {
      url = new URL(baseUrl);
    } catch {
      throw new TypeError(`baseUrl ${JSON.stringify(baseUrl)} is not an address (e.g. http://127.0.0.1:7878)`);
    }
    if (!["http:", "https:"].includes(url.protocol) || url.search || url.hash || url.username || url.password) {
      throw new TypeError(`baseUrl ${JSON.stringify(baseUrl)} must be http(s)://HOST:PORT[/PATH] (the token goes in {token})`);
    }
    const { token, timeoutMs, retries, retryBudgetMs, maxResponseBytes } = { ...DEFAULTS, ...options };
    if (token !== undefined && token !== null && (typeof token !== "string" || token === "" || /[\r\n]/.test(token))) {
      throw new TypeError("token must be one non-empty line (the content of the server's --token-file)");
    }
    if (!Number.isInteger(retries) || retries < 0) throw new RangeError(`retries must be a whole number ≥ 0, not ${retries}`);
    if (!Number.isInteger(maxResponseBytes) || maxResponseBytes < 1) {
      throw new RangeError(`maxResponseBytes must be a whole number ≥ 1, not ${maxResponseBytes}`);
    }
    this.#base = url.href.replace(/\/+$/, "");
    this.#token = token ?? null;
    this.#timeoutMs = positiveMs("timeoutMs", timeoutMs);
    this.#maxResponseBytes = maxResponseBytes;
    this.#policy = {
      retries,
      retryBudgetMs: positiveMs("retryBudgetMs", retryBudgetMs),
      backoffMs: DEFAULTS.backoffMs,
      maxBackoffMs: DEFAULTS.maxBackoffMs,
    };
  }

  get baseUrl() {
    return this.#base;
  }

  async #call(method, path, body, signal) {
    const headers = { "User-Agent": `proem-client-js/${VERSION}`, Accept: "application/json, text/plain" };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    if (this.#token !== null) headers.Authorization = `Bearer ${this.#token}`;
    const options = { timeoutMs: this.#timeoutMs, maxResponseBytes: this.#maxResponseBytes, signal };
    const attempts = new Attempts(this.#policy);
    for (;;) {
      let outcome;
      try {
        outcome = await exchange(this.#base + path, { method, headers, body }, options);
      } catch (error) {
        if (!(error instanceof ProemError)) throw error; // the caller's abort
        outcome = error;
      }
      const waitMs = attempts.nextWaitMs(outcome);
      if (waitMs === null) return settle(outcome, attempts);
      await sleep(waitMs, signal);
    }
  }

  /** POST /v1/agents/{agent}/build: the answer as it came; its body is
   * exactly what `proem build` prints for the same turn. */
  buildRaw(agent, turn = {}, { signal } = {}) {
    return this.#call("POST", agentPath(agent, "/build"), turnBody(turn), signal).then((answer) => ({
      ...answer,
      text() {
        return new TextDecoder().decode(answer.body);
      },
    }));
  }

  /** Builds one turn: the report for format "json", the text for "text"
   * (the default), the provider's JSON for "anthropic", "openai", "prefix"
   * and "provider". */
  async build(agent, turn = {}, options = {}) {
    return buildResult(await this.buildRaw(agent, turn, options), turn.format);
  }

  /** POST /v1/agents/{agent}/inspect: the report and a hash of every section. */
  async inspect(agent, turn = {}, { signal } = {}) {
    const value = json(await this.#call("POST", agentPath(agent, "/inspect"), turnBody(turn), signal));
    checkMembers(value, "$", { build: "object", section_hashes: "array" });
    checkBuild(value.build, "$.build");
    checkList(value.section_hashes, "$.section_hashes", { id: "string", source: "string", hash: "string" });
    return value;
  }

  /** GET /v1/agents: every agent served, sorted by id. */
  async agents({ signal } = {}) {
    const value = checkMembers(json(await this.#call("GET", "/v1/agents", undefined, signal)), "$", { agents: "array" });
    checkList(value.agents, "$.agents", SUMMARY);
    return value.agents;
  }

  /** GET /v1/agents/{agent}: status, last reload error, config and plugins. */
  async agent(agent, { signal } = {}) {
    return checkMembers(json(await this.#call("GET", agentPath(agent), undefined, signal)), "$", SUMMARY);
  }
}

/** The 2xx answer a call ends with, or the error it throws, with the
 * reason no retry was made. */
function settle(outcome, attempts) {
  let error = outcome;
  if (!(outcome instanceof ProemError)) {
    if (outcome.status >= 200 && outcome.status < 300) return outcome;
    error = errorOf(outcome);
    if (outcome.status >= 300 && outcome.status < 400) {
      attempts.gaveUp = "the client follows no redirect: give it the server's own address";
    }
  }
  if (attempts.gaveUp) {
    error.detail = `${error.detail} (${attempts.gaveUp})`;
    error.message = error.detail;
  }
  throw error;
}
