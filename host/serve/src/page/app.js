// proem inspector: calls the service's own API and draws what a build is
// made of. Everything shown comes from the build, which carries untrusted
// text (files, plugin output, the extra prompt): it is only ever put on the
// page as text (textContent), never parsed as HTML.
"use strict";

const state = { previous: null, agent: null, reserve: 0, events: null, changed: new Set() };
const TOKEN_KEY = "proem-token";
const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v;
    else if (k === "title") node.title = v;
    else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
}

// The bearer token lives in this tab's sessionStorage only: never in a
// URL, a cookie or a log line; "Sign out" (or closing the tab) forgets it.
function headers() {
  const h = { "Content-Type": "application/json" };
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) h["Authorization"] = "Bearer " + token;
  return h;
}

function signIn() {
  const token = $("token").value.trim();
  $("token").value = "";
  if (!token) return;
  sessionStorage.setItem(TOKEN_KEY, token);
  $("token-row").hidden = true;
  $("sign-out").hidden = false;
  loadAgents();
}

function signOut() {
  sessionStorage.removeItem(TOKEN_KEY);
  $("sign-out").hidden = true;
  stopEvents();
  loadAgents();
}

async function api(method, path, body) {
  const response = await fetch(path, { method, headers: headers(), body: body ? JSON.stringify(body) : undefined });
  if (response.status === 401) {
    sessionStorage.removeItem(TOKEN_KEY);
    $("token-row").hidden = false;
    $("sign-out").hidden = true;
  }
  const text = await response.text();
  let data = null;
  try { data = JSON.parse(text); } catch (_) { data = { detail: text }; }
  if (!response.ok) {
    const field = data && data.field ? " (field: " + data.field + ")" : "";
    const id = data && data.request_id ? " [request " + data.request_id + "]" : "";
    throw new Error((data && data.detail ? data.detail : response.statusText) + field + id);
  }
  return data;
}

function setStatus(id, text, kind) {
  const node = $(id);
  node.textContent = text;
  node.className = "status " + (kind || "");
}

async function loadAgents() {
  try {
    const { agents } = await api("GET", "/v1/agents");
    const select = $("agent");
    select.replaceChildren(...agents.map((a) => el("option", { value: a.id }, a.id + (a.status === "ok" ? "" : " (" + a.status + ")"))));
    const wanted = new URLSearchParams(location.search).get("agent");
    if (wanted && agents.some((a) => a.id === wanted)) select.value = wanted;
    await showAgent();
  } catch (e) {
    setStatus("agent-status", e.message, "error");
  }
}

async function showAgent() {
  const id = $("agent").value;
  if (!id) return;
  if (state.agent !== id) { state.previous = null; state.changed.clear(); $("changes").hidden = true; }
  state.agent = id;
  try {
    state.info = await api("GET", "/v1/agents/" + encodeURIComponent(id));
    if (state.info.config) state.reserve = Math.min(state.info.config.dynamic_reserve || 0, Math.floor(state.info.config.budget_tokens / 4));
    agentHeader(null);
    watchEvents(id);
  } catch (e) {
    setStatus("agent-status", e.message, "error");
  }
}

// The agent's line: its status, and each plugin's as the last build saw
// it (a plugin that loaded but failed in the build is never "ok").
function agentHeader(build) {
  const agent = state.info;
  if (!agent) return;
  const ran = new Map(build ? build.plugins.map((p) => [p.id, p.status]) : []);
  const failed = [];
  const plugins = (agent.plugins || []).map((p) => {
    const status = p.status !== "ok" ? p.status : (ran.get(p.id) || "ok");
    if (status !== "ok") failed.push(p.id);
    return p.id + " " + status;
  }).join(", ");
  const parts = [agent.status];
  if (agent.config) parts.push((agent.config.provider || "no provider") + " / " + (agent.config.model || "no model"), "budget " + agent.config.budget_tokens);
  if (plugins) parts.push("plugins: " + plugins);
  if (agent.last_error) parts.push("last reload failed: " + agent.last_error);
  setStatus("agent-status", parts.join(" · "), agent.last_error || failed.length ? "error" : "ok");
}

