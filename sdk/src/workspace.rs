//! Read-only access to the agent directory, for plugins granted `workspace-read`.
//!
//! proem mounts the agent directory read-only at [`MOUNT`] when, and only
//! when, the operator lists `workspace-read` in the plugin's `grants`.
//! Without the grant every read fails with an error that says so and names
//! the line to add to proem.toml.
//!
//! In a native unit test (not wasm) there is no mount: point reads at a
//! folder with [`set_native_root`].

/// Where the agent directory appears inside the sandbox.
pub const MOUNT: &str = "/workspace";

/// Reads a UTF-8 file of the agent directory. `relative` must stay inside it
/// (no absolute paths, no `..`); the sandbox enforces the same on its side.
pub fn read_to_string(relative: &str) -> Result<String, String> {
    let path = std::path::Path::new(relative);
    if relative.is_empty()
        || path.is_absolute()
        || path.components().any(|c| !matches!(c, std::path::Component::Normal(_) | std::path::Component::CurDir))
    {
        return Err(format!("{relative:?} is not a path inside the agent directory"));
    }
    let root = root().map_err(|e| format!("{relative}: {e}"))?;
    std::fs::read_to_string(root.join(relative)).map_err(|e| match e.kind() {
        // WASI's own words ("No such file or directory (os error 44)") name
        // a WASI errno; the plugin's reader wants the plain fact.
        std::io::ErrorKind::NotFound => format!("{relative}: not found in the agent directory"),
        std::io::ErrorKind::InvalidData => format!("{relative}: not valid UTF-8 text"),
        _ => format!("{relative}: {e}"),
    })
}

#[cfg(target_arch = "wasm32")]
fn root() -> Result<std::path::PathBuf, String> {
    if std::fs::metadata(MOUNT).is_err() {
        return Err(NOT_GRANTED.into());
    }
    Ok(std::path::PathBuf::from(MOUNT))
}

/// The error of a read without the grant.
pub const NOT_GRANTED: &str = "the workspace is not mounted: this plugin was not granted workspace-read; \
    the operator adds grants = [\"workspace-read\"] to its [[plugins]] entry in proem.toml";

#[cfg(not(target_arch = "wasm32"))]
static NATIVE_ROOT: std::sync::Mutex<Option<std::path::PathBuf>> = std::sync::Mutex::new(None);

/// Native tests only: reads go to `dir` instead of the sandbox's mount.
#[cfg(not(target_arch = "wasm32"))]
pub fn set_native_root(dir: impl Into<std::path::PathBuf>) {
    *NATIVE_ROOT.lock().unwrap_or_else(|p| p.into_inner()) = Some(dir.into());
}

#[cfg(not(target_arch = "wasm32"))]
fn root() -> Result<std::path::PathBuf, String> {
    NATIVE_ROOT
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
        .ok_or_else(|| "no workspace in a native test: call workspace::set_native_root(dir) first".to_string())
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;

    #[test]
    fn native_reads_go_to_the_root_the_test_names() {
        let dir = std::env::temp_dir().join(format!("proem-sdk-ws-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("SOUL.md"), "calm").unwrap();
        set_native_root(&dir);
        assert_eq!(read_to_string("SOUL.md").unwrap(), "calm");
        assert!(read_to_string("../x").unwrap_err().contains("not a path inside"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
