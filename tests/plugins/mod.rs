//! Plugins as their authors and users meet them: the official plugins end to
//! end, each API version and its WIT, compatibility with prebuilt 0.1
//! binaries, the author commands, and push/pull against a registry.

mod authoring;
mod compat_v0_1;
mod example_copy;
mod oci;
mod plugin_api_v0_2;
// The official plugins end to end: `plugins::plugins::…` reads as "the
// plugins folder's file about the plugins", the name its tests have always had.
#[allow(clippy::module_inception)]
mod plugins;
mod wit_package;
