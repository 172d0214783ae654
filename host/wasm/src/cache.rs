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
//! anything anyway (docs/SECURITY.md, "Caches"). The header follows the
//! code, so in a process that lives one build an entry checked is mapped
//! by wasmtime as it lies on disk, never copied into memory (see
//! [`map_entries_in_this_process`]); a process that lives on copies it.
//! Writes go
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

const MAGIC: &[u8; 8] = b"PROEMCW4";
/// What each entry's MAC starts with: the kind of entry.
const KIND: &[u8] = b"proem compiled component";
/// The header after the code: magic, wasm digest, engine hash, payload
/// length and xxh3-128, MAC.
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

/// The cached component of the binary whose SHA-256 is `digest`, compiled
/// for `engine`, if the cache holds a good one. Reads no byte of the wasm.
pub fn lookup(engine: &Engine, digest: &str, dir: &CacheDir) -> Option<Component> {
    read_entry(engine, dir, &EntryKey::of_digest(engine, digest)?)
}

/// Loads the binary whose SHA-256 is `digest` from the cache, or reads it
/// (`wasm`) and compiles it (and caches the result). The digest is the one
/// the build went by: computed from the bytes in this process, or kept for
/// the file's stat (see `proem_core::plugin::binary`); bytes read here
/// hash to it (the reader checks), so an entry made from them is the
/// digest's. A cache hit reads and hashes nothing.
pub fn load_or_compile(
    compiled: &crate::engine::Compiled,
    digest: &str,
    wasm: WasmBytes<'_>,
    dir: Option<&CacheDir>,
) -> Result<(Component, Origin), PluginError> {
    if let Some(component) = dir.and_then(|dir| lookup(&compiled.engine, digest, dir)) {
        return Ok((component, Origin::Cached));
    }
    let wasm = wasm().map_err(PluginError::Host)?;
    compile_and_keep(compiled, digest, &wasm, dir).map(|component| (component, Origin::Compiled))
}

/// Compiles `wasm`, whose SHA-256 is `digest`, for `compiled`'s engine, and
/// keeps the result in the cache folder `dir`: the one place a component
/// is compiled.
pub fn compile_and_keep(
    compiled: &crate::engine::Compiled,
    digest: &str,
    wasm: &[u8],
    dir: Option<&CacheDir>,
) -> Result<Component, PluginError> {
    // Nothing interrupts a compile: what it may cost is bounded first. (Bytes
    // the estimate cannot read, the compiler could not either.)
    let cannot = |e: String| PluginError::Compile(format!("cannot compile: {e}"));
    let cost = crate::compile_cost::estimate(wasm).map_err(cannot)?;
    crate::compile_cost::within_limits(&cost).map_err(PluginError::Refused)?;
    let component = crate::compile::compile(compiled, wasm)?;
    tracing::debug!(wasm_bytes = wasm.len(), estimated_bytes = cost.total, "compiled a component");
    if let Some(dir) = dir {
        let engine = &compiled.engine;
        let key = EntryKey::of_digest(engine, digest).unwrap_or_else(|| EntryKey::new(engine, wasm));
        if let Err(e) = write_entry(&component, dir, &key) {
            tracing::warn!(dir = %dir.path().display(), "cannot write the component cache: {e}");
        }
    }
    Ok(component)
}

/// Whether checked entries are mapped rather than copied: see
/// [`map_entries_in_this_process`].
static MAP_ENTRIES: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Lets this process map the cache entries it loads instead of copying
/// them: for a process that lives one build (`proem build` and the other
/// one-shot commands). A mapped entry costs no copy of its code (a Python
/// plugin's 50 MB: ~70 ms of a new turn's CPU) but stays backed by the file:
/// if its owner rewrote it in place (`cp` or `truncate` over it) while the
/// process still ran, the next call would touch changed pages (a bus
/// error, or code that was not checked). A process that lives on (`proem
/// serve`, `plugin dev`, the Python and Node packages) keeps the default:
/// each entry is read whole, checked, and handed over from memory, so
/// nothing done to the file later reaches it.
pub fn map_entries_in_this_process() {
    MAP_ENTRIES.store(true, std::sync::atomic::Ordering::Relaxed);
}

