//! Plugin answers kept on disk, so a warm process never starts wasmtime.
//!
//! A plugin is a pure function of what it can observe in proem's sandbox,
//! and the call key already names all of it. What is kept here:
//!
//! - what `describe` said about a binary (with its API version), keyed by
//!   the binary: a process that finds it neither parses, compiles nor
//!   instantiates the plugin at load;
//! - the answers of the hooks that see no clock (0.2 `stable` and
//!   `agent:bootstrap`), keyed by their call key. Hooks that see the turn's
//!   time (0.2 `turn`, every 0.1 hook) are not kept: their keys change every
//!   turn, so their entries would only fill the directory.
//!
//! Every key also holds the identity of the runtime that ran the plugin
//! (the executable that runs plugin code: its path, size, inode and times,
//! so a rebuilt or upgraded proem never reads another's answers; `proem`
//! reads what `proem-full` beside it kept, see [`crate::plugin::runtime`])
//! and, for a plugin granted `workspace-read`, a stamp of every
//! entry of the agent directory (see [`crate::memo::Snapshot::stamp`];
//! without one, because a file changed in the last two seconds, nothing is
//! kept for it). Only successful answers are kept, and a hit goes through
//! the same validation as a fresh answer.
//!
//! Entries are files `<key>.answer` under `answers/` in the component cache
//! directory ([`crate::plugin::cache::default_dir`]), each a magic line with
//! the xxh3 checksum of its JSON payload: a truncated or corrupt entry is a
//! miss, never trusted. Written whole (`cache::write_whole`).
//! The directory is kept under [`MAX_ENTRIES`]: when a write finds it over,
//! the older half is removed.

use crate::memo::KeyHasher;
use crate::plugin::call::Response;
use crate::plugin::hooks::PluginInfo;
use crate::plugin::sandbox::LogLine;
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use std::path::{Path, PathBuf};

const MAGIC: &str = "PROEMANSWER1";
/// The most entries kept; a write that finds more removes the older half.
pub const MAX_ENTRIES: usize = 1024;
/// The largest entry read back.
const MAX_ENTRY_BYTES: u64 = 16 * 1024 * 1024;

/// Whether [`Answers::put`] writes (the default). `proem serve` turns it
/// off for its whole process: what its clients ask must not grow the cache
/// folder; it still reads what `proem build` kept.
static WRITE_NEW_ANSWERS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// Turns writing new answers on or off, for the whole process.
pub fn write_new_answers(on: bool) {
    WRITE_NEW_ANSWERS.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// The answers directory of one cache directory.
#[derive(Debug, Clone)]
pub struct Answers {
    dir: PathBuf,
    host: u128,
}

/// What `describe` said, with the API version the binary was checked for.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Described {
    /// `major.minor.patch` from the binary's exports.
    pub api: String,
    /// The plugin's answer, as validated at the time.
    pub info: PluginInfo,
}

/// A hook's successful answer with what the plugin logged.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Answered {
    /// The answer.
    pub response: Response,
    /// (is an error, message) of each log line.
    pub logs: Vec<(bool, String)>,
}

impl Answered {
    /// The log lines as the build reports them.
    pub fn log_lines(&self) -> Vec<LogLine> {
        self.logs
            .iter()
            .map(|(error, message)| LogLine {
                level: if *error { tracing::Level::ERROR } else { tracing::Level::WARN },
                message: message.clone(),
            })
            .collect()
    }

    /// From a call's answer and logs.
    pub fn new(response: &Response, logs: &[LogLine]) -> Answered {
        Answered {
            response: response.clone(),
            logs: logs.iter().map(|l| (l.level == tracing::Level::ERROR, l.message.clone())).collect(),
        }
    }
}

impl Answers {
    /// The answers kept under `cache_dir` by the runtime whose identity is
    /// `host` (see [`crate::plugin::runtime::Runtime::identity`]; `None`:
    /// no cache directory, or a runtime that cannot be identified).
    pub fn open(cache_dir: Option<&Path>, host: Option<u128>) -> Option<Answers> {
        Some(Answers { dir: cache_dir?.join("answers"), host: host? })
    }

    /// The key of `parts` for this host: what [`Answers::get`] and
    /// [`Answers::put`] take.
    pub fn key(&self, parts: impl FnOnce(&mut KeyHasher)) -> u128 {
        let mut h = KeyHasher::default();
        h.num128(self.host);
        parts(&mut h);
        h.finish()
    }

    fn path(&self, key: u128) -> PathBuf {
        self.dir.join(format!("{key:032x}.answer"))
    }

