//! Per-turn inputs never reach the stable part, for every plugin API
//! version (issue 24, item 6; docs/SECURITY.md §2b).
//!
//! A 0.1 hook is called twice, on a blank turn for what it puts above the
//! cache boundary and on the turn for what goes below; a stable or
//! bootstrap call granted `workspace-read` sees the workspace without its
//! per-turn files, under any name or link, with fixed times
//! (`plugin/workspace_fs.rs`). Here plugins of both versions try every way
//! to put the turn into the stable part, and the stable hash never moves.

use crate::common::*;
use proem::{Built, ChatKind, Turn};
use proptest::prelude::*;
use std::path::Path;

/// The 0.1 test guest, built against API 0.1 and never rebuilt.
fn guest_0_1() -> Vec<u8> {
    std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/v0_1/proem_fixture_guest.wasm"))
        .unwrap()
}

/// The names and links the probes try, one per kind of way to a per-turn
/// file: its name, other spellings of it (case, blanks, a trailing dot),
/// paths through `.`, `..` and a folder, symlinks to it, a copy in a
/// subfolder, and ways out of the workspace.
const PATHS: &str = "USER.md,user.md,User.Md, USER.md,USER.md.,HEARTBEAT.md,BOOTSTRAP.md,./USER.md,\
                     notes/../USER.md,notes/USER.md,link-user,link-heartbeat,loop/USER.md,loop/link-user,\
                     notes/up-user,..,../USER.md,/workspace/USER.md,link-user/x,link-user/..,\
                     link-user/../notes/keep.md,loop/link-user/x,via,via/x,notes/up-user/x";

/// The per-turn files the property writes, creates and deletes (and two
/// files only a case-insensitive filesystem would take for USER.md).
const PER_TURN: [&str; 5] = ["USER.md", "HEARTBEAT.md", "user.md", "notes/USER.md", "notes/Heartbeat.MD"];

/// The `[[plugins]]` entry of the 0.1 guest at plugins/old.wasm.
fn old(id: &str, behave: &str, extra: &str) -> String {
    fixture(id, behave, extra).replace("fixture.wasm", "old.wasm")
}

fn granted(entry: String) -> String {
    entry.replace("path =", "grants = [\"workspace-read\"]\npath =")
}

/// An agent whose plugins try every way to put a per-turn input above the
/// boundary: 0.1 hooks that print the clock and the turn's time, read
/// USER.md and rewrite files; 0.2 stable and bootstrap hooks that list and
/// read the whole workspace and try [`PATHS`]; and, as the control that
/// proves the probe can see, a 0.2 turn hook probing the same way below
/// the boundary.
fn agent() -> Agent {
    let probe = format!("paths = \"{PATHS}\"");
    let plugins = [
        old("old-clock", "clock", ""),
        granted(old("old-read", "probe_fs", "absolute = \"/workspace/USER.md\"")),
        old("old-boot", "bootstrap", "text = \"Soul from 0.1.\""),
        granted(fixture("probe", "probe_workspace", &probe)),
        granted(fixture("boot", "bootstrap_probe", &probe)),
        granted(fixture("turn-probe", "probe_workspace", &format!("{probe}, zone = \"dynamic\""))),
    ]
    .concat();
    let agent = Agent::with_plugins(&plugins);
    agent.bytes("plugins/old.wasm", &guest_0_1());
    agent.file("BOOTSTRAP.md", "# Bootstrap\nSay hello.").file("notes/keep.md", "kept");
    for (link, target) in [
        ("link-user", "USER.md"),
        ("link-heartbeat", "HEARTBEAT.md"),
        ("loop", "."),
        ("notes/up-user", "../USER.md"),
        // A per-turn file as a folder on the way: `lnk/x` answers "not a
        // directory" while USER.md exists and "no entry" while it does
        // not, unless the stable view resolves as if it never did.
        ("via", "link-user/.."),
    ] {
        std::os::unix::fs::symlink(target, agent.path().join(link)).unwrap();
    }
    agent
}

/// A change to one per-turn file.
#[derive(Debug, Clone)]
enum Edit {
    /// Deleted (or never made).
    Absent,
    /// Written in place (the same file, a new size and time).
    Write(String),
    /// Written beside it and renamed over it (a new file), as editors save.
    Replace(String),
}

fn edit() -> impl Strategy<Value = Edit> {
    let text = "[a-zA-Z0-9 \n#]{0,300}";
    prop_oneof![Just(Edit::Absent), text.prop_map(Edit::Write), text.prop_map(Edit::Replace)]
}

