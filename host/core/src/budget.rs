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
use crate::config::TruncationNotice;
use crate::core_sections::{self, CoreInputs, CoreRender, Knobs, StablePart};
use crate::error::ProemError;
use crate::render::{join_in, join_in_with, join_stable, merge, order_in, replaced_ids, Joined};
use crate::report::Diagnostic;
use crate::section::{core_key, core_spec, ids, CutClass, Section, SectionKey, Source, Tier, Zone, CORE_SOURCE};
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
    /// Exact tokens of `joined.prompt` and its turn context ([`sent_tokens`]).
    pub total_tokens: usize,
    /// Exact tokens of `joined.stable`.
    pub stable_tokens: usize,
    /// xxh3-128 of `joined.stable` (the counter's key for it).
    pub stable_xxh3: u128,
    /// The knobs that made it fit (what the property tests compare).
    #[cfg_attr(not(test), allow(dead_code))]
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
    let layout = inputs.stable.config.layout().mode(inputs.stable.mode);
    let tiering = inputs.stable.config.cache.tiering();
    // OpenClaw's `none` is the identity line: nothing contributed joins it.
    let contributed = if core_sections::identity_only(&inputs.stable) { &[] } else { contributed };
    let plain = Knobs::untouched(inputs);
    // What the contributed sections replace shapes the core render (the
    // reminder never names replaced text): it is known before any cut.
    let untouched = Knobs { replaced: replaced_ids(contributed, layout), ..plain.clone() };
    let mut knobs = untouched.clone();
    // The knobs once `[skills] max_tokens` holds: what the budget turned
    // after that is the budget's doing.
    let mut capped: Option<Knobs> = None;
    // Both depend on the protected sections alone, which no knob changes:
    // counted once.
    let mut stable_limit = None;
    let mut protected = None;
    for _ in 0..MAX_STEPS {
        let mut render = match ahead.take() {
            // Counted ahead with nothing replaced: only then is it this render.
            Some(render) if knobs == plain => render,
            _ => core_sections::render(inputs, &knobs),
        };
        let kept: Vec<Section> = contributed.iter().filter(|s| !knobs.dropped.contains(&s.key())).cloned().collect();
        // The core sections move into the merge (`Fitted::sections` has them).
        let (sections, merge_notes) = merge(std::mem::take(&mut render.sections), &kept, layout);
        let stable = stable_part(inputs, render.stable_key, &sections, counter);
        let joined = join_in_with(&sections, tiering, stable.text.clone());
        let stable_limit = *stable_limit.get_or_insert_with(|| stable_limit_of(inputs, &sections, counter, budget));
        // The skills section's own cap ([skills] max_tokens), before the rest.
        if let Some(over) = over_skills_cap(inputs, &sections, counter) {
            turn_skills_knob(&sections, &mut knobs, over, counter);
            continue;
        }
        let capped_knobs = capped.get_or_insert_with(|| knobs.clone()).clone();
        let (stable_tokens, stable_xxh3) = (stable.tokens, stable.xxh3);
        if stable_tokens > stable_limit {
            let excess = stable_tokens - stable_limit;
            if turn_one_knob(Zone::Stable, inputs, &render, &sections, &mut knobs, excess, counter) {
                continue;
            }
            break;
        }
        let total = stable.sent_tokens(&joined, counter);
        if total <= budget {
            diagnostics.extend(merge_notes);
            report_cuts(
                inputs,
                contributed,
                &Cuts { untouched: &untouched, capped: &capped_knobs, knobs: &knobs },
                diagnostics,
            );
            let sections = crate::render::in_prompt_order(sections, tiering);
            return Ok(Fitted { render, sections, joined, total_tokens: total, stable_tokens, stable_xxh3, knobs });
        }
        let needed = *protected.get_or_insert_with(|| protected_tokens(&sections, counter, tiering));
        if needed > budget {
            return Err(ProemError::BudgetTooSmall { needed, budget, over: needed - budget });
        }
        if !turn_one_knob(Zone::Dynamic, inputs, &render, &sections, &mut knobs, total - budget, counter) {
            break;
        }
    }
    Err(too_small_after_every_cut(inputs, &knobs, counter, budget))
}

