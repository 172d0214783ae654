//! What a build response tells its client besides the build: which build
//! it is and whether it is current.
//!
//! Every build response (`/build` in any format, with or without the
//! report, and `/inspect`) carries
//!
//! - `ETag`: a strong tag of the exact body bytes (xxh3-128), so that a
//!   client sending it back in `If-None-Match` gets `304 Not Modified` and
//!   no body when the build would be the same bytes;
//! - `X-Proem-Stable-Hash`: the SHA-256 of the stable part (what a
//!   provider's prompt cache is keyed on);
//! - `X-Proem-Stale`: `true` when the agent's last reload failed and the
//!   previous config answered, else `false`. The service's own JSON
//!   documents (the report wrapper, `/inspect`, the agent) carry it as the
//!   `stale` field; the formats (text, json, anthropic, openai) are the
//!   CLI's bytes and carry it in the header only, so that they can be sent
//!   on to a provider as they are.
//!
//! `?report=1` on `/build` answers `{format, output, report, stale}`: the
//! output in the format asked for (a string for text, else the JSON value)
//! beside the JSON report.

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use proem_core::render::Format;
use serde_json::{json, Value};

/// `X-Proem-Stable-Hash`.
pub const STABLE_HASH: &str = "x-proem-stable-hash";
/// `X-Proem-Stale`.
pub const STALE: &str = "x-proem-stale";

/// A build as the service answers it.
pub struct Served {
    /// The id of the agent that built it (its folder name, whatever id the
    /// request used).
    pub agent: String,
    /// The build.
    pub built: std::sync::Arc<proem::Built>,
    /// The build printed as asked, exactly as `proem build` prints it
    /// (UTF-8: made from a `String`, or kept from one by
    /// [`crate::printed`]).
    pub text: axum::body::Bytes,
    /// The entity tag of `text`, when it was kept with it.
    pub tag: Option<String>,
    /// The format asked for.
    pub format: Format,
    /// Whether an older config than the agent's files built it.
    pub stale: bool,
}

/// What the query string of a build asks for beside the build.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Extras {
    /// `report=1`: the JSON report beside the output.
    pub report: bool,
}

impl Extras {
    /// Reads `report` from a query string (`1`, `true`, `0`, `false`;
    /// other parameters are ignored). A bad value names the parameter.
    pub fn from_query(query: Option<&str>) -> Result<Extras, String> {
        let mut extras = Extras::default();
        for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            if name == "report" {
                extras.report = match value {
                    "1" | "true" => true,
                    "0" | "false" => false,
                    other => {
                        return Err(format!(
                            "query parameter `report`: {:?} is not 1, true, 0 or false",
                            proem_core::text::one_line(other, 40)
                        ))
                    }
                };
            }
        }
        Ok(extras)
    }
}

impl Served {
    /// [`Served::text`] as text.
    pub fn text(&self) -> &str {
        // Never empty for want of UTF-8: every `text` comes from a String.
        std::str::from_utf8(&self.text).unwrap_or_default()
    }
}

/// The body, content type and (when known) tag of a `/build` response.
/// Without the report the body is the build's text, shared with `served`
/// (not copied: it is most of a response's bytes), with its tag if kept.
pub fn build_body(served: &mut Served, extras: Extras) -> (axum::body::Bytes, &'static str, Option<String>) {
    if !extras.report {
        let content_type = if served.format == Format::Text { "text/plain; charset=utf-8" } else { "application/json" };
        return (served.text.clone(), content_type, served.tag.take());
    }
    let output = match served.format {
        Format::Text => Value::String(served.text().to_string()),
        _ => serde_json::from_str(served.text()).unwrap_or_else(|_| Value::String(served.text().to_string())),
    };
    let body = json!({
        "format": format_name(served.format, served.built.cache.profile),
        "output": output,
        "report": &*served.built,
        "stale": served.stale,
    });
    (body.to_string().into(), "application/json", None)
}

/// The shape of a report's `output`: the format asked for, except that
/// `provider` is named as the profile it resolved to (the shape a client
/// reads is that profile's).
fn format_name(format: Format, profile: proem_core::cache::Profile) -> &'static str {
    use proem_core::cache::Profile;
    match format {
        Format::Text => "text",
        Format::Json => "json",
        Format::Anthropic => "anthropic",
        Format::Openai => "openai",
        Format::Prefix => "prefix",
        Format::Provider => match profile {
            Profile::Anthropic => "anthropic",
            Profile::Openai => "openai",
            Profile::Prefix => "prefix",
        },
    }
}

