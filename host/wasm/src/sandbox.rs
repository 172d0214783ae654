//! The store of one plugin call: its WASI context, memory limiter, clock and
//! the host functions' state, built from a [`Sandbox`] (the policy, in
//! `proem_core::plugin::sandbox`).

use proem_core::plugin::sandbox::{
    seed, LogLine, Sandbox, COUNT_TOKENS_COST_PER_KIB, COUNT_TOKENS_MAX_BYTES, MAX_INSTANCES, MAX_LOG_LINES,
    MAX_MEMORIES, MAX_TABLES, STDERR_CAPTURE_BYTES, TABLE_ENTRY_BYTES, WORKSPACE_MOUNT,
};
use proem_core::tokens::Tokenizer;
use rand::rngs::StdRng;
use rand::SeedableRng;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime::component::ResourceTable;
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{FsPerms, HostMonotonicClock, HostWallClock, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

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

/// The deadline of one call, in the plugin's own time.
///
/// The epoch callback stops wasm code once `Instant::now()` passes
/// `deadline`. A host function moves the deadline: out by the real time it
/// spent (the host's time is not the plugin's) and in by a fixed cost for
/// the work it did for the plugin. The real time spent in host functions is
/// also published through `host_time` so the wall-clock timeout of the call
/// (a backstop for blocked calls) moves with it.
#[derive(Debug, Clone)]
pub struct CallClock {
    budget: Duration,
    started: Instant,
    deadline: Instant,
    host_time: Arc<AtomicU64>,
}

impl CallClock {
    /// A clock whose deadline is `budget` from now.
    pub fn start(budget: Duration) -> CallClock {
        let now = Instant::now();
        CallClock { budget, started: now, deadline: now + budget, host_time: Arc::default() }
    }

    /// Gives the whole budget again from now, the time since the start
    /// counted as the host's (used once instantiation is done).
    pub fn restart(&mut self) {
        let now = Instant::now();
        self.add_host_time(now - self.started);
        self.started = now;
        self.deadline = now + self.budget;
    }

    fn add_host_time(&self, spent: Duration) {
        self.host_time.fetch_add(u64::try_from(spent.as_nanos()).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    /// When the plugin's time runs out.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Real time spent in host functions so far (shared with the caller).
    pub fn host_time(&self) -> Arc<AtomicU64> {
        self.host_time.clone()
    }

    /// Runs host work for the plugin: refused (as a deadline overrun) when
    /// `cost` does not fit in the time left; otherwise `work` runs, its real
    /// time is given back and `cost` is charged instead.
    pub fn charge<R>(&mut self, cost: Duration, work: impl FnOnce() -> R) -> Result<R, wasmtime::Error> {
        let started = Instant::now();
        if started + cost > self.deadline {
            return Err(wasmtime::Trap::Interrupt.into());
        }
        let out = work();
        let spent = started.elapsed();
        self.deadline = self.deadline + spent - cost;
        self.add_host_time(spent);
        Ok(out)
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
    /// The call's deadline (set by [`call`](proem_core::plugin::call)).
    pub clock: CallClock,
}

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

/// A fresh store state for one call in `sandbox`.
pub fn state(sandbox: &Sandbox) -> Result<State, String> {
    let stderr = MemoryOutputPipe::new(STDERR_CAPTURE_BYTES);
    let seed = seed(&sandbox.plugin);
    let mut b = WasiCtxBuilder::new();
    b.stderr(stderr.clone())
        .wall_clock(FrozenWallClock(sandbox.now))
        .monotonic_clock(FrozenMonotonicClock)
        .secure_random(StdRng::seed_from_u64(seed))
        .insecure_random(StdRng::seed_from_u64(seed.rotate_left(17)))
        .insecure_random_seed(u128::from(seed))
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false)
        .allow_blocking_current_thread(false);
    if sandbox.grants.workspace_read {
        b.preopened_dir(&sandbox.agent_dir, WORKSPACE_MOUNT, FsPerms::ReadOnly)
            .map_err(|e| format!("cannot mount {} read-only: {e}", sandbox.agent_dir.display()))?;
    }
    Ok(State {
        wasi: b.build(),
        table: ResourceTable::new(),
        limiter: Limiter::new(sandbox.memory_bytes),
        plugin: sandbox.plugin.clone(),
        tokenizer: sandbox.tokenizer,
        logs: Vec::new(),
        stderr,
        clock: CallClock::start(Duration::ZERO),
    })
}

impl State {
    /// Handles `host.log`: traced under the plugin's id; warnings and errors
    /// are kept for the build report. The message is made one safe line of
    /// at most 500 characters here, where it enters the host.
    pub fn log(&mut self, level: tracing::Level, message: &str) {
        let message = proem_core::text::one_line(message, 500);
        match level {
            tracing::Level::ERROR => tracing::error!(plugin = %self.plugin, "{message}"),
            tracing::Level::WARN => tracing::warn!(plugin = %self.plugin, "{message}"),
            tracing::Level::INFO => tracing::info!(plugin = %self.plugin, "{message}"),
            _ => tracing::debug!(plugin = %self.plugin, "{message}"),
        }
        if level <= tracing::Level::WARN && self.logs.len() < MAX_LOG_LINES {
            self.logs.push(LogLine { level, message });
        }
    }

    /// The call's resource table (for `virtual_io.rs`).
    pub(crate) fn table(&mut self) -> &mut ResourceTable {
        &mut self.table
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
