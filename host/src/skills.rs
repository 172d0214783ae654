//! Skills: `skills/*/SKILL.md` in the workspace, rendered as escaped XML.
//!
//! Three forms, chosen by the budget stage: full (name, description,
//! location), compact (name and location), and a count-limited list; with no
//! room for any skill, a one-paragraph hint says where to find them.
//!
//! Loading is three steps so two threads can share the middle one: list the
//! [`folders`], [`read`] each, [`collect`] the results (sorted, deduplicated).

use crate::report::Diagnostic;
use crate::text::{front_matter_fields, one_line, sort_dedup, split_front_matter, xml_escape, FrontMatter, SameName};
use crate::workspace::{Unavailable, Workspace};

/// The folder skills are read from.
pub const SKILLS_DIR: &str = "skills";
/// Largest SKILL.md read.
const MAX_SKILL_BYTES: usize = 256 * 1024;
/// Longest description kept.
const MAX_DESCRIPTION_CHARS: usize = 400;

/// One skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// From front matter `name`, else the folder name.
    pub name: String,
    /// From front matter `description`.
    pub description: String,
    /// Workspace-relative path of its SKILL.md.
    pub location: String,
}

/// How skills are rendered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkillsForm {
    /// Name, description and location.
    Full,
    /// Name and location only.
    Compact,
}

/// The skill folders, sorted by name.
pub fn folders(ws: &Workspace) -> Vec<String> {
    ws.subdirs(SKILLS_DIR)
}

/// What reading one skill folder gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Read {
    /// A skill.
    Skill(Skill),
    /// No SKILL.md, or the skill opts out of model invocation.
    Nothing,
    /// The SKILL.md could not be read (the diagnostic says why).
    Skipped(Diagnostic),
}

/// Reads `skills/<dir>/SKILL.md`.
pub fn read(ws: &Workspace, dir: &str) -> Read {
    let location = format!("{SKILLS_DIR}/{dir}/SKILL.md");
    let text = match ws.read_text(&location, MAX_SKILL_BYTES) {
        Ok(f) => f.text,
        Err(Unavailable::Missing) => return Read::Nothing,
        Err(why) => {
            return Read::Skipped(Diagnostic::warn(
                "skill_unreadable",
                format!("{location}: {}; skill skipped", why.describe()),
            ))
        }
    };
    let fields = match split_front_matter(&text) {
        FrontMatter::Found { yaml, .. } => front_matter_fields(yaml),
        _ => Vec::new(),
    };
    let field = |k: &str| fields.iter().find(|(key, _)| key == k).map(|(_, v)| v.as_str());
    if matches!(field("disable-model-invocation").or(field("disable_model_invocation")), Some("true")) {
        return Read::Nothing;
    }
    let name = one_line(field("name").unwrap_or(dir), 80);
    let name = if name.is_empty() { one_line(dir, 80) } else { name };
    Read::Skill(Skill {
        name,
        description: one_line(field("description").unwrap_or(""), MAX_DESCRIPTION_CHARS),
        location: one_line(&location, 200),
    })
}

/// The skills of `read` (in folder order), sorted by name (ignoring case)
/// then location, names taken twice dropped; diagnostics in folder order.
pub fn collect(read: Vec<Read>, diagnostics: &mut Vec<Diagnostic>) -> Vec<Skill> {
    let mut skills = Vec::with_capacity(read.len());
    for r in read {
        match r {
            Read::Skill(s) => skills.push(s),
            Read::Nothing => {}
            Read::Skipped(d) => diagnostics.push(d),
        }
    }
    let (skills, dropped) = sort_dedup(skills, |s| &s.name, |a, b| a.location.cmp(&b.location), SameName::IgnoringCase);
    if !dropped.is_empty() {
        diagnostics.push(Diagnostic::warn(
            "skill_duplicate",
            format!(
                "{} skill(s) reuse a name already taken ignoring case ({}); the first by location is kept",
                dropped.len(),
                dropped.join(", ")
            ),
        ));
    }
    skills
}

/// Renders the skills section body: the first `count` skills in `form`.
pub fn render(skills: &[Skill], form: SkillsForm, count: usize) -> String {
    let total = skills.len();
    if total == 0 {
        return String::new();
    }
    let shown = &skills[..count.min(total)];
    let mut out = String::from("## Skills\n");
    if shown.is_empty() {
        out.push_str(&format!(
            "{total} skills are installed under {SKILLS_DIR}/<name>/SKILL.md, but none fit in this prompt. \
             When a task may need one, list the {SKILLS_DIR}/ folder and read only the SKILL.md whose name matches the task."
        ));
        return out;
    }
    match form {
        SkillsForm::Full => out.push_str(
            "Before you reply, scan the skills below. If exactly one clearly fits the task, read its SKILL.md \
             (at its location) and follow it; if several fit, pick the most specific; if none fits, read none. \
             Read at most one skill up front, and never invent a skill path.\n",
        ),
        SkillsForm::Compact => out.push_str(
            "Skills are listed by name only (the budget left no room for descriptions). If a name matches the task, \
             read that SKILL.md and follow it; read at most one up front.\n",
        ),
    }
    if shown.len() < total {
        out.push_str(&format!(
            "Showing {} of {total} skills; the rest are in the {SKILLS_DIR}/ folder.\n",
            shown.len()
        ));
    }
    out.push_str("<available_skills>\n");
    for s in shown {
        match form {
            SkillsForm::Full => out.push_str(&format!(
                "  <skill>\n    <name>{}</name>\n    <description>{}</description>\n    <location>{}</location>\n  </skill>\n",
                xml_escape(&s.name),
                xml_escape(&s.description),
                xml_escape(&s.location)
            )),
            SkillsForm::Compact => out.push_str(&format!(
                "  <skill><name>{}</name><location>{}</location></skill>\n",
                xml_escape(&s.name),
                xml_escape(&s.location)
            )),
        }
    }
    out.push_str("</available_skills>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(n: &str, d: &str) -> Skill {
        Skill { name: n.into(), description: d.into(), location: format!("skills/{n}/SKILL.md") }
    }

    #[test]
    fn descriptions_are_escaped() {
        let out = render(&[skill("x", "<b>&\"")], SkillsForm::Full, 10);
        assert!(out.contains("<description>&lt;b&gt;&amp;&quot;</description>"), "{out}");
    }

    #[test]
    fn compact_and_limited_forms() {
        let skills = vec![skill("a", "alpha"), skill("b", "beta"), skill("c", "gamma")];
        let compact = render(&skills, SkillsForm::Compact, 3);
        assert!(!compact.contains("<description>") && compact.matches("<skill>").count() == 3);
        let limited = render(&skills, SkillsForm::Compact, 2);
        assert!(limited.contains("Showing 2 of 3") && limited.matches("<skill>").count() == 2);
        let hint = render(&skills, SkillsForm::Compact, 0);
        assert!(hint.contains("3 skills are installed") && !hint.contains("<skill>"));
        assert_eq!(render(&[], SkillsForm::Full, 5), "");
    }
}
