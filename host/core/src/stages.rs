//! The stages of one build, in the order [`Assembler::build`] runs them
//! (docs/ARCHITECTURE.md draws the same line):
//!
//! ```text
//! resolve the turn → read the workspace → run bootstrap hooks → collect sections → fit → report
//! ```
//!
//! Each stage is a method here with the inputs it needs and nothing more;
//! `Assembler::build_fresh` (assembler.rs) is the sequence.

use crate::assembler::{
    tool_list, Assembler, InjectedFiles, WorkspaceKey, WorkspaceLists, WorkspaceRead, WorkspaceRows,
};
use crate::bootstrap::{self, BootstrapFile};
use crate::budget::{self, Fitted};
use crate::config::SkillForm;
use crate::core_sections::{CoreInputs, StableInputs, TurnInputs};
use crate::digest::sha256_hex;
use crate::error::ProemError;
use crate::mode::{resolve_mode, Mode, SessionKind};
use crate::plugin::{BuildContext, BuildRun, CallContexts, ContextTool, MemoKeys};
use crate::report::{Built, Diagnostic, FileDetail, FileReport, PluginReport, SectionReport, StableInput, TokenReport};
use crate::section::{Placement, Section, Source, CORE_SOURCE};
use crate::skills::{self, Skill};
use crate::text::{clean_owned, neutralize, one_line};
use crate::tokens::{TokenCounter, Tokenizer};
use crate::tools::PromptTool;
use crate::turn::{ChatKind, Turn};
use crate::zone::{Local, Zone};
use chrono::{DateTime, FixedOffset};
use std::borrow::Cow;
use std::sync::Arc;

/// The turn as the stages use it: every per-turn input resolved against
/// the config and cleaned, once.
#[derive(Debug, Clone)]
pub(crate) struct Resolved {
    /// The kind of session the key (and heartbeat flag) names.
    pub session: SessionKind,
    /// The build's mode.
    pub mode: Mode,
    /// The turn's time zone.
    pub zone: Zone,
    /// The turn's time in that zone.
    pub now: DateTime<FixedOffset>,
    /// The tokenizer the budget counts with.
    pub tokenizer: Tokenizer,
    /// Whether its counts are the model's own (the report's `exact`).
    pub tokenizer_exact: bool,
    /// The agent's id, one safe line.
    pub agent_id: String,
    /// The whole-prompt budget, within its bounds.
    pub budget_tokens: usize,
    /// Owner ids, cleaned, sorted and deduplicated.
    pub owners: Vec<String>,
    /// What the dynamic sections read.
    pub turn: TurnInputs,
    /// What resolving said about the turn's inputs (a group title given
    /// for a chat that is not a group), reported after the workspace's.
    pub notes: Vec<Diagnostic>,
}

/// What the workspace gave this build.
pub(crate) struct Read {
    /// The bootstrap files, as loaded.
    pub files: Vec<BootstrapFile>,
    /// The skills, sorted.
    pub skills: Arc<Vec<Skill>>,
    /// The turn's tools (or `[tools] file`'s), prepared.
    pub tools: Arc<Vec<PromptTool>>,
    /// The keys plugin outputs are memoised under, when they are.
    pub plugin_memo: Option<MemoKeys>,
}

impl Assembler {
    /// What a build says about the configuration itself before anything
    /// else (a missing proem.toml).
    pub(crate) fn config_notes(&self) -> Vec<Diagnostic> {
        if self.config_found {
            return Vec::new();
        }
        vec![Diagnostic::info(
            "config_default",
            format!("{} not found; using the default configuration", self.config_file.display()),
        )]
    }

    /// Stage 1, resolve the turn: the mode, the clock in the turn's zone,
    /// the tokenizer and budget, and every per-turn text made one safe line
    /// (or neutralised) once.
    pub(crate) fn resolve_turn(&self, turn: &Turn, now: DateTime<FixedOffset>) -> Result<Resolved, ProemError> {
        let config = &self.config;
        let session = SessionKind::of_turn(turn.session_key.as_deref(), turn.heartbeat);
        let caps = crate::mode::Caps {
            heartbeat: config.sessions.heartbeat_mode,
            cron: config.sessions.cron_mode,
            subagent: config.sessions.subagent_mode,
        };
        let mode = resolve_mode(turn.mode, session, config.agent.mode, caps);
        tracing::debug!(%mode, ?session, "mode resolved");
        let zone = Zone::parse(turn.timezone.as_deref().unwrap_or("UTC"))?;
        let Local { time: now, abbreviation: zone_abbreviation } = zone.local(now)?;
        let provider = turn_or_config(&turn.provider, &config.provider.name, 64);
        let model = turn_or_config(&turn.model, &config.provider.model, 96);
        let mut notes = Vec::new();
        let (tokenizer, tokenizer_exact) = self.tokenizer_for(model.as_deref(), &mut notes);
        if turn.group_title.is_some() && turn.chat_kind != Some(ChatKind::Group) {
            notes.push(Diagnostic::info(
                "group_title_ignored",
                "a group title was given for a turn that is not a group chat; it is left out (give --chat-kind group)",
            ));
        }
        let group_title = match turn.chat_kind {
            Some(ChatKind::Group) => {
                turn.group_title.as_deref().map(|t| one_line(&t.replace('"', ""), 100)).filter(|t| !t.is_empty())
            }
            _ => None,
        };
        let budget_tokens = turn.budget.unwrap_or(config.budget.tokens());
        crate::bounds::BUDGET_TOKENS.check_usize(budget_tokens).map_err(|why| ProemError::input("--budget", why))?;
        let mut owners: Vec<String> = turn.owners.iter().map(|o| one_line(o, 128)).filter(|o| !o.is_empty()).collect();
        owners.sort();
        owners.dedup();
        let thinking = turn.thinking.as_deref().or(config.runtime.thinking.as_deref());
        Ok(Resolved {
            session,
            mode,
            tokenizer,
            tokenizer_exact,
            agent_id: one_line(&config.agent_id(self.workspace.root()), 64),
            budget_tokens,
            owners,
            turn: TurnInputs {
                replies_optional: turn.replies_optional,
                thinking: thinking.map(|t| one_line(t, 24).to_lowercase()).filter(|t| !t.is_empty()),
                zone_abbreviation,
                date: now.format("%Y-%m-%d (%A)").to_string(),
                timezone: zone.name().to_string(),
                channel: turn.channel.as_deref().map(clean_channel).filter(|c| !c.is_empty()),
                chat_kind: turn.chat_kind,
                group_title,
                extra: turn
                    .extra
                    .as_deref()
                    .map(|e| neutralize(clean_owned(e.to_string()).trim()))
                    .filter(|e| !e.is_empty()),
                provider,
                model,
            },
            zone,
            now,
            notes,
        })
    }

