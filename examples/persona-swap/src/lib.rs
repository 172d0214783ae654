//! persona-swap: an example of a third-party proem plugin, both hooks in one crate.
//!
//! - `agent:bootstrap`: swaps SOUL.md for a per-channel persona file, so the
//!   agent speaks as a different character on Telegram than on Discord.
//! - `sections`: adds a short "Sign-off" section after the persona.
//!
//! proem.toml:
//!
//! ```toml
//! [[plugins]]
//! id = "persona-swap"
//! path = "plugins/persona_swap.wasm"
//! grants = ["workspace-read"]          # to read the persona files
//! config = { personas = { telegram = "personas/telegram.md" }, sign_off = "— Marlow" }
//! ```

use proem_sdk::{workspace, Context, File, Hook, Plugin, Section};

#[derive(Default)]
struct PersonaSwap;

impl Plugin for PersonaSwap {
    const HOOKS: &'static [Hook] = &[Hook::Bootstrap, Hook::Sections];

    fn capabilities(&self) -> Vec<String> {
        vec!["workspace-read".into()]
    }

    fn bootstrap(&self, ctx: &Context, mut files: Vec<File>) -> Result<Vec<File>, String> {
        let Some(channel) = &ctx.channel else { return Ok(files) };
        let Some(path) = ctx.config.get("personas").and_then(|p| p.get(channel)).and_then(|p| p.as_str()) else {
            return Ok(files); // no persona for this channel: keep SOUL.md
        };
        let persona = workspace::read_to_string(path)?;
        files.retain(|f| f.name != "SOUL.md");
        files.push(File::new("SOUL.md", persona));
        Ok(files)
    }

    fn sections(&self, ctx: &Context) -> Result<Vec<Section>, String> {
        let Some(sign_off) = ctx.config_str("sign_off") else { return Ok(Vec::new()) };
        let body = format!("## Sign-off\nEnd longer replies with \"{sign_off}\" on a line of its own.");
        Ok(vec![Section::after("persona", "sign_off", body)])
    }
}

proem_sdk::register_plugin!(PersonaSwap);
