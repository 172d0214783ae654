//! The one wasmtime engine of the process, narrowed to what proem needs
//! (the Spin `core` pattern): components only, epoch interruption, a linker
//! built once with WASI p2 and every supported API version, and a small
//! tokio runtime that runs plugin calls concurrently.
//!
//! Nothing here starts until the first plugin loads, so a build without
//! plugins never pays for it.

use crate::plugin::sandbox::State;
use crate::plugin::wit;
use std::future::Future;
use std::sync::OnceLock;
use std::time::Duration;
use wasmtime::component::Linker;
use wasmtime::{Config, Engine};

/// How often the epoch advances. A runaway plugin is stopped within its
/// deadline plus one tick.
pub const EPOCH_TICK: Duration = Duration::from_millis(2);

/// Worker threads for plugin calls: enough that one spinning plugin never
/// holds up the others (it is stopped at its own deadline anyway).
pub const WORKER_THREADS: usize = 4;

/// The engine, linker and runtime.
pub struct PluginEngine {
    /// The wasmtime engine.
    pub engine: Engine,
    /// Host imports for every supported API version, plus WASI p2.
    pub linker: Linker<State>,
    runtime: tokio::runtime::Runtime,
}

static ENGINE: OnceLock<Result<PluginEngine, String>> = OnceLock::new();

/// The process's plugin engine, created on first use.
pub fn get() -> Result<&'static PluginEngine, String> {
    ENGINE.get_or_init(PluginEngine::new).as_ref().map_err(Clone::clone)
}

impl PluginEngine {
    fn new() -> Result<PluginEngine, String> {
        tracing::debug!("starting the wasm engine");
        let mut config = Config::new();
        config.wasm_component_model(true).epoch_interruption(true).parallel_compilation(true);
        // Compile fast rather than generate the last few percent of speed: a
        // first run compiles every plugin (measured on the three official
        // ones: 0.46 s of CPU with the defaults, 0.26 s this way), while a
        // plugin call is mostly the host's work (instantiating, lowering the
        // request; unchanged at ~1.25 ms per build of three calls each way).
        // The guest was optimised by its own compiler before it became wasm,
        // so Cranelift's optimiser has little left to find; single-pass
        // register allocation spills more, in linear time.
        config.cranelift_opt_level(wasmtime::OptLevel::None);
        config.cranelift_regalloc_algorithm(wasmtime::RegallocAlgorithm::SinglePass);
        let engine = Engine::new(&config).map_err(|e| format!("cannot start the wasm engine: {e}"))?;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker).map_err(|e| format!("cannot link WASI: {e}"))?;
        crate::plugin::virtual_io::add_to_linker(&mut linker)
            .map_err(|e| format!("cannot link the virtual clock: {e}"))?;
        wit::v0_1::add_to_linker(&mut linker).map_err(|e| format!("cannot link the plugin API: {e}"))?;
        wit::v0_2::add_to_linker(&mut linker).map_err(|e| format!("cannot link the plugin API 0.2: {e}"))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(WORKER_THREADS)
            .thread_name("proem-plugin")
            .enable_time()
            .build()
            .map_err(|e| format!("cannot start plugin threads: {e}"))?;
        start_ticker(&engine);
        Ok(PluginEngine { engine, linker, runtime })
    }

    /// Runs futures concurrently on the plugin threads and waits for all of
    /// them, from any thread (also from inside a caller's own async runtime).
    /// Results come back in input order, whatever order they finished in.
    pub fn run_all<T, F>(&self, futures: Vec<F>) -> Vec<Option<T>>
    where
        T: Send + 'static,
        F: Future<Output = T> + Send + 'static,
    {
        let n = futures.len();
        let (tx, rx) = std::sync::mpsc::channel();
        for (i, future) in futures.into_iter().enumerate() {
            let tx = tx.clone();
            self.runtime.spawn(async move {
                let out = future.await;
                let _ = tx.send((i, out));
            });
        }
        drop(tx);
        let mut results: Vec<Option<T>> = (0..n).map(|_| None).collect();
        for (i, out) in rx {
            results[i] = Some(out);
        }
        results
    }
}

/// Advances the epoch every [`EPOCH_TICK`] from a plain thread, so ticking
/// never waits on an executor a plugin might be keeping busy.
fn start_ticker(engine: &Engine) {
    let weak = engine.weak();
    std::thread::Builder::new()
        .name("proem-epoch".into())
        .spawn(move || loop {
            std::thread::sleep(EPOCH_TICK);
            match weak.upgrade() {
                Some(engine) => engine.increment_epoch(),
                None => break,
            }
        })
        .expect("spawn the epoch thread");
}

/// Epoch ticks for a deadline, rounded up, plus one for the tick in progress.
pub fn deadline_ticks(deadline: Duration) -> u64 {
    let tick = EPOCH_TICK.as_micros().max(1);
    (deadline.as_micros().div_ceil(tick) as u64) + 1
}
