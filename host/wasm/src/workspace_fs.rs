//! The agent directory as a plugin granted `workspace-read` sees it: a
//! read-only WASI filesystem of proem's own, mounted at `/workspace`. The
//! linker shadows wasmtime-wasi's `wasi:filesystem` with it (`engine.rs`),
//! as `virtual_io.rs` shadows the clock and poll.
//!
//! Two rules hold for every call, whatever path, link or listing it tries:
//!
//! - **Bounded and charged.** Every open, stat, listing entry and read is
//!   charged a fixed cost to the call's deadline ([`CallClock::charge`]);
//!   a read returns at most [`READ_MAX_BYTES`], a listing is read one
//!   entry at a time (never collected whole), and a call holds at most
//!   [`MAX_OPEN_FILES`] open files and listings (each is a file descriptor
//!   of the host). Files are opened without blocking and refused unless
//!   they are regular files or folders, so a FIFO never blocks a call.
//! - **A stable call sees the stable inputs only** ([`View::Stable`]: 0.2
//!   `stable` and `bootstrap` hooks, and the stable half of a 0.1 hook).
//!   The per-turn files (USER.md, HEARTBEAT.md, BOOTSTRAP.md) are absent
//!   under every spelling a filesystem may take for them (any case, with
//!   surrounding blanks or trailing dots) in every folder; so is any file
//!   that is one of them (a symlink followed to it, a hard link to it) at
//!   the moment of the call; every time reads 1970-01-01 (the stable clock)
//!   and a folder's size and every link count read 0 and 1. What such a
//!   call can see is therefore a function of the stable files: writing,
//!   creating, deleting or touching a per-turn file changes nothing it
//!   sees. (A hard link makes two names one file: while it is one, the
//!   other name is hidden too.)

use crate::clock::CallClock;
use cap_std::fs::{Dir, MetadataExt};
use std::io;
use std::os::unix::fs::DirEntryExt;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use wasmtime::component::{HasData, Linker, Resource, ResourceTable};
use wasmtime_wasi::p2::{DynInputStream, InputStream, Pollable, StreamError, StreamResult};

mod generated {
    #![allow(missing_docs)]
    wasmtime::component::bindgen!({
        path: "src/wit/wasi",
        world: "proem:host/workspace-fs",
        // A host function may trap (a limit, the deadline) instead of answering.
        imports: { default: trappable },
        require_store_data_send: true,
        with: {
            "wasi:io/error": wasmtime_wasi::p2::bindings::io::error,
            "wasi:io/poll": wasmtime_wasi::p2::bindings::io::poll,
            "wasi:io/streams": wasmtime_wasi::p2::bindings::io::streams,
            "wasi:clocks/wall-clock": wasmtime_wasi::p2::bindings::clocks::wall_clock,
            "wasi:filesystem/types.descriptor": super::Descriptor,
            "wasi:filesystem/types.directory-entry-stream": super::Listing,
        },
    });
}

use generated::wasi::filesystem::{preopens, types};
use types::{DescriptorFlags, DescriptorStat, DescriptorType, ErrorCode, OpenFlags, PathFlags};
use wasmtime_wasi::p2::bindings::clocks::wall_clock::Datetime;

/// Where the agent directory appears to plugins.
pub use proem_core::plugin::sandbox::WORKSPACE_MOUNT;

/// Most bytes one read returns (wasmtime-wasi reads 64 KiB at a time too);
/// a plugin asking for more gets a short read and asks again.
pub const READ_MAX_BYTES: usize = 64 * 1024;

/// Most files and directory listings one call holds open at once (each
/// holds one or two file descriptors of the host). Opening one more traps,
/// naming the limit.
pub const MAX_OPEN_FILES: usize = 16;

/// What opening a file or folder, or starting a listing, charges.
pub const OPEN_COST: Duration = Duration::from_micros(20);

/// What every other filesystem call charges (a stat, a link read, a hash).
pub const CALL_COST: Duration = Duration::from_micros(5);

/// What each listing entry a plugin reads charges.
pub const ENTRY_COST: Duration = Duration::from_micros(2);

/// What a read charges per KiB asked for (at most [`READ_MAX_BYTES`]), on
/// top of [`CALL_COST`].
pub const READ_COST_PER_KIB: Duration = Duration::from_micros(2);

pub use proem_core::plugin::sandbox::View;

