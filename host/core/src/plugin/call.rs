//! One hook call as the plugin set and a runtime speak of it: the request,
//! the answer, the limits, and a verdict that says in words what went wrong
//! (the call itself is the runtime's: `proem-wasm`'s `call`).

use crate::plugin::hooks::{self, BuildContext, Hook, PluginInfo, RawFile, RawOverlay, RawSection};
use crate::plugin::sandbox::LogLine;
use crate::report::PluginStatus;
use std::time::Duration;

/// A hook to call, with its arguments.
#[derive(Debug, Clone)]
pub enum Request {
    /// `describe.info`.
    Info,
    /// `sections.contribute`.
    Sections(BuildContext),
    /// `overlay.overlay`.
    Overlay(BuildContext),
    /// `bootstrap.on-bootstrap` (0.2: sees the stable files only).
    Bootstrap(BuildContext, Vec<RawFile>),
    /// 0.2 `stable.contribute`, with the stable files.
    Stable(BuildContext, Vec<RawFile>),
    /// 0.2 `turn.contribute`, with the per-turn files.
    Turn(BuildContext, Vec<RawFile>),
}

impl Request {
    /// The hook it calls.
    pub fn hook(&self) -> Hook {
        match self {
            Request::Info => Hook::Describe,
            Request::Sections(_) => Hook::Sections,
            Request::Overlay(_) => Hook::Overlay,
            Request::Bootstrap(..) => Hook::Bootstrap,
            Request::Stable(..) => Hook::Stable,
            Request::Turn(..) => Hook::Turn,
        }
    }
}

/// A hook's answer.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub enum Response {
    /// From `describe`.
    Info(PluginInfo),
    /// From `sections`.
    Sections(Vec<RawSection>),
    /// From `overlay`.
    Overlay(Option<RawOverlay>),
    /// From `agent:bootstrap`.
    Bootstrap(Vec<RawFile>),
    /// From 0.2 `stable` or `turn`: sections (in the hook's zone) and the
    /// prefix or suffix as an overlay.
    Contribution(Vec<RawSection>, RawOverlay),
}

/// Why a call failed, in the words the report uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The plugin returned `Err(message)`.
    Returned(String),
    /// Its wasm ran past the CPU deadline.
    Deadline(Duration),
    /// The call was still running (blocked in a host call, or host calls
    /// took more real time than the allowance) at its wall-clock timeout.
    Timeout(Duration),
    /// Memory growth beyond the cap was refused.
    Memory {
        /// The cap in bytes.
        limit: usize,
        /// The size the denied growth asked for, in bytes.
        asked: usize,
    },
    /// A trap: panic, stack overflow, unreachable… with stderr when any.
    Trap(String),
    /// The sandbox could not be set up, or another host-side problem.
    Host(String),
}

impl Failure {
    /// The plugin status in the report.
    pub fn status(&self) -> PluginStatus {
        match self {
            Failure::Returned(_) => PluginStatus::Error,
            Failure::Deadline(_) | Failure::Timeout(_) => PluginStatus::Timeout,
            Failure::Memory { .. } => PluginStatus::MemoryLimit,
            Failure::Trap(_) => PluginStatus::Trapped,
            Failure::Host(_) => PluginStatus::Failed,
        }
    }

    /// The diagnostic code.
    pub fn code(&self) -> &'static str {
        match self {
            Failure::Returned(_) => "plugin_error",
            Failure::Deadline(_) | Failure::Timeout(_) => "plugin_timeout",
            Failure::Memory { .. } => "plugin_memory_limit",
            Failure::Trap(_) => "plugin_trap",
            Failure::Host(_) => "plugin_failed",
        }
    }

    /// What happened, for the diagnostic.
    pub fn describe(&self) -> String {
        match self {
            Failure::Returned(m) => format!("returned an error: {m}"),
            Failure::Deadline(d) => format!("ran past its CPU deadline of {} ms and was stopped", d.as_millis()),
            Failure::Timeout(d) => format!(
                "was still running at its wall-clock timeout ({} ms plus at most {} ms of host time) and was stopped",
                d.as_millis(),
                crate::plugin::sandbox::HOST_TIME_ALLOWANCE.as_millis()
            ),
            Failure::Memory { limit, asked } => format!(
                "hit its memory limit of {} MiB (asked to grow to {} MiB)",
                limit / (1024 * 1024),
                asked.div_ceil(1024 * 1024)
            ),
            Failure::Trap(m) => format!("trapped: {m}"),
            Failure::Host(m) => m.clone(),
        }
    }
}

/// The result of one call, with what the plugin logged and how long it took.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The answer or the failure.
    pub result: Result<Response, Failure>,
    /// Warnings and errors it logged.
    pub logs: Vec<LogLine>,
    /// Wall time of the call, instantiation included.
    pub elapsed: Duration,
}

impl Outcome {
    /// A failure on the host's side, before any plugin code ran (it took no
    /// time).
    pub fn host_failure(message: String) -> Outcome {
        Outcome { result: Err(Failure::Host(message)), logs: Vec::new(), elapsed: Duration::ZERO }
    }
}

/// Per-call limits.
#[derive(Debug, Clone, Copy)]
pub struct CallLimits {
    /// CPU (epoch) deadline, also the base of the wall-clock timeout.
    pub deadline: Duration,
    /// The most bytes the host copies out of the plugin in one transfer (a
    /// hook's result, one host call's arguments): wasmtime's hostcall fuel.
    /// Strings and lists are counted as they are lifted, so a result whose
    /// strings all point at the same guest memory (lifted once per string)
    /// traps instead of multiplying the host's memory.
    pub max_transfer: usize,
}

impl CallLimits {
    /// The limits of a plugin whose outputs are capped at `caps`: its
    /// deadline, and a transfer cap of every item at its largest plus room
    /// for one `count-tokens` text and the records around them.
    pub fn for_plugin(deadline: Duration, caps: hooks::OutputCaps) -> CallLimits {
        let outputs = caps.max_items.saturating_mul(caps.max_bytes);
        let max_transfer = outputs.max(crate::plugin::sandbox::COUNT_TOKENS_MAX_BYTES) + TRANSFER_SLACK;
        CallLimits { deadline, max_transfer }
    }
}

/// Room in the transfer cap for ids, names, list headers and the like.
const TRANSFER_SLACK: usize = 1024 * 1024;
