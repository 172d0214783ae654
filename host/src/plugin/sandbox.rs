//! The sandbox one plugin call runs in: its store state, memory limiter and
//! WASI context. Secure by default, like `WasiCtxBuilder` itself: nothing is
//! visible or reachable unless listed here.
//!
//! | what | default | opt-in |
//! |---|---|---|
//! | filesystem | none | `workspace-read`: the agent directory, read-only, at `/workspace` (`workspace_fs.rs`: stable hooks see no per-turn file and fixed times; at most [`MAX_OPEN_FILES`](crate::plugin::workspace_fs::MAX_OPEN_FILES) open at once; reads of at most 64 KiB, charged) |
//! | network (TCP, UDP, DNS) | denied | none |
//! | environment, arguments | empty | none |
//! | stdin / stdout | empty / discarded | none |
//! | stderr | captured (16 KiB) into the failure diagnostic | none |
//! | wall clock | frozen at the build's `now` | none |
//! | monotonic clock | frozen at 0; timers fire at once, `poll` waits for all (`virtual_io.rs`) | none |
//! | randomness | seeded from the plugin id (reproducible); at most [`RANDOM_MAX_BYTES`] a call, charged | none |
//! | memory | 32 MiB (`memory_mib`), all memories and tables of the call together | per plugin |
//! | instances, memories, tables, handles | at most [`MAX_INSTANCES`], [`MAX_MEMORIES`], [`MAX_TABLES`], [`MAX_HANDLES`] | none |
//! | `count-tokens` | at most [`COUNT_TOKENS_MAX_BYTES`] a call, charged [`COUNT_TOKENS_COST_PER_KIB`] | none |
//!
//! Time a plugin is charged is never the host's real time: host functions
//! charge fixed costs by input size (see [`CallClock`]), so whether the
//! tokenizer was built or a count was memoised never changes what a plugin
//! can do within its deadline. Every host function that does work in
//! proportion to what it is asked (files, listings, random bytes, token
//! counts) is capped per call and charged; the rest (the clocks, stdio,
//! `log`, denied sockets) do a fixed, small amount of work and are charged
//! their real time like the plugin's own code.

use crate::plugin::workspace_fs::{FsView, View, Workspace};
use crate::sync::Lock;
use crate::tokens::Tokenizer;
use rand::rngs::StdRng;
use rand::SeedableRng;
use sha2::{Digest, Sha256};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime::component::ResourceTable;
use wasmtime::component::{HasData, Linker};
use wasmtime_wasi::p2::bindings::random::{insecure, random};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::random::WasiRandomCtx;
use wasmtime_wasi::{HostMonotonicClock, HostWallClock, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

/// Where the agent directory is mounted for plugins granted `workspace-read`.
pub const WORKSPACE_MOUNT: &str = "/workspace";

/// How much of a plugin's stderr is kept for its diagnostic.
pub const STDERR_CAPTURE_BYTES: usize = 16 * 1024;

/// Most log lines kept per call (the rest are counted, not stored).
pub const MAX_LOG_LINES: usize = 32;

/// The capabilities an operator can grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Grants {
    /// Read-only view of the agent directory at [`WORKSPACE_MOUNT`].
    pub workspace_read: bool,
}

/// Every grant name proem knows, for config validation and `--help`.
pub const GRANT_NAMES: [&str; 1] = ["workspace-read"];

impl Grants {
    /// Parses the `grants` list of a `[[plugins]]` entry.
    pub fn parse(names: &[String]) -> Result<Grants, String> {
        let mut grants = Grants::default();
        for name in names {
            match name.as_str() {
                "workspace-read" => grants.workspace_read = true,
                other => {
                    return Err(format!("unknown grant {other:?}; proem grants: {}", GRANT_NAMES.join(", ")));
                }
            }
        }
        Ok(grants)
    }

    /// The granted names, for reports.
    pub fn names(&self) -> Vec<&'static str> {
        if self.workspace_read {
            vec!["workspace-read"]
        } else {
            Vec::new()
        }
    }
}

/// Most core instances one call may create (a component built by
/// wasm32-wasip2 Rust has a handful: its module, shims, fix-ups).
pub const MAX_INSTANCES: usize = 64;
/// Most linear memories one call may create (such a component has one or two).
pub const MAX_MEMORIES: usize = 4;
/// Most tables one call may create.
pub const MAX_TABLES: usize = 16;
/// Most resource handles (pollables, streams, …) a call may hold at once:
/// each is host memory (wasmtime's default allows 100,000).
pub const MAX_HANDLES: usize = 4096;