    /// Stage 2, read the workspace: the bootstrap files, the skills and the
    /// tools, or what the last build under the same file-check `generation`
    /// read (with what reading reported then).
    pub(crate) fn read_workspace(
        &self,
        turn: &Turn,
        resolved: &Resolved,
        generation: Option<u64>,
        tools_hash: Option<u128>,
        plugin_memo: &(dyn Fn() -> Option<MemoKeys> + Sync),
        diagnostics: &mut Vec<Diagnostic>,
    ) -> Result<Read, ProemError> {
        let group_chat = turn.chat_kind == Some(ChatKind::Group);
        // Skills are read when this mode's form shows some (minimal and
        // none: the pinned ones, GoClaw).
        let with_skills = match self.config.skills.forms.of(resolved.mode) {
            SkillForm::List | SkillForm::Search => true,
            SkillForm::Pinned => !self.config.skills.pinned.is_empty(),
            SkillForm::Off => false,
        };
        let key = generation.filter(|_| self.caching.workspace_reads).map(|generation| WorkspaceKey {
            generation,
            session: resolved.session,
            group_chat,
            with_skills,
            tools_from_config: tool_list(turn).is_none(),
        });
        // Shared, not copied: only the files and skills the build owns are cloned.
        let remembered = key.and_then(|k| self.workspace_reads.lock().as_ref().filter(|r| r.key == k).cloned());
        if let Some(read) = remembered {
            diagnostics.extend(read.notes.iter().cloned());
            let mut tool_notes = Vec::new();
            let tools = match tool_list(turn) {
                Some(t) => self.prepare_tools(t, tools_hash, &mut tool_notes),
                None => self.prepare_tools(&read.config_tools, None, &mut tool_notes),
            };
            diagnostics.extend(tool_notes);
            return Ok(Read {
                files: read.files.clone(),
                skills: read.skills.clone(),
                tools,
                plugin_memo: plugin_memo(),
            });
        }
        self.read_workspace_files(
            turn,
            resolved.session,
            group_chat,
            with_skills,
            key,
            tools_hash,
            plugin_memo,
            diagnostics,
        )
    }

    /// [`Assembler::read_workspace`] from disk: the bootstrap files on this
    /// thread and the skills on proem's reader thread (both are mostly
    /// system calls), this thread helping with the skills once its own part
    /// is done. What was read is kept under `key`.
    #[allow(clippy::too_many_arguments)]
    fn read_workspace_files(
        &self,
        turn: &Turn,
        session: SessionKind,
        group_chat: bool,
        with_skills: bool,
        key: Option<WorkspaceKey>,
        tools_hash: Option<u128>,
        plugin_memo: &(dyn Fn() -> Option<MemoKeys> + Sync),
        diagnostics: &mut Vec<Diagnostic>,
    ) -> Result<Read, ProemError> {
        let config = &self.config;
        let build_span = tracing::Span::current();
        let skills_read = crate::parallel::SharedWork::default();
        // A skills root the system could not list (out of descriptors, say).
        let unlisted = std::sync::OnceLock::new();
        let read_skills = || {
            build_span.in_scope(|| {
                let _s = tracing::info_span!("load_skills").entered();
                let per_turn = self.workspace.per_turn_files();
                skills_read.work(
                    || {
                        skills::folders(&self.workspace, &config.skills).unwrap_or_else(|e| {
                            let _ = unlisted.set(e);
                            Vec::new()
                        })
                    },
                    |dir| match &per_turn {
                        Ok(per_turn) => skills::read(&self.workspace, dir, per_turn),
                        Err(e) => Err(e.clone()),
                    },
                );
            })
        };
        let notes_from = diagnostics.len();
        let mut config_tools = Vec::new();
        let (files, plugin_memo, tools) = crate::parallel::in_place_scope(|scope| {
            if let (true, Some(scope)) = (with_skills, scope) {
                scope.spawn(|_| read_skills());
            }
            let plugin_memo = plugin_memo();
            let files = {
                let _s = tracing::info_span!("load_files").entered();
                bootstrap::load(&self.workspace, config, session, group_chat, diagnostics)
            };
            let mut tool_notes = Vec::new();
            let tools = match tool_list(turn) {
                Some(t) => Ok(self.prepare_tools(t, tools_hash, &mut tool_notes)),
                None => self.tools_from_config().map(|t| {
                    let prepared = self.prepare_tools(&t, None, &mut tool_notes);
                    config_tools = t;
                    prepared
                }),
            };
            if with_skills {
                read_skills();
            }
            (files, plugin_memo, tools.map(|t| (t, tool_notes)))
        });
        // What the machine refused fails the build before anything read is
        // kept: a build must never depend on how many descriptors were free.
        if let Some(e) = unlisted.into_inner() {
            return Err(e.into());
        }
        let files = files?;
        let skills_read = skills_read.into_results().into_iter().collect::<Result<Vec<_>, _>>()?;
        let skills = Arc::new(skills::collect(skills_read, &config.skills, diagnostics));
        let (tools, tool_notes) = tools?;
        if let Some(key) = key {
            *self.workspace_reads.lock() = Some(Arc::new(WorkspaceRead {
                key,
                files: files.clone(),
                skills: skills.clone(),
                config_tools,
                notes: diagnostics[notes_from..].to_vec(),
            }));
        }
        diagnostics.extend(tool_notes);
        Ok(Read { files, skills, tools, plugin_memo })
    }