// Change notifications: server-sent events read through fetch (so that
// the token goes in a header, never in the URL), reconnecting after a
// pause while the page shows the agent.
function stopEvents() {
  if (state.events) state.events.abort();
  state.events = null;
}

async function watchEvents(id) {
  stopEvents();
  const controller = new AbortController();
  state.events = controller;
  while (!controller.signal.aborted && state.agent === id) {
    try {
      const response = await fetch("/v1/agents/" + encodeURIComponent(id) + "/events", { headers: headers(), signal: controller.signal });
      if (!response.ok || !response.body) throw new Error("events: " + response.status);
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      let buffered = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffered += decoder.decode(value, { stream: true });
        let end;
        while ((end = buffered.indexOf("\n\n")) >= 0) {
          const block = buffered.slice(0, end);
          buffered = buffered.slice(end + 2);
          const data = block.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
          if (data) noteChange(JSON.parse(data));
        }
      }
    } catch (e) {
      if (controller.signal.aborted) return;
    }
    await new Promise((resolve) => setTimeout(resolve, 2000));
  }
}

function noteChange(change) {
  for (const f of change.files || []) state.changed.add(f);
  const what = {
    files: "files changed: " + [...state.changed].join(", ") + (change.more_files ? " and " + change.more_files + " more" : ""),
    config: "the config was reloaded",
    reload_failed: "the config failed to reload (the previous one still serves): " + (change.error || ""),
    removed: "the agent was removed",
    lagged: "the agent changed (several times)",
  }[change.what] || "the agent changed";
  $("changes-text").textContent = new Date().toLocaleTimeString() + ": " + what + ".";
  $("changes").hidden = false;
  if (change.what !== "files") showAgentInfo();
}

async function showAgentInfo() {
  try { state.info = await api("GET", "/v1/agents/" + encodeURIComponent(state.agent)); agentHeader(state.previous && state.previous.build); } catch (_) { /* shown at the next build */ }
}

function turnFromForm() {
  const form = $("turn");
  const turn = { format: "json" };
  for (const name of ["provider", "model", "mode", "channel", "chat_kind", "group_title", "extra", "timezone"]) {
    const v = form.elements[name].value.trim();
    if (v) turn[name] = v;
  }
  for (const name of ["session_key", "thinking"]) {
    const v = form.elements[name].value.trim();
    if (v) turn[name] = v;
  }
  const owners = form.elements.owners.value.split(",").map((o) => o.trim()).filter(Boolean);
  if (owners.length) turn.owners = owners;
  for (const name of ["heartbeat", "replies_optional"]) if (form.elements[name].checked) turn[name] = true;
  const tools = form.elements.tools.value.trim();
  if (tools) {
    if (tools.startsWith("[") || tools.startsWith("{")) {
      try { turn.tools = JSON.parse(tools); } catch (e) { throw new Error("tools: the pasted JSON does not parse: " + e.message); }
    } else {
      turn.tools = tools;
    }
  }
  const budget = form.elements.budget.value.trim();
  if (budget) turn.budget = Number(budget);
  const now = form.elements.now.value;
  if (now) turn.now = (now.length === 16 ? now + ":00" : now) + "Z";
  return turn;
}

async function build(event) {
  if (event) event.preventDefault();
  if ($("token").value.trim()) signIn();
  const id = $("agent").value;
  if (!id) { setStatus("build-status", "no agent to build: sign in, or check the agent list", "error"); return; }
  $("build").disabled = true;
  setStatus("build-status", "building…");
  try {
    const started = performance.now();
    const result = await api("POST", "/v1/agents/" + encodeURIComponent(id) + "/inspect", turnFromForm());
    const ms = (performance.now() - started).toFixed(1);
    result.changedFiles = [...state.changed];
    state.changed.clear();
    $("changes").hidden = true;
    $("result").classList.remove("greyed");
    render(result);
    agentHeader(result.build);
    setStatus("build-status", "built in " + ms + " ms (round trip)" + (result.stale ? " · from the previous config: the last reload failed" : ""), result.stale ? "error" : "ok");
    state.previous = result;
  } catch (e) {
    // What is on the page is not this turn's build: grey it out.
    $("result").classList.add("greyed");
    setStatus("build-status", "build failed: " + e.message + (state.previous ? " (the result below is the previous build's)" : ""), "error");
  } finally {
    $("build").disabled = false;
  }
}

