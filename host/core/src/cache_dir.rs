//! proem's cache folder: where compiled components, plugin answers and
//! token counts are kept between processes, and the rule that makes reading
//! them back safe.
//!
//! What is read back becomes native code (a compiled component) or decides
//! a prompt (a plugin's answer, a token count the budget relies on), so
//! nothing in the folder is trusted for being there:
//!
//! - **The folder is the user's.** It is a folder, not a symlink, owned by
//!   the user proem runs as and writable by nobody else: no group or other
//!   write bit, sticky or not (a sticky folder still lets others create the
//!   names proem has not written yet: the key, the next entry, and block
//!   proem's own writes). proem creates it, and any missing parent, 0700.
//!   A folder that fails is not used: proem warns, naming the folder, the
//!   problem and the fix, and builds with no disk cache.
//! - **It is opened once and held.** Every entry is opened relative to that
//!   handle without following symlinks, so replacing the folder or an entry
//!   with a link after the check changes nothing.
//! - **Every entry is bound to what it is for.** Each carries an
//!   HMAC-SHA256 over its kind, its key (for a compiled component: the
//!   SHA-256 of the wasm and the engine's hash) and its bytes, keyed by a
//!   32-byte secret in the folder's `key` file (created 0600 with
//!   `O_EXCL`; refused when another user owns it or anyone else may read
//!   or write it). An entry forged, copied to another key, or copied from
//!   another user's folder fails its MAC: a miss, never a wrong prompt,
//!   never foreign native code.
//!
//! Location: `$PROEM_CACHE_DIR` (empty: no disk cache), else
//! `$XDG_CACHE_HOME/proem/components`, else `~/.cache/proem/components` (an
//! `XDG_CACHE_HOME` or `HOME` that is not an absolute path is ignored).

use crate::sync::Lock;
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use sha2::{Digest, Sha256};
use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The name of the secret in the cache folder.
pub const KEY_FILE: &str = "key";
/// Bytes of the secret (and of a MAC).
pub const KEY_BYTES: usize = 32;

/// A cache folder that passed the checks, held open, with its secret.
pub struct CacheDir {
    path: PathBuf,
    fd: OwnedFd,
    key: Arc<[u8; KEY_BYTES]>,
}

/// Never prints the secret.
impl std::fmt::Debug for CacheDir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CacheDir").field("path", &self.path).field("fd", &self.fd).finish_non_exhaustive()
    }
}

/// One file of a cache folder, as [`CacheDir::entries`] lists it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Entry {
    /// Last modified (seconds, nanoseconds): the order entries are evicted in.
    pub modified: (i64, u64),
    /// Its size in bytes.
    pub bytes: u64,
    /// Its name in the folder.
    pub name: String,
}

/// Where the cache folder is, and how many of the folders above it proem
/// made its own (`proem/` of the default location); `None` when caching
/// is off (`PROEM_CACHE_DIR=""`) or no location is known.
fn default_location() -> Option<(PathBuf, usize)> {
    let var = std::env::var_os;
    location(var("PROEM_CACHE_DIR"), var("XDG_CACHE_HOME"), var("HOME"))
}

/// [`default_location`] from `$PROEM_CACHE_DIR`, `$XDG_CACHE_HOME` and
/// `$HOME`. A relative `XDG_CACHE_HOME` or `HOME` is ignored, as the XDG
/// base directory specification says: it would put the cache under the
/// current directory, which may be an agent folder (proem writes nothing
/// there). `PROEM_CACHE_DIR` is taken as given: the user names it.
fn location(proem: Option<OsString>, xdg: Option<OsString>, home: Option<OsString>) -> Option<(PathBuf, usize)> {
    if let Some(dir) = proem {
        return (!dir.is_empty()).then(|| (PathBuf::from(dir), 0));
    }
    let absolute = |dir: OsString| Some(PathBuf::from(dir)).filter(|d| d.is_absolute());
    let base = xdg.and_then(absolute).or_else(|| home.and_then(absolute).map(|h| h.join(".cache")))?;
    Some((base.join("proem").join("components"), 1))
}

/// The path of the cache folder, checked or not; `None` when caching is off.
pub fn default_path() -> Option<PathBuf> {
    default_location().map(|(path, _)| path)
}