/// The workspace of one call: its root (when granted), what the call may
/// see of it, and the open files it holds.
pub struct Workspace {
    root: Option<Dir>,
    view: View,
    open: Arc<AtomicUsize>,
    /// (device, inode) of every per-turn file under any spelling, found on
    /// the first use of a stable view.
    per_turn: OnceLock<Vec<(u64, u64)>>,
    /// The first answer the host's filesystem gave for its own reason, not
    /// the workspace's (out of file descriptors or memory), or a per-turn
    /// scan that failed: the call's answer was shaped by the machine's
    /// state, so it is not used ([`Workspace::host_trouble`]).
    trouble: OnceLock<String>,
}

impl Workspace {
    /// No workspace: `get-directories` answers nothing.
    pub fn none() -> Workspace {
        Workspace::of(None, View::Turn)
    }

    /// The agent directory at `dir`, seen as `view` says.
    pub fn mount(dir: &std::path::Path, view: View) -> io::Result<Workspace> {
        let root = Dir::open_ambient_dir(dir, cap_std::ambient_authority())?;
        Ok(Workspace::of(Some(root), view))
    }

    /// A call's workspace at `root`, nothing open or found yet.
    fn of(root: Option<Dir>, view: View) -> Workspace {
        Workspace { root, view, open: Arc::default(), per_turn: OnceLock::new(), trouble: OnceLock::new() }
    }

    fn stable(&self) -> bool {
        self.view == View::Stable
    }

    /// Takes one of the call's [`MAX_OPEN_FILES`] places, or traps.
    fn take_place(&self) -> wasmtime::Result<Place> {
        let held = self.open.fetch_add(1, Ordering::Relaxed);
        let place = Place(self.open.clone());
        if held >= MAX_OPEN_FILES {
            return Err(wasmtime::format_err!(
                "held more than {MAX_OPEN_FILES} workspace files and listings open at once (each is a file \
                 descriptor of the host); close some before opening more"
            ));
        }
        Ok(place)
    }

    /// Whether the stable view hides `path`: one of its components names a
    /// per-turn file.
    fn hides_path(&self, path: &str) -> bool {
        self.stable() && path.split('/').any(is_per_turn_name)
    }

    /// Whether the stable view hides the file `(device, inode)`: it is a
    /// per-turn file, under whatever name it was reached.
    fn hides_file(&self, device: u64, inode: u64) -> bool {
        self.stable() && self.per_turn_files().contains(&(device, inode))
    }

    /// The per-turn files' (device, inode), found once per call: every
    /// entry of the root whose name is a per-turn name, as itself and as
    /// what it links to. The scan is the host's setup, not charged (it
    /// reads the root folder once, whatever the plugin does).
    /// A scan that fails is the host's trouble: the call's answer is then
    /// not used, whatever the call saw.
    fn per_turn_files(&self) -> &[(u64, u64)] {
        self.per_turn.get_or_init(|| match self.root.as_ref().map(per_turn_files_in) {
            Some(Ok(found)) => found,
            Some(Err(e)) => {
                let _ = self.trouble.set(format!("the per-turn files could not be looked for: {e}"));
                Vec::new()
            }
            None => Vec::new(),
        })
    }

    /// The WASI error code of `e` as the plugin sees it; an error for the
    /// machine's reason ([`proem_core::disk::is_exhaustion`]) is noted
    /// as the call's [`Workspace::host_trouble`].
    fn code(&self, e: &io::Error) -> ErrorCode {
        if proem_core::disk::is_exhaustion(e) {
            let _ = self.trouble.set(e.to_string());
        }
        code(e)
    }

    /// Why this call's answer must not be used, when the host's filesystem
    /// answered it for the machine's reason (out of file descriptors or
    /// memory) rather than the workspace's: the plugin may have built
    /// something else from that answer, and the same call a moment later
    /// would see the files.
    pub fn host_trouble(&self) -> Option<&str> {
        self.trouble.get().map(String::as_str)
    }
}

/// The (device, inode) of each per-turn file in `root`, as itself and as
/// what it links to; `Err` when the folder could not be read whole.
fn per_turn_files_in(root: &Dir) -> io::Result<Vec<(u64, u64)>> {
    let device = root.dir_metadata()?.dev();
    let mut found = Vec::new();
    for entry in root.entries()? {
        let entry = entry?;
        let name = entry.file_name();
        if !name.to_str().is_some_and(is_per_turn_name) {
            continue;
        }
        found.push((device, entry.ino()));
        match root.metadata(&name) {
            Ok(target) => found.push((target.dev(), target.ino())),
            Err(e) if proem_core::disk::is_exhaustion(&e) => return Err(e),
            // A dangling link or one that leaves the folder: nothing to find.
            Err(_) => {}
        }
    }
    Ok(found)
}

