//! The pipeline: one [`Assembler`] per agent, one [`Assembler::build`] per turn.
//!
//! ```text
//! resolve mode → load bootstrap files → load skills and tools → render core
//! sections → order → fit the token budget → join at the boundary → report
//! ```

use crate::bootstrap::{self, OPTIONAL_FILES, STANDARD_FILES};
use crate::budget;
use crate::config::{config_path, Config};
use crate::core_sections::{CoreInputs, StableInputs, TurnInputs};
use crate::digest::sha256_hex;
use crate::error::ProemError;
use crate::memo::{BuildMemo, Caching, KeyHasher, LastValue, Snapshot};
use crate::mode::{resolve_mode, SessionKind};
use crate::plugin::{BuildContext, BuildRun, ContextTool, MemoKeys, PluginSet};
use crate::report::{Built, Diagnostic, FileDetail, PluginReport, SectionReport, TokenReport};
use crate::section::Section;
use crate::skills;
use crate::sync::Lock;
use crate::text::{clean_owned, neutralize, one_line};
use crate::tokens::{save_counts, shared_counter, TokenCounter, Tokenizer};
use crate::tools;
use crate::turn::{parse_tools, ChatKind, Turn};
use crate::workspace::{Unavailable, Workspace};
use crate::zone::Zone;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Builds prompts for one agent directory.
pub struct Assembler {
    workspace: Workspace,
    config: Config,
    config_file: PathBuf,
    config_found: bool,
    plugins: PluginSet,
    caching: Caching,
    memo: Lock<BuildMemo<Built>>,
    /// The last stable part's SHA-256, by its xxh3 (the stable part rarely
    /// changes, and SHA-256 of ~90 KB is the dearest step of a warm build).
    /// Kept unless every cache is off.
    stable_hash: LastValue<String>,
    /// The last turn's tools, prepared (with what preparing them reported),
    /// by a hash of the turn's tools.
    prepared_tools: LastValue<(Arc<Vec<crate::tools::PromptTool>>, Vec<Diagnostic>)>,
    /// Characters of recent section bodies, by their xxh3-128 (the report's
    /// `chars` is a pass over ~90 KB of its own). Cleared at
    /// [`SECTION_CHARS_LIMIT`] entries; kept unless token counts are off.
    section_chars: Lock<HashMap<u128, usize>>,
    /// What the last render made of the files, the skills and the stable
    /// sections (see `RenderMemos`).
    render_memos: crate::core_sections::RenderMemos,
    /// What the workspace gave the last build that read it (files, skills,
    /// the config's tools), valid while the file check's generation is.
    workspace_reads: Lock<Option<Arc<WorkspaceRead>>>,
}

/// Section bodies whose characters [`Assembler::section_chars`] keeps.
const SECTION_CHARS_LIMIT: usize = 1024;

/// Which reads a [`WorkspaceRead`] answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct WorkspaceKey {
    /// The file check's generation (any change to a watched path bumps it).
    generation: u64,
    /// The session kind and chat decide which files are read.
    session: SessionKind,
    group_chat: bool,
    /// Whether the skills were read.
    with_skills: bool,
    /// Whether the tools came from `[tools] file`.
    tools_from_config: bool,
}

/// The workspace as the last build read it.
#[derive(Debug, Clone)]
struct WorkspaceRead {
    key: WorkspaceKey,
    files: Vec<crate::bootstrap::BootstrapFile>,
    skills: Arc<Vec<crate::skills::Skill>>,
    config_tools: Vec<crate::turn::Tool>,
    /// What reading reported (missing files, refused skills, …), replayed.
    notes: Vec<Diagnostic>,
}