    /// [`crate::stable_inputs::workspace_rows`] of these files, tools and
    /// skills, the last ones reused while the build gets the very same
    /// lists (shared by the render, prepared-tools and workspace memos).
    fn workspace_rows(&self, lists: WorkspaceLists) -> WorkspaceRows {
        let compute = || Arc::new(crate::stable_inputs::workspace_rows(&lists.0, &lists.1, &lists.2));
        self.workspace_rows.get_or_compute_if(self.caching.workspace_reads, || lists.clone(), compute)
    }

    /// A slot for the tokens of each of `files`, filled when first counted:
    /// the last build's slots while the build has the very same files and
    /// tokenizer (a count depends on nothing else).
    fn file_tokens_of(&self, files: &InjectedFiles, counter: &TokenCounter) -> Arc<Vec<std::sync::OnceLock<usize>>> {
        let compute = || Arc::new(files.iter().map(|_| std::sync::OnceLock::new()).collect());
        let inputs = || (files.clone(), crate::memo::KeyHasher::default().str(counter.tokenizer().name()).finish());
        self.file_tokens.get_or_compute_if(self.caching.token_counts, inputs, compute)
    }

    /// The report's `stable_inputs` ([`crate::stable_inputs::collect`]),
    /// the last ones reused while the build has the very same workspace
    /// rows and stable sections (the config and plugins are fixed for the
    /// assembler's life).
    fn stable_inputs_of(&self, sections: &[SectionReport], workspace: WorkspaceRows) -> Arc<[StableInput]> {
        let compute = || {
            crate::stable_inputs::collect(&crate::stable_inputs::Sources {
                sections,
                workspace: &workspace,
                plugins: self.plugins.plugins(),
                config: &self.config_inputs,
            })
            .into()
        };
        let inputs = || (workspace.clone(), crate::stable_inputs::sections_key(sections));
        self.stable_inputs.get_or_compute_if(self.caching.workspace_reads, inputs, compute)
    }

    /// [`native_tool_schemas`] of `tools`, reused while the build gets the
    /// same prepared list (one per tool list: [`Assembler::prepare_tools`]).
    fn native_schemas_of(&self, tools: &Arc<Vec<PromptTool>>) -> Arc<str> {
        let compute = || native_tool_schemas(tools).into();
        self.native_schemas.get_or_compute_if(self.caching.prepared_tools, || tools.clone(), compute)
    }

    /// What the plugins see of this build (`None` without plugins).
    pub(crate) fn plugin_context(&self, resolved: &Resolved, read: &Read) -> Option<BuildContext> {
        if self.plugins.is_empty() {
            return None;
        }
        let turn = &resolved.turn;
        Some(BuildContext {
            agent_id: resolved.agent_id.clone(),
            mode: resolved.mode,
            provider: turn.provider.clone(),
            model: turn.model.clone(),
            channel: turn.channel.clone(),
            chat_kind: turn.chat_kind,
            tools: read
                .tools
                .iter()
                .map(|t| ContextTool {
                    name: t.name.clone(),
                    description: t.summary.clone(),
                    parameters_json: t.schema_is_json.then(|| t.schema.clone()),
                })
                .collect(),
            skills: read.skills.clone(),
            config_json: "{}".into(),
            now: resolved.now.to_rfc3339(),
            timezone: resolved.zone.name().to_string(),
            unix_seconds: resolved.now.timestamp(),
            utc_offset_seconds: resolved.now.offset().local_minus_utc(),
            group_title: turn.group_title.clone(),
            extra: turn.extra.clone(),
            budget_tokens: u32::try_from(resolved.budget_tokens).unwrap_or(u32::MAX),
            tokenizer: resolved.tokenizer.name().to_string(),
        })
    }

    /// Stage 3, run the `agent:bootstrap` hooks: each may replace, add or
    /// drop files; then sub-agent and cron sessions keep their allowlist.
    /// The files this mode keeps (GoClaw's per-mode lists,
    /// `[bootstrap.mode_files]`) are kept before and after the hooks.
    pub(crate) fn run_bootstrap_hooks(
        &self,
        ctx: Option<&CallContexts>,
        mut files: Vec<BootstrapFile>,
        resolved: &Resolved,
        run: &mut BuildRun,
        plugin_memo: Option<MemoKeys>,
    ) -> Result<Vec<BootstrapFile>, ProemError> {
        let mode_files = self.config.bootstrap.mode_files.of(resolved.mode);
        let keep_mode_files = |files: &mut Vec<BootstrapFile>| {
            if let Some(list) = mode_files {
                files.retain(|f| list.contains(&f.name));
            }
        };
        keep_mode_files(&mut files);
        let Some(ctx) = ctx else { return Ok(files) };
        let _s = tracing::info_span!("plugins", hooks = "agent:bootstrap").entered();
        self.plugins.report_load_failures(run);
        let mut files =
            self.plugins.run_bootstrap(ctx, files, clock(resolved), resolved.tokenizer, run, plugin_memo)?;
        if resolved.session.uses_file_allowlist() {
            let allow = &self.config.bootstrap.subagent_allowlist;
            files.retain(|f| allow.contains(&f.name));
        }
        keep_mode_files(&mut files);
        Ok(files)
    }