/// The [`stable_budget`] of a build whose sections are `sections`: it
/// depends on the protected stable sections alone, which no knob changes.
fn stable_limit_of(inputs: &CoreInputs, sections: &[Section], counter: &TokenCounter, budget: usize) -> usize {
    let protected_stable: Vec<Section> =
        sections.iter().filter(|s| s.protected && s.zone == Zone::Stable).cloned().collect();
    let protected_stable = counter.count_kept(&join_in(&protected_stable, inputs.stable.config.cache.tiering()).stable);
    stable_budget(budget, inputs.stable.config.budget.dynamic_reserve, protected_stable)
}

/// Tokens the skills section is over `[skills] max_tokens`, when it is.
fn over_skills_cap(inputs: &CoreInputs, sections: &[Section], counter: &TokenCounter) -> Option<usize> {
    let cap = inputs.stable.config.skills.max_tokens?;
    let skills = sections.iter().find(|s| s.cut_class() == Some(CutClass::Skills));
    skills.map(|s| counter.count_kept(&s.body)).filter(|t| *t > cap).map(|t| t - cap)
}

/// The error when every optional section is gone and the prompt still does
/// not fit: the stable part as fitted (`knobs`) plus the protected dynamic
/// sections is what it needs.
fn too_small_after_every_cut(inputs: &CoreInputs, knobs: &Knobs, counter: &TokenCounter, budget: usize) -> ProemError {
    let layout = inputs.stable.config.layout().mode(inputs.stable.mode);
    let tiering = inputs.stable.config.cache.tiering();
    let render = core_sections::render(inputs, knobs);
    let (sections, _) = merge(render.sections, &[], layout);
    let kept: Vec<Section> = sections.into_iter().filter(|s| s.zone == Zone::Stable || s.protected).collect();
    let needed = sent_tokens(&join_in(&kept, tiering), counter).max(protected_tokens(&kept, counter, tiering));
    ProemError::BudgetTooSmall { needed, budget, over: needed.saturating_sub(budget) }
}

impl StablePart {
    /// [`sent_tokens`] of `joined` (whose prompt starts with this part):
    /// the head's tokens plus the rest's, so the ~90 KB the head holds is
    /// neither hashed nor looked up again.
    fn sent_tokens(&self, joined: &Joined, counter: &TokenCounter) -> usize {
        debug_assert!(joined.prompt.starts_with(&self.text[..self.head_end]));
        let rest = joined.prompt.get(self.head_end..).map_or(0, |rest| counter.count(rest));
        self.head_tokens
            .saturating_add(rest)
            .saturating_add(joined.turn_context.as_deref().map_or(0, |t| counter.count(t)))
    }
}

