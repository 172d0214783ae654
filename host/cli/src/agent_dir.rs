//! The rule every command taking an agent folder applies first: a folder
//! with nothing proem reads (no proem.toml, no `--config`, none of the
//! workspace files, no skills) is almost always a wrong path, and would
//! build a generic prompt at exit 0. It is a usage error unless
//! `--allow-empty` says the operator means it.

use proem_core::file_names::{MEMORY_ALTERNATIVE, OPTIONAL_FILES, STANDARD_FILES};
use std::path::Path;

/// Whether `dir` holds nothing an agent is made of: no config (neither
/// `config` nor `dir/proem.toml`), no workspace file, no `skills/` folder.
/// A folder that cannot be read is not called empty here: opening it
/// says what is wrong.
pub fn is_empty_agent(dir: &Path, config: Option<&Path>) -> bool {
    if config.is_some() || !dir.is_dir() {
        return false;
    }
    let present = |name: &str| std::fs::symlink_metadata(dir.join(name)).is_ok();
    let files = STANDARD_FILES.iter().chain(OPTIONAL_FILES.iter()).chain(std::iter::once(&MEMORY_ALTERNATIVE));
    !present("proem.toml") && !present("skills") && !files.into_iter().any(|f| present(f))
}

/// The usage error for an empty agent folder: names it and the way out.
pub fn empty_agent_error(dir: &Path) -> String {
    format!(
        "{}: no proem.toml and no agent files (AGENTS.md, SOUL.md, IDENTITY.md, ...): is this the agent folder? \
         Give the folder that holds them, or pass --allow-empty to build the generic prompt of an empty agent",
        dir.display()
    )
}

/// `Err` with [`empty_agent_error`] when `dir` is an empty agent folder and
/// `allow_empty` is not set.
pub fn check(dir: &Path, config: Option<&Path>, allow_empty: bool) -> Result<(), String> {
    match !allow_empty && is_empty_agent(dir, config) {
        true => Err(empty_agent_error(dir)),
        false => Ok(()),
    }
}
