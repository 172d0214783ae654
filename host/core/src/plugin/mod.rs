//! The wasm plugin host.
//!
//! ```text
//! proem.toml [[plugins]] ─ set::PluginSet::load ─ binary: the file's digest kept by its stat? then no byte read
//!                                                ─ answers: describe's answer kept on disk? then done
//!                                                ─ binary::check (API version, before compiling)
//!                                                ─ cache::load_or_compile (on-disk, checksummed)
//!                                                ─ engine (one Engine, one Linker, epoch ticker)
//!                                                ─ describe (what hooks, what capabilities)
//!                                                ─ config_schema: each entry's config against the
//!                                                  schema its binary declares, once per load
//! each build ─ run_bootstrap (agent:bootstrap, in id order) ─ run_sections (sections + overlay, concurrent)
//!            ─ memo: this process's, then answers kept on disk (hooks that see no clock)
//!            ─ runtime::Runtime: the plugin's code compiled and linked on its first call
//!              (runtime::AnswersOnly, in `proem`: no code, answers from disk or PluginCodeNeeded)
//!            ─ call::call (fresh store, sandbox::Sandbox, deadline, memory limit, timeout;
//!                          virtual_io: timers and poll in virtual time;
//!                          workspace_fs: the workspace, read-only, stable calls see no per-turn file)
//!            ─ hooks::validate_* (ids, slots, sizes, neutralised bodies) ─ merged like core sections
//! ```
//!
//! The wasm side (engine, sandboxed calls, per-version bindings, the
//! component cache) is the `proem-wasm` crate, behind [`runtime::Runtime`].

pub mod answers;
pub mod binary;
pub mod call;
pub mod config_schema;
pub mod hooks;
pub mod runtime;
pub mod sandbox;
pub mod set;

pub use hooks::{BuildContext, ContextTool, Hook, PluginInfo};
pub use sandbox::{Grants, GRANT_NAMES};
pub use set::{BuildRun, CallContexts, LoadedPlugin, MemoKeys, PluginSet};
