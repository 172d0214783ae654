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
//!
//! On Linux, when the agent directory is on a local filesystem, the same
//! paths (and every directory above them up to the agent directory) are also
//! watched with inotify (one instance for the whole process, each snapshot
//! with its own watch set in it), and a check is one non-blocking read:
//! any event that changes a file, a directory's entries or their attributes
//! (never proem's own reads) counts as a change. The watches are added
//! before the stats, so nothing between them is missed; a file watch is on
//! the file itself, so a change through a hard link elsewhere is seen too.
//! Remote filesystems (where another machine's writes raise no event),
//! mount points inside the agent directory and a system out of inotify
//! instances or watches fall back to the stats. Not seen by either: writes
//! through a shared memory map before the writer syncs or closes the file.

use crate::sync::Lock;
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{openat, statat, AtFlags, Mode, OFlags};
use std::path::{Path, PathBuf};
use std::sync::Arc;
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
    /// Off, a build still encodes each paragraph once (its counts live for
    /// that build alone), and plugins' `count-tokens` encode every call.
    pub token_counts: bool,
    /// Whether the memos' file check may use the system's change
    /// notifications (inotify) instead of a stat per file.
    pub file_events: bool,
    /// The cleaned, sorted tool list, reused while the turn's tools are the
    /// same (most turns of a conversation repeat them).
    pub prepared_tools: bool,
    /// What the workspace gave the last build (bootstrap files, skills, the
    /// `[tools] file`), reused while the file check shows no change: a turn
    /// with a new clock reads nothing from disk. Needs `builds` (whose file
    /// check it shares). Also what the last render made of the files (capped
    /// and neutralised), of the skills and of the stable core sections,
    /// reused for the same inputs (`core_sections::RenderMemos`).
    pub workspace_reads: bool,
}

impl Default for Caching {
    fn default() -> Self {
        Caching {
            builds: true,
            plugin_outputs: true,
            token_counts: true,
            file_events: true,
            prepared_tools: true,
            workspace_reads: true,
        }
    }
}

impl Caching {
    /// Everything off: every build reads, runs and counts everything.
    pub const NONE: Caching = Caching {
        builds: false,
        plugin_outputs: false,
        token_counts: false,
        file_events: false,
        prepared_tools: false,
        workspace_reads: false,
    };

    /// For an assembler that builds once and is gone (a `proem build`
    /// process): nothing is kept in memory for a next build that never
    /// comes (no copies for the memos to keep, no keys to hash for them);
    /// on are only the caches with a half on disk, which serve the next
    /// process: token counts and plugin outputs. Builds the same bytes as
    /// [`Caching::default`] (every memo returns what would be computed).
    pub const ONE_BUILD: Caching = Caching { token_counts: true, plugin_outputs: true, ..Caching::NONE };
}

/// What a stat said about one path (`None`: it did not exist or could not be
/// stat'ed).
type Seen = Option<[u64; 8]>;

