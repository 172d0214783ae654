// Types of @proem/client (index.js), written by hand: the API of
// `proem serve` as its OpenAPI document (/v1/openapi.json) describes it.

export declare const VERSION: string;

/** The documented defaults of every Client option. */
export declare const DEFAULTS: Readonly<{
  /** The most one attempt takes, connect to last byte. */
  timeoutMs: 30000;
  /** Attempts after the first. */
  retries: 3;
  /** Every wait before a retry must end within this long of the call's start. */
  retryBudgetMs: 10000;
  /** The largest body read (32 MiB). */
  maxResponseBytes: number;
  /** The first backoff wait without Retry-After (doubled per retry, times 0.5–1). */
  backoffMs: 250;
  /** The longest backoff wait. */
  maxBackoffMs: 4000;
}>;

/** `ProemError.type` when no answer came to carry one. */
export declare const CONNECTION: "urn:proem:client:connection";
export declare const TIMEOUT: "urn:proem:client:timeout";
export declare const TOO_LARGE: "urn:proem:client:too-large";
export declare const BAD_RESPONSE: "urn:proem:client:bad-response";

export type Mode = "full" | "task" | "minimal" | "none";
export type Format = "text" | "json" | "anthropic" | "openai" | "prefix" | "provider";
export type ChatKind = "direct" | "group";

/** A tool as a tools file lists it. */
export interface ToolDefinition {
  name: string;
  description?: string;
  parameters?: Record<string, unknown>;
}

/** A tool in OpenAI's function form. */
export interface FunctionTool {
  type: "function";
  function: ToolDefinition;
}

export type Tools = string | Array<ToolDefinition | FunctionTool> | { tools: Array<ToolDefinition | FunctionTool> };

/**
 * One turn's inputs: `POST /v1/agents/{id}/build`'s body, the same inputs
 * as `proem build`'s flags. Every field is optional. A field a newer server
 * takes and this type lacks is sent as it is at run time (widen the object's
 * type to pass it).
 */
export interface Turn {
  /** Force a prompt mode (otherwise: session key, then config, then full). */
  mode?: Mode;
  /** `…:heartbeat…` caps the mode at minimal; `…:subagent:…`, `…:cron:…` at task. */
  session_key?: string;
  /** A heartbeat turn: HEARTBEAT.md and the ack contract, mode at most minimal. */
  heartbeat?: boolean;
  /** The agent may stay silent this turn. */
  replies_optional?: boolean;
  /** The thinking level for the runtime line. */
  thinking?: string;
  /** Provider name (overrides [provider] name). */
  provider?: string;
  /** Model id (overrides [provider] model; picks the tokenizer). */
  model?: string;
  /** The channel the message came from (telegram, slack, …). */
  channel?: string;
  /** Direct message or group chat. */
  chat_kind?: ChatKind;
  /** The group chat's title. */
  group_title?: string;
  /** Extra system prompt for this turn. */
  extra?: string;
  /** The owners' sender ids. */
  owners?: string[];
  /** Tools inline, or the name of a tools JSON file inside the agent directory. */
  tools?: Tools;
  /** The turn's time, RFC 3339 (only the date reaches the prompt). */
  now?: string;
  /** IANA time zone for the date. */
  timezone?: string;
  /** Whole-prompt token budget. */
  budget?: number;
  /** What to answer (default text). */
  format?: Format;
  /** Fail (502) when any plugin failed, instead of building without it. */
  strict?: boolean;
}

export interface Tokens {
  total: number;
  stable: number;
  dynamic: number;
  budget: number;
  tool_schemas: number;
}

export interface Section {
  id: string;
  source: string;
  zone: "stable" | "dynamic";
  chars: number;
  tokens: number;
  truncated: boolean;
}

export interface FileReport {
  name: string;
  raw_chars: number;
  injected_chars: number;
  truncated: boolean;
  missing: boolean;
  source: string;
}

export interface PluginReport {
  id: string;
  status: string;
  elapsed_us: number;
  /** True when no call reached the plugin this build: every answer it needed was remembered (`elapsed_us` is then 0). */
  remembered?: boolean;
}

export interface Diagnostic {
  level: "info" | "warn" | "error";
  code: string;
  message: string;
}

/** A build's JSON report (format "json"). Members a newer server adds are there too. */
export interface Build {
  prompt: string;
  /** The cacheable part: identical across turns. */
  stable: string;
  /** This turn's part. */
  dynamic: string;
  /** SHA-256 of `stable`: equal hashes, the provider's prompt cache holds. */
  stable_hash: string;
  mode: Mode;
  tokenizer: string;
  tokens: Tokens;
  sections: Section[];
  files: FileReport[];
  plugins: PluginReport[];
  diagnostics: Diagnostic[];
  [member: string]: unknown;
}

/** An Anthropic cache breakpoint. */
export interface CacheControl {
  type: "ephemeral";
  ttl: "5m" | "1h";
}

/** Format "anthropic": the stable block and the session block with
 * cache_control, then the per-turn block (when it stays in the system
 * prompt); the breakpoints to put on the last tool and on the newest user
 * message; the turn context with `[cache] per_turn = "user_message"`. */