    /// The entry kept under `key`, if it is whole and readable.
    pub fn get<T: DeserializeOwned>(&self, key: u128) -> Option<T> {
        let data = crate::workspace::read_regular_file(&self.path(key), MAX_ENTRY_BYTES).ok()?;
        let payload = decode(&data)?;
        match serde_json::from_slice(payload) {
            Ok(value) => Some(value),
            Err(e) => {
                tracing::warn!(key = %format!("{key:032x}"), "plugin answer entry unreadable ({e}); asking the plugin");
                None
            }
        }
    }

    /// Keeps `value` under `key` (a failure to write is logged, not fatal;
    /// nothing is written while [`write_new_answers`] is off).
    pub fn put<T: Serialize>(&self, key: u128, value: &T) {
        if !WRITE_NEW_ANSWERS.load(std::sync::atomic::Ordering::Relaxed) {
            return;
        }
        if let Err(e) = self.try_put(key, value) {
            tracing::warn!(dir = %self.dir.display(), "cannot keep a plugin answer: {e}");
        }
    }

    fn try_put<T: Serialize>(&self, key: u128, value: &T) -> std::io::Result<()> {
        let payload = serde_json::to_vec(value).map_err(std::io::Error::other)?;
        crate::plugin::cache::write_whole(&self.path(key), &encode(&payload), false)?;
        self.prune();
        Ok(())
    }

    /// Removes the older half of the entries when there are more than
    /// [`MAX_ENTRIES`].
    fn prune(&self) {
        let Ok(read) = std::fs::read_dir(&self.dir) else { return };
        let mut entries: Vec<(std::time::SystemTime, PathBuf)> = read
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".answer"))
            .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
            .collect();
        if entries.len() <= MAX_ENTRIES {
            return;
        }
        entries.sort();
        for (_, path) in &entries[..entries.len() / 2] {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// An entry's bytes: the magic, the payload's xxh3 in hex, a newline, the payload.
pub fn encode(payload: &[u8]) -> Vec<u8> {
    let mut out = format!("{MAGIC} {:016x}\n", xxhash_rust::xxh3::xxh3_64(payload)).into_bytes();
    out.extend_from_slice(payload);
    out
}

/// The payload of an entry whose checksum holds.
fn decode(data: &[u8]) -> Option<&[u8]> {
    let header_len = MAGIC.len() + 1 + 16 + 1;
    if data.len() < header_len || !data.starts_with(MAGIC.as_bytes()) || data[header_len - 1] != b'\n' {
        return None;
    }
    let sum = std::str::from_utf8(&data[MAGIC.len() + 1..header_len - 1]).ok()?;
    let payload = &data[header_len..];
    (u64::from_str_radix(sum, 16).ok()? == xxhash_rust::xxh3::xxh3_64(payload)).then_some(payload)
}

/// An executable, as its file system sees it (path, size, inode, times):
/// a rebuilt or reinstalled proem (or a program embedding it) has another
/// identity, so it never reads answers its code did not validate.
pub fn executable_identity(exe: &Path) -> Option<u128> {
    let stat = crate::memo::stat(rustix::fs::CWD, exe, true)?;
    let mut h = KeyHasher::default();
    h.str(env!("CARGO_PKG_VERSION")).str(&exe.to_string_lossy());
    stat.iter().for_each(|n| {
        h.num(*n);
    });
    Some(h.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn an_entry_round_trips_and_a_damaged_one_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let answers = Answers::open(Some(dir.path()), Some(1)).unwrap();
        let value = Answered { response: Response::Bootstrap(Vec::new()), logs: vec![(true, "x".into())] };
        let key = answers.key(|h| {
            h.str("k");
        });
        answers.put(key, &value);
        let back: Answered = answers.get(key).unwrap();
        assert_eq!(back.logs, value.logs);
        let path = answers.path(key);
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        assert!(answers.get::<Answered>(key).is_none(), "a flipped bit is a miss");
        std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
        assert!(answers.get::<Answered>(key).is_none(), "a truncated entry is a miss");
        assert!(answers.get::<Answered>(key ^ 1).is_none(), "another key is a miss");
    }

    #[test]
    fn the_directory_stays_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let answers = Answers::open(Some(dir.path()), Some(1)).unwrap();
        for i in 0..(MAX_ENTRIES as u128 + 10) {
            answers.put(i, &i.to_string());
        }
        let count = std::fs::read_dir(dir.path().join("answers")).unwrap().count();
        assert!(count <= MAX_ENTRIES, "{count} entries");
        assert!(count >= MAX_ENTRIES / 2, "{count} entries");
    }

    proptest! {
        #[test]
        fn decode_never_accepts_what_encode_did_not_write(data in proptest::collection::vec(any::<u8>(), 0..200)) {
            // Random bytes are never an entry; an entry's payload is exactly what was encoded.
            prop_assert!(decode(&data).is_none() || data.starts_with(MAGIC.as_bytes()));
            let encoded = encode(&data);
            prop_assert_eq!(decode(&encoded), Some(&data[..]));
        }
    }
}
