//! Bootstrap files: which workspace files are loaded, in what order, and how
//! they are capped before they reach the prompt.
//!
//! Loading happens once per build (or per hook run, later); capping happens
//! on every render, because the budget stage may shrink a file's cap.

use crate::config::{AgentKind, Config, MissingMarker};
use crate::mode::{Mode, SessionKind};
use crate::report::{Diagnostic, FileReport, WORKSPACE_SOURCE};
use crate::section::ids;
use crate::text::{char_len, neutralize_cow, one_line, xml_escape};
use crate::truncate::head_tail;
use crate::workspace::{strip_front_matter, Exhausted, TextFile, Unavailable, Workspace};

pub use crate::file_names::{canonical_name, MEMORY_ALTERNATIVE, OPTIONAL_FILES, STANDARD_FILES};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The memory files, which `[bootstrap] memory_in_group_chats = false`
/// keeps out of group chats.
const MEMORY_FILES: [&str; 3] = ["MEMORY.md", MEMORY_ALTERNATIVE, "MEMORY.json"];

/// Below this many characters left in the total file cap, no further file is injected.
pub const MIN_REMAINING_CHARS: usize = 64;

/// One loaded (or missing) bootstrap file. Its text is shared (copying a
/// list of files copies no text) and hashed once, when the file is made:
/// the render memos and the plugins' call keys take a list of files by
/// names and hashes instead of hashing ~90 KB of text on every build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BootstrapFile {
    /// Workspace-relative name.
    pub name: String,
    /// Its text (normalised, front matter stripped, trailing space trimmed),
    /// or `None` when it is missing or could not be read.
    text: Option<Arc<str>>,
    /// xxh3-128 of `text` (a fixed value for a missing file).
    text_hash: u128,
    /// Characters of `text` (0 for a missing file).
    chars: usize,
}

impl BootstrapFile {
    /// A file named `name` with `text` (`None`: missing or unreadable).
    pub fn new(name: impl Into<String>, text: Option<String>) -> BootstrapFile {
        let text_hash = match &text {
            Some(t) => xxhash_rust::xxh3::xxh3_128(t.as_bytes()),
            None => u128::MAX,
        };
        let chars = text.as_deref().map(char_len).unwrap_or(0);
        BootstrapFile { name: name.into(), text: text.map(Arc::from), text_hash, chars }
    }

    /// Its text; `None` when missing or unreadable.
    pub fn text(&self) -> Option<&str> {
        self.text.as_deref()
    }

    /// A hash of [`BootstrapFile::text`], made with the file.
    pub fn text_hash(&self) -> u128 {
        self.text_hash
    }

    /// Characters of [`BootstrapFile::text`] (0 when missing), counted with
    /// the file.
    pub fn chars(&self) -> usize {
        self.chars
    }
}

/// A hash of a list of files by their names and the hashes made at load
/// (the plugins' call keys, the render memo of the injected files).
pub fn files_hash<'f>(files: impl ExactSizeIterator<Item = &'f BootstrapFile>) -> u128 {
    let mut h = crate::memo::KeyHasher::default();
    h.num(files.len() as u64);
    for f in files {
        h.str(&f.name).num128(f.text_hash());
    }
    h.finish()
}

/// Where a file is rendered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum FileGroup {
    /// SOUL.md and IDENTITY.md: the persona section (full and task modes).
    Persona,
    /// Everything else stable: the project_context section.
    Project,
    /// USER.md, HEARTBEAT.md and BOOTSTRAP.md: below the boundary.
    Dynamic,
}

impl FileGroup {
    /// The core section its files are rendered in.
    pub fn section_id(self) -> &'static str {
        match self {
            FileGroup::Persona => ids::PERSONA,
            FileGroup::Project => ids::PROJECT_CONTEXT,
            FileGroup::Dynamic => ids::DYNAMIC_FILES,
        }
    }
}

/// The group a file goes to under `layout`: [`group_of`], except that a
/// layout without a persona section keeps SOUL.md and IDENTITY.md with the
/// project files (OpenClaw, ZeroClaw): a file never leaves the prompt
/// because a layout has no place of its own for it.
pub fn group_in(name: &str, layout: &crate::layout::Layout) -> FileGroup {
    match group_of(name) {
        FileGroup::Persona if !layout.has(ids::PERSONA) => FileGroup::Project,
        group => group,
    }
}

