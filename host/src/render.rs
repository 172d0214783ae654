//! Ordering sections and joining them into the prompt, and the output
//! formats the CLI and the HTTP service offer.

use crate::report::Built;
use crate::section::{Section, Zone};
use crate::text::{neutralize, BOUNDARY_MARKER};
use serde_json::json;

/// Sorts sections into prompt order: stable before dynamic, then by
/// (slot, priority, plugin id, section id). Load order and completion order
/// never matter.
pub fn order(sections: &mut [Section]) {
    sections.sort_by(|a, b| (a.zone, a.merge_key()).cmp(&(b.zone, b.merge_key())));
}

/// The prompt's text, split at the boundary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Joined {
    /// Stable sections joined by blank lines.
    pub stable: String,
    /// Dynamic sections joined by blank lines.
    pub dynamic: String,
    /// `stable + "\n" + marker + "\n" + dynamic`.
    pub prompt: String,
}

/// Joins ordered sections. A body that somehow carries the marker is
/// neutralised here, so the marker appears exactly once whatever a section's
/// author wrote.
pub fn join(sections: &[Section]) -> Joined {
    let part = |zone: Zone| {
        let mut out = String::new();
        for s in sections.iter().filter(|s| s.zone == zone) {
            if !out.is_empty() {
                out.push_str("\n\n");
            }
            if s.body.contains("PROEM_CACHE_BOUNDARY") {
                out.push_str(&neutralize(&s.body));
            } else {
                out.push_str(&s.body);
            }
        }
        out
    };
    let stable = part(Zone::Stable);
    let dynamic = part(Zone::Dynamic);
    let prompt = format!("{stable}\n{BOUNDARY_MARKER}\n{dynamic}");
    Joined { stable, dynamic, prompt }
}

/// Output formats of `proem build`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// The prompt as plain text, marker included.
    Text,
    /// The full report object.
    Json,
    /// `{"system": [...]}`: two text blocks, `cache_control` on the stable one.
    Anthropic,
    /// `{"messages": [...]}`: one system message, marker removed.
    Openai,
}

/// Renders a build in a format. Text ends with a newline; JSON is one line.
pub fn format(built: &Built, format: Format) -> String {
    match format {
        Format::Text => format!("{}\n", built.prompt),
        Format::Json => serde_json::to_string_pretty(built).expect("report serialises"),
        Format::Anthropic => {
            let mut blocks =
                vec![json!({"type": "text", "text": built.stable, "cache_control": {"type": "ephemeral"}})];
            if !built.dynamic.is_empty() {
                blocks.push(json!({"type": "text", "text": built.dynamic}));
            }
            serde_json::to_string_pretty(&json!({ "system": blocks })).expect("json")
        }
        Format::Openai => {
            let content = if built.dynamic.is_empty() {
                built.stable.clone()
            } else {
                format!("{}\n\n{}", built.stable, built.dynamic)
            };
            serde_json::to_string_pretty(&json!({"messages": [{"role": "system", "content": content}]})).expect("json")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::section::{core_section, ids};

    #[test]
    fn order_ignores_input_order_and_marker_appears_once() {
        let mut a = vec![
            core_section(ids::RUNTIME, "## Runtime\nr".into()).unwrap(),
            core_section(ids::SAFETY, "## Safety\nPROEM_CACHE_BOUNDARY <!-- PROEM_CACHE_BOUNDARY -->".into()).unwrap(),
            core_section(ids::IDENTITY, "You are x.".into()).unwrap(),
        ];
        let mut b = a.clone();
        b.reverse();
        order(&mut a);
        order(&mut b);
        assert_eq!(a, b);
        let j = join(&a);
        assert!(j.stable.starts_with("You are x.\n\n## Safety"));
        assert_eq!(j.prompt.matches(BOUNDARY_MARKER).count(), 1);
        assert_eq!(j.dynamic, "## Runtime\nr");
    }
}
