//! Plugin answers kept on disk, so a warm process never starts wasmtime.
//!
//! A plugin is a pure function of what it can observe in proem's sandbox,
//! and the call key already names all of it. What is kept here:
//!
//! - what `describe` said about a binary (with its API version), keyed by
//!   the binary: a process that finds it neither parses, compiles nor
//!   instantiates the plugin at load;
//! - every hook's successful answer, keyed by its call key (everything the
//!   plugin can observe: a turn hook's key holds the turn's time, channel
//!   and chat). A hook that sees no clock (0.2 `stable` and
//!   `agent:bootstrap`) is found again on every turn; one that sees the
//!   turn (0.2 `turn`, every 0.1 hook) when the same turn is built again,
//!   in any process: so whatever hooks a plugin declares, a build it has
//!   answered before loads no plugin code (an interpreted plugin's
//!   instantiation costs milliseconds, see docs/plugins/README.md). New
//!   turns add entries; the bounds below evict the oldest.
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
//! Entries are files `<key>.answer` in the `answers/` folder of the cache
//! folder ([`crate::cache_dir`]), each a magic line with the HMAC-SHA256 of
//! its key and JSON payload under the folder's secret: a truncated,
//! corrupt or forged entry, or one copied from another key or another
//! user's folder, is a miss, never trusted. Written whole
//! ([`CacheDir::write`]). The folder is bounded: an entry larger than
//! [`MAX_ENTRY_BYTES`] (what is read back) is never written, and a write
//! that finds more than [`MAX_ENTRIES`] entries or [`MAX_TOTAL_BYTES`]
//! bytes removes the oldest until both are halved.

use crate::cache_dir::CacheDir;
use crate::memo::KeyHasher;
use crate::plugin::call::Response;
use crate::plugin::hooks::PluginInfo;
use crate::plugin::sandbox::LogLine;
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use std::path::Path;
use std::sync::Arc;

const MAGIC: &str = "PROEMANSWER2";
/// What each entry's MAC starts with: the kind of entry.
const KIND: &[u8] = b"proem plugin answer";
/// The most entries kept; a write that finds more removes the older half.
pub const MAX_ENTRIES: usize = 1024;
/// The largest entry read back; a larger one is never written.
pub const MAX_ENTRY_BYTES: u64 = 16 * 1024 * 1024;
/// The most bytes of entries kept; a write that finds more removes the
/// oldest entries until half is left.
pub const MAX_TOTAL_BYTES: u64 = 64 * 1024 * 1024;

/// Whether [`Answers::put`] writes (the default). `proem serve` turns it
/// off for its whole process: what its clients ask must not grow the cache
/// folder; it still reads what `proem build` kept.
static WRITE_NEW_ANSWERS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// Turns writing new answers on or off, for the whole process.
pub fn write_new_answers(on: bool) {
    WRITE_NEW_ANSWERS.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// The answers folder of one cache folder.
#[derive(Debug, Clone)]
pub struct Answers {
    dir: Arc<CacheDir>,
    host: u128,
}

/// What `describe` said, with the API version the binary was checked for.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Described {
    /// `major.minor.patch` from the binary's exports.
    pub api: String,
    /// The plugin's answer, as validated at the time.
    pub info: PluginInfo,
    /// The config schema the binary declares (checked when it was read),
    /// see [`crate::plugin::config_schema`].
    #[serde(default)]
    pub config_schema: Option<String>,
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
    pub fn open(cache_dir: Option<&CacheDir>, host: Option<u128>) -> Option<Answers> {
        let host = host?;
        match cache_dir?.subfolder("answers") {
            Ok(dir) => Some(Answers { dir: Arc::new(dir), host }),
            Err(why) => {
                tracing::warn!("{why}; plugin answers are not kept");
                None
            }
        }
    }

    /// The key of `parts` for this host: what [`Answers::get`] and
    /// [`Answers::put`] take.
    pub fn key(&self, parts: impl FnOnce(&mut KeyHasher)) -> u128 {
        let mut h = KeyHasher::default();
        h.num128(self.host);
        parts(&mut h);
        h.finish()
    }

    fn name(key: u128) -> String {
        format!("{key:032x}.answer")
    }

    /// The entry kept under `key`, if it is whole, made with this folder's
    /// secret for this key, and readable.
    pub fn get<T: DeserializeOwned>(&self, key: u128) -> Option<T> {
        let data = self.dir.read(&Answers::name(key), MAX_ENTRY_BYTES).ok()?;
        let Some(payload) = self.decode(key, &data) else {
            tracing::warn!(key = %format!("{key:032x}"), "plugin answer entry damaged or not made for this key; asking the plugin");
            return None;
        };
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
            tracing::warn!(dir = %self.dir.path().display(), "cannot keep a plugin answer: {e}");
        }
    }

    fn try_put<T: Serialize>(&self, key: u128, value: &T) -> std::io::Result<()> {
        let payload = serde_json::to_vec(value).map_err(std::io::Error::other)?;
        let entry = self.encode(key, &payload);
        if entry.len() as u64 > MAX_ENTRY_BYTES {
            tracing::debug!(bytes = entry.len(), "plugin answer not kept: larger than an entry read back");
            return Ok(());
        }
        let name = Answers::name(key);
        self.dir.write(&name, &entry, false)?;
        self.prune(&name);
        Ok(())
    }

    /// Removes the oldest entries, when there are more than [`MAX_ENTRIES`]
    /// or more than [`MAX_TOTAL_BYTES`], until both are halved; never
    /// `written`, the entry just written. (The oldest by modification
    /// time: entries written within one tick of the kernel's coarse clock
    /// share it, and ties go by name, so without that rule the entry just
    /// written could be the first to go.)
    fn prune(&self, written: &str) {
        let mut entries = self.dir.entries(".answer");
        let mut count = entries.len();
        let mut total: u64 = entries.iter().map(|e| e.bytes).fold(0, u64::saturating_add);
        if count <= MAX_ENTRIES && total <= MAX_TOTAL_BYTES {
            return;
        }
        entries.sort();
        for entry in entries.iter().filter(|e| e.name != written) {
            if count <= MAX_ENTRIES / 2 && total <= MAX_TOTAL_BYTES / 2 {
                break;
            }
            self.dir.remove(&entry.name);
            count -= 1;
            total = total.saturating_sub(entry.bytes);
        }
    }

    /// An entry's bytes: the magic, the hex HMAC of its key and payload
    /// under the folder's secret, a newline, the payload. Public so tests
    /// can make entries as a process of this user would.
    pub fn encode(&self, key: u128, payload: &[u8]) -> Vec<u8> {
        let mac = self.dir.mac(&[KIND, &key.to_le_bytes(), payload]);
        let mut out = format!("{MAGIC} {}\n", crate::digest::hex(&mac)).into_bytes();
        out.extend_from_slice(payload);
        out
    }

    /// The payload of an entry whose MAC holds for `key`.
    fn decode<'d>(&self, key: u128, data: &'d [u8]) -> Option<&'d [u8]> {
        let header_len = MAGIC.len() + 1 + 64 + 1;
        if data.len() < header_len || !data.starts_with(MAGIC.as_bytes()) || data[header_len - 1] != b'\n' {
            return None;
        }
        let mac = unhex(&data[MAGIC.len() + 1..header_len - 1])?;
        let payload = &data[header_len..];
        self.dir.verify(&[KIND, &key.to_le_bytes(), payload], &mac).then_some(payload)
    }
}

