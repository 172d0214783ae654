//! proem's plugin runtime: plugins as WebAssembly components run in
//! wasmtime, each call in a fresh sandboxed store.
//!
//! ```text
//! runtime::WASMTIME (proem_core::plugin::runtime::Runtime)
//!   ─ compile_cost what compiling a component may cost, estimated before anything is compiled
//!   ─ compile    the compile itself: in a child process limited in memory and CPU where the executable offers one
//!   ─ cache      compiled components on disk (checksummed, keyed by the wasm and the engine)
//!   ─ engine     an Engine and Linker per compiler (Winch first, Cranelift for the rest), epoch tickers, instance pools, the plugin threads
//!   ─ call       one hook in a fresh store: deadline, wall-clock timeout, memory limit, verdict
//!   ─ sandbox    the store's state: WASI context, limiter, the call's clock, host functions
//!   ─ stubs      denied stubs for imports toolchains add (wasi:http)
//!   ─ virtual_io timers and poll in virtual time
//!   ─ workspace_fs the read-only workspace a `workspace-read` call sees (a stable call: no per-turn file)
//!   ─ wit/       one module per plugin API version (bindgen and conversions)
//!   ─ builtin    the official plugins, compiled by build.rs and embedded
//! ```
#![warn(missing_docs)]

pub mod binary;
pub mod builtin;
pub mod cache;
pub mod call;
pub mod clock;
pub mod compile;
pub mod compile_cost;
pub mod engine;
pub mod runtime;
pub mod sandbox;
pub mod stubs;
pub mod virtual_io;
pub mod wit;
pub mod workspace_fs;

pub use runtime::WASMTIME;

/// Where the build script put the wasm guests it built (the official
/// plugins, the test fixtures, the example third-party plugin), for tests.
#[doc(hidden)]
pub const GUEST_DIR: &str = env!("PROEM_GUEST_DIR");