fn apply(agent: &Agent, name: &str, edit: &Edit, mtime: u64) {
    let path = agent.path().join(name);
    let set_time = |path: &Path| {
        let time = std::time::UNIX_EPOCH + std::time::Duration::from_secs(mtime);
        std::fs::File::options().write(true).open(path).unwrap().set_modified(time).unwrap();
    };
    match edit {
        Edit::Absent => {
            let _ = std::fs::remove_file(&path);
        }
        Edit::Write(text) => {
            std::fs::write(&path, text).unwrap();
            set_time(&path);
        }
        Edit::Replace(text) => {
            let beside = path.with_extension("tmp-edit");
            std::fs::write(&beside, text).unwrap();
            set_time(&beside);
            std::fs::rename(&beside, &path).unwrap();
        }
    }
}

fn turn_of(channel: Option<String>, group: bool, title: String, extra: String, minute: u32, zone: &str) -> Turn {
    Turn {
        channel,
        chat_kind: Some(if group { ChatKind::Group } else { ChatKind::Direct }),
        group_title: Some(title),
        extra: Some(extra),
        now: Some(proem_core::turn::parse_now(&format!("2026-12-01T17:{minute:02}:00+05:30")).unwrap()),
        timezone: Some(zone.into()),
        ..big_budget()
    }
}

/// The fixed turn with room for every probe: no section is cut to fit.
fn big_budget() -> Turn {
    Turn { budget: Some(200_000), ..turn() }
}

/// Every plugin answered, and each probe is where it belongs: a build
/// that lost a plugin would pass the property without testing it.
fn assert_probes_ran(built: &Built) {
    for id in ["old-clock", "old-read", "old-boot", "probe", "boot", "turn-probe"] {
        assert_eq!(plugin_status(built, id), "ok", "{id}: {:?}", built.diagnostics);
    }
    assert!(built.stable.contains("## Workspace probe\nroot: "), "the stable hook's probe");
    assert!(built.stable.contains("PROBE.md"), "the bootstrap hook's probe");
    assert!(built.stable.contains("absolute: "), "the 0.1 read");
    assert!(built.stable.contains("## Fixture\nclock "), "the 0.1 clock");
    assert!(built.dynamic.contains("## Workspace probe\nroot: "), "the turn hook's probe");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn the_stable_hash_never_moves_whatever_the_turn_and_the_per_turn_files(
        turns in prop::collection::vec(
            (prop::option::of("[a-z]{1,8}"), any::<bool>(), "[ -~]{0,20}", "[ -~]{0,40}", 0u32..60,
             prop::sample::select(vec!["UTC", "Asia/Kolkata", "America/New_York"])),
            2..4),
        // BOOTSTRAP.md stays (its being there or empty shows in the stable
        // part by design: the first-run notice); only its text changes.
        edits in prop::collection::vec((prop::array::uniform5(edit()), 1u64..2_000_000_000, "[a-z]{1,8}[a-z ]{0,30}"), 2..4),
    ) {
        let agent = agent();
        let mut first: Option<(String, String)> = None;
        for ((files, mtime, bootstrap), (channel, group, title, extra, minute, zone)) in edits.iter().zip(&turns) {
            for (name, edit) in PER_TURN.iter().zip(files) {
                apply(&agent, name, edit, *mtime);
            }
            std::fs::write(agent.path().join("BOOTSTRAP.md"), bootstrap).unwrap();
            let built = agent.build(&turn_of(channel.clone(), *group, title.clone(), extra.clone(), *minute, zone));
            assert_probes_ran(&built);
            // The control: below the boundary the same probe reads USER.md
            // whenever it exists, so the stable probes could have seen it.
            let user_exists = !matches!(files[0], Edit::Absent);
            prop_assert_eq!(user_exists, built.dynamic.contains("\"USER.md\": read "));
            match &first {
                None => first = Some((built.stable_hash.clone(), built.stable.to_string())),
                Some((hash, stable)) => {
                    prop_assert_eq!(stable.as_str(), &*built.stable);
                    prop_assert_eq!(hash, &built.stable_hash);
                }
            }
        }
    }
}

