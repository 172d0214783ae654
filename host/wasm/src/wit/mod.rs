//! The plugin API versions this host speaks, one module per released WIT
//! version (named after the version it first shipped in). Only this file
//! knows them all: [`Bindings`] dispatches to the right one, and each module
//! converts its own generated types to the host's.
//!
//! To add 0.3: freeze `wit/0.3.0/`, add `v0_3.rs` with its own `bindgen!`
//! and its `call`, then an [`ApiVersion::V0_3`]-style variant and a
//! `Bindings` variant here; the compiler lists every `match` to extend, all
//! in this file. 0.1 and 0.2 plugins keep loading through their modules.

pub mod v0_1;
pub mod v0_2;

use crate::sandbox::State;
use proem_core::plugin::call::{Request, Response};
use proem_core::plugin::Hook;
use wasmtime::component::InstancePre;
use wasmtime::Store;

/// A plugin API version this host speaks, by (major, minor); patch versions
/// are compatible. Every decision that depends on the version is a method
/// here, so adding a version touches this folder only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ApiVersion {
    /// proem:plugin@0.1.x: `sections`, `overlay` and `bootstrap` hooks.
    V0_1,
    /// proem:plugin@0.2.x: `stable`, `turn` and `bootstrap` hooks.
    V0_2,
}

impl ApiVersion {
    /// Every supported version, oldest first.
    pub const ALL: [ApiVersion; 2] = [ApiVersion::V0_1, ApiVersion::V0_2];

    /// The newest version, the one the SDK and `proem plugin new` target.
    pub const CURRENT: ApiVersion = ApiVersion::V0_2;

    /// The version a plugin built for `version` (`x.y` or `x.y.z`) speaks,
    /// if this host supports it.
    pub fn parse(version: &str) -> Option<ApiVersion> {
        let mut parts = version.split('.').map(|p| p.parse::<u64>());
        let (Some(Ok(major)), Some(Ok(minor))) = (parts.next(), parts.next()) else { return None };
        ApiVersion::ALL.into_iter().find(|v| v.major_minor() == (major, minor))
    }

    /// (major, minor).
    pub fn major_minor(self) -> (u64, u64) {
        match self {
            ApiVersion::V0_1 => (0, 1),
            ApiVersion::V0_2 => (0, 2),
        }
    }

    /// The full version the host's WIT for it carries, e.g. `0.2.0`.
    pub fn wit_version(self) -> &'static str {
        match self {
            ApiVersion::V0_1 => "0.1.0",
            ApiVersion::V0_2 => "0.2.0",
        }
    }

    /// The hooks a plugin of this version may export (each as
    /// `proem:plugin/NAME@x.y`), besides `describe`.
    pub fn hooks(self) -> &'static [Hook] {
        match self {
            ApiVersion::V0_1 => &[Hook::Sections, Hook::Overlay, Hook::Bootstrap],
            ApiVersion::V0_2 => &[Hook::Stable, Hook::Turn, Hook::Bootstrap],
        }
    }

    /// Types a pre-instantiated component with this version's bindings.
    pub(crate) fn bind(self, pre: InstancePre<State>) -> wasmtime::Result<Bindings> {
        Ok(match self {
            ApiVersion::V0_1 => Bindings::V0_1(v0_1::PluginPre::new(pre)?),
            ApiVersion::V0_2 => Bindings::V0_2(v0_2::PluginPre::new(pre)?),
        })
    }

    /// Adds every version's host interfaces to the linker.
    pub(crate) fn add_all_to_linker(linker: &mut wasmtime::component::Linker<State>) -> Result<(), String> {
        for version in ApiVersion::ALL {
            let added = match version {
                ApiVersion::V0_1 => v0_1::add_to_linker(linker),
                ApiVersion::V0_2 => v0_2::add_to_linker(linker),
            };
            added.map_err(|e| format!("cannot link the plugin API {version}: {e}"))?;
        }
        Ok(())
    }
}

impl std::fmt::Display for ApiVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (major, minor) = self.major_minor();
        write!(f, "{major}.{minor}")
    }
}

/// The newest API version as a full version string (`0.2.0`).
pub const CURRENT: &str = "0.2.0";

/// The versions as people read them, for error messages.
pub fn supported_list() -> String {
    ApiVersion::ALL.iter().map(|v| format!("{v}.x")).collect::<Vec<_>>().join(", ")
}

/// Whether a plugin built for `version` (`x.y.z`) can load here.
pub fn is_supported(version: &str) -> bool {
    ApiVersion::parse(version).is_some()
}

/// A plugin's pre-instantiated bindings, by API version.
#[derive(Clone)]
pub enum Bindings {
    /// proem:plugin@0.1.x
    V0_1(v0_1::PluginPre<State>),
    /// proem:plugin@0.2.x
    V0_2(v0_2::PluginPre<State>),
}

impl Bindings {
    /// Instantiates the plugin in `store` and calls the hook `request` asks
    /// for. Outer `Err`: a trap or host error; inner `Err`: the plugin's own
    /// error (including a hook its version does not have).
    pub(crate) async fn call(
        &self,
        store: &mut Store<State>,
        request: Request,
    ) -> wasmtime::Result<Result<Response, String>> {
        match self {
            Bindings::V0_1(pre) => v0_1::call(pre, store, request).await,
            Bindings::V0_2(pre) => v0_2::call(pre, store, request).await,
        }
    }
}

/// The answer to a hook a plugin's API version does not have.
fn not_in_version(request: &Request, version: ApiVersion) -> wasmtime::Result<Result<Response, String>> {
    Ok(Err(format!("the {} hook is not part of plugin API {version}", request.hook())))
}
