//! `proem.toml`: the agent's configuration.
//!
//! Every key has a default, so an empty file (or no file) is valid. Unknown
//! keys and wrong types are errors naming the file, the key and the line:
//! a typo must never silently fall back to a default.

use crate::bounds::{self, Bound};
use crate::error::ProemError;
use crate::mode::Mode;
use crate::paths::check_relative_path;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The ids of the official plugins every proem carries (`source =
/// "builtin:<id>"`), sorted. The plugin runtime embeds their code
/// (`proem-wasm`'s `builtin`, which checks it embeds exactly these).
pub const BUILTIN_IDS: [&str; 3] = ["aieos-identity", "gpt5-overlay", "hardware-access"];

/// The file name looked up in the agent directory.
pub const CONFIG_FILE: &str = "proem.toml";

/// The whole configuration. It serialises to the same keys it reads, so
/// every key and its default can be listed (the tests sweep every number).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// `[agent]`
    pub agent: AgentConfig,
    /// `[provider]`
    pub provider: ProviderConfig,
    /// `[budget]`
    pub budget: BudgetConfig,
    /// `[bootstrap]`
    pub bootstrap: BootstrapConfig,
    /// `[tools]`
    pub tools: ToolsConfig,
    /// `[sandbox]`
    pub sandbox: SandboxConfig,
    /// `[runtime]`
    pub runtime: RuntimeConfig,
    /// `[sessions]`
    pub sessions: SessionsConfig,
    /// `[team]`
    pub team: TeamConfig,
    /// `[skills]`
    pub skills: SkillsConfig,
    /// `[prompt]`: wording variants of sections (the presets turn some on).
    pub prompt: PromptConfig,
    /// `[layout]`: changes to the layout (see [`crate::layout`]).
    pub layout: crate::layout::LayoutConfig,
    /// `[cache]`: the request's cached blocks (see [`crate::cache`]).
    pub cache: crate::cache::CacheConfig,
    /// `[[plugins]]`
    pub plugins: Vec<PluginConfig>,
    /// The layout in use: the preset's (or the default), with `[layout]`
    /// applied and checked when the config is parsed.
    #[serde(skip)]
    pub active_layout: crate::layout::Layout,
}

/// Open agents treat their files as user-editable context; predefined agents
/// treat them as operator configuration.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum AgentKind {
    /// Files wrapped in `<context_file>`.
    #[default]
    Open,
    /// Files wrapped in `<internal_config>` (USER.md and BOOTSTRAP.md excepted).
    Predefined,
}

/// `[agent]`
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct AgentConfig {
    /// Agent id; defaults to the agent directory's name.
    pub id: Option<String>,
    /// Display name used in the identity line; defaults to the id.
    pub name: Option<String>,
    /// `open` (default) or `predefined`.
    pub kind: AgentKind,
    /// Default mode; `full` when unset.
    pub mode: Option<Mode>,
    /// Whether the agent may update its own SOUL.md within stated limits
    /// (GoClaw's self-evolution; default false).
    pub self_evolution: bool,
    /// The identity guard for predefined agents: users cannot rewrite the
    /// agent's identity or rules by asking (default true; open agents never
    /// get it).
    pub identity_anchor: bool,
    /// What `none` mode keeps: `standard` (GoClaw's: identity, tooling,
    /// safety, workspace, runtime, extra prompt) or `identity_only`
    /// (OpenClaw's).
    pub none_mode: NoneMode,
    /// Defaults that reproduce another system's prompt structure; every
    /// key a preset sets can still be set here (see [`Preset`]).
    pub preset: Option<Preset>,
}

/// What `none` mode keeps.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum NoneMode {
    /// GoClaw's `none`: identity, tooling, safety, workspace, runtime, the
    /// extra prompt and the tool protocol.
    #[default]
    Standard,
    /// OpenClaw's `none`: the identity line alone.
    IdentityOnly,
}

/// A set of defaults that reproduces another system's prompt: its layout
/// (the sections it has, in its order, under its headings, per mode and
/// zone) and its config defaults. Each is a TOML document
/// (`host/core/src/presets/`) laid under the agent's proem.toml: what the
/// agent sets wins, key by key (`[layout]` changes the preset's layout).
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Preset {
    /// OpenClaw.
    Openclaw,
    /// GoClaw.
    Goclaw,
    /// ZeroClaw.
    Zeroclaw,
}

impl Preset {
    /// The preset's TOML text.
    pub fn toml(self) -> &'static str {
        match self {
            Preset::Openclaw => include_str!("presets/openclaw.toml"),
            Preset::Goclaw => include_str!("presets/goclaw.toml"),
            Preset::Zeroclaw => include_str!("presets/zeroclaw.toml"),
        }
    }

    /// Its name in proem.toml.
    pub fn name(self) -> &'static str {
        match self {
            Preset::Openclaw => "openclaw",
            Preset::Goclaw => "goclaw",
            Preset::Zeroclaw => "zeroclaw",
        }
    }
}

/// What the prompt says about files cut to fit (OpenClaw's truncation
/// warning, without the state "once per session" would need: "once" is
/// about each file cut to nothing).
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum TruncationNotice {
    /// Only the head/tail marker inside a cut file.
    Off,
    /// A file cut to nothing keeps a one-line notice.
    #[default]
    Once,
    /// That, and a line per file group listing every cut file.
    Always,
}

/// How a missing standard file shows in the prompt.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum MissingMarker {
    /// Skipped (GoClaw).
    #[default]
    Off,
    /// `[MISSING] Expected at: <path>` for the expected files (OpenClaw).
    ExpectedAt,
    /// `[File not found: NAME]` for every missing file (ZeroClaw).
    FileNotFound,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            id: None,
            name: None,
            kind: AgentKind::Open,
            mode: None,
            self_evolution: false,
            identity_anchor: true,
            none_mode: NoneMode::Standard,
            preset: None,
        }
    }
}

/// `[skills]`: which skills are listed, where they come from, how much of
/// the prompt they may take.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SkillsConfig {
    /// Only these skills (by name, ignoring case) are listed; unset: all.
    pub allow: Option<Vec<String>>,
    /// Skills listed in every mode but `none`'s absence of skills: in
    /// minimal and none they are the only ones shown (GoClaw's Pinned
    /// Skills), in task they are listed beside the search hint.
    pub pinned: Vec<String>,
    /// The most tokens the skills section may take, apart from the whole
    /// budget (compact form, then fewer skills, until it fits).
    pub max_tokens: Option<usize>,
    /// More skill folders after `skills/`, in precedence order (relative to
    /// the agent directory, e.g. shared or managed skills): the first
    /// folder that has a name wins.
    pub folders: Vec<String>,
    /// The form of the skills section in each mode.
    pub forms: SkillForms,
    /// In full mode, more skills than this switch the list to the search
    /// form (GoClaw: 60).
    pub search_above_count: usize,
    /// In full mode, a list estimated above this share of the token budget
    /// switches to the search form (GoClaw: 3,000 tokens of 24,000).
    pub search_above_share: f64,
}

impl Default for SkillsConfig {
    fn default() -> Self {
        SkillsConfig {
            allow: None,
            pinned: Vec::new(),
            max_tokens: None,
            folders: Vec::new(),
            forms: SkillForms::default(),
            search_above_count: 60,
            search_above_share: 0.125,
        }
    }
}

/// `[skills.forms]`: what the skills section shows in each mode.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct SkillForms {
    /// Full mode (default `list`).
    pub full: SkillForm,
    /// Task mode (default `search`).
    pub task: SkillForm,
    /// Minimal mode (default `pinned`).
    pub minimal: SkillForm,
    /// None mode (default `pinned`).
    pub none: SkillForm,
}

impl Default for SkillForms {
    fn default() -> Self {
        SkillForms {
            full: SkillForm::List,
            task: SkillForm::Search,
            minimal: SkillForm::Pinned,
            none: SkillForm::Pinned,
        }
    }
}

