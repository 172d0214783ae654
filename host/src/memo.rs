//! Build memoisation: a build is a pure function of its turn, the sections
//! the caller contributes, the config and plugins (fixed for an
//! [`Assembler`](crate::Assembler)'s life) and the workspace files it reads.
//! The memo keeps recent results keyed by a hash of the first two and
//! re-checks the third before every use.
//!
//! Files are checked by `lstat`/`stat` (device, inode, size, change and
//! modification time to the nanosecond, file type) of every path a build may
//! read: the bootstrap file names, the tools file, the skills folder, each
//! skill folder and its SKILL.md, and, when a plugin may read the workspace
//! (`workspace-read`), every entry of the agent directory. Any difference
//! drops every memoised result. The stats are taken before the build reads
//! anything, so a file changed during a build is seen by the next check.
//! On a filesystem with whole-second timestamps a file changed within the
//! second of the check could keep its stat; such fresh files switch the memo
//! off until they are older than two seconds.

use rustix::fs::{statat, AtFlags, CWD};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};
use xxhash_rust::xxh3::Xxh3;

/// The most results kept (a runtime serving a few chats in turn hits them
/// all; each result holds a prompt, so this bounds memory).
pub const MAX_ENTRIES: usize = 8;

/// Most workspace entries watched for a plugin that may read the workspace;
/// a bigger tree is not memoised.
pub const MAX_WATCHED: usize = 4096;

/// What proem keeps between builds in one process. All on by default;
/// benchmarks turn them off to show what each is worth.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caching {
    /// Whole builds, reused while their inputs and files are unchanged.
    pub builds: bool,
    /// Plugin outputs, reused for an identical request (plugins are pure
    /// functions of their inputs in proem's sandbox).
    pub plugin_outputs: bool,
    /// Token counts per paragraph (also kept on disk across processes).
    pub token_counts: bool,
}

impl Default for Caching {
    fn default() -> Self {
        Caching { builds: true, plugin_outputs: true, token_counts: true }
    }
}

impl Caching {
    /// Everything off: every build reads, runs and counts everything.
    pub const NONE: Caching = Caching { builds: false, plugin_outputs: false, token_counts: false };
}

/// What a stat said about one path (`None`: it did not exist or could not be
/// stat'ed).
type Seen = Option<[u64; 8]>;

fn stat(path: &Path, follow: bool) -> Seen {
    let flags = if follow { AtFlags::empty() } else { AtFlags::SYMLINK_NOFOLLOW };
    let st = statat(CWD, path, flags).ok()?;
    Some([
        st.st_dev as u64,
        st.st_ino as u64,
        st.st_size as u64,
        st.st_mtime as u64,
        st.st_mtime_nsec as u64,
        st.st_ctime as u64,
        st.st_ctime_nsec as u64,
        st.st_mode as u64,
    ])
}

fn is_symlink(seen: &Seen) -> bool {
    const S_IFMT: u64 = 0o170000;
    const S_IFLNK: u64 = 0o120000;
    seen.is_some_and(|s| s[7] & S_IFMT == S_IFLNK)
}

/// The stats of every path a build depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// (absolute path, lstat, stat of the target when it is a symlink).
    seen: Vec<(PathBuf, Seen, Seen)>,
    /// Some file is too fresh to trust its timestamps.
    racy: bool,
}

impl Snapshot {
    /// Stats `paths` (relative to `root`) and, with `whole_tree`, every entry
    /// under `root` (`None` when the tree is over [`MAX_WATCHED`]).
    pub fn take(root: &Path, paths: &[String], whole_tree: bool) -> Option<Snapshot> {
        let mut all: Vec<PathBuf> = paths.iter().map(|p| root.join(p)).collect();
        if whole_tree {
            all.push(root.to_path_buf());
            walk(root, &mut all)?;
        }
        all.sort();
        all.dedup();
        let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
        let mut racy = false;
        let seen = all
            .into_iter()
            .map(|path| {
                let link = stat(&path, false);
                let target = if is_symlink(&link) { stat(&path, true) } else { None };
                for s in [&link, &target].into_iter().flatten() {
                    // Whole-second timestamps (no nanoseconds) on a file changed
                    // in the last two seconds: a second change could keep them.
                    let changed = Duration::from_secs(s[5]);
                    racy |= s[4] == 0 && s[6] == 0 && now.saturating_sub(changed) < Duration::from_secs(2);
                }
                (path, link, target)
            })
            .collect();
        Some(Snapshot { seen, racy })
    }

