//! Stable-hash diagnostics (issue 30, item 6): a report's `stable_inputs`
//! and `proem diff A.json B.json` name the section and the input (file,
//! config table, skills, tools) that moved the stable hash, and only that.

use crate::common::*;
use proem::{Built, Turn};
use proem_core::stable_inputs::{diff, Cause};
use proptest::prelude::*;
use std::process::Command;

/// One change of a stable input, and what the diff must say about it.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Edit {
    File,
    Config,
    Skill,
    Tool,
    Nothing,
}

fn apply(agent: &Agent, edit: Edit, n: u32, turn: &mut Turn) {
    match edit {
        Edit::File => {
            agent.file("AGENTS.md", &format!("# Agents\nRule number {n}."));
        }
        Edit::Config => {
            agent.config(&format!("[agent]\nname = \"Marlow {n}\"\n"));
        }
        Edit::Skill => {
            agent.skill(&format!("skill-{n}"), "Does a new thing.");
        }
        Edit::Tool => turn.tools = Some(vec![tool(&format!("tool_{n}"))].into()),
        Edit::Nothing => {}
    }
}

fn expected(edit: Edit) -> Option<(Cause, &'static str)> {
    match edit {
        Edit::File => Some((Cause::File, "file:AGENTS.md")),
        Edit::Config => Some((Cause::Config, "config:[agent]")),
        Edit::Skill => Some((Cause::Skills, "skills")),
        Edit::Tool => Some((Cause::Tools, "tools")),
        Edit::Nothing => None,
    }
}

fn fresh_build(agent: &Agent, turn: &Turn) -> Built {
    // A new assembler per build: the config is read when one is made.
    agent.build(turn)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Whichever stable input changes, the diff's cause is its kind and the
    /// input is named (under its section for a file); with no change, the
    /// hash and every digest stay.
    #[test]
    fn the_diff_names_the_input_that_moved_the_stable_hash(
        edit in prop_oneof![Just(Edit::File), Just(Edit::Config), Just(Edit::Skill), Just(Edit::Tool), Just(Edit::Nothing)],
        n in 0u32..1000,
    ) {
        let agent = Agent::new();
        agent.with_standard_files().config("[agent]\nname = \"Marlow\"\n");
        let mut t = turn();
        let before = fresh_build(&agent, &t);
        apply(&agent, edit, n, &mut t);
        let after = fresh_build(&agent, &t);
        let found = diff(&before.stable_hash, &before.stable_inputs, &after.stable_hash, &after.stable_inputs);
        match (expected(edit), found) {
            (None, None) => prop_assert_eq!(&before.stable_inputs, &after.stable_inputs),
            (Some((cause, input)), Some((found_cause, changes))) => {
                prop_assert_eq!(found_cause, cause, "{:?}", changes);
                let named = changes.iter().find(|c| c.input == input);
                prop_assert!(named.is_some(), "{} not among {:?}", input, changes);
                if edit == Edit::File {
                    prop_assert_eq!(named.unwrap().section.as_str(), "core/project_context");
                }
                // Nothing unrelated is blamed: no other config table, no file.
                for c in &changes {
                    prop_assert!(c.input == input || c.input == "body", "{:?} blamed for {:?}", c, edit);
                }
            }
            (want, got) => prop_assert!(false, "expected {:?}, got {:?}", want, got),
        }
    }
}

#[test]
fn proem_diff_prints_the_section_and_the_input_from_two_json_reports() {
    let agent = Agent::new();
    agent.with_standard_files();
    let dir = agent.path().to_str().unwrap();
    let reports = tempfile::tempdir().unwrap();
    let build = |name: &str| {
        let out = Command::new(front())
            .args(["build", dir, "--now", "2026-11-21T09:30:00Z", "--format", "json"])
            .output()
            .expect("runs");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let path = reports.path().join(name);
        std::fs::write(&path, &out.stdout).unwrap();
        path
    };
    let a = build("a.json");
    agent.file("SOUL.md", "# Soul\nA different soul.");
    let b = build("b.json");
    let out = Command::new(front()).arg("diff").arg(&a).arg(&b).output().expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("stable hash changed") && text.contains("cause: file"), "{text}");
    assert!(text.contains("core/persona\tfile:SOUL.md"), "{text}");
    assert!(!text.contains("AGENTS.md"), "an unchanged file is not named: {text}");
    let same = Command::new(front()).arg("diff").arg(&a).arg(&a).output().expect("runs");
    assert!(String::from_utf8_lossy(&same.stdout).contains("stable hash unchanged"));
    // Not a report: the error names the file and how to make one.
    std::fs::write(reports.path().join("x.json"), "[1]").unwrap();
    let bad = Command::new(front()).arg("diff").arg(&a).arg(reports.path().join("x.json")).output().expect("runs");
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(!bad.status.success() && err.contains("x.json") && err.contains("--format json"), "{err}");
}