impl Assembler {
    /// Opens an agent directory and loads its config: `config` when given
    /// (it must exist), else `<agent_dir>/proem.toml` when present, else the
    /// defaults; the plugins' code is run by `runtime` (see
    /// [`crate::plugin::runtime`]).
    pub fn open_with(
        agent_dir: &Path,
        config: Option<&Path>,
        runtime: &'static dyn crate::plugin::runtime::Runtime,
    ) -> Result<Assembler, ProemError> {
        let workspace = Workspace::open(agent_dir)?;
        let config_file = config_path(agent_dir, config);
        let config_found = config.is_some() || config_file.exists();
        let config = if config_found { Config::load(&config_file)? } else { Config::default() };
        let cache_dir = crate::disk::default_dir();
        let plugins = PluginSet::load_with(&config.plugins, workspace.root(), cache_dir.as_deref(), runtime)?;
        Ok(Assembler::assemble(workspace, config, config_file, config_found, plugins))
    }

    /// An assembler with an already-parsed config, its plugins run by `runtime`.
    pub fn with_config(
        agent_dir: &Path,
        config: Config,
        runtime: &'static dyn crate::plugin::runtime::Runtime,
    ) -> Result<Assembler, ProemError> {
        let workspace = Workspace::open(agent_dir)?;
        let cache_dir = crate::disk::default_dir();
        let plugins = PluginSet::load_with(&config.plugins, workspace.root(), cache_dir.as_deref(), runtime)?;
        let config_file = agent_dir.join(crate::config::CONFIG_FILE);
        Ok(Assembler::assemble(workspace, config, config_file, true, plugins))
    }

    fn assemble(
        workspace: Workspace,
        config: Config,
        config_file: PathBuf,
        config_found: bool,
        plugins: PluginSet,
    ) -> Assembler {
        Assembler {
            render_memos: crate::core_sections::RenderMemos::for_config(&config),
            workspace,
            config,
            config_file,
            config_found,
            plugins,
            caching: Caching::default(),
            memo: Lock::default(),
            stable_hash: LastValue::default(),
            prepared_tools: LastValue::default(),
            section_chars: Lock::default(),
            workspace_reads: Lock::default(),
        }
    }

    /// Chooses what is kept between builds (all on by default; see
    /// [`Caching`]). Token counts are shared by the whole process, so their
    /// switch applies to every assembler.
    pub fn set_caching(&mut self, caching: Caching) {
        self.caching = caching;
        for t in [Tokenizer::O200kBase, Tokenizer::Cl100kBase] {
            shared_counter(t).set_memo(caching.token_counts);
        }
        *self.memo.get_mut() = BuildMemo::default();
        *self.workspace_reads.get_mut() = None;
    }

    /// What is kept between builds.
    pub fn caching(&self) -> Caching {
        self.caching
    }

    /// How many builds were answered from the build memo.
    pub fn memo_hits(&self) -> u64 {
        self.memo.lock().hits()
    }

    /// Whether the memos' file check currently uses change notifications
    /// (see [`crate::memo`]) rather than a stat per file.
    pub fn files_watched(&self) -> bool {
        self.memo.lock().watched()
    }

    /// The config in use.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The agent's plugins, loaded (or not, with the reason), sorted by id.
    pub fn plugins(&self) -> &PluginSet {
        &self.plugins
    }

    /// Builds the prompt for one turn. Reads the workspace; never writes.
    pub fn build(&self, turn: &Turn) -> Result<Built, ProemError> {
        self.build_with(turn, &[])
    }

