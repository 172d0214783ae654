//! Builds the wasm guests this crate needs and embeds the official plugins.
//!
//! Runs `cargo build --release --target wasm32-wasip2` (the same command a
//! plugin author runs) for the official plugins, the test fixtures and the
//! example third-party plugin, in a target directory of its own beside the
//! host's, then writes `builtin_plugins.rs` with `include_bytes!` of the three
//! official components. Tests find the other guests through
//! `PROEM_GUEST_DIR`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// (crate name, embedded as `builtin:<id>`?)
const GUESTS: &[(&str, bool)] = &[
    ("hardware-access", true),
    ("gpt5-overlay", true),
    ("aieos-identity", true),
    ("proem-fixture-guest", false),
    ("proem-raw-guest", false),
    ("persona-swap", false),
];

fn main() {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let root =
        manifest_dir.ancestors().nth(2).expect("host/wasm lives two levels below the workspace root").to_path_buf();
    for watched in [
        "plugins",
        "sdk",
        "wit",
        "tests/fixtures/guest",
        "tests/fixtures/raw-guest",
        "examples/persona-swap",
        "Cargo.lock",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("set by cargo"));
    // OUT_DIR is <target>/<profile>/build/<pkg>/out: share one guest build
    // between debug and release hosts.
    let target_dir = out_dir.ancestors().nth(4).unwrap_or(&out_dir).join("proem-guests");

    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&root)
        .args(["build", "--release", "--locked", "--target", "wasm32-wasip2", "--target-dir"])
        .arg(&target_dir);
    for (name, _) in GUESTS {
        cmd.args(["-p", name]);
    }
    // The host's own flags and wrappers are not meant for the guests.
    for var in [
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "CARGO_BUILD_RUSTFLAGS",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "RUSTC_WORKSPACE_WRAPPER",
        "CLIPPY_ARGS",
        "CLIPPY_CONF_DIR",
        "CARGO_PROFILE_RELEASE_DEBUG",
    ] {
        cmd.env_remove(var);
    }
    let output = cmd.output().expect("run cargo to build the wasm plugins");
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let hint = if stderr.contains("wasm32-wasip2")
            && (stderr.contains("not installed") || stderr.contains("can't find crate"))
        {
            "\n\nThe wasm32-wasip2 target is missing. Run `rustup toolchain install` in the repository \
             (rust-toolchain.toml lists the target) or `rustup target add wasm32-wasip2`, then build again.\n"
        } else {
            ""
        };
        panic!("building the wasm plugins failed:\n{stderr}{hint}");
    }

    let wasm_dir = target_dir.join("wasm32-wasip2").join("release");
    let mut embedded =
        String::from("/// (id, component bytes) of each official plugin.\npub static BUILTIN: &[(&str, &[u8])] = &[\n");
    for (name, builtin) in GUESTS {
        let file = wasm_dir.join(format!("{}.wasm", name.replace('-', "_")));
        assert!(file.exists(), "cargo built {name} but {} is missing", file.display());
        if *builtin {
            embedded.push_str(&format!("    ({name:?}, include_bytes!({:?})),\n", path_str(&file)));
        }
    }
    embedded.push_str("];\n");
    std::fs::write(out_dir.join("builtin_plugins.rs"), embedded).expect("write builtin_plugins.rs");
    println!("cargo:rustc-env=PROEM_GUEST_DIR={}", path_str(&wasm_dir));
}

fn path_str(p: &Path) -> String {
    p.to_str().expect("the target directory path is UTF-8").to_string()
}
