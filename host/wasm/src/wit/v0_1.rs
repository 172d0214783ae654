//! proem:plugin@0.1.0: bindings generated from `wit/0.1.0/` and the
//! conversions between them and the host's types.

use crate::sandbox::State;
use proem_core::plugin::call::{Request, Response};
use proem_core::plugin::hooks::{BuildContext, PluginInfo, RawFile, RawOverlay, RawSection, RawSlot};
use proem_core::section::Zone;

mod generated {
    #![allow(missing_docs)]
    wasmtime::component::bindgen!({
        path: "../../wit/0.1.0",
        world: "plugin",
        exports: { default: async },
        // Host functions may trap (a limit, the deadline) instead of answering.
        imports: { default: trappable },
    });
}
pub use generated::{proem, Plugin, PluginPre};

use proem::plugin::types as t;

impl t::Host for State {}

impl proem::plugin::host::Host for State {
    fn log(&mut self, level: proem::plugin::host::LogLevel, message: String) -> wasmtime::Result<()> {
        use proem::plugin::host::LogLevel as L;
        let level = match level {
            L::Debug => tracing::Level::DEBUG,
            L::Info => tracing::Level::INFO,
            L::Warn => tracing::Level::WARN,
            L::Error => tracing::Level::ERROR,
        };
        self.log(level, &message);
        Ok(())
    }

    fn count_tokens(&mut self, text: String) -> wasmtime::Result<u32> {
        self.count_tokens(&text)
    }
}

/// Adds this version's host imports to a linker.
pub fn add_to_linker(linker: &mut wasmtime::component::Linker<State>) -> wasmtime::Result<()> {
    Plugin::add_to_linker::<State, wasmtime::component::HasSelf<State>>(linker, |s| s)
}

/// Builds the generated context from the host's.
pub fn context(ctx: &BuildContext) -> t::BuildContext {
    t::BuildContext {
        agent_id: ctx.agent_id.clone(),
        mode: match ctx.mode {
            proem_core::Mode::Full => t::Mode::Full,
            proem_core::Mode::Task => t::Mode::Task,
            proem_core::Mode::Minimal => t::Mode::Minimal,
            proem_core::Mode::None => t::Mode::None,
        },
        provider: ctx.provider.clone(),
        model: ctx.model.clone(),
        channel: ctx.channel.clone(),
        chat_kind: ctx.chat_kind.map(|kind| kind.as_str().to_string()),
        tools: ctx
            .tools
            .iter()
            .map(|tool| t::Tool {
                name: tool.name.clone(),
                description: tool.description.clone(),
                parameters_json: tool.parameters_json.clone(),
            })
            .collect(),
        skills: ctx
            .skills
            .iter()
            .map(|s| t::Skill {
                name: s.name.clone(),
                description: s.description.clone(),
                location: s.location.clone(),
            })
            .collect(),
        config_json: ctx.config_json.clone(),
        now: ctx.now.clone(),
        timezone: ctx.timezone.clone(),
    }
}

/// Converts plugin-info (its strings made safe to print, see [`PluginInfo::from_plugin`]).
pub fn info(info: t::PluginInfo) -> PluginInfo {
    let hooks = (
        info.hooks.contains(t::Hooks::SECTIONS),
        info.hooks.contains(t::Hooks::OVERLAY),
        info.hooks.contains(t::Hooks::BOOTSTRAP),
    );
    PluginInfo::from_plugin(&info.id, &info.version, hooks, &info.capabilities, "0.1")
}

/// Converts returned sections (validated later).
pub fn sections(sections: Vec<t::Section>) -> Vec<RawSection> {
    sections
        .into_iter()
        .map(|s| RawSection {
            id: s.id,
            slot: match s.slot {
                t::Slot::Before(a) => RawSlot::Before(a),
                t::Slot::After(a) => RawSlot::After(a),
                t::Slot::Replace(a) => RawSlot::Replace(a),
            },
            zone: match s.zone {
                t::Zone::Stable => Zone::Stable,
                t::Zone::Dynamic => Zone::Dynamic,
            },
            priority: s.priority,
            modes: s
                .modes
                .into_iter()
                .map(|m| match m {
                    t::Mode::Full => proem_core::Mode::Full,
                    t::Mode::Task => proem_core::Mode::Task,
                    t::Mode::Minimal => proem_core::Mode::Minimal,
                    t::Mode::None => proem_core::Mode::None,
                })
                .collect(),
            body: s.body,
            max_tokens: None,
        })
        .collect()
}

/// Converts a returned overlay.
pub fn overlay(o: t::Overlay) -> RawOverlay {
    RawOverlay {
        replacements: o.replacements.into_iter().map(|r| (r.id, r.body)).collect(),
        stable_prefix: o.stable_prefix,
        dynamic_suffix: o.dynamic_suffix,
    }
}

/// Files to the generated type.
pub fn files_in(files: &[RawFile]) -> Vec<t::BootstrapFile> {
    files.iter().map(|f| t::BootstrapFile { name: f.name.clone(), content: f.content.clone() }).collect()
}

/// Files from the generated type.
pub fn files_out(files: Vec<t::BootstrapFile>) -> Vec<RawFile> {
    files.into_iter().map(|f| RawFile { name: f.name, content: f.content }).collect()
}

/// Instantiates a 0.1 plugin and calls the hook `request` asks for.
pub(crate) async fn call(
    pre: &PluginPre<State>,
    store: &mut wasmtime::Store<State>,
    request: Request,
) -> wasmtime::Result<Result<Response, String>> {
    let plugin = pre.instantiate_async(&mut *store).await?;
    // Instantiating is the host's work (it runs under the deadline, so a
    // start function cannot spin): the hook gets its whole deadline from here.
    store.data().clock.restart();
    Ok(match request {
        Request::Info => Ok(Response::Info(info(plugin.proem_plugin_describe().call_info(&mut *store).await?))),
        Request::Sections(ctx) => plugin
            .proem_plugin_sections()
            .call_contribute(&mut *store, &context(&ctx))
            .await?
            .map(|s| Response::Sections(sections(s))),
        Request::Overlay(ctx) => plugin
            .proem_plugin_overlay()
            .call_overlay(&mut *store, &context(&ctx))
            .await?
            .map(|o| Response::Overlay(o.map(overlay))),
        Request::Bootstrap(ctx, files) => plugin
            .proem_plugin_bootstrap()
            .call_on_bootstrap(&mut *store, &context(&ctx), &files_in(&files))
            .await?
            .map(|f| Response::Bootstrap(files_out(f))),
        other @ (Request::Stable(..) | Request::Turn(..)) => {
            return super::not_in_version(&other, super::ApiVersion::V0_1)
        }
    })
}
