//! The plugins of one agent: loaded once per [`Assembler`](crate::Assembler),
//! run on every build.
//!
//! Loading resolves each `[[plugins]]` entry to bytes (built-in or a file),
//! checks the API version before compiling, compiles through the on-disk
//! cache, pre-instantiates, and asks the plugin what it is. Running calls
//! the hooks: `agent:bootstrap` hooks one after another in plugin-id order
//! (each sees the previous one's files), then every `sections` and `overlay`
//! hook at once. Results are put in (plugin id) order before anything is
//! merged, so completion order never shows in the prompt.

use crate::bootstrap::{self, group_of, load_order, BootstrapFile, FileGroup};
use crate::cache_dir::CacheDir;
use crate::config::{PluginConfig, BUILTIN_IDS};
use crate::error::ProemError;
use crate::memo::KeyHasher;
use crate::plugin::answers::{Answered, Answers, Described};
use crate::plugin::binary::Wasm;
pub use crate::plugin::binary::MAX_PLUGIN_BYTES;
use crate::plugin::call::{CallLimits, Outcome, PluginError, Request, Response};
use crate::plugin::config_schema::Schema;
use crate::plugin::hooks::{self, BuildContext, ContextTool, Hook, OutputCaps, PluginInfo, RawFile};
use crate::plugin::runtime::{LinkResult, Linked, PendingCall, Runtime};
use crate::plugin::sandbox::{Grants, LogLine, Sandbox, View};
use crate::report::{Diagnostic, PluginReport, PluginStatus};
use crate::section::Section;
use crate::sync::Lock;
use crate::tokens::Tokenizer;
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Default memory cap per call.
pub const DEFAULT_MEMORY_MIB: u32 = 32;
/// Default CPU deadline per call.
pub const DEFAULT_DEADLINE_MS: u32 = 50;
/// Default cap on one section (or prefix, suffix, file) a plugin returns.
pub const DEFAULT_OUTPUT_KIB: u32 = 64;
/// The deadline for `describe` at load time (instantiation may be slow the first time).
const DESCRIBE_DEADLINE: Duration = Duration::from_millis(500);

/// One configured plugin, loaded or not.
pub struct LoadedPlugin {
    /// The id from proem.toml (the name in reports and `plugin:<id>`).
    pub id: String,
    /// `builtin:<id>` or the configured path.
    pub origin: String,
    /// Whether a failure fails the build.
    pub required: bool,
    /// What the operator granted.
    pub grants: Grants,
    /// The plugin's config table as JSON.
    pub config_json: String,
    /// Memory cap in bytes.
    pub memory_bytes: usize,
    /// CPU deadline per call.
    pub deadline: Duration,
    /// Output caps per call.
    pub caps: OutputCaps,
    /// Ready to run, or why not.
    pub state: Result<Ready, String>,
}

/// A plugin that loaded: what it said about itself, and its code, compiled
/// and linked the first time a call needs it (a process whose every answer
/// is on disk never starts wasmtime, see [`crate::plugin::answers`]).
#[derive(Clone)]
pub struct Ready {
    /// What it said about itself.
    pub info: PluginInfo,
    /// The config schema its binary declares, checked.
    pub config_schema: Option<Arc<Schema>>,
    code: Arc<Code>,
}

/// A plugin's binary and, once needed, its code linked by the runtime.
struct Code {
    /// The API version the binary was checked for.
    api: String,
    wasm: Wasm,
    cache_dir: Option<Arc<CacheDir>>,
    runtime: &'static dyn Runtime,
    linked: OnceLock<LinkResult>,
}

impl Code {
    fn linked(&self) -> Result<&Arc<dyn Linked>, String> {
        let linked = self.linked.get_or_init(|| {
            let digest = self.wasm.digest();
            self.runtime.link(&digest, &|| self.wasm.bytes(), &self.api, self.cache_dir.as_deref())
        });
        linked.as_ref().map(|(l, _)| l).map_err(ToString::to_string)
    }
}

impl Ready {
    /// Compiles (through the component cache) and links the plugin's code
    /// now, if no call needed it yet.
    pub fn link(&self) -> Result<(), String> {
        self.code.linked().map(|_| ())
    }

    /// Whether the compiled code came from the component cache (`None`
    /// until it was needed: answers from disk need no code).
    pub fn compiled_from_cache(&self) -> Option<bool> {
        match self.code.linked.get()? {
            Ok((_, origin)) => Some(*origin == crate::plugin::runtime::Origin::Cached),
            Err(_) => None,
        }
    }

    /// Whether the binary's bytes were read in this process: a build whose
    /// every answer is on disk reads none (its digest is kept by the
    /// file's stat, see [`crate::plugin::binary`]).
    pub fn binary_was_read(&self) -> bool {
        self.code.wasm.was_read()
    }

    /// Whether two loaded plugins run the same code: the entries of one
    /// binary share it (compiled, linked and described once).
    pub fn shares_code_with(&self, other: &Ready) -> bool {
        Arc::ptr_eq(&self.code, &other.code)
    }

    /// Whether the plugin speaks 0.2 or later (stable and turn hooks).
    pub fn splits_zones(&self) -> bool {
        !self.code.api.starts_with("0.1.")
    }
}

impl LoadedPlugin {
    /// `ok`, or `load_failed` (the reason is in `state`).
    pub fn status(&self) -> PluginStatus {
        if self.state.is_ok() {
            PluginStatus::Ok
        } else {
            PluginStatus::LoadFailed
        }
    }

    /// One hook call in this plugin's sandbox, ready to run (compiling the
    /// plugin first if no call needed it yet), seeing what `sees` says of
    /// the turn. `describe` runs with no grant: what a plugin says about
    /// itself depends on its binary alone.
    fn call_seeing(
        &self,
        code: &Code,
        agent_dir: &Path,
        sees: Sees,
        tokenizer: Tokenizer,
        deadline: Duration,
        request: Request,
    ) -> PendingCall {
        let grants = if matches!(request, Request::Info) { Grants::default() } else { self.grants };
        let (now, view) = match sees {
            Sees::Stable => (Duration::ZERO, View::Stable),
            Sees::Turn(now) => (now, View::Turn),
        };
        let sandbox = Sandbox {
            plugin: self.id.clone(),
            grants,
            agent_dir: agent_dir.to_path_buf(),
            memory_bytes: self.memory_bytes,
            now,
            tokenizer,
            view,
        };
        let limits = CallLimits::for_plugin(deadline, self.caps);
        match code.linked() {
            Ok(linked) => linked.call(sandbox, limits, request),
            Err(e) => Box::pin(std::future::ready(Outcome::host_failure(e))),
        }
    }
}

/// What a call observes of the turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sees {
    /// The stable inputs only: no clock (WASI's wall clock reads 1970), a
    /// blank turn, the workspace without its per-turn files
    /// ([`View::Stable`]). Its answer may go above the cache boundary.
    Stable,
    /// The turn: its clock and every file. Its answer goes below the
    /// boundary.
    Turn(Duration),
}

/// What the plugin memos key on for one build, from the assembler's file
/// check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoKeys {
    /// The file check's generation: stands for the workspace in this
    /// process's memo, for plugins that may read it.
    pub generation: u64,
    /// The workspace's [`crate::memo::Snapshot::stamp`]: stands for it in
    /// answers kept on disk (`None`: no answer of a plugin that may read
    /// the workspace is kept or read this build).
    pub workspace_stamp: Option<u128>,
}

