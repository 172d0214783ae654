//! The agents a service serves, each with one warm [`Assembler`], and their
//! reloading.
//!
//! An agent is a folder with a proem.toml: named on the command line, or a
//! subfolder of `--agents DIR`. Its id is the folder's name; it also
//! answers to its proem.toml's `[agent] id` when that differs. An id two
//! agents would answer to is an error at startup; one that appears later
//! (a folder added, a config edited) answers for neither but by folder
//! name, and is logged. Every
//! [`POLL_INTERVAL`] a background task looks at what an assembler cannot
//! watch itself (its proem.toml and its plugin files; the workspace files
//! are the assembler's own memo's business) and at the `--agents` folder.
//! A changed agent is reopened off the request path; until that succeeds the
//! last good assembler keeps serving and the error shows on the agent's
//! status. New folders appear, removed ones disappear. A request does not
//! wait for the poll: what the serving assembler was loaded from (every
//! entry on the way to the folder, proem.toml, the plugin files) is
//! watched too ([`Agent::sources_may_have_changed`], one `FIONREAD` per
//! device the path crosses: [`crate::sources`]), and a
//! request that finds it touched checks the stamps and reloads first
//! ([`Agents::reload_if_changed`]): a folder replaced or a config edited
//! before a request was sent is what that request is built from.
//!
//! What is served changes only on what was read: a listing of `--agents`
//! that fails (out of file descriptors, say) changes no agent, a file whose
//! stamp cannot be read (for another reason than not existing) decides
//! nothing, and a load that fails records nothing as seen: it is tried
//! again at the next poll, then less often while it keeps failing (at
//! most every [`RETRY_MAX`]), so a failure that was the machine's, not the
//! files', heals by itself.

use crate::sources::Sources;
use proem::Assembler;
use proem_core::config::{Config, CONFIG_FILE};
use proem_core::sync::Lock;
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// How often the files that need a reload are looked at.
pub const POLL_INTERVAL: Duration = Duration::from_millis(250);

/// The longest wait before a load that keeps failing is tried again.
pub const RETRY_MAX: Duration = Duration::from_secs(2);

/// Where the agents come from.
#[derive(Debug, Clone)]
pub enum Source {
    /// These folders, each an agent.
    Dirs(Vec<PathBuf>),
    /// Every subfolder of this folder that holds a proem.toml.
    Parent(PathBuf),
}

/// One served agent.
pub struct Agent {
    /// Its id (the folder name).
    pub id: String,
    /// Its folder.
    pub dir: PathBuf,
    /// The assembler serving now: the last that opened without error.
    pub assembler: Option<Arc<Assembler>>,
    /// Why the last (re)load failed, when it did, with files named relative
    /// to the folder; cleared by a good one.
    pub last_error: Option<String>,
    /// Successful reloads (the first load not counted).
    pub reloads: u64,
    /// When the serving assembler was opened.
    pub loaded_at: SystemTime,
    /// The stamps of the files whose change means a reload, as the last
    /// load found them (`None`: one could not be read).
    stamps: Option<Stamps>,
    /// Whether the last load succeeded with every stamp read: then only a
    /// change of stamps loads again; else a retry is due at `retry_at`.
    settled: bool,
    /// Loads failed in a row.
    failures: u32,
    /// When an unsettled agent is loaded again.
    retry_at: Instant,
    /// A watch on the files the stamps are of and on every entry on the way
    /// to the folder, taken before the last load looked at them
    /// (`None`: it could not be set up; every request then checks the
    /// stamps).
    sources: Option<Sources>,
    /// Held while the agent is loaded again, so that requests and the poll
    /// that find it changed at once load it once.
    reloading: Arc<Lock<()>>,
}

