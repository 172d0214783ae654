//! One build request, whichever way it arrives: `proem build`'s flags and
//! `POST /v1/agents/{id}/build`'s JSON body are both a [`BuildRequest`] (a
//! [`Turn`] and how to print it), and both answers come from [`respond`],
//! so the service prints exactly what the CLI prints for the same inputs.

use crate::error::ProemError;
use crate::render::Format;
use crate::turn::Turn;
use crate::{Assembler, Built};
use serde::Deserialize;

/// One turn and how to print its build.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BuildRequest {
    /// The turn's inputs.
    pub turn: Turn,
    /// How to print the build (default text).
    pub format: Option<Format>,
    /// Fail when any plugin failed.
    pub strict: bool,
}

/// Why a request body was refused: the field it names (a dotted path,
/// when the problem is inside one) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodyError {
    /// The field, when the problem is one's (`chat_kind`, `tools[2].name`).
    pub field: Option<String>,
    /// What is wrong, in serde's words.
    pub message: String,
}

impl std::fmt::Display for BodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.field {
            Some(field) => write!(f, "{field}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl BuildRequest {
    /// Parses a JSON body: one object whose members are [`Turn`]'s fields
    /// and `format` and `strict` (all optional; no body at all, zero
    /// bytes, is the default turn; anything else is a JSON document, and
    /// whitespace alone is none). An unknown member or a bad value is an
    /// error naming the field.
    pub fn from_json(bytes: &[u8]) -> Result<BuildRequest, BodyError> {
        if bytes.is_empty() {
            return Ok(BuildRequest::default());
        }
        let whole = |e: serde_json::Error| BodyError { field: None, message: e.to_string() };
        let members: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(bytes).map_err(whole)?;
        BuildRequest::from_members(members)
    }

    /// The request made of a body's members, already parsed (or converted
    /// from a language binding's own values, which never become text): the
    /// one check both take. A null member is an absent one.
    pub fn from_members(mut members: serde_json::Map<String, serde_json::Value>) -> Result<BuildRequest, BodyError> {
        let take = |members: &mut serde_json::Map<String, serde_json::Value>, name: &str| {
            members.remove(name).filter(|v| !v.is_null())
        };
        let field = |name: &'static str| {
            move |e: serde_json::Error| BodyError { field: Some(name.into()), message: e.to_string() }
        };
        let format = take(&mut members, "format").map(Format::deserialize).transpose().map_err(field("format"))?;
        let strict = take(&mut members, "strict").map(bool::deserialize).transpose().map_err(field("strict"))?;
        // Through `Strict`, as the config is: no list is ever read as a
        // struct, whatever field is added to `Turn` later.
        let members = crate::strict_de::Strict(serde_json::Value::Object(members));
        let turn: Turn = serde_path_to_error::deserialize(members).map_err(|e| {
            // The root path prints as "." and so does a member named ".":
            // whether there is a field is the path's segments, not its text.
            let field = e.path().iter().next().is_some().then(|| e.path().to_string());
            BodyError { field, message: e.into_inner().to_string() }
        })?;
        Ok(BuildRequest { turn, format, strict: strict.unwrap_or(false) })
    }

    /// The format asked for (text when unset).
    pub fn format(&self) -> Format {
        self.format.unwrap_or(Format::Text)
    }
}

/// Builds and prints, the one path the CLI and the service share. The
/// build is shared with the build memo, not copied out of it.
pub fn build(assembler: &Assembler, request: &BuildRequest) -> Result<(std::sync::Arc<Built>, String), ProemError> {
    let built = assembler.build_shared(&request.turn)?;
    let text = respond(&built, request)?;
    Ok((built, text))
}

