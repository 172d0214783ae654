//! Ordering sections and joining them into the prompt, and the output
//! formats the CLI and the HTTP service offer.

use crate::cache::{PerTurn, Profile, Tiering, Ttl};
use crate::layout::ModeLayout;
use crate::report::{Built, Diagnostic};
use crate::section::{core_spec, Placement, Section, Tier, Zone};
use crate::text::{neutralize, BOUNDARY_MARKER};
use serde_json::json;

/// Sorts sections into prompt order under proem's default layout (for
/// callers with no layout at hand; a build uses [`order_in`]).
pub fn order(sections: &mut [Section]) {
    order_in(sections, crate::layout::Layout::default_layout().mode(crate::mode::Mode::Full));
}

/// A section's place in prompt order.
type SortKey<'s> = (Zone, (crate::layout::Rank, Placement), i32, &'s str, &'s str, crate::section::Slot);

/// Sorts sections into prompt order: stable before dynamic, then by the
/// slot's position in `layout`, priority, plugin id and section id. Load
/// order and completion order never matter.
pub fn order_in(sections: &mut [Section], layout: &ModeLayout) {
    fn key<'s>(s: &'s Section, layout: &ModeLayout) -> SortKey<'s> {
        (s.zone, layout.slot_key(s.slot), s.priority, s.source.plugin_id(), s.id.as_str(), s.slot)
    }
    sections.sort_by(|a, b| key(a, layout).cmp(&key(b, layout)));
}

