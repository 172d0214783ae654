//! [`WASMTIME`]: the runtime that compiles, links and calls plugin
//! components (the library's and `proem-full`'s; `proem` runs none, see
//! `proem_core::plugin::runtime`).

use crate::cache;
use crate::engine::{self, Compiled, Compiler};
use crate::wit::{ApiVersion, Bindings};
use proem_core::cache_dir::CacheDir;
use proem_core::plugin::answers::executable_identity;
use proem_core::plugin::call::{CallLimits, Outcome, PluginError, Request};
use proem_core::plugin::runtime::{LinkResult, Linked, Origin, PendingCall, Runtime, WasmBytes};
use proem_core::plugin::sandbox::Sandbox;
use std::sync::{Arc, OnceLock};

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

    fn builtin(&self, id: &str) -> Option<&'static [u8]> {
        crate::builtin::get(id)
    }

    fn check(&self, wasm: &[u8]) -> Result<String, PluginError> {
        crate::binary::check(wasm).map_err(PluginError::Refused)
    }

    fn config_schema(&self, wasm: &[u8]) -> Result<Option<Vec<u8>>, String> {
        crate::binary::config_schema(wasm)
    }

    fn link(&self, digest: &str, wasm: WasmBytes<'_>, api: &str, cache_dir: Option<&CacheDir>) -> LinkResult {
        let (compiled, component, origin) = load(engine::get()?, digest, wasm, cache_dir)?;
        let cannot_link =
            |e: wasmtime::Error| PluginError::Link(crate::binary::link_error(&crate::compile::error_chain(&e)));
        let stubbed = crate::stubs::linker_for(&compiled.engine, &compiled.linker, &component).map_err(cannot_link)?;
        let pre = stubbed.as_ref().unwrap_or(&compiled.linker).instantiate_pre(&component).map_err(cannot_link)?;
        let mismatch = |e: wasmtime::Error| {
            PluginError::Link(format!("does not match API {api}: {}", crate::compile::error_chain(&e)))
        };
        let version = ApiVersion::parse(api)
            .ok_or_else(|| PluginError::Refused(format!("API {api} has no bindings in this proem")))?;
        let bindings = version.bind(pre).map_err(mismatch)?;
        Ok((Arc::new(Loaded { bindings, compiler: compiled.compiler }), origin))
    }

    fn run(&self, calls: Vec<PendingCall>, meanwhile: &mut dyn FnMut()) -> Vec<Outcome> {
        let engine = match engine::get() {
            Ok(engine) => engine,
            Err(e) => return calls.iter().map(|_| Outcome::failure(e.clone())).collect(),
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

/// The component of `digest`, compiled (or found in the cache) with the
/// first compiler that takes it: Winch where there is one, else Cranelift
/// (see [`Compiler`]). A cached entry of either is used before anything is
/// compiled: one of Cranelift's is only made when Winch refused the binary
/// (or by a proem that had no Winch).
pub fn load<'e>(
    engine: &'e engine::PluginEngine,
    digest: &str,
    wasm: WasmBytes<'_>,
    cache_dir: Option<&CacheDir>,
) -> Result<(&'e Compiled, wasmtime::component::Component, Origin), PluginError> {
    let first = engine.first()?;
    if first.compiler == Compiler::Cranelift {
        return cache::load_or_compile(first, digest, wasm, cache_dir).map(|(c, o)| (first, c, o));
    }
    if let Some(dir) = cache_dir {
        if let Some(component) = cache::lookup(&first.engine, digest, dir) {
            return Ok((first, component, Origin::Cached));
        }
        let cranelift = engine.cranelift()?;
        if let Some(component) = cache::lookup(&cranelift.engine, digest, dir) {
            return Ok((cranelift, component, Origin::Cached));
        }
    }
    // The bytes are read (and checked against the digest) once, for both.
    let wasm = wasm().map_err(PluginError::Host)?;
    match cache::compile_and_keep(first, digest, &wasm, cache_dir) {
        Ok(component) => Ok((first, component, Origin::Compiled)),
        Err(PluginError::Compile(why)) => {
            tracing::debug!("Winch refused the component ({why}); compiling it with Cranelift");
            let cranelift = engine.cranelift()?;
            cache::compile_and_keep(cranelift, digest, &wasm, cache_dir).map(|c| (cranelift, c, Origin::Compiled))
        }
        Err(other) => Err(other),
    }
}

/// A linked component and the compiler its code is from (its stores are
/// made by that compiler's engine).
struct Loaded {
    bindings: Bindings,
    compiler: Compiler,
}

impl Linked for Loaded {
    fn call(&self, sandbox: Sandbox, limits: CallLimits, request: Request) -> PendingCall {
        let (bindings, compiler) = (self.bindings.clone(), self.compiler);
        Box::pin(async move {
            let engines = engine::get().and_then(|engine| Ok((engine, engine.compiled(compiler)?)));
            match engines {
                Ok((engine, compiled)) => crate::call::call(engine, compiled, bindings, sandbox, limits, request).await,
                Err(e) => Outcome::failure(e),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proem_core::report::PluginStatus;

    /// Each way a binary fails before any call is its own kind: refused
    /// by the check, not compiled, not linked. All are the host's `failed`.
    #[test]
    fn a_binary_that_cannot_run_says_which_step_refused_it() {
        let refused = WASMTIME.check(b"not wasm").unwrap_err();
        assert!(matches!(&refused, PluginError::Refused(_)), "{refused:?}");
        let link = |wasm: &[u8]| {
            let digest = proem_core::digest::sha256_hex(wasm);
            WASMTIME.link(&digest, &|| Ok(std::borrow::Cow::Borrowed(wasm)), "0.2.0", None).err().unwrap()
        };
        let compile = link(b"\0asm\x0d\0\x01\0not a component");
        assert!(matches!(&compile, PluginError::Compile(m) if m.starts_with("cannot compile: ")), "{compile:?}");
        let lacking = wat::parse_str(r#"(component (import "nope" (func)))"#).unwrap();
        let link = link(&lacking);
        assert!(
            matches!(&link, PluginError::Link(m) if m.starts_with("cannot link") && m.contains("nope")),
            "{link:?}"
        );
        for error in [&refused, &compile, &link] {
            assert_eq!((error.status(), error.code()), (PluginStatus::Failed, "plugin_failed"), "{error:?}");
            assert!(!error.to_string().is_empty());
        }
    }
}