/// The stable part of `sections` (a render merged with the contributed
/// sections), joined and counted; or, with the render memos, the one the
/// last build made of the same stable sections. A new clock changes the
/// dynamic part alone, so its rebuild reuses the ~90 KB join and count.
///
/// The key is every input of [`join_stable`] and the count: the core
/// stable sections stand for themselves by `core_key` (the render memo's
/// key: equal keys, equal sections), the others by their bodies; the
/// sections of the stable part in order, by id and source; the tokenizer.
fn stable_part(
    inputs: &CoreInputs,
    core_key: Option<u128>,
    sections: &[Section],
    counter: &TokenCounter,
) -> std::sync::Arc<StablePart> {
    let compute = |with_head: bool| {
        let text: std::sync::Arc<str> = join_stable(sections).into();
        let (tokens, xxh3) = counter.count_kept_hashed(&text);
        let head_end = if with_head { counter.head_cut(&text) } else { 0 };
        let head_tokens = counter.count(&text[..head_end]);
        std::sync::Arc::new(StablePart { text, tokens, xxh3, head_end, head_tokens })
    };
    let Some((memos, core_key)) = inputs.stable.memos.zip(core_key) else { return compute(false) };
    let mut h = crate::memo::KeyHasher::default();
    h.num128(core_key).str(counter.tokenizer().name());
    for s in sections.iter().filter(|s| s.tier() == Tier::Stable) {
        let by_core_key = s.source == Source::Core && core_spec(&s.id).is_some_and(|spec| !spec.per_turn);
        h.str(&s.id).str(&s.source.to_string()).num(u64::from(by_core_key));
        if !by_core_key {
            h.str(&s.body);
        }
    }
    let mut computed = false;
    let part = memos.stable_part.get_or_compute(h.finish(), || {
        computed = true;
        compute(true)
    });
    if !computed {
        memos.stable_part_reuses.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    part
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
    // What every turn shares is kept for the next process (see
    // `TokenCounter::count_kept`); a session's or a turn's sections are not.
    // The files first: the sections that hold them then find their
    // paragraphs counted. Where there is a reader thread, it takes a share
    // (a build whose counts are not memoised encodes ~90 KB here, on the
    // critical path once the plugins have answered).
    let work = crate::parallel::SharedWork::<Ahead<'_>, ()>::default();
    let list = || {
        let files = render.files.iter().map(|f| Ahead::File(&f.text));
        files.chain(render.sections.iter().map(Ahead::Section)).collect()
    };
    let count = |item: &Ahead<'_>| match item {
        Ahead::File(text) => drop(counter.count_kept(text)),
        Ahead::Section(section) => drop(count_section(section, counter)),
    };
    crate::parallel::in_place_scope(|scope| {
        if let Some(scope) = scope {
            scope.spawn(|_| work.work(list, count));
        }
        work.work(list, count);
    });
    // Merged with nothing contributed, the core sections are only put in
    // prompt order. The stable part needs no count of its own: its pieces
    // are the sections' and the prompt's.
    order_in(&mut render.sections, inputs.stable.config.layout().mode(inputs.stable.mode));
    sent_tokens(&join_in(&render.sections, inputs.stable.config.cache.tiering()), counter);
    render
}