/// The group a file name belongs to (by its [`canonical_name`]).
pub fn group_of(name: &str) -> FileGroup {
    match &*canonical_name(name) {
        "SOUL.md" | "IDENTITY.md" => FileGroup::Persona,
        name if crate::file_names::PER_TURN_FILES.contains(&name) => FileGroup::Dynamic,
        _ => FileGroup::Project,
    }
}

/// The sort key of load order: the standard files in their order, then any
/// other file by name. [`load`] produces files in this order; hooks that
/// rewrite the list are put back into it.
pub fn load_order(name: &str) -> (usize, &str) {
    let known = STANDARD_FILES.iter().chain(OPTIONAL_FILES.iter());
    let canonical = canonical_name(name);
    (known.clone().position(|s| *s == canonical).unwrap_or(known.count()), name)
}

/// Loads the bootstrap files for a session: the standard list, then the
/// configured extra files (sorted), filtered by the sub-agent allowlist.
/// `Err` when a file could not be read for the machine's reason
/// ([`Exhausted`]): the build fails rather than leave it out.
pub fn load(
    ws: &Workspace,
    config: &Config,
    session: SessionKind,
    group_chat: bool,
    diagnostics: &mut Vec<Diagnostic>,
) -> Result<Vec<BootstrapFile>, Exhausted> {
    let extras = extra_names(config);
    // The team's TEAM.md, read like GoClaw's optional files.
    let team_file = config.team.team_file();
    let names = STANDARD_FILES
        .iter()
        .copied()
        .chain(OPTIONAL_FILES.iter().copied())
        .chain(team_file.as_deref())
        .chain(extras.iter().map(|s| &**s));
    let per_turn = ws.per_turn_files()?;
    let read_file =
        |name: &str| ws.read_text(name, config.bootstrap.max_file_bytes).and_then(|file| per_turn.check(name, file));
    let mut files = Vec::new();
    for name in names.filter(|name| is_for_session(name, config, session, group_chat)) {
        let is_optional = OPTIONAL_FILES.contains(&name) || Some(name) == team_file.as_deref();
        let is_extra = !STANDARD_FILES.contains(&name) && !is_optional;
        let (shown_name, read) = read_with_fallback(name, read_file);
        let read = match read {
            Ok(file) => Ok(file),
            Err(why) => Err(why.or_exhausted(&shown_name)?),
        };
        let text = match read {
            Ok(file) => Some(file_text(&shown_name, file, config, diagnostics)),
            Err(why) if why.is_missing() => {
                if let Unavailable::PerTurn(how) = &why {
                    diagnostics.push(Diagnostic::warn(why.code(), format!("{shown_name}: {how}")));
                }
                if is_optional {
                    continue;
                }
                if is_extra && why == Unavailable::Missing {
                    diagnostics.push(Diagnostic::warn(
                        "file_missing",
                        format!("{name}: listed in [bootstrap] extra_files but not found"),
                    ));
                }
                None
            }
            Err(why) => {
                diagnostics.push(Diagnostic::warn(why.code(), format!("{name}: {}", why.describe())));
                None
            }
        };
        files.push(BootstrapFile::new(shown_name, text));
    }
    Ok(files)
}

/// `[bootstrap] extra_files` in their canonical spelling, sorted, once
/// each, without the standard and optional files (a listed standard file,
/// in any spelling, is read once, as itself).
fn extra_names(config: &Config) -> Vec<Cow<'_, str>> {
    let mut extras: Vec<Cow<'_, str>> = config
        .bootstrap
        .extra_files
        .iter()
        .map(|n| canonical_name(n))
        .filter(|n| !STANDARD_FILES.contains(&&**n) && !OPTIONAL_FILES.contains(&&**n) && n != MEMORY_ALTERNATIVE)
        .collect();
    extras.sort();
    extras.dedup();
    extras
}

/// Whether this session reads the file `name`: a sub-agent only its
/// allowlist, HEARTBEAT.md only a heartbeat turn (OpenClaw) that wants it,
/// the memory files no group chat unless configured.
fn is_for_session(name: &str, config: &Config, session: SessionKind, group_chat: bool) -> bool {
    let allow = &config.bootstrap.subagent_allowlist;
    if session.uses_file_allowlist() && !allow.iter().any(|a| canonical_name(a) == name) {
        return false;
    }
    if name == "HEARTBEAT.md" && (session != SessionKind::Heartbeat || !config.bootstrap.heartbeat_file) {
        return false;
    }
    let no_memory = group_chat && !config.bootstrap.memory_in_group_chats;
    !(no_memory && MEMORY_FILES.contains(&name))
}

