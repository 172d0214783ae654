//! The process's wasmtime engines, narrowed to what proem needs (the Spin
//! `core` pattern): components only, epoch interruption, a linker built
//! once per engine with WASI p2 and every supported API version, a small
//! tokio runtime that runs plugin calls concurrently, and a pool of
//! instance slots reused call after call. Two engines, one per compiler
//! ([`Compiler`]): Winch's compiles every component first on x86-64;
//! Cranelift's, made only when needed, what Winch refuses.
//!
//! Nothing here starts until the first plugin loads, so a build without
//! plugins never pays for it.

use crate::sandbox::State;
use crate::wit;
use proem_core::plugin::call::PluginError;
use std::future::Future;
use std::sync::OnceLock;
use std::time::Duration;
use wasmtime::component::Linker;
use wasmtime::{Config, Engine};

/// How often the epoch advances. A runaway plugin is stopped within its
/// deadline plus one tick.
pub const EPOCH_TICK: Duration = Duration::from_millis(2);

/// Most plugin calls that hold an instance at once; more wait for a slot
/// before their clock starts. The pooling allocator reserves address space
/// (not memory) for this many calls at their limits: [`CALL_SLOTS`] ×
/// [`MAX_MEMORIES`] memories of up to 4 GiB plus guard pages (~260 GiB of
/// the 128 TiB a 64-bit process can address), and as many instances,
/// tables and stacks. Sixteen is more than the plugin threads can run at
/// once (a call holds its slot only while its store lives).
///
/// [`MAX_MEMORIES`]: proem_core::plugin::sandbox::MAX_MEMORIES
pub const CALL_SLOTS: u32 = 16;

/// Bytes of each linear memory kept mapped when its call ends: the next
/// call in that slot finds them resident and zeroed (or restored to the
/// plugin's initial image) by `memset`, instead of taking a page fault per
/// page and the kernel a TLB shootdown per unmap. A Rust plugin touches
/// ~1.5 MiB per call; measured on the reference workload, every cache off:
/// 1.49 ms per build with 0 bytes kept, 1.24 ms with 4 MiB.
pub const KEEP_RESIDENT_BYTES: usize = 4 << 20;

/// Idle slots that keep their resident memory ([`KEEP_RESIDENT_BYTES`]
/// each) for the module that used them last; past this many, a call
/// reuses the least recently used idle slot instead of a fresh one. So a
/// process keeps at most this many idle slots' memory whatever number of
/// plugins and agents it has run (four: the three official plugins stay
/// warm). Measured: a process that built atlas's three plugins with every
/// cache off holds ~6 MB more than without the pool, the same after 3
/// agents as after 12.
pub const WARM_SLOTS: u32 = 4;

/// The most entries one table may hold (the pool reserves this much for
/// each table slot; every entry also counts against the memory cap, see
/// [`proem_core::plugin::sandbox::TABLE_ENTRY_BYTES`]). A Rust plugin's one
/// table holds a few hundred.
pub const MAX_TABLE_ELEMENTS: usize = 1 << 20;

/// Threads that run plugin calls: the cores the calling thread leaves free
/// (it counts tokens meanwhile, see [`PluginEngine::run_all`]), at least
/// two so one spinning plugin never holds up the others (it is stopped at
/// its own deadline anyway), at most eight.
pub fn worker_threads() -> usize {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    cores.saturating_sub(1).clamp(2, 8)
}