/// A call's keys: in this process's memo, and on disk when kept there.
#[derive(Debug, Clone, Copy)]
struct CallKeys {
    memory: u128,
    disk: Option<u128>,
}

/// The plugins of one agent, sorted by id.
pub struct PluginSet {
    plugins: Vec<LoadedPlugin>,
    agent_dir: PathBuf,
    /// What runs their code.
    runtime: &'static dyn Runtime,
    /// Successful outcomes by [`call_key`]: a plugin is a pure function of
    /// what it can observe, so an identical call is not made twice.
    memo: Lock<crate::digest_map::DigestMap<Outcome>>,
    /// Answers kept across processes (`None`: no cache directory).
    answers: Option<Answers>,
}

/// Most plugin outcomes kept; the memo is cleared when it is full.
const MEMO_LIMIT: usize = 512;

/// What running the plugins for one build produced besides sections.
#[derive(Debug, Default)]
pub struct BuildRun {
    /// Per-plugin status and time, by plugin id.
    pub reports: BTreeMap<String, PluginReport>,
    /// Diagnostics, in plugin-id order.
    pub diagnostics: Vec<Diagnostic>,
    /// Files a bootstrap hook replaced or added: file name → plugin id.
    pub file_sources: BTreeMap<String, String>,
    /// Sections cut to their plugin's `max-tokens` hint: (source, id).
    pub capped: std::collections::BTreeSet<crate::section::SectionKey>,
}

impl BuildRun {
    /// Records one call's outcome: `ran` is its time when the plugin ran,
    /// `None` when its answer was remembered (a plugin is remembered in
    /// this build only when every one of its calls was).
    fn record(
        &mut self,
        plugin: &LoadedPlugin,
        logs: &[LogLine],
        ran: Option<Duration>,
        failure: Option<&PluginError>,
    ) {
        let report = self
            .reports
            .entry(plugin.id.clone())
            .or_insert_with(|| PluginReport { remembered: true, ..PluginReport::new(&plugin.id, PluginStatus::Ok) });
        if let Some(elapsed) = ran {
            report.remembered = false;
            report.elapsed_us =
                report.elapsed_us.saturating_add(u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX));
        }
        if let Some(f) = failure {
            if report.status == PluginStatus::Ok {
                report.status = f.status();
            }
        }
        for line in logs {
            let code = "plugin_log";
            let message = format!("plugin {}: {}", plugin.id, line.message);
            self.diagnostics.push(if line.level == tracing::Level::ERROR {
                Diagnostic::error(code, message)
            } else {
                Diagnostic::warn(code, message)
            });
        }
    }

    /// Records a failed call; `Err` when the plugin is required, or when
    /// the host could not serve the call for want of descriptors or memory
    /// ([`PluginError::Exhausted`]): left out, the plugin would make the
    /// prompt depend on the machine's load, so the build fails, as it does
    /// on the host's own refused reads.
    fn fail(
        &mut self,
        plugin: &LoadedPlugin,
        hook: Hook,
        failure: &PluginError,
        what_happens: &str,
    ) -> Result<(), ProemError> {
        if let PluginError::Exhausted(_) = failure {
            return Err(ProemError::Exhausted {
                path: format!("plugin {} ({hook})", plugin.id),
                message: failure.describe(),
            });
        }
        let message = format!("plugin {} ({hook}) {}", plugin.id, failure.describe());
        if plugin.required {
            return Err(ProemError::Plugin { id: plugin.id.clone(), message: format!("{message}; it is required") });
        }
        self.note(vec![Diagnostic::error(failure.code(), format!("{message}; {what_happens}"))]);
        Ok(())
    }

    /// Adds diagnostics, each once: the two halves of a 0.1 hook often
    /// find the same thing.
    fn note(&mut self, diagnostics: Vec<Diagnostic>) {
        for d in diagnostics {
            if !self.diagnostics.contains(&d) {
                self.diagnostics.push(d);
            }
        }
    }
}

impl PluginSet {
    /// Loads the configured plugins, their code run by `runtime`, compiled
    /// components cached in `cache_dir` (`None`: compile every time, write
    /// nothing). A plugin that cannot load is kept with its reason (reported
    /// on every build), unless it is `required`, which makes this an error
    /// naming it. With a runtime that runs no code
    /// ([`crate::plugin::runtime::AnswersOnly`]), a plugin whose
    /// `describe` answer is not kept on disk makes this
    /// [`ProemError::PluginCodeNeeded`], and so does any build that would
    /// call a hook whose answer is not kept.
    ///
    /// Each distinct binary (by [`Wasm::identity`]: the SHA-256 of a file's
    /// bytes) is checked, compiled, linked and described once, however
    /// many entries use it: they share its code.
    pub fn load_with(
        configs: &[PluginConfig],
        agent_dir: &Path,
        cache_dir: Option<Arc<CacheDir>>,
        runtime: &'static dyn Runtime,
    ) -> Result<PluginSet, ProemError> {
        // Identifying the runtime's executable costs a stat: only with plugins.
        let answers = if configs.is_empty() { None } else { Answers::open(cache_dir.as_deref(), runtime.identity()) };
        let prepared: Vec<(LoadedPlugin, Result<Wasm, String>)> =
            configs.iter().map(|c| prepare(c, agent_dir, runtime, answers.as_ref())).collect();
        // A pinned binary that changed never loads, required or not.
        for (config, (plugin, wasm)) in configs.iter().zip(&prepared) {
            if let (Some(pin), Ok(wasm)) = (&config.sha256, wasm) {
                if wasm.is_empty_builtin() && !runtime.runs_code() {
                    // A pinned built-in whose code this runtime does not carry.
                    return Err(ProemError::PluginCodeNeeded);
                }
                let digest = wasm.digest();
                if !digest.eq_ignore_ascii_case(pin) {
                    return Err(ProemError::Plugin {
                        id: plugin.id.clone(),
                        message: format!(
                            "plugin {}: {} has sha256 {digest}, but proem.toml pins {}: the binary changed; \
                             check where it came from, then update sha256 or restore the file",
                            plugin.id,
                            plugin.origin,
                            pin.to_ascii_lowercase()
                        ),
                    });
                }
            }
        }
        let empty = || PluginSet {
            plugins: Vec::new(),
            agent_dir: agent_dir.to_path_buf(),
            runtime,
            memo: Lock::default(),
            answers: answers.clone(),
        };
        if prepared.is_empty() {
            return Ok(empty());
        }
        let _span = tracing::info_span!("load_plugins", count = prepared.len()).entered();
        let (binaries, binary_of) = distinct_binaries(&prepared);
        let configs_by_id: HashMap<&str, &PluginConfig> = configs.iter().map(|c| (c.id.as_str(), c)).collect();
        let states = open_binaries(&binaries, cache_dir.as_ref(), agent_dir, answers.as_ref(), runtime)?;
        let mut plugins: Vec<LoadedPlugin> = Vec::with_capacity(prepared.len());
        for ((mut plugin, wasm), binary) in prepared.into_iter().zip(binary_of) {
            let state = match (wasm, binary) {
                (Err(why), _) => Err(why),
                (Ok(_), Some(i)) => states[i].clone().map_err(|e| format!("{}: {e}", plugin.origin)),
                (Ok(_), None) => Err("no binary".into()),
            };
            let state = state.and_then(|ready| match &ready.config_schema {
                Some(schema) => config_matches(schema, &plugin, configs_by_id.get(plugin.id.as_str())).map(|()| ready),
                None => Ok(ready),
            });
            if let Err(why) = &state {
                // Not loaded for the machine's reason (its file could not be
                // opened or read for want of descriptors or memory): the
                // load fails, as a build does on such a read, rather than
                // leave the plugin out of every build of this assembler.
                if crate::disk::names_exhaustion(why) {
                    return Err(ProemError::Exhausted { path: format!("plugin {}", plugin.id), message: why.clone() });
                }
                if plugin.required {
                    return Err(ProemError::Plugin {
                        id: plugin.id.clone(),
                        message: format!("plugin {} cannot be loaded: {why}; it is required", plugin.id),
                    });
                }
                // Every build reports it (`plugin_load_failed`), and `proem
                // build` prints that: a log line would say it twice.
                tracing::debug!(plugin = %plugin.id, "cannot load: {why}");
            }
            plugin.state = state;
            plugins.push(plugin);
        }
        plugins.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(PluginSet { plugins, ..empty() })
    }

