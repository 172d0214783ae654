//! What the language bindings (host/bindings/python, host/bindings/node)
//! share, so that a turn means the same thing and a build answers the same
//! way through either, and neither crosses JSON text on a build:
//!
//! - a turn arrives as the members of `proem serve`'s JSON body, each
//!   member converted from the host's value on its own
//!   ([`request_from_members`]), never printed and parsed again;
//! - a build is the build memo's remembered build itself when it has one
//!   ([`build`]): the binding wraps it behind its `Arc` and reads a field
//!   only when the caller does;
//! - the provider shapes (`to_anthropic`, `to_openai`) are handed over as
//!   values ([`provider_value`]), not as text to parse.
//!
//! A host value is untrusted input (a turn object from Python or JS may hold
//! anything): a converter stops at [`MAX_DEPTH`] levels of nesting and
//! [`MAX_NODES`] values, and every refusal names the member it is about.

use crate::{Assembler, BuildRequest, Built, ExitStatus, Format, ProemError, Turn};
use std::sync::Arc;

/// Levels of nesting a turn member may have (a tool's `parameters` schema
/// is the only nested one): napi-rs's own bound for a JS value, and
/// serde_json's for a body. A cyclic host value stops here.
pub const MAX_DEPTH: u32 = 128;

/// Values (every string, number, list and map counted) one turn member may
/// hold: napi-rs's own bound for a JS value.
pub const MAX_NODES: usize = 1_000_000;

/// Why a string holding a lone surrogate (`"\u{D800}"` in JS, `"\ud800"`
/// in Python) is refused, in either binding: a prompt is UTF-8 text, and
/// `proem serve` refuses such a body as invalid JSON text.
pub const NOT_UNICODE: &str = "holds a lone surrogate: not Unicode text, which a prompt must be";

/// How a binding's users spell a turn's members.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spelling {
    /// `session_key`, as `proem serve`'s body (Python).
    Snake,
    /// `sessionKey`, TypeScript's idiom (Node); `session_key` is accepted too.
    Camel,
}

impl Spelling {
    /// `name` as the body spells it.
    pub fn to_body(self, name: &str) -> String {
        match self {
            Spelling::Snake => name.into(),
            Spelling::Camel => snake_case(name),
        }
    }

    /// A body field (`session_key`, `tools[2].name`) as users spell it.
    pub fn from_body(self, field: &str) -> String {
        match self {
            Spelling::Snake => field.into(),
            Spelling::Camel => camel_case(field),
        }
    }

    /// The methods that render a build, as this binding names them.
    fn renderers(self) -> &'static str {
        match self {
            Spelling::Snake => "render(), to_anthropic(), to_openai()",
            Spelling::Camel => "render(), toAnthropic(), toOpenai()",
        }
    }
}

/// `session_key` as TypeScript names it: `sessionKey`.
fn camel_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = false;
    for c in name.chars() {
        match c {
            '_' => upper = true,
            c if upper => {
                out.push(c.to_ascii_uppercase());
                upper = false;
            }
            c => out.push(c),
        }
    }
    out
}

/// `sessionKey` as the service's body names it: `session_key`.
fn snake_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// Why a turn was refused before any build: the message (`field `x`: …`,
/// as the service words it), and the field as the binding's users spell it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// What `proem build` would print after `proem: error: `.
    pub message: String,
    /// The field at fault, in the binding's spelling.
    pub field: Option<String>,
    /// What `proem build` exits with for the same value as its flag
    /// ([`ExitStatus::of_refused_field`]).
    pub exit: ExitStatus,
}

impl Refusal {
    /// A refusal of member `field` (as the body spells it).
    pub fn of_field(spelling: Spelling, field: &str, why: impl std::fmt::Display) -> Refusal {
        Refusal::of_member(&spelling.from_body(field), field, why)
    }

    /// A refusal of the member the caller named `spelled` (`field` as the
    /// body spells it): the error names it as the caller wrote it, whatever
    /// the name (`__proto__`, `session_key` given to Node).
    pub fn of_member(spelled: &str, field: &str, why: impl std::fmt::Display) -> Refusal {
        Refusal {
            message: format!("field `{field}`: {why}"),
            field: Some(spelled.into()),
            exit: ExitStatus::of_refused_field(field),
        }
    }

    /// A refusal of the turn as a whole: a usage error.
    pub fn of_turn(why: impl std::fmt::Display) -> Refusal {
        Refusal { message: format!("the turn is not a build request: {why}"), field: None, exit: ExitStatus::Usage }
    }
}

