//! The official plugins, compiled to wasm by `host/wasm/build.rs` and embedded in
//! the binary, so `source = "builtin:<id>"` needs nothing installed.

include!(concat!(env!("OUT_DIR"), "/builtin_plugins.rs"));

/// The wasm of the built-in plugin `id`.
pub fn get(id: &str) -> Option<&'static [u8]> {
    BUILTIN.iter().find(|(name, _)| *name == id).map(|(_, bytes)| *bytes)
}

/// The ids of every built-in plugin, sorted.
pub fn ids() -> Vec<&'static str> {
    let mut ids: Vec<&str> = BUILTIN.iter().map(|(name, _)| *name).collect();
    ids.sort_unstable();
    ids
}
