//! Prompt modes and how one is chosen for a turn.
//!
//! Four modes, ranked `full > task > minimal > none`. A session key can only
//! *lower* the configured mode ("cap" it), never raise it: a heartbeat turn of
//! an agent configured for `task` still gets `minimal`, and a cron turn of an
//! agent configured for `minimal` stays `minimal`.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// How much of the prompt a turn gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Identity, tooling, slim safety, workspace, files and runtime only.
    None,
    /// For heartbeats and light turns.
    Minimal,
    /// For sub-agents and cron jobs.
    Task,
    /// Everything (the default).
    Full,
}

impl Mode {
    /// Every mode, lowest first.
    pub const ALL: [Mode; 4] = [Mode::None, Mode::Minimal, Mode::Task, Mode::Full];

    /// The name used in config, flags and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::None => "none",
            Mode::Minimal => "minimal",
            Mode::Task => "task",
            Mode::Full => "full",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "full" => Ok(Mode::Full),
            "task" => Ok(Mode::Task),
            "minimal" => Ok(Mode::Minimal),
            "none" => Ok(Mode::None),
            other => Err(format!("unknown mode {other:?}: expected one of full, task, minimal, none")),
        }
    }
}

/// A set of modes, stored as a bit mask (used by sections to say where they appear).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ModeSet(u8);

impl ModeSet {
    /// Every mode.
    pub const ALL: ModeSet = ModeSet(0b1111);

    /// The set holding exactly `modes`.
    pub const fn of(modes: &[Mode]) -> ModeSet {
        let mut bits = 0u8;
        let mut i = 0;
        while i < modes.len() {
            bits |= 1 << modes[i] as u8;
            i += 1;
        }
        ModeSet(bits)
    }

    /// Whether `mode` is in the set.
    pub fn contains(self, mode: Mode) -> bool {
        self.0 & (1 << mode as u8) != 0
    }

    /// The modes in both sets.
    pub fn intersect(self, other: ModeSet) -> ModeSet {
        ModeSet(self.0 & other.0)
    }
}

/// What kind of session a session key names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionKind {
    /// An ordinary conversation.
    Main,
    /// A periodic heartbeat turn (`…:heartbeat…`).
    Heartbeat,
    /// A spawned sub-agent (`…:subagent:…`).
    Subagent,
    /// A scheduled job (`…:cron:…`).
    Cron,
}

impl SessionKind {
    /// Classifies a session key such as `agent:marlow:cron:daily-digest`.
    ///
    /// Matching is per `:`-separated segment and case-insensitive: a segment
    /// starting with `heartbeat` marks a heartbeat; a `subagent` or `cron`
    /// segment followed by at least one more segment marks those kinds.
    pub fn of_key(key: &str) -> SessionKind {
        let segments: Vec<String> = key.split(':').map(|s| s.trim().to_ascii_lowercase()).collect();
        for (i, seg) in segments.iter().enumerate() {
            let has_more = i + 1 < segments.len();
            if seg == "subagent" && has_more {
                return SessionKind::Subagent;
            }
            if seg == "cron" && has_more {
                return SessionKind::Cron;
            }
        }
        if segments.iter().any(|s| s.starts_with("heartbeat")) {
            return SessionKind::Heartbeat;
        }
        SessionKind::Main
    }

    /// Sub-agent and cron sessions see only the bootstrap-file allowlist.
    pub fn uses_file_allowlist(self) -> bool {
        matches!(self, SessionKind::Subagent | SessionKind::Cron)
    }
}

/// The modes each kind of session is capped at (`[sessions]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// Heartbeat sessions (`heartbeat_mode`, default `minimal`).
    pub heartbeat: Mode,
    /// Cron sessions (`cron_mode`, default `task`).
    pub cron: Mode,
    /// Sub-agent sessions (`subagent_mode`, default `task`).
    pub subagent: Mode,
}

