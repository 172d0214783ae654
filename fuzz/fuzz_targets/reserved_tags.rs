//! The reserved-tag rule: once neutralised, no reserved tag can be read in
//! the text, even in NFKC form with every character a model reads past
//! removed (`proem_core::fuzz_checks::reserved_tags`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| proem_core::fuzz_checks::reserved_tags(data));
