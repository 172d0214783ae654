//! Builds the wasm guests this crate needs and embeds the official plugins.
//!
//! Runs `cargo build --release --target wasm32-wasip2` (the same command a
//! plugin author runs) for the official plugins, the test fixtures and the
//! example third-party plugin, in a target directory of its own beside the
//! host's, then writes `builtin_plugins.rs` with `include_bytes!` of the three
//! official components. Tests find the other guests through
//! `PROEM_GUEST_DIR`.
//!
//! Also writes the two BPE vocabulary tables the token counter reads in
//! place (see `src/bpe/mod.rs`) from OpenAI's vocabulary files in `vocab/`.

use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "src/bpe/table.rs"]
#[allow(dead_code)]
mod table;

#[path = "src/bpe/patterns.rs"]
#[allow(dead_code)]
mod patterns;

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
    let root = manifest_dir.parent().expect("host/ lives in the workspace root").to_path_buf();
    for watched in [
        "plugins",
        "sdk",
        "wit",
        "tests/fixtures/guest",
        "tests/fixtures/raw-guest",
        "examples/persona-swap",
        "Cargo.lock",
        "host/src/bpe/table.rs",
        "host/src/bpe/patterns.rs",
        "host/vocab",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }
    pack_relative_relocations();
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("set by cargo"));
    write_vocabulary_tables(&manifest_dir.join("vocab"), &out_dir);
    write_pre_split_dfas(&out_dir);
    write_unicode_classes(&out_dir);
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

/// Links the executables with their relative relocations packed (DT_RELR,
/// glibc 2.36+): the loader walks a ~30 KB bitmap instead of ~1.8 MB of
/// RELA entries at every start, and those pages are never mapped, which
/// took ~2.7 MB off a warm `proem build`'s peak RSS (docs/PERFORMANCE.md).
fn pack_relative_relocations() {
    let var = |name| std::env::var(name).unwrap_or_default();
    if var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ENV") == "gnu" {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// Writes `<name>.dfa` for each vocabulary: its pre-split patterns
/// (`src/bpe/patterns.rs`) as one dense DFA, leftmost-first, anchored
/// searches only, serialised for the target's byte order (read in place by
/// `src/bpe/split.rs`). Compiling them here keeps regex-syntax and its
/// Unicode tables out of the executables: ~1.3 MB of relocated pointers
/// every process would otherwise write at start-up.
fn write_pre_split_dfas(out_dir: &Path) {
    use regex_automata::dfa::{dense, StartKind};
    let big_endian = std::env::var("CARGO_CFG_TARGET_ENDIAN").is_ok_and(|e| e == "big");
    for (name, alternatives) in [("o200k_base", &patterns::O200K), ("cl100k_base", &patterns::CL100K)] {
        let dfa = dense::Builder::new()
            .configure(
                dense::Config::new()
                    .match_kind(regex_automata::MatchKind::LeftmostFirst)
                    .start_kind(StartKind::Anchored),
            )
            .build_many(alternatives)
            .unwrap_or_else(|e| panic!("the {name} pre-split patterns compile: {e}"));
        let (bytes, pad) = if big_endian { dfa.to_bytes_big_endian() } else { dfa.to_bytes_little_endian() };
        std::fs::write(out_dir.join(format!("{name}.dfa")), &bytes[pad..]).expect("write a pre-split DFA");
    }
}

/// Writes `unicode_classes.rs`: the code point ranges `src/text.rs` cleans
/// text with, from the Unicode tables of regex-syntax (the version the
/// `regex` crate in Cargo.lock uses), as constants.
fn write_unicode_classes(out_dir: &Path) {
    use regex_syntax::hir::{Class, HirKind};
    let mut out = String::from("// Generated by build.rs (write_unicode_classes).\n");
    for (name, pattern) in
        [("INVISIBLE", r"[\p{Cc}\p{Cf}\p{Default_Ignorable_Code_Point}\p{White_Space}]"), ("MARKS", r"\p{M}")]
    {
        let hir = regex_syntax::Parser::new().parse(pattern).expect("a valid Unicode class");
        let HirKind::Class(Class::Unicode(class)) = hir.kind() else { panic!("{pattern} is a Unicode class") };
        out.push_str(&format!("/// `{pattern}`, as sorted, disjoint ranges.\npub const {name}: &[(char, char)] = &["));
        for r in class.ranges() {
            out.push_str(&format!("({:?}, {:?}), ", r.start(), r.end()));
        }
        out.push_str("];\n");
    }
    std::fs::write(out_dir.join("unicode_classes.rs"), out).expect("write unicode_classes.rs");
}

/// Writes `<name>.table` for each vocabulary from `vocab/<name>.tiktoken`:
/// one token per line, its bytes in base64 and its rank, ranks in order
/// from 0 (special tokens are not in these files: proem counts their
/// strings as ordinary text).
fn write_vocabulary_tables(vocab_dir: &Path, out_dir: &Path) {
    for name in ["o200k_base", "cl100k_base"] {
        let source = vocab_dir.join(format!("{name}.tiktoken"));
        let text = std::fs::read_to_string(&source).unwrap_or_else(|e| panic!("read {}: {e}", source.display()));
        let mut tokens = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let bad = |what: &str| -> ! { panic!("{}:{}: {what}: {line:?}", source.display(), i + 1) };
            let (encoded, rank) = line.split_once(' ').unwrap_or_else(|| bad("not `<base64> <rank>`"));
            if rank.parse::<usize>().ok() != Some(tokens.len()) {
                bad("ranks must run 0, 1, 2, ... in order");
            }
            tokens.push(base64_decode(encoded).unwrap_or_else(|| bad("not base64")));
        }
        for byte in 0..=255u8 {
            assert!(tokens.iter().any(|t| t.as_slice() == [byte]), "{name} lacks the byte {byte}");
        }
        let file = out_dir.join(format!("{name}.table"));
        std::fs::write(&file, table::write(&tokens)).unwrap_or_else(|e| panic!("write {}: {e}", file.display()));
    }
}

/// Standard base64 with `=` padding; `None` for anything else.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let bytes = text.as_bytes();
    if bytes.is_empty() || !bytes.len().is_multiple_of(4) {
        return None;
    }
    let padding = bytes.iter().rev().take_while(|&&c| c == b'=').count();
    if padding > 2 {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3);
    let mut bits = 0u32;
    for (i, &c) in bytes[..bytes.len() - padding].iter().enumerate() {
        bits = bits << 6 | u32::from(value(c)?);
        if i % 4 == 3 {
            out.extend_from_slice(&bits.to_be_bytes()[1..]);
            bits = 0;
        }
    }
    match padding {
        1 => out.extend_from_slice(&(bits << 6).to_be_bytes()[1..3]),
        2 => out.push((bits << 12).to_be_bytes()[1]),
        _ => {}
    }
    Some(out)
}

fn path_str(p: &Path) -> String {
    p.to_str().expect("the target directory path is UTF-8").to_string()
}
