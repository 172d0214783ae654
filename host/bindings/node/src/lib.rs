//! `@proem/proem`: proem in process for Node.js (napi-rs). `new Agent(path)`
//! opens an agent folder once; `agent.build(turn)` builds on libuv's thread
//! pool and resolves a Promise, `agent.buildSync(turn)` builds on the
//! calling thread. A turn is `proem serve`'s JSON body, its members
//! converted from the JS object and checked as the service checks them
//! (`proem::binding`); errors carry the CLI's message and a code.
//!
//! The TypeScript declarations (`index.d.ts`) are generated from this file
//! by `napi build`: the doc comments here are the ones users read.
#![allow(clippy::new_without_default)]

use napi::bindgen_prelude::*;
use napi_derive::napi;
mod turn;

use proem::binding::{Failure, Refusal, Spelling};
use proem::{Assembler, BuildRequest, Caching, Format};
use std::sync::Arc;

/// The inputs of one turn: `proem build`'s flags, `proem serve`'s body.
/// Every field is optional; an unknown one is refused, naming it.
#[napi(object)]
pub struct Turn {
    /// `full`, `task`, `minimal` or `none` (default: from the session key, then the config).
    #[napi(ts_type = "'full' | 'task' | 'minimal' | 'none'")]
    pub mode: Option<String>,
    /// Session key (`…:heartbeat…`, `…:subagent:…`, `…:cron:…` change the mode).
    pub session_key: Option<String>,
    /// This turn is a heartbeat.
    pub heartbeat: Option<bool>,
    /// The runtime lets the agent stay silent this turn.
    pub replies_optional: Option<bool>,
    /// The thinking level, for the runtime line.
    pub thinking: Option<String>,
    /// Provider name (overrides `[provider] name`).
    pub provider: Option<String>,
    /// Model id (overrides `[provider] model`; picks the tokenizer).
    pub model: Option<String>,
    /// Channel the message came from (telegram, slack, …).
    pub channel: Option<String>,
    /// Direct message or group chat.
    #[napi(ts_type = "'direct' | 'group'")]
    pub chat_kind: Option<String>,
    /// Title of the group chat (untrusted).
    pub group_title: Option<String>,
    /// Extra system prompt for this turn (untrusted).
    pub extra: Option<String>,
    /// Owners' sender ids.
    pub owners: Option<Vec<String>>,
    /// The tools: a list of `{name, description, parameters}`, or the name of
    /// a tools JSON file inside the agent folder.
    #[napi(ts_type = "string | Array<{ name: string; description?: string; parameters?: unknown; server?: string }>")]
    pub tools: Option<serde_json::Value>,
    /// The turn's time, RFC 3339 (default: now).
    pub now: Option<String>,
    /// IANA time zone for the date (default: UTC).
    pub timezone: Option<String>,
    /// Whole-prompt token budget, 1 to 1,000,000,000.
    pub budget: Option<f64>,
    /// Fail when any plugin failed (`proem build --strict`).
    pub strict: Option<bool>,
}

/// What an `Agent` keeps between builds (all on unless set false).
#[napi(object)]
pub struct CachingFlags {
    /// Whole builds, while their inputs and files are unchanged.
    pub builds: Option<bool>,
    /// Plugin outputs, for an identical request.
    pub plugin_outputs: Option<bool>,
    /// Token counts per paragraph.
    pub token_counts: Option<bool>,
    /// inotify instead of a stat per file.
    pub file_events: Option<bool>,
    /// The cleaned tool list.
    pub prepared_tools: Option<bool>,
    /// What the workspace gave the last build.
    pub workspace_reads: Option<bool>,
}

/// How an `Agent` is opened.
#[napi(object)]
pub struct AgentOptions {
    /// A proem.toml to use instead of the folder's.
    pub config: Option<String>,
    /// `true` (everything kept between builds, the default), `false`
    /// (nothing), or some flags; the prompt is the same either way.
    pub caching: Option<Either<bool, CachingFlags>>,
}