    /// What the core sections are made from: the stable inputs (files,
    /// skills, tools, config) and the turn's; with what choosing them says
    /// (a name the config and IDENTITY.md disagree on, skills in their
    /// search form).
    pub(crate) fn core_inputs(
        &self,
        resolved: &Resolved,
        files: Vec<BootstrapFile>,
        skills: Arc<Vec<Skill>>,
        tools: Arc<Vec<PromptTool>>,
        diagnostics: &mut Vec<Diagnostic>,
    ) -> CoreInputs<'_> {
        let config = &self.config;
        let agent_name = agent_name(config, &resolved.agent_id, &files, diagnostics);
        let inputs = CoreInputs {
            stable: StableInputs {
                mode: resolved.mode,
                session: resolved.session,
                agent_name,
                agent_id: resolved.agent_id.clone(),
                kind: config.agent.kind,
                config,
                files,
                skills,
                tools,
                workspace_path: if config.sandbox.enabled {
                    one_line(&config.sandbox.workdir, 200)
                } else {
                    one_line(&self.workspace.root().display().to_string(), 400)
                },
                owners: resolved.owners.clone(),
                budget_tokens: resolved.budget_tokens,
                memos: self.caching.workspace_reads.then_some(&self.render_memos),
            },
            turn: resolved.turn.clone(),
        };
        if let (_, Some(why)) = crate::core_sections::skills_form(&inputs.stable) {
            diagnostics.push(Diagnostic::info(
                "skills_search_form",
                format!("skills: {why}, so the skills section says how to find one instead of listing them all"),
            ));
        }
        inputs
    }

    /// Stage 4, collect sections: the plugins' section hooks run on their
    /// threads while this one counts the prompt the core sections make
    /// alone (the budget stage then finds most paragraphs counted); their
    /// sections and the caller's go together.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn collect_sections<'c>(
        &self,
        ctx: Option<&CallContexts>,
        inputs: &CoreInputs,
        contributed: &'c [Section],
        counter: &TokenCounter,
        resolved: &Resolved,
        run: &mut BuildRun,
        plugin_memo: Option<MemoKeys>,
    ) -> Result<(Cow<'c, [Section]>, Option<crate::core_sections::CoreRender>), ProemError> {
        let Some(ctx) = ctx else { return Ok((Cow::Borrowed(contributed), None)) };
        let _s = tracing::info_span!("plugins", hooks = "sections").entered();
        let mut ahead = None;
        let mut count_ahead = || ahead = Some(budget::count_ahead(inputs, counter));
        let files = &inputs.stable.files;
        let mut plugin_sections = self.plugins.run_sections(
            ctx,
            files,
            clock(resolved),
            resolved.tokenizer,
            run,
            plugin_memo,
            &mut count_ahead,
        )?;
        if plugin_sections.is_empty() {
            return Ok((Cow::Borrowed(contributed), ahead));
        }
        plugin_sections.extend(contributed.iter().cloned());
        Ok((Cow::Owned(plugin_sections), ahead))
    }

    /// Stage 6, the report: the prompt and what made it (sections, files,
    /// plugins, tokens, diagnostics). With [`Assembler::set_prompt_only`],
    /// the parts that are only reported ([`Details`]) are left empty.
    pub(crate) fn report(
        &self,
        fitted: Fitted,
        inputs: &CoreInputs,
        resolved: &Resolved,
        mut run: BuildRun,
        counter: &TokenCounter,
        mut diagnostics: Vec<Diagnostic>,
    ) -> Built {
        let details = match self.prompt_only {
            true => Details::default(),
            false => self.details(&fitted, inputs, resolved, &run, counter),
        };
        // Cuts by the file caps (the budget's own are reported with it).
        for injected in fitted.render.files.iter() {
            let Some(cap) = injected.cut_by.filter(|c| *c != crate::bootstrap::Cap::Budget) else { continue };
            let r = &injected.report;
            diagnostics.push(Diagnostic::warn(
                "file_truncated",
                format!("{}: {} characters cut to {} ({})", r.name, r.raw_chars, r.injected_chars, cap.describe()),
            ));
        }
        let plugins = self
            .plugins
            .plugins()
            .iter()
            .map(|p| run.reports.remove(&p.id).unwrap_or_else(|| PluginReport::new(&p.id, p.status())))
            .collect();
        let joined = fitted.joined;
        let dynamic_tokens = match self.prompt_only {
            true => 0,
            false => counter.count(&joined.dynamic),
        };
        if self.caching.token_counts {
            crate::tokens::after_build(counter);
        }
        Built {
            stable_hash: match (self.prompt_only, self.caching.token_counts) {
                (true, _) => String::new(),
                (false, true) => {
                    self.stable_hash.get_or_compute(fitted.stable_xxh3, || sha256_hex(joined.stable.as_bytes()))
                }
                (false, false) => sha256_hex(joined.stable.as_bytes()),
            },
            tokens: TokenReport {
                total: fitted.total_tokens,
                stable: fitted.stable_tokens,
                dynamic: dynamic_tokens,
                budget: resolved.budget_tokens,
                tool_schemas: details.tool_schemas,
            },
            prompt: joined.prompt,
            stable: joined.stable,
            dynamic: joined.dynamic,
            session: joined.session,
            turn_context: joined.turn_context,
            cache: crate::cache::CachePlan {
                profile: self.config.cache.profile.resolve(resolved.turn.provider.as_deref()),
                ttls: self.config.cache.ttl.effective(),
            },
            mode: resolved.mode,
            tokenizer: resolved.tokenizer.name().to_string(),
            exact: resolved.tokenizer_exact,
            sections: details.sections,
            stable_inputs: details.stable_inputs,
            files: details.files,
            plugins,
            diagnostics,
            file_details: details.file_details,
            left_out: details.left_out,
        }
    }

    /// What the report says about the prompt beyond the prompt itself.
    fn details(
        &self,
        fitted: &Fitted,
        inputs: &CoreInputs,
        resolved: &Resolved,
        run: &BuildRun,
        counter: &TokenCounter,
    ) -> Details {
        let layout = self.config.layout().mode(resolved.mode);
        let file_tokens = self.file_tokens_of(&fitted.render.files, counter);
        let count = |k: usize| *file_tokens[k].get_or_init(|| counter.count_kept(&fitted.render.files[k].text));
        let (files, file_details) = file_reports(fitted, inputs, run, count, layout);
        let sections = self.section_reports(fitted, run, counter);
        let workspace_rows = self.workspace_rows((
            fitted.render.files.clone(),
            inputs.stable.tools.clone(),
            inputs.stable.skills.clone(),
        ));
        Details {
            stable_inputs: self.stable_inputs_of(&sections, workspace_rows),
            sections,
            files,
            file_details,
            left_out: left_out(fitted, self.config.layout(), layout),
            tool_schemas: match self.config.tools.native_calling {
                true => counter.count_kept(&self.native_schemas_of(&inputs.stable.tools)),
                false => 0,
            },
        }
    }

    /// Each section of the prompt: where it came from, its size, whether
    /// it was cut.
    fn section_reports(&self, fitted: &Fitted, run: &BuildRun, counter: &TokenCounter) -> Vec<SectionReport> {
        fitted
            .sections
            .iter()
            .map(|s| {
                let (tokens, hash) = crate::budget::count_section(s, counter);
                SectionReport {
                    id: s.id.clone(),
                    source: s.source.to_string(),
                    zone: s.zone,
                    chars: self.section_chars(&s.body, hash),
                    tokens,
                    truncated: (s.source == Source::Core && fitted.render.truncated.contains(&s.id))
                        || run.capped.contains(&s.key()),
                    body_hash: hash as u64,
                }
            })
            .collect()
    }
}

