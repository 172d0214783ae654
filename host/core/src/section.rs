//! A section is data: where it goes, who wrote it, and its text.
//!
//! Core sections (native Rust) and plugin sections (wasm) are the same type and
//! flow through the same merge and budget code. The core table below is the
//! public vocabulary: overlays and plugins name these ids to replace a section
//! or to place theirs before or after one.

use crate::mode::{Mode, ModeSet};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Which side of the cache boundary a section sits on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Zone {
    /// Above the boundary: must not change between turns of one session.
    Stable,
    /// Below the boundary: per-turn content.
    Dynamic,
}

impl Zone {
    /// The name used in JSON and tables.
    pub fn as_str(self) -> &'static str {
        match self {
            Zone::Stable => "stable",
            Zone::Dynamic => "dynamic",
        }
    }
}

/// Who produced a section.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Source {
    /// proem itself.
    Core,
    /// The plugin with this id.
    Plugin(String),
}

impl Source {
    /// The id used as the merge tie-breaker: core sorts before every plugin.
    pub fn plugin_id(&self) -> &str {
        match self {
            Source::Core => "",
            Source::Plugin(id) => id,
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Core => f.write_str(CORE_SOURCE),
            Source::Plugin(id) => write!(f, "plugin:{id}"),
        }
    }
}

/// Where a section goes relative to a core section.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Placement {
    /// Just before the anchor.
    Before,
    /// In the anchor's own place: a core section itself, or a contributed
    /// section that replaces it.
    At,
    /// Just after the anchor.
    After,
}

/// A position in the prompt: an anchor in the core table and a placement.
///
/// Slots order by the anchor's index in [`CORE_SECTIONS`], then by placement,
/// so a plugin section "after safety" lands between safety and skills however
/// the plugins were loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Slot {
    anchor: usize,
    placement: Placement,
}

impl Slot {
    /// The slot of a core section id, placed as given. `None` for an unknown id.
    pub fn new(anchor_id: &str, placement: Placement) -> Option<Slot> {
        core_index(anchor_id).map(|anchor| Slot { anchor, placement })
    }

    /// The id of the core section this slot is anchored to.
    pub fn anchor_id(self) -> &'static str {
        CORE_SECTIONS[self.anchor].id
    }

    /// Before, at or after the anchor.
    pub fn placement(self) -> Placement {
        self.placement
    }
}

/// How the budget stage may cut a section (lower classes are cut first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CutClass {
    /// A section from outside the core (a plugin, a library caller): dropped
    /// whole, last in the prompt first, before anything of the operator's.
    ThirdParty,
    /// The caller's extra prompt: shortened, then dropped.
    ExtraContext,
    /// The skills list: compact form, then fewer skills.
    Skills,
    /// Bootstrap files: largest first, shrinking head and tail.
    ContextFiles,
    /// Any other optional section: dropped whole, last in the prompt first.
    Optional,
}

/// One block of the prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// A core id from [`CORE_SECTIONS`] or a plugin's own id.
    pub id: String,
    /// Who wrote it.
    pub source: Source,
    /// Above or below the cache boundary.
    pub zone: Zone,
    /// Where it goes.
    pub slot: Slot,
    /// Lower first among sections sharing a slot.
    pub priority: i32,
    /// The modes it appears in.
    pub modes: ModeSet,
    /// Never cut by the budget (identity, safety, tooling, workspace).
    pub protected: bool,
    /// The text, heading included, without trailing newlines.
    pub body: String,
}

impl Section {
    /// The merge key: (slot, priority, plugin id, section id). Never load order.
    pub fn merge_key(&self) -> (Slot, i32, &str, &str) {
        (self.slot, self.priority, self.source.plugin_id(), &self.id)
    }

    /// The identity the budget and reports use: (source, id).
    pub fn key(&self) -> SectionKey {
        (self.source.to_string(), self.id.clone())
    }

    /// A section contributed from outside the core (a plugin, or a library
    /// caller). Its body passes the text hygiene workspace files get
    /// ([`clean_text`](crate::text::clean_text): LF newlines, no control
    /// characters) and is neutralised (it cannot forge the boundary marker
    /// or close a wrapper tag); it is never protected.
    pub fn contributed(
        source: &str,
        id: &str,
        slot: Slot,
        zone: Zone,
        priority: i32,
        modes: ModeSet,
        body: &str,
    ) -> Section {
        Section {
            id: id.to_string(),
            source: Source::Plugin(source.to_string()),
            zone,
            slot,
            priority,
            modes,
            protected: false,
            body: crate::text::neutralize(crate::text::clean_owned(body.to_string()).trim_end()),
        }
    }

