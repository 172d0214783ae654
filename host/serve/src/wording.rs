//! Errors in the words of an HTTP client: the request body's field names,
//! JSON's types, and no Rust.
//!
//! A build error is made for the command line (`--budget`, `[budget]
//! tokens or --budget`), and a body error in serde's words (`map`,
//! `sequence`, `variant`). Every problem document's `detail` about the
//! request goes through [`for_client`], which puts each turn flag's body
//! field in its place and JSON's words in serde's; the errors that carry
//! their parts (a bad input, a budget too small) are written from those
//! parts ([`budget_too_small`]).

/// The turn's flags and the body fields they are.
const FLAG_FIELDS: [(&str, &str); 18] = [
    ("--session-key", "session_key"),
    ("--replies-optional", "replies_optional"),
    ("--chat-kind", "chat_kind"),
    ("--group-title", "group_title"),
    ("--heartbeat", "heartbeat"),
    ("--thinking", "thinking"),
    ("--provider", "provider"),
    ("--timezone", "timezone"),
    ("--channel", "channel"),
    ("--budget", "budget"),
    ("--format", "format"),
    ("--strict", "strict"),
    ("--model", "model"),
    ("--extra", "extra"),
    ("--owner", "owners"),
    ("--tools", "tools"),
    ("--mode", "mode"),
    ("--now", "now"),
];

/// serde's words and JSON's, longest first where one contains another.
const SERDE_WORDS: [(&str, &str); 9] = [
    ("expected string or map", "expected a string"),
    ("expected a borrowed string", "expected a string"),
    ("invalid type: sequence", "invalid type: array"),
    ("invalid type: map", "invalid type: object"),
    ("expected a sequence", "expected an array"),
    ("expected a map", "expected a JSON object"),
    ("expected struct", "expected an object"),
    ("unknown variant", "unknown value"),
    ("invalid value: integer", "invalid value: number"),
];

/// Every field a build request body may have, as an unknown one's error
/// lists them.
pub const BODY_FIELDS: [&str; 18] = [
    "mode",
    "session_key",
    "heartbeat",
    "replies_optional",
    "thinking",
    "provider",
    "model",
    "channel",
    "chat_kind",
    "group_title",
    "extra",
    "owners",
    "tools",
    "now",
    "timezone",
    "budget",
    "format",
    "strict",
];

/// The body field a turn flag is (`--chat-kind` → `chat_kind`); a name
/// that is no flag stays as it is, without dashes.
pub fn field_of(input: &str) -> String {
    FLAG_FIELDS
        .iter()
        .find(|(flag, _)| *flag == input)
        .map(|(_, field)| field.to_string())
        .unwrap_or_else(|| input.trim_start_matches('-').replace('-', "_"))
}

/// `text` in a client's words: each turn flag as its body field in
/// backquotes, `[budget] tokens or --budget` as `budget`, serde's type
/// words as JSON's, and an unknown field's list of the fields there are
/// made whole (the turn's and `format`, `strict`).
pub fn for_client(text: &str) -> String {
    let mut out = text.replace("[budget] tokens or --budget", "`budget`");
    for (flag, field) in FLAG_FIELDS {
        out = replace_flag(&out, flag, field);
    }
    for (serde, json) in SERDE_WORDS {
        out = out.replace(serde, json);
    }
    if let Some(start) = out.find("unknown field `") {
        if let Some(list) = out[start..].find(", expected one of ").map(|i| start + i) {
            let fields: Vec<String> = BODY_FIELDS.iter().map(|f| format!("`{f}`")).collect();
            out = format!("{}, expected one of {}", &out[..list], fields.join(", "));
        }
    }
    out
}

/// `text` with every whole `flag` (not followed by a letter, digit or
/// dash) as `` `field` ``.
fn replace_flag(text: &str, flag: &str, field: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(flag) {
        let after = &rest[at + flag.len()..];
        let whole = !after.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '-');
        out.push_str(&rest[..at]);
        if whole {
            out.push('`');
            out.push_str(field);
            out.push('`');
        } else {
            out.push_str(flag);
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

/// A budget too small, from its parts.
pub fn budget_too_small(budget: usize, needed: usize, over: usize) -> String {
    format!(
        "a budget of {budget} tokens is too small: the protected sections (identity, tooling, safety, workspace) \
         and the cache boundary need {needed} tokens, {over} more; send a `budget` of at least {needed}, or \
         leave it out to use the agent's"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_become_fields_and_only_whole_ones() {
        assert_eq!(for_client("--timezone: \"Mars\" is not"), "`timezone`: \"Mars\" is not");
        assert_eq!(for_client("raise [budget] tokens or --budget to 9"), "raise `budget` to 9");
        assert_eq!(for_client("--owner x, --timeout-ms"), "`owners` x, --timeout-ms");
        assert_eq!(for_client("--modest"), "--modest");
    }

    #[test]
    fn every_body_field_is_a_flag_field_and_back() {
        let mut from_flags: Vec<&str> = FLAG_FIELDS.iter().map(|(_, f)| *f).collect();
        let mut fields = BODY_FIELDS.to_vec();
        from_flags.sort();
        fields.sort();
        assert_eq!(from_flags, fields);
    }
}