fn read_entry(engine: &Engine, dir: &CacheDir, key: &EntryKey) -> Option<Component> {
    if !MAP_ENTRIES.load(std::sync::atomic::Ordering::Relaxed) {
        return read_entry_whole(engine, dir, key);
    }
    let name = key.file_name();
    let (file, size) = dir.open_entry(&name, MAX_ENTRY_BYTES).ok()?;
    // Mapping needs a path that names the open file itself.
    let Some(by_path) = path_of_open_file(&file) else { return read_entry_whole(engine, dir, key) };
    let shown = || dir.path().join(&name).display().to_string();
    checked_file(dir, key, &file, size).map_err(|why| why.say(&shown())).ok()?;
    // SAFETY: the file's code is byte-for-byte what `Component::serialize`
    // wrote for this wasm digest and engine hash: both are in the entry's
    // header, checked against this key and engine, under a MAC keyed by the
    // secret of a folder only this user can write, and the code has the
    // header's length and xxh3-128 (see `checked_file`). `by_path` names
    // that very file, whatever the entry's name holds by now. Mapped
    // rather than read, the file can change after the check only by a
    // writer of the folder: its owner (or root), who can sign any entry
    // anyway. wasmtime maps the code and the plugin's initial memory (a
    // Python plugin's is most of its 50 MB) from the page cache as they are
    // touched, where a copy cost a 50 MB allocation, its page faults and
    // its zeroing on every load; it reads the ELF file by the offsets in
    // its own headers, so the header after the code is mapped and ignored.
    // It re-checks the engine configuration when deserialising.
    loaded(unsafe { Component::deserialize_file(engine, by_path) }, &shown())
}

/// A path that opens `file` itself (Linux's `/proc/self/fd/N`), where the
/// system has one.
fn path_of_open_file(file: &std::fs::File) -> Option<String> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let by_path = format!("/proc/self/fd/{}", file.as_raw_fd());
        if Path::new(&by_path).exists() {
            return Some(by_path);
        }
    }
    let _ = file;
    None
}

/// [`read_entry`] for a process that lives on (or a system with no path
/// for an open file): the entry read whole, checked, and deserialised from
/// that very copy, so nothing done to the file later reaches it.
fn read_entry_whole(engine: &Engine, dir: &CacheDir, key: &EntryKey) -> Option<Component> {
    let name = key.file_name();
    let data = dir.read(&name, MAX_ENTRY_BYTES).ok()?;
    let shown = || dir.path().join(&name).display().to_string();
    let code = checked_code(dir, key, &data).map_err(|why| why.say(&shown())).ok()?;
    // SAFETY: the code is byte-for-byte what `Component::serialize` wrote
    // for this wasm digest and engine hash (see `checked_code`), in this
    // process's memory. wasmtime re-checks the engine configuration when
    // deserialising.
    loaded(unsafe { Component::deserialize(engine, code) }, &shown())
}

/// The component wasmtime made of an entry, or `None` (said) when it
/// refused it.
fn loaded(result: wasmtime::Result<Component>, shown: &str) -> Option<Component> {
    result.map_err(|e| tracing::warn!(path = %shown, "component cache entry rejected ({e}); recompiling")).ok()
}

/// Why an entry is not used.
enum Refused {
    /// No header of this format where it belongs (an entry of another proem
    /// version, or not an entry at all).
    OtherFormat,
    /// A header of this format that is damaged, forged, made for another
    /// binary or engine, or a code that is not the one it binds.
    NotOurs,
}

impl Refused {
    /// Says why the entry at `shown` is recompiled.
    fn say(self, shown: &str) {
        match self {
            Refused::OtherFormat => {
                tracing::debug!(path = %shown, "component cache entry of another proem version; recompiling")
            }
            Refused::NotOurs => {
                tracing::warn!(path = %shown, "component cache entry damaged or not made for this binary; recompiling")
            }
        }
    }
}

