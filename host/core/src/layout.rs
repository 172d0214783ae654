//! Layouts: which sections a prompt has, in which order, under which
//! heading, in which modes and on which side of the cache boundary.
//!
//! A layout is data: an ordered list of entries, each a section id (a core
//! id, or one of the two plugin ends, [`STABLE_PREFIX`] and
//! [`DYNAMIC_SUFFIX`]), its heading (a label; empty for a section without
//! one), the modes it appears in and its zone. proem's default layout is
//! `presets/default.toml`; each preset file carries its system's layout;
//! `[layout]` in proem.toml reorders, renames, moves or drops entries.
//!
//! One id may have several entries when their modes do not overlap (the
//! skills list is "Skills" in full mode and "Pinned Skills" in minimal):
//! each mode sees at most one entry per id.
//!
//! Every entry names at least one mode and no id appears twice in a mode,
//! so a layout has at most four entries per id (168 in all), whatever a
//! proem.toml holds.
//!
//! The hash promise is checked here, when a layout is made: a section
//! whose inputs are per-turn ([`CoreSpec::per_turn`]) can never sit in the
//! stable zone. A section made from stable inputs may sit on either side.
//!
//! Slots order by the active layout's positions: a plugin section "after
//! safety" lands right after safety under every layout. An id a layout
//! leaves out still has a place: just before the first section after it
//! in the core table that the layout has (or, at the end, just after the
//! last one before it), so a plugin anchored there is never lost.

use crate::mode::{Mode, ModeSet};
use crate::section::{core_spec, Placement, Section, Slot, Source, Zone, CORE_SECTIONS};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::OnceLock;

pub use crate::section::{anchor_id, anchor_index, ANCHORS, DYNAMIC_SUFFIX, STABLE_PREFIX};

/// Longest heading accepted, in characters.
const MAX_HEADING_CHARS: usize = 120;

/// The heading variants each section may use, by the state that picks
/// them: `predefined` (a predefined agent), `group` (a group chat),
/// `silent` (silent replies allowed outside a group chat).
const VARIANTS: [(&str, &[&str]); 4] = [
    ("first_run", &["predefined"]),
    ("project_context", &["predefined"]),
    ("extra_context", &["group"]),
    ("group_reply", &["silent"]),
];

/// One entry of a layout file or of `[layout] sections`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct EntryConfig {
    /// A core section id, `stable_prefix` or `dynamic_suffix`.
    pub id: String,
    /// The heading; default: the default layout's, empty for the ends.
    pub heading: Option<String>,
    /// The modes it appears in; default: all four.
    pub modes: Option<Vec<Mode>>,
    /// `stable` or `dynamic`; default: dynamic for per-turn sections and
    /// the dynamic suffix, else stable.
    pub zone: Option<Zone>,
    /// Headings for a state of the section (see the README).
    #[serde(default)]
    pub variants: BTreeMap<String, String>,
}

/// `[layout]`: a whole layout (`sections`), or changes to the preset's (or
/// the default) layout.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct LayoutConfig {
    /// A whole layout, replacing the preset's or the default one.
    pub sections: Option<Vec<EntryConfig>>,
    /// The new order by id; ids not listed are left out.
    pub order: Option<Vec<String>>,
    /// Ids left out.
    pub drop: Vec<String>,
    /// New headings by id (`""`: no heading).
    pub headings: BTreeMap<String, String>,
    /// New zones by id.
    pub zones: BTreeMap<String, Zone>,
    /// New modes by id (for ids with one entry).
    pub modes: BTreeMap<String, Vec<Mode>>,
}

impl LayoutConfig {
    /// Whether anything is set.
    pub fn is_empty(&self) -> bool {
        self == &LayoutConfig::default()
    }
}

/// One entry of a layout, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The id.
    pub id: &'static str,
    /// The heading label ("" for none).
    pub heading: String,
    /// The modes it appears in.
    pub modes: ModeSet,
    /// Above or below the boundary.
    pub zone: Zone,
    /// Headings by state.
    pub variants: BTreeMap<String, String>,
}

/// What a layout says about one section in one mode.
#[derive(Debug, Clone, PartialEq)]
pub struct Placed {
    /// The heading label ("" for none).
    pub heading: String,
    /// Above or below the boundary.
    pub zone: Zone,
    /// The modes of its entry.
    pub modes: ModeSet,
    /// Headings by state.
    pub variants: BTreeMap<String, String>,
}

impl Placed {
    /// The heading for `variant` (the entry's own when it names none).
    pub fn heading(&self, variant: Option<&str>) -> &str {
        variant.and_then(|v| self.variants.get(v)).unwrap_or(&self.heading)
    }
}

