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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, serde::Serialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
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
    /// JSON schema of its arguments: an object, or null for none (any
    /// other value is refused, naming the field, as the service's OpenAPI
    /// document says).
    #[serde(default, deserialize_with = "schema_object_or_null")]
    pub parameters: Option<serde_json::Value>,
    /// The MCP server it comes from, when it is an MCP tool (also read from
    /// an `mcp__<server>__<tool>` name).
    #[serde(default)]
    pub server: Option<String>,
}

/// A tool's `parameters`: a JSON object (a JSON Schema) or null.
fn schema_object_or_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<serde_json::Value>, D::Error> {
    match <Option<serde_json::Value> as Deserialize>::deserialize(d)? {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(object @ serde_json::Value::Object(_)) => Ok(Some(object)),
        Some(other) => Err(serde::de::Error::custom(format!(
            "a tool's parameters are a JSON Schema object or null, not {}",
            match other {
                serde_json::Value::Bool(_) => "a boolean",
                serde_json::Value::Number(_) => "a number",
                serde_json::Value::String(_) => "a string",
                _ => "an array",
            }
        ))),
    }
}

/// The inputs of one turn: what the library takes, what `proem build`'s
/// flags give (`#[command(flatten)]`, with the `clap` feature) and what the
/// service's JSON body holds (every field optional, unknown ones refused).
/// Unset fields fall back to the agent's config or a documented default.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(default, deny_unknown_fields)]
pub struct Turn {
    /// Force a prompt mode (otherwise: session key, then config, then full).
    #[cfg_attr(feature = "clap", arg(long, value_name = "MODE", value_parser = parse_mode_flag))]
    pub mode: Option<Mode>,
    /// Session key; `…:heartbeat…` caps the mode at minimal, `…:subagent:…`
    /// and `…:cron:…` at task and keep only the sub-agent file allowlist.
    #[cfg_attr(feature = "clap", arg(long, value_name = "KEY"))]
    pub session_key: Option<String>,
    /// This turn is a heartbeat (as a session key with a `heartbeat` segment
    /// says too): HEARTBEAT.md and the heartbeat ack contract are included,
    /// and the mode is capped at minimal.
    #[cfg_attr(feature = "clap", arg(long))]
    pub heartbeat: bool,
    /// The runtime lets the agent stay silent this turn (group chats always
    /// do): the prompt says which exact reply means "say nothing".
    #[cfg_attr(feature = "clap", arg(long))]
    pub replies_optional: bool,
    /// The thinking (reasoning) level of this turn, for the runtime line
    /// (overrides [runtime] thinking).
    #[cfg_attr(feature = "clap", arg(long, value_name = "LEVEL"))]
    pub thinking: Option<String>,
    /// Provider name (overrides [provider] name).
    #[cfg_attr(feature = "clap", arg(long, value_name = "P"))]
    pub provider: Option<String>,
    /// Model id (overrides [provider] model; picks the tokenizer).
    #[cfg_attr(feature = "clap", arg(long, value_name = "M"))]
    pub model: Option<String>,
    /// Channel the message came from (telegram, slack, …).
    #[cfg_attr(feature = "clap", arg(long, value_name = "C"))]
    pub channel: Option<String>,
    /// Direct message or group chat.
    #[cfg_attr(feature = "clap", arg(long, value_name = "KIND", value_enum))]
    pub chat_kind: Option<ChatKind>,
    /// Title of the group chat (untrusted: one line, quotes removed).
    #[cfg_attr(feature = "clap", arg(long, value_name = "T"))]
    pub group_title: Option<String>,
    /// Extra system prompt for this turn (untrusted: wrapped, defused).
    #[cfg_attr(feature = "clap", arg(long, value_name = "TEXT"))]
    pub extra: Option<String>,
    /// An owner's sender id (repeat for several).
    #[cfg_attr(feature = "clap", arg(long = "owner", value_name = "ID"))]
    pub owners: Vec<String>,
    /// The tools: a list of {name, description, parameters}, or a tools
    /// JSON file (overrides [tools] file). On the command line a path; in
    /// the service's body a file inside the agent directory or the list
    /// itself; in the library either.
    #[cfg_attr(feature = "clap", arg(long, value_name = "FILE", value_parser = tools_file_flag))]
    #[serde(deserialize_with = "tools_field")]
    pub tools: Option<Tools>,
    /// The turn's time, RFC 3339 (default: now). Only the date reaches the
    /// prompt.
    #[cfg_attr(feature = "clap", arg(long, value_name = "RFC3339", value_parser = parse_now_flag))]
    #[serde(deserialize_with = "now_field")]
    pub now: Option<DateTime<FixedOffset>>,
    /// IANA time zone for the date (default: UTC).
    #[cfg_attr(feature = "clap", arg(long, value_name = "TZ"))]
    pub timezone: Option<String>,
    /// Whole-prompt token budget (overrides [budget] tokens): 1 to
    /// 1,000,000,000.
    #[cfg_attr(feature = "clap", arg(long, value_name = "TOKENS", value_parser = budget_flag))]
    #[serde(deserialize_with = "budget_field")]
    pub budget: Option<usize>,
}

