//! Section presence and order per mode, against DESIGN.md's table (written
//! out here by hand, not read from the code under test).

use crate::common::*;
use proem::{ChatKind, Mode, Turn, BOUNDARY_MARKER};

/// An agent and turn that switch every conditional section on.
fn everything() -> (Agent, Turn) {
    let agent = Agent::new();
    agent.with_standard_files().file("BOOTSTRAP.md", "Say hello first.").skill("weather", "Forecasts.");
    agent.config(
        "[agent]\nid = \"testbot\"\nkind = \"predefined\"\nself_evolution = true\n\n[sandbox]\nenabled = true\nworkdir = \"/workspace\"\n\n[tools]\nnative_calling = false\nshell_deny_groups = [\"network\"]\n\n[runtime]\nreasoning_tags = true\n",
    );
    let turn = Turn {
        channel: Some("telegram".into()),
        chat_kind: Some(ChatKind::Group),
        group_title: Some("Lab".into()),
        extra: Some("Be brief today.".into()),
        owners: vec!["owner-1".into()],
        tools: Some(tools(&["exec", "sessions_spawn", "memory_search", "read", "mcp__github__create_issue"]).into()),
        ..turn()
    };
    (agent, turn)
}

// DESIGN.md's core table: id, zone, modes (f = full, t = task, m = minimal, n = none).
const TABLE: &[(&str, &str, &str)] = &[
    ("identity", "stable", "ftmn"),
    ("first_run", "stable", "ftm"),
    ("persona", "stable", "ft"),
    ("identity_anchor", "stable", "ftm"),
    ("self_evolution", "stable", "f"),
    ("tooling", "stable", "ftmn"),
    ("interaction_style", "stable", "ft"),
    ("shell", "stable", "f"),
    ("long_running", "stable", "f"),
    ("tool_call_style", "stable", "f"),
    ("execution_bias", "stable", "ft"),
    ("safety", "stable", "ftmn"),
    ("skills", "stable", "ft"),
    ("mcp_tools", "stable", "ftn"),
    ("workspace", "stable", "ftmn"),
    ("team", "stable", "ftm"),
    ("sandbox", "stable", "ftm"),
    ("owners", "stable", "f"),
    ("output_format", "stable", "ft"),
    ("project_context", "stable", "ftm"),
    ("memory_recall", "stable", "ftm"),
    ("time", "dynamic", "ftm"),
    ("channel_formatting", "dynamic", "f"),
    ("channel_capabilities", "dynamic", "ft"),
    ("group_reply", "dynamic", "f"),
    ("extra_context", "dynamic", "ftmn"),
    ("dynamic_files", "dynamic", "ftm"),
    ("subagents", "dynamic", "f"),
    ("runtime", "dynamic", "ftmn"),
    ("recency", "dynamic", "f"),
    ("tool_protocol", "dynamic", "ftmn"),
];

fn letter(mode: Mode) -> char {
    match mode {
        Mode::Full => 'f',
        Mode::Task => 't',
        Mode::Minimal => 'm',
        Mode::None => 'n',
    }
}

#[test]
fn presence_zone_and_order_follow_the_design_table_in_every_mode() {
    let (agent, base) = everything();
    for mode in Mode::ALL {
        let built = agent.build(&Turn { mode: Some(mode), ..base.clone() });
        // interaction_style is empty unless an overlay fills it; tool_call_style
        // is skipped while BOOTSTRAP.md is present, and team context replaces
        // the subagents section (GoClaw; seed_parity.rs checks both).
        let expected: Vec<&str> = TABLE
            .iter()
            .filter(|(id, _, modes)| {
                modes.contains(letter(mode)) && !["interaction_style", "tool_call_style", "team"].contains(id)
            })
            .map(|(id, _, _)| *id)
            .collect();
        assert_eq!(section_ids(&built), expected, "mode {mode}");
        for s in &built.sections {
            let zone = TABLE.iter().find(|(id, _, _)| *id == s.id).unwrap().1;
            assert_eq!(s.zone.as_str(), zone, "{} in mode {mode}", s.id);
            assert_eq!(s.source, "core");
        }
        assert_eq!(built.mode, mode);
        assert_eq!(built.prompt.matches(BOUNDARY_MARKER).count(), 1);
    }
}

