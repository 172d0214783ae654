//! The agents a service serves, each with one warm [`Assembler`], and their
//! reloading.
//!
//! An agent is a folder with a proem.toml: named on the command line, or a
//! subfolder of `--agents DIR`. Its id is the folder's name. Every
//! [`POLL_INTERVAL`] a background task looks at what an assembler cannot
//! watch itself (its proem.toml and its plugin files; the workspace files
//! are the assembler's own memo's business) and at the `--agents` folder.
//! A changed agent is reopened off the request path; until that succeeds the
//! last good assembler keeps serving and the error shows on the agent's
//! status. New folders appear, removed ones disappear.

use proem::Assembler;
use proem_core::config::{Config, CONFIG_FILE};
use proem_core::sync::Lock;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// How often the files that need a reload are looked at.
pub const POLL_INTERVAL: Duration = Duration::from_millis(250);

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
    /// Why the last (re)load failed, when it did; cleared by a good one.
    pub last_error: Option<String>,
    /// Successful reloads (the first load not counted).
    pub reloads: u64,
    /// When the serving assembler was opened.
    pub loaded_at: SystemTime,
    /// The stamps of the files whose change means a reload.
    stamps: Vec<(PathBuf, Option<Stamp>)>,
}

/// What one poll found.
#[derive(Debug, Default)]
pub struct Changes {
    /// (agent id, Ok or the reload error), for reloads tried.
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
}

impl Agents {
    /// Finds and opens the agents. An agent that fails to open is kept with
    /// its error (it serves once fixed); two folders with one name are an error.
    pub fn open(source: Source) -> Result<Agents, String> {
        let agents = Agents { source, agents: Lock::default() };
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
            map.insert(id.clone(), Arc::new(Lock::new(load(id, dir))));
        }
        drop(map);
        Ok(agents)
    }

    /// The agent `id`.
    pub fn get(&self, id: &str) -> Option<Arc<Lock<Agent>>> {
        self.agents.lock().get(id).cloned()
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
            let found: BTreeMap<String, PathBuf> = self
                .discover()
                .unwrap_or_default()
                .into_iter()
                .filter_map(|d| agent_id(&d).ok().map(|id| (id, d)))
                .collect();
            let mut map = self.agents.lock();
            let gone: Vec<String> = map.keys().filter(|id| !found.contains_key(*id)).cloned().collect();
            for id in gone {
                map.remove(&id);
                changes.removed.push(id);
            }
            let new: Vec<(String, PathBuf)> = found.into_iter().filter(|(id, _)| !map.contains_key(id)).collect();
            drop(map);
            for (id, dir) in new {
                let agent = load(id.clone(), dir);
                self.agents.lock().insert(id.clone(), Arc::new(Lock::new(agent)));
                changes.added.push(id);
            }
        }
        for agent in self.all() {
            let (id, dir, stale) = {
                let a = agent.lock();
                (a.id.clone(), a.dir.clone(), a.stamps.iter().any(|(path, stamp)| stamp_of(path) != *stamp))
            };
            if !stale {
                continue;
            }
            let fresh = load(id.clone(), dir);
            let mut a = agent.lock();
            a.stamps = fresh.stamps;
            match (fresh.assembler, fresh.last_error) {
                (Some(assembler), _) => {
                    a.assembler = Some(assembler);
                    a.last_error = None;
                    a.reloads += 1;
                    a.loaded_at = fresh.loaded_at;
                    changes.reloaded.push((id, Ok(())));
                }
                (None, error) => {
                    let error = error.unwrap_or_else(|| "did not load".into());
                    tracing::warn!(agent = %id, "reload failed, still serving the last good config: {error}");
                    a.last_error = Some(error.clone());
                    changes.reloaded.push((id, Err(error)));
                }
            }
        }
        changes
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
            Source::Parent(parent) => {
                let entries =
                    std::fs::read_dir(parent).map_err(|e| format!("{}: cannot list: {e}", parent.display()))?;
                let mut dirs: Vec<PathBuf> = entries
                    .filter_map(|e| e.ok())
                    .map(|e| e.path())
                    .filter(|p| p.is_dir() && p.join(CONFIG_FILE).is_file())
                    .collect();
                dirs.sort();
                Ok(dirs)
            }
        }
    }
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

/// Opens an agent (blocking): its assembler, or why not, and the stamps of
/// the files to watch (proem.toml and every plugin file it names).
fn load(id: String, dir: PathBuf) -> Agent {
    let config_file = dir.join(CONFIG_FILE);
    let mut watched = vec![config_file.clone()];
    if let Ok(config) = Config::load(&config_file) {
        watched.extend(config.plugins.iter().filter_map(|p| p.path.as_ref()).map(|p| dir.join(p)));
    }
    let stamps = watched.iter().map(|p| (p.clone(), stamp_of(p))).collect();
    let (assembler, last_error) = match Assembler::open(&dir, None) {
        Ok(a) => (Some(Arc::new(a)), None),
        Err(e) => (None, Some(e.to_string())),
    };
    Agent { id, dir, assembler, last_error, reloads: 0, loaded_at: SystemTime::now(), stamps }
}

/// What tells a file changed: modification time, size and inode (an
/// editor's save renames a new file over the old one).
type Stamp = (SystemTime, u64, u64);

/// A file's [`Stamp`], `None` when it is missing.
fn stamp_of(path: &Path) -> Option<Stamp> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.modified().unwrap_or(SystemTime::UNIX_EPOCH), m.len(), m.ino()))
}
