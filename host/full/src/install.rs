//! Installing a plugin binary into an agent: `proem plugin add` (a local
//! file) and `proem plugin pull` (from a registry) both end here.
//!
//! The binary goes to `AGENT_DIR/plugins/<id>.wasm` and a `[[plugins]]`
//! entry pinning its sha256 is appended to `AGENT_DIR/proem.toml` (the
//! operator's own lines are kept as they are). Nothing existing is
//! overwritten, and the new config is checked before anything is written.
//!
//! These are the only writes proem makes into an agent directory, and one
//! rule keeps them there whatever the folder holds or someone swaps in
//! meanwhile: the agent directory is opened once, and every write is one
//! name at a directory descriptor opened with `O_NOFOLLOW` (`openat`,
//! `mkdirat`, `renameat`). A symlink at `plugins/`, at the plugin file or
//! at proem.toml is refused, never followed, and no path is resolved
//! below the agent directory, so nothing lands outside it. Each file is
//! written whole to a new temporary file beside it (`O_EXCL`), synced,
//! and renamed into place (the plugin file without replacing anything):
//! a reader sees the old file or the new one, never half of one, and a
//! rename replaces a directory entry without writing through what the
//! entry was (a symlink, a hard link).

use proem_core::config::CONFIG_FILE;
use proem_wasm::binary;
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;
use std::io::{Read, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

/// The folder plugin files go to, in the agent directory.
const PLUGINS_DIR: &str = "plugins";

/// What an install did.
#[derive(Debug, Clone)]
pub struct Installed {
    /// The plugin id written to proem.toml.
    pub id: String,
    /// The file written, relative to the agent directory.
    pub path: String,
    /// The component's sha256, pinned in the entry.
    pub sha256: String,
}

/// An install checked against the agent as it is, not yet written.
#[derive(Debug)]
pub struct Plan {
    id: String,
    agent_dir: PathBuf,
    /// The plugin file's name in `plugins/`.
    file_name: String,
    /// Whether an entry with this id may be re-pinned (`--replace`).
    replace: bool,
}

/// What `--replace` found to re-pin: the entry's pin, if any.
#[derive(Debug)]
struct Repin {
    old_sha256: Option<String>,
}

/// Checks that `id` can be added to the agent at `agent_dir` (created when
/// missing): a valid id, not configured yet, its file not there yet, and
/// nothing on the way a symlink. Reads only; [`Plan::install`] checks
/// again through the descriptors it writes with.
pub fn plan(agent_dir: &Path, id: &str) -> Result<Plan, String> {
    plan_with(agent_dir, id, false)
}

/// [`plan`], and with `replace`, an entry with this id may exist: its
/// plugin file (`plugins/<name>.wasm`, as `plugin add` wrote it) is
/// replaced and its `sha256` pin updated in place (`plugin add --replace`,
/// the author's loop). Every other line of proem.toml stays as it is.
pub fn plan_with(agent_dir: &Path, id: &str, replace: bool) -> Result<Plan, String> {
    proem_core::plugin::hooks::check_id(id)
        .map_err(|_| format!("{id:?} cannot be a plugin id (1-64 of a-z, 0-9, _, -, .): give one with --id"))?;
    let plan = Plan {
        id: id.to_string(),
        agent_dir: agent_dir.to_path_buf(),
        file_name: format!("{}.wasm", id.replace(['-', '.'], "_")),
        replace,
    };
    match std::fs::metadata(agent_dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(plan),
        Err(e) => return Err(format!("{}: {e}", agent_dir.display())),
        Ok(meta) if !meta.is_dir() => {
            return Err(format!("{}: not a directory (the agent directory to add the plugin to)", agent_dir.display()))
        }
        Ok(_) => {}
    }
    let agent = AgentDir::open(agent_dir)?;
    let config = agent.read_config()?;
    let (plan, repin) = agent.resolve(plan, config.as_ref())?;
    agent.check(&plan, repin.as_ref())?;
    Ok(plan)
}

impl Plan {
    /// The plugin file, relative to the agent directory.
    fn relative(&self) -> String {
        format!("{PLUGINS_DIR}/{}", self.file_name)
    }

    /// Writes the binary and the entry, `note` as a comment above it.
    pub fn install(self, bytes: &[u8], note: &str) -> Result<Installed, String> {
        binary::check(bytes)?;
        let sha256 = proem_core::digest::sha256_hex(bytes);
        std::fs::create_dir_all(&self.agent_dir).map_err(|e| format!("{}: {e}", self.agent_dir.display()))?;
        let agent = AgentDir::open(&self.agent_dir)?;
        // Again, through the descriptor every write below goes through.
        let config = agent.read_config()?;
        let (plan, repin) = agent.resolve(self, config.as_ref())?;
        agent.check(&plan, repin.as_ref())?;
        let existing = config.as_ref().map(|c| c.text.as_str());
        let text = match &repin {
            Some(repin) => repinned(existing.unwrap_or_default(), &plan.id, repin, &sha256, &agent.config_path())?,
            None => with_entry(existing, &plan.id, &plan.relative(), &sha256, note),
        };
        proem_core::config::Config::parse(&text, &agent.config_path())
            .map_err(|e| format!("the new entry would not load, so nothing was changed: {e}"))?;
        let plugins = agent.plugins_dir(true)?.ok_or_else(|| agent.refusal(PLUGINS_DIR, Errno::NOENT))?;
        let file_mode =
            if repin.is_some() { Replace::Keeping(Mode::from_bits_truncate(0o644)) } else { Replace::Never };
        write_atomically(plugins.as_fd(), &plan.file_name, bytes, file_mode)
            .map_err(|e| format!("{}: {e}", plan.agent_dir.join(plan.relative()).display()))?;
        let this = plan;
        let replace = config.map_or(Replace::Never, |c| Replace::Keeping(c.mode));
        if let Err(e) = write_atomically(agent.fd.as_fd(), CONFIG_FILE, text.as_bytes(), replace) {
            if repin.is_some() {
                return Err(format!(
                    "{}: {e}; the plugin file was replaced but its pin was not: run the command again",
                    agent.config_path().display()
                ));
            }
            // Leave the agent as it was.
            let _ = rustix::fs::unlinkat(&plugins, this.file_name.as_str(), AtFlags::empty());
            return Err(format!("{}: {e}; nothing was changed", agent.config_path().display()));
        }
        Ok(Installed { path: this.relative(), id: this.id, sha256 })
    }
}

/// `text` with the pin of the entry `id` changed to `sha256`: the one line
/// `sha256 = "<old>"` it has, rewritten in place (an entry without a pin
/// keeps none). When that line cannot be found exactly once, nothing is
/// changed and the error says to edit the pin by hand.
fn repinned(text: &str, id: &str, repin: &Repin, sha256: &str, shown: &Path) -> Result<String, String> {
    let Some(old) = &repin.old_sha256 else { return Ok(text.to_string()) };
    let matches: Vec<usize> = text
        .lines()
        .enumerate()
        .filter(|(_, line)| {
            let line = line.trim();
            line.strip_prefix("sha256").map(str::trim_start).and_then(|l| l.strip_prefix('=')).map(str::trim)
                == Some(&format!("\"{old}\""))
        })
        .map(|(n, _)| n)
        .collect();
    let [line] = matches[..] else {
        return Err(format!(
            "{}: cannot find the one line `sha256 = \"{old}\"` of plugin {id} to re-pin ({} found); \
             set its sha256 to \"{sha256}\" by hand",
            shown.display(),
            matches.len()
        ));
    };
    let mut out = String::with_capacity(text.len());
    for (n, piece) in text.split_inclusive('\n').enumerate() {
        if n == line {
            let indent = &piece[..piece.len() - piece.trim_start().len()];
            let end = if piece.ends_with('\n') { "\n" } else { "" };
            out.push_str(&format!("{indent}sha256 = \"{sha256}\"{end}"));
        } else {
            out.push_str(piece);
        }
    }
    Ok(out)
}

/// `existing` config text with the new `[[plugins]]` entry appended.
fn with_entry(existing: Option<&str>, id: &str, relative: &str, sha256: &str, note: &str) -> String {
    let mut text = existing.unwrap_or_default().to_string();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    let note = proem_core::text::one_line(note, 300);
    text.push_str(&format!("\n# {note}\n[[plugins]]\nid = \"{id}\"\npath = \"{relative}\"\nsha256 = \"{sha256}\"\n"));
    text
}

/// The agent directory, opened once: every read and write of an install
/// is one name relative to it (or to `plugins/`, opened from it).
struct AgentDir {
    fd: OwnedFd,
    path: PathBuf,
}

/// proem.toml as an install found it.
struct ExistingConfig {
    text: String,
    /// Its permission bits, kept by the rewrite.
    mode: Mode,
}

impl AgentDir {
    fn open(path: &Path) -> Result<AgentDir, String> {
        let fd = rustix::fs::open(path, OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())
            .map_err(|e| format!("{}: cannot open the agent directory: {}", path.display(), std::io::Error::from(e)))?;
        Ok(AgentDir { fd, path: path.to_path_buf() })
    }

    fn config_path(&self) -> PathBuf {
        self.path.join(CONFIG_FILE)
    }

    /// With `--replace` and an entry for the plan's id: the plan for its
    /// file (which must be `plugins/<name>.wasm`, where `plugin add` puts
    /// one) and what to re-pin.
    fn resolve(&self, mut plan: Plan, config: Option<&ExistingConfig>) -> Result<(Plan, Option<Repin>), String> {
        let Some(existing) = config else { return Ok((plan, None)) };
        let parsed =
            proem_core::config::Config::parse(&existing.text, &self.config_path()).map_err(|e| e.to_string())?;
        let Some(entry) = parsed.plugins.iter().find(|p| p.id == plan.id) else { return Ok((plan, None)) };
        if !plan.replace {
            return Err(format!(
                "{}: a plugin with id {} is already configured; re-pin it to this binary with --replace, \
                 or add it with --id OTHER",
                self.config_path().display(),
                plan.id
            ));
        }
        let file = entry.path.as_deref().and_then(|p| p.strip_prefix(&format!("{PLUGINS_DIR}/")));
        let file = file.filter(|f| f.ends_with(".wasm") && !f.contains('/') && !f.starts_with('.'));
        let Some(file) = file else {
            return Err(format!(
                "{}: plugin {} is not a file in {PLUGINS_DIR}/ (it is {}); --replace re-pins only what plugin add \
                 installed: point its path at {PLUGINS_DIR}/NAME.wasm first",
                self.config_path().display(),
                plan.id,
                entry.path.as_deref().or(entry.source.as_deref()).unwrap_or("unset")
            ));
        };
        plan.file_name = file.to_string();
        Ok((plan, Some(Repin { old_sha256: entry.sha256.clone() })))
    }

    /// Checks the install against the directory as it is now: nothing on
    /// the way a symlink, and the plugin file free unless it is re-pinned
    /// (`repin`), when it must be a regular file.
    fn check(&self, plan: &Plan, repin: Option<&Repin>) -> Result<(), String> {
        if let Some(plugins) = self.plugins_dir(false)? {
            if repin.is_some() {
                return match rustix::fs::statat(&plugins, plan.file_name.as_str(), AtFlags::SYMLINK_NOFOLLOW) {
                    Err(Errno::NOENT) => Ok(()),
                    Ok(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile => Ok(()),
                    _ => Err(format!(
                        "{}: not a regular file; proem replaces only a plugin file it installed",
                        self.path.join(plan.relative()).display()
                    )),
                };
            }
            match rustix::fs::statat(&plugins, plan.file_name.as_str(), AtFlags::SYMLINK_NOFOLLOW) {
                Err(Errno::NOENT) => {}
                _ => {
                    return Err(format!(
                        "{}: already exists; proem overwrites a plugin file only to re-pin its entry (--replace)",
                        self.path.join(plan.relative()).display()
                    ))
                }
            }
        }
        Ok(())
    }

    /// Reads proem.toml: none, or a regular file of at most
    /// [`proem_core::config::MAX_CONFIG_BYTES`] (never through a symlink, never
    /// a FIFO).
    fn read_config(&self) -> Result<Option<ExistingConfig>, String> {
        let shown = self.config_path();
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = match rustix::fs::openat(&self.fd, CONFIG_FILE, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(None),
            Err(e) => return Err(self.refusal(CONFIG_FILE, e)),
        };
        let stat = rustix::fs::fstat(&fd).map_err(|e| format!("{}: {}", shown.display(), std::io::Error::from(e)))?;
        if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
            return Err(format!(
                "{}: not a regular file; proem adds plugins only to a proem.toml file",
                shown.display()
            ));
        }
        let max = proem_core::config::MAX_CONFIG_BYTES;
        let mut bytes = Vec::new();
        std::fs::File::from(fd)
            .take(max.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|e| format!("{}: {e}", shown.display()))?;
        if bytes.len() as u64 > max {
            return Err(format!("{}: over the {max} byte limit of a config file", shown.display()));
        }
        let text = String::from_utf8(bytes).map_err(|_| format!("{}: not valid UTF-8", shown.display()))?;
        Ok(Some(ExistingConfig { text, mode: Mode::from_bits_truncate(stat.st_mode & 0o7777) }))
    }

    /// `plugins/`, opened without following a symlink; made first when
    /// `create` (none when missing and not `create`).
    fn plugins_dir(&self, create: bool) -> Result<Option<OwnedFd>, String> {
        if create {
            match rustix::fs::mkdirat(&self.fd, PLUGINS_DIR, Mode::from_bits_truncate(0o755)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(e) => return Err(self.refusal(PLUGINS_DIR, e)),
            }
        }
        let flags = OFlags::DIRECTORY | OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        match rustix::fs::openat(&self.fd, PLUGINS_DIR, flags, Mode::empty()) {
            Ok(fd) => Ok(Some(fd)),
            Err(Errno::NOENT) if !create => Ok(None),
            Err(e) => Err(self.refusal(PLUGINS_DIR, e)),
        }
    }

    /// The error for `name` in the agent directory that could not be
    /// opened with `errno`: a symlink is named as one.
    fn refusal(&self, name: &str, errno: Errno) -> String {
        let shown = self.path.join(name);
        match rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::Symlink => format!(
                "{}: a symlink; proem never writes through a symlink: replace it with the {} itself",
                shown.display(),
                if name == PLUGINS_DIR { "folder" } else { "file" }
            ),
            Ok(stat) if name == PLUGINS_DIR && FileType::from_raw_mode(stat.st_mode) != FileType::Directory => {
                format!("{}: not a directory; plugin files go into a plugins folder", shown.display())
            }
            _ => format!("{}: {}", shown.display(), std::io::Error::from(errno)),
        }
    }
}