    /// The plugins, sorted by id.
    pub fn plugins(&self) -> &[LoadedPlugin] {
        &self.plugins
    }

    /// Whether a loaded plugin may read the agent directory.
    pub fn reads_workspace(&self) -> bool {
        self.plugins.iter().any(|p| p.state.is_ok() && p.grants.workspace_read)
    }

    /// Whether any plugin is configured.
    pub fn is_empty(&self) -> bool {
        self.plugins.is_empty()
    }

    /// Whether a hook of a loaded plugin sees the turn's clock: a 0.2 `turn`
    /// hook, or any hook of a 0.1 plugin (each has a half that sees the
    /// turn). Stable and 0.2 bootstrap calls see a blank clock, and a plugin
    /// that failed to load is never called, so without such a hook a new
    /// clock changes only what the core sections print (the date).
    pub fn sees_the_clock(&self) -> bool {
        self.plugins.iter().any(|p| match &p.state {
            Ok(ready) if ready.splits_zones() => ready.info.turn,
            Ok(ready) => ready.info.sections || ready.info.overlay || ready.info.bootstrap,
            Err(_) => false,
        })
    }

    /// Reports plugins that failed to load, and grants a plugin asks for
    /// that its entry does not give, once per build.
    pub fn report_load_failures(&self, run: &mut BuildRun) {
        for p in &self.plugins {
            match &p.state {
                Err(why) => {
                    run.reports.insert(p.id.clone(), PluginReport::new(&p.id, p.status()));
                    run.diagnostics.push(Diagnostic::error(
                        "plugin_load_failed",
                        format!("plugin {} cannot be loaded and was left out: {why}", p.id),
                    ));
                }
                Ok(ready) => run.diagnostics.extend(missing_grants(p, ready)),
            }
        }
    }

    /// Runs the `agent:bootstrap` hooks in plugin-id order. Each sees the
    /// files as the previous hook left them; a failing hook's change is
    /// discarded. A 0.2 hook sees only the stable files (the per-turn ones
    /// pass it by) and the stable inputs ([`Sees::Stable`]). A 0.1 hook,
    /// which may look at every file and the turn, is called twice: on the
    /// stable files and a blank turn for the stable files it returns, and
    /// on every file and the turn for the per-turn files it returns.
    pub fn run_bootstrap(
        &self,
        contexts: &CallContexts,
        mut files: Vec<BootstrapFile>,
        now: Duration,
        tokenizer: Tokenizer,
        run: &mut BuildRun,
        memo: Option<MemoKeys>,
    ) -> Result<Vec<BootstrapFile>, ProemError> {
        for plugin in &self.plugins {
            let Ok(ready) = &plugin.state else { continue };
            if !ready.info.bootstrap {
                continue;
            }
            let (stable, per_turn): (Vec<BootstrapFile>, Vec<BootstrapFile>) =
                files.into_iter().partition(|f| group_of(&f.name) != FileGroup::Dynamic);
            let half = BootstrapHalf { plugin, ready, contexts, tokenizer, memo };
            let stable_out = self.run_bootstrap_half(&half, &stable, Sees::Stable, run)?;
            let per_turn_out = if ready.splits_zones() {
                None
            } else {
                let mut every: Vec<BootstrapFile> = stable.iter().chain(&per_turn).cloned().collect();
                every.sort_by(|a, b| load_order(&a.name).cmp(&load_order(&b.name)));
                self.run_bootstrap_half(&half, &every, Sees::Turn(now), run)?
            };
            files = match stable_out {
                Some(out) => apply_files(&plugin.id, stable, out, run),
                None => stable,
            };
            files.extend(match per_turn_out {
                Some(out) => apply_files(&plugin.id, per_turn, out, run),
                None => per_turn,
            });
            files.sort_by(|a, b| load_order(&a.name).cmp(&load_order(&b.name)));
        }
        Ok(files)
    }

    /// One bootstrap call seeing `seen` and what `sees` says of the turn:
    /// the files of its half it returned (the stable ones for
    /// [`Sees::Stable`], the per-turn ones otherwise), or `None` when it
    /// failed (recorded, and `Err` when the plugin is required).
    fn run_bootstrap_half(
        &self,
        half: &BootstrapHalf<'_>,
        seen: &[BootstrapFile],
        sees: Sees,
        run: &mut BuildRun,
    ) -> Result<Option<Vec<RawFile>>, ProemError> {
        let BootstrapHalf { plugin, ready, contexts, tokenizer, memo } = *half;
        let stable_only = sees == Sees::Stable;
        // A 0.1 hook's halves are told apart in the memo; a 0.2 hook has one.
        let hook = if stable_only { "agent:bootstrap" } else { "agent:bootstrap/turn" };
        let keys = memo.zip(contexts.hash(sees)).map(|(memo, context)| {
            let key = call_key(plugin, hook, context, Some(bootstrap::files_hash(seen.iter())), tokenizer);
            self.call_keys(plugin, ready, key, memo)
        });
        let (Outcome { result, logs, elapsed }, ran) = match keys.and_then(|k| self.remembered(k)) {
            Some(hit) => (hit, false),
            None => {
                let request = Request::Bootstrap(with_config(contexts.context(sees), plugin), raw_files(seen));
                let outcome = self.run_jobs(vec![(plugin, ready, sees, request)], tokenizer, &mut || {})?.remove(0);
                (self.remember(keys, outcome), true)
            }
        };
        let checked = match result {
            Ok(Response::Bootstrap(out)) => hooks::validate_files(out, plugin.caps)
                .and_then(|out| files_of_half(out, sees, ready.splits_zones()))
                .map_err(|why| PluginError::BadOutput { files: true, why }),
            Ok(_) => Err(PluginError::WrongHook { files: true }),
            Err(f) => Err(f),
        };
        run.record(plugin, &logs, ran.then_some(elapsed), checked.as_ref().err());
        match checked {
            Ok(out) => Ok(Some(out)),
            Err(f) => {
                run.fail(plugin, Hook::Bootstrap, &f, "its change to the bootstrap files was discarded")?;
                Ok(None)
            }
        }
    }

