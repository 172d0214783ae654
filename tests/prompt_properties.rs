//! A prompt never contradicts itself or the workspace (issue 25, item 3):
//! properties over generated agents. Each world draws the files present or
//! missing (some tiny, some long), an IDENTITY.md with or without a name,
//! `[agent] name` or not, tools or none, native or text tool calling, a
//! preset or none, a mode and a session, a budget, a truncation notice, and
//! the official plugins (gpt5-overlay, hardware-access, aieos-identity) on
//! or off. One property per bullet of the issue.

use crate::common::*;
use proem::{Built, Mode, Turn};
use proptest::prelude::*;

const PRESETS: [Option<&str>; 4] = [None, Some("openclaw"), Some("goclaw"), Some("zeroclaw")];
const TOOLS: [&str; 11] = [
    "exec",
    "process",
    "cron_add",
    "sessions_spawn",
    "memory_search",
    "message",
    "update_plan",
    "read",
    "web_search",
    "gpio_read",
    "skill_search",
];
/// Core sections that tell the model how to call tools.
const TOOL_GUIDANCE: [&str; 7] =
    ["tool_call_style", "tool_honesty", "long_running", "subagents", "shell", "tool_protocol", "mcp_tools"];
/// SOUL.md's text carries this mark: it shows whether SOUL.md reached the prompt.
const SOUL_MARK: &str = "SOUL-MARK";