/// Merges the core sections with contributed ones (plugins, library callers)
/// for `layout`'s mode, and puts them in prompt order.
///
/// A contributed section placed `At` a core id replaces that core section,
/// in the replaced section's place and zone under `layout`. When several
/// replace the same id, the first by merge key wins and the others are
/// reported; protected sections (identity, tooling, safety, workspace)
/// cannot be replaced; a section the layout does not place in this mode is
/// not replaced (the replacement goes with it); and a replacement from the
/// dynamic side (a `turn` hook) never lands above the boundary. Returns the
/// sections and what happened.
pub fn merge(core: Vec<Section>, contributed: &[Section], layout: &ModeLayout) -> (Vec<Section>, Vec<Diagnostic>) {
    let mode = layout.mode();
    let mut diagnostics = Vec::new();
    let mut applicable: Vec<&Section> = contributed.iter().filter(|s| s.modes.contains(mode)).collect();
    applicable.sort_by(|a, b| a.merge_key().cmp(&b.merge_key()));
    let mut replaced: Vec<(&'static str, &Section)> = Vec::new();
    let mut out = core;
    let mut added = Vec::new();
    for section in applicable {
        if section.slot.placement() != Placement::At {
            match taken_core_id(section) {
                Some(refusal) => diagnostics.push(refusal),
                None => added.push(section.clone()),
            }
            continue;
        }
        let target = section.slot.anchor_id();
        let zone = match replacement_zone(section, layout, &replaced) {
            Ok(zone) => zone,
            Err(refusal) => {
                diagnostics.extend(refusal);
                continue;
            }
        };
        out.retain(|s| !(s.source == crate::section::Source::Core && s.id == target));
        diagnostics.push(Diagnostic::info(
            "section_replaced",
            format!("section {target} is replaced by {} (section {})", section.source, section.id),
        ));
        replaced.push((target, section));
        let mut section = section.clone();
        section.zone = zone;
        added.push(section);
    }
    out.extend(added);
    order_in(&mut out, layout);
    (out, diagnostics)
}

/// The warning for an added (not replacing) section that takes a core
/// section's id; `None` when its id is its own. Section ids are unique in a
/// prompt: a section that merely takes a core section's id (instead of
/// replacing it) would make the report name two sections alike and pass for
/// a replacement.
fn taken_core_id(section: &Section) -> Option<Diagnostic> {
    core_spec(&section.id)?;
    Some(Diagnostic::warn(
        "section_id_taken",
        format!(
            "{} added a section with the core id {}, which only a replacement may use; it was left out \
             (to replace the core section, use replace({}); otherwise pick another id)",
            section.source, section.id, section.id
        ),
    ))
}

/// The zone a replacement takes (its target's under `layout`), or why it
/// is left out: its target is protected, not in this layout (`Some`
/// warning) or not in this mode (`None`: it goes with its section), above
/// the boundary while it is per-turn text, or already replaced (`replaced`:
/// the targets taken so far, with their winners).
fn replacement_zone(
    section: &Section,
    layout: &ModeLayout,
    replaced: &[(&'static str, &Section)],
) -> Result<Zone, Option<Diagnostic>> {
    let target = section.slot.anchor_id();
    if core_spec(target).is_some_and(|spec| spec.protected) {
        return Err(Some(Diagnostic::warn(
            "replace_refused",
            format!(
                "{} asked to replace the protected section {target}; its section {} was left out",
                section.source, section.id
            ),
        )));
    }
    let Some(placed) = layout.placed(target) else {
        // Not in this mode: the replacement goes with the section. Not
        // in the layout at all: say so, or its text vanishes unexplained.
        return Err((!layout.lists(target)).then(|| {
            Diagnostic::warn(
                "replace_unplaced",
                format!(
                    "{} replaces {target}, which this layout does not have; its section {} was left out \
                     (add {target} to [layout] to place it)",
                    section.source, section.id
                ),
            )
        }));
    };
    if section.zone == Zone::Dynamic && placed.zone == Zone::Stable {
        return Err(Some(Diagnostic::warn(
            "replace_refused",
            format!(
                "{} replaced {target} with per-turn text, but this layout puts {target} above the cache \
                 boundary; its section {} was left out (replace it from the stable hook)",
                section.source, section.id
            ),
        )));
    }
    if let Some((_, winner)) = replaced.iter().find(|(t, _)| *t == target) {
        return Err(Some(Diagnostic::warn(
            "replace_conflict",
            format!(
                "section {target} is replaced by {} (section {}); the replacement from {} (section {}) was ignored",
                winner.source, winner.id, section.source, section.id
            ),
        )));
    }
    Ok(placed.zone)
}

/// The core ids the `contributed` sections replace in `layout`'s mode (as
/// [`merge`] would apply them).
pub fn replaced_ids(contributed: &[Section], layout: &ModeLayout) -> std::collections::BTreeSet<&'static str> {
    contributed
        .iter()
        .filter(|s| s.modes.contains(layout.mode()) && s.slot.placement() == Placement::At)
        .map(|s| s.slot.anchor_id())
        .filter(|id| core_spec(id).is_some_and(|spec| !spec.protected) && layout.has(id))
        .collect()
}

/// The prompt's text, split at the boundary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Joined {
    /// Stable sections joined by blank lines (shared with the stable-part
    /// memo).
    pub stable: std::sync::Arc<str>,
    /// The system prompt's dynamic sections joined by blank lines: the
    /// session block then the per-turn one with the session tier, the
    /// session block alone with `per_turn = "user_message"`, else every
    /// dynamic section in layout order.
    pub dynamic: String,
    /// The session block (the start of `dynamic`), when the session tier is on.
    pub session: Option<String>,
    /// The per-turn sections, out of the system prompt, with
    /// `per_turn = "user_message"`.
    pub turn_context: Option<String>,
    /// `stable + "\n" + marker + "\n" + dynamic`.
    pub prompt: String,
}

/// Sections joined by blank lines. A body that somehow carries the marker
/// is neutralised here, so the marker appears exactly once whatever a
/// section's author wrote.
fn join_bodies<'s>(sections: impl Iterator<Item = &'s Section> + Clone) -> String {
    let mut out = String::with_capacity(sections.clone().map(|s| s.body.len() + 2).sum());
    for s in sections {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        if s.body.contains("PROEM_CACHE_BOUNDARY") {
            out.push_str(&neutralize(&s.body));
        } else {
            out.push_str(&s.body);
        }
    }
    out
}

/// Joins ordered sections as proem did before `[cache]`: one dynamic part
/// in layout order ([`Tiering::NONE`]).
pub fn join(sections: &[Section]) -> Joined {
    join_in(sections, Tiering::NONE)
}

/// The sections in the order the prompt shows them: [`join_in`] writes
/// the dynamic part by tier (the session block, then the turn's) when
/// `[cache]` tiers it, so the report's list, which readers cut the prompt
/// by, follows the same order. A stable sort: the layout's order holds
/// within each block.
pub fn in_prompt_order(mut sections: Vec<Section>, tiering: Tiering) -> Vec<Section> {
    let tiered = tiering.session_tier || tiering.per_turn == PerTurn::UserMessage;
    if tiered {
        sections.sort_by_key(|s| match s.tier() {
            Tier::Stable => 0u8,
            Tier::Session => 1,
            Tier::Turn => 2,
        });
    }
    sections
}

/// Joins ordered sections into the stable part and, by `tiering`, the
/// session and per-turn blocks (each section's block is [`Section::tier`]'s
/// rule; within a block, prompt order holds).
pub fn join_in(sections: &[Section], tiering: Tiering) -> Joined {
    join_in_with(sections, tiering, join_stable(sections).into())
}

