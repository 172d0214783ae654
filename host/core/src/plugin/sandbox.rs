//! The sandbox one plugin call runs in, as policy: what a call may see and
//! use, and its limits. The runtime builds each call's store from a
//! [`Sandbox`] (`proem-wasm`'s `sandbox`). Secure by default, like
//! `WasiCtxBuilder` itself: nothing is visible or reachable unless listed here.
//!
//! | what | default | opt-in |
//! |---|---|---|
//! | filesystem | none | `workspace-read`: the agent directory, read-only, at `/workspace` (`proem-wasm`'s `workspace_fs.rs`: stable hooks see no per-turn file and fixed times; at most 16 files open at once; reads of at most 64 KiB, charged) |
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
//! charge fixed costs by input size (see `proem-wasm`'s `CallClock`), so whether the
//! tokenizer was built or a count was memoised never changes what a plugin
//! can do within its deadline. Every host function that does work in
//! proportion to what it is asked (files, listings, random bytes, token
//! counts) is capped per call and charged; the rest (the clocks, stdio,
//! `log`, denied sockets) do a fixed, small amount of work and are charged
//! their real time like the plugin's own code.

use crate::tokens::Tokenizer;
use sha2::{Digest, Sha256};
use std::path::PathBuf;
use std::time::Duration;

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
/// time is not the plugin's): instantiation, a cold
/// tokenizer, file reads. A call therefore ends within its deadline plus
/// this plus two epoch ticks, whatever it asks of the host; past it, the
/// host's time counts as the plugin's.
pub const HOST_TIME_ALLOWANCE: Duration = Duration::from_millis(100);

/// A log line a plugin wrote through the `host` interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    /// Its level.
    pub level: tracing::Level,
    /// Its text.
    pub message: String,
}

/// What of the workspace a call sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum View {
    /// Every file with its real metadata (turn hooks, the per-turn half of
    /// a 0.1 hook).
    #[default]
    Turn,
    /// The stable inputs only (see the module docs).
    Stable,
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

/// A reproducible seed per plugin id.
pub fn seed(plugin: &str) -> u64 {
    let digest = Sha256::digest(format!("proem-plugin-seed:{plugin}").as_bytes());
    u64::from_le_bytes(digest[..8].try_into().expect("8 bytes"))
}
