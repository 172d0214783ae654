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
    let tools: Vec<proem::Tool> = w
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
        tools: Some(tools.into()),
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
    for (part, zone) in [(&*built.stable, "stable"), (built.dynamic.as_str(), "dynamic")] {
        let mut rest = part;
        for s in built.sections.iter().filter(|s| s.zone.as_str() == zone) {
            let end = rest.char_indices().nth(s.chars).map(|(i, _)| i).unwrap_or(rest.len());
            out.push(&rest[..end]);
            rest = rest[end..].strip_prefix("\n\n").unwrap_or(&rest[end..]);
        }
    }
    out
}

/// Whether a build is OpenClaw's `none`, the identity line alone.
fn core_sections_alone(built: &Built) -> bool {
    built.mode == Mode::None && built.sections.len() == 1 && built.sections[0].id == "identity"
}

fn tools_of(w: &World) -> bool {
    !w.tools.is_empty()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// The report lists the sections in the order the prompt shows them:
    /// cut by their character counts, in the report's order, the stable and
    /// dynamic parts are the sections' bodies joined by blank lines, whole
    /// (the session tier writes the dynamic part by block; the list follows).
    #[test]
    fn the_report_lists_sections_in_prompt_order(w in world()) {
        let Some(built) = build(&w) else { return Ok(()) };
        for (part, zone) in [(&*built.stable, "stable"), (built.dynamic.as_str(), "dynamic")] {
            let bodies: Vec<&str> = section_bodies(&built)
                .into_iter()
                .zip(&built.sections)
                .filter(|(_, s)| s.zone.as_str() == zone)
                .map(|(b, _)| b)
                .collect();
            let joined = bodies.join("\n\n");
            prop_assert_eq!(joined.as_str(), part, "{} part, sections {:?}", zone, built.sections.iter().map(|s| &s.id).collect::<Vec<_>>());
        }
    }

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
            if reminder.contains("your persona above") {
                prop_assert!(built.sections.iter().any(|s| s.id == "persona"), "{}", reminder);
            }
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
            prop_assert_eq!(&*built.stable, line);
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
        // `none` is the identity line alone (plus what an overlay adds): no tool list.
        let core_identity_alone = built.sections.iter().all(|s| s.source != "core" || s.id == "identity");
        if !tools_of(&w) || w.mode == Some(Mode::None) && core_identity_alone {
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

// Layouts ------------------------------------------------------------------

/// Section ids a `[layout] order` may list (the plugin ends included).
const LAYOUT_IDS: [&str; 42] = [
    "identity",
    "first_run",
    "persona",
    "identity_anchor",
    "self_evolution",
    "tooling",
    "interaction_style",
    "shell",
    "long_running",
    "tool_call_style",
    "tool_honesty",
    "execution_bias",
    "safety",
    "skills",
    "mcp_tools",
    "workspace",
    "team",
    "sandbox",
    "owners",
    "workspace_files_note",
    "output_format",
    "reply_tags",
    "messaging",
    "voice",
    "reactions",
    "reasoning_format",
    "project_context",
    "memory_recall",
    "silent_replies",
    "time",
    "channel_formatting",
    "channel_capabilities",
    "group_reply",
    "extra_context",
    "dynamic_files",
    "subagents",
    "heartbeats",
    "runtime",
    "recency",
    "tool_protocol",
    "stable_prefix",
    "dynamic_suffix",
];
/// The sections made from per-turn inputs: never above the boundary.
const PER_TURN: [&str; 7] =
    ["time", "channel_formatting", "channel_capabilities", "group_reply", "extra_context", "dynamic_files", "runtime"];

/// A random `[layout]` change: an order (a shuffle of some ids, Safety
/// kept), stable sections moved below the boundary, new headings.
#[derive(Debug, Clone)]
struct LayoutChange {
    order: Vec<&'static str>,
    dynamic: Vec<&'static str>,
    headings: Vec<(&'static str, String)>,
}

fn layout_change() -> impl Strategy<Value = LayoutChange> {
    let order = Just(LAYOUT_IDS.to_vec())
        .prop_shuffle()
        .prop_flat_map(|ids| {
            let n = ids.len();
            (Just(ids), proptest::collection::vec(any::<bool>(), n))
        })
        .prop_map(|(ids, keep)| {
            ids.into_iter().zip(keep).filter(|(id, keep)| *keep || *id == "safety").map(|(id, _)| id).collect()
        });
    let stable_ids: Vec<&'static str> =
        LAYOUT_IDS.iter().copied().filter(|id| !PER_TURN.contains(id) && *id != "dynamic_suffix").collect();
    let dynamic = proptest::sample::subsequence(stable_ids, 0..6);
    let headings = proptest::collection::vec(
        (proptest::sample::select(LAYOUT_IDS.to_vec()), "[A-Z][a-z]{0,10}( [a-z]{1,6})?"),
        0..4,
    );
    (order, dynamic, headings).prop_map(|(order, dynamic, headings)| {
        let dynamic = dynamic.into_iter().filter(|id| *id != "stable_prefix").collect();
        LayoutChange { order, dynamic, headings }
    })
}

fn layout_toml(change: &LayoutChange) -> String {
    let mut out = String::from("\n[layout]\n");
    let ids: Vec<String> = change.order.iter().map(|id| format!("\"{id}\"")).collect();
    out.push_str(&format!("order = [{}]\n", ids.join(", ")));
    let present = |id: &str| change.order.contains(&id);
    let zones: Vec<String> =
        change.dynamic.iter().filter(|id| present(id)).map(|id| format!("{id} = \"dynamic\"")).collect();
    out.push_str(&format!("zones = {{ {} }}\n", zones.join(", ")));
    let mut seen = Vec::new();
    let headings: Vec<String> = change
        .headings
        .iter()
        .filter(|(id, _)| present(id) && !matches!(*id, "stable_prefix" | "dynamic_suffix"))
        .filter(|(id, _)| {
            let first = !seen.contains(id);
            seen.push(*id);
            first
        })
        .map(|(id, h)| format!("{id} = \"{h}\""))
        .collect();
    out.push_str(&format!("headings = {{ {} }}\n", headings.join(", ")));
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// The hash promise under every preset and any `[layout]` change:
    /// per-turn inputs (the clock and time zone, the channel and chat, the
    /// group title, the extra prompt, USER.md, the thinking level) never
    /// move the stable hash; and a change that would put a per-turn section
    /// above the boundary is refused, naming it.
    #[test]
    fn per_turn_inputs_never_move_the_stable_hash_under_any_layout(
        w in world(),
        change in layout_change(),
        per_turn in proptest::sample::select(PER_TURN.to_vec()),
        channel in "[a-z]{1,8}",
        extra in "[a-zA-Z .]{0,300}",
        user in "[a-zA-Z .\n]{0,600}",
        minute in 0u32..60,
    ) {
        let w = World { aieos: false, hardware: false, budget: 40_000, ..w };
        let agent = agent(&w);
        agent.config(&format!("{}{}", config(&w), layout_toml(&change)));
        let first = agent.assembler().build(&turn_of(&w));
        let first = match first {
            Ok(b) => b,
            Err(proem::ProemError::BudgetTooSmall { .. }) => return Ok(()),
            Err(e) => return Err(TestCaseError::fail(format!("{e}\n{}", layout_toml(&change)))),
        };
        agent.file("USER.md", &user);
        let second = agent.assembler().build(&Turn {
            channel: Some(channel),
            chat_kind: Some(proem::ChatKind::Group),
            group_title: Some("Night shift".into()),
            extra: Some(extra),
            thinking: Some("high".into()),
            now: Some(proem_core::turn::parse_now(&format!("2027-03-04T05:{minute:02}:00+09:00")).unwrap()),
            timezone: Some("Asia/Tokyo".into()),
            ..turn_of(&w)
        });
        if let Ok(second) = second {
            prop_assert_eq!(&first.stable_hash, &second.stable_hash, "{}", layout_toml(&change));
        }
        // A per-turn section above the boundary: refused, naming it.
        let stable = format!("\n[layout]\nsections = [{{ id = \"safety\" }}, {{ id = \"{per_turn}\", zone = \"stable\" }}]\n");
        agent.config(&format!("{}{stable}", config(&w)));
        let err = proem::Assembler::open(agent.path(), None).err().expect("refused").to_string();
        prop_assert!(err.contains("layout.sections") && err.contains(&format!("{per_turn} is made from per-turn inputs")), "{}", err);
    }

    /// Slots follow the active layout: a plugin section placed after (or
    /// before) a section lands right next to it under any `[layout]`
    /// change.
    #[test]
    fn a_plugin_section_lands_next_to_its_anchor_under_any_layout(
        mut w in world(),
        change in layout_change(),
        pick in 0usize..64,
        after in any::<bool>(),
    ) {
        w.gpt5 = false;
        w.hardware = false;
        w.aieos = false;
        w.budget = 40_000;
        let agent = agent(&w);
        // One dynamic block in layout order: with the session tier a plugin's
        // dynamic section goes with the turn's block, past every session
        // section (`cache_profiles::` tests that order).
        agent.config(&format!("{}{}\n[cache]\nsession_tier = false\n", config(&w), layout_toml(&change)));
        let assembler = agent.assembler();
        let plain = match assembler.build(&turn_of(&w)) {
            Ok(b) => b,
            Err(_) => return Ok(()),
        };
        let core: Vec<&proem_core::report::SectionReport> = plain.sections.iter().filter(|s| s.source == "core").collect();
        if core.is_empty() {
            return Ok(()); // a layout may leave a mode (none) without sections
        }
        let anchor = core[pick % core.len()];
        let placement = if after { proem_core::section::Placement::After } else { proem_core::section::Placement::Before };
        let zone = if anchor.zone.as_str() == "stable" { proem_core::section::Zone::Stable } else { proem_core::section::Zone::Dynamic };
        let section = proem_core::section::Section::contributed(
            "probe-plugin",
            "probe_note",
            proem_core::section::Slot::new(&anchor.id, placement).unwrap(),
            zone,
            0,
            proem_core::mode::ModeSet::ALL,
            "## Probe\nA note.",
        );
        let built = assembler.build_with(&turn_of(&w), &[section]).unwrap();
        let ids = section_ids(&built);
        if core_sections_alone(&built) {
            return Ok(()); // `none_mode = "identity_only"`: no plugin section joins it
        }
        let at = ids.iter().position(|id| id == "probe_note");
        prop_assert!(at.is_some(), "not placed: {:?} {:?} mode {:?} dynamic {:?} layout {}", ids, built.diagnostics, built.mode, built.dynamic, layout_toml(&change));
        let at = at.unwrap_or_default();
        let neighbour = if after { at.checked_sub(1) } else { Some(at + 1) };
        prop_assert_eq!(neighbour.and_then(|i| ids.get(i)), Some(&anchor.id), "{:?} {:?}", ids, layout_toml(&change));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// The tiers of `[cache]` (issue 30, items 3 and 4): under any preset,
    /// `[layout]` change, plugins and tiering, two turns of one session
    /// that differ only in per-turn inputs (the clock, the time zone, the
    /// extra prompt) have the same stable part, the same as without
    /// `[cache]`; the same session block, which starts the dynamic part;
    /// and with `per_turn = "user_message"` the same system prompt, the
    /// extra prompt being in the turn context only.
    #[test]
    fn a_new_turn_in_a_session_changes_only_the_turn_tier(
        w in world(),
        change in layout_change(),
        session_tier in any::<bool>(),
        user_message in any::<bool>(),
        extra in "[a-zA-Z .]{0,300}",
        minute in 0u32..60,
        day in 1u32..28,
    ) {
        let w = World { budget: 40_000, ..w };
        let agent = agent(&w);
        let base = format!("{}{}", config(&w), layout_toml(&change));
        agent.config(&format!("{base}\n[cache]\nsession_tier = false\n"));
        let session = |t: Turn| Turn {
            channel: Some("telegram".into()),
            chat_kind: Some(proem::ChatKind::Group),
            group_title: Some("Night shift".into()),
            ..t
        };
        let Ok(plain) = agent.assembler().build(&session(turn_of(&w))) else { return Ok(()) };
        let per_turn = if user_message { "user_message" } else { "system" };
        agent.config(&format!("{base}\n[cache]\nsession_tier = {session_tier}\nper_turn = \"{per_turn}\"\n"));
        let assembler = agent.assembler();
        let note = format!("Per-turn note zq {extra}");
        let first = assembler.build(&session(turn_of(&w)));
        let second = assembler.build(&session(Turn {
            extra: Some(note.clone()),
            now: Some(proem_core::turn::parse_now(&format!("2027-03-{day:02}T05:{minute:02}:00+09:00")).unwrap()),
            timezone: Some("Asia/Tokyo".into()),
            ..turn_of(&w)
        }));
        let (Ok(first), Ok(second)) = (first, second) else { return Ok(()) };
        prop_assert_eq!(&plain.stable, &first.stable, "tiering never moves stable bytes");
        prop_assert_eq!(&first.stable_hash, &second.stable_hash);
        prop_assert_eq!(first.session.is_some(), session_tier);
        if let (Some(a), Some(b)) = (&first.session, &second.session) {
            prop_assert_eq!(a, b, "the session block ignores per-turn inputs");
            prop_assert!(first.dynamic.starts_with(a.as_str()) && second.dynamic.starts_with(b.as_str()));
        }
        prop_assert_eq!(second.turn_context.is_some(), user_message);
        if user_message {
            prop_assert_eq!(&first.prompt, &second.prompt, "the system prompt is the session's");
            prop_assert!(!second.prompt.contains("Per-turn note zq"), "{}", second.prompt);
        } else {
            prop_assert_eq!(&plain.dynamic.len(), &first.dynamic.len(), "the same sections, maybe reordered");
        }
        prop_assert_eq!(second.prompt.matches(proem::BOUNDARY_MARKER).count(), 1);
    }
}