    /// Whether every path still stats the same.
    pub fn unchanged(&self) -> bool {
        self.seen.iter().all(|(path, link, target)| {
            let now = stat(path, false);
            now == *link && (!is_symlink(&now) || stat(path, true) == *target)
        })
    }

    /// Whether results may be memoised under this snapshot.
    pub fn trustworthy(&self) -> bool {
        !self.racy
    }
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Option<()> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Some(()) };
    for entry in entries.flatten() {
        if out.len() >= MAX_WATCHED {
            return None;
        }
        let path = entry.path();
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        out.push(path.clone());
        if is_dir {
            walk(&path, out)?;
        }
    }
    Some(())
}

/// A streaming 128-bit hash for memo keys.
#[derive(Default)]
pub struct KeyHasher(Xxh3);

impl KeyHasher {
    /// Adds a length-prefixed byte string.
    pub fn bytes(&mut self, b: &[u8]) -> &mut Self {
        self.0.update(&(b.len() as u64).to_le_bytes());
        self.0.update(b);
        self
    }

    /// Adds a string.
    pub fn str(&mut self, s: &str) -> &mut Self {
        self.bytes(s.as_bytes())
    }

    /// Adds an optional string (absent differs from empty).
    pub fn opt(&mut self, s: Option<&str>) -> &mut Self {
        match s {
            Some(s) => self.bytes(b"\x01").str(s),
            None => self.bytes(b"\x00"),
        }
    }

    /// Adds a number.
    pub fn num(&mut self, n: u64) -> &mut Self {
        self.0.update(&n.to_le_bytes());
        self
    }

    /// Adds a JSON value, structurally (object keys in the value's order).
    pub fn json(&mut self, v: &serde_json::Value) -> &mut Self {
        use serde_json::Value;
        match v {
            Value::Null => self.num(0),
            Value::Bool(b) => self.num(1 + *b as u64),
            Value::Number(n) => self.num(3).str(&n.to_string()),
            Value::String(s) => self.num(4).str(s),
            Value::Array(a) => {
                self.num(5).num(a.len() as u64);
                a.iter().for_each(|x| {
                    self.json(x);
                });
                self
            }
            Value::Object(o) => {
                self.num(6).num(o.len() as u64);
                for (k, x) in o {
                    self.str(k).json(x);
                }
                self
            }
        }
    }

    /// The key.
    pub fn finish(&self) -> u128 {
        self.0.digest128()
    }
}

/// Results of recent builds, valid while `snapshot` is.
#[derive(Debug)]
pub struct BuildMemo<T> {
    snapshot: Option<Snapshot>,
    /// Bumped whenever the snapshot is retaken (plugins' memos key on it).
    generation: u64,
    entries: Vec<(u128, T)>,
    hits: u64,
}

impl<T> Default for BuildMemo<T> {
    fn default() -> Self {
        BuildMemo { snapshot: None, generation: 0, entries: Vec::new(), hits: 0 }
    }
}

impl<T: Clone> BuildMemo<T> {
    /// Checks the files and returns the current generation, retaking the
    /// snapshot (and forgetting every result) when anything changed.
    /// `take` builds a new snapshot.
    pub fn refresh(&mut self, take: impl FnOnce() -> Option<Snapshot>) -> u64 {
        let valid = self.snapshot.as_ref().is_some_and(|s| s.trustworthy() && s.unchanged());
        if !valid {
            self.entries.clear();
            self.snapshot = take();
            self.generation += 1;
        }
        self.generation
    }

    /// Whether results can be kept under the current snapshot.
    pub fn usable(&self) -> bool {
        self.snapshot.as_ref().is_some_and(Snapshot::trustworthy)
    }

    /// The result for `key`, if any.
    pub fn get(&mut self, key: u128) -> Option<&T> {
        let found = self.entries.iter().find(|(k, _)| *k == key).map(|(_, v)| v);
        self.hits += found.is_some() as u64;
        found
    }

    /// How many results were reused.
    pub fn hits(&self) -> u64 {
        self.hits
    }

    /// Keeps `value` for `key` if the snapshot is still `generation`'s.
    pub fn put(&mut self, generation: u64, key: u128, value: T) {
        if generation != self.generation || !self.usable() {
            return;
        }
        if self.entries.len() >= MAX_ENTRIES {
            self.entries.remove(0);
        }
        self.entries.push((key, value));
    }
}