/// The parts of a report that say what made the prompt, not the prompt:
/// empty with [`Assembler::set_prompt_only`].
#[derive(Default)]
struct Details {
    sections: Vec<SectionReport>,
    stable_inputs: std::sync::Arc<[crate::report::StableInput]>,
    files: Vec<crate::report::FileReport>,
    file_details: Vec<crate::report::FileDetail>,
    left_out: Vec<crate::report::LeftOut>,
    tool_schemas: usize,
}

/// Each file the build loaded, and what became of it: its sizes, whether
/// it was cut, and (the detail) its tokens, zone and source. A file whose
/// section a plugin replaced (SOUL.md under an AIEOS persona) is loaded but
/// not in the prompt: it is reported as not injected, as is a file whose
/// group's core section is not in the prompt (dropped by the budget). Only a
/// section placed `At` the file group's id replaces it: merge refuses any
/// other contributed section that takes a core id.
fn file_reports(
    fitted: &Fitted,
    inputs: &CoreInputs,
    run: &BuildRun,
    tokens_of_file: impl Fn(usize) -> usize,
    layout: &crate::layout::ModeLayout,
) -> (Vec<FileReport>, Vec<FileDetail>) {
    let replaced_by = |group_section: &str| {
        fitted
            .sections
            .iter()
            .find(|s| s.id == group_section && s.source != Source::Core && s.slot.placement() == Placement::At)
            .map(|s| s.source.to_string())
    };
    let in_prompt =
        |group_section: &str| fitted.sections.iter().any(|s| s.id == group_section && s.source == Source::Core);
    let mut files = fitted.render.file_reports(inputs);
    let mut details = Vec::with_capacity(files.len());
    for f in files.iter_mut() {
        if let Some(plugin) = run.file_sources.get(&f.name) {
            f.source = format!("plugin:{plugin}");
        }
        let rendered = fitted.render.files.iter().find(|i| i.name == f.name);
        let by = rendered.and_then(|i| replaced_by(i.group.section_id()));
        if by.is_some() || rendered.is_some_and(|i| !in_prompt(i.group.section_id())) {
            f.injected_chars = 0;
        }
        // (its index in the render's files, and the file)
        let injected = (fitted.render.files.iter().enumerate())
            .find(|(_, i)| i.name == f.name && !i.text.is_empty())
            .filter(|_| by.is_none() && f.injected_chars > 0);
        let why_not_shown = match (injected, f.missing, &by) {
            (Some(_), _, _) => None,
            (None, true, _) => Some("missing".to_string()),
            (None, false, Some(by)) => Some(format!("replaced by {by}")),
            (None, false, None) => Some(why_not_shown(fitted, &f.name, rendered.map(|i| i.group.section_id()), layout)),
        };
        details.push(FileDetail {
            why_not_shown,
            tokens: injected.map(|(k, _)| tokens_of_file(k)).unwrap_or(0),
            zone: injected.map(|(_, i)| layout.zone(i.group.section_id())),
            source: match (by, run.file_sources.get(&f.name)) {
                (Some(by), _) => format!("replaced by {by}"),
                (None, Some(plugin)) => format!("plugin:{plugin}"),
                (None, None) => "workspace".into(),
            },
        });
    }
    (files, details)
}

