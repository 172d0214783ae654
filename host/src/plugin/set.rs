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

use crate::bootstrap::{group_of, load_order, BootstrapFile, FileGroup};
use crate::config::PluginConfig;
use crate::error::ProemError;
use crate::memo::KeyHasher;
use crate::plugin::call::{self, CallLimits, Failure, Outcome, Request, Response};
use crate::plugin::engine::{self, PluginEngine};
use crate::plugin::hooks::{self, BuildContext, OutputCaps, PluginInfo, RawFile};
use crate::plugin::sandbox::{Grants, LogLine, Sandbox};
use crate::plugin::wit::{v0_1, v0_2, Bindings};
use crate::plugin::{binary, builtin, cache};
use crate::report::{Diagnostic, PluginReport};
use crate::section::Section;
use crate::sync::Lock;
use crate::tokens::Tokenizer;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
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

/// A plugin that loaded.
#[derive(Clone)]
pub struct Ready {
    /// Pre-instantiated bindings.
    pub bindings: Bindings,
    /// What it said about itself.
    pub info: PluginInfo,
    /// Whether the compiled code came from the cache.
    pub cached: bool,
}

impl LoadedPlugin {
    /// `ok`, or `load_failed` with the reason.
    pub fn status(&self) -> &'static str {
        if self.state.is_ok() {
            "ok"
        } else {
            "load_failed"
        }
    }

    /// One hook call in this plugin's sandbox, ready to run.
    #[allow(clippy::too_many_arguments)]
    fn call(
        &self,
        engine: &'static PluginEngine,
        bindings: &Bindings,
        agent_dir: &Path,
        now: Duration,
        tokenizer: Tokenizer,
        deadline: Duration,
        request: Request,
    ) -> impl std::future::Future<Output = Outcome> + Send + 'static {
        let sandbox = Sandbox {
            plugin: self.id.clone(),
            grants: self.grants,
            agent_dir: agent_dir.to_path_buf(),
            memory_bytes: self.memory_bytes,
            now,
            tokenizer,
        };
        call::call(engine, bindings.clone(), sandbox, CallLimits::for_plugin(deadline, self.caps), request)
    }
}

