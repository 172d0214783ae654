//! Installing a plugin binary into an agent: `proem plugin add` (a local
//! file) and `proem plugin pull` (from a registry) both end here.
//!
//! The binary goes to `AGENT_DIR/plugins/<id>.wasm` and a `[[plugins]]`
//! entry pinning its sha256 is appended to `AGENT_DIR/proem.toml` (the
//! operator's own lines are kept as they are). Nothing existing is
//! overwritten; if the new config would not load, both writes are undone.

use proem_wasm::binary;
use std::path::{Path, PathBuf};

/// What an install did.
#[derive(Debug, Clone)]
pub struct Installed {
    /// The plugin id written to proem.toml.
    pub id: String,
    /// The file written, relative to the agent directory.
    pub path: String,
    /// The component's sha256, pinned in the entry.
    pub sha256: String,
}

/// An install checked against the agent as it is, not yet written.
#[derive(Debug)]
pub struct Plan {
    id: String,
    agent_dir: PathBuf,
    relative: String,
    config_file: PathBuf,
    existing: Option<String>,
}

/// Checks that `id` can be added to the agent at `agent_dir` (created when
/// missing): a valid id, not configured yet, its file not there yet.
pub fn plan(agent_dir: &Path, id: &str) -> Result<Plan, String> {
    proem_core::plugin::hooks::check_id(id)
        .map_err(|_| format!("{id:?} cannot be a plugin id (1-64 of a-z, 0-9, _, -, .): give one with --id"))?;
    if agent_dir.exists() && !agent_dir.is_dir() {
        return Err(format!("{}: not a directory (the agent directory to add the plugin to)", agent_dir.display()));
    }
    let config_file = agent_dir.join(proem_core::config::CONFIG_FILE);
    let existing = match std::fs::read_to_string(&config_file) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("{}: {e}", config_file.display())),
    };
    if existing.is_some() {
        let config = proem_core::config::Config::load(&config_file).map_err(|e| e.to_string())?;
        if config.plugins.iter().any(|p| p.id == id) {
            return Err(format!(
                "{}: a plugin with id {id} is already configured; remove its entry first or add it with --id OTHER",
                config_file.display()
            ));
        }
    }
    let relative = format!("plugins/{}.wasm", id.replace(['-', '.'], "_"));
    if agent_dir.join(&relative).exists() {
        return Err(format!(
            "{}: already exists; proem never overwrites a plugin file",
            agent_dir.join(&relative).display()
        ));
    }
    Ok(Plan { id: id.to_string(), agent_dir: agent_dir.to_path_buf(), relative, config_file, existing })
}

impl Plan {
    /// Writes the binary and the entry, `note` as a comment above it.
    pub fn install(self, bytes: &[u8], note: &str) -> Result<Installed, String> {
        binary::check(bytes)?;
        let sha256 = proem_core::digest::sha256_hex(bytes);
        let target = self.agent_dir.join(&self.relative);
        write_new(&target, bytes)?;
        let mut text = self.existing.clone().unwrap_or_default();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        let note = proem_core::text::one_line(note, 300);
        text.push_str(&format!(
            "\n# {note}\n[[plugins]]\nid = \"{}\"\npath = \"{}\"\nsha256 = \"{sha256}\"\n",
            self.id, self.relative
        ));
        let written = std::fs::write(&self.config_file, &text)
            .map_err(|e| format!("{}: {e}", self.config_file.display()))
            .and_then(|_| proem_core::config::Config::load(&self.config_file).map_err(|e| e.to_string()));
        if let Err(e) = written {
            // Leave the agent as it was.
            let _ = std::fs::remove_file(&target);
            let _ = match &self.existing {
                Some(old) => std::fs::write(&self.config_file, old),
                None => std::fs::remove_file(&self.config_file),
            };
            return Err(format!("the new entry would not load, so nothing was changed: {e}"));
        }
        Ok(Installed { id: self.id, path: self.relative, sha256 })
    }
}

/// Adds the local plugin file `file` to the agent at `agent_dir`; `id`
/// defaults to the plugin's own id from `describe`.
pub fn add(file: &Path, agent_dir: &Path, id: Option<&str>) -> Result<Installed, String> {
    let bytes = proem_core::disk::read_regular_file(file, proem_core::plugin::set::MAX_PLUGIN_BYTES)
        .map_err(|e| format!("{}: cannot read: {e}", file.display()))?;
    binary::check(&bytes).map_err(|e| format!("{}: {e}", file.display()))?;
    let id = match id {
        Some(id) => id.to_string(),
        None => file
            .file_stem()
            .and_then(|s| s.to_str())
            .map(|s| s.replace('_', "-").to_ascii_lowercase())
            .unwrap_or_else(|| "plugin".into()),
    };
    plan(agent_dir, &id)?.install(&bytes, &format!("Added from {}.", file.display()))
}

/// Writes a file that must not exist yet, making its folder if needed.
fn write_new(path: &Path, bytes: &[u8]) -> Result<(), String> {
    use std::io::Write;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    file.write_all(bytes).map_err(|e| format!("{}: {e}", path.display()))
}
