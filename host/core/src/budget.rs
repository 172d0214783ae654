//! Fitting the prompt to its token budget.
//!
//! The stable part is fitted first, on its own, against the budget minus a
//! dynamic reserve (`[budget] dynamic_reserve`, at most a quarter of the
//! budget); only then is the whole prompt fitted to the budget, cutting only
//! dynamic content. Every decision of the first phase is made from the
//! stable sections alone, which no per-turn input can change, so the stable
//! part is a function of stable inputs even under budget pressure: a long
//! USER.md or extra prompt costs dynamic content, never the cached prefix.
//!
//! Within each part the prompt is rendered, counted exactly, and while it is
//! over one knob is turned and it is rendered again, in DESIGN.md's order:
//! third-party (plugin) sections (last in the prompt first), the extra
//! prompt (shortened, then dropped), skills (compact form, then fewer),
//! context files (largest first), then other optional sections (last in
//! the prompt first). Protected sections are never touched; if they alone
//! exceed the budget the build fails saying by how much.

use crate::bootstrap::FileGroup;
use crate::core_sections::{self, CoreInputs, CoreRender, Knobs};
use crate::error::ProemError;
use crate::render::{join, merge, order, Joined};
use crate::report::Diagnostic;
use crate::section::{core_key, ids, CutClass, Section, Zone, CORE_SOURCE};
use crate::skills::SkillsForm;
use crate::tokens::TokenCounter;

/// Renders before the budget stage gives up (each turn of a knob shrinks the
/// prompt, so real builds need a handful).
const MAX_STEPS: usize = 400;
/// A file cut below this many characters is dropped instead.
const MIN_FILE_CHARS: usize = 200;
/// An extra prompt cut below this many characters is dropped instead.
const MIN_EXTRA_CHARS: usize = 200;

/// A prompt that fits.
#[derive(Debug, Clone)]
pub struct Fitted {
    /// The last render of the core sections (its sections moved into
    /// `sections`, merged with the contributed ones).
    pub render: CoreRender,
    /// All sections, in prompt order.
    pub sections: Vec<Section>,
    /// The joined prompt.
    pub joined: Joined,
    /// Exact tokens of `joined.prompt`.
    pub total_tokens: usize,
    /// Exact tokens of `joined.stable`.
    pub stable_tokens: usize,
    /// xxh3-128 of `joined.stable` (the counter's key for it).
    pub stable_xxh3: u128,
    /// The knobs that made it fit.
    pub knobs: Knobs,
}

/// The tokens the stable part may take: the budget less the dynamic
/// reserve (the reserve is at most a quarter of the budget), and never less
/// than the protected stable sections need. Stable inputs and the budget
/// decide it; nothing of the turn does.
pub fn stable_budget(budget: usize, dynamic_reserve: usize, protected_stable: usize) -> usize {
    budget.saturating_sub(dynamic_reserve.min(budget / 4)).max(protected_stable)
}

