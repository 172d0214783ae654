//! proem assembles an LLM agent's system prompt from sections,
//! deterministically, under an exact token budget, split at a prompt-cache
//! boundary, with a report of where every byte came from. Third parties add
//! sections, provider overlays and `agent:bootstrap` hooks as sandboxed
//! WebAssembly components.
//!
//! ```no_run
//! use proem::{Assembler, Turn};
//! let assembler = Assembler::open("examples/marlow".as_ref(), None)?;
//! let built = assembler.build(&Turn { channel: Some("telegram".into()), ..Turn::default() })?;
//! println!("{}", built.stable); // cache this part
//! # Ok::<(), proem::ProemError>(())
//! ```
//!
//! The README's "Five ways in" block, run (from the repository's root):
//!
//! ```
//! # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
//! let assembler = proem::Assembler::open("examples/marlow".as_ref(), None)?;
//! let built = assembler.build(&proem::Turn { channel: Some("telegram".into()), ..Default::default() })?;
//! println!("{} {}", built.stable_hash, built.tokens.total);
//! # assert_eq!(built.stable_hash.len(), 64);
//! # Ok::<(), proem::ProemError>(())
//! ```
//!
//! This crate is the library's surface: [`Assembler`] runs the pipeline of
//! `proem-core` with plugins run in wasmtime (`proem-wasm`). See
//! `docs/ARCHITECTURE.md` for the path a build takes through the crates.
#![warn(missing_docs)]

pub mod binding;
pub mod testkit;

use std::path::Path;

pub use proem_core::config::Config;
pub use proem_core::error::{ExitStatus, ProemError};
pub use proem_core::memo::Caching;
pub use proem_core::mode::Mode;
pub use proem_core::plugin::PluginSet;
pub use proem_core::render::Format;
pub use proem_core::report::{
    Built, Diagnostic, FileReport, Level, PluginReport, SectionReport, StableInput, TokenReport,
};
pub use proem_core::request::{BodyError, BuildRequest};
pub use proem_core::section::{Section, Slot, Zone};
pub use proem_core::text::BOUNDARY_MARKER;
pub use proem_core::turn::{ChatKind, Tool, Tools, Turn};

/// Builds prompts for one agent directory: open it once, build once per
/// turn. Plugins run in wasmtime, each call in a fresh sandbox.
pub struct Assembler {
    inner: proem_core::Assembler,
}

/// Lets every assembler of this process, made here or through proem-core,
/// count with a tokenizer.json (`[budget] tokenizer`): registers
/// `proem-hf`'s loader. [`Assembler::open`] and [`Assembler::with_config`]
/// call it; a caller of `proem_core::Assembler` directly calls it once.
pub fn install_tokenizers() {
    proem_hf::install();
}

impl Assembler {
    /// Opens an agent directory and loads its config: `config` when given
    /// (it must exist), else `<agent_dir>/proem.toml` when present, else the
    /// defaults. Loads (and compiles, or finds compiled on disk) its plugins,
    /// and the tokenizer.json `[budget] tokenizer` names (`proem-hf`).
    pub fn open(agent_dir: &Path, config: Option<&Path>) -> Result<Assembler, ProemError> {
        install_tokenizers();
        let inner = proem_core::Assembler::open_with(agent_dir, config, &proem_wasm::WASMTIME)?;
        Ok(Assembler { inner })
    }

    /// An assembler with an already-parsed config.
    pub fn with_config(agent_dir: &Path, config: Config) -> Result<Assembler, ProemError> {
        install_tokenizers();
        let inner = proem_core::Assembler::with_config(agent_dir, config, &proem_wasm::WASMTIME)?;
        Ok(Assembler { inner })
    }

    /// Builds the prompt for one turn. Reads the workspace; never writes.
    pub fn build(&self, turn: &Turn) -> Result<Built, ProemError> {
        self.inner.build(turn)
    }

    /// Builds with extra sections contributed by the caller (made with
    /// [`Section::contributed`]). They are merged, ordered and budgeted
    /// exactly like plugin sections: placed by slot, replaced core sections
    /// reported, dropped first-among-optional when over budget, never
    /// protected.
    pub fn build_with(&self, turn: &Turn, contributed: &[Section]) -> Result<Built, ProemError> {
        self.inner.build_with(turn, contributed)
    }

    /// [`Assembler::build`], a build memo hit answered with the remembered
    /// build itself, shared, instead of a copy of its prompt and report.
    pub fn build_shared(&self, turn: &Turn) -> Result<std::sync::Arc<Built>, ProemError> {
        self.inner.build_shared(turn)
    }

    /// [`Assembler::memoised`] without the copy: the remembered build
    /// itself, shared (what `proem serve` answers a memo hit with).
    pub fn memoised_shared(&self, turn: &Turn) -> Option<std::sync::Arc<Built>> {
        self.inner.memoised_shared(turn)
    }

