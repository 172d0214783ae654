//! The sandbox one plugin call runs in: its store state, memory limiter and
//! WASI context. Secure by default, like `WasiCtxBuilder` itself: nothing is
//! visible or reachable unless listed here.
//!
//! | what | default | opt-in |
//! |---|---|---|
//! | filesystem | none | `workspace-read`: the agent directory, read-only, at `/workspace` |
//! | network (TCP, UDP, DNS) | denied | none |
//! | environment, arguments | empty | none |
//! | stdin / stdout | empty / discarded | none |
//! | stderr | captured (16 KiB) into the failure diagnostic | none |
//! | wall clock | frozen at the build's `now` | none |
//! | monotonic clock | frozen at 0 | none |
//! | randomness | seeded from the plugin id (reproducible) | none |
//! | memory | 32 MiB (`memory_mib`) | per plugin |

use crate::tokens::Tokenizer;
use rand::rngs::StdRng;
use rand::SeedableRng;
use sha2::{Digest, Sha256};
use std::path::PathBuf;
use std::time::Duration;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{FsPerms, HostMonotonicClock, HostWallClock, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

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

/// Records memory growth beyond the cap, so a failed `memory.grow` (which the
/// guest sees as -1 and usually turns into an abort) is reported as what it
/// was: the plugin hit its memory limit.
pub struct Limiter {
    memory_cap: usize,
    /// The size a denied growth asked for.
    pub denied: Option<usize>,
}

impl wasmtime::ResourceLimiter for Limiter {
    fn memory_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        if desired > self.memory_cap {
            self.denied = Some(desired);
            return Ok(false);
        }
        Ok(true)
    }

    fn table_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        Ok(desired <= 1 << 20)
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
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .allow_blocking_current_thread(false);
        if self.grants.workspace_read {
            b.preopened_dir(&self.agent_dir, WORKSPACE_MOUNT, FsPerms::ReadOnly)
                .map_err(|e| format!("cannot mount {} read-only: {e}", self.agent_dir.display()))?;
        }
        Ok(State {
            wasi: b.build(),
            table: ResourceTable::new(),
            limiter: Limiter { memory_cap: self.memory_bytes, denied: None },
            plugin: self.plugin.clone(),
            tokenizer: self.tokenizer,
            logs: Vec::new(),
            stderr,
        })
    }
}

impl State {
    /// Handles `host.log`: traced under the plugin's id; warnings and errors
    /// are kept for the build report.
    pub fn log(&mut self, level: tracing::Level, message: String) {
        let message = crate::text::one_line(&message, 500);
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

    /// The memory cap in bytes.
    pub fn limiter_cap(&self) -> usize {
        self.limiter.memory_cap
    }

    /// Handles `host.count-tokens`.
    pub fn count_tokens(&mut self, text: &str) -> u32 {
        u32::try_from(crate::assembler::shared_counter(self.tokenizer).count(text)).unwrap_or(u32::MAX)
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