/// Why a loaded file (neither missing nor replaced) is not in the prompt:
/// the budget cut it to nothing or dropped its section, its section is not
/// in this mode, or it was not used for this mode or session at all
/// (`section`: the section it was rendered for, `None` when it was not).
fn why_not_shown(fitted: &Fitted, name: &str, section: Option<&str>, layout: &crate::layout::ModeLayout) -> String {
    if fitted.knobs.file_caps.get(name) == Some(&0) {
        return "for the budget".into();
    }
    let Some(section) = section else { return "not used in this mode or session".into() };
    if fitted.knobs.dropped.contains(&(CORE_SOURCE.to_string(), section.to_string())) {
        format!("for the budget (with its section {section})")
    } else if !layout.has(section) {
        format!("not in this mode (its section {section} is not)")
    } else {
        "empty".into()
    }
}

/// The sections of the agent's layout that are not in this prompt because
/// of the mode or the budget, in layout order, with why, then the
/// contributed (plugin) sections the budget dropped. (A section of this
/// mode with nothing to say this turn is not listed.)
fn left_out(
    fitted: &Fitted,
    whole: &crate::layout::Layout,
    layout: &crate::layout::ModeLayout,
) -> Vec<crate::report::LeftOut> {
    use crate::report::LeftOut;
    let present = |id: &str| fitted.sections.iter().any(|s| s.id == id);
    let dropped = |source: &str, id: &str| fitted.knobs.dropped.contains(&(source.to_string(), id.to_string()));
    let mut out = Vec::new();
    for entry in whole.entries() {
        let why = if present(entry.id) || out.iter().any(|l: &LeftOut| l.id == entry.id) {
            continue;
        } else if !layout.has(entry.id) {
            format!("not in this mode ({})", layout.mode().as_str())
        } else if dropped(CORE_SOURCE, entry.id) {
            "for the budget".to_string()
        } else {
            // In this mode with nothing to say this turn (no owners, no
            // skills): not a row, or every prompt would list a dozen.
            continue;
        };
        out.push(LeftOut { id: entry.id.to_string(), source: CORE_SOURCE.to_string(), why });
    }
    for (source, id) in &fitted.knobs.dropped {
        if source != CORE_SOURCE {
            out.push(LeftOut { id: id.clone(), source: source.clone(), why: "for the budget".into() });
        }
    }
    out
}

/// The build's clock as plugins see it: whole seconds since the epoch.
fn clock(resolved: &Resolved) -> std::time::Duration {
    std::time::Duration::from_secs(u64::try_from(resolved.now.timestamp()).unwrap_or(0))
}

/// The turn's value, else the config's, as one safe line; `None` when blank.
fn turn_or_config(turn: &Option<String>, config: &Option<String>, max_chars: usize) -> Option<String> {
    turn.as_deref().or(config.as_deref()).map(|v| one_line(v, max_chars)).filter(|v| !v.is_empty())
}

/// A channel name as the prompt shows it: one lower-case word.
fn clean_channel(c: &str) -> String {
    one_line(c, 32)
        .to_lowercase()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        .collect()
}

impl Assembler {
    /// The tokenizer for `model` and whether its counts are the model's
    /// own: `[budget] tokenizer` when set (the operator's choice, taken as
    /// exact, but for `claude-estimate`), else by the model's family (see
    /// [`crate::model_tokenizers`]); an open model counted without its
    /// tokenizer.json is said in `notes`.
    fn tokenizer_for(&self, model: Option<&str>, notes: &mut Vec<Diagnostic>) -> (Tokenizer, bool) {
        if let Some(loaded) = self.file_tokenizer {
            return (loaded, true);
        }
        if let Some(named) = self.config.budget.tokenizer.as_deref().and_then(Tokenizer::from_name) {
            return (named, named != Tokenizer::ClaudeEstimate);
        }
        let family = crate::model_tokenizers::family_of(model.unwrap_or(""));
        if let crate::model_tokenizers::Family::Open(name) = family {
            notes.push(Diagnostic::info(
                "tokenizer_not_exact",
                format!(
                    "model {} uses the {name} tokenizer, which proem has no copy of: counted with cl100k_base, \
                     not exactly; set [budget] tokenizer to the model's tokenizer.json (a path inside the agent directory)",
                    model.unwrap_or("")
                ),
            ));
        }
        (family.builtin(), family.builtin_is_exact())
    }
}

/// The tools as a runtime sends them natively (one function object each,
/// compact JSON, as cleaned for the prompt), for counting their tokens.
fn native_tool_schemas(tools: &[PromptTool]) -> String {
    let mut out = String::new();
    for t in tools {
        let parameters = if t.schema.is_empty() { "{}" } else { t.schema.as_str() };
        let name = serde_json::to_string(&t.name).unwrap_or_default();
        let description = serde_json::to_string(&t.summary).unwrap_or_default();
        out.push_str(&format!(
            "{{\"type\":\"function\",\"function\":{{\"name\":{name},\"description\":{description},\"parameters\":{parameters}}}}}\n"
        ));
    }
    out
}

