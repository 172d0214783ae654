//! The on-disk cache of compiled components.
//!
//! Compiling a plugin takes tens of milliseconds; loading a compiled one
//! takes well under one. Entries are keyed by the SHA-256 of the wasm and the
//! engine's compatibility hash (wasmtime version, target, settings), so a
//! different engine never sees another's entry. Each file carries a checksum
//! of its payload, checked before wasmtime is handed the bytes: a corrupt or
//! truncated entry is recompiled, never trusted. Writes go to a temporary
//! file in the same directory and are renamed into place, so a reader never
//! sees half an entry and two processes writing at once both leave a whole one.
//!
//! Location: `$PROEM_CACHE_DIR` (empty disables the cache), else
//! `$XDG_CACHE_HOME/proem/components`, else `~/.cache/proem/components`.

use proem_core::disk::write_whole;
use proem_core::plugin::runtime::Origin;
use sha2::{Digest, Sha256};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use wasmtime::component::Component;
use wasmtime::Engine;

const MAGIC: &[u8; 8] = b"PROEMCW1";
const HEADER: usize = 8 + 32;
/// The largest cache entry read back (a compiled 64 MiB plugin stays under it).
const MAX_ENTRY_BYTES: u64 = 1024 * 1024 * 1024;

/// The cache file for `wasm` under `dir`.
pub fn entry_path(dir: &Path, engine: &Engine, wasm: &[u8]) -> PathBuf {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut h);
    dir.join(format!("{}-{:016x}.cwasm", proem_core::digest::sha256_hex(wasm), h.finish()))
}

/// Loads `wasm` from the cache or compiles it (and caches the result).
pub fn load_or_compile(engine: &Engine, wasm: &[u8], dir: Option<&Path>) -> Result<(Component, Origin), String> {
    let path = dir.map(|d| entry_path(d, engine, wasm));
    if let Some(path) = &path {
        if let Some(component) = read_entry(engine, path) {
            return Ok((component, Origin::Cached));
        }
    }
    let component = Component::new(engine, wasm).map_err(|e| format!("cannot compile: {}", error_chain(&e)))?;
    if let Some(path) = &path {
        if let Err(e) = write_entry(&component, path) {
            tracing::warn!(path = %path.display(), "cannot write the component cache: {e}");
        }
    }
    Ok((component, Origin::Compiled))
}

fn read_entry(engine: &Engine, path: &Path) -> Option<Component> {
    let data = proem_core::disk::read_regular_file(path, MAX_ENTRY_BYTES).ok()?;
    if data.len() < HEADER || &data[..8] != MAGIC {
        tracing::warn!(path = %path.display(), "component cache entry is not ours or truncated; recompiling");
        return None;
    }
    let (sum, payload) = data[8..].split_at(32);
    if Sha256::digest(payload).as_slice() != sum {
        tracing::warn!(path = %path.display(), "component cache entry is corrupt; recompiling");
        return None;
    }
    // SAFETY: the payload is byte-for-byte what `Component::serialize` wrote
    // into a directory proem owns (checked by the SHA-256 above), and the
    // file name binds it to this engine's compatibility hash; wasmtime
    // re-checks the engine configuration when deserialising.
    match unsafe { Component::deserialize(engine, payload) } {
        Ok(component) => Some(component),
        Err(e) => {
            tracing::warn!(path = %path.display(), "component cache entry rejected ({e}); recompiling");
            None
        }
    }
}

/// A cache file's bytes for a serialised component: magic, SHA-256 of the
/// payload, payload. Public so tests can forge entries that pass the checksum.
pub fn encode_entry(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + payload.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&Sha256::digest(payload));
    out.extend_from_slice(payload);
    out
}

fn write_entry(component: &Component, path: &Path) -> std::io::Result<()> {
    let payload = component.serialize().map_err(|e| std::io::Error::other(e.to_string()))?;
    write_whole(path, &encode_entry(&payload), true)
}

/// An error and its causes on one line.
pub fn error_chain(e: &wasmtime::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
    }
    proem_core::text::one_line(&parts.join(": "), 2000)
}
