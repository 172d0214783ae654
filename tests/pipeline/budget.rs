//! Character caps and the token budget: exact edges, cut order, protected
//! sections intact, and a clear failure when even they do not fit.

use crate::common::*;
use proem::{Mode, ProemError, Turn};

fn caps(per_file: usize, total: usize) -> String {
    format!("[agent]\nid = \"t\"\n[sandbox]\nenabled = true\n[budget]\nper_file_chars = {per_file}\ntotal_file_chars = {total}\n")
}

fn injected<'a>(built: &'a proem::Built, name: &str) -> &'a proem_core::report::FileReport {
    built.files.iter().find(|f| f.name == name).unwrap()
}

#[test]
fn file_exactly_at_the_cap_is_kept_whole() {
    let agent = Agent::new();
    agent.config(&caps(100, 10_000)).file("AGENTS.md", &"é".repeat(100));
    let built = agent.build(&turn());
    let f = injected(&built, "AGENTS.md");
    assert_eq!((f.raw_chars, f.injected_chars, f.truncated), (100, 100, false));
    assert_eq!(wrapped(&built.prompt, "context_file", "AGENTS.md").unwrap(), "é".repeat(100));
    assert!(!built.diagnostics.iter().any(|d| d.code == "file_truncated"));
}

#[test]
fn one_character_over_the_cap_is_cut_on_character_boundaries() {
    let agent = Agent::new();
    let text: String = "日本語のテキスト".chars().cycle().take(20_001).collect();
    agent.config(&caps(20_000, 60_000)).file("AGENTS.md", &text);
    let built = agent.build(&turn());
    let f = injected(&built, "AGENTS.md");
    assert!(f.truncated && f.injected_chars <= 20_000 && f.raw_chars == 20_001);
    let body = wrapped(&built.prompt, "context_file", "AGENTS.md").unwrap();
    assert_eq!(body.chars().count(), f.injected_chars);
    // Head and tail are exact slices of the original, and the marker says so.
    let (head, rest) = body.split_once("\n\n[… AGENTS.md: kept the first ").unwrap();
    let (numbers, tail) = rest.split_once(" …]\n\n").unwrap();
    let h: usize = numbers.split(' ').next().unwrap().parse().unwrap();
    assert_eq!(head.chars().count(), h);
    assert!(text.starts_with(head) && text.ends_with(tail));
    assert!(numbers.contains("of 20001 characters"), "{numbers}");
    assert!(built.diagnostics.iter().any(|d| d.code == "file_truncated" && d.message.contains("AGENTS.md")));
}

#[test]
fn caps_smaller_than_the_marker_are_still_respected() {
    for cap in [0, 1, 5, 12, 30, 60] {
        let agent = Agent::new();
        agent.config(&caps(cap, 10_000)).file("AGENTS.md", &"ü".repeat(500));
        let built = agent.build(&turn());
        let f = injected(&built, "AGENTS.md");
        assert!(f.injected_chars <= cap, "cap {cap}: injected {}", f.injected_chars);
        assert!(f.truncated);
    }
}

#[test]
fn the_total_file_cap_bounds_all_files_together() {
    let agent = Agent::new();
    agent.config(&caps(1_000, 1_500));
    for name in ["AGENTS.md", "SOUL.md", "IDENTITY.md", "TOOLS.md", "MEMORY.md", "USER.md"] {
        agent.file(name, &format!("{name} ").repeat(150));
    }
    let built = agent.build(&turn());
    let total: usize = built.files.iter().map(|f| f.injected_chars).sum();
    assert!(total <= 1_500, "{total}");
    assert!(built.files.iter().all(|f| f.injected_chars <= 1_000));
    assert!(injected(&built, "MEMORY.md").truncated, "later stable files absorb the total cap");
}

const HEAVY_CONFIG: &str = "[agent]\nid = \"heavy\"\n[sandbox]\nenabled = true\n[provider]\nmodel = \"gpt-4o\"\n";