/// This process's cache folder, checked (once per location and process; a
/// folder that fails is reported once and not used for the process's life).
pub fn default() -> Option<Arc<CacheDir>> {
    static OPENED: Lock<Vec<(PathBuf, Option<Arc<CacheDir>>)>> = Lock::new(Vec::new());
    let (path, parents) = default_location()?;
    let mut opened = OPENED.lock();
    if let Some((_, dir)) = opened.iter().find(|(p, _)| *p == path) {
        return dir.clone();
    }
    let dir = match CacheDir::open_owned(&path, parents) {
        Ok(dir) => Some(Arc::new(dir)),
        Err(why) => {
            warn_unused(&why);
            None
        }
    };
    opened.push((path, dir.clone()));
    dir
}

/// The cache folder at `path`, checked; `None` (and a warning saying why)
/// when it fails the checks.
pub fn checked(path: &Path) -> Option<Arc<CacheDir>> {
    match CacheDir::open(path) {
        Ok(dir) => Some(Arc::new(dir)),
        Err(why) => {
            warn_unused(&why);
            None
        }
    }
}

/// The warning for a cache folder that is not used.
pub fn warn_unused(why: &str) {
    tracing::warn!("{why}; building without a disk cache");
}

impl CacheDir {
    /// Opens the cache folder at `path` (created 0700 with any missing
    /// parent) and its secret (created if missing), or says why it cannot
    /// be trusted and how to fix that.
    pub fn open(path: &Path) -> Result<CacheDir, String> {
        CacheDir::open_owned(path, 0)
    }

    /// [`CacheDir::open`], checking also the `parents` folders above `path`
    /// (those proem made its own).
    fn open_owned(path: &Path, parents: usize) -> Result<CacheDir, String> {
        if std::fs::symlink_metadata(path).is_err() {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(path)
                .map_err(|e| format!("cannot create the cache folder {}: {e}", path.display()))?;
        }
        for parent in path.ancestors().skip(1).take(parents) {
            open_folder(rustix::fs::CWD, parent, parent)?;
        }
        let fd = open_folder(rustix::fs::CWD, path, path)?;
        let key = Arc::new(read_or_make_key(&fd, path)?);
        Ok(CacheDir { path: path.to_path_buf(), fd, key })
    }

    /// The folder `name` inside this one (created 0700), checked the same
    /// way and sharing its secret.
    pub fn subfolder(&self, name: &str) -> Result<CacheDir, String> {
        check_name(name).map_err(|e| e.to_string())?;
        let path = self.path.join(name);
        match rustix::fs::mkdirat(&self.fd, name, Mode::from_raw_mode(0o700)) {
            Ok(()) | Err(rustix::io::Errno::EXIST) => {}
            Err(e) => return Err(format!("cannot create the cache folder {}: {e}", path.display())),
        }
        let fd = open_folder(&self.fd, Path::new(name), &path)?;
        Ok(CacheDir { path, fd, key: self.key.clone() })
    }

    /// The folder's path (for messages).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The bytes of entry `name` when it is a regular file of at most
    /// `max_bytes` (a symlink is never followed).
    pub fn read(&self, name: &str, max_bytes: u64) -> std::io::Result<Vec<u8>> {
        let (file, size) = self.open_entry(name, max_bytes)?;
        let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        file.take(max_bytes).read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    /// Entry `name` opened for reading, with its size, when it is a regular
    /// file of at most `max_bytes` (a symlink is never followed). For an
    /// entry read in parts rather than whole (a compiled component: its
    /// header checked, its code streamed through a checksum, then mapped).
    pub fn open_entry(&self, name: &str, max_bytes: u64) -> std::io::Result<(std::fs::File, u64)> {
        check_name(name)?;
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(&self.fd, name, flags, Mode::empty())?;
        let stat = rustix::fs::fstat(&fd)?;
        if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
            return Err(std::io::Error::other("not a regular file"));
        }
        let size = u64::try_from(stat.st_size).unwrap_or(0);
        if size > max_bytes {
            return Err(std::io::Error::other(format!("{size} bytes, over the limit of {max_bytes}")));
        }
        Ok((std::fs::File::from(fd), size))
    }