/// Where a slot's anchor sits in a layout: (entry position, 0 = a left-out
/// id placed before it / 1 = the entry itself / 2 = placed after it, the
/// left-out id's table index).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rank(u16, u8, u16);

/// A layout as one mode sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ModeLayout {
    mode: Mode,
    /// By anchor index: the entry placed in this mode.
    placed: Vec<Option<Placed>>,
    /// By anchor index: whether the layout has it in any mode.
    listed: Vec<bool>,
    /// By anchor index: where it sorts.
    ranks: Vec<Rank>,
}

impl ModeLayout {
    /// The mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The entry of `id` in this mode, if the layout places it here.
    pub fn placed(&self, id: &str) -> Option<&Placed> {
        anchor_index(id).and_then(|i| self.placed[i].as_ref())
    }

    /// Whether `id` is placed in this mode.
    pub fn has(&self, id: &str) -> bool {
        self.placed(id).is_some()
    }

    /// Whether the layout has `id` at all (in this mode or another).
    pub fn lists(&self, id: &str) -> bool {
        anchor_index(id).is_some_and(|i| self.listed[i])
    }

    /// The zone `id` takes in this mode (its default zone when not placed).
    pub fn zone(&self, id: &str) -> Zone {
        match self.placed(id) {
            Some(p) => p.zone,
            None => core_spec(id).map(|s| s.zone).unwrap_or(Zone::Stable),
        }
    }

    /// The sort key of a slot: its anchor's rank, then the placement.
    pub fn slot_key(&self, slot: Slot) -> (Rank, Placement) {
        (self.ranks[slot.anchor_index()], slot.placement())
    }
}

/// A checked layout.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    entries: Vec<Entry>,
    /// By mode (`Mode as usize`).
    by_mode: Vec<ModeLayout>,
}

/// A layout that cannot be used: the `[layout]` key at fault and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayoutError {
    /// The key under `[layout]` (`sections`, `order`, `headings`, …).
    pub key: &'static str,
    /// What is wrong and how to fix it.
    pub message: String,
}

fn fail<T>(key: &'static str, message: String) -> Result<T, LayoutError> {
    Err(LayoutError { key, message })
}

/// The default layout's TOML (proem's own prompt), the file users read;
/// builds take the same entries from [`DEFAULT_ROWS`].
#[cfg(test)]
pub const DEFAULT_TOML: &str = include_str!("presets/default.toml");