    /// Runs every plugin's section hooks concurrently (0.1: `sections` and
    /// `overlay`; 0.2: `stable` and `turn`) and returns their validated
    /// sections. `files` are the build's bootstrap files: a 0.2 `stable`
    /// hook gets the stable ones, a `turn` hook the per-turn ones. A 0.1
    /// hook, which may look at the turn, is called twice: seeing the stable
    /// inputs only (a blank turn, [`Sees::Stable`]) for the sections and
    /// prefix it puts above the cache boundary, and seeing the turn for
    /// those below it; a plugin that uses no per-turn input answers both
    /// the same, so its prompt is the same bytes. A plugin whose call fails
    /// or whose output is invalid contributes nothing to this build.
    /// `meanwhile` runs on this thread while the calls run (not at all when
    /// every answer came from the memo).
    #[allow(clippy::too_many_arguments)]
    pub fn run_sections(
        &self,
        contexts: &CallContexts,
        files: &[BootstrapFile],
        now: Duration,
        tokenizer: Tokenizer,
        run: &mut BuildRun,
        memo: Option<MemoKeys>,
        meanwhile: &mut dyn FnMut(),
    ) -> Result<Vec<Section>, ProemError> {
        use crate::section::Zone;
        let (stable_files, turn_files): (Vec<&BootstrapFile>, Vec<&BootstrapFile>) =
            files.iter().partition(|f| group_of(&f.name) != FileGroup::Dynamic);
        let mut jobs = Vec::new();
        // Each call's outcome, and whether it ran (`false`: remembered).
        let mut outcomes: Vec<Option<(Outcome, bool)>> = Vec::new();
        // The calls to make, and (slot in outcomes, keys) of each.
        let mut jobs_to_run: Vec<Job> = Vec::new();
        let mut pending: Vec<(usize, Option<CallKeys>)> = Vec::new();
        // The files' part of every call key, hashed once per build, not per plugin.
        let files_hashes = memo.map(|_| {
            (bootstrap::files_hash(stable_files.iter().copied()), bootstrap::files_hash(turn_files.iter().copied()))
        });
        for plugin in &self.plugins {
            let Ok(ready) = &plugin.state else { continue };
            let hooks = SectionHook::all(&ready.info, (&stable_files, &turn_files), files_hashes);
            for SectionHook { hook, zone, files: seen, files_hash, request, .. } in
                hooks.into_iter().filter(|h| h.declared)
            {
                jobs.push((plugin, hook, zone));
                // What goes above the boundary is made from stable inputs only.
                let sees = if zone == Zone::Stable { Sees::Stable } else { Sees::Turn(now) };
                let keys = memo.zip(contexts.hash(sees)).map(|(memo, context)| {
                    let key = call_key(plugin, &hook_key(hook, zone), context, files_hash, tokenizer);
                    self.call_keys(plugin, ready, key, memo)
                });
                if let Some(hit) = keys.and_then(|k| self.remembered(k)) {
                    outcomes.push(Some((hit, false)));
                    continue;
                }
                let context = with_config(contexts.context(sees), plugin);
                let request = request(context, raw_files(seen.unwrap_or_default().iter().copied()));
                jobs_to_run.push((plugin, ready, sees, request));
                pending.push((outcomes.len(), keys));
                outcomes.push(None);
            }
        }
        if !pending.is_empty() {
            let made = self.run_jobs(jobs_to_run, tokenizer, meanwhile)?;
            for ((slot, keys), outcome) in pending.into_iter().zip(made) {
                outcomes[slot] = Some((self.remember(keys, outcome), true));
            }
        }
        let counter = crate::tokens::shared_counter(tokenizer);
        let mut sections = Vec::new();
        for ((plugin, hook, zone), outcome) in jobs.into_iter().zip(outcomes.into_iter().flatten()) {
            let (Outcome { result, logs, elapsed }, ran) = outcome;
            let mut notes = Vec::new();
            let checked = sections_of(plugin, zone, result, counter, run, &mut notes);
            run.record(plugin, &logs, ran.then_some(elapsed), checked.as_ref().err());
            run.note(notes);
            match checked {
                Ok(mut good) => sections.append(&mut good),
                Err(f) => run.fail(plugin, hook, &f, "it was left out of this build")?,
            }
        }
        hooks::dedupe_overlay_blocks(&mut sections, &mut run.diagnostics);
        Ok(sections)
    }
}

/// One call to make: the plugin, its loaded state, what it sees of the turn
/// and its request.
type Job<'p> = (&'p LoadedPlugin, &'p Ready, Sees, Request);

impl PluginSet {
    /// Makes `jobs` concurrently and returns their outcomes in order,
    /// compiling first (in parallel) the plugins no call needed yet. When
    /// the wasm engine cannot start, each fails with its reason; on a
    /// runtime that runs no code, the build cannot go on.
    fn run_jobs(
        &self,
        jobs: Vec<Job<'_>>,
        tokenizer: Tokenizer,
        meanwhile: &mut dyn FnMut(),
    ) -> Result<Vec<Outcome>, ProemError> {
        if !self.runtime.runs_code() {
            return Err(ProemError::PluginCodeNeeded);
        }
        link_all(jobs.iter().map(|job| job.1));
        let calls = jobs
            .into_iter()
            .map(|(plugin, ready, sees, request)| {
                plugin.call_seeing(&ready.code, &self.agent_dir, sees, tokenizer, plugin.deadline, request)
            })
            .collect();
        Ok(self.runtime.run(calls, meanwhile))
    }
}

/// Compiles and links, in parallel, the plugins a build must call that no
/// call needed before (one at a time when only one is missing).
fn link_all<'r>(readies: impl Iterator<Item = &'r Ready>) {
    let mut missing: Vec<&Ready> = readies.filter(|r| r.code.linked.get().is_none()).collect();
    missing.sort_by_key(|r| Arc::as_ptr(&r.code));
    missing.dedup_by_key(|r| Arc::as_ptr(&r.code));
    if missing.len() < 2 {
        return;
    }
    std::thread::scope(|scope| {
        for ready in missing {
            scope.spawn(move || {
                let _ = ready.code.linked();
            });
        }
    });
}

/// What one hook answered when `proem plugin check` called it.
#[derive(Debug, Clone)]
pub struct HookProbe {
    /// The hook.
    pub hook: Hook,
    /// Whether `describe` declares it.
    pub declared: bool,
    /// `Ok(true)` when it returned something (sections, a prefix or suffix,
    /// changed files), `Ok(false)` when nothing, `Err` when the call failed.
    pub answer: Result<bool, String>,
}

/// What one hook answered when called directly (`proem plugin run`), raw.
#[derive(Debug, Clone)]
pub struct HookCall {
    /// The hook.
    pub hook: Hook,
    /// Whether `describe` declares it.
    pub declared: bool,
    /// Its answer as the plugin gave it (before proem validates it), or why
    /// the call failed.
    pub answer: Result<Response, String>,
    /// Warnings and errors it logged.
    pub logs: Vec<LogLine>,
    /// How long the call took, instantiation included.
    pub elapsed: Duration,
}

impl PluginSet {
    /// Calls every hook of each loaded plugin's API version once, declared
    /// or not, with `ctx` and `files` (a sample turn): how `proem plugin
    /// check` finds a hook implemented but not declared, which proem would
    /// never call. Not used by builds.
    pub fn probe_hooks(&self, ctx: &BuildContext, files: &[BootstrapFile]) -> Vec<(String, Vec<HookProbe>)> {
        let raw = raw_files(files);
        self.call_hooks(ctx, files)
            .into_iter()
            .map(|(id, calls)| {
                let probes = calls
                    .into_iter()
                    .map(|call| HookProbe {
                        hook: call.hook,
                        declared: call.declared,
                        answer: match call.answer {
                            Ok(Response::Sections(s)) => Ok(!s.is_empty()),
                            Ok(Response::Overlay(o)) => Ok(o.is_some_and(|o| o != hooks::RawOverlay::default())),
                            Ok(Response::Contribution(s, ends)) => {
                                Ok(!s.is_empty() || ends != hooks::RawOverlay::default())
                            }
                            Ok(Response::Bootstrap(f)) => Ok(f != raw),
                            Ok(Response::Info(_)) => Ok(false),
                            Err(why) => Err(why),
                        },
                    })
                    .collect();
                (id, probes)
            })
            .collect()
    }