/// The plugins of one agent, sorted by id.
#[derive(Default)]
pub struct PluginSet {
    plugins: Vec<LoadedPlugin>,
    agent_dir: PathBuf,
    /// Successful outcomes by [`call_key`]: a plugin is a pure function of
    /// what it can observe, so an identical call is not made twice.
    memo: Lock<HashMap<u128, Outcome>>,
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
    fn record(&mut self, plugin: &LoadedPlugin, logs: &[LogLine], elapsed: Duration, failure: Option<&Failure>) {
        let report = self.reports.entry(plugin.id.clone()).or_insert_with(|| PluginReport {
            id: plugin.id.clone(),
            status: "ok".into(),
            elapsed_us: 0,
        });
        report.elapsed_us += elapsed.as_micros() as u64;
        if let Some(f) = failure {
            if report.status == "ok" {
                report.status = f.status().into();
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

    /// Records a failed call; `Err` when the plugin is required.
    fn fail(
        &mut self,
        plugin: &LoadedPlugin,
        hook: &str,
        failure: &Failure,
        what_happens: &str,
    ) -> Result<(), ProemError> {
        let message = format!("plugin {} ({hook}) {}", plugin.id, failure.describe());
        if plugin.required {
            return Err(ProemError::Plugin { id: plugin.id.clone(), message: format!("{message}; it is required") });
        }
        self.diagnostics.push(Diagnostic::error(failure.code(), format!("{message}; {what_happens}")));
        Ok(())
    }
}

impl PluginSet {
    /// Loads the configured plugins. A plugin that cannot load is kept with
    /// its reason (reported on every build), unless it is `required`, which
    /// makes this an error naming it.
    pub fn load(configs: &[PluginConfig], agent_dir: &Path) -> Result<PluginSet, ProemError> {
        PluginSet::load_with_cache(configs, agent_dir, cache::default_dir().as_deref())
    }

    /// [`PluginSet::load`] with an explicit compiled-component cache
    /// directory (`None`: compile every time, write nothing).
    pub fn load_with_cache(
        configs: &[PluginConfig],
        agent_dir: &Path,
        cache_dir: Option<&Path>,
    ) -> Result<PluginSet, ProemError> {
        let mut plugins: Vec<LoadedPlugin> = Vec::with_capacity(configs.len());
        let prepared: Vec<(LoadedPlugin, Result<Vec<u8>, String>)> =
            configs.iter().map(|c| prepare(c, agent_dir)).collect();
        // A pinned binary that changed never loads, required or not.
        for (config, (plugin, bytes)) in configs.iter().zip(&prepared) {
            if let (Some(pin), Ok(bytes)) = (&config.sha256, bytes) {
                let digest = crate::assembler::hex(&Sha256::digest(bytes));
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
        if prepared.is_empty() {
            return Ok(PluginSet { plugins, agent_dir: agent_dir.to_path_buf(), memo: Lock::default() });
        }
        let _span = tracing::info_span!("load_plugins", count = prepared.len()).entered();
        // Compile in parallel: cold compiles are the slow part of a first run.
        let compiled: Vec<Result<Ready, String>> = std::thread::scope(|scope| {
            let handles: Vec<_> = prepared
                .iter()
                .map(|(plugin, bytes)| {
                    scope.spawn(move || {
                        let bytes = bytes.as_ref().map_err(Clone::clone)?;
                        let ready = compile(plugin, bytes, cache_dir, agent_dir);
                        ready.map_err(|e| format!("{}: {e}", plugin.origin))
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("the loader thread panicked".into()))).collect()
        });
        for ((mut plugin, _), state) in prepared.into_iter().zip(compiled) {
            if let Err(why) = &state {
                if plugin.required {
                    return Err(ProemError::Plugin {
                        id: plugin.id.clone(),
                        message: format!("plugin {} cannot be loaded: {why}; it is required", plugin.id),
                    });
                }
                tracing::warn!(plugin = %plugin.id, "cannot load: {why}");
            }
            plugin.state = state;
            plugins.push(plugin);
        }
        plugins.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(PluginSet { plugins, agent_dir: agent_dir.to_path_buf(), memo: Lock::default() })
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

    /// Reports plugins that failed to load, once per build.
    pub fn report_load_failures(&self, run: &mut BuildRun) {
        for p in &self.plugins {
            if let Err(why) = &p.state {
                run.reports
                    .insert(p.id.clone(), PluginReport { id: p.id.clone(), status: p.status().into(), elapsed_us: 0 });
                run.diagnostics.push(Diagnostic::error(
                    "plugin_load_failed",
                    format!("plugin {} cannot be loaded and was left out: {why}", p.id),
                ));
            }
        }
    }

    /// Runs the `agent:bootstrap` hooks in plugin-id order. Each sees the
    /// files as the previous hook left them; a failing hook's change is
    /// discarded. A 0.2 hook sees only the stable files (the per-turn ones
    /// pass it by) and no clock, channel or chat.
    pub fn run_bootstrap(
        &self,
        ctx: &BuildContext,
        mut files: Vec<BootstrapFile>,
        now: Duration,
        tokenizer: Tokenizer,
        run: &mut BuildRun,
        memo: Option<u64>,
    ) -> Result<Vec<BootstrapFile>, ProemError> {
        let Ok(engine) = engine::get() else { return Ok(files) };
        let hashes = memo.map(|_| {
            let stable = stable_context_hash(ctx);
            (context_hash(ctx, stable), stable)
        });
        for plugin in &self.plugins {
            let Ok(ready) = &plugin.state else { continue };
            if !ready.info.bootstrap {
                continue;
            }
            let split = ready.bindings.splits_zones();
            // 0.2: the per-turn files pass the hook by.
            let (seen, passing): (Vec<BootstrapFile>, Vec<BootstrapFile>) =
                files.into_iter().partition(|f| !split || group_of(&f.name) != FileGroup::Dynamic);
            let key = memo.zip(hashes).map(|(generation, (full, stable))| {
                let context = if split { stable } else { full };
                call_key(plugin, "agent:bootstrap", context, Some(seen.iter()), tokenizer, generation)
            });
            let Outcome { result, logs, elapsed } = match key.and_then(|k| self.remembered(k)) {
                Some(hit) => hit,
                None => {
                    let raw = raw_files(&seen);
                    let request = Request::Bootstrap(with_config(ctx, plugin), raw);
                    let clock = if split { Duration::ZERO } else { now };
                    let call = plugin.call(
                        engine,
                        &ready.bindings,
                        &self.agent_dir,
                        clock,
                        tokenizer,
                        plugin.deadline,
                        request,
                    );
                    self.remember(key, run_calls(engine, vec![call]).remove(0))
                }
            };
            let checked = match result {
                Ok(Response::Bootstrap(out)) => hooks::validate_files(out, plugin.caps)
                    .and_then(|out| if split { only_stable_files(out) } else { Ok(out) })
                    .map_err(|e| Failure::Host(format!("returned invalid files: {e}"))),
                Ok(_) => Err(Failure::Host("answered with the wrong hook".into())),
                Err(f) => Err(f),
            };
            run.record(plugin, &logs, elapsed, checked.as_ref().err());
            files = match checked {
                Ok(out) => apply_files(&plugin.id, seen, out, run),
                Err(f) => {
                    run.fail(plugin, "agent:bootstrap", &f, "its change to the bootstrap files was discarded")?;
                    seen
                }
            };
            if !passing.is_empty() {
                files.extend(passing);
                files.sort_by(|a, b| load_order(&a.name).cmp(&load_order(&b.name)));
            }
        }
        Ok(files)
    }

    /// Runs every plugin's section hooks concurrently (0.1: `sections` and
    /// `overlay`; 0.2: `stable` and `turn`) and returns their validated
    /// sections. `files` are the build's bootstrap files: a 0.2 `stable`
    /// hook gets the stable ones, a `turn` hook the per-turn ones. A plugin
    /// whose call fails or whose output is invalid contributes nothing to
    /// this build.
    #[allow(clippy::too_many_arguments)]
    pub fn run_sections(
        &self,
        ctx: &BuildContext,
        files: &[BootstrapFile],
        now: Duration,
        tokenizer: Tokenizer,
        run: &mut BuildRun,
        memo: Option<u64>,
    ) -> Result<Vec<Section>, ProemError> {
        let Ok(engine) = engine::get() else { return Ok(Vec::new()) };
        let (stable_files, turn_files): (Vec<&BootstrapFile>, Vec<&BootstrapFile>) =
            files.iter().partition(|f| group_of(&f.name) != FileGroup::Dynamic);
        let mut jobs = Vec::new();
        let mut calls = Vec::new();
        let mut outcomes: Vec<Option<Outcome>> = Vec::new();
        let mut pending: Vec<(usize, Option<u128>)> = Vec::new();
        let hashes = memo.map(|_| {
            let stable = stable_context_hash(ctx);
            (context_hash(ctx, stable), stable)
        });
        for plugin in &self.plugins {
            let Ok(ready) = &plugin.state else { continue };
            let info = &ready.info;
            let hooks = [
                SectionHook {
                    declared: info.sections,
                    hook: "sections",
                    stable_only: false,
                    files: None,
                    request: |c, _| Request::Sections(c),
                },
                SectionHook {
                    declared: info.overlay,
                    hook: "overlay",
                    stable_only: false,
                    files: None,
                    request: |c, _| Request::Overlay(c),
                },
                SectionHook {
                    declared: info.stable,
                    hook: "stable",
                    stable_only: true,
                    files: Some(&stable_files),
                    request: Request::Stable,
                },
                SectionHook {
                    declared: info.turn,
                    hook: "turn",
                    stable_only: false,
                    files: Some(&turn_files),
                    request: Request::Turn,
                },
            ];
            for SectionHook { hook, stable_only, files: seen, request, .. } in hooks.into_iter().filter(|h| h.declared)
            {
                jobs.push((plugin, hook));
                let key = memo.zip(hashes).map(|(generation, (full, stable))| {
                    let context = if stable_only { stable } else { full };
                    call_key(plugin, hook, context, seen.map(|f| f.iter().copied()), tokenizer, generation)
                });
                if let Some(hit) = key.and_then(|k| self.remembered(k)) {
                    outcomes.push(Some(hit));
                    continue;
                }
                pending.push((outcomes.len(), key));
                outcomes.push(None);
                // A stable hook sees no clock: WASI's wall clock reads 1970.
                let clock = if stable_only { Duration::ZERO } else { now };
                calls.push(plugin.call(
                    engine,
                    &ready.bindings,
                    &self.agent_dir,
                    clock,
                    tokenizer,
                    plugin.deadline,
                    request(with_config(ctx, plugin), raw_files(seen.unwrap_or_default().iter().copied())),
                ));
            }
        }
        for ((slot, key), outcome) in pending.into_iter().zip(run_calls(engine, calls)) {
            outcomes[slot] = Some(self.remember(key, outcome));
        }
        let counter = crate::assembler::shared_counter(tokenizer);
        let mut sections = Vec::new();
        for ((plugin, hook), outcome) in jobs.into_iter().zip(outcomes.into_iter().flatten()) {
            let Outcome { result, logs, elapsed } = outcome;
            let invalid = |why: String| Failure::Host(format!("returned invalid output: {why}"));
            let mut notes = Vec::new();
            let checked = match result {
                Ok(Response::Sections(raw)) => {
                    hooks::validate_sections(&plugin.id, raw, plugin.caps, &mut notes).map_err(invalid)
                }
                Ok(Response::Overlay(None)) => Ok(Vec::new()),
                Ok(Response::Overlay(Some(raw))) => {
                    hooks::validate_overlay(&plugin.id, raw, plugin.caps, &mut notes).map_err(invalid)
                }
                Ok(Response::Contribution(raw, ends)) => {
                    let zone =
                        if hook == "stable" { crate::section::Zone::Stable } else { crate::section::Zone::Dynamic };
                    hooks::validate_contribution(&plugin.id, zone, raw, ends, plugin.caps, counter, &mut notes)
                        .map(|(sections, capped)| {
                            run.capped.extend(capped);
                            sections
                        })
                        .map_err(invalid)
                }
                Ok(_) => Err(invalid("answered with the wrong hook".into())),
                Err(f) => Err(f),
            };
            run.record(plugin, &logs, elapsed, checked.as_ref().err());
            run.diagnostics.append(&mut notes);
            match checked {
                Ok(mut good) => sections.append(&mut good),
                Err(f) => run.fail(plugin, hook, &f, "it was left out of this build")?,
            }
        }
        hooks::dedupe_overlay_blocks(&mut sections, &mut run.diagnostics);
        Ok(sections)
    }
}

/// What one hook answered when `proem plugin check` called it.
#[derive(Debug, Clone)]
pub struct HookProbe {
    /// The hook's name (`stable`, `turn`, `bootstrap`, `sections`, `overlay`).
    pub hook: &'static str,
    /// Whether `describe` declares it.
    pub declared: bool,
    /// `Ok(true)` when it returned something (sections, a prefix or suffix,
    /// changed files), `Ok(false)` when nothing, `Err` when the call failed.
    pub answer: Result<bool, String>,
}

impl PluginSet {
    /// Calls every hook of each loaded plugin's API version once, declared
    /// or not, with `ctx` and `files` (a sample turn): how `proem plugin
    /// check` finds a hook implemented but not declared, which proem would
    /// never call. Not used by builds.
    pub fn probe_hooks(&self, ctx: &BuildContext, files: &[BootstrapFile]) -> Vec<(String, Vec<HookProbe>)> {
        let Ok(engine) = engine::get() else { return Vec::new() };
        let raw = raw_files(files);
        let mut out = Vec::new();
        for plugin in &self.plugins {
            let Ok(ready) = &plugin.state else { continue };
            let info = &ready.info;
            let ctx = with_config(ctx, plugin);
            let hooks: Vec<(&'static str, bool, Request)> = if ready.bindings.splits_zones() {
                vec![
                    ("stable", info.stable, Request::Stable(ctx.clone(), raw.clone())),
                    ("turn", info.turn, Request::Turn(ctx.clone(), Vec::new())),
                    ("bootstrap", info.bootstrap, Request::Bootstrap(ctx.clone(), raw.clone())),
                ]
            } else {
                vec![
                    ("sections", info.sections, Request::Sections(ctx.clone())),
                    ("overlay", info.overlay, Request::Overlay(ctx.clone())),
                    ("bootstrap", info.bootstrap, Request::Bootstrap(ctx.clone(), raw.clone())),
                ]
            };
            let calls = hooks
                .iter()
                .map(|(_, _, request)| {
                    let now = Duration::from_secs(u64::try_from(ctx.unix_seconds).unwrap_or(0));
                    plugin.call(
                        engine,
                        &ready.bindings,
                        &self.agent_dir,
                        now,
                        Tokenizer::O200kBase,
                        plugin.deadline,
                        request.clone(),
                    )
                })
                .collect();
            let probes = hooks
                .iter()
                .zip(run_calls(engine, calls))
                .map(|((hook, declared, _), outcome)| HookProbe {
                    hook,
                    declared: *declared,
                    answer: match outcome.result {
                        Ok(Response::Sections(s)) => Ok(!s.is_empty()),
                        Ok(Response::Overlay(o)) => Ok(o.is_some_and(|o| o != hooks::RawOverlay::default())),
                        Ok(Response::Contribution(s, ends)) => {
                            Ok(!s.is_empty() || ends != hooks::RawOverlay::default())
                        }
                        Ok(Response::Bootstrap(f)) => Ok(f != raw),
                        Ok(Response::Info(_)) => Ok(false),
                        Err(f) => Err(f.describe()),
                    },
                })
                .collect();
            out.push((plugin.id.clone(), probes));
        }
        out
    }
}

impl PluginSet {
    /// A memoised outcome (reported as taking no time: nothing ran).
    fn remembered(&self, key: u128) -> Option<Outcome> {
        let memo = self.memo.lock();
        memo.get(&key).map(|o| Outcome { elapsed: Duration::ZERO, ..o.clone() })
    }

    /// Keeps a successful outcome under `key` (failures are not kept: a
    /// timeout depends on the machine, not on the input).
    fn remember(&self, key: Option<u128>, outcome: Outcome) -> Outcome {
        if let (Some(key), Ok(_)) = (key, &outcome.result) {
            let mut memo = self.memo.lock();
            if memo.len() >= MEMO_LIMIT {
                memo.clear();
            }
            memo.insert(key, outcome.clone());
        }
        outcome
    }
}

/// Makes a hook's request from its plugin's build context and the files it sees.
type MakeRequest = fn(BuildContext, Vec<RawFile>) -> Request;

/// One of the hooks that contribute sections, as `run_sections` calls it.
struct SectionHook<'a> {
    /// Whether the plugin declares it.
    declared: bool,
    /// Its name.
    hook: &'static str,
    /// Whether it sees stable inputs only (0.2 `stable`): memoised by them,
    /// and called with no clock.
    stable_only: bool,
    /// The bootstrap files it sees, if any.
    files: Option<&'a [&'a BootstrapFile]>,
    /// Its request.
    request: MakeRequest,
}

fn raw_files<'f>(files: impl IntoIterator<Item = &'f BootstrapFile>) -> Vec<RawFile> {
    files.into_iter().map(|f| RawFile { name: f.name.clone(), content: f.text.clone() }).collect()
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

/// The memo key of a call: everything the plugin can observe. The plugin's
/// code and limits are fixed for the set's life; `context` is
/// [`context_hash`] of the build context (the plugin's own config is added
/// here); `generation` stands for the workspace files and is part of the key
/// only when the plugin may read them; the tokenizer answers its
/// `count-tokens` calls; `files` are a bootstrap hook's input.
fn call_key<'f>(
    plugin: &LoadedPlugin,
    hook: &str,
    context: u128,
    files: Option<impl ExactSizeIterator<Item = &'f BootstrapFile>>,
    tokenizer: Tokenizer,
    generation: u64,
) -> u128 {
    let mut h = KeyHasher::default();
    h.str(&plugin.id).str(hook).str(tokenizer.name()).str(&plugin.config_json);
    h.num(context as u64).num((context >> 64) as u64);
    if plugin.grants.workspace_read {
        h.num(generation);
    }
    if let Some(files) = files {
        h.num(files.len() as u64);
        for f in files {
            h.str(&f.name).opt(f.text.as_deref());
        }
    }
    h.finish()
}

/// A hash of a build context but for its `config_json` (which differs per
/// plugin): hashed once per build, not once per call. `stable` is the
/// context's [`stable_context_hash`], which it extends with the turn.
fn context_hash(c: &BuildContext, stable: u128) -> u128 {
    let mut h = KeyHasher::default();
    h.num(stable as u64).num((stable >> 64) as u64);
    h.opt(c.channel.as_deref()).opt(c.chat_kind.as_deref()).str(&c.now).str(&c.timezone);
    h.opt(c.group_title.as_deref()).opt(c.extra.as_deref());
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
    for t in &c.tools {
        h.str(&t.name).str(&t.description).opt(t.parameters_json.as_deref());
    }
    h.num(c.skills.len() as u64);
    for s in &c.skills {
        h.str(&s.name).str(&s.description).str(&s.location);
    }
    h.finish()
}

fn with_config(ctx: &BuildContext, plugin: &LoadedPlugin) -> BuildContext {
    BuildContext { config_json: plugin.config_json.clone(), ..ctx.clone() }
}

/// Runs calls concurrently and returns their outcomes in order; a call
/// whose task ended without answering becomes a host failure.
fn run_calls<F>(engine: &'static PluginEngine, calls: Vec<F>) -> Vec<Outcome>
where
    F: std::future::Future<Output = Outcome> + Send + 'static,
{
    engine
        .run_all(calls)
        .into_iter()
        .map(|outcome| {
            outcome.unwrap_or_else(|| Outcome {
                result: Err(Failure::Host("the plugin task ended without an answer".into())),
                logs: Vec::new(),
                elapsed: Duration::ZERO,
            })
        })
        .collect()
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
        let old = before.iter().find(|b| b.name == f.name);
        if old.map(|o| &o.text) != Some(&text) {
            run.file_sources.insert(f.name.clone(), plugin.to_string());
        }
        out.push(BootstrapFile { name: f.name, text });
    }
    for dropped in before.iter().filter(|b| b.text.is_some() && !out.iter().any(|o| o.name == b.name)) {
        run.diagnostics.push(Diagnostic::info(
            "file_dropped_by_plugin",
            format!("plugin {plugin} dropped {} from the bootstrap files", dropped.name),
        ));
    }
    out.sort_by(|a, b| load_order(&a.name).cmp(&load_order(&b.name)));
    out
}

/// Turns a config entry into a plugin record and its bytes (or why not).
fn prepare(config: &PluginConfig, agent_dir: &Path) -> (LoadedPlugin, Result<Vec<u8>, String>) {
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
    let bytes = match (&config.source, &config.path) {
        (Some(source), _) => {
            let name = source.strip_prefix("builtin:").unwrap_or(source);
            builtin::get(name)
                .map(<[u8]>::to_vec)
                .ok_or_else(|| format!("{source}: no such built-in plugin (built-in: {})", builtin::ids().join(", ")))
        }
        (None, Some(path)) => read_plugin_file(agent_dir, path),
        (None, None) => Err("no source or path".into()),
    };
    (plugin, bytes)
}

/// The largest plugin file proem reads (official plugins are ~150-250 KB).
pub const MAX_PLUGIN_BYTES: u64 = 64 * 1024 * 1024;

/// Reads a plugin file through a capability handle on the agent directory,
/// like every other workspace read: a symlink or path that leaves the
/// directory is refused, and so is a file over [`MAX_PLUGIN_BYTES`].
fn read_plugin_file(agent_dir: &Path, path: &str) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let shown = agent_dir.join(path).display().to_string();
    let dir = cap_std::fs::Dir::open_ambient_dir(agent_dir, cap_std::ambient_authority())
        .map_err(|e| format!("{}: cannot open the agent directory: {e}", agent_dir.display()))?;
    // Opened without blocking, so a FIFO named as a plugin is refused by the
    // regular-file check below instead of hanging `build` and `plugins`.
    let file = dir
        .open_with(path, &crate::workspace::nonblocking_read())
        .map_err(|e| format!("{shown}: cannot read the plugin: {e}"))?;
    let meta = file.metadata().map_err(|e| format!("{shown}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("{shown}: not a regular file"));
    }
    if meta.len() > MAX_PLUGIN_BYTES {
        return Err(format!("{shown}: {} bytes, over the {} byte limit for a plugin", meta.len(), MAX_PLUGIN_BYTES));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.into_std().take(MAX_PLUGIN_BYTES).read_to_end(&mut bytes).map_err(|e| format!("{shown}: {e}"))?;
    Ok(bytes)
}

/// Checks, compiles (or loads from cache), pre-instantiates and describes.
fn compile(plugin: &LoadedPlugin, bytes: &[u8], cache_dir: Option<&Path>, agent_dir: &Path) -> Result<Ready, String> {
    let api = binary::check(bytes)?;
    let engine = engine::get()?;
    let (component, origin) = cache::load_or_compile(&engine.engine, bytes, cache_dir)?;
    let pre = engine
        .linker
        .instantiate_pre(&component)
        .map_err(|e| format!("cannot link against this proem: {}", cache::error_chain(&e)))?;
    let bindings = match api.split('.').take(2).collect::<Vec<_>>()[..] {
        ["0", "1"] => Bindings::V0_1(
            v0_1::PluginPre::new(pre).map_err(|e| format!("does not match API {api}: {}", cache::error_chain(&e)))?,
        ),
        ["0", "2"] => Bindings::V0_2(
            v0_2::PluginPre::new(pre).map_err(|e| format!("does not match API {api}: {}", cache::error_chain(&e)))?,
        ),
        _ => return Err(format!("API {api} has no bindings in this proem")),
    };
    let describe = plugin.call(
        engine,
        &bindings,
        agent_dir,
        Duration::ZERO,
        Tokenizer::O200kBase,
        DESCRIBE_DEADLINE,
        Request::Info,
    );
    let outcome = run_calls(engine, vec![describe]).remove(0);
    let info = match outcome.result {
        Ok(Response::Info(info)) => info,
        Ok(_) => return Err("describe answered with the wrong hook".into()),
        Err(f) => return Err(format!("describe {}", f.describe())),
    };
    Ok(Ready { bindings, info, cached: origin == cache::Origin::Cached })
}
