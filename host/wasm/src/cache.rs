//! The on-disk cache of compiled components.
//!
//! Compiling a plugin takes tens of milliseconds; loading a compiled one
//! takes well under one. But loading one runs native code proem did not
//! compile in this process, so an entry is used only when it is provably
//! what this proem compiled from these very wasm bytes: it lives in a cache
//! folder that passed [`proem_core::cache_dir`]'s checks (the user's own, written
//! by nobody else, opened once and held), its name holds the SHA-256 of the
//! wasm just read and the engine's compatibility hash (wasmtime version,
//! target, settings), and its header holds both again with the machine
//! code's length and xxh3-128, all under an HMAC-SHA256 keyed by the
//! folder's secret. The digest, the engine hash, the MAC, the length and
//! the checksum are checked before wasmtime is handed a byte: a corrupt,
//! truncated, forged or swapped entry (another binary's, another user's)
//! is recompiled, never deserialised. The MAC covers the header only and
//! the header binds the code by its length and xxh3-128: reading a 50 MB
//! entry costs one xxh3 pass (~5 ms) instead of a SHA-256 one (~25 ms),
//! and no one who cannot sign an entry can change its code unseen: the
//! folder is writable by its owner alone, who can read the key and sign
//! anything anyway (docs/SECURITY.md, "Caches"). Writes go
//! to a temporary file in the same folder and are renamed into place, so a
//! reader never sees half an entry and two processes writing at once both
//! leave a whole one.
//!
//! Location: see [`proem_core::cache_dir`] (`PROEM_CACHE_DIR=""` disables it).

use proem_core::cache_dir::CacheDir;
use proem_core::plugin::call::PluginError;
use proem_core::plugin::runtime::{Origin, WasmBytes};
use sha2::{Digest, Sha256};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use wasmtime::component::Component;
use wasmtime::Engine;

const MAGIC: &[u8; 8] = b"PROEMCW3";
/// What each entry's MAC starts with: the kind of entry.
const KIND: &[u8] = b"proem compiled component";
/// Magic, wasm digest, engine hash, payload length and xxh3-128, MAC.
const HEADER: usize = 8 + 32 + 8 + 8 + 16 + 32;
/// The largest cache entry read back (a compiled 64 MiB plugin stays under it).
const MAX_ENTRY_BYTES: u64 = 1024 * 1024 * 1024;

/// What binds an entry to its use: the SHA-256 of the wasm and the
/// engine's compatibility hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryKey {
    /// SHA-256 of the wasm bytes.
    pub wasm: [u8; 32],
    /// The engine's compatibility hash.
    pub engine: u64,
}

impl EntryKey {
    /// The key of `wasm` compiled by `engine`.
    pub fn new(engine: &Engine, wasm: &[u8]) -> EntryKey {
        EntryKey { wasm: Sha256::digest(wasm).into(), engine: engine_hash(engine) }
    }

    /// The key of the binary whose SHA-256 is `digest` (64 hex digits),
    /// compiled by `engine`; `None` for anything else.
    pub fn of_digest(engine: &Engine, digest: &str) -> Option<EntryKey> {
        let mut wasm = [0u8; 32];
        if digest.len() != 64 {
            return None;
        }
        for (byte, pair) in wasm.iter_mut().zip(digest.as_bytes().chunks_exact(2)) {
            *byte = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
        }
        Some(EntryKey { wasm, engine: engine_hash(engine) })
    }

    /// The entry's file name in the cache folder.
    pub fn file_name(&self) -> String {
        format!("{}-{:016x}.cwasm", proem_core::digest::hex(&self.wasm), self.engine)
    }
}

/// The engine's compatibility hash, as entry names carry it.
fn engine_hash(engine: &Engine) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut h);
    h.finish()
}

/// The cache file for `wasm` under `dir`.
pub fn entry_path(dir: &Path, engine: &Engine, wasm: &[u8]) -> PathBuf {
    dir.join(EntryKey::new(engine, wasm).file_name())
}

