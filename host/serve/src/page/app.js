// proem inspector: calls the service's own API and draws what a build is
// made of. Everything shown comes from the build, which carries untrusted
// text (files, plugin output, the extra prompt): it is only ever put on the
// page as text (textContent), never parsed as HTML.
"use strict";

const state = { previous: null, agent: null };
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

function headers() {
  const h = { "Content-Type": "application/json" };
  const token = $("token").value.trim() || sessionStorage.getItem("proem-token");
  if (token) h["Authorization"] = "Bearer " + token;
  return h;
}

async function api(method, path, body) {
  const response = await fetch(path, { method, headers: headers(), body: body ? JSON.stringify(body) : undefined });
  if (response.status === 401) $("token-row").hidden = false;
  const text = await response.text();
  let data = null;
  try { data = JSON.parse(text); } catch (_) { data = { detail: text }; }
  if (!response.ok) {
    const field = data && data.field ? " (field: " + data.field + ")" : "";
    throw new Error((data && data.detail ? data.detail : response.statusText) + field);
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
  if (state.agent !== id) state.previous = null;
  state.agent = id;
  try {
    const agent = await api("GET", "/v1/agents/" + encodeURIComponent(id));
    const plugins = (agent.plugins || []).map((p) => p.id + " " + p.status).join(", ");
    const parts = [agent.status];
    if (agent.config) parts.push((agent.config.provider || "no provider") + " / " + (agent.config.model || "no model"), "budget " + agent.config.budget_tokens);
    if (plugins) parts.push("plugins: " + plugins);
    if (agent.last_error) parts.push("last reload failed: " + agent.last_error);
    setStatus("agent-status", parts.join(" · "), agent.last_error ? "error" : "ok");
  } catch (e) {
    setStatus("agent-status", e.message, "error");
  }
}

function turnFromForm() {
  const form = $("turn");
  const turn = { format: "json" };
  for (const name of ["provider", "model", "mode", "channel", "chat_kind", "group_title", "extra", "timezone"]) {
    const v = form.elements[name].value.trim();
    if (v) turn[name] = v;
  }
  const budget = form.elements.budget.value.trim();
  if (budget) turn.budget = Number(budget);
  const now = form.elements.now.value;
  if (now) turn.now = (now.length === 16 ? now + ":00" : now) + "Z";
  return turn;
}

async function build(event) {
  event.preventDefault();
  const id = $("agent").value;
  if (!id) return;
  if ($("token").value.trim()) sessionStorage.setItem("proem-token", $("token").value.trim());
  $("build").disabled = true;
  setStatus("build-status", "building…");
  try {
    const started = performance.now();
    const result = await api("POST", "/v1/agents/" + encodeURIComponent(id) + "/inspect", turnFromForm());
    const ms = (performance.now() - started).toFixed(1);
    render(result);
    setStatus("build-status", "built in " + ms + " ms (round trip)", "ok");
    state.previous = result;
  } catch (e) {
    setStatus("build-status", e.message, "error");
  } finally {
    $("build").disabled = false;
  }
}

function key(s) { return s.source + " " + s.id; }

function render(result) {
  const b = result.build;
  const hashes = new Map(result.section_hashes.map((h) => [key(h), h.hash]));
  const before = state.previous ? new Map(state.previous.section_hashes.map((h) => [key(h), h.hash])) : null;
  $("result").hidden = false;

  // Totals and the stacked bar against the budget.
  const t = b.tokens;
  $("totals").textContent = t.total + " of " + t.budget + " tokens (" + Math.round((100 * t.total) / t.budget) + "%): " +
    t.stable + " stable, " + t.dynamic + " dynamic · " + b.mode + " mode · " + b.tokenizer +
    (t.tool_schemas ? " · tool schemas sent natively: " + t.tool_schemas + " tokens" : "") +
    " · stable hash " + b.stable_hash.slice(0, 12);
  const bar = $("bar");
  const segments = [];
  let stableTokens = 0;
  b.sections.forEach((s, i) => {
    const seg = el("div", {
      class: "seg " + s.zone + (i % 2 ? " alt" : "") + (s.source === "core" ? "" : " plugin"),
      title: s.id + " (" + s.source + ", " + s.zone + "): " + s.tokens + " tokens" + (s.truncated ? ", truncated" : ""),
      "data-section": s.id,
    });
    seg.style.width = (100 * s.tokens) / Math.max(t.budget, t.total) + "%";
    segments.push(seg);
    if (s.zone === "stable") stableTokens += s.tokens;
  });
  const boundary = el("div", { class: "boundary", title: "cache boundary" });
  boundary.style.left = (100 * stableTokens) / Math.max(t.budget, t.total) + "%";
  bar.replaceChildren(...segments, boundary);

  // Sections, marked when they changed since the previous build.
  const rows = b.sections.map((s, i) => {
    const changed = before ? (before.has(key(s)) ? (before.get(key(s)) !== hashes.get(key(s)) ? "changed" : "") : "new") : "";
    return el("tr", { class: changed ? "changed" : "" },
      el("td", { class: "num" }, i + 1), el("td", {}, s.id), el("td", {}, s.source),
      el("td", {}, el("span", { class: "tag " + s.zone }, s.zone)),
      el("td", { class: "num" }, s.tokens), el("td", { class: "num" }, s.chars),
      el("td", {}, s.truncated ? "yes" : ""), el("td", {}, changed));
  });
  $("sections").tBodies[0].replaceChildren(...rows);

  // Files: raw vs injected, and why one was cut (from the diagnostics).
  const why = (name) => b.diagnostics.filter((d) => d.message.includes(name) && /truncat|cut|missing|dropped|refused/.test(d.code + d.message)).map((d) => d.message).join(" ");
  $("files").tBodies[0].replaceChildren(...b.files.map((f) => el("tr", {},
    el("td", {}, f.name), el("td", {}, f.source),
    el("td", { class: "num" }, f.raw_chars), el("td", { class: "num" }, f.injected_chars),
    el("td", {}, f.missing ? el("span", { class: "tag info" }, "missing") : f.truncated ? el("span", { class: "tag warn" }, "cut") : el("span", { class: "tag ok" }, "whole")),
    el("td", {}, f.truncated || f.missing ? why(f.name) : ""))));

  $("plugins").tBodies[0].replaceChildren(...(b.plugins.length ? b.plugins.map((p) => el("tr", {},
    el("td", {}, p.id), el("td", {}, el("span", { class: "tag " + (p.status === "ok" ? "ok" : "error") }, p.status)),
    el("td", { class: "num" }, p.elapsed_us === 0 && p.status === "ok" ? "remembered" : (p.elapsed_us / 1000).toFixed(2) + " ms"))) :
    [el("tr", {}, el("td", { colspan: "3", class: "muted" }, "no plugins"))]));

  $("diagnostics").tBodies[0].replaceChildren(...(b.diagnostics.length ? b.diagnostics.map((d) => el("tr", {},
    el("td", {}, el("span", { class: "tag " + d.level }, d.level)), el("td", {}, d.code), el("td", {}, d.message))) :
    [el("tr", {}, el("td", { colspan: "3", class: "muted" }, "none"))]));

  $("stable-text").textContent = b.stable;
  $("dynamic-text").textContent = b.dynamic;
  renderCompare(result);
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
  for (const [k, h] of now) {
    const label = h.id + " (" + h.source + ")";
    if (!then.has(k)) { items.push("added: " + label); if (zone.get(k) === "stable") stableCauses.push(label + " added"); }
    else if (then.get(k).hash !== h.hash) { items.push("changed: " + label); if (zone.get(k) === "stable") stableCauses.push(label + " changed"); }
  }
  for (const [k, h] of then) {
    if (!now.has(k)) { items.push("removed: " + h.id + " (" + h.source + ")"); if (prevZone.get(k) === "stable") stableCauses.push(h.id + " removed"); }
  }
  const stableChanged = prev.build.stable_hash !== result.build.stable_hash;
  const verdict = stableChanged
    ? el("p", { class: "verdict bad" }, "The stable hash changed (" + prev.build.stable_hash.slice(0, 12) + " → " + result.build.stable_hash.slice(0, 12) + "): the provider's prompt cache misses. Because of: " + (stableCauses.join(", ") || "the order of sections"))
    : el("p", { class: "verdict good" }, "The stable hash is the same: the prompt cache still hits.");
  box.replaceChildren(verdict, items.length ? el("ul", {}, ...items.map((i) => el("li", {}, i))) : el("p", { class: "muted" }, "No section changed."));
}

document.addEventListener("DOMContentLoaded", () => {
  $("turn").addEventListener("submit", build);
  $("agent").addEventListener("change", showAgent);
  const saved = sessionStorage.getItem("proem-token");
  if (saved) $("token").value = saved;
  loadAgents();
});
