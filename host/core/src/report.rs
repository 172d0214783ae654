//! The result of a build: the prompt, split at the boundary, and a report of
//! where every byte came from. Serialises to DESIGN.md's JSON object exactly.

use crate::mode::Mode;
use crate::section::Zone;
use serde::Serialize;

/// How serious a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Worth knowing (a file absent, a form chosen).
    Info,
    /// Something was cut, refused or ignored.
    Warn,
    /// Something failed; the build went on without it.
    Error,
}

/// One thing the build wants its caller to know.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// Severity.
    pub level: Level,
    /// Stable machine-readable code, e.g. `file_truncated`.
    pub code: String,
    /// What happened, naming the file, section or input.
    pub message: String,
}

impl Diagnostic {
    /// An info diagnostic.
    pub fn info(code: &str, message: impl Into<String>) -> Self {
        Diagnostic { level: Level::Info, code: code.into(), message: message.into() }
    }
    /// A warning.
    pub fn warn(code: &str, message: impl Into<String>) -> Self {
        Diagnostic { level: Level::Warn, code: code.into(), message: message.into() }
    }
    /// An error the build survived.
    pub fn error(code: &str, message: impl Into<String>) -> Self {
        Diagnostic { level: Level::Error, code: code.into(), message: message.into() }
    }
}

/// Token counts of the rendered prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TokenReport {
    /// The whole prompt, marker included, and the turn context when it is
    /// returned apart (`[cache] per_turn = "user_message"`).
    pub total: usize,
    /// The stable part.
    pub stable: usize,
    /// The dynamic part.
    pub dynamic: usize,
    /// The budget it was fitted to.
    pub budget: usize,
    /// Tokens of the tool schemas sent to the model natively, beside the
    /// prompt (`[tools] native_calling`, the default): they cost context
    /// though they are not in the prompt. 0 when the schemas are in the
    /// prompt (tool_protocol) or there are no tools.
    pub tool_schemas: usize,
}

/// One section of the final prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SectionReport {
    /// Section id.
    pub id: String,
    /// `core` or `plugin:<id>`.
    pub source: String,
    /// `stable` or `dynamic`.
    pub zone: Zone,
    /// Characters of its body.
    pub chars: usize,
    /// Tokens of its body.
    pub tokens: usize,
    /// Whether the budget (or a cap) shortened it.
    pub truncated: bool,
    /// xxh3 of its body (the low half of its xxh3-128), to tell which
    /// section changed between two builds
    /// (`proem serve`'s compare view; not part of the JSON contract).
    #[serde(skip)]
    pub body_hash: u64,
}

/// The `source` of a file read from the agent directory.
pub const WORKSPACE_SOURCE: &str = "workspace";

/// One bootstrap file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileReport {
    /// Workspace-relative name.
    pub name: String,
    /// Characters after normalisation and front matter stripping.
    pub raw_chars: usize,
    /// Characters injected into the prompt.
    pub injected_chars: usize,
    /// Whether it was cut.
    pub truncated: bool,
    /// Whether it was absent (or could not be read; see diagnostics).
    pub missing: bool,
    /// Where its text came from: `workspace`, or `plugin:<id>` when an
    /// `agent:bootstrap` hook supplied or changed it.
    pub source: String,
}

/// More about one file, for `proem inspect` (not part of the JSON contract).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FileDetail {
    /// Tokens of the injected text.
    pub tokens: usize,
    /// Where it was injected; `None` when it was not.
    pub zone: Option<Zone>,
    /// `workspace` (or the plugin that supplied it).
    pub source: String,
    /// Why it is not in the prompt, when it is not (`missing`, `for the
    /// budget`, `not used in this mode or session`, ...).
    pub why_not_shown: Option<String>,
}

/// A section the layout knows that is not in this prompt, and why (for
/// `proem inspect`; not part of the JSON contract).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftOut {
    /// Section id.
    pub id: String,
    /// `core` or `plugin:<id>`.
    pub source: String,
    /// Why: `for the budget`, `not in this mode (MODE)`.
    pub why: String,
}

/// How a plugin's part of a build went, as the report and `/metrics` name
/// it (`ok`, `load_failed`, `error`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PluginStatus {
    /// Every call answered.
    Ok,
    /// It could not be loaded (the reason is a diagnostic).
    LoadFailed,
    /// A hook returned its own error.
    Error,
    /// A hook ran past its deadline.
    Timeout,
    /// A hook asked for more memory than `memory_mib`.
    MemoryLimit,
    /// A hook trapped (a panic, an illegal instruction).
    Trapped,
    /// The host could not run it.
    Failed,
}

impl PluginStatus {
    /// Its name in the report.
    pub fn as_str(self) -> &'static str {
        match self {
            PluginStatus::Ok => "ok",
            PluginStatus::LoadFailed => "load_failed",
            PluginStatus::Error => "error",
            PluginStatus::Timeout => "timeout",
            PluginStatus::MemoryLimit => "memory_limit",
            PluginStatus::Trapped => "trapped",
            PluginStatus::Failed => "failed",
        }
    }
}

