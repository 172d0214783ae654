//! `proem diff A.json B.json`: which section and which input (file,
//! plugin, config table, tools, skills) moved the stable hash between two
//! builds' JSON reports (`proem build --format json`).

use proem_core::stable_inputs::{diff, StableInput};
use proem_core::ProemError;
use serde::Deserialize;
use std::fmt::Write;
use std::path::Path;

/// The largest report read (a prompt within the largest budget, with its
/// report, is far below it).
pub const MAX_REPORT_BYTES: u64 = 64 << 20;

/// What `diff` reads of a report; every other field is ignored.
#[derive(Deserialize)]
struct Report {
    stable_hash: String,
    /// Absent from reports of proem before stable-hash diagnostics.
    #[serde(default)]
    stable_inputs: Vec<StableInput>,
}

fn read(path: &Path, flag: &str) -> Result<Report, ProemError> {
    let fail = |message: String| ProemError::input(flag, format!("{}: {message}", path.display()));
    let bytes = proem_core::disk::read_regular_file(path, MAX_REPORT_BYTES).map_err(|e| fail(e.to_string()))?;
    serde_json::from_slice(&bytes).map_err(|e| {
        fail(format!("not a proem JSON report ({e}); make one with `proem build AGENT_DIR --format json`"))
    })
}

fn short(digest: &Option<String>) -> &str {
    digest.as_deref().map_or("absent", |d| &d[..d.len().min(12)])
}

/// The text `proem diff` prints: `stable hash unchanged`, or the cause and
/// every input that differs, by section.
pub fn run(before: &Path, after: &Path) -> Result<String, ProemError> {
    let a = read(before, "BEFORE")?;
    let b = read(after, "AFTER")?;
    Ok(stable_change((&a.stable_hash, &a.stable_inputs), (&b.stable_hash, &b.stable_inputs)))
}

/// What moved the stable hash from `before` to `after` (each a build's
/// `stable_hash` and `stable_inputs`), as `proem diff` prints it; `proem
/// plugin dev` prints it after each re-pin.
pub fn stable_change(before: (&str, &[StableInput]), after: (&str, &[StableInput])) -> String {
    let Some((cause, changes)) = diff(before.0, before.1, after.0, after.1) else {
        return format!("stable hash unchanged ({})\n", short(&Some(before.0.to_string())));
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "stable hash changed: {} -> {}\ncause: {}",
        short(&Some(before.0.to_string())),
        short(&Some(after.0.to_string())),
        cause.label()
    );
    if changes.is_empty() {
        let _ = writeln!(out, "no input differs: a report lacks stable_inputs (made by a proem before them)");
    }
    for c in &changes {
        let section = if c.section.is_empty() { "(whole build)" } else { c.section.as_str() };
        let _ = writeln!(out, "{section}\t{}\t{} -> {}", c.input, short(&c.before), short(&c.after));
    }
    out
}
