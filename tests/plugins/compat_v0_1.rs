//! Plugins built against API 0.1 keep working: the prebuilt binaries in
//! tests/fixtures/v0_1/ (never rebuilt) load in today's host and give the
//! same prompt bytes as the same plugins built from source.

use crate::common::*;
use proem::Turn;
use proem_wasm::binary;
use sha2::{Digest, Sha256};
use std::path::PathBuf;

fn fixture_path(file: &str) -> PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/v0_1").join(file)
}

fn fixture_bytes(file: &str) -> Vec<u8> {
    std::fs::read(fixture_path(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
}

#[test]
fn the_binaries_are_the_ones_recorded_and_say_api_0_1() {
    let readme = std::fs::read_to_string(fixture_path("README.md")).unwrap();
    for file in ["hardware_access.wasm", "gpt5_overlay.wasm", "aieos_identity.wasm", "proem_fixture_guest.wasm"] {
        let bytes = fixture_bytes(file);
        let digest: String = Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
        assert!(readme.contains(&format!("| {file} |")) && readme.contains(&digest), "{file} changed: {digest}");
        assert!(binary::check(&bytes).unwrap().starts_with("0.1"), "{file}");
    }
}

/// An agent with one official plugin, from the embedded build or from the
/// 0.1 binary copied into its plugins/ folder.
fn official(id: &str, file: &str, from_fixture: bool, extra: &str) -> Agent {
    let entry = if from_fixture {
        format!("[[plugins]]\nid = \"{id}\"\npath = \"plugins/{file}\"\n{TEST_DEADLINE}\n{extra}\n")
    } else {
        builtin(id, extra)
    };
    let agent = Agent::with_plugins(&entry);
    agent.bytes(&format!("plugins/{file}"), &fixture_bytes(file));
    agent.file(
        "aieos.json",
        &std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../plugins/aieos-identity/tests/docs/v1.1-nested.json"),
        )
        .unwrap(),
    );
    agent
}

#[test]
fn official_plugins_built_against_0_1_give_identical_bytes() {
    let turns = [
        Turn { tools: Some(tools(&["gpio_write", "i2c_scan", "shell"]).into()), ..turn() },
        Turn { model: Some("openai/gpt-5.1".into()), provider: Some("openai".into()), ..turn() },
        Turn { model: Some("claude-sonnet-4".into()), channel: Some("telegram".into()), ..turn() },
    ];
    let plugins = [
        ("hardware-access", "hardware_access.wasm", ""),
        ("gpt5-overlay", "gpt5_overlay.wasm", ""),
        // Every field: the 0.1 binary predates `fields` (and ignores it);
        // `fields = "all"` is its rendering.
        ("aieos-identity", "aieos_identity.wasm", "grants = [\"workspace-read\"]\nconfig = { fields = \"all\" }"),
    ];
    for (id, file, extra) in plugins {
        let built_now = official(id, file, false, extra);
        let from_0_1 = official(id, file, true, extra);
        for turn in &turns {
            let a = built_now.build(turn);
            let b = from_0_1.build(turn);
            assert_eq!(plugin_status(&b, id), "ok", "{id}: {:?}", b.diagnostics);
            assert_eq!(a.prompt, b.prompt, "{id}: the 0.1 binary gives the same bytes");
        }
    }
}

#[test]
fn the_0_1_test_guest_still_behaves_and_is_still_contained() {
    let agent =
        Agent::with_plugins(&fixture("old", "sections", "text = \"from 0.1\"").replace("fixture.wasm", "old.wasm"));
    agent.bytes("plugins/old.wasm", &fixture_bytes("proem_fixture_guest.wasm"));
    let built = agent.build(&turn());
    assert_eq!(plugin_status(&built, "old"), "ok", "{:?}", built.diagnostics);
    assert!(built.prompt.contains("## Fixture\nfrom 0.1"));
    let panicking = Agent::with_plugins(&fixture("old", "panic", "").replace("fixture.wasm", "old.wasm"));
    panicking.bytes("plugins/old.wasm", &fixture_bytes("proem_fixture_guest.wasm"));
    let built = panicking.build(&turn());
    assert_eq!(plugin_status(&built, "old"), "trapped");
}