/// Reads `name` with `read`, and a missing MEMORY.md as its lower-case
/// alternative when that one is there. Returns the name the file is shown
/// under and what was read.
fn read_with_fallback<T>(
    name: &str,
    read: impl Fn(&str) -> Result<T, Unavailable>,
) -> (String, Result<T, Unavailable>) {
    let first = read(name);
    if name == "MEMORY.md" && first.as_ref().is_err_and(Unavailable::is_missing) {
        let lower = read(MEMORY_ALTERNATIVE);
        // Refused by the system, it is not known to be missing: the caller
        // fails the build on it ([`Unavailable::or_exhausted`]).
        if lower.is_ok() || matches!(lower, Err(Unavailable::Exhausted(_))) {
            return (MEMORY_ALTERNATIVE.into(), lower);
        }
    }
    (name.to_string(), first)
}

/// A file's text as injected: front matter stripped when configured,
/// trailing whitespace trimmed; a warning when it was cut at the byte limit.
fn file_text(shown_name: &str, file: TextFile, config: &Config, diagnostics: &mut Vec<Diagnostic>) -> String {
    if file.cut_at_limit {
        diagnostics.push(Diagnostic::warn(
            "file_too_large",
            format!(
                "{shown_name}: larger than {} bytes; only the first {} bytes were read",
                config.bootstrap.max_file_bytes, config.bootstrap.max_file_bytes
            ),
        ));
    }
    let mut text = if config.bootstrap.strip_front_matter {
        strip_front_matter(shown_name, file.text, diagnostics)
    } else {
        file.text
    };
    text.truncate(text.trim_end().len());
    text
}

/// A file as it is injected this render.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InjectedFile {
    /// Workspace-relative name.
    pub name: String,
    /// Where it goes.
    pub group: FileGroup,
    /// The (possibly cut) neutralised text; empty when omitted.
    pub text: String,
    /// Report row.
    pub report: FileReport,
    /// Which cap cut it, when one did.
    pub cut_by: Option<Cap>,
}

/// The cap that cut a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cap {
    /// `[budget] per_file_chars` (6,000 under compact context).
    PerFile,
    /// What `[budget] total_file_chars` had left after the files before it.
    Total,
    /// The token budget (the budget stage's tighter cap).
    Budget,
}

impl Cap {
    /// In words, with the key that raises it.
    pub fn describe(self) -> &'static str {
        match self {
            Cap::PerFile => "per-file cap; raise [budget] per_file_chars to keep more",
            Cap::Total => "total file cap, spent on the files before it; raise [budget] total_file_chars to keep more",
            Cap::Budget => "token budget",
        }
    }
}

/// Caps and neutralises the files that `mode` renders. Stable files are
/// capped first, in load order, so per-turn files (USER.md, HEARTBEAT.md)
/// can never change how much of a stable file fits. `overrides` holds the
/// budget stage's tighter caps by file name.
pub fn inject(
    files: &[BootstrapFile],
    mode: Mode,
    config: &Config,
    overrides: &BTreeMap<String, usize>,
    workspace_path: &str,
) -> Vec<InjectedFile> {
    // A file is injected only when its group's section is in this mode, so
    // the report never counts a file the prompt does not show.
    let layout = config.layout();
    let shown = |group: FileGroup| layout.mode(mode).has(group.section_id());
    let mut order: Vec<(FileGroup, usize)> =
        files.iter().enumerate().map(|(i, f)| (group_in(&f.name, layout), i)).filter(|(g, _)| shown(*g)).collect();
    // Stable groups first; within a group, load order, but the onboarding
    // file first of the per-turn files (GoClaw's bootstrap-time order).
    order.sort_by_key(|&(g, i)| (g == FileGroup::Dynamic, files[i].name != "BOOTSTRAP.md", i));
    let b = &config.budget;
    let per_file = config.per_file_chars();
    let mut remaining = b.total_file_chars;
    let mut out = Vec::with_capacity(order.len());
    for (group, i) in order {
        let file = &files[i];
        let mut report = FileReport {
            name: file.name.clone(),
            raw_chars: 0,
            injected_chars: 0,
            truncated: false,
            missing: file.text.is_none(),
            source: WORKSPACE_SOURCE.into(),
        };
        let mut text = String::new();
        let mut cut_by = None;
        if let Some(raw) = file.text() {
            let safe = neutralize_cow(raw);
            report.raw_chars = file.chars();
            let (mut cap, mut by) =
                if remaining < per_file { (remaining, Cap::Total) } else { (per_file, Cap::PerFile) };
            if let Some(o) = overrides.get(&file.name).filter(|o| **o < cap) {
                (cap, by) = (*o, Cap::Budget);
            }
            if remaining < MIN_REMAINING_CHARS && !safe.is_empty() {
                (cap, by) = (0, Cap::Total);
            }
            let cut = head_tail(&safe, cap, b.head_ratio, b.tail_ratio, &one_line(&file.name, 80));
            report.truncated = cut.truncated;
            report.injected_chars = char_len(&cut.text);
            remaining = remaining.saturating_sub(report.injected_chars);
            text = cut.text;
            cut_by = report.truncated.then_some(by);
        } else if let Some(marker) = missing_marker(config.bootstrap.missing_marker, &file.name, workspace_path) {
            // The agent learns the file is absent and where it belongs.
            text = marker;
            if overrides.get(&file.name) == Some(&0) {
                text.clear();
            }
            report.injected_chars = char_len(&text);
        }
        out.push(InjectedFile { name: file.name.clone(), group, text, report, cut_by });
    }
    out
}

