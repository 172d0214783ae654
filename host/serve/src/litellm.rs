//! LiteLLM's Generic Prompt Management API: `GET
//! /beta/litellm_prompt_management?prompt_id=AGENT&channel=…`, so that a
//! LiteLLM proxy adds proem in its config alone (`prompt_integration:
//! generic_prompt_management`, `api_base` this service, `api_key` its
//! token, the turn's inputs as `provider_specific_query_params`).
//!
//! `prompt_id` names the agent; every other query parameter is a field of
//! the build body (`POST /v1/agents/{id}/build`), written as text:
//! `owners` (or `owner`) repeats, `heartbeat`, `replies_optional` and
//! `strict` are `true`/`false`, `budget` a whole number, `tools` the name of
//! a tools file inside the agent folder. The query becomes that JSON body
//! and takes the build's one path (limits, deadline, memo, metrics), so a
//! bad value is the same `400` naming the field, and the answer's system
//! message is byte for byte the content of `proem build --format openai`.
//! An unknown or repeated parameter is a `400` naming it: nothing is
//! silently dropped. The query's size is bounded by the request head's
//! (`--max-header-bytes`).

use serde_json::{json, Map, Value};

/// Why a query was refused (a `400` naming the parameter).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadQuery {
    /// The parameter at fault, one line.
    pub field: String,
    /// `query parameter `FIELD`: what is wrong`.
    pub detail: String,
}

/// The route.
pub const PATH: &str = "/beta/litellm_prompt_management";

/// The agent and the build body a query asks for, or a `400` naming the
/// parameter at fault.
pub fn parse_query(query: &str) -> Result<(String, Vec<u8>), BadQuery> {
    let mut agent = None;
    let mut body = Map::new();
    body.insert("format".into(), json!("openai"));
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (raw_key, raw_value) = pair.split_once('=').unwrap_or((pair, ""));
        let key = decode(raw_key, "a parameter name")?;
        let value = decode(raw_value, &key)?;
        match key.as_str() {
            "prompt_id" => {
                if agent.replace(value).is_some() {
                    return Err(bad(&key, "given twice".into()));
                }
            }
            "owners" | "owner" => {
                let owners = body.entry("owners").or_insert_with(|| json!([]));
                if let Value::Array(list) = owners {
                    list.push(Value::String(value));
                }
            }
            "format" => return Err(bad(&key, "not a parameter here: the answer is always LiteLLM's prompt template (the openai format's system message)".into())),
            _ => {
                let parsed = typed(&key, value)?;
                if body.insert(key.clone(), parsed).is_some() {
                    return Err(bad(&key, "given twice".into()));
                }
            }
        }
    }
    let agent =
        agent.ok_or_else(|| bad("prompt_id", "missing: it names the agent (a folder `proem serve` serves)".into()))?;
    Ok((agent, Value::Object(body).to_string().into_bytes()))
}

/// A parameter's text as the JSON the body has for its field; a field the
/// body does not have stays text, and the body's parser names it.
fn typed(key: &str, value: String) -> Result<Value, BadQuery> {
    match key {
        "heartbeat" | "replies_optional" | "strict" => match value.as_str() {
            "true" | "1" | "" => Ok(Value::Bool(true)),
            "false" | "0" => Ok(Value::Bool(false)),
            other => Err(bad(key, format!("{:?} is not true or false", proem_core::text::one_line(other, 64)))),
        },
        "budget" => Ok(value.parse::<u64>().map(Value::from).unwrap_or(Value::String(value))),
        _ => Ok(Value::String(value)),
    }
}

/// `application/x-www-form-urlencoded` decoding: `+` is a space, `%XY` a
/// byte; the result must be UTF-8.
fn decode(raw: &str, what: &str) -> Result<String, BadQuery> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
                let byte = hex
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| bad(what, "a `%` that is not followed by two hexadecimal digits".into()))?;
                out.push(byte);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).map_err(|_| bad(what, "not UTF-8 once percent-decoded".into()))
}

fn bad(field: &str, message: String) -> BadQuery {
    let field = proem_core::text::one_line(field, 64);
    BadQuery { detail: format!("query parameter `{field}`: {message}"), field }
}

/// LiteLLM's answer for an openai-format build: the agent as `prompt_id`,
/// its system message as the template, and the stable hash (what proem
/// has for a prompt's version) beside them.
pub fn answer(agent: &str, openai: &str, stable_hash: &str) -> Option<Value> {
    let rendered: Value = serde_json::from_str(openai).ok()?;
    let system = rendered.get("messages")?.get(0)?.clone();
    Some(json!({
        "prompt_id": agent,
        "prompt_template": [system],
        "prompt_template_model": Value::Null,
        "prompt_template_optional_params": Value::Null,
        "proem_stable_hash": stable_hash,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn body(query: &str) -> Result<(String, Value), String> {
        parse_query(query).map(|(agent, bytes)| (agent, serde_json::from_slice(&bytes).unwrap())).map_err(|p| p.detail)
    }

    #[test]
    fn a_query_is_the_build_body_with_typed_fields() {
        let (agent, b) = body("prompt_id=marlow&channel=tele%20gram&chat_kind=group&owners=a&owner=b&heartbeat=true&budget=3000&group_title=A+B").unwrap();
        assert_eq!(agent, "marlow");
        assert_eq!(
            b,
            json!({"format": "openai", "channel": "tele gram", "chat_kind": "group", "owners": ["a", "b"], "heartbeat": true, "budget": 3000, "group_title": "A B"})
        );
    }

    #[test]
    fn hostile_queries_are_400s_naming_the_parameter() {
        for (query, field) in [
            ("channel=x", "prompt_id"),
            ("prompt_id=a&prompt_id=b", "prompt_id"),
            ("prompt_id=a&channel=x&channel=y", "channel"),
            ("prompt_id=a&format=json", "format"),
            ("prompt_id=a&heartbeat=maybe", "heartbeat"),
            ("prompt_id=a&channel=%zz", "channel"),
            ("prompt_id=a&channel=%", "channel"),
            ("prompt_id=a&channel=%ff%fe", "channel"),
            ("prompt_id=%ff", "prompt_id"),
        ] {
            let problem = parse_query(query).unwrap_err();
            assert_eq!(problem.field, field, "{query}");
            assert!(problem.detail.contains(&format!("`{field}`")), "{query}: {}", problem.detail);
        }
    }

    proptest! {
        /// Any query at all: an agent and a JSON object (whose parser then
        /// names a bad field), or a refusal naming the parameter; never a panic, and every value
        /// comes through decoded exactly.
        #[test]
        fn any_query_parses_or_is_a_400(raw in "[a-z_=&%+0-9A-F\u{e9}]{0,80}", value in "\\PC{0,40}") {
            match parse_query(&raw) {
                Ok((_, bytes)) => prop_assert!(serde_json::from_slice::<Value>(&bytes).is_ok()),
                Err(problem) => prop_assert!(problem.detail.starts_with("query parameter `")),
            }
            let encoded: String = value.bytes().map(|b| format!("%{b:02X}")).collect();
            let (_, b) = body(&format!("prompt_id=x&extra={encoded}")).unwrap();
            prop_assert_eq!(b["extra"].as_str(), Some(value.as_str()));
        }
    }
}