#[test]
fn safety_is_slim_in_task_minimal_and_none() {
    let (agent, base) = everything();
    let safety = |mode| {
        let b = agent.build(&Turn { mode: Some(mode), ..base.clone() });
        b.sections.iter().find(|s| s.id == "safety").unwrap().chars
    };
    let full = safety(Mode::Full);
    assert!(safety(Mode::Task) < full / 2);
    assert_eq!(safety(Mode::Task), safety(Mode::None));
    assert_eq!(safety(Mode::Minimal), safety(Mode::Task), "minimal is slim too (seed 000)");
}

#[test]
fn persona_comes_early_and_the_reminder_late() {
    let (agent, base) = everything();
    let p = agent.build(&base).prompt;
    let persona = p.find("## Persona").unwrap();
    assert!(persona < p.find("## Tooling").unwrap());
    // `everything` is a predefined agent: its files are operator configuration.
    assert!(wrapped(&p, "internal_config", "SOUL.md").unwrap().contains("Dry wit."));
    let reminder = p.find("## Reminder").unwrap();
    assert!(reminder > p.find(BOUNDARY_MARKER).unwrap());
    assert!(reminder > p.find("## Runtime").unwrap());
    assert!(p[reminder..].contains("SOUL.md and IDENTITY.md"));
}

#[test]
fn open_and_predefined_agents_wrap_files_differently() {
    let agent = Agent::new();
    agent.with_standard_files().file("BOOTSTRAP.md", "Hi.");
    let open = agent.build(&turn()).prompt;
    assert!(wrapped(&open, "context_file", "AGENTS.md").is_some());
    assert!(!open.contains("<internal_config"));

    agent.config("[agent]\nkind = \"predefined\"\n");
    let pre = agent.build(&turn()).prompt;
    assert_eq!(wrapped(&pre, "internal_config", "AGENTS.md"), Some("# Rules\nBe careful."));
    assert!(wrapped(&pre, "internal_config", "SOUL.md").is_some());
    // USER.md and BOOTSTRAP.md stay user content even for predefined agents.
    assert!(wrapped(&pre, "context_file", "USER.md").is_some());
    assert!(wrapped(&pre, "context_file", "BOOTSTRAP.md").is_some());
}

#[test]
fn tools_are_sorted_ignoring_case_and_kept_apart_by_case() {
    let agent = Agent::new();
    let built = agent.build(&Turn {
        tools: Some(tools(&["Read", "read", "exec", "zz_custom", "aa_custom", "READ", "read"]).into()),
        ..turn()
    });
    let start = built.stable.find("## Tooling").unwrap();
    let end = built.stable[start..].find("\n\n").map(|e| start + e).unwrap_or(built.stable.len());
    let tooling = &built.stable[start..end];
    let listed: Vec<&str> =
        tooling.lines().filter_map(|l| l.strip_prefix("- ")).map(|l| l.split(':').next().unwrap()).collect();
    assert_eq!(listed, ["aa_custom", "exec", "READ", "Read", "read", "zz_custom"]);
    assert!(
        tooling.contains("TOOLS.md, when present, explains how to use these tools; it never makes a tool available")
    );
}

#[test]
fn no_tools_says_so() {
    let built = Agent::new().build(&turn());
    assert!(built.stable.contains("No tools are available this turn"));
}

#[test]
fn time_is_below_the_boundary_with_date_and_zone_only() {
    let agent = Agent::new();
    let built = agent.build(&Turn {
        now: Some(proem_core::turn::parse_now("2026-11-21T23:30:00Z").unwrap()),
        timezone: Some("Asia/Tokyo".into()),
        ..turn()
    });
    let time = built.dynamic.lines().skip_while(|l| *l != "## Date").nth(1).unwrap();
    // 23:30 UTC is already the next day in Tokyo.
    assert_eq!(time, "Today is 2026-11-22 (Sunday). Time zone: Asia/Tokyo (JST).");
    assert!(!built.prompt.contains("23:30") && !built.prompt.contains("08:30"));
    assert!(!built.stable.contains("2026-11-2"));
}

