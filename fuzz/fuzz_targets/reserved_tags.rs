//! The reserved-tag rule: whatever the input, once `neutralize` has run, no
//! reserved tag can be read in the text, even after every character a model
//! reads past (default-ignorable, format, control, whitespace, combining) is
//! removed. The check uses regex's Unicode classes, independently of the
//! tables `text.rs` builds.
#![no_main]
use libfuzzer_sys::fuzz_target;

fn holds_reserved_tag(text: &str) -> bool {
    static HIDDEN: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    static TAG: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let hidden = HIDDEN.get_or_init(|| {
        regex::Regex::new(r"[\p{Default_Ignorable_Code_Point}\p{Cf}\p{Cc}\p{White_Space}\p{M}]").unwrap()
    });
    let tag = TAG.get_or_init(|| {
        regex::Regex::new(
            r"</?(context_file|internal_config|extra_context|available_skills|plugin_section)([^a-z0-9_-]|$)",
        )
        .unwrap()
    });
    tag.is_match(&hidden.replace_all(text, "").to_ascii_lowercase())
}

fuzz_target!(|text: &str| {
    let safe = proem_core::text::neutralize(text);
    assert!(!holds_reserved_tag(&safe), "{text:?} -> {safe:?}");
    assert!(!safe.to_ascii_lowercase().contains("proem_cache_boundary"));
});