/// A text [`count_ahead`] counts: an injected file's, or a section's body.
enum Ahead<'a> {
    File(&'a str),
    Section(&'a Section),
}

/// Tokens of `section`'s body and its xxh3-128; kept for the next process
/// (`TokenCounter::count_kept`) when the section is above the boundary.
/// A session's sections (channel, group title, model) are as many as an
/// agent's chats: kept, they would push the agent's shared counts out of
/// the file, so they are saved among the recent ones, as a turn's are.
pub fn count_section(section: &Section, counter: &TokenCounter) -> (usize, u128) {
    match section.tier() {
        Tier::Turn | Tier::Session => counter.count_hashed(&section.body),
        Tier::Stable => counter.count_kept_hashed(&section.body),
    }
}

/// Tokens of what a build sends: the system prompt, and the turn context
/// when it is returned apart (it is in the same request, so in the budget).
pub fn sent_tokens(joined: &Joined, counter: &TokenCounter) -> usize {
    counter.count(&joined.prompt).saturating_add(joined.turn_context.as_deref().map_or(0, |t| counter.count(t)))
}

/// Tokens of a prompt made of the protected sections alone.
fn protected_tokens(sections: &[Section], counter: &TokenCounter, tiering: crate::cache::Tiering) -> usize {
    let protected: Vec<Section> = sections.iter().filter(|s| s.protected).cloned().collect();
    sent_tokens(&join_in(&protected, tiering), counter)
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

    // Third-party sections before anything of the operator's. A
    // replacement goes with the core section it replaced: cutting it never
    // brings back what the plugin took out (an AIEOS persona never gives
    // way to SOUL.md).
    if let Some(last) = present(CutClass::ThirdParty).next_back() {
        knobs.dropped.insert(last.key());
        let replaces_core = last.slot.placement() == crate::section::Placement::At
            && crate::section::core_spec(last.slot.anchor_id()).is_some();
        if replaces_core {
            knobs.dropped.insert(core_key(&last.id));
        }
        return true;
    }

    if let Some(extra) = present(CutClass::ExtraContext).next() {
        turn_extra_knob(inputs, extra, knobs, excess, counter);
        return true;
    }

    if present(CutClass::Skills).next().is_some() {
        turn_skills_knob(sections, knobs, excess, counter);
        return true;
    }

    if let Some((name, cap)) = largest_file_cut(inputs, render, &in_zone, excess, counter) {
        knobs.file_caps.insert(name, cap);
        return true;
    }

    let Some(key) = last_optional_section(zone, sections, &in_zone) else { return false };
    knobs.dropped.insert(key);
    true
}

/// Shortens the extra prompt by about `excess` tokens, or drops it when
/// less than [`MIN_EXTRA_CHARS`] would be left.
fn turn_extra_knob(inputs: &CoreInputs, extra: &Section, knobs: &mut Knobs, excess: usize, counter: &TokenCounter) {
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
}

/// The file of this part to cut next, largest first, with its new cap
/// ([`new_file_cap`]); `None` when no file of `in_zone` can shrink.
fn largest_file_cut(
    inputs: &CoreInputs,
    render: &CoreRender,
    in_zone: &[&Section],
    excess: usize,
    counter: &TokenCounter,
) -> Option<(String, usize)> {
    let notices = inputs.stable.config.bootstrap.truncation_notice != TruncationNotice::Off;
    let mut candidates: Vec<(&crate::bootstrap::InjectedFile, usize)> = render
        .files
        .iter()
        .filter(|f| f.report.injected_chars > 0 && in_zone.iter().any(|s| s.key() == core_key(f.group.section_id())))
        .map(|f| (f, new_file_cap(f, excess, counter)))
        // A file cut to nothing leaves a notice in its place: never one
        // longer than the file (keep the file; other cuts come next).
        .filter(|(f, cap)| {
            let noticed = notices || core_sections::named_elsewhere(&f.name);
            !(noticed && *cap == 0 && notice_outweighs(f))
        })
        .collect();
    candidates.sort_by_key(|(f, _)| (std::cmp::Reverse(f.report.injected_chars), f.name.clone()));
    candidates.first().map(|(file, cap)| (file.name.clone(), *cap))
}

/// The key of the optional section of `zone` to drop next (or of an empty
/// file section): the last one first. A section another one names goes
/// after it: the one naming it is dropped first when it is in this part,
/// and when it is not (it is above the boundary, out of this phase's
/// reach) the named one stays. `None`: nothing optional is left.
fn last_optional_section(zone: Zone, sections: &[Section], in_zone: &[&Section]) -> Option<SectionKey> {
    for candidate in in_zone.iter().rev().filter(|s| s.cut_class().is_some()) {
        let naming = sections
            .iter()
            .find(|s| s.source == crate::section::Source::Core && names(&s.id) == Some(candidate.id.as_str()));
        match naming {
            None => return Some(candidate.key()),
            Some(n) if n.zone == zone && n.cut_class().is_some() => return Some(n.key()),
            Some(_) => continue,
        }
    }
    None
}

/// The section a core section names in its text, which must stay while it
/// does: the workspace-files note names Project Context, the first-run
/// notice BOOTSTRAP.md among the per-turn files.
fn names(id: &str) -> Option<&'static str> {
    match id {
        ids::WORKSPACE_FILES_NOTE => Some(ids::PROJECT_CONTEXT),
        ids::FIRST_RUN => Some(ids::DYNAMIC_FILES),
        _ => None,
    }
}

/// The tighter cap the budget gives a file `excess` tokens over: about
/// that many tokens fewer (a quarter of it at least), or nothing when
/// less than [`MIN_FILE_CHARS`] would be left.
fn new_file_cap(file: &crate::bootstrap::InjectedFile, excess: usize, counter: &TokenCounter) -> usize {
    let chars = file.report.injected_chars;
    let tokens = counter.count_kept(&file.text).max(1);
    let chars_per_token = chars as f64 / tokens as f64;
    let reduce = ((excess as f64 * chars_per_token * 1.1) as usize).saturating_add(64).max(chars / 4);
    let new_cap = chars.saturating_sub(reduce);
    if new_cap < MIN_FILE_CHARS {
        0
    } else {
        new_cap
    }
}

/// Whether the notice a file cut to nothing leaves
/// ([`core_sections::cut_notice`]) is longer than the text it would stand for.
fn notice_outweighs(file: &crate::bootstrap::InjectedFile) -> bool {
    let notice = core_sections::cut_notice(&file.name, file.report.raw_chars);
    crate::text::char_len(&notice) >= file.report.injected_chars
}