/// The marker a missing file gets, if any: OpenClaw's `[MISSING] Expected
/// at: <path>` and ZeroClaw's `[File not found: NAME]`, for the standard
/// files an agent is expected to have. Never BOOTSTRAP.md (present on a
/// first run only: its absence is the ordinary case) nor HEARTBEAT.md
/// (read in heartbeat turns only, where OpenClaw marks it and ZeroClaw
/// never loads it).
fn missing_marker(style: MissingMarker, name: &str, workspace_path: &str) -> Option<String> {
    if !STANDARD_FILES.contains(&name) || matches!(name, "BOOTSTRAP.md" | "HEARTBEAT.md") {
        return None;
    }
    match style {
        MissingMarker::Off => None,
        MissingMarker::ExpectedAt => {
            let at = format!("{}/{name}", workspace_path.trim_end_matches('/'));
            Some(format!("[MISSING] Expected at: {}", neutralize_cow(&at)))
        }
        MissingMarker::FileNotFound => Some(format!("[File not found: {name}]")),
    }
}

/// Wraps one file for the prompt: a heading and an XML-ish wrapper whose
/// closing tag the content cannot forge (it was neutralised).
pub fn wrap(file: &InjectedFile, kind: AgentKind) -> String {
    let mut out = String::new();
    wrap_into(&mut out, file, kind);
    out
}

