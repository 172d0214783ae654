//! Plugin API 0.2: the stable/per-turn split by construction.
//!
//! The rule under test: what a 0.2 `stable` (or `bootstrap`) hook returns
//! can depend only on stable inputs, so no per-turn input ever changes the
//! stable part through a plugin, and a new turn never runs a stable hook
//! again. A `turn` hook's output stays below the boundary.

use crate::common::*;
use proem::Turn;
use proptest::prelude::*;

fn at(rfc3339: &str) -> Turn {
    Turn { now: Some(proem_core::turn::parse_now(rfc3339).unwrap()), ..turn() }
}

#[test]
fn a_stable_hook_sees_no_clock_and_a_turn_hook_sees_the_turns() {
    let agent = Agent::with_plugins(&format!(
        "{}{}",
        fixture("stable-clock", "clock", "id = \"stable_clock\""),
        fixture("turn-clock", "clock", "id = \"turn_clock\", after = \"time\", zone = \"dynamic\"")
    ));
    let built = agent.build(&Turn { timezone: Some("Europe/Berlin".into()), ..turn() });
    assert_eq!(plugin_status(&built, "stable-clock"), "ok", "{:?}", built.diagnostics);
    // WASI's wall clock reads 1970 in a stable hook, and it gets no `now`.
    assert!(built.stable.contains("## Fixture\nclock 0; hash order"), "{}", built.stable);
    assert!(!built.stable.contains("now 20"), "{}", built.stable);
    // 2026-11-21T09:30:00Z, in Berlin's offset.
    assert!(built.dynamic.contains("clock 1795253400;"), "{}", built.dynamic);
    assert!(built.dynamic.contains("now 2026-11-21T10:30:00+01:00"), "{}", built.dynamic);
    assert!(!built.stable.contains("1795253400"));
}

#[test]
fn each_hook_sees_its_own_files() {
    let agent = Agent::with_plugins(&fixture("files", "files", ""));
    agent.file("USER.md", "# User\nPrefers metric.");
    let built = agent.build(&turn());
    let stable = built.stable.split("## Files\n").nth(1).expect("the stable hook's section").lines().next().unwrap();
    assert!(stable.contains("SOUL.md") && stable.contains("AGENTS.md"), "{stable}");
    assert!(!stable.contains("USER.md"), "a per-turn file never reaches a stable hook: {stable}");
    let turn_files = built.dynamic.split("## Turn Files\n").nth(1).expect("the turn hook's section");
    assert!(turn_files.starts_with("USER.md"), "{turn_files}");
}

#[test]
fn a_new_clock_channel_or_chat_never_runs_a_stable_hook_again() {
    // hardware-access has a stable hook only (the fixture also has a turn
    // hook, which does run on every new turn).
    let agent = Agent::with_plugins(&builtin("steady", "").replace("builtin:steady", "builtin:hardware-access"));
    // An agent id of its own: no other test's answer kept on disk has this key.
    let id = agent.path().file_name().unwrap().to_string_lossy().replace(|c: char| !c.is_ascii_alphanumeric(), "");
    agent.config(&format!(
        "[agent]\nid = \"steady{id}\"\n\n{}",
        builtin("steady", "").replace("builtin:steady", "builtin:hardware-access")
    ));
    let assembler = agent.assembler();
    let gpio = || Turn { tools: Some(tools(&["gpio_write"]).into()), ..turn() };
    let first = assembler.build(&gpio()).unwrap();
    let ran = |b: &proem::Built| b.plugins.iter().find(|p| p.id == "steady").unwrap().elapsed_us;
    assert!(ran(&first) > 0, "the first build runs it");
    for (i, t) in [
        Turn { tools: Some(tools(&["gpio_write"]).into()), ..at("2026-11-21T09:31:00Z") },
        Turn { tools: Some(tools(&["gpio_write"]).into()), ..at("2027-03-01T00:00:00Z") },
        Turn { channel: Some("telegram".into()), ..gpio() },
        Turn { chat_kind: Some(proem_core::turn::ChatKind::Group), group_title: Some("Ops".into()), ..gpio() },
        Turn { extra: Some("Be brief today.".into()), ..gpio() },
    ]
    .iter()
    .enumerate()
    {
        let built = assembler.build(t).unwrap();
        assert_eq!(built.stable, first.stable, "turn {i}");
        assert_eq!(ran(&built), 0, "turn {i}: answered from the memo, not run");
        assert!(built.stable.contains("## Hardware Access"));
    }
    // A stable input does run it again.
    let other = assembler.build(&Turn { model: Some("gpt-5.1".into()), ..gpio() }).unwrap();
    assert!(ran(&other) > 0);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Whatever the turn, a 0.2 plugin's stable section and the stable part
    /// are the same bytes, and its turn section is below the boundary.
    #[test]
    fn per_turn_inputs_never_reach_the_stable_part_through_a_plugin(
        minute in 0u32..600_000,
        channel in proptest::option::of("[a-z]{1,10}"),
        group in any::<bool>(),
        title in "[ -~]{0,30}",
        extra in "[ -~\n]{0,200}",
        user in "[ -~\n]{0,300}",
        zone in prop::sample::select(vec!["UTC", "Europe/Berlin", "Asia/Kolkata", "America/Los_Angeles"]),
    ) {
        static AGENT: std::sync::OnceLock<Agent> = std::sync::OnceLock::new();
        let agent = AGENT.get_or_init(|| {
            Agent::with_plugins(&format!(
                "{}{}",
                fixture("both", "sections", "text = \"Stable words.\""),
                fixture("per-turn", "clock", "id = \"when\", after = \"time\", zone = \"dynamic\"")
            ))
        });
        agent.file("USER.md", &user);
        let base = proem_core::turn::parse_now("2026-01-01T00:00:00Z").unwrap();
        let t = Turn {
            now: Some(base + chrono::Duration::minutes(i64::from(minute))),
            timezone: Some(zone.into()),
            channel,
            chat_kind: Some(if group { proem_core::turn::ChatKind::Group } else { proem_core::turn::ChatKind::Direct }),
            group_title: Some(title),
            extra: Some(extra),
            ..Turn::default()
        };
        let built = agent.build(&t);
        let reference = agent.build(&turn());
        prop_assert_eq!(&built.stable, &reference.stable);
        prop_assert!(built.stable.contains("Stable words."));
        prop_assert!(built.dynamic.contains("## Fixture\nclock "));
        prop_assert!(!built.stable.contains("clock 1"));
    }
}