/// What `lstat` (or, with `follow`, `stat`) says about `path` relative to
/// `dir`: device, inode, size, modification and change times to the
/// nanosecond, mode.
pub(crate) fn stat(dir: BorrowedFd<'_>, path: &Path, follow: bool) -> Seen {
    let flags = if follow { AtFlags::empty() } else { AtFlags::SYMLINK_NOFOLLOW };
    let st = statat(dir, path, flags).ok()?;
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
#[derive(Debug)]
pub struct Snapshot {
    /// The agent directory the paths are relative to: the directory the
    /// build reads through (stats relative to it skip walking the absolute
    /// path's components on every check).
    dir: OwnedFd,
    /// (relative path, lstat, stat of the target when it is a symlink).
    seen: Vec<(PathBuf, Seen, Seen)>,
    /// The watch set on those paths in the process's inotify instance,
    /// when one could be set up.
    events: Option<events::Watch>,
    /// Some file is too fresh to trust its timestamps.
    racy: bool,
    /// See [`Snapshot::stamp`].
    stamp: Option<u128>,
}

impl Snapshot {
    /// Stats `paths` (relative to `root`, the agent directory, opened as
    /// `dir`) and, with `whole_tree`, every entry under `root` (`None` when
    /// the tree is over [`MAX_WATCHED`] or `dir` cannot be reopened). With
    /// `file_events`, also watches them (see the module's documentation).
    pub fn take(
        root: &Path,
        dir: BorrowedFd<'_>,
        paths: &[String],
        whole_tree: bool,
        file_events: bool,
    ) -> Option<Snapshot> {
        let dir = openat(dir, ".", OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).ok()?;
        let mut all: Vec<PathBuf> = paths.iter().map(PathBuf::from).collect();
        if whole_tree {
            let mut found = vec![root.to_path_buf()];
            walk(root, &mut found)?;
            all.extend(found.iter().map(|p| match p.strip_prefix(root) {
                Ok(rel) if rel.as_os_str().is_empty() => PathBuf::from("."),
                Ok(rel) => rel.to_path_buf(),
                Err(_) => p.clone(),
            }));
        }
        all.sort();
        all.dedup();
        // Watches first: a change after this point is an event.
        let events = if file_events { events::watch(root, dir.as_fd(), &all) } else { None };
        let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
        let mut racy = false;
        let mut fresh = false;
        let seen: Vec<(PathBuf, Seen, Seen)> = all
            .into_iter()
            .map(|path| {
                let link = stat(dir.as_fd(), &path, false);
                let target = if is_symlink(&link) { stat(dir.as_fd(), &path, true) } else { None };
                for s in [&link, &target].into_iter().flatten() {
                    // Whole-second timestamps (no nanoseconds) on a file changed
                    // in the last two seconds: a second change could keep them.
                    let changed = Duration::from_secs(s[5]);
                    let recent = now.saturating_sub(changed) < Duration::from_secs(2);
                    racy |= s[4] == 0 && s[6] == 0 && recent;
                    fresh |= recent;
                }
                (path, link, target)
            })
            .collect();
        // A path on another device (a mount point inside the agent
        // directory, a symlink to another filesystem) may be remote.
        let root_dev = stat(dir.as_fd(), Path::new("."), true).map(|s| s[0]);
        let one_device = seen.iter().flat_map(|(_, l, t)| [l, t]).flatten().all(|s| Some(s[0]) == root_dev);
        let events = events.filter(|_| one_device);
        let stamp = (!fresh).then(|| {
            let mut h = KeyHasher::default();
            for (path, link, target) in &seen {
                h.bytes(path.as_os_str().as_encoded_bytes());
                for s in [link, target] {
                    match s {
                        Some(s) => s.iter().fold(h.num(1), |h, n| h.num(*n)),
                        None => h.num(0),
                    };
                }
            }
            h.finish()
        });
        Some(Snapshot { dir, seen, racy, events, stamp })
    }

    /// Whether every path is unchanged: no event on the watch or, without
    /// one, every path stats the same.
    pub fn unchanged(&self) -> bool {
        if let Some(events) = &self.events {
            return events.unchanged();
        }
        let dir = self.dir.as_fd();
        self.seen.iter().all(|(path, link, target)| {
            let now = stat(dir, path, false);
            now == *link && (!is_symlink(&now) || stat(dir, path, true) == *target)
        })
    }

    /// Whether the check is by file events (for reports and tests).
    pub fn watched(&self) -> bool {
        self.events.is_some()
    }

    /// A hash of every stat the snapshot took, the same in any process that
    /// sees the same files: what answers kept on disk are keyed by
    /// ([`crate::plugin::answers`]). `None` when some entry changed in the
    /// last two seconds: two writes within one timestamp tick could leave
    /// equal stats, so a stamp is only trusted once every entry is older.
    pub fn stamp(&self) -> Option<u128> {
        self.stamp
    }

    /// Whether results may be memoised under this snapshot.
    pub fn trustworthy(&self) -> bool {
        self.events.is_some() || !self.racy
    }
}

/// File change notification with inotify: one instance per process,
/// shared by every snapshot of every assembler, each with its own watch set.
/// A system allows few instances per user (`fs.inotify.max_user_instances`,
/// 128 by default), and `proem serve --agents` may hold hundreds of
/// assemblers; watches are plentiful, and one on an inode two snapshots
/// watch is one watch, held for both.
#[cfg(any(target_os = "linux", target_os = "android"))]
mod events {
    use crate::sync::Lock;
    use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
    use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
    use std::collections::BTreeMap;
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, OnceLock};

    /// `statfs` magic numbers of local filesystems, where every change goes
    /// through this kernel and raises its event: ext2/3/4, XFS, Btrfs, tmpfs,
    /// ramfs, overlayfs, F2FS, ZFS, bcachefs.
    const LOCAL: [u32; 9] = [
        0xEF53,
        0x5846_5342,
        0x9123_683E,
        0x0102_1994,
        0x8584_58F6,
        0x794C_7630,
        0xF2F5_2010,
        0x2FC1_2FC1,
        0xCA45_1A4E,
    ];

    /// Everything that changes what a build reads: contents, attributes,
    /// entries created, deleted or renamed, the watched path itself moved or
    /// deleted. Not opens, reads or closes without writing.
    fn mask() -> WatchFlags {
        WatchFlags::MODIFY
            | WatchFlags::ATTRIB
            | WatchFlags::CLOSE_WRITE
            | WatchFlags::CREATE
            | WatchFlags::DELETE
            | WatchFlags::DELETE_SELF
            | WatchFlags::MOVE_SELF
            | WatchFlags::MOVED_FROM
            | WatchFlags::MOVED_TO
    }

    /// Who holds which of the process's inotify watches.
    struct Shared {
        /// Each watch descriptor and the watch sets holding it.
        holders: BTreeMap<i32, Vec<u64>>,
        /// Each live watch set: whether an event touched one of its watches
        /// (the very flag its [`Watch`] reads).
        changed: BTreeMap<u64, Arc<AtomicBool>>,
        /// The id of the next watch set.
        next_id: u64,
    }

    static SHARED: Lock<Shared> = Lock::new(Shared { holders: BTreeMap::new(), changed: BTreeMap::new(), next_id: 0 });

    /// The process's inotify instance, opened (under [`SHARED`]) on first
    /// use, retried while it cannot be, never closed.
    static FD: OnceLock<OwnedFd> = OnceLock::new();

    /// Set (under [`SHARED`]) from before a drain reads events until every
    /// set they touch is marked: while it is set, an empty queue does not
    /// mean the flags are up to date (see [`Watch::unchanged`]).
    static DRAINING: AtomicBool = AtomicBool::new(false);

    impl Shared {
        /// Reads every pending event and marks the watch sets it touches
        /// (all of them when the queue overflowed or the read failed). A
        /// watch the kernel dropped (its file deleted) is forgotten.
        fn drain(&mut self) {
            let Some(fd) = FD.get() else { return };
            DRAINING.store(true, Ordering::SeqCst);
            self.mark_pending(fd);
            DRAINING.store(false, Ordering::SeqCst);
        }

        fn mark_pending(&mut self, fd: &OwnedFd) {
            let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); 4096];
            let mut reader = inotify::Reader::new(fd.as_fd(), &mut buf);
            let mut touched: Vec<(i32, bool)> = Vec::new();
            let mut all = false;
            loop {
                match reader.next() {
                    Ok(event) if event.events().contains(ReadFlags::QUEUE_OVERFLOW) => all = true,
                    Ok(event) => touched.push((event.wd(), event.events().contains(ReadFlags::IGNORED))),
                    Err(rustix::io::Errno::AGAIN) => break,
                    Err(_) => {
                        all = true;
                        break;
                    }
                }
            }
            if all {
                self.changed.values().for_each(|c| c.store(true, Ordering::SeqCst));
            }
            for (wd, dropped) in touched {
                for id in self.holders.get(&wd).into_iter().flatten() {
                    if let Some(flag) = self.changed.get(id) {
                        flag.store(true, Ordering::SeqCst);
                    }
                }
                if dropped {
                    self.holders.remove(&wd);
                }
            }
        }

        /// Lets go of `id`'s hold on `wds`; a watch no set holds is removed.
        fn release(&mut self, id: u64, wds: &[i32]) {
            for wd in wds {
                let Some(ids) = self.holders.get_mut(wd) else { continue };
                ids.retain(|held| *held != id);
                if ids.is_empty() {
                    self.holders.remove(wd);
                    if let Some(fd) = FD.get() {
                        let _ = inotify::remove_watch(fd, *wd);
                    }
                }
            }
        }
    }

    /// One snapshot's watch set in the shared instance; dropping it lets go
    /// of its watches.
    #[derive(Debug)]
    pub struct Watch {
        id: u64,
        wds: Vec<i32>,
        /// Set once an event touched one of `wds`.
        changed: Arc<AtomicBool>,
    }

    impl Watch {
        /// Whether no event has touched this set's watches since it was made.
        ///
        /// Takes no lock when no event is queued (one `FIONREAD`): the
        /// memo hits of `proem serve`'s threads, each asking this, do not
        /// wait on each other (a thread preempted holding a lock here held
        /// the others up for a scheduler tick: docs/PERFORMANCE.md). The
        /// flag is then up to date: an event queued before this call was
        /// either still queued (then it drains here, under the lock) or read
        /// by a drain that set [`DRAINING`] before reading it, and that drain
        /// either still runs (then this waits for it, under the lock) or
        /// marked the flags before clearing [`DRAINING`].
        pub fn unchanged(&self) -> bool {
            if self.changed.load(Ordering::SeqCst) {
                return false;
            }
            let quiet = FD.get().is_some_and(|fd| rustix::io::ioctl_fionread(fd).is_ok_and(|queued| queued == 0));
            if quiet && !DRAINING.load(Ordering::SeqCst) {
                return !self.changed.load(Ordering::SeqCst);
            }
            SHARED.lock().drain();
            !self.changed.load(Ordering::SeqCst)
        }
    }

    impl Drop for Watch {
        fn drop(&mut self) {
            let mut shared = SHARED.lock();
            shared.changed.remove(&self.id);
            shared.release(self.id, &self.wds);
        }
    }

    /// A watch set on `paths` (relative to `root`, opened as `dir`) and
    /// every directory above them up to `root`; `None` when the filesystem
    /// is not local or the system refuses the instance or a watch. Paths
    /// that do not exist are skipped: their creation is an event in a
    /// directory above them.
    pub fn watch(root: &Path, dir: BorrowedFd<'_>, paths: &[PathBuf]) -> Option<Watch> {
        if !local(dir) {
            return None;
        }
        let mut all: Vec<PathBuf> = vec![PathBuf::from(".")];
        for path in paths {
            all.extend(path.ancestors().filter(|a| !a.as_os_str().is_empty()).map(Path::to_path_buf));
        }
        all.sort();
        all.dedup();
        let mut shared = SHARED.lock();
        if FD.get().is_none() {
            if let Ok(fd) = inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC) {
                let _ = FD.set(fd);
            }
        }
        // Events that happened before this set existed are not its own.
        shared.drain();
        let id = shared.next_id;
        shared.next_id += 1;
        let fd = FD.get()?.as_fd();
        let mut wds: Vec<i32> = Vec::new();
        let mut refused = false;
        for path in &all {
            match inotify::add_watch(fd, root.join(path), mask()) {
                Ok(wd) => wds.push(wd),
                Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR | rustix::io::Errno::LOOP) => {}
                Err(_) => {
                    refused = true;
                    break;
                }
            }
        }
        // Two paths to one inode (a hard link) are one watch.
        wds.sort_unstable();
        wds.dedup();
        for wd in &wds {
            shared.holders.entry(*wd).or_default().push(id);
        }
        if refused {
            shared.release(id, &wds);
            return None;
        }
        let changed = Arc::new(AtomicBool::new(false));
        shared.changed.insert(id, changed.clone());
        Some(Watch { id, wds, changed })
    }

    /// Whether `dir` is on a filesystem whose changes all raise events here.
    pub fn local(dir: BorrowedFd<'_>) -> bool {
        rustix::fs::fstatfs(dir).is_ok_and(|fs| LOCAL.contains(&(fs.f_type as u32)))
    }

    /// The process's inotify instances (one once a watch was made, else
    /// none) and the watches in it: for tests and reports.
    pub fn usage() -> (usize, usize) {
        let shared = SHARED.lock();
        (usize::from(FD.get().is_some()), shared.holders.len())
    }
}