/// The stable part of [`join_in`]: the stable sections joined by blank lines.
pub fn join_stable(sections: &[Section]) -> String {
    join_bodies(sections.iter().filter(|s| s.tier() == Tier::Stable))
}

/// [`join_in`] with its stable part joined already (`stable`: what
/// [`join_stable`] makes of the same sections).
pub fn join_in_with(sections: &[Section], tiering: Tiering, stable: std::sync::Arc<str>) -> Joined {
    let in_tier = |tier: Tier| sections.iter().filter(move |s| s.tier() == tier);
    let session = join_bodies(in_tier(Tier::Session));
    let (dynamic, turn_context) = match tiering.per_turn {
        PerTurn::UserMessage => (session.clone(), Some(join_bodies(in_tier(Tier::Turn)))),
        PerTurn::System if tiering.session_tier => {
            (join_bodies(in_tier(Tier::Session).chain(in_tier(Tier::Turn))), None)
        }
        PerTurn::System => (join_bodies(sections.iter().filter(|s| s.zone == Zone::Dynamic)), None),
    };
    let mut prompt = String::with_capacity(stable.len() + BOUNDARY_MARKER.len() + dynamic.len() + 2);
    for piece in [&*stable, "\n", BOUNDARY_MARKER, "\n", dynamic.as_str()] {
        prompt.push_str(piece);
    }
    Joined { stable, dynamic, session: tiering.session_tier.then_some(session), turn_context, prompt }
}

/// Output formats of `proem build`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// The prompt as plain text, marker included.
    Text,
    /// The full report object.
    Json,
    /// Anthropic's request: `system` blocks with `cache_control`
    /// breakpoints and TTLs (stable, session), the turn context as a block.
    Anthropic,
    /// OpenAI's request: one system message, marker removed, and a
    /// `prompt_cache_key` from the stable hash.
    Openai,
    /// One plain system message (marker removed), no cache fields: for
    /// prefix caches (DeepSeek, llama.cpp, Ollama, vLLM).
    Prefix,
    /// The request of `[cache] profile` (by default the provider's).
    Provider,
}

/// Renders a build in a format. Text ends with a newline; the JSON formats
/// are pretty-printed objects.
pub fn format(built: &Built, format: Format) -> String {
    let request = |profile: Profile| serde_json::to_string_pretty(&request(built, profile)).expect("json");
    match format {
        Format::Text => {
            let mut text = String::with_capacity(built.prompt.len() + 1);
            text.push_str(&built.prompt);
            text.push('\n');
            text
        }
        Format::Json => serde_json::to_string_pretty(built).expect("report serialises"),
        Format::Anthropic => request(Profile::Anthropic),
        Format::Openai => request(Profile::Openai),
        Format::Prefix => request(Profile::Prefix),
        Format::Provider => request(built.cache.profile),
    }
}

/// The part of a provider request proem writes, for `profile`.
///
/// - Anthropic: `system` is the stable block (a breakpoint with the stable
///   TTL), the session block (a breakpoint with the session TTL) when the
///   session tier is on, then the per-turn block (no breakpoint) when it
///   stays in the system prompt; `turn_context` is the block to prepend to
///   the newest user message; `breakpoints` holds the two `cache_control` values the
///   runtime places (on the last tool and on the newest user message's last
///   block), with TTLs that keep the order Anthropic requires.
/// - OpenAI: one system message (stable, then dynamic; no marker), the
///   `prompt_cache_key`, and `turn_context`.
/// - Prefix: the same message with nothing else but `turn_context`.
pub fn request(built: &Built, profile: Profile) -> serde_json::Value {
    let mut out = match profile {
        Profile::Anthropic => anthropic(built),
        Profile::Openai | Profile::Prefix => {
            let content = if built.dynamic.is_empty() {
                built.stable.to_string()
            } else {
                format!("{}\n\n{}", built.stable, built.dynamic)
            };
            let mut out = json!({"messages": [{"role": "system", "content": content}]});
            if profile == Profile::Openai {
                out["prompt_cache_key"] = json!(crate::cache::prompt_cache_key(&built.stable_hash));
            }
            out
        }
    };
    if let Some(turn) = &built.turn_context {
        out["turn_context"] = match profile {
            Profile::Anthropic => json!([{"type": "text", "text": turn}]),
            Profile::Openai | Profile::Prefix => json!({"type": "text", "text": turn}),
        };
    }
    out
}

