//! The trace format: JSON lines, each an agent's seed or one turn.
//!
//! ```text
//! {"agent": "ops", "files": {"AGENTS.md": "…", "proem.toml": "…"}, "tools": [{"name": …, "description": …, "parameters": {…}}]}
//! {"agent": "ops", "session": "agent:ops:telegram:dm:ana", "time": "2026-11-23T09:00:00Z",
//!  "channel": "telegram", "chat": "direct", "group_title": null, "extra": null,
//!  "tools": ["exec", "read"], "user": "…", "reply": "…",
//!  "edits": [{"file": "MEMORY.md", "append": "…"}, {"file": "notes.md", "write": "…"}, {"file": "x.md", "delete": true}]}
//! ```
//!
//! A seed comes before its agent's turns and gives its workspace (file
//! names relative to it) and its tool catalog; a turn names tools from
//! the catalog, and its edits are made to the workspace before it is
//! built. Turns come in time order. Everything is bounded
//! ([`MAX_TRACE_BYTES`], [`MAX_TEXT_BYTES`], …) and every error names the
//! line and the field.

use proem::{ChatKind, Tool};
use serde::Deserialize;
use std::collections::BTreeMap;

/// The largest trace file.
pub const MAX_TRACE_BYTES: u64 = 64 * 1024 * 1024;
/// The most lines (seeds and turns).
pub const MAX_LINES: usize = 100_000;
/// The largest text of one field (a file, a message, a reply, an edit).
pub const MAX_TEXT_BYTES: usize = 1024 * 1024;
/// The most agents, files per seed, tools per catalog and edits per turn.
pub const MAX_ITEMS: usize = 1000;

/// One line of a trace.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    /// An agent's workspace and tool catalog.
    Seed(Seed),
    /// One turn.
    Turn(Box<TraceTurn>),
}

/// An agent's workspace and tool catalog.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Seed {
    /// The agent's name in the trace.
    pub agent: String,
    /// Its files, by path relative to its folder (`proem.toml` included).
    pub files: BTreeMap<String, String>,
    /// The tools its turns pick from (any form a tools file takes).
    #[serde(default, deserialize_with = "tools_list")]
    pub tools: Vec<Tool>,
}

/// A seed's `tools`, read as a tools file's list is
/// ([`proem_core::turn::tools_from_value`]: every tool an object).
fn tools_list<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Vec<Tool>, D::Error> {
    let value = serde_json::Value::deserialize(deserializer)?;
    proem_core::turn::tools_from_value(value).map_err(serde::de::Error::custom)
}

/// One turn of a trace.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceTurn {
    /// The agent (seeded earlier).
    pub agent: String,
    /// The session key (`agent:ops:telegram:dm:ana`, `agent:ops:cron:digest`, …).
    pub session: String,
    /// When it happened, RFC 3339.
    pub time: String,
    /// The channel.
    #[serde(default)]
    pub channel: Option<String>,
    /// `direct` or `group`.
    #[serde(default)]
    pub chat: Option<ChatKind>,
    /// The group's title.
    #[serde(default)]
    pub group_title: Option<String>,
    /// The caller's extra prompt.
    #[serde(default)]
    pub extra: Option<String>,
    /// Tools from the catalog, by name.
    #[serde(default)]
    pub tools: Vec<String>,
    /// The user's message.
    pub user: String,
    /// The assistant's reply (in the history of the session's later turns).
    #[serde(default)]
    pub reply: String,
    /// Workspace edits made before this turn.
    #[serde(default)]
    pub edits: Vec<Edit>,
}

/// One workspace edit.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Edit {
    /// The file, relative to the agent's folder.
    pub file: String,
    /// Text added at its end (the file is made when absent).
    #[serde(default)]
    pub append: Option<String>,
    /// Its whole new text.
    #[serde(default)]
    pub write: Option<String>,
    /// Remove it.
    #[serde(default)]
    pub delete: bool,
}

