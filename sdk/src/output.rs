//! What hooks return: sections, overlays and files.

use crate::context::Mode;

/// Which side of the prompt-cache boundary a section goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Zone {
    /// Above the boundary: must be the same every turn of a session.
    Stable,
    /// Below the boundary: may change every turn.
    Dynamic,
}

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

/// A section a plugin contributes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// The plugin's own id for it: lowercase letters, digits, `_`, `-`, `.`.
    pub id: String,
    /// Where it goes.
    pub slot: Slot,
    /// Above or below the cache boundary.
    pub zone: Zone,
    /// Lower first among sections in the same slot (default 0).
    pub priority: i32,
    /// The modes it appears in; empty means every mode.
    pub modes: Vec<Mode>,
    /// Its text, heading included (e.g. `## Hardware Access\n…`).
    pub body: String,
}

impl Section {
    fn new(id: &str, slot: Slot, body: impl Into<String>) -> Section {
        Section { id: id.to_string(), slot, zone: Zone::Stable, priority: 0, modes: Vec::new(), body: body.into() }
    }

    /// A stable section placed just after the core section `anchor`.
    pub fn after(anchor: &str, id: &str, body: impl Into<String>) -> Section {
        Section::new(id, Slot::After(anchor.to_string()), body)
    }

    /// A stable section placed just before the core section `anchor`.
    pub fn before(anchor: &str, id: &str, body: impl Into<String>) -> Section {
        Section::new(id, Slot::Before(anchor.to_string()), body)
    }

    /// A section that takes the place of the core section `target`, in its zone.
    pub fn replace(target: &str, body: impl Into<String>) -> Section {
        Section::new(target, Slot::Replace(target.to_string()), body)
    }

    /// Puts the section below the cache boundary.
    pub fn dynamic(mut self) -> Section {
        self.zone = Zone::Dynamic;
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

/// A provider overlay: replacements by section id, a block above the cache
/// boundary and a block below it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overlay {
    /// (section id, new body) pairs. An empty body removes the section.
    pub replacements: Vec<(String, String)>,
    /// Text added at the top of the stable part.
    pub stable_prefix: Option<String>,
    /// Text added at the end of the dynamic part.
    pub dynamic_suffix: Option<String>,
}

impl Overlay {
    /// Replaces the section `id` with `body`.
    pub fn replace(mut self, id: &str, body: impl Into<String>) -> Overlay {
        self.replacements.push((id.to_string(), body.into()));
        self
    }

    /// Sets the stable prefix.
    pub fn stable_prefix(mut self, text: impl Into<String>) -> Overlay {
        self.stable_prefix = Some(text.into());
        self
    }

    /// Sets the dynamic suffix.
    pub fn dynamic_suffix(mut self, text: impl Into<String>) -> Overlay {
        self.dynamic_suffix = Some(text.into());
        self
    }
}

/// A bootstrap file as `agent:bootstrap` hooks see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    /// Workspace-relative name (`SOUL.md`, `AGENTS.md`, …).
    pub name: String,
    /// Its text; `None` when the file is missing.
    pub content: Option<String>,
}

impl File {
    /// A file with content.
    pub fn new(name: &str, content: impl Into<String>) -> File {
        File { name: name.to_string(), content: Some(content.into()) }
    }
}
