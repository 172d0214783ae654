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

/// A tool the model may call this turn. Read from JSON by
/// [`parse_tools`] (a tools file) and the body's `tools`, by hand: every
/// member with the type the OpenAPI document gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    /// Name as the model calls it.
    pub name: String,
    /// What it does ("" when not given).
    pub description: String,
    /// JSON schema of its arguments: an object, or null for none (any
    /// other value is refused, as the service's OpenAPI document says).
    pub parameters: Option<serde_json::Value>,
    /// The MCP server it comes from, when it is an MCP tool (also read from
    /// an `mcp__<server>__<tool>` name).
    pub server: Option<String>,
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

/// Parses a tools JSON document: a list (or `{"tools": [...]}`) of tools,
/// each either plain or in OpenAI's `{"type":"function","function":{…}}` shape.
pub fn parse_tools(json: &str, path: &Path) -> Result<Vec<Tool>, ProemError> {
    let err = |message: String| ProemError::Tools { path: path.to_path_buf(), message };
    let doc: serde_json::Value = serde_json::from_str(json).map_err(|e| err(format!("invalid JSON: {e}")))?;
    tools_from_value(doc).map_err(err)
}

/// The tools of a parsed tools document (see [`parse_tools`]; also what
/// the service's body and a replay trace's `tools` hold), read by
/// hand from the tree rather than by serde's derive: a derived struct also
/// takes a JSON array as its fields in order (`["a"]` read as a tool named
/// a, which the service's OpenAPI document refuses: every tool is an
/// object), and an untagged enum copied the whole tree once per shape it
/// tried. Each member is read with the type the document gives it.
pub fn tools_from_value(doc: serde_json::Value) -> Result<Vec<Tool>, String> {
    let refused = || {
        "expected a JSON array of tools (or {\"tools\": [...]}), each an object with a string \"name\" \
             and \"parameters\" (if any) a JSON Schema object or null, or OpenAI's \
             {\"type\": \"function\", \"function\": {…}} with a string \"type\""
            .to_string()
    };
    let list = match doc {
        serde_json::Value::Array(list) => list,
        serde_json::Value::Object(mut file) => match file.remove("tools") {
            Some(serde_json::Value::Array(list)) => list,
            _ => return Err(refused()),
        },
        _ => return Err(refused()),
    };
    list.into_iter().map(tool_entry).collect::<Option<Vec<Tool>>>().ok_or_else(refused)
}

/// One entry of a tools list: OpenAI's `{"type": "function", "function":
/// {…}}` when its `function` is a tool and its `type`, when present, a
/// string; else a plain tool (which does not read `type` or `function`).
fn tool_entry(entry: serde_json::Value) -> Option<Tool> {
    let serde_json::Value::Object(mut entry) = entry else { return None };
    if entry.get("type").is_none_or(serde_json::Value::is_string) {
        if let Some(serde_json::Value::Object(function)) = entry.remove("function") {
            if let Some(tool) = tool_of_object(function) {
                return Some(tool);
            }
        }
    }
    tool_of_object(entry)
}

