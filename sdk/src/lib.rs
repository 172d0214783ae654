//! proem-sdk: everything a proem plugin author needs, and nothing of wit-bindgen.
//!
//! A plugin is a type that implements [`Plugin`] and one or more hooks, and
//! is registered once with [`register_plugin!`]:
//!
//! - [`StableHook`]: sections above the prompt-cache boundary, from inputs
//!   that stay the same for a session (no clock, channel or chat). proem
//!   remembers the answer by those inputs, so a new turn never runs it again.
//! - [`TurnHook`]: sections below the boundary, with the turn's time,
//!   channel, chat, extra prompt and per-turn files.
//! - [`BootstrapHook`]: `agent:bootstrap`, rewriting the stable workspace files.
//!
//! The hooks a plugin implements are the traits it implements:
//! `register_plugin!` finds them, so there is no list to keep in step.
//! Build with `cargo build --release --target wasm32-wasip2`; the `.wasm`
//! file is a component proem loads with `path = "…"` in `proem.toml`.
//!
//! A complete section plugin:
//!
//! ```
//! use proem_sdk::{AgentContext, File, Plugin, Section, StableHook, StableOutput};
//!
//! #[derive(Default)]
//! struct Greeting;
//!
//! impl Plugin for Greeting {}
//!
//! impl StableHook for Greeting {
//!     fn stable(&self, ctx: &AgentContext, _files: &[File]) -> Result<StableOutput, String> {
//!         let who = ctx.config_str("greeting").unwrap_or("Hello");
//!         Ok(vec![Section::after("safety", "greeting", format!("## Greeting\n{who}, {}.", ctx.agent_id))].into())
//!     }
//! }
//!
//! proem_sdk::register_plugin!(Greeting);
//! # fn main() {}
//! ```
//!
//! Plugins run in proem's sandbox: no network, no environment, no clock but
//! the turn's (and none in stable hooks), seeded randomness, 32 MiB of
//! memory and 50 ms per call by default. Files are visible only when the
//! operator grants `workspace-read`, and then read-only, through
//! [`workspace::read_to_string`].
#![warn(missing_docs)]

extern crate self as proem_sdk;

mod config;
mod context;
mod glob;
mod output;
mod wit_glue;
pub mod workspace;

pub use config::{schema_json, Config, ConfigError};
pub use context::{
    AgentContext, Budget, Builder, ChatKind, File, LocalTime, Mode, Session, Skill, Tool, TurnContext, TurnTime,
    Weekday,
};
pub use glob::{glob_match, matching_tools};
pub use output::{Section, Slot, StableOutput, TurnOutput};
/// `#[derive(Config)]`: a struct with named fields as the plugin's config
/// type, read by [`Session::config_as`]; see [`Config`].
pub use proem_sdk_derive::Config;
/// The JSON library [`Session::config`] is in, so a plugin needs no
/// serde_json of its own (e.g. `proem_sdk::serde_json::json!` in tests).
pub use serde_json;

/// The plugin API version this SDK speaks (the WIT package version).
pub const API_VERSION: &str = "0.2.0";

/// The hooks a plugin can implement (as `proem plugins` names them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hook {
    /// [`StableHook`].
    Stable,
    /// [`TurnHook`].
    Turn,
    /// [`BootstrapHook`].
    Bootstrap,
}

/// A proem plugin. Each call gets a fresh value (`Default::default()`), so
/// nothing carries over between calls or builds. Implement at least one
/// hook trait beside it.
pub trait Plugin: Default {
    /// Capabilities to ask the operator for, e.g. `["workspace-read"]`. Asking
    /// grants nothing; `proem plugins` shows what was asked and what granted.
    fn capabilities(&self) -> Vec<String> {
        Vec::new()
    }
}

/// Sections above the prompt-cache boundary, from stable inputs only.
pub trait StableHook: Plugin {
    /// The plugin's stable sections and prefix. `files` are the workspace
    /// files the stable part shows (AGENTS.md, SOUL.md, …, after bootstrap
    /// hooks). An `Err` leaves the plugin out of the build with the message
    /// as a diagnostic.
    fn stable(&self, ctx: &AgentContext, files: &[File]) -> Result<StableOutput, String>;
}

/// Sections below the prompt-cache boundary, per turn.
pub trait TurnHook: Plugin {
    /// The plugin's per-turn sections and suffix. An `Err` leaves the plugin
    /// out of the build with the message as a diagnostic.
    fn turn(&self, ctx: &TurnContext) -> Result<TurnOutput, String>;
}

