//! Stable-hash diagnostics: what fed the stable part, input by input, and
//! which of those moved the stable hash between two builds.
//!
//! Each report carries `stable_inputs`: one digest per stable section's
//! text (`body`) and per input that feeds it: a bootstrap file
//! (`file:AGENTS.md`, under the section it is rendered in), a plugin
//! (`plugin:ID`: origin, version and config, under each of its stable
//! sections), and, for the build as a whole (`section` empty), each table
//! of proem.toml (`config:[budget]`), the tool list (`tools`) and the
//! skills (`skills`). [`diff`] compares two such lists; [`Cause`] names the
//! kind of input that moved the hash, from a fixed set (the label of
//! `proem serve`'s `proem_stable_hash_changes_total`).

use crate::bootstrap::{FileGroup, InjectedFile};
use crate::plugin::LoadedPlugin;
use crate::report::SectionReport;
pub use crate::report::StableInput;
use crate::section::Zone;
use crate::skills::Skill;
use crate::tools::PromptTool;
use xxhash_rust::xxh3::Xxh3;

/// What a build hands [`collect`].
pub struct Sources<'a> {
    /// The report's sections (their `body_hash`).
    pub sections: &'a [SectionReport],
    /// The rows of the files, the tools and the skills
    /// ([`workspace_rows`], which a caller may keep while they are the
    /// same lists: digesting ~90 KB of files is most of the work).
    pub workspace: &'a [StableInput],
    /// The agent's plugins.
    pub plugins: &'a [LoadedPlugin],
    /// The config's rows, made once per assembler by [`config_inputs`]
    /// (the config is fixed for its life; serialising it was a fifth of a
    /// build with a new clock).
    pub config: &'a [StableInput],
}

fn digest(parts: &[&str]) -> String {
    let mut h = Xxh3::new();
    for part in parts {
        h.update(&(part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    format!("{:016x}", h.digest())
}

/// One row per table of proem.toml (`config:[budget]`), for the build as
/// a whole: what [`collect`] reports of `config`.
pub fn config_inputs(config: &crate::config::Config) -> Vec<StableInput> {
    let Ok(serde_json::Value::Object(tables)) = serde_json::to_value(config) else { return Vec::new() };
    tables
        .into_iter()
        .map(|(table, value)| StableInput {
            section: String::new(),
            input: format!("config:[{table}]"),
            digest: digest(&[&value.to_string()]),
        })
        .collect()
}

/// A key of what [`collect`] reads of `sections`: the source, id and body
/// hash of each stable one, in order.
pub fn sections_key(sections: &[SectionReport]) -> u128 {
    let mut key = crate::memo::KeyHasher::default();
    for r in sections.iter().filter(|r| r.zone == Zone::Stable) {
        key.str(&r.source).str(&r.id).num(r.body_hash);
    }
    key.finish()
}

/// The stable part's inputs, sorted by section then input.
pub fn collect(s: &Sources<'_>) -> Vec<StableInput> {
    let mut out = Vec::new();
    for r in s.sections.iter().filter(|r| r.zone == Zone::Stable) {
        let section = format!("{}/{}", r.source, r.id);
        out.push(row(&section, "body".into(), format!("{:016x}", r.body_hash)));
        if let Some(id) = r.source.strip_prefix("plugin:") {
            if let Some(p) = s.plugins.iter().find(|p| p.id == id) {
                let version = p.state.as_ref().map(|r| r.info.version.as_str()).unwrap_or("");
                out.push(row(&section, format!("plugin:{id}"), digest(&[&p.origin, version, &p.config_json])));
            }
        }
    }
    out.extend(s.workspace.iter().cloned());
    out.extend(s.config.iter().cloned());
    out.sort();
    out
}

/// The rows of the stable files (as injected), the tool list and the
/// skills, for [`Sources::workspace`].
pub fn workspace_rows(files: &[InjectedFile], tools: &[PromptTool], skills: &[Skill]) -> Vec<StableInput> {
    let mut out = Vec::new();
    for f in files.iter().filter(|f| f.group != FileGroup::Dynamic) {
        out.push(row(&format!("core/{}", f.group.section_id()), format!("file:{}", f.name), digest(&[&f.text])));
    }
    let tools: Vec<&str> = tools.iter().flat_map(|t| [t.name.as_str(), &t.summary, &t.schema]).collect();
    out.push(row("", "tools".into(), digest(&tools)));
    let skills: Vec<&str> = skills.iter().flat_map(|k| [k.name.as_str(), &k.description, &k.location]).collect();
    out.push(row("", "skills".into(), digest(&skills)));
    out
}

fn row(section: &str, input: String, digest: String) -> StableInput {
    StableInput { section: section.to_string(), input, digest }
}

/// The kind of input that moved a stable hash: a fixed set, so a metric
/// labelled by it has a bounded number of series.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Cause {
    /// A table of proem.toml.
    Config,
    /// A plugin's version, config or stable section.
    Plugin,
    /// A bootstrap file.
    File,
    /// The skills.
    Skills,
    /// The tool list.
    Tools,
    /// A section's text with none of its inputs changed (proem's own
    /// version, a layout default).
    Section,
    /// The hash moved and the inputs do not say why (a report without
    /// `stable_inputs`).
    Unknown,
}

impl Cause {
    /// Every cause, in the order [`diff`] ranks them.
    pub const ALL: [Cause; 7] =
        [Cause::Config, Cause::Plugin, Cause::File, Cause::Skills, Cause::Tools, Cause::Section, Cause::Unknown];

    /// The metric label.
    pub fn label(self) -> &'static str {
        match self {
            Cause::Config => "config",
            Cause::Plugin => "plugin",
            Cause::File => "file",
            Cause::Skills => "skills",
            Cause::Tools => "tools",
            Cause::Section => "section",
            Cause::Unknown => "unknown",
        }
    }

    fn of_input(input: &str) -> Cause {
        match input.split_once(':').map_or(input, |(kind, _)| kind) {
            "config" => Cause::Config,
            "plugin" => Cause::Plugin,
            "file" => Cause::File,
            "skills" => Cause::Skills,
            "tools" => Cause::Tools,
            _ => Cause::Section,
        }
    }
}

/// One input that differs between two builds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The section it feeds (empty: the whole build).
    pub section: String,
    /// The input.
    pub input: String,
    /// Its digest before and after (`None`: absent from that build).
    pub before: Option<String>,
    /// See `before`.
    pub after: Option<String>,
}

