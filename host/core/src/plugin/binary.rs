//! A plugin binary, read only when its code is needed.
//!
//! A build needs a file plugin's SHA-256 (its identity in every key kept
//! on disk, and what `sha256` pins), but its bytes only when the plugin
//! runs. A Python plugin is ~18 MB: reading and hashing it took ~30 ms of
//! CPU per build, ten times a whole warm build without it. So the digest
//! is kept on disk beside the answers, keyed by the file's stat (device,
//! inode, size, modification and change times to the nanosecond), and a
//! build that finds it opens and stats the file, nothing more.
//!
//! The rule that keeps this sound: a digest is kept only for a file whose
//! times are both more than [`SETTLED`] in the past (two writes within one
//! timestamp tick could leave equal stats, as in [`crate::memo`]), and any
//! write to a file moves its change time, which no user can set back. When
//! the bytes are read (to check, compile or link the plugin), they are read
//! from the file handle opened at load and hashed again: bytes that differ
//! from the digest the build went by are refused, never run.

use crate::digest::sha256_hex;
use crate::memo::KeyHasher;
use crate::plugin::answers::Answers;
use std::borrow::Cow;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How old both times of a file must be before its digest is kept.
pub const SETTLED: Duration = Duration::from_secs(2);

/// The largest plugin file proem reads (official plugins are ~150-250 KB,
/// a Python one ~18 MB).
pub const MAX_PLUGIN_BYTES: u64 = 64 * 1024 * 1024;

/// A plugin binary and what identifies it in keys kept on disk.
#[derive(Clone)]
pub(crate) struct Wasm {
    source: Source,
    /// `builtin:<name>` (the executable's identity covers its bytes) or
    /// `sha256:<hex>` of a file's bytes.
    pub identity: String,
}

#[derive(Clone)]
enum Source {
    /// A built-in plugin's bytes, in the executable.
    Builtin(&'static [u8]),
    /// A file, opened at load and read on first need.
    File(Arc<LazyFile>),
}

struct LazyFile {
    file: File,
    /// The file as errors name it.
    shown: String,
    /// The SHA-256 the build went by, lowercase hex.
    digest: String,
    bytes: OnceLock<Result<Vec<u8>, String>>,
}

impl Wasm {
    /// A built-in plugin `name` (empty bytes: a runtime that carries none).
    pub fn builtin(name: &str, bytes: &'static [u8]) -> Wasm {
        Wasm { source: Source::Builtin(bytes), identity: format!("builtin:{name}") }
    }

    /// The plugin file at `path` under `agent_dir`, read through a
    /// capability handle like every other workspace read (a symlink or path
    /// that leaves the directory is refused, and so is a file over
    /// [`MAX_PLUGIN_BYTES`]). Its digest comes from `answers` when kept
    /// for this very stat; else the file is read and hashed now, and the
    /// digest kept when the file has settled.
    /// A file that is not there is named with `declared_at`, the line of
    /// proem.toml that names it, and what to do.
    pub fn open(
        agent_dir: &Path,
        path: &str,
        declared_at: Option<&str>,
        answers: Option<&Answers>,
    ) -> Result<Wasm, String> {
        // Named as proem.toml names it (relative to the agent folder, or
        // the absolute path the operator wrote): what a report that reaches
        // a service's client says must not hold the server's own paths.
        let shown = path.to_string();
        let file = open_regular(agent_dir, path, &shown, declared_at)?;
        let meta = file.metadata().map_err(|e| format!("{shown}: {e}"))?;
        // A digest is kept only for a stat no later write can leave as it
        // is (see `keep`), so one found for this very stat is this file's.
        let key = answers.map(|a| (a, stat_key(a, &meta)));
        let kept: Option<String> = key.and_then(|(answers, key)| answers.get(key)).filter(|d: &String| is_digest(d));
        let digest = match kept {
            Some(digest) => digest,
            None => {
                let digest = hash_file(&file, &shown)?;
                if let Some((answers, key)) = key.filter(|_| settled(&meta, SystemTime::now())) {
                    answers.put(key, &digest);
                }
                digest
            }
        };
        // The bytes are not kept even when just hashed: a build whose
        // compiled component is cached never needs them, and one that
        // compiles reads them again (and checks them against the digest).
        let lazy = LazyFile { file, shown, digest, bytes: OnceLock::new() };
        Ok(Wasm { identity: format!("sha256:{}", lazy.digest), source: Source::File(Arc::new(lazy)) })
    }

    /// The binary's bytes: a file's are read on first need and must hash
    /// to the digest the build went by.
    pub fn bytes(&self) -> Result<Cow<'_, [u8]>, String> {
        match &self.source {
            Source::Builtin(bytes) => Ok(Cow::Borrowed(bytes)),
            Source::File(lazy) => lazy.bytes().map(Cow::Borrowed),
        }
    }

