// A proem client for TypeScript (Node 18+, Deno or Bun: only `fetch`).
//
//   const prompt = await build("http://127.0.0.1:7878", "marlow", { channel: "telegram" });

/** The turn: the same fields as `proem build`'s flags (see /v1/openapi.json). */
export interface Turn {
  mode?: "full" | "task" | "minimal" | "none";
  session_key?: string;
  provider?: string;
  model?: string;
  channel?: string;
  chat_kind?: "direct" | "group";
  group_title?: string;
  extra?: string;
  owners?: string[];
  tools?: string | unknown[];
  now?: string;
  timezone?: string;
  budget?: number;
  format?: "text" | "json" | "anthropic" | "openai";
}

/** An RFC 9457 problem the service answered with. */
export class ProemError extends Error {
  constructor(public status: number, public problem: { detail?: string; field?: string }) {
    super(`${status}: ${problem.detail ?? "error"}`);
  }
}

/** Builds one turn and returns what `proem build` prints for it. */
export async function build(baseUrl: string, agent: string, turn: Turn = {}, token?: string): Promise<string> {
  const response = await fetch(`${baseUrl}/v1/agents/${encodeURIComponent(agent)}/build`, {
    method: "POST",
    headers: { "Content-Type": "application/json", ...(token ? { Authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(turn),
  });
  const text = await response.text();
  if (!response.ok) throw new ProemError(response.status, JSON.parse(text));
  return text;
}