impl SkillForms {
    /// The form for `mode`.
    pub fn of(&self, mode: Mode) -> SkillForm {
        match mode {
            Mode::Full => self.full,
            Mode::Task => self.task,
            Mode::Minimal => self.minimal,
            Mode::None => self.none,
        }
    }
}

/// One mode's form of the skills section.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum SkillForm {
    /// Every skill with its description (the search form past
    /// `search_above_count` / `search_above_share` in full mode).
    List,
    /// How to find a skill, plus the pinned ones.
    Search,
    /// The pinned skills alone.
    Pinned,
    /// No skills section.
    Off,
}

/// `[team]`: GoClaw's team context. When it names members or delegates,
/// the `team` section lists them and the spawn section gives way to it.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct TeamConfig {
    /// The team roster.
    pub members: Vec<TeamMember>,
    /// Agent ids work may be delegated to.
    pub delegates: Vec<String>,
    /// The team's shared folder, relative to the agent directory; its
    /// TEAM.md is read as a project file.
    pub workspace: Option<String>,
    /// This agent's place in the team: `lead` (dispatches and follows up)
    /// or `member` (works its tasks, reports back); unset: neither said.
    pub role: Option<TeamRole>,
}

/// An agent's place in its team (GoClaw's lead and member TEAM.md).
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum TeamRole {
    /// Splits the work into tasks and assigns them.
    Lead,
    /// Works the tasks it is given.
    Member,
}

/// One member of `[team] members`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct TeamMember {
    /// Their name or agent id.
    pub name: String,
    /// What they do.
    pub role: String,
}

impl TeamConfig {
    /// Whether team context is on.
    pub fn is_on(&self) -> bool {
        !self.members.is_empty() || !self.delegates.is_empty() || self.workspace.is_some()
    }

    /// The shared folder without a trailing `/`.
    pub fn folder(&self) -> Option<&str> {
        self.workspace.as_deref().map(|ws| ws.trim_end_matches('/'))
    }

    /// The workspace-relative path of the team's TEAM.md.
    pub fn team_file(&self) -> Option<String> {
        self.folder().map(|ws| format!("{ws}/TEAM.md"))
    }
}

/// `[sessions]`: how sub-agent and heartbeat sessions are prompted.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SessionsConfig {
    /// The mode a sub-agent session (`…:subagent:…` key) is capped at
    /// (default `task`; OpenClaw gives sub-agents `minimal`).
    pub subagent_mode: Mode,
    /// The extra prompt's heading in sub-agent sessions (default: the
    /// layout's heading for the mode).
    pub subagent_heading: Option<String>,
    /// The mode a cron session (`…:cron:<job>` key) is capped at (default
    /// `task`; OpenClaw: `minimal`).
    pub cron_mode: Mode,
    /// The mode a heartbeat session is capped at (default `minimal`;
    /// OpenClaw keeps heartbeats `full`).
    pub heartbeat_mode: Mode,
    /// The exact reply a heartbeat turn gives when nothing needs attention
    /// (default `HEARTBEAT_OK`).
    pub heartbeat_ack: String,
    /// The exact reply that means "say nothing" in group chats and turns
    /// where replies are optional (default `NO_REPLY`).
    pub silent_token: String,
    /// `24h` or `12h`: how to write times for the user; unset, no line.
    pub clock: Option<Clock>,
}

/// How the agent writes times.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
pub enum Clock {
    /// 14:30.
    #[serde(rename = "24h")]
    H24,
    /// 2:30 PM.
    #[serde(rename = "12h")]
    H12,
}

impl Default for SessionsConfig {
    fn default() -> Self {
        SessionsConfig {
            subagent_mode: Mode::Task,
            subagent_heading: None,
            cron_mode: Mode::Task,
            heartbeat_mode: Mode::Minimal,
            heartbeat_ack: "HEARTBEAT_OK".into(),
            silent_token: "NO_REPLY".into(),
            clock: None,
        }
    }
}

/// `[provider]`
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ProviderConfig {
    /// Provider name (`openai`, `anthropic`, …): selects overlays.
    pub name: Option<String>,
    /// Model id: selects overlays and the tokenizer.
    pub model: Option<String>,
}

/// `[budget]`
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct BudgetConfig {
    /// Whole-prompt token budget; see [`BudgetConfig::tokens`] for the
    /// default.
    pub tokens: Option<usize>,
    /// The model's context window in tokens. When set and `tokens` is not,
    /// the budget scales with it (GoClaw): 12% of the window, at least
    /// 4,000 and at most 48,000 (a 200,000-token window gives 24,000).
    pub context_window: Option<usize>,
    /// Per-file character cap (default 20000).
    pub per_file_chars: usize,
    /// Cap on all injected file characters together (default 60000).
    pub total_file_chars: usize,
    /// Share of a truncated file's cap kept from its start (default 0.7).
    pub head_ratio: f64,
    /// Share of a truncated file's cap kept from its end (default 0.2).
    pub tail_ratio: f64,
    /// `o200k_base`, `cl100k_base`, `claude-estimate`, or a Hugging Face
    /// tokenizer.json inside the agent directory (a relative path ending in
    /// `.json`); chosen from the model when unset (see
    /// [`crate::model_tokenizers`]).
    pub tokenizer: Option<String>,
    /// Tokens kept free for the dynamic part when the stable part is fitted
    /// (default 2000; at most a quarter of the budget is reserved).
    pub dynamic_reserve: usize,
}

/// The budget when neither `tokens` nor `context_window` is set.
pub const DEFAULT_BUDGET_TOKENS: usize = 24_000;

impl BudgetConfig {
    /// The whole-prompt budget: `tokens` when set, else 12% of
    /// `context_window` (clamped to 4,000..=48,000) when set, else 24,000.
    pub fn tokens(&self) -> usize {
        match (self.tokens, self.context_window) {
            (Some(tokens), _) => tokens,
            (None, Some(window)) => (window / 100 * 12).clamp(4_000, 48_000),
            (None, None) => DEFAULT_BUDGET_TOKENS,
        }
    }
}

impl Default for BudgetConfig {
    fn default() -> Self {
        BudgetConfig {
            tokens: None,
            context_window: None,
            per_file_chars: 20_000,
            total_file_chars: 60_000,
            head_ratio: 0.7,
            tail_ratio: 0.2,
            tokenizer: None,
            dynamic_reserve: 2_000,
        }
    }
}

/// `[bootstrap]`
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct BootstrapConfig {
    /// More workspace files to inject, relative to the agent directory.
    pub extra_files: Vec<String>,
    /// The files sub-agent and cron sessions keep (default AGENTS.md, TOOLS.md).
    pub subagent_allowlist: Vec<String>,
    /// Strip a leading YAML front matter block (default true).
    pub strip_front_matter: bool,
    /// Bytes read from one file at most (default 2 MiB); the rest is ignored
    /// with a diagnostic.
    pub max_file_bytes: usize,
    /// How a missing standard file shows: `off` (skipped, the default),
    /// `expected_at` (OpenClaw) or `file_not_found` (ZeroClaw).
    pub missing_marker: MissingMarker,
    /// Whether HEARTBEAT.md is read at all (in heartbeat turns; default
    /// true; ZeroClaw never reads it).
    pub heartbeat_file: bool,
    /// What the prompt says about files cut to fit: `off` (the inline
    /// marker only), `once` (default: a file cut to nothing keeps a one-line
    /// notice instead of vanishing), `always` (also a line listing every cut
    /// file with what was kept).
    pub truncation_notice: TruncationNotice,
    /// Whether MEMORY.md (memory.md, MEMORY.json) is read in group chats
    /// (default true). ZeroClaw keeps memory to the main session; false
    /// does that, and then group and direct chats have two stable parts
    /// (each cached on its own).
    pub memory_in_group_chats: bool,
    /// The files each lighter mode keeps (GoClaw's per-mode allowlists);
    /// a mode not set keeps every file.
    pub mode_files: ModeFiles,
}