    /// Writes entry `name` whole: `bytes` go to a new temporary file in the
    /// folder (0600, created with `O_EXCL`), synced first when `sync`, then
    /// renamed to `name`, so a reader never sees half an entry and two
    /// writers at once both leave a whole one.
    pub fn write(&self, name: &str, bytes: &[u8], sync: bool) -> std::io::Result<()> {
        check_name(name)?;
        let temp = temp_name(name);
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(&self.fd, &temp, flags, Mode::from_raw_mode(0o600))?;
        let mut file = std::fs::File::from(fd);
        let written = file
            .write_all(bytes)
            .and_then(|()| if sync { file.sync_data() } else { Ok(()) })
            .and_then(|()| Ok(rustix::fs::renameat(&self.fd, &temp, &self.fd, name)?));
        if written.is_err() {
            let _ = rustix::fs::unlinkat(&self.fd, &temp, AtFlags::empty());
        }
        written
    }

    /// Removes entry `name` (a failure is ignored: the next write or prune
    /// tries again).
    pub fn remove(&self, name: &str) {
        if check_name(name).is_ok() {
            let _ = rustix::fs::unlinkat(&self.fd, name, AtFlags::empty());
        }
    }

    /// The regular files of the folder whose names end with `suffix`.
    pub fn entries(&self, suffix: &str) -> Vec<Entry> {
        let Ok(dir) = rustix::fs::Dir::read_from(&self.fd) else { return Vec::new() };
        dir.map_while(Result::ok)
            .filter_map(|e| {
                let name = e.file_name().to_str().ok()?.to_string();
                if !name.ends_with(suffix) || name.starts_with('.') {
                    return None;
                }
                let stat = rustix::fs::statat(&self.fd, name.as_str(), AtFlags::SYMLINK_NOFOLLOW).ok()?;
                (FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile).then(|| Entry {
                    modified: (stat.st_mtime as i64, stat.st_mtime_nsec as u64),
                    bytes: u64::try_from(stat.st_size).unwrap_or(0),
                    name,
                })
            })
            .collect()
    }

    /// The HMAC-SHA256 of `parts` (each length-prefixed, so no two lists of
    /// parts have the same message) under the folder's secret.
    /// The message is hashed as it is given, never copied into one buffer
    /// (a compiled component's entry is tens of MiB).
    pub fn mac(&self, parts: &[&[u8]]) -> [u8; KEY_BYTES] {
        let lengths: Vec<[u8; 8]> = parts.iter().map(|part| (part.len() as u64).to_le_bytes()).collect();
        hmac_sha256_parts(&self.key[..], lengths.iter().zip(parts).flat_map(|(length, part)| [&length[..], *part]))
    }

    /// Whether `tag` is [`CacheDir::mac`] of `parts` (compared in constant time).
    pub fn verify(&self, parts: &[&[u8]], tag: &[u8]) -> bool {
        let expected = self.mac(parts);
        tag.len() == expected.len() && expected.iter().zip(tag).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
    }
}

/// HMAC-SHA256 (RFC 2104) of `message` under `key`: sha2 is already a
/// dependency and HMAC is these few lines, checked against RFC 4231's
/// vectors below.
pub fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    hmac_sha256_parts(key, [message])
}

/// [`hmac_sha256`] of the concatenation of `message`'s pieces.
fn hmac_sha256_parts<'m>(key: &[u8], message: impl IntoIterator<Item = &'m [u8]>) -> [u8; 32] {
    let mut block = [0u8; 64];
    if key.len() > block.len() {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let mut inner = Sha256::new().chain_update(block.map(|b| b ^ 0x36));
    for piece in message {
        inner.update(piece);
    }
    let inner = inner.finalize();
    Sha256::new().chain_update(block.map(|b| b ^ 0x5c)).chain_update(inner).finalize().into()
}

/// Opens the folder `path` (relative to `at`; `shown` names it) without
/// following a symlink, and checks that the user proem runs as owns it and
/// nobody else may write it.
fn open_folder(at: impl AsFd, path: &Path, shown: &Path) -> Result<OwnedFd, String> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(at, path, flags, Mode::empty()).map_err(|e| match e {
        rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR if is_symlink(shown) => format!(
            "the cache folder {} is a symbolic link: proem keeps its cache only in a real folder of yours; \
             point PROEM_CACHE_DIR at the folder itself",
            shown.display()
        ),
        e => format!("cannot open the cache folder {}: {e}", shown.display()),
    })?;
    let stat = rustix::fs::fstat(&fd).map_err(|e| format!("cannot stat the cache folder {}: {e}", shown.display()))?;
    check_owner(shown, "cache folder", stat.st_uid)?;
    if stat.st_mode & 0o022 != 0 {
        return Err(format!(
            "the cache folder {} is writable by other users (mode {:04o}): whoever can write it could plant \
             native code or prompt text for proem to read back; run `chmod go-w {}` or point PROEM_CACHE_DIR \
             at a folder of your own",
            shown.display(),
            stat.st_mode & 0o7777,
            shown.display()
        ));
    }
    Ok(fd)
}

