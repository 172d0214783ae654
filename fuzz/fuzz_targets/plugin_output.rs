//! Plugin output validation: any sections or overlay a plugin returns are
//! refused whole or become neutral, clean sections with valid ids within
//! the caps (`proem_core::fuzz_checks::plugin_output` decodes the bytes).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| proem_core::fuzz_checks::plugin_output(data));
