//! proem:plugin@0.2.0: bindings generated from `wit/0.2.0/` and the
//! conversions between them and the host's types.
//!
//! 0.2 puts the cache split into the types: the `stable` hook gets an
//! `agent-context` (no clock, channel, chat or extra prompt) and its output
//! is stable; the `turn` hook gets the turn and its output is dynamic. The
//! zone of every section comes from the hook, not from the plugin.

use crate::sandbox::State;
use proem_core::plugin::call::{Request, Response};
use proem_core::plugin::hooks::{BuildContext, PluginInfo, RawFile, RawOverlay, RawSection, RawSlot};
use proem_core::section::Zone;

mod generated {
    #![allow(missing_docs)]
    wasmtime::component::bindgen!({
        path: "../../wit/0.2.0",
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

fn mode(m: proem_core::Mode) -> t::Mode {
    match m {
        proem_core::Mode::Full => t::Mode::Full,
        proem_core::Mode::Task => t::Mode::Task,
        proem_core::Mode::Minimal => t::Mode::Minimal,
        proem_core::Mode::None => t::Mode::None,
    }
}

fn tools(ctx: &BuildContext) -> Vec<t::Tool> {
    ctx.tools
        .iter()
        .map(|tool| t::Tool {
            name: tool.name.clone(),
            description: tool.description.clone(),
            parameters_json: tool.parameters_json.clone(),
        })
        .collect()
}

fn budget(ctx: &BuildContext) -> t::Budget {
    t::Budget { tokens: ctx.budget_tokens, tokenizer: ctx.tokenizer.clone() }
}

/// The stable hooks' view of a build: only what stays the same for a session.
pub fn agent_context(ctx: &BuildContext) -> t::AgentContext {
    t::AgentContext {
        agent_id: ctx.agent_id.clone(),
        mode: mode(ctx.mode),
        provider: ctx.provider.clone(),
        model: ctx.model.clone(),
        tools: tools(ctx),
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
        budget: budget(ctx),
    }
}

/// The turn hook's view of a build.
pub fn turn_context(ctx: &BuildContext, files: &[RawFile]) -> t::TurnContext {
    t::TurnContext {
        agent_id: ctx.agent_id.clone(),
        mode: mode(ctx.mode),
        provider: ctx.provider.clone(),
        model: ctx.model.clone(),
        tools: tools(ctx),
        config_json: ctx.config_json.clone(),
        budget: budget(ctx),
        now: t::TurnTime {
            rfc3339: ctx.now.clone(),
            timezone: ctx.timezone.clone(),
            unix_seconds: ctx.unix_seconds,
            utc_offset_seconds: ctx.utc_offset_seconds,
        },
        channel: ctx.channel.clone(),
        chat_kind: ctx.chat_kind.map(|kind| match kind {
            proem_core::turn::ChatKind::Direct => t::ChatKind::Direct,
            proem_core::turn::ChatKind::Group => t::ChatKind::Group,
        }),
        group_title: ctx.group_title.clone(),
        extra: ctx.extra.clone(),
        files: files_in(files),
    }
}

/// Converts plugin-info (its strings made safe to print, see [`PluginInfo::from_plugin`]).
pub fn info(info: t::PluginInfo) -> PluginInfo {
    let mut out = PluginInfo::from_plugin(&info.id, &info.version, (false, false, false), &info.capabilities, "0.2");
    out.stable = info.hooks.contains(t::Hooks::STABLE);
    out.turn = info.hooks.contains(t::Hooks::TURN);
    out.bootstrap = info.hooks.contains(t::Hooks::BOOTSTRAP);
    out
}

/// Converts returned sections, each in its hook's zone (validated later).
fn sections(sections: Vec<t::Section>, zone: Zone) -> Vec<RawSection> {
    sections
        .into_iter()
        .map(|s| RawSection {
            id: s.id,
            slot: match s.slot {
                t::Slot::Before(a) => RawSlot::Before(a),
                t::Slot::After(a) => RawSlot::After(a),
                t::Slot::Replace(a) => RawSlot::Replace(a),
            },
            zone,
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
            max_tokens: s.max_tokens,
        })
        .collect()
}

/// The stable hook's answer: sections above the boundary and a prefix.
pub fn stable_output(o: t::StableOutput) -> (Vec<RawSection>, RawOverlay) {
    (sections(o.sections, Zone::Stable), RawOverlay { stable_prefix: o.prefix, ..RawOverlay::default() })
}

/// The turn hook's answer: sections below the boundary and a suffix.
pub fn turn_output(o: t::TurnOutput) -> (Vec<RawSection>, RawOverlay) {
    (sections(o.sections, Zone::Dynamic), RawOverlay { dynamic_suffix: o.suffix, ..RawOverlay::default() })
}

/// Files to the generated type.
pub fn files_in(files: &[RawFile]) -> Vec<t::BootstrapFile> {
    files.iter().map(|f| t::BootstrapFile { name: f.name.clone(), content: f.content.clone() }).collect()
}

/// Files from the generated type.
pub fn files_out(files: Vec<t::BootstrapFile>) -> Vec<RawFile> {
    files.into_iter().map(|f| RawFile { name: f.name, content: f.content }).collect()
}

/// Instantiates a 0.2 plugin and calls the hook `request` asks for.
pub(crate) async fn call(
    pre: &PluginPre<State>,
    store: &mut wasmtime::Store<State>,
    request: Request,
) -> wasmtime::Result<Result<Response, String>> {
    let instantiating = std::time::Instant::now();
    let plugin = pre.instantiate_async(&mut *store).await?;
    tracing::debug!(instantiate_us = instantiating.elapsed().as_micros() as u64, "instantiated");
    // Instantiating is the host's work: the hook gets its whole deadline
    // from here.
    store.data().clock.restart();
    let contribution = |(sections, overlay)| Response::Contribution(sections, overlay);
    Ok(match request {
        Request::Info => Ok(Response::Info(info(plugin.proem_plugin_describe().call_info(&mut *store).await?))),
        Request::Stable(ctx, files) => plugin
            .proem_plugin_stable()
            .call_contribute(&mut *store, &agent_context(&ctx), &files_in(&files))
            .await?
            .map(|o| contribution(stable_output(o))),
        Request::Turn(ctx, files) => plugin
            .proem_plugin_turn()
            .call_contribute(&mut *store, &turn_context(&ctx, &files))
            .await?
            .map(|o| contribution(turn_output(o))),
        Request::Bootstrap(ctx, files) => plugin
            .proem_plugin_bootstrap()
            .call_on_bootstrap(&mut *store, &agent_context(&ctx), &files_in(&files))
            .await?
            .map(|f| Response::Bootstrap(files_out(f))),
        other @ (Request::Sections(_) | Request::Overlay(_)) => {
            return super::not_in_version(&other, super::ApiVersion::V0_2)
        }
    })
}