    /// Calls every hook of each loaded plugin's API version once, declared
    /// or not, with `ctx` (its config set per plugin) and `files`, each in
    /// its own sandbox as a build would (a stable or bootstrap hook sees no
    /// clock), and gives each raw answer: `proem plugin run` and `proem
    /// plugin check`. Nothing is memoised or kept. Not used by builds.
    pub fn call_hooks(&self, ctx: &BuildContext, files: &[BootstrapFile]) -> Vec<(String, Vec<HookCall>)> {
        if !self.runtime.runs_code() {
            return Vec::new();
        }
        let raw = raw_files(files);
        let (stable_files, turn_files): (Vec<RawFile>, Vec<RawFile>) =
            raw.iter().cloned().partition(|f| group_of(&f.name) != FileGroup::Dynamic);
        let now = Duration::from_secs(u64::try_from(ctx.unix_seconds).unwrap_or(0));
        let mut out = Vec::new();
        for plugin in &self.plugins {
            let Ok(ready) = &plugin.state else { continue };
            let info = &ready.info;
            let ctx = with_config(ctx, plugin);
            let stable_ctx = with_config(&blank_turn(&ctx), plugin);
            let hooks: Vec<(Hook, bool, Sees, Request)> = if ready.splits_zones() {
                vec![
                    (
                        Hook::Stable,
                        info.stable,
                        Sees::Stable,
                        Request::Stable(stable_ctx.clone(), stable_files.clone()),
                    ),
                    (Hook::Turn, info.turn, Sees::Turn(now), Request::Turn(ctx.clone(), turn_files.clone())),
                    (
                        Hook::Bootstrap,
                        info.bootstrap,
                        Sees::Stable,
                        Request::Bootstrap(stable_ctx, stable_files.clone()),
                    ),
                ]
            } else {
                vec![
                    (Hook::Sections, info.sections, Sees::Turn(now), Request::Sections(ctx.clone())),
                    (Hook::Overlay, info.overlay, Sees::Turn(now), Request::Overlay(ctx.clone())),
                    (Hook::Bootstrap, info.bootstrap, Sees::Turn(now), Request::Bootstrap(ctx.clone(), raw.clone())),
                ]
            };
            let calls = hooks
                .iter()
                .map(|(_, _, sees, request)| {
                    plugin.call_seeing(
                        &ready.code,
                        &self.agent_dir,
                        *sees,
                        Tokenizer::O200kBase,
                        plugin.deadline,
                        request.clone(),
                    )
                })
                .collect();
            let answers = hooks
                .iter()
                .zip(self.runtime.run(calls, &mut || {}))
                .map(|((hook, declared, _, _), outcome)| HookCall {
                    hook: *hook,
                    declared: *declared,
                    answer: outcome.result.map_err(|f| f.describe()),
                    logs: outcome.logs,
                    elapsed: outcome.elapsed,
                })
                .collect();
            out.push((plugin.id.clone(), answers));
        }
        out
    }
}

impl PluginSet {
    /// A memoised outcome, from this process's memo or from disk (reported
    /// as taking no time: nothing ran).
    fn remembered(&self, keys: CallKeys) -> Option<Outcome> {
        if let Some(hit) = self.memo.lock().get(&keys.memory) {
            return Some(Outcome { elapsed: Duration::ZERO, ..hit.clone() });
        }
        let answered: Answered = self.answers.as_ref()?.get(keys.disk?)?;
        let outcome = Outcome { logs: answered.log_lines(), result: Ok(answered.response), elapsed: Duration::ZERO };
        self.keep(keys.memory, &outcome);
        Some(outcome)
    }

    /// Keeps a successful outcome under its keys (failures are not kept: a
    /// timeout depends on the machine, not on the input).
    fn remember(&self, keys: Option<CallKeys>, outcome: Outcome) -> Outcome {
        if let (Some(keys), Ok(response)) = (keys, &outcome.result) {
            self.keep(keys.memory, &outcome);
            if let (Some(answers), Some(key)) = (&self.answers, keys.disk) {
                answers.put(key, &Answered::new(response, &outcome.logs));
            }
        }
        outcome
    }

    fn keep(&self, key: u128, outcome: &Outcome) {
        let mut memo = self.memo.lock();
        if memo.len() >= MEMO_LIMIT {
            memo.clear();
        }
        memo.insert(key, outcome.clone());
    }

    /// The keys of a call whose [`call_key`] is `key`. A plugin that may
    /// read the workspace is keyed by it too: by the file check's
    /// generation in this process, by the workspace's stamp on disk. Every
    /// hook's answer is kept on disk when there is an answers directory
    /// and, for such a plugin, a stamp: the call key holds everything the
    /// plugin can observe (a turn hook's clock, channel and chat included),
    /// so the same turn in a new process runs no plugin code, whatever
    /// hooks it declares. The disk key adds what this process's memo takes
    /// as fixed: the binary and the limits.
    fn call_keys(&self, plugin: &LoadedPlugin, ready: &Ready, key: u128, memo: MemoKeys) -> CallKeys {
        let reads = plugin.grants.workspace_read;
        let memory = if reads {
            let mut h = KeyHasher::default();
            h.num128(key).num(memo.generation);
            h.finish()
        } else {
            key
        };
        let stamp = if reads { memo.workspace_stamp.map(Some) } else { Some(None) };
        let disk = self.answers.as_ref().zip(stamp).map(|(answers, stamp)| {
            answers.key(|h| {
                h.str("hook").num128(key).str(&ready.code.wasm.identity);
                h.num(plugin.memory_bytes as u64).num(plugin.deadline.as_micros() as u64);
                h.num(plugin.caps.max_bytes as u64).num(plugin.caps.max_items as u64).num(u64::from(reads));
                if let Some(stamp) = stamp {
                    h.num128(stamp);
                }
            })
        });
        CallKeys { memory, disk }
    }
}

/// A warning for each grant proem knows that `plugin` asks for (in what
/// `describe` said) and its `[[plugins]]` entry does not give: it runs
/// without it, which is often why it does less than expected.
fn missing_grants(plugin: &LoadedPlugin, ready: &Ready) -> Vec<Diagnostic> {
    let granted = plugin.grants.names();
    let mut asked: Vec<&str> = ready
        .info
        .capabilities
        .iter()
        .map(String::as_str)
        .filter(|c| crate::plugin::GRANT_NAMES.contains(c) && !granted.contains(c))
        .collect();
    asked.sort_unstable();
    asked.dedup();
    asked
        .into_iter()
        .map(|grant| {
            Diagnostic::warn(
                "plugin_grant_missing",
                format!(
                    "plugin {} asks for {grant}, which its [[plugins]] entry does not grant: it runs without it; \
                     add grants = [\"{grant}\"] to the entry to give it",
                    plugin.id
                ),
            )
        })
        .collect()
}

/// Makes a hook's request from its plugin's build context and the files it sees.
type MakeRequest = fn(BuildContext, Vec<RawFile>) -> Request;

/// One of the hooks that contribute sections, as `run_sections` calls it.
struct SectionHook<'a> {
    /// Whether the plugin declares it.
    declared: bool,
    /// Which hook.
    hook: Hook,
    /// The zone of what it contributes: a 0.2 hook's own; each half of a
    /// 0.1 hook keeps the sections of its zone. A stable call sees the
    /// stable inputs only ([`Sees::Stable`]).
    zone: crate::section::Zone,
    /// The bootstrap files it sees, if any.
    files: Option<&'a [&'a BootstrapFile]>,
    /// Their [`bootstrap::files_hash`] when the memo is on.
    files_hash: Option<u128>,
    /// Its request.
    request: MakeRequest,
}