/// What one table entry is charged against the memory cap, in bytes (a
/// function reference as wasmtime stores it, rounded up).
pub const TABLE_ENTRY_BYTES: usize = 16;

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

/// Most bytes of text one `count-tokens` call may pass. Larger texts trap
/// (a plugin's whole output is at most 64 items of `output_kib` each; it
/// has no reason to count megabytes).
pub const COUNT_TOKENS_MAX_BYTES: usize = 1024 * 1024;

/// What `count-tokens` charges the caller's deadline per KiB of text
/// (about 25 MB/s, tiktoken-rs's speed; proem's counter runs at about twice
/// that), whatever it really took: a count
/// served from the memo costs the same as one encoded on a cold process.
pub const COUNT_TOKENS_COST_PER_KIB: Duration = Duration::from_micros(40);

/// Most bytes one `get-random-bytes` (or `get-insecure-random-bytes`) call
/// may ask for; more traps, naming the limit (wasmtime-wasi's own limit is
/// 64 MiB, made on the host before the guest has room for them).
pub const RANDOM_MAX_BYTES: u64 = 1024 * 1024;

/// What a call for random numbers charges the caller's deadline (each
/// `get-random-u64`, and each `get-random-bytes` on top of its bytes; a
/// `get-random-u64` takes ~0.4 µs, the guest's loop included).
pub const RANDOM_CALL_COST: Duration = Duration::from_micros(1);

/// What random bytes charge per KiB (wasmtime-wasi makes them a byte at a
/// time: ~9 µs per KiB measured, 1 MiB in ~9.4 ms).
pub const RANDOM_COST_PER_KIB: Duration = Duration::from_micros(20);

/// Real time host functions may give back to one call in all (the host's
/// time is not the plugin's; see [`CallClock`]): instantiation, a cold
/// tokenizer, file reads. A call therefore ends within its deadline plus
/// this plus two epoch ticks, whatever it asks of the host; past it, the
/// host's time counts as the plugin's.
pub const HOST_TIME_ALLOWANCE: Duration = Duration::from_millis(100);

/// The deadline of one call, in the plugin's own time.
///
/// The epoch callback stops wasm code once `Instant::now()` passes
/// [`CallClock::deadline`]. A host function moves the deadline: out by the
/// real time it spent (the host's time is not the plugin's), in all at most
/// [`HOST_TIME_ALLOWANCE`], and in by a fixed cost for the work it did for
/// the plugin. The same real time moves the call's wall-clock timeout (a
/// backstop for blocked calls), so both stay within the deadline plus the
/// allowance.
///
/// Clones share one clock: every host object a call creates (a file stream)
/// charges the same deadline.
#[derive(Debug, Clone)]
pub struct CallClock(Arc<Lock<Charges>>);

/// What a [`CallClock`] has counted since its call started.
#[derive(Debug)]
struct Charges {
    budget: Duration,
    started: Instant,
    /// Fixed costs host functions charged.
    charged: Duration,
    /// Real host time given back (at most [`HOST_TIME_ALLOWANCE`]).
    given_back: Duration,
}

impl CallClock {
    /// A clock whose deadline is `budget` from now.
    pub fn start(budget: Duration) -> CallClock {
        let started = Instant::now();
        CallClock(Arc::new(Lock::new(Charges { budget, started, charged: Duration::ZERO, given_back: Duration::ZERO })))
    }

    /// Gives the whole budget again from now, the time since the start
    /// counted as the host's (used once instantiation is done).
    pub fn restart(&self) {
        let mut c = self.0.lock();
        c.given_back = c.started.elapsed().min(HOST_TIME_ALLOWANCE);
    }

    /// When the plugin's time runs out: its budget from the start, plus the
    /// host time given back, less what host functions charged.
    pub fn deadline(&self) -> Instant {
        let c = self.0.lock();
        (c.started + c.budget + c.given_back).checked_sub(c.charged).unwrap_or(c.started)
    }

    /// When the call is stopped whatever it is doing: the budget plus the
    /// host time given back, uncharged (`slack` is added for the epoch
    /// tick in progress).
    pub fn wall_limit(&self, slack: Duration) -> Instant {
        let c = self.0.lock();
        c.started + c.budget + c.given_back + slack
    }

