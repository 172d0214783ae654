//! aieos-identity: renders an AIEOS identity document (v1.1 or v1.2, flat
//! ZeroClaw shape or nested generator shape) into the persona section.
//!
//! Config: `aieos_path = "identity.json"` (relative to the agent directory,
//! read through the `workspace-read` grant; default `aieos.json`) or `inline`
//! (the document as a JSON string or a TOML table; it wins over the path).
//! When the document is missing, invalid or renders to nothing, the plugin
//! adds no section and logs a warning (a build diagnostic), so the markdown
//! persona (SOUL.md, IDENTITY.md) stays.
//!
//! By default (`fields = "model"`) only what shapes the model's replies is
//! rendered: the name, the role (`history.occupation`), the personality
//! (`psychology.traits`, `psychology.emotional_profile`), the communication
//! style (`linguistics.text_style`, `syntax`, `interaction`, `idiolect`) and
//! the boundaries (`psychology.moral_compass`, any `boundaries` block).
//! Appearance, birthplace, favourites, voice settings and the rest cost
//! tokens and change no reply. `fields = "all"` renders every descriptive
//! field: blocks in a fixed order, keys within a block alphabetically (so
//! key order in the file never changes the prompt). JSON-LD keys
//! (`@context`, `@type`, any `@…`), `standard` and `metadata` never are.

use proem_sdk::{workspace, AgentContext, File, Plugin, Section, StableHook, StableOutput};
use serde_json::{Map, Value};

/// The plugin.
#[derive(Default)]
pub struct AieosIdentity;

/// Where the document is looked for when `aieos_path` is not set.
pub const DEFAULT_PATH: &str = "aieos.json";

/// Rendered text above this many bytes is cut (the host caps a section at 64 KiB).
pub const MAX_BYTES: usize = 60 * 1024;

/// Top-level blocks in rendering order, with their headings. Other blocks
/// follow in document order under a heading made from their key.
const BLOCKS: [(&str, &str); 9] = [
    ("identity", "Identity"),
    ("psychology", "Personality"),
    ("linguistics", "Communication Style"),
    ("motivations", "Motivations"),
    ("capabilities", "Capabilities"),
    ("history", "Background"),
    ("physicality", "Appearance"),
    ("interests", "Interests"),
    ("presence", "Presence"),
];

/// Top-level keys that are about the document, not the entity.
const NOT_DESCRIPTIVE: [&str; 2] = ["standard", "metadata"];

/// What `fields = "model"` renders: a heading and the paths whose values
/// go under it, in order (a path the document lacks is skipped).
const MODEL_FIELDS: [(&str, &[&str]); 4] = [
    ("Role", &["history.occupation", "identity.role", "role"]),
    ("Personality", &["psychology.traits", "psychology.emotional_profile", "psychology.mbti", "psychology.ocean"]),
    (
        "Communication Style",
        &[
            "linguistics.text_style",
            "linguistics.syntax",
            "linguistics.interaction",
            "linguistics.idiolect",
            "linguistics.style",
        ],
    ),
    ("Boundaries", &["psychology.moral_compass", "boundaries", "psychology.boundaries"]),
];

/// Which fields are rendered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fields {
    /// Name, role, personality, style, boundaries.
    Model,
    /// Every descriptive field.
    All,
}

impl Plugin for AieosIdentity {
    fn capabilities(&self) -> Vec<String> {
        vec!["workspace-read".into()]
    }
}

/// The identity is the agent's, not the turn's: a stable hook.
impl StableHook for AieosIdentity {
    fn stable(&self, ctx: &AgentContext, _files: &[File]) -> Result<StableOutput, String> {
        let fields = match ctx.config_str("fields").unwrap_or("model") {
            "model" => Fields::Model,
            "all" => Fields::All,
            other => return Err(format!("config `fields` is {other:?}; expected \"model\" or \"all\"")),
        };
        match load(ctx).and_then(|doc| render_fields(&doc, fields)) {
            Ok(body) => Ok(StableOutput::default().section(Section::replace("persona", body))),
            Err(why) => {
                proem_sdk::warn(&format!("{why}; using the markdown persona (SOUL.md, IDENTITY.md) instead"));
                Ok(StableOutput::default())
            }
        }
    }
}

fn load(ctx: &AgentContext) -> Result<Value, String> {
    if let Some(inline) = ctx.config.get("inline") {
        return match inline {
            Value::String(text) => parse(text, "inline AIEOS document"),
            Value::Object(_) => Ok(inline.clone()),
            _ => Err("config `inline` must be a JSON string or a table".into()),
        };
    }
    let path = ctx.config_str("aieos_path").unwrap_or(DEFAULT_PATH);
    let text = workspace::read_to_string(path).map_err(|e| format!("cannot read the AIEOS document {e}"))?;
    parse(&text, path)
}

/// Parses a document: it must be a JSON object.
pub fn parse(text: &str, label: &str) -> Result<Value, String> {
    let doc: Value = serde_json::from_str(text).map_err(|e| format!("{label} is not valid JSON ({e})"))?;
    if !doc.is_object() {
        return Err(format!("{label} is not a JSON object"));
    }
    Ok(doc)
}

