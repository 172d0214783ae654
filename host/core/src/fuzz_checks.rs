//! The bodies of the cargo-fuzz targets (`fuzz/`), callable from ordinary
//! tests: each takes the raw bytes libFuzzer gives and panics when an
//! invariant breaks. The fuzz targets call them, and `tests/security/fuzz_corpus.rs`
//! replays the committed corpora (`fuzz/corpus/<target>/`) through them in
//! every test run, so a crash once found stays fixed without cargo-fuzz.
//! Not part of the library's API.

use crate::bootstrap::{inject, load};
use crate::mode::{Mode, SessionKind};
use crate::plugin::hooks::{self, OutputCaps, RawOverlay, RawSection, RawSlot};
use crate::section::{Section, Zone};
use crate::workspace::Workspace;
use crate::{Config, BOUNDARY_MARKER};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

/// A target's check: panics when an invariant breaks on these bytes.
pub type Check = fn(&[u8]);

/// Every target's name and check (the `aieos` target's check lives in the
/// aieos-identity plugin crate, which the host does not depend on).
pub const TARGETS: [(&str, Check); 5] = [
    ("config", config),
    ("workspace_file", workspace_file),
    ("truncate", truncate),
    ("reserved_tags", reserved_tags),
    ("plugin_output", plugin_output),
];

/// proem.toml parsing: any text gives a Config or an error that names the
/// file; never a panic.
pub fn config(data: &[u8]) {
    let Ok(source) = std::str::from_utf8(data) else { return };
    if let Err(e) = Config::parse(source, Path::new("proem.toml")) {
        let message = e.to_string();
        assert!(message.contains("proem.toml"), "error without the file name: {message}");
    }
}

/// A bootstrap file with arbitrary bytes (after a 2-byte cap) goes through
/// the real loader (capability-scoped read, decoding, front matter,
/// newlines, caps, neutralisation): never a panic; the file is either
/// reported as unusable or injected within its cap, with no `\r`, no
/// marker and no wrapper tag.
pub fn workspace_file(data: &[u8]) {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    let mut input = Input(data);
    let cap = input.u16();
    let dir = DIR.get_or_init(|| tempfile::tempdir().expect("temp dir"));
    // One file per thread: replaying tests may run side by side.
    let thread = format!("{:?}", std::thread::current().id()).replace(|c: char| !c.is_ascii_digit(), "");
    let name = format!("FUZZ-{thread}.md");
    let mut config = Config::default();
    config.bootstrap.max_file_bytes = 4096;
    config.bootstrap.extra_files = vec![name.clone()];
    config.budget.per_file_chars = usize::from(cap) % 2048;
    std::fs::write(dir.path().join(&name), input.rest()).expect("write");
    let ws = Workspace::open(dir.path()).expect("workspace");
    let files = load(&ws, &config, SessionKind::Main, false, &mut Vec::new()).expect("no descriptor runs out here");
    for file in inject(&files, Mode::Full, &config, &BTreeMap::new(), "/workspace") {
        assert!(file.text.chars().count() <= config.budget.per_file_chars);
        assert!(!file.text.contains('\r'));
        assert!(!file.text.contains(BOUNDARY_MARKER));
        assert!(!holds_reserved_tag(&file.text), "{:?}", file.text);
    }
}

/// Head/tail truncation (a 2-byte cap, two ratio bytes, then the text):
/// never over the cap, never splits a character, keeps the first
/// `head_chars` and last `tail_chars` characters of the original exactly.
pub fn truncate(data: &[u8]) {
    let mut input = Input(data);
    let cap = usize::from(input.u16()) % 4096;
    let head_ratio = f64::from(input.u8()) / 255.0;
    let tail_ratio = (f64::from(input.u8()) / 255.0).min(1.0 - head_ratio);
    let Ok(text) = std::str::from_utf8(input.rest()) else { return };
    let out = crate::truncate::head_tail(text, cap, head_ratio, tail_ratio, "FILE.md");
    let chars: Vec<char> = text.chars().collect();
    let out_len = out.text.chars().count();
    assert_eq!(out.raw_chars, chars.len());
    if !out.truncated {
        assert_eq!(out.text, text);
        return;
    }
    assert!(out_len <= cap, "{out_len} chars over the cap {cap}");
    let head: String = chars[..out.head_chars].iter().collect();
    let tail: String = chars[chars.len() - out.tail_chars..].iter().collect();
    assert!(out.text.starts_with(&head), "head not kept exactly");
    assert!(out.text.ends_with(&tail) || out.tail_chars == 0, "tail not kept exactly");
    assert!(out.head_chars + out.tail_chars < chars.len());
}

/// The reserved-tag rule: whatever the text, once neutralised no reserved
/// tag can be read in it, even in NFKC form with every character a model
/// reads past removed, and no boundary keyword is left.
pub fn reserved_tags(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let safe = crate::text::neutralize(text);
    assert!(!holds_reserved_tag(&safe), "{text:?} -> {safe:?}");
    assert!(!safe.to_ascii_lowercase().contains("proem_cache_boundary"));
    assert_eq!(crate::text::neutralize(&safe), safe, "neutralising is idempotent");
}