fn caching_of(value: Option<Either<bool, CachingFlags>>) -> Caching {
    match value {
        None | Some(Either::A(true)) => Caching::default(),
        Some(Either::A(false)) => Caching::NONE,
        Some(Either::B(f)) => {
            let on = Caching::default();
            Caching {
                builds: f.builds.unwrap_or(on.builds),
                plugin_outputs: f.plugin_outputs.unwrap_or(on.plugin_outputs),
                token_counts: f.token_counts.unwrap_or(on.token_counts),
                file_events: f.file_events.unwrap_or(on.file_events),
                prepared_tools: f.prepared_tools.unwrap_or(on.prepared_tools),
                workspace_reads: f.workspace_reads.unwrap_or(on.workspace_reads),
            }
        }
    }
}

/// A failure as the JS `Error` thrown (or the Promise rejected) for it.
trait Thrown {
    /// `message` is what `proem build` prints after `proem: error: `,
    /// `code` the kind (`bad-request`, `budget-too-small`, `plugin-failed`,
    /// `agent-unavailable`), `field` the turn field at fault (or null),
    /// `exitCode` what `proem build` exits with for the same mistake (2 for
    /// a turn refused before the build, as the CLI's usage errors; else 1).
    fn into_error(self, env: &Env) -> Error;
}

impl Thrown for Failure {
    fn into_error(self, env: &Env) -> Error {
        let made = env.create_error(Error::new(Status::GenericFailure, self.message)).and_then(|mut error| {
            error.set("code", self.code)?;
            error.set("field", self.field)?;
            error.set("exitCode", self.exit_code)?;
            Ok(error)
        });
        match made {
            Ok(error) => Error::from(error.to_unknown()),
            Err(e) => e,
        }
    }
}

/// The turn in `turn` (a [`Turn`], its fields in camelCase, or in the
/// snake_case of `proem serve`'s JSON body), or the field at fault
/// ([`turn::members`]); the members reach the core's check as values,
/// never as text (`proem::binding`). No exception is left pending.
fn parse_turn(env: &Env, turn: Option<Unknown<'_>>) -> std::result::Result<BuildRequest, Failure> {
    let members = turn::members(env, turn)?;
    Ok(proem::binding::request_from_members(Spelling::Camel, members)?)
}

/// Builds `request`, the memo first; with `strict`, a failed plugin fails.
fn run(assembler: &Assembler, request: &BuildRequest) -> std::result::Result<Arc<proem::Built>, Failure> {
    proem::binding::build(assembler, request).map_err(|e| Failure::of(&e))
}

/// One agent folder, opened once (its proem.toml read, its plugins
/// loaded): build it once per turn. Keep one per agent for the life of the
/// process; it reuses what did not change between builds.
#[napi]
pub struct Agent {
    assembler: Arc<Assembler>,
    path: String,
}

#[napi]
impl Agent {
    /// Opens `path`. Throws (code `agent-unavailable`) when the folder or
    /// its config cannot be read, as `proem build` fails.
    #[napi(constructor)]
    pub fn new(env: Env, path: String, options: Option<AgentOptions>) -> Result<Agent> {
        let (config, caching) = match options {
            Some(o) => (o.config, caching_of(o.caching)),
            None => (None, Caching::default()),
        };
        let config = config.map(std::path::PathBuf::from);
        let mut assembler =
            Assembler::open(path.as_ref(), config.as_deref()).map_err(|e| Failure::of(&e).into_error(&env))?;
        assembler.set_caching(caching);
        Ok(Agent { assembler: Arc::new(assembler), path })
    }

    /// The agent folder, as given.
    #[napi(getter)]
    pub fn path(&self) -> String {
        self.path.clone()
    }

    /// How many builds were answered from the build memo.
    #[napi(getter)]
    pub fn memo_hits(&self) -> f64 {
        self.assembler.memo_hits() as f64
    }