impl Layout {
    /// proem's default layout.
    pub fn default_layout() -> &'static Layout {
        static DEFAULT: OnceLock<Layout> = OnceLock::new();
        DEFAULT
            .get_or_init(|| Layout::from_entries(default_entries(), "sections").expect("the default layout is valid"))
    }

    /// A layout from `config`: its `sections`, else `base` (a preset's),
    /// else the default layout's; then `order`, `drop`, `headings`, `zones`
    /// and `modes` applied.
    pub fn build(config: &LayoutConfig, base: Option<&[EntryConfig]>) -> Result<Layout, LayoutError> {
        let mut entries = match (&config.sections, base) {
            (Some(own), _) => Layout::from_entries(own, "sections")?.entries,
            (None, Some(base)) => Layout::from_entries(base, "sections")?.entries,
            (None, None) => Layout::default_layout().entries.clone(),
        };
        if let Some(order) = &config.order {
            entries = reorder(entries, order)?;
            check_rules(&entries, "order")?;
        }
        let mut dropped: Vec<&str> = Vec::new();
        for id in &config.drop {
            let id = known("drop", id)?;
            if dropped.contains(&id) {
                return fail("drop", format!("{id} is listed twice"));
            }
            dropped.push(id);
            entries.retain(|e| e.id != id);
        }
        check_rules(&entries, "drop")?;
        for (id, heading) in &config.headings {
            let id = known("headings", id)?;
            check_heading("headings", id, heading)?;
            let mut found = false;
            for e in entries.iter_mut().filter(|e| e.id == id) {
                e.heading = heading.clone();
                found = true;
            }
            if !found {
                return fail("headings", format!("{id} is not in the layout: add it to [layout] order first"));
            }
        }
        for (id, zone) in &config.zones {
            let id = known("zones", id)?;
            let mut found = false;
            for e in entries.iter_mut().filter(|e| e.id == id) {
                e.zone = *zone;
                found = true;
            }
            if !found {
                return fail("zones", format!("{id} is not in the layout: add it to [layout] order first"));
            }
        }
        check_rules(&entries, "zones")?;
        for (id, modes) in &config.modes {
            let id = known("modes", id)?;
            let mut of_id = entries.iter_mut().filter(|e| e.id == id);
            match (of_id.next(), of_id.next()) {
                (Some(_), None) if modes.is_empty() => {
                    return fail("modes", format!("{id} has no modes: give at least one, or drop it"))
                }
                (Some(e), None) => e.modes = mode_set(modes),
                (None, _) => {
                    return fail("modes", format!("{id} is not in the layout: add it to [layout] order first"))
                }
                (Some(_), Some(_)) => {
                    return fail(
                        "modes",
                        format!("{id} has one entry per group of modes here: give its entries in [layout] sections"),
                    )
                }
            }
        }
        Layout::checked(entries, "modes")
    }

    /// A layout made of `entries` (a layout file's or `[layout] sections`).
    pub fn from_entries(entries: &[EntryConfig], key: &'static str) -> Result<Layout, LayoutError> {
        let mut out = Vec::with_capacity(entries.len());
        for e in entries {
            let id = known(key, &e.id)?;
            let spec = core_spec(id);
            let heading = match &e.heading {
                Some(h) => h.clone(),
                None => default_heading(id),
            };
            check_heading(key, id, &heading)?;
            let allowed: &[&str] = VARIANTS.iter().find(|(v, _)| *v == id).map(|(_, v)| *v).unwrap_or(&[]);
            for (variant, heading) in &e.variants {
                if !allowed.contains(&variant.as_str()) {
                    let expected = if allowed.is_empty() { "none".to_string() } else { allowed.join(", ") };
                    return fail(key, format!("{id} has no heading variant {variant:?} (its variants: {expected})"));
                }
                check_heading(key, id, heading)?;
            }
            if e.modes.as_ref().is_some_and(|m| m.is_empty()) {
                return fail(key, format!("{id} has no modes: give at least one, or leave the entry out"));
            }
            let per_turn = spec.is_some_and(|s| s.per_turn) || id == DYNAMIC_SUFFIX;
            out.push(Entry {
                id,
                heading,
                modes: e.modes.as_deref().map(mode_set).unwrap_or(ModeSet::ALL),
                zone: e.zone.unwrap_or(if per_turn { Zone::Dynamic } else { Zone::Stable }),
                variants: e.variants.clone(),
            });
        }
        Layout::checked(out, key)
    }

    /// Checks the rules every layout keeps and computes each mode's view.
    fn checked(entries: Vec<Entry>, key: &'static str) -> Result<Layout, LayoutError> {
        check_rules(&entries, key)?;
        let by_mode = Mode::ALL.iter().map(|m| mode_layout(&entries, *m)).collect();
        Ok(Layout { entries, by_mode })
    }
}

/// The rules every layout keeps: the hash promise (per-turn sections
/// below the boundary, each plugin end in its zone), one entry per id and
/// mode, and Safety in every mode but none. `key` names the `[layout]`
/// key whose change is checked.
fn check_rules(entries: &[Entry], key: &'static str) -> Result<(), LayoutError> {
    for e in entries {
        check_zone(key, e)?;
    }
    for mode in Mode::ALL {
        let mut seen: Vec<&str> = Vec::new();
        for e in entries.iter().filter(|e| e.modes.contains(mode)) {
            if seen.contains(&e.id) {
                return fail(
                    key,
                    format!("{} appears twice in mode {mode}: give its entries modes that do not overlap", e.id),
                );
            }
            seen.push(e.id);
        }
        if mode != Mode::None && !seen.contains(&crate::section::ids::SAFETY) {
            return fail(
                    key,
                    format!("safety is not in mode {mode}: a layout may leave out any section but safety (in none mode it may go)"),
                );
        }
    }
    Ok(())
}

impl Layout {
    /// The layout as `mode` sees it.
    pub fn mode(&self, mode: Mode) -> &ModeLayout {
        &self.by_mode[mode as usize]
    }

    /// The entries in order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Whether any entry (in any mode) has `id`.
    pub fn has(&self, id: &str) -> bool {
        self.entries.iter().any(|e| e.id == id)
    }
}

impl Default for Layout {
    fn default() -> Self {
        Layout::default_layout().clone()
    }
}

/// The entries of a layout file: its `[layout] sections`.
#[cfg(test)]
pub fn layout_entries(toml_text: &str) -> Result<Vec<EntryConfig>, String> {
    #[derive(Deserialize, Serialize)]
    struct File {
        layout: LayoutConfig,
    }
    let file: File = toml::from_str(toml_text).map_err(|e| e.to_string())?;
    file.layout.sections.ok_or_else(|| "the file has no [layout] sections".to_string())
}

