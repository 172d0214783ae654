//! One [`Assembler`] per agent, one [`Assembler::build`] per turn: what is
//! kept between builds (the memos) and the sequence of the build's stages
//! (`stages.rs`):
//!
//! ```text
//! resolve the turn → read the workspace → run bootstrap hooks → collect sections → fit → report
//! ```

use crate::bootstrap::{OPTIONAL_FILES, STANDARD_FILES};
use crate::budget;
use crate::config::{config_path, Config};
use crate::error::ProemError;
use crate::memo::{BuildMemo, Caching, KeyHasher, LastOfShared, LastValue, Snapshot};
use crate::mode::SessionKind;
use crate::plugin::{BuildRun, CallContexts, MemoKeys, PluginSet};
use crate::report::{Built, Diagnostic};
use crate::section::Section;
use crate::skills;
use crate::sync::Lock;
use crate::tokens::{shared_counter, TokenCounter, Tokenizer};
use crate::tools;
use crate::turn::{parse_tools, ChatKind, Tool, Tools, Turn};
use crate::workspace::{Unavailable, Workspace};
use crate::zone::Zone;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Builds prompts for one agent directory.
pub struct Assembler {
    pub(crate) workspace: Workspace,
    pub(crate) config: Config,
    pub(crate) config_file: PathBuf,
    pub(crate) config_found: bool,
    pub(crate) plugins: PluginSet,
    pub(crate) caching: Caching,
    /// See [`Assembler::set_prompt_only`].
    pub(crate) prompt_only: bool,
    /// Remembered builds, shared: a hit hands out the same one
    /// ([`Assembler::memoised_shared`]) or a copy ([`Assembler::build`]).
    pub(crate) memo: Lock<BuildMemo<Arc<Remembered>>>,
    /// The last stable part's SHA-256, by its xxh3 (the stable part rarely
    /// changes, and SHA-256 of ~90 KB is the dearest step of a warm build).
    /// Kept unless every cache is off.
    pub(crate) stable_hash: LastValue<String>,
    /// The last turn's tools, prepared (with what preparing them reported),
    /// by a hash of the turn's tools.
    pub(crate) prepared_tools: LastValue<(Arc<Vec<crate::tools::PromptTool>>, Vec<Diagnostic>)>,
    /// The last prepared tools' native schemas (what their tokens are
    /// counted from), with the list they were made from: the same list,
    /// shared by `prepared_tools`, gives the same text.
    pub(crate) native_schemas: LastOfShared<PreparedTools, Arc<str>>,
    /// The last build's `stable_inputs` rows of its files, tools and skills,
    /// by the lists they were made from.
    pub(crate) workspace_rows: LastOfShared<WorkspaceLists, WorkspaceRows>,
    /// The last build's whole `stable_inputs`, by the workspace rows it
    /// was made from and [`crate::stable_inputs::sections_key`] of its
    /// sections (the config and plugins are the assembler's own): a new
    /// clock leaves both alone, and sorting the rows again was a tenth of
    /// its rebuild.
    pub(crate) stable_inputs: LastOfShared<(WorkspaceRows, u128), Arc<[crate::report::StableInput]>>,
    /// The tokens of each file of the last build's injected files, counted
    /// when first asked for, by the very list and the tokenizer's name (a
    /// new clock injects the same files: counting them again was hashing
    /// ~90 KB). Kept unless token counts are off.
    pub(crate) file_tokens: LastOfShared<(InjectedFiles, u128), Arc<Vec<std::sync::OnceLock<usize>>>>,
    /// Characters of recent section bodies, by their xxh3-128 (the report's
    /// `chars` is a pass over ~90 KB of its own). Cleared at
    /// [`SECTION_CHARS_LIMIT`] entries; kept unless token counts are off.
    pub(crate) section_chars: Lock<crate::digest_map::DigestMap<usize>>,
    /// What the last render made of the files, the skills and the stable
    /// sections (see `RenderMemos`).
    pub(crate) render_memos: crate::core_sections::RenderMemos,
    /// What the workspace gave the last build that read it (files, skills,
    /// the config's tools), valid while the file check's generation is.
    pub(crate) workspace_reads: Lock<Option<Arc<WorkspaceRead>>>,
    /// The tokenizer.json `[budget] tokenizer` names, loaded when the
    /// assembler was made (see [`crate::vocab`]).
    pub(crate) file_tokenizer: Option<Tokenizer>,
    /// The report's `stable_inputs` rows of the config, made once (see
    /// [`crate::stable_inputs::config_inputs`]).
    pub(crate) config_inputs: Vec<crate::report::StableInput>,
}

