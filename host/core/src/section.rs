//! A section is data: where it goes, who wrote it, and its text.
//!
//! Core sections (native Rust) and plugin sections (wasm) are the same type and
//! flow through the same merge and budget code. The core table below is the
//! public vocabulary: overlays and plugins name these ids to replace a section
//! or to place theirs before or after one.

use crate::mode::ModeSet;
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

/// Which cached block of a request a section belongs to, in prompt order:
/// what holds for the agent, what holds for one session, what changes each
/// turn. The rule is the inputs' (one place, [`Section::tier`]): a stable
/// section is `Stable`; a core dynamic section is `Session` unless its
/// table row says it reads inputs that change each turn
/// ([`CoreSpec::each_turn`]: the clock, the extra prompt, and the
/// reminder, which must come last); a contributed
/// dynamic section (a `turn` hook's, an overlay's suffix, a library
/// caller's) is `Turn`, since nothing bounds what it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    /// Above the boundary.
    Stable,
    /// Below it, the same for every turn of a session (channel, chat kind,
    /// group title, model, USER.md, …).
    Session,
    /// Below it, changing every turn.
    Turn,
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

/// A position in the prompt: an anchor (a core section id, or one of the
/// plugin ends of a layout) and a placement.
///
/// Slots order by the active layout's position of the anchor, then by
/// placement (see `layout::ModeLayout::slot_key`), so a plugin
/// section "after safety" lands right after safety under every layout,
/// however the plugins were loaded. `Ord` on a slot itself (table order)
/// is only a tie-breaker for sections that share nothing else.
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

    /// The slot of a layout's plugin end ([`STABLE_PREFIX`] or
    /// [`DYNAMIC_SUFFIX`]).
    pub fn end(id: &str) -> Slot {
        let anchor = match id {
            STABLE_PREFIX | DYNAMIC_SUFFIX => anchor_index(id).expect("an end id"),
            other => panic!("{other} is not a layout end"),
        };
        Slot { anchor, placement: Placement::At }
    }

    /// The id this slot is anchored to (a core id or a layout end).
    pub fn anchor_id(self) -> &'static str {
        anchor_id(self.anchor)
    }

    /// The anchor's index among the ids a layout can name.
    pub fn anchor_index(self) -> usize {
        self.anchor
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

    /// The cached block it belongs to (the rule is [`Tier`]'s).
    pub fn tier(&self) -> Tier {
        match (self.zone, &self.source) {
            (Zone::Stable, _) => Tier::Stable,
            (Zone::Dynamic, Source::Core) if core_spec(&self.id).is_some_and(|s| !s.each_turn) => Tier::Session,
            (Zone::Dynamic, _) => Tier::Turn,
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
    /// The zone a plugin hook replaces it from (the default layout's zone:
    /// a `turn` hook may replace only dynamic sections, a `stable` hook
    /// only stable ones). The active layout decides where it prints.
    pub zone: Zone,
    /// Made from per-turn inputs (the clock, the channel, the extra
    /// prompt, USER.md, …): no layout may put it above the boundary.
    pub per_turn: bool,
    /// Which per-turn inputs, in words (for the error that refuses a layout).
    pub turn_inputs: &'static str,
    /// In the turn tier (see [`Tier`]): made from inputs that change from
    /// one turn of a session to the next (the clock, the extra prompt), or
    /// (the reminder) meant to be the last thing the model reads, which
    /// only the turn tier is. Every other core section reads only what
    /// holds for a whole session, so it is cached with the session.
    pub each_turn: bool,
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
    pub const TOOL_HONESTY: &str = "tool_honesty";
    pub const EXECUTION_BIAS: &str = "execution_bias";
    pub const SAFETY: &str = "safety";
    pub const SKILLS: &str = "skills";
    pub const MCP_TOOLS: &str = "mcp_tools";
    pub const WORKSPACE: &str = "workspace";
    pub const TEAM: &str = "team";
    pub const SANDBOX: &str = "sandbox";
    pub const OWNERS: &str = "owners";
    pub const WORKSPACE_FILES_NOTE: &str = "workspace_files_note";
    pub const OUTPUT_FORMAT: &str = "output_format";
    pub const REPLY_TAGS: &str = "reply_tags";
    pub const MESSAGING: &str = "messaging";
    pub const VOICE: &str = "voice";
    pub const REACTIONS: &str = "reactions";
    pub const REASONING_FORMAT: &str = "reasoning_format";
    pub const PROJECT_CONTEXT: &str = "project_context";
    pub const MEMORY_RECALL: &str = "memory_recall";
    pub const SILENT_REPLIES: &str = "silent_replies";
    pub const TIME: &str = "time";
    pub const CHANNEL_FORMATTING: &str = "channel_formatting";
    pub const CHANNEL_CAPABILITIES: &str = "channel_capabilities";
    pub const GROUP_REPLY: &str = "group_reply";
    pub const EXTRA_CONTEXT: &str = "extra_context";
    pub const DYNAMIC_FILES: &str = "dynamic_files";
    pub const SUBAGENTS: &str = "subagents";
    pub const HEARTBEATS: &str = "heartbeats";
    pub const RUNTIME: &str = "runtime";
    pub const RECENCY: &str = "recency";
    pub const TOOL_PROTOCOL: &str = "tool_protocol";
}

/// A section made from stable inputs (the agent, its files and tools, the
/// config): a layout may put it on either side of the boundary.
const fn stable(id: &'static str, zone: Zone, protected: bool) -> CoreSpec {
    CoreSpec { id, zone, per_turn: false, turn_inputs: "", each_turn: false, protected }
}

/// A section made from per-turn inputs, named in `inputs`: always below
/// the boundary.
const fn per_turn(id: &'static str, inputs: &'static str) -> CoreSpec {
    CoreSpec { id, zone: Zone::Dynamic, per_turn: true, turn_inputs: inputs, each_turn: false, protected: false }
}

/// A section made from inputs that change every turn, named in `inputs`:
/// below the boundary, in the turn tier.
const fn each_turn(id: &'static str, inputs: &'static str) -> CoreSpec {
    CoreSpec { each_turn: true, ..per_turn(id, inputs) }
}

const S: Zone = Zone::Stable;
const D: Zone = Zone::Dynamic;

/// The core sections, in the order a layout's left-out ids fall back to
/// (the default layout's order, with the sections it leaves out beside
/// their neighbours). Every stable row precedes every dynamic row.
pub const CORE_SECTIONS: [CoreSpec; 40] = [
    stable(ids::IDENTITY, S, true),
    stable(ids::FIRST_RUN, S, false),
    stable(ids::PERSONA, S, false),
    stable(ids::IDENTITY_ANCHOR, S, false),
    stable(ids::SELF_EVOLUTION, S, false),
    stable(ids::TOOLING, S, true),
    stable(ids::INTERACTION_STYLE, S, false),
    stable(ids::SHELL, S, false),
    stable(ids::LONG_RUNNING, S, false),
    stable(ids::TOOL_CALL_STYLE, S, false),
    stable(ids::TOOL_HONESTY, S, false),
    stable(ids::EXECUTION_BIAS, S, false),
    stable(ids::SAFETY, S, true),
    stable(ids::SKILLS, S, false),
    stable(ids::MCP_TOOLS, S, false),
    stable(ids::WORKSPACE, S, true),
    stable(ids::TEAM, S, false),
    stable(ids::SANDBOX, S, false),
    stable(ids::OWNERS, S, false),
    stable(ids::WORKSPACE_FILES_NOTE, S, false),
    stable(ids::OUTPUT_FORMAT, S, false),
    stable(ids::REPLY_TAGS, S, false),
    stable(ids::MESSAGING, S, false),
    stable(ids::VOICE, S, false),
    stable(ids::REACTIONS, S, false),
    stable(ids::REASONING_FORMAT, S, false),
    stable(ids::PROJECT_CONTEXT, S, false),
    stable(ids::MEMORY_RECALL, S, false),
    stable(ids::SILENT_REPLIES, S, false),
    each_turn(ids::TIME, "the date and time zone"),
    per_turn(ids::CHANNEL_FORMATTING, "the channel"),
    per_turn(ids::CHANNEL_CAPABILITIES, "the channel"),
    per_turn(ids::GROUP_REPLY, "the chat kind"),
    each_turn(ids::EXTRA_CONTEXT, "the extra prompt"),
    per_turn(ids::DYNAMIC_FILES, "USER.md, HEARTBEAT.md, BOOTSTRAP.md"),
    stable(ids::SUBAGENTS, D, false),
    stable(ids::HEARTBEATS, D, false),
    per_turn(ids::RUNTIME, "the channel, chat and thinking level"),
    // The reminder closes the prompt (GoClaw's recency): it goes with the
    // turn, last (a few dozen tokens sent uncached each turn).
    CoreSpec { each_turn: true, ..stable(ids::RECENCY, D, false) },
    stable(ids::TOOL_PROTOCOL, D, false),
];

/// The id of the plugins' stable prefix in a layout (an overlay's text for
/// the cached part): where it goes in the stable zone.
pub const STABLE_PREFIX: &str = "stable_prefix";
/// The id of the plugins' dynamic suffix in a layout: where it goes in the
/// dynamic zone.
pub const DYNAMIC_SUFFIX: &str = "dynamic_suffix";

/// How many ids a layout can name (an anchor): the core sections and the
/// two plugin ends.
pub const ANCHORS: usize = CORE_SECTIONS.len() + 2;

/// The index of an anchor id (core ids, then the two ends).
pub fn anchor_index(id: &str) -> Option<usize> {
    match id {
        STABLE_PREFIX => Some(CORE_SECTIONS.len()),
        DYNAMIC_SUFFIX => Some(CORE_SECTIONS.len() + 1),
        _ => core_index(id),
    }
}

/// The anchor id at an index.
pub fn anchor_id(index: usize) -> &'static str {
    match index.checked_sub(CORE_SECTIONS.len()) {
        None => CORE_SECTIONS[index].id,
        Some(0) => STABLE_PREFIX,
        Some(_) => DYNAMIC_SUFFIX,
    }
}

/// The index of a core id in [`CORE_SECTIONS`].
pub fn core_index(id: &str) -> Option<usize> {
    CORE_SECTIONS.iter().position(|s| s.id == id)
}

/// The table row of a core id.
pub fn core_spec(id: &str) -> Option<&'static CoreSpec> {
    CORE_SECTIONS.iter().find(|s| s.id == id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stable_rows_precede_dynamic_rows_and_per_turn_rows_are_dynamic() {
        let first_dynamic = CORE_SECTIONS.iter().position(|s| s.zone == Zone::Dynamic).unwrap();
        assert!(CORE_SECTIONS[first_dynamic..].iter().all(|s| s.zone == Zone::Dynamic));
        assert_eq!(CORE_SECTIONS[first_dynamic].id, ids::TIME);
        assert!(CORE_SECTIONS
            .iter()
            .filter(|s| s.per_turn)
            .all(|s| s.zone == Zone::Dynamic && !s.turn_inputs.is_empty()));
    }

    #[test]
    fn the_tier_follows_the_zone_the_table_and_the_source() {
        let core = |id: &str, zone| Section {
            id: id.into(),
            source: Source::Core,
            zone,
            slot: Slot::new(id, Placement::At).unwrap(),
            priority: 0,
            modes: ModeSet::ALL,
            protected: false,
            body: String::new(),
        };
        let tier = |id: &str| core(id, Zone::Dynamic).tier();
        for id in [ids::TIME, ids::EXTRA_CONTEXT, ids::RECENCY] {
            assert_eq!(tier(id), Tier::Turn, "{id}");
        }
        for id in [ids::CHANNEL_FORMATTING, ids::GROUP_REPLY, ids::DYNAMIC_FILES, ids::RUNTIME, ids::SKILLS] {
            assert_eq!(tier(id), Tier::Session, "{id}: session inputs only");
        }
        assert_eq!(core(ids::RECENCY, Zone::Stable).tier(), Tier::Stable, "the zone comes first");
        let from_a_hook = Section { source: Source::Plugin("p".into()), ..core(ids::RUNTIME, Zone::Dynamic) };
        assert_eq!(from_a_hook.tier(), Tier::Turn, "contributed text may read anything of the turn");
        assert!(CORE_SECTIONS.iter().filter(|s| s.each_turn).all(|s| s.zone == Zone::Dynamic));
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
    fn anchors_are_the_core_ids_then_the_two_ends() {
        for i in 0..ANCHORS {
            assert_eq!(anchor_index(anchor_id(i)), Some(i));
        }
        assert_eq!(Slot::end(STABLE_PREFIX).anchor_id(), STABLE_PREFIX);
        assert!(Slot::new(STABLE_PREFIX, Placement::At).is_none(), "plugins cannot name the ends");
    }
}
