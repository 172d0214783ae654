//! The store of one plugin call: its WASI context, memory limiter, clock,
//! charged randomness and the host functions' state, built from a
//! [`Sandbox`] (the policy, in `proem_core::plugin::sandbox`).

pub use crate::clock::CallClock;
use crate::workspace_fs::{FsView, Workspace};
use proem_core::plugin::call::PluginError;
use proem_core::plugin::sandbox::{
    seed, LogLine, Sandbox, COUNT_TOKENS_COST_PER_KIB, COUNT_TOKENS_MAX_BYTES, MAX_INSTANCES, MAX_LOG_LINES,
    MAX_MEMORIES, MAX_TABLES, RANDOM_CALL_COST, RANDOM_COST_PER_KIB, RANDOM_MAX_BYTES, STDERR_CAPTURE_BYTES,
    TABLE_ENTRY_BYTES,
};
use proem_core::tokens::Tokenizer;
use rand::rngs::StdRng;
use rand::SeedableRng;
use std::time::Duration;
use wasmtime::component::ResourceTable;
use wasmtime::component::{HasData, Linker};
use wasmtime_wasi::p2::bindings::random::{insecure, random};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::random::WasiRandomCtx;
use wasmtime_wasi::{HostMonotonicClock, HostWallClock, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

/// Caps the total of every memory and table one call creates, and their
/// number, and records a denied growth so a failed `memory.grow` (which the
/// guest sees as -1 and usually turns into an abort) is reported as what it
/// was: the plugin hit its memory limit.
///
/// wasmtime asks the limiter about each memory and table alone, with its
/// current and desired size (creation included, from 0); the limiter keeps
/// the sum, so forty memories of 32 MiB are forty times over a 32 MiB cap,
/// not forty times under it.
pub struct Limiter {
    memory_cap: usize,
    /// Bytes of memories and tables granted so far in this call.
    used: usize,
    /// The total a denied growth asked for.
    pub denied: Option<usize>,
}

impl Limiter {
    fn new(memory_cap: usize) -> Limiter {
        Limiter { memory_cap, used: 0, denied: None }
    }

    fn grow(&mut self, current: usize, desired: usize) -> bool {
        let total = self.used.saturating_sub(current).saturating_add(desired);
        if total > self.memory_cap {
            self.denied = Some(total);
            return false;
        }
        self.used = total;
        true
    }
}

impl wasmtime::ResourceLimiter for Limiter {
    fn memory_growing(&mut self, current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        Ok(self.grow(current, desired))
    }

    fn table_growing(&mut self, current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        Ok(self.grow(current.saturating_mul(TABLE_ENTRY_BYTES), desired.saturating_mul(TABLE_ENTRY_BYTES)))
    }

    fn instances(&self) -> usize {
        MAX_INSTANCES
    }

    fn memories(&self) -> usize {
        MAX_MEMORIES
    }

    fn tables(&self) -> usize {
        MAX_TABLES
    }
}

/// The state of one plugin call's store.
pub struct State {
    wasi: WasiCtx,
    table: ResourceTable,
    /// The memory limiter.
    pub limiter: Limiter,
    plugin: String,
    tokenizer: Tokenizer,
    /// Lines logged at warn or error (they become diagnostics).
    pub logs: Vec<LogLine>,
    stderr: MemoryOutputPipe,
    /// The call's deadline (set by [`call`](crate::call)).
    pub clock: CallClock,
    workspace: Workspace,
}

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

/// A fresh store state for one call in `sandbox`.
pub fn state(sandbox: &Sandbox) -> Result<State, PluginError> {
    let stderr = MemoryOutputPipe::new(STDERR_CAPTURE_BYTES);
    let seed = seed(&sandbox.plugin);
    let mut b = WasiCtxBuilder::new();
    b.stderr(stderr.clone())
        .wall_clock(FrozenWallClock(sandbox.now))
        .monotonic_clock(FrozenMonotonicClock)
        .secure_random(StdRng::seed_from_u64(seed))
        .insecure_random(StdRng::seed_from_u64(seed.rotate_left(17)))
        .insecure_random_seed(u128::from(seed))
        .max_random_size(RANDOM_MAX_BYTES)
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false)
        .allow_blocking_current_thread(false);
    // The workspace is proem's own WASI filesystem (`workspace_fs.rs`),
    // not a wasmtime-wasi preopen.
    let workspace = if sandbox.grants.workspace_read {
        Workspace::mount(&sandbox.agent_dir, sandbox.view).map_err(|e| {
            let why = format!("cannot mount the agent folder read-only: {e}");
            match proem_core::disk::is_exhaustion(&e) {
                true => PluginError::Exhausted(why),
                false => PluginError::Host(why),
            }
        })?
    } else {
        Workspace::none()
    };
    Ok(State {
        wasi: b.build(),
        table: ResourceTable::new(),
        limiter: Limiter::new(sandbox.memory_bytes),
        plugin: sandbox.plugin.clone(),
        tokenizer: sandbox.tokenizer,
        logs: Vec::new(),
        stderr,
        clock: CallClock::start(Duration::ZERO),
        workspace,
    })
}

