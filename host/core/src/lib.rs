//! proem's pipeline, without a plugin runtime: config, workspace, sections,
//! layouts, budget, render, report, and the plugin set, whose code runs
//! behind [`plugin::runtime::Runtime`] (wasmtime is the `proem-wasm`
//! crate's). Applications use the `proem` crate, which puts the two
//! together; this crate is what `proem`'s front executable links, with no
//! plugin runtime at all.
//!
//! See `docs/ARCHITECTURE.md` for the path a build takes through the modules.
#![warn(missing_docs)]

pub mod allocator;
pub(crate) mod assembler;
pub mod bootstrap;
pub mod bounds;
pub(crate) mod budget;
pub mod cache;
pub mod cache_dir;
pub mod config;
pub(crate) mod core_sections;
pub mod digest;
pub(crate) mod digest_map;
pub mod disk;
pub mod error;
pub mod file_names;
#[doc(hidden)]
pub mod fuzz_checks;
pub(crate) mod layout;
pub mod memo;
pub mod mode;
pub mod model_tokenizers;
pub mod parallel;
pub mod paths;
pub mod plugin;
pub mod render;
pub mod report;
pub mod request;
pub mod section;
pub(crate) mod skills;
pub mod stable_inputs;
mod stages;
pub(crate) mod strict_de;
pub mod sync;
pub mod text;
pub mod tokens;
pub mod tools;
pub mod truncate;
pub mod turn;
pub mod vocab;
pub(crate) mod workspace;
pub(crate) mod zone;

pub use assembler::Assembler;
pub use config::Config;
pub use error::ProemError;
pub use mode::Mode;
pub use report::Built;
pub use text::BOUNDARY_MARKER;
pub use turn::{ChatKind, Tool, Turn};