/// What one poll found.
#[derive(Debug, Default)]
pub struct Changes {
    /// (agent id, Ok or the reload error), for reloads tried (a failure
    /// repeating the agent's last error is not listed again).
    pub reloaded: Vec<(String, Result<(), String>)>,
    /// Agents that appeared.
    pub added: Vec<String>,
    /// Agents that disappeared.
    pub removed: Vec<String>,
}

/// Every agent, by id.
pub struct Agents {
    source: Source,
    agents: Lock<BTreeMap<String, Arc<Lock<Agent>>>>,
    /// Why the last listing of `--agents` failed, while it does (logged once).
    listing_error: Lock<Option<String>>,
    /// The ids two agents answer to, as the last poll found them (logged once).
    known_clashes: Lock<Vec<String>>,
}

impl Agents {
    /// Finds and opens the agents. An agent that fails to open is kept with
    /// its error (it serves once fixed); two folders with one name are an error.
    pub fn open(source: Source) -> Result<Agents, String> {
        let agents =
            Agents { source, agents: Lock::default(), listing_error: Lock::default(), known_clashes: Lock::default() };
        let dirs = agents.discover()?;
        let mut seen = BTreeMap::new();
        for dir in dirs {
            let id = agent_id(&dir)?;
            if let Some(other) = seen.insert(id.clone(), dir.clone()) {
                return Err(format!(
                    "{} and {} would both be agent {id}: agent ids are folder names, so give them different names",
                    other.display(),
                    dir.display()
                ));
            }
        }
        let mut map = agents.agents.lock();
        for (id, dir) in seen {
            map.insert(id.clone(), Arc::new(Lock::new(Agent::load(id, dir))));
        }
        drop(map);
        if let Some(clash) = agents.clashes().into_iter().next() {
            return Err(clash);
        }
        Ok(agents)
    }

    /// The agent `id`: by folder name, else by the `[agent] id` exactly one
    /// agent answers to and no folder is named.
    pub fn get(&self, id: &str) -> Option<Arc<Lock<Agent>>> {
        let map = self.agents.lock();
        if let Some(agent) = map.get(id) {
            return Some(agent.clone());
        }
        let mut named = map.values().filter(|a| a.lock().config_id().as_deref() == Some(id));
        match (named.next(), named.next()) {
            (Some(agent), None) => Some(agent.clone()),
            _ => None,
        }
    }

    /// Every id two agents would answer to, as an error naming both
    /// folders and the fix (sorted, one per id).
    pub fn clashes(&self) -> Vec<String> {
        let agents: Vec<(String, PathBuf, Option<String>)> = self
            .all()
            .iter()
            .map(|a| {
                let a = a.lock();
                (a.id.clone(), a.dir.clone(), a.config_id())
            })
            .collect();
        let mut by_id: BTreeMap<&str, Vec<&PathBuf>> = BTreeMap::new();
        for (folder, dir, config_id) in &agents {
            by_id.entry(folder.as_str()).or_default().push(dir);
            if let Some(config_id) = config_id.as_deref().filter(|c| c != folder) {
                by_id.entry(config_id).or_default().push(dir);
            }
        }
        by_id
            .into_iter()
            .filter(|(_, dirs)| dirs.len() > 1)
            .map(|(id, dirs)| {
                let dirs: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
                format!(
                    "{} would all answer to agent id {id:?} (a folder's name or its proem.toml's [agent] id):                      rename a folder or change an [agent] id so that each id names one agent",
                    dirs.join(" and ")
                )
            })
            .collect()
    }

    /// Every agent, sorted by id.
    pub fn all(&self) -> Vec<Arc<Lock<Agent>>> {
        self.agents.lock().values().cloned().collect()
    }

    /// Looks for changes once and applies them (blocking: call it off the
    /// request path).
    pub fn poll(&self) -> Changes {
        let mut changes = Changes::default();
        if let Source::Parent(_) = &self.source {
            self.follow_folders(&mut changes);
        }
        for agent in self.all() {
            let reloading = agent.lock().reloading.clone();
            let _one_at_a_time = reloading.lock();
            reload_if_due(&agent, &mut changes);
        }
        self.note_clashes();
        changes
    }

