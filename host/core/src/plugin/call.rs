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

/// Why a call failed: one variant per kind of failure the report tells
/// apart, decided from typed facts (a wasmtime `Trap`, the call's own
/// memory limiter and clocks, the host's own error types), never from an
/// error's text. [`Display`](std::fmt::Display) is the diagnostic's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PluginError {
    /// The plugin returned `Err(message)` (a [`hooks::label`]).
    Returned(String),
    /// Its wasm ran past the CPU deadline (the epoch interrupt).
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
    /// It passed the host more bytes at once than its transfer cap
    /// (wasmtime's hostcall fuel ran out): nothing was copied.
    Transfer {
        /// The cap in bytes ([`CallLimits::max_transfer`]).
        max: usize,
    },
    /// Its stack overflowed.
    StackOverflow,
    /// It panicked or aborted (wasm `unreachable`).
    Panicked {
        /// The tail of its stderr, when it wrote any.
        stderr: Option<String>,
    },
    /// It called an import the sandbox denies (a denied stub): the text
    /// names the import (a [`hooks::label`], its stderr included).
    Denied(String),
    /// Another trap, in wasmtime's words (a [`hooks::label`], its stderr
    /// included).
    Trap(String),
    /// Its answer broke the output rules.
    BadOutput {
        /// Whether the answer was a bootstrap call's files.
        files: bool,
        /// Which rule, and where.
        why: String,
    },
    /// It answered another hook than the one called (`files`: a bootstrap
    /// call, reported as such since 0.1).
    WrongHook {
        /// Whether the call was a bootstrap call.
        files: bool,
    },
    /// The runtime refused the binary before compiling it (not a component,
    /// an API version or an import it lacks): the text says which.
    Refused(String),
    /// The binary could not be compiled (`cannot compile: …`).
    Compile(String),
    /// The compiled code could not be linked: an import the host lacks, or
    /// exports that do not match its API version (the text says which).
    Link(String),
    /// The sandbox or the engine could not be set up, or another host-side
    /// problem.
    Host(String),
    /// The host ran out of file descriptors or memory while it ran the
    /// plugin (mounting its workspace, answering its reads): its answer, if
    /// any, is not the plugin's answer to these inputs. Unlike every other
    /// failure this one fails the build ([`crate::ProemError::Exhausted`]):
    /// what is built never depends on the machine's load.
    Exhausted(String),
}

impl PluginError {
    /// The plugin status in the report.
    pub fn status(&self) -> PluginStatus {
        match self {
            PluginError::Returned(_) => PluginStatus::Error,
            PluginError::Deadline(_) | PluginError::Timeout(_) => PluginStatus::Timeout,
            PluginError::Memory { .. } => PluginStatus::MemoryLimit,
            PluginError::Transfer { .. }
            | PluginError::StackOverflow
            | PluginError::Panicked { .. }
            | PluginError::Denied(_)
            | PluginError::Trap(_) => PluginStatus::Trapped,
            PluginError::BadOutput { .. }
            | PluginError::WrongHook { .. }
            | PluginError::Refused(_)
            | PluginError::Compile(_)
            | PluginError::Link(_)
            | PluginError::Host(_)
            | PluginError::Exhausted(_) => PluginStatus::Failed,
        }
    }

    /// The diagnostic code.
    pub fn code(&self) -> &'static str {
        if let PluginError::Exhausted(_) = self {
            return EXHAUSTED_CODE;
        }
        match self.status() {
            PluginStatus::Error => "plugin_error",
            PluginStatus::Timeout => "plugin_timeout",
            PluginStatus::MemoryLimit => "plugin_memory_limit",
            PluginStatus::Trapped => "plugin_trap",
            _ => "plugin_failed",
        }
    }

    /// What happened, for the diagnostic (its [`Display`](std::fmt::Display)).
    pub fn describe(&self) -> String {
        self.to_string()
    }

    /// A trap's text with the plugin's stderr, when any, as one
    /// [`hooks::label`] (both carry plugin-controlled strings).
    pub fn with_stderr(what: &str, stderr: Option<&str>) -> String {
        match stderr {
            Some(text) => hooks::label(&format!("{what}; its stderr: {text}"), 1500),
            None => hooks::label(what, 1500),
        }
    }
}