impl<'a> SectionHook<'a> {
    /// One half of a 0.1 hook (it sees no files).
    fn of_0_1(declared: bool, hook: Hook, zone: crate::section::Zone, request: MakeRequest) -> Self {
        SectionHook { declared, hook, zone, files: None, files_hash: None, request }
    }

    /// Every section hook of any API version, in calling order, each
    /// marked with whether `info` declares it: the halves of 0.1's
    /// `sections` and `overlay`, then 0.2's `stable` (seeing the stable
    /// files of `files`) and `turn` (seeing the per-turn ones).
    /// `files_hashes`: the two lists' hashes when the memo is on.
    fn all(
        info: &PluginInfo,
        files: (&'a [&'a BootstrapFile], &'a [&'a BootstrapFile]),
        files_hashes: Option<(u128, u128)>,
    ) -> [SectionHook<'a>; 6] {
        use crate::section::Zone;
        let sections = |c, _| Request::Sections(c);
        let overlay = |c, _| Request::Overlay(c);
        [
            SectionHook::of_0_1(info.sections, Hook::Sections, Zone::Stable, sections),
            SectionHook::of_0_1(info.sections, Hook::Sections, Zone::Dynamic, sections),
            SectionHook::of_0_1(info.overlay, Hook::Overlay, Zone::Stable, overlay),
            SectionHook::of_0_1(info.overlay, Hook::Overlay, Zone::Dynamic, overlay),
            SectionHook {
                declared: info.stable,
                hook: Hook::Stable,
                zone: Zone::Stable,
                files: Some(files.0),
                files_hash: files_hashes.map(|h| h.0),
                request: Request::Stable,
            },
            SectionHook {
                declared: info.turn,
                hook: Hook::Turn,
                zone: Zone::Dynamic,
                files: Some(files.1),
                files_hash: files_hashes.map(|h| h.1),
                request: Request::Turn,
            },
        ]
    }
}

/// The sections of one section hook's answer, validated against the
/// plugin's caps (`notes`: what validation warns about), those of `zone`
/// only (each half of a 0.1 hook keeps the sections of its zone); sections
/// cut to their cap are recorded in `run`. An invalid answer is a failure.
fn sections_of(
    plugin: &LoadedPlugin,
    zone: crate::section::Zone,
    result: Result<Response, PluginError>,
    counter: &crate::tokens::TokenCounter,
    run: &mut BuildRun,
    notes: &mut Vec<Diagnostic>,
) -> Result<Vec<Section>, PluginError> {
    let invalid = |why: String| PluginError::BadOutput { files: false, why };
    let mut good = match result {
        Ok(Response::Sections(raw)) => hooks::validate_sections(&plugin.id, raw, plugin.caps, notes).map_err(invalid),
        Ok(Response::Overlay(None)) => Ok(Vec::new()),
        Ok(Response::Overlay(Some(raw))) => {
            hooks::validate_overlay(&plugin.id, raw, plugin.caps, notes).map_err(invalid)
        }
        Ok(Response::Contribution(raw, ends)) => {
            hooks::validate_contribution(&plugin.id, zone, raw, ends, plugin.caps, counter, notes)
                .map(|(sections, capped)| {
                    run.capped.extend(capped);
                    sections
                })
                .map_err(invalid)
        }
        Ok(_) => Err(PluginError::WrongHook { files: false }),
        Err(f) => Err(f),
    }?;
    good.retain(|s| s.zone == zone);
    Ok(good)
}

/// A hook's name in memo keys: a 0.1 hook's halves are two calls.
fn hook_key(hook: Hook, zone: crate::section::Zone) -> Cow<'static, str> {
    match (hook, zone) {
        (Hook::Sections | Hook::Overlay, crate::section::Zone::Dynamic) => Cow::Owned(format!("{hook}/turn")),
        _ => Cow::Borrowed(hook.label()),
    }
}

fn raw_files<'f>(files: impl IntoIterator<Item = &'f BootstrapFile>) -> Vec<RawFile> {
    files.into_iter().map(|f| RawFile { name: f.name.clone(), content: f.text().map(str::to_string) }).collect()
}

/// A 0.2 bootstrap hook sees and returns the stable files only: a per-turn
/// file (USER.md, HEARTBEAT.md, BOOTSTRAP.md) written from stable inputs
/// would hide the real one.
fn only_stable_files(files: Vec<RawFile>) -> Result<Vec<RawFile>, String> {
    match files.iter().find(|f| group_of(&f.name) == FileGroup::Dynamic) {
        Some(f) => Err(format!(
            "{} is a per-turn file; a bootstrap hook sees and returns only the stable files (per-turn files pass it by)",
            f.name
        )),
        None => Ok(files),
    }
}

/// The files a bootstrap call decides: a 0.2 hook's (stable files only,
/// see [`only_stable_files`]), or those of a 0.1 hook's half: its stable
/// half's stable files, its per-turn half's per-turn files (what each half
/// returns of the other's files is left to the other).
fn files_of_half(files: Vec<RawFile>, sees: Sees, splits_zones: bool) -> Result<Vec<RawFile>, String> {
    if splits_zones {
        return only_stable_files(files);
    }
    let stable_half = sees == Sees::Stable;
    Ok(files.into_iter().filter(|f| (group_of(&f.name) != FileGroup::Dynamic) == stable_half).collect())
}

/// What a bootstrap call is made with, for both halves of a 0.1 hook.
#[derive(Clone, Copy)]
struct BootstrapHalf<'a> {
    plugin: &'a LoadedPlugin,
    ready: &'a Ready,
    contexts: &'a CallContexts,
    tokenizer: Tokenizer,
    memo: Option<MemoKeys>,
}

/// The build context as each kind of call sees it, and (when the memo is
/// on) their hashes, made once per build.
/// What a build's hook calls see: the turn's context, its stable half
/// (every per-turn input blank) and, when answers are memoised, their
/// hashes; made once per build for its bootstrap and section hooks.
#[derive(Debug)]
pub struct CallContexts {
    turn: BuildContext,
    stable: BuildContext,
    /// ([`context_hash`], [`stable_context_hash`]).
    hashes: Option<(u128, u128)>,
}

impl CallContexts {
    /// The contexts of `turn`, hashed when `memo` (plugin answers are
    /// memoised in this build).
    pub fn new(turn: BuildContext, memo: bool) -> CallContexts {
        let hashes = memo.then(|| {
            let stable = stable_context_hash(&turn);
            (context_hash(&turn, stable), stable)
        });
        CallContexts { stable: blank_turn(&turn), turn, hashes }
    }

    /// The context a call seeing `sees` gets.
    fn context(&self, sees: Sees) -> &BuildContext {
        match sees {
            Sees::Stable => &self.stable,
            Sees::Turn(_) => &self.turn,
        }
    }

    /// Its part of the call's memo key.
    fn hash(&self, sees: Sees) -> Option<u128> {
        self.hashes.map(|(full, stable)| if sees == Sees::Stable { stable } else { full })
    }
}

/// The time a stable call sees: what WASI's clock reads in it.
const BLANK_NOW: &str = "1970-01-01T00:00:00Z";