impl Default for Caps {
    fn default() -> Self {
        Caps { heartbeat: Mode::Minimal, cron: Mode::Task, subagent: Mode::Task }
    }
}

/// Picks the mode for a turn: explicit override, then the session's cap
/// applied to the configured mode, then the configured mode, then `full`.
pub fn resolve_mode(override_mode: Option<Mode>, session: SessionKind, configured: Option<Mode>, caps: Caps) -> Mode {
    if let Some(mode) = override_mode {
        return mode;
    }
    let base = configured.unwrap_or(Mode::Full);
    let cap = match session {
        SessionKind::Heartbeat => Some(caps.heartbeat),
        SessionKind::Cron => Some(caps.cron),
        SessionKind::Subagent => Some(caps.subagent),
        SessionKind::Main => None,
    };
    match cap {
        Some(cap) => base.min(cap),
        None => base,
    }
}

impl SessionKind {
    /// The session of a turn: its key's kind, or a heartbeat when the turn
    /// says so (`--heartbeat`) and the key names no other kind.
    pub fn of_turn(session_key: Option<&str>, heartbeat: bool) -> SessionKind {
        match session_key.map(SessionKind::of_key).unwrap_or(SessionKind::Main) {
            SessionKind::Main if heartbeat => SessionKind::Heartbeat,
            kind => kind,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn override_wins_over_everything() {
        let m =
            resolve_mode(Some(Mode::Full), SessionKind::of_key("agent:a:heartbeat"), Some(Mode::None), Caps::default());
        assert_eq!(m, Mode::Full);
    }

    #[test]
    fn session_key_caps_the_configured_mode() {
        let caps = Caps::default();
        let mode = |key: &str, configured| resolve_mode(None, SessionKind::of_key(key), configured, caps);
        assert_eq!(mode("agent:a:heartbeat", None), Mode::Minimal);
        assert_eq!(mode("agent:a:cron:daily", None), Mode::Task);
        assert_eq!(mode("agent:a:subagent:x1", None), Mode::Task);
        // The cap never raises a lower configured mode.
        assert_eq!(mode("agent:a:cron:daily", Some(Mode::Minimal)), Mode::Minimal);
        assert_eq!(mode("agent:a:heartbeat", Some(Mode::None)), Mode::None);
        // A plain key keeps the configured mode.
        assert_eq!(mode("agent:a:main", Some(Mode::Task)), Mode::Task);
        assert_eq!(resolve_mode(None, SessionKind::Main, None, caps), Mode::Full);
        // OpenClaw's caps: cron at minimal, heartbeats uncapped.
        let openclaw = Caps { heartbeat: Mode::Full, cron: Mode::Minimal, subagent: Mode::Minimal };
        assert_eq!(resolve_mode(None, SessionKind::of_key("agent:a:cron:daily"), None, openclaw), Mode::Minimal);
        assert_eq!(resolve_mode(None, SessionKind::of_key("agent:a:heartbeat"), None, openclaw), Mode::Full);
    }

    #[test]
    fn session_kinds() {
        assert_eq!(SessionKind::of_key("agent:x:SUBAGENT:1"), SessionKind::Subagent);
        assert_eq!(SessionKind::of_key("agent:x:cron"), SessionKind::Main, "cron needs a job id");
        assert_eq!(SessionKind::of_key("agent:x:heartbeat-5m"), SessionKind::Heartbeat);
        assert_eq!(SessionKind::of_key("telegram:12345"), SessionKind::Main);
        assert_eq!(SessionKind::of_key(""), SessionKind::Main);
    }

    #[test]
    fn mode_sets() {
        let s = ModeSet::of(&[Mode::Full, Mode::Task]);
        assert!(s.contains(Mode::Full) && s.contains(Mode::Task));
        assert!(!s.contains(Mode::Minimal) && !s.contains(Mode::None));
        assert!(Mode::ALL.iter().all(|m| ModeSet::ALL.contains(*m)));
    }
}