/// [`wrap`], appended to `out` (reserved once: the file's text is most of
/// it, and a growing `format!` copied it several times).
pub fn wrap_into(out: &mut String, file: &InjectedFile, kind: AgentKind) {
    let tag = match kind {
        AgentKind::Predefined if !matches!(file.name.as_str(), "USER.md" | "BOOTSTRAP.md") => "internal_config",
        _ => "context_file",
    };
    let heading = one_line(&file.name, 120);
    let name = xml_escape(&heading);
    let pieces = ["### ", &heading, "\n<", tag, " name=\"", &name, "\">\n", &file.text, "\n</", tag, ">"];
    out.reserve(pieces.iter().map(|p| p.len()).sum());
    for piece in pieces {
        out.push_str(piece);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Which files a session reads: the sub-agent allowlist, HEARTBEAT.md
    /// on heartbeat turns only, no memory in group chats unless configured.
    #[test]
    fn a_session_reads_its_files_only() {
        let config = Config::default();
        assert!(is_for_session("AGENTS.md", &config, SessionKind::Main, false));
        assert!(!is_for_session("SOUL.md", &config, SessionKind::Subagent, false));
        assert!(is_for_session("AGENTS.md", &config, SessionKind::Subagent, false));
        assert!(is_for_session("MEMORY.md", &config, SessionKind::Main, false));
        let mut private = Config::default();
        private.bootstrap.memory_in_group_chats = false;
        assert!(!is_for_session("MEMORY.md", &private, SessionKind::Main, true));
        assert!(is_for_session("MEMORY.md", &private, SessionKind::Main, false));
        private.bootstrap.memory_in_group_chats = true;
        assert!(is_for_session("MEMORY.md", &private, SessionKind::Main, true));
        let heartbeat = is_for_session("HEARTBEAT.md", &config, SessionKind::Heartbeat, false);
        assert_eq!(heartbeat, config.bootstrap.heartbeat_file);
        assert!(!is_for_session("HEARTBEAT.md", &config, SessionKind::Main, false));
    }

    /// A missing MEMORY.md is read as memory.md when that one is there,
    /// and shown under the name it was read by; other names never fall back.
    #[test]
    fn memory_falls_back_to_its_lower_case_spelling() {
        let only_lower = |name: &str| {
            if name == MEMORY_ALTERNATIVE {
                Ok(name.to_string())
            } else {
                Err(Unavailable::Missing)
            }
        };
        assert_eq!(
            read_with_fallback("MEMORY.md", only_lower),
            (MEMORY_ALTERNATIVE.into(), Ok(MEMORY_ALTERNATIVE.into()))
        );
        assert_eq!(read_with_fallback("USER.md", only_lower), ("USER.md".into(), Err(Unavailable::Missing)));
        let none = |_: &str| -> Result<String, Unavailable> { Err(Unavailable::Missing) };
        assert_eq!(read_with_fallback("MEMORY.md", none), ("MEMORY.md".into(), Err(Unavailable::Missing)));
    }

    /// Extra files are canonical, sorted, once each, and never a standard file.
    #[test]
    fn extra_names_are_canonical_sorted_and_new() {
        let mut config = Config::default();
        config.bootstrap.extra_files = vec!["b.md".into(), "./a.md".into(), "a.md".into(), "AGENTS.md".into()];
        let names: Vec<String> = extra_names(&config).into_iter().map(|n| n.into_owned()).collect();
        assert_eq!(names, ["a.md", "b.md"]);
    }

    fn file(name: &str, len: usize) -> BootstrapFile {
        BootstrapFile::new(name, Some("x".repeat(len)))
    }

    #[test]
    fn a_file_carries_the_hash_and_characters_of_its_text() {
        let texts = [Some(String::new()), Some("héllo 🌍\nwörld".into()), Some("x".repeat(5000)), None];
        for text in texts {
            let f = BootstrapFile::new("A.md", text.clone());
            assert_eq!(f.text(), text.as_deref());
            assert_eq!(f.chars(), text.as_deref().map(|t| t.chars().count()).unwrap_or(0));
            match text.as_deref() {
                Some(t) => assert_eq!(f.text_hash(), xxhash_rust::xxh3::xxh3_128(t.as_bytes())),
                None => assert_ne!(f.text_hash(), xxhash_rust::xxh3::xxh3_128(b""), "missing differs from empty"),
            }
            assert_eq!(f.clone(), f, "a copy shares the text and is equal");
        }
    }

    #[test]
    fn groups() {
        assert_eq!(group_of("SOUL.md"), FileGroup::Persona);
        assert_eq!(group_of("USER.md"), FileGroup::Dynamic);
        assert_eq!(group_of("notes/extra.md"), FileGroup::Project);
    }

    #[test]
    fn total_cap_is_spent_on_stable_files_first() {
        let mut config = Config::default();
        config.budget.per_file_chars = 1000;
        config.budget.total_file_chars = 1500;
        let files = vec![file("AGENTS.md", 900), file("USER.md", 900), file("MEMORY.md", 900)];
        let out = inject(&files, Mode::Full, &config, &BTreeMap::new(), "/w");
        let names: Vec<&str> = out.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["AGENTS.md", "MEMORY.md", "USER.md"]);
        assert_eq!(out[0].report.injected_chars, 900);
        assert!(out[1].report.truncated && out[1].report.injected_chars <= 600);
        let total: usize = out.iter().map(|f| f.report.injected_chars).sum();
        assert!(total <= 1500, "{total}");
    }

    #[test]
    fn persona_files_leave_in_minimal_mode() {
        let files = vec![file("SOUL.md", 10), file("AGENTS.md", 10)];
        let out = inject(&files, Mode::Minimal, &Config::default(), &BTreeMap::new(), "/w");
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].name, "AGENTS.md");
    }

    #[test]
    fn wrappers_by_kind() {
        let f = InjectedFile {
            name: "AGENTS.md".into(),
            group: FileGroup::Project,
            text: "hi".into(),
            report: FileReport {
                name: "AGENTS.md".into(),
                raw_chars: 2,
                injected_chars: 2,
                truncated: false,
                missing: false,
                source: WORKSPACE_SOURCE.into(),
            },
            cut_by: None,
        };
        assert!(wrap(&f, AgentKind::Open).contains("<context_file name=\"AGENTS.md\">\nhi\n</context_file>"));
        assert!(wrap(&f, AgentKind::Predefined).contains("</internal_config>"));
        let user = InjectedFile { name: "USER.md".into(), ..f };
        assert!(wrap(&user, AgentKind::Predefined).contains("</context_file>"));
    }
}