/// Why a call failed, as both bindings raise it: the CLI's message, the
/// kind's code, the field at fault and the CLI's exit status for the same
/// mistake ([`ExitStatus`], the CLI's one table).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// What `proem build` prints after `proem: error: `.
    pub message: String,
    /// `bad-request`, `budget-too-small`, `plugin-failed`, `agent-unavailable`.
    pub code: &'static str,
    /// The turn field at fault, in the binding's spelling.
    pub field: Option<String>,
    /// What `proem build` exits with for it.
    pub exit_code: u8,
}

impl Failure {
    /// A build's (or an agent folder's) error: the CLI's exit status for a
    /// [`ProemError`].
    pub fn of(error: &ProemError) -> Failure {
        Failure {
            message: error.to_string(),
            code: crate::error_code(error),
            field: crate::error_field(error),
            exit_code: error.exit_status().code(),
        }
    }
}

impl From<Refusal> for Failure {
    /// A turn refused before the build: mostly what the CLI's flag parser
    /// refuses, a usage error.
    fn from(refusal: Refusal) -> Failure {
        Failure { message: refusal.message, code: "bad-request", field: refusal.field, exit_code: refusal.exit.code() }
    }
}

/// A turn's members as the body names them, each remembering how the
/// caller spelled its name, so a refusal names the field as written.
#[derive(Debug, Clone, Default)]
pub struct Members {
    values: serde_json::Map<String, serde_json::Value>,
    spelled: std::collections::BTreeMap<String, String>,
}

impl Members {
    /// Sets the member the caller named `spelled` (`field` in the body).
    pub fn insert(&mut self, spelled: &str, field: String, value: serde_json::Value) {
        self.spelled.insert(field.clone(), spelled.into());
        self.values.insert(field, value);
    }

    /// Removes the member `field` (as the body names it).
    pub fn remove(&mut self, field: &str) {
        self.spelled.remove(field);
        self.values.remove(field);
    }

    /// The refusal of body field `field` (`tools[2].name`), its member
    /// named as the caller spelled it.
    /// (A member's own name may hold `.` or `[`: the longest member name
    /// the path starts with is its member.)
    fn refusal(&self, spelling: Spelling, field: &str, why: &str) -> Refusal {
        let starts = |name: &&String| {
            field.strip_prefix(name.as_str()).is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
        };
        match self.spelled.keys().filter(starts).max_by_key(|name| name.len()) {
            Some(root) => {
                let spelled = self.spelled.get(root).map_or(root.as_str(), String::as_str);
                let mut refusal = Refusal::of_member(spelled, field, why);
                refusal.field = Some(format!("{spelled}{}", spelling.from_body(&field[root.len()..])));
                refusal
            }
            None => Refusal::of_field(spelling, field, why),
        }
    }
}

/// The request made of a turn's members (each already converted, null ones
/// dropped, named as the body names them): checked exactly as `proem
/// serve` checks its body ([`BuildRequest::from_members`]). `format` is
/// refused: a build renders every format.
pub fn request_from_members(spelling: Spelling, members: Members) -> Result<BuildRequest, Refusal> {
    let request = BuildRequest::from_members(members.values.clone()).map_err(|e| match &e.field {
        Some(field) => members.refusal(spelling, field, &e.message),
        None => Refusal::of_turn(&e.message),
    })?;
    if request.format.is_some() {
        let why = format!("not a turn field: a Built renders every format ({})", spelling.renderers());
        return Err(members.refusal(spelling, "format", &why));
    }
    Ok(request)
}

/// Builds `request`'s turn: the build memo's remembered build itself when
/// it holds one (no copy, no file touched), else a build; with `strict`,
/// a failed plugin fails it as `proem build --strict` does.
pub fn build(assembler: &Assembler, request: &BuildRequest) -> Result<Arc<Built>, ProemError> {
    let built = match assembler.memoised_shared(&request.turn) {
        Some(built) => built,
        None => assembler.build_shared(&request.turn)?,
    };
    if request.strict {
        let strict = BuildRequest { strict: true, ..BuildRequest::default() };
        crate::render(&built, &strict)?;
    }
    Ok(built)
}

