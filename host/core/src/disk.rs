//! proem's own files on disk: where its cache folder is, and how every file
//! in it is written (whole, or not at all).
//!
//! Location: `$PROEM_CACHE_DIR` (empty disables every disk cache), else
//! `$XDG_CACHE_HOME/proem/components`, else `~/.cache/proem/components`.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Where compiled components are kept; `None` when caching is off.
pub fn default_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("PROEM_CACHE_DIR") {
        return (!dir.is_empty()).then(|| PathBuf::from(dir));
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").filter(|h| !h.is_empty()).map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("proem").join("components"))
}

/// Writes a cache file whole: `bytes` go to a temporary file in the same
/// directory (created if missing), synced first when `sync`, then renamed
/// to `path`, so a reader never sees half a file and two writers at once
/// both leave a whole one. Every file proem keeps in its cache is written
/// here (compiled components, plugin answers, token counts).
pub fn write_whole(path: &Path, bytes: &[u8], sync: bool) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    if sync {
        tmp.as_file().sync_data()?;
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