/// Whether a file name may name a per-turn file (one rule with the core's
/// loader: [`proem_core::file_names::is_per_turn_name`]).
pub use proem_core::file_names::is_per_turn_name;

/// One of a call's open places, given back when its file closes.
struct Place(Arc<AtomicUsize>);

impl Drop for Place {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// An open file or folder (shared by its descriptor and its streams; the
/// file closes when the last goes).
struct Open {
    node: Node,
    _place: Place,
}

enum Node {
    Dir(Dir),
    File(std::fs::File),
}

/// A `descriptor` of `wasi:filesystem`.
pub struct Descriptor(Arc<Open>);

/// A `directory-entry-stream`: a listing read one entry at a time.
pub struct Listing {
    entries: cap_std::fs::ReadDir,
    /// The listed folder's device (an entry's inode is on it).
    device: u64,
    _place: Place,
}

/// A call's workspace, resource table and clock: what the filesystem
/// functions work on.
pub struct FsView<'a> {
    workspace: &'a mut Workspace,
    table: &'a mut ResourceTable,
    clock: &'a CallClock,
}

impl<'a> FsView<'a> {
    /// The view of a call's state.
    pub fn new(workspace: &'a mut Workspace, table: &'a mut ResourceTable, clock: &'a CallClock) -> FsView<'a> {
        FsView { workspace, table, clock }
    }
}

struct Fs;

impl HasData for Fs {
    type Data<'a> = FsView<'a>;
}

/// Replaces `wasi:filesystem` in `linker` (which must already hold
/// wasmtime-wasi's) with this one.
pub fn add_to_linker<T: Send + 'static>(linker: &mut Linker<T>, fs: fn(&mut T) -> FsView<'_>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    types::add_to_linker::<_, Fs>(linker, fs)?;
    preopens::add_to_linker::<_, Fs>(linker, fs)?;
    linker.allow_shadowing(false);
    Ok(())
}

/// A filesystem answer: a trap (outer) or a WASI error code (inner).
type Answer<T> = wasmtime::Result<Result<T, ErrorCode>>;

/// The WASI error code of an I/O error.
fn code(e: &io::Error) -> ErrorCode {
    use rustix::io::Errno;
    if let Some(raw) = e.raw_os_error() {
        let errno = Errno::from_raw_os_error(raw);
        let known = [
            (Errno::NOENT, ErrorCode::NoEntry),
            (Errno::ACCESS, ErrorCode::Access),
            (Errno::PERM, ErrorCode::NotPermitted),
            (Errno::NOTDIR, ErrorCode::NotDirectory),
            (Errno::ISDIR, ErrorCode::IsDirectory),
            (Errno::LOOP, ErrorCode::Loop),
            (Errno::NAMETOOLONG, ErrorCode::NameTooLong),
            (Errno::INVAL, ErrorCode::Invalid),
            (Errno::EXIST, ErrorCode::Exist),
            (Errno::BADF, ErrorCode::BadDescriptor),
            (Errno::OVERFLOW, ErrorCode::Overflow),
            (Errno::ILSEQ, ErrorCode::IllegalByteSequence),
            (Errno::NOMEM, ErrorCode::InsufficientMemory),
            (Errno::MFILE, ErrorCode::InsufficientMemory),
            (Errno::NFILE, ErrorCode::InsufficientMemory),
            (Errno::XDEV, ErrorCode::CrossDevice),
        ];
        if let Some((_, code)) = known.iter().find(|(k, _)| *k == errno) {
            return *code;
        }
    }
    match e.kind() {
        io::ErrorKind::NotFound => ErrorCode::NoEntry,
        // cap-std's answer to a path that leaves the workspace.
        io::ErrorKind::PermissionDenied => ErrorCode::NotPermitted,
        io::ErrorKind::InvalidInput => ErrorCode::Invalid,
        _ => ErrorCode::Io,
    }
}

fn descriptor_type(file_type: cap_std::fs::FileType) -> DescriptorType {
    use cap_std::fs::FileTypeExt;
    if file_type.is_dir() {
        DescriptorType::Directory
    } else if file_type.is_file() {
        DescriptorType::RegularFile
    } else if file_type.is_symlink() {
        DescriptorType::SymbolicLink
    } else if file_type.is_fifo() {
        DescriptorType::Fifo
    } else if file_type.is_socket() {
        DescriptorType::Socket
    } else if file_type.is_char_device() {
        DescriptorType::CharacterDevice
    } else if file_type.is_block_device() {
        DescriptorType::BlockDevice
    } else {
        DescriptorType::Unknown
    }
}

