//! `proem plugin run FILE.wasm [--config FILE] [--turn FILE]`: a plugin's
//! hooks called once each on a turn, their raw answers printed as JSON, no
//! agent needed. The end-to-end test of a plugin in any language.
//!
//! The plugin is loaded as a build loads one (the same checks, sandbox,
//! limits and stubs, no grant) from a scratch folder holding a copy of it,
//! compiled through proem's component cache; the hooks' answers are not
//! kept, and nothing else is written. Every
//! hook of its API version is called, declared or not, each in a fresh
//! sandbox seeing what a build would show it: a stable or bootstrap hook
//! sees no clock, channel or chat, and the stable files only.

use proem_core::bootstrap::BootstrapFile;
use proem_core::config::PluginConfig;
use proem_core::plugin::call::Response;
use proem_core::plugin::BuildContext;
use serde::Deserialize;
use serde_json::{json, Value};
use std::path::Path;

/// The most rounds of calls `--repeat` makes.
pub const MAX_REPEAT: u32 = 1000;

fn micros(elapsed: std::time::Duration) -> u64 {
    u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX)
}

/// The largest `--config` or `--turn` file read.
pub const MAX_INPUT_BYTES: u64 = 4 * 1024 * 1024;

/// The turn `--turn FILE` describes (JSON): every field optional, over
/// [`BuildContext::sample`] (a Telegram group chat in Berlin on an OpenAI
/// model, four tools, no skills).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TurnFile {
    agent_id: Option<String>,
    mode: Option<String>,
    provider: Option<String>,
    model: Option<String>,
    channel: Option<String>,
    chat_kind: Option<String>,
    group_title: Option<String>,
    extra: Option<String>,
    /// RFC 3339 with its offset; the local time hooks see.
    now: Option<String>,
    timezone: Option<String>,
    budget_tokens: Option<u32>,
    tools: Option<Vec<ToolEntry>>,
    /// Workspace files: the stable ones go to stable and bootstrap hooks,
    /// USER.md and HEARTBEAT.md to the turn hook.
    files: Option<Vec<FileEntry>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolEntry {
    name: String,
    #[serde(default)]
    description: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileEntry {
    name: String,
    content: Option<String>,
}

/// Runs the plugin at `file` and gives the JSON to print.
/// Each hook is called `repeat` times (at least once), one round after
/// another; the answers printed are the first round's, `elapsed_us` the
/// median call.
pub fn run(file: &Path, config: Option<&Path>, turn: Option<&Path>, repeat: u32) -> Result<String, String> {
    let shown = file.display().to_string();
    let bytes = proem_core::disk::read_regular_file(file, proem_core::plugin::set::MAX_PLUGIN_BYTES)
        .map_err(|e| format!("{shown}: cannot read: {e}"))?;
    let api = proem_wasm::binary::check(&bytes).map_err(|e| format!("{shown}: {e}"))?;
    let table = match config {
        Some(path) => Some(read_config(path)?),
        None => None,
    };
    let turn_file = match turn {
        Some(path) => read_turn(path)?,
        None => TurnFile::default(),
    };
    let (ctx, files) = context(&turn_file)
        .map_err(|e| format!("--turn {}: {e}", turn.map(|p| p.display().to_string()).unwrap_or_default()))?;
    let dir = tempfile::tempdir().map_err(|e| format!("cannot make a scratch folder: {e}"))?;
    std::fs::write(dir.path().join("plugin.wasm"), &bytes).map_err(|e| format!("cannot copy the plugin: {e}"))?;
    let entry =
        PluginConfig { id: "run".into(), path: Some("plugin.wasm".into()), config: table, ..PluginConfig::default() };
    let set = tracing::subscriber::with_default(tracing::subscriber::NoSubscriber::default(), || {
        proem::load_plugins(&[entry], dir.path(), proem_core::cache_dir::default_path().as_deref())
    })
    .map_err(|e| format!("{shown}: {e}"))?;
    let info = match set.plugins().first().map(|p| &p.state) {
        Some(Ok(ready)) => ready.info.clone(),
        Some(Err(why)) => {
            return Err(format!("{shown}: does not load: {}", why.strip_prefix("plugin.wasm: ").unwrap_or(why)))
        }
        None => return Err(format!("{shown}: nothing was loaded")),
    };
    let round = || set.call_hooks(&ctx, &files).into_iter().next().map(|(_, calls)| calls).unwrap_or_default();
    let calls = round();
    let mut times: Vec<Vec<u64>> = calls.iter().map(|call| vec![micros(call.elapsed)]).collect();
    for _ in 1..repeat.clamp(1, MAX_REPEAT) {
        for (time, call) in times.iter_mut().zip(round()) {
            time.push(micros(call.elapsed));
        }
    }
    let hooks: Vec<Value> = calls
        .into_iter()
        .zip(times)
        .map(|(call, mut times)| {
            times.sort_unstable();
            let (output, error) = match call.answer {
                Ok(response) => (output_json(response), Value::Null),
                Err(why) => (Value::Null, Value::String(why)),
            };
            json!({
                "hook": call.hook.interface(),
                "declared": call.declared,
                "output": output,
                "error": error,
                "logs": call.logs.iter().map(|l| json!({"level": l.level.as_str().to_ascii_lowercase(), "message": l.message})).collect::<Vec<_>>(),
                "elapsed_us": times[times.len() / 2],
                "calls": times.len(),
                "least_us": times[0],
                "most_us": times[times.len() - 1],
            })
        })
        .collect();
    let out = json!({
        "file": shown,
        "api": api,
        "plugin": {"id": info.id, "version": info.version, "hooks": info.hooks(), "capabilities": info.capabilities},
        "hooks": hooks,
    });
    Ok(format!("{}\n", serde_json::to_string_pretty(&out).unwrap_or_default()))
}

/// A hook's answer as JSON: the fields of its WIT record.
fn output_json(response: Response) -> Value {
    fn value<T: serde::Serialize>(v: &T) -> Value {
        serde_json::to_value(v).unwrap_or(Value::Null)
    }
    match response {
        Response::Info(info) => json!({"info": value(&info)}),
        Response::Sections(sections) => json!({"sections": value(&sections)}),
        Response::Overlay(overlay) => json!({"overlay": value(&overlay)}),
        Response::Bootstrap(files) => json!({"files": value(&files)}),
        Response::Contribution(sections, ends) => json!({"sections": value(&sections), "ends": value(&ends)}),
    }
}

/// Reads a file of at most [`MAX_INPUT_BYTES`] as UTF-8, naming it.
fn read_text(path: &Path, flag: &str) -> Result<String, String> {
    let bytes = proem_core::disk::read_regular_file(path, MAX_INPUT_BYTES)
        .map_err(|e| format!("{flag} {}: cannot read: {e}", path.display()))?;
    String::from_utf8(bytes).map_err(|_| format!("{flag} {}: not valid UTF-8", path.display()))
}

/// `--config FILE`: the plugin's `[[plugins]] config` table, as TOML (a
/// `.toml` file: the table's keys at the top) or JSON (an object).
pub fn read_config(path: &Path) -> Result<toml::Table, String> {
    let text = read_text(path, "--config")?;
    let shown = path.display();
    if path.extension().is_some_and(|e| e == "toml") {
        return toml::from_str(&text)
            .map_err(|e| format!("--config {shown}: {}", proem_core::text::one_line(&e.to_string(), 500)));
    }
    let value: Value = serde_json::from_str(&text).map_err(|e| format!("--config {shown}: not JSON: {e}"))?;
    if !value.is_object() {
        return Err(format!("--config {shown}: the config is a JSON object (the [[plugins]] config table)"));
    }
    toml::Table::try_from(value).map_err(|e| {
        format!("--config {shown}: {e} (a config is what proem.toml can hold: no null, one type per array)")
    })
}

fn read_turn(path: &Path) -> Result<TurnFile, String> {
    let text = read_text(path, "--turn")?;
    serde_json::from_str(&text).map_err(|e| format!("--turn {}: {e}", path.display()))
}

/// The build context and files a turn file describes.
fn context(turn: &TurnFile) -> Result<(BuildContext, Vec<BootstrapFile>), String> {
    let mut ctx = BuildContext::sample();
    let text = |v: &Option<String>| v.as_deref().map(|t| proem_core::text::one_line(t, 2000));
    if let Some(id) = &turn.agent_id {
        ctx.agent_id = proem_core::text::one_line(id, 200);
    }
    if let Some(mode) = &turn.mode {
        ctx.mode = mode.parse().map_err(|e: String| format!("mode: {e}"))?;
    }
    for (field, value) in
        [(&mut ctx.provider, &turn.provider), (&mut ctx.model, &turn.model), (&mut ctx.channel, &turn.channel)]
    {
        if value.is_some() {
            *field = text(value);
        }
    }
    if let Some(kind) = &turn.chat_kind {
        let kind = kind
            .parse::<proem_core::turn::ChatKind>()
            .map_err(|_| format!("chat_kind: {kind:?} is not direct or group"))?;
        ctx.chat_kind = Some(kind);
    }
    if turn.group_title.is_some() {
        ctx.group_title = text(&turn.group_title);
    }
    ctx.extra = text(&turn.extra);
    if let Some(tokens) = turn.budget_tokens {
        ctx.budget_tokens = tokens;
    }
    if let Some(now) = &turn.now {
        let parsed = proem_core::turn::parse_now(now).map_err(|e| format!("now: {e}"))?;
        ctx.now = parsed.to_rfc3339();
        ctx.unix_seconds = parsed.timestamp();
        ctx.utc_offset_seconds = parsed.offset().local_minus_utc();
        ctx.timezone = turn.timezone.clone().unwrap_or_else(|| "UTC".into());
    } else if let Some(zone) = &turn.timezone {
        ctx.timezone = zone.clone();
    }
    if let Some(tools) = &turn.tools {
        let mut tools: Vec<proem_core::plugin::ContextTool> = tools
            .iter()
            .map(|t| proem_core::plugin::ContextTool {
                name: proem_core::text::one_line(&t.name, 200),
                description: proem_core::text::one_line(&t.description, 2000),
                parameters_json: None,
            })
            .collect();
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        ctx.tools = tools;
    }
    let files = match &turn.files {
        Some(files) => files.iter().map(|f| BootstrapFile::new(&f.name, f.content.clone())).collect(),
        None => Vec::new(),
    };
    Ok((ctx, files))
}
