//! Read-only access to the agent directory, for plugins granted `workspace-read`.
//!
//! proem mounts the agent directory read-only at [`MOUNT`] when, and only
//! when, the operator lists `workspace-read` in the plugin's `grants`.
//! Without the grant every read fails as "not found".

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
    std::fs::read_to_string(format!("{MOUNT}/{relative}")).map_err(|e| format!("{relative}: {e}"))
}