/// The entries of [`DEFAULT_TOML`], made once per process (the default
/// layout, its headings and the table order all read them) from
/// [`DEFAULT_ROWS`], the same entries written as Rust: parsing the TOML
/// took ~460 K instructions, 4% of a whole `proem build` process.
fn default_entries() -> &'static [EntryConfig] {
    static ENTRIES: OnceLock<Vec<EntryConfig>> = OnceLock::new();
    ENTRIES.get_or_init(|| DEFAULT_ROWS.iter().map(Row::entry).collect())
}

/// One entry of the default layout: id, heading, modes, zone, variants.
struct Row(
    &'static str,
    Option<&'static str>,
    Option<&'static [Mode]>,
    Option<Zone>,
    &'static [(&'static str, &'static str)],
);

impl Row {
    fn entry(&self) -> EntryConfig {
        let Row(id, heading, modes, zone, variants) = *self;
        EntryConfig {
            id: id.to_string(),
            heading: heading.map(str::to_string),
            modes: modes.map(<[Mode]>::to_vec),
            zone,
            variants: variants.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        }
    }
}

/// [`DEFAULT_TOML`]'s `[layout] sections`, row for row (the test
/// `the_default_rows_are_the_default_toml` holds them equal: a change to
/// the file is made here too).
const DEFAULT_ROWS: &[Row] = {
    use Mode as M;
    &[
        Row("identity", Some(""), Some(&[M::Full, M::Task, M::Minimal, M::None]), None, &[]),
        Row("first_run", Some("First Run"), Some(&[M::Full, M::Task, M::Minimal, M::None]), None, &[]),
        Row("persona", Some("Persona"), Some(&[M::Full, M::Task]), None, &[]),
        Row("identity_anchor", Some("Identity Guard"), Some(&[M::Full, M::Task, M::Minimal]), None, &[]),
        Row("self_evolution", Some("Self-Evolution"), Some(&[M::Full]), None, &[]),
        Row("tooling", Some("Tooling"), Some(&[M::Full, M::Task, M::Minimal, M::None]), None, &[]),
        Row("interaction_style", Some("Interaction Style"), Some(&[M::Full, M::Task]), None, &[]),
        Row("shell", Some("Shell"), Some(&[M::Full]), None, &[]),
        Row("long_running", Some("Long-Running Work"), Some(&[M::Full]), None, &[]),
        Row("tool_call_style", Some("Tool Call Style"), Some(&[M::Full]), None, &[]),
        Row("execution_bias", Some("Execution Bias"), Some(&[M::Full, M::Task]), None, &[]),
        Row("stable_prefix", None, None, None, &[]),
        Row("safety", Some("Safety"), Some(&[M::Full, M::Task, M::Minimal, M::None]), None, &[]),
        Row("skills", Some("Skills"), Some(&[M::Full, M::Task]), None, &[]),
        Row("skills", Some("Pinned Skills"), Some(&[M::Minimal, M::None]), None, &[]),
        Row("mcp_tools", Some("MCP Tools"), Some(&[M::Full, M::Task, M::None]), None, &[]),
        Row("workspace", Some("Workspace"), Some(&[M::Full, M::Task, M::Minimal, M::None]), None, &[]),
        Row("team", Some("Team"), Some(&[M::Full, M::Task, M::Minimal]), None, &[]),
        Row("sandbox", Some("Sandbox"), Some(&[M::Full, M::Task, M::Minimal]), None, &[]),
        Row("owners", Some("Owners"), Some(&[M::Full]), None, &[]),
        Row("output_format", Some("Output Format"), Some(&[M::Full, M::Task]), None, &[]),
        Row("voice", Some("Voice"), Some(&[M::Full, M::Task]), None, &[]),
        Row("reactions", Some("Reactions"), Some(&[M::Full, M::Task, M::Minimal]), None, &[]),
        Row(
            "project_context",
            Some("Project Context"),
            Some(&[M::Full, M::Task, M::Minimal]),
            None,
            &[("predefined", "Agent Configuration")],
        ),
        Row("memory_recall", Some("Memory"), Some(&[M::Full, M::Task, M::Minimal]), None, &[]),
        Row("silent_replies", Some("Silent Replies"), Some(&[M::Full, M::Task]), None, &[]),
        Row("time", Some("Date"), Some(&[M::Full, M::Task, M::Minimal]), Some(Zone::Dynamic), &[]),
        Row("channel_formatting", Some("Formatting"), Some(&[M::Full]), Some(Zone::Dynamic), &[]),
        Row("channel_capabilities", Some("Channel Capabilities"), Some(&[M::Full, M::Task]), Some(Zone::Dynamic), &[]),
        Row(
            "group_reply",
            Some("Group Replies"),
            Some(&[M::Full]),
            Some(Zone::Dynamic),
            &[("silent", "Silent Replies")],
        ),
        Row(
            "extra_context",
            Some("Additional Context"),
            Some(&[M::Full, M::Task, M::None]),
            Some(Zone::Dynamic),
            &[("group", "Group Chat Context")],
        ),
        Row("extra_context", Some("Subagent Context"), Some(&[M::Minimal]), Some(Zone::Dynamic), &[]),
        Row("dynamic_files", Some("Per-Turn Files"), Some(&[M::Full, M::Task, M::Minimal]), Some(Zone::Dynamic), &[]),
        Row("subagents", Some("Sub-Agents"), Some(&[M::Full]), Some(Zone::Dynamic), &[]),
        Row("runtime", Some("Runtime"), Some(&[M::Full, M::Task, M::Minimal, M::None]), Some(Zone::Dynamic), &[]),
        Row("recency", Some("Reminder"), Some(&[M::Full]), Some(Zone::Dynamic), &[]),
        Row(
            "tool_protocol",
            Some("Tool Call Protocol"),
            Some(&[M::Full, M::Task, M::Minimal, M::None]),
            Some(Zone::Dynamic),
            &[],
        ),
        Row("dynamic_suffix", None, None, None, &[]),
    ]
};