/// The `agent:bootstrap` hook.
pub trait BootstrapHook: Plugin {
    /// Receives the stable workspace files (in load order; USER.md and
    /// HEARTBEAT.md pass by) and returns the set to use. Leave a file out to
    /// drop it, change its content to replace it, push a new one to add it.
    /// An `Err` discards the change.
    fn bootstrap(&self, ctx: &AgentContext, files: Vec<File>) -> Result<Vec<File>, String>;
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

/// Registers a [`Plugin`] type as the component's exports: finds the hook
/// traits it implements (so `describe` declares exactly those), names it
/// after the crate (`CARGO_PKG_NAME` / `CARGO_PKG_VERSION`) and stamps the
/// API version into the binary so proem can refuse an incompatible plugin
/// before compiling it. Use it exactly once per plugin crate, in lib.rs;
/// without it the `.wasm` exports nothing and `proem plugin check` says so.
#[macro_export]
macro_rules! register_plugin {
    ($plugin:ty, config = $config:ty $(,)?) => {
        $crate::register_plugin!($plugin);

        // The config type's JSON Schema, for proem to check the operator's
        // `[[plugins]] config` against when it loads the plugin. Only this
        // arm emits the section, so a component has at most one. Its limits
        // are proem's, checked in every build (a plugin's native tests
        // too), so a schema that compiles is one proem loads.
        const _: () = {
            const SCHEMA: $crate::__private::Schema = <$config as $crate::Config>::SCHEMA;
            const _: () = ::core::assert!(
                $crate::__private::schema_depth(&SCHEMA) <= $crate::__private::MAX_SCHEMA_DEPTH,
                "the config type nests deeper than the 16 schemas proem reads (each struct, field and Vec item is one level): flatten it"
            );
            const _: () = ::core::assert!(
                $crate::__private::schema_nodes(&SCHEMA) <= $crate::__private::MAX_SCHEMA_NODES,
                "the config type's JSON Schema holds more than the 512 schemas proem reads (one per struct, field and Vec item): make the config type smaller"
            );
            const LEN: usize = $crate::__private::schema_len(&SCHEMA);
            const _: () = ::core::assert!(
                LEN <= $crate::__private::MAX_SCHEMA_BYTES,
                "the config type's JSON Schema is over the 64 KiB proem reads: make the config type smaller"
            );
            #[cfg(target_arch = "wasm32")]
            #[link_section = "proem:config-schema"]
            #[used]
            static __PROEM_CONFIG_SCHEMA: [u8; LEN] = $crate::__private::schema_bytes::<LEN>(&SCHEMA);
        };
    };
    ($plugin:ty) => {
        impl $crate::__private::Registered for $plugin {
            const ID: &'static str = ::core::env!("CARGO_PKG_NAME");
            const VERSION: &'static str = ::core::env!("CARGO_PKG_VERSION");
            fn hooks() -> $crate::__private::HookFns {
                #[allow(unused_imports)]
                use $crate::__private::probe::{
                    HasBootstrap as _, HasStable as _, HasTurn as _, NoBootstrap as _, NoStable as _, NoTurn as _,
                };
                let probe = &$crate::__private::probe::Probe::<$plugin>::new();
                $crate::__private::HookFns {
                    stable: probe.stable_hook(),
                    turn: probe.turn_hook(),
                    bootstrap: probe.bootstrap_hook(),
                }
            }
        }

        // The exports exist only in the wasm build: natively (a plugin's own
        // unit tests) there is no host to call them, and their names are not
        // valid native symbols. Natively, keep the plugin "used" so its own
        // unit tests build without dead-code warnings.
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
    pub use crate::config::derived::{object, optional, required};
    pub use crate::config::{schema_bytes, schema_depth, schema_len, schema_nodes, Field, Schema};
    pub use crate::wit_glue::{wit, Export};

    /// The largest config schema proem reads (its `MAX_SCHEMA_BYTES`).
    pub const MAX_SCHEMA_BYTES: usize = 64 * 1024;
    /// The deepest config schema proem reads (its `MAX_DEPTH`).
    pub const MAX_SCHEMA_DEPTH: usize = 16;
    /// The most schemas one config schema may hold (its `MAX_NODES`).
    pub const MAX_SCHEMA_NODES: usize = 512;
    use crate::{AgentContext, File, Plugin, StableOutput, TurnContext, TurnOutput};

    /// A hook as a plain function of the plugin type.
    pub type StableFn = fn(&AgentContext, &[File]) -> Result<StableOutput, String>;
    /// See [`StableFn`].
    pub type TurnFn = fn(&TurnContext) -> Result<TurnOutput, String>;
    /// See [`StableFn`].
    pub type BootstrapFn = fn(&AgentContext, Vec<File>) -> Result<Vec<File>, String>;

    /// The hooks a registered plugin implements.
    pub struct HookFns {
        pub stable: Option<StableFn>,
        pub turn: Option<TurnFn>,
        pub bootstrap: Option<BootstrapFn>,
    }

    /// What `register_plugin!` fills in.
    pub trait Registered: Plugin {
        const ID: &'static str;
        const VERSION: &'static str;
        fn hooks() -> HookFns;
    }

    /// Which hook traits a concrete type implements, found at compile time
    /// by method resolution ("autoref specialisation"): `Has*` is
    /// implemented for `Probe<P>` when `P` implements the hook, `No*` for
    /// `&Probe<P>` always; a call on `&Probe<P>` picks `Has*` when it
    /// applies, else autorefs once more and finds `No*`. It works in the
    /// macro because the type is concrete there.
    pub mod probe {
        use super::*;
        use crate::{BootstrapHook, StableHook, TurnHook};

        pub struct Probe<P>(core::marker::PhantomData<P>);
        impl<P> Probe<P> {
            #[allow(clippy::new_without_default)]
            pub fn new() -> Probe<P> {
                Probe(core::marker::PhantomData)
            }
        }

        pub trait HasStable {
            fn stable_hook(&self) -> Option<StableFn>;
        }
        impl<P: StableHook> HasStable for Probe<P> {
            fn stable_hook(&self) -> Option<StableFn> {
                Some(|ctx, files| P::default().stable(ctx, files))
            }
        }
        pub trait NoStable {
            fn stable_hook(&self) -> Option<StableFn>;
        }
        impl<P> NoStable for &Probe<P> {
            fn stable_hook(&self) -> Option<StableFn> {
                None
            }
        }

        pub trait HasTurn {
            fn turn_hook(&self) -> Option<TurnFn>;
        }
        impl<P: TurnHook> HasTurn for Probe<P> {
            fn turn_hook(&self) -> Option<TurnFn> {
                Some(|ctx| P::default().turn(ctx))
            }
        }
        pub trait NoTurn {
            fn turn_hook(&self) -> Option<TurnFn>;
        }
        impl<P> NoTurn for &Probe<P> {
            fn turn_hook(&self) -> Option<TurnFn> {
                None
            }
        }

        pub trait HasBootstrap {
            fn bootstrap_hook(&self) -> Option<BootstrapFn>;
        }
        impl<P: BootstrapHook> HasBootstrap for Probe<P> {
            fn bootstrap_hook(&self) -> Option<BootstrapFn> {
                Some(|ctx, files| P::default().bootstrap(ctx, files))
            }
        }
        pub trait NoBootstrap {
            fn bootstrap_hook(&self) -> Option<BootstrapFn>;
        }
        impl<P> NoBootstrap for &Probe<P> {
            fn bootstrap_hook(&self) -> Option<BootstrapFn> {
                None
            }
        }
    }

    /// The API version as stamped into the `proem:api-version` custom section.
    pub const API_VERSION_BYTES: [u8; 5] = *b"0.2.0";
    const _: () = assert!(API_VERSION_BYTES.len() == crate::API_VERSION.len());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::__private::Registered;

    #[derive(Default)]
    struct OnlyTurn;
    impl Plugin for OnlyTurn {}
    impl TurnHook for OnlyTurn {
        fn turn(&self, ctx: &TurnContext) -> Result<TurnOutput, String> {
            Ok(vec![Section::after("time", "clock", format!("## Clock\n{}", ctx.now.local_time()))].into())
        }
    }
    crate::register_plugin!(OnlyTurn);

    #[derive(Default)]
    struct All;
    impl Plugin for All {}
    impl StableHook for All {
        fn stable(&self, _: &AgentContext, _: &[File]) -> Result<StableOutput, String> {
            Ok(StableOutput::default().prefix("p"))
        }
    }
    impl TurnHook for All {
        fn turn(&self, _: &TurnContext) -> Result<TurnOutput, String> {
            Ok(TurnOutput::default())
        }
    }
    impl BootstrapHook for All {
        fn bootstrap(&self, _: &AgentContext, files: Vec<File>) -> Result<Vec<File>, String> {
            Ok(files)
        }
    }
    crate::register_plugin!(All);

    #[test]
    fn the_hooks_declared_are_exactly_the_traits_implemented() {
        let only = OnlyTurn::hooks();
        assert!(only.stable.is_none() && only.bootstrap.is_none());
        let out = (only.turn.expect("TurnHook is implemented"))(&TurnContext::default()).unwrap();
        assert_eq!(out.sections[0].body, "## Clock\n00:00");
        let all = All::hooks();
        assert!(all.stable.is_some() && all.turn.is_some() && all.bootstrap.is_some());
        assert_eq!((all.stable.unwrap())(&AgentContext::default(), &[]).unwrap().prefix.as_deref(), Some("p"));
    }
}

/// The README's Rust examples compile and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExamples;