/// docs/PERFORMANCE.md's baseline: `n` builds of `turn` timed in Rust alone
/// (nanoseconds each), by the same call a binding's build makes
/// ([`build`]), in the binding's own process the same minute. With
/// `new_clock`, build `i` is at the turn's `now` plus `i` days: a new date in
/// the prompt, so a build memo miss every time (a new second alone is a hit
/// unless a plugin's hook sees the clock).
pub fn time_in_rust(assembler: &Assembler, turn: &Turn, n: u32, new_clock: bool) -> Result<Vec<u64>, ProemError> {
    let mut request = BuildRequest { turn: turn.clone(), ..BuildRequest::default() };
    let base = turn.now;
    let mut times = Vec::with_capacity(n.min(1 << 20) as usize);
    for i in 0..n {
        if new_clock {
            let step = chrono::TimeDelta::try_days(i64::from(i)).unwrap_or_default();
            request.turn.now = base.and_then(|t| t.checked_add_signed(step));
        }
        let started = std::time::Instant::now();
        let built = build(assembler, &request)?;
        times.push(u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX));
        drop(built);
    }
    Ok(times)
}

/// The format named `name` (`text`, `json`, `anthropic`, `openai`,
/// `prefix`, `provider`), or what to write instead.
pub fn format_named(name: &str) -> Result<Format, String> {
    serde::Deserialize::deserialize(serde_json::Value::String(name.into())).map_err(|_: serde_json::Error| {
        format!("format: unknown format {name:?} (text, json, anthropic, openai, prefix, provider)")
    })
}

/// The provider request `proem build --format anthropic` (or `openai`)
/// prints, as a value: the same document, not its text.
pub fn provider_value(built: &Built, format: Format) -> serde_json::Value {
    use proem_core::{cache::Profile, render::request};
    let profile = match format {
        Format::Anthropic => Profile::Anthropic,
        Format::Openai => Profile::Openai,
        Format::Prefix => Profile::Prefix,
        Format::Text | Format::Json | Format::Provider => built.cache.profile,
    };
    request(built, profile)
}

/// About the bytes `built` holds on the heap (its texts and its report's
/// strings): what a binding tells a collector that cannot see them.
pub fn held_bytes(built: &Built) -> usize {
    let texts: [&str; 5] = [&built.prompt, &built.stable, &built.dynamic, &built.stable_hash, &built.tokenizer];
    let optional = [&built.session, &built.turn_context];
    let sections = built.sections.iter().map(|s| s.id.len() + s.source.len() + 64);
    let files = built.files.iter().map(|f| f.name.len() + f.source.len() + 64);
    let diagnostics = built.diagnostics.iter().map(|d| d.code.len() + d.message.len() + 32);
    texts
        .iter()
        .map(|t| t.len())
        .chain(optional.iter().map(|t| t.as_ref().map_or(0, String::len)))
        .chain(sections)
        .chain(files)
        .chain(diagnostics)
        .fold(std::mem::size_of::<Built>(), usize::saturating_add)
}

