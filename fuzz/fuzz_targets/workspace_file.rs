//! A bootstrap file with arbitrary bytes goes through the real loader
//! (capability-scoped read, decoding, front matter, newlines, caps,
//! neutralisation): never a panic; the file is either reported as unusable
//! or injected within its cap, with no `\r`, no marker and no wrapper tag.
#![no_main]
use libfuzzer_sys::fuzz_target;
use proem_core::bootstrap::{inject, load};
use proem_core::mode::{Mode, SessionKind};
use proem_core::workspace::Workspace;
use proem_core::{Config, BOUNDARY_MARKER};
use std::collections::BTreeMap;
use std::sync::OnceLock;

static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();

fuzz_target!(|input: (u16, &[u8])| {
    let (cap, bytes) = input;
    let dir = DIR.get_or_init(|| tempfile::tempdir().expect("temp dir"));
    std::fs::write(dir.path().join("AGENTS.md"), bytes).expect("write");
    let ws = Workspace::open(dir.path()).expect("workspace");
    let mut config = Config::default();
    config.bootstrap.max_file_bytes = 4096;
    config.budget.per_file_chars = cap as usize % 2048;
    let mut diagnostics = Vec::new();
    let files = load(&ws, &config, SessionKind::Main, false, &mut diagnostics);
    for file in inject(&files, Mode::Full, &config, &BTreeMap::new(), "/workspace") {
        assert!(file.text.chars().count() <= config.budget.per_file_chars);
        assert!(!file.text.contains('\r'));
        assert!(!file.text.contains(BOUNDARY_MARKER));
        assert!(!closes_wrapper(&file.text), "{:?}", file.text);
    }
});

/// A closing `context_file` tag: `</`, optional whitespace, the name, then
/// anything but a name character (`</context_file6` is another tag).
fn closes_wrapper(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    lower.match_indices("</").any(|(i, _)| {
        let rest = lower[i + 2..].trim_start();
        rest.strip_prefix("context_file")
            .is_some_and(|after| !after.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-'))
    })
}