/// `[bootstrap.mode_files]`: the files `task`, `minimal` and `none` keep.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ModeFiles {
    /// Files task mode keeps.
    pub task: Option<Vec<String>>,
    /// Files minimal mode keeps.
    pub minimal: Option<Vec<String>>,
    /// Files none mode keeps.
    pub none: Option<Vec<String>>,
}

impl ModeFiles {
    /// The files `mode` keeps; `None`: all of them.
    pub fn of(&self, mode: Mode) -> Option<&[String]> {
        match mode {
            Mode::Full => None,
            Mode::Task => self.task.as_deref(),
            Mode::Minimal => self.minimal.as_deref(),
            Mode::None => self.none.as_deref(),
        }
    }
}

impl Default for BootstrapConfig {
    fn default() -> Self {
        BootstrapConfig {
            extra_files: Vec::new(),
            subagent_allowlist: vec!["AGENTS.md".into(), "TOOLS.md".into()],
            strip_front_matter: true,
            max_file_bytes: 2 * 1024 * 1024,
            missing_marker: MissingMarker::Off,
            heartbeat_file: true,
            truncation_notice: TruncationNotice::Once,
            memory_in_group_chats: true,
            mode_files: ModeFiles::default(),
        }
    }
}

/// `[tools]`
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ToolsConfig {
    /// A tools JSON file relative to the agent directory, used when the turn
    /// gives none (`--tools` wins).
    pub file: Option<String>,
    /// The provider calls tools natively (default true). When false, the
    /// `tool_protocol` section teaches the `<tool_call>` text protocol.
    pub native_calling: bool,
    /// Leave alias tools (Claude Code names such as `Read`, `Bash`; GoClaw's
    /// legacy `edit_file`) out of the Tooling list; they stay callable
    /// (default false; GoClaw: true).
    pub hide_aliases: bool,
    /// Free text about command-line tools that are already logged in
    /// (GoClaw's credentialed CLI context), shown when an `exec`-like tool
    /// is present.
    pub credentialed_cli: Option<String>,
    /// Groups of shell commands the runtime blocks (e.g. `network`,
    /// `package_install`), named in the shell section so the agent does not
    /// try them or work around the block.
    pub shell_deny_groups: Vec<String>,
    /// MCP tools up to this many are listed inline in the MCP section; with
    /// more, the section says how to search them (default 24).
    pub mcp_inline_max: usize,
}

impl Default for ToolsConfig {
    fn default() -> Self {
        ToolsConfig {
            file: None,
            native_calling: true,
            hide_aliases: false,
            credentialed_cli: None,
            shell_deny_groups: Vec::new(),
            mcp_inline_max: 24,
        }
    }
}

/// `[sandbox]`: how the agent's own tools run (not proem's plugin sandbox).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SandboxConfig {
    /// The agent's tools run in a container (default false).
    pub enabled: bool,
    /// The working directory inside the container (default `/workspace`).
    pub workdir: String,
    /// Free text appended to the sandbox section.
    pub notes: Option<String>,
    /// The host folder mounted at `workdir` (shown so the agent can map
    /// paths users mention).
    pub host_path: Option<String>,
    /// The container's access to the workspace: `rw` (default), `ro`, `none`.
    pub access: SandboxAccess,
    /// Whether some commands may run elevated on the host (after approval).
    pub elevated_exec: bool,
}

/// How the sandbox container sees the workspace.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum SandboxAccess {
    /// Read and write.
    #[default]
    Rw,
    /// Read only.
    Ro,
    /// Not mounted.
    None,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig {
            enabled: false,
            workdir: "/workspace".into(),
            notes: None,
            host_path: None,
            access: SandboxAccess::Rw,
            elevated_exec: false,
        }
    }
}

/// `[runtime]`: fields of the runtime line.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RuntimeConfig {
    /// Host name shown in the runtime line; omitted when unset.
    pub host: Option<String>,
    /// Channel capabilities (lowercased, sorted, deduplicated in the line).
    pub capabilities: Vec<String>,
    /// The thinking (reasoning) level the model runs at, in the runtime
    /// line (`--thinking` overrides it per turn).
    pub thinking: Option<String>,
    /// The repository root the agent works in, in the runtime line.
    pub repo_root: Option<String>,
    /// OpenClaw's Reasoning Format section: think inside `<think>`, answer
    /// inside `<final>` (for models without native reasoning output).
    pub reasoning_tags: bool,
    /// OpenClaw's reply tags: `[[reply_to_current]]` / `[[reply_to:<id>]]`.
    pub reply_tags: bool,
    /// OpenClaw's Messaging section: replies go to the current chat; other
    /// chats only through the message tool.
    pub messaging: bool,
    /// The reasoning visibility of the session (`off`, `on`, `stream`):
    /// stated in the runtime section with how to toggle it (OpenClaw's
    /// Reasoning line); unset, no line.
    pub reasoning: Option<ReasoningLevel>,
    /// Replies can be spoken (text to speech): the Voice section says how.
    pub voice: bool,
    /// How the agent may react to messages with emoji: `minimal` or
    /// `extensive` (OpenClaw's Reactions); unset, no section.
    pub reactions: Option<Reactions>,
}

/// Whether the model's reasoning is shown to the user.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningLevel {
    /// Hidden.
    Off,
    /// Shown after the reply.
    On,
    /// Streamed as it comes.
    Stream,
}

impl ReasoningLevel {
    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            ReasoningLevel::Off => "off",
            ReasoningLevel::On => "on",
            ReasoningLevel::Stream => "stream",
        }
    }
}

/// How freely the agent reacts with emoji.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Reactions {
    /// Rarely, to acknowledge.
    Minimal,
    /// Often, as part of the conversation.
    Extensive,
}

/// `[prompt]`: wording variants of core sections. proem's defaults are its
/// own; the presets turn on their systems' variants, and any agent may.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct PromptConfig {
    /// `bias` (proem's Execution Bias bullets, left out when the turn has
    /// no tools) or `task` (ZeroClaw's Your Task framing, with its no-tools,
    /// native and text-protocol variants).
    pub execution_bias: ExecutionBiasStyle,
    /// Extra Safety rules: `prefer_trash` (recoverable deletes),
    /// `ask_before_external` (ask before acting outside the workspace).
    pub safety_rules: Vec<SafetyRule>,
    /// Modes whose Safety is the slim text (default task, minimal, none).
    pub slim_safety_in: Vec<Mode>,
    /// `always` (Tooling lists the tools) or `text_protocol` (only when
    /// tools are called through the text protocol, ZeroClaw: native tool
    /// definitions already carry them).
    pub tool_list: ToolList,
    /// Long-running work and sub-agent guidance inside Tooling (OpenClaw)
    /// instead of sections of their own.
    pub guidance_in_tooling: bool,
    /// `by_turn` (the silent-reply rule in group chats and optional turns)
    /// or `always` (a Silent Replies section in every full prompt, OpenClaw).
    pub silent_replies: SilentReplies,
    /// `heartbeat_turns` (the heartbeat contract in heartbeat turns only)
    /// or `every_turn` (OpenClaw: every full prompt explains heartbeats).
    pub heartbeats: HeartbeatGuidance,
    /// `with_channel` (Channel Capabilities when the turn names a channel)
    /// or `always` (ZeroClaw: every prompt, channel or not).
    pub channel_capabilities: ChannelCapabilities,
    /// ZeroClaw's compact context: files capped at 6,000 characters, tools
    /// listed by name only, no Shell or Channel Capabilities section.
    pub compact_context: bool,
    /// `files_or_tools` (Memory when MEMORY.md is loaded or a `memory_*`
    /// tool is listed) or `tools` (only with a memory tool, OpenClaw).
    pub memory_recall: MemoryRecall,
    /// `all` (a formatting hint for every channel proem knows) or
    /// `plain_text_only` (only for channels that cannot render Markdown,
    /// as GoClaw hints Zalo alone).
    pub channel_hints: ChannelHints,
    /// While BOOTSTRAP.md is in the prompt of an open agent, keep the
    /// prompt to onboarding (GoClaw): no Execution Bias, Tool Call Style,
    /// credentialed CLI, Voice, Self-Evolution, skills, MCP tools, team,
    /// sandbox, owners, sub-agent guidance or reminder.
    pub first_run_focus: bool,
}

