//! Skills: `skills/*/SKILL.md` in the workspace (and `[skills] folders`),
//! rendered as escaped XML.
//!
//! By mode (GoClaw, `[skills.forms]`): listed in full mode (a search hint
//! past `[skills] search_above_count` skills or `search_above_share` of the
//! budget); in task mode a search hint plus the pinned skills; in minimal
//! and none the pinned skills alone. A list
//! takes one of three forms, chosen by the budget stage: full (name,
//! description, location), compact (name and location), and a
//! count-limited list; with no room for any skill, a one-paragraph hint says
//! where to find them.
//!
//! A skill whose front matter requires binaries, environment variables or
//! an OS this host lacks is not listed (OpenClaw's eligibility gates), and
//! the report says why: `requires_bins`, `requires_env`, `requires_os`
//! (comma-separated), or OpenClaw's `metadata: {"openclaw": {"requires":
//! {"bins": […], "env": […], "os": […]}}}`.
//!
//! Loading is three steps so two threads can share the middle one: list the
//! [`folders`], [`read`] each, [`collect`] the results (sorted, deduplicated,
//! the first folder by precedence winning a name).

use crate::config::{SkillForm, SkillsConfig};
use crate::report::Diagnostic;
use crate::text::{front_matter_fields, one_line, sort_dedup, split_front_matter, xml_escape, FrontMatter, SameName};
use crate::workspace::{Exhausted, PerTurnFiles, Unavailable, Workspace};

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
    /// Its folder's place in `skills/` + `[skills] folders` (0 first): the
    /// first folder that has a name wins it.
    pub precedence: usize,
}

/// How skills are rendered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkillsForm {
    /// Name, description and location.
    Full,
    /// Name and location only.
    Compact,
}

/// One skill folder to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillDir {
    /// The skills root it is in (`skills` or one of `[skills] folders`).
    pub root: String,
    /// Its name under the root.
    pub dir: String,
    /// The root's precedence (0 first).
    pub precedence: usize,
}

/// The skills roots in precedence order: `skills/`, then `[skills] folders`.
pub fn roots(config: &SkillsConfig) -> Vec<&str> {
    std::iter::once(SKILLS_DIR).chain(config.folders.iter().map(|f| f.trim_end_matches('/'))).collect()
}