#[test]
fn a_turn_hook_cannot_replace_a_stable_section_nor_a_stable_hook_a_dynamic_one() {
    for (zone, words) in [
        ("", "replaces time, which is below the cache boundary: replace it from the turn hook"),
        (
            ", zone = \"dynamic\"",
            "replaces persona, which is above the cache boundary: replace it from the stable hook",
        ),
    ] {
        let agent = Agent::with_plugins(&fixture("crosser", "replace_other_zone", zone.trim_start_matches(", ")));
        let built = agent.build(&turn());
        assert_eq!(plugin_status(&built, "crosser"), "failed", "{:?}", built.diagnostics);
        let d = diagnostic(&built, "plugin_failed").unwrap_or_default();
        assert!(d.contains(words), "{d}");
        assert!(!built.prompt.contains("## Replaced"));
    }
}

#[test]
fn a_max_tokens_hint_caps_the_section_and_reports_it() {
    let long: String = (0..400).map(|i| format!("word{i} ")).collect();
    for max in [1u32, 7, 40, 150] {
        let agent = Agent::with_plugins(&fixture("hinted", "hint", &format!("text = \"{long}\", max_tokens = {max}")));
        let built = agent.build(&turn());
        assert_eq!(plugin_status(&built, "hinted"), "ok", "{:?}", built.diagnostics);
        let counter = tiktoken_rs::o200k_base().unwrap();
        match built.sections.iter().find(|s| s.id == "hinted") {
            Some(report) => {
                assert!(report.truncated, "max {max}");
                assert!(report.tokens <= max as usize, "max {max}: {} tokens", report.tokens);
                let text_start = built.stable.find("## Hinted").unwrap();
                let text = &built.stable[text_start..];
                let text = &text[..text.find("\n\n").unwrap_or(text.len())];
                assert!(counter.encode_ordinary(text).len() <= max as usize, "max {max}: {text}");
                assert!(text.ends_with(&format!("[… cut to {max} tokens]")), "{text}");
            }
            None => assert!(max < 10, "only a hint too small for the cut note drops the section (max {max})"),
        }
        assert!(codes(&built).contains(&"plugin_section_capped".to_string()), "max {max}");
    }
    // Under the hint: untouched, not reported.
    let agent = Agent::with_plugins(&fixture("hinted", "hint", "text = \"short\", max_tokens = 50"));
    let built = agent.build(&turn());
    assert!(built.stable.contains("## Hinted\nshort\n"));
    assert!(!built.sections.iter().find(|s| s.id == "hinted").unwrap().truncated);
}

#[test]
fn a_bootstrap_hook_sees_and_writes_only_stable_files() {
    let agent = Agent::with_plugins(&fixture("swap", "bootstrap", "text = \"# Soul\\nSwapped.\""));
    agent.file("USER.md", "# User\nReal user.");
    let built = agent.build(&turn());
    assert!(built.stable.contains("Swapped.") && built.dynamic.contains("Real user."), "{}", built.prompt);
    let forger = Agent::with_plugins(&fixture("forger", "bootstrap_user", ""));
    forger.file("USER.md", "# User\nReal user.");
    let built = forger.build(&turn());
    let d = diagnostic(&built, "plugin_failed").unwrap_or_default();
    assert!(d.contains("USER.md is a per-turn file"), "{d}");
    assert!(built.dynamic.contains("Real user.") && !built.prompt.contains("forged"));
}

#[test]
fn a_section_with_a_core_id_is_refused_with_the_fix() {
    let agent = Agent::with_plugins(&fixture("taker", "core_id", ""));
    let built = agent.build(&turn());
    let d = diagnostic(&built, "section_id_taken").unwrap_or_default();
    assert!(d.contains("persona") && d.contains("replace(persona)"), "{d}");
    assert!(!built.prompt.contains("## Mine"));
}