/// Renders every descriptive field of a document (`fields = "all"`).
pub fn render(doc: &Value) -> Result<String, String> {
    render_fields(doc, Fields::All)
}

/// Renders a document into the persona section's body, with `fields`.
/// `Err` when nothing descriptive is in it.
pub fn render_fields(doc: &Value, fields: Fields) -> Result<String, String> {
    let Value::Object(top) = doc else { return Err("the AIEOS document is not a JSON object".into()) };
    let blocks = match fields {
        Fields::All => all_blocks(top),
        Fields::Model => model_blocks(doc),
    };
    if blocks.is_empty() && display_name(top).is_none() {
        return Err("the AIEOS document has no identity fields".into());
    }
    let mut out =
        String::from("## Persona\nThis is who you are, from your AIEOS identity document. Embody it in every reply.");
    if let Some(name) = display_name(top) {
        out.push_str(&format!("\nYour name is {name}."));
    }
    for block in blocks {
        out.push_str("\n\n");
        out.push_str(&block);
    }
    Ok(cap(out))
}

/// The blocks of `fields = "model"`: each heading with the values of its
/// paths (a scalar as one labelled line, an object as its fields).
fn model_blocks(doc: &Value) -> Vec<String> {
    let mut blocks = Vec::new();
    for (heading, paths) in MODEL_FIELDS {
        let mut lines = Vec::new();
        for path in paths {
            let Some(value) = path.split('.').try_fold(doc, |v, key| v.get(key)) else { continue };
            match value {
                Value::Object(_) => block_lines(value, 0, &mut lines),
                other => {
                    let key = path.rsplit('.').next().unwrap_or(path);
                    field_lines(key, other, 0, &mut lines);
                }
            }
        }
        if !lines.is_empty() {
            blocks.push(format!("### {heading}\n{}", lines.join("\n")));
        }
    }
    blocks
}

/// The blocks of `fields = "all"`: every top-level block.
fn all_blocks(top: &Map<String, Value>) -> Vec<String> {
    let mut blocks = Vec::new();
    let known = BLOCKS.iter().filter_map(|(key, heading)| top.get(*key).map(|v| (*heading, v)));
    let others = top
        .iter()
        .filter(|(k, _)| !k.starts_with('@') && !NOT_DESCRIPTIVE.contains(&k.as_str()))
        .filter(|(k, _)| !BLOCKS.iter().any(|(b, _)| b == k))
        .map(|(k, v)| (k.as_str(), v));
    for (heading, value) in known.chain(others) {
        let mut lines = Vec::new();
        block_lines(value, 0, &mut lines);
        if !lines.is_empty() {
            blocks.push(format!("### {}\n{}", label(heading), lines.join("\n")));
        }
    }
    blocks
}

/// `names.first` + `names.last` (or `full`, or a flat `name`), with the nickname.
fn display_name(top: &Map<String, Value>) -> Option<String> {
    let identity = top.get("identity")?;
    let names = identity.get("names").unwrap_or(identity);
    let get = |k: &str| names.get(k).and_then(scalar).filter(|s| !s.is_empty());
    let name = match (get("first"), get("last")) {
        (Some(first), Some(last)) => format!("{first} {last}"),
        (Some(first), None) => first,
        _ => get("full").or_else(|| get("name"))?,
    };
    Some(match get("nickname") {
        Some(nick) => format!("{name} (\"{nick}\")"),
        None => name,
    })
}

/// Bullet lines for one value at `depth` (two spaces of indent per level).
fn block_lines(value: &Value, depth: usize, lines: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter().filter(|(k, _)| !k.starts_with('@')) {
                field_lines(key, v, depth, lines);
            }
        }
        other => {
            if let Some(text) = inline(other) {
                lines.push(format!("{}- {text}", indent(depth)));
            }
        }
    }
}

fn field_lines(key: &str, value: &Value, depth: usize, lines: &mut Vec<String>) {
    let pad = indent(depth);
    match value {
        Value::Object(map) if map.values().any(|v| v.is_object() || has_objects(v)) => {
            let mut nested = Vec::new();
            block_lines(value, depth + 1, &mut nested);
            if !nested.is_empty() {
                lines.push(format!("{pad}- **{}:**", label(key)));
                lines.extend(nested);
            }
        }
        Value::Array(items) if items.iter().any(Value::is_object) => {
            let rendered: Vec<String> = items.iter().filter_map(inline).collect();
            if !rendered.is_empty() {
                lines.push(format!("{pad}- **{}:**", label(key)));
                lines.extend(rendered.into_iter().map(|r| format!("{pad}  - {r}")));
            }
        }
        other => {
            if let Some(text) = inline(other) {
                lines.push(format!("{pad}- **{}:** {text}", label(key)));
            }
        }
    }
}

