//! The only file that sees wit-bindgen: the generated bindings, conversions
//! between them and the SDK's own types, and the exports `register_plugin!`
//! wires to a [`Plugin`].

use crate::context::{ChatKind, Context, Mode, Skill, Tool};
use crate::output::{File, Overlay, Section, Slot, Zone};
use crate::{Hook, LogLevel, Plugin};
use std::marker::PhantomData;

#[doc(hidden)]
pub mod wit {
    wit_bindgen::generate!({
        // A copy of wit/0.1.0 inside the crate, so it packages and publishes on
        // its own; tests/wit_package.rs checks the two are the same bytes.
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

use wit::exports::proem::plugin::{bootstrap, describe, overlay, sections};
#[cfg(target_arch = "wasm32")]
use wit::proem::plugin::host;
use wit::proem::plugin::types as t;

/// The export adapter `register_plugin!` instantiates for the plugin type `P`.
#[doc(hidden)]
pub struct Export<P>(PhantomData<P>);

impl<P: Plugin + crate::__private::Meta> Export<P> {
    /// Touches every export, so a native build of a plugin sees its code as used.
    #[doc(hidden)]
    pub fn native() -> Export<P> {
        let _ = (
            <Self as describe::Guest>::info as fn() -> _,
            <Self as sections::Guest>::contribute as fn(_) -> _,
            <Self as overlay::Guest>::overlay as fn(_) -> _,
            <Self as bootstrap::Guest>::on_bootstrap as fn(_, _) -> _,
        );
        Export(PhantomData)
    }
}

impl<P: Plugin + crate::__private::Meta> describe::Guest for Export<P> {
    fn info() -> t::PluginInfo {
        let mut hooks = t::Hooks::empty();
        for hook in P::HOOKS {
            hooks |= match hook {
                Hook::Sections => t::Hooks::SECTIONS,
                Hook::Overlay => t::Hooks::OVERLAY,
                Hook::Bootstrap => t::Hooks::BOOTSTRAP,
            };
        }
        t::PluginInfo {
            id: P::ID.to_string(),
            version: P::VERSION.to_string(),
            hooks,
            capabilities: P::default().capabilities(),
        }
    }
}

impl<P: Plugin> sections::Guest for Export<P> {
    fn contribute(ctx: t::BuildContext) -> Result<Vec<t::Section>, String> {
        let sections = P::default().sections(&context(ctx))?;
        Ok(sections.into_iter().map(section).collect())
    }
}

impl<P: Plugin> overlay::Guest for Export<P> {
    fn overlay(ctx: t::BuildContext) -> Result<Option<t::Overlay>, String> {
        Ok(P::default().overlay(&context(ctx))?.map(|o: Overlay| t::Overlay {
            replacements: o.replacements.into_iter().map(|(id, body)| t::SectionReplacement { id, body }).collect(),
            stable_prefix: o.stable_prefix,
            dynamic_suffix: o.dynamic_suffix,
        }))
    }
}

impl<P: Plugin> bootstrap::Guest for Export<P> {
    fn on_bootstrap(ctx: t::BuildContext, files: Vec<t::BootstrapFile>) -> Result<Vec<t::BootstrapFile>, String> {
        let files = files.into_iter().map(|f| File { name: f.name, content: f.content }).collect();
        let out = P::default().bootstrap(&context(ctx), files)?;
        Ok(out.into_iter().map(|f| t::BootstrapFile { name: f.name, content: f.content }).collect())
    }
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

fn context(ctx: t::BuildContext) -> Context {
    Context {
        agent_id: ctx.agent_id,
        mode: mode(ctx.mode),
        provider: ctx.provider,
        model: ctx.model,
        channel: ctx.channel,
        chat_kind: match ctx.chat_kind.as_deref() {
            Some("direct") => Some(ChatKind::Direct),
            Some("group") => Some(ChatKind::Group),
            _ => None,
        },
        tools: ctx
            .tools
            .into_iter()
            .map(|t| Tool { name: t.name, description: t.description, parameters_json: t.parameters_json })
            .collect(),
        skills: ctx
            .skills
            .into_iter()
            .map(|s| Skill { name: s.name, description: s.description, location: s.location })
            .collect(),
        config: serde_json::from_str(&ctx.config_json).unwrap_or(serde_json::Value::Object(Default::default())),
        now: ctx.now,
        timezone: ctx.timezone,
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
        zone: match s.zone {
            Zone::Stable => t::Zone::Stable,
            Zone::Dynamic => t::Zone::Dynamic,
        },
        priority: s.priority,
        modes: s.modes.into_iter().map(wit_mode).collect(),
        body: s.body,
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
