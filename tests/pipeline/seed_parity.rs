//! Seed parity: one test per prompt behaviour of OpenClaw, GoClaw or
//! ZeroClaw that proem reproduces, each naming its seed document and section
//! (../shared/seeds/: 000 = GoClaw "23 sections" prompt builder, 001 =
//! OpenClaw system-prompt.md, 002 = ZeroClaw system prompt construction,
//! 003 = OpenClaw agent / md-files explanation, 004 = GoClaw agents doc) and,
//! where the code differs from the docs, ../shared/reference/.

use crate::common::*;
use proem::{Built, Mode, Turn, BOUNDARY_MARKER};

fn ids(built: &Built) -> Vec<String> {
    section_ids(built)
}

fn agent_with_everything() -> Agent {
    let agent = Agent::new();
    agent.with_standard_files().skill("weather", "Forecasts.");
    agent.config("[agent]\nid = \"seedbot\"\n[tools]\nnative_calling = false\n");
    agent
}

/// 000 (mode table, column "None") and reference/goclaw.md: GoClaw's `none`
/// keeps identity, tooling, safety, workspace, runtime and the extra prompt,
/// and no workspace file, persona, memory or time.
#[test]
fn none_mode_is_goclaws_none() {
    let agent = agent_with_everything();
    let built = agent.build(&Turn {
        mode: Some(Mode::None),
        extra: Some("Caller context.".into()),
        tools: Some(tools(&["exec"]).into()),
        ..turn()
    });
    assert_eq!(
        ids(&built),
        ["identity", "tooling", "safety", "workspace", "extra_context", "runtime", "tool_protocol"],
        "{}",
        built.prompt
    );
    assert!(built.prompt.contains("<extra_context>\nCaller context.\n</extra_context>"));
    for absent in ["<context_file", "## Persona", "## Memory", "## Date", "Per-Turn Files"] {
        assert!(!built.prompt.contains(absent), "{absent} in none mode");
    }
    assert!(built.files.iter().all(|f| f.injected_chars == 0), "no file injected in none mode");
}

/// 001 "Prompt modes": OpenClaw renders sub-agents in `minimal` (no skills,
/// no execution bias) and labels their extra prompt "Subagent Context";
/// proem's default caps sub-agents at `task` with "Additional Context".
/// Both come from `[sessions]`.
#[test]
fn subagent_mode_and_heading_are_configurable() {
    let agent = agent_with_everything();
    let sub =
        Turn { session_key: Some("agent:seedbot:subagent:x1".into()), extra: Some("Do the thing.".into()), ..turn() };
    let default = agent.build(&sub);
    assert_eq!(default.mode, Mode::Task);
    assert!(default.prompt.contains("## Additional Context"));
    assert!(ids(&default).contains(&"skills".to_string()));

    agent.config(
        "[agent]\nid = \"seedbot\"\n[sessions]\nsubagent_mode = \"minimal\"\nsubagent_heading = \"Subagent Context\"\n",
    );
    let openclaw = agent.build(&sub);
    assert_eq!(openclaw.mode, Mode::Minimal);
    assert!(openclaw.prompt.contains("## Subagent Context"));
    for absent in ["skills", "execution_bias"] {
        assert!(!ids(&openclaw).contains(&absent.to_string()), "{absent} in a minimal sub-agent");
    }
    // The heading is for sub-agent sessions only.
    let main = agent.build(&Turn { extra: Some("Do the thing.".into()), ..turn() });
    assert!(main.prompt.contains("## Additional Context"));
}

/// 001 "Workspace bootstrap injection" (HEARTBEAT.md omitted on normal runs)
/// and 003 (the Heartbeats section with its ack): HEARTBEAT.md only in
/// heartbeat sessions, with the contract to reply exactly the ack token.
#[test]
fn heartbeat_md_and_the_ack_contract_only_in_heartbeat_sessions() {
    let agent = agent_with_everything();
    agent.file("HEARTBEAT.md", "Check the greenhouse sensors.");
    let normal = agent.build(&turn());
    assert!(!normal.prompt.contains("Check the greenhouse sensors.") && !normal.prompt.contains("HEARTBEAT_OK"));
    for heartbeat in
        [Turn { session_key: Some("agent:seedbot:heartbeat".into()), ..turn() }, Turn { heartbeat: true, ..turn() }]
    {
        let built = agent.build(&heartbeat);
        assert_eq!(built.mode, Mode::Minimal);
        let dynamic = &built.dynamic;
        assert!(dynamic.contains("### Heartbeats") && dynamic.contains("reply exactly HEARTBEAT_OK"), "{dynamic}");
        assert!(wrapped(dynamic, "context_file", "HEARTBEAT.md") == Some("Check the greenhouse sensors."));
        assert!(!built.stable.contains("HEARTBEAT"), "the heartbeat contract is per-turn");
    }
    // The token is configurable; without HEARTBEAT.md the contract still stands.
    agent.config("[agent]\nid = \"seedbot\"\n[sessions]\nheartbeat_ack = \"ALL_QUIET\"\n");
    std::fs::remove_file(agent.path().join("HEARTBEAT.md")).unwrap();
    let built = agent.build(&Turn { heartbeat: true, ..turn() });
    assert!(built.dynamic.contains("reply exactly ALL_QUIET"), "{}", built.dynamic);
    // A bad token is a config error naming the key.
    agent.config("[sessions]\nheartbeat_ack = \"two words\"\n");
    let err = proem::Assembler::open(agent.path(), None).err().unwrap().to_string();
    assert!(err.contains("sessions.heartbeat_ack"), "{err}");
}

/// 000 §1.5 "First-Run Bootstrap", §2.3 "Tool Call Style (skip during
/// bootstrap)" and "Below the boundary … (USER.md, BOOTSTRAP.md)": the
/// notice wherever BOOTSTRAP.md is in the prompt (not in none, which has no
/// workspace files), BOOTSTRAP.md below the cache boundary and first of the
/// per-turn files, no Tool Call Style meanwhile.
#[test]
fn first_run_notice_with_bootstrap_md_below_the_boundary() {
    let agent = agent_with_everything();
    let with_tools = || Turn { tools: Some(tools(&["read"]).into()), ..turn() };
    let before = agent.build(&with_tools());
    assert!(ids(&before).contains(&"tool_call_style".to_string()), "Tool Call Style outside onboarding");
    agent.file("BOOTSTRAP.md", "Ask the user for their name first.");
    for mode in [Mode::Full, Mode::Task, Mode::Minimal] {
        let built = agent.build(&Turn { mode: Some(mode), ..with_tools() });
        assert_eq!(ids(&built)[1], "first_run", "the notice right after identity in mode {mode}");
        assert!(!ids(&built).contains(&"tool_call_style".to_string()), "mode {mode}");
    }
    let none = agent.build(&Turn { mode: Some(Mode::None), ..with_tools() });
    assert!(!ids(&none).contains(&"first_run".to_string()), "no BOOTSTRAP.md in none, so no notice");
    let built = agent.build(&turn());
    let (stable, dynamic) = built.prompt.split_once(BOUNDARY_MARKER).unwrap();
    assert!(!stable.contains("Ask the user for their name first."));
    let bootstrap_at = dynamic.find("<context_file name=\"BOOTSTRAP.md\">").expect("below the boundary");
    let user_at = dynamic.find("<context_file name=\"USER.md\">").unwrap();
    assert!(bootstrap_at < user_at, "the onboarding file first");
}