/// A turn's tools: the list, or a tools JSON file to read it from.
#[derive(Debug, Clone, PartialEq)]
pub enum Tools {
    /// The list itself.
    List(Vec<Tool>),
    /// A tools JSON file inside the agent directory (the command line
    /// reads its `--tools` path itself, anywhere, before it builds).
    File(String),
}

impl From<Vec<Tool>> for Tools {
    fn from(tools: Vec<Tool>) -> Tools {
        Tools::List(tools)
    }
}

/// `--mode`.
#[cfg(feature = "clap")]
fn parse_mode_flag(text: &str) -> Result<Mode, String> {
    text.parse()
}

/// `--tools`: a path, read by the command line before it builds.
#[cfg(feature = "clap")]
fn tools_file_flag(text: &str) -> Result<Tools, String> {
    Ok(Tools::File(text.to_string()))
}

/// `--now`.
#[cfg(feature = "clap")]
fn parse_now_flag(text: &str) -> Result<DateTime<FixedOffset>, String> {
    parse_rfc3339(text)
}

/// `--budget`: a whole number within [`crate::bounds::BUDGET_TOKENS`].
#[cfg(feature = "clap")]
fn budget_flag(text: &str) -> Result<usize, String> {
    crate::bounds::BUDGET_TOKENS.parse_usize(text)
}

/// An RFC 3339 time, or what is wrong with it.
fn parse_rfc3339(value: &str) -> Result<DateTime<FixedOffset>, String> {
    DateTime::parse_from_rfc3339(value.trim())
        .map_err(|e| format!("{value:?} is not an RFC 3339 time (e.g. 2026-11-21T09:30:00Z): {e}"))
}

/// The body's `now`: an RFC 3339 string.
fn now_field<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<DateTime<FixedOffset>>, D::Error> {
    Option::<String>::deserialize(deserializer)?
        .map(|text| parse_rfc3339(&text).map_err(serde::de::Error::custom))
        .transpose()
}

/// The body's `tools`: the name of a tools file inside the agent
/// directory, or the list in any form a tools file takes
/// (`[{"name": …, "description": …, "parameters": …}]`, OpenAI's
/// `{"type": "function", "function": {…}}` entries, or `{"tools": […]}`).
fn tools_field<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Tools>, D::Error> {
    Ok(match Option::<serde_json::Value>::deserialize(deserializer)? {
        None => None,
        Some(serde_json::Value::String(name)) => Some(Tools::File(name)),
        Some(list) => Some(Tools::List(tools_from_value(list).map_err(serde::de::Error::custom)?)),
    })
}