/// Bytes from lowercase or uppercase hex.
fn unhex(hex: &[u8]) -> Option<Vec<u8>> {
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    hex.chunks(2).map(|pair| Some(digit(*pair.first()?)? << 4 | digit(*pair.get(1)?)?)).collect()
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

    fn answers(dir: &Path) -> Answers {
        Answers::open(Some(&CacheDir::open(dir).unwrap()), Some(1)).unwrap()
    }

    #[test]
    fn an_entry_round_trips_and_a_damaged_one_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let answers = answers(dir.path());
        let value = Answered { response: Response::Bootstrap(Vec::new()), logs: vec![(true, "x".into())] };
        let key = answers.key(|h| {
            h.str("k");
        });
        answers.put(key, &value);
        let back: Answered = answers.get(key).unwrap();
        assert_eq!(back.logs, value.logs);
        let path = dir.path().join("answers").join(Answers::name(key));
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
    fn the_directory_stays_bounded_by_count() {
        let dir = tempfile::tempdir().unwrap();
        let answers = answers(dir.path());
        for i in 0..(MAX_ENTRIES as u128 + 10) {
            answers.put(i, &i.to_string());
        }
        let count = std::fs::read_dir(dir.path().join("answers")).unwrap().count();
        assert!(count <= MAX_ENTRIES, "{count} entries");
        assert!(count >= MAX_ENTRIES / 2, "{count} entries");
    }

    #[test]
    fn the_directory_stays_bounded_by_bytes_and_never_keeps_what_is_not_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let answers = answers(dir.path());
        let folder = dir.path().join("answers");
        let total =
            || -> u64 { std::fs::read_dir(&folder).unwrap().map(|e| e.unwrap().metadata().unwrap().len()).sum() };
        // Just over what an entry may be once encoded: never written.
        let too_big = "x".repeat(MAX_ENTRY_BYTES as usize);
        answers.put(7, &too_big);
        assert_eq!(std::fs::read_dir(&folder).unwrap().count(), 0, "an entry never read back is never written");
        // Entries of 3 MiB: the folder never holds much more than the bound.
        let big = "y".repeat(3 << 20);
        for i in 0..40u128 {
            answers.put(i, &big);
            assert!(total() <= MAX_TOTAL_BYTES + (4 << 20), "{} bytes after {i} writes", total());
        }
        assert!(answers.get::<String>(39).is_some(), "the newest entry is kept");
        assert!(answers.get::<String>(0).is_none(), "the oldest were evicted");
    }

    proptest! {
        #[test]
        fn decode_accepts_exactly_what_encode_wrote_for_that_key(
            data in proptest::collection::vec(any::<u8>(), 0..200),
            key in any::<u128>(),
            other in any::<u128>(),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let answers = answers(dir.path());
            // Random bytes are never an entry; an entry's payload is exactly
            // what was encoded, for its own key only.
            prop_assert!(answers.decode(key, &data).is_none());
            let encoded = answers.encode(key, &data);
            prop_assert_eq!(answers.decode(key, &encoded), Some(&data[..]));
            prop_assert!(other == key || answers.decode(other, &encoded).is_none());
        }
    }
}