/// 003 "Silent Replies" and 004 (NO_REPLY in group chats): the exact token
/// that means "say nothing", in group chats and where the runtime says
/// replies are optional; configurable.
#[test]
fn silent_replies_token_in_groups_and_optional_turns() {
    let agent = agent_with_everything();
    let direct = agent.build(&turn());
    assert!(!direct.prompt.contains("NO_REPLY"));
    let group = agent.build(&Turn { chat_kind: Some(proem::ChatKind::Group), ..turn() });
    assert!(group.dynamic.contains("## Group Replies") && group.dynamic.contains("reply exactly NO_REPLY"));
    let optional = agent.build(&Turn { replies_optional: true, ..turn() });
    assert!(optional.dynamic.contains("## Silent Replies\nWhen you decide to stay silent, reply exactly NO_REPLY"));
    assert_eq!(optional.stable, direct.stable, "a per-turn contract");
    agent.config("[sessions]\nsilent_token = \"SKIP\"\n");
    let custom = agent.build(&Turn { replies_optional: true, ..turn() });
    assert!(custom.dynamic.contains("reply exactly SKIP") && !custom.prompt.contains("NO_REPLY"));
}

/// 001 "Time handling" (12/24-hour format) and 002 (the zone's abbreviation
/// in the date line): the zone abbreviation on the turn's date, and a clock
/// line when `[sessions] clock` is set.
#[test]
fn time_carries_the_zone_abbreviation_and_the_clock_format() {
    let agent = agent_with_everything();
    let winter = agent.build(&Turn { timezone: Some("America/New_York".into()), ..turn() });
    assert!(winter.dynamic.contains("Time zone: America/New_York (EST)."), "{}", winter.dynamic);
    let summer = agent.build(&Turn {
        timezone: Some("America/New_York".into()),
        now: Some(proem_core::turn::parse_now("2026-07-01T12:00:00Z").unwrap()),
        ..turn()
    });
    assert!(summer.dynamic.contains("(EDT)"));
    assert_eq!(winter.stable, summer.stable);
    let no_letters = agent.build(&Turn { timezone: Some("Asia/Dubai".into()), ..turn() });
    assert!(no_letters.dynamic.contains("Time zone: Asia/Dubai."), "an offset-only zone keeps its name alone");
    for (clock, words) in [("24h", "24-hour clock (14:30)"), ("12h", "12-hour clock (2:30 PM)")] {
        agent.config(&format!("[sessions]\nclock = \"{clock}\"\n"));
        assert!(agent.build(&turn()).dynamic.contains(words), "{clock}");
    }
}

/// 000 ("identity anchoring" for predefined agents) and 004 (predefined
/// agents): users cannot rewrite a predefined agent's identity or rules by
/// asking. Open agents never get the guard; `[agent] identity_anchor` turns
/// it off.
#[test]
fn predefined_agents_get_the_identity_guard() {
    let agent = agent_with_everything();
    assert!(!ids(&agent.build(&turn())).contains(&"identity_anchor".to_string()), "open agent");
    agent.config("[agent]\nkind = \"predefined\"\n");
    let built = agent.build(&turn());
    let at = ids(&built).iter().position(|id| id == "identity_anchor").expect("guard present");
    assert_eq!(ids(&built)[at - 1], "persona", "right after the persona");
    assert!(built.stable.contains("## Identity Guard"));
    agent.config("[agent]\nkind = \"predefined\"\nidentity_anchor = false\n");
    assert!(!agent.build(&turn()).stable.contains("## Identity Guard"));
}

/// 000 and 004 ("self-evolution", predefined agents with self_evolve
/// only): when enabled for a predefined agent, it may update its SOUL.md
/// within stated limits; an open agent's files are its user's already.
#[test]
fn self_evolution_when_enabled() {
    let agent = agent_with_everything();
    assert!(!agent.build(&turn()).prompt.contains("## Self-Evolution"));
    agent.config("[agent]\nself_evolution = true\n");
    assert!(!agent.build(&turn()).prompt.contains("## Self-Evolution"), "open agents never get it");
    agent.config("[agent]\nkind = \"predefined\"\nself_evolution = true\n");
    let built = agent.build(&turn());
    assert!(built.stable.contains("## Self-Evolution\nYou may refine SOUL.md"));
    assert!(!agent.build(&Turn { mode: Some(Mode::Task), ..turn() }).prompt.contains("## Self-Evolution"));
}

/// 000 §9.5 (Zalo: plain text only) and 002 "Channel Capabilities": a
/// formatting hint for every channel the seeds name, and what the channel
/// does with replies (never echo credentials).
#[test]
fn channel_hints_and_capabilities() {
    let agent = agent_with_everything();
    for channel in ["zalo", "zalo_personal", "line", "feishu", "irc", "telegram", "slack", "discord", "whatsapp"] {
        let built = agent.build(&Turn { channel: Some(channel.into()), ..turn() });
        assert!(built.dynamic.contains("## Formatting\n"), "{channel}");
        let caps = built.dynamic.split("## Channel Capabilities\n").nth(1).expect("capabilities");
        assert!(
            caps.starts_with(&format!("You are answering on {channel}"))
                && caps.contains("Never ask for, repeat or echo credentials")
        );
    }
    assert!(agent.build(&Turn { channel: Some("zalo".into()), ..turn() }).dynamic.contains("plain text only"));
    agent.config("[runtime]\ncapabilities = [\"voice\", \"Images\"]\n");
    let built = agent.build(&Turn { channel: Some("signal".into()), ..turn() });
    assert!(built.dynamic.contains("Besides text, this channel can send: images, voice."));
    assert!(!agent.build(&turn()).dynamic.contains("Channel Capabilities"), "no channel, no section");
}

/// 001 "Workspace bootstrap injection" and 002 (a missing file is shown as
/// a marker): `[bootstrap] missing_marker` shows each missing standard file
/// as `[MISSING] Expected at: <path>`.
#[test]
fn missing_files_can_be_marked() {
    let agent = Agent::new();
    agent.file("AGENTS.md", "Rules.");
    agent.config("[sandbox]\nenabled = true\nworkdir = \"/workspace\"\n");
    assert!(!agent.build(&turn()).prompt.contains("[MISSING]"), "skipped by default (GoClaw)");
    agent
        .config("[sandbox]\nenabled = true\nworkdir = \"/workspace\"\n[bootstrap]\nmissing_marker = \"expected_at\"\n");
    let built = agent.build(&turn());
    for name in ["SOUL.md", "IDENTITY.md", "TOOLS.md", "MEMORY.md", "USER.md"] {
        assert!(built.prompt.contains(&format!("[MISSING] Expected at: /workspace/{name}")), "{name}");
        assert!(built.files.iter().find(|f| f.name == name).unwrap().missing);
    }
    assert!(!built.prompt.contains("Expected at: /workspace/BOOTSTRAP.md"), "first-run file is not expected");
    assert!(built.stable.contains("/workspace/SOUL.md") && built.dynamic.contains("/workspace/USER.md"));
    // ZeroClaw's form names the missing core files and MEMORY.md, never
    // BOOTSTRAP.md (absent on every ordinary turn).
    agent.config("[bootstrap]\nmissing_marker = \"file_not_found\"\n");
    let built = agent.build(&turn());
    for name in ["SOUL.md", "IDENTITY.md", "TOOLS.md", "USER.md", "MEMORY.md"] {
        assert!(built.prompt.contains(&format!("[File not found: {name}]")), "{name}");
    }
    assert!(!built.prompt.contains("BOOTSTRAP.md"), "no marker, no mention");
}

