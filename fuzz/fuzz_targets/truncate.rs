//! Head/tail truncation: never over the cap, never splits a character,
//! head and tail kept exactly (`proem_core::fuzz_checks::truncate`; two
//! bytes of cap, two of ratios, then the text).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| proem_core::fuzz_checks::truncate(data));