/// Section bodies whose characters [`Assembler::section_chars`] keeps.
const SECTION_CHARS_LIMIT: usize = 1024;

/// Which reads a [`WorkspaceRead`] answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WorkspaceKey {
    /// The file check's generation (any change to a watched path bumps it).
    pub(crate) generation: u64,
    /// The session kind and chat decide which files are read.
    pub(crate) session: SessionKind,
    pub(crate) group_chat: bool,
    /// Whether the skills were read.
    pub(crate) with_skills: bool,
    /// Whether the tools came from `[tools] file`.
    pub(crate) tools_from_config: bool,
}

/// The workspace as the last build read it.
#[derive(Debug, Clone)]
pub(crate) struct WorkspaceRead {
    pub(crate) key: WorkspaceKey,
    pub(crate) files: Vec<crate::bootstrap::BootstrapFile>,
    pub(crate) skills: Arc<Vec<crate::skills::Skill>>,
    pub(crate) config_tools: Vec<crate::turn::Tool>,
    /// What reading reported (missing files, refused skills, …), replayed.
    pub(crate) notes: Vec<Diagnostic>,
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
        // Only "no such file" means no config: a stat that fails for another
        // reason (out of file descriptors, a permission) is an error, never
        // an agent silently built with the defaults.
        let config_found = config.is_some()
            || config_file.try_exists().map_err(|e| {
                ProemError::config(&config_file, None, None, format!("cannot tell whether it exists: {e}"))
            })?;
        let config = if config_found { Config::load(&config_file)? } else { Config::default() };
        let plugins = PluginSet::load_with(&config.plugins, workspace.root(), crate::cache_dir::default(), runtime)?;
        Assembler::assemble(workspace, config, config_file, config_found, plugins)
    }

    /// An assembler with an already-parsed config, its plugins run by `runtime`.
    pub fn with_config(
        agent_dir: &Path,
        config: Config,
        runtime: &'static dyn crate::plugin::runtime::Runtime,
    ) -> Result<Assembler, ProemError> {
        let workspace = Workspace::open(agent_dir)?;
        let plugins = PluginSet::load_with(&config.plugins, workspace.root(), crate::cache_dir::default(), runtime)?;
        let config_file = agent_dir.join(crate::config::CONFIG_FILE);
        Assembler::assemble(workspace, config, config_file, true, plugins)
    }

    fn assemble(
        workspace: Workspace,
        config: Config,
        config_file: PathBuf,
        config_found: bool,
        plugins: PluginSet,
    ) -> Result<Assembler, ProemError> {
        let file_tokenizer = match config.budget.tokenizer.as_deref().filter(|t| crate::vocab::is_file_name(t)) {
            Some(rel) => Some(Tokenizer::HuggingFace(crate::vocab::load_file(&workspace, rel)?)),
            None => None,
        };
        Ok(Assembler {
            render_memos: crate::core_sections::RenderMemos::default(),
            config_inputs: crate::stable_inputs::config_inputs(&config),
            workspace,
            config,
            config_file,
            config_found,
            plugins,
            caching: Caching::default(),
            prompt_only: false,
            memo: Lock::default(),
            stable_hash: LastValue::default(),
            prepared_tools: LastValue::default(),
            native_schemas: LastOfShared::default(),
            workspace_rows: LastOfShared::default(),
            stable_inputs: LastOfShared::default(),
            file_tokens: LastOfShared::default(),
            section_chars: Lock::default(),
            workspace_reads: Lock::default(),
            file_tokenizer,
        })
    }

    /// Chooses what is kept between builds (all on by default; see
    /// [`Caching`]). Token counts are shared by the whole process, so their
    /// switch applies to every assembler.
    pub fn set_caching(&mut self, caching: Caching) {
        self.caching = caching;
        for t in crate::tokens::shared_tokenizers() {
            shared_counter(t).set_memo(caching.token_counts);
        }
        *self.memo.get_mut() = BuildMemo::default();
        *self.workspace_reads.get_mut() = None;
    }

    /// With `on`, builds report only what `proem build` prints as text: the
    /// prompt and its parts (`stable`, `dynamic`, the session block, the
    /// turn context), the mode, the tokenizer, the plugins' statuses, every
    /// diagnostic and the total and stable token counts. Left empty:
    /// `stable_hash`, `sections`, `stable_inputs`, `files`, `file_details`,
    /// `left_out`, and the dynamic and tool-schema token counts, which take
    /// a tenth of a warm one-shot build to make (hashing the stable part,
    /// counting each section, the stable-input rows). The prompt is the same
    /// bytes either way. For a process that prints one text build and ends
    /// (the `proem` front); off by default. Forgets the remembered builds.
    pub fn set_prompt_only(&mut self, on: bool) {
        self.prompt_only = on;
        *self.memo.get_mut() = BuildMemo::default();
    }

    /// What is kept between builds.
    pub fn caching(&self) -> Caching {
        self.caching
    }

    /// How many builds were answered from the build memo.
    pub fn memo_hits(&self) -> u64 {
        self.memo.lock().hits()
    }

    /// How many builds reused the stable part the last build joined and
    /// counted (a new clock with the same stable inputs; see
    /// `budget::stable_part`).
    pub fn stable_part_reuses(&self) -> u64 {
        self.render_memos.stable_part_reuses.load(std::sync::atomic::Ordering::Relaxed)
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
        self.build_answer(turn, contributed).map(Answer::into_owned)
    }

    /// [`Assembler::build`], a build memo hit answered with the remembered
    /// build itself rather than a copy of it (a prompt and its two halves,
    /// twice the prompt's size): what a caller that keeps the build behind
    /// a shared pointer anyway (the language bindings) calls.
    pub fn build_shared(&self, turn: &Turn) -> Result<Arc<Built>, ProemError> {
        self.build_answer(turn, &[]).map(Answer::into_shared)
    }

    /// A build: a fresh one, or the build memo's remembered one.
    fn build_answer(&self, turn: &Turn, contributed: &[Section]) -> Result<Answer, ProemError> {
        let turn = &*self.with_tools_read(turn)?;
        let now = turn.now.unwrap_or_else(|| chrono::Utc::now().fixed_offset());
        let memoised = self.caching.builds || self.caching.plugin_outputs;
        if !memoised {
            return self.build_fresh(turn, contributed, now, &|| None, None, None).map(Answer::Fresh);
        }
        let refresh = || {
            let mut memo = self.memo.lock();
            let generation = memo.refresh(|events| self.snapshot(events));
            MemoKeys { generation, workspace_stamp: memo.stamp() }
        };
        if !self.caching.builds {
            // Only plugin outputs are memoised: their check need only come
            // before the plugins run, so it overlaps the file reads. Only a
            // plugin that may read the workspace is keyed by it
            // (`PluginSet::call_keys`): with none, no file check at all (a
            // `proem build` process: ~50 stats).
            let keys = || match self.plugins.reads_workspace() {
                true => Some(refresh()),
                false => Some(MemoKeys { generation: 0, workspace_stamp: None }),
            };
            return self.build_fresh(turn, contributed, now, &keys, None, None).map(Answer::Fresh);
        }
        // A build memoised under a generation must have read its files after
        // that generation's check: the check comes first.
        let keys = refresh();
        let generation = keys.generation;
        let tools_hash = tool_list(turn).map(tools_hash);
        let key = self.build_key(turn, contributed, now, tools_hash)?;
        let hit = self.memo.lock().get(key).cloned();
        if let Some(remembered) = hit {
            return Ok(Answer::Remembered(remembered.answer()));
        }
        let plugin_memo = self.caching.plugin_outputs.then_some(keys);
        let built =
            Arc::new(self.build_fresh(turn, contributed, now, &|| plugin_memo, Some(generation), tools_hash)?);
        if !built.depends_on_the_moment() {
            self.memo.lock().put(generation, key, Arc::new(Remembered::new(built.clone())));
        }
        Ok(Answer::Shared(built))
    }

    /// The build of `turn` when the build memo holds it and file events
    /// show nothing changed, without building or touching a file: one
    /// non-blocking read and a hash. `None` means "call
    /// [`Assembler::build`]" (no memo, not watched yet, a change, a miss).
    /// What `proem serve` answers on its async threads before handing a
    /// build to the blocking pool.
    pub fn memoised(&self, turn: &Turn) -> Option<Built> {
        self.memoised_shared(turn).map(|built| Built::clone(&built))
    }

    /// [`Assembler::memoised`] without the copy: the remembered build
    /// itself, shared.
    pub fn memoised_shared(&self, turn: &Turn) -> Option<Arc<Built>> {
        if !self.caching.builds || !self.caching.file_events {
            return None;
        }
        if matches!(turn.tools, Some(Tools::File(_))) {
            return None;
        }
        let now = turn.now.unwrap_or_else(|| chrono::Utc::now().fixed_offset());
        let key = self.build_key(turn, &[], now, tool_list(turn).map(tools_hash)).ok()?;
        BuildMemo::peek(&self.memo, key).map(|remembered| remembered.answer())
    }

    /// `turn`, its tools read when it names a tools file (inside the agent
    /// directory, like every workspace read), so that the rest of a build
    /// sees a list.
    fn with_tools_read<'t>(&self, turn: &'t Turn) -> Result<std::borrow::Cow<'t, Turn>, ProemError> {
        match &turn.tools {
            Some(Tools::File(name)) => {
                let tools = Some(Tools::List(self.read_tools_file(name)?));
                Ok(std::borrow::Cow::Owned(Turn { tools, ..turn.clone() }))
            }
            _ => Ok(std::borrow::Cow::Borrowed(turn)),
        }
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
            // A listing the system refused would leave these skills
            // unwatched and make a later snapshot look changed: none.
            for dir in self.workspace.listed_subdirs(root).ok()? {
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
        // Every field is named: a field added to `Turn` does not compile
        // until it is in the key (`now` is the clock given, `tools` their hash).
        let Turn {
            mode,
            session_key,
            heartbeat,
            replies_optional,
            thinking,
            provider,
            model,
            channel,
            chat_kind,
            group_title,
            extra,
            owners,
            tools: _,
            now: _,
            timezone,
            budget,
        } = turn;
        let mut h = KeyHasher::default();
        let local = Zone::parse(timezone.as_deref().unwrap_or("UTC"))?.local(now)?.time;
        if !self.plugins.sees_the_clock() {
            // Without a hook that sees the clock only the date in the turn's
            // time zone is shown: a new clock on the same day is a memo hit.
            h.str(&local.format("%Y-%m-%d").to_string());
        } else {
            h.str(&local.to_rfc3339());
        }
        h.opt(mode.map(|m| m.as_str())).opt(session_key.as_deref()).opt(provider.as_deref());
        h.num(u64::from(*heartbeat)).num(u64::from(*replies_optional)).opt(thinking.as_deref());
        h.opt(model.as_deref()).opt(channel.as_deref()).num(match chat_kind {
            None => 0,
            Some(ChatKind::Direct) => 1,
            Some(ChatKind::Group) => 2,
        });
        h.opt(group_title.as_deref()).opt(extra.as_deref()).opt(timezone.as_deref());
        h.num(u64::from(budget.is_some())).num(budget.unwrap_or(0) as u64).num(owners.len() as u64);
        for o in owners {
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
    ///
    /// The stages of docs/ARCHITECTURE.md, each a function of `stages.rs`.
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
        let mut diagnostics = self.config_notes();
        let resolved = self.resolve_turn(turn, now)?;
        let read = self.read_workspace(turn, &resolved, generation, tools_hash, plugin_memo, &mut diagnostics)?;
        diagnostics.extend(resolved.notes.iter().cloned());
        let ctx = self.plugin_context(&resolved, &read).map(|c| CallContexts::new(c, read.plugin_memo.is_some()));
        let mut run = BuildRun::default();
        let files = self.run_bootstrap_hooks(ctx.as_ref(), read.files, &resolved, &mut run, read.plugin_memo)?;
        let inputs = self.core_inputs(&resolved, files, read.skills, read.tools, &mut diagnostics);
        let own_counter;
        let counter = match self.caching.token_counts {
            true => shared_counter(resolved.tokenizer),
            // Without kept counts, a counter of this build's own: each
            // paragraph is still encoded once per build, nothing is kept.
            false => {
                own_counter = TokenCounter::new(resolved.tokenizer);
                &own_counter
            }
        };
        let (sections, ahead) =
            self.collect_sections(ctx.as_ref(), &inputs, contributed, counter, &resolved, &mut run, read.plugin_memo)?;
        diagnostics.append(&mut run.diagnostics);
        let fitted = {
            let _s = tracing::info_span!("fit_budget", budget = resolved.budget_tokens).entered();
            budget::fit(&inputs, &sections, counter, resolved.budget_tokens, &mut diagnostics, ahead)?
        };
        Ok(self.report(fitted, &inputs, &resolved, run, counter, diagnostics))
    }

    /// Characters of a section `body` whose xxh3-128 is `hash`.
    pub(crate) fn section_chars(&self, body: &str, hash: u128) -> usize {
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

    /// [`tools::prepare`], reusing the last result for the same tools
    /// (`hash`: their [`tools_hash`], when the caller has it already).
    pub(crate) fn prepare_tools(
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

    pub(crate) fn tools_from_config(&self) -> Result<Vec<crate::turn::Tool>, ProemError> {
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
        let file = self.workspace.read_text(rel, 16 * 1024 * 1024).map_err(|why| match why.or_exhausted(rel) {
            Err(exhausted) => ProemError::from(exhausted),
            Ok(why) => ProemError::Tools {
                path: path.clone(),
                message: match why {
                    Unavailable::Missing => "not found".into(),
                    other => other.describe(),
                },
            },
        })?;
        parse_tools(&file.text, &path)
    }
}

/// The turn's tool list (a tools file it names is read by then: see
/// [`Assembler::with_tools_read`]).
pub(crate) fn tool_list(turn: &Turn) -> Option<&[Tool]> {
    match &turn.tools {
        Some(Tools::List(tools)) => Some(tools),
        Some(Tools::File(_)) | None => None,
    }
}

/// A hash of every field of a tool list, so two lists hash alike only when
/// they are the same (once per build: the build memo's key and the
/// prepared tools' memo share it). Every field is named: a field added to
/// [`Tool`] does not compile until it is hashed here.
pub(crate) fn tools_hash(tools: &[crate::turn::Tool]) -> u128 {
    let mut h = KeyHasher::default();
    h.num(tools.len() as u64);
    for Tool { name, description, parameters, server } in tools {
        h.str(name).str(description);
        match parameters {
            Some(p) => h.json(p),
            None => h.num(u64::MAX),
        };
        h.opt(server.as_deref());
    }
    h.finish()
}

/// A build as the build memo keeps it. A hit answers it remembered (no
/// plugin ran, so each plugin's report says so and took no time): that
/// copy is made at the first hit, not with every build, since most builds
/// of a new clock are never asked for again; it then replaces the fresh
/// build here.
pub(crate) struct Remembered(Lock<(Arc<Built>, bool)>);

impl Remembered {
    fn new(fresh: Arc<Built>) -> Remembered {
        Remembered(Lock::new((fresh, false)))
    }

    /// The build as a hit answers it.
    fn answer(&self) -> Arc<Built> {
        let mut kept = self.0.lock();
        if !kept.1 {
            *kept = (Arc::new(kept.0.remembered()), true);
        }
        kept.0.clone()
    }
}

/// The files as injected, the prepared tools and the skills a build's
/// `stable_inputs` rows are made from.
pub(crate) type WorkspaceLists = (InjectedFiles, PreparedTools, Arc<Vec<crate::skills::Skill>>);

/// A build's files as injected (capped and neutralised), shared by the
/// builds of the same files (the render memo's).
pub(crate) type InjectedFiles = Arc<Vec<crate::bootstrap::InjectedFile>>;

/// The report's `stable_inputs` rows of a build's files, tools and skills,
/// shared.
pub(crate) type WorkspaceRows = Arc<Vec<crate::report::StableInput>>;

/// A tool list as prepared for the prompt, shared by the builds of it.
pub(crate) type PreparedTools = Arc<Vec<crate::tools::PromptTool>>;

/// What a build answered: built now, or the build memo's remembered build.
/// (Returned once per build and taken apart at once: boxing the fresh one
/// would only add an allocation.)
#[allow(clippy::large_enum_variant)]
enum Answer {
    /// Built now, nothing else holds it.
    Fresh(Built),
    /// Built now and kept by the build memo too.
    Shared(Arc<Built>),
    Remembered(Arc<Built>),
}

impl Answer {
    /// The build, owned (copied when the memo holds it too).
    fn into_owned(self) -> Built {
        match self {
            Answer::Fresh(built) => built,
            Answer::Shared(built) | Answer::Remembered(built) => Arc::unwrap_or_clone(built),
        }
    }

    /// The build, shared (a remembered one as it is).
    fn into_shared(self) -> Arc<Built> {
        match self {
            Answer::Fresh(built) => Arc::new(built),
            Answer::Shared(built) | Answer::Remembered(built) => built,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A tool whose every field is drawn from a few values, so that two
    /// drawn lists are often equal and often differ in one field alone.
    fn a_tool() -> impl Strategy<Value = Tool> {
        let parameters = prop::sample::select(vec![
            None,
            Some(serde_json::json!({})),
            Some(serde_json::json!({"type": "object"})),
            Some(serde_json::json!({"type": "object", "properties": {"n": {"type": "integer"}}})),
        ]);
        (
            prop::sample::select(vec!["exec", "read", "mcp__gh__issues"]),
            prop::sample::select(vec!["", "Runs it.", "Runs it!"]),
            parameters,
            prop::option::of(prop::sample::select(vec!["gh", "srv", ""])),
        )
            .prop_map(|(name, description, parameters, server)| Tool {
                name: name.into(),
                description: description.into(),
                parameters,
                server: server.map(String::from),
            })
    }

    proptest! {
        /// Two tool lists hash alike exactly when they are equal: no field
        /// of a tool is left out of the build memo's key (a list that
        /// differed in `server` alone was answered with the other's prompt).
        #[test]
        fn tool_lists_hash_alike_only_when_equal(
            a in prop::collection::vec(a_tool(), 0..3),
            b in prop::collection::vec(a_tool(), 0..3),
        ) {
            prop_assert_eq!(tools_hash(&a) == tools_hash(&b), a == b, "{:?} vs {:?}", a, b);
        }
    }
}
