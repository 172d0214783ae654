//! The AIEOS renderer: any bytes parse and render within the size cap or
//! give an error, and rendering is deterministic
//! (`aieos_identity::fuzz_check`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| aieos_identity::fuzz_check(data));