#[derive(Debug, Clone)]
struct World {
    preset: Option<&'static str>,
    predefined: bool,
    name: Option<String>,
    identity_name: Option<String>,
    /// (file, size in characters); size 0 leaves the file out.
    files: Vec<(&'static str, usize)>,
    bootstrap: bool,
    tools: Vec<&'static str>,
    skills: usize,
    skills_cap: Option<usize>,
    native: bool,
    notice: &'static str,
    identity_only: Option<bool>,
    caps: Option<(usize, usize)>,
    gpt5: bool,
    hardware: bool,
    aieos: bool,
    mode: Option<Mode>,
    session: &'static str,
    group: Option<bool>,
    extra: bool,
    budget: usize,
}

fn size() -> impl Strategy<Value = usize> {
    prop_oneof![2 => Just(0usize), 2 => 1usize..60, 3 => 60usize..1_500, 1 => 1_500usize..6_000]
}

fn world() -> impl Strategy<Value = World> {
    let files = (size(), size(), size(), size(), size(), size());
    let tools = proptest::sample::subsequence(TOOLS.to_vec(), 0..=TOOLS.len());
    let who = (
        proptest::sample::select(PRESETS.to_vec()),
        any::<bool>(),
        proptest::option::of("[A-Z][a-z]{2,7}"),
        proptest::option::of("[A-Z][a-z]{2,7}"),
    );
    let shape = (
        files,
        any::<bool>(),
        prop_oneof![Just(Vec::new()), tools],
        0usize..6,
        proptest::option::of(20usize..300),
        any::<bool>(),
        proptest::sample::select(vec!["off", "once", "always"]),
        proptest::option::of(any::<bool>()),
        proptest::option::of((200usize..3_000, 300usize..8_000)),
    );
    let plugins = (any::<bool>(), any::<bool>(), any::<bool>());
    let turn = (
        proptest::option::of(proptest::sample::select(Mode::ALL.to_vec())),
        proptest::sample::select(vec!["main", "main", "subagent", "cron", "heartbeat"]),
        proptest::option::of(any::<bool>()),
        any::<bool>(),
        prop_oneof![Just(1_500usize), 800usize..6_000, 6_000usize..40_000],
    );
    (who, shape, plugins, turn).prop_map(|(who, shape, plugins, turn)| {
        let (preset, predefined, name, identity_name) = who;
        let (sizes, bootstrap, tools, skills, skills_cap, native, notice, identity_only, caps) = shape;
        let names = ["AGENTS.md", "SOUL.md", "IDENTITY.md", "USER.md", "TOOLS.md", "MEMORY.md"];
        let files = names.iter().copied().zip([sizes.0, sizes.1, sizes.2, sizes.3, sizes.4, sizes.5]).collect();
        let (gpt5, hardware, aieos) = plugins;
        let (mode, session, group, extra, budget) = turn;
        World {
            preset,
            predefined,
            name,
            identity_name,
            files,
            bootstrap,
            tools,
            skills,
            skills_cap,
            native,
            notice,
            identity_only,
            caps,
            gpt5,
            hardware,
            aieos,
            mode,
            session,
            group,
            extra,
            budget,
        }
    })
}

/// Text of about `chars` characters, lines of words, starting with `mark`.
fn text(mark: &str, chars: usize) -> String {
    let mut out = format!("{mark} ");
    let mut i = 0;
    while out.chars().count() < chars {
        out.push_str(if i % 9 == 8 { "line.\n" } else { "word " });
        i += 1;
    }
    out.chars().take(chars.max(1)).collect::<String>().trim_end().to_string()
}

fn config(w: &World) -> String {
    let mut c = String::from("[agent]\nid = \"probe\"\n");
    if w.predefined {
        c.push_str("kind = \"predefined\"\n");
    }
    if let Some(name) = &w.name {
        c.push_str(&format!("name = \"{name}\"\n"));
    }
    if let Some(preset) = w.preset {
        c.push_str(&format!("preset = \"{preset}\"\n"));
    }
    if let Some(only) = w.identity_only {
        c.push_str(&format!("none_mode = \"{}\"\n", if only { "identity_only" } else { "standard" }));
    }
    c.push_str(&format!("\n[tools]\nnative_calling = {}\n", w.native));
    c.push_str(&format!("\n[bootstrap]\ntruncation_notice = \"{}\"\n", w.notice));
    if let Some((per_file, total)) = w.caps {
        c.push_str(&format!("\n[budget]\nper_file_chars = {per_file}\ntotal_file_chars = {total}\n"));
    }
    if let Some(cap) = w.skills_cap {
        c.push_str(&format!("\n[skills]\nmax_tokens = {cap}\n"));
    }
    c.push('\n');
    if w.gpt5 {
        c.push_str(&builtin("gpt5-overlay", ""));
    }
    if w.hardware {
        c.push_str(&builtin("hardware-access", ""));
    }
    if w.aieos {
        let doc = r#"{"identity": {"names": {"first": "Nova"}}, "psychology": {"traits": {"mbti": "INTJ"}}}"#;
        c.push_str(&builtin("aieos-identity", &format!("config = {{ inline = '{doc}' }}")));
    }
    c
}

fn agent(w: &World) -> Agent {
    plugin_env();
    let agent = Agent::new();
    for (name, chars) in &w.files {
        if *chars == 0 {
            continue;
        }
        let body = match *name {
            "SOUL.md" => text(SOUL_MARK, *chars),
            "IDENTITY.md" => match &w.identity_name {
                Some(n) => format!("- **Name:** {n}\n{}", text("About", *chars)),
                None => text("About", *chars),
            },
            other => text(other, *chars),
        };
        agent.file(name, &body);
    }
    if w.identity_name.is_some() && !w.files.iter().any(|(n, c)| *n == "IDENTITY.md" && *c > 0) {
        agent.file("IDENTITY.md", &format!("Name: {}", w.identity_name.as_deref().unwrap_or_default()));
    }
    if w.bootstrap {
        agent.file("BOOTSTRAP.md", "Ask the user's name, then write it to USER.md.");
    }
    for i in 0..w.skills {
        agent.skill(&format!("skill-{i}"), &text("Does a thing", 80 + 40 * i));
    }
    agent.config(&config(w));
    agent
}

fn turn_of(w: &World) -> Turn {
    let tools = w
        .tools
        .iter()
        .map(|name| proem::Tool {
            name: name.to_string(),
            description: format!("Does {name}."),
            parameters: Some(
                serde_json::json!({"type": "object", "properties": {format!("{name}_arg"): {"type": "string"}}}),
            ),
            server: None,
        })
        .collect();
    let session_key = match w.session {
        "main" => None,
        "heartbeat" => Some("agent:probe:heartbeat".to_string()),
        kind => Some(format!("agent:probe:{kind}:job-1")),
    };
    Turn {
        mode: w.mode,
        session_key,
        model: w.gpt5.then(|| "gpt-5.1".to_string()),
        channel: w.group.map(|_| "telegram".to_string()),
        chat_kind: w.group.map(|g| if g { proem::ChatKind::Group } else { proem::ChatKind::Direct }),
        extra: w.extra.then(|| "The caller's note for this turn.".to_string()),
        tools: Some(tools),
        budget: Some(w.budget),
        ..turn()
    }
}

/// The build of a world; `None` when its budget is too small for the
/// protected sections (an error that says so, not a prompt).
fn build(w: &World) -> Option<Built> {
    match agent(w).assembler().build(&turn_of(w)) {
        Ok(built) => Some(built),
        Err(proem::ProemError::BudgetTooSmall { .. }) => None,
        Err(e) => panic!("{e}"),
    }
}

fn section<'b>(built: &'b Built, id: &str) -> Option<&'b proem_core::report::SectionReport> {
    built.sections.iter().find(|s| s.id == id && s.source == "core")
}