/// The heading an entry gets when it names none: the default layout's
/// first entry for that id ("" for the ends and ids it does not have).
fn default_heading(id: &str) -> String {
    let from_default = default_entries().iter().find(|e| e.id == id).map(|e| e.heading.clone().unwrap_or_default());
    from_default.unwrap_or_else(|| fallback_heading(id))
}

/// A heading for a core id the default layout does not have: its id in words.
fn fallback_heading(id: &str) -> String {
    if id == STABLE_PREFIX || id == DYNAMIC_SUFFIX {
        return String::new();
    }
    let words = id.replace('_', " ");
    let mut chars = words.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => words,
    }
}

/// The anchor id named `id`, or an error listing them.
fn known(key: &'static str, id: &str) -> Result<&'static str, LayoutError> {
    match anchor_index(id) {
        Some(i) => Ok(anchor_id(i)),
        None => {
            let all: Vec<&str> = (0..ANCHORS).map(anchor_id).collect();
            fail(key, format!("{:?} is not a section id (one of: {})", crate::text::one_line(id, 40), all.join(", ")))
        }
    }
}

/// A heading is one line of at most [`MAX_HEADING_CHARS`] printable
/// characters; one written with leading `#`s keeps its level, else it is a
/// `##` heading.
fn check_heading(key: &'static str, id: &str, heading: &str) -> Result<(), LayoutError> {
    let bad = heading.chars().count() > MAX_HEADING_CHARS
        || heading.chars().any(|c| c.is_control() || (crate::text::is_invisible(c) && c != ' '))
        || heading != heading.trim();
    if bad {
        return fail(
            key,
            format!(
                "the heading of {id} must be one line of at most {MAX_HEADING_CHARS} visible characters without \
                 leading or trailing spaces"
            ),
        );
    }
    if heading.starts_with('#') {
        let level = heading.chars().take_while(|c| *c == '#').count();
        if level > 6 || !heading[level..].starts_with(' ') || heading[level..].trim().is_empty() {
            return fail(key, format!("the heading of {id} starts with #: write \"# Title\" up to \"###### Title\""));
        }
    }
    Ok(())
}

/// The hash promise: per-turn sections below the boundary, and each end
/// in its own zone.
fn check_zone(key: &'static str, e: &Entry) -> Result<(), LayoutError> {
    if e.zone == Zone::Dynamic || e.id == STABLE_PREFIX {
        if e.id == STABLE_PREFIX && e.zone != Zone::Stable {
            return fail(key, "stable_prefix marks a place in the stable zone: it cannot be dynamic".into());
        }
        return Ok(());
    }
    if e.id == DYNAMIC_SUFFIX {
        return fail(key, "dynamic_suffix marks a place in the dynamic zone: it cannot be stable".into());
    }
    match core_spec(e.id) {
        Some(spec) if spec.per_turn => fail(
            key,
            format!(
                "{} is made from per-turn inputs ({}), so it cannot sit above the cache boundary: every turn would \
                 change the cached part. Keep it in the dynamic zone",
                e.id, spec.turn_inputs
            ),
        ),
        _ => Ok(()),
    }
}

fn mode_set(modes: &[Mode]) -> ModeSet {
    ModeSet::of(modes)
}

/// Reorders `entries` by `order` (ids); entries of ids not listed go.
fn reorder(entries: Vec<Entry>, order: &[String]) -> Result<Vec<Entry>, LayoutError> {
    let mut out = Vec::with_capacity(entries.len());
    let mut seen: Vec<&str> = Vec::new();
    for name in order {
        let id = known("order", name)?;
        if seen.contains(&id) {
            return fail("order", format!("{id} is listed twice"));
        }
        seen.push(id);
        let mut of_id: Vec<Entry> = entries.iter().filter(|e| e.id == id).cloned().collect();
        if of_id.is_empty() {
            // An id the base layout lacks joins with its defaults.
            let config =
                EntryConfig { id: id.to_string(), heading: None, modes: None, zone: None, variants: BTreeMap::new() };
            of_id = vec![default_entry(&config)?];
        }
        out.extend(of_id);
    }
    Ok(out)
}

/// An entry for `config.id` with every default (an id `order` adds that
/// the base layout lacks).
fn default_entry(config: &EntryConfig) -> Result<Entry, LayoutError> {
    let id = known("order", &config.id)?;
    let per_turn = core_spec(id).is_some_and(|s| s.per_turn) || id == DYNAMIC_SUFFIX;
    Ok(Entry {
        id,
        heading: default_heading(id),
        modes: ModeSet::ALL,
        zone: if per_turn { Zone::Dynamic } else { Zone::Stable },
        variants: BTreeMap::new(),
    })
}

/// The view of `entries` from `mode`: what is placed, and every anchor's rank.
fn mode_layout(entries: &[Entry], mode: Mode) -> ModeLayout {
    let mut placed: Vec<Option<Placed>> = vec![None; ANCHORS];
    let mut position: Vec<Option<u16>> = vec![None; ANCHORS];
    for (pos, e) in entries.iter().enumerate() {
        let i = anchor_index(e.id).expect("entries hold known ids");
        let pos = u16::try_from(pos).unwrap_or(u16::MAX);
        if e.modes.contains(mode) {
            // At most one entry per mode: it takes the id's position.
            placed[i] =
                Some(Placed { heading: e.heading.clone(), zone: e.zone, modes: e.modes, variants: e.variants.clone() });
            position[i] = Some(pos);
        } else if placed[i].is_none() && position[i].is_none() {
            // An id placed only in other modes keeps its first position.
            position[i] = Some(pos);
        }
    }
    let ranks = (0..ANCHORS).map(|i| rank_of(i, &position)).collect();
    let listed = position.iter().map(Option::is_some).collect();
    ModeLayout { mode, placed, listed, ranks }
}

/// The rank of anchor `i`: its entry's position, or, when the layout
/// leaves it out, just before the next anchor (in table order) the layout
/// has, else just after the previous one.
fn rank_of(i: usize, position: &[Option<u16>]) -> Rank {
    if let Some(pos) = position[i] {
        return Rank(pos, 1, 0);
    }
    let table = u16::try_from(i).unwrap_or(u16::MAX);
    let order = table_order();
    let at = order.iter().position(|&a| a == i).unwrap_or(0);
    if let Some(pos) = order[at..].iter().find_map(|&a| position[a]) {
        return Rank(pos, 0, table);
    }
    match order[..at].iter().rev().find_map(|&a| position[a]) {
        Some(pos) => Rank(pos, 2, table),
        None => Rank(0, 0, table),
    }
}

/// Anchor indexes in the order the fallback walks: the core table, with
/// the stable prefix after the last stable row of the default layout and
/// the dynamic suffix last.
fn table_order() -> &'static [usize] {
    static ORDER: OnceLock<Vec<usize>> = OnceLock::new();
    ORDER.get_or_init(|| {
        let mut order: Vec<usize> = default_entries().iter().filter_map(|e| anchor_index(&e.id)).collect();
        // Core ids the default layout leaves out, in table order, each
        // after the table row before it.
        for (i, spec) in CORE_SECTIONS.iter().enumerate() {
            if order.contains(&i) {
                continue;
            }
            let before = CORE_SECTIONS[..i].iter().rev().find_map(|s| {
                let a = crate::section::core_index(s.id)?;
                order.iter().position(|&o| o == a)
            });
            let at = before.map(|p| p + 1).unwrap_or(0);
            order.insert(at, crate::section::core_index(spec.id).expect("table id"));
        }
        for end in [STABLE_PREFIX, DYNAMIC_SUFFIX] {
            let i = anchor_index(end).expect("end id");
            if !order.contains(&i) {
                order.push(i);
            }
        }
        order
    })
}

