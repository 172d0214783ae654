//! Per-turn inputs: everything that may change from one turn to the next
//! without touching the agent directory. Only what the stable part is allowed
//! to depend on (mode, tools, provider) reaches it; the rest stays below the
//! boundary.

use crate::error::ProemError;
use crate::mode::Mode;
use chrono::{DateTime, FixedOffset};
use serde::Deserialize;
use std::path::Path;

/// Direct message or group chat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChatKind {
    /// One-to-one.
    Direct,
    /// Several people.
    Group,
}

impl ChatKind {
    /// Its name in the JSON contract, the CLI and the plugin API.
    pub fn as_str(self) -> &'static str {
        match self {
            ChatKind::Direct => "direct",
            ChatKind::Group => "group",
        }
    }
}

impl std::str::FromStr for ChatKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "direct" => Ok(ChatKind::Direct),
            "group" => Ok(ChatKind::Group),
            other => Err(format!("unknown chat kind {other:?}: expected direct or group")),
        }
    }
}

/// A tool the model may call this turn.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Tool {
    /// Name as the model calls it.
    pub name: String,
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// JSON schema of its arguments.
    #[serde(default)]
    pub parameters: Option<serde_json::Value>,
    /// The MCP server it comes from, when it is an MCP tool (also read from
    /// an `mcp__<server>__<tool>` name).
    #[serde(default)]
    pub server: Option<String>,
}

/// The inputs of one turn. Everything is optional; unset fields fall back to
/// the agent's config or a documented default.
#[derive(Debug, Clone, Default)]
pub struct Turn {
    /// Forces a mode.
    pub mode: Option<Mode>,
    /// Session key (`agent:<id>:cron:<job>` …), used to cap the mode.
    pub session_key: Option<String>,
    /// Whether this turn is a heartbeat (as is any turn whose session key
    /// has a `heartbeat` segment): HEARTBEAT.md and the ack contract are
    /// in the prompt only then.
    pub heartbeat: bool,
    /// Whether the runtime lets the agent stay silent this turn (as group
    /// chats always do): the silent-reply token contract is included.
    pub replies_optional: bool,
    /// The thinking (reasoning) level this turn runs at, for the runtime
    /// line (overrides `[runtime] thinking`).
    pub thinking: Option<String>,
    /// Overrides `[provider] name`.
    pub provider: Option<String>,
    /// Overrides `[provider] model`.
    pub model: Option<String>,
    /// Channel the message came from (`telegram`, `slack`, …).
    pub channel: Option<String>,
    /// Direct or group chat.
    pub chat_kind: Option<ChatKind>,
    /// Title of the group chat (untrusted).
    pub group_title: Option<String>,
    /// The caller's extra system prompt (untrusted).
    pub extra: Option<String>,
    /// Owner ids.
    pub owners: Vec<String>,
    /// Tools; `None` falls back to `[tools] file`.
    pub tools: Option<Vec<Tool>>,
    /// The turn's time; the system clock when unset.
    pub now: Option<DateTime<FixedOffset>>,
    /// IANA time zone; `UTC` when unset.
    pub timezone: Option<String>,
    /// Overrides `[budget] tokens`.
    pub budget: Option<usize>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ToolEntry {
    /// `{"type": "function", "function": {...}}` (OpenAI's shape).
    Wrapped { function: Tool },
    /// `{"name": ..., "description": ..., "parameters": ...}`.
    Plain(Tool),
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ToolsFile {
    List(Vec<ToolEntry>),
    Object { tools: Vec<ToolEntry> },
}

/// Parses a tools JSON document: a list (or `{"tools": [...]}`) of tools,
/// each either plain or in OpenAI's `{"type":"function","function":{…}}` shape.
pub fn parse_tools(json: &str, path: &Path) -> Result<Vec<Tool>, ProemError> {
    let err = |message: String| ProemError::Tools { path: path.to_path_buf(), message };
    let doc: serde_json::Value = serde_json::from_str(json).map_err(|e| err(format!("invalid JSON: {e}")))?;
    let file: ToolsFile = serde_json::from_value(doc).map_err(|_| {
        err("expected a JSON array of tools (or {\"tools\": [...]}), each with a string \"name\"".into())
    })?;
    let entries = match file {
        ToolsFile::List(l) | ToolsFile::Object { tools: l } => l,
    };
    Ok(entries
        .into_iter()
        .map(|e| match e {
            ToolEntry::Wrapped { function } => function,
            ToolEntry::Plain(t) => t,
        })
        .collect())
}

/// The largest tools file proem reads (10,000 tools with schemas fit).
pub const MAX_TOOLS_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// Reads and parses a tools file from the host filesystem (a `--tools` flag).
pub fn load_tools_file(path: &Path) -> Result<Vec<Tool>, ProemError> {
    let bytes = crate::disk::read_regular_file(path, MAX_TOOLS_FILE_BYTES)
        .map_err(|e| ProemError::Tools { path: path.to_path_buf(), message: format!("cannot read: {e}") })?;
    let text = String::from_utf8(bytes)
        .map_err(|_| ProemError::Tools { path: path.to_path_buf(), message: "is not valid UTF-8".into() })?;
    parse_tools(&text, path)
}

/// Parses `--now`.
pub fn parse_now(value: &str) -> Result<DateTime<FixedOffset>, ProemError> {
    DateTime::parse_from_rfc3339(value.trim()).map_err(|e| {
        ProemError::input("--now", format!("{value:?} is not an RFC 3339 time (e.g. 2026-11-21T09:30:00Z): {e}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_tool_shapes_parse() {
        let tools = parse_tools(
            r#"[{"name":"read","description":"Read a file"},
                {"type":"function","function":{"name":"exec","parameters":{"type":"object"}}}]"#,
            Path::new("t.json"),
        )
        .unwrap();
        assert_eq!(tools[0].name, "read");
        assert_eq!(tools[1].name, "exec");
        assert!(tools[1].parameters.is_some());
        assert_eq!(parse_tools(r#"{"tools":[{"name":"a"}]}"#, Path::new("t.json")).unwrap().len(), 1);
    }

    #[test]
    fn bad_tools_files_name_the_file() {
        let e = parse_tools("[{\"nom\":1}]", Path::new("x/tools.json")).unwrap_err().to_string();
        assert!(e.contains("x/tools.json") && e.contains("\"name\""), "{e}");
        let e = parse_tools("{oops", Path::new("t.json")).unwrap_err().to_string();
        assert!(e.contains("invalid JSON"), "{e}");
    }

    #[test]
    fn now_parses_rfc3339_only() {
        assert!(parse_now("2026-11-21T09:30:00+01:00").is_ok());
        assert!(parse_now("yesterday").unwrap_err().to_string().contains("--now"));
    }
}
