//! What a plugin knows about the turn.

use serde_json::Value;

/// How much of the prompt this turn gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Mode {
    /// Everything: the main session.
    Full,
    /// Sub-agent and cron sessions.
    Task,
    /// Heartbeats: identity, tools, safety and little else.
    Minimal,
    /// The bare minimum.
    None,
}

/// Direct message or group chat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatKind {
    /// A one-to-one chat.
    Direct,
    /// A group chat.
    Group,
}

/// A tool the model may call this turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tool {
    /// Its name, as the model calls it.
    pub name: String,
    /// What it does.
    pub description: String,
    /// JSON schema of its arguments, as JSON text.
    pub parameters_json: Option<String>,
}

/// A skill from `skills/*/SKILL.md`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// The skill's name.
    pub name: String,
    /// When to use it.
    pub description: String,
    /// Where its SKILL.md is, relative to the agent directory.
    pub location: String,
}

/// The turn a hook is called for. Only non-secret inputs are here; the
/// operator's settings for this plugin are in [`Context::config`].
#[derive(Debug, Clone, PartialEq)]
pub struct Context {
    /// The agent's id.
    pub agent_id: String,
    /// The resolved prompt mode.
    pub mode: Mode,
    /// Provider name (`openai`, `anthropic`, …), when known.
    pub provider: Option<String>,
    /// Model name, when known.
    pub model: Option<String>,
    /// Channel (`telegram`, `discord`, …), when known.
    pub channel: Option<String>,
    /// Direct or group chat, when known.
    pub chat_kind: Option<ChatKind>,
    /// This turn's tools, sorted by name.
    pub tools: Vec<Tool>,
    /// The agent's skills.
    pub skills: Vec<Skill>,
    /// The plugin's `config` table from proem.toml (an empty object when unset).
    pub config: Value,
    /// The build's time, RFC 3339. The only clock a plugin sees.
    pub now: String,
    /// The turn's IANA time zone.
    pub timezone: String,
}

impl Context {
    /// A string setting from the plugin's config table.
    pub fn config_str(&self, key: &str) -> Option<&str> {
        self.config.get(key).and_then(Value::as_str)
    }

    /// A list-of-strings setting; `None` when absent or not a list of strings.
    pub fn config_strings(&self, key: &str) -> Option<Vec<&str>> {
        self.config.get(key)?.as_array()?.iter().map(Value::as_str).collect()
    }

    /// The names of this turn's tools.
    pub fn tool_names(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().map(|t| t.name.as_str())
    }

    /// Whether the model is in `family`: the model name (after any
    /// `provider/` or `provider:` prefix, case-insensitively) is `family` or starts with it
    /// followed by `.` or `-`. `gpt-5`, `gpt-5.1`, `openai/gpt-5-mini` are in
    /// `gpt-5`; `gpt-50` is not.
    pub fn model_in_family(&self, family: &str) -> bool {
        let Some(model) = &self.model else { return false };
        let model = model.rsplit(['/', ':']).next().unwrap_or(model).trim().to_ascii_lowercase();
        let family = family.to_ascii_lowercase();
        match model.strip_prefix(&family) {
            Some(rest) => rest.is_empty() || rest.starts_with('.') || rest.starts_with('-'),
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_model(model: &str) -> Context {
        Context {
            agent_id: "a".into(),
            mode: Mode::Full,
            provider: None,
            model: Some(model.into()),
            channel: None,
            chat_kind: None,
            tools: vec![],
            skills: vec![],
            config: Value::Null,
            now: String::new(),
            timezone: "UTC".into(),
        }
    }

    #[test]
    fn model_families() {
        for yes in ["gpt-5", "gpt-5.1", "GPT-5-mini", "openai/gpt-5.2-codex", "gpt-5-2025-08-07"] {
            assert!(with_model(yes).model_in_family("gpt-5"), "{yes}");
        }
        for no in ["gpt-50", "gpt-4o", "gpt-5x", "my-gpt-5", "", "openai/gpt-4.1"] {
            assert!(!with_model(no).model_in_family("gpt-5"), "{no}");
        }
    }
}