fn datetime(seconds: i64, nanoseconds: i64) -> Option<Datetime> {
    Some(Datetime { seconds: u64::try_from(seconds).ok()?, nanoseconds: u32::try_from(nanoseconds).ok()? })
}

/// The stable view's time: the stable clock's, 1970-01-01.
const FIXED_TIME: Datetime = Datetime { seconds: 0, nanoseconds: 0 };

/// A file's metadata as `view` shows it.
fn stat_of(meta: &cap_std::fs::Metadata, view: View) -> DescriptorStat {
    let type_ = descriptor_type(meta.file_type());
    match view {
        View::Turn => DescriptorStat {
            type_,
            link_count: meta.nlink(),
            size: meta.size(),
            data_access_timestamp: datetime(meta.atime(), meta.atime_nsec()),
            data_modification_timestamp: datetime(meta.mtime(), meta.mtime_nsec()),
            status_change_timestamp: datetime(meta.ctime(), meta.ctime_nsec()),
        },
        // A folder's size and link count move when entries come and go.
        View::Stable => DescriptorStat {
            type_,
            link_count: 1,
            size: if meta.is_dir() { 0 } else { meta.size() },
            data_access_timestamp: Some(FIXED_TIME),
            data_modification_timestamp: Some(FIXED_TIME),
            status_change_timestamp: Some(FIXED_TIME),
        },
    }
}

/// The metadata hash WASI asks for: of the file's identity (device and
/// inode), which no per-turn write changes.
fn identity_hash(meta: &cap_std::fs::Metadata) -> types::MetadataHashValue {
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&meta.dev().to_le_bytes());
    bytes[8..].copy_from_slice(&meta.ino().to_le_bytes());
    let hash = xxhash_rust::xxh3::xxh3_128(&bytes);
    types::MetadataHashValue { lower: hash as u64, upper: (hash >> 64) as u64 }
}

/// Whether an open asks to write, create or truncate: refused, the
/// workspace is read-only.
fn writes(oflags: OpenFlags, flags: DescriptorFlags) -> bool {
    oflags.intersects(OpenFlags::CREATE | OpenFlags::EXCLUSIVE | OpenFlags::TRUNCATE)
        || flags.intersects(DescriptorFlags::WRITE | DescriptorFlags::MUTATE_DIRECTORY)
}