/// When the Memory section is shown.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum MemoryRecall {
    /// MEMORY.md loaded or a memory tool listed.
    FilesOrTools,
    /// A memory tool listed.
    Tools,
}

/// Which channels get a formatting hint.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ChannelHints {
    /// Every channel proem knows.
    All,
    /// Channels that show plain text only.
    PlainTextOnly,
}

impl Default for PromptConfig {
    fn default() -> Self {
        PromptConfig {
            execution_bias: ExecutionBiasStyle::Bias,
            safety_rules: Vec::new(),
            slim_safety_in: vec![Mode::Task, Mode::Minimal, Mode::None],
            tool_list: ToolList::Always,
            guidance_in_tooling: false,
            silent_replies: SilentReplies::ByTurn,
            heartbeats: HeartbeatGuidance::HeartbeatTurns,
            channel_capabilities: ChannelCapabilities::WithChannel,
            compact_context: false,
            memory_recall: MemoryRecall::FilesOrTools,
            channel_hints: ChannelHints::All,
            first_run_focus: false,
        }
    }
}

/// The per-file cap under `compact_context` (ZeroClaw's).
pub const COMPACT_FILE_CHARS: usize = 6_000;

/// How execution_bias is worded.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ExecutionBiasStyle {
    /// proem's bullets.
    Bias,
    /// ZeroClaw's "Your Task" framing.
    Task,
}

/// An optional Safety rule.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum SafetyRule {
    /// Delete recoverably (a trash command) rather than for good.
    PreferTrash,
    /// Ask before anything that acts outside the workspace.
    AskBeforeExternal,
}

/// When Tooling lists the tools.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ToolList {
    /// Every prompt.
    Always,
    /// Only with `[tools] native_calling = false`.
    TextProtocol,
}

/// Where the silent-reply rule goes.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SilentReplies {
    /// In group chats and turns whose replies are optional.
    ByTurn,
    /// A section of its own in every full prompt.
    Always,
}

/// When the prompt explains heartbeats.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum HeartbeatGuidance {
    /// In heartbeat turns.
    HeartbeatTurns,
    /// In every prompt whose layout has a heartbeats section.
    EveryTurn,
}

/// When Channel Capabilities is shown.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ChannelCapabilities {
    /// When the turn names a channel.
    WithChannel,
    /// Always.
    Always,
}

/// One `[[plugins]]` entry.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PluginConfig {
    /// The plugin's id.
    pub id: String,
    /// `builtin:<id>` for an official plugin.
    pub source: Option<String>,
    /// A `.wasm` component, relative to the agent directory.
    pub path: Option<String>,
    /// Capabilities granted, e.g. `workspace-read`.
    #[serde(default)]
    pub grants: Vec<String>,
    /// Plugin-specific settings, passed to the plugin as JSON.
    #[serde(default)]
    pub config: Option<toml::Table>,
    /// A failure of this plugin fails the build (default false).
    #[serde(default)]
    pub required: bool,
    /// Memory cap per call in MiB (default 32).
    pub memory_mib: Option<u32>,
    /// CPU deadline per call in milliseconds (default 50).
    pub deadline_ms: Option<u32>,
    /// Cap on each section, prefix, suffix or file it returns, in KiB (default 64).
    pub output_kib: Option<u32>,
    /// The SHA-256 (hex) the plugin's bytes must have: a pinned binary that
    /// changed fails to load (exit 1) naming both digests.
    pub sha256: Option<String>,
    /// Where the entry is written, `FILE:LINE` (of its `id`), for messages
    /// about it; `None` for entries not read from a file.
    #[serde(skip)]
    pub declared_at: Option<String>,
    /// The line of the entry's `id` in the file it was read from, for
    /// errors found when the plugin loads (its config against its schema).
    #[serde(skip)]
    pub line: SourceLine,
}

/// Where a value was read: not part of the value (any two are equal), so a
/// config compares equal to itself read from anywhere.
#[derive(Debug, Clone, Copy, Default)]
pub struct SourceLine(pub Option<usize>);

impl PartialEq for SourceLine {
    fn eq(&self, _: &SourceLine) -> bool {
        true
    }
}

/// The largest config file proem reads.
pub const MAX_CONFIG_BYTES: u64 = 4 * 1024 * 1024;

/// The most `[[plugins]]` entries an agent may configure.
pub const MAX_PLUGINS: usize = 64;

/// The most items of any other list in proem.toml: `extra_files`, the
/// allowlists, `pinned`, `folders`, team members and delegates, grants, the
/// lists inside a plugin's own `config`, and any list added later (the rule
/// is checked on the document, not per field).
pub const MAX_LIST_ITEMS: usize = 256;

/// The preset's table with the agent's text laid over it, key by key.
fn with_preset(preset: Preset, source: &str, path: &Path) -> Result<Config, ProemError> {
    let broken = |e: &dyn std::fmt::Display| {
        ProemError::config(path, None, Some("agent.preset".into()), format!("preset {}: {e}", preset.name()))
    };
    let mut merged: toml::Table = toml::from_str(preset.toml()).map_err(|e| broken(&e))?;
    let own: toml::Table = toml::from_str(source).map_err(|e| broken(&e))?;
    lay_over(&mut merged, own);
    Config::deserialize(crate::strict_de::Strict(toml::Value::Table(merged))).map_err(|e| broken(&e))
}

/// Lays `top` over `base`: tables merge key by key, anything else replaces.
fn lay_over(base: &mut toml::Table, top: toml::Table) {
    for (key, value) in top {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(below)), toml::Value::Table(above)) => lay_over(below, above),
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

impl Config {
    /// Reads and validates a config file.
    pub fn load(path: &Path) -> Result<Config, ProemError> {
        let source = crate::disk::read_regular_file(path, MAX_CONFIG_BYTES)
            .map_err(|e| ProemError::config(path, None, None, format!("cannot read the config file: {e}")))?;
        let source = String::from_utf8(source)
            .map_err(|_| ProemError::config(path, None, None, "the config file is not valid UTF-8"))?;
        Config::parse(&source, path)
    }

    /// Parses and validates config text; `path` only labels errors.
    pub fn parse(source: &str, path: &Path) -> Result<Config, ProemError> {
        // The agent's own text first: its errors carry its lines and keys.
        let located = |e: toml::de::Error| {
            let (line, key) = match e.span() {
                Some(span) => locate_span(source, span.start),
                None => (None, None),
            };
            ProemError::config(path, line, key, e.message().trim().to_string())
        };
        // Parsed once: its lists are checked, then the typed config is read from it.
        let document = toml::de::DeTable::parse(source).map_err(located)?;
        check_lists_in_table(document.get_ref(), "", source, path)?;
        // Tables from tables only: serde's derive alone also reads a list as
        // a table's keys in order (`budget = [4000]`).
        let config =
            Config::deserialize(crate::strict_de::Strict(toml::de::Deserializer::from(document))).map_err(located)?;
        let mut config = match config.agent.preset {
            None => config,
            Some(preset) => with_preset(preset, source, path)?,
        };
        config.validate(source, path)?;
        for plugin in &mut config.plugins {
            plugin.declared_at = Some(match locate_plugin(source, &plugin.id) {
                Some(line) => format!("{}:{line}", path.display()),
                None => path.display().to_string(),
            });
            plugin.line = SourceLine(locate_plugin(source, &plugin.id));
        }
        config.active_layout = crate::layout::Layout::build(&config.layout, None).map_err(|e| {
            let line = locate_key(source, "layout", e.key)
                .or_else(|| locate_table(source, &format!("layout.{}", e.key)))
                .or_else(|| locate_table(source, "layout"));
            ProemError::config(path, line, Some(format!("layout.{}", e.key)), e.message)
        })?;
        Ok(config)
    }