/// Plugin output validation: any sections or overlay a plugin can return
/// either is refused whole or becomes sections whose bodies hold no control
/// character but newline and tab, no boundary marker and no reserved tag,
/// within the caps, with ids from the small alphabet.
pub fn plugin_output(data: &[u8]) {
    const CAPS: OutputCaps = OutputCaps { max_bytes: 4096, max_items: 8 };
    let anchors = ["identity", "safety", "tooling", "time", "nope"];
    let mut input = Input(data);
    let raw: Vec<RawSection> = (0..input.u8() % 10)
        .map(|_| {
            let id = input.string();
            let slot = input.u8();
            let anchor = input.string();
            let anchor = if anchor.len() % 2 == 0 { anchors[anchor.len() % anchors.len()].to_string() } else { anchor };
            RawSection {
                id,
                slot: match slot % 3 {
                    0 => RawSlot::Before(anchor),
                    1 => RawSlot::After(anchor),
                    _ => RawSlot::Replace(anchor),
                },
                zone: if input.u8() % 2 == 0 { Zone::Stable } else { Zone::Dynamic },
                priority: i32::from(input.u16() as i16),
                modes: Vec::new(),
                body: input.string(),
                max_tokens: None,
            }
        })
        .collect();
    let replacements = (0..input.u8() % 6).map(|_| (input.string(), input.string())).collect();
    let stable_prefix = (input.u8() % 2 == 1).then(|| input.string());
    let dynamic_suffix = (input.u8() % 2 == 1).then(|| input.string());
    let mut diagnostics = Vec::new();
    let check = |sections: &[Section]| {
        for s in sections {
            assert!(
                hooks::check_id(&s.id).is_ok() || s.id == hooks::STABLE_PREFIX_ID || s.id == hooks::DYNAMIC_SUFFIX_ID
            );
            assert!(s.body.len() <= CAPS.max_bytes * 4, "neutralising grows a body by a bounded amount");
            assert!(!s.body.chars().any(|c| c.is_control() && c != '\n' && c != '\t'), "{:?}", s.body);
            assert_eq!(crate::text::neutralize(&s.body), s.body, "already neutral");
        }
    };
    if let Ok(sections) = hooks::validate_sections("fuzz", raw, CAPS, &mut diagnostics) {
        check(&sections);
    }
    let overlay = RawOverlay { replacements, stable_prefix, dynamic_suffix };
    if let Ok(sections) = hooks::validate_overlay("fuzz", overlay, CAPS, &mut diagnostics) {
        check(&sections);
    }
}

/// Whether a text holds a reserved tag as a model reads it: NFKC form,
/// every default-ignorable, format, control, whitespace and combining
/// character removed, case ignored. Independent of the rule in `text.rs`
/// (regex's Unicode classes, not the tables build.rs writes).
pub fn holds_reserved_tag(text: &str) -> bool {
    use regex_automata::meta::Regex;
    use unicode_normalization::UnicodeNormalization;
    static HIDDEN: OnceLock<Regex> = OnceLock::new();
    static TAG: OnceLock<Regex> = OnceLock::new();
    let hidden = HIDDEN.get_or_init(|| {
        Regex::new(r"[\p{Default_Ignorable_Code_Point}\p{Cf}\p{Cc}\p{White_Space}\p{M}]").expect("a valid class")
    });
    let tag = TAG.get_or_init(|| {
        Regex::new(r"</?(context_file|internal_config|extra_context|available_skills|plugin_section)([^a-z0-9_-]|$)")
            .expect("a valid pattern")
    });
    let without_hidden = |text: &str| {
        let mut kept = String::with_capacity(text.len());
        let mut last = 0;
        for found in hidden.find_iter(text) {
            kept.push_str(&text[last..found.start()]);
            last = found.end();
        }
        kept.push_str(&text[last..]);
        kept
    };
    let folded_first = without_hidden(&text.nfkc().collect::<String>()).to_ascii_lowercase();
    let dropped_first = without_hidden(text).nfkc().collect::<String>().to_ascii_lowercase();
    tag.is_match(&folded_first) || tag.is_match(&dropped_first)
}

/// The fuzzer's bytes read front to back; past the end, zeros and empty
/// strings (every input decodes to something).
struct Input<'a>(&'a [u8]);

impl<'a> Input<'a> {
    fn take(&mut self, n: usize) -> &'a [u8] {
        let n = n.min(self.0.len());
        let (taken, rest) = self.0.split_at(n);
        self.0 = rest;
        taken
    }

    fn u8(&mut self) -> u8 {
        self.take(1).first().copied().unwrap_or(0)
    }

    fn u16(&mut self) -> u16 {
        let bytes = self.take(2);
        u16::from_le_bytes([bytes.first().copied().unwrap_or(0), bytes.get(1).copied().unwrap_or(0)])
    }

    /// A length byte, then that many bytes as text (invalid UTF-8 replaced).
    fn string(&mut self) -> String {
        let len = usize::from(self.u8());
        String::from_utf8_lossy(self.take(len)).into_owned()
    }

    fn rest(&mut self) -> &'a [u8] {
        self.take(self.0.len())
    }
}
