//! Each preset is its system's prompt skeleton (issue 25, item 1): for a
//! few representative workspaces and turns, the core sections proem prints
//! (ids in prompt order, plugin sections excluded) are the ones the real
//! system prints for the same workspace and turn, in its order. The tables
//! are written from /work/research/layouts.md §1–4 (OpenClaw's
//! `buildAgentSystemPrompt`, GoClaw's `BuildSystemPrompt`, ZeroClaw's
//! `build_system_prompt`), not from the code under test; each place where
//! proem must differ says why in a comment (docs/PRESETS.md lists them).
//!
//! The workspace: AGENTS.md, SOUL.md, IDENTITY.md, USER.md, TOOLS.md,
//! MEMORY.md, two skills; the tools exec, read, memory_search,
//! sessions_spawn, message and web_search (sent natively unless a row says
//! "text protocol").

use crate::common::*;
use proem::{ChatKind, Turn};

/// The kinds of turn each preset is checked on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// An ordinary direct chat on telegram.
    Direct,
    /// A telegram group chat with an extra prompt from the caller.
    GroupWithExtra,
    /// A sub-agent session (`…:subagent:…` key) with its task as extra prompt.
    Subagent,
    /// A cron session (`…:cron:<job>` key), no channel.
    Cron,
    /// A heartbeat session, no channel.
    Heartbeat,
    /// An ordinary turn without tools and without a channel.
    NoTools,
    /// A direct chat while BOOTSTRAP.md is present (first run).
    FirstRun,
    /// A direct chat with `[tools] native_calling = false`.
    TextProtocol,
}

const TOOLS: [&str; 6] = ["exec", "read", "memory_search", "sessions_spawn", "message", "web_search"];

fn workspace(preset: &str, kind: Kind) -> Agent {
    let agent = Agent::new();
    agent.with_standard_files().skill("weather", "Forecasts.").skill("notes", "Keeps notes.");
    if kind == Kind::FirstRun {
        agent.file("BOOTSTRAP.md", "Ask the user's name first.");
    }
    let native = if kind == Kind::TextProtocol { "\n[tools]\nnative_calling = false\n" } else { "" };
    agent.config(&format!("[agent]\nid = \"probe\"\npreset = \"{preset}\"\n{native}"));
    agent
}

fn turn_of(kind: Kind) -> Turn {
    let telegram = |chat| Turn { channel: Some("telegram".into()), chat_kind: Some(chat), ..turn() };
    let base = match kind {
        Kind::Direct | Kind::FirstRun | Kind::TextProtocol => telegram(ChatKind::Direct),
        Kind::GroupWithExtra => Turn {
            group_title: Some("Lab".into()),
            extra: Some("Jonas asked about the sensor.".into()),
            ..telegram(ChatKind::Group)
        },
        Kind::Subagent => Turn {
            session_key: Some("agent:probe:subagent:task-1".into()),
            extra: Some("Summarise the log.".into()),
            ..turn()
        },
        Kind::Cron => Turn { session_key: Some("agent:probe:cron:daily".into()), ..turn() },
        Kind::Heartbeat => Turn { session_key: Some("agent:probe:heartbeat".into()), ..turn() },
        Kind::NoTools => turn(),
    };
    let tools = if kind == Kind::NoTools { Vec::new() } else { tools(&TOOLS) };
    Turn { tools: Some(tools.into()), ..base }
}

/// Core section ids of a build, in prompt order.
fn skeleton(preset: &str, kind: Kind) -> Vec<String> {
    let built = workspace(preset, kind).build(&turn_of(kind));
    built.sections.iter().filter(|s| s.source == "core").map(|s| s.id.clone()).collect()
}

