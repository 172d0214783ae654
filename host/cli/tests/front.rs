//! `proem`, the front executable, links no plugin runtime: its package's
//! dependencies make that so (`cargo tree -p proem-cli` has no wasmtime),
//! and this test reads the executable itself to be sure. (Having a test
//! here also makes `cargo test` build `proem` beside `proem-full`, which
//! the workspace's integration tests run.)

use std::process::Command;

const FRONT: &str = env!("CARGO_BIN_EXE_proem");

#[test]
fn the_front_executable_carries_no_plugin_runtime() {
    let bytes = std::fs::read(FRONT).unwrap();
    for engine in ["wasmtime", "cranelift", "winch", "wasmparser", "axum", "oci_client"] {
        let found = bytes.windows(engine.len()).any(|w| w == engine.as_bytes());
        assert!(!found, "{FRONT} contains {engine:?}: something in proem-cli's dependencies links it");
    }
}

#[test]
fn the_front_executable_answers_version_and_help_itself() {
    let version = Command::new(FRONT).arg("--version").output().unwrap();
    assert!(version.status.success());
    assert!(String::from_utf8_lossy(&version.stdout).starts_with("proem "), "{version:?}");
    let help = Command::new(FRONT).arg("--help").output().unwrap();
    let text = String::from_utf8_lossy(&help.stdout);
    for command in ["build", "inspect", "serve", "plugin", "plugins"] {
        assert!(text.contains(command), "--help lists {command}: {text}");
    }
}
