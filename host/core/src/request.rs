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
    /// Whole-prompt token budget (in JSON an integer, or a number with no
    /// fraction such as `2.0`, which JSON Schema counts as an integer).
    #[serde(default, deserialize_with = "whole_tokens")]
    pub budget: Option<usize>,
    /// How to print the build (default text).
    pub format: Option<Format>,
    /// Fail when any plugin failed.
    #[serde(default)]
    pub strict: bool,
}

/// An optional token count: a non-negative integer, or a number with no
/// fraction within range; anything else an error saying what is expected.
fn whole_tokens<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<usize>, D::Error> {
    struct Tokens(usize);
    struct Visitor;
    impl serde::de::Visitor<'_> for Visitor {
        type Value = Tokens;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            write!(f, "a whole number of tokens from 0 to {}", usize::MAX)
        }

        fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Tokens, E> {
            usize::try_from(v).map(Tokens).map_err(|_| E::invalid_value(serde::de::Unexpected::Unsigned(v), &self))
        }

        fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Tokens, E> {
            u64::try_from(v)
                .map_err(|_| E::invalid_value(serde::de::Unexpected::Signed(v), &self))
                .and_then(|v| self.visit_u64(v))
        }

        fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Tokens, E> {
            // `usize::MAX as f64` rounds up past usize::MAX: the bound is strict.
            if v.fract() == 0.0 && v >= 0.0 && v < usize::MAX as f64 {
                Ok(Tokens(v as usize))
            } else {
                Err(E::invalid_value(serde::de::Unexpected::Float(v), &self))
            }
        }
    }
    impl<'de> Deserialize<'de> for Tokens {
        fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Tokens, D::Error> {
            deserializer.deserialize_any(Visitor)
        }
    }
    Ok(Option::<Tokens>::deserialize(deserializer)?.map(|t| t.0))
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn budget(json: &str) -> Result<Option<usize>, String> {
        serde_json::from_str::<BuildRequest>(&format!("{{\"budget\": {json}}}"))
            .map(|r| r.budget)
            .map_err(|e| e.to_string())
    }

    proptest! {
        #[test]
        fn a_budget_is_any_whole_number_in_range_and_nothing_else(n in any::<u64>(), negative in i64::MIN..0, fraction in 0.001f64..0.999) {
            prop_assert_eq!(budget(&n.to_string()), Ok(Some(n as usize)));
            // serde_json reads floats exactly up to about 2^50.
            let whole = (n >> 24) as f64;
            let with_point = format!("{whole:.1}");
            prop_assert_eq!(budget(&with_point), Ok(Some(whole as usize)));
            prop_assert!(budget(&negative.to_string()).unwrap_err().contains("whole number of tokens"));
            let fractional = (whole + fraction).to_string();
            prop_assert!(budget(&fractional).is_err(), "{}", fractional);
        }
    }

    #[test]
    fn a_budget_out_of_range_or_not_a_number_is_refused() {
        assert_eq!(budget("null"), Ok(None));
        for bad in ["18446744073709551616", "1e300", "-0.5", "\"5\"", "true", "[]", "1.8446744073709552e19"] {
            assert!(budget(bad).is_err(), "{bad}");
        }
    }
}