    /// Whether this is a built-in the runtime carries no code for.
    pub fn is_empty_builtin(&self) -> bool {
        matches!(self.source, Source::Builtin(bytes) if bytes.is_empty())
    }

    /// The SHA-256 of the binary, lowercase hex (a built-in's is computed).
    pub fn digest(&self) -> Cow<'_, str> {
        match &self.source {
            Source::Builtin(bytes) => Cow::Owned(sha256_hex(bytes)),
            Source::File(lazy) => Cow::Borrowed(&lazy.digest),
        }
    }

    /// Whether a file's bytes were read in this process (a built-in's are
    /// always at hand).
    pub fn was_read(&self) -> bool {
        match &self.source {
            Source::Builtin(_) => true,
            Source::File(lazy) => lazy.bytes.get().is_some(),
        }
    }
}

impl LazyFile {
    fn bytes(&self) -> Result<&[u8], String> {
        let read = self.bytes.get_or_init(|| {
            let bytes = read_all(&self.file, &self.shown)?;
            let now = sha256_hex(&bytes);
            if now != self.digest {
                return Err(format!(
                    "{}: changed while proem ran (sha256 {now}, loaded as {}); build again",
                    self.shown, self.digest
                ));
            }
            Ok(bytes)
        });
        read.as_ref().map(Vec::as_slice).map_err(Clone::clone)
    }
}

/// Opens `path` without blocking (a FIFO named as a plugin is refused by
/// the regular-file check instead of hanging the build).
fn open_regular(agent_dir: &Path, path: &str, shown: &str, declared_at: Option<&str>) -> Result<File, String> {
    let dir = cap_std::fs::Dir::open_ambient_dir(agent_dir, cap_std::ambient_authority())
        .map_err(|e| format!("{shown}: cannot open the agent folder to read it: {e}"))?;
    let file = dir
        .open_with(path, &crate::disk::nonblocking_read())
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => format!(
                "{shown}: no such file, named by path = {path:?} at {}: build or copy the plugin there \
                 (`proem plugin add FILE.wasm --into AGENT_DIR`), correct the path, or remove the [[plugins]] entry",
                declared_at.unwrap_or("its [[plugins]] entry")
            ),
            _ => format!("{shown}: cannot read the plugin: {e}"),
        })?
        .into_std();
    let meta = file.metadata().map_err(|e| format!("{shown}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("{shown}: not a regular file"));
    }
    if meta.len() > MAX_PLUGIN_BYTES {
        return Err(format!("{shown}: {} bytes, over the {} byte limit for a plugin", meta.len(), MAX_PLUGIN_BYTES));
    }
    Ok(file)
}

/// The whole file from its start, at most [`MAX_PLUGIN_BYTES`] (a file
/// grown past it since it was opened is refused).
fn read_all(file: &File, shown: &str) -> Result<Vec<u8>, String> {
    use std::io::{Seek, SeekFrom};
    let mut file = file;
    file.seek(SeekFrom::Start(0)).map_err(|e| format!("{shown}: {e}"))?;
    let mut bytes = Vec::new();
    file.take(MAX_PLUGIN_BYTES + 1).read_to_end(&mut bytes).map_err(|e| format!("{shown}: {e}"))?;
    if bytes.len() as u64 > MAX_PLUGIN_BYTES {
        return Err(format!("{shown}: over the {MAX_PLUGIN_BYTES} byte limit for a plugin"));
    }
    Ok(bytes)
}

/// The SHA-256 of the whole file from its start, streamed (never held),
/// refused over [`MAX_PLUGIN_BYTES`] like [`read_all`].
fn hash_file(file: &File, shown: &str) -> Result<String, String> {
    use std::io::{Seek, SeekFrom};
    let mut file = file;
    file.seek(SeekFrom::Start(0)).map_err(|e| format!("{shown}: {e}"))?;
    let (digest, read) =
        crate::digest::sha256_hex_of_reader(file, MAX_PLUGIN_BYTES).map_err(|e| format!("{shown}: {e}"))?;
    if read > MAX_PLUGIN_BYTES {
        return Err(format!("{shown}: over the {MAX_PLUGIN_BYTES} byte limit for a plugin"));
    }
    Ok(digest)
}