    /// Builds with extra sections contributed by the caller (made with
    /// [`Section::contributed`](crate::section::Section::contributed)). They are
    /// merged, ordered and budgeted exactly like plugin sections: placed by
    /// slot, replaced core sections reported, dropped first-among-optional
    /// when over budget, never protected.
    pub fn build_with(&self, turn: &Turn, contributed: &[Section]) -> Result<Built, ProemError> {
        let now = turn.now.unwrap_or_else(|| chrono::Utc::now().fixed_offset());
        let memoised = self.caching.builds || self.caching.plugin_outputs;
        if !memoised {
            return self.build_fresh(turn, contributed, now, &|| None, None, None);
        }
        let refresh = || {
            let mut memo = self.memo.lock();
            let generation = memo.refresh(|events| self.snapshot(events));
            MemoKeys { generation, workspace_stamp: memo.stamp() }
        };
        if !self.caching.builds {
            // Only plugin outputs are memoised: their check need only come
            // before the plugins run, so it overlaps the file reads.
            return self.build_fresh(turn, contributed, now, &|| Some(refresh()), None, None);
        }
        // A build memoised under a generation must have read its files after
        // that generation's check: the check comes first.
        let keys = refresh();
        let generation = keys.generation;
        let tools_hash = turn.tools.as_deref().map(tools_hash);
        let key = self.build_key(turn, contributed, now, tools_hash)?;
        if let Some(built) = self.memo.lock().get(key) {
            return Ok(built.clone());
        }
        let plugin_memo = self.caching.plugin_outputs.then_some(keys);
        let built = self.build_fresh(turn, contributed, now, &|| plugin_memo, Some(generation), tools_hash)?;
        self.memo.lock().put(generation, key, built.clone());
        Ok(built)
    }

    /// The build of `turn` when the build memo holds it and file events
    /// show nothing changed, without building or touching a file: one
    /// non-blocking read and a hash. `None` means "call
    /// [`Assembler::build`]" (no memo, not watched yet, a change, a miss).
    /// What `proem serve` answers on its async threads before handing a
    /// build to the blocking pool.
    pub fn memoised(&self, turn: &Turn) -> Option<Built> {
        if !self.caching.builds || !self.caching.file_events {
            return None;
        }
        let now = turn.now.unwrap_or_else(|| chrono::Utc::now().fixed_offset());
        let key = self.build_key(turn, &[], now, turn.tools.as_deref().map(tools_hash)).ok()?;
        self.memo.lock().peek(key).cloned()
    }

    /// The stats of every file a build may read, watched for changes when
    /// `file_events` and the caching allow it (see [`crate::memo`]).
    fn snapshot(&self, file_events: bool) -> Option<Snapshot> {
        let root = self.workspace.root();
        let mut paths: Vec<String> =
            STANDARD_FILES.iter().chain(OPTIONAL_FILES.iter()).map(|s| s.to_string()).collect();
        paths.push("memory.md".into());
        paths.extend(self.config.bootstrap.extra_files.iter().cloned());
        paths.extend(self.config.tools.file.iter().cloned());
        paths.extend(self.config.team.team_file());
        for root in skills::roots(&self.config.skills) {
            paths.push(root.to_string());
            for dir in self.workspace.subdirs(root) {
                paths.push(format!("{root}/{dir}/SKILL.md"));
                paths.push(format!("{root}/{dir}"));
            }
        }
        let file_events = file_events && self.caching.file_events;
        Snapshot::take(root, self.workspace.as_fd(), &paths, self.plugins.reads_workspace(), file_events)
    }

    /// Everything a build's output depends on besides the files, the config
    /// and the plugins: the turn (with its resolved clock, to the precision
    /// the output can show) and the contributed sections.
    fn build_key(
        &self,
        turn: &Turn,
        contributed: &[Section],
        now: chrono::DateTime<chrono::FixedOffset>,
        tools_hash: Option<u128>,
    ) -> Result<u128, ProemError> {
        let mut h = KeyHasher::default();
        let local = Zone::parse(turn.timezone.as_deref().unwrap_or("UTC"))?.local(now)?.time;
        if self.plugins.is_empty() {
            // Without plugins only the date in the turn's time zone is shown.
            h.str(&local.format("%Y-%m-%d").to_string());
        } else {
            h.str(&local.to_rfc3339());
        }
        h.opt(turn.mode.map(|m| m.as_str())).opt(turn.session_key.as_deref()).opt(turn.provider.as_deref());
        h.num(u64::from(turn.heartbeat)).num(u64::from(turn.replies_optional)).opt(turn.thinking.as_deref());
        h.opt(turn.model.as_deref()).opt(turn.channel.as_deref()).num(match turn.chat_kind {
            None => 0,
            Some(ChatKind::Direct) => 1,
            Some(ChatKind::Group) => 2,
        });
        h.opt(turn.group_title.as_deref()).opt(turn.extra.as_deref()).opt(turn.timezone.as_deref());
        h.num(turn.budget.map(|b| b as u64 + 1).unwrap_or(0)).num(turn.owners.len() as u64);
        for o in &turn.owners {
            h.str(o);
        }
        match tools_hash {
            None => h.num(0),
            Some(t) => h.num(1).num128(t),
        };
        // Contributed sections are rare and small: their debug form is exact.
        h.str(&format!("{contributed:?}"));
        Ok(h.finish())
    }

