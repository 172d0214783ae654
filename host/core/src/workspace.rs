//! Confined, read-only access to the agent directory.
//!
//! The directory is opened once as a cap-std [`Dir`]; every read goes through
//! it, so a symlink or `..` that leads outside is refused by construction.
//! proem never writes here: this module has no write path at all.

use crate::disk::{is_exhaustion, nonblocking_read};
use crate::error::ProemError;
use crate::report::Diagnostic;
use crate::text::{clean_owned, split_front_matter, FrontMatter};
use cap_std::fs::Dir;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// The opened agent directory.
pub struct Workspace {
    root: PathBuf,
    dir: Dir,
}

/// Why a file's text is not available.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unavailable {
    /// No such file.
    Missing,
    /// The path leaves the workspace (symlink or `..`) and was not read.
    Refused(String),
    /// Exists but is not a regular file, or could not be read.
    Unreadable(String),
    /// Not valid UTF-8 text (or binary).
    NotText(String),
    /// The same file as a per-turn file (a symlink or hard link to USER.md,
    /// HEARTBEAT.md or BOOTSTRAP.md) read under another name: its text
    /// changes every turn, so it is read as if it were missing.
    PerTurn(String),
    /// The system refused for its own reason, not the file's: the process
    /// or the machine out of file descriptors or memory ([`crate::disk::is_exhaustion`]).
    /// Never a warning and a file left out: the build fails instead
    /// ([`Unavailable::or_exhausted`]), so what is built never depends on
    /// the machine's load.
    Exhausted(String),
}

/// A workspace read that failed because the system was out of a resource
/// (file descriptors, memory): the build that needed it fails
/// ([`ProemError::Exhausted`]) rather than leave the file out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exhausted {
    /// The workspace-relative path that could not be read or listed.
    pub path: String,
    /// The system's words.
    pub message: String,
}

impl From<Exhausted> for ProemError {
    fn from(e: Exhausted) -> ProemError {
        ProemError::Exhausted { path: e.path, message: e.message }
    }
}

/// An I/O error at `path` as [`Exhausted`] when it is one ([`crate::disk::is_exhaustion`]).
fn exhausted(path: &str, e: &std::io::Error) -> Result<(), Exhausted> {
    match is_exhaustion(e) {
        true => Err(Exhausted { path: path.to_string(), message: e.to_string() }),
        false => Ok(()),
    }
}

impl Unavailable {
    /// One line for diagnostics.
    pub fn describe(&self) -> String {
        match self {
            Unavailable::Missing => "not found".into(),
            Unavailable::Refused(why)
            | Unavailable::Unreadable(why)
            | Unavailable::NotText(why)
            | Unavailable::PerTurn(why)
            | Unavailable::Exhausted(why) => why.clone(),
        }
    }

    /// `Err` when the read failed for the machine's reason
    /// ([`Unavailable::Exhausted`]): what a build must fail on instead of
    /// leaving the file at `path` out. Every reader of the workspace passes
    /// its outcome through here before it words a diagnostic.
    pub fn or_exhausted(self, path: &str) -> Result<Unavailable, Exhausted> {
        match self {
            Unavailable::Exhausted(message) => Err(Exhausted { path: path.to_string(), message }),
            other => Ok(other),
        }
    }

    /// The diagnostic code for this outcome.
    pub fn code(&self) -> &'static str {
        match self {
            Unavailable::Missing => "file_missing",
            Unavailable::Refused(_) => "file_refused",
            Unavailable::Unreadable(_) => "file_unreadable",
            Unavailable::NotText(_) => "file_not_text",
            Unavailable::PerTurn(_) => "file_per_turn_link",
            Unavailable::Exhausted(_) => "system_exhausted",
        }
    }

    /// Whether the file counts as missing wherever it is read: it is, or it
    /// is a per-turn file's other name (so a stable part built with it is
    /// the one built without it, whether the per-turn file exists or not).
    pub fn is_missing(&self) -> bool {
        matches!(self, Unavailable::Missing | Unavailable::PerTurn(_))
    }
}

/// A text file read from the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextFile {
    /// Normalised text (LF newlines, no BOM).
    pub text: String,
    /// Whether the read stopped at the byte limit.
    pub cut_at_limit: bool,
    /// The file's (device, inode), to tell a link to a per-turn file.
    pub identity: (u64, u64),
}

/// A file's bytes, whether there was more, and its (device, inode).
type RawRead = (Vec<u8>, bool, (u64, u64));

/// The (device, inode) of the per-turn files present at one moment (see
/// [`Workspace::per_turn_files`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PerTurnFiles(Vec<(u64, u64)>);

impl PerTurnFiles {
    /// Checks a file read as `name`: `Err` when it is a per-turn file read
    /// under another name (a symlink, a hard link, a folder link on the
    /// way), which a stable part must never see.
    pub fn check(&self, name: &str, file: TextFile) -> Result<TextFile, Unavailable> {
        if self.0.contains(&file.identity) && !crate::file_names::is_per_turn_name(name) {
            return Err(Unavailable::PerTurn(
                "is the same file as a per-turn file (USER.md, HEARTBEAT.md or BOOTSTRAP.md), through a link; \
                 its text changes every turn, so it is read as missing: copy the text instead of linking"
                    .into(),
            ));
        }
        Ok(file)
    }
}