    /// Loads `agent` again now if what it was loaded from changed (its
    /// stamps differ) or its retry is due; else watches its sources again
    /// (the event was about another file in its folder). Blocking: call it
    /// off the async threads, when [`Agent::sources_may_have_changed`].
    pub fn reload_if_changed(&self, agent: &Arc<Lock<Agent>>) -> Changes {
        let mut changes = Changes::default();
        let reloading = agent.lock().reloading.clone();
        let _one_at_a_time = reloading.lock();
        if !agent.lock().sources_may_have_changed() {
            // Another request or the poll has just loaded it.
            return changes;
        }
        let (dir, files) = {
            let a = agent.lock();
            (a.dir.clone(), a.source_files())
        };
        // Watched before the stamps are looked at: a change from here on is
        // an event on the new watch.
        let sources = Sources::watch(&dir, &files);
        if !reload_if_due(agent, &mut changes) {
            agent.lock().sources = sources;
        }
        changes
    }

    /// Logs each id that two agents came to answer to since the last poll
    /// (each then answers by folder name only, see [`Agents::get`]).
    fn note_clashes(&self) {
        let clashes = self.clashes();
        let mut known = self.known_clashes.lock();
        for clash in clashes.iter().filter(|c| !known.contains(c)) {
            tracing::warn!("{clash}; until then such an id answers for neither agent");
        }
        *known = clashes;
    }

    /// Adds the `--agents` subfolders that appeared and removes those that
    /// went, when the folder could be listed whole; else changes nothing.
    fn follow_folders(&self, changes: &mut Changes) {
        let dirs = match self.discover() {
            Ok(dirs) => {
                if let Some(error) = self.listing_error.lock().take() {
                    tracing::info!("the agents folder lists again (it failed: {error})");
                }
                dirs
            }
            Err(error) => {
                let mut last = self.listing_error.lock();
                if last.as_deref() != Some(&error) {
                    tracing::warn!("{error}; the agents stay as they are until it lists again");
                    *last = Some(error);
                }
                return;
            }
        };
        let found: BTreeMap<String, PathBuf> =
            dirs.into_iter().filter_map(|d| agent_id(&d).ok().map(|id| (id, d))).collect();
        let mut map = self.agents.lock();
        let gone: Vec<String> = map.keys().filter(|id| !found.contains_key(*id)).cloned().collect();
        for id in gone {
            map.remove(&id);
            changes.removed.push(id);
        }
        let new: Vec<(String, PathBuf)> = found.into_iter().filter(|(id, _)| !map.contains_key(id)).collect();
        drop(map);
        for (id, dir) in new {
            let agent = Agent::load(id.clone(), dir);
            self.agents.lock().insert(id.clone(), Arc::new(Lock::new(agent)));
            changes.added.push(id);
        }
    }

    fn discover(&self) -> Result<Vec<PathBuf>, String> {
        match &self.source {
            Source::Dirs(dirs) => {
                for d in dirs {
                    if !d.is_dir() {
                        return Err(format!("{}: not a directory (an agent directory to serve)", d.display()));
                    }
                }
                Ok(dirs.clone())
            }
            Source::Parent(parent) => list_agent_folders(parent)
                .map_err(|e| format!("{}: cannot list the agents folder: {e}", parent.display())),
        }
    }
}

/// The subfolders of `parent` holding a proem.toml, sorted. Any error but
/// "not found" on an entry fails the whole listing: an entry that could
/// not be looked at is not an agent that went away.
fn list_agent_folders(parent: &Path) -> io::Result<Vec<PathBuf>> {
    let mut dirs = Vec::new();
    for entry in std::fs::read_dir(parent)? {
        let path = entry?.path();
        let is_dir = exists_as(&path, |m| m.is_dir())?;
        if is_dir && exists_as(&path.join(CONFIG_FILE), |m| m.is_file())? {
            dirs.push(path);
        }
    }
    dirs.sort();
    Ok(dirs)
}

