//! What hooks return: sections, the stable prefix and dynamic suffix, and files.

use crate::context::Mode;

/// Where a section goes, relative to a core section id (`identity`,
/// `persona`, `tooling`, `safety`, `skills`, …; see proem's README).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Slot {
    /// Just before that section.
    Before(String),
    /// Just after that section.
    After(String),
    /// In its place (protected sections cannot be replaced).
    Replace(String),
}

/// A section a plugin contributes. Its side of the prompt-cache boundary is
/// its hook's: from [`crate::StableHook`] above, from [`crate::TurnHook`] below.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// The plugin's own id for it: lowercase letters, digits, `_`, `-`, `.`,
    /// and not a core section's id (use [`Section::replace`] for those).
    pub id: String,
    /// Where it goes.
    pub slot: Slot,
    /// Lower first among sections in the same slot (default 0).
    pub priority: i32,
    /// The modes it appears in; empty means every mode.
    pub modes: Vec<Mode>,
    /// Its text, heading included (e.g. `## Hardware Access\n…`).
    pub body: String,
    /// A token budget hint: proem keeps the head of a longer body up to this
    /// many tokens and reports the section as truncated.
    pub max_tokens: Option<u32>,
}

impl Section {
    fn new(id: &str, slot: Slot, body: impl Into<String>) -> Section {
        Section { id: id.to_string(), slot, priority: 0, modes: Vec::new(), body: body.into(), max_tokens: None }
    }

    /// A section placed just after the core section `anchor`.
    pub fn after(anchor: &str, id: &str, body: impl Into<String>) -> Section {
        Section::new(id, Slot::After(anchor.to_string()), body)
    }

    /// A section placed just before the core section `anchor`.
    pub fn before(anchor: &str, id: &str, body: impl Into<String>) -> Section {
        Section::new(id, Slot::Before(anchor.to_string()), body)
    }

    /// A section that takes the place of the core section `target` (a stable
    /// hook replaces sections above the boundary, a turn hook those below;
    /// an empty body removes the section).
    pub fn replace(target: &str, body: impl Into<String>) -> Section {
        Section::new(target, Slot::Replace(target.to_string()), body)
    }

    /// Caps the section at `tokens` (see [`Section::max_tokens`]).
    pub fn max_tokens(mut self, tokens: u32) -> Section {
        self.max_tokens = Some(tokens);
        self
    }

    /// Sets the priority (lower first within a slot).
    pub fn priority(mut self, priority: i32) -> Section {
        self.priority = priority;
        self
    }

    /// Limits the section to these modes.
    pub fn modes(mut self, modes: &[Mode]) -> Section {
        self.modes = modes.to_vec();
        self
    }
}

/// What [`crate::StableHook::stable`] returns: everything lands above the
/// prompt-cache boundary.
///
/// ```
/// use proem_sdk::{Section, StableOutput};
/// let out = StableOutput::default()
///     .section(Section::after("tooling", "lab", "## Lab\nThe bench supply is 5 V."))
///     .replace("interaction_style", "## Interaction Style\nBe brief.")
///     .prefix("## Contract\nVerify before you claim success.");
/// assert_eq!(out.sections.len(), 2);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StableOutput {
    /// Sections to add, or core sections (above the boundary) to replace.
    pub sections: Vec<Section>,
    /// Text for the stable part (a provider's contract), where the layout's
    /// `stable_prefix` is (proem's own layout: after the execution
    /// guidance, before Safety); the same text from two plugins appears once.
    pub prefix: Option<String>,
}

/// What [`crate::TurnHook::turn`] returns: everything lands below the
/// prompt-cache boundary.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TurnOutput {
    /// Sections to add, or core sections (below the boundary) to replace.
    pub sections: Vec<Section>,
    /// Text at the very end of the dynamic part.
    pub suffix: Option<String>,
}

impl StableOutput {
    /// Adds a section.
    pub fn section(mut self, section: Section) -> StableOutput {
        self.sections.push(section);
        self
    }
    /// Replaces the core section `id` (above the boundary) with `body`.
    pub fn replace(self, id: &str, body: impl Into<String>) -> StableOutput {
        self.section(Section::replace(id, body))
    }
    /// Sets the prefix.
    pub fn prefix(mut self, text: impl Into<String>) -> StableOutput {
        self.prefix = Some(text.into());
        self
    }
}

impl TurnOutput {
    /// Adds a section.
    pub fn section(mut self, section: Section) -> TurnOutput {
        self.sections.push(section);
        self
    }
    /// Replaces the core section `id` (below the boundary: `time`,
    /// `channel_formatting`, `runtime`, …) with `body`.
    pub fn replace(self, id: &str, body: impl Into<String>) -> TurnOutput {
        self.section(Section::replace(id, body))
    }
    /// Sets the suffix.
    pub fn suffix(mut self, text: impl Into<String>) -> TurnOutput {
        self.suffix = Some(text.into());
        self
    }
}

impl From<Vec<Section>> for StableOutput {
    fn from(sections: Vec<Section>) -> StableOutput {
        StableOutput { sections, prefix: None }
    }
}

impl From<Vec<Section>> for TurnOutput {
    fn from(sections: Vec<Section>) -> TurnOutput {
        TurnOutput { sections, suffix: None }
    }
}