impl Workspace {
    /// Opens the agent directory.
    pub fn open(root: &Path) -> Result<Workspace, ProemError> {
        let meta = std::fs::metadata(root).map_err(|e| ProemError::AgentDir {
            path: root.to_path_buf(),
            message: match e.kind() {
                ErrorKind::NotFound => "does not exist".into(),
                _ => format!("cannot be opened: {e}"),
            },
        })?;
        if !meta.is_dir() {
            return Err(ProemError::AgentDir { path: root.to_path_buf(), message: "is not a directory".into() });
        }
        let dir = Dir::open_ambient_dir(root, cap_std::ambient_authority()).map_err(|e| ProemError::AgentDir {
            path: root.to_path_buf(),
            message: format!("cannot be opened: {e}"),
        })?;
        let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        Ok(Workspace { root, dir })
    }

    /// The absolute path of the agent directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The opened directory every read goes through.
    pub fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        std::os::fd::AsFd::as_fd(&self.dir)
    }

    /// Reads a workspace-relative text file, at most `max_bytes` of it.
    pub fn read_text(&self, rel: &str, max_bytes: usize) -> Result<TextFile, Unavailable> {
        let (bytes, cut_at_limit, identity) = self.read_raw(rel, max_bytes)?;
        decode(bytes, cut_at_limit).map(|text| TextFile { text, cut_at_limit, identity })
    }

    /// Reads a workspace-relative file's bytes as they are, at most
    /// `max_bytes` of them, and whether there was more.
    pub fn read_bytes(&self, rel: &str, max_bytes: usize) -> Result<(Vec<u8>, bool), Unavailable> {
        self.read_raw(rel, max_bytes).map(|(bytes, cut, _)| (bytes, cut))
    }

    /// [`Workspace::read_bytes`] and the file's (device, inode).
    fn read_raw(&self, rel: &str, max_bytes: usize) -> Result<RawRead, Unavailable> {
        if let Err(why) = crate::paths::check_relative_path(rel) {
            return Err(Unavailable::Refused(format!("{why}; not read")));
        }
        // One capability-checked open (symlinks followed only inside the
        // workspace; O_NONBLOCK so a FIFO cannot hang the build), then fstat.
        // Only a failed open pays for an lstat, to word the error.
        let file = match refused(&self.root).map_or_else(|| self.dir.open_with(rel, &nonblocking_read()), Err) {
            Ok(f) => f,
            Err(e) if e.kind() == ErrorKind::NotFound && self.dir.symlink_metadata(rel).is_err() => {
                return Err(Unavailable::Missing)
            }
            Err(e) if is_exhaustion(&e) => return Err(Unavailable::Exhausted(e.to_string())),
            Err(e) => {
                let is_link = self.dir.symlink_metadata(rel).is_ok_and(|m| m.file_type().is_symlink());
                return Err(classify_open_error(&e, is_link));
            }
        };
        let failed = |what: &str, e: std::io::Error| match is_exhaustion(&e) {
            true => Unavailable::Exhausted(e.to_string()),
            false => Unavailable::Unreadable(format!("{what} failed: {e}")),
        };
        let meta = file.metadata().map_err(|e| failed("stat", e))?;
        if meta.is_dir() {
            return Err(Unavailable::Unreadable("is a directory, not a file".into()));
        }
        if !meta.is_file() {
            return Err(Unavailable::Unreadable("is not a regular file".into()));
        }
        let mut bytes =
            crate::disk::read_up_to(file, meta.len(), max_bytes.saturating_add(1)).map_err(|e| failed("read", e))?;
        let cut_at_limit = bytes.len() > max_bytes;
        bytes.truncate(max_bytes);
        let identity = (cap_std::fs::MetadataExt::dev(&meta), cap_std::fs::MetadataExt::ino(&meta));
        Ok((bytes, cut_at_limit, identity))
    }

    /// The (device, inode) of each per-turn file present now, followed
    /// through links (one stat each): what [`PerTurnFiles::check`] refuses
    /// under another name. Taken once per build; `Err` when the system was
    /// out of a resource (a per-turn file missed for that reason would let
    /// its other names into the stable part).
    pub fn per_turn_files(&self) -> Result<PerTurnFiles, Exhausted> {
        let mut found = Vec::new();
        for name in crate::file_names::per_turn_names() {
            match refused(&self.root).map_or_else(|| self.dir.metadata(name), Err) {
                Ok(meta) => found.push((cap_std::fs::MetadataExt::dev(&meta), cap_std::fs::MetadataExt::ino(&meta))),
                Err(e) => exhausted(name, &e)?,
            }
        }
        Ok(PerTurnFiles(found))
    }

    /// Names of the sub-directories of `rel` (sorted): empty when it is
    /// absent or cannot be listed (no permission, say), `Err` when the
    /// system was out of a resource (which would leave every skill out).
    pub fn subdirs(&self, rel: &str) -> Result<Vec<String>, Exhausted> {
        match self.listed_subdirs(rel) {
            Ok(names) => Ok(names),
            Err(e) => exhausted(rel, &e).map(|()| Vec::new()),
        }
    }

    /// [`Workspace::subdirs`], or why `rel` could not be listed whole: empty
    /// only when it is absent or not a folder, never because the system
    /// refused (out of file descriptors, say). What a snapshot watches is
    /// listed this way, so that such a refusal gives no snapshot instead of
    /// one that leaves every skill out.
    pub fn listed_subdirs(&self, rel: &str) -> std::io::Result<Vec<String>> {
        let entries = match refused(&self.root).map_or_else(|| self.dir.read_dir(rel), Err) {
            Ok(entries) => entries,
            Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry?;
            if entry.file_type()?.is_dir() {
                if let Ok(name) = entry.file_name().into_string() {
                    names.push(name);
                }
            }
        }
        names.sort();
        Ok(names)
    }
}