function key(s) { return s.source + " " + s.id; }

// Sections the build's diagnostics say were left out: [{id, source, why}].
function droppedByDiagnostics(b) {
  const out = [];
  for (const d of b.diagnostics) {
    const m = /^section (\S+) \((\S+)\) (?:was left out|stays out)/.exec(d.message);
    if (m) out.push({ id: m[1], source: m[2], why: "left out for the budget" });
    else if (d.code === "budget_skills_dropped") out.push({ id: "skills", source: "core", why: "left out for the budget" });
    else if (d.code === "budget_extra_dropped") out.push({ id: "extra_context", source: "core", why: "left out for the budget" });
  }
  return out;
}

function render(result) {
  const b = result.build;
  const hashes = new Map(result.section_hashes.map((h) => [key(h), h.hash]));
  const before = state.previous ? new Map(state.previous.section_hashes.map((h) => [key(h), h.hash])) : null;
  $("result").hidden = false;

  // Totals and the stacked bar against the budget, labelled, with the
  // dynamic reserve the budget keeps free for per-turn text.
  const t = b.tokens;
  const scale = Math.max(t.budget, t.total);
  const pct = (n) => (100 * n) / scale + "%";
  $("totals").textContent = t.total + " of " + t.budget + " tokens (" + Math.round((100 * t.total) / t.budget) + "%): " +
    t.stable + " stable, " + t.dynamic + " dynamic · " + b.mode + " mode · " + b.tokenizer +
    (t.tool_schemas ? " · tool schemas sent natively: " + t.tool_schemas + " tokens" : "") +
    (state.reserve ? " · dynamic reserve " + state.reserve : "") +
    " · stable hash " + b.stable_hash.slice(0, 12);
  const segments = [];
  let stableTokens = 0;
  b.sections.forEach((s, i) => {
    const seg = el("div", {
      class: "seg " + s.zone + (i % 2 ? " alt" : "") + (s.source === "core" ? "" : " plugin"),
      title: s.id + " (" + s.source + ", " + s.zone + "): " + s.tokens + " tokens" + (s.truncated ? ", truncated" : ""),
      "data-section": s.id,
    }, s.id);
    seg.style.width = pct(s.tokens);
    segments.push(seg);
    if (s.zone === "stable") stableTokens += s.tokens;
  });
  const boundary = el("div", { class: "boundary", title: "cache boundary" });
  boundary.style.left = pct(stableTokens);
  const parts = [...segments, boundary];
  if (state.reserve) {
    const reserve = el("div", { class: "reserve", title: "dynamic reserve: " + state.reserve + " tokens kept free for per-turn text" }, "reserve " + state.reserve);
    reserve.style.left = pct(Math.max(0, t.budget - state.reserve));
    reserve.style.width = pct(state.reserve);
    parts.push(reserve);
  }
  $("bar").replaceChildren(...parts);
  $("bar-scale").replaceChildren(el("span", {}, "0"), el("span", {}, "boundary at " + stableTokens), el("span", {}, "budget " + t.budget));

  // Sections, marked when they changed since the previous build; those
  // left out stay in the table, marked why.
  const rows = b.sections.map((s, i) => {
    const changed = before ? (before.has(key(s)) ? (before.get(key(s)) !== hashes.get(key(s)) ? "changed" : "") : "new") : "";
    return el("tr", { class: changed ? "changed" : "" },
      el("td", { class: "num" }, i + 1), el("td", {}, s.id), el("td", {}, s.source),
      el("td", {}, el("span", { class: "tag " + s.zone }, s.zone)),
      el("td", { class: "num" }, s.tokens), el("td", { class: "num" }, s.chars),
      el("td", {}, s.truncated ? "yes" : ""), el("td", {}, changed));
  });
  const present = new Set(b.sections.map(key));
  const dropped = droppedByDiagnostics(b).filter((d) => !present.has(key(d)));
  if (state.previous) {
    for (const s of state.previous.build.sections) {
      if (!present.has(key(s)) && !dropped.some((d) => key(d) === key(s))) dropped.push({ id: s.id, source: s.source, zone: s.zone, why: "not in this build (mode, turn or config)" });
    }
  }
  for (const d of dropped) {
    rows.push(el("tr", { class: "dropped" }, el("td", {}, "–"), el("td", {}, d.id), el("td", {}, d.source),
      el("td", {}, d.zone ? el("span", { class: "tag " + d.zone }, d.zone) : ""), el("td", { class: "num" }, 0), el("td", { class: "num" }, 0),
      el("td", {}, ""), el("td", {}, "dropped: " + d.why)));
  }
  $("sections").tBodies[0].replaceChildren(...rows);

  // Files: raw vs injected, and why one was cut (from the diagnostics).
  const why = (name) => b.diagnostics.filter((d) => d.message.includes(name) && /truncat|cut|missing|dropped|refused|left out/.test(d.code + d.message)).map((d) => d.message).join(" ");
  $("files").tBodies[0].replaceChildren(...b.files.map((f) => el("tr", { class: f.missing || f.injected_chars === 0 ? "dropped" : "" },
    el("td", {}, f.name), el("td", {}, f.source),
    el("td", { class: "num" }, f.raw_chars), el("td", { class: "num" }, f.injected_chars),
    el("td", {}, f.missing ? el("span", { class: "tag info" }, "missing") : f.injected_chars === 0 ? el("span", { class: "tag warn" }, "dropped") : f.truncated ? el("span", { class: "tag warn" }, "cut") : el("span", { class: "tag ok" }, "whole")),
    el("td", {}, f.truncated || f.missing || f.injected_chars === 0 ? why(f.name) : ""))));

  $("plugins").tBodies[0].replaceChildren(...(b.plugins.length ? b.plugins.map((p) => el("tr", {},
    el("td", {}, p.id), el("td", {}, el("span", { class: "tag " + (p.status === "ok" ? "ok" : "error") }, p.status)),
    el("td", { class: "num" }, p.remembered ? "remembered" : (p.elapsed_us / 1000).toFixed(2) + " ms"))) :
    [el("tr", {}, el("td", { colspan: "3", class: "muted" }, "no plugins"))]));

  $("diagnostics").tBodies[0].replaceChildren(...(b.diagnostics.length ? b.diagnostics.map((d) => el("tr", {},
    el("td", {}, el("span", { class: "tag " + d.level }, d.level)), el("td", {}, d.code), el("td", {}, d.message))) :
    [el("tr", {}, el("td", { colspan: "3", class: "muted" }, "none"))]));

  $("stable-text").textContent = b.stable;
  $("dynamic-text").textContent = b.dynamic;
  renderCompare(result);
}

