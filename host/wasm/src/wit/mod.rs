//! The plugin API versions this host speaks, one module per released WIT
//! version (named after the version it first shipped in). Only this file
//! knows them all: [`Bindings`] dispatches to the right one, and each module
//! converts its own generated types to the host's.
//!
//! To add 0.3: freeze `wit/0.3.0/`, add `v0_3.rs` with its own `bindgen!`,
//! a `Bindings::V0_3` variant, its arm in `call::dispatch`, and extend
//! [`SUPPORTED`]. 0.1 and 0.2 plugins keep loading through their modules.

pub mod v0_1;
pub mod v0_2;

/// Each supported API version as (major, minor); patch versions are compatible.
pub const SUPPORTED: &[(u64, u64)] = &[(0, 1), (0, 2)];

/// The newest API version, the one the SDK and `proem plugin new` target.
pub const CURRENT: &str = "0.2.0";

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
    V0_1(v0_1::PluginPre<crate::sandbox::State>),
    /// proem:plugin@0.2.x
    V0_2(v0_2::PluginPre<crate::sandbox::State>),
}