/// What moved the stable hash from `a` to `b`: the inputs that differ
/// (sorted by section, then input) and the cause, the first kind of
/// [`Cause::ALL`] among them; `None` when the hashes are equal.
pub fn diff(a_hash: &str, a: &[StableInput], b_hash: &str, b: &[StableInput]) -> Option<(Cause, Vec<Change>)> {
    if a_hash == b_hash {
        return None;
    }
    let key = |i: &StableInput| (i.section.clone(), i.input.clone());
    let before: std::collections::BTreeMap<_, _> = a.iter().map(|i| (key(i), i.digest.clone())).collect();
    let after: std::collections::BTreeMap<_, _> = b.iter().map(|i| (key(i), i.digest.clone())).collect();
    let mut keys: Vec<_> = before.keys().chain(after.keys()).cloned().collect();
    keys.sort();
    keys.dedup();
    let changes: Vec<Change> = keys
        .into_iter()
        .filter(|k| before.get(k) != after.get(k))
        .map(|k| Change { before: before.get(&k).cloned(), after: after.get(&k).cloned(), section: k.0, input: k.1 })
        .collect();
    let cause = changes.iter().map(|c| Cause::of_input(&c.input)).min().unwrap_or(Cause::Unknown);
    Some((cause, changes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn input(section: &str, input: &str, digest: &str) -> StableInput {
        StableInput { section: section.into(), input: input.into(), digest: digest.into() }
    }

    const INPUTS: [(&str, &str); 6] = [
        ("", "config:[agent]"),
        ("", "tools"),
        ("core/persona", "body"),
        ("core/persona", "file:SOUL.md"),
        ("plugin:w/forecast", "plugin:w"),
        ("", "skills"),
    ];

    proptest! {
        /// Whatever subset of inputs changes, the diff lists exactly those,
        /// and the cause is the highest-ranked kind among them.
        #[test]
        fn the_diff_is_the_changed_inputs_and_the_cause_their_first_kind(changed in proptest::collection::vec(any::<bool>(), 6)) {
            let a: Vec<_> = INPUTS.iter().map(|(s, i)| input(s, i, "0")).collect();
            let b: Vec<_> = INPUTS.iter().zip(&changed).map(|((s, i), c)| input(s, i, if *c { "1" } else { "0" })).collect();
            let (cause, changes) = diff("x", &a, "y", &b).unwrap();
            let expected: Vec<&str> = INPUTS.iter().zip(&changed).filter(|(_, c)| **c).map(|((_, i), _)| *i).collect();
            let mut listed: Vec<&str> = changes.iter().map(|c| c.input.as_str()).collect();
            listed.sort();
            let mut expected_sorted = expected.clone();
            expected_sorted.sort();
            prop_assert_eq!(listed, expected_sorted);
            let want = expected.iter().map(|i| Cause::of_input(i)).min().unwrap_or(Cause::Unknown);
            prop_assert_eq!(cause, want);
            prop_assert!(Cause::ALL.contains(&cause));
        }
    }

    #[test]
    fn equal_hashes_are_no_change_and_missing_inputs_are_unknown() {
        assert_eq!(diff("h", &[], "h", &[input("", "tools", "1")]), None);
        assert_eq!(diff("h", &[], "g", &[]).unwrap().0, Cause::Unknown);
        let (cause, changes) = diff("h", &[], "g", &[input("", "config:[budget]", "1")]).unwrap();
        assert_eq!((cause, changes[0].before.clone()), (Cause::Config, None));
    }
}
