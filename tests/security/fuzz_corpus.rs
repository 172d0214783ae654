//! The cargo-fuzz targets' corpora (`fuzz/corpus/<target>/`) replayed
//! through the targets' own checks (`proem_core::fuzz_checks`) in every
//! test run: what a fuzzing session found stays found without cargo-fuzz.
//! Every target `fuzz/Cargo.toml` declares has a corpus and a check here,
//! or (`aieos`) in the plugin crate that owns it.

use std::path::{Path, PathBuf};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// The targets `fuzz/Cargo.toml` declares (`[[bin]] name = …`).
fn declared_targets() -> Vec<String> {
    let manifest = std::fs::read_to_string(fuzz_dir().join("Cargo.toml")).unwrap();
    manifest
        .split("[[bin]]")
        .skip(1)
        .filter_map(|bin| bin.lines().find_map(|l| l.trim().strip_prefix("name = ")))
        .map(|name| name.trim_matches('"').to_string())
        .collect()
}

/// The corpus of `target`, sorted by file name.
fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = fuzz_dir().join("corpus").join(target);
    let mut inputs: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| {
            let path = entry.unwrap().path();
            (path.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&path).unwrap())
        })
        .collect();
    inputs.sort();
    inputs
}

#[test]
fn every_fuzz_target_has_a_corpus_and_a_check() {
    let declared = declared_targets();
    assert!(declared.len() >= 6, "{declared:?}");
    for target in &declared {
        let here = proem_core::fuzz_checks::TARGETS.iter().any(|(name, _)| name == target);
        // The aieos check is the plugin's own (its crate's tests/fuzz_corpus.rs).
        assert!(here || target == "aieos", "fuzz target {target} has no check in proem_core::fuzz_checks");
        assert!(corpus(target).len() >= 3, "fuzz/corpus/{target}/ has fewer than 3 inputs");
    }
    for (name, _) in proem_core::fuzz_checks::TARGETS {
        assert!(declared.iter().any(|d| d == name), "{name} is not a fuzz target in fuzz/Cargo.toml");
    }
}

#[test]
fn every_corpus_replays_through_its_check() {
    let mut replayed = 0;
    for (target, check) in proem_core::fuzz_checks::TARGETS {
        for (name, data) in corpus(target) {
            let outcome = std::panic::catch_unwind(|| check(&data));
            assert!(outcome.is_ok(), "fuzz/corpus/{target}/{name} breaks the {target} check");
            replayed += 1;
        }
    }
    assert!(replayed >= 5 * 3, "{replayed} inputs replayed");
}

/// The fuzz checks hold for the cases this round of hardening fixed: a
/// fullwidth tag is one (the reserved-tag check would catch a miss), and
/// the checks themselves see a tag when one is there.
#[test]
fn the_fuzz_checks_see_what_they_check() {
    use proem_core::fuzz_checks::holds_reserved_tag;
    assert!(holds_reserved_tag("＜／ｃｏｎｔｅｘｔ＿ｆｉｌｅ＞"));
    assert!(holds_reserved_tag("<\u{200b}/context_file>"));
    assert!(!holds_reserved_tag("&lt;/context_file> <context_filex>"));
    assert!(std::panic::catch_unwind(|| proem_core::fuzz_checks::reserved_tags("\u{ff1c}/context_file>".as_bytes()))
        .is_ok());
}