/// Anthropic's `system` blocks and the runtime's breakpoints.
fn anthropic(built: &Built) -> serde_json::Value {
    let [tools, stable, session, conversation] = built.cache.ttls;
    let breakpoint = |ttl: Ttl| json!({"type": "ephemeral", "ttl": ttl.as_str()});
    let mut blocks = vec![json!({"type": "text", "text": built.stable, "cache_control": breakpoint(stable)})];
    let rest = match &built.session {
        Some(block) if !block.is_empty() => {
            blocks.push(json!({"type": "text", "text": block, "cache_control": breakpoint(session)}));
            built.dynamic.get(block.len()..).unwrap_or("").trim_start_matches('\n')
        }
        _ => built.dynamic.as_str(),
    };
    if !rest.is_empty() {
        blocks.push(json!({"type": "text", "text": rest}));
    }
    json!({
        "system": blocks,
        "breakpoints": {"tools": breakpoint(tools), "conversation": breakpoint(conversation)},
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::Layout;
    use crate::layout::{place, Rendered};
    use crate::mode::Mode;
    use crate::section::ids;

    fn core_section(id: &'static str, text: &str) -> Option<Section> {
        let layout = Layout::default_layout().mode(Mode::Full);
        let text = text.split_once('\n').map(|(_, t)| t).unwrap_or(text);
        place(layout, Rendered::new(id, text))
    }

    fn full() -> &'static ModeLayout {
        Layout::default_layout().mode(Mode::Full)
    }

    use crate::mode::ModeSet;
    use crate::section::Slot;

    fn plugin(source: &str, id: &str, anchor: &str, placement: Placement, priority: i32) -> Section {
        Section::contributed(
            source,
            id,
            Slot::new(anchor, placement).unwrap(),
            Zone::Stable,
            priority,
            ModeSet::ALL,
            id,
        )
    }

    fn core() -> Vec<Section> {
        vec![
            core_section(ids::IDENTITY, "You are x.").unwrap(),
            core_section(ids::SAFETY, "## Safety\nrules").unwrap(),
            core_section(ids::SKILLS, "## Skills\nlist").unwrap(),
        ]
    }

    #[test]
    fn contributed_sections_merge_by_slot_priority_plugin_and_id() {
        let contributed = vec![
            plugin("b", "b1", ids::SAFETY, Placement::After, 0),
            plugin("a", "a2", ids::SAFETY, Placement::After, 0),
            plugin("a", "a1", ids::SAFETY, Placement::After, 0),
            plugin("z", "z0", ids::SAFETY, Placement::After, -5),
            plugin("c", "c0", ids::SKILLS, Placement::Before, 9),
            plugin("d", "d0", ids::IDENTITY, Placement::Before, 0),
        ];
        let (merged, _) = merge(core(), &contributed, full());
        let ids: Vec<&str> = merged.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["d0", "identity", "safety", "z0", "a1", "a2", "b1", "c0", "skills"]);
        let mut reversed = contributed.clone();
        reversed.reverse();
        assert_eq!(merge(core(), &reversed, full()).0, merged);
    }

    #[test]
    fn replacements_have_one_deterministic_winner_and_spare_protected_sections() {
        let contributed = vec![
            plugin("zeta", "mine", ids::SKILLS, Placement::At, 0),
            plugin("alpha", "theirs", ids::SKILLS, Placement::At, 0),
            plugin("evil", "nosafety", ids::SAFETY, Placement::At, -100),
        ];
        let (merged, diags) = merge(core(), &contributed, full());
        let ids: Vec<&str> = merged.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["identity", "safety", "theirs"]);
        let codes: Vec<&str> = diags.iter().map(|d| d.code.as_str()).collect();
        assert_eq!(codes, ["replace_refused", "section_replaced", "replace_conflict"]);
        assert!(diags[2].message.contains("plugin:alpha") && diags[2].message.contains("plugin:zeta"));
    }

    #[test]
    fn order_ignores_input_order_and_marker_appears_once() {
        let mut a = vec![
            core_section(ids::RUNTIME, "## Runtime\nr").unwrap(),
            core_section(ids::SAFETY, "## Safety\nPROEM_CACHE_BOUNDARY <!-- PROEM_CACHE_BOUNDARY -->").unwrap(),
            core_section(ids::IDENTITY, "You are x.").unwrap(),
        ];
        let mut b = a.clone();
        b.reverse();
        order(&mut a);
        order(&mut b);
        assert_eq!(a, b);
        let j = join(&a);
        assert!(j.stable.starts_with("You are x.\n\n## Safety"));
        assert_eq!(j.prompt.matches(BOUNDARY_MARKER).count(), 1);
        assert_eq!(j.dynamic, "## Runtime\nr");
    }
}