impl FsView<'_> {
    fn open_of(&self, fd: &Resource<Descriptor>) -> wasmtime::Result<Arc<Open>> {
        Ok(self.table.get(fd)?.0.clone())
    }

    /// The folder of `fd`, or `NotDirectory`.
    fn dir_of(&self, fd: &Resource<Descriptor>) -> wasmtime::Result<Result<Arc<Open>, ErrorCode>> {
        let open = self.open_of(fd)?;
        Ok(match open.node {
            Node::Dir(_) => Ok(open),
            Node::File(_) => Err(ErrorCode::NotDirectory),
        })
    }

    /// Whether the stable view hides `path` under `dir`: a component names a
    /// per-turn file, or a folder on the way resolves to one (through a
    /// link: `lnk/x` with `lnk -> USER.md`). A stable call resolves every
    /// path as if no per-turn file existed, so its answers cannot tell
    /// whether one does.
    fn hides_path_at(&mut self, dir: &Dir, path: &str) -> bool {
        if !self.workspace.stable() {
            return false;
        }
        if self.workspace.hides_path(path) {
            return true;
        }
        let mut prefix = String::new();
        let mut parts = path.split('/').filter(|p| !p.is_empty()).peekable();
        while let Some(part) = parts.next() {
            if parts.peek().is_none() {
                break;
            }
            if !prefix.is_empty() || path.starts_with('/') {
                prefix.push('/');
            }
            prefix.push_str(part);
            if let Ok(meta) = dir.metadata(&prefix) {
                if self.workspace.hides_file(meta.dev(), meta.ino()) {
                    return true;
                }
            }
        }
        false
    }

    /// An error from resolving a path, as this call may see it: in the stable
    /// view, "not a directory" (a file on the way, which may be a per-turn
    /// file reached through a link) reads as "no such entry", which is what
    /// the same path answers when that file is absent.
    fn seen(&self, e: &io::Error) -> ErrorCode {
        match self.workspace.code(e) {
            ErrorCode::NotDirectory if self.workspace.stable() => ErrorCode::NoEntry,
            other => other,
        }
    }

    /// The metadata of `path` under the folder `fd`, as this call may see
    /// it, charged as one stat (`stat-at` and `metadata-hash-at`).
    fn metadata_under(
        &mut self,
        fd: &Resource<Descriptor>,
        flags: PathFlags,
        path: &str,
    ) -> wasmtime::Result<Result<cap_std::fs::Metadata, ErrorCode>> {
        let open = match self.dir_of(fd)? {
            Ok(open) => open,
            Err(code) => return Ok(Err(code)),
        };
        let Node::Dir(dir) = &open.node else { return Ok(Err(ErrorCode::NotDirectory)) };
        let follow = flags.contains(PathFlags::SYMLINK_FOLLOW);
        let clock = self.clock;
        clock.charge(CALL_COST, || self.metadata_at(dir, path, follow))
    }

    /// The metadata of `path` under `dir` as this call may see it.
    fn metadata_at(&mut self, dir: &Dir, path: &str, follow: bool) -> Result<cap_std::fs::Metadata, ErrorCode> {
        if self.hides_path_at(dir, path) {
            return Err(ErrorCode::NoEntry);
        }
        let meta = if follow { dir.metadata(path) } else { dir.symlink_metadata(path) };
        let meta = meta.map_err(|e| self.seen(&e))?;
        if self.workspace.hides_file(meta.dev(), meta.ino()) {
            return Err(ErrorCode::NoEntry);
        }
        Ok(meta)
    }

    /// Opens `path` under `dir` for reading: a folder or a regular file
    /// that this call may see, opened without blocking.
    fn open_node(&mut self, dir: &Dir, path: &str, follow: bool, want_dir: bool) -> Result<Node, ErrorCode> {
        if self.hides_path_at(dir, path) {
            return Err(ErrorCode::NoEntry);
        }
        if !follow && dir.symlink_metadata(path).is_ok_and(|m| m.is_symlink()) {
            return Err(ErrorCode::Loop);
        }
        let file = dir.open_with(path, &proem_core::disk::nonblocking_read()).map_err(|e| self.seen(&e))?;
        let meta = file.metadata().map_err(|e| self.workspace.code(&e))?;
        if self.workspace.hides_file(meta.dev(), meta.ino()) {
            return Err(ErrorCode::NoEntry);
        }
        if meta.is_dir() {
            Ok(Node::Dir(Dir::from_std_file(file.into_std())))
        } else if want_dir {
            Err(ErrorCode::NotDirectory)
        } else if meta.is_file() {
            Ok(Node::File(file.into_std()))
        } else {
            // A FIFO, socket or device is never opened: it could block.
            Err(ErrorCode::Access)
        }
    }
}

impl types::Host for FsView<'_> {
    fn filesystem_error_code(&mut self, err: Resource<wasmtime::Error>) -> wasmtime::Result<Option<ErrorCode>> {
        let workspace = &self.workspace;
        Ok(self.table.get(&err)?.downcast_ref::<io::Error>().map(|e| workspace.code(e)))
    }
}

impl preopens::Host for FsView<'_> {
    fn get_directories(&mut self) -> wasmtime::Result<Vec<(Resource<Descriptor>, String)>> {
        let Some(root) = &self.workspace.root else { return Ok(Vec::new()) };
        let root = root.try_clone()?;
        let place = self.workspace.take_place()?;
        let fd = self.table.push(Descriptor(Arc::new(Open { node: Node::Dir(root), _place: place })))?;
        Ok(vec![(fd, WORKSPACE_MOUNT.to_string())])
    }
}