export interface AnthropicSystem {
  system: Array<{ type: "text"; text: string; cache_control?: CacheControl }>;
  breakpoints: { tools: CacheControl; conversation: CacheControl };
  turn_context?: Array<{ type: "text"; text: string }>;
}

/** Formats "openai" and "prefix": one system message, the cache marker
 * removed; "openai" adds the prompt_cache_key. */
export interface OpenAIMessages {
  messages: Array<{ role: "system"; content: string }>;
  prompt_cache_key?: string;
  turn_context?: { type: "text"; text: string };
}

export interface Inspection {
  build: Build;
  section_hashes: Array<{ id: string; source: string; hash: string }>;
}

export interface AgentSummary {
  id: string;
  /** stale: the last reload failed and the previous config still serves. */
  status: "ok" | "stale" | "not_loaded";
  last_error: string | null;
  reloads: number;
  /** Unix seconds. */
  loaded_at: number;
}

export interface AgentPlugin {
  id: string;
  origin: string;
  status: "ok" | "load_failed";
  error: string | null;
  version: string | null;
  api_version: string | null;
  hooks: string | null;
  asks_for: string[];
  granted: string[];
  required: boolean;
}

export interface Agent extends AgentSummary {
  memo_hits?: number;
  config?: {
    agent_id: string | null;
    kind: string;
    mode: string | null;
    provider: string | null;
    model: string | null;
    budget_tokens: number;
  };
  plugins?: AgentPlugin[];
}

/** An answer as it came. */
export interface RawResponse {
  status: number;
  statusText: string;
  /** Header names lowercased. */
  headers: Record<string, string>;
  /** Exactly what `proem build` prints for the same turn. */
  body: Uint8Array;
  /** The body as UTF-8 text. */
  text(): string;
}

export interface ClientOptions {
  /** The content of the server's --token-file, sent as `Authorization: Bearer`. */
  token?: string;
  timeoutMs?: number;
  retries?: number;
  retryBudgetMs?: number;
  maxResponseBytes?: number;
}

export interface CallOptions {
  /** Aborts the call (its attempt, or its wait before a retry). */
  signal?: AbortSignal;
}

/** An RFC 9457 problem document. */
export interface Problem {
  type?: string;
  title?: string;
  status?: number;
  detail?: string;
  field?: string;
  [member: string]: unknown;
}

/**
 * A call that did not give a result. With an answer: its `status` and
 * problem document; without one, `status` is null and `type` one of
 * CONNECTION, TIMEOUT, TOO_LARGE, BAD_RESPONSE.
 */
export declare class ProemError extends Error {
  constructor(
    detail: string,
    init?: { status?: number | null; type?: string; title?: string; problem?: Problem; headers?: Record<string, string> },
  );
  detail: string;
  status: number | null;
  type: string;
  title: string;
  problem: Problem;
  headers: Record<string, string>;
  /** The request field the server says is wrong (400, 422), if any. */
  readonly field: string | undefined;
}

/** The seconds a Retry-After value asks to wait; null when absent or unreadable. */
export declare function parseRetryAfter(value: string | null | undefined, nowMs?: number): number | null;

export interface RetryPolicy {
  retries: number;
  retryBudgetMs: number;
  backoffMs: number;
  maxBackoffMs: number;
}

/** The retry rule of one call (what Client uses; exported for tests and own loops). */
export declare class Attempts {
  constructor(
    policy: RetryPolicy,
    clocks?: { clock?: () => number; wallClock?: () => number; jitter?: () => number },
  );
  /** Why the last retry was not made. */
  gaveUp: string | null;
  /** The wait before the next attempt in ms, or null when the call ends here. */
  nextWaitMs(outcome: ProemError | { status: number; headers: Record<string, string> }): number | null;
}

/**
 * A client of one `proem serve`. A call settles within
 * `retryBudgetMs + timeoutMs`, whatever the server does.
 */
export declare class Client {
  constructor(baseUrl: string, options?: ClientOptions);
  readonly baseUrl: string;
  buildRaw(agent: string, turn?: Turn, options?: CallOptions): Promise<RawResponse>;
  build(agent: string, turn: Turn & { format: "json" }, options?: CallOptions): Promise<Build>;
  build(agent: string, turn: Turn & { format: "anthropic" }, options?: CallOptions): Promise<AnthropicSystem>;
  build(agent: string, turn: Turn & { format: "openai" | "prefix" }, options?: CallOptions): Promise<OpenAIMessages>;
  build(agent: string, turn: Turn & { format: "provider" }, options?: CallOptions): Promise<AnthropicSystem | OpenAIMessages>;
  build(agent: string, turn?: Turn & { format?: "text" }, options?: CallOptions): Promise<string>;
  build(agent: string, turn?: Turn, options?: CallOptions): Promise<Build | AnthropicSystem | OpenAIMessages | string>;
  inspect(agent: string, turn?: Turn, options?: CallOptions): Promise<Inspection>;
  agents(options?: CallOptions): Promise<AgentSummary[]>;
  agent(agent: string, options?: CallOptions): Promise<Agent>;
}