/// Renders, merges with the `contributed` sections, and cuts until the
/// stable part fits [`stable_budget`] and the prompt fits `budget` tokens.
/// `ahead`: the render [`count_ahead`] made of the same inputs, used for
/// the first step instead of rendering again.
pub fn fit(
    inputs: &CoreInputs,
    contributed: &[Section],
    counter: &TokenCounter,
    budget: usize,
    diagnostics: &mut Vec<Diagnostic>,
    mut ahead: Option<CoreRender>,
) -> Result<Fitted, ProemError> {
    let untouched = Knobs::untouched(inputs);
    let mut knobs = untouched.clone();
    // Both depend on the protected sections alone, which no knob changes:
    // counted once.
    let mut stable_limit = None;
    let mut protected = None;
    for _ in 0..MAX_STEPS {
        let mut render = match ahead.take() {
            Some(render) if knobs == untouched => render,
            _ => core_sections::render(inputs, &knobs),
        };
        let kept: Vec<Section> = contributed.iter().filter(|s| !knobs.dropped.contains(&s.key())).cloned().collect();
        // The core sections move into the merge (`Fitted::sections` has them).
        let (sections, merge_notes) = merge(std::mem::take(&mut render.sections), &kept, inputs.stable.mode);
        let joined = join(&sections);
        let stable_limit = *stable_limit.get_or_insert_with(|| {
            let protected_stable: Vec<Section> =
                sections.iter().filter(|s| s.protected && s.zone == Zone::Stable).cloned().collect();
            let protected_stable = counter.count(&join(&protected_stable).stable);
            stable_budget(budget, inputs.stable.config.budget.dynamic_reserve, protected_stable)
        });
        // The skills section's own cap ([skills] max_tokens), before the rest.
        if let Some(cap) = inputs.stable.config.skills.max_tokens {
            let skills = sections.iter().find(|s| s.cut_class() == Some(CutClass::Skills));
            if let Some(over) = skills.map(|s| counter.count(&s.body)).filter(|t| *t > cap).map(|t| t - cap) {
                turn_skills_knob(&sections, &mut knobs, over, counter);
                continue;
            }
        }
        let (stable_tokens, stable_xxh3) = counter.count_hashed(&joined.stable);
        if stable_tokens > stable_limit {
            if turn_one_knob(
                Zone::Stable,
                inputs,
                &render,
                &sections,
                &mut knobs,
                stable_tokens - stable_limit,
                counter,
            ) {
                continue;
            }
            break;
        }
        let total = counter.count(&joined.prompt);
        if total <= budget {
            diagnostics.extend(merge_notes);
            report_cuts(inputs, contributed, &untouched, &knobs, diagnostics);
            return Ok(Fitted { render, sections, joined, total_tokens: total, stable_tokens, stable_xxh3, knobs });
        }
        let needed = *protected.get_or_insert_with(|| protected_tokens(&sections, counter));
        if needed > budget {
            return Err(ProemError::BudgetTooSmall { needed, budget, over: needed - budget });
        }
        if !turn_one_knob(Zone::Dynamic, inputs, &render, &sections, &mut knobs, total - budget, counter) {
            break;
        }
    }
    // Every optional section is gone and it still does not fit: the stable
    // part as fitted plus the protected dynamic sections is what it needs.
    let render = core_sections::render(inputs, &knobs);
    let (sections, _) = merge(render.sections, &[], inputs.stable.mode);
    let kept: Vec<Section> = sections.into_iter().filter(|s| s.zone == Zone::Stable || s.protected).collect();
    let needed = counter.count(&join(&kept).prompt).max(protected_tokens(&kept, counter));
    Err(ProemError::BudgetTooSmall { needed, budget, over: needed.saturating_sub(budget) })
}

/// Counts ahead what [`fit`] and the build report will count, as far as
/// it is known before the plugins answer: the core sections as they are
/// before any knob turns, each alone (the report's per-section counts), each
/// injected file alone (its per-file counts), and merged and joined (fit's
/// first render). Done on the calling thread while plugins run on theirs;
/// only `counter`'s memo changes, so [`fit`] decides exactly as it would
/// have and finds most paragraphs counted: a contributed section or a knob
/// changes the pieces around it alone. Returns that render, for [`fit`]'s
/// first step.
pub fn count_ahead(inputs: &CoreInputs, counter: &TokenCounter) -> CoreRender {
    let mut render = core_sections::render(inputs, &Knobs::untouched(inputs));
    for file in render.files.iter() {
        counter.count(&file.text);
    }
    for section in &render.sections {
        counter.count(&section.body);
    }
    // Merged with nothing contributed, the core sections are only put in
    // prompt order. The stable part needs no count of its own: its pieces
    // are the sections' and the prompt's.
    order(&mut render.sections);
    counter.count(&join(&render.sections).prompt);
    render
}

/// Tokens of a prompt made of the protected sections alone.
fn protected_tokens(sections: &[Section], counter: &TokenCounter) -> usize {
    let protected: Vec<Section> = sections.iter().filter(|s| s.protected).cloned().collect();
    counter.count(&join(&protected).prompt)
}

/// Turns the first knob that can still shrink `zone`'s part of the prompt.
/// `false` when none can.
fn turn_one_knob(
    zone: Zone,
    inputs: &CoreInputs,
    render: &CoreRender,
    sections: &[Section],
    knobs: &mut Knobs,
    excess: usize,
    counter: &TokenCounter,
) -> bool {
    let in_zone: Vec<&Section> = sections.iter().filter(|s| s.zone == zone).collect();
    let present = |class: CutClass| in_zone.iter().copied().filter(move |s| s.cut_class() == Some(class));

    // Third-party sections before anything of the operator's.
    if let Some(last) = present(CutClass::ThirdParty).next_back() {
        knobs.dropped.insert(last.key());
        return true;
    }

    if let Some(extra) = present(CutClass::ExtraContext).next() {
        let tokens = counter.count(&extra.body).max(1);
        let full = inputs.turn.extra.as_deref().map(crate::text::char_len).unwrap_or(0);
        let current = knobs.extra_chars.unwrap_or(full).min(full);
        let margin = excess.saturating_add(32);
        let keep = (current as f64 * (tokens.saturating_sub(margin)) as f64 / tokens as f64) as usize;
        if tokens > margin && keep >= MIN_EXTRA_CHARS && keep < current {
            knobs.extra_chars = Some(keep);
        } else {
            knobs.dropped.insert(core_key(ids::EXTRA_CONTEXT));
        }
        return true;
    }

    if present(CutClass::Skills).next().is_some() {
        turn_skills_knob(sections, knobs, excess, counter);
        return true;
    }

    // Largest file of this part first.
    let candidate = render
        .files
        .iter()
        .filter(|f| f.report.injected_chars > 0 && in_zone.iter().any(|s| s.key() == core_key(f.group.section_id())))
        .max_by_key(|f| (f.report.injected_chars, std::cmp::Reverse(f.name.clone())));
    if let Some(file) = candidate {
        let chars = file.report.injected_chars;
        let tokens = counter.count(&file.text).max(1);
        let chars_per_token = chars as f64 / tokens as f64;
        let reduce = ((excess as f64 * chars_per_token * 1.1) as usize).saturating_add(64).max(chars / 4);
        let new_cap = chars.saturating_sub(reduce);
        knobs.file_caps.insert(file.name.clone(), if new_cap < MIN_FILE_CHARS { 0 } else { new_cap });
        return true;
    }

    // Other optional sections (and empty file sections): the last one first.
    if let Some(last) = in_zone.iter().rev().find(|s| s.cut_class().is_some()) {
        knobs.dropped.insert(last.key());
        return true;
    }
    false
}

