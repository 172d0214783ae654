//! What runs plugin code, chosen by whoever opens the plugins.
//!
//! A [`PluginSet`](super::PluginSet) reaches wasmtime only through a
//! [`Runtime`]. [`WASMTIME`] compiles, links and calls components (the
//! engine, the component cache, one sandboxed call per hook). [`AnswersOnly`]
//! runs no plugin code at all: plugins whose answers are kept on disk (see
//! [`super::answers`]) build as usual, and anything that needs code ends the
//! open or the build with [`ProemError::PluginCodeNeeded`].
//!
//! The `proem` executable builds with [`AnswersOnly`] and hands every other
//! case to `proem-full` (see `host/cli/src/lib.rs`). Because the runtime is a trait
//! object chosen in `main`, nothing `proem`'s `main` can reach calls into
//! wasmtime, and the linker leaves wasmtime, Cranelift and the plugin threads
//! out of it: a warm build starts a ~21 MB executable instead of a ~47 MB one
//! (docs/PERFORMANCE.md has the figures).
//!
//! [`ProemError::PluginCodeNeeded`]: crate::ProemError::PluginCodeNeeded

use crate::cache_dir::CacheDir;
use crate::plugin::answers::executable_identity;
use crate::plugin::call::{CallLimits, Outcome, PluginError, Request};
use crate::plugin::sandbox::Sandbox;
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;

/// How a component was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Loaded from a valid cache entry.
    Cached,
    /// Compiled now (no cache, no entry, or a rejected entry).
    Compiled,
}

/// A call ready to run on a runtime's threads.
pub type PendingCall = Pin<Box<dyn Future<Output = Outcome> + Send>>;

/// What [`Runtime::link`] gives: the code and where its compiled form came
/// from, or why it cannot run.
pub type LinkResult = Result<(Arc<dyn Linked>, Origin), PluginError>;

/// Reads the bytes of a binary being linked (see [`Runtime::link`]).
pub type WasmBytes<'a> = &'a dyn Fn() -> Result<std::borrow::Cow<'a, [u8]>, String>;

/// A plugin's code, compiled and linked by a runtime.
pub trait Linked: Send + Sync {
    /// One hook call in a fresh sandbox (nothing survives into the next).
    fn call(&self, sandbox: Sandbox, limits: CallLimits, request: Request) -> PendingCall;
}

/// What runs plugin code (or, for [`AnswersOnly`], declines to).
pub trait Runtime: Sync {
    /// Stands for the code that produces answers in the keys of answers
    /// kept on disk: an answer is read back only by a process whose
    /// runtime has the same identity (`None`: nothing is kept or read).
    fn identity(&self) -> Option<u128>;

    /// Whether this runtime runs plugin code at all.
    fn runs_code(&self) -> bool;

    /// The code of the built-in plugin `id` (one of
    /// [`BUILTIN_IDS`](crate::config::BUILTIN_IDS)), when this runtime
    /// carries it.
    fn builtin(&self, id: &str) -> Option<&'static [u8]>;

    /// Checks a plugin binary before anything is compiled (a component, an
    /// API version this runtime speaks, only imports it provides) and gives
    /// the API version it was built for, or what is wrong with it.
    fn check(&self, wasm: &[u8]) -> Result<String, PluginError>;

    /// The config schema a checked binary declares (its
    /// [`crate::plugin::config_schema::SECTION`] custom section), if any.
    fn config_schema(&self, wasm: &[u8]) -> Result<Option<Vec<u8>>, String> {
        let _ = wasm;
        Ok(None)
    }

    /// Compiles the binary whose SHA-256 is `digest` (hex, as the build
    /// went by it) through the component cache in `cache_dir`, and
    /// pre-instantiates it with the bindings of API version `api`. `wasm`
    /// reads its bytes, called only when there is no compiled copy to
    /// load: a cache hit reads no byte of the binary and hashes nothing.
    fn link(&self, digest: &str, wasm: WasmBytes<'_>, api: &str, cache_dir: Option<&CacheDir>) -> LinkResult;

    /// Runs calls concurrently and returns their outcomes in input order,
    /// whatever order they finished in. `meanwhile` runs on the calling
    /// thread while the calls run on the runtime's (work the build would do
    /// after them anyway, done while it would otherwise wait).
    fn run(&self, calls: Vec<PendingCall>, meanwhile: &mut dyn FnMut()) -> Vec<Outcome>;
}

/// Runs no plugin code: reads the answers another executable's runtime
/// kept on disk, keyed by that executable's identity.
pub struct AnswersOnly {
    identity: Option<u128>,
}

impl AnswersOnly {
    /// Reads the answers kept by `runner`, the executable that runs the
    /// plugins for this one (none when it is missing or cannot be
    /// identified: then every plugin needs code).
    pub fn of(runner: Option<&Path>) -> AnswersOnly {
        let path = runner.and_then(|r| std::fs::canonicalize(r).ok());
        AnswersOnly { identity: path.and_then(|path| executable_identity(&path)) }
    }
}

impl Runtime for AnswersOnly {
    fn identity(&self) -> Option<u128> {
        self.identity
    }

    fn runs_code(&self) -> bool {
        false
    }

    fn builtin(&self, _: &str) -> Option<&'static [u8]> {
        None
    }

    fn check(&self, _: &[u8]) -> Result<String, PluginError> {
        Err(PluginError::Host(NO_CODE.into()))
    }

    fn link(&self, _: &str, _: WasmBytes<'_>, _: &str, _: Option<&CacheDir>) -> LinkResult {
        Err(PluginError::Host(NO_CODE.into()))
    }

    fn run(&self, calls: Vec<PendingCall>, _: &mut dyn FnMut()) -> Vec<Outcome> {
        calls.iter().map(|_| Outcome::host_failure(NO_CODE.into())).collect()
    }
}

const NO_CODE: &str = "this executable runs no plugin code";