fn has_objects(v: &Value) -> bool {
    matches!(v, Value::Array(items) if items.iter().any(Value::is_object))
}

/// A value on one line; `None` when it holds nothing (null, "", [], {}).
fn inline(value: &Value) -> Option<String> {
    match value {
        Value::Array(items) => {
            let mut seen: Vec<String> = Vec::new();
            for text in items.iter().filter_map(inline) {
                if !seen.iter().any(|s| s.eq_ignore_ascii_case(&text)) {
                    seen.push(text);
                }
            }
            (!seen.is_empty()).then(|| seen.join(", "))
        }
        Value::Object(map) => {
            let parts: Vec<String> = map
                .iter()
                .filter(|(k, _)| !k.starts_with('@'))
                .filter_map(|(k, v)| {
                    let text = inline(v)?;
                    Some(if v.is_object() {
                        format!("{}: ({text})", label(k))
                    } else {
                        format!("{}: {text}", label(k))
                    })
                })
                .collect();
            (!parts.is_empty()).then(|| parts.join("; "))
        }
        other => scalar(other).filter(|s| !s.is_empty()),
    }
}

fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(one_line(s)),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(if *b { "yes" } else { "no" }.to_string()),
        _ => None,
    }
}

/// Untrusted text on one line: control characters and newlines become spaces.
fn one_line(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for word in s.split(|c: char| c.is_whitespace() || c.is_control()).filter(|w| !w.is_empty()) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// Acronyms [`label`] writes in capitals, by their lower-case spelling.
const ACRONYMS: [(&str, &str); 7] = [
    ("mbti", "MBTI"),
    ("ocean", "OCEAN"),
    ("tts", "TTS"),
    ("uri", "URI"),
    ("id", "ID"),
    ("ipv4", "IPv4"),
    ("ipv6", "IPv6"),
];

/// `core_values` → `Core values`; known acronyms upper-cased (`mbti` → `MBTI`).
/// Words are split at `_`, whitespace and control characters, and joined
/// by one space; the first character is upper-cased. One string is built
/// (a document has a label for every field).
fn label(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for word in key.split(|c: char| c == '_' || c.is_whitespace() || c.is_control()).filter(|w| !w.is_empty()) {
        if !out.is_empty() {
            out.push(' ');
        }
        match ACRONYMS.iter().find(|(a, _)| word.eq_ignore_ascii_case(a)) {
            Some((_, up)) => out.push_str(up),
            None => out.push_str(word),
        }
    }
    if let Some(first) = out.chars().next().filter(|c| !c.to_uppercase().eq([*c])) {
        let upper: String = first.to_uppercase().collect();
        out.replace_range(..first.len_utf8(), &upper);
    }
    out
}

/// Two spaces per level.
fn indent(depth: usize) -> String {
    "  ".repeat(depth)
}

fn cap(mut text: String) -> String {
    if text.len() <= MAX_BYTES {
        return text;
    }
    let mut end = MAX_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push_str("\n[AIEOS document cut to fit]");
    text
}

proem_sdk::register_plugin!(AieosIdentity);

/// The body of the `aieos` cargo-fuzz target (`fuzz/`), callable from
/// tests: any bytes either parse and render within the size cap or give an
/// error, and rendering is deterministic. `tests/fuzz_corpus.rs` replays
/// the committed corpus through it. Not part of the plugin's API.
#[doc(hidden)]
pub fn fuzz_check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(doc) = parse(text, "aieos.json") else { return };
    if let Ok(rendered) = render(&doc) {
        assert!(rendered.len() <= MAX_BYTES * 2, "{} bytes", rendered.len());
        let again = parse(text, "aieos.json").expect("parses twice");
        assert_eq!(render(&again).ok().as_deref(), Some(rendered.as_str()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition of a label, spelled out step by step.
    fn label_by_definition(key: &str) -> String {
        let spaced: Vec<String> = one_line(&key.replace('_', " "))
            .split(' ')
            .map(|w| {
                ACRONYMS
                    .iter()
                    .find(|(a, _)| w.eq_ignore_ascii_case(a))
                    .map(|(_, up)| up.to_string())
                    .unwrap_or_else(|| w.to_string())
            })
            .collect();
        let spaced = spaced.join(" ");
        let mut chars = spaced.chars();
        match chars.next() {
            Some(first) => first.to_uppercase().chain(chars).collect(),
            None => spaced,
        }
    }

    proptest::proptest! {
        /// Keys of every shape a hostile document can hold: acronyms in any
        /// case, underscores and whitespace runs at either end, control
        /// characters, letters whose capital is two letters (ß) or none.
        #[test]
        fn labels_are_built_as_defined(
            key in proptest::collection::vec(
                proptest::sample::select(vec!["_", " ", "\t", "\n", "\u{7}", "\u{85}", "mbti", "IpV4", "id", "core", "ß", "ǆ", "élan", "1", "値"]),
                0..8,
            ),
        ) {
            let key = key.concat();
            proptest::prop_assert_eq!(label(&key), label_by_definition(&key));
        }
    }
}
