//! proem's own files on disk: where its cache folder is, how every file in
//! it is written (whole, or not at all), and how any file proem opens is
//! read (without blocking on the open, regular files only, within a size).
//!
//! Location: `$PROEM_CACHE_DIR` (empty disables every disk cache), else
//! `$XDG_CACHE_HOME/proem/components`, else `~/.cache/proem/components`.

use rustix::io::Errno;
use std::io::{ErrorKind, Read, Write};
use std::path::{Path, PathBuf};

/// Where compiled components are kept; `None` when caching is off.
pub fn default_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("PROEM_CACHE_DIR") {
        return (!dir.is_empty()).then(|| PathBuf::from(dir));
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").filter(|h| !h.is_empty()).map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("proem").join("components"))
}

/// Writes a cache file whole: `bytes` go to a temporary file in the same
/// directory (created if missing), synced first when `sync`, then renamed
/// to `path`, so a reader never sees half a file and two writers at once
/// both leave a whole one. Every file proem keeps in its cache is written
/// here (compiled components, plugin answers, token counts).
pub fn write_whole(path: &Path, bytes: &[u8], sync: bool) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    if sync {
        tmp.as_file().sync_data()?;
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Open options for reading without blocking on the open: a FIFO, socket
/// or device opens at once (and is then refused by its `fstat`) instead of
/// waiting for a writer. Every file proem reads is opened with these.
pub fn nonblocking_read() -> cap_std::fs::OpenOptions {
    let mut options = cap_std::fs::OpenOptions::new();
    options.read(true);
    cap_std::fs::OpenOptionsExt::custom_flags(&mut options, rustix::fs::OFlags::NONBLOCK.bits() as i32);
    options
}

/// Reads a regular file named by the user or kept by proem outside any
/// workspace (`--config`, `--tools`, cache entries), at most `max_bytes`:
/// opened without blocking, refused unless `fstat` says it is a regular
/// file, refused when larger than `max_bytes`. The error is worded for a
/// message that names the file.
pub fn read_regular_file(path: &Path, max_bytes: u64) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::OpenOptionsExt;
    let file =
        std::fs::OpenOptions::new().read(true).custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32).open(path)?;
    let meta = file.metadata()?;
    if meta.is_dir() {
        return Err(std::io::Error::other("is a directory, not a file"));
    }
    if !meta.is_file() {
        return Err(std::io::Error::other("is not a regular file (a FIFO, socket or device is never read)"));
    }
    if meta.len() > max_bytes {
        return Err(std::io::Error::other(format!("is {} bytes, over the limit of {max_bytes}", meta.len())));
    }
    let file = cap_std::fs::File::from_std(file);
    read_up_to(file, meta.len(), max_bytes as usize)
}

/// At most `limit` bytes of `file`, whose size `fstat` gave as `size`. A
/// file of known size is read to that size without the extra read that
/// would confirm its end (a file growing meanwhile is read as it was at the
/// `fstat`); a size of 0 (some special files report that) reads to the end.
pub(crate) fn read_up_to(mut file: cap_std::fs::File, size: u64, limit: usize) -> std::io::Result<Vec<u8>> {
    if size == 0 {
        let mut bytes = Vec::new();
        file.take(limit as u64).read_to_end(&mut bytes)?;
        return Ok(bytes);
    }
    let want = usize::try_from(size).unwrap_or(usize::MAX).min(limit);
    let mut bytes = vec![0; want];
    let mut filled = 0;
    while filled < want {
        match file.read(&mut bytes[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    bytes.truncate(filled);
    Ok(bytes)
}

/// Whether `e` is the system's refusal for want of a resource (`EMFILE`,
/// `ENFILE`, `ENOMEM`, `ENOBUFS`) rather than anything about the file: the
/// same read may succeed a moment later, so its outcome must not decide
/// what a build contains.
pub fn is_exhaustion(e: &std::io::Error) -> bool {
    let errno = Errno::from_io_error(e);
    EXHAUSTION.iter().any(|(refused, _)| errno == Some(*refused)) || e.kind() == std::io::ErrorKind::OutOfMemory
}

/// The refusals [`is_exhaustion`] means, with how `std::io::Error` ends its
/// text for each (` (os error N)`).
const EXHAUSTION: [(Errno, &str); 4] = [
    (Errno::MFILE, " (os error 24)"),
    (Errno::NFILE, " (os error 23)"),
    (Errno::NOMEM, " (os error 12)"),
    (Errno::NOBUFS, " (os error 105)"),
];

/// Whether `message`, the text of a host error (a plugin that could not be
/// loaded, say, whose error is kept as text), ends an I/O error that
/// [`is_exhaustion`] means: the text `std::io::Error` gives those errors.
/// For the host's own messages only, never a plugin's words.
pub fn names_exhaustion(message: &str) -> bool {
    EXHAUSTION.iter().any(|(_, text)| message.contains(text))
}