/// The build context of a call that sees the stable inputs only: every
/// per-turn input blank (no channel, chat kind, group title or extra
/// prompt; the time [`BLANK_NOW`] in UTC). 0.2 stable hooks never receive
/// these fields; a 0.1 hook's stable half receives them blank.
fn blank_turn(ctx: &BuildContext) -> BuildContext {
    BuildContext {
        channel: None,
        chat_kind: None,
        group_title: None,
        extra: None,
        now: BLANK_NOW.into(),
        timezone: "UTC".into(),
        unix_seconds: 0,
        utc_offset_seconds: 0,
        ..ctx.clone()
    }
}

/// The memo key of a call: everything the plugin can observe but the
/// workspace (added by [`PluginSet::call_keys`]). The plugin's code and
/// limits are fixed for the set's life; `context` is [`context_hash`] of the
/// build context (the plugin's own config is added here); the tokenizer
/// answers its `count-tokens` calls; `files` is the [`files_hash`] of a
/// hook's input files.
fn call_key(plugin: &LoadedPlugin, hook: &str, context: u128, files: Option<u128>, tokenizer: Tokenizer) -> u128 {
    let mut h = KeyHasher::default();
    h.str(&plugin.id).str(hook).str(tokenizer.name()).str(&plugin.config_json);
    h.num128(context);
    if let Some(files) = files {
        h.num(1).num128(files);
    }
    h.finish()
}

/// A hash of a build context but for its `config_json` (which differs per
/// plugin): hashed once per build, not once per call. `stable` is the
/// context's [`stable_context_hash`], which it extends with the turn.
fn context_hash(c: &BuildContext, stable: u128) -> u128 {
    // Every field is named: a field added to `BuildContext` does not
    // compile until it is in one of the two hashes (or said to be out).
    let BuildContext {
        agent_id: _,
        mode: _,
        provider: _,
        model: _,
        tools: _,
        skills: _,
        budget_tokens: _,
        tokenizer: _,   // all in `stable`
        config_json: _, // each plugin's own, in `call_key`
        unix_seconds: _,
        utc_offset_seconds: _, // both made from `now`, which says them
        channel,
        chat_kind,
        now,
        timezone,
        group_title,
        extra,
    } = c;
    let mut h = KeyHasher::default();
    h.num128(stable);
    h.opt(channel.as_deref()).opt(chat_kind.map(|k| k.as_str())).str(now).str(timezone);
    h.opt(group_title.as_deref()).opt(extra.as_deref());
    h.finish()
}

/// A hash of what a 0.2 `stable` or `bootstrap` hook sees of the build
/// context: no clock, channel, chat or extra prompt, so a new turn finds
/// their answers in the memo.
fn stable_context_hash(c: &BuildContext) -> u128 {
    let mut h = KeyHasher::default();
    h.str(&c.agent_id).str(c.mode.as_str()).opt(c.provider.as_deref()).opt(c.model.as_deref());
    h.num(u64::from(c.budget_tokens)).str(&c.tokenizer);
    h.num(c.tools.len() as u64);
    for ContextTool { name, description, parameters_json } in &c.tools {
        h.str(name).str(description).opt(parameters_json.as_deref());
    }
    h.num(c.skills.len() as u64);
    // `precedence` decides which skill a name is, never shown to a plugin.
    for crate::skills::Skill { name, description, location, precedence: _ } in c.skills.iter() {
        h.str(name).str(description).str(location);
    }
    h.finish()
}

fn with_config(ctx: &BuildContext, plugin: &LoadedPlugin) -> BuildContext {
    BuildContext { config_json: plugin.config_json.clone(), ..ctx.clone() }
}

/// Applies a hook's file list: records which files it changed or added,
/// reports drops, and puts the files back in load order (standard files
/// first, then the rest by name) so the hook's own ordering never matters.
fn apply_files(
    plugin: &str,
    before: Vec<BootstrapFile>,
    after: Vec<RawFile>,
    run: &mut BuildRun,
) -> Vec<BootstrapFile> {
    let mut out: Vec<BootstrapFile> = Vec::with_capacity(after.len());
    for f in after {
        let text = f.content.map(|t| crate::text::clean_owned(t).trim_end().to_string());
        match before.iter().find(|b| b.name == f.name) {
            // Unchanged: keep the file as it was (its text shared, its hash made).
            Some(old) if old.text() == text.as_deref() => out.push(old.clone()),
            _ => {
                run.file_sources.insert(f.name.clone(), plugin.to_string());
                out.push(BootstrapFile::new(f.name, text));
            }
        }
    }
    for dropped in before.iter().filter(|b| b.text().is_some() && !out.iter().any(|o| o.name == b.name)) {
        run.diagnostics.push(Diagnostic::info(
            "file_dropped_by_plugin",
            format!("plugin {plugin} dropped {} from the bootstrap files", dropped.name),
        ));
    }
    out.sort_by(|a, b| load_order(&a.name).cmp(&load_order(&b.name)));
    out
}

/// Turns a config entry into a plugin record and its bytes (or why not).
fn prepare(
    config: &PluginConfig,
    agent_dir: &Path,
    runtime: &dyn Runtime,
    answers: Option<&Answers>,
) -> (LoadedPlugin, Result<Wasm, String>) {
    let origin = match (&config.source, &config.path) {
        (Some(source), _) => source.clone(),
        (None, Some(path)) => path.clone(),
        (None, None) => String::new(),
    };
    let plugin = LoadedPlugin {
        id: config.id.clone(),
        origin: origin.clone(),
        required: config.required,
        grants: Grants::parse(&config.grants).unwrap_or_default(),
        config_json: config
            .config
            .as_ref()
            .map(|t| serde_json::to_string(t).unwrap_or_else(|_| "{}".into()))
            .unwrap_or_else(|| "{}".into()),
        memory_bytes: config.memory_mib.unwrap_or(DEFAULT_MEMORY_MIB) as usize * 1024 * 1024,
        deadline: Duration::from_millis(config.deadline_ms.unwrap_or(DEFAULT_DEADLINE_MS).into()),
        caps: OutputCaps {
            max_bytes: config.output_kib.unwrap_or(DEFAULT_OUTPUT_KIB) as usize * 1024,
            max_items: hooks::MAX_ITEMS,
        },
        state: Err("not loaded".into()),
    };
    let wasm = match (&config.source, &config.path) {
        (Some(source), _) => {
            let name = source.strip_prefix("builtin:").unwrap_or(source);
            if BUILTIN_IDS.contains(&name) {
                // A runtime that runs no code carries none: the answers kept
                // for `builtin:<name>` stand for it (see `Wasm::identity`).
                Ok(Wasm::builtin(name, runtime.builtin(name).unwrap_or_default()))
            } else {
                Err(format!("{source}: no such built-in plugin (built-in: {})", BUILTIN_IDS.join(", ")))
            }
        }
        (None, Some(path)) => Wasm::open(agent_dir, path, config.declared_at.as_deref(), answers),
        (None, None) => Err("no source or path".into()),
    };
    (plugin, wasm)
}

/// Whether an entry's config matches its plugin's schema; if not, every
/// problem (at most [`crate::plugin::config_schema::MAX_PROBLEMS`]) with
/// where it is: the entry's line in proem.toml, the key in the config, the
/// keyword in the schema.
fn config_matches(schema: &Schema, plugin: &LoadedPlugin, config: Option<&&PluginConfig>) -> Result<(), String> {
    let value: serde_json::Value = serde_json::from_str(&plugin.config_json).unwrap_or_default();
    let problems = schema.check(&value);
    if problems.is_empty() {
        return Ok(());
    }
    let line = config.and_then(|c| c.line.0).map(|n| format!(" at line {n}")).unwrap_or_default();
    let listed: Vec<String> = problems.iter().map(ToString::to_string).collect();
    Err(format!(
        "its config ([[plugins]] id = {:?}{line} of proem.toml) does not match the schema the plugin declares: {}; \
         fix the config (proem plugin check FILE.wasm --config FILE says the same)",
        plugin.id,
        listed.join("; ")
    ))
}