/// Whether a write may replace the file it is named for.
#[derive(Clone, Copy)]
enum Replace {
    /// No: the name must be free (a plugin file, a first proem.toml).
    Never,
    /// Yes, with the file's permission bits (proem.toml).
    Keeping(Mode),
}

/// Writes `bytes` as `name` in `dir`: a new temporary file beside it,
/// synced, renamed into place, then the folder synced. Never follows a
/// symlink; with [`Replace::Never`], fails when `name` exists in any form.
fn write_atomically(dir: BorrowedFd, name: &str, bytes: &[u8], replace: Replace) -> std::io::Result<()> {
    let (temp, file) = create_temp(dir, name)?;
    let written = (|| -> std::io::Result<()> {
        let mut file = std::fs::File::from(file);
        if let Replace::Keeping(mode) = replace {
            rustix::fs::fchmod(&file, mode)?;
        }
        file.write_all(bytes)?;
        file.sync_all()?;
        match replace {
            Replace::Keeping(_) => rustix::fs::renameat(dir, temp.as_str(), dir, name)?,
            Replace::Never => rename_without_replacing(dir, &temp, name)?,
        }
        Ok(())
    })();
    if written.is_err() {
        let _ = rustix::fs::unlinkat(dir, temp.as_str(), AtFlags::empty());
    }
    written?;
    Ok(rustix::fs::fsync(dir)?)
}