    /// Builds the prompt for one turn off the main thread (libuv's pool).
    #[napi(ts_args_type = "turn?: Turn", ts_return_type = "Promise<Built>")]
    /// Every error, a turn refused as much as a failed build, rejects the
    /// Promise: nothing is thrown.
    pub fn build(&self, env: Env, turn: Option<Unknown<'_>>) -> AsyncTask<BuildTask> {
        AsyncTask::new(BuildTask { assembler: self.assembler.clone(), request: Some(parse_turn(&env, turn)) })
    }

    /// docs/PERFORMANCE.md's baseline: `n` builds of the turn timed in
    /// Rust, nanoseconds each (`proem::binding::time_in_rust`).
    #[napi(js_name = "_timeInRust", ts_args_type = "turn: Turn, n: number, newClock: boolean")]
    pub fn time_in_rust(&self, env: Env, turn: Option<Unknown<'_>>, n: u32, new_clock: bool) -> Result<Vec<f64>> {
        parse_turn(&env, turn)
            .and_then(|request| {
                proem::binding::time_in_rust(&self.assembler, &request.turn, n, new_clock).map_err(|e| Failure::of(&e))
            })
            .map(|times| times.into_iter().map(|ns| ns as f64).collect())
            .map_err(|f| f.into_error(&env))
    }

    /// Builds the prompt for one turn on this thread.
    #[napi(ts_args_type = "turn?: Turn")]
    pub fn build_sync(&self, env: Env, turn: Option<Unknown<'_>>) -> Result<Built> {
        parse_turn(&env, turn)
            .and_then(|request| run(&self.assembler, &request))
            .map(|built| Built::wrap(&env, built))
            .map_err(|f| f.into_error(&env))
    }
}

/// A build on libuv's thread pool.
pub struct BuildTask {
    assembler: Arc<Assembler>,
    request: Option<std::result::Result<BuildRequest, Failure>>,
}

impl Task for BuildTask {
    type Output = std::result::Result<Arc<proem::Built>, Failure>;
    type JsValue = Built;

    fn compute(&mut self) -> Result<Self::Output> {
        let request = self.request.take().unwrap_or_else(|| Err(Refusal::of_turn("built twice").into()));
        Ok(request.and_then(|request| run(&self.assembler, &request)))
    }

    fn resolve(&mut self, env: Env, output: Self::Output) -> Result<Built> {
        output.map(|built| Built::wrap(&env, built)).map_err(|f| f.into_error(&env))
    }
}

/// Token counts of the rendered prompt.
#[napi(object)]
pub struct TokenReport {
    /// The whole prompt, marker included.
    pub total: i64,
    /// The stable part.
    pub stable: i64,
    /// The dynamic part.
    pub dynamic: i64,
    /// The budget it was fitted to.
    pub budget: i64,
    /// Tokens of the tool schemas sent natively beside the prompt.
    pub tool_schemas: i64,
}

/// One section of the final prompt.
#[napi(object)]
pub struct SectionReport {
    /// Section id.
    pub id: String,
    /// `core` or `plugin:<id>`.
    pub source: String,
    /// Which side of the cache boundary.
    #[napi(ts_type = "'stable' | 'dynamic'")]
    pub zone: String,
    /// Characters of its body.
    pub chars: i64,
    /// Tokens of its body.
    pub tokens: i64,
    /// Whether the budget (or a cap) shortened it.
    pub truncated: bool,
}

/// One bootstrap file.
#[napi(object)]
pub struct FileReport {
    /// Workspace-relative name.
    pub name: String,
    /// Characters after normalisation.
    pub raw_chars: i64,
    /// Characters injected into the prompt.
    pub injected_chars: i64,
    /// Whether it was cut.
    pub truncated: bool,
    /// Whether it was absent.
    pub missing: bool,
    /// `workspace` or `plugin:<id>`.
    pub source: String,
}

/// One plugin's outcome.
#[napi(object)]
pub struct PluginReport {
    /// Plugin id.
    pub id: String,
    /// `ok`, `failed`, `skipped`, …
    pub status: String,
    /// Time spent in the plugin this build; 0 when it was `remembered`.
    pub elapsed_us: i64,
    /// Whether this build made no call to the plugin because every answer
    /// it needed was remembered (the build memo, the plugin answers' memo).
    pub remembered: bool,
}