    /// The layout in use.
    pub fn layout(&self) -> &crate::layout::Layout {
        &self.active_layout
    }

    /// The per-file character cap in force: `[budget] per_file_chars`, at
    /// most 6,000 under `[prompt] compact_context`.
    pub fn per_file_chars(&self) -> usize {
        if self.prompt.compact_context {
            self.budget.per_file_chars.min(COMPACT_FILE_CHARS)
        } else {
            self.budget.per_file_chars
        }
    }

    /// Checks every value that TOML's types alone do not bound, in the
    /// order below: the first broken rule is the error, named by its table
    /// and key and located at its line in `source`.
    fn validate(&self, source: &str, path: &Path) -> Result<(), ProemError> {
        let at_key = |bad: BadKey| {
            let line = locate_key(source, bad.table, bad.key);
            ProemError::config(path, line, Some(format!("{}.{}", bad.table, bad.key)), bad.message)
        };
        self.check_sessions().map_err(at_key)?;
        self.check_folders().map_err(at_key)?;
        self.check_budget_ratios().map_err(at_key)?;
        if let Err((key, why)) = self.cache.check() {
            let (table, key) = key.split_once('.').map_or(("cache", key.as_str()), |(t, k)| (t, k));
            let line =
                locate_key(source, &format!("cache.{table}"), key).or_else(|| locate_key(source, "cache", table));
            return Err(ProemError::config(path, line, Some(format!("cache.{table}.{key}")), why));
        }
        self.check_numbers().map_err(at_key)?;
        self.check_tokenizer().map_err(at_key)?;
        self.check_search_share().map_err(at_key)?;
        self.check_file_lists().map_err(at_key)?;
        let mut ids: Vec<&str> = Vec::new();
        for p in &self.plugins {
            let located = |message: String| {
                let line = locate_plugin(source, &p.id);
                ProemError::config(path, line, Some(format!("plugins.{}", p.id)), message)
            };
            if ids.contains(&p.id.as_str()) && !p.id.trim().is_empty() {
                return Err(located(format!("plugin id {:?} is configured twice", p.id)));
            }
            ids.push(&p.id);
            check_plugin(p).map_err(located)?;
        }
        Ok(())
    }

    /// `[sessions]`: the reply tokens are one word; the sub-agent heading is
    /// one short line.
    fn check_sessions(&self) -> Result<(), BadKey> {
        let one_word =
            |value: &str| !value.is_empty() && value.len() <= 64 && value.chars().all(|c| c.is_ascii_graphic());
        for (key, token) in
            [("heartbeat_ack", &self.sessions.heartbeat_ack), ("silent_token", &self.sessions.silent_token)]
        {
            if !one_word(token) {
                return BadKey::at(
                    "sessions",
                    key,
                    format!("{token:?} is not one word of 1-64 printable ASCII characters"),
                );
            }
        }
        if let Some(h) = &self.sessions.subagent_heading {
            if h.trim().is_empty() || h.chars().count() > 80 || h.chars().any(|c| c.is_control()) {
                return BadKey::at(
                    "sessions",
                    "subagent_heading",
                    format!("{h:?} is not a one-line heading of 1-80 characters"),
                );
            }
        }
        Ok(())
    }

    /// `[skills] folders` and `[team] workspace` stay inside the agent
    /// directory.
    fn check_folders(&self) -> Result<(), BadKey> {
        for folder in &self.skills.folders {
            if let Err(why) = check_relative_path(folder) {
                return BadKey::at("skills", "folders", why.to_string());
            }
        }
        if let Some(ws) = &self.team.workspace {
            if let Err(why) = check_relative_path(ws) {
                return BadKey::at("team", "workspace", why.to_string());
            }
        }
        Ok(())
    }

    /// `[budget] head_ratio` and `tail_ratio`: each in 0..=1, together more
    /// than 0 and at most 1.
    fn check_budget_ratios(&self) -> Result<(), BadKey> {
        let b = &self.budget;
        for (key, ratio) in [("head_ratio", b.head_ratio), ("tail_ratio", b.tail_ratio)] {
            if !(0.0..=1.0).contains(&ratio) || ratio.is_nan() {
                return BadKey::at("budget", key, format!("{ratio} is outside 0.0..=1.0"));
            }
        }
        if b.head_ratio + b.tail_ratio > 1.0 {
            return BadKey::at(
                "budget",
                "tail_ratio",
                format!("head_ratio + tail_ratio is {}, more than 1.0", b.head_ratio + b.tail_ratio),
            );
        }
        if b.head_ratio + b.tail_ratio <= 0.0 {
            return BadKey::at(
                "budget",
                "head_ratio",
                "head_ratio and tail_ratio are both 0: nothing would be kept of a long file".into(),
            );
        }
        Ok(())
    }

    /// Every whole-number key of [`Config::numbers`] within its bound.
    fn check_numbers(&self) -> Result<(), BadKey> {
        for (bound, value) in self.numbers() {
            if let Err(why) = value.map_or(Ok(0), |v| bound.check_usize(v)) {
                let (table, key) = bound.name.split_once('.').unwrap_or(("", bound.name));
                return BadKey::at(table, key, format!("{why}; set a value in that range"));
            }
        }
        Ok(())
    }

    /// `[budget] tokenizer`: a known name, or a tokenizer.json inside the
    /// agent directory.
    fn check_tokenizer(&self) -> Result<(), BadKey> {
        let Some(t) = &self.budget.tokenizer else { return Ok(()) };
        if crate::vocab::is_file_name(t) {
            if let Err(why) = crate::paths::check_relative_path(t) {
                return BadKey::at(
                    "budget",
                    "tokenizer",
                    format!("{t:?}: {why}; name a tokenizer.json inside the agent directory"),
                );
            }
        } else if crate::tokens::Tokenizer::from_name(t).is_none() {
            return BadKey::at(
                "budget",
                "tokenizer",
                format!(
                    "unknown tokenizer {t:?}: expected o200k_base, cl100k_base, claude-estimate, \
                     or the path of a tokenizer.json inside the agent directory (ending in .json)"
                ),
            );
        }
        Ok(())
    }

    /// `[skills] search_above_share` is a share, 0..=1.
    fn check_search_share(&self) -> Result<(), BadKey> {
        let share = self.skills.search_above_share;
        if !(0.0..=1.0).contains(&share) || share.is_nan() {
            return BadKey::at("skills", "search_above_share", format!("{share} is outside 0.0..=1.0"));
        }
        Ok(())
    }

    /// The file names of `[bootstrap]` lists are inside the agent directory
    /// and spelled canonically; `[tools] file` is inside it.
    fn check_file_lists(&self) -> Result<(), BadKey> {
        let m = &self.bootstrap.mode_files;
        for (key, list) in [
            ("extra_files", &self.bootstrap.extra_files),
            ("subagent_allowlist", &self.bootstrap.subagent_allowlist),
            ("mode_files", m.task.as_ref().unwrap_or(&Vec::new())),
            ("mode_files", m.minimal.as_ref().unwrap_or(&Vec::new())),
            ("mode_files", m.none.as_ref().unwrap_or(&Vec::new())),
        ] {
            for name in list {
                check_file_name(name).map_err(|message| BadKey { table: "bootstrap", key, message })?;
            }
        }
        if let Some(file) = &self.tools.file {
            if let Err(why) = check_relative_path(file) {
                return BadKey::at("tools", "file", format!("{file:?}: {why}"));
            }
        }
        Ok(())
    }

