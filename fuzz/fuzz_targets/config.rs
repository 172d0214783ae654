//! proem.toml parsing: any text gives a Config or an error that names the
//! file; never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(source) = std::str::from_utf8(data) else { return };
    if let Err(e) = proem_core::Config::parse(source, Path::new("proem.toml")) {
        let message = e.to_string();
        assert!(message.contains("proem.toml"), "error without the file name: {message}");
    }
});