/// One input of the stable part and its digest: what moved the stable
/// hash between two builds.
#[napi(object)]
pub struct StableInput {
    /// The section it feeds, `source/id`; empty for an input of the whole build.
    pub section: String,
    /// `body`, `file:NAME`, `plugin:ID`, `config:[TABLE]`, `tools` or `skills`.
    pub input: String,
    /// xxh3-64 of it, 16 hex digits.
    pub digest: String,
}

/// One thing the build wants its caller to know.
#[napi(object)]
pub struct Diagnostic {
    /// Severity.
    #[napi(ts_type = "'info' | 'warn' | 'error'")]
    pub level: String,
    /// Stable machine-readable code, e.g. `file_truncated`.
    pub code: String,
    /// What happened.
    pub message: String,
}

/// A count as a JS number (exact far beyond any prompt's size).
fn n(value: usize) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn format_of(name: &str) -> Result<Format> {
    proem::binding::format_named(name).map_err(|why| Error::new(Status::InvalidArg, why))
}

/// A built prompt and its report.
#[napi(custom_finalize)]
pub struct Built {
    inner: Arc<proem::Built>,
    /// The bytes this object alone keeps alive, as told to V8
    /// ([`Built::wrap`]), given back when it is collected.
    external: i64,
}

impl Built {
    /// `built` for JS. V8 sees only a small object, so a loop of builds
    /// would keep every one (hundreds of MB, each new page faulted in)
    /// until something else made it collect: the bytes a fresh build holds
    /// are reported as external memory, which makes V8 collect in
    /// proportion. A build the memo shares is not counted (the memo keeps
    /// it either way).
    fn wrap(env: &Env, built: Arc<proem::Built>) -> Built {
        let external = if Arc::strong_count(&built) == 1 {
            i64::try_from(proem::binding::held_bytes(&built)).unwrap_or(i64::MAX)
        } else {
            0
        };
        let external = match env.adjust_external_memory(external) {
            Ok(_) => external,
            Err(_) => 0,
        };
        Built { inner: built, external }
    }
}

impl ObjectFinalize for Built {
    fn finalize(self, env: Env) -> Result<()> {
        if self.external > 0 {
            env.adjust_external_memory(-self.external)?;
        }
        Ok(())
    }
}