/// A cache file's bytes for a serialised component: the payload (the
/// machine code, first, so the file is wasmtime's own format and can be
/// mapped as it is), then the header: magic, the wasm's SHA-256, the engine
/// hash, the payload's length and xxh3-128, and the HMAC of all five under
/// `dir`'s secret. Public so tests can make entries as a process of this
/// user would.
pub fn encode_entry(dir: &CacheDir, key: &EntryKey, payload: &[u8]) -> Vec<u8> {
    let engine = key.engine.to_le_bytes();
    let length = (payload.len() as u64).to_le_bytes();
    let checksum = xxhash_rust::xxh3::xxh3_128(payload).to_le_bytes();
    let mac = dir.mac(&[KIND, MAGIC, &key.wasm, &engine, &length, &checksum]);
    let mut out = Vec::with_capacity(payload.len() + HEADER);
    for part in [payload, &MAGIC[..], &key.wasm, &engine, &length, &checksum, &mac] {
        out.extend_from_slice(part);
    }
    out
}

/// The payload of an entry made for `key` under `dir`'s secret (see
/// [`checked_code`]), the same rule a load goes by. Public so tests can
/// check what it accepts.
pub fn decode_entry<'d>(dir: &CacheDir, key: &EntryKey, data: &'d [u8]) -> Option<&'d [u8]> {
    checked_code(dir, key, data).ok()
}

/// The code of the entry `data` when it was made for `key` under `dir`'s
/// secret: its header passes [`checked_header`] and the code before it has
/// the header's xxh3-128 (checked last: the header is cheap to refuse).
fn checked_code<'d>(dir: &CacheDir, key: &EntryKey, data: &'d [u8]) -> Result<&'d [u8], Refused> {
    let at = data.len().checked_sub(HEADER).ok_or(Refused::OtherFormat)?;
    let header: &[u8; HEADER] = data[at..].try_into().map_err(|_| Refused::OtherFormat)?;
    let checksum = checked_header(dir, key, header, at as u64)?;
    let code = &data[..at];
    (xxhash_rust::xxh3::xxh3_128(code).to_le_bytes() == checksum).then_some(code).ok_or(Refused::NotOurs)
}

/// [`checked_code`] for the `size`-byte entry `file`, read in place: its
/// header, then its code streamed through a small buffer into the checksum
/// (never held).
fn checked_file(dir: &CacheDir, key: &EntryKey, file: &std::fs::File, size: u64) -> Result<(), Refused> {
    use std::os::unix::fs::FileExt;
    let at = size.checked_sub(HEADER as u64).ok_or(Refused::OtherFormat)?;
    let mut header = [0u8; HEADER];
    file.read_exact_at(&mut header, at).map_err(|_| Refused::OtherFormat)?;
    let checksum = checked_header(dir, key, &header, at)?;
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    let mut buffer = vec![0u8; 256 * 1024];
    let mut done = 0u64;
    while done < at {
        let part = usize::try_from((at - done).min(buffer.len() as u64)).unwrap_or(buffer.len());
        file.read_exact_at(&mut buffer[..part], done).map_err(|_| Refused::NotOurs)?;
        hasher.update(&buffer[..part]);
        done += part as u64;
    }
    (hasher.digest128().to_le_bytes() == checksum).then_some(()).ok_or(Refused::NotOurs)
}

/// The code's xxh3-128 that the header after `code_len` bytes of an
/// entry gives, when the header has this format's magic, `key`'s
/// wasm digest and engine hash, a MAC that holds under `dir`'s secret, and
/// that length.
fn checked_header(dir: &CacheDir, key: &EntryKey, header: &[u8; HEADER], code_len: u64) -> Result<[u8; 16], Refused> {
    let (magic, rest) = header.split_at(8);
    let (wasm, rest) = rest.split_at(32);
    let (engine, rest) = rest.split_at(8);
    let (length, rest) = rest.split_at(8);
    let (checksum, mac) = rest.split_at(16);
    if magic != MAGIC {
        return Err(Refused::OtherFormat);
    }
    let binds = wasm == key.wasm && engine == key.engine.to_le_bytes();
    let signed = binds && dir.verify(&[KIND, MAGIC, wasm, engine, length, checksum], mac);
    if !signed || length != code_len.to_le_bytes() {
        return Err(Refused::NotOurs);
    }
    checksum.try_into().map_err(|_| Refused::NotOurs)
}

fn write_entry(component: &Component, dir: &CacheDir, key: &EntryKey) -> std::io::Result<()> {
    let payload = component.serialize().map_err(|e| std::io::Error::other(e.to_string()))?;
    dir.write(&key.file_name(), &encode_entry(dir, key, &payload), true)
}