/// Parses a whole trace. Errors name the line (1-based) and the field.
pub fn parse(text: &str) -> Result<Vec<Line>, String> {
    let mut lines = Vec::new();
    let mut last_time = None;
    let mut seeded = std::collections::BTreeSet::new();
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        if raw.trim().is_empty() {
            continue;
        }
        if lines.len() >= MAX_LINES {
            return Err(format!("line {n}: more than {MAX_LINES} lines; split the trace"));
        }
        let value: serde_json::Value =
            serde_json::from_str(raw).map_err(|e| format!("line {n}: not one JSON object: {e}"))?;
        let at = |e: serde_path_to_error::Error<serde_json::Error>| format!("line {n}: {}: {}", e.path(), e.inner());
        let line = if value.get("files").is_some() {
            let seed: Seed = serde_path_to_error::deserialize(value).map_err(at)?;
            check_seed(&seed).map_err(|why| format!("line {n}: {why}"))?;
            if !seeded.insert(seed.agent.clone()) || seeded.len() > MAX_ITEMS {
                return Err(format!("line {n}: agent {:?} seeded twice (or more than {MAX_ITEMS} agents)", seed.agent));
            }
            Line::Seed(seed)
        } else {
            let turn: TraceTurn = serde_path_to_error::deserialize(value).map_err(at)?;
            check_turn(&turn).map_err(|why| format!("line {n}: {why}"))?;
            if !seeded.contains(&turn.agent) {
                return Err(format!("line {n}: agent: {:?} has no seed line before its turns", turn.agent));
            }
            let time = proem_core::turn::parse_now(&turn.time).map_err(|e| format!("line {n}: time: {e}"))?;
            if last_time.is_some_and(|t| time < t) {
                return Err(format!(
                    "line {n}: time: {} is before the previous turn's; keep turns in time order",
                    turn.time
                ));
            }
            last_time = Some(time);
            Line::Turn(Box::new(turn))
        };
        lines.push(line);
    }
    Ok(lines)
}

fn check_text(field: &str, text: &str) -> Result<(), String> {
    match text.len() > MAX_TEXT_BYTES {
        true => Err(format!("{field}: {} bytes, more than {MAX_TEXT_BYTES}", text.len())),
        false => Ok(()),
    }
}

fn check_path(field: &str, path: &str) -> Result<(), String> {
    proem_core::paths::check_relative_path(path).map_err(|why| format!("{field}: {path:?}: {why}"))?;
    check_text(field, path)
}

fn check_seed(seed: &Seed) -> Result<(), String> {
    check_text("agent", &seed.agent)?;
    if seed.files.len() > MAX_ITEMS || seed.tools.len() > MAX_ITEMS {
        return Err(format!("files, tools: at most {MAX_ITEMS} each"));
    }
    for (name, text) in &seed.files {
        check_path("files", name)?;
        check_text(&format!("files.{name}"), text)?;
    }
    Ok(())
}

fn check_turn(turn: &TraceTurn) -> Result<(), String> {
    for (field, text) in
        [("agent", &turn.agent), ("session", &turn.session), ("user", &turn.user), ("reply", &turn.reply)]
    {
        check_text(field, text)?;
    }
    for (field, text) in [("channel", &turn.channel), ("group_title", &turn.group_title), ("extra", &turn.extra)] {
        check_text(field, text.as_deref().unwrap_or(""))?;
    }
    if turn.tools.len() > MAX_ITEMS || turn.edits.len() > MAX_ITEMS {
        return Err(format!("tools, edits: at most {MAX_ITEMS} each"));
    }
    for (i, edit) in turn.edits.iter().enumerate() {
        check_path(&format!("edits[{i}].file"), &edit.file)?;
        let actions = usize::from(edit.append.is_some()) + usize::from(edit.write.is_some()) + usize::from(edit.delete);
        if actions != 1 {
            return Err(format!("edits[{i}]: give exactly one of append, write, delete"));
        }
        check_text(&format!("edits[{i}]"), edit.append.as_deref().or(edit.write.as_deref()).unwrap_or(""))?;
    }
    Ok(())
}