// A line diff (longest common subsequence), bounded: sections of more
// than MAX_DIFF_CELLS line pairs are summarised instead.
const MAX_DIFF_CELLS = 4000000;
function lineDiff(a, b) {
  const x = a.split("\n"), y = b.split("\n");
  if (x.length * y.length > MAX_DIFF_CELLS) return null;
  const n = x.length, m = y.length;
  const table = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--)
    table[i][j] = x[i] === y[j] ? table[i + 1][j + 1] + 1 : Math.max(table[i + 1][j], table[i][j + 1]);
  const out = [];
  let i = 0, j = 0;
  while (i < n && j < m) {
    if (x[i] === y[j]) { out.push(["same", x[i]]); i++; j++; }
    else if (table[i + 1][j] >= table[i][j + 1]) out.push(["del", x[i++]]);
    else out.push(["add", y[j++]]);
  }
  while (i < n) out.push(["del", x[i++]]);
  while (j < m) out.push(["add", y[j++]]);
  return out;
}

// The diff of one section, unchanged runs folded to a line each.
function diffView(before, after) {
  const lines = lineDiff(before || "", after || "");
  if (!lines) return el("p", { class: "muted" }, "too long to compare line by line (" + (before || "").length + " → " + (after || "").length + " characters)");
  const rows = [];
  let same = [];
  const flush = () => {
    if (same.length > 4) rows.push(el("div", { class: "same" }, "… " + same.length + " unchanged lines"));
    else same.forEach((l) => rows.push(el("div", { class: "same" }, "  " + l)));
    same = [];
  };
  for (const [kind, text] of lines) {
    if (kind === "same") { same.push(text); continue; }
    flush();
    rows.push(el("div", { class: kind }, (kind === "add" ? "+ " : "- ") + text));
  }
  flush();
  return el("div", { class: "diff" }, ...rows);
}