/// Compares with its name, as the JSON report spells it.
impl PartialEq<&str> for PluginStatus {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl std::fmt::Display for PluginStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One plugin's outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PluginReport {
    /// Plugin id.
    pub id: String,
    /// How it went.
    pub status: PluginStatus,
    /// Time spent in the plugin this build; 0 when it was `remembered`.
    pub elapsed_us: u64,
    /// Whether this build made no call to the plugin because every answer
    /// it needed was remembered (the build memo, or the memo of plugin
    /// answers in this process or on disk): nothing ran, so no time was
    /// spent (`elapsed_us` is 0) and `/metrics` counts no call.
    pub remembered: bool,
}

impl PluginReport {
    /// The report of a plugin no call of this build reached (yet).
    pub fn new(id: &str, status: PluginStatus) -> PluginReport {
        PluginReport { id: id.into(), status, elapsed_us: 0, remembered: false }
    }
}

/// One input of the stable part and its digest (see
/// `crate::stable_inputs`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, serde::Deserialize)]
pub struct StableInput {
    /// The section it feeds, `source/id` (`core/project_context`,
    /// `plugin:weather/forecast`); empty for an input of the whole build.
    pub section: String,
    /// `body`, `file:NAME`, `plugin:ID`, `config:[TABLE]`, `tools` or
    /// `skills`.
    pub input: String,
    /// xxh3-64 of it, 16 hex digits.
    pub digest: String,
}

/// A built prompt and its report. `serde_json::to_string` gives the JSON
/// contract of DESIGN.md.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Built {
    /// stable + `\n` + marker + `\n` + dynamic.
    pub prompt: String,
    /// Above the boundary. Shared: a rebuild whose stable part is
    /// unchanged (a new clock) hands out the same text.
    pub stable: std::sync::Arc<str>,
    /// Below the boundary.
    pub dynamic: String,
    /// The session block, the start of `dynamic`, when `[cache]
    /// session_tier` is on (not serialised: the provider formats place it).
    #[serde(skip)]
    pub session: Option<String>,
    /// With `[cache] per_turn = "user_message"`, the per-turn sections
    /// (date, extra prompt, `turn` hooks' sections), out of the system
    /// prompt, for the runtime to prepend to the newest user message
    /// (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn_context: Option<String>,
    /// SHA-256 (hex) of `stable`.
    pub stable_hash: String,
    /// The resolved mode.
    pub mode: Mode,
    /// `o200k_base`, `cl100k_base`, `claude-estimate`, or `hf-` and 13 hex
    /// digits of the tokenizer.json's SHA-256.
    pub tokenizer: String,
    /// Whether the token counts are the model's own tokenizer's: `false`
    /// for `claude-estimate` and for a model counted with a stand-in (an
    /// open model without its tokenizer.json, an unknown model).
    pub exact: bool,
    /// Token counts.
    pub tokens: TokenReport,
    /// Sections in prompt order.
    pub sections: Vec<SectionReport>,
    /// What fed the stable part, with digests, to tell what moved the
    /// stable hash between two builds (see [`crate::stable_inputs`]).
    /// Shared: a rebuild whose stable part is unchanged (a new clock)
    /// hands out the same rows.
    pub stable_inputs: std::sync::Arc<[StableInput]>,
    /// Bootstrap files in load order.
    pub files: Vec<FileReport>,
    /// Plugins in id order.
    pub plugins: Vec<PluginReport>,
    /// Everything worth knowing, in the order it happened.
    pub diagnostics: Vec<Diagnostic>,
    /// Per-file tokens, zone and source, aligned with `files` (not serialised).
    #[serde(skip)]
    pub file_details: Vec<FileDetail>,
    /// The layout's sections not in this prompt, with why (not serialised).
    #[serde(skip)]
    pub left_out: Vec<LeftOut>,
    /// How the provider formats shape the request (not serialised).
    #[serde(skip)]
    pub cache: crate::cache::CachePlan,
}

impl Built {
    /// This build as the build memo answers it again: the same prompt and
    /// report, but no plugin ran, so each plugin's report says it was
    /// remembered and took no time.
    pub fn remembered(&self) -> Built {
        let mut again = self.clone();
        for p in &mut again.plugins {
            p.remembered = true;
            p.elapsed_us = 0;
        }
        again
    }

    /// Whether a plugin of this build failed for a reason of the moment
    /// rather than of its inputs: it ran out of time (the machine was
    /// busy) or the host could not run it (out of descriptors or memory,
    /// say). The same inputs may build otherwise a moment later, so the
    /// build memo does not keep such a build, as the plugin-answer memo
    /// keeps no failure.
    pub fn depends_on_the_moment(&self) -> bool {
        self.plugins.iter().any(|p| matches!(p.status, PluginStatus::Timeout | PluginStatus::Failed))
    }
}
