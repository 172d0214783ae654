//! The cache-reuse benchmark (docs/PERFORMANCE.md "Cache reuse"):
//! replays each trace of `benches/traces/` (or the traces given as
//! arguments) and prints, per provider model and request layout, the share
//! of input tokens the provider could serve from its cache, the trace's
//! limit, the tokens written to the cache and the input cost.
//!
//! `cargo bench -p proem-full --bench cache_reuse [-- TRACE.jsonl...]`

use std::path::PathBuf;

fn main() {
    let given: Vec<PathBuf> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).map(PathBuf::from).collect();
    let traces = if given.is_empty() {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../benches/traces");
        let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect();
        found.sort();
        found
    } else {
        given
    };
    println!("## Cache reuse\n");
    for path in traces {
        let report = proem_full::replay::replay_file(&path).unwrap_or_else(|e| panic!("{e}"));
        let name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        println!("{}", proem_full::replay::table(&name, &report));
    }
}
