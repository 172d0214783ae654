//! persona-swap: an example of a third-party proem plugin, all three hooks in one crate.
//!
//! - `agent:bootstrap` ([`BootstrapHook`]): swaps SOUL.md for the persona file
//!   the operator names in `persona`, so the agent speaks as another
//!   character without anyone editing its workspace.
//! - stable ([`StableHook`]): adds a short "Sign-off" section after the persona.
//! - turn ([`TurnHook`]): a per-channel note below the cache boundary; the
//!   channel is per-turn, so it never touches the cached part.
//!
//! proem.toml:
//!
//! ```toml
//! [[plugins]]
//! id = "persona-swap"
//! path = "plugins/persona_swap.wasm"
//! grants = ["workspace-read"]          # to read the persona file
//! config = { persona = "personas/off-duty.md", sign_off = "— Marlow", channel_notes = { telegram = "Keep it short." } }
//! ```

use proem_sdk::{
    workspace, AgentContext, BootstrapHook, File, Plugin, Section, StableHook, StableOutput, TurnContext, TurnHook,
    TurnOutput,
};

#[derive(Default)]
struct PersonaSwap;

impl Plugin for PersonaSwap {
    fn capabilities(&self) -> Vec<String> {
        vec!["workspace-read".into()]
    }
}

impl BootstrapHook for PersonaSwap {
    fn bootstrap(&self, ctx: &AgentContext, mut files: Vec<File>) -> Result<Vec<File>, String> {
        let Some(path) = ctx.config_str("persona") else { return Ok(files) }; // keep SOUL.md
        let persona = workspace::read_to_string(path)?;
        files.retain(|f| f.name != "SOUL.md");
        files.push(File::new("SOUL.md", persona));
        Ok(files)
    }
}

impl StableHook for PersonaSwap {
    fn stable(&self, ctx: &AgentContext, _files: &[File]) -> Result<StableOutput, String> {
        let Some(sign_off) = ctx.config_str("sign_off") else { return Ok(StableOutput::default()) };
        let body = format!("## Sign-off\nEnd longer replies with \"{sign_off}\" on a line of its own.");
        Ok(StableOutput::default().section(Section::after("persona", "sign_off", body)))
    }
}

impl TurnHook for PersonaSwap {
    fn turn(&self, ctx: &TurnContext) -> Result<TurnOutput, String> {
        let note = ctx.channel.as_deref().and_then(|c| ctx.config.get("channel_notes")?.get(c)?.as_str());
        let Some(note) = note else { return Ok(TurnOutput::default()) };
        Ok(TurnOutput::default().section(Section::after(
            "channel_formatting",
            "channel_note",
            format!("## On This Channel\n{note}"),
        )))
    }
}

proem_sdk::register_plugin!(PersonaSwap);