/// Keeps the digest of the plugin file at `path` under `agent_dir`, just
/// written by `plugin add` or `pull`, so that the first build need not
/// read and hash it (an 18 MB Python plugin: ~20 ms of that build's CPU).
/// A build keeps a digest only once the file has [`SETTLED`]; this does
/// not wait two seconds but for the file system's own clock to move past
/// the file's times: it stamps a probe file beside the plugin (created and
/// removed at once) until the probe's change time is later than both of
/// the plugin's times, at most [`SETTLED`]. From then on any write to the
/// plugin stamps a later time than the stat kept, so it is never taken for
/// this digest. The file is hashed after that point, and kept only when
/// its stat is the same before and after hashing. Returns whether it was
/// kept (never an error: the first build hashes it then).
pub fn keep_new_file_digest(agent_dir: &Path, path: &str, answers: &Answers) -> bool {
    let shown = agent_dir.join(path).display().to_string();
    let Ok(file) = open_regular(agent_dir, path, &shown, None) else { return false };
    let Ok(agent) = cap_std::fs::Dir::open_ambient_dir(agent_dir, cap_std::ambient_authority()) else { return false };
    let folder = match Path::new(path).parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(parent) => match agent.open_dir(parent) {
            Ok(folder) => folder,
            Err(_) => return false,
        },
        None => agent,
    };
    let Ok(before) = file.metadata() else { return false };
    if !clock_moved_past(&folder, &before) {
        return false;
    }
    let Ok(before) = file.metadata() else { return false };
    let Ok(digest) = hash_file(&file, &shown) else { return false };
    let Ok(after) = file.metadata() else { return false };
    let key = stat_key(answers, &before);
    if key != stat_key(answers, &after) {
        return false;
    }
    answers.put(key, &digest);
    true
}

/// Whether a file created now in `folder` gets a change time later than
/// both of `meta`'s times, waiting for that at most [`SETTLED`]. The probe
/// is a new name (`O_EXCL`), removed at once.
fn clock_moved_past(folder: &cap_std::fs::Dir, meta: &std::fs::Metadata) -> bool {
    let newest = (meta.mtime(), meta.mtime_nsec()).max((meta.ctime(), meta.ctime_nsec()));
    let started = std::time::Instant::now();
    let probe = format!(".proem-clock-probe-{}", std::process::id());
    let mut create = cap_std::fs::OpenOptions::new();
    create.write(true).create_new(true);
    while started.elapsed() < SETTLED {
        let stamped = folder.open_with(&probe, &create).and_then(|f| f.into_std().metadata());
        let _ = folder.remove_file(&probe);
        match stamped {
            Ok(now) if (now.ctime(), now.ctime_nsec()) > newest => return true,
            Ok(_) => std::thread::sleep(Duration::from_millis(2)),
            Err(_) => return false,
        }
    }
    false
}

/// Whether both of a file's times are at least [`SETTLED`] before `now`
/// (a time in the future is not).
pub fn settled(meta: &std::fs::Metadata, now: SystemTime) -> bool {
    let time = |secs: i64, nanos: i64| {
        let secs = u64::try_from(secs).ok()?;
        let nanos = u32::try_from(nanos).ok()?;
        UNIX_EPOCH.checked_add(Duration::new(secs, nanos.min(999_999_999)))
    };
    [time(meta.mtime(), meta.mtime_nsec()), time(meta.ctime(), meta.ctime_nsec())]
        .into_iter()
        .all(|t| t.and_then(|t| now.duration_since(t).ok()).is_some_and(|age| age >= SETTLED))
}

/// The key of a file's digest: everything a write to it changes.
fn stat_key(answers: &Answers, meta: &std::fs::Metadata) -> u128 {
    answers.key(|h: &mut KeyHasher| {
        h.str("file digest").num(meta.dev()).num(meta.ino()).num(meta.size());
        h.num(meta.mtime() as u64).num(meta.mtime_nsec() as u64).num(meta.ctime() as u64).num(meta.ctime_nsec() as u64);
    })
}

fn is_digest(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// A file is settled exactly when both its times are SETTLED or
        /// more in the past: a fresh or future time is never trusted.
        #[test]
        fn a_file_is_settled_only_when_both_times_are_old_enough(back_ms in 0u64..5000, ahead_ms in 0u64..5000) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("p.wasm");
            std::fs::write(&path, b"x").unwrap();
            let meta = std::fs::metadata(&path).unwrap();
            let ctime = UNIX_EPOCH + Duration::new(meta.ctime() as u64, meta.ctime_nsec() as u32);
            let mtime = UNIX_EPOCH + Duration::new(meta.mtime() as u64, meta.mtime_nsec() as u32);
            let newest = ctime.max(mtime);
            let later = newest + Duration::from_millis(ahead_ms);
            prop_assert_eq!(settled(&meta, later), Duration::from_millis(ahead_ms) >= SETTLED);
            let earlier = newest.checked_sub(Duration::from_millis(back_ms + 1)).unwrap();
            prop_assert!(!settled(&meta, earlier));
        }
    }
}
