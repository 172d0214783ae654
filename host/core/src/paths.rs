//! The rule for a path proem.toml names inside the agent directory.

use std::path::Path;

/// A workspace-relative path: no absolute paths, no `..`, not empty.
pub fn check_relative_path(name: &str) -> Result<(), &'static str> {
    let p = Path::new(name);
    if name.trim().is_empty() {
        return Err("empty path");
    }
    if p.is_absolute() || name.starts_with('/') || name.starts_with('\\') {
        return Err("must be relative to the agent directory");
    }
    if p.components().any(|c| matches!(c, std::path::Component::ParentDir)) {
        return Err("must not contain `..`");
    }
    if name.contains('\0') {
        return Err("contains a NUL byte");
    }
    Ok(())
}