#[test]
fn runtime_line_fields() {
    let agent = Agent::new();
    agent.config("[agent]\nid = \"rt\"\n[provider]\nname = \"openai\"\nmodel = \"gpt-5.1\"\n[runtime]\nhost = \"box\"\ncapabilities = [\"B\", \"a\", \"a\"]\n");
    let built = agent.build(&Turn { channel: Some("Telegram".into()), ..turn() });
    let line = built.dynamic.lines().find(|l| l.starts_with("Runtime: ")).unwrap();
    let os = format!("os={} ({})", std::env::consts::OS, std::env::consts::ARCH);
    assert_eq!(line, format!("Runtime: agent=rt | host=box | {os} | provider=openai | model=gpt-5.1 | channel=telegram | capabilities=a,b"));
    let no_channel = agent.build(&turn());
    let line = no_channel.dynamic.lines().find(|l| l.starts_with("Runtime: ")).unwrap();
    assert!(!line.contains("channel=") && !line.contains("capabilities="), "{line}");
}

#[test]
fn extra_context_heading_depends_on_mode_and_chat() {
    let agent = Agent::new();
    let with = |mode, chat| {
        agent.build(&Turn { mode: Some(mode), chat_kind: chat, extra: Some("X".into()), ..turn() }).dynamic
    };
    assert!(with(Mode::Minimal, Some(ChatKind::Group)).contains("## Subagent Context"));
    assert!(with(Mode::Full, Some(ChatKind::Group)).contains("## Group Chat Context"));
    assert!(with(Mode::Full, Some(ChatKind::Direct)).contains("## Additional Context"));
}

#[test]
fn session_keys_cap_modes_and_filter_files() {
    let (agent, base) = everything();
    let cron = agent.build(&Turn { session_key: Some("agent:testbot:cron:digest".into()), ..base.clone() });
    assert_eq!(cron.mode, Mode::Task);
    let names: Vec<&str> = cron.files.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["AGENTS.md", "TOOLS.md"], "default sub-agent allowlist");
    assert!(!cron.prompt.contains("Likes tea."), "USER.md is not for cron sessions");

    let hb = agent.build(&Turn { session_key: Some("agent:testbot:heartbeat".into()), ..base.clone() });
    assert_eq!(hb.mode, Mode::Minimal);
    assert_eq!(hb.files.len(), 8, "heartbeats keep every file");

    agent.config("[agent]\nmode = \"minimal\"\n[bootstrap]\nsubagent_allowlist = [\"AGENTS.md\", \"SOUL.md\"]\n");
    let sub = agent.build(&Turn { session_key: Some("agent:x:subagent:7".into()), ..base.clone() });
    assert_eq!(sub.mode, Mode::Minimal, "the cap never raises the configured mode");
    let names: Vec<&str> = sub.files.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["AGENTS.md", "SOUL.md"]);
    let forced = agent.build(&Turn { mode: Some(Mode::Full), session_key: Some("agent:x:heartbeat".into()), ..base });
    assert_eq!(forced.mode, Mode::Full, "an explicit override wins");
}

#[test]
fn first_run_notice_only_with_bootstrap_md() {
    let agent = Agent::new();
    agent.with_standard_files();
    assert!(!section_ids(&agent.build(&turn())).contains(&"first_run".to_string()));
    agent.file("BOOTSTRAP.md", "Onboard.");
    let ids = section_ids(&agent.build(&turn()));
    assert_eq!(ids[1], "first_run");
}

#[test]
fn skills_are_listed_as_escaped_xml_sorted_by_name() {
    let agent = Agent::new();
    agent.skill("zebra", "Last <b>&\" one").skill("Alpha", "First").skill("mid", "Middle");
    let built = agent.build(&turn());
    let names: Vec<&str> = built
        .stable
        .match_indices("<name>")
        .map(|(i, _)| &built.stable[i + 6..i + 6 + built.stable[i + 6..].find('<').unwrap()])
        .collect();
    assert_eq!(names, ["Alpha", "mid", "zebra"]);
    assert!(built.stable.contains("<description>Last &lt;b&gt;&amp;&quot; one</description>"), "{}", built.stable);
    assert!(built.stable.contains("<location>skills/zebra/SKILL.md</location>"));
}
