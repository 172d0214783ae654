//! Running a built plugin through the real host from a Rust test.
//!
//! ```no_run
//! use proem::testkit::PluginHarness;
//! use proem::Turn;
//! let harness = PluginHarness::new("target/wasm32-wasip2/release/my_plugin.wasm".as_ref())?
//!     .config(r#"{ note = "Be kind." }"#)
//!     .file("SOUL.md", "Calm and precise.");
//! let built = harness.build(&Turn::default())?;
//! assert!(harness.contributed(&built).contains(&"note".to_string()));
//! assert!(built.prompt.contains("Be kind."));
//! # Ok::<(), proem::ProemError>(())
//! ```
//!
//! The harness is an agent directory of its own (a temporary folder, removed
//! when the harness is dropped) with the plugin at `plugins/<id>.wasm`: the
//! same load path, sandbox, limits and merge as in production. A plugin that
//! fails is an error here (the plugin is `required`), so a test sees why.

use crate::{Assembler, Built, Turn};
use proem_core::error::ProemError;
use std::path::Path;

/// An agent with one plugin under test.
pub struct PluginHarness {
    dir: tempfile::TempDir,
    id: String,
    grants: Vec<String>,
    config: Option<String>,
}

impl PluginHarness {
    /// A harness for the component at `wasm` (its file stem is the plugin id).
    pub fn new(wasm: &Path) -> Result<PluginHarness, ProemError> {
        let io = |e: std::io::Error| ProemError::input("testkit", format!("{}: {e}", wasm.display()));
        let bytes = std::fs::read(wasm).map_err(io)?;
        let id: String = wasm
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("plugin")
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' })
            .collect();
        let dir = tempfile::tempdir().map_err(io)?;
        std::fs::create_dir_all(dir.path().join("plugins")).map_err(io)?;
        std::fs::write(dir.path().join(format!("plugins/{id}.wasm")), bytes).map_err(io)?;
        Ok(PluginHarness { dir, id, grants: Vec::new(), config: None })
    }

    /// Grants a capability (`workspace-read`).
    pub fn grant(mut self, grant: &str) -> PluginHarness {
        self.grants.push(grant.to_string());
        self
    }

    /// The plugin's `config` table, as a TOML inline table (`{ key = "value" }`).
    pub fn config(mut self, inline_table: &str) -> PluginHarness {
        self.config = Some(inline_table.to_string());
        self
    }

    /// Writes a workspace file (SOUL.md, skills/x/SKILL.md, …).
    pub fn file(self, name: &str, text: &str) -> PluginHarness {
        let path = self.dir.path().join(name);
        if let Some(parent) = path.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        let _ = std::fs::write(path, text);
        self
    }

    /// The plugin id (from the file name).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Builds a turn with the plugin required: its failure is the error.
    pub fn build(&self, turn: &Turn) -> Result<Built, ProemError> {
        let grants: Vec<String> = self.grants.iter().map(|g| format!("{g:?}")).collect();
        let toml = format!(
            "[[plugins]]\nid = \"{id}\"\npath = \"plugins/{id}.wasm\"\nrequired = true\ngrants = [{}]\n{}",
            grants.join(", "),
            self.config.as_deref().map(|c| format!("config = {c}\n")).unwrap_or_default(),
            id = self.id
        );
        let io = |e: std::io::Error| ProemError::input("testkit", e.to_string());
        std::fs::write(self.dir.path().join("proem.toml"), toml).map_err(io)?;
        Assembler::open(self.dir.path(), None)?.build(turn)
    }

    /// The ids of the sections this plugin contributed to `built`.
    pub fn contributed(&self, built: &Built) -> Vec<String> {
        let source = format!("plugin:{}", self.id);
        built.sections.iter().filter(|s| s.source == source).map(|s| s.id.clone()).collect()
    }
}

/// sdk/TESTING.md's sketch, compiled as a doc test: the SDK's docs show
/// the harness as it is.
#[cfg(doctest)]
#[doc = include_str!("../../../sdk/TESTING.md")]
struct TestingGuide;