impl types::HostDescriptor for FsView<'_> {
    fn read_via_stream(&mut self, fd: Resource<Descriptor>, offset: u64) -> Answer<Resource<DynInputStream>> {
        let open = self.open_of(&fd)?;
        if let Node::Dir(_) = open.node {
            return Ok(Err(ErrorCode::IsDirectory));
        }
        let stream: DynInputStream = Box::new(FileStream { open, position: offset, clock: self.clock.clone() });
        Ok(Ok(self.table.push(stream)?))
    }

    fn write_via_stream(
        &mut self,
        _: Resource<Descriptor>,
        _: u64,
    ) -> Answer<Resource<wasmtime_wasi::p2::DynOutputStream>> {
        Ok(Err(ErrorCode::NotPermitted))
    }

    fn append_via_stream(&mut self, _: Resource<Descriptor>) -> Answer<Resource<wasmtime_wasi::p2::DynOutputStream>> {
        Ok(Err(ErrorCode::NotPermitted))
    }

    fn advise(&mut self, _: Resource<Descriptor>, _: u64, _: u64, _: types::Advice) -> Answer<()> {
        Ok(Ok(()))
    }

    fn sync_data(&mut self, _: Resource<Descriptor>) -> Answer<()> {
        Ok(Ok(()))
    }

    fn get_flags(&mut self, _: Resource<Descriptor>) -> Answer<DescriptorFlags> {
        Ok(Ok(DescriptorFlags::READ))
    }

    fn get_type(&mut self, fd: Resource<Descriptor>) -> Answer<DescriptorType> {
        Ok(Ok(match self.open_of(&fd)?.node {
            Node::Dir(_) => DescriptorType::Directory,
            Node::File(_) => DescriptorType::RegularFile,
        }))
    }

    fn set_size(&mut self, _: Resource<Descriptor>, _: u64) -> Answer<()> {
        Ok(Err(ErrorCode::NotPermitted))
    }

    fn set_times(&mut self, _: Resource<Descriptor>, _: types::NewTimestamp, _: types::NewTimestamp) -> Answer<()> {
        Ok(Err(ErrorCode::NotPermitted))
    }

    fn read(&mut self, fd: Resource<Descriptor>, len: u64, offset: u64) -> Answer<(Vec<u8>, bool)> {
        let open = self.open_of(&fd)?;
        let Node::File(file) = &open.node else { return Ok(Err(ErrorCode::BadDescriptor)) };
        let len = usize::try_from(len).unwrap_or(usize::MAX).min(READ_MAX_BYTES);
        let read = self.clock.charge(read_cost(len), || read_at(file, len, offset))?;
        Ok(read
            .map(|bytes| {
                let end = bytes.is_empty();
                (bytes, end)
            })
            .map_err(|e| self.workspace.code(&e)))
    }

    fn write(&mut self, _: Resource<Descriptor>, _: Vec<u8>, _: u64) -> Answer<u64> {
        Ok(Err(ErrorCode::NotPermitted))
    }

    fn read_directory(&mut self, fd: Resource<Descriptor>) -> Answer<Resource<Listing>> {
        let open = match self.dir_of(&fd)? {
            Ok(open) => open,
            Err(code) => return Ok(Err(code)),
        };
        let Node::Dir(dir) = &open.node else { return Ok(Err(ErrorCode::NotDirectory)) };
        let place = self.workspace.take_place()?;
        let listing = self.clock.charge(OPEN_COST, || {
            let device = dir.dir_metadata()?.dev();
            Ok::<_, io::Error>((dir.entries()?, device))
        })?;
        Ok(match listing {
            Ok((entries, device)) => Ok(self.table.push(Listing { entries, device, _place: place })?),
            Err(e) => Err(self.workspace.code(&e)),
        })
    }

    fn sync(&mut self, _: Resource<Descriptor>) -> Answer<()> {
        Ok(Ok(()))
    }

    fn create_directory_at(&mut self, _: Resource<Descriptor>, _: String) -> Answer<()> {
        Ok(Err(ErrorCode::NotPermitted))
    }

    fn stat(&mut self, fd: Resource<Descriptor>) -> Answer<DescriptorStat> {
        let open = self.open_of(&fd)?;
        let meta = self.clock.charge(CALL_COST, || match &open.node {
            Node::Dir(dir) => dir.dir_metadata(),
            Node::File(file) => file.metadata().map(cap_std::fs::Metadata::from_just_metadata),
        })?;
        Ok(meta.map(|m| stat_of(&m, self.workspace.view)).map_err(|e| self.workspace.code(&e)))
    }

    fn stat_at(&mut self, fd: Resource<Descriptor>, flags: PathFlags, path: String) -> Answer<DescriptorStat> {
        let meta = self.metadata_under(&fd, flags, &path)?;
        Ok(meta.map(|m| stat_of(&m, self.workspace.view)))
    }

    fn set_times_at(
        &mut self,
        _: Resource<Descriptor>,
        _: PathFlags,
        _: String,
        _: types::NewTimestamp,
        _: types::NewTimestamp,
    ) -> Answer<()> {
        Ok(Err(ErrorCode::NotPermitted))
    }

    fn link_at(
        &mut self,
        _: Resource<Descriptor>,
        _: PathFlags,
        _: String,
        _: Resource<Descriptor>,
        _: String,
    ) -> Answer<()> {
        Ok(Err(ErrorCode::NotPermitted))
    }

    fn open_at(
        &mut self,
        fd: Resource<Descriptor>,
        flags: PathFlags,
        path: String,
        oflags: OpenFlags,
        descriptor_flags: DescriptorFlags,
    ) -> Answer<Resource<Descriptor>> {
        let open = match self.dir_of(&fd)? {
            Ok(open) => open,
            Err(code) => return Ok(Err(code)),
        };
        let Node::Dir(dir) = &open.node else { return Ok(Err(ErrorCode::NotDirectory)) };
        if writes(oflags, descriptor_flags) {
            return Ok(Err(ErrorCode::NotPermitted));
        }
        let place = self.workspace.take_place()?;
        let follow = flags.contains(PathFlags::SYMLINK_FOLLOW);
        let want_dir = oflags.contains(OpenFlags::DIRECTORY);
        let clock = self.clock;
        let node = clock.charge(OPEN_COST, || self.open_node(dir, &path, follow, want_dir))?;
        Ok(match node {
            Ok(node) => Ok(self.table.push(Descriptor(Arc::new(Open { node, _place: place })))?),
            Err(code) => Err(code),
        })
    }

    fn readlink_at(&mut self, fd: Resource<Descriptor>, path: String) -> Answer<String> {
        let open = match self.dir_of(&fd)? {
            Ok(open) => open,
            Err(code) => return Ok(Err(code)),
        };
        let Node::Dir(dir) = &open.node else { return Ok(Err(ErrorCode::NotDirectory)) };
        let clock = self.clock;
        let link = clock.charge(CALL_COST, || {
            if self.hides_path_at(dir, &path) {
                return Err(ErrorCode::NoEntry);
            }
            dir.read_link(&path).map_err(|e| self.seen(&e))
        })?;
        Ok(link.and_then(|target| target.into_os_string().into_string().map_err(|_| ErrorCode::IllegalByteSequence)))
    }

    fn remove_directory_at(&mut self, _: Resource<Descriptor>, _: String) -> Answer<()> {
        Ok(Err(ErrorCode::NotPermitted))
    }

    fn rename_at(&mut self, _: Resource<Descriptor>, _: String, _: Resource<Descriptor>, _: String) -> Answer<()> {
        Ok(Err(ErrorCode::NotPermitted))
    }

    fn symlink_at(&mut self, _: Resource<Descriptor>, _: String, _: String) -> Answer<()> {
        Ok(Err(ErrorCode::NotPermitted))
    }

    fn unlink_file_at(&mut self, _: Resource<Descriptor>, _: String) -> Answer<()> {
        Ok(Err(ErrorCode::NotPermitted))
    }

    fn is_same_object(&mut self, a: Resource<Descriptor>, b: Resource<Descriptor>) -> wasmtime::Result<bool> {
        let (a, b) = (self.open_of(&a)?, self.open_of(&b)?);
        let identity = |open: &Open| -> io::Result<(u64, u64)> {
            let meta = match &open.node {
                Node::Dir(dir) => dir.dir_metadata()?,
                Node::File(file) => cap_std::fs::Metadata::from_just_metadata(file.metadata()?),
            };
            Ok((meta.dev(), meta.ino()))
        };
        let same = self.clock.charge(CALL_COST, || Ok::<_, io::Error>(identity(&a)? == identity(&b)?))?;
        Ok(same.unwrap_or(false))
    }

    fn metadata_hash(&mut self, fd: Resource<Descriptor>) -> Answer<types::MetadataHashValue> {
        let open = self.open_of(&fd)?;
        let meta = self.clock.charge(CALL_COST, || match &open.node {
            Node::Dir(dir) => dir.dir_metadata(),
            Node::File(file) => file.metadata().map(cap_std::fs::Metadata::from_just_metadata),
        })?;
        Ok(meta.map(|m| identity_hash(&m)).map_err(|e| self.workspace.code(&e)))
    }

    fn metadata_hash_at(
        &mut self,
        fd: Resource<Descriptor>,
        flags: PathFlags,
        path: String,
    ) -> Answer<types::MetadataHashValue> {
        let meta = self.metadata_under(&fd, flags, &path)?;
        Ok(meta.map(|m| identity_hash(&m)))
    }

    fn drop(&mut self, fd: Resource<Descriptor>) -> wasmtime::Result<()> {
        self.table.delete(fd)?;
        Ok(())
    }
}

