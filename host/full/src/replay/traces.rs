//! The traces the cache-reuse benchmark replays (docs/PERFORMANCE.md
//! "Cache reuse"). `benches/traces/make_traces.py` makes both, the same
//! bytes every time (a fixed seed); `week.jsonl` is tracked beside it,
//! `support.jsonl` (2.6 MB) is written into the target folder the first
//! time it is needed ([`shipped`]), and checked against the digest of the
//! bytes the documented figures were measured on.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The tracked traces, in `benches/traces/`.
pub const TRACKED: [&str; 1] = ["week.jsonl"];

/// The generated traces and the SHA-256 (hex) of their bytes.
pub const GENERATED: [(&str, &str); 1] =
    [("support.jsonl", "c140e4de9758a307506184a4d501977abed93ac23fd7f7606e208d568b6ae535")];

/// Every trace the benchmark replays, in name order: the tracked ones from
/// `repo/benches/traces`, the generated ones from `target/traces`, each
/// written there by `make_traces.py` (with `python3`) when missing, which
/// is said on stderr. An error names the trace, what failed and the fix.
pub fn shipped(repo: &Path, target: &Path) -> Result<Vec<PathBuf>, String> {
    let script = repo.join("benches/traces/make_traces.py");
    let out = target.join("traces");
    let mut traces: Vec<PathBuf> = TRACKED.iter().map(|name| repo.join("benches/traces").join(name)).collect();
    for (name, digest) in GENERATED {
        let path = out.join(name);
        if !path.is_file() {
            eprintln!("replay: {} is missing: writing it with {}", path.display(), script.display());
            generate(&script, &out, name)?;
        }
        check_digest(&path, digest)?;
        traces.push(path);
    }
    traces.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
    Ok(traces)
}

/// Runs `make_traces.py OUT NAME`.
fn generate(script: &Path, out: &Path, name: &str) -> Result<(), String> {
    let run = std::process::Command::new("python3")
        .arg(script)
        .arg(out)
        .arg(name)
        .output()
        .map_err(|e| format!("{name}: cannot run python3 {} ({e}): install Python 3", script.display()))?;
    if !run.status.success() {
        let stderr = String::from_utf8_lossy(&run.stderr);
        return Err(format!("{name}: {} failed ({}): {}", script.display(), run.status, stderr.trim()));
    }
    Ok(())
}

/// Refuses a trace whose bytes are not the ones the figures were measured on.
fn check_digest(path: &Path, digest: &str) -> Result<(), String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let got: String = Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
    if got != digest {
        return Err(format!(
            "{}: SHA-256 {got}, not the {digest} of the trace docs/PERFORMANCE.md's figures were measured on: \
             remove it to write it again, or (make_traces.py changed) update replay::traces::GENERATED",
            path.display()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A generated trace whose bytes moved (another script, a truncated
    /// write) is refused, naming the file, both digests and the fix.
    #[test]
    fn a_trace_with_other_bytes_is_refused_naming_both_digests() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("support.jsonl");
        std::fs::write(&path, "{}\n").unwrap();
        let err = check_digest(&path, GENERATED[0].1).unwrap_err();
        assert!(err.contains("support.jsonl") && err.contains(GENERATED[0].1) && err.contains("remove it"), "{err}");
        let missing = generate(&dir.path().join("no-such-script.py"), dir.path(), "support.jsonl").unwrap_err();
        assert!(missing.contains("no-such-script.py"), "{missing}");
    }
}
