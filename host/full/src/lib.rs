//! The plugin author commands of `proem-full`: `plugin check` (a binary
//! checked the way proem loads one, every hook called on a sample turn),
//! `plugin new` (a standalone crate, or a Python or JavaScript folder), `plugin add` (into an agent folder,
//! never through a symlink), `plugin dev` (build, check, re-pin and diff on each change) and `plugin push`/`pull` (OCI registries, every
//! download bounded). The executable is `src/main.rs`. `replay` is the
//! cache-reuse benchmark's replay of a trace (`benches/cache_reuse.rs`).

pub mod check;
pub mod dev;
pub mod download;
pub mod install;
pub mod oci;
pub mod replay;
pub mod run;
pub mod scaffold;