    /// Every whole-number key but the plugins' (checked per entry), with
    /// its bound and value (`None`: unset). Each is checked at load
    /// ([`crate::bounds`]), so what proem computes from them cannot overflow.
    fn numbers(&self) -> [(Bound, Option<usize>); 8] {
        let (b, bootstrap) = (&self.budget, &self.bootstrap);
        [
            (bounds::BUDGET_TOKENS, b.tokens),
            (bounds::CONTEXT_WINDOW, b.context_window),
            (bounds::PER_FILE_CHARS, Some(b.per_file_chars)),
            (bounds::TOTAL_FILE_CHARS, Some(b.total_file_chars)),
            (bounds::DYNAMIC_RESERVE, Some(b.dynamic_reserve)),
            (bounds::MAX_FILE_BYTES_KEY, Some(bootstrap.max_file_bytes)),
            (bounds::SKILLS_MAX_TOKENS, self.skills.max_tokens),
            (bounds::MCP_INLINE_MAX, Some(self.tools.mcp_inline_max)),
        ]
    }

    /// The agent id: configured, else the directory name, else `agent`.
    pub fn agent_id(&self, agent_dir: &Path) -> String {
        self.agent
            .id
            .clone()
            .or_else(|| agent_dir.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "agent".to_string())
    }
}

/// Refuses any list of the document (`table`, under the dotted key
/// `prefix`) longer than its cap ([`MAX_PLUGINS`] for `[[plugins]]`,
/// [`MAX_LIST_ITEMS`] for every other), naming the line of the first item
/// over it.
fn check_lists_in_table(table: &toml::de::DeTable, prefix: &str, source: &str, path: &Path) -> Result<(), ProemError> {
    for (key, value) in table.iter() {
        let key: &str = key.get_ref();
        let name = if prefix.is_empty() { key.to_string() } else { format!("{prefix}.{key}") };
        check_lists_in_value(value, &name, source, path)?;
    }
    Ok(())
}

fn check_lists_in_value(
    value: &toml::Spanned<toml::de::DeValue>,
    name: &str,
    source: &str,
    path: &Path,
) -> Result<(), ProemError> {
    match value.get_ref() {
        toml::de::DeValue::Array(items) => {
            let (cap, what) = if name == "plugins" {
                (MAX_PLUGINS, "[[plugins]] entries, more than the")
            } else {
                (MAX_LIST_ITEMS, "items, more than the")
            };
            if let Some(over) = items.get(cap) {
                let line = source[..over.span().start.min(source.len())].matches('\n').count() + 1;
                return Err(ProemError::config(
                    path,
                    Some(line),
                    Some(name.to_string()),
                    format!(
                        "{} {what} {cap} proem reads from one list (item {} is on this line); shorten the list",
                        items.len(),
                        cap + 1
                    ),
                ));
            }
            items.iter().try_for_each(|item| check_lists_in_value(item, name, source, path))
        }
        toml::de::DeValue::Table(table) => check_lists_in_table(table, name, source, path),
        _ => Ok(()),
    }
}

/// Where the config for an agent directory lives: `--config` or `<dir>/proem.toml`.
pub fn config_path(agent_dir: &Path, explicit: Option<&Path>) -> PathBuf {
    explicit.map(Path::to_path_buf).unwrap_or_else(|| agent_dir.join(CONFIG_FILE))
}

/// The 1-based line of byte `offset` and the dotted key written on that line.
fn locate_span(source: &str, offset: usize) -> (Option<usize>, Option<String>) {
    let offset = offset.min(source.len());
    let line_no = source[..offset].matches('\n').count() + 1;
    let line = source.lines().nth(line_no - 1).unwrap_or("");
    let table = table_above(source, line_no);
    let key = line
        .split_once('=')
        .map(|(k, _)| k.trim().trim_matches('"').to_string())
        .filter(|k| !k.is_empty() && !k.starts_with('['));
    let key = match (table, key) {
        (Some(t), Some(k)) => Some(format!("{t}.{k}")),
        (None, Some(k)) => Some(k),
        (Some(t), None) => Some(t),
        (None, None) => None,
    };
    (Some(line_no), key)
}

/// The `[table]` (or `[[table]]`) header governing line `line_no`.
fn table_above(source: &str, line_no: usize) -> Option<String> {
    source
        .lines()
        .take(line_no)
        .filter_map(|l| {
            let l = l.trim();
            l.strip_prefix("[[")
                .and_then(|r| r.split_once("]]"))
                .or_else(|| l.strip_prefix('[').and_then(|r| r.split_once(']')))
                .map(|(name, _)| name.trim().to_string())
        })
        .last()
}

/// The line where `key` is set inside `[table]`, if it is written there.
fn locate_key(source: &str, table: &str, key: &str) -> Option<usize> {
    let mut current: Option<String> = None;
    for (i, line) in source.lines().enumerate() {
        let t = line.trim();
        if t.starts_with('[') {
            current = table_above(t, 1);
            continue;
        }
        if current.as_deref() == Some(table) {
            if let Some((k, _)) = t.split_once('=') {
                if k.trim().trim_matches('"') == key {
                    return Some(i + 1);
                }
            }
        }
    }
    None
}

/// The line of the `[table]` header, if it is written.
fn locate_table(source: &str, table: &str) -> Option<usize> {
    source.lines().position(|l| table_above(l.trim(), 1).as_deref() == Some(table)).map(|i| i + 1)
}

/// The line of the `id = "<id>"` key of a `[[plugins]]` entry.
fn locate_plugin(source: &str, id: &str) -> Option<usize> {
    source
        .lines()
        .position(|l| l.split_once('=').is_some_and(|(k, v)| k.trim() == "id" && v.trim().trim_matches('"') == id))
        .map(|i| i + 1)
}

/// A config value that breaks its rule: where it is (`table.key`) and why.
#[derive(Debug, PartialEq)]
struct BadKey {
    table: &'static str,
    key: &'static str,
    message: String,
}

impl BadKey {
    /// The error for `table.key`.
    fn at<T>(table: &'static str, key: &'static str, message: String) -> Result<T, BadKey> {
        Err(BadKey { table, key, message })
    }
}

/// A `[bootstrap]` file name: inside the agent directory, and in the one
/// spelling proem reads it by.
fn check_file_name(name: &str) -> Result<(), String> {
    if let Err(why) = check_relative_path(name) {
        return Err(format!("{name:?}: {why}"));
    }
    let canonical = crate::file_names::canonical_name(name);
    if canonical != name {
        return Err(format!(
            "{name:?} names the file {canonical:?} in another spelling (spaces, `./`, case): \
             write {canonical:?}, so that one file is never read twice or out of its place"
        ));
    }
    Ok(())
}

/// One `[[plugins]]` entry on its own (ids seen twice are the caller's
/// check): an id, valid grants and limits, a well-formed pin, and exactly
/// one of a built-in source or a path inside the agent directory.
fn check_plugin(p: &PluginConfig) -> Result<(), String> {
    if p.id.trim().is_empty() {
        return Err("a plugin needs a non-empty id".into());
    }
    if let Err(why) = crate::plugin::Grants::parse(&p.grants) {
        return Err(format!("grants: {why}"));
    }
    for (bound, value) in [
        (bounds::PLUGIN_MEMORY_MIB, p.memory_mib),
        (bounds::PLUGIN_DEADLINE_MS, p.deadline_ms),
        (bounds::PLUGIN_OUTPUT_KIB, p.output_kib),
    ] {
        if let Some(Err(why)) = value.map(|v| bound.check(v.into())) {
            return Err(format!("{} = {why}", bound.name));
        }
    }
    if let Some(pin) = &p.sha256 {
        if pin.len() != 64 || !pin.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!("sha256 {pin:?} is not 64 hexadecimal digits"));
        }
    }
    check_plugin_source(p)
}