/// A new temporary file in `dir` for `name` (`.NAME.proem-PID-N.tmp`),
/// created exclusively.
fn create_temp(dir: BorrowedFd, name: &str) -> std::io::Result<(String, OwnedFd)> {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let temp = format!(".{name}.proem-{}-{n}.tmp", std::process::id());
        match rustix::fs::openat(dir, temp.as_str(), flags, Mode::from_bits_truncate(0o644)) {
            Ok(fd) => return Ok((temp, fd)),
            Err(Errno::EXIST) if n < 1024 => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Renames `temp` to `name` in `dir` only if `name` is free
/// (`RENAME_NOREPLACE`; where the filesystem has no such rename, a hard
/// link, which fails the same way, then the temporary name removed).
fn rename_without_replacing(dir: BorrowedFd, temp: &str, name: &str) -> std::io::Result<()> {
    match rustix::fs::renameat_with(dir, temp, dir, name, rustix::fs::RenameFlags::NOREPLACE) {
        Ok(()) => Ok(()),
        Err(Errno::INVAL | Errno::NOSYS | Errno::NOTSUP) => {
            rustix::fs::linkat(dir, temp, dir, name, AtFlags::empty())?;
            Ok(rustix::fs::unlinkat(dir, temp, AtFlags::empty())?)
        }
        Err(Errno::EXIST) => {
            Err(std::io::Error::new(std::io::ErrorKind::AlreadyExists, "already exists; proem never overwrites it"))
        }
        Err(e) => Err(e.into()),
    }
}

/// Compiles a plugin just installed into the compiled-component cache and
/// keeps what `describe` says about it, as its first build would: so that
/// build starts warm. A failure here is said, not fatal (the build will
/// say it again, with the agent's config).
pub fn warm(agent_dir: &Path, done: &Installed) -> String {
    let config = proem_core::config::PluginConfig {
        id: done.id.clone(),
        path: Some(done.path.clone()),
        sha256: Some(done.sha256.clone()),
        ..proem_core::config::PluginConfig::default()
    };
    let cache = proem_core::cache_dir::default_path();
    proem::keep_new_plugin_digest(agent_dir, &done.path, cache.as_deref());
    match proem::load_plugins(&[config], agent_dir, cache.as_deref()) {
        Ok(set) => match set.plugins().first().map(|p| &p.state) {
            // Described from disk before: compiled only if its cache entry is gone.
            Some(Ok(ready)) => match (ready.link(), cache.is_some()) {
                (Ok(()), true) => "compiled into the plugin cache\n".into(),
                (Ok(()), false) => String::new(),
                (Err(why), _) => format!("note: it does not link yet: {why}\n"),
            },
            Some(Err(why)) => format!("note: it does not load yet: {why}\n"),
            None => String::new(),
        },
        Err(e) => format!("note: it does not load yet: {e}\n"),
    }
}

/// Adds the local plugin file `file` to the agent at `agent_dir`; `id`
/// defaults to the plugin's own id from `describe`.
pub fn add(file: &Path, agent_dir: &Path, id: Option<&str>) -> Result<Installed, String> {
    add_with(file, agent_dir, id, false)
}

/// [`add`]; with `replace`, an entry with the same id is re-pinned to this
/// binary (see [`plan_with`]).
pub fn add_with(file: &Path, agent_dir: &Path, id: Option<&str>, replace: bool) -> Result<Installed, String> {
    let bytes = proem_core::disk::read_regular_file(file, proem_core::plugin::set::MAX_PLUGIN_BYTES)
        .map_err(|e| format!("{}: cannot read: {e}", file.display()))?;
    binary::check(&bytes).map_err(|e| format!("{}: {e}", file.display()))?;
    let id = match id {
        Some(id) => id.to_string(),
        None => file
            .file_stem()
            .and_then(|s| s.to_str())
            .map(|s| s.replace('_', "-").to_ascii_lowercase())
            .unwrap_or_else(|| "plugin".into()),
    };
    plan_with(agent_dir, &id, replace)?.install(&bytes, &format!("Added from {}.", file.display()))
}