/// No change notification here: every check stats.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
mod events {
    use rustix::fd::BorrowedFd;
    use std::path::{Path, PathBuf};

    /// Never made here.
    #[derive(Debug)]
    pub struct Watch;

    impl Watch {
        pub fn unchanged(&self) -> bool {
            false
        }
    }

    pub fn watch(_: &Path, _: BorrowedFd<'_>, _: &[PathBuf]) -> Option<Watch> {
        None
    }

    pub fn local(_: BorrowedFd<'_>) -> bool {
        false
    }

    pub fn usage() -> (usize, usize) {
        (0, 0)
    }
}

/// The inotify instances this process holds for the memos' file checks
/// (at most one, shared by every assembler) and the watches in it.
pub fn file_event_usage() -> (usize, usize) {
    events::usage()
}

/// Whether the memos can watch `dir` with change notifications (a local
/// filesystem on Linux); elsewhere they stat every path.
pub fn file_events_available(dir: &Path) -> bool {
    let Ok(fd) = openat(rustix::fs::CWD, dir, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()) else {
        return false;
    };
    events::local(fd.as_fd())
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

/// A streaming 128-bit hash for memo keys. Keys are made of many small
/// pieces (names, numbers, length prefixes): they are gathered in a buffer
/// and handed to xxh3 a buffer at a time, since each call into its
/// streaming state costs more than hashing a short piece.
pub struct KeyHasher {
    state: Xxh3,
    buf: [u8; KEY_BUFFER],
    len: usize,
}

/// Bytes a [`KeyHasher`] gathers before hashing them.
const KEY_BUFFER: usize = 1024;

impl Default for KeyHasher {
    fn default() -> Self {
        KeyHasher { state: Xxh3::default(), buf: [0; KEY_BUFFER], len: 0 }
    }
}

impl KeyHasher {
    /// Adds raw bytes (the same hash however they are split across calls).
    fn write(&mut self, b: &[u8]) {
        if self.len + b.len() > KEY_BUFFER {
            self.state.update(&self.buf[..self.len]);
            self.len = 0;
        }
        if b.len() >= KEY_BUFFER {
            self.state.update(b);
        } else {
            self.buf[self.len..self.len + b.len()].copy_from_slice(b);
            self.len += b.len();
        }
    }

    /// [`KeyHasher::write`] of a fixed-size piece (a number, a length):
    /// the same bytes, copied without a call to `memcpy`.
    #[inline(always)]
    fn write_fixed<const N: usize>(&mut self, b: [u8; N]) {
        if self.len + N > KEY_BUFFER {
            self.state.update(&self.buf[..self.len]);
            self.len = 0;
        }
        self.buf[self.len..self.len + N].copy_from_slice(&b);
        self.len += N;
    }

    /// Adds a length-prefixed byte string.
    pub fn bytes(&mut self, b: &[u8]) -> &mut Self {
        self.write_fixed((b.len() as u64).to_le_bytes());
        self.write(b);
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
        self.write_fixed(n.to_le_bytes());
        self
    }

    /// Adds a 128-bit number (another key, say): the same bytes as its low
    /// and then its high half through [`KeyHasher::num`].
    pub fn num128(&mut self, n: u128) -> &mut Self {
        self.write_fixed(n.to_le_bytes());
        self
    }

    /// Adds a JSON value, structurally (object keys in the value's order).
    pub fn json(&mut self, v: &serde_json::Value) -> &mut Self {
        use serde_json::Value;
        match v {
            Value::Null => self.num(0),
            Value::Bool(b) => self.num(1 + *b as u64),
            Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
                (Some(u), _, _) => self.num(3).num(u),
                (_, Some(i), _) => self.num(7).num(i as u64),
                (_, _, Some(f)) => self.num(8).num(f.to_bits()),
                _ => self.num(9).str(&n.to_string()),
            },
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
        let mut state = self.state.clone();
        state.update(&self.buf[..self.len]);
        state.digest128()
    }
}

/// A one-entry memo: the last value computed, by the key of its input, for
/// inputs that rarely change from one build to the next.
#[derive(Debug)]
pub struct LastValue<T>(crate::sync::Lock<Option<(u128, T)>>);

impl<T> Default for LastValue<T> {
    fn default() -> Self {
        LastValue(crate::sync::Lock::new(None))
    }
}

impl<T: Clone> LastValue<T> {
    /// The value for `key`: the kept one when the key matches, else
    /// `compute`'s, which is kept instead.
    pub fn get_or_compute(&self, key: u128, compute: impl FnOnce() -> T) -> T {
        let mut last = self.0.lock();
        match &*last {
            Some((k, value)) if *k == key => value.clone(),
            _ => {
                let value = compute();
                *last = Some((key, value.clone()));
                value
            }
        }
    }
}

/// A one-entry memo keyed by the very shared inputs its value was made
/// from: `Arc`s compared by address, and held here, so that no other value
/// can take an address while it is kept. For values made from lists other
/// memos hand out shared (the same list, the same value).
#[derive(Debug)]
pub struct LastOfShared<K, T>(crate::sync::Lock<Option<(K, T)>>);

impl<K, T> Default for LastOfShared<K, T> {
    fn default() -> Self {
        LastOfShared(crate::sync::Lock::new(None))
    }
}

/// Inputs a [`LastOfShared`] is keyed by: the same when every `Arc` is.
pub trait SharedInputs: Clone {
    /// Whether `self` and `other` are the very same values.
    fn same(&self, other: &Self) -> bool;
}

impl<A> SharedInputs for std::sync::Arc<A> {
    fn same(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(self, other)
    }
}

/// A key computed from the inputs' content: the same when equal.
impl SharedInputs for u128 {
    fn same(&self, other: &Self) -> bool {
        self == other
    }
}

impl<A: SharedInputs, B: SharedInputs> SharedInputs for (A, B) {
    fn same(&self, other: &Self) -> bool {
        self.0.same(&other.0) && self.1.same(&other.1)
    }
}

impl<A: SharedInputs, B: SharedInputs, C: SharedInputs> SharedInputs for (A, B, C) {
    fn same(&self, other: &Self) -> bool {
        self.0.same(&other.0) && self.1.same(&other.1) && self.2.same(&other.2)
    }
}

impl<K: SharedInputs, T: Clone> LastOfShared<K, T> {
    /// The value made from `inputs`: the kept one when they are the very
    /// same, else `compute`'s, which is kept instead.
    pub fn get_or_compute(&self, inputs: &K, compute: impl FnOnce() -> T) -> T {
        let mut last = self.0.lock();
        match &*last {
            Some((kept, value)) if kept.same(inputs) => value.clone(),
            _ => {
                let value = compute();
                *last = Some((inputs.clone(), value.clone()));
                value
            }
        }
    }

    /// [`LastOfShared::get_or_compute`] when `on` (its cache switch), else
    /// `compute`'s value alone: nothing kept, and the inputs, which may
    /// cost a hash, not made.
    pub fn get_or_compute_if(&self, on: bool, inputs: impl FnOnce() -> K, compute: impl FnOnce() -> T) -> T {
        match on {
            true => self.get_or_compute(&inputs(), compute),
            false => compute(),
        }
    }
}

/// Results of recent builds, valid while `snapshot` is.
#[derive(Debug)]
pub struct BuildMemo<T> {
    /// Shared, so that [`BuildMemo::peek`] checks it with the lock let go.
    snapshot: Option<Arc<Snapshot>>,
    /// Bumped whenever the snapshot is retaken (plugins' memos key on it).
    generation: u64,
    entries: Vec<(u128, T)>,
    hits: u64,
    /// Whether the current snapshot already tried to become a watched one.
    upgrade_tried: bool,
}

impl<T> Default for BuildMemo<T> {
    fn default() -> Self {
        BuildMemo { snapshot: None, generation: 0, entries: Vec::new(), hits: 0, upgrade_tried: false }
    }
}

impl<T: Clone> BuildMemo<T> {
    /// Checks the files and returns the current generation, retaking the
    /// snapshot (and forgetting every result) when anything changed.
    ///
    /// `take(events)` builds a snapshot, watched when `events`. The first
    /// snapshot is stats only: a process that builds once (the CLI) never
    /// pays for setting up and tearing down watches. The first reuse
    /// upgrades it to a watched one, kept only if its stats match (else the
    /// results go, as after any change); every later snapshot is watched.
    pub fn refresh(&mut self, take: impl Fn(bool) -> Option<Snapshot>) -> u64 {
        let valid = self.snapshot.as_ref().is_some_and(|s| s.trustworthy() && s.unchanged());
        if !valid {
            let first = self.snapshot.is_none() && self.generation == 0;
            self.entries.clear();
            self.snapshot = take(!first).map(Arc::new);
            self.upgrade_tried = !first;
            self.generation += 1;
        } else if !self.upgrade_tried {
            self.upgrade_tried = true;
            let watched = take(true).filter(Snapshot::watched);
            if let Some(watched) = watched {
                if self.snapshot.as_ref().is_some_and(|old| old.seen != watched.seen) {
                    // Something changed between the check and the watches.
                    self.entries.clear();
                    self.generation += 1;
                }
                self.snapshot = Some(Arc::new(watched));
            }
        }
        self.generation
    }

    /// The current snapshot's [`Snapshot::stamp`].
    pub fn stamp(&self) -> Option<u128> {
        self.snapshot.as_deref().and_then(Snapshot::stamp)
    }

    /// Whether the current snapshot is checked by file events.
    pub fn watched(&self) -> bool {
        self.snapshot.as_deref().is_some_and(Snapshot::watched)
    }

    /// Whether results can be kept under the current snapshot.
    pub fn usable(&self) -> bool {
        self.snapshot.as_deref().is_some_and(Snapshot::trustworthy)
    }

    /// The result for `key` if the files are known unchanged without taking
    /// a new snapshot: only once file events watch them, so the check is one
    /// non-blocking `FIONREAD` (what a caller on an async thread can afford),
    /// made after `memo`'s lock is let go: the hits of several threads wait
    /// on each other only to find the entry. A change seen here drops the
    /// snapshot (if it is still the memo's), so the next
    /// [`BuildMemo::refresh`] takes a new one (the events it consumed are
    /// not lost).
    pub fn peek(memo: &Lock<Self>, key: u128) -> Option<T> {
        let (snapshot, found) = {
            let memo = memo.lock();
            let snapshot = memo.snapshot.clone().filter(|s| memo.upgrade_tried && s.watched())?;
            let found = kept_for(&memo.entries, key)?.clone();
            (snapshot, found)
        };
        if snapshot.unchanged() {
            memo.lock().hits += 1;
            return Some(found);
        }
        let mut memo = memo.lock();
        if memo.snapshot.as_ref().is_some_and(|kept| Arc::ptr_eq(kept, &snapshot)) {
            memo.snapshot = None;
            memo.entries.clear();
        }
        None
    }

    /// The result for `key`, if any.
    pub fn get(&mut self, key: u128) -> Option<&T> {
        let found = kept_for(&self.entries, key);
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

/// The result kept in `entries` for `key` (not counted as a hit).
fn kept_for<T>(entries: &[(u128, T)], key: u128) -> Option<&T> {
    entries.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::Strategy as _;

    #[test]
    fn num128_adds_the_bytes_of_its_two_halves() {
        for n in [0u128, 1, u128::MAX, 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210, 1 << 64] {
            let mut whole = KeyHasher::default();
            let mut halves = KeyHasher::default();
            whole.str("x").num128(n).num(7);
            halves.str("x").num(n as u64).num((n >> 64) as u64).num(7);
            assert_eq!(whole.finish(), halves.finish(), "{n:x}");
        }
    }

    proptest::proptest! {
        /// The buffer changes no key: a [`KeyHasher`] fed any run of byte
        /// strings (short, long, across the buffer's edge) and numbers gives
        /// xxh3-128 of their length-prefixed concatenation, as unbuffered
        /// streaming did.
        #[test]
        fn buffered_keys_are_the_xxh3_of_the_pieces(
            pieces in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::collection::vec(proptest::num::u8::ANY, 0..40).prop_map(Ok),
                    proptest::collection::vec(proptest::num::u8::ANY, KEY_BUFFER - 20..KEY_BUFFER + 20).prop_map(Ok),
                    proptest::collection::vec(proptest::num::u8::ANY, 0..3 * KEY_BUFFER).prop_map(Ok),
                    proptest::num::u64::ANY.prop_map(Err),
                ],
                0..24,
            ),
        ) {
            let mut h = KeyHasher::default();
            let mut plain = Vec::new();
            for piece in &pieces {
                match piece {
                    Ok(bytes) => {
                        h.bytes(bytes);
                        plain.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
                        plain.extend_from_slice(bytes);
                    }
                    Err(n) => {
                        h.num(*n);
                        plain.extend_from_slice(&n.to_le_bytes());
                    }
                }
            }
            proptest::prop_assert_eq!(h.finish(), xxhash_rust::xxh3::xxh3_128(&plain));
            proptest::prop_assert_eq!(h.finish(), h.finish(), "finish leaves the hasher as it was");
        }
    }

    /// A change written before a check is seen by that check, however the
    /// checks of other threads race it: they drain the queue (the very
    /// event, for a second watch set on the same folder) while this one
    /// looks at it without the lock, and the lock-free path of
    /// [`events::Watch::unchanged`] must never answer from a flag a drain in
    /// flight has not marked yet. Random pauses move the write across the
    /// other threads' checks; fails with the `DRAINING` check taken out.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    #[test]
    fn a_change_written_before_a_check_is_seen_whatever_other_threads_check() {
        use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("SOUL.md"), "0").unwrap();
        let fd = rustix::fs::open(root, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).unwrap();
        let take = || Snapshot::take(root, fd.as_fd(), &["SOUL.md".to_string()], false, true).unwrap();
        let mut rng = proptest::test_runner::TestRng::deterministic_rng(proptest::test_runner::RngAlgorithm::ChaCha);
        let mut missed = 0u32;
        for round in 0..400u32 {
            let (ours, other) = (take(), take());
            if !ours.watched() {
                panic!("{} gives no file events: this test needs a local filesystem", root.display());
            }
            let written = AtomicBool::new(false);
            let pause: u32 = rand_below(&mut rng, 4000);
            let stale = std::sync::atomic::AtomicU32::new(0);
            std::thread::scope(|s| {
                for checker in 0..3 {
                    let (ours, other, written, stale) = (&ours, &other, &written, &stale);
                    s.spawn(move || loop {
                        let before = written.load(SeqCst);
                        let unchanged = if checker == 0 { other.unchanged() } else { ours.unchanged() };
                        if before {
                            if unchanged && checker != 0 {
                                stale.fetch_add(1, SeqCst);
                            }
                            break;
                        }
                    });
                }
                for _ in 0..pause {
                    std::hint::spin_loop();
                }
                std::fs::write(root.join("SOUL.md"), round.to_string()).unwrap();
                written.store(true, SeqCst);
                if ours.unchanged() {
                    stale.fetch_add(1, SeqCst);
                }
            });
            missed += stale.load(SeqCst);
        }
        assert_eq!(missed, 0, "checks made after a write answered unchanged");
    }

    fn rand_below(rng: &mut proptest::test_runner::TestRng, n: u32) -> u32 {
        use proptest::prelude::Rng as _;
        rng.next_u32() % n
    }

    #[test]
    fn last_value_computes_once_per_key_run() {
        let last = LastValue::default();
        let calls = std::cell::Cell::new(0);
        let value = |n: u32| {
            calls.set(calls.get() + 1);
            n * 10
        };
        assert_eq!(last.get_or_compute(1, || value(1)), 10);
        assert_eq!(last.get_or_compute(1, || value(99)), 10, "kept for the same key");
        assert_eq!(last.get_or_compute(2, || value(2)), 20);
        assert_eq!(last.get_or_compute(1, || value(3)), 30, "only the last key is kept");
        assert_eq!(calls.get(), 3);
    }
}
