//! The only file that sees wit-bindgen: the generated bindings, conversions
//! between them and the SDK's own types, and the exports `register_plugin!`
//! wires to a [`Plugin`].

use crate::__private::Registered;
use crate::context::File;
use crate::context::{AgentContext, Budget, ChatKind, Mode, Session, Skill, Tool, TurnContext, TurnTime};
use crate::output::{Section, Slot};
use crate::LogLevel;
use std::marker::PhantomData;

#[doc(hidden)]
pub mod wit {
    wit_bindgen::generate!({
        // A copy of wit/0.2.0 inside the crate, so it packages and publishes on
        // its own; tests/plugins/wit_package.rs checks the two are the same bytes.
        path: "wit",
        world: "plugin",
        pub_export_macro: true,
        export_macro_name: "__export_proem_plugin",
        runtime_path: "::proem_sdk::__private::wit::__wit_bindgen::rt",
        bitflags_path: "::proem_sdk::__private::wit::__wit_bindgen::rt::bitflags",
    });
    #[doc(hidden)]
    pub use wit_bindgen as __wit_bindgen;
}

use wit::exports::proem::plugin::{bootstrap, describe, stable, turn};
#[cfg(target_arch = "wasm32")]
use wit::proem::plugin::host;
use wit::proem::plugin::types as t;

/// The export adapter `register_plugin!` instantiates for the plugin type `P`.
#[doc(hidden)]
pub struct Export<P>(PhantomData<P>);

impl<P: Registered> Export<P> {
    /// Touches every export, so a native build of a plugin sees its code as used.
    #[doc(hidden)]
    pub fn native() -> Export<P> {
        let _ = (
            <Self as describe::Guest>::info as fn() -> _,
            <Self as stable::Guest>::contribute as fn(_, _) -> _,
            <Self as turn::Guest>::contribute as fn(_) -> _,
            <Self as bootstrap::Guest>::on_bootstrap as fn(_, _) -> _,
        );
        Export(PhantomData)
    }
}

impl<P: Registered> describe::Guest for Export<P> {
    fn info() -> t::PluginInfo {
        let found = P::hooks();
        let mut hooks = t::Hooks::empty();
        if found.stable.is_some() {
            hooks |= t::Hooks::STABLE;
        }
        if found.turn.is_some() {
            hooks |= t::Hooks::TURN;
        }
        if found.bootstrap.is_some() {
            hooks |= t::Hooks::BOOTSTRAP;
        }
        t::PluginInfo {
            id: P::ID.to_string(),
            version: P::VERSION.to_string(),
            hooks,
            capabilities: P::default().capabilities(),
        }
    }
}

impl<P: Registered> stable::Guest for Export<P> {
    fn contribute(ctx: t::AgentContext, files: Vec<t::BootstrapFile>) -> Result<t::StableOutput, String> {
        let Some(hook) = P::hooks().stable else { return Ok(t::StableOutput { sections: Vec::new(), prefix: None }) };
        let out = hook(&agent_context(ctx), &files_in(files))?;
        Ok(t::StableOutput { sections: out.sections.into_iter().map(section).collect(), prefix: out.prefix })
    }
}

impl<P: Registered> turn::Guest for Export<P> {
    fn contribute(ctx: t::TurnContext) -> Result<t::TurnOutput, String> {
        let Some(hook) = P::hooks().turn else { return Ok(t::TurnOutput { sections: Vec::new(), suffix: None }) };
        let out = hook(&turn_context(ctx))?;
        Ok(t::TurnOutput { sections: out.sections.into_iter().map(section).collect(), suffix: out.suffix })
    }
}

impl<P: Registered> bootstrap::Guest for Export<P> {
    fn on_bootstrap(ctx: t::AgentContext, files: Vec<t::BootstrapFile>) -> Result<Vec<t::BootstrapFile>, String> {
        let Some(hook) = P::hooks().bootstrap else { return Ok(files) };
        let out = hook(&agent_context(ctx), files_in(files))?;
        Ok(out.into_iter().map(|f| t::BootstrapFile { name: f.name, content: f.content }).collect())
    }
}