/// 000 (bootstrap files): GoClaw's USER_PREDEFINED.md, CAPABILITIES.md and
/// MEMORY.json are read without `extra_files`, and cost nothing when absent.
#[test]
fn goclaw_files_are_recognised() {
    let agent = agent_with_everything();
    let without = agent.build(&turn());
    assert!(without
        .files
        .iter()
        .all(|f| !["USER_PREDEFINED.md", "CAPABILITIES.md", "MEMORY.json"].contains(&f.name.as_str())));
    agent
        .file("CAPABILITIES.md", "Can read PDFs.")
        .file("MEMORY.json", "{\"likes\": \"tea\"}")
        .file("USER_PREDEFINED.md", "Operator notes.");
    let built = agent.build(&turn());
    for (name, text) in [
        ("USER_PREDEFINED.md", "Operator notes."),
        ("CAPABILITIES.md", "Can read PDFs."),
        ("MEMORY.json", "{\"likes\": \"tea\"}"),
    ] {
        assert_eq!(wrapped(&built.stable, "context_file", name), Some(text), "{name}");
    }
}

/// 002 (memory in the main session only): `[bootstrap] memory_in_group_chats
/// = false` keeps MEMORY.md out of group chats; by default it stays, so a
/// group chat never changes the stable part.
#[test]
fn memory_can_be_kept_out_of_group_chats() {
    let agent = agent_with_everything();
    let group = Turn { chat_kind: Some(proem::ChatKind::Group), ..turn() };
    assert!(agent.build(&group).prompt.contains("<context_file name=\"MEMORY.md\">"));
    assert_eq!(agent.build(&group).stable, agent.build(&turn()).stable);
    agent.config("[bootstrap]\nmemory_in_group_chats = false\n");
    let built = agent.build(&group);
    assert!(!built.prompt.contains("<context_file name=\"MEMORY.md\">"));
    assert!(agent.build(&turn()).prompt.contains("<context_file name=\"MEMORY.md\">"), "direct chats keep it");
}

/// 000 ("budget defaults to 24K but scales with context window") and
/// reference/goclaw.md: `[budget] context_window` scales the default budget.
#[test]
fn the_budget_scales_with_the_context_window() {
    let agent = agent_with_everything();
    for (window, budget) in [("200000", 24_000), ("128000", 15_360), ("1000000", 48_000), ("8000", 4_000)] {
        agent.config(&format!("[budget]\ncontext_window = {window}\n"));
        assert_eq!(agent.build(&turn()).tokens.budget, budget, "window {window}");
    }
    agent.config("[budget]\ncontext_window = 1000000\ntokens = 9000\n");
    assert_eq!(agent.build(&turn()).tokens.budget, 9_000, "an explicit budget wins");
}

/// 001 (/context: tool schemas cost context though they are not in the
/// prompt): the report counts the natively sent schemas.
#[test]
fn natively_sent_tool_schemas_are_counted() {
    let agent = Agent::new();
    let with_tools = Turn { tools: Some(tools(&["exec", "read", "write"]).into()), ..turn() };
    let native = agent.build(&with_tools);
    assert!(native.tokens.tool_schemas > 10, "{:?}", native.tokens);
    assert!(!native.prompt.contains("\"type\":\"function\""));
    assert_eq!(agent.build(&turn()).tokens.tool_schemas, 0, "no tools");
    agent.config("[tools]\nnative_calling = false\n");
    assert_eq!(agent.build(&with_tools).tokens.tool_schemas, 0, "schemas in the prompt are counted there");
}