fn is_symlink(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

/// Refuses a file or folder another user owns.
fn check_owner(shown: &Path, what: &str, uid: u32) -> Result<(), String> {
    let me = rustix::process::geteuid().as_raw();
    if uid == me {
        return Ok(());
    }
    Err(format!(
        "the {what} {} belongs to uid {uid}, not to you (uid {me}): proem trusts only a cache of your own; \
         remove it or point PROEM_CACHE_DIR at a folder of yours (PROEM_CACHE_DIR= turns the disk cache off)",
        shown.display()
    ))
}

/// The folder's secret: read, or made when missing (a new temporary file
/// created with `O_EXCL`, 0600, then linked to [`KEY_FILE`], which fails if
/// another process made one first: then that one is read).
fn read_or_make_key(dir: &OwnedFd, shown: &Path) -> Result<[u8; KEY_BYTES], String> {
    let path = shown.join(KEY_FILE);
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = match rustix::fs::openat(dir, KEY_FILE, flags, Mode::empty()) {
        Err(rustix::io::Errno::NOENT) => {
            make_key(dir).map_err(|e| format!("cannot make the cache key {}: {e}", path.display()))?;
            rustix::fs::openat(dir, KEY_FILE, flags, Mode::empty())
        }
        opened => opened,
    }
    .map_err(|e| format!("cannot open the cache key {}: {e}; remove it and proem makes a new one", path.display()))?;
    let stat = rustix::fs::fstat(&fd).map_err(|e| format!("cannot stat the cache key {}: {e}", path.display()))?;
    check_owner(&path, "cache key", stat.st_uid)?;
    let refuse = |problem: String| {
        Err(format!("the cache key {} {problem}; remove it and proem makes a new one", path.display()))
    };
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return refuse("is not a regular file".into());
    }
    if stat.st_mode & 0o077 != 0 {
        return refuse(format!(
            "may be read or written by other users (mode {:04o}, must be 0600): with it they could forge entries",
            stat.st_mode & 0o7777
        ));
    }
    let mut key = [0u8; KEY_BYTES];
    let mut file = std::fs::File::from(fd);
    let mut rest = [0u8; 1];
    if stat.st_size != KEY_BYTES as i64 || file.read_exact(&mut key).is_err() || file.read(&mut rest).ok() != Some(0) {
        return refuse(format!("is not {KEY_BYTES} bytes"));
    }
    Ok(key)
}

fn make_key(dir: &OwnedFd) -> std::io::Result<()> {
    let mut key = [0u8; KEY_BYTES];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut key)?;
    let temp = temp_name(KEY_FILE);
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut file = std::fs::File::from(rustix::fs::openat(dir, &temp, flags, Mode::from_raw_mode(0o600))?);
    let linked = file.write_all(&key).and_then(|()| file.sync_all()).and_then(|()| {
        match rustix::fs::linkat(dir, &temp, dir, KEY_FILE, AtFlags::empty()) {
            Ok(()) | Err(rustix::io::Errno::EXIST) => Ok(()),
            Err(e) => Err(e.into()),
        }
    });
    let _ = rustix::fs::unlinkat(dir, &temp, AtFlags::empty());
    linked
}