/// What `proem build` prints for `built`: the formatted build (JSON with a
/// final newline), or with `strict`, an error naming every failed plugin.
pub fn respond(built: &Built, request: &BuildRequest) -> Result<String, ProemError> {
    if request.strict {
        let failed: Vec<String> = built
            .plugins
            .iter()
            .filter(|p| p.status != crate::report::PluginStatus::Ok)
            .map(|p| format!("{} ({})", p.id, p.status))
            .collect();
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
        BuildRequest::from_json(format!("{{\"budget\": {json}}}").as_bytes())
            .map(|r| r.turn.budget)
            .map_err(|e| e.to_string())
    }

    proptest! {
        #[test]
        fn a_budget_is_any_whole_number_in_range_and_nothing_else(n in any::<u64>(), negative in i64::MIN..0, fraction in 0.001f64..0.999) {
            let in_range = crate::bounds::BUDGET_TOKENS.check(n).is_ok();
            match budget(&n.to_string()) {
                Ok(got) => prop_assert!(in_range && got == Some(n as usize)),
                Err(why) => prop_assert!(!in_range && why.starts_with("budget: ") && why.contains("1..=1000000000"), "{}", why),
            }
            let whole = (n % 1_000_000_000 + 1) as f64;
            prop_assert_eq!(budget(&format!("{whole:.1}")), Ok(Some(whole as usize)));
            prop_assert!(budget(&negative.to_string()).unwrap_err().contains("whole number of tokens"));
            let fractional = (whole + fraction).to_string();
            prop_assert!(budget(&fractional).is_err(), "{}", fractional);
        }
    }

    proptest! {
        /// A budget written with many digits (`123456789.00000001`) is
        /// judged by the number it is, the double nearest its text, as a
        /// JSON Schema validator judges it: whole and in range, or refused.
        /// serde_json's default float parsing is not exact and made some
        /// of them whole (the red team's finding); `float_roundtrip` is.
        #[test]
        fn a_budget_with_many_digits_is_judged_by_its_exact_value(
            whole in prop_oneof![1u64..=2_000, 16_000_000u64..=17_000_000, 999_999_000u64..=1_000_000_001],
            // fractions close to 0 or to 1 are where inexact parsing lands
            // on a whole number
            digits in prop_oneof!["0{5,12}[0-9]{1,4}", "9{5,12}[0-9]{1,4}", "[0-9]{1,20}"],
            exponent in prop::option::of(-3i32..=3),
        ) {
            let text = match exponent {
                None => format!("{whole}.{digits}"),
                Some(e) => format!("{whole}.{digits}e{e}"),
            };
            let exact: f64 = text.parse().unwrap();
            let expected = (exact.fract() == 0.0 && (1.0..=1e9).contains(&exact)).then_some(exact as usize);
            prop_assert_eq!(budget(&text).ok().flatten(), expected, "{}", text);
        }
    }

    #[test]
    fn a_body_of_whitespace_alone_is_not_a_request_and_no_body_is_the_default() {
        assert_eq!(BuildRequest::from_json(b""), Ok(BuildRequest::default()));
        for body in [&b" "[..], b"\n", b"\t", b"\r\n", b"\x0c", b"\x0b", b"\x00"] {
            assert!(BuildRequest::from_json(body).is_err(), "{body:?}");
        }
    }

    /// Any JSON value, a few levels deep (strings drawn from the turn's own
    /// vocabulary, so that some members are valid).
    fn member_value() -> impl Strategy<Value = serde_json::Value> {
        use serde_json::{json, Value};
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            // Quarters: exact in binary, so the text prints and parses back
            // to the same number (serde_json's parser rounds some others).
            (-4_000_000i64..4_000_000).prop_map(|n| json!(n as f64 / 4.0)),
            prop::sample::select(vec!["full", "group", "telegram", "2026-11-21T09:30:00Z", "x", "", "UTC"])
                .prop_map(|s| json!(s)),
        ];
        leaf.prop_recursive(3, 16, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::Array),
                prop::collection::btree_map("[a-z]{1,6}", inner, 0..4)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// The members of a body, checked as values, are the request its
        /// text is, or the same refusal naming the same field: a binding
        /// that hands over values builds exactly what the service builds.
        #[test]
        fn members_as_values_are_the_request_their_text_is(
            members in prop::collection::btree_map(
                prop::sample::select(vec![
                    "mode", "session_key", "heartbeat", "channel", "chat_kind", "owners", "tools", "now",
                    "timezone", "budget", "strict", "format", "extra", "chanel",
                ]),
                member_value(),
                0..6,
            )
        ) {
            let members: serde_json::Map<String, serde_json::Value> =
                members.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
            let text = serde_json::Value::Object(members.clone()).to_string();
            prop_assert_eq!(BuildRequest::from_members(members), BuildRequest::from_json(text.as_bytes()));
        }
    }

    /// An unknown member is named whatever its name, "." (which is how
    /// the root path prints) and "" included.
    #[test]
    fn an_unknown_member_is_named_even_when_it_looks_like_the_root() {
        for name in [".", "", "..", "a.b", "[0]", "x"] {
            let members: serde_json::Map<String, serde_json::Value> =
                [(name.to_string(), serde_json::json!(1))].into_iter().collect();
            let refused = BuildRequest::from_members(members).unwrap_err();
            assert_eq!(refused.field.as_deref(), Some(name), "{}", refused.message);
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
