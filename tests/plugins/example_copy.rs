//! examples/persona-swap is the start of a plugin an author copies out of
//! the repository: copied to a folder of its own, with the one change its
//! README says (`cargo add proem-sdk --path SDK`), it builds for
//! wasm32-wasip2 with its own rust-toolchain.toml and loads in proem.

use crate::common::*;
use std::path::Path;
use std::process::Command;

/// `cargo ARGS` in `dir` as an author runs it: none of the outer build's
/// settings (flags, target dir, the toolchain rustup chose for it), so the
/// crate's own rust-toolchain.toml decides.
fn cargo(dir: &Path, args: &[&str]) -> std::process::Output {
    let mut command = Command::new("cargo");
    command.args(args).current_dir(dir);
    for var in [
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "RUSTC_WORKSPACE_WRAPPER",
        "RUSTUP_TOOLCHAIN",
        "RUSTC",
    ] {
        command.env_remove(var);
    }
    command.output().expect("cargo runs (rustup and cargo are needed to build a plugin)")
}

#[test]
fn persona_swap_builds_when_copied_out_of_the_repository() {
    let example = example("persona-swap");
    let toolchain = std::fs::read_to_string(example.join("rust-toolchain.toml"))
        .expect("examples/persona-swap has its own rust-toolchain.toml");
    assert!(toolchain.contains("wasm32-wasip2"), "{toolchain}");
    let root = std::fs::read_to_string(example.join("../../rust-toolchain.toml")).unwrap();
    let channel = |t: &str| t.lines().find(|l| l.starts_with("channel")).map(str::to_string);
    assert_eq!(channel(&toolchain), channel(&root), "the repository's toolchain");

    // Copied out as its README says: the crate, without the example agent.
    let work = tempfile::tempdir().unwrap();
    let krate = work.path().join("my-plugin");
    std::fs::create_dir_all(krate.join("src")).unwrap();
    for file in ["Cargo.toml", "rust-toolchain.toml", "src/lib.rs"] {
        std::fs::copy(example.join(file), krate.join(file)).unwrap();
    }
    let sdk = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sdk").canonicalize().unwrap();
    let added = cargo(&krate, &["add", "proem-sdk", "--path", sdk.to_str().unwrap()]);
    assert!(added.status.success(), "{}", String::from_utf8_lossy(&added.stderr));
    // The compiled dependencies are shared with the scaffold test's build.
    let target = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("scaffold-target");
    let target_arg = format!("--target-dir={}", target.display());
    let built = cargo(&krate, &["build", "--release", "--target", "wasm32-wasip2", &target_arg]);
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));

    let wasm = target.join("wasm32-wasip2/release/persona_swap.wasm");
    let check = Command::new(front())
        .args(["plugin", "check", wasm.to_str().unwrap()])
        .env("PROEM_CACHE_DIR", plugin_env())
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&check.stdout);
    assert_eq!(check.status.code(), Some(0), "{report}");
    assert!(report.contains("id persona-swap") && report.contains("hooks stable,turn,bootstrap"), "{report}");
}