/// The name the identity line gives the agent: `[agent] name`, else the
/// name IDENTITY.md states, else the id. When the config and IDENTITY.md
/// disagree the config wins, and a diagnostic says so: one agent, one name.
fn agent_name(
    config: &crate::config::Config,
    agent_id: &str,
    files: &[crate::bootstrap::BootstrapFile],
    diagnostics: &mut Vec<Diagnostic>,
) -> String {
    let configured = config.agent.name.as_deref().map(|n| one_line(n, 64)).filter(|n| !n.is_empty());
    let stated = files.iter().find(|f| f.name == "IDENTITY.md").and_then(|f| f.text()).and_then(identity_md_name);
    match (configured, stated) {
        (Some(name), Some(other)) if !name.eq_ignore_ascii_case(&other) => {
            diagnostics.push(Diagnostic::warn(
                "name_conflict",
                format!(
                    "[agent] name is {name:?} but IDENTITY.md says {other:?}; the identity line uses {name:?}: make them agree"
                ),
            ));
            name
        }
        (Some(name), _) => name,
        (None, Some(stated)) => stated,
        (None, None) => agent_id.to_string(),
    }
}

/// The name an IDENTITY.md states: the first line that reads `Name: X`,
/// as a list item or in bold (`- **Name:** X`) or not.
pub fn identity_md_name(text: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let line = line.trim().trim_start_matches(['-', '*', '+']).trim();
        let plain = line.replace("**", "").replace("__", "");
        let (key, value) = plain.split_once(':')?;
        if !key.trim().eq_ignore_ascii_case("name") {
            return None;
        }
        let value = one_line(neutralize(value.trim()).trim_matches(['*', '_', '`', ' ']), 64);
        (!value.is_empty()).then_some(value)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assembler(config: &str) -> (tempfile::TempDir, Assembler) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("proem.toml"), config).unwrap();
        std::fs::write(dir.path().join("AGENTS.md"), "# Rules\nBe kind.\n").unwrap();
        static NO_CODE: std::sync::OnceLock<crate::plugin::runtime::AnswersOnly> = std::sync::OnceLock::new();
        let runtime = NO_CODE.get_or_init(|| crate::plugin::runtime::AnswersOnly::of(None));
        let assembler = Assembler::open_with(dir.path(), None, runtime).unwrap();
        (dir, assembler)
    }

    fn now() -> DateTime<FixedOffset> {
        DateTime::parse_from_rfc3339("2026-11-21T23:30:00Z").unwrap()
    }

    /// The rule: a read the system refuses for want of a resource (out of
    /// descriptors) never shapes a build. Every read of a build (each file,
    /// each skill, each folder listing, the per-turn lookups, the tools
    /// file) is refused in turn, alone and with every read after it: the
    /// build fails with [`ProemError::Exhausted`] or builds the very prompt
    /// of a build the system refused nothing, and the same assembler builds
    /// that prompt once the system gives again (nothing of the failed build
    /// was kept).
    #[test]
    fn a_read_the_system_refuses_fails_the_build_and_never_changes_it() {
        let (dir, _) = assembler("");
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let config = "[bootstrap]\nextra_files = [\"NOTES.md\", \"TEAM-RULES.md\"]\n\n[tools]\nfile = \"tools.json\"\n";
        std::fs::write(root.join("proem.toml"), config).unwrap();
        for (name, text) in [("SOUL.md", "Be curious."), ("IDENTITY.md", "Name: Marlow"), ("USER.md", "Ana, UTC.")] {
            std::fs::write(root.join(name), text).unwrap();
        }
        std::fs::write(root.join("TEAM-RULES.md"), "Ship on Fridays.").unwrap();
        // Read as MEMORY.md's lower-case alternative, after MEMORY.md is
        // found missing: a second read whose refusal is the system's too.
        std::fs::write(root.join("memory.md"), "Met Ana in May.").unwrap();
        // A per-turn file under another name: read as missing, which a
        // per-turn lookup the system refused must not turn into its text.
        std::fs::hard_link(root.join("USER.md"), root.join("NOTES.md")).unwrap();
        for skill in ["deploy", "review", "triage"] {
            std::fs::create_dir_all(root.join("skills").join(skill)).unwrap();
            let text = format!("---\nname: {skill}\ndescription: {skill}s things\n---\nSteps.\n");
            std::fs::write(root.join("skills").join(skill).join("SKILL.md"), text).unwrap();
        }
        std::fs::write(root.join("tools.json"), r#"[{"name": "exec", "description": "Runs it."}]"#).unwrap();
        static NO_CODE: std::sync::OnceLock<crate::plugin::runtime::AnswersOnly> = std::sync::OnceLock::new();
        let runtime = NO_CODE.get_or_init(|| crate::plugin::runtime::AnswersOnly::of(None));
        let open = || Assembler::open_with(&root, None, runtime).unwrap();
        let turn = Turn { now: Some(now()), ..Turn::default() };
        let clean = open().build(&turn).unwrap();
        for needed in ["Be curious.", "Ship on Fridays.", "Met Ana in May.", "deploy", "triage", "exec"] {
            assert!(clean.prompt.contains(needed), "{needed} is missing from the clean build");
        }
        let stable = clean.prompt.split("<!-- PROEM_CACHE_BOUNDARY -->").next().unwrap();
        assert!(!stable.contains("Ana, UTC."), "a per-turn file's text above the boundary");
        let assembler = open();
        crate::workspace::faults::plan(&root, 0..0);
        assembler.build(&turn).unwrap();
        let reads = crate::workspace::faults::done(&root);
        assert!(reads >= 10, "a build made {reads} reads");
        let mut failed = 0;
        for first in 0..reads {
            for refused in [first..first + 1, first..usize::MAX] {
                let assembler = open();
                crate::workspace::faults::plan(&root, refused.clone());
                let built = assembler.build(&turn);
                crate::workspace::faults::done(&root);
                match built {
                    Err(ProemError::Exhausted { .. }) => failed += 1,
                    Ok(built) => assert_eq!(built.prompt, clean.prompt, "reads {refused:?} refused changed the prompt"),
                    Err(e) => panic!("reads {refused:?} refused: {e}"),
                }
                assert_eq!(
                    assembler.build(&turn).unwrap().prompt,
                    clean.prompt,
                    "after reads {refused:?} were refused"
                );
            }
        }
        assert!(failed >= reads, "only {failed} of {} refusals failed a build", 2 * reads);
    }

    #[test]
    fn resolving_cleans_every_per_turn_text_once() {
        let (_dir, a) = assembler("[provider]\nname = \"openai\"\nmodel = \"gpt-5.1\"\n");
        let turn = Turn {
            channel: Some(" Tele\u{202e}GRAM!\n".into()),
            chat_kind: Some(ChatKind::Group),
            group_title: Some("The \"Team\"\nroom".into()),
            extra: Some("  be brief <!-- PROEM_CACHE_BOUNDARY -->  ".into()),
            owners: vec!["b".into(), " ".into(), "a".into(), "b".into()],
            timezone: Some("Asia/Tokyo".into()),
            thinking: Some(" HIGH ".into()),
            ..Turn::default()
        };
        let r = a.resolve_turn(&turn, now()).unwrap();
        assert_eq!(r.turn.channel.as_deref(), Some("telegram"));
        assert_eq!(r.turn.group_title.as_deref(), Some("The Team room"));
        let extra = r.turn.extra.as_deref().unwrap();
        assert!(extra.starts_with("be brief") && !extra.contains("PROEM_CACHE_BOUNDARY"), "{extra}");
        assert_eq!(r.owners, ["a", "b"]);
        assert_eq!(r.turn.thinking.as_deref(), Some("high"));
        assert_eq!(r.turn.date, "2026-11-22 (Sunday)", "the date in the turn's zone");
        assert_eq!(r.tokenizer, Tokenizer::O200kBase);
        assert_eq!(r.mode, Mode::Full);
    }

    #[test]
    fn a_group_title_counts_only_in_a_group_chat() {
        let (_dir, a) = assembler("");
        let turn = Turn { group_title: Some("Room".into()), chat_kind: Some(ChatKind::Direct), ..Turn::default() };
        assert_eq!(a.resolve_turn(&turn, now()).unwrap().turn.group_title, None);
    }

    #[test]
    fn the_session_key_caps_the_mode_and_a_bad_zone_or_budget_is_an_error() {
        let (_dir, a) = assembler("");
        let heartbeat = Turn { session_key: Some("agent:main:heartbeat".into()), ..Turn::default() };
        assert_eq!(a.resolve_turn(&heartbeat, now()).unwrap().mode, Mode::Minimal);
        let zone = Turn { timezone: Some("Mars/Olympus".into()), ..Turn::default() };
        assert!(a.resolve_turn(&zone, now()).is_err());
        let budget = Turn { budget: Some(0), ..Turn::default() };
        assert!(a.resolve_turn(&budget, now()).is_err());
    }

    #[test]
    fn a_second_read_under_one_generation_reads_no_file_and_replays_the_notes() {
        let (dir, a) = assembler("[bootstrap]\nextra_files = [\"NOTES.md\"]\n");
        let turn = Turn::default();
        let r = a.resolve_turn(&turn, now()).unwrap();
        let mut first = Vec::new();
        let read = a.read_workspace(&turn, &r, Some(7), None, &|| None, &mut first).unwrap();
        assert!(read.files.iter().any(|f| f.name == "AGENTS.md"));
        assert!(first.iter().any(|d| d.message.contains("NOTES.md")), "a missing extra file is noted: {first:?}");
        // Under the same generation the workspace is not read again: a file
        // written meanwhile is not seen (the generation would have moved).
        std::fs::write(dir.path().join("NOTES.md"), "new").unwrap();
        let mut second = Vec::new();
        let again = a.read_workspace(&turn, &r, Some(7), None, &|| None, &mut second).unwrap();
        assert_eq!(second, first);
        assert_eq!(again.files.len(), read.files.len());
        let mut third = Vec::new();
        let fresh = a.read_workspace(&turn, &r, Some(8), None, &|| None, &mut third).unwrap();
        assert!(fresh.files.iter().any(|f| f.name == "NOTES.md"), "a new generation reads again");
    }

    #[test]
    fn without_plugins_there_is_no_plugin_context_and_hooks_change_nothing() {
        let (_dir, a) = assembler("");
        let turn = Turn::default();
        let r = a.resolve_turn(&turn, now()).unwrap();
        let read = a.read_workspace(&turn, &r, None, None, &|| None, &mut Vec::new()).unwrap();
        assert!(a.plugin_context(&r, &read).is_none());
        let names: Vec<String> = read.files.iter().map(|f| f.name.clone()).collect();
        let files = a.run_bootstrap_hooks(None, read.files, &r, &mut BuildRun::default(), None).unwrap();
        assert_eq!(files.iter().map(|f| f.name.clone()).collect::<Vec<_>>(), names);
    }
}