/// Shrinks the skills section: compact form, then fewer skills, then none.
fn turn_skills_knob(sections: &[Section], knobs: &mut Knobs, excess: usize, counter: &TokenCounter) {
    let Some(skills) = sections.iter().find(|s| s.cut_class() == Some(CutClass::Skills)) else { return };
    if knobs.skills_form == SkillsForm::Full {
        knobs.skills_form = SkillsForm::Compact;
    } else if let Some(per_skill) = counter.count_kept(&skills.body).checked_div(knobs.skills_count) {
        let remove = excess.div_ceil(per_skill.max(1)).saturating_add(1);
        knobs.skills_count = knobs.skills_count.saturating_sub(remove);
    } else {
        knobs.dropped.insert(core_key(ids::SKILLS));
    }
}

/// The knobs as the budget stage left them: before any cut, once
/// `[skills] max_tokens` held, and at the end.
struct Cuts<'k> {
    untouched: &'k Knobs,
    capped: &'k Knobs,
    knobs: &'k Knobs,
}

/// One diagnostic per knob turned, each saying whose cut it was: the
/// skills section's own cap (`skills_capped`) or the token budget.
fn report_cuts(inputs: &CoreInputs, contributed: &[Section], cuts: &Cuts, diagnostics: &mut Vec<Diagnostic>) {
    let Cuts { untouched, capped, knobs } = *cuts;
    if knobs == untouched {
        return;
    }
    diagnostics.extend(extra_cut(knobs));
    diagnostics.extend(skills_cut(inputs, cuts));
    for (name, cap) in &knobs.file_caps {
        let message = if *cap == 0 {
            format!("{name}: left out to fit the token budget")
        } else {
            format!("{name}: cut to at most {cap} characters to fit the token budget")
        };
        diagnostics.push(Diagnostic::warn("budget_file_shrunk", message));
    }
    diagnostics.extend(dropped_sections(capped, knobs));
    if cut_above_boundary(inputs, contributed, capped, knobs) {
        diagnostics.push(Diagnostic::info(
            "budget_cut_stable",
            "the stable part was over the budget less [budget] dynamic_reserve, so content above the cache \
             boundary was cut (the same way on every turn: per-turn inputs never change it); raise the budget \
             to keep more of it",
        ));
    }
}

/// What the budget did to the extra prompt, if anything.
fn extra_cut(knobs: &Knobs) -> Option<Diagnostic> {
    if knobs.dropped.contains(&core_key(ids::EXTRA_CONTEXT)) {
        Some(Diagnostic::warn("budget_extra_dropped", "the extra prompt was left out to fit the token budget"))
    } else {
        knobs.extra_chars.map(|n| {
            Diagnostic::warn(
                "budget_extra_shortened",
                format!("the extra prompt was shortened to its first {n} characters to fit the token budget"),
            )
        })
    }
}

/// What was done to the skills section, if anything, and whose cut it was:
/// `[skills] max_tokens` alone (`skills_capped`), or the budget.
fn skills_cut(inputs: &CoreInputs, cuts: &Cuts) -> Option<Diagnostic> {
    let Cuts { untouched, capped, knobs } = *cuts;
    let total = inputs.stable.skills.len();
    let skills_key = core_key(ids::SKILLS);
    let skills_state = |k: &Knobs| (k.skills_form, k.skills_count, k.dropped.contains(&skills_key));
    if skills_state(capped) != skills_state(untouched) && skills_state(capped) == skills_state(knobs) {
        // The skills section's own cap did it all; the budget nothing.
        let cap = inputs.stable.config.skills.max_tokens.unwrap_or(0);
        let what = if knobs.dropped.contains(&skills_key) {
            format!("the skills section ({total} skills) was left out")
        } else {
            format!(
                "skills: {} of {total} listed{}",
                knobs.skills_count.min(total),
                if knobs.skills_form == SkillsForm::Compact { " in compact form" } else { "" }
            )
        };
        Some(Diagnostic::info("skills_capped", format!("{what} to fit [skills] max_tokens = {cap}")))
    } else if knobs.dropped.contains(&skills_key) {
        Some(Diagnostic::warn(
            "budget_skills_dropped",
            format!("the skills section ({total} skills) was left out to fit the token budget"),
        ))
    } else if knobs.skills_count < total {
        Some(Diagnostic::warn(
            "budget_skills_limited",
            format!("skills: included {} of {total}, compact form, to fit the token budget", knobs.skills_count),
        ))
    } else if knobs.skills_form == SkillsForm::Compact {
        Some(Diagnostic::warn(
            "budget_skills_compact",
            format!("skills: all {total} listed in compact form (no descriptions) to fit the token budget"),
        ))
    } else {
        None
    }
}