/// reference/goclaw.md §1.1 (alias tools such as Read, Write, Edit, Bash,
/// edit_file are left out of the list, still callable): `[tools]
/// hide_aliases`.
#[test]
fn alias_tools_can_be_left_out_of_the_list() {
    let agent = Agent::new();
    let turn = Turn { tools: Some(tools(&["read", "Read", "Bash", "edit_file", "exec"]).into()), ..turn() };
    let listed = |b: &Built| {
        let tooling = b.stable.split("## Tooling\n").nth(1).unwrap().split("\n\n").next().unwrap();
        tooling
            .lines()
            .filter_map(|l| l.strip_prefix("- "))
            .map(|l| l.split(':').next().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(listed(&agent.build(&turn)), ["Bash", "edit_file", "exec", "Read", "read"]);
    agent.config("[tools]\nhide_aliases = true\n");
    let built = agent.build(&turn);
    assert_eq!(listed(&built), ["exec", "read"]);
    assert!(built.tokens.tool_schemas > 0, "the aliases are still sent natively");
}

/// 000 §2.5 (credentialed-CLI context when `exec` is listed) and the shell
/// deny groups: one Shell section, only with a shell tool.
#[test]
fn credentialed_cli_and_shell_deny_groups() {
    let agent = Agent::new();
    agent.config("[tools]\ncredentialed_cli = \"gh and aws are logged in as the team account.\"\nshell_deny_groups = [\"package_install\", \"network\"]\n");
    let without = agent.build(&Turn { tools: Some(tools(&["read"]).into()), ..turn() });
    assert!(!without.prompt.contains("## Shell"));
    let built = agent.build(&Turn { tools: Some(tools(&["exec", "read"]).into()), ..turn() });
    let shell = built.stable.split("## Shell\n").nth(1).unwrap().split("\n\n").next().unwrap();
    assert!(shell.starts_with("gh and aws are logged in as the team account."));
    assert!(shell.contains("blocked here: network, package_install. Do not run them, and do not work around the block"));
}

/// 001 (background processes, cron, plans): long-running work guidance when
/// a tool for it is listed.
#[test]
fn long_running_work_guidance_with_process_or_cron_tools() {
    let agent = Agent::new();
    assert!(!agent
        .build(&Turn { tools: Some(tools(&["read"]).into()), ..turn() })
        .prompt
        .contains("## Long-Running Work"));
    let expected = [
        ("exec", "Start a command that takes more than a minute in the background with `exec`"),
        ("process", "Check on running work with `process`"),
        ("cron", "schedule it with `cron` instead of sleeping"),
    ];
    for (tool, words) in expected {
        let built = agent.build(&Turn { tools: Some(tools(&[tool]).into()), ..turn() });
        let section = built.stable.split("## Long-Running Work\n").nth(1).unwrap_or_else(|| panic!("{tool}"));
        assert!(section.contains(words), "{tool}: {section}");
    }
    // Only the tools the turn has are named.
    let built = agent.build(&Turn { tools: Some(tools(&["cron_add"]).into()), ..turn() });
    assert!(!built.stable.contains("`exec`") && built.stable.contains("`cron_add`"));
}

/// 001 "Sandbox" (container workdir, host mount, access, elevated exec; kept
/// in minimal) and reference/goclaw.md §6 (container path plus host path).
#[test]
fn sandbox_details_and_docker_note() {
    let agent = Agent::new();
    agent.config("[sandbox]\nenabled = true\nworkdir = \"/work\"\nhost_path = \"/home/ines/agent\"\naccess = \"ro\"\nelevated_exec = true\n");
    let turn = Turn { tools: Some(tools(&["exec"]).into()), ..turn() };
    for mode in [Mode::Full, Mode::Task, Mode::Minimal] {
        let built = agent.build(&Turn { mode: Some(mode), ..turn.clone() });
        let sandbox = built.stable.split("## Sandbox\n").nth(1).unwrap_or_else(|| panic!("sandbox in {mode}"));
        assert!(sandbox.contains("On the host, that folder is /home/ines/agent"));
        assert!(sandbox.contains("Workspace access: read only"));
        assert!(sandbox.contains("run elevated on the host after the user approves"));
        assert!(built.stable.contains("Commands run inside a Docker container with the workspace at /work"));
    }
    assert!(!agent.build(&Turn { mode: Some(Mode::None), ..turn }).prompt.contains("## Sandbox"));
}

// Presets ----------------------------------------------------------------

fn preset_agent(preset: &str, more: &str) -> Agent {
    let agent = agent_with_everything();
    agent.config(&format!("[agent]\nid = \"seedbot\"\npreset = \"{preset}\"\n{more}"));
    agent
}

/// 001 (OpenClaw: 12,000 per file, 60,000 total, 70/20 head/tail; `none`
/// is the identity line only; sub-agents get minimal with "Subagent
/// Context"; `[MISSING] Expected at:`).
#[test]
fn the_openclaw_preset() {
    let agent = preset_agent("openclaw", "");
    let config = agent.assembler().config().clone();
    assert_eq!((config.budget.per_file_chars, config.budget.total_file_chars), (12_000, 60_000));
    assert_eq!((config.budget.head_ratio, config.budget.tail_ratio), (0.7, 0.2));
    let none = agent.build(&Turn { mode: Some(Mode::None), extra: Some("x".into()), ..turn() });
    assert_eq!(ids(&none), ["identity"]);
    let sub = agent.build(&Turn {
        session_key: Some("agent:seedbot:subagent:1".into()),
        extra: Some("Task.".into()),
        ..turn()
    });
    assert_eq!(sub.mode, Mode::Minimal);
    assert!(sub.prompt.contains("## Subagent Context"));
    std::fs::remove_file(agent.path().join("TOOLS.md")).unwrap();
    assert!(agent.build(&turn()).prompt.contains("[MISSING] Expected at: "));
}

/// 000 and reference/goclaw.md (GoClaw: a 24k budget that scales with the
/// context window, 24,000 characters of files; `none` keeps identity,
/// tooling, safety, workspace, Project Context with TOOLS.md, runtime and
/// extra; alias tools unlisted; missing files skipped).
#[test]
fn the_goclaw_preset() {
    let agent = preset_agent("goclaw", "");
    let config = agent.assembler().config().clone();
    assert_eq!((config.budget.tokens, config.budget.tokens()), (None, 24_000));
    assert_eq!(config.budget.total_file_chars, 24_000);
    let none = agent.build(&Turn { mode: Some(Mode::None), ..turn() });
    assert_eq!(ids(&none), ["identity", "tooling", "safety", "workspace", "project_context", "runtime"]);
    assert!(wrapped(&none.prompt, "context_file", "TOOLS.md").is_some());
    assert!(wrapped(&none.prompt, "context_file", "AGENTS.md").is_none(), "none keeps TOOLS.md alone");
    let built = agent.build(&Turn { tools: Some(tools(&["Bash", "exec"]).into()), ..turn() });
    assert!(!built.stable.contains("- Bash") && built.stable.contains("- exec"));
}

/// 002 and reference/zeroclaw.md (ZeroClaw: 20,000 per file, head only;
/// never HEARTBEAT.md; MEMORY.md in every chat, as its channel code injects
/// it; `[File not found: NAME]`).
#[test]
fn the_zeroclaw_preset() {
    let agent = preset_agent("zeroclaw", "");
    agent.file("HEARTBEAT.md", "Beat.").file("AGENTS.md", &format!("{}TAIL-END", "Rule one. ".repeat(3_000)));
    let heartbeat = agent.build(&Turn { heartbeat: true, ..turn() });
    assert!(!heartbeat.prompt.contains("Beat."), "never HEARTBEAT.md");
    let built = agent.build(&turn());
    let agents = wrapped(&built.prompt, "context_file", "AGENTS.md").unwrap();
    assert!(agents.starts_with("Rule one.") && !agents.contains("TAIL-END"), "head only");
    assert!(agents.chars().count() <= 20_000);
    let group = agent.build(&Turn { chat_kind: Some(proem::ChatKind::Group), ..turn() });
    assert!(group.prompt.contains("<context_file name=\"MEMORY.md\">"));
    assert_eq!(group.stable, built.stable, "one stable part for every chat");
    std::fs::remove_file(agent.path().join("SOUL.md")).unwrap();
    assert!(agent.build(&turn()).prompt.contains("[File not found: SOUL.md]"));
}

/// Every key a preset sets can still be set by the agent: the agent's
/// proem.toml wins, key by key (tables merge, other values replace).
#[test]
fn the_agents_own_keys_win_over_its_preset() {
    let agent =
        preset_agent("zeroclaw", "[budget]\nhead_ratio = 0.5\ntail_ratio = 0.5\n[bootstrap]\nheartbeat_file = true\n");
    let config = agent.assembler().config().clone();
    assert_eq!((config.budget.head_ratio, config.budget.tail_ratio), (0.5, 0.5));
    assert_eq!(config.budget.per_file_chars, 20_000, "the rest of the preset's table stays");
    assert!(config.bootstrap.heartbeat_file);
    assert_eq!(config.bootstrap.missing_marker, proem_core::config::MissingMarker::FileNotFound);
    // An unknown preset is an error naming the line and key.
    agent.config("[agent]\npreset = \"clawdbot\"\n");
    let err = proem::Assembler::open(agent.path(), None).err().unwrap().to_string();
    assert!(err.contains("proem.toml:2") && err.contains("agent.preset"), "{err}");
}

/// One example agent per preset under examples/: each builds and shows its
/// system's structure.
#[test]
fn each_preset_has_an_example_agent_that_builds() {
    let root = example_dir().parent().unwrap().to_path_buf();
    for (dir, preset) in [("openclaw-style", "openclaw"), ("goclaw-style", "goclaw"), ("zeroclaw-style", "zeroclaw")] {
        let path = root.join(dir);
        let assembler = proem::Assembler::open(&path, None).unwrap_or_else(|e| panic!("{dir}: {e}"));
        assert_eq!(assembler.config().agent.preset.map(|p| p.name()), Some(preset));
        let built = assembler.build(&turn()).unwrap();
        assert!(built.prompt.contains(proem::BOUNDARY_MARKER) && built.tokens.total <= built.tokens.budget);
    }
}

/// 000 §4.5 "MCP Tools (prefer over core tools)" and "Additional MCP Tools
/// (use mcp_tool_search to discover)": MCP tools (a `server` in the tools
/// JSON or an `mcp__<server>__<tool>` name) leave the Tooling list for their
/// own section, inline in full mode when few, a search hint otherwise.
#[test]
fn mcp_tools_inline_or_as_a_search_hint() {
    let agent = Agent::new();
    let mut list = tools(&["read", "mcp__github__create_issue", "mcp__github__list_prs", "mcp_tool_search"]);
    list.push(proem::Tool { server: Some("linear".into()), ..tool("create_ticket") });
    let built = agent.build(&Turn { tools: Some(list.clone().into()), ..turn() });
    let tooling = built.stable.split("## Tooling\n").nth(1).unwrap().split("\n\n").next().unwrap();
    assert!(!tooling.contains("mcp__github") && !tooling.contains("create_ticket") && tooling.contains("- read"));
    let mcp = built.stable.split("## MCP Tools\n").nth(1).unwrap().split("\n\n").next().unwrap();
    assert!(mcp.contains("- mcp__github__create_issue (github)") && mcp.contains("- create_ticket (linear)"), "{mcp}");
    // Task mode, or more tools than [tools] mcp_inline_max: how to find them.
    let task = agent.build(&Turn { mode: Some(Mode::Task), tools: Some(list.clone().into()), ..turn() });
    assert!(task.stable.contains("3 more tools come from MCP servers (github, linear). Use `mcp_tool_search` to find"));
    agent.config("[tools]\nmcp_inline_max = 2\n");
    assert!(agent
        .build(&Turn { tools: Some(list.into()), ..turn() })
        .stable
        .contains("3 more tools come from MCP servers"));
}

/// 000 §6.3-6.45 ("Team Shared Workspace", "Team Members", "Delegation
/// Targets") and §13 (no Sub-Agent Spawning with team context): `[team]`.
#[test]
fn team_roster_workspace_and_delegation() {
    let agent = Agent::new();
    let spawn = Turn { tools: Some(tools(&["sessions_spawn"]).into()), ..turn() };
    assert!(agent.build(&spawn).dynamic.contains("## Sub-Agents"));
    agent.config("[team]\nworkspace = \"team\"\ndelegates = [\"writer\", \"researcher\"]\nmembers = [{ name = \"Ana\", role = \"design lead\" }, { name = \"Bo\", role = \"ops\" }]\n");
    agent.file("team/TEAM.md", "We ship on Fridays.");
    let built = agent.build(&spawn);
    let team = built.stable.split("## Team\n").nth(1).unwrap();
    assert!(team.contains("- Ana: design lead\n- Bo: ops"));
    assert!(team.contains("The team shares the folder team/"));
    assert!(team.contains("### Delegation Targets\nHand work that fits them to these agents instead of doing it all yourself: researcher, writer."));
    assert_eq!(wrapped(&built.stable, "context_file", "team/TEAM.md"), Some("We ship on Fridays."));
    assert!(!built.dynamic.contains("## Sub-Agents"), "no spawn section with team context");
    agent.config("[team]\nworkspace = \"../elsewhere\"\n");
    assert!(proem::Assembler::open(agent.path(), None).err().unwrap().to_string().contains("team.workspace"));
}

/// 001 "Runtime" (thinking level, repo root in the runtime line) and 003
/// (Reasoning Format, Reply Tags, Messaging sections when enabled).
#[test]
fn runtime_thinking_repo_and_output_sections() {
    let agent = Agent::new();
    agent.config("[runtime]\nrepo_root = \"/src/app\"\nthinking = \"low\"\nreasoning_tags = true\nreply_tags = true\nmessaging = true\n");
    let built = agent.build(&turn());
    let runtime = built.dynamic.lines().find(|l| l.starts_with("Runtime: ")).unwrap();
    assert!(runtime.contains("repo=/src/app") && runtime.contains("thinking=low"), "{runtime}");
    let per_turn = agent.build(&Turn { thinking: Some("High".into()), ..turn() });
    assert!(per_turn.dynamic.contains("thinking=high") && per_turn.stable == built.stable);
    for heading in [
        "## Output Format",
        "### Reasoning Format",
        "<think>",
        "### Reply Tags",
        "[[reply_to_current]]",
        "### Messaging",
    ] {
        assert!(built.stable.contains(heading), "{heading}");
    }
    assert!(!Agent::new().build(&turn()).prompt.contains("## Output Format"), "off by default");
}

/// 001 "Workspace bootstrap injection" (a truncation warning: off / once /
/// always): a file cut to nothing never vanishes silently.
#[test]
fn truncation_notice_off_once_always() {
    let agent = Agent::new();
    agent.file("AGENTS.md", &"Rule. ".repeat(2_000)).file("TOOLS.md", &"Tool note. ".repeat(2_000));
    let caps = "[budget]\nper_file_chars = 20000\ntotal_file_chars = 12000\n";
    agent.config(caps);
    let once = agent.build(&turn());
    let raw = once.files.iter().find(|f| f.name == "TOOLS.md").unwrap().raw_chars;
    assert!(once.stable.contains(&format!("### TOOLS.md\n[left out to fit the prompt: {raw} characters")));
    assert!(!once.stable.contains("Cut to fit the prompt:"));
    agent.config(&format!("{caps}[bootstrap]\ntruncation_notice = \"always\"\n"));
    let always = agent.build(&turn());
    assert!(always.stable.contains(&format!("Cut to fit the prompt: TOOLS.md (kept 0 of {raw} characters).")));
    agent.config(&format!("{caps}[bootstrap]\ntruncation_notice = \"off\"\n"));
    assert!(!agent.build(&turn()).stable.contains("left out to fit the prompt"));
}

// Skills ------------------------------------------------------------------

fn skills_agent() -> Agent {
    let agent = Agent::new();
    agent.skill("weather", "Forecasts.").skill("calendar", "Plans the week.").skill("deploy", "Ships the app.");
    agent
}

/// 000 §4 and §4.1 (Skills inline in full, search-only in task, "Pinned
/// Skills" only in minimal and none) with `[skills] pinned`.
#[test]
fn skills_take_goclaws_form_in_each_mode() {
    let agent = skills_agent();
    agent.config("[skills]\npinned = [\"Calendar\"]\n");
    let full = agent.build(&turn());
    assert_eq!(full.stable.matches("<skill>").count(), 3);
    let task = agent.build(&Turn { mode: Some(Mode::Task), ..turn() });
    let skills = task.stable.split("## Skills\n").nth(1).unwrap();
    assert!(skills.starts_with("3 skills are installed under skills/<name>/SKILL.md. When a task may need one, search"));
    assert!(
        skills.contains("Pinned, always available:")
            && skills.contains("<name>calendar</name>")
            && !skills.contains("<name>weather</name>")
    );
    for mode in [Mode::Minimal, Mode::None] {
        let built = agent.build(&Turn { mode: Some(mode), ..turn() });
        let pinned = built.stable.split("## Pinned Skills\n").nth(1).unwrap_or_else(|| panic!("{mode}"));
        assert!(pinned.contains("<name>calendar</name>") && !pinned.contains("weather"), "{mode}");
    }
    agent.config("");
    assert!(
        !agent.build(&Turn { mode: Some(Mode::Minimal), ..turn() }).prompt.contains("Skills"),
        "no pins, no skills"
    );
}

/// 000 (per-agent skill allowlist): `[skills] allow`.
#[test]
fn a_skill_allowlist() {
    let agent = skills_agent();
    agent.config("[skills]\nallow = [\"WEATHER\", \"deploy\"]\n");
    let built = agent.build(&turn());
    assert!(built.stable.contains("<name>weather</name>") && built.stable.contains("<name>deploy</name>"));
    assert!(!built.stable.contains("<name>calendar</name>"));
    assert!(diagnostic(&built, "skills_not_allowed").unwrap().contains("1 skill(s)"));
}

/// 001 "Skills" (eligibility: a skill whose requirements the host lacks is
/// not listed, and the report says why), in both front matter forms.
#[test]
fn skills_the_host_cannot_run_are_not_listed() {
    let agent = Agent::new();
    agent.file("skills/shell/SKILL.md", "---\nname: shell\ndescription: Uses sh.\nrequires_bins: sh\n---\n");
    agent.file(
        "skills/ghost/SKILL.md",
        "---\nname: ghost\ndescription: Needs a missing tool.\nrequires_bins: proem-no-such-binary-7f3a\n---\n",
    );
    agent.file(
        "skills/secret/SKILL.md",
        "---\nname: secret\ndescription: Needs a token.\nrequires_env: PROEM_TEST_UNSET_TOKEN_7F3A\n---\n",
    );
    agent
        .file("skills/elsewhere/SKILL.md", "---\nname: elsewhere\ndescription: Another OS.\nrequires_os: plan9\n---\n");
    agent.file(
        "skills/oc/SKILL.md",
        "---\nname: oc\ndescription: OpenClaw form.\nmetadata: {\"openclaw\": {\"requires\": {\"bins\": [\"proem-no-such-binary-7f3a\"]}}}\n---\n",
    );
    let built = agent.build(&turn());
    assert!(built.stable.contains("<name>shell</name>"), "a met requirement lists the skill");
    for name in ["ghost", "secret", "elsewhere", "oc"] {
        assert!(!built.stable.contains(&format!("<name>{name}</name>")), "{name}");
    }
    let why: Vec<&str> =
        built.diagnostics.iter().filter(|d| d.code == "skill_ineligible").map(|d| d.message.as_str()).collect();
    assert_eq!(why.len(), 4, "{why:?}");
    assert!(why.iter().any(|m| m.contains("ghost") && m.contains("the program proem-no-such-binary-7f3a on PATH")));
    assert!(why
        .iter()
        .any(|m| m.contains("secret") && m.contains("the environment variable PROEM_TEST_UNSET_TOKEN_7F3A")));
    assert!(why.iter().any(|m| m.contains("elsewhere") && m.contains("plan9")));
}

/// 000 (a separate skills token cap): `[skills] max_tokens` shrinks the
/// skills section on its own (compact, then fewer) even when the budget has
/// room.
#[test]
fn skills_have_their_own_token_cap() {
    let agent = Agent::new();
    for i in 0..30 {
        agent
            .skill(&format!("skill-{i:02}"), "A skill with a description long enough to cost some tokens in the list.");
    }
    let free = agent.build(&turn());
    let full = free.sections.iter().find(|s| s.id == "skills").unwrap().tokens;
    agent.config(&format!("[skills]\nmax_tokens = {}\n", full / 3));
    let capped = agent.build(&turn());
    let skills = capped.sections.iter().find(|s| s.id == "skills").unwrap();
    assert!(skills.tokens <= full / 3 && skills.truncated, "{} > {}", skills.tokens, full / 3);
    assert!(capped.tokens.total < free.tokens.total);
}

/// 001 "Skills" (bundled / managed / workspace folders, first by precedence
/// wins, deduplicated by name): `[skills] folders`.
#[test]
fn more_skill_folders_first_by_precedence() {
    let agent = Agent::new();
    agent.file("skills/weather/SKILL.md", "---\nname: weather\ndescription: The agent's own.\n---\n");
    agent.file("shared/skills/weather/SKILL.md", "---\nname: Weather\ndescription: The shared one.\n---\n");
    agent.file("shared/skills/maps/SKILL.md", "---\nname: maps\ndescription: Shared maps.\n---\n");
    agent.config("[skills]\nfolders = [\"shared/skills\"]\n");
    let built = agent.build(&turn());
    assert!(built.stable.contains("The agent's own.") && !built.stable.contains("The shared one."));
    assert!(built.stable.contains("<location>shared/skills/maps/SKILL.md</location>"));
    agent.config("[skills]\nfolders = [\"../outside\"]\n");
    assert!(proem::Assembler::open(agent.path(), None).err().unwrap().to_string().contains("skills.folders"));
}

/// The build memo watches every file the new keys read: GoClaw's optional
/// files, the team's TEAM.md and extra skill folders (a reused assembler
/// never serves a stale prompt after one of them changes).
#[test]
fn the_build_memo_sees_the_new_files_change() {
    let agent = Agent::new();
    agent.config("[team]\nworkspace = \"team\"\n[skills]\nfolders = [\"shared/skills\"]\n");
    agent
        .file("CAPABILITIES.md", "v1")
        .file("team/TEAM.md", "v1")
        .file("shared/skills/a/SKILL.md", "---\nname: a\ndescription: v1\n---\n");
    let assembler = agent.assembler();
    let first = assembler.build(&turn()).unwrap();
    for (file, text) in [
        ("CAPABILITIES.md", "v2 capabilities"),
        ("team/TEAM.md", "v2 team"),
        ("shared/skills/a/SKILL.md", "---\nname: a\ndescription: v2 skill\n---\n"),
    ] {
        std::thread::sleep(std::time::Duration::from_millis(20));
        agent.file(file, text);
        let again = assembler.build(&turn()).unwrap();
        assert!(
            again.prompt.contains(text.trim_start_matches("---\nname: a\ndescription: ").trim_end_matches("\n---\n")),
            "{file}"
        );
        assert_ne!(again.prompt, first.prompt);
    }
}

// Issue 25: the audit's partial and missing rows ------------------------

/// 000 §2.5 ("Credentialed CLI … skip during bootstrap"): while BOOTSTRAP.md
/// is in the prompt, no logged-in tools are offered; the deny groups stay.
#[test]
fn credentialed_cli_waits_for_the_first_run_to_end() {
    let agent = Agent::new();
    agent.config("[tools]\ncredentialed_cli = \"gh is logged in.\"\nshell_deny_groups = [\"network\"]\n");
    agent.file("BOOTSTRAP.md", "Ask the user's name.");
    let built = agent.build(&Turn { tools: Some(tools(&["exec"]).into()), ..turn() });
    assert!(!built.prompt.contains("gh is logged in."), "{}", built.prompt);
    assert!(built.stable.contains("blocked here: network"));
    std::fs::remove_file(agent.path().join("BOOTSTRAP.md")).unwrap();
    assert!(agent.build(&Turn { tools: Some(tools(&["exec"]).into()), ..turn() }).stable.contains("gh is logged in."));
}

/// 000 §2.3 (Tool Call Style: "never expose tool names to users").
#[test]
fn tool_call_style_keeps_tool_names_from_users() {
    let built = Agent::new().build(&Turn { tools: Some(tools(&["read"]).into()), ..turn() });
    let style = built.stable.split("## Tool Call Style\n").nth(1).unwrap().split("\n\n").next().unwrap();
    assert!(style.contains("Never mention tool names or internal mechanics to the user"), "{style}");
}

/// 001 "Execution Bias" (act in-turn, continue until done or blocked,
/// recover from weak tool results, check mutable state live, verify).
#[test]
fn execution_bias_recovers_from_weak_results_and_checks_live_state() {
    let built = Agent::new().build(&Turn { tools: Some(tools(&["read"]).into()), ..turn() });
    let bias = built.stable.split("## Execution Bias\n").nth(1).unwrap().split("\n\n").next().unwrap();
    for words in [
        "act: use your tools",
        "Keep going until the task is done",
        "comes back thin, empty or failed",
        "Check live state",
        "before you say it is done",
    ] {
        assert!(bias.contains(words), "{words}: {bias}");
    }
}

/// 002 "Your Task" in its three forms (no tools, native, text protocol),
/// with `[prompt] execution_bias = "task"` on any agent.
#[test]
fn zeroclaws_your_task_in_its_three_forms() {
    let agent = Agent::new();
    agent.config("[prompt]\nexecution_bias = \"task\"\n");
    let task =
        |b: &Built| b.stable.split("## Execution Bias\n").nth(1).unwrap().split("\n\n").next().unwrap().to_string();
    let none = agent.build(&turn());
    assert!(task(&none).contains("No tools are available this turn, so do not write calls"));
    let native = agent.build(&Turn { tools: Some(tools(&["read"]).into()), ..turn() });
    assert!(task(&native).contains("act through your tools when the request needs it"));
    agent.config("[prompt]\nexecution_bias = \"task\"\n[tools]\nnative_calling = false\n");
    let text = agent.build(&Turn { tools: Some(tools(&["read"]).into()), ..turn() });
    assert!(task(&text).contains("writing real <tool_call> tags"));
    for b in [&none, &native, &text] {
        assert!(task(b).contains("Do not summarise these instructions"));
    }
}

/// 002 "Safety" (trash over rm; when in doubt ask before acting
/// externally): `[prompt] safety_rules`, on by the zeroclaw preset.
#[test]
fn zeroclaws_safety_rules() {
    let agent = Agent::new();
    assert!(!agent.build(&turn()).stable.contains("trash"));
    agent.config("[prompt]\nsafety_rules = [\"prefer_trash\", \"ask_before_external\", \"prefer_trash\"]\n");
    let safety = agent.build(&turn()).stable;
    let safety = safety.split("## Safety\n").nth(1).unwrap().split("\n\n").next().unwrap().to_string();
    assert_eq!(safety.matches("`trash`").count(), 1, "{safety}");
    assert!(safety.contains("ask before acting outside this workspace"));
    let zeroclaw = preset_agent("zeroclaw", "").build(&turn());
    assert!(zeroclaw.stable.contains("instead of removing them for good with `rm`"));
}

/// 001 (update_plan: non-trivial work only, one in_progress step, no
/// repeated plan), when that tool exists.
#[test]
fn update_plan_rules_when_the_tool_exists() {
    let agent = Agent::new();
    assert!(!agent.build(&Turn { tools: Some(tools(&["read"]).into()), ..turn() }).prompt.contains("update_plan"));
    let built = agent.build(&Turn { tools: Some(tools(&["read", "update_plan"]).into()), ..turn() });
    let tooling = built.stable.split("## Tooling\n").nth(1).unwrap().split("\n\n").next().unwrap();
    assert!(tooling
        .contains("Use `update_plan` only for work of several non-trivial steps: keep exactly one step in progress"));
    assert!(tooling.contains("do not repeat the whole plan"));
}

/// 001/003 "Reasoning": the current visibility level and the /reasoning
/// toggle hint, in Runtime (`[runtime] reasoning`; on under openclaw).
#[test]
fn the_reasoning_level_and_its_toggle() {
    let agent = Agent::new();
    assert!(!agent.build(&turn()).dynamic.contains("/reasoning"));
    agent.config("[runtime]\nreasoning = \"stream\"\n");
    let runtime = agent.build(&turn()).dynamic;
    assert!(runtime.contains("\nReasoning: stream (your reasoning is shown to the user only when it is on or stream). The user toggles it with /reasoning."), "{runtime}");
    assert!(preset_agent("openclaw", "").build(&turn()).dynamic.contains("Reasoning: off"));
}

/// 003 "Voice (TTS)" and "Reactions" (MINIMAL / EXTENSIVE).
#[test]
fn voice_and_reactions_sections() {
    let agent = Agent::new();
    let plain = agent.build(&turn());
    assert!(!plain.prompt.contains("## Voice") && !plain.prompt.contains("## Reactions"));
    agent.config("[runtime]\nvoice = true\nreactions = \"minimal\"\n");
    let built = agent.build(&turn());
    assert!(built.stable.contains("## Voice\nYour replies may be spoken aloud"));
    assert!(built.stable.contains("## Reactions\nYou can react to a message with an emoji. Do it rarely"));
    agent.config("[agent]\npreset = \"openclaw\"\n[runtime]\nvoice = true\nreactions = \"extensive\"\n");
    let openclaw = agent.build(&turn());
    assert!(openclaw.stable.contains("## Voice (TTS)\n") && openclaw.stable.contains("as a person in this chat would"));
}

/// 003 "Messaging" names the `message` tool only when it exists.
#[test]
fn messaging_names_the_message_tool_only_when_the_turn_has_it() {
    let agent = Agent::new();
    agent.config("[runtime]\nmessaging = true\n");
    let without = agent.build(&Turn { tools: Some(tools(&["read"]).into()), ..turn() });
    assert!(without.stable.contains("You cannot message anyone else") && !without.prompt.contains("`message`"));
    let with = agent.build(&Turn { tools: Some(tools(&["read", "message"]).into()), ..turn() });
    assert!(with.stable.contains("use the `message` tool"));
}

/// 000 §4 (skills in full mode switch to the search form past 60 skills or
/// about 3,000 tokens): configurable, with a diagnostic saying why.
#[test]
fn full_mode_switches_skills_to_the_search_form_past_a_count_or_a_share() {
    let agent = Agent::new();
    for i in 0..70 {
        agent.skill(&format!("skill-{i:02}"), &format!("Does task number {i} for the workshop, with care."));
    }
    let built = agent.build(&turn());
    assert!(!built.stable.contains("<available_skills>"), "70 skills: the search form");
    assert!(built.stable.contains("## Skills\n70 skills are installed under skills/<name>/SKILL.md"));
    assert!(diagnostic(&built, "skills_search_form")
        .unwrap()
        .contains("70 skills are more than [skills] search_above_count = 60"));
    // A smaller share of a smaller budget switches too; a larger count limit keeps the list.
    agent.config("[skills]\nsearch_above_count = 100\n");
    assert!(agent.build(&turn()).stable.contains("<available_skills>"));
    agent.config("[skills]\nsearch_above_count = 100\nsearch_above_share = 0.01\n");
    let share = agent.build(&turn());
    assert!(!share.stable.contains("<available_skills>"));
    assert!(diagnostic(&share, "skills_search_form").unwrap().contains("search_above_share = 0.01"));
    // With a skill_search tool, the hint names it.
    let tool = agent.build(&Turn { tools: Some(tools(&["skill_search"]).into()), ..turn() });
    assert!(tool.stable.contains("search them with `skill_search`"));
}

/// 000 "TEAM.md … Lead agents receive full orchestration instructions …
/// Member agents receive a simplified version": `[team] role`.
#[test]
fn team_lead_and_member_roles() {
    let agent = Agent::new();
    let team = "[team]\nmembers = [{ name = \"ana\", role = \"research\" }]\n";
    agent.config(team);
    let neither = agent.build(&turn()).stable;
    assert!(!neither.contains("You lead this team") && !neither.contains("You are a member of this team"));
    agent.config(&format!("{team}role = \"lead\"\n"));
    let lead = agent.build(&turn()).stable;
    assert!(lead.contains(
        "You lead this team. Split a request into tasks up front, give each to the member whose role fits it"
    ));
    agent.config(&format!("{team}role = \"member\"\n"));
    let member = agent.build(&turn()).stable;
    assert!(member.contains("You are a member of this team. Work the tasks you are given"));
}

/// 000 (AGENTS_CORE.md, AGENTS_TASK.md) and reference/goclaw.md §4.3 (the
/// per-mode file allowlists): recognised files, and under the goclaw preset
/// minimal keeps AGENTS_CORE.md, task AGENTS_TASK.md, instead of AGENTS.md.
#[test]
fn agents_core_and_task_files_per_mode() {
    let agent = preset_agent("goclaw", "");
    agent.file("AGENTS_CORE.md", "Core rules.").file("AGENTS_TASK.md", "Task rules.");
    let names = |mode| {
        let b = agent.build(&Turn { mode: Some(mode), ..turn() });
        b.files.iter().filter(|f| f.injected_chars > 0).map(|f| f.name.clone()).collect::<Vec<_>>()
    };
    assert!(names(Mode::Full).contains(&"AGENTS_CORE.md".to_string()));
    assert_eq!(names(Mode::Minimal), ["AGENTS_CORE.md"]);
    let task = names(Mode::Task);
    assert!(task.contains(&"AGENTS_TASK.md".to_string()) && !task.contains(&"AGENTS.md".to_string()), "{task:?}");
    assert_eq!(names(Mode::None), ["TOOLS.md"]);
}

/// 002 `compact_context`: files at 6,000 characters, tools by name only, no
/// Shell or Channel Capabilities section.
#[test]
fn zeroclaws_compact_context() {
    let more = "[tools]\nnative_calling = false\ncredentialed_cli = \"gh is logged in.\"\n";
    let agent = preset_agent("zeroclaw", more);
    agent.file("AGENTS.md", &"Rule. ".repeat(2_000));
    let turn = Turn { tools: Some(tools(&["exec", "read"]).into()), channel: Some("slack".into()), ..turn() };
    let full = agent.build(&turn);
    assert!(full.stable.contains("## Shell\n") && full.dynamic.contains("## Channel Capabilities"));
    assert!(full.stable.contains("- exec: Does exec."));
    agent
        .config(&format!("[agent]\nid = \"seedbot\"\npreset = \"zeroclaw\"\n{more}[prompt]\ncompact_context = true\n"));
    let compact = agent.build(&turn);
    assert!(compact.stable.contains("## Tools\nTools available this turn: exec, read."), "{}", compact.stable);
    assert!(!compact.prompt.contains("## Shell") && !compact.prompt.contains("## Channel Capabilities"));
    let agents_md = compact.files.iter().find(|f| f.name == "AGENTS.md").unwrap();
    assert!(agents_md.truncated && agents_md.injected_chars <= 6_000);
    // The head-only cut in ZeroClaw's form: where it stopped, no "last 0".
    assert!(compact.stable.contains("AGENTS.md: cut after") && !compact.stable.contains("and last 0"));
}

/// Audit defect 9: no first-run notice where no person is there to get to
/// know (a heartbeat) or where BOOTSTRAP.md is not in the prompt (none).
#[test]
fn no_first_run_notice_in_heartbeats_or_none() {
    let agent = agent_with_everything();
    agent.file("BOOTSTRAP.md", "Ask the user's name.");
    let heartbeat = agent.build(&Turn { heartbeat: true, ..turn() });
    assert!(!ids(&heartbeat).contains(&"first_run".to_string()));
    assert!(heartbeat.dynamic.contains("Ask the user's name."), "the file itself stays");
    let none = agent.build(&Turn { mode: Some(Mode::None), ..turn() });
    assert!(!none.prompt.contains("BOOTSTRAP.md"));
}

/// Audit defect 20: what proem changes or ignores in the caller's input is
/// said, never silent.
#[test]
fn cleaned_tool_names_and_ignored_group_titles_are_reported() {
    let agent = Agent::new();
    let built = agent.build(&Turn { tools: Some(tools(&["x\ny"]).into()), group_title: Some("Lab".into()), ..turn() });
    assert!(diagnostic(&built, "tool_name_cleaned").unwrap().contains("\"x\\ny\" as x y"), "{:?}", built.diagnostics);
    assert!(diagnostic(&built, "group_title_ignored").unwrap().contains("--chat-kind group"));
    let group =
        agent.build(&Turn { chat_kind: Some(proem::ChatKind::Group), group_title: Some("Lab".into()), ..turn() });
    assert!(diagnostic(&group, "group_title_ignored").is_none());
}

/// Audit defect 16 ("1 more tools"): counts agree with their nouns.
#[test]
fn one_mcp_tool_is_one_tool() {
    let one = vec![proem::Tool { server: Some("linear".into()), ..tool("create_ticket") }];
    let built = Agent::new().build(&Turn { mode: Some(Mode::Task), tools: Some(one.into()), ..turn() });
    assert!(built.stable.contains("1 more tool comes from an MCP server (linear)."), "{}", built.stable);
}
