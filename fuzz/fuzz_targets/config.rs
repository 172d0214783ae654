//! proem.toml parsing: any text gives a Config or an error that names the
//! file; never a panic (`proem_core::fuzz_checks::config`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| proem_core::fuzz_checks::config(data));