/// The heading line of a label: `## label`, or the label itself when it
/// already starts with `#`.
pub fn heading_line(label: &str) -> String {
    if label.starts_with('#') {
        label.to_string()
    } else {
        format!("## {label}")
    }
}

/// Which heading a rendered core section asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heading {
    /// The layout entry's heading.
    Layout,
    /// The entry's heading for this state (`predefined`, `group`, …),
    /// else its own.
    Variant(&'static str),
    /// A heading the config names (`[sessions] subagent_heading`).
    Own(String),
}

/// A core section as rendered, before the layout places it: its id, the
/// heading it asks for, and its text without the heading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// A core id.
    pub id: &'static str,
    /// The heading it asks for.
    pub heading: Heading,
    /// The text under the heading.
    pub text: String,
}

impl Rendered {
    /// Text under the layout's heading.
    pub fn new(id: &'static str, text: impl Into<String>) -> Rendered {
        Rendered { id, heading: Heading::Layout, text: text.into() }
    }

    /// Text under the layout's heading for `variant`.
    pub fn variant(id: &'static str, variant: &'static str, text: impl Into<String>) -> Rendered {
        Rendered { id, heading: Heading::Variant(variant), text: text.into() }
    }
}

/// Places a rendered core section by `layout`: `None` when the layout
/// does not place it in its mode or its text is blank. The heading line
/// comes from the layout (`## label`, or the label as written when it
/// starts with `#`); a heading-less entry prints the text alone.
pub fn place(layout: &ModeLayout, rendered: Rendered) -> Option<Section> {
    let Rendered { id, heading, text } = rendered;
    let spec = core_spec(id).expect("core section ids are constants from the table");
    let placed = layout.placed(id)?;
    let text = text.trim_end();
    if text.trim().is_empty() {
        return None;
    }
    let label = match &heading {
        Heading::Layout => placed.heading.as_str(),
        Heading::Variant(v) => placed.heading(Some(v)),
        Heading::Own(h) => h.as_str(),
    };
    let body = if label.is_empty() { text.to_string() } else { format!("{}\n{text}", heading_line(label)) };
    Some(Section {
        id: id.to_string(),
        source: Source::Core,
        zone: placed.zone,
        slot: Slot::new(id, Placement::At).expect("id is in the table"),
        priority: 0,
        modes: placed.modes,
        protected: spec.protected,
        body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::section::ids;

    fn entry(id: &str) -> EntryConfig {
        EntryConfig { id: id.into(), heading: None, modes: None, zone: None, variants: BTreeMap::new() }
    }

    #[test]
    fn the_default_rows_are_the_default_toml() {
        let parsed = layout_entries(DEFAULT_TOML).expect("the default layout file parses");
        assert_eq!(
            default_entries(),
            parsed.as_slice(),
            "presets/default.toml and DEFAULT_ROWS (layout.rs) differ: a change to one is made to the other"
        );
    }

    #[test]
    fn the_default_layout_has_every_default_section_once_per_mode() {
        let layout = Layout::default_layout();
        for mode in Mode::ALL {
            let m = layout.mode(mode);
            assert!(m.has(ids::SAFETY) && m.has(ids::IDENTITY) && m.has(ids::TOOLING) && m.has(ids::WORKSPACE));
        }
        assert_eq!(layout.mode(Mode::Minimal).placed(ids::SKILLS).unwrap().heading, "Pinned Skills");
        assert_eq!(layout.mode(Mode::Full).placed(ids::SKILLS).unwrap().heading, "Skills");
        assert!(layout.mode(Mode::Full).placed(ids::TIME).is_some_and(|p| p.zone == Zone::Dynamic));
    }

    #[test]
    fn per_turn_sections_cannot_be_stable() {
        let mut time = entry("time");
        time.zone = Some(Zone::Stable);
        let err = Layout::from_entries(&[entry("safety"), time], "sections").unwrap_err();
        assert_eq!(err.key, "sections");
        assert!(err.message.contains("time is made from per-turn inputs"), "{}", err.message);
        // A stable section may go below the boundary.
        let mut skills = entry("skills");
        skills.zone = Some(Zone::Dynamic);
        assert!(Layout::from_entries(&[entry("safety"), skills], "sections").is_ok());
    }

    #[test]
    fn overrides_reorder_rename_and_drop() {
        let config = LayoutConfig {
            order: Some(vec!["safety".into(), "identity".into(), "time".into()]),
            headings: [("safety".to_string(), "Guardrails".to_string())].into(),
            ..LayoutConfig::default()
        };
        let layout = Layout::build(&config, None).unwrap();
        let ids: Vec<&str> = layout.entries().iter().map(|e| e.id).collect();
        assert_eq!(ids, ["safety", "identity", "time"]);
        assert_eq!(layout.mode(Mode::Full).placed("safety").unwrap().heading, "Guardrails");
        let bad = LayoutConfig { drop: vec!["safety".into()], ..LayoutConfig::default() };
        assert!(Layout::build(&bad, None).unwrap_err().message.contains("safety"));
        let unknown = LayoutConfig { order: Some(vec!["safty".into()]), ..LayoutConfig::default() };
        let err = Layout::build(&unknown, None).unwrap_err();
        assert!(err.key == "order" && err.message.contains("\"safty\" is not a section id"), "{err:?}");
    }

    #[test]
    fn left_out_anchors_keep_a_place_next_to_their_table_neighbours() {
        // A layout without persona: a slot anchored on persona sorts just
        // before the next table row the layout has (tooling here).
        let layout = Layout::from_entries(&[entry("identity"), entry("tooling"), entry("safety")], "sections").unwrap();
        let m = layout.mode(Mode::Full);
        let persona = m.slot_key(Slot::new(ids::PERSONA, Placement::After).unwrap());
        let identity = m.slot_key(Slot::new(ids::IDENTITY, Placement::After).unwrap());
        let tooling = m.slot_key(Slot::new(ids::TOOLING, Placement::Before).unwrap());
        assert!(identity < persona && persona < tooling);
        // The dynamic suffix, left out, goes after the last entry.
        let suffix = m.slot_key(Slot::end(DYNAMIC_SUFFIX));
        assert!(suffix > m.slot_key(Slot::new(ids::SAFETY, Placement::After).unwrap()));
    }

    #[test]
    fn one_id_per_mode() {
        let mut a = entry("skills");
        a.modes = Some(vec![Mode::Full, Mode::Task]);
        let mut b = entry("skills");
        b.modes = Some(vec![Mode::Task]);
        let err = Layout::from_entries(&[entry("safety"), a.clone(), b], "sections").unwrap_err();
        assert!(err.message.contains("skills appears twice in mode task"), "{}", err.message);
        let mut c = entry("skills");
        c.modes = Some(vec![Mode::Minimal, Mode::None]);
        assert!(Layout::from_entries(&[entry("safety"), a, c], "sections").is_ok());
    }

    #[test]
    fn slots_order_by_the_layouts_positions_then_placement() {
        let full = Layout::default_layout().mode(Mode::Full);
        let key = |id, placement| full.slot_key(Slot::new(id, placement).unwrap());
        assert!(key(ids::SAFETY, Placement::After) < key(ids::SKILLS, Placement::Before));
        assert!(key(ids::SKILLS, Placement::Before) < key(ids::SKILLS, Placement::At));
        assert!(Slot::new("no_such_section", Placement::At).is_none());
        // Under a layout that puts skills first, "after skills" comes first.
        let moved = Layout::from_entries(&[entry("skills"), entry("safety")], "sections").unwrap();
        let moved = moved.mode(Mode::Full);
        let after_skills = moved.slot_key(Slot::new(ids::SKILLS, Placement::After).unwrap());
        assert!(after_skills < moved.slot_key(Slot::new(ids::SAFETY, Placement::Before).unwrap()));
    }

    #[test]
    fn blank_texts_make_no_section_and_headings_come_from_the_layout() {
        let full = Layout::default_layout().mode(Mode::Full);
        assert!(place(full, Rendered::new(ids::SAFETY, " \n\t")).is_none());
        let s = place(full, Rendered::new(ids::SAFETY, "x\n\n")).unwrap();
        assert_eq!(s.body, "## Safety\nx");
        assert!(s.protected);
        assert_eq!(s.cut_class(), None);
        assert_eq!(place(full, Rendered::new(ids::IDENTITY, "You are x.")).unwrap().body, "You are x.");
        // Not in the mode: not placed.
        assert!(place(Layout::default_layout().mode(Mode::None), Rendered::new(ids::PERSONA, "x")).is_none());
    }

    #[test]
    fn headings_are_one_line_labels() {
        for bad in ["a\nb", " x", "####### deep", "#nospace", &"h".repeat(121)] {
            let mut e = entry("safety");
            e.heading = Some(bad.to_string());
            assert!(Layout::from_entries(&[e], "sections").is_err(), "{bad:?}");
        }
        assert_eq!(heading_line("# Project Context"), "# Project Context");
        assert_eq!(heading_line("Safety"), "## Safety");
    }
}