/// One diagnostic per section the budget dropped (after the skills cap),
/// but the extra prompt and the skills section (reported on their own).
fn dropped_sections(capped: &Knobs, knobs: &Knobs) -> Vec<Diagnostic> {
    let mut diagnostics = Vec::new();
    for (source, id) in knobs.dropped.difference(&capped.dropped) {
        if *source == CORE_SOURCE && (id == ids::EXTRA_CONTEXT || id == ids::SKILLS) {
            continue;
        }
        let with_replacement = *source == CORE_SOURCE && knobs.dropped.iter().any(|(s, i)| s != CORE_SOURCE && i == id);
        let message = if with_replacement {
            format!("section {id} ({source}) stays out with the plugin section that replaced it, which was left out to fit the token budget")
        } else {
            format!("section {id} ({source}) was left out to fit the token budget")
        };
        diagnostics.push(Diagnostic::warn("budget_section_dropped", message));
    }
    diagnostics
}

/// Whether the budget (not the skills cap) cut anything above the boundary.
fn cut_above_boundary(inputs: &CoreInputs, contributed: &[Section], capped: &Knobs, knobs: &Knobs) -> bool {
    let layout = inputs.stable.config.layout().mode(inputs.stable.mode);
    knobs.skills_form != capped.skills_form
        || knobs.skills_count != capped.skills_count
        || knobs
            .dropped
            .difference(&capped.dropped)
            .any(|(source, id)| source == CORE_SOURCE && layout.zone(id) == Zone::Stable)
        || knobs
            .file_caps
            .keys()
            .any(|name| crate::bootstrap::group_in(name, inputs.stable.config.layout()) != FileGroup::Dynamic)
        || contributed.iter().any(|s| s.zone == Zone::Stable && knobs.dropped.contains(&s.key()))
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
                budget_tokens: 24_000,
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

    /// The extra prompt's and the dropped sections' diagnostics: one each,
    /// the extra prompt and skills never among the dropped sections, a core
    /// section dropped with its plugin replacement said to go with it.
    #[test]
    fn each_cut_is_reported_once_by_its_own_step() {
        let config = Config::default();
        let inputs = inputs(&config, &[], Some("x".repeat(500)));
        let untouched = Knobs::untouched(&inputs);
        let mut knobs = untouched.clone();
        assert_eq!(extra_cut(&knobs), None);
        knobs.extra_chars = Some(300);
        let shortened = extra_cut(&knobs).unwrap();
        assert_eq!(shortened.code, "budget_extra_shortened");
        assert!(shortened.message.contains("first 300 characters"), "{}", shortened.message);
        knobs.dropped.insert(core_key(ids::EXTRA_CONTEXT));
        assert_eq!(extra_cut(&knobs).unwrap().code, "budget_extra_dropped");
        knobs.dropped.insert(core_key(ids::SKILLS));
        knobs.dropped.insert(core_key(ids::PERSONA));
        knobs.dropped.insert(("aieos".to_string(), ids::PERSONA.to_string()));
        let dropped = dropped_sections(&untouched, &knobs);
        let messages: Vec<&str> = dropped.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(messages.len(), 2, "{messages:?}");
        assert!(dropped.iter().all(|d| d.code == "budget_section_dropped"));
        assert!(messages.iter().any(|m| m.contains("stays out with the plugin section that replaced it")));
        assert!(messages.iter().any(|m| m.starts_with("section persona (aieos) was left out")));
        // What the skills cap dropped before the budget ran is not the budget's.
        assert!(dropped_sections(&knobs, &knobs).is_empty());
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
