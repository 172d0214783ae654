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
///
/// In a native unit test, build one with [`Context::builder`] (or start from
/// `Context::default()`: agent `test-agent`, full mode, an empty config
/// object, `2026-01-01T00:00:00Z` in UTC).
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
    /// The build's time, RFC 3339, carrying the turn's zone offset (e.g.
    /// `2026-11-21T10:30:00+01:00` for Europe/Berlin): the local wall time
    /// of the turn. The only clock a plugin sees. See [`Context::local_date`].
    pub now: String,
    /// The turn's IANA time zone.
    pub timezone: String,
}

impl Default for Context {
    fn default() -> Context {
        Context {
            agent_id: "test-agent".into(),
            mode: Mode::Full,
            provider: None,
            model: None,
            channel: None,
            chat_kind: None,
            tools: Vec::new(),
            skills: Vec::new(),
            config: Value::Object(Default::default()),
            now: "2026-01-01T00:00:00Z".into(),
            timezone: "UTC".into(),
        }
    }
}

/// Builds a [`Context`] for a native test, one field at a time.
#[derive(Debug, Clone, Default)]
pub struct ContextBuilder(Context);

impl ContextBuilder {
    /// The resolved mode.
    pub fn mode(mut self, mode: Mode) -> Self {
        self.0.mode = mode;
        self
    }
    /// The provider and model.
    pub fn model(mut self, provider: &str, model: &str) -> Self {
        self.0.provider = Some(provider.into());
        self.0.model = Some(model.into());
        self
    }
    /// The channel and chat kind.
    pub fn channel(mut self, channel: &str, chat_kind: ChatKind) -> Self {
        self.0.channel = Some(channel.into());
        self.0.chat_kind = Some(chat_kind);
        self
    }
    /// A tool, by name and description.
    pub fn tool(mut self, name: &str, description: &str) -> Self {
        self.0.tools.push(Tool { name: name.into(), description: description.into(), parameters_json: None });
        self.0.tools.sort_by(|a, b| a.name.cmp(&b.name));
        self
    }
    /// The plugin's config table (`serde_json::json!({...})`).
    pub fn config(mut self, config: Value) -> Self {
        self.0.config = config;
        self
    }
    /// The turn's time (RFC 3339, with its zone offset) and IANA zone.
    pub fn now(mut self, rfc3339: &str, timezone: &str) -> Self {
        self.0.now = rfc3339.into();
        self.0.timezone = timezone.into();
        self
    }
    /// The context.
    pub fn build(self) -> Context {
        self.0
    }
}

impl Context {
    /// A builder starting from [`Context::default`].
    pub fn builder() -> ContextBuilder {
        ContextBuilder::default()
    }

    /// The turn's local date (`YYYY-MM-DD`) from [`Context::now`], which
    /// carries the zone's offset; `None` if `now` is not RFC 3339.
    pub fn local_date(&self) -> Option<&str> {
        let date = self.now.get(..10)?;
        let ok = date.len() == 10
            && date.bytes().enumerate().all(|(i, b)| if i == 4 || i == 7 { b == b'-' } else { b.is_ascii_digit() });
        ok.then_some(date)
    }

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

#[cfg(test)]
mod builder_tests {
    use super::*;

    #[test]
    fn a_test_context_in_one_expression() {
        let ctx = Context::builder()
            .model("openai", "gpt-5.1")
            .channel("telegram", ChatKind::Group)
            .tool("gpio_write", "Sets a pin.")
            .tool("exec", "Runs a command.")
            .config(serde_json::json!({"patterns": ["gpio_*"]}))
            .now("2026-11-21T23:30:00-08:00", "America/Los_Angeles")
            .build();
        assert_eq!(ctx.tool_names().collect::<Vec<_>>(), ["exec", "gpio_write"]);
        assert_eq!(ctx.config_strings("patterns"), Some(vec!["gpio_*"]));
        assert_eq!(ctx.local_date(), Some("2026-11-21"), "the turn's own date, not UTC's");
        assert_eq!(Context::default().mode, Mode::Full);
    }
}
