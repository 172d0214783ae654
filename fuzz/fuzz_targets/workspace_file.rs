//! A bootstrap file with arbitrary bytes goes through the real loader:
//! within its cap, no `\r`, no marker, no reserved tag
//! (`proem_core::fuzz_checks::workspace_file`; the first two bytes are the cap).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| proem_core::fuzz_checks::workspace_file(data));