impl types::HostDirectoryEntryStream for FsView<'_> {
    fn read_directory_entry(&mut self, listing: Resource<Listing>) -> Answer<Option<types::DirectoryEntry>> {
        let FsView { workspace, table, clock } = self;
        let stable = workspace.stable();
        let hidden: &[(u64, u64)] = if stable { workspace.per_turn_files() } else { &[] };
        let listing = table.get_mut(&listing)?;
        loop {
            // Entries the view hides are skipped uncharged: what a call is
            // charged never depends on them.
            let entry = match listing.entries.next() {
                None => return Ok(Ok(None)),
                Some(Err(e)) => return Ok(Err(workspace.code(&e))),
                Some(Ok(entry)) => entry,
            };
            let name = entry.file_name();
            if stable
                && (name.to_str().is_some_and(is_per_turn_name) || hidden.contains(&(listing.device, entry.ino())))
            {
                continue;
            }
            let answer = clock.charge(ENTRY_COST, || {
                let name = name.into_string().map_err(|_| ErrorCode::IllegalByteSequence)?;
                let type_ = entry.file_type().map(descriptor_type).unwrap_or(DescriptorType::Unknown);
                Ok(types::DirectoryEntry { type_, name })
            })?;
            return Ok(answer.map(Some));
        }
    }

    fn drop(&mut self, listing: Resource<Listing>) -> wasmtime::Result<()> {
        self.table.delete(listing)?;
        Ok(())
    }
}