    /// How the budget may cut it; `None` when protected. Only core sections
    /// have the special classes; every contributed section is `Optional`.
    pub fn cut_class(&self) -> Option<CutClass> {
        if self.protected {
            return None;
        }
        if self.source != Source::Core {
            return Some(CutClass::ThirdParty);
        }
        Some(match self.id.as_str() {
            ids::EXTRA_CONTEXT => CutClass::ExtraContext,
            ids::SKILLS => CutClass::Skills,
            ids::PERSONA | ids::PROJECT_CONTEXT | ids::DYNAMIC_FILES => CutClass::ContextFiles,
            _ => CutClass::Optional,
        })
    }
}

/// (source, id): how a section is named in reports and by the budget.
pub type SectionKey = (String, String);

/// How [`Source::Core`] is written in reports and section keys.
pub const CORE_SOURCE: &str = "core";

/// The key of the core section `id`.
pub fn core_key(id: &str) -> SectionKey {
    (CORE_SOURCE.to_string(), id.to_string())
}

/// The row of the core table describing one core section.
#[derive(Debug, Clone, Copy)]
pub struct CoreSpec {
    /// Public id.
    pub id: &'static str,
    /// Default zone.
    pub zone: Zone,
    /// Modes it appears in.
    pub modes: ModeSet,
    /// Never cut by the budget.
    pub protected: bool,
}

/// Core section ids, as constants so a typo is a compile error.
pub mod ids {
    #![allow(missing_docs)]
    pub const IDENTITY: &str = "identity";
    pub const FIRST_RUN: &str = "first_run";
    pub const PERSONA: &str = "persona";
    pub const IDENTITY_ANCHOR: &str = "identity_anchor";
    pub const SELF_EVOLUTION: &str = "self_evolution";
    pub const TOOLING: &str = "tooling";
    pub const INTERACTION_STYLE: &str = "interaction_style";
    pub const SHELL: &str = "shell";
    pub const LONG_RUNNING: &str = "long_running";
    pub const TOOL_CALL_STYLE: &str = "tool_call_style";
    pub const EXECUTION_BIAS: &str = "execution_bias";
    pub const SAFETY: &str = "safety";
    pub const SKILLS: &str = "skills";
    pub const MCP_TOOLS: &str = "mcp_tools";
    pub const WORKSPACE: &str = "workspace";
    pub const TEAM: &str = "team";
    pub const SANDBOX: &str = "sandbox";
    pub const OWNERS: &str = "owners";
    pub const OUTPUT_FORMAT: &str = "output_format";
    pub const PROJECT_CONTEXT: &str = "project_context";
    pub const MEMORY_RECALL: &str = "memory_recall";
    pub const TIME: &str = "time";
    pub const CHANNEL_FORMATTING: &str = "channel_formatting";
    pub const CHANNEL_CAPABILITIES: &str = "channel_capabilities";
    pub const GROUP_REPLY: &str = "group_reply";
    pub const EXTRA_CONTEXT: &str = "extra_context";
    pub const DYNAMIC_FILES: &str = "dynamic_files";
    pub const SUBAGENTS: &str = "subagents";
    pub const RUNTIME: &str = "runtime";
    pub const RECENCY: &str = "recency";
    pub const TOOL_PROTOCOL: &str = "tool_protocol";
}

const ALL: ModeSet = ModeSet::ALL;
const FULL: ModeSet = ModeSet::of(&[Mode::Full]);
const FULL_TASK: ModeSet = ModeSet::of(&[Mode::Full, Mode::Task]);
const NOT_NONE: ModeSet = ModeSet::of(&[Mode::Full, Mode::Task, Mode::Minimal]);
const FULL_TASK_NONE: ModeSet = ModeSet::of(&[Mode::Full, Mode::Task, Mode::None]);

const fn spec(id: &'static str, zone: Zone, modes: ModeSet, protected: bool) -> CoreSpec {
    CoreSpec { id, zone, modes, protected }
}