    /// One build from scratch (but for token counts and, when `plugin_memo`
    /// gives the memo's generation, plugin outputs). `generation` is the file
    /// check's generation when it was taken before this build (the build
    /// memo's path): then what the workspace gave the last build under the
    /// same generation is reused instead of read again.
    fn build_fresh(
        &self,
        turn: &Turn,
        contributed: &[Section],
        now: chrono::DateTime<chrono::FixedOffset>,
        plugin_memo: &(dyn Fn() -> Option<MemoKeys> + Sync),
        generation: Option<u64>,
        tools_hash: Option<u128>,
    ) -> Result<Built, ProemError> {
        let _span = tracing::info_span!("build", agent = %self.workspace.root().display()).entered();
        let config = &self.config;
        let mut diagnostics = Vec::new();
        if !self.config_found {
            diagnostics.push(Diagnostic::info(
                "config_default",
                format!("{} not found; using the default configuration", self.config_file.display()),
            ));
        }

        let session = SessionKind::of_turn(turn.session_key.as_deref(), turn.heartbeat);
        let caps = crate::mode::Caps {
            heartbeat: config.sessions.heartbeat_mode,
            cron: config.sessions.cron_mode,
            subagent: config.sessions.subagent_mode,
        };
        let mode = resolve_mode(turn.mode, session, config.agent.mode, caps);
        tracing::debug!(%mode, ?session, "mode resolved");

        // The bootstrap files and the skills are read side by side: both
        // are mostly system calls, which dominate a build that re-reads.
        let build_span = tracing::Span::current();
        // Skills are read when this mode's form shows some (minimal and
        // none: the pinned ones, GoClaw).
        let with_skills = match config.skills.forms.of(mode) {
            crate::config::SkillForm::List | crate::config::SkillForm::Search => true,
            crate::config::SkillForm::Pinned => !config.skills.pinned.is_empty(),
            crate::config::SkillForm::Off => false,
        };
        let skills_read = crate::parallel::SharedWork::default();
        let read_skills = || {
            build_span.in_scope(|| {
                let _s = tracing::info_span!("load_skills").entered();
                skills_read.work(
                    || skills::folders(&self.workspace, &config.skills),
                    |dir| skills::read(&self.workspace, dir),
                );
            })
        };
        let group_chat = turn.chat_kind == Some(ChatKind::Group);
        // What the workspace gave the last build, when its file check's
        // generation is still current and the same files were asked for.
        let read_key = generation.filter(|_| self.caching.workspace_reads).map(|g| WorkspaceKey {
            generation: g,
            session,
            group_chat,
            with_skills,
            tools_from_config: turn.tools.is_none(),
        });
        // Shared, not copied: only the files and skills the build owns are cloned.
        let remembered = read_key.and_then(|k| self.workspace_reads.lock().as_ref().filter(|r| r.key == k).cloned());
        let (mut files, skills, plugin_memo, tools) = match remembered {
            Some(read) => {
                diagnostics.extend(read.notes.iter().cloned());
                let mut tool_notes = Vec::new();
                let tools = match &turn.tools {
                    Some(t) => self.prepare_tools(t, tools_hash, &mut tool_notes),
                    None => self.prepare_tools(&read.config_tools, None, &mut tool_notes),
                };
                diagnostics.extend(tool_notes);
                (read.files.clone(), read.skills.clone(), plugin_memo(), tools)
            }
            None => {
                let notes_from = diagnostics.len();
                let mut config_tools = Vec::new();
                let (files, plugin_memo, tools) = crate::parallel::in_place_scope(|scope| {
                    if with_skills {
                        scope.spawn(|_| read_skills());
                    }
                    let plugin_memo = plugin_memo();
                    let files = {
                        let _s = tracing::info_span!("load_files").entered();
                        bootstrap::load(&self.workspace, config, session, group_chat, &mut diagnostics)
                    };
                    let mut tool_notes = Vec::new();
                    let tools = match &turn.tools {
                        Some(t) => Ok(self.prepare_tools(t, tools_hash, &mut tool_notes)),
                        None => self.tools_from_config().map(|t| {
                            let prepared = self.prepare_tools(&t, None, &mut tool_notes);
                            config_tools = t;
                            prepared
                        }),
                    };
                    // Then help with the skills the reader thread has not claimed.
                    if with_skills {
                        read_skills();
                    }
                    (files, plugin_memo, tools.map(|t| (t, tool_notes)))
                });
                let skills = Arc::new(skills::collect(skills_read.into_results(), &config.skills, &mut diagnostics));
                let (tools, tool_notes) = tools?;
                if let Some(key) = read_key {
                    *self.workspace_reads.lock() = Some(Arc::new(WorkspaceRead {
                        key,
                        files: files.clone(),
                        skills: skills.clone(),
                        config_tools,
                        notes: diagnostics[notes_from..].to_vec(),
                    }));
                }
                diagnostics.extend(tool_notes);
                (files, skills, plugin_memo, tools)
            }
        };

        let tz = Zone::parse(turn.timezone.as_deref().unwrap_or("UTC"))?;
        let crate::zone::Local { time: now, abbreviation: zone_abbreviation } = tz.local(now)?;
        let provider = turn_or_config(&turn.provider, &config.provider.name, 64);
        let model = turn_or_config(&turn.model, &config.provider.model, 96);
        let tokenizer = tokenizer_for(config, model.as_deref()).expect("validated with the config");
        let channel = turn.channel.as_deref().map(clean_channel).filter(|c| !c.is_empty());
        let agent_id = one_line(&config.agent_id(self.workspace.root()), 64);

        if turn.group_title.is_some() && turn.chat_kind != Some(ChatKind::Group) {
            diagnostics.push(Diagnostic::info(
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
        let extra =
            turn.extra.as_deref().map(|e| neutralize(clean_owned(e.to_string()).trim())).filter(|e| !e.is_empty());
        let budget_tokens = turn.budget.unwrap_or(config.budget.tokens());
        if budget_tokens == 0 {
            return Err(ProemError::input("--budget", "the token budget must be at least 1"));
        }

        let ctx = (!self.plugins.is_empty()).then(|| BuildContext {
            agent_id: agent_id.clone(),
            mode,
            provider: provider.clone(),
            model: model.clone(),
            channel: channel.clone(),
            chat_kind: turn.chat_kind.map(|k| match k {
                ChatKind::Direct => "direct".to_string(),
                ChatKind::Group => "group".to_string(),
            }),
            tools: tools
                .iter()
                .map(|t| ContextTool {
                    name: t.name.clone(),
                    description: t.summary.clone(),
                    parameters_json: t.schema_is_json.then(|| t.schema.clone()),
                })
                .collect(),
            skills: skills.clone(),
            config_json: "{}".into(),
            now: now.to_rfc3339(),
            timezone: tz.name().to_string(),
            unix_seconds: now.timestamp(),
            utc_offset_seconds: now.offset().local_minus_utc(),
            group_title: group_title.clone(),
            extra: extra.clone(),
            budget_tokens: u32::try_from(budget_tokens).unwrap_or(u32::MAX),
            tokenizer: tokenizer.name().to_string(),
        });
        let clock = std::time::Duration::from_secs(u64::try_from(now.timestamp()).unwrap_or(0));
        let mut run = BuildRun::default();
        // The files this mode keeps (GoClaw's per-mode lists), before and
        // after the hooks, as the sub-agent allowlist.
        let mode_files = config.bootstrap.mode_files.of(mode);
        let keep_mode_files = |files: &mut Vec<crate::bootstrap::BootstrapFile>| {
            if let Some(list) = mode_files {
                files.retain(|f| list.contains(&f.name));
            }
        };
        keep_mode_files(&mut files);
        if let Some(ctx) = &ctx {
            let _s = tracing::info_span!("plugins", hooks = "agent:bootstrap").entered();
            self.plugins.report_load_failures(&mut run);
            files = self.plugins.run_bootstrap(ctx, files, clock, tokenizer, &mut run, plugin_memo)?;
            if session.uses_file_allowlist() {
                let allow = &config.bootstrap.subagent_allowlist;
                files.retain(|f| allow.contains(&f.name));
            }
            keep_mode_files(&mut files);
        }
        let agent_name = agent_name(config, &agent_id, &files, &mut diagnostics);
        let mut owners: Vec<String> = turn.owners.iter().map(|o| one_line(o, 128)).filter(|o| !o.is_empty()).collect();
        owners.sort();
        owners.dedup();

        let turn_inputs = TurnInputs {
            replies_optional: turn.replies_optional,
            thinking: turn
                .thinking
                .as_deref()
                .or(config.runtime.thinking.as_deref())
                .map(|t| one_line(t, 24).to_lowercase())
                .filter(|t| !t.is_empty()),
            zone_abbreviation,
            date: now.format("%Y-%m-%d (%A)").to_string(),
            timezone: tz.name().to_string(),
            channel,
            chat_kind: turn.chat_kind,
            group_title,
            extra,
            provider,
            model,
        };
        let inputs = CoreInputs {
            stable: StableInputs {
                mode,
                session,
                agent_name,
                agent_id,
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
                owners,
                budget_tokens,
                memos: self.caching.workspace_reads.then_some(&self.render_memos),
            },
            turn: turn_inputs,
        };
        if let (_, Some(why)) = crate::core_sections::skills_form(&inputs.stable) {
            diagnostics.push(Diagnostic::info(
                "skills_search_form",
                format!("skills: {why}, so the skills section says how to find one instead of listing them all"),
            ));
        }

        // The process's counts; with token counts off, a counter of this
        // build's own: each paragraph is still encoded once per build (the
        // prompt, its sections and its files share most of them), and
        // nothing is kept after it.
        let this_build;
        let counter = if self.caching.token_counts {
            shared_counter(tokenizer)
        } else {
            this_build = TokenCounter::new(tokenizer);
            &this_build
        };
        let mut plugin_sections = Vec::new();
        let mut ahead = None;
        if let Some(ctx) = &ctx {
            let _s = tracing::info_span!("plugins", hooks = "sections").entered();
            // While the plugins run on their threads, this thread counts the
            // prompt the core sections make alone: the budget stage then
            // finds most of its paragraphs counted.
            let mut count_ahead = || ahead = Some(budget::count_ahead(&inputs, counter));
            plugin_sections = self.plugins.run_sections(
                ctx,
                &inputs.stable.files,
                clock,
                tokenizer,
                &mut run,
                plugin_memo,
                &mut count_ahead,
            )?;
        }
        diagnostics.append(&mut run.diagnostics);
        let contributed: std::borrow::Cow<[Section]> = if plugin_sections.is_empty() {
            std::borrow::Cow::Borrowed(contributed)
        } else {
            plugin_sections.extend(contributed.iter().cloned());
            std::borrow::Cow::Owned(plugin_sections)
        };
        let fitted = {
            let _s = tracing::info_span!("fit_budget", budget = budget_tokens, tokenizer = tokenizer.name()).entered();
            budget::fit(&inputs, &contributed, counter, budget_tokens, &mut diagnostics, ahead)?
        };

        let mut files = fitted.render.file_reports(&inputs);
        // A file whose section a plugin replaced (e.g. SOUL.md under an AIEOS
        // persona) is loaded but not in the prompt: report it as not injected.
        // Only a section placed `At` the file group's id replaces it: merge
        // refuses any other contributed section that takes a core id.
        let replaced_by = |group_section: &str| {
            fitted
                .sections
                .iter()
                .find(|s| {
                    s.id == group_section
                        && s.source != crate::section::Source::Core
                        && s.slot.placement() == crate::section::Placement::At
                })
                .map(|s| s.source.to_string())
        };
        // A file counts as injected only when its group's core section is
        // in the prompt (not replaced, not dropped by the budget).
        let in_prompt = |group_section: &str| {
            fitted.sections.iter().any(|s| s.id == group_section && s.source == crate::section::Source::Core)
        };
        let mut replaced: Vec<Option<String>> = Vec::with_capacity(files.len());
        for f in files.iter_mut() {
            if let Some(plugin) = run.file_sources.get(&f.name) {
                f.source = format!("plugin:{plugin}");
            }
            let injected = fitted.render.files.iter().find(|i| i.name == f.name);
            let by = injected.and_then(|i| replaced_by(i.group.section_id()));
            if by.is_some() || injected.is_some_and(|i| !in_prompt(i.group.section_id())) {
                f.injected_chars = 0;
            }
            replaced.push(by);
        }
        let layout = config.layout().mode(mode);
        let file_details = files
            .iter()
            .zip(&replaced)
            .map(|(f, by)| {
                let injected = fitted
                    .render
                    .files
                    .iter()
                    .find(|i| i.name == f.name && !i.text.is_empty())
                    .filter(|_| by.is_none() && f.injected_chars > 0);
                FileDetail {
                    tokens: injected.map(|i| counter.count(&i.text)).unwrap_or(0),
                    zone: injected.map(|i| layout.zone(i.group.section_id())),
                    source: match (by, run.file_sources.get(&f.name)) {
                        (Some(by), _) => format!("replaced by {by}"),
                        (None, Some(plugin)) => format!("plugin:{plugin}"),
                        (None, None) => "workspace".into(),
                    },
                }
            })
            .collect();
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
            .map(|p| {
                run.reports.remove(&p.id).unwrap_or_else(|| PluginReport {
                    id: p.id.clone(),
                    status: p.status().into(),
                    elapsed_us: 0,
                })
            })
            .collect();
        let sections = fitted
            .sections
            .iter()
            .map(|s| {
                let (tokens, hash) = counter.count_hashed(&s.body);
                SectionReport {
                    id: s.id.clone(),
                    source: s.source.to_string(),
                    zone: s.zone,
                    chars: self.section_chars(&s.body, hash),
                    tokens,
                    truncated: (s.source == crate::section::Source::Core && fitted.render.truncated.contains(&s.id))
                        || run.capped.contains(&s.key()),
                    body_hash: hash as u64,
                }
            })
            .collect();
        let joined = fitted.joined;
        let tokens = TokenReport {
            total: fitted.total_tokens,
            stable: fitted.stable_tokens,
            dynamic: counter.count(&joined.dynamic),
            budget: budget_tokens,
            tool_schemas: if config.tools.native_calling {
                counter.count(&native_tool_schemas(&inputs.stable.tools))
            } else {
                0
            },
        };
        if self.caching.token_counts {
            save_counts(counter);
        }
        Ok(Built {
            stable_hash: self.stable_hash(&joined.stable, fitted.stable_xxh3),
            prompt: joined.prompt,
            stable: joined.stable,
            dynamic: joined.dynamic,
            mode,
            tokenizer: tokenizer.name().to_string(),
            tokens,
            sections,
            files,
            plugins,
            diagnostics,
            file_details,
        })
    }

    /// Characters of a section `body` whose xxh3-128 is `hash`.
    fn section_chars(&self, body: &str, hash: u128) -> usize {
        if !self.caching.token_counts {
            return crate::text::char_len(body);
        }
        if let Some(chars) = self.section_chars.lock().get(&hash) {
            return *chars;
        }
        let chars = crate::text::char_len(body);
        let mut memo = self.section_chars.lock();
        if memo.len() >= SECTION_CHARS_LIMIT {
            memo.clear();
        }
        memo.insert(hash, chars);
        chars
    }

    /// The SHA-256 of the stable part, by its xxh3-128 (`xxh3`) when the
    /// token counts are kept.
    fn stable_hash(&self, stable: &str, xxh3: u128) -> String {
        if !self.caching.token_counts {
            return sha256_hex(stable);
        }
        self.stable_hash.get_or_compute(xxh3, || sha256_hex(stable))
    }

    /// [`tools::prepare`], reusing the last result for the same tools
    /// (`hash`: their [`tools_hash`], when the caller has it already).
    fn prepare_tools(
        &self,
        raw: &[crate::turn::Tool],
        hash: Option<u128>,
        notes: &mut Vec<Diagnostic>,
    ) -> Arc<Vec<crate::tools::PromptTool>> {
        if !self.caching.prepared_tools {
            return Arc::new(tools::prepare(raw, notes));
        }
        let key = hash.unwrap_or_else(|| tools_hash(raw));
        let (tools, diagnostics) = self.prepared_tools.get_or_compute(key, || {
            let mut diagnostics = Vec::new();
            (Arc::new(tools::prepare(raw, &mut diagnostics)), diagnostics)
        });
        notes.extend(diagnostics);
        tools
    }

    fn tools_from_config(&self) -> Result<Vec<crate::turn::Tool>, ProemError> {
        let Some(rel) = &self.config.tools.file else { return Ok(Vec::new()) };
        self.read_tools_file(rel).map_err(|e| match e {
            ProemError::Tools { path, message } if message == "not found" => {
                ProemError::Tools { path, message: "not found (set by [tools] file)".into() }
            }
            other => other,
        })
    }

    /// Reads a tools JSON file inside the agent directory (a path or
    /// symlink out of it is refused, as for every workspace read): `[tools]
    /// file`, and `proem serve`'s tools given by name.
    pub fn read_tools_file(&self, rel: &str) -> Result<Vec<crate::turn::Tool>, ProemError> {
        let path = self.workspace.root().join(rel);
        let file = self.workspace.read_text(rel, 16 * 1024 * 1024).map_err(|why| ProemError::Tools {
            path: path.clone(),
            message: match why {
                Unavailable::Missing => "not found".into(),
                other => other.describe(),
            },
        })?;
        parse_tools(&file.text, &path)
    }
}

/// A hash of every field of a tool list, so two lists hash alike only when
/// they are the same (once per build: the build memo's key and the
/// prepared tools' memo share it).
fn tools_hash(tools: &[crate::turn::Tool]) -> u128 {
    let mut h = KeyHasher::default();
    h.num(tools.len() as u64);
    for t in tools {
        h.str(&t.name).str(&t.description);
        match &t.parameters {
            Some(p) => h.json(p),
            None => h.num(u64::MAX),
        };
    }
    h.finish()
}

/// The turn's value, else the config's, as one safe line; `None` when blank.
fn turn_or_config(turn: &Option<String>, config: &Option<String>, max_chars: usize) -> Option<String> {
    turn.as_deref().or(config.as_deref()).map(|v| one_line(v, max_chars)).filter(|v| !v.is_empty())
}

fn clean_channel(c: &str) -> String {
    one_line(c, 32)
        .to_lowercase()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        .collect()
}

/// The tokenizer for `model`: `[budget] tokenizer` when set (`None` when that
/// name is unknown, which config validation rules out), else by model.
fn tokenizer_for(config: &Config, model: Option<&str>) -> Option<Tokenizer> {
    match &config.budget.tokenizer {
        Some(name) => Tokenizer::from_name(name),
        None => Some(Tokenizer::for_model(model.unwrap_or(""))),
    }
}

/// The tools as a runtime sends them natively (one function object each,
/// compact JSON, as cleaned for the prompt), for counting their tokens.
fn native_tool_schemas(tools: &[crate::tools::PromptTool]) -> String {
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
    config: &Config,
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
