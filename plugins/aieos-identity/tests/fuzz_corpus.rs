//! The `aieos` fuzz target's corpus (`fuzz/corpus/aieos/`), replayed through
//! its check in every test run (the host's targets are replayed by the
//! host's `tests/security/fuzz_corpus.rs`).

#[test]
fn the_aieos_corpus_replays_through_the_fuzz_check() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/aieos");
    let mut replayed = 0;
    let mut entries: Vec<_> = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())).collect();
    entries.sort_by_key(|e| e.as_ref().map(|e| e.path()).ok());
    for entry in entries {
        let path = entry.unwrap().path();
        aieos_identity::fuzz_check(&std::fs::read(&path).unwrap());
        replayed += 1;
    }
    assert!(replayed >= 3, "the corpus has {replayed} inputs");
}
