//! The plugin API versions this host speaks, one module per released WIT
//! version (named after the version it first shipped in). Only this file
//! knows them all: [`Bindings`] dispatches to the right one, and each module
//! converts its own generated types to the host's.
//!
//! To add 0.2: freeze `wit/0.2.0/`, add `v0_2.rs` with its own `bindgen!`,
//! a `Bindings::V0_2` variant, and extend [`SUPPORTED`]. 0.1 plugins keep
//! loading through `v0_1`.

pub mod v0_1;

/// Each supported API version as (major, minor); patch versions are compatible.
pub const SUPPORTED: &[(u64, u64)] = &[(0, 1)];

/// The versions as people read them, for error messages.
pub fn supported_list() -> String {
    SUPPORTED.iter().map(|(ma, mi)| format!("{ma}.{mi}.x")).collect::<Vec<_>>().join(", ")
}

/// Whether a plugin built for `version` (`x.y.z`) can load here.
pub fn is_supported(version: &str) -> bool {
    let mut parts = version.split('.').map(|p| p.parse::<u64>());
    match (parts.next(), parts.next()) {
        (Some(Ok(major)), Some(Ok(minor))) => SUPPORTED.contains(&(major, minor)),
        _ => false,
    }
}

/// A plugin's pre-instantiated bindings, by API version.
#[derive(Clone)]
pub enum Bindings {
    /// proem:plugin@0.1.x
    V0_1(v0_1::PluginPre<crate::plugin::sandbox::State>),
}