/// The key of what `describe` said about `wasm`.
fn describe_key(answers: &Answers, wasm: &Wasm) -> u128 {
    answers.key(|h| {
        h.str("describe").str(&wasm.identity);
    })
}

/// The distinct binaries of `prepared` in first-use order, and for each
/// entry the index of its binary (`None` when it has no bytes).
fn distinct_binaries(prepared: &[(LoadedPlugin, Result<Wasm, String>)]) -> (Vec<&Wasm>, Vec<Option<usize>>) {
    let mut binaries: Vec<&Wasm> = Vec::new();
    let mut first_use: HashMap<&str, usize> = HashMap::new();
    let binary_of = prepared
        .iter()
        .map(|(_, wasm)| {
            let wasm = wasm.as_ref().ok()?;
            Some(*first_use.entry(wasm.identity.as_str()).or_insert_with(|| {
                binaries.push(wasm);
                binaries.len() - 1
            }))
        })
        .collect();
    (binaries, binary_of)
}

/// Each binary ready to run, or why not: what `describe` said about it
/// from disk when a process of this proem asked it before (then nothing is
/// compiled now), else checked, compiled and described, in parallel (cold
/// compiles are the slow part of a first run).
fn open_binaries(
    binaries: &[&Wasm],
    cache_dir: Option<&Arc<CacheDir>>,
    agent_dir: &Path,
    answers: Option<&Answers>,
    runtime: &'static dyn Runtime,
) -> Result<Vec<Result<Ready, String>>, ProemError> {
    let mut states: Vec<Option<Result<Ready, String>>> = binaries
        .iter()
        .map(|wasm| {
            let answers = answers?;
            let described: Described = answers.get(describe_key(answers, wasm))?;
            Some(Ok(ready(described, wasm, cache_dir, runtime)))
        })
        .collect();
    if states.iter().any(Option::is_none) && !runtime.runs_code() {
        return Err(ProemError::PluginCodeNeeded);
    }
    std::thread::scope(|scope| {
        let handles: Vec<_> = binaries
            .iter()
            .zip(&states)
            .filter(|(_, state)| state.is_none())
            .map(|(wasm, _)| scope.spawn(move || open(wasm, cache_dir, agent_dir, answers, runtime)))
            .collect();
        let mut handles = handles.into_iter();
        for state in states.iter_mut().filter(|s| s.is_none()) {
            let handle = handles.next().expect("one thread per binary to open");
            *state = Some(handle.join().unwrap_or_else(|_| Err("the loader thread panicked".into())));
        }
    });
    Ok(states.into_iter().map(|state| state.expect("every binary opened")).collect())
}

/// A plugin ready to run, from what `describe` said; compiled when a call
/// needs it.
fn ready(described: Described, wasm: &Wasm, cache_dir: Option<&Arc<CacheDir>>, runtime: &'static dyn Runtime) -> Ready {
    // Checked before it was kept: a schema that no longer parses (another
    // proem's subset) is dropped with a warning rather than trusted.
    let config_schema = described.config_schema.as_deref().and_then(|text| match Schema::parse(text.as_bytes()) {
        Ok(schema) => Some(Arc::new(schema)),
        Err(why) => {
            tracing::warn!("a kept config schema no longer parses ({why}); not checked");
            None
        }
    });
    Ready { info: described.info, config_schema, code: Arc::new(code(described.api, wasm, cache_dir, runtime)) }
}

/// A binary's code, not compiled yet.
fn code(api: String, wasm: &Wasm, cache_dir: Option<&Arc<CacheDir>>, runtime: &'static dyn Runtime) -> Code {
    Code { api, wasm: wasm.clone(), cache_dir: cache_dir.cloned(), runtime, linked: OnceLock::new() }
}

/// The name `describe`'s sandbox runs under: it seeds the call's
/// randomness (and tags its log lines) in place of the plugin id.
const DESCRIBE_SANDBOX: &str = "describe";

/// Calls `describe` in a sandbox that depends on nothing an entry
/// configures: no grant, the clock at 0, randomness seeded from
/// [`DESCRIBE_SANDBOX`] rather than the id, the default memory cap and
/// output caps, and [`DESCRIBE_DEADLINE`]. What a plugin says about itself
/// is then a function of its binary alone, so it is asked once per binary
/// and kept on disk by the binary only: the same answer under any id,
/// config, grant or limit, cached or not.
fn describe(code: &Code, agent_dir: &Path) -> PendingCall {
    let sandbox = Sandbox {
        plugin: DESCRIBE_SANDBOX.into(),
        grants: Grants::default(),
        agent_dir: agent_dir.to_path_buf(),
        memory_bytes: DEFAULT_MEMORY_MIB as usize * 1024 * 1024,
        now: Duration::ZERO,
        tokenizer: Tokenizer::O200kBase,
        // No grant: describe sees no workspace at all.
        view: View::Stable,
    };
    let caps = OutputCaps { max_bytes: DEFAULT_OUTPUT_KIB as usize * 1024, max_items: hooks::MAX_ITEMS };
    match code.linked() {
        Ok(linked) => linked.call(sandbox, CallLimits::for_plugin(DESCRIBE_DEADLINE, caps), Request::Info),
        Err(e) => Box::pin(std::future::ready(Outcome::host_failure(e))),
    }
}

/// Checks, compiles (or loads from cache), pre-instantiates and describes
/// a binary, keeping what `describe` said in `answers`.
fn open(
    wasm: &Wasm,
    cache_dir: Option<&Arc<CacheDir>>,
    agent_dir: &Path,
    answers: Option<&Answers>,
    runtime: &'static dyn Runtime,
) -> Result<Ready, String> {
    let bytes = wasm.bytes()?;
    let api = runtime.check(&bytes).map_err(|e| e.to_string())?;
    let config_schema = match runtime.config_schema(&bytes)? {
        Some(section) => {
            let schema = Schema::parse(&section).map_err(|why| {
                format!("its config schema (custom section {}) {why}", crate::plugin::config_schema::SECTION)
            })?;
            Some((String::from_utf8_lossy(&section).into_owned(), Arc::new(schema)))
        }
        None => None,
    };
    let code = code(api.clone(), wasm, cache_dir, runtime);
    let digest = code.wasm.digest();
    let read = || Ok(std::borrow::Cow::Borrowed(&bytes[..]));
    let _ =
        code.linked.set(Ok(runtime.link(&digest, &read, &api, cache_dir.map(|d| &**d)).map_err(|e| e.to_string())?));
    let outcome = runtime.run(vec![describe(&code, agent_dir)], &mut || {}).remove(0);
    let info = match outcome.result {
        Ok(Response::Info(info)) => info,
        Ok(_) => return Err("describe answered with the wrong hook".into()),
        Err(f) => return Err(format!("describe {}", f.describe())),
    };
    let (text, config_schema) = config_schema.unzip();
    let described = Described { api, info, config_schema: text };
    if let Some(answers) = answers {
        answers.put(describe_key(answers, wasm), &described);
    }
    Ok(Ready { info: described.info, config_schema, code: Arc::new(code) })
}