/// A fresh name for a temporary file beside `name` (hidden, so listings
/// skip it; unique per process and call).
fn temp_name(name: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().subsec_nanos();
    format!(".{name}.{}-{}-{nanos}.tmp", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

/// Entry names are single path components proem made.
fn check_name(name: &str) -> std::io::Result<()> {
    if name.is_empty() || name == "." || name == ".." || name.contains('/') || name.contains('\0') {
        return Err(std::io::Error::other(format!("{name:?} is not an entry name")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cache is under `$XDG_CACHE_HOME` or `$HOME/.cache` only when that
    /// path is absolute: a relative one would be the current directory's
    /// (an agent folder, maybe). Every combination of the three variables.
    #[test]
    fn the_default_location_is_never_relative_unless_proem_cache_dir_says_so() {
        let values = [None, Some(""), Some("relative/x"), Some("./x"), Some("/abs/xdg"), Some("/abs/home")];
        for proem in [None, Some(""), Some("given/dir")] {
            for xdg in values {
                for home in values {
                    let os = |v: Option<&str>| v.map(OsString::from);
                    let got = location(os(proem), os(xdg), os(home));
                    match proem {
                        Some("") => assert_eq!(got, None),
                        Some(dir) => assert_eq!(got, Some((PathBuf::from(dir), 0))),
                        None => {
                            let base = xdg
                                .filter(|x| x.starts_with('/'))
                                .map(PathBuf::from)
                                .or_else(|| home.filter(|h| h.starts_with('/')).map(|h| Path::new(h).join(".cache")));
                            assert_eq!(got, base.map(|b| (b.join("proem/components"), 1)), "{xdg:?} {home:?}");
                            assert!(got.as_ref().is_none_or(|(p, _)| p.is_absolute()), "{got:?}");
                        }
                    }
                }
            }
        }
    }
    use std::os::unix::fs::PermissionsExt;

    fn hex(bytes: &[u8]) -> String {
        crate::digest::hex(bytes)
    }

    #[test]
    fn hmac_sha256_matches_rfc_4231() {
        // Test cases 1, 2, 6 and 7 of RFC 4231 (short key, "Jefe", and
        // keys longer than a block, which are hashed first).
        let cases: [(&[u8], &[u8], &str); 4] = [
            (&[0x0b; 20], b"Hi There", "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
            (
                b"Jefe",
                b"what do ya want for nothing?",
                "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
            ),
            (
                &[0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First",
                "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
            ),
            (
                &[0xaa; 131],
                b"This is a test using a larger than block-size key and a larger than block-size data. \
                  The key needs to be hashed before being used by the HMAC algorithm.",
                "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2",
            ),
        ];
        for (key, message, expected) in cases {
            assert_eq!(hex(&hmac_sha256(key, message)), expected);
        }
    }

    #[test]
    fn a_new_folder_and_its_key_are_private_and_the_key_is_kept() {
        let parent = tempfile::tempdir().unwrap();
        let path = parent.path().join("a/b/cache");
        let dir = CacheDir::open(&path).unwrap();
        for folder in [parent.path().join("a"), parent.path().join("a/b"), path.clone()] {
            let mode = std::fs::metadata(&folder).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o700, "{}", folder.display());
        }
        let key = std::fs::metadata(path.join(KEY_FILE)).unwrap();
        assert_eq!(key.permissions().mode() & 0o777, 0o600);
        assert_eq!(key.len(), KEY_BYTES as u64);
        let again = CacheDir::open(&path).unwrap();
        assert_eq!(dir.mac(&[b"x"]), again.mac(&[b"x"]), "the key is read back, not made again");
        assert!(again.verify(&[b"x"], &dir.mac(&[b"x"])));
        assert!(!again.verify(&[b"x", b""], &dir.mac(&[b"x"])), "parts are length-prefixed");
        let other = CacheDir::open(&parent.path().join("other")).unwrap();
        assert_ne!(dir.mac(&[b"x"]), other.mac(&[b"x"]), "each folder has its own secret");
        let key = std::fs::read(path.join(KEY_FILE)).unwrap();
        assert!(!format!("{dir:?}").contains(&format!("{key:?}")[1..20]), "the secret is never printed: {dir:?}");
    }

    #[test]
    fn entries_are_written_whole_and_never_read_through_a_symlink() {
        let parent = tempfile::tempdir().unwrap();
        let dir = CacheDir::open(parent.path()).unwrap();
        dir.write("one.answer", b"hello", false).unwrap();
        assert_eq!(dir.read("one.answer", 100).unwrap(), b"hello");
        assert!(dir.read("one.answer", 4).is_err(), "over the limit");
        std::fs::write(parent.path().join("outside"), b"secret").unwrap();
        std::os::unix::fs::symlink(parent.path().join("outside"), parent.path().join("two.answer")).unwrap();
        assert!(dir.read("two.answer", 100).is_err(), "a symlinked entry is never followed");
        assert!(dir.read("../outside", 100).is_err() && dir.write("../x", b"", false).is_err());
        let names: Vec<String> = dir.entries(".answer").into_iter().map(|e| e.name).collect();
        assert_eq!(names, ["one.answer"], "no temporary file left, symlinks not listed");
    }
}