/// What a read of `len` bytes charges.
fn read_cost(len: usize) -> Duration {
    CALL_COST + READ_COST_PER_KIB * u32::try_from(len.div_ceil(1024)).unwrap_or(u32::MAX)
}

/// Reads at most `len` bytes at `offset` (a short read at the end).
fn read_at(file: &std::fs::File, len: usize, offset: u64) -> io::Result<Vec<u8>> {
    let mut buffer = vec![0; len];
    loop {
        match file.read_at(&mut buffer, offset) {
            Ok(n) => {
                buffer.truncate(n);
                return Ok(buffer);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}

/// A file read as a stream: each read is one charged read of at most
/// [`READ_MAX_BYTES`] at the stream's position, made when asked (nothing is
/// read ahead or held between reads).
struct FileStream {
    open: Arc<Open>,
    position: u64,
    clock: CallClock,
}

impl InputStream for FileStream {
    fn read(&mut self, size: usize) -> StreamResult<bytes::Bytes> {
        let Node::File(file) = &self.open.node else { return Err(StreamError::Closed) };
        let len = size.min(READ_MAX_BYTES);
        let position = self.position;
        let read = self.clock.charge(read_cost(len), || read_at(file, len, position)).map_err(StreamError::Trap)?;
        match read {
            Ok(bytes) if bytes.is_empty() && len > 0 => Err(StreamError::Closed),
            Ok(bytes) => {
                self.position = self.position.saturating_add(bytes.len() as u64);
                Ok(bytes.into())
            }
            Err(e) => Err(StreamError::LastOperationFailed(e.into())),
        }
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for FileStream {
    // A read never waits: the file is local and read when asked.
    async fn ready(&mut self) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A filesystem error for the machine's reason is noted as the call's
    /// trouble (its answer is then not used); one about the workspace is
    /// not. Both reach the plugin as their WASI codes.
    #[test]
    fn only_the_machines_refusals_are_the_hosts_trouble() {
        let dir = tempfile::tempdir().unwrap();
        let workspace = Workspace::mount(dir.path(), View::Stable).unwrap();
        let missing = io::Error::from(rustix::io::Errno::NOENT);
        assert_eq!(workspace.code(&missing), ErrorCode::NoEntry);
        assert_eq!(workspace.host_trouble(), None);
        for errno in [rustix::io::Errno::MFILE, rustix::io::Errno::NFILE, rustix::io::Errno::NOMEM] {
            let workspace = Workspace::mount(dir.path(), View::Stable).unwrap();
            assert_eq!(workspace.code(&io::Error::from(errno)), ErrorCode::InsufficientMemory);
            assert!(workspace.host_trouble().is_some(), "{errno:?}");
        }
    }

    #[test]
    fn every_spelling_of_a_per_turn_file_is_a_per_turn_name() {
        for name in [
            "USER.md",
            "user.md",
            "User.MD",
            " USER.md",
            "USER.md ",
            "USER.md.",
            "USER.md. .",
            "uſer.md",
            "HEARTBEAT.md",
            "heartbeat.MD",
            "BOOTSTRAP.md",
            "\tbootstrap.md\n",
        ] {
            assert!(is_per_turn_name(name), "{name:?}");
        }
        for name in ["", ".", "..", "USER.md.bak", "USER", "SOUL.md", "MEMORY.md", "USERS.md", "my USER.md"] {
            assert!(!is_per_turn_name(name), "{name:?}");
        }
    }
}