/// An agent much larger than a small budget: big files, many skills, a long extra prompt.
fn heavy() -> (Agent, Turn) {
    let agent = Agent::new();
    agent.config(HEAVY_CONFIG);
    agent.file("AGENTS.md", &"Rule: always double-check the relay state before flashing. ".repeat(300));
    agent.file("MEMORY.md", &"2026-01-01: the supplier in Osaka prefers email. ".repeat(200));
    agent.file("SOUL.md", &"Calm and precise. ".repeat(100));
    agent.file("USER.md", &"Ines likes short answers. ".repeat(100));
    for i in 0..40 {
        agent.skill(
            &format!("skill-{i:02}"),
            &format!("Does task number {i} with care and a long description to make it heavy."),
        );
    }
    let turn = Turn {
        extra: Some("Context from the caller. ".repeat(200)),
        tools: Some(tools(&["exec", "read", "write"]).into()),
        ..turn()
    };
    (agent, turn)
}

fn protected_bodies(b: &proem::Built) -> Vec<(String, usize)> {
    b.sections
        .iter()
        .filter(|s| ["identity", "tooling", "safety", "workspace"].contains(&s.id.as_str()))
        .map(|s| (s.id.clone(), s.chars))
        .collect()
}

#[test]
fn the_budget_is_never_exceeded_and_protected_sections_stay_whole() {
    let (agent, base) = heavy();
    let assembler = agent.assembler();
    let full = assembler.build(&Turn { budget: Some(1_000_000), ..base.clone() }).unwrap();
    assert!(full.tokens.total > 8_000, "the fixture must be heavy: {}", full.tokens.total);
    let protected = protected_bodies(&full);
    assert_eq!(protected.len(), 4);
    let bpe = tiktoken_rs::o200k_base_singleton();
    let mut fitted = 0;
    let mut refused = 0;
    for budget in (50..full.tokens.total + 200).step_by(97) {
        match assembler.build(&Turn { budget: Some(budget), ..base.clone() }) {
            Ok(b) => {
                let exact = bpe.encode_ordinary(&b.prompt).len();
                assert_eq!(exact, b.tokens.total, "reported count is exact");
                assert!(exact <= budget, "budget {budget} exceeded: {exact}");
                assert_eq!(protected_bodies(&b), protected, "budget {budget}");
                assert_eq!(b.prompt.matches(proem::BOUNDARY_MARKER).count(), 1);
                fitted += 1;
            }
            Err(ProemError::BudgetTooSmall { needed, budget: b, over }) => {
                assert_eq!(b, budget);
                assert!(needed > budget && over == needed - budget);
                refused += 1;
            }
            Err(e) => panic!("budget {budget}: unexpected error {e}"),
        }
    }
    assert!(fitted > 50 && refused >= 1, "fitted {fitted}, refused {refused}");
}

/// Within each part the cuts go extra prompt → skills → files → other
/// optional sections; the stable part is fitted on its own first, so a
/// stable cut never waits for dynamic content to be gone (and the reverse).
#[test]
fn cuts_follow_the_design_order_within_each_part() {
    let (agent, base) = heavy();
    let assembler = agent.assembler();
    let full = assembler.build(&Turn { budget: Some(1_000_000), ..base.clone() }).unwrap();
    let stable_files = ["AGENTS.md", "MEMORY.md", "SOUL.md"];
    let mut seen_stages = std::collections::BTreeSet::new();
    for budget in (800..full.tokens.total).rev().step_by(151) {
        let Ok(b) = assembler.build(&Turn { budget: Some(budget), ..base.clone() }) else { continue };
        let has = |code: &str| b.diagnostics.iter().any(|d| d.code == code);
        let file_cut = |names: &[&str]| {
            b.diagnostics
                .iter()
                .any(|d| d.code == "budget_file_shrunk" && names.iter().any(|n| d.message.starts_with(n)))
        };
        let extra_cut = has("budget_extra_shortened") || has("budget_extra_dropped");
        let skills_cut = has("budget_skills_compact") || has("budget_skills_limited") || has("budget_skills_dropped");
        if file_cut(&stable_files) {
            assert!(has("budget_skills_dropped"), "stable files cut before skills were gone (budget {budget})");
        }
        if file_cut(&["USER.md"]) {
            assert!(has("budget_extra_dropped"), "USER.md cut before the extra prompt was gone (budget {budget})");
        }
        for (stage, on) in [("extra", extra_cut), ("skills", skills_cut), ("files", file_cut(&stable_files))] {
            if on {
                seen_stages.insert(stage);
            }
        }
    }
    assert_eq!(seen_stages.len(), 3, "the sweep reached every stage: {seen_stages:?}");
}