fn files_in(files: Vec<t::BootstrapFile>) -> Vec<File> {
    files.into_iter().map(|f| File { name: f.name, content: f.content }).collect()
}

fn mode(m: t::Mode) -> Mode {
    match m {
        t::Mode::Full => Mode::Full,
        t::Mode::Task => Mode::Task,
        t::Mode::Minimal => Mode::Minimal,
        t::Mode::None => Mode::None,
    }
}

fn wit_mode(m: Mode) -> t::Mode {
    match m {
        Mode::Full => t::Mode::Full,
        Mode::Task => t::Mode::Task,
        Mode::Minimal => t::Mode::Minimal,
        Mode::None => t::Mode::None,
    }
}

fn tools(tools: Vec<t::Tool>) -> Vec<Tool> {
    tools
        .into_iter()
        .map(|t| Tool { name: t.name, description: t.description, parameters_json: t.parameters_json })
        .collect()
}

fn config(json: &str) -> serde_json::Value {
    serde_json::from_str(json).unwrap_or(serde_json::Value::Object(Default::default()))
}

fn budget(b: t::Budget) -> Budget {
    Budget { tokens: b.tokens, tokenizer: b.tokenizer }
}

/// The session fields both contexts carry.
#[allow(clippy::too_many_arguments)]
fn session(
    agent_id: String,
    m: t::Mode,
    provider: Option<String>,
    model: Option<String>,
    tools_in: Vec<t::Tool>,
    config_json: &str,
    b: t::Budget,
) -> Session {
    Session {
        agent_id,
        mode: mode(m),
        provider,
        model,
        tools: tools(tools_in),
        config: config(config_json),
        budget: budget(b),
    }
}

fn agent_context(ctx: t::AgentContext) -> AgentContext {
    AgentContext {
        session: session(ctx.agent_id, ctx.mode, ctx.provider, ctx.model, ctx.tools, &ctx.config_json, ctx.budget),
        skills: ctx
            .skills
            .into_iter()
            .map(|s| Skill { name: s.name, description: s.description, location: s.location })
            .collect(),
    }
}

fn turn_context(ctx: t::TurnContext) -> TurnContext {
    TurnContext {
        session: session(ctx.agent_id, ctx.mode, ctx.provider, ctx.model, ctx.tools, &ctx.config_json, ctx.budget),
        now: TurnTime {
            rfc3339: ctx.now.rfc3339,
            timezone: ctx.now.timezone,
            unix_seconds: ctx.now.unix_seconds,
            utc_offset_seconds: ctx.now.utc_offset_seconds,
        },
        channel: ctx.channel,
        chat_kind: ctx.chat_kind.map(|k| match k {
            t::ChatKind::Direct => ChatKind::Direct,
            t::ChatKind::Group => ChatKind::Group,
        }),
        group_title: ctx.group_title,
        extra: ctx.extra,
        files: files_in(ctx.files),
    }
}

fn section(s: Section) -> t::Section {
    t::Section {
        id: s.id,
        slot: match s.slot {
            Slot::Before(a) => t::Slot::Before(a),
            Slot::After(a) => t::Slot::After(a),
            Slot::Replace(a) => t::Slot::Replace(a),
        },
        priority: s.priority,
        modes: s.modes.into_iter().map(wit_mode).collect(),
        body: s.body,
        max_tokens: s.max_tokens,
    }
}

pub(crate) fn log(level: LogLevel, message: &str) {
    #[cfg(target_arch = "wasm32")]
    host::log(
        match level {
            LogLevel::Debug => host::LogLevel::Debug,
            LogLevel::Info => host::LogLevel::Info,
            LogLevel::Warn => host::LogLevel::Warn,
            LogLevel::Error => host::LogLevel::Error,
        },
        message,
    );
    #[cfg(not(target_arch = "wasm32"))]
    eprintln!("[{level:?}] {message}");
}

pub(crate) fn count_tokens(text: &str) -> u32 {
    #[cfg(target_arch = "wasm32")]
    return host::count_tokens(text);
    // Outside wasm (a plugin's own unit tests) there is no host: estimate.
    #[cfg(not(target_arch = "wasm32"))]
    return text.chars().count().div_ceil(4) as u32;
}