/// The body of a core section, from the prompt (its report has no text).
fn body<'b>(built: &'b Built, id: &str) -> Option<&'b str> {
    let at = built.sections.iter().position(|s| s.id == id && s.source == "core")?;
    let bodies = section_bodies(built);
    bodies.get(at).copied()
}

/// The sections' texts in prompt order: the stable and dynamic parts cut
/// at each section's length (sections are joined by one blank line).
fn section_bodies(built: &Built) -> Vec<&str> {
    let mut out = Vec::new();
    for (part, zone) in [(&built.stable, "stable"), (&built.dynamic, "dynamic")] {
        let mut rest = part.as_str();
        for s in built.sections.iter().filter(|s| s.zone.as_str() == zone) {
            let end = rest.char_indices().nth(s.chars).map(|(i, _)| i).unwrap_or(rest.len());
            out.push(&rest[..end]);
            rest = rest[end..].strip_prefix("\n\n").unwrap_or(&rest[end..]);
        }
    }
    out
}

fn tools_of(w: &World) -> bool {
    !w.tools.is_empty()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// No tool-calling guidance when the turn has no tools: no Tool Call
    /// Style, honesty, long-running, sub-agent, shell, protocol or MCP
    /// section, and an execution framing (ZeroClaw's Your Task) only in
    /// its no-tools form.
    #[test]
    fn no_tool_guidance_without_tools(mut w in world()) {
        w.tools.clear();
        let Some(built) = build(&w) else { return Ok(()) };
        for id in TOOL_GUIDANCE {
            prop_assert!(section(&built, id).is_none(), "{id} with no tools:\n{}", built.prompt);
        }
        if let Some(bias) = body(&built, "execution_bias") {
            prop_assert!(bias.contains("No tools are available"), "{bias}");
        }
    }

    /// The identity line names the agent as `[agent] name`, else
    /// IDENTITY.md's name, else the id says: one name, never another.
    #[test]
    fn the_identity_line_names_the_agent_once(w in world()) {
        let Some(built) = build(&w) else { return Ok(()) };
        let Some(line) = body(&built, "identity") else { return Ok(()) };
        let identity_md = w.identity_name.clone().filter(|_| {
            // Sub-agent and cron sessions may not load IDENTITY.md.
            built.files.iter().any(|f| f.name == "IDENTITY.md" && !f.missing)
        });
        let expected = w.name.clone().or(identity_md).unwrap_or_else(|| "probe".into());
        prop_assert!(line.starts_with(&format!("You are {expected}, ")), "{line}");
        if let (Some(name), Some(other)) = (&w.name, &w.identity_name) {
            if name != other && built.files.iter().any(|f| f.name == "IDENTITY.md" && !f.missing) {
                prop_assert!(codes(&built).contains(&"name_conflict".to_string()));
            }
        }
    }

    /// The reminder and every cross-reference name only files and sections
    /// in the prompt, in correct grammar: the reminder's persona files are
    /// each in the prompt ("defines" for one, "define" for several), the
    /// first-run notice comes with BOOTSTRAP.md, the workspace-files note
    /// with Project Context, "the sections below" with sections below, and
    /// guidance names only tools the turn has.
    #[test]
    fn cross_references_name_only_what_is_in_the_prompt(w in world()) {
        let Some(built) = build(&w) else { return Ok(()) };
        if let Some(reminder) = body(&built, "recency") {
            if let Some(rest) = reminder.split("Stay in character as ").nth(1) {
                let (names, verb) = if let Some((names, _)) = rest.split_once(" defines you.") {
                    (names, "defines")
                } else {
                    (rest.split_once(" define you.").map(|(n, _)| n).unwrap_or(""), "define")
                };
                if names != "your persona above describes you." && !names.is_empty() {
                    let files: Vec<&str> = names.split(" and ").collect();
                    prop_assert_eq!(verb == "defines", files.len() == 1, "{}", reminder);
                    for f in files {
                        prop_assert!(built.prompt.contains(&format!("### {f}\n")), "{f} named by the reminder:\n{}", built.prompt);
                    }
                }
            }
        }
        if section(&built, "first_run").is_some() {
            prop_assert!(built.prompt.contains("### BOOTSTRAP.md\n"), "first run without BOOTSTRAP.md:\n{}", built.prompt);
        }
        if section(&built, "workspace_files_note").is_some() {
            prop_assert!(built.sections.iter().any(|s| s.id == "project_context"));
        }
        if let Some(line) = body(&built, "identity") {
            if line.contains("The sections below") {
                prop_assert!(built.sections.len() > 1, "{}", built.prompt);
            }
        }
        for guidance in ["long_running", "tooling", "messaging", "output_format", "skills", "memory_recall"] {
            let Some(text) = body(&built, guidance) else { continue };
            for tool in TOOLS {
                if text.contains(&format!("`{tool}`")) {
                    prop_assert!(w.tools.contains(&tool), "{guidance} names `{tool}`, which the turn lacks:\n{text}");
                }
            }
        }
    }

    /// `none` promises nothing that does not follow; with `none_mode =
    /// "identity_only"` the prompt is the identity line (no plugin section,
    /// no word about sections below).
    #[test]
    fn none_mode_promises_nothing(mut w in world()) {
        w.mode = Some(Mode::None);
        let Some(built) = build(&w) else { return Ok(()) };
        let identity_only = match (w.identity_only, w.preset) {
            (Some(only), _) => only,
            (None, Some("openclaw" | "zeroclaw")) => true,
            _ => false,
        };
        if identity_only {
            let line = body(&built, "identity").expect("the identity line");
            prop_assert_eq!(built.stable.as_str(), line);
            prop_assert_eq!(built.dynamic.as_str(), "");
            prop_assert!(!line.contains("below"), "{}", line);
            prop_assert_eq!(built.sections.len(), 1, "{:?}", section_ids(&built));
        }
        prop_assert!(section(&built, "first_run").is_none() || built.prompt.contains("### BOOTSTRAP.md\n"));
    }

    /// A cut notice is never longer than what it replaces: a file cut to
    /// nothing leaves a notice only when the notice is shorter than the file.
    #[test]
    fn a_cut_notice_is_never_longer_than_the_file(mut w in world()) {
        w.notice = if w.notice == "off" { "once" } else { w.notice };
        let Some(built) = build(&w) else { return Ok(()) };
        let marker = "\n[left out to fit the prompt: ";
        for (at, _) in built.prompt.match_indices(marker) {
            let head = &built.prompt[..at];
            let name_at = head.rfind("### ").expect("a notice names its file") + 4;
            let name = &head[name_at..];
            let tail = &built.prompt[at + marker.len()..];
            let chars: usize = tail.split(' ').next().unwrap().parse().unwrap();
            let end = tail.find(']').unwrap() + 1;
            let notice = format!("\n\n### {name}{marker}{}", &tail[..end]);
            prop_assert!(notice.chars().count() < chars, "{name}: a {}-character notice for {chars} characters", notice.chars().count());
        }
    }

    /// A budget cut never brings back what a plugin replaced: with an AIEOS
    /// persona, SOUL.md never reaches a prompt whose layout has the persona
    /// section, at any budget (the replacement goes with the section).
    #[test]
    fn a_replaced_section_never_comes_back(mut w in world()) {
        w.aieos = true;
        w.files[1].1 = w.files[1].1.max(200);
        let Some(built) = build(&w) else { return Ok(()) };
        let layout_has_persona = matches!(w.preset, None | Some("goclaw"));
        if plugin_status(&built, "aieos-identity") == "ok" && layout_has_persona {
            prop_assert!(!built.prompt.contains(SOUL_MARK), "SOUL.md came back:\n{}", built.prompt);
        }
    }

    /// With `native_calling = false`, each tool's schema is in the stable
    /// part with the tool list it comes from, and the catalog is printed
    /// once (each tool listed once).
    #[test]
    fn text_protocol_schemas_sit_above_the_boundary_once(mut w in world()) {
        w.native = false;
        let Some(built) = build(&w) else { return Ok(()) };
        if !tools_of(&w) || w.mode == Some(Mode::None) && built.sections.len() == 1 {
            return Ok(());
        }
        for tool in &w.tools {
            let schema = format!("\"{tool}_arg\"");
            prop_assert_eq!(built.prompt.matches(&schema).count(), 1, "{} in:\n{}", schema, built.prompt);
            prop_assert!(built.stable.contains(&schema), "{} below the boundary", schema);
            let listed = built.prompt.lines().filter(|l| l.starts_with(&format!("- {tool}:"))).count();
            prop_assert_eq!(listed, 1, "{} listed {} times", tool, listed);
        }
    }

    /// A provider overlay's stable prefix lands where its system puts it:
    /// after the identity line, right before Safety (proem, OpenClaw) or
    /// last above the boundary (GoClaw, ZeroClaw); never above the identity.
    #[test]
    fn the_stable_prefix_lands_where_the_layout_says(mut w in world()) {
        w.gpt5 = true;
        let Some(built) = build(&w) else { return Ok(()) };
        let ids = section_ids(&built);
        let Some(prefix) = ids.iter().position(|id| id == "stable_prefix") else { return Ok(()) };
        if let Some(identity) = ids.iter().position(|id| id == "identity") {
            prop_assert!(identity < prefix, "{:?}", ids);
        }
        let next_stable = built.sections[prefix + 1..]
            .iter()
            .find(|s| s.zone.as_str() == "stable" && s.source == "core")
            .map(|s| s.id.as_str());
        let safety = ids.iter().any(|id| id == "safety");
        match w.preset {
            None | Some("openclaw") if safety => prop_assert_eq!(next_stable, Some("safety"), "{:?}", ids),
            None | Some("openclaw") => prop_assert_eq!(next_stable, None, "{:?}", ids),
            _ => prop_assert_eq!(next_stable, None, "{:?}", ids),
        }
    }

    /// Diagnostics say what happened: a cut by `[skills] max_tokens` is the
    /// skills cap's (never `budget_cut_stable` when the budget cut nothing),
    /// and a file cut by the total cap is never put down to the per-file cap.
    #[test]
    fn diagnostics_say_what_cut_what(mut w in world()) {
        w.aieos = false;
        w.skills = w.skills.max(3);
        let Some(built) = build(&w) else { return Ok(()) };
        // When the same agent without the skills cap fits with no cut, the
        // budget cut nothing here either: whatever the cap did is the cap's.
        if w.skills_cap.is_some() {
            let uncapped = build(&World { skills_cap: None, ..w.clone() });
            let budget_cut = |b: &Built| b.diagnostics.iter().any(|d| d.code.starts_with("budget_"));
            if uncapped.as_ref().is_some_and(|b| !budget_cut(b)) {
                prop_assert!(!budget_cut(&built), "the skills cap reported as the budget's: {:?}", built.diagnostics);
            }
        }
        // The caps in force, and the files in the order they are capped.
        let config = agent(&w).assembler().config().clone();
        let per_file = config.per_file_chars();
        let mut remaining = config.budget.total_file_chars;
        let stable_first = built.files.iter().filter(|f| !matches!(f.name.as_str(), "USER.md" | "BOOTSTRAP.md" | "HEARTBEAT.md"))
            .chain(built.files.iter().filter(|f| f.name == "BOOTSTRAP.md"))
            .chain(built.files.iter().filter(|f| matches!(f.name.as_str(), "USER.md" | "HEARTBEAT.md")));
        for f in stable_first {
            if let Some(d) = built.diagnostics.iter().find(|d| d.code == "file_truncated" && d.message.starts_with(&format!("{}:", f.name))) {
                let by_total = remaining < per_file;
                prop_assert_eq!(d.message.contains("total file cap"), by_total, "{} (remaining {}, per file {})", d.message, remaining, per_file);
                prop_assert_eq!(d.message.contains("per-file cap"), !by_total, "{}", d.message);
            }
            if !f.missing {
                remaining = remaining.saturating_sub(f.injected_chars);
            }
        }
    }
}