/// The core sections in prompt order (DESIGN.md's table). Every stable row
/// precedes every dynamic row, so slot order and zone order agree.
pub const CORE_SECTIONS: [CoreSpec; 31] = [
    spec(ids::IDENTITY, Zone::Stable, ALL, true),
    spec(ids::FIRST_RUN, Zone::Stable, ALL, false),
    spec(ids::PERSONA, Zone::Stable, FULL_TASK, false),
    spec(ids::IDENTITY_ANCHOR, Zone::Stable, NOT_NONE, false),
    spec(ids::SELF_EVOLUTION, Zone::Stable, FULL, false),
    spec(ids::TOOLING, Zone::Stable, ALL, true),
    spec(ids::INTERACTION_STYLE, Zone::Stable, FULL_TASK, false),
    spec(ids::SHELL, Zone::Stable, FULL, false),
    spec(ids::LONG_RUNNING, Zone::Stable, FULL, false),
    spec(ids::TOOL_CALL_STYLE, Zone::Stable, FULL, false),
    spec(ids::EXECUTION_BIAS, Zone::Stable, FULL_TASK, false),
    spec(ids::SAFETY, Zone::Stable, ALL, true),
    spec(ids::SKILLS, Zone::Stable, ALL, false),
    spec(ids::MCP_TOOLS, Zone::Stable, FULL_TASK_NONE, false),
    spec(ids::WORKSPACE, Zone::Stable, ALL, true),
    spec(ids::TEAM, Zone::Stable, NOT_NONE, false),
    spec(ids::SANDBOX, Zone::Stable, NOT_NONE, false),
    spec(ids::OWNERS, Zone::Stable, FULL, false),
    spec(ids::OUTPUT_FORMAT, Zone::Stable, FULL_TASK, false),
    spec(ids::PROJECT_CONTEXT, Zone::Stable, NOT_NONE, false),
    spec(ids::MEMORY_RECALL, Zone::Stable, NOT_NONE, false),
    spec(ids::TIME, Zone::Dynamic, NOT_NONE, false),
    spec(ids::CHANNEL_FORMATTING, Zone::Dynamic, FULL, false),
    spec(ids::CHANNEL_CAPABILITIES, Zone::Dynamic, FULL_TASK, false),
    spec(ids::GROUP_REPLY, Zone::Dynamic, FULL, false),
    spec(ids::EXTRA_CONTEXT, Zone::Dynamic, ALL, false),
    spec(ids::DYNAMIC_FILES, Zone::Dynamic, NOT_NONE, false),
    spec(ids::SUBAGENTS, Zone::Dynamic, FULL, false),
    spec(ids::RUNTIME, Zone::Dynamic, ALL, false),
    spec(ids::RECENCY, Zone::Dynamic, FULL, false),
    spec(ids::TOOL_PROTOCOL, Zone::Dynamic, ALL, false),
];

/// The index of a core id in [`CORE_SECTIONS`].
pub fn core_index(id: &str) -> Option<usize> {
    CORE_SECTIONS.iter().position(|s| s.id == id)
}

/// The table row of a core id.
pub fn core_spec(id: &str) -> Option<&'static CoreSpec> {
    CORE_SECTIONS.iter().find(|s| s.id == id)
}

/// Builds a core section from its table row; `None` when `body` is blank.
pub fn core_section(id: &'static str, body: String) -> Option<Section> {
    let spec = core_spec(id).expect("core section ids are constants from the table");
    let body = body.trim_end().to_string();
    if body.trim().is_empty() {
        return None;
    }
    Some(Section {
        id: id.to_string(),
        source: Source::Core,
        zone: spec.zone,
        slot: Slot::new(id, Placement::At).expect("id is in the table"),
        priority: 0,
        modes: spec.modes,
        protected: spec.protected,
        body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stable_rows_precede_dynamic_rows() {
        let first_dynamic = CORE_SECTIONS.iter().position(|s| s.zone == Zone::Dynamic).unwrap();
        assert!(CORE_SECTIONS[first_dynamic..].iter().all(|s| s.zone == Zone::Dynamic));
        assert_eq!(CORE_SECTIONS[first_dynamic].id, ids::TIME);
    }

    #[test]
    fn ids_are_unique_and_protected_set_is_exact() {
        let mut seen: Vec<&str> = CORE_SECTIONS.iter().map(|s| s.id).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), CORE_SECTIONS.len());
        let protected: Vec<&str> = CORE_SECTIONS.iter().filter(|s| s.protected).map(|s| s.id).collect();
        assert_eq!(protected, [ids::IDENTITY, ids::TOOLING, ids::SAFETY, ids::WORKSPACE]);
    }

    #[test]
    fn slots_order_by_anchor_then_placement() {
        let after_safety = Slot::new(ids::SAFETY, Placement::After).unwrap();
        let skills = Slot::new(ids::SKILLS, Placement::At).unwrap();
        let before_skills = Slot::new(ids::SKILLS, Placement::Before).unwrap();
        assert!(after_safety < before_skills && before_skills < skills);
        assert!(Slot::new("no_such_section", Placement::At).is_none());
    }

    #[test]
    fn blank_bodies_make_no_section() {
        assert!(core_section(ids::SAFETY, " \n\t".into()).is_none());
        let s = core_section(ids::SAFETY, "## Safety\nx\n\n".into()).unwrap();
        assert_eq!(s.body, "## Safety\nx");
        assert!(s.protected);
        assert_eq!(s.cut_class(), None);
    }
}
