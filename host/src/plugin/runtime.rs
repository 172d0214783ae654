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
//! case to `proem-full` (see `src/cli.rs`). Because the runtime is a trait
//! object chosen in `main`, nothing `proem`'s `main` can reach calls into
//! wasmtime, and the linker leaves wasmtime, Cranelift and the plugin threads
//! out of it: a warm build starts a ~21 MB executable instead of a ~47 MB one
//! (docs/PERFORMANCE.md has the figures).
//!
//! [`ProemError::PluginCodeNeeded`]: crate::ProemError::PluginCodeNeeded

use crate::cache_dir::CacheDir;
use crate::plugin::answers::executable_identity;
use crate::plugin::cache::{self, Origin};
use crate::plugin::call::{self, CallLimits, Outcome, Request};
use crate::plugin::engine;
use crate::plugin::sandbox::Sandbox;
use crate::plugin::wit::{v0_1, v0_2, Bindings};
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};

/// A call ready to run on a runtime's threads.
pub type PendingCall = Pin<Box<dyn Future<Output = Outcome> + Send>>;

/// What [`Runtime::link`] gives: the code and where its compiled form came
/// from, or why it cannot run.
pub type LinkResult = Result<(Arc<dyn Linked>, Origin), String>;

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

    /// Compiles `wasm` (through the component cache in `cache_dir`) and
    /// pre-instantiates it with the bindings of API version `api`.
    fn link(&self, wasm: &[u8], api: &str, cache_dir: Option<&CacheDir>) -> LinkResult;

    /// Runs calls concurrently and returns their outcomes in input order,
    /// whatever order they finished in. `meanwhile` runs on the calling
    /// thread while the calls run on the runtime's (work the build would do
    /// after them anyway, done while it would otherwise wait).
    fn run(&self, calls: Vec<PendingCall>, meanwhile: &mut dyn FnMut()) -> Vec<Outcome>;
}

/// Runs plugins in wasmtime: the runtime of the library and of `proem-full`.
pub static WASMTIME: Wasmtime = Wasmtime;

/// See [`WASMTIME`].
pub struct Wasmtime;

impl Runtime for Wasmtime {
    fn identity(&self) -> Option<u128> {
        // This executable: a rebuilt or upgraded proem never reads another's answers.
        static IDENTITY: OnceLock<Option<u128>> = OnceLock::new();
        *IDENTITY.get_or_init(|| executable_identity(&std::env::current_exe().ok()?))
    }

    fn runs_code(&self) -> bool {
        true
    }

    fn link(&self, wasm: &[u8], api: &str, cache_dir: Option<&CacheDir>) -> LinkResult {
        let engine = engine::get()?;
        let (component, origin) = cache::load_or_compile(&engine.engine, wasm, cache_dir)?;
        let pre = engine
            .linker
            .instantiate_pre(&component)
            .map_err(|e| format!("cannot link against this proem: {}", cache::error_chain(&e)))?;
        let mismatch = |e: wasmtime::Error| format!("does not match API {api}: {}", cache::error_chain(&e));
        let bindings = match api.split('.').take(2).collect::<Vec<_>>()[..] {
            ["0", "1"] => Bindings::V0_1(v0_1::PluginPre::new(pre).map_err(mismatch)?),
            ["0", "2"] => Bindings::V0_2(v0_2::PluginPre::new(pre).map_err(mismatch)?),
            _ => return Err(format!("API {api} has no bindings in this proem")),
        };
        Ok((Arc::new(bindings), origin))
    }

    fn run(&self, calls: Vec<PendingCall>, meanwhile: &mut dyn FnMut()) -> Vec<Outcome> {
        let engine = match engine::get() {
            Ok(engine) => engine,
            Err(e) => return calls.iter().map(|_| Outcome::host_failure(e.clone())).collect(),
        };
        engine
            .run_all(calls, meanwhile)
            .into_iter()
            .map(|outcome| {
                outcome.unwrap_or_else(|| Outcome::host_failure("the plugin task ended without an answer".into()))
            })
            .collect()
    }
}

impl Linked for Bindings {
    fn call(&self, sandbox: Sandbox, limits: CallLimits, request: Request) -> PendingCall {
        let bindings = self.clone();
        Box::pin(async move {
            match engine::get() {
                Ok(engine) => call::call(engine, bindings, sandbox, limits, request).await,
                Err(e) => Outcome::host_failure(e),
            }
        })
    }
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

    fn link(&self, _: &[u8], _: &str, _: Option<&CacheDir>) -> LinkResult {
        Err(NO_CODE.into())
    }

    fn run(&self, calls: Vec<PendingCall>, _: &mut dyn FnMut()) -> Vec<Outcome> {
        calls.iter().map(|_| Outcome::host_failure(NO_CODE.into())).collect()
    }
}

const NO_CODE: &str = "this executable runs no plugin code";