impl std::fmt::Display for PluginError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PluginError::Returned(m) => write!(f, "returned an error: {m}"),
            PluginError::Deadline(d) => write!(f, "ran past its CPU deadline of {} ms and was stopped", d.as_millis()),
            PluginError::Timeout(d) => write!(
                f,
                "was still running at its wall-clock timeout ({} ms plus at most {} ms of host time) and was stopped",
                d.as_millis(),
                crate::plugin::sandbox::HOST_TIME_ALLOWANCE.as_millis()
            ),
            PluginError::Memory { limit, asked } => write!(
                f,
                "hit its memory limit of {} MiB (asked to grow to {} MiB)",
                limit / (1024 * 1024),
                asked.div_ceil(1024 * 1024)
            ),
            PluginError::Transfer { max } => write!(
                f,
                "trapped: passed the host more than {max} bytes at once, more than its output caps allow; \
                 nothing was copied"
            ),
            PluginError::StackOverflow => f.write_str("trapped: stack overflow"),
            PluginError::Panicked { stderr } => {
                write!(f, "trapped: {}", Self::with_stderr("the plugin panicked or aborted", stderr.as_deref()))
            }
            PluginError::Denied(m) | PluginError::Trap(m) => write!(f, "trapped: {m}"),
            PluginError::BadOutput { files: true, why } => write!(f, "returned invalid files: {why}"),
            PluginError::BadOutput { files: false, why } => write!(f, "returned invalid output: {why}"),
            PluginError::WrongHook { files: true } => f.write_str("answered with the wrong hook"),
            PluginError::WrongHook { files: false } => {
                f.write_str("returned invalid output: answered with the wrong hook")
            }
            PluginError::Refused(m) | PluginError::Compile(m) | PluginError::Link(m) | PluginError::Host(m) => {
                f.write_str(m)
            }
            PluginError::Exhausted(m) => {
                write!(f, "the host ran out of file descriptors or memory while it ran the plugin: {m}")
            }
        }
    }
}

impl std::error::Error for PluginError {}

/// The diagnostic code of [`PluginError::Exhausted`]. A build never shows
/// it: it fails instead (`BuildRun::fail` in `plugin/set.rs`).
pub const EXHAUSTED_CODE: &str = "plugin_host_exhausted";

/// The result of one call, with what the plugin logged and how long it took.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The answer or the failure.
    pub result: Result<Response, PluginError>,
    /// Warnings and errors it logged.
    pub logs: Vec<LogLine>,
    /// Wall time of the call, instantiation included.
    pub elapsed: Duration,
}

impl Outcome {
    /// A failure on the host's side, before any plugin code ran (it took no
    /// time).
    pub fn host_failure(message: String) -> Outcome {
        Outcome::failure(PluginError::Host(message))
    }

    /// A call that failed before any plugin code ran (it took no time).
    pub fn failure(error: PluginError) -> Outcome {
        Outcome { result: Err(error), logs: Vec::new(), elapsed: Duration::ZERO }
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

#[cfg(test)]
mod plugin_error_tests {
    use super::*;

    /// The failures no wasmtime error makes (those are `proem-wasm`'s
    /// `call::tests`): the status, code and text of each, as the report
    /// has always given them.
    #[test]
    fn each_failure_has_its_status_code_and_text() {
        let ms = Duration::from_millis;
        let allowance = crate::plugin::sandbox::HOST_TIME_ALLOWANCE.as_millis();
        let cases = [
            (PluginError::Returned("no".into()), PluginStatus::Error, "plugin_error", "returned an error: no".into()),
            (
                PluginError::Timeout(ms(50)),
                PluginStatus::Timeout,
                "plugin_timeout",
                format!(
                    "was still running at its wall-clock timeout (50 ms plus at most {allowance} ms of host time) \
                     and was stopped"
                ),
            ),
            (
                PluginError::BadOutput { files: false, why: "id \"\" is empty".into() },
                PluginStatus::Failed,
                "plugin_failed",
                "returned invalid output: id \"\" is empty".into(),
            ),
            (
                PluginError::BadOutput { files: true, why: "two files named A.md".into() },
                PluginStatus::Failed,
                "plugin_failed",
                "returned invalid files: two files named A.md".into(),
            ),
            (
                PluginError::WrongHook { files: false },
                PluginStatus::Failed,
                "plugin_failed",
                "returned invalid output: answered with the wrong hook".into(),
            ),
            (
                PluginError::WrongHook { files: true },
                PluginStatus::Failed,
                "plugin_failed",
                "answered with the wrong hook".into(),
            ),
            (PluginError::Host("cannot mount".into()), PluginStatus::Failed, "plugin_failed", "cannot mount".into()),
            (
                PluginError::Panicked { stderr: Some("boom\nat main".into()) },
                PluginStatus::Trapped,
                "plugin_trap",
                "trapped: the plugin panicked or aborted; its stderr: boom at main".into(),
            ),
        ];
        for (error, status, code, text) in cases {
            assert_eq!((error.status(), error.code(), error.to_string()), (status, code, text), "{error:?}");
            assert_eq!(error.describe(), error.to_string());
        }
    }
}
