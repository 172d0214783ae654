//! Writes the two BPE vocabulary tables the counter reads in place (see
//! `src/lib.rs`) from OpenAI's vocabulary files in `vocab/`, and the
//! pre-split DFAs (`src/patterns.rs`) searched by `src/split.rs`.

use std::path::{Path, PathBuf};

#[path = "src/table.rs"]
#[allow(dead_code)]
mod table;

#[path = "src/patterns.rs"]
#[allow(dead_code)]
mod patterns;

fn main() {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    for watched in ["src/table.rs", "src/patterns.rs", "vocab"] {
        println!("cargo:rerun-if-changed={}", manifest_dir.join(watched).display());
    }
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("set by cargo"));
    write_vocabulary_tables(&manifest_dir.join("vocab"), &out_dir);
    write_pre_split_dfas(&out_dir);
}

/// Writes `<name>.dfa` for each vocabulary: its pre-split patterns
/// (`src/patterns.rs`) as one dense DFA, leftmost-first, anchored
/// searches only, serialised for the target's byte order (read in place by
/// `src/split.rs`). Compiling them here keeps regex-syntax and its
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