    /// Runs host work for the plugin: refused (as a deadline overrun) when
    /// `cost` does not fit in the time left; otherwise `work` runs, its real
    /// time is given back (within [`HOST_TIME_ALLOWANCE`]) and `cost` is
    /// charged instead.
    pub fn charge<R>(&self, cost: Duration, work: impl FnOnce() -> R) -> Result<R, wasmtime::Error> {
        let started = Instant::now();
        if started + cost > self.deadline() {
            return Err(wasmtime::Trap::Interrupt.into());
        }
        let out = work();
        let spent = started.elapsed();
        let mut c = self.0.lock();
        c.given_back = (c.given_back + spent).min(HOST_TIME_ALLOWANCE);
        c.charged += cost;
        Ok(out)
    }
}

/// A log line a plugin wrote through the `host` interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    /// Its level.
    pub level: tracing::Level,
    /// Its text.
    pub message: String,
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
    /// The call's deadline (set by [`call`](crate::plugin::call)).
    pub clock: CallClock,
    workspace: Workspace,
}

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

/// What a store is built from.
#[derive(Debug, Clone)]
pub struct Sandbox {
    /// The plugin id (tags logs, seeds randomness).
    pub plugin: String,
    /// Its grants.
    pub grants: Grants,
    /// The agent directory (mounted only with `workspace-read`).
    pub agent_dir: PathBuf,
    /// Memory cap in bytes.
    pub memory_bytes: usize,
    /// The build's time: the only wall clock the plugin sees.
    pub now: Duration,
    /// The build's tokenizer, for `count-tokens` (built only if a plugin counts).
    pub tokenizer: Tokenizer,
    /// What of the workspace the call sees with `workspace-read`: a call
    /// whose answer goes above the cache boundary sees the stable inputs
    /// only.
    pub view: View,
}

impl Sandbox {
    /// A fresh state for one call.
    pub fn state(&self) -> Result<State, String> {
        let stderr = MemoryOutputPipe::new(STDERR_CAPTURE_BYTES);
        let seed = seed(&self.plugin);
        let mut b = WasiCtxBuilder::new();
        b.stderr(stderr.clone())
            .wall_clock(FrozenWallClock(self.now))
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
        let workspace = if self.grants.workspace_read {
            Workspace::mount(&self.agent_dir, self.view)
                .map_err(|e| format!("cannot mount {} read-only: {e}", self.agent_dir.display()))?
        } else {
            Workspace::none()
        };
        Ok(State {
            wasi: b.build(),
            table: ResourceTable::new(),
            limiter: Limiter::new(self.memory_bytes),
            plugin: self.plugin.clone(),
            tokenizer: self.tokenizer,
            logs: Vec::new(),
            stderr,
            clock: CallClock::start(Duration::ZERO),
            workspace,
        })
    }
}

impl State {
    /// Handles `host.log`: traced under the plugin's id; warnings and errors
    /// are kept for the build report. The message is made one safe line of
    /// at most 500 characters here, where it enters the host.
    pub fn log(&mut self, level: tracing::Level, message: &str) {
        let message = crate::text::one_line(message, 500);
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

    /// The call's workspace, table and clock (for `workspace_fs.rs`).
    pub(crate) fn fs(&mut self) -> FsView<'_> {
        FsView::new(&mut self.workspace, &mut self.table, &self.clock)
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
            .charge(COUNT_TOKENS_COST_PER_KIB * kib, || crate::assembler::shared_counter(tokenizer).count(text))?;
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
        Some(crate::text::one_line(&tail, 1000))
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

/// A reproducible seed per plugin id.
fn seed(plugin: &str) -> u64 {
    let digest = Sha256::digest(format!("proem-plugin-seed:{plugin}").as_bytes());
    u64::from_le_bytes(digest[..8].try_into().expect("8 bytes"))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_time_is_given_back_up_to_the_allowance_and_charges_are_fixed() {
        let budget = Duration::from_millis(50);
        let clock = CallClock::start(budget);
        let first = clock.deadline();
        // Host work that takes longer than the allowance gives back only
        // the allowance; the fixed cost comes off whatever the real time.
        let cost = Duration::from_millis(5);
        clock.charge(cost, || std::thread::sleep(HOST_TIME_ALLOWANCE + Duration::from_millis(30))).unwrap();
        assert_eq!(clock.deadline(), first + HOST_TIME_ALLOWANCE - cost);
        assert_eq!(clock.wall_limit(Duration::ZERO), first + HOST_TIME_ALLOWANCE);
        // A cost that does not fit in what is left traps before any work.
        let mut ran = false;
        let refused = clock.charge(budget + HOST_TIME_ALLOWANCE, || ran = true);
        assert!(refused.unwrap_err().downcast_ref::<wasmtime::Trap>() == Some(&wasmtime::Trap::Interrupt));
        assert!(!ran);
    }
}