/// Loads the binary whose SHA-256 is `digest` from the cache, or reads it
/// (`wasm`) and compiles it (and caches the result). The digest is the one
/// the build went by: computed from the bytes in this process, or kept for
/// the file's stat (see `proem_core::plugin::binary`); bytes read here
/// hash to it (the reader checks), so an entry made from them is the
/// digest's. A cache hit reads and hashes nothing.
pub fn load_or_compile(
    engine: &Engine,
    digest: &str,
    wasm: WasmBytes<'_>,
    dir: Option<&CacheDir>,
) -> Result<(Component, Origin), PluginError> {
    let key = dir.and_then(|_| EntryKey::of_digest(engine, digest));
    if let (Some(dir), Some(key)) = (dir, &key) {
        if let Some(component) = read_entry(engine, dir, key) {
            return Ok((component, Origin::Cached));
        }
    }
    let wasm = wasm().map_err(PluginError::Host)?;
    let key = match key {
        Some(key) => Some(key),
        None => dir.map(|_| EntryKey::new(engine, &wasm)),
    };
    let component = Component::new(engine, &wasm)
        .map_err(|e| PluginError::Compile(format!("cannot compile: {}", error_chain(&e))))?;
    tracing::debug!(wasm_bytes = wasm.len(), "compiled a component");
    if let (Some(dir), Some(key)) = (dir, &key) {
        if let Err(e) = write_entry(&component, dir, key) {
            tracing::warn!(dir = %dir.path().display(), "cannot write the component cache: {e}");
        }
    }
    Ok((component, Origin::Compiled))
}

fn read_entry(engine: &Engine, dir: &CacheDir, key: &EntryKey) -> Option<Component> {
    let name = key.file_name();
    let data = dir.read(&name, MAX_ENTRY_BYTES).ok()?;
    let shown = || dir.path().join(&name).display().to_string();
    if !data.starts_with(MAGIC) {
        tracing::debug!(path = %shown(), "component cache entry of another proem version; recompiling");
        return None;
    }
    let Some(payload) = decode_entry(dir, key, &data) else {
        tracing::warn!(path = %shown(), "component cache entry damaged or not made for this binary; recompiling");
        return None;
    };
    // SAFETY: the payload is byte-for-byte what `Component::serialize` wrote
    // for this wasm digest and engine hash: both are in the entry, checked
    // against the bytes just read and this engine, under a MAC keyed by the
    // secret of a folder only this user can write (see `decode_entry`);
    // wasmtime re-checks the engine configuration when deserialising.
    match unsafe { Component::deserialize(engine, payload) } {
        Ok(component) => Some(component),
        Err(e) => {
            tracing::warn!(path = %shown(), "component cache entry rejected ({e}); recompiling");
            None
        }
    }
}

/// A cache file's bytes for a serialised component: magic, the wasm's
/// SHA-256, the engine hash, the payload's length and xxh3-128, the HMAC
/// of all five under `dir`'s secret, payload. Public so tests can make
/// entries as a process of this user would.
pub fn encode_entry(dir: &CacheDir, key: &EntryKey, payload: &[u8]) -> Vec<u8> {
    let engine = key.engine.to_le_bytes();
    let length = (payload.len() as u64).to_le_bytes();
    let checksum = xxhash_rust::xxh3::xxh3_128(payload).to_le_bytes();
    let mac = dir.mac(&[KIND, MAGIC, &key.wasm, &engine, &length, &checksum]);
    let mut out = Vec::with_capacity(HEADER + payload.len());
    for part in [&MAGIC[..], &key.wasm, &engine, &length, &checksum, &mac, payload] {
        out.extend_from_slice(part);
    }
    out
}

/// The payload of an entry made for `key` under `dir`'s secret: the
/// magic, the wasm digest and the engine hash it carries equal `key`'s,
/// its MAC holds, and the payload has the length and xxh3-128 the header
/// gives (checked last: the header is cheap to refuse). Public so tests
/// can check what it accepts.
pub fn decode_entry<'d>(dir: &CacheDir, key: &EntryKey, data: &'d [u8]) -> Option<&'d [u8]> {
    if data.len() < HEADER || &data[..8] != MAGIC {
        return None;
    }
    let (wasm, rest) = data[8..].split_at(32);
    let (engine, rest) = rest.split_at(8);
    let (length, rest) = rest.split_at(8);
    let (checksum, rest) = rest.split_at(16);
    let (mac, payload) = rest.split_at(32);
    let binds = wasm == key.wasm && engine == key.engine.to_le_bytes();
    let signed = binds && dir.verify(&[KIND, MAGIC, wasm, engine, length, checksum], mac);
    let whole = signed
        && length == (payload.len() as u64).to_le_bytes()
        && checksum == xxhash_rust::xxh3::xxh3_128(payload).to_le_bytes();
    whole.then_some(payload)
}

fn write_entry(component: &Component, dir: &CacheDir, key: &EntryKey) -> std::io::Result<()> {
    let payload = component.serialize().map_err(|e| std::io::Error::other(e.to_string()))?;
    dir.write(&key.file_name(), &encode_entry(dir, key, &payload), true)
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