/// The body's `budget`: a whole number within
/// [`crate::bounds::BUDGET_TOKENS`], written as an integer or as a number
/// with no fraction (`2.0`, which JSON Schema counts as an integer).
fn budget_field<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<usize>, D::Error> {
    let Some(value) = Option::<serde_json::Number>::deserialize(deserializer)? else { return Ok(None) };
    let whole = match (value.as_u64(), value.as_f64()) {
        (Some(n), _) => Some(n),
        (None, Some(f)) if f.fract() == 0.0 && f >= 0.0 && f < u64::MAX as f64 => Some(f as u64),
        _ => None,
    };
    let bound = crate::bounds::BUDGET_TOKENS;
    let checked = whole.ok_or_else(|| format!("{value} is not a whole number of tokens")).and_then(|n| bound.check(n));
    checked.map(|n| Some(n as usize)).map_err(serde::de::Error::custom)
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ToolEntry {
    /// `{"type": "function", "function": {...}}` (OpenAI's shape). The
    /// `type` is not read, but it is checked: when present it is a string,
    /// as the service's OpenAPI document says (anything else is refused,
    /// never ignored).
    Wrapped {
        function: Tool,
        #[serde(default, rename = "type", deserialize_with = "a_string")]
        _type: Option<String>,
    },
    /// `{"name": ..., "description": ..., "parameters": ...}`.
    Plain(Tool),
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ToolsFile {
    List(Vec<ToolEntry>),
    Object { tools: Vec<ToolEntry> },
}

/// A field that, when present, is a string (never null).
fn a_string<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    String::deserialize(deserializer).map(Some)
}

/// Parses a tools JSON document: a list (or `{"tools": [...]}`) of tools,
/// each either plain or in OpenAI's `{"type":"function","function":{…}}` shape.
///
/// A document is read straight from its text when that succeeds (one pass,
/// no JSON tree: half the time of a 30-tool file); anything that pass
/// refuses is read again the two-pass way, which names what is wrong. The
/// two agree on every document the one pass reads: they differ only on a
/// member given twice (the tree keeps the last, the one pass refuses a
/// repeated field), and a refusal goes the two-pass way.
pub fn parse_tools(json: &str, path: &Path) -> Result<Vec<Tool>, ProemError> {
    if let Ok(file) = serde_json::from_str::<ToolsFile>(json) {
        return Ok(tools_of(file));
    }
    parse_tools_via_tree(json, path)
}

/// [`parse_tools`] through a JSON tree: the way that names the problem.
fn parse_tools_via_tree(json: &str, path: &Path) -> Result<Vec<Tool>, ProemError> {
    let err = |message: String| ProemError::Tools { path: path.to_path_buf(), message };
    let doc: serde_json::Value = serde_json::from_str(json).map_err(|e| err(format!("invalid JSON: {e}")))?;
    tools_from_value(doc).map_err(err)
}

/// The tools of a parsed tools document (see [`parse_tools`]).
fn tools_from_value(doc: serde_json::Value) -> Result<Vec<Tool>, String> {
    let file: ToolsFile = serde_json::from_value(doc).map_err(|_| {
        "expected a JSON array of tools (or {\"tools\": [...]}), each with a string \"name\" \
             and \"parameters\" (if any) a JSON Schema object or null, or OpenAI's \
             {\"type\": \"function\", \"function\": {…}} with a string \"type\""
    })?;
    Ok(tools_of(file))
}

/// The tools of a tools document, in its order.
fn tools_of(file: ToolsFile) -> Vec<Tool> {
    let entries = match file {
        ToolsFile::List(l) | ToolsFile::Object { tools: l } => l,
    };
    entries
        .into_iter()
        .map(|e| match e {
            ToolEntry::Wrapped { function, .. } => function,
            ToolEntry::Plain(t) => t,
        })
        .collect()
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

/// Parses an RFC 3339 time (a turn's `now`).
pub fn parse_now(value: &str) -> Result<DateTime<FixedOffset>, ProemError> {
    parse_rfc3339(value).map_err(|why| ProemError::input("now", why))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A JSON value for a member of a tool (any kind, some of them right).
    fn member_value() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("\"t\"".to_string()),
            Just("\"a \\\"quoted\\\" n\\u00e9me\"".to_string()),
            Just("null".to_string()),
            Just("7".to_string()),
            Just("1e400".to_string()),
            Just("true".to_string()),
            Just("[]".to_string()),
            Just("{}".to_string()),
            Just("{\"type\":\"object\",\"a\":1,\"a\":2}".to_string()),
            Just("{\"name\":\"inner\"}".to_string()),
        ]
    }

    /// A tool object as text: members from a small set, each maybe twice.
    fn tool_text(depth: u32) -> BoxedStrategy<String> {
        let keys = prop_oneof![
            Just("name"),
            Just("description"),
            Just("parameters"),
            Just("server"),
            Just("type"),
            Just("function"),
            Just("other"),
        ];
        let value = if depth == 0 {
            prop_oneof![3 => member_value(), 1 => tool_text(1)].boxed()
        } else {
            member_value().boxed()
        };
        // Half of them start with a good name, so that many documents read.
        (any::<bool>(), proptest::collection::vec((keys, value), 0..6))
            .prop_map(|(named, members)| {
                let named = named.then(|| "\"name\":\"n\"".to_string());
                let body: Vec<String> =
                    named.into_iter().chain(members.iter().map(|(k, v)| format!("\"{k}\":{v}"))).collect();
                format!("{{{}}}", body.join(","))
            })
            .boxed()
    }

    proptest! {
        /// The one-pass read of a tools document gives what the two-pass
        /// read gives, on documents of every shape, right or wrong, with
        /// members given twice.
        #[test]
        fn the_one_pass_read_agrees_with_the_tree(
            tools in proptest::collection::vec(tool_text(0), 0..4),
            wrapped in any::<bool>(),
        ) {
            let list = format!("[{}]", tools.join(","));
            let text = if wrapped { format!("{{\"tools\":{list}}}") } else { list };
            let path = Path::new("tools.json");
            let one = parse_tools(&text, path).map_err(|e| e.to_string());
            let tree = parse_tools_via_tree(&text, path).map_err(|e| e.to_string());
            prop_assert_eq!(one, tree, "{}", text);
        }
    }

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
    fn a_tools_parameters_are_an_object_or_null() {
        for shape in
            [r#"[{"name":"a","parameters":P}]"#, r#"[{"type":"function","function":{"name":"a","parameters":P}}]"#]
        {
            for (parameters, ok) in
                [("{}", true), ("null", true), ("2688", false), ("\"x\"", false), ("[]", false), ("true", false)]
            {
                let parsed = parse_tools(&shape.replace('P', parameters), Path::new("t.json"));
                assert_eq!(parsed.is_ok(), ok, "{shape} with {parameters}: {parsed:?}");
                if let Err(e) = parsed {
                    assert!(e.to_string().contains("parameters"), "{e}");
                }
            }
        }
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
        assert!(parse_now("yesterday").unwrap_err().to_string().contains("now"));
    }
}
