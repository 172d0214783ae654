//! proem's integration and conformance tests: one module per file, built as
//! one test binary (the host and wasmtime linked once, not once per file),
//! the files grouped by concern in four folders, each a module whose
//! `mod.rs` lists its files: `pipeline/` (the build and what a prompt
//! holds), `plugins/` (plugins as authors and users meet them),
//! `security/` (hostile input, plugins and clients), `surfaces/` (the CLI,
//! the executables, `proem serve`, the crates' shape). Run one file's tests
//! with `cargo test --release --test integration <folder>::<file>::`
//! (e.g. `security::hostile::`), one folder's with `<folder>::`.

mod common;

mod pipeline;
mod plugins;
mod security;
mod surfaces;
