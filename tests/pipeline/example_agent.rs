//! The shipped example agent builds as the README promises, and its prompt
//! matches a golden file a person has read (tests/golden/marlow.txt).
//! After an intended wording change: `PROEM_BLESS=1 cargo test --test example_agent`,
//! then read the diff before committing it.

use crate::common::*;
use proem::{Assembler, ChatKind, Turn};

fn marlow_turn() -> Turn {
    Turn {
        channel: Some("telegram".into()),
        chat_kind: Some(ChatKind::Group),
        group_title: Some("Okafor Lab".into()),
        extra: Some("Jonas asked which I2C address the SCD41 uses.".into()),
        timezone: Some("Europe/Berlin".into()),
        ..turn()
    }
}

#[test]
fn the_example_agent_is_realistic_and_builds() {
    let assembler = Assembler::open(&example_dir(), None).unwrap();
    let built = assembler.build(&marlow_turn()).unwrap();
    let agents = built.files.iter().find(|f| f.name == "AGENTS.md").unwrap();
    assert!(agents.truncated && agents.raw_chars > 10_000, "AGENTS.md is large enough to be cut");
    assert!(built.stable.matches("<skill>").count() >= 20);
    let tooling = built.sections.iter().find(|s| s.id == "tooling").unwrap();
    assert!(tooling.chars > 1_000);
    assert!(built.stable.lines().filter(|l| l.starts_with("- ") && l.contains(": ")).count() >= 25);
    for sample in ["田中 さくら", "Дмитрий", "Γιώργος", "السلام عليكم", "🧭"] {
        assert!(built.prompt.contains(sample), "{sample}");
    }
    assert_eq!(built.tokenizer, "o200k_base");
    assert!(built.tokens.total <= built.tokens.budget);
}

#[test]
fn the_example_prompt_matches_the_golden_file() {
    let dir = example_dir();
    let built = Assembler::open(&dir, None).unwrap().build(&marlow_turn()).unwrap();
    let root = std::fs::canonicalize(&dir).unwrap();
    let os = format!("os={} ({})", std::env::consts::OS, std::env::consts::ARCH);
    let normalised = built.prompt.replace(root.to_str().unwrap(), "<AGENT_DIR>").replace(&os, "os=<OS>");
    let golden = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/golden/marlow.txt");
    if std::env::var_os("PROEM_BLESS").is_some() {
        std::fs::write(&golden, &normalised).unwrap();
    }
    let expected = std::fs::read_to_string(&golden).expect("golden file exists");
    assert!(
        normalised == expected,
        "prompt differs from {}; run with PROEM_BLESS=1 and review the diff",
        golden.display()
    );
}