/// Makes `edit` in the agent folder `root` (a scratch copy the replay
/// owns; paths were checked relative, without `..`). A file grown past
/// [`MAX_TEXT_BYTES`] by appends is an error naming it.
pub fn apply(root: &std::path::Path, edit: &Edit) -> Result<(), String> {
    let path = root.join(&edit.file);
    let fail = |e: std::io::Error| format!("edit of {}: {e}", edit.file);
    if edit.delete {
        return match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(fail(e)),
            _ => Ok(()),
        };
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(fail)?;
    }
    let text = match (&edit.write, &edit.append) {
        (Some(text), _) => text.clone(),
        (None, Some(more)) => {
            let mut text = std::fs::read_to_string(&path).unwrap_or_default();
            text.push_str(more);
            text
        }
        (None, None) => return Err(format!("edit of {}: give one of append, write, delete", edit.file)),
    };
    check_text(&edit.file, &text)?;
    std::fs::write(&path, text).map_err(fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEED: &str = r#"{"agent": "a", "files": {"AGENTS.md": "rules"}, "tools": [{"name": "exec"}]}"#;

    fn turn(extra: &str) -> String {
        format!(r#"{{"agent": "a", "session": "agent:a:main", "time": "2026-11-23T09:00:00Z", "user": "hi"{extra}}}"#)
    }

    #[test]
    fn seeds_and_turns_parse_and_errors_name_the_line_and_field() {
        let lines =
            parse(&format!("{SEED}\n\n{}\n", turn(r#", "chat": "group", "edits": [{"file": "m.md", "append": "x"}]"#)))
                .unwrap();
        assert!(matches!(&lines[0], Line::Seed(s) if s.tools[0].name == "exec"));
        assert!(matches!(&lines[1], Line::Turn(t) if t.chat == Some(ChatKind::Group) && t.edits.len() == 1));
        let err = |text: String| parse(&text).unwrap_err();
        assert!(err(turn("")).contains("line 1: agent"), "no seed yet");
        assert!(err(format!("{SEED}\n{}", turn(r#", "chat": "room""#))).starts_with("line 2: chat"));
        assert!(err(format!("{SEED}\n{}", turn(r#", "colour": 1"#))).contains("colour"));
        let escape = turn(r#", "edits": [{"file": "../x", "write": "y"}]"#);
        assert!(err(format!("{SEED}\n{escape}")).contains("edits[0].file"));
        let two = turn(r#", "edits": [{"file": "x", "write": "y", "delete": true}]"#);
        assert!(err(format!("{SEED}\n{two}")).contains("exactly one"));
        let late = turn("").replace("09:00", "08:00");
        assert!(err(format!("{SEED}\n{}\n{late}", turn(""))).starts_with("line 3: time"));
        assert!(err(format!("{SEED}\n{SEED}")).contains("seeded twice"));
        let huge = format!(r#"{{"agent": "b", "files": {{"A.md": "{}"}}}}"#, "x".repeat(MAX_TEXT_BYTES + 1));
        assert!(err(huge).contains("files.A.md"));
    }

    proptest::proptest! {
        /// Any text, or a valid trace with one line mangled: an answer or
        /// an error naming a line, never a panic.
        #[test]
        fn any_trace_text_parses_or_is_an_error_naming_its_line(
            junk in "\\PC{0,400}",
            cut in 0usize..400,
        ) {
            if let Err(e) = parse(&junk) {
                proptest::prop_assert!(e.starts_with("line "), "{}", e);
            }
            let valid = format!("{SEED}\n{}", turn(r#", "edits": [{"file": "m.md", "append": "x"}]"#));
            let mangled: String = valid.chars().take(cut).chain(junk.chars()).collect();
            if let Err(e) = parse(&mangled) {
                proptest::prop_assert!(e.starts_with("line "), "{}", e);
            }
        }
    }

    #[test]
    fn edits_append_write_and_delete_inside_the_folder() {
        let dir = tempfile::tempdir().unwrap();
        let edit = |json: &str| serde_json::from_str::<Edit>(json).unwrap();
        apply(dir.path(), &edit(r#"{"file": "memory/today.md", "append": "a"}"#)).unwrap();
        apply(dir.path(), &edit(r#"{"file": "memory/today.md", "append": "b"}"#)).unwrap();
        assert_eq!(std::fs::read_to_string(dir.path().join("memory/today.md")).unwrap(), "ab");
        apply(dir.path(), &edit(r#"{"file": "memory/today.md", "write": "c"}"#)).unwrap();
        assert_eq!(std::fs::read_to_string(dir.path().join("memory/today.md")).unwrap(), "c");
        apply(dir.path(), &edit(r#"{"file": "memory/today.md", "delete": true}"#)).unwrap();
        apply(dir.path(), &edit(r#"{"file": "memory/today.md", "delete": true}"#)).unwrap();
        assert!(!dir.path().join("memory/today.md").exists());
    }
}