/// Whether `path` exists and `kind` holds for its metadata (symlinks
/// followed); an error but "not found" is an error.
fn exists_as(path: &Path, kind: impl Fn(&std::fs::Metadata) -> bool) -> io::Result<bool> {
    match std::fs::metadata(path) {
        Ok(m) => Ok(kind(&m)),
        Err(e) if is_missing(&e) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Errors that mean the file is not there (a component of its path is
/// missing or is not a folder), as against errors that mean it could not
/// be looked at.
fn is_missing(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory)
}

impl Agent {
    /// Whether what the serving assembler was loaded from may have changed
    /// since: any event in a folder on the way to it, to proem.toml or to a
    /// plugin file ([`Sources`]; or, without file events, a stat that
    /// differs). No lock is taken and, with events, one `FIONREAD` per
    /// device is the whole cost; a request that sees it calls
    /// [`Agents::reload_if_changed`] before it is answered.
    pub fn sources_may_have_changed(&self) -> bool {
        self.sources.as_ref().is_none_or(|sources| !sources.unchanged())
    }

    /// The files whose stamps decide a reload.
    fn source_files(&self) -> Vec<PathBuf> {
        match &self.stamps {
            Some(stamps) => stamps.files.iter().map(|(f, _)| f.clone()).collect(),
            None => watched_files(&self.dir, self.assembler.as_ref().map(|a| a.config())),
        }
    }

    /// The `[agent] id` of the config serving, when it names one other
    /// than the folder's.
    pub fn config_id(&self) -> Option<String> {
        let config_id = self.assembler.as_ref()?.config().agent.id.clone()?;
        (config_id != self.id).then_some(config_id)
    }

    /// Whether the agent serves an older config than its files say: its
    /// last reload failed and the previous config still answers.
    pub fn stale(&self) -> bool {
        self.assembler.is_some() && self.last_error.is_some()
    }

    /// The agent in `dir`, loaded once (blocking).
    fn load(id: String, dir: PathBuf) -> Agent {
        let mut agent = Agent {
            id,
            dir: dir.clone(),
            assembler: None,
            last_error: None,
            reloads: 0,
            loaded_at: SystemTime::now(),
            stamps: None,
            settled: false,
            failures: 0,
            retry_at: Instant::now(),
            sources: None,
            reloading: Arc::default(),
        };
        agent.apply(Attempt::run(&dir), &mut Changes::default());
        agent.reloads = 0;
        agent
    }

    /// Whether the agent should be loaded again now: its files' stamps
    /// changed, or its last load is unsettled and its retry is due. A stamp
    /// that cannot be read decides nothing (the next poll looks again).
    fn due(&self, now: Instant) -> bool {
        let changed = self.stamps.as_ref().is_some_and(|stamps| match stamps.read_again(&self.dir) {
            Ok(current) => current != *stamps,
            Err(_) => false,
        });
        changed || (!self.settled && now >= self.retry_at)
    }

    /// Takes a load's outcome: a good assembler replaces the serving one; a
    /// failure keeps it, shows the error, and schedules a retry. A load in
    /// which a plugin that serves now fails to load is a failure too (out
    /// of descriptors, say, it could not read the binary).
    fn apply(&mut self, attempt: Attempt, changes: &mut Changes) {
        let now = Instant::now();
        let result = match (attempt.result, &self.assembler) {
            (Ok(fresh), Some(serving)) => match lost_plugin(serving, &fresh) {
                Some(error) => Err(error),
                None => Ok(fresh),
            },
            (result, _) => result,
        };
        self.settled = result.is_ok() && attempt.stamps.is_some();
        self.stamps = attempt.stamps;
        self.sources = attempt.sources;
        match result {
            Ok(assembler) => {
                self.assembler = Some(assembler);
                self.last_error = None;
                self.reloads += 1;
                self.loaded_at = SystemTime::now();
                self.failures = 0;
                self.retry_at = now + POLL_INTERVAL;
                changes.reloaded.push((self.id.clone(), Ok(())));
            }
            Err(error) => {
                self.failures = self.failures.saturating_add(1);
                let backoff = POLL_INTERVAL.saturating_mul(1u32 << self.failures.min(8).saturating_sub(1));
                self.retry_at = now + backoff.min(RETRY_MAX);
                let shown = without_server_paths(&error, &self.dir);
                if self.last_error.as_deref() != Some(&shown) {
                    if self.assembler.is_some() {
                        tracing::warn!(agent = %self.id, "reload failed, still serving the last good config: {error}");
                    } else {
                        tracing::warn!(agent = %self.id, "cannot load: {error}");
                    }
                    changes.reloaded.push((self.id.clone(), Err(shown.clone())));
                }
                self.last_error = Some(shown);
            }
        }
    }
}

/// Why `fresh` is worse than `serving`: a plugin that loads in `serving`
/// and not in `fresh`.
fn lost_plugin(serving: &Assembler, fresh: &Assembler) -> Option<String> {
    let loaded_now = |id: &str| serving.plugins().plugins().iter().any(|p| p.id == id && p.state.is_ok());
    fresh.plugins().plugins().iter().find_map(|p| match &p.state {
        Err(why) if loaded_now(&p.id) => Some(format!("plugin {} no longer loads: {why}", p.id)),
        _ => None,
    })
}

/// Loads `agent` again when [`Agent::due`]; whether it did. Call it holding
/// [`Agent::reloading`].
fn reload_if_due(agent: &Arc<Lock<Agent>>, changes: &mut Changes) -> bool {
    let (dir, due) = {
        let a = agent.lock();
        (a.dir.clone(), a.due(Instant::now()))
    };
    if due {
        let attempt = Attempt::run(&dir);
        agent.lock().apply(attempt, changes);
    }
    due
}

/// One load of an agent: the stamps of the files it watched, taken before
/// opening (`None` when one could not be read, or when the config the
/// assembler opened names other plugin files than the one stamped), and
/// the assembler or why not.
struct Attempt {
    stamps: Option<Stamps>,
    /// The watch on what it loaded from, taken before the stamps.
    sources: Option<Sources>,
    result: Result<Arc<Assembler>, String>,
}

impl Attempt {
    fn run(dir: &Path) -> Attempt {
        let planned = watched_files(dir, Config::load(&dir.join(CONFIG_FILE)).ok().as_ref());
        let sources = Sources::watch(dir, &planned);
        let stamps = Stamps::read(dir, planned.clone()).ok();
        let result = Assembler::open(dir, None).map(Arc::new).map_err(|e| e.to_string());
        let stamps = match &result {
            Ok(assembler) if watched_files(dir, Some(assembler.config())) != planned => None,
            _ => stamps,
        };
        Attempt { stamps, sources, result }
    }
}

/// The files whose change means a reload: proem.toml and every plugin file
/// `config` names.
fn watched_files(dir: &Path, config: Option<&Config>) -> Vec<PathBuf> {
    let mut files = vec![dir.join(CONFIG_FILE)];
    if let Some(config) = config {
        files.extend(config.plugins.iter().filter_map(|p| p.path.as_ref()).map(|p| dir.join(p)));
    }
    files
}

/// Which folder an agent's path leads to, and its files' [`Stamp`]s
/// (`None`: the file does not exist).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamps {
    /// The (device, inode) of the folder `dir` leads to now: a folder
    /// swapped in anywhere on the way (a `current` symlink, a folder renamed
    /// over) is another folder, even when its files are hard links to the
    /// last one's (a release made with `rsync --link-dest`). Not its times:
    /// a file added to the folder is the workspace memo's business, not a
    /// reload. `None` when the path leads to no folder any more (gone, a
    /// dangling or looping link, a file, no permission): a change too, so
    /// the load that fails on it shows its error and marks what serves
    /// stale.
    folder: Option<(u64, u64)>,
    files: Vec<(PathBuf, Option<Stamp>)>,
}

impl Stamps {
    /// The stamps of `dir` and `files`, or the first error that is not
    /// "not found" (for the folder: the first the machine gave for want of
    /// descriptors or memory, which decides nothing).
    fn read(dir: &Path, files: Vec<PathBuf>) -> io::Result<Stamps> {
        use std::os::unix::fs::MetadataExt;
        let folder = match std::fs::metadata(dir) {
            Ok(m) if m.is_dir() => Some((m.dev(), m.ino())),
            Err(e) if proem_core::disk::is_exhaustion(&e) => return Err(e),
            _ => None,
        };
        let files = files.into_iter().map(|f| stamp_of(&f).map(|s| (f, s))).collect::<io::Result<_>>()?;
        Ok(Stamps { folder, files })
    }

    /// The same folder's and files' stamps now.
    fn read_again(&self, dir: &Path) -> io::Result<Stamps> {
        Stamps::read(dir, self.files.iter().map(|(f, _)| f.clone()).collect())
    }
}

/// `text` as a client may see it: a path inside the agent's folder `dir`
/// (as given or resolved) relative to it, the folder itself `.`, and any
/// other absolute path reduced to `…/` and its last component. Problem
/// documents and an agent's `last_error` go through it; the server's log
/// keeps the whole paths.
pub fn without_server_paths(text: &str, dir: &Path) -> String {
    let mut roots = vec![dir.to_path_buf()];
    if let Ok(resolved) = std::fs::canonicalize(dir) {
        roots.push(resolved);
    }
    let mut roots: Vec<String> =
        roots.iter().map(|r| r.to_string_lossy().trim_end_matches('/').to_string()).filter(|r| !r.is_empty()).collect();
    // Longest first, so a resolved root that extends the given one wins.
    roots.sort_by_key(|r| std::cmp::Reverse(r.len()));
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut previous: Option<char> = None;
    while let Some(c) = rest.chars().next() {
        let word_start = previous.is_none_or(|p| p.is_whitespace() || "\"'`([{<=,".contains(p));
        if word_start {
            if let Some((taken, shown)) = agent_path(rest, &roots) {
                out.push_str(shown);
                previous = Some('/');
                rest = &rest[taken..];
                continue;
            }
            if c == '/' {
                let end = rest.find(ends_path).unwrap_or(rest.len());
                let path = &rest[..end];
                let trimmed = path.trim_end_matches(['.', '/']);
                if trimmed.is_empty() {
                    out.push_str(path);
                } else {
                    out.push_str("…/");
                    out.push_str(trimmed.rsplit('/').next().unwrap_or(""));
                    out.push_str(&path[trimmed.len()..]);
                }
                previous = path.chars().last();
                rest = &rest[end..];
                continue;
            }
        }
        out.push(c);
        previous = Some(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// Whether `c` ends a path in an error text: a space, quote, bracket,
/// comma, semicolon, colon or equals sign.
fn ends_path(c: char) -> bool {
    c.is_whitespace() || "\"'`()[]{}<>,;:=".contains(c)
}

/// When `rest` starts with one of `roots` (the agent folder) as a whole
/// path component: how many bytes that is and what to show instead
/// (nothing before the rest of a path inside it, `.` for the folder).
fn agent_path(rest: &str, roots: &[String]) -> Option<(usize, &'static str)> {
    roots.iter().find_map(|root| {
        let after = rest.strip_prefix(root.as_str())?;
        match after.chars().next() {
            Some('/') if after[1..].starts_with(|c: char| !ends_path(c)) => Some((root.len() + 1, "")),
            None => Some((root.len(), ".")),
            Some(c) if ends_path(c) || c == '/' => Some((root.len(), ".")),
            Some(_) => None,
        }
    })
}

/// An agent's id: its folder's name, if it is a usable one.
fn agent_id(dir: &Path) -> Result<String, String> {
    let canonical = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let name = canonical.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !name.starts_with('.');
    if ok {
        Ok(name.to_string())
    } else {
        Err(format!(
            "{}: the folder name {name:?} cannot be an agent id (1-64 of A-Z, a-z, 0-9, -, _, .)",
            dir.display()
        ))
    }
}

/// What tells a file changed: modification time, size, inode (an
/// editor's save renames a new file over the old one) and status-change
/// time with its nanoseconds. The ctime is what no one can set back: a file
/// rewritten in place at the same size with its mtime restored (`touch -r`)
/// still moves it.
pub(crate) type Stamp = (SystemTime, u64, u64, (i64, i64));

/// A file's [`Stamp`]: `None` when it does not exist, an error when it
/// could not be looked at (out of memory, no permission): then nothing is
/// decided from it.
fn stamp_of(path: &Path) -> io::Result<Option<Stamp>> {
    match std::fs::metadata(path) {
        Ok(m) => Ok(Some(stamp(&m))),
        Err(e) if is_missing(&e) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The [`Stamp`] of what `metadata` said about a file (the change events
/// compare files by it too).
pub(crate) fn stamp(m: &std::fs::Metadata) -> Stamp {
    use std::os::unix::fs::MetadataExt;
    (m.modified().unwrap_or(SystemTime::UNIX_EPOCH), m.len(), m.ino(), (m.ctime(), m.ctime_nsec()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn agent_folder(parent: &Path, name: &str) -> PathBuf {
        let dir = parent.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(CONFIG_FILE), "[agent]\nid = \"a\"\n").unwrap();
        std::fs::write(dir.join("SOUL.md"), "# Soul\nA test agent.").unwrap();
        dir
    }

    #[test]
    fn a_listing_that_fails_removes_no_agent_and_the_next_one_catches_up() {
        let root = tempfile::tempdir().unwrap();
        let parent = root.path().join("agents");
        agent_folder(&parent, "one");
        let agents = Agents::open(Source::Parent(parent.clone())).unwrap();
        assert_eq!(agents.all().len(), 1);
        // The folder cannot be listed (here: it is gone for a moment).
        std::fs::rename(&parent, root.path().join("away")).unwrap();
        for _ in 0..3 {
            let changes = agents.poll();
            assert!(changes.removed.is_empty() && changes.added.is_empty(), "{changes:?}");
        }
        let one = agents.get("one").expect("still served");
        assert!(one.lock().assembler.is_some(), "the last good assembler still serves");
        std::fs::rename(root.path().join("away"), &parent).unwrap();
        agent_folder(&parent, "two");
        let changes = agents.poll();
        assert_eq!(changes.added, ["two"]);
        assert!(changes.removed.is_empty());
    }

    #[test]
    fn a_stamp_is_missing_only_when_the_file_is_not_there() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "x").unwrap();
        assert!(stamp_of(&file).unwrap().is_some());
        assert_eq!(stamp_of(&dir.path().join("nope")).unwrap(), None);
        assert_eq!(stamp_of(&file.join("below-a-file")).unwrap(), None);
        // A symlink loop cannot be looked at: that decides nothing.
        std::os::unix::fs::symlink(dir.path().join("loop"), dir.path().join("loop")).unwrap();
        assert!(stamp_of(&dir.path().join("loop")).is_err());
        let stamps = Stamps { folder: None, files: vec![(dir.path().join("loop"), None)] };
        assert!(stamps.read_again(dir.path()).is_err());
        // A path that leads to no folder is a stamp of its own, not an error.
        for gone in ["nope", "loop", "f"] {
            assert_eq!(Stamps::read(&dir.path().join(gone), Vec::new()).unwrap().folder, None, "{gone}");
        }
    }

    #[test]
    fn a_failed_load_is_retried_quietly_and_a_fix_is_picked_up() {
        let root = tempfile::tempdir().unwrap();
        let dir = agent_folder(root.path(), "one");
        std::fs::write(dir.join(CONFIG_FILE), "[budget\n").unwrap();
        let agents = Agents::open(Source::Dirs(vec![dir.clone()])).unwrap();
        let agent = agents.get("one").unwrap();
        let error = agent.lock().last_error.clone().unwrap();
        assert!(error.starts_with("proem.toml:"), "named relative to the folder: {error}");
        assert!(!agent.lock().settled);
        // Retried when due; the same error is not reported again.
        agent.lock().retry_at = Instant::now();
        let changes = agents.poll();
        assert!(changes.reloaded.is_empty(), "{changes:?}");
        assert_eq!(agent.lock().failures, 2);
        std::fs::write(dir.join(CONFIG_FILE), "[agent]\nid = \"fixed\"\n").unwrap();
        let changes = agents.poll();
        assert_eq!(changes.reloaded.len(), 1);
        let a = agent.lock();
        assert!(a.assembler.is_some() && a.last_error.is_none() && a.settled);
    }

    /// A piece of an error text: a word, a path inside the agent folder
    /// (relative part), the folder itself, or a path elsewhere.
    #[derive(Debug, Clone)]
    enum Piece {
        Word(String),
        Inside(String),
        Folder,
        Elsewhere(String),
    }

    fn piece() -> impl Strategy<Value = Piece> {
        let name = "[a-zA-Z0-9_][a-zA-Z0-9_.-]{0,8}";
        prop_oneof![
            "[a-zA-Z0-9=.,!?-]{1,10}".prop_map(Piece::Word),
            proptest::collection::vec(name, 1..4).prop_map(|p| Piece::Inside(p.join("/"))),
            Just(Piece::Folder),
            proptest::collection::vec(name, 1..5).prop_map(|p| Piece::Elsewhere(format!("/{}", p.join("/")))),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        #[test]
        fn error_texts_name_files_relative_to_the_agent_and_print_no_server_path(
            pieces in proptest::collection::vec((piece(), proptest::sample::select(vec![" ", ": ", " (", " `", " \"", "="])), 1..12),
            folder in proptest::collection::vec("[a-z]{1,6}", 1..4),
        ) {
            let dir = PathBuf::from(format!("/srv/{}", folder.join("/")));
            let mut text = String::new();
            for (p, sep) in &pieces {
                text.push_str(sep);
                match p {
                    Piece::Word(w) => text.push_str(w),
                    Piece::Inside(rel) => text.push_str(&format!("{}/{rel}", dir.display())),
                    Piece::Folder => text.push_str(&dir.display().to_string()),
                    Piece::Elsewhere(path) => text.push_str(path),
                }
            }
            let shown = without_server_paths(&text, &dir);
            prop_assert!(!shown.contains(&dir.display().to_string()), "{:?} -> {:?}", text, shown);
            for word in shown.split(|c: char| c.is_whitespace() || "\"'`(),;:=".contains(c)) {
                prop_assert!(!(word.starts_with('/') && word[1..].contains('/')), "{:?} in {:?}", word, shown);
            }
            for (p, _) in &pieces {
                match p {
                    Piece::Word(w) => prop_assert!(shown.contains(w.as_str())),
                    Piece::Inside(rel) => prop_assert!(shown.contains(rel.as_str()), "{:?} lost in {:?}", rel, shown),
                    Piece::Elsewhere(path) => {
                        let name = path.rsplit('/').next().unwrap().trim_end_matches('.');
                        prop_assert!(shown.contains(name), "{:?} lost in {:?}", name, shown)
                    }
                    Piece::Folder => {}
                }
            }
        }
    }
}