/// Shrinks the skills section: compact form, then fewer skills, then none.
fn turn_skills_knob(sections: &[Section], knobs: &mut Knobs, excess: usize, counter: &TokenCounter) {
    let Some(skills) = sections.iter().find(|s| s.cut_class() == Some(CutClass::Skills)) else { return };
    if knobs.skills_form == SkillsForm::Full {
        knobs.skills_form = SkillsForm::Compact;
    } else if let Some(per_skill) = counter.count(&skills.body).checked_div(knobs.skills_count) {
        let remove = excess.div_ceil(per_skill.max(1)).saturating_add(1);
        knobs.skills_count = knobs.skills_count.saturating_sub(remove);
    } else {
        knobs.dropped.insert(core_key(ids::SKILLS));
    }
}

/// One diagnostic per knob the budget turned.
fn report_cuts(
    inputs: &CoreInputs,
    contributed: &[Section],
    untouched: &Knobs,
    knobs: &Knobs,
    diagnostics: &mut Vec<Diagnostic>,
) {
    if knobs == untouched {
        return;
    }
    if knobs.dropped.contains(&core_key(ids::EXTRA_CONTEXT)) {
        diagnostics
            .push(Diagnostic::warn("budget_extra_dropped", "the extra prompt was left out to fit the token budget"));
    } else if let Some(n) = knobs.extra_chars {
        diagnostics.push(Diagnostic::warn(
            "budget_extra_shortened",
            format!("the extra prompt was shortened to its first {n} characters to fit the token budget"),
        ));
    }
    let total = inputs.stable.skills.len();
    if knobs.dropped.contains(&core_key(ids::SKILLS)) {
        diagnostics.push(Diagnostic::warn(
            "budget_skills_dropped",
            format!("the skills section ({total} skills) was left out to fit the token budget"),
        ));
    } else if knobs.skills_count < total {
        diagnostics.push(Diagnostic::warn(
            "budget_skills_limited",
            format!("skills: included {} of {total}, compact form, to fit the token budget", knobs.skills_count),
        ));
    } else if knobs.skills_form == SkillsForm::Compact {
        diagnostics.push(Diagnostic::warn(
            "budget_skills_compact",
            format!("skills: all {total} listed in compact form (no descriptions) to fit the token budget"),
        ));
    }
    for (name, cap) in &knobs.file_caps {
        let message = if *cap == 0 {
            format!("{name}: left out to fit the token budget")
        } else {
            format!("{name}: cut to at most {cap} characters to fit the token budget")
        };
        diagnostics.push(Diagnostic::warn("budget_file_shrunk", message));
    }
    for (source, id) in &knobs.dropped {
        if *source != CORE_SOURCE || (id != ids::EXTRA_CONTEXT && id != ids::SKILLS) {
            diagnostics.push(Diagnostic::warn(
                "budget_section_dropped",
                format!("section {id} ({source}) was left out to fit the token budget"),
            ));
        }
    }
    let stable_cut = knobs.skills_form != untouched.skills_form
        || knobs.skills_count != untouched.skills_count
        || knobs.dropped.iter().any(|(source, id)| {
            source == CORE_SOURCE && crate::section::core_spec(id).is_some_and(|s| s.zone == Zone::Stable)
        })
        || knobs.file_caps.keys().any(|name| crate::bootstrap::group_of(name) != FileGroup::Dynamic)
        || contributed.iter().any(|s| s.zone == Zone::Stable && knobs.dropped.contains(&s.key()));
    if stable_cut {
        diagnostics.push(Diagnostic::info(
            "budget_cut_stable",
            "the stable part was over the budget less [budget] dynamic_reserve, so content above the cache \
             boundary was cut (the same way on every turn: per-turn inputs never change it); raise the budget \
             to keep more of it",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bootstrap::BootstrapFile;
    use crate::config::Config;
    use crate::core_sections::{StableInputs, TurnInputs};
    use crate::mode::{Mode, SessionKind};
    use crate::tokens::Tokenizer;
    use proptest::prelude::*;
    use std::sync::Arc;

    /// Text made of pieces that stress where [`crate::tokens::chunks`] cuts:
    /// blank lines, lines of 16 bytes, lines starting with whitespace or
    /// `/`, punctuation before newlines, runs of newlines, non-ASCII words.
    fn text() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            "[a-z]{1,12}",
            Just(" ".to_string()),
            Just("\n".to_string()),
            Just("\n\n".to_string()),
            Just("\n\n\n".to_string()),
            Just(".\n\n".to_string()),
            Just("\n/".to_string()),
            Just("\n  - ".to_string()),
            Just("0123456789abcde\n".to_string()),
            Just("## Heading\n".to_string()),
            Just("日本語 ".to_string()),
            Just("</context_file>".to_string()),
            "[ -~]{0,40}",
        ];
        prop::collection::vec(piece, 0..200).prop_map(|p| p.concat())
    }

    fn inputs<'a>(config: &'a Config, files: &[(&str, String)], extra: Option<String>) -> CoreInputs<'a> {
        CoreInputs {
            stable: StableInputs {
                mode: Mode::Full,
                session: SessionKind::Main,
                agent_id: "t".into(),
                agent_name: "T".into(),
                kind: config.agent.kind,
                config,
                files: files.iter().map(|(n, t)| BootstrapFile::new(*n, Some(t.clone()))).collect(),
                skills: Arc::new(Vec::new()),
                tools: Arc::new(Vec::new()),
                workspace_path: "/w".into(),
                owners: Vec::new(),
                memos: None,
            },
            turn: TurnInputs {
                replies_optional: false,
                thinking: None,
                zone_abbreviation: Some("UTC".into()),
                date: "2026-11-24 (Tuesday)".into(),
                timezone: "UTC".into(),
                channel: None,
                chat_kind: None,
                group_title: None,
                extra,
                provider: None,
                model: None,
            },
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Counting ahead only fills the memo: `fit` decides the same under
        /// any budget; and when nothing is cut, it and the report's
        /// per-section and per-file counts find every piece counted.
        #[test]
        fn counting_ahead_changes_nothing_fit_decides_and_leaves_it_nothing_to_encode(
            agents in text(),
            soul in text(),
            user in text(),
            memory in text(),
            extra in proptest::option::of(text()),
            budget in prop_oneof![200usize..3000, Just(1_000_000usize)],
        ) {
            let config = Config::default();
            let files = [("AGENTS.md", agents), ("SOUL.md", soul), ("USER.md", user), ("MEMORY.md", memory)];
            let inputs = inputs(&config, &files, extra.filter(|e| !e.trim().is_empty()));
            let fresh = TokenCounter::new(Tokenizer::O200kBase);
            let plain = fit(&inputs, &[], &fresh, budget, &mut Vec::new(), None);
            let ahead = TokenCounter::new(Tokenizer::O200kBase);
            let render = count_ahead(&inputs, &ahead);
            let counted_ahead = ahead.encoded_bytes();
            let after = fit(&inputs, &[], &ahead, budget, &mut Vec::new(), Some(render));
            match (plain, after) {
                (Ok(a), Ok(b)) => {
                    prop_assert_eq!(&a.joined.prompt, &b.joined.prompt);
                    prop_assert_eq!((a.total_tokens, a.stable_tokens), (b.total_tokens, b.stable_tokens));
                    prop_assert_eq!(format!("{:?}", a.knobs), format!("{:?}", b.knobs));
                    if b.knobs == Knobs::untouched(&inputs) {
                        prop_assert_eq!(ahead.encoded_bytes(), counted_ahead, "fit encoded again");
                        for s in &b.sections {
                            ahead.count(&s.body);
                        }
                        for f in b.render.files.iter() {
                            ahead.count(&f.text);
                        }
                        prop_assert_eq!(ahead.encoded_bytes(), counted_ahead, "the report encoded again");
                    }
                }
                (Err(a), Err(b)) => prop_assert_eq!(a.to_string(), b.to_string()),
                (a, b) => prop_assert!(false, "one fit failed: {:?} / {:?}", a.err(), b.err()),
            }
        }
    }
}