/// A tool from a JSON object's members: `name` a string; `description` a
/// string (default ""); `parameters` an object or null (default null);
/// `server` a string or null (default null); other members not read.
fn tool_of_object(mut object: serde_json::Map<String, serde_json::Value>) -> Option<Tool> {
    use serde_json::Value;
    let Some(Value::String(name)) = object.remove("name") else { return None };
    let description = match object.remove("description") {
        None => String::new(),
        Some(Value::String(d)) => d,
        Some(_) => return None,
    };
    let parameters = match object.remove("parameters") {
        None | Some(Value::Null) => None,
        Some(p @ Value::Object(_)) => Some(p),
        Some(_) => return None,
    };
    let server = match object.remove("server") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s),
        Some(_) => return None,
    };
    Some(Tool { name, description, parameters, server })
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

    /// serde's derive reading of a tools document, as proem read it before
    /// reading it by hand: the oracle for documents where no array stands
    /// for an object (there the derive reads the array as the fields in
    /// order, which the OpenAPI document refuses; see
    /// `an_array_is_never_read_as_a_tool`).
    mod derive_oracle {
        use serde::Deserialize;
        use serde_json::Value;

        #[derive(Deserialize)]
        pub struct Tool {
            pub name: String,
            #[serde(default)]
            pub description: String,
            #[serde(default, deserialize_with = "object_or_null")]
            pub parameters: Option<Value>,
            #[serde(default)]
            pub server: Option<String>,
        }

        fn object_or_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
            match Option::<Value>::deserialize(d)? {
                None | Some(Value::Null) => Ok(None),
                Some(o @ Value::Object(_)) => Ok(Some(o)),
                Some(_) => Err(serde::de::Error::custom("not an object")),
            }
        }

        fn a_string<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
            String::deserialize(d).map(Some)
        }

        #[derive(Deserialize)]
        #[serde(untagged)]
        pub enum Entry {
            Wrapped {
                function: Tool,
                #[serde(default, rename = "type", deserialize_with = "a_string")]
                _type: Option<String>,
            },
            Plain(Tool),
        }

        #[derive(Deserialize)]
        #[serde(untagged)]
        pub enum File {
            List(Vec<Entry>),
            Object { tools: Vec<Entry> },
        }

        /// A tool's members: name, description, parameters, server.
        pub type Members = (String, String, Option<Value>, Option<String>);

        /// The tools' members, or None.
        pub fn read(doc: &Value) -> Option<Vec<Members>> {
            let file: File = serde_json::from_value(doc.clone()).ok()?;
            let (File::List(l) | File::Object { tools: l }) = file;
            Some(
                l.into_iter()
                    .map(|e| match e {
                        Entry::Wrapped { function: t, .. } | Entry::Plain(t) => {
                            (t.name, t.description, t.parameters, t.server)
                        }
                    })
                    .collect(),
            )
        }
    }

    /// A value for a member of a tool: every JSON kind, some of them right;
    /// no array but the empty one (see [`derive_oracle`]).
    fn member_value(depth: u32) -> BoxedStrategy<serde_json::Value> {
        use serde_json::json;
        let leaf = prop_oneof![
            Just(json!("t")),
            Just(json!("a \"quoted\" n\u{e9}me")),
            Just(json!(null)),
            Just(json!(7)),
            Just(json!(1.5)),
            Just(json!(true)),
            Just(json!([])),
            Just(json!({})),
            Just(json!({"type": "object", "properties": {"x": {"type": "string"}}})),
        ];
        if depth == 0 {
            prop_oneof![3 => leaf, 1 => tool_value(1)].boxed()
        } else {
            leaf.boxed()
        }
    }

    /// A tool-like object: members from the names a tool entry reads (and
    /// one it does not), half of them starting with a good name.
    fn tool_value(depth: u32) -> BoxedStrategy<serde_json::Value> {
        let keys = prop_oneof![
            Just("name"),
            Just("description"),
            Just("parameters"),
            Just("server"),
            Just("type"),
            Just("function"),
            Just("other"),
        ];
        (any::<bool>(), proptest::collection::vec((keys, member_value(depth)), 0..6))
            .prop_map(|(named, members)| {
                let mut object = serde_json::Map::new();
                if named {
                    object.insert("name".into(), serde_json::json!("n"));
                }
                for (k, v) in members {
                    object.insert(k.to_string(), v);
                }
                serde_json::Value::Object(object)
            })
            .boxed()
    }

    proptest! {
        /// The hand reading of a tools document gives what serde's derive
        /// gave, on documents of every shape, right or wrong (no array
        /// standing for an object: see `an_array_is_never_read_as_a_tool`).
        #[test]
        fn the_hand_reading_agrees_with_the_derive(
            tools in proptest::collection::vec(tool_value(0), 0..4),
            wrapped in any::<bool>(),
        ) {
            let list = serde_json::Value::Array(tools);
            let doc = if wrapped { serde_json::json!({ "tools": list }) } else { list };
            let ours = tools_from_value(doc.clone())
                .ok()
                .map(|t| t.into_iter().map(|t| (t.name, t.description, t.parameters, t.server)).collect::<Vec<_>>());
            prop_assert_eq!(ours, derive_oracle::read(&doc), "{}", doc);
        }
    }

    /// An array where the document says a tool or a function is an object
    /// is never read as one, as serde's derive read it (its items as the
    /// fields in order): a tools list holding an array is refused, and an
    /// entry whose `function` is an array is a plain tool, or refused.
    #[test]
    fn an_array_is_never_read_as_a_tool() {
        let path = Path::new("t.json");
        for refused in [
            r#"[["a"]]"#,
            r#"[["a","desc"]]"#,
            r#"[[{"name":"a"}]]"#,
            r#"{"tools":[["b"]]}"#,
            r#"[{"function":["x"]}]"#,
        ] {
            assert!(parse_tools(refused, path).is_err(), "{refused} was read");
        }
        let plain = parse_tools(r#"[{"name":"c","function":["x"],"type":"function"}]"#, path).unwrap();
        assert_eq!(plain.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["c"]);
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