/// A plugin's `source`/`path` pair: exactly one, naming a known built-in or
/// a file inside the agent directory.
fn check_plugin_source(p: &PluginConfig) -> Result<(), String> {
    match (&p.source, &p.path) {
        (Some(_), Some(_)) => Err("give either source or path, not both".into()),
        (None, None) => Err("give source = \"builtin:<id>\" or path = \"<file>.wasm\"".into()),
        (Some(s), None) if !s.starts_with("builtin:") => Err(format!("source {s:?} must look like \"builtin:<id>\"")),
        (Some(s), None) if !BUILTIN_IDS.contains(&&s["builtin:".len()..]) => {
            Err(format!("source {s:?}: no such built-in plugin (built-in: {})", BUILTIN_IDS.join(", ")))
        }
        (None, Some(file)) => check_relative_path(file).map_err(|why| format!("path {file:?}: {why}")),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod plugin_entry_tests {
    use super::*;

    fn parse(toml: &str) -> Result<Config, String> {
        Config::parse(toml, Path::new("proem.toml")).map_err(|e| e.to_string())
    }

    #[test]
    fn plugin_entries_are_checked_at_load() {
        assert!(parse("[[plugins]]\nid = \"h\"\nsource = \"builtin:hardware-access\"\n").is_ok());
        let cases = [
            (
                "[[plugins]]\nid = \"h\"\nsource = \"builtin:nope\"\n",
                "no such built-in plugin (built-in: aieos-identity, gpt5-overlay, hardware-access)",
            ),
            ("[[plugins]]\nid = \"h\"\npath = \"p.wasm\"\ngrants = [\"network\"]\n", "unknown grant \"network\""),
            ("[[plugins]]\nid = \"h\"\npath = \"p.wasm\"\nmemory_mib = 0\n", "memory_mib = 0 is outside 1..=4096"),
            (
                "[[plugins]]\nid = \"h\"\npath = \"p.wasm\"\ndeadline_ms = 600000\n",
                "deadline_ms = 600000 is outside 1..=60000",
            ),
            ("[[plugins]]\nid = \"h\"\npath = \"../p.wasm\"\n", "must not contain `..`"),
        ];
        for (toml, words) in cases {
            let err = parse(toml).unwrap_err();
            assert!(err.contains("proem.toml:") && err.contains(words), "{words:?} in {err:?}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Config, ProemError> {
        Config::parse(s, Path::new("agent/proem.toml"))
    }

    /// Every table of the config (each struct and map, at every depth, as
    /// the default config serialises them), written as a list instead, is
    /// refused naming its key, with and without a preset laid under it:
    /// serde's derive alone read `budget = [4000]` as `[budget] tokens =
    /// 4000`.
    #[test]
    fn a_list_never_stands_for_a_table() {
        fn tables(table: &toml::Table, prefix: &str, out: &mut Vec<String>) {
            for (key, value) in table {
                if let toml::Value::Table(inner) = value {
                    let path = format!("{prefix}{key}");
                    tables(inner, &format!("{path}."), out);
                    out.push(path);
                }
            }
        }
        let mut paths = Vec::new();
        tables(&toml::Table::try_from(Config::default()).unwrap(), "", &mut paths);
        assert!(paths.len() >= 14, "{paths:?}");
        for path in &paths {
            for list in ["[1]", "[\"x\"]", "[[1]]"] {
                let mut texts = vec![format!("{path} = {list}\n")];
                if !path.starts_with("agent") {
                    texts.push(format!("{path} = {list}\nagent.preset = \"openclaw\"\n"));
                }
                for text in texts {
                    let e = parse(&text).expect_err(&text).to_string();
                    assert!(e.contains("a table") || e.contains("a map"), "{text}: {e}");
                }
            }
        }
        let e = parse("[[plugins]]\nid = \"a\"\npath = \"a.wasm\"\n[[plugins]]\n").unwrap_err().to_string();
        assert!(!e.contains("a table"), "{e}");
        let e = parse("plugins = [[\"a\", \"a.wasm\"]]").unwrap_err().to_string();
        assert!(e.contains("a table") && e.contains("plugins"), "{e}");
    }

    #[test]
    fn empty_config_is_all_defaults() {
        let c = parse("").unwrap();
        assert_eq!(c, Config::default());
        assert_eq!(c.budget.tokens(), 24_000);
        assert_eq!(c.budget.per_file_chars, 20_000);
        assert_eq!(c.bootstrap.subagent_allowlist, ["AGENTS.md", "TOOLS.md"]);
    }

    #[test]
    fn design_example_parses() {
        let c = parse(
            r#"
[agent]
id = "marlow"
kind = "open"
mode = "full"

[provider]
name = "openai"
model = "gpt-5.1"

[budget]
tokens = 24000
per_file_chars = 20000
total_file_chars = 60000
head_ratio = 0.7
tail_ratio = 0.2

[[plugins]]
id = "hardware-access"
source = "builtin:hardware-access"
grants = []
config = { patterns = ["gpio_*", "i2c_*"] }
"#,
        )
        .unwrap();
        assert_eq!(c.agent.id.as_deref(), Some("marlow"));
        assert_eq!(c.agent.mode, Some(Mode::Full));
        assert_eq!(c.plugins.len(), 1);
        assert!(c.plugins[0].config.as_ref().unwrap().contains_key("patterns"));
    }

    #[test]
    fn unknown_key_names_file_key_and_line() {
        let err = parse("[agent]\nid = \"a\"\n\n[budget]\ntokenz = 5\n").unwrap_err().to_string();
        assert!(err.starts_with("agent/proem.toml:5:"), "{err}");
        assert!(err.contains("budget.tokenz"), "{err}");
        assert!(err.contains("unknown field"), "{err}");
    }

    #[test]
    fn wrong_type_names_file_key_and_line() {
        let err = parse("[budget]\n\ntokens = \"lots\"\n").unwrap_err().to_string();
        assert!(err.starts_with("agent/proem.toml:3:"), "{err}");
        assert!(err.contains("budget.tokens"), "{err}");
    }

    #[test]
    fn bad_values_are_located() {
        let err = parse("[budget]\nhead_ratio = 0.9\ntail_ratio = 0.3\n").unwrap_err().to_string();
        assert!(err.contains(":3:") && err.contains("budget.tail_ratio"), "{err}");
        let err = parse("[agent]\nmode = \"loud\"\n").unwrap_err().to_string();
        assert!(err.contains(":2:") && err.contains("agent.mode"), "{err}");
        let err = parse("[bootstrap]\nextra_files = [\"../secrets.md\"]\n").unwrap_err().to_string();
        assert!(err.contains("..") && err.contains("bootstrap.extra_files"), "{err}");
        let err = parse("[[plugins]]\nid = \"x\"\nsource = \"http://evil\"\n").unwrap_err().to_string();
        assert!(err.contains(":2:") && err.contains("builtin:"), "{err}");
    }

    #[test]
    fn every_preset_parses_with_its_own_layout() {
        for (name, first) in [("openclaw", "identity"), ("goclaw", "identity"), ("zeroclaw", "identity")] {
            let c = parse(&format!("[agent]\npreset = \"{name}\"\n")).unwrap();
            assert_ne!(c.layout(), crate::layout::Layout::default_layout(), "{name}");
            assert_eq!(c.layout().entries()[0].id, first, "{name}");
        }
        // GoClaw's budget scales with the context window: no pinned tokens.
        let goclaw = parse("[agent]\npreset = \"goclaw\"\n[budget]\ncontext_window = 400000\n").unwrap();
        assert_eq!(goclaw.budget.tokens, None);
        assert_eq!(goclaw.budget.tokens(), 48_000);
        assert_eq!((goclaw.budget.per_file_chars, goclaw.budget.total_file_chars), (20_000, 24_000));
        let openclaw = parse("[agent]\npreset = \"openclaw\"\n").unwrap();
        assert_eq!((openclaw.budget.per_file_chars, openclaw.budget.total_file_chars), (12_000, 60_000));
        assert_eq!(openclaw.budget.tokens, None);
    }

    #[test]
    fn layout_overrides_are_checked_and_located() {
        let c = parse("[agent]\npreset = \"openclaw\"\n\n[layout]\nheadings = { safety = \"Guardrails\" }\n").unwrap();
        assert_eq!(c.layout().mode(Mode::Full).placed("safety").unwrap().heading, "Guardrails");
        assert!(c.layout().has("workspace_files_note"), "the preset's layout is kept");
        let err = parse("[agent]\nid = \"a\"\n\n[layout]\nzones = { time = \"stable\" }\n").unwrap_err().to_string();
        assert!(err.starts_with("agent/proem.toml:5:") && err.contains("layout.zones"), "{err}");
        assert!(err.contains("time is made from per-turn inputs"), "{err}");
        let err = parse("[layout]\n\norder = [\"identity\", \"nope\"]\n").unwrap_err().to_string();
        assert!(err.contains(":3:") && err.contains("\"nope\" is not a section id"), "{err}");
        let err = parse("[layout.headings]\nsafety = \"two\\nlines\"\n").unwrap_err().to_string();
        assert!(err.contains(":1:") && err.contains("one line"), "{err}");
    }

    /// Each rule of one `[[plugins]]` entry, checked on its own.
    #[test]
    fn a_plugin_entry_is_checked_alone() {
        let entry = |id: &str, source: Option<&str>, path: Option<&str>| PluginConfig {
            id: id.into(),
            source: source.map(Into::into),
            path: path.map(Into::into),
            ..PluginConfig::default()
        };
        assert_eq!(check_plugin(&entry("a", Some("builtin:gpt5-overlay"), None)), Ok(()));
        assert_eq!(check_plugin(&entry("a", None, Some("plugins/a.wasm"))), Ok(()));
        assert_eq!(check_plugin(&entry(" ", None, None)).unwrap_err(), "a plugin needs a non-empty id");
        let err = check_plugin(&entry("a", Some("builtin:x"), Some("a.wasm"))).unwrap_err();
        assert_eq!(err, "give either source or path, not both");
        let err = check_plugin(&entry("a", None, None)).unwrap_err();
        assert_eq!(err, "give source = \"builtin:<id>\" or path = \"<file>.wasm\"");
        let err = check_plugin(&entry("a", Some("oci:x"), None)).unwrap_err();
        assert_eq!(err, "source \"oci:x\" must look like \"builtin:<id>\"");
        let err = check_plugin(&entry("a", Some("builtin:nope"), None)).unwrap_err();
        assert!(err.starts_with("source \"builtin:nope\": no such built-in plugin"), "{err}");
        let err = check_plugin(&entry("a", None, Some("../a.wasm"))).unwrap_err();
        assert!(err.starts_with("path \"../a.wasm\": "), "{err}");
        let pinned = PluginConfig { sha256: Some("abc".into()), ..entry("a", None, Some("a.wasm")) };
        assert_eq!(check_plugin(&pinned).unwrap_err(), "sha256 \"abc\" is not 64 hexadecimal digits");
        let granted = PluginConfig { grants: vec!["root".into()], ..entry("a", None, Some("a.wasm")) };
        assert!(check_plugin(&granted).unwrap_err().starts_with("grants: "));
    }

    /// A `[bootstrap]` name is refused outside the agent directory and in
    /// any spelling but the canonical one.
    #[test]
    fn bootstrap_names_are_canonical_and_inside() {
        assert_eq!(check_file_name("NOTES.md"), Ok(()));
        assert!(check_file_name("/etc/passwd").unwrap_err().starts_with("\"/etc/passwd\": "));
        let err = check_file_name("./AGENTS.md").unwrap_err();
        assert!(err.contains("in another spelling") && err.contains("write \"AGENTS.md\""), "{err}");
    }

    /// The first broken rule is the error, in `validate`'s order: a config
    /// breaking two rules reports the earlier one, at its key.
    #[test]
    fn validate_reports_the_first_rule_broken() {
        let err =
            parse("[budget]\nhead_ratio = 2.0\n[sessions]\nsilent_token = \"two words\"\n").unwrap_err().to_string();
        assert!(err.contains("sessions.silent_token") && err.contains(":4:"), "{err}");
        let err = parse("[budget]\nhead_ratio = 0.8\ntail_ratio = 0.8\n").unwrap_err().to_string();
        assert!(err.contains("budget.tail_ratio") && err.contains("more than 1.0"), "{err}");
    }

    #[test]
    fn relative_paths() {
        assert!(check_relative_path("notes/a.md").is_ok());
        assert!(check_relative_path("/etc/passwd").is_err());
        assert!(check_relative_path("a/../../b").is_err());
        assert!(check_relative_path(" ").is_err());
    }
}

#[cfg(test)]
mod list_cap_tests {
    use super::*;
    use proptest::prelude::*;

    /// Lists of proem.toml: (the lines before the key, the key, one item).
    /// The rule is checked on the document, so these are samples of it:
    /// every typed list field, and a list inside a plugin's own config.
    const LISTS: &[(&str, &str, &str)] = &[
        ("[bootstrap]", "extra_files", "\"a.md\""),
        ("[bootstrap]", "subagent_allowlist", "\"AGENTS.md\""),
        ("[skills]", "allow", "\"s\""),
        ("[skills]", "pinned", "\"s\""),
        ("[skills]", "folders", "\"f\""),
        ("[team]", "members", "{ name = \"n\", role = \"r\" }"),
        ("[team]", "delegates", "\"d\""),
        ("[tools]", "shell_deny_groups", "\"network\""),
        ("[runtime]", "capabilities", "\"c\""),
        ("[[plugins]]\nid = \"p\"\nsource = \"builtin:hardware-access\"", "grants", "\"workspace-read\""),
        ("[[plugins]]\nid = \"p\"\nsource = \"builtin:hardware-access\"\n[plugins.config]", "patterns", "\"gpio_*\""),
    ];

    proptest! {
        #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

        /// Any list up to its cap loads; one item more is an error naming
        /// the line of the first item over the cap, the key and the cap.
        #[test]
        fn every_list_is_capped_and_the_error_names_its_line(
            list in 0..LISTS.len(),
            extra in -2i32..=2,
            blanks in 0usize..4,
        ) {
            let (before, key, item) = LISTS[list];
            let len = (MAX_LIST_ITEMS as i32 + extra) as usize;
            let items: String = (0..len).map(|_| format!("{item},\n")).collect();
            let source = format!("{}{before}\n{key} = [\n{items}]\n", "\n".repeat(blanks));
            let result = Config::parse(&source, Path::new("agent/proem.toml"));
            if len <= MAX_LIST_ITEMS {
                prop_assert!(result.is_ok(), "{len} items: {:?}", result.err().map(|e| e.to_string()));
            } else {
                let err = result.unwrap_err().to_string();
                let line = blanks + before.lines().count() + 1 + MAX_LIST_ITEMS + 1;
                prop_assert!(err.starts_with(&format!("agent/proem.toml:{line}:")), "{err}");
                prop_assert!(err.contains(key) && err.contains(&format!("more than the {MAX_LIST_ITEMS}")), "{err}");
            }
        }

        /// Up to [`MAX_PLUGINS`] `[[plugins]]` entries load; the next is
        /// an error on its own line.
        #[test]
        fn plugin_entries_are_capped(extra in -2i32..=2, blanks in 0usize..4) {
            let len = (MAX_PLUGINS as i32 + extra) as usize;
            let entries: String =
                (0..len).map(|i| format!("[[plugins]]\nid = \"p{i}\"\nsource = \"builtin:hardware-access\"\n")).collect();
            let source = format!("{}{entries}", "\n".repeat(blanks));
            let result = Config::parse(&source, Path::new("proem.toml"));
            if len <= MAX_PLUGINS {
                prop_assert_eq!(result.map(|c| c.plugins.len()).ok(), Some(len));
            } else {
                let err = result.unwrap_err().to_string();
                let line = blanks + 3 * MAX_PLUGINS + 1;
                prop_assert!(err.starts_with(&format!("proem.toml:{line}:")), "{err}");
                prop_assert!(err.contains(&format!("[[plugins]] entries, more than the {MAX_PLUGINS}")), "{err}");
            }
        }
    }
}