/// A diagnostic's level as the report names it.
pub fn level_name(level: crate::Level) -> &'static str {
    match level {
        crate::Level::Info => "info",
        crate::Level::Warn => "warn",
        crate::Level::Error => "error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// A member's name survives the trip to the body's spelling and
        /// back, so an error names the field as the caller wrote it.
        #[test]
        fn a_camel_case_name_comes_back_as_written(name in "[a-z]{1,8}([A-Z][a-z]{1,8}){0,3}") {
            prop_assert_eq!(Spelling::Camel.from_body(&Spelling::Camel.to_body(&name)), name.clone());
            prop_assert_eq!(Spelling::Snake.from_body(&Spelling::Snake.to_body(&name)), name);
        }
    }

    /// The members of `json`, each spelled by the caller as `spelling`
    /// spells its body name.
    fn members(spelling: Spelling, json: serde_json::Value) -> Members {
        let mut members = Members::default();
        for (field, value) in json.as_object().cloned().unwrap_or_default() {
            members.insert(&spelling.from_body(&field), field, value);
        }
        members
    }

    proptest! {
        /// Whatever a member's name (`__proto__`, `_x`, `a__b`, any text),
        /// a refusal names it exactly as the caller spelled it, in both
        /// spellings: the name is carried, never derived again.
        #[test]
        fn a_refused_member_is_named_as_the_caller_spelled_it(spelled in "[_a-zA-Z]{0,3}(_{1,2}[a-zA-Z0-9]{1,4}){0,3}_{0,2}|\\PC{1,12}") {
            for spelling in [Spelling::Snake, Spelling::Camel] {
                let field = spelling.to_body(&spelled);
                prop_assume!(!["format", "strict"].contains(&field.as_str()));
                let mut members = Members::default();
                members.insert(&spelled, field.clone(), serde_json::json!({"no": "such field"}));
                let refusal = request_from_members(spelling, members).err();
                prop_assert!(refusal.is_some(), "{:?} was taken as a turn field", spelled);
                let refusal = refusal.unwrap_or_else(|| Refusal::of_turn(""));
                prop_assert_eq!(refusal.field.as_deref(), Some(spelled.as_str()), "{}", refusal.message);
            }
        }
    }

    #[test]
    fn format_is_refused_and_named_in_each_spelling() {
        for (spelling, method) in [(Spelling::Snake, "to_openai()"), (Spelling::Camel, "toOpenai()")] {
            let refusal =
                request_from_members(spelling, members(spelling, serde_json::json!({"format": "json"}))).unwrap_err();
            assert_eq!(refusal.field.as_deref(), Some("format"));
            assert!(refusal.message.starts_with("field `format`: ") && refusal.message.contains(method));
        }
        let turn = serde_json::json!({"chat_kind": "crowd"});
        let refusal = request_from_members(Spelling::Camel, members(Spelling::Camel, turn.clone())).unwrap_err();
        assert_eq!(refusal.field.as_deref(), Some("chatKind"));
        assert!(refusal.message.starts_with("field `chat_kind`: "), "{}", refusal.message);
        let mut as_snake = Members::default();
        as_snake.insert("chat_kind", "chat_kind".into(), serde_json::json!("crowd"));
        let refusal = request_from_members(Spelling::Camel, as_snake).unwrap_err();
        assert_eq!(refusal.field.as_deref(), Some("chat_kind"), "named as the caller spelled it");
    }

    /// A refused turn exits as the CLI's usage errors do, a failed build as
    /// its failures: the numbers come from the CLI's one table.
    #[test]
    fn a_refusal_is_a_usage_error_and_a_build_error_a_failure() {
        let refused = Failure::from(Refusal::of_turn("x"));
        assert_eq!((refused.code, refused.exit_code), ("bad-request", ExitStatus::Usage.code()));
        let refused = Failure::from(Refusal::of_field(Spelling::Camel, "chat_kind", "x"));
        assert_eq!(refused.exit_code, ExitStatus::Usage.code());
        let refused = Failure::from(Refusal::of_field(Spelling::Camel, "tools[0].name", "x"));
        assert_eq!(refused.exit_code, ExitStatus::Failed.code(), "a tools list is checked as the --tools file is");
        let failed = Failure::of(&ProemError::input("--timezone", "x"));
        assert_eq!((failed.code, failed.exit_code), ("bad-request", ExitStatus::Failed.code()));
        assert_eq!(failed.field.as_deref(), Some("timezone"));
    }

    /// A build memo hit hands a binding the remembered build itself (no
    /// copy of a prompt per build, which Node frees only when it collects),
    /// equal to the copy `Assembler::build` answers.
    #[test]
    fn a_remembered_build_is_shared_not_copied() -> Result<(), ProemError> {
        let marlow = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/marlow");
        let assembler = Assembler::open(&marlow, None)?;
        let members = serde_json::json!({"now": "2026-11-21T09:30:00Z", "channel": "slack"});
        let request = request_from_members(Spelling::Snake, self::members(Spelling::Snake, members))
            .map_err(|r| ProemError::input("turn", r.message))?;
        let fresh = build(&assembler, &request)?;
        let again = build(&assembler, &request)?;
        let third = build(&assembler, &request)?;
        assert!(Arc::ptr_eq(&again, &third), "a memo hit copied the build");
        assert!(!Arc::ptr_eq(&fresh, &again), "the memo keeps its own remembered copy");
        assert_eq!(*again, assembler.build(&request.turn)?);
        assert_eq!(again.prompt, fresh.prompt);
        Ok(())
    }

    #[test]
    fn every_format_is_named_and_a_wrong_name_says_the_right_ones() {
        for (name, format) in [("text", Format::Text), ("json", Format::Json), ("anthropic", Format::Anthropic)] {
            assert_eq!(format_named(name), Ok(format));
        }
        assert!(format_named("xml").unwrap_err().contains("text, json, anthropic, openai"));
    }
}
