//! One build request, whichever way it arrives: `proem build`'s flags and
//! `POST /v1/agents/{id}/build`'s JSON body are both a [`BuildRequest`], and
//! both answers come from [`respond`], so the service prints exactly what
//! the CLI prints for the same inputs.

use crate::bounds;
use crate::error::ProemError;
use crate::render::Format;
use crate::turn::{parse_now, ChatKind, Tool, Turn};
use crate::{Assembler, Built, Mode};
use serde::Deserialize;

/// The per-turn inputs of one build and how to print it. Every field is
/// optional; unknown fields are refused.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BuildRequest {
    /// Force a prompt mode.
    pub mode: Option<Mode>,
    /// The session key (`…:heartbeat…`, `…:subagent:…`, `…:cron:…`).
    pub session_key: Option<String>,
    /// A heartbeat turn.
    #[serde(default)]
    pub heartbeat: bool,
    /// The agent may stay silent this turn.
    #[serde(default)]
    pub replies_optional: bool,
    /// The thinking level for the runtime line.
    pub thinking: Option<String>,
    /// Provider name.
    pub provider: Option<String>,
    /// Model id.
    pub model: Option<String>,
    /// Channel.
    pub channel: Option<String>,
    /// `direct` or `group`.
    pub chat_kind: Option<ChatKind>,
    /// The group chat's title.
    pub group_title: Option<String>,
    /// Extra system prompt for this turn.
    pub extra: Option<String>,
    /// Owners' sender ids.
    #[serde(default)]
    pub owners: Vec<String>,
    /// The tools: a list inline, or the name of a tools JSON file inside
    /// the agent directory.
    pub tools: Option<ToolsInput>,
    /// The turn's time, RFC 3339.
    pub now: Option<String>,
    /// IANA time zone.
    pub timezone: Option<String>,
    /// Whole-prompt token budget.
    pub budget: Option<usize>,
    /// How to print the build (default text).
    pub format: Option<Format>,
    /// Fail when any plugin failed.
    #[serde(default)]
    pub strict: bool,
}

/// Tools inline or by reference.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum ToolsInput {
    /// A tools JSON file: for the CLI a path, for the service a file inside
    /// the agent directory.
    File(String),
    /// The list itself, in any form a tools file takes
    /// (`[{"name": …, "description": …, "parameters": …}]`, OpenAI's
    /// `{"type": "function", "function": {…}}` entries, or `{"tools": […]}`).
    Inline(serde_json::Value),
}

impl BuildRequest {
    /// The turn, with a tools file read by `read_tools` (the CLI reads a
    /// path; the service reads inside the agent directory only).
    pub fn turn(&self, read_tools: &dyn Fn(&str) -> Result<Vec<Tool>, ProemError>) -> Result<Turn, ProemError> {
        Ok(Turn {
            mode: self.mode,
            session_key: self.session_key.clone(),
            heartbeat: self.heartbeat,
            replies_optional: self.replies_optional,
            thinking: self.thinking.clone(),
            provider: self.provider.clone(),
            model: self.model.clone(),
            channel: self.channel.clone(),
            chat_kind: self.chat_kind,
            group_title: self.group_title.clone(),
            extra: self.extra.clone(),
            owners: self.owners.clone(),
            tools: match &self.tools {
                None => None,
                Some(ToolsInput::Inline(tools)) => {
                    Some(crate::turn::parse_tools(&tools.to_string(), std::path::Path::new("(the request's tools)"))?)
                }
                Some(ToolsInput::File(name)) => Some(read_tools(name)?),
            },
            now: self.now.as_deref().map(parse_now).transpose()?,
            timezone: self.timezone.clone(),
            budget: self.budget.map(check_budget).transpose()?,
        })
    }

    /// The format asked for (text when unset).
    pub fn format(&self) -> Format {
        self.format.unwrap_or(Format::Text)
    }
}

/// The request's `budget`, within [`bounds::BUDGET_TOKENS`].
fn check_budget(budget: usize) -> Result<usize, ProemError> {
    bounds::BUDGET_TOKENS.check_usize(budget).map_err(|why| ProemError::input("budget", why))
}

/// Builds and prints, the one path the CLI and the service share.
pub fn build(assembler: &Assembler, request: &BuildRequest, turn: &Turn) -> Result<(Built, String), ProemError> {
    let built = assembler.build(turn)?;
    let text = respond(&built, request)?;
    Ok((built, text))
}

/// What `proem build` prints for `built`: the formatted build (JSON with a
/// final newline), or with `strict`, an error naming every failed plugin.
pub fn respond(built: &Built, request: &BuildRequest) -> Result<String, ProemError> {
    if request.strict {
        let failed: Vec<String> =
            built.plugins.iter().filter(|p| p.status != "ok").map(|p| format!("{} ({})", p.id, p.status)).collect();
        if !failed.is_empty() {
            let reasons: Vec<&str> = built
                .diagnostics
                .iter()
                .filter(|d| d.code.starts_with("plugin_") && d.level == crate::report::Level::Error)
                .map(|d| d.message.as_str())
                .collect();
            return Err(ProemError::input(
                "--strict",
                format!("plugin(s) failed: {}; {}", failed.join(", "), reasons.join("; ")),
            ));
        }
    }
    let format = request.format();
    let mut out = crate::render::format(built, format);
    if format == Format::Json {
        out.push('\n');
    }
    Ok(out)
}