/// The pooling allocator, sized so that [`CALL_SLOTS`] calls at the
/// sandbox's per-call limits always fit: instances, memories, tables and
/// stacks are made once and reused, reset by `memset` and `madvise`, never
/// shared by two calls at once (wasmtime's isolation guarantee). The
/// memory cap stays the limiter's (`sandbox.rs`); the pool adds
/// [`MAX_TABLE_ELEMENTS`] and wasmtime's default 1 MiB of runtime metadata
/// per instance, and refuses a component over the per-call counts when it
/// is compiled (the limiter would refuse it when instantiated).
fn pool() -> wasmtime::InstanceAllocationStrategy {
    use proem_core::plugin::sandbox::{MAX_INSTANCES, MAX_MEMORIES, MAX_TABLES};
    let (instances, memories, tables) = (MAX_INSTANCES as u32, MAX_MEMORIES as u32, MAX_TABLES as u32);
    let mut pool = wasmtime::PoolingAllocationConfig::new();
    pool.total_component_instances(CALL_SLOTS)
        .total_core_instances(CALL_SLOTS * instances)
        .total_memories(CALL_SLOTS * memories)
        .total_tables(CALL_SLOTS * tables)
        .total_stacks(CALL_SLOTS)
        .max_core_instances_per_component(instances)
        .max_memories_per_component(memories)
        .max_tables_per_component(tables)
        .max_memories_per_module(memories)
        .max_tables_per_module(tables)
        .table_elements(MAX_TABLE_ELEMENTS)
        .linear_memory_keep_resident(KEEP_RESIDENT_BYTES)
        .max_unused_warm_slots(WARM_SLOTS)
        .table_keep_resident(64 << 10);
    wasmtime::InstanceAllocationStrategy::Pooling(pool)
}

/// The compiler a component is compiled with. Each has its own engine and
/// linker: a component, the stores it runs in and its linker belong to one
/// engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compiler {
    /// Winch, wasmtime's baseline compiler (tier 1 on x86-64, as
    /// Cranelift): one pass over each function. On x86-64 every component
    /// is compiled with it first: a first run with the two official plugins
    /// takes about half the CPU, and their calls are no slower (a call is
    /// mostly the host's work). It refuses a few proposals Cranelift
    /// compiles (tail calls, relaxed SIMD); such a component is compiled
    /// with [`Compiler::Cranelift`] instead.
    Winch,
    /// Cranelift with its optimiser off: everything Winch refuses, and
    /// everything on other architectures.
    Cranelift,
}

impl Compiler {
    /// Its name, as the compile helper is told it.
    pub fn name(self) -> &'static str {
        match self {
            Compiler::Winch => "winch",
            Compiler::Cranelift => "cranelift",
        }
    }

    /// The compiler of `name` ([`Compiler::name`]).
    pub fn parse(name: &str) -> Option<Compiler> {
        [Compiler::Winch, Compiler::Cranelift].into_iter().find(|c| c.name() == name)
    }
}

/// One compiler's engine and the linker made for it.
pub struct Compiled {
    /// Which compiler.
    pub compiler: Compiler,
    /// The wasmtime engine.
    pub engine: Engine,
    /// Host imports for every supported API version, plus WASI p2.
    pub linker: Linker<State>,
}

/// The engine configuration of `compiler`: what its code is compiled for
/// (the pool an engine runs calls in is added by [`Compiled::start`] and
/// does not change it).
pub fn config(compiler: Compiler) -> Config {
    let mut config = Config::new();
    config.wasm_component_model(true).epoch_interruption(true).parallel_compilation(true);
    // Compile fast rather than generate the last few percent of speed: a
    // first run compiles every plugin (measured on the three official ones:
    // 0.46 s of CPU with the defaults, 0.26 s this way), while a plugin call
    // is mostly the host's work (instantiating, lowering the request;
    // unchanged at ~1.25 ms per build of three calls each way). The guest
    // was optimised by its own compiler before it became wasm, so
    // Cranelift's optimiser has little left to find; single-pass register
    // allocation spills more, in linear time. Winch's engine needs these
    // too: Winch compiles the guest's functions, but Cranelift still
    // compiles the component's trampolines and adapters there, and with the
    // defaults they were three quarters of a first run's compile
    // (docs/PERFORMANCE.md).
    config.cranelift_opt_level(wasmtime::OptLevel::None);
    config.cranelift_regalloc_algorithm(wasmtime::RegallocAlgorithm::SinglePass);
    config.strategy(match compiler {
        Compiler::Winch => wasmtime::Strategy::Winch,
        Compiler::Cranelift => wasmtime::Strategy::Cranelift,
    });
    config
}