#[test]
fn a_0_1_plugin_is_called_on_a_blank_turn_for_the_stable_part_and_on_the_turn_below() {
    let agent = Agent::with_plugins(
        &[
            old("above", "clock", ""),
            old("below", "clock", "zone = \"dynamic\", id = \"later\""),
            old("old-boot", "bootstrap", "text = \"Soul from 0.1.\""),
        ]
        .concat(),
    );
    agent.bytes("plugins/old.wasm", &guest_0_1());
    let built = agent.build(&turn());
    for id in ["above", "below", "old-boot"] {
        assert_eq!(plugin_status(&built, id), "ok", "{:?}", built.diagnostics);
    }
    // Sections: the stable half sees the blank turn and WASI's stable clock.
    let above = built.stable.split("## Fixture\n").nth(1).expect("the stable section").lines().next().unwrap();
    assert!(above.starts_with("clock 0;") && above.ends_with("now 1970-01-01T00:00:00Z"), "{above}");
    let below = built.dynamic.split("## Fixture\n").nth(1).expect("the dynamic section").lines().next().unwrap();
    assert!(below.ends_with("now 2026-11-21T09:30:00+00:00"), "{below}");
    assert!(!built.stable.contains("2026-11-21"), "the turn's time is not above the boundary");
    // Bootstrap: the stable files come from the stable half, the per-turn
    // ones from the half that sees them, and the result is the one call's.
    assert!(built.stable.contains("Soul from 0.1.") && built.stable.contains("Extra file from the fixture."));
    assert!(!built.prompt.contains("started."), "MEMORY.md was dropped");
    assert!(built.dynamic.contains("Likes tea.") && !built.stable.contains("Likes tea."), "USER.md stays below");
    assert_eq!(codes(&built).iter().filter(|c| *c == "file_dropped_by_plugin").count(), 1, "{:?}", built.diagnostics);
}

#[test]
fn a_hard_link_to_a_per_turn_file_is_hidden_from_stable_calls_while_it_is_one() {
    let agent = agent();
    std::fs::hard_link(agent.path().join("USER.md"), agent.path().join("notes/hard")).unwrap();
    let first = agent.build(&big_budget());
    assert_probes_ran(&first);
    assert!(!first.stable.contains("notes/hard"), "not even listed above the boundary: {}", first.stable);
    assert!(first.dynamic.contains("notes/hard (file): read "), "the turn sees it");
    // Written through either name, it is still one file: still hidden.
    std::fs::write(agent.path().join("notes/hard"), "# User\nNow likes coffee, much more of it.").unwrap();
    let second = agent.build(&big_budget());
    assert_eq!(first.stable_hash, second.stable_hash);
    assert!(second.dynamic.contains("Now likes coffee"));
}

/// The loader's own reads: a stable file (SOUL.md, TOOLS.md, an extra
/// file, a skill's SKILL.md) that is a per-turn file under another name
/// (a symlink, a link through a folder, a hard link) reads as missing,
/// whatever the per-turn file holds and whether it exists: the stable part
/// and its hash never move with it, and nothing of it shows above the
/// boundary.
#[test]
fn a_stable_file_that_is_a_per_turn_file_under_another_name_reads_as_missing() {
    let mut next = xorshift(0x5eed_1e55);
    for case in 0..12u64 {
        let agent = Agent::new();
        agent
            .file("AGENTS.md", "# Agents\nBe kind.")
            .file("IDENTITY.md", "- **Name:** Probe")
            .file("notes/keep.md", "kept");
        agent.config("[bootstrap]\nextra_files = [\"PROFILE.md\", \"notes/u.md\"]\n");
        // (BOOTSTRAP.md's presence shows above the boundary by design: the
        // first-run notice; its links are refused the same way.)
        let target = ["USER.md", "HEARTBEAT.md"][(next() % 2) as usize];
        let link = |name: &str, to: &str| {
            let path = agent.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::os::unix::fs::symlink(to, path).unwrap();
        };
        link("SOUL.md", target);
        link("PROFILE.md", &format!("notes/../{target}"));
        link("notes/u.md", &format!("../{target}"));
        link("skills/probe/SKILL.md", &format!("../../{target}"));
        link("dirlink", ".");
        link("TOOLS.md", &format!("dirlink/{target}"));
        let mut seen: Option<(String, String)> = None;
        for round in 0..4u64 {
            let marker = format!("PERTURN{case}x{round}x{}", next() % 1000);
            let path = agent.path().join(target);
            let hard = agent.path().join("MEMORY.md");
            match (round + case) % 4 {
                0 => {
                    let _ = std::fs::remove_file(&path);
                    let _ = std::fs::remove_file(&hard);
                }
                1 | 3 => {
                    std::fs::write(&path, format!("# Per turn\n{marker}")).unwrap();
                    if !hard.exists() {
                        std::fs::hard_link(&path, &hard).unwrap();
                    }
                }
                _ => std::fs::write(&path, format!("# Per turn\n{marker} and more text")).unwrap(),
            }
            let built = agent.build(&big_budget());
            assert!(!built.stable.contains("PERTURN"), "{target} above the boundary:\n{}", built.stable);
            match &seen {
                None => seen = Some((built.stable_hash.clone(), built.stable.to_string())),
                Some((hash, stable)) => {
                    assert_eq!(stable.as_str(), &*built.stable, "case {case} round {round} ({target})");
                    assert_eq!(hash, &built.stable_hash);
                }
            }
            if path.exists() {
                assert!(codes(&built).iter().any(|c| c == "file_per_turn_link"), "said why: {:?}", built.diagnostics);
            }
        }
    }
}
