//! proem assembles an LLM agent's system prompt from sections,
//! deterministically, under an exact token budget, split at a prompt-cache
//! boundary, with a report of where every byte came from.
//!
//! ```no_run
//! use proem_host::{Assembler, Turn};
//! let assembler = Assembler::open("examples/marlow".as_ref(), None)?;
//! let built = assembler.build(&Turn { channel: Some("telegram".into()), ..Turn::default() })?;
//! println!("{}", built.stable); // cache this part
//! # Ok::<(), proem_host::ProemError>(())
//! ```
//!
//! See `docs/ARCHITECTURE.md` for the path a build takes through the modules.
#![warn(missing_docs)]

pub mod allocator;
pub mod assembler;
pub mod bootstrap;
pub mod bounds;
pub mod bpe;
pub mod budget;
pub mod cache_dir;
#[doc(hidden)]
pub mod cli;
pub mod config;
pub mod core_sections;
pub mod error;
#[doc(hidden)]
pub mod fuzz_checks;
pub mod inspect;
pub mod memo;
pub mod mode;
pub mod parallel;
pub mod plugin;
pub mod render;
pub mod report;
pub mod request;
pub mod section;
pub mod serve;
pub mod skills;
pub mod sync;
pub mod testkit;
pub mod text;
pub mod tokens;
pub mod tools;
pub mod truncate;
pub mod turn;
pub mod workspace;
pub mod zone;

pub use assembler::Assembler;
pub use config::Config;
pub use error::ProemError;
pub use mode::Mode;
pub use report::Built;
pub use text::BOUNDARY_MARKER;
pub use turn::{ChatKind, Tool, Turn};