#[napi]
impl Built {
    /// `stable`, a newline, the boundary marker, a newline, `dynamic`.
    #[napi(getter)]
    pub fn prompt(&self) -> String {
        self.inner.prompt.clone()
    }
    /// The part above the cache boundary: cache it.
    #[napi(getter)]
    pub fn stable(&self) -> String {
        self.inner.stable.to_string()
    }
    /// This turn's part, below the boundary.
    #[napi(getter)]
    pub fn dynamic(&self) -> String {
        self.inner.dynamic.clone()
    }
    /// SHA-256 (hex) of `stable`.
    #[napi(getter)]
    pub fn stable_hash(&self) -> String {
        self.inner.stable_hash.clone()
    }
    /// The resolved mode.
    #[napi(getter, ts_return_type = "'full' | 'task' | 'minimal' | 'none'")]
    pub fn mode(&self) -> String {
        self.inner.mode.as_str().into()
    }
    /// `o200k_base` or `cl100k_base`.
    #[napi(getter)]
    pub fn tokenizer(&self) -> String {
        self.inner.tokenizer.clone()
    }
    /// With `[cache] per_turn = "user_message"`, the per-turn sections,
    /// out of the system prompt, for the newest user message (else null).
    #[napi(getter)]
    pub fn turn_context(&self) -> Option<String> {
        self.inner.turn_context.clone()
    }
    /// Whether the token counts are the model's own tokenizer's.
    #[napi(getter)]
    pub fn exact(&self) -> bool {
        self.inner.exact
    }
    /// What fed the stable part, with digests.
    #[napi(getter)]
    pub fn stable_inputs(&self) -> Vec<StableInput> {
        let row = |i: &proem::StableInput| StableInput {
            section: i.section.clone(),
            input: i.input.clone(),
            digest: i.digest.clone(),
        };
        self.inner.stable_inputs.iter().map(row).collect()
    }
    /// Token counts.
    #[napi(getter)]
    pub fn tokens(&self) -> TokenReport {
        let t = self.inner.tokens;
        TokenReport {
            total: n(t.total),
            stable: n(t.stable),
            dynamic: n(t.dynamic),
            budget: n(t.budget),
            tool_schemas: n(t.tool_schemas),
        }
    }
    /// Sections in prompt order.
    #[napi(getter)]
    pub fn sections(&self) -> Vec<SectionReport> {
        self.inner
            .sections
            .iter()
            .map(|s| SectionReport {
                id: s.id.clone(),
                source: s.source.clone(),
                zone: s.zone.as_str().into(),
                chars: n(s.chars),
                tokens: n(s.tokens),
                truncated: s.truncated,
            })
            .collect()
    }
    /// Bootstrap files in load order.
    #[napi(getter)]
    pub fn files(&self) -> Vec<FileReport> {
        self.inner
            .files
            .iter()
            .map(|f| FileReport {
                name: f.name.clone(),
                raw_chars: n(f.raw_chars),
                injected_chars: n(f.injected_chars),
                truncated: f.truncated,
                missing: f.missing,
                source: f.source.clone(),
            })
            .collect()
    }
    /// Plugins in id order.
    #[napi(getter)]
    pub fn plugins(&self) -> Vec<PluginReport> {
        self.inner
            .plugins
            .iter()
            .map(|p| PluginReport {
                id: p.id.clone(),
                status: p.status.to_string(),
                elapsed_us: i64::try_from(p.elapsed_us).unwrap_or(i64::MAX),
                remembered: p.remembered,
            })
            .collect()
    }
    /// Everything worth knowing, in the order it happened.
    #[napi(getter)]
    pub fn diagnostics(&self) -> Vec<Diagnostic> {
        self.inner
            .diagnostics
            .iter()
            .map(|d| Diagnostic {
                level: proem::binding::level_name(d.level).into(),
                code: d.code.clone(),
                message: d.message.clone(),
            })
            .collect()
    }
    /// Exactly what `proem build --format FORMAT` prints for this turn.
    #[napi(ts_args_type = "format?: 'text' | 'json' | 'anthropic' | 'openai'")]
    pub fn render(&self, format: Option<String>) -> Result<String> {
        let format = format_of(format.as_deref().unwrap_or("text"))?;
        let request = BuildRequest { format: Some(format), ..BuildRequest::default() };
        // Not strict: rendering cannot fail.
        Ok(proem::render(&self.inner, &request).unwrap_or_default())
    }
    /// `{system: [...]}`: the stable block with `cache_control` and the
    /// dynamic block, as `proem build --format anthropic` prints it.
    #[napi(ts_return_type = "{ system: Array<{ type: 'text'; text: string; cache_control?: { type: 'ephemeral' } }> }")]
    pub fn to_anthropic(&self) -> serde_json::Value {
        proem::binding::provider_value(&self.inner, Format::Anthropic)
    }
    /// `{messages: [{role: 'system', content}]}`, as
    /// `proem build --format openai` prints it.
    #[napi(ts_return_type = "{ messages: Array<{ role: 'system'; content: string }> }")]
    pub fn to_openai(&self) -> serde_json::Value {
        proem::binding::provider_value(&self.inner, Format::Openai)
    }
    /// The JSON report (`proem build --format json`), for `JSON.stringify`.
    #[napi(js_name = "toJSON", ts_return_type = "Record<string, unknown>")]
    pub fn to_json(&self) -> Result<serde_json::Value> {
        serde_json::to_value(&*self.inner).map_err(|e| Error::new(Status::GenericFailure, e.to_string()))
    }
}