/// Each section's text, cut from the prompt's two parts by the sections'
/// character counts (sections are joined by a blank line within their
/// zone); `None` for all when the counts do not add up to the text (a
/// body the marker was neutralised in, say).
pub fn section_texts(built: &proem::Built) -> Vec<Option<String>> {
    let mut texts = Vec::with_capacity(built.sections.len());
    let mut rests = [&*built.stable, built.dynamic.as_str()];
    for s in &built.sections {
        let rest = &mut rests[usize::from(s.zone != proem_core::section::Zone::Stable)];
        let end = rest.char_indices().nth(s.chars).map_or(rest.len(), |(i, _)| i);
        texts.push(Some(rest[..end].to_string()));
        *rest = rest[end..].strip_prefix("\n\n").unwrap_or(&rest[end..]);
    }
    if rests.iter().any(|r| !r.is_empty()) {
        return vec![None; built.sections.len()];
    }
    texts
}

/// The response: `body` with its tags, or 304 with the tags alone when the
/// request's `If-None-Match` names the body's tag (`tag`, when known, is
/// `etag(body)`).
pub fn respond(
    served: &Served,
    body: axum::body::Bytes,
    tag: Option<String>,
    content_type: &'static str,
    request: &HeaderMap,
) -> Response {
    let tag = tag.unwrap_or_else(|| etag(&body));
    let fresh = request.get_all(header::IF_NONE_MATCH).iter().any(|v| none_match_hits(v, &tag));
    let mut response = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        ([(header::CONTENT_TYPE, content_type)], body).into_response()
    };
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&tag) {
        headers.insert(header::ETAG, value);
    }
    if let Ok(value) = HeaderValue::from_str(&served.built.stable_hash) {
        headers.insert(STABLE_HASH, value);
    }
    headers.insert(STALE, HeaderValue::from_static(if served.stale { "true" } else { "false" }));
    response
}

/// The strong entity tag of a body: its xxh3-128, quoted.
pub fn etag(body: &[u8]) -> String {
    format!("\"{:032x}\"", xxhash_rust::xxh3::xxh3_128(body))
}

/// Whether an `If-None-Match` value (`*` or a list of tags, weak or
/// strong) names `tag` (weak comparison, RFC 9110 §13.1.2).
fn none_match_hits(value: &HeaderValue, tag: &str) -> bool {
    let Ok(text) = value.to_str() else { return false };
    if text.trim() == "*" {
        return true;
    }
    text.split(',').map(str::trim).any(|given| given.strip_prefix("W/").unwrap_or(given) == tag)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// A body's tag is matched by itself in any list, weak or strong,
        /// and by no other body's tag.
        #[test]
        fn if_none_match_hits_its_own_tag_only(a in proptest::collection::vec(any::<u8>(), 0..64), b in proptest::collection::vec(any::<u8>(), 0..64), weak in any::<bool>(), others in 0usize..3) {
            let tag = etag(&a);
            let other = etag(&b);
            let mut list: Vec<String> = (0..others).map(|i| etag(&[i as u8, 0xff, 0xfe])).collect();
            list.push(if weak { format!("W/{tag}") } else { tag.clone() });
            let value = HeaderValue::from_str(&list.join(", ")).unwrap();
            prop_assert!(none_match_hits(&value, &tag));
            prop_assert_eq!(none_match_hits(&HeaderValue::from_str(&other).unwrap(), &tag), a == b);
        }
    }

    #[test]
    fn the_report_parameter_takes_four_words_and_names_itself_otherwise() {
        assert_eq!(Extras::from_query(None), Ok(Extras { report: false }));
        assert_eq!(Extras::from_query(Some("report=1")), Ok(Extras { report: true }));
        assert_eq!(Extras::from_query(Some("x=2&report=true")), Ok(Extras { report: true }));
        assert_eq!(Extras::from_query(Some("report=0")), Ok(Extras { report: false }));
        assert!(Extras::from_query(Some("report=yes")).unwrap_err().contains("`report`"));
    }
}
