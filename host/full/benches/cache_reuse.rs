//! The cache-reuse benchmark (docs/PERFORMANCE.md "Cache reuse"):
//! replays each trace of `proem_full::replay::traces` (or the traces given
//! as arguments) and prints, per provider model and request layout, the
//! share of input tokens the provider could serve from its cache, the
//! trace's limit, the tokens written to the cache and the input cost. A
//! generated trace missing from the target folder is written first (with
//! `python3 benches/traces/make_traces.py`), which it says.
//!
//! `cargo bench -p proem-full --bench cache_reuse [-- TRACE.jsonl...]`

use std::path::{Path, PathBuf};

fn main() {
    let given: Vec<PathBuf> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).map(PathBuf::from).collect();
    let traces = if given.is_empty() {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        // This executable is target/<profile>/deps/cache_reuse-*.
        let exe = std::env::current_exe().unwrap_or_else(|e| panic!("where this bench runs from: {e}"));
        let target = exe.ancestors().nth(3).map_or_else(|| repo.join("target"), Path::to_path_buf);
        proem_full::replay::traces::shipped(&repo, &target).unwrap_or_else(|e| panic!("{e}"))
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