/// What the system refuses of this workspace's next read: nothing outside
/// tests, where [`faults`] plans refusals.
#[cfg(not(test))]
#[inline(always)]
fn refused(_root: &Path) -> Option<std::io::Error> {
    None
}

#[cfg(test)]
fn refused(root: &Path) -> Option<std::io::Error> {
    faults::next(root)
}

fn classify_open_error(e: &std::io::Error, is_link: bool) -> Unavailable {
    let msg = e.to_string();
    if msg.contains("outside of the filesystem") || (is_link && e.kind() == ErrorKind::PermissionDenied) {
        Unavailable::Refused("a symlink leads outside the agent directory; not read".into())
    } else if msg.to_ascii_lowercase().contains("too many") && msg.to_ascii_lowercase().contains("link") {
        Unavailable::Unreadable("symlink loop".into())
    } else if is_link && e.kind() == ErrorKind::NotFound {
        Unavailable::Unreadable("dangling symlink".into())
    } else {
        Unavailable::Unreadable(msg)
    }
}

fn decode(bytes: Vec<u8>, cut_at_limit: bool) -> Result<String, Unavailable> {
    if bytes.contains(&0) {
        return Err(Unavailable::NotText("binary content (NUL bytes); not injected".into()));
    }
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            let err = e.utf8_error();
            // A read cut at the byte limit may end inside a character.
            if cut_at_limit && err.error_len().is_none() {
                let valid = err.valid_up_to();
                let mut bytes = e.into_bytes();
                bytes.truncate(valid);
                String::from_utf8(bytes).expect("prefix is valid")
            } else {
                return Err(Unavailable::NotText(format!("invalid UTF-8 at byte {}; not injected", err.valid_up_to())));
            }
        }
    };
    // Most files need no change: their buffer is kept instead of copied.
    Ok(clean_owned(text))
}

/// Strips front matter from a bootstrap file, recording a warning when the
/// block never closes (the text is then kept whole).
pub fn strip_front_matter(name: &str, text: String, diagnostics: &mut Vec<Diagnostic>) -> String {
    match split_front_matter(&text) {
        FrontMatter::Absent => text,
        FrontMatter::Found { body, .. } => body.trim_start_matches('\n').to_string(),
        FrontMatter::Unterminated => {
            diagnostics.push(Diagnostic::warn(
                "front_matter_unterminated",
                format!("{name}: starts with `---` but the front matter never closes; kept the file whole"),
            ));
            text
        }
    }
}

/// Test-only: the system's refusals (`EMFILE`), planned for the reads of
/// one workspace root, numbered in the order they are made (opening a file,
/// looking a per-turn file up, listing a folder).
#[cfg(test)]
pub(crate) mod faults {
    use crate::sync::Lock;
    use std::path::{Path, PathBuf};

    struct Plan {
        root: PathBuf,
        made: usize,
        refused: std::ops::Range<usize>,
    }

    static PLANS: Lock<Vec<Plan>> = Lock::new(Vec::new());

    /// From now on, the reads of `root` numbered in `refused` (counted from
    /// 0 here) fail with `EMFILE`.
    pub fn plan(root: &Path, refused: std::ops::Range<usize>) {
        let mut plans = PLANS.lock();
        plans.retain(|p| p.root != root);
        plans.push(Plan { root: root.to_path_buf(), made: 0, refused });
    }

    /// How many reads of `root` were made since its plan, and forgets it.
    pub fn done(root: &Path) -> usize {
        let mut plans = PLANS.lock();
        let made = plans.iter().find(|p| p.root == root).map_or(0, |p| p.made);
        plans.retain(|p| p.root != root);
        made
    }

    pub(super) fn next(root: &Path) -> Option<std::io::Error> {
        let mut plans = PLANS.lock();
        let plan = plans.iter_mut().find(|p| p.root == root)?;
        let number = plan.made;
        plan.made += 1;
        plan.refused.contains(&number).then(|| rustix::io::Errno::MFILE.into())
    }
}