impl Compiled {
    fn start(compiler: Compiler) -> Result<Compiled, String> {
        tracing::debug!(?compiler, "making a compiler's engine");
        let config = config(compiler);
        let engine = match Engine::new(config.clone().allocation_strategy(pool())) {
            Ok(engine) => engine,
            Err(e) => {
                // Address space reserved up front can be refused (`ulimit -v`);
                // instances are then made and unmapped per call, as before.
                tracing::debug!("the pooling allocator is unavailable ({e}); allocating per call");
                Engine::new(&config).map_err(|e| format!("cannot start the wasm engine: {e}"))?
            }
        };
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker).map_err(|e| format!("cannot link WASI: {e}"))?;
        crate::virtual_io::add_to_linker(&mut linker).map_err(|e| format!("cannot link the virtual clock: {e}"))?;
        crate::workspace_fs::add_to_linker(&mut linker, crate::sandbox::State::fs)
            .map_err(|e| format!("cannot link the workspace filesystem: {e}"))?;
        crate::sandbox::add_to_linker(&mut linker)
            .map_err(|e| format!("cannot link the charged random numbers: {e}"))?;
        wit::ApiVersion::add_all_to_linker(&mut linker)?;
        start_ticker(&engine);
        Ok(Compiled { compiler, engine, linker })
    }
}

/// The engines, their linkers and the plugin threads.
pub struct PluginEngine {
    /// Winch's, on x86-64 (made with the rest).
    winch: Option<Compiled>,
    /// Cranelift's, made the first time a component needs it.
    cranelift: OnceLock<Result<Compiled, String>>,
    runtime: tokio::runtime::Runtime,
    /// [`CALL_SLOTS`] permits: a call holds one while its store lives.
    pub(crate) slots: tokio::sync::Semaphore,
}

static ENGINE: OnceLock<Result<PluginEngine, PluginError>> = OnceLock::new();

/// The process's plugin engine, created on first use.
pub fn get() -> Result<&'static PluginEngine, PluginError> {
    ENGINE.get_or_init(PluginEngine::new).as_ref().map_err(Clone::clone)
}

impl PluginEngine {
    /// The engine, or why it cannot start (a host-side failure: every
    /// call gets it).
    fn new() -> Result<PluginEngine, PluginError> {
        PluginEngine::start().map_err(PluginError::Host)
    }

    fn start() -> Result<PluginEngine, String> {
        tracing::debug!("starting the wasm engine");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(worker_threads())
            .thread_name("proem-plugin")
            .enable_time()
            .build()
            .map_err(|e| format!("cannot start plugin threads: {e}"))?;
        let winch = match cfg!(target_arch = "x86_64") {
            true => Some(Compiled::start(Compiler::Winch)?),
            false => None,
        };
        let slots = tokio::sync::Semaphore::new(CALL_SLOTS as usize);
        Ok(PluginEngine { winch, cranelift: OnceLock::new(), runtime, slots })
    }

    /// The compiler tried first: Winch on x86-64, else Cranelift.
    pub fn first(&self) -> Result<&Compiled, PluginError> {
        match &self.winch {
            Some(winch) => Ok(winch),
            None => self.cranelift(),
        }
    }

    /// Cranelift's engine, made on first use.
    pub fn cranelift(&self) -> Result<&Compiled, PluginError> {
        let made = self.cranelift.get_or_init(|| Compiled::start(Compiler::Cranelift));
        made.as_ref().map_err(|e| PluginError::Host(e.clone()))
    }

    /// The engine of `compiler` (the one a component was compiled with).
    pub fn compiled(&self, compiler: Compiler) -> Result<&Compiled, PluginError> {
        match (compiler, &self.winch) {
            (Compiler::Winch, Some(winch)) => Ok(winch),
            _ => self.cranelift(),
        }
    }

    /// Runs futures concurrently on the plugin threads and waits for all of
    /// them, from any thread (also from inside a caller's own async runtime),
    /// running `meanwhile` on the calling thread first. Results come back in
    /// input order, whatever order they finished in.
    pub fn run_all<T, F>(&self, futures: Vec<F>, meanwhile: &mut dyn FnMut()) -> Vec<Option<T>>
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
        meanwhile();
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
