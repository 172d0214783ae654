//! proem-sdk: everything a proem plugin author needs, and nothing of wit-bindgen.
//!
//! A plugin is a type that implements [`Plugin`] (every hook has a default
//! that does nothing) and is registered once with [`register_plugin!`]. Build
//! it with `cargo build --release --target wasm32-wasip2`; the `.wasm` file is
//! a component proem loads with `path = "…"` in `proem.toml`.
//!
//! A complete section plugin:
//!
//! ```
//! use proem_sdk::{Context, Hook, Plugin, Section};
//!
//! #[derive(Default)]
//! struct Greeting;
//!
//! impl Plugin for Greeting {
//!     const HOOKS: &'static [Hook] = &[Hook::Sections];
//!
//!     fn sections(&self, ctx: &Context) -> Result<Vec<Section>, String> {
//!         let who = ctx.config_str("greeting").unwrap_or("Hello");
//!         Ok(vec![Section::after("safety", "greeting", format!("## Greeting\n{who}, {}.", ctx.agent_id))])
//!     }
//! }
//!
//! proem_sdk::register_plugin!(Greeting);
//! # fn main() {}
//! ```
//!
//! Plugins run in proem's sandbox: no network, no environment, no clock but
//! the build's `now`, seeded randomness, 32 MiB of memory and 50 ms per call
//! by default. Files are visible only when the operator grants
//! `workspace-read`, and then read-only, through [`workspace::read_to_string`].
#![warn(missing_docs)]

extern crate self as proem_sdk;

mod context;
mod glob;
mod output;
mod wit_glue;
pub mod workspace;

pub use context::{ChatKind, Context, ContextBuilder, Mode, Skill, Tool};
pub use glob::{glob_match, matching_tools};
pub use output::{File, Overlay, Section, Slot, Zone};
/// The JSON library [`Context::config`] is in, so a plugin needs no
/// serde_json of its own (e.g. `proem_sdk::serde_json::json!` in tests).
pub use serde_json;

/// The plugin API version this SDK speaks (the WIT package version).
pub const API_VERSION: &str = "0.1.0";

/// The hooks a plugin can implement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hook {
    /// [`Plugin::sections`]: add sections or replace core ones.
    Sections,
    /// [`Plugin::overlay`]: replace sections by id, add a stable prefix and a dynamic suffix.
    Overlay,
    /// [`Plugin::bootstrap`]: the `agent:bootstrap` hook, rewriting the workspace files.
    Bootstrap,
}

/// A proem plugin. Implement the hooks you list in [`Plugin::HOOKS`]; proem
/// only calls those. Each call gets a fresh instance (`Default::default()`),
/// so nothing carries over between calls or builds.
pub trait Plugin: Default {
    /// The hooks this plugin implements.
    const HOOKS: &'static [Hook];

    /// Capabilities to ask the operator for, e.g. `["workspace-read"]`. Asking
    /// grants nothing; `proem plugins` shows what was asked and what granted.
    fn capabilities(&self) -> Vec<String> {
        Vec::new()
    }

    /// Sections to add this turn. An `Err` leaves the plugin out of this build
    /// with the message as a diagnostic.
    fn sections(&self, ctx: &Context) -> Result<Vec<Section>, String> {
        let _ = ctx;
        Ok(Vec::new())
    }

    /// A provider overlay, or `None` when it does not apply to this provider/model.
    fn overlay(&self, ctx: &Context) -> Result<Option<Overlay>, String> {
        let _ = ctx;
        Ok(None)
    }

    /// The `agent:bootstrap` hook: receives the workspace files (in load
    /// order) and returns the set to use. Leave a file out to drop it, change
    /// its content to replace it, push a new one to add it. An `Err` discards
    /// the change.
    fn bootstrap(&self, ctx: &Context, files: Vec<File>) -> Result<Vec<File>, String> {
        let _ = ctx;
        Ok(files)
    }
}

/// Writes to proem's log, tagged with the plugin id. Warnings and errors also
/// become diagnostics in the build report, so use [`warn`] to tell the
/// operator why a plugin chose to do nothing.
pub fn log(level: LogLevel, message: &str) {
    wit_glue::log(level, message)
}

/// Logs a warning that also appears in the build report's diagnostics.
pub fn warn(message: &str) {
    log(LogLevel::Warn, message)
}

/// Counts tokens with the build's tokenizer (exact, the same count the budget uses).
pub fn count_tokens(text: &str) -> u32 {
    wit_glue::count_tokens(text)
}

/// Log levels for [`log`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogLevel {
    /// Developer detail.
    Debug,
    /// Normal operation.
    Info,
    /// Something the operator should know; becomes a diagnostic.
    Warn,
    /// Something failed; becomes a diagnostic.
    Error,
}

/// Registers a [`Plugin`] type as the component's exports, names it after
/// the crate (`CARGO_PKG_NAME` / `CARGO_PKG_VERSION`) and stamps the API
/// version into the binary so proem can refuse an incompatible plugin before
/// compiling it. Use it exactly once per plugin crate.
#[macro_export]
macro_rules! register_plugin {
    ($plugin:ty) => {
        impl $crate::__private::Meta for $plugin {
            const ID: &'static str = ::core::env!("CARGO_PKG_NAME");
            const VERSION: &'static str = ::core::env!("CARGO_PKG_VERSION");
        }

        // The exports exist only in the wasm build: natively (a plugin's own
        // unit tests) there is no host to call them, and their names are not
        // valid native symbols.
        // Natively, keep the plugin "used" so its own unit tests build without
        // dead-code warnings.
        #[cfg(not(target_arch = "wasm32"))]
        const _: fn() -> $crate::__private::Export<$plugin> = $crate::__private::Export::<$plugin>::native;

        #[cfg(target_arch = "wasm32")]
        const _: () = {
            type __ProemExport = $crate::__private::Export<$plugin>;
    $crate::__private::wit::__export_proem_plugin!(__ProemExport with_types_in $crate::__private::wit);

            #[link_section = "proem:api-version"]
            #[used]
            static __PROEM_API_VERSION: [u8; $crate::__private::API_VERSION_BYTES.len()] =
                $crate::__private::API_VERSION_BYTES;
        };
    };
}

#[doc(hidden)]
pub mod __private {
    pub use crate::wit_glue::{wit, Export};

    /// What `register_plugin!` fills in from the plugin's Cargo.toml.
    pub trait Meta {
        const ID: &'static str;
        const VERSION: &'static str;
    }

    /// The API version as stamped into the `proem:api-version` custom section.
    pub const API_VERSION_BYTES: [u8; 5] = *b"0.1.0";
    const _: () = assert!(API_VERSION_BYTES.len() == crate::API_VERSION.len());
}