function renderCompare(result) {
  const box = $("compare");
  const prev = state.previous;
  if (!prev) {
    box.replaceChildren(el("p", { class: "muted" }, "Build again (change a field, or edit a workspace file) to see what changed."));
    return;
  }
  const now = new Map(result.section_hashes.map((h) => [key(h), h]));
  const then = new Map(prev.section_hashes.map((h) => [key(h), h]));
  const zone = new Map(result.build.sections.map((s) => [key(s), s.zone]));
  const prevZone = new Map(prev.build.sections.map((s) => [key(s), s.zone]));
  const items = [];
  const stableCauses = [];
  const diffs = [];
  for (const [k, h] of now) {
    const label = h.id + " (" + h.source + ")";
    if (!then.has(k)) { items.push("added: " + label); if (zone.get(k) === "stable") stableCauses.push(label + " added"); }
    else if (then.get(k).hash !== h.hash) {
      items.push("changed: " + label);
      if (zone.get(k) === "stable") stableCauses.push(label + " changed");
      diffs.push({ zone: zone.get(k), label, before: then.get(k).text, after: h.text });
    }
  }
  for (const [k, h] of then) {
    if (!now.has(k)) { items.push("removed: " + h.id + " (" + h.source + ")"); if (prevZone.get(k) === "stable") stableCauses.push(h.id + " removed"); }
  }
  // The files behind it: those the service said changed, and those whose size did.
  const files = new Set(result.changedFiles || []);
  const prevFiles = new Map(prev.build.files.map((f) => [f.name, f.raw_chars]));
  for (const f of result.build.files) if (prevFiles.has(f.name) && prevFiles.get(f.name) !== f.raw_chars) files.add(f.name);
  const stableChanged = prev.build.stable_hash !== result.build.stable_hash;
  const verdict = stableChanged
    ? el("p", { class: "verdict bad" }, "The stable hash changed (" + prev.build.stable_hash.slice(0, 12) + " → " + result.build.stable_hash.slice(0, 12) + "): the provider's prompt cache misses. Because of: " + (stableCauses.join(", ") || "the order of sections"))
    : el("p", { class: "verdict good" }, "The stable hash is the same: the prompt cache still hits.");
  const children = [verdict];
  if (files.size) children.push(el("p", { class: "files-changed" }, "Files changed: " + [...files].sort().join(", ")));
  children.push(items.length ? el("ul", {}, ...items.map((i) => el("li", {}, i))) : el("p", { class: "muted" }, "No section changed."));
  // Stable sections first: they are what the cache is keyed on.
  diffs.sort((a, b) => (a.zone === b.zone ? 0 : a.zone === "stable" ? -1 : 1));
  for (const d of diffs) children.push(el("h3", {}, d.label + " · " + d.zone), diffView(d.before, d.after));
  box.replaceChildren(...children);
}

document.addEventListener("DOMContentLoaded", () => {
  $("turn").addEventListener("submit", build);
  $("agent").addEventListener("change", showAgent);
  $("sign-in").addEventListener("click", signIn);
  $("sign-out").addEventListener("click", signOut);
  $("token").addEventListener("keydown", (e) => { if (e.key === "Enter") { e.preventDefault(); signIn(); } });
  $("rebuild").addEventListener("click", () => build(null));
  $("sign-out").hidden = !sessionStorage.getItem(TOKEN_KEY);
  loadAgents();
});