    /// The build of `turn` when it is remembered and nothing it read has
    /// changed, without building or touching a file; `None` means "call
    /// [`Assembler::build`]".
    pub fn memoised(&self, turn: &Turn) -> Option<Built> {
        self.inner.memoised(turn)
    }

    /// Chooses what is kept between builds (all on by default; see
    /// [`Caching`]).
    pub fn set_caching(&mut self, caching: Caching) {
        self.inner.set_caching(caching)
    }

    /// With `on`, builds report only the prompt and its parts, the mode, the
    /// plugins' statuses, every diagnostic and the total and stable token
    /// counts: what `proem build` prints as text. The rest of the report
    /// (`stable_hash`, `sections`, `stable_inputs`, `files`, …) is left
    /// empty, and not made. Off by default; the prompt is the same bytes.
    pub fn set_prompt_only(&mut self, on: bool) {
        self.inner.set_prompt_only(on)
    }

    /// What is kept between builds.
    pub fn caching(&self) -> Caching {
        self.inner.caching()
    }

    /// How many builds were answered from the build memo.
    pub fn memo_hits(&self) -> u64 {
        self.inner.memo_hits()
    }

    /// Whether the memos' file check currently uses change notifications
    /// rather than a stat per file.
    pub fn files_watched(&self) -> bool {
        self.inner.files_watched()
    }

    /// The config in use.
    pub fn config(&self) -> &Config {
        self.inner.config()
    }

    /// The agent's plugins, loaded (or not, with the reason), sorted by id.
    pub fn plugins(&self) -> &PluginSet {
        self.inner.plugins()
    }

    /// Reads a tools JSON file inside the agent directory (a path or
    /// symlink out of it is refused).
    pub fn read_tools_file(&self, rel: &str) -> Result<Vec<Tool>, ProemError> {
        self.inner.read_tools_file(rel)
    }

    /// The pipeline this assembler runs, for proem's own crates.
    #[doc(hidden)]
    pub fn core(&self) -> &proem_core::Assembler {
        &self.inner
    }
}

/// What `proem build` prints for `request`'s format (and, with `strict`,
/// its error when a plugin failed): the one renderer the CLI, the service
/// and the language bindings share.
pub fn render(built: &Built, request: &BuildRequest) -> Result<String, ProemError> {
    proem_core::request::respond(built, request)
}

/// The kind of a build error, as a short stable code: the `type` slug the
/// service's problem document gives for it (`bad-request`,
/// `budget-too-small`, `plugin-failed`, `agent-unavailable`), which the
/// language bindings put on their exceptions beside the CLI's message.
pub fn error_code(error: &ProemError) -> &'static str {
    match error {
        ProemError::BudgetTooSmall { .. } => "budget-too-small",
        ProemError::Input { .. } | ProemError::Tools { .. } => "bad-request",
        ProemError::Plugin { .. } => "plugin-failed",
        ProemError::Config { .. }
        | ProemError::AgentDir { .. }
        | ProemError::PluginCodeNeeded
        | ProemError::TokenizerCodeNeeded
        | ProemError::Exhausted { .. } => "agent-unavailable",
    }
}

/// The input an error is about, as a request field (`budget`, `tools`,
/// `now`, `strict`), when it is about one.
pub fn error_field(error: &ProemError) -> Option<String> {
    match error {
        ProemError::BudgetTooSmall { .. } => Some("budget".into()),
        ProemError::Input { input, .. } => Some(input.trim_start_matches('-').replace('-', "_")),
        ProemError::Tools { .. } => Some("tools".into()),
        _ => None,
    }
}

/// Keeps the digest of the plugin file `path` (relative to `agent_dir`)
/// just written by `plugin add` or `pull` in the answers of `cache_dir`,
/// so the first build after it reads no byte of the file (see
/// `proem_core::plugin::binary::keep_new_file_digest`). Returns whether it
/// was kept.
pub fn keep_new_plugin_digest(agent_dir: &Path, path: &str, cache_dir: Option<&Path>) -> bool {
    use proem_core::plugin::runtime::Runtime;
    let Some(cache_dir) = cache_dir.and_then(proem_core::cache_dir::checked) else { return false };
    let identity = proem_wasm::WASMTIME.identity();
    proem_core::plugin::answers::Answers::open(Some(&cache_dir), identity)
        .is_some_and(|answers| proem_core::plugin::binary::keep_new_file_digest(agent_dir, path, &answers))
}

/// Loads plugin entries on their own, outside an agent's build (what
/// `proem plugins` lists), their code run in wasmtime, compiled components
/// cached in `cache_dir` when it passes the checks of
/// `proem_core::cache_dir` (`None`: compile every time, write nothing).
pub fn load_plugins(
    configs: &[proem_core::config::PluginConfig],
    agent_dir: &Path,
    cache_dir: Option<&Path>,
) -> Result<PluginSet, ProemError> {
    let cache_dir = cache_dir.and_then(proem_core::cache_dir::checked);
    PluginSet::load_with(configs, agent_dir, cache_dir, &proem_wasm::WASMTIME)
}