impl State {
    /// Handles `host.log`: traced under the plugin's id; warnings and errors
    /// are kept for the build report (`plugin_log` diagnostics, which
    /// `proem build` prints), so they are traced at debug level only, not
    /// said twice. The message is made one safe line of at most 500
    /// characters here, where it enters the host.
    pub fn log(&mut self, level: tracing::Level, message: &str) {
        let message = proem_core::text::one_line(message, 500);
        match level {
            tracing::Level::INFO => tracing::info!(plugin = %self.plugin, "{message}"),
            _ => tracing::debug!(plugin = %self.plugin, level = %level, "{message}"),
        }
        if level <= tracing::Level::WARN && self.logs.len() < MAX_LOG_LINES {
            self.logs.push(LogLine { level, message });
        }
    }

    /// The call's resource table (for `virtual_io.rs`).
    pub(crate) fn table(&mut self) -> &mut ResourceTable {
        &mut self.table
    }

    /// The call's workspace, table and clock (for `workspace_fs.rs`).
    pub(crate) fn fs(&mut self) -> FsView<'_> {
        FsView::new(&mut self.workspace, &mut self.table, &self.clock)
    }

    /// Why the call's answer must not be used: the workspace's filesystem
    /// answered it for the machine's reason (see
    /// [`Workspace::host_trouble`]).
    pub(crate) fn host_trouble(&self) -> Option<&str> {
        self.workspace.host_trouble()
    }

    fn random(&mut self) -> ChargedRandom<'_> {
        ChargedRandom { random: self.wasi.random(), clock: &self.clock }
    }

    /// The memory cap in bytes.
    pub fn limiter_cap(&self) -> usize {
        self.limiter.memory_cap
    }

    /// Handles `host.count-tokens`: at most [`COUNT_TOKENS_MAX_BYTES`]
    /// (more traps, naming the limit), charged [`COUNT_TOKENS_COST_PER_KIB`]
    /// against the deadline whatever the real time (a cost that does not
    /// fit traps as a deadline overrun before any work is done).
    pub fn count_tokens(&mut self, text: &str) -> wasmtime::Result<u32> {
        if text.len() > COUNT_TOKENS_MAX_BYTES {
            return Err(wasmtime::format_err!(
                "count-tokens was given {} bytes, over its limit of {} bytes a call",
                text.len(),
                COUNT_TOKENS_MAX_BYTES
            ));
        }
        let kib = u32::try_from(text.len().div_ceil(1024)).unwrap_or(u32::MAX);
        let tokenizer = self.tokenizer;
        let n = self
            .clock
            .charge(COUNT_TOKENS_COST_PER_KIB * kib, || proem_core::tokens::shared_counter(tokenizer).count(text))?;
        Ok(u32::try_from(n).unwrap_or(u32::MAX))
    }

    /// What the plugin wrote to stderr, one line, at most 1,000 characters
    /// (the end is kept: that is where a panic message is).
    pub fn stderr_tail(&self) -> Option<String> {
        let bytes = self.stderr.contents();
        let text = String::from_utf8_lossy(&bytes);
        let text = text.trim();
        if text.is_empty() {
            return None;
        }
        let chars: Vec<char> = text.chars().collect();
        let tail: String = chars[chars.len().saturating_sub(1000)..].iter().collect();
        Some(proem_core::text::one_line(&tail, 1000))
    }
}