fn check(preset: &str, table: &[(Kind, &[&str])]) {
    let mut wrong = Vec::new();
    for (kind, expected) in table {
        let got = skeleton(preset, *kind);
        if got != *expected {
            wrong.push(format!("{preset} {kind:?}:\n  expected {expected:?}\n  got      {got:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// OpenClaw (system-prompt.ts:380-927). Two forced moves, both the hash
/// promise: Current Date & Time (OpenClaw: the time zone, above its
/// boundary) carries proem's per-turn date, so it opens the dynamic part;
/// USER.md (OpenClaw: in Project Context) is per-turn, so it is in the
/// dynamic files. Left out as OpenClaw-only product text (README "Not
/// applicable"): CLI Quick Reference, Self-Update, Model Aliases,
/// Documentation, Control UI Embed, the session_status hint.
#[test]
fn openclaw_prints_openclaws_skeleton() {
    const FULL: &[&str] = &[
        "identity",
        "tooling",
        "tool_call_style",
        "execution_bias",
        "safety",
        "skills",
        "memory_recall",
        "workspace",
        "workspace_files_note",
        "reply_tags",
        "messaging",
        "project_context",
        "silent_replies",
        "time",
        "dynamic_files",
        "heartbeats",
        "runtime",
    ];
    check(
        "openclaw",
        &[
            (Kind::Direct, FULL),
            (
                Kind::GroupWithExtra,
                &[
                    "identity",
                    "tooling",
                    "tool_call_style",
                    "execution_bias",
                    "safety",
                    "skills",
                    "memory_recall",
                    "workspace",
                    "workspace_files_note",
                    "reply_tags",
                    "messaging",
                    "project_context",
                    "silent_replies",
                    "time",
                    "dynamic_files",
                    "extra_context",
                    "heartbeats",
                    "runtime",
                ],
            ),
            // Sub-agents and cron jobs get minimal: Memory Recall, Execution
            // Bias, output directives, Messaging, Silent Replies and
            // Heartbeats go; Tool Call Style and the skills stay (the code,
            // sp.ts:151-167; the seed says skills go).
            (
                Kind::Subagent,
                &[
                    "identity",
                    "tooling",
                    "tool_call_style",
                    "safety",
                    "skills",
                    "workspace",
                    "workspace_files_note",
                    "project_context",
                    "time",
                    "dynamic_files",
                    "extra_context",
                    "runtime",
                ],
            ),
            (
                Kind::Cron,
                &[
                    "identity",
                    "tooling",
                    "tool_call_style",
                    "safety",
                    "skills",
                    "workspace",
                    "workspace_files_note",
                    "project_context",
                    "time",
                    "dynamic_files",
                    "runtime",
                ],
            ),
            // Heartbeats are full in OpenClaw (no cap), HEARTBEAT.md in the
            // dynamic files.
            (Kind::Heartbeat, FULL),
            // No tools: no Tool Call Style or Execution Bias (proem's rule:
            // OpenClaw prints both anyway); no memory tool, no Memory Recall.
            (
                Kind::NoTools,
                &[
                    "identity",
                    "tooling",
                    "safety",
                    "skills",
                    "workspace",
                    "workspace_files_note",
                    "reply_tags",
                    "messaging",
                    "project_context",
                    "silent_replies",
                    "time",
                    "dynamic_files",
                    "heartbeats",
                    "runtime",
                ],
            ),
            // OpenClaw has no first-run notice: BOOTSTRAP.md is one more file.
            (Kind::FirstRun, FULL),
        ],
    );
}

/// GoClaw (systemprompt.go, seed 000's table). proem's identity line is
/// there without a channel too (GoClaw prints its line only with one, as
/// its channel makes it per chat; proem keeps the channel in Runtime).
/// Its heartbeat ack contract rides in the dynamic files.
#[test]
fn goclaw_prints_goclaws_skeleton() {
    check(
        "goclaw",
        &[
            (
                Kind::Direct,
                &[
                    "identity",
                    "persona",
                    "tooling",
                    "execution_bias",
                    "tool_call_style",
                    "safety",
                    "skills",
                    "workspace",
                    "memory_recall",
                    "project_context",
                    "time",
                    "dynamic_files",
                    "subagents",
                    "runtime",
                    "recency",
                ],
            ),
            (
                Kind::GroupWithExtra,
                &[
                    "identity",
                    "persona",
                    "tooling",
                    "execution_bias",
                    "tool_call_style",
                    "safety",
                    "skills",
                    "workspace",
                    "memory_recall",
                    "project_context",
                    "time",
                    "group_reply",
                    "extra_context",
                    "dynamic_files",
                    "subagents",
                    "runtime",
                    "recency",
                ],
            ),
            // Sub-agents and cron jobs are capped at task: its files are
            // SOUL.md, IDENTITY.md and TOOLS.md (AGENTS_TASK.md, CAPABILITIES.md
            // when present), no Tool Call Style, skills as a search hint,
            // memory as one line.
            (
                Kind::Subagent,
                &[
                    "identity",
                    "persona",
                    "tooling",
                    "execution_bias",
                    "safety",
                    "skills",
                    "workspace",
                    "memory_recall",
                    "project_context",
                    "time",
                    "extra_context",
                    "runtime",
                ],
            ),
            (
                Kind::Cron,
                &[
                    "identity",
                    "persona",
                    "tooling",
                    "execution_bias",
                    "safety",
                    "skills",
                    "workspace",
                    "memory_recall",
                    "project_context",
                    "time",
                    "runtime",
                ],
            ),
            // Heartbeats are minimal: AGENTS_CORE.md and CAPABILITIES.md
            // only (neither exists here), no pinned skills.
            (
                Kind::Heartbeat,
                &["identity", "tooling", "safety", "workspace", "memory_recall", "time", "dynamic_files", "runtime"],
            ),
            // No tools: no Execution Bias or Tool Call Style (proem's rule;
            // GoClaw prints them), no spawn guidance.
            (
                Kind::NoTools,
                &[
                    "identity",
                    "persona",
                    "tooling",
                    "safety",
                    "skills",
                    "workspace",
                    "memory_recall",
                    "project_context",
                    "time",
                    "dynamic_files",
                    "runtime",
                    "recency",
                ],
            ),
            // An open agent's first run: the notice, and only what onboarding
            // needs (no Execution Bias, Tool Call Style, skills, spawn
            // guidance or reminder).
            (
                Kind::FirstRun,
                &[
                    "identity",
                    "first_run",
                    "persona",
                    "tooling",
                    "safety",
                    "workspace",
                    "memory_recall",
                    "project_context",
                    "time",
                    "dynamic_files",
                    "runtime",
                ],
            ),
        ],
    );
}

/// ZeroClaw (system_prompt.rs:134-490 and its callers). No identity line,
/// no Tools list when the tools go natively; Channel Capabilities in every
/// prompt; channel delivery text and the caller's prompt at the end. USER.md
/// and BOOTSTRAP.md are per-turn, so they continue Project Context below
/// the boundary.
#[test]
fn zeroclaw_prints_zeroclaws_skeleton() {
    const FULL: &[&str] = &[
        "tool_call_style",
        "tool_honesty",
        "execution_bias",
        "safety",
        "skills",
        "workspace",
        "project_context",
        "dynamic_files",
        "time",
        "runtime",
        "channel_capabilities",
        "channel_formatting",
    ];
    const NO_CHANNEL: &[&str] = &[
        "tool_call_style",
        "tool_honesty",
        "execution_bias",
        "safety",
        "skills",
        "workspace",
        "project_context",
        "dynamic_files",
        "time",
        "runtime",
        "channel_capabilities",
    ];
    check(
        "zeroclaw",
        &[
            (Kind::Direct, FULL),
            (
                Kind::GroupWithExtra,
                &[
                    "tool_call_style",
                    "tool_honesty",
                    "execution_bias",
                    "safety",
                    "skills",
                    "workspace",
                    "project_context",
                    "dynamic_files",
                    "time",
                    "runtime",
                    "channel_capabilities",
                    "channel_formatting",
                    "extra_context",
                ],
            ),
            // A delegate sub-agent's prompt: safety, skills, workspace, the
            // files, date and runtime.
            (
                Kind::Subagent,
                &[
                    "safety",
                    "skills",
                    "workspace",
                    "project_context",
                    "dynamic_files",
                    "time",
                    "runtime",
                    "extra_context",
                ],
            ),
            // ZeroClaw has one prompt for every other session.
            (Kind::Cron, NO_CHANNEL),
            (Kind::Heartbeat, NO_CHANNEL),
            // No tools: no narration or honesty rules, Your Task in its
            // no-tools form.
            (
                Kind::NoTools,
                &[
                    "execution_bias",
                    "safety",
                    "skills",
                    "workspace",
                    "project_context",
                    "dynamic_files",
                    "time",
                    "runtime",
                    "channel_capabilities",
                ],
            ),
            (Kind::FirstRun, FULL),
            // Tools through the text protocol: the Tools list, and the Tool
            // Use Protocol after Channel Capabilities.
            (
                Kind::TextProtocol,
                &[
                    "tool_call_style",
                    "tool_honesty",
                    "tooling",
                    "execution_bias",
                    "safety",
                    "skills",
                    "workspace",
                    "project_context",
                    "dynamic_files",
                    "time",
                    "runtime",
                    "channel_capabilities",
                    "tool_protocol",
                    "channel_formatting",
                ],
            ),
        ],
    );
}

/// The headings are the systems' (labels; the wording under them is
/// proem's): a few that show each preset is its system at a glance.
#[test]
fn each_preset_uses_its_systems_headings() {
    let heading = |preset: &str, kind: Kind| workspace(preset, kind).build(&turn_of(kind)).prompt;
    let openclaw = heading("openclaw", Kind::Direct);
    for h in [
        "## Skills (mandatory)",
        "## Memory Recall",
        "## Workspace Files (injected)",
        "# Project Context",
        "## Silent Replies",
        "## Current Date & Time",
        "## Heartbeats",
        "## Assistant Output Directives",
    ] {
        assert!(openclaw.contains(&format!("\n{h}\n")), "openclaw: {h}");
    }
    let goclaw = heading("goclaw", Kind::Direct);
    for h in [
        "# Persona & Identity (CRITICAL — follow throughout the entire conversation)",
        "## Skills (mandatory)",
        "## Memory Recall",
        "# Project Context",
        "## Sub-Agent Spawning",
    ] {
        assert!(goclaw.contains(&format!("\n{h}\n")), "goclaw: {h}");
    }
    assert!(heading("goclaw", Kind::FirstRun).contains("\n## FIRST RUN — MANDATORY\n"));
    let zeroclaw = heading("zeroclaw", Kind::Direct);
    for h in [
        "## CRITICAL: No Tool Narration",
        "## CRITICAL: Tool Honesty",
        "## Your Task",
        "## Available Skills",
        "## Current Date",
    ] {
        assert!(zeroclaw.contains(&format!("{h}\n")), "zeroclaw: {h}");
    }
    assert!(zeroclaw.starts_with("## CRITICAL: No Tool Narration\n"), "no identity line before it");
    // Under no preset none of them appears.
    let own = Agent::new();
    own.with_standard_files();
    let plain = own.build(&turn_of(Kind::Direct)).prompt;
    for h in ["(mandatory)", "Your Task", "Persona & Identity", "Workspace Files (injected)"] {
        assert!(!plain.contains(h), "{h}");
    }
}