#[test]
fn skills_go_compact_before_they_go_missing() {
    let (agent, base) = heavy();
    let a = agent.assembler();
    let no_extra = Turn { extra: None, ..base };
    let full = a.build(&Turn { budget: Some(1_000_000), ..no_extra.clone() }).unwrap();
    let skills_tokens = full.sections.iter().find(|s| s.id == "skills").unwrap().tokens;
    // The stable part may take the budget less the 2,000-token dynamic
    // reserve: make it a quarter of the skills too small.
    let budget = full.tokens.stable - skills_tokens / 4 + 2_000;
    assert!(budget >= 8_000, "the whole default reserve applies at {budget}");
    let b = a.build(&Turn { budget: Some(budget), ..no_extra }).unwrap();
    let skills = &b.stable[b.stable.find("## Skills").unwrap()..];
    assert!(skills.contains("<skill><name>skill-00</name>"), "compact form");
    assert!(!skills.contains("<description>"));
    assert_eq!(skills.matches("<skill>").count(), 40, "all skills still listed");
    assert!(b.diagnostics.iter().any(|d| d.code == "budget_skills_compact"));
}

#[test]
fn protected_sections_over_budget_fail_with_the_overshoot() {
    let (agent, base) = heavy();
    let err = agent.assembler().build(&Turn { budget: Some(20), mode: Some(Mode::Full), ..base }).unwrap_err();
    let ProemError::BudgetTooSmall { needed, over, .. } = err else { panic!("wrong error: {err}") };
    assert_eq!(over, needed - 20);
    let msg = err.to_string();
    assert!(msg.contains(&format!("{over} over the budget")) && msg.contains("protected sections"), "{msg}");
}

#[test]
fn a_slightly_long_extra_prompt_is_shortened_not_dropped() {
    let (agent, base) = heavy();
    // A small reserve, so the stable part fits as it is and only the extra
    // prompt has to give.
    agent.config(&format!("{HEAVY_CONFIG}[budget]\ndynamic_reserve = 200\n"));
    let a = agent.assembler();
    let full = a.build(&Turn { budget: Some(1_000_000), ..base.clone() }).unwrap();
    let extra_tokens = full.sections.iter().find(|s| s.id == "extra_context").unwrap().tokens;
    let b = a.build(&Turn { budget: Some(full.tokens.total - extra_tokens / 3), ..base.clone() }).unwrap();
    assert!(b.tokens.total <= b.tokens.budget);
    assert!(b.diagnostics.iter().any(|d| d.code == "budget_extra_shortened"), "{:?}", b.diagnostics);
    let extra = b.sections.iter().find(|s| s.id == "extra_context").expect("still present");
    assert!(extra.truncated && extra.tokens < extra_tokens);
    assert!(
        b.dynamic.contains("Context from the caller.") && b.dynamic.contains("[… shortened to fit the token budget]")
    );
    assert_eq!(b.stable, full.stable, "cutting the extra prompt leaves the stable part alone");
    assert!(!b.diagnostics.iter().any(|d| d.code == "budget_cut_stable"));
}