/// WASI's random numbers, capped at [`RANDOM_MAX_BYTES`] a call and
/// charged to the caller's deadline ([`RANDOM_CALL_COST`] a call and
/// [`RANDOM_COST_PER_KIB`]); the numbers are wasmtime-wasi's, from the
/// call's seeded generators.
pub struct ChargedRandom<'a> {
    random: &'a mut WasiRandomCtx,
    clock: &'a CallClock,
}

struct Charged;

impl HasData for Charged {
    type Data<'a> = ChargedRandom<'a>;
}

/// Replaces WASI's `random` and `insecure` interfaces in `linker` (which
/// must already hold wasmtime-wasi's) with the charged ones.
pub fn add_to_linker(linker: &mut Linker<State>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    random::add_to_linker::<State, Charged>(linker, State::random)?;
    insecure::add_to_linker::<State, Charged>(linker, State::random)?;
    linker.allow_shadowing(false);
    Ok(())
}

impl ChargedRandom<'_> {
    /// Checks `len` against [`RANDOM_MAX_BYTES`] and charges its cost, then
    /// runs `make`.
    fn bytes(
        &mut self,
        len: u64,
        make: fn(&mut WasiRandomCtx, u64) -> wasmtime::Result<Vec<u8>>,
    ) -> wasmtime::Result<Vec<u8>> {
        if len > RANDOM_MAX_BYTES {
            return Err(wasmtime::format_err!(
                "asked for {len} random bytes, over the limit of {RANDOM_MAX_BYTES} bytes a call"
            ));
        }
        let kib = u32::try_from(len.div_ceil(1024)).unwrap_or(u32::MAX);
        let random = &mut *self.random;
        self.clock.charge(RANDOM_CALL_COST + RANDOM_COST_PER_KIB * kib, || make(random, len))?
    }

    fn number(&mut self, make: fn(&mut WasiRandomCtx) -> wasmtime::Result<u64>) -> wasmtime::Result<u64> {
        let random = &mut *self.random;
        self.clock.charge(RANDOM_CALL_COST, || make(random))?
    }
}

impl random::Host for ChargedRandom<'_> {
    fn get_random_bytes(&mut self, len: u64) -> wasmtime::Result<Vec<u8>> {
        self.bytes(len, random::Host::get_random_bytes)
    }

    fn get_random_u64(&mut self) -> wasmtime::Result<u64> {
        self.number(random::Host::get_random_u64)
    }
}

impl insecure::Host for ChargedRandom<'_> {
    fn get_insecure_random_bytes(&mut self, len: u64) -> wasmtime::Result<Vec<u8>> {
        self.bytes(len, insecure::Host::get_insecure_random_bytes)
    }

    fn get_insecure_random_u64(&mut self) -> wasmtime::Result<u64> {
        self.number(insecure::Host::get_insecure_random_u64)
    }
}

struct FrozenWallClock(Duration);

impl HostWallClock for FrozenWallClock {
    fn resolution(&self) -> Duration {
        Duration::from_secs(1)
    }
    fn now(&self) -> Duration {
        self.0
    }
}

struct FrozenMonotonicClock;

impl HostMonotonicClock for FrozenMonotonicClock {
    fn resolution(&self) -> u64 {
        1_000_000_000
    }
    fn now(&self) -> u64 {
        0
    }
}