/// The skill folders of every root, each root's sorted by name; `Err`
/// when a root could not be listed for the machine's reason ([`Exhausted`]).
pub fn folders(ws: &Workspace, config: &SkillsConfig) -> Result<Vec<SkillDir>, Exhausted> {
    let mut folders = Vec::new();
    for (precedence, root) in roots(config).into_iter().enumerate() {
        let dirs = ws.subdirs(root)?;
        folders.extend(dirs.into_iter().map(|dir| SkillDir { root: root.to_string(), dir, precedence }));
    }
    Ok(folders)
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

/// Reads `<root>/<dir>/SKILL.md`.
/// A SKILL.md that is a per-turn file under another name reads as missing
/// ([`PerTurnFiles::check`]): the skills list sits above the boundary.
/// `Err` when it could not be read for the machine's reason ([`Exhausted`]).
pub fn read(ws: &Workspace, skill_dir: &SkillDir, per_turn: &PerTurnFiles) -> Result<Read, Exhausted> {
    let dir = skill_dir.dir.as_str();
    let location = format!("{}/{dir}/SKILL.md", skill_dir.root);
    let text = match ws.read_text(&location, MAX_SKILL_BYTES).and_then(|f| per_turn.check(&location, f)) {
        Ok(f) => f.text,
        Err(why) => match why.or_exhausted(&location)? {
            Unavailable::Missing => return Ok(Read::Nothing),
            why => {
                return Ok(Read::Skipped(Diagnostic::warn(
                    "skill_unreadable",
                    format!("{location}: {}; skill skipped", why.describe()),
                )))
            }
        },
    };
    let fields = match split_front_matter(&text) {
        FrontMatter::Found { yaml, .. } => front_matter_fields(yaml),
        _ => Vec::new(),
    };
    let field = |k: &str| fields.iter().find(|(key, _)| key == k).map(|(_, v)| v.as_str());
    if matches!(field("disable-model-invocation").or(field("disable_model_invocation")), Some("true")) {
        return Ok(Read::Nothing);
    }
    let name = one_line(field("name").unwrap_or(dir), 80);
    let name = if name.is_empty() { one_line(dir, 80) } else { name };
    if let Some(missing) = unmet_requirement(&fields) {
        return Ok(Read::Skipped(Diagnostic::info(
            "skill_ineligible",
            format!("{location}: skill {name} is not listed: it needs {missing}"),
        )));
    }
    Ok(Read::Skill(Skill {
        name,
        description: one_line(field("description").unwrap_or(""), MAX_DESCRIPTION_CHARS),
        location: one_line(&location, 200),
        precedence: skill_dir.precedence,
    }))
}

/// The first requirement of a skill this host does not meet, in words.
fn unmet_requirement(fields: &[(String, String)]) -> Option<String> {
    let list = |key: &str| -> Vec<String> {
        fields
            .iter()
            .filter(|(k, _)| k == key)
            .flat_map(|(_, v)| v.split([',', ' ']).map(str::trim).filter(|s| !s.is_empty()).map(String::from))
            .collect()
    };
    let (mut bins, mut env, mut os) = (list("requires_bins"), list("requires_env"), list("requires_os"));
    // OpenClaw's form: metadata: {"openclaw": {"requires": {...}}} on one line.
    if let Some((_, meta)) = fields.iter().find(|(k, _)| k == "metadata") {
        if let Ok(value) = serde_json::from_str::<serde_json::Value>(meta) {
            for owner in ["openclaw", "clawdbot"] {
                let requires = &value[owner]["requires"];
                for (key, into) in [("bins", &mut bins), ("env", &mut env), ("os", &mut os)] {
                    if let Some(items) = requires[key].as_array() {
                        into.extend(items.iter().filter_map(|i| i.as_str()).map(String::from));
                    }
                }
            }
        }
    }
    if let Some(bin) = bins.iter().find(|b| !on_path(b)) {
        return Some(format!("the program {} on PATH", one_line(bin, 60)));
    }
    if let Some(var) = env.iter().find(|v| std::env::var_os(v.as_str()).is_none_or(|x| x.is_empty())) {
        return Some(format!("the environment variable {}", one_line(var, 60)));
    }
    if !os.is_empty() && !os.iter().any(|o| same_os(o)) {
        return Some(format!("one of these systems: {}", one_line(&os.join(", "), 80)));
    }
    None
}

/// Whether `name` is an executable file in a PATH directory.
fn on_path(name: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    if name.contains('/') {
        return false;
    }
    let Some(path) = std::env::var_os("PATH") else { return false };
    std::env::split_paths(&path)
        .any(|dir| std::fs::metadata(dir.join(name)).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
}

/// Whether an OS name from a skill (Node's `darwin`, `win32` or Rust's
/// `macos`, `windows`, `linux`) is this host's.
fn same_os(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    let canonical = match name.as_str() {
        "darwin" | "mac" | "osx" => "macos",
        "win32" | "win" => "windows",
        other => other,
    };
    canonical == std::env::consts::OS
}

/// The skills of `read` (in folder order), sorted by name (ignoring case)
/// then location, names taken twice dropped; diagnostics in folder order.
pub fn collect(read: Vec<Read>, config: &SkillsConfig, diagnostics: &mut Vec<Diagnostic>) -> Vec<Skill> {
    let mut skills = Vec::with_capacity(read.len());
    for r in read {
        match r {
            Read::Skill(s) => skills.push(s),
            Read::Nothing => {}
            Read::Skipped(d) => diagnostics.push(d),
        }
    }
    let (mut skills, dropped) = sort_dedup(
        skills,
        |s| &s.name,
        |a, b| (a.precedence, &a.location).cmp(&(b.precedence, &b.location)),
        SameName::IgnoringCase,
    );
    if !dropped.is_empty() {
        diagnostics.push(Diagnostic::warn(
            "skill_duplicate",
            format!(
                "{} skill(s) reuse a name already taken ignoring case ({}); the first by folder precedence, then location, is kept",
                dropped.len(),
                dropped.join(", ")
            ),
        ));
    }
    if let Some(allow) = &config.allow {
        let before = skills.len();
        skills.retain(|s| allow.iter().any(|a| a.eq_ignore_ascii_case(&s.name)));
        if skills.len() < before {
            diagnostics.push(Diagnostic::info(
                "skills_not_allowed",
                format!("{} skill(s) are not in [skills] allow and are not listed", before - skills.len()),
            ));
        }
    }
    skills
}

/// The skills section's text (without its heading) in `form`: every
/// skill (`list`), how to find one plus the pinned ones (`search`), the
/// pinned ones alone (`pinned`), or nothing (`off`). `count` and `list_form`
/// (the budget's knobs) apply to whichever list is shown; `search_tool` is
/// a skill-search tool the turn has.
pub fn render_for(
    form: SkillForm,
    skills: &[Skill],
    pinned: &[String],
    list_form: SkillsForm,
    count: usize,
    search_tool: Option<&str>,
) -> String {
    let pins = || -> Vec<Skill> {
        skills.iter().filter(|s| pinned.iter().any(|p| p.eq_ignore_ascii_case(&s.name))).cloned().collect()
    };
    match form {
        SkillForm::Off => String::new(),
        SkillForm::List => list(skills, list_form, count),
        SkillForm::Search if skills.is_empty() => String::new(),
        SkillForm::Search => {
            let mut out = match search_tool {
                Some(tool) => format!(
                    "{} skills are installed. When a task may need one, search them with `{tool}` (in English \
                     keywords), then read only the SKILL.md whose name and description match the task.",
                    skills.len()
                ),
                None => format!(
                    "{} skills are installed under {SKILLS_DIR}/<name>/SKILL.md. When a task may need one, search \
                     the skill folders for it and read only the SKILL.md whose name and description match the task.",
                    skills.len()
                ),
            };
            let list = list(&pins(), list_form, count);
            if !list.is_empty() {
                out.push_str("\nPinned, always available:\n");
                out.push_str(&list);
            }
            out
        }
        SkillForm::Pinned => list(&pins(), list_form, count),
    }
}

/// The skills section as a list: the first `count` skills in `form` under
/// "## Skills" (what the layout's form renders; kept for its tests).
#[cfg(test)]
fn render(skills: &[Skill], form: SkillsForm, count: usize) -> String {
    let body = list(skills, form, count);
    if body.is_empty() {
        body
    } else {
        format!("## Skills\n{body}")
    }
}

/// GoClaw's estimate of a list's tokens: for each skill its name, its
/// description up to 200 characters and 10 more, over 4.
pub fn estimate_tokens(skills: &[Skill]) -> usize {
    let chars: usize = skills
        .iter()
        .map(|s| crate::text::char_len(&s.name) + crate::text::char_len(&s.description).min(200) + 10)
        .sum();
    chars / 4
}

/// The skills list without its heading: the first `count` skills in
/// `form`, or a hint when none fit; empty when there are no skills.
fn list(skills: &[Skill], form: SkillsForm, count: usize) -> String {
    let total = skills.len();
    if total == 0 {
        return String::new();
    }
    let shown = &skills[..count.min(total)];
    let mut out = String::new();
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
        Skill { name: n.into(), description: d.into(), location: format!("skills/{n}/SKILL.md"), precedence: 0 }
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
