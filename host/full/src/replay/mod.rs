//! The cache-reuse benchmark: replays a trace ([`trace`]) and reports, for
//! each provider's model of caching ([`model`]) and each way of laying out
//! the request, the share of input tokens the provider could serve from its
//! cache, beside the trace's limit.
//!
//! Each turn's request is what a runtime sends: the tools, the system
//! prompt as the provider format renders it, the session's history (each
//! earlier user message as it was sent, turn context included, and the
//! reply), and the new user message (after its turn context when
//! `per_turn = "user_message"`). The agent's folder is a scratch copy made
//! from the trace's seed; the trace's edits are made there, never anywhere
//! else. `cargo bench -p proem-full --bench cache_reuse` prints the tables
//! of docs/PERFORMANCE.md "Cache reuse", over the traces of [`traces`].

pub mod model;
pub mod trace;
pub mod traces;

use model::{Block, CacheModel, Kind, Outcome, Request};
use proem::{Assembler, Built, Caching, Config, Tools, Turn};
use proem_core::cache::{PerTurn, Profile, Tiering, Ttl};
use proem_core::tokens::{shared_counter, TokenCounter, Tokenizer};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use trace::{Line, Seed, TraceTurn};

/// The most blocks the models may hold over a replay (each request's
/// blocks, once per variant): a trace whose sessions grow past it is an
/// error naming the line, not a machine out of memory (~50 bytes a block
/// besides the shared texts).
pub const MAX_STORED_BLOCKS: usize = 4_000_000;

/// One way of sending a build: a profile, how the build was tiered, and
/// whether it is proem's output before `[cache]` (one boundary: the stable
/// block alone with a 5 min breakpoint, no tools or conversation
/// breakpoint, no `prompt_cache_key`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Variant {
    /// The provider's model.
    pub profile: Profile,
    /// How the build was joined.
    pub tiering: Tiering,
    /// proem's single-boundary output.
    pub before: bool,
    /// Every Anthropic breakpoint at 5 min (else `[cache] ttl`'s defaults).
    pub all_five_minutes: bool,
}

impl Variant {
    /// How the table names its layout.
    pub fn layout(&self) -> String {
        if self.before {
            return "before: one boundary".into();
        }
        let per_turn = match self.tiering.per_turn {
            PerTurn::System => "per_turn=system",
            PerTurn::UserMessage => "per_turn=user_message",
        };
        let tier = if self.tiering.session_tier { "session tier" } else { "no session tier" };
        let ttl = if self.all_five_minutes { ", every TTL 5m" } else { "" };
        format!("{per_turn}, {tier}{ttl}")
    }
}

/// The four ways of tiering a build.
pub const TIERINGS: [Tiering; 4] = [
    Tiering { session_tier: false, per_turn: PerTurn::System },
    Tiering { session_tier: true, per_turn: PerTurn::System },
    Tiering { session_tier: false, per_turn: PerTurn::UserMessage },
    Tiering { session_tier: true, per_turn: PerTurn::UserMessage },
];

/// Every variant the benchmark reports, profile by profile.
pub fn variants() -> Vec<Variant> {
    let mut out = Vec::new();
    for profile in [Profile::Anthropic, Profile::Openai, Profile::Prefix] {
        let v = |tiering, before, all_five_minutes| Variant { profile, tiering, before, all_five_minutes };
        out.push(v(Tiering::NONE, true, false));
        out.extend(TIERINGS.iter().map(|t| v(*t, false, false)));
        if profile == Profile::Anthropic {
            out.push(v(TIERINGS[3], false, true));
        }
    }
    out
}

/// One variant's figures over a trace.
#[derive(Debug, Clone)]
pub struct Row {
    /// The variant.
    pub variant: Variant,
    /// Summed over the trace's requests.
    pub outcome: Outcome,
    /// Requests Anthropic's API would have refused (must be 0).
    pub refused: usize,
    /// Tokens of these requests no earlier request had ([`model::Novelty`]).
    pub new_tokens: u64,
}

/// A trace's figures.
#[derive(Debug, Clone)]
pub struct Report {
    /// Requests replayed.
    pub requests: usize,
    /// One row per variant.
    pub rows: Vec<Row>,
}

impl Row {
    /// Reused tokens over input tokens.
    pub fn reused_share(&self) -> f64 {
        share(self.outcome.reused, self.outcome.total)
    }
    /// The share of input tokens any prefix cache could serve at best: 1
    /// minus the share of new tokens.
    pub fn limit(&self) -> f64 {
        1.0 - share(self.new_tokens, self.outcome.total)
    }
    /// Input cost over the cost without any cache.
    pub fn cost_share(&self) -> f64 {
        if self.outcome.total == 0 {
            return 0.0;
        }
        self.outcome.cost / self.outcome.total as f64
    }
}

fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// The state of one agent of the trace: its scratch folder, an assembler
/// per tiering, and its tool catalog.
struct Agent {
    _dir: tempfile::TempDir,
    root: PathBuf,
    assemblers: Vec<Assembler>,
    tools: BTreeMap<String, proem::Tool>,
}

/// Replays the trace at `path`.
pub fn replay_file(path: &Path) -> Result<Report, String> {
    let size = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?.len();
    if size > trace::MAX_TRACE_BYTES {
        return Err(format!("{}: {size} bytes, more than {}", path.display(), trace::MAX_TRACE_BYTES));
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    replay(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Replays a trace's text.
pub fn replay(text: &str) -> Result<Report, String> {
    let lines = trace::parse(text)?;
    let counter = shared_counter(Tokenizer::O200kBase);
    let variants = variants();
    let mut agents: BTreeMap<String, Agent> = BTreeMap::new();
    let mut models: Vec<Box<dyn CacheModel>> = variants.iter().map(|v| new_model(v.profile)).collect();
    let mut rows: Vec<Row> =
        variants.iter().map(|v| Row { variant: *v, outcome: Outcome::default(), refused: 0, new_tokens: 0 }).collect();
    let mut novelty: Vec<model::Novelty> = variants.iter().map(|_| model::Novelty::default()).collect();
    // History per (variant, agent, session): the blocks as they were sent.
    let mut histories: BTreeMap<(usize, String, String), Vec<Block>> = BTreeMap::new();
    let mut start = None;
    let (mut requests, mut stored) = (0usize, 0usize);
    for (n, line) in lines.iter().enumerate() {
        let at_line = |e: String| format!("line {}: {e}", n + 1);
        match line {
            Line::Seed(seed) => {
                agents.insert(seed.agent.clone(), seed_agent(seed).map_err(at_line)?);
            }
            Line::Turn(turn) => {
                let agent = agents.get(&turn.agent).expect("checked: seeded");
                for edit in &turn.edits {
                    trace::apply(&agent.root, edit).map_err(at_line)?;
                }
                let now = proem_core::turn::parse_now(&turn.time).map_err(|e| at_line(e.to_string()))?;
                let at = u64::try_from((now - *start.get_or_insert(now)).num_seconds()).unwrap_or(0);
                let (proem_turn, tools_json) = proem_turn(turn, agent, now).map_err(at_line)?;
                let tools = Block::new(Kind::Tools, Arc::from(tools_json), counter);
                let builds: Vec<Built> = agent
                    .assemblers
                    .iter()
                    .map(|a| a.build(&proem_turn).map_err(|e| at_line(e.to_string())))
                    .collect::<Result<_, _>>()?;
                for (i, variant) in variants.iter().enumerate() {
                    let built = &builds[TIERINGS.iter().position(|t| *t == variant.tiering).unwrap_or(0)];
                    let key = (i, turn.agent.clone(), turn.session.clone());
                    let history = histories.entry(key).or_default();
                    let (request, sent_user) = request(variant, built, &tools, history, turn, at, counter);
                    if variant.profile == Profile::Anthropic && request.anthropic_error().is_some() {
                        rows[i].refused += 1;
                    }
                    stored = stored.saturating_add(request.blocks.len());
                    if stored > MAX_STORED_BLOCKS {
                        return Err(at_line(format!(
                            "the requests so far hold more than {MAX_STORED_BLOCKS} blocks (sessions too long): \
                             split the trace or shorten its sessions"
                        )));
                    }
                    rows[i].new_tokens += novelty[i].new_tokens(&request, counter);
                    rows[i].outcome += models[i].serve(&request, counter);
                    history.extend(sent_user);
                    history.push(Block::new(Kind::Assistant, Arc::from(turn.reply.as_str()), counter));
                }
                requests += 1;
            }
        }
    }
    Ok(Report { requests, rows })
}

fn new_model(profile: Profile) -> Box<dyn CacheModel> {
    match profile {
        Profile::Anthropic => Box::new(model::Anthropic::default()),
        Profile::Openai => Box::new(model::OpenAi::default()),
        Profile::Prefix => Box::new(model::Prefix::default()),
    }
}

/// A scratch copy of the agent's seed, with one assembler per tiering
/// (every proem cache off, so each build reads the edited files).
fn seed_agent(seed: &Seed) -> Result<Agent, String> {
    let dir = tempfile::tempdir().map_err(|e| format!("a scratch folder: {e}"))?;
    let root = dir.path().join(seed.agent.chars().filter(|c| c.is_ascii_alphanumeric()).collect::<String>());
    std::fs::create_dir_all(&root).map_err(|e| format!("a scratch folder: {e}"))?;
    for (name, text) in &seed.files {
        trace::apply(
            &root,
            &trace::Edit { file: name.clone(), append: None, write: Some(text.clone()), delete: false },
        )?;
    }
    let config_file = root.join(proem_core::config::CONFIG_FILE);
    let config = match config_file.exists() {
        true => Config::load(&config_file).map_err(|e| e.to_string())?,
        false => Config::default(),
    };
    let mut assemblers = Vec::new();
    for tiering in TIERINGS {
        let mut config = config.clone();
        config.cache.session_tier = tiering.session_tier;
        config.cache.per_turn = tiering.per_turn;
        let mut assembler = Assembler::with_config(&root, config).map_err(|e| e.to_string())?;
        assembler.set_caching(Caching::NONE);
        assemblers.push(assembler);
    }
    let tools = seed.tools.iter().map(|t| (t.name.clone(), t.clone())).collect();
    Ok(Agent { _dir: dir, root, assemblers, tools })
}

/// The proem turn of a trace turn, and its tools as sent natively.
fn proem_turn(
    turn: &TraceTurn,
    agent: &Agent,
    now: chrono::DateTime<chrono::FixedOffset>,
) -> Result<(Turn, String), String> {
    let mut tools = Vec::with_capacity(turn.tools.len());
    for name in &turn.tools {
        let tool = agent.tools.get(name).ok_or_else(|| format!("tools: {name:?} is not in the agent's catalog"))?;
        tools.push(tool.clone());
    }
    let native: Vec<serde_json::Value> = tools
        .iter()
        .map(|t| serde_json::json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
        .collect();
    let proem_turn = Turn {
        session_key: Some(turn.session.clone()),
        now: Some(now),
        channel: turn.channel.clone(),
        chat_kind: turn.chat,
        group_title: turn.group_title.clone(),
        extra: turn.extra.clone(),
        tools: Some(Tools::List(tools)),
        ..Turn::default()
    };
    Ok((proem_turn, serde_json::to_string(&native).unwrap_or_default()))
}

/// The request `variant` sends for `built`, and the new user blocks as
/// they stay in the session's history.
fn request(
    variant: &Variant,
    built: &Built,
    tools: &Block,
    history: &[Block],
    turn: &TraceTurn,
    at: u64,
    counter: &TokenCounter,
) -> (Request, Vec<Block>) {
    let sent = proem_core::render::request(built, variant.profile);
    let anthropic_after = variant.profile == Profile::Anthropic && !variant.before;
    let ttl_of =
        |breakpoint: &serde_json::Value| match (variant.before || variant.all_five_minutes, breakpoint["ttl"].as_str())
        {
            (true, _) | (false, Some("5m")) => Ttl::FiveMinutes,
            (false, _) => Ttl::OneHour,
        };
    let text = |v: &serde_json::Value| Arc::<str>::from(v.as_str().unwrap_or(""));
    let mut blocks = vec![match anthropic_after {
        true => tools.clone().cached(ttl_of(&sent["breakpoints"]["tools"])),
        false => tools.clone(),
    }];
    match variant.profile {
        Profile::Anthropic => {
            for block in sent["system"].as_array().into_iter().flatten() {
                let b = Block::new(Kind::System, text(&block["text"]), counter);
                blocks.push(match block.get("cache_control") {
                    Some(c) => b.cached(ttl_of(c)),
                    None => b,
                });
            }
        }
        Profile::Openai | Profile::Prefix => {
            blocks.push(Block::new(Kind::System, text(&sent["messages"][0]["content"]), counter));
        }
    }
    blocks.extend(history.iter().cloned());
    let mut user = Vec::new();
    let context = match &sent["turn_context"] {
        serde_json::Value::Array(parts) => parts.first().map(|p| &p["text"]),
        other => other.get("text"),
    };
    if let Some(context) = context.filter(|c| c.as_str().is_some_and(|s| !s.is_empty())) {
        user.push(Block::new(Kind::User, text(context), counter));
    }
    let message = Block::new(Kind::User, Arc::from(turn.user.as_str()), counter);
    user.push(match anthropic_after {
        true => message.clone().cached(ttl_of(&sent["breakpoints"]["conversation"])),
        false => message,
    });
    blocks.extend(user.iter().cloned());
    let kept = user.iter().map(Block::plain).collect();
    (Request { at, blocks }, kept)
}

/// The Markdown table of a trace's report.
pub fn table(name: &str, report: &Report) -> String {
    let mut out = format!(
        "### {name} ({} requests)\n\n\
         | profile | layout | input tokens | reused | limit | tokens written | input cost (uncached-token units) |\n\
         |---|---|---|---|---|---|---|\n",
        report.requests,
    );
    for row in &report.rows {
        out.push_str(&format!(
            "| {} | {} | {} | {:.1}% | {:.1}% | {} | {} ({:.1}% of no cache) |\n",
            row.variant.profile.as_str(),
            row.variant.layout(),
            row.outcome.total,
            row.reused_share() * 100.0,
            row.limit() * 100.0,
            row.outcome.written,
            row.outcome.cost.round() as u64,
            row.cost_share() * 100.0,
        ));
    }
    out
}
