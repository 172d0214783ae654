//! `GET /v1/agents/{id}/events`: server-sent events telling a client (the
//! inspector page) that an agent's files or config changed, pushed by the
//! reload loop, so that it can offer a rebuild.
//!
//! One [`Hub`] per service: the reload loop publishes [`Change`]s to a
//! broadcast ring of [`BACKLOG`] entries that every stream reads. What a
//! stream can hold is bounded: at most [`MAX_STREAMS`] are open at once
//! (one more is a 503), a change names at most [`MAX_FILES`] files and an
//! error of at most [`MAX_ERROR_CHARS`] characters, and a stream that
//! falls [`BACKLOG`] changes behind is told `lagged` and goes on from the
//! newest. A comment every [`KEEPALIVE`] finds dead clients (a write that
//! stalls is cut at the header timeout, see [`crate::conn`]); the streams
//! end when the service stops.
//!
//! Workspace files are watched only while a stream is open: the reload
//! loop then reads the agents' folders (two levels, at most
//! [`MAX_WATCHED_ENTRIES`] entries each) at every poll and publishes the
//! files whose size or modification time changed.

use proem_core::sync::Lock;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{broadcast, watch, OwnedSemaphorePermit, Semaphore};

/// Streams open at once.
pub const MAX_STREAMS: usize = 64;
/// Changes kept for streams that have not read them yet.
pub const BACKLOG: usize = 64;
/// Files one change names (more are counted, not named).
pub const MAX_FILES: usize = 16;
/// Characters of a reload error in a change.
pub const MAX_ERROR_CHARS: usize = 500;
/// The longest a stream stays silent.
pub const KEEPALIVE: Duration = Duration::from_secs(15);
/// Entries of an agent's folder looked at per poll, subfolders included.
pub const MAX_WATCHED_ENTRIES: usize = 1024;

/// What changed in one agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    /// The agent (its folder name).
    pub agent: String,
    /// `files`, `config` (reloaded), `reload_failed` or `removed`.
    pub what: &'static str,
    /// The files that changed, relative to the agent's folder, sorted.
    pub files: Vec<String>,
    /// Files that changed beyond those named.
    pub more_files: usize,
    /// Why a reload failed.
    pub error: Option<String>,
}

impl Change {
    /// A change of `what` in `agent`, naming up to [`MAX_FILES`] of `files`.
    pub fn new(agent: &str, what: &'static str, mut files: Vec<String>, error: Option<&str>) -> Change {
        files.sort();
        let more_files = files.len().saturating_sub(MAX_FILES);
        files.truncate(MAX_FILES);
        let error = error.map(|e| proem_core::text::one_line(e, MAX_ERROR_CHARS));
        Change { agent: agent.to_string(), what, files, more_files, error }
    }
}

/// Where changes are published and streams subscribe.
pub struct Hub {
    sender: broadcast::Sender<Arc<Change>>,
    streams: Arc<Semaphore>,
    closed: watch::Sender<bool>,
    /// Each watched agent's folder as last seen (only while streams are open).
    folders: Lock<BTreeMap<String, Folder>>,
}

impl Default for Hub {
    fn default() -> Hub {
        Hub {
            sender: broadcast::channel(BACKLOG).0,
            streams: Arc::new(Semaphore::new(MAX_STREAMS)),
            closed: watch::channel(false).0,
            folders: Lock::default(),
        }
    }
}

/// A folder's files: path relative to it → the stamp a reload goes by
/// ([`crate::agents::Stamp`]: modified, size, inode, status change).
type Folder = BTreeMap<String, crate::agents::Stamp>;

impl Hub {
    /// Sends a change to every open stream.
    pub fn publish(&self, change: Change) {
        let _ = self.sender.send(Arc::new(change));
    }

    /// Streams open now.
    pub fn streams(&self) -> usize {
        MAX_STREAMS - self.streams.available_permits()
    }

    /// Ends every stream (at shutdown).
    pub fn close(&self) {
        self.closed.send_replace(true);
    }

    /// A stream of `agent`'s changes, or `None` when [`MAX_STREAMS`] are open.
    pub fn subscribe(&self, agent: String) -> Option<Stream> {
        let permit = self.streams.clone().try_acquire_owned().ok()?;
        Some(Stream {
            agent,
            changes: self.sender.subscribe(),
            closed: self.closed.subscribe(),
            _permit: permit,
            greeted: false,
        })
    }

    /// Compares each agent's folder with the last look (blocking: call it
    /// off the request path) and publishes the files that changed. Looks
    /// only while a stream is open; forgets the folders when none is.
    pub fn look_at_folders(&self, agents: &[(String, std::path::PathBuf)]) {
        if self.streams() == 0 {
            self.folders.lock().clear();
            return;
        }
        for (id, dir) in agents {
            let now = read_folder(dir);
            let before = self.folders.lock().insert(id.clone(), now.clone());
            let Some(before) = before else { continue };
            let changed = changed_files(&before, &now);
            if !changed.is_empty() {
                self.publish(Change::new(id, "files", changed, None));
            }
        }
        let ids: Vec<&String> = agents.iter().map(|(id, _)| id).collect();
        self.folders.lock().retain(|id, _| ids.contains(&id));
    }
}

/// The files added, removed or changed (size or time) between two looks.
fn changed_files(before: &Folder, now: &Folder) -> Vec<String> {
    let mut changed: Vec<String> =
        now.iter().filter(|(f, s)| before.get(*f) != Some(s)).map(|(f, _)| f.clone()).collect();
    changed.extend(before.keys().filter(|f| !now.contains_key(*f)).cloned());
    changed
}

/// The regular files of `dir` and of its subfolders (not deeper), at most
/// [`MAX_WATCHED_ENTRIES`] entries looked at; symlinks are not followed
/// into folders. What cannot be read is left out.
fn read_folder(dir: &Path) -> Folder {
    let mut folder = Folder::new();
    let mut budget = MAX_WATCHED_ENTRIES;
    let visit = |sub: &str, budget: &mut usize, into: &mut Vec<String>, folder: &mut Folder| {
        let Ok(entries) = std::fs::read_dir(dir.join(sub)) else { return };
        for entry in entries.flatten() {
            if *budget == 0 {
                return;
            }
            *budget -= 1;
            let name = entry.file_name().to_string_lossy().into_owned();
            let rel = if sub.is_empty() { name } else { format!("{sub}/{name}") };
            let Ok(kind) = entry.file_type() else { continue };
            if kind.is_dir() {
                into.push(rel);
            } else if let Ok(meta) = std::fs::metadata(entry.path()) {
                folder.insert(rel, crate::agents::stamp(&meta));
            }
        }
    };
    let mut subfolders = Vec::new();
    visit("", &mut budget, &mut subfolders, &mut folder);
    for sub in subfolders {
        visit(&sub, &mut budget, &mut Vec::new(), &mut folder);
    }
    folder
}

/// One open stream: its agent's changes as server-sent events.
pub struct Stream {
    agent: String,
    changes: broadcast::Receiver<Arc<Change>>,
    closed: watch::Receiver<bool>,
    _permit: OwnedSemaphorePermit,
    greeted: bool,
}

impl Stream {
    /// The next event's text, or `None` when the stream ends (the service
    /// stops).
    pub async fn next_event(&mut self) -> Option<String> {
        if !self.greeted {
            self.greeted = true;
            return Some(format!("retry: 2000\n: changes of agent {}\n\n", self.agent));
        }
        loop {
            if *self.closed.borrow() {
                return None;
            }
            tokio::select! {
                _ = self.closed.changed() => return None,
                _ = tokio::time::sleep(KEEPALIVE) => return Some(": keepalive\n\n".into()),
                got = self.changes.recv() => match got {
                    Ok(change) if change.agent == self.agent => return Some(event(&change)),
                    Ok(_) => continue,
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        return Some(event(&Change::new(&self.agent, "lagged", Vec::new(), None)))
                    }
                    Err(broadcast::error::RecvError::Closed) => return None,
                },
            }
        }
    }
}

/// A change as an SSE `change` event (its JSON on one `data:` line).
fn event(change: &Change) -> String {
    let data = serde_json::to_string(change).unwrap_or_default();
    format!("event: change\ndata: {data}\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_more_than_the_most_streams_open_and_a_closed_one_frees_its_place() {
        let hub = Hub::default();
        let open: Vec<Stream> = (0..MAX_STREAMS).map(|i| hub.subscribe(format!("a{i}")).unwrap()).collect();
        assert_eq!(hub.streams(), MAX_STREAMS);
        assert!(hub.subscribe("one-more".into()).is_none());
        drop(open);
        assert_eq!(hub.streams(), 0);
        assert!(hub.subscribe("again".into()).is_some());
    }

    #[test]
    fn a_change_names_a_bounded_number_of_files_and_a_bounded_error() {
        let files: Vec<String> = (0..1000).map(|i| format!("f{i:04}.md")).collect();
        let change = Change::new("a", "files", files, Some(&"x".repeat(100_000)));
        assert_eq!((change.files.len(), change.more_files), (MAX_FILES, 1000 - MAX_FILES));
        assert!(change.error.unwrap().chars().count() <= MAX_ERROR_CHARS + 1);
    }

    #[test]
    fn a_stream_gets_its_agents_changes_a_lagging_one_is_told_and_all_end_on_close() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let hub = Hub::default();
            let mut mine = hub.subscribe("a".into()).unwrap();
            assert!(mine.next_event().await.unwrap().starts_with("retry:"));
            hub.publish(Change::new("b", "files", vec!["SOUL.md".into()], None));
            hub.publish(Change::new("a", "files", vec!["SOUL.md".into()], None));
            let got = mine.next_event().await.unwrap();
            assert!(got.starts_with("event: change\ndata: {\"agent\":\"a\"") && got.contains("SOUL.md"), "{got}");
            for _ in 0..BACKLOG + 5 {
                hub.publish(Change::new("a", "config", Vec::new(), None));
            }
            assert!(mine.next_event().await.unwrap().contains("\"lagged\""));
            hub.close();
            let mut events = 0;
            while mine.next_event().await.is_some() {
                events += 1;
                assert!(events <= BACKLOG, "a closed hub's stream ends");
            }
        });
    }

    #[test]
    fn folders_are_compared_only_while_a_stream_is_open() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("SOUL.md"), "a").unwrap();
        let hub = Hub::default();
        let agents = vec![("a".to_string(), dir.path().to_path_buf())];
        hub.look_at_folders(&agents);
        assert!(hub.folders.lock().is_empty(), "no stream, no look");
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let mut stream = hub.subscribe("a".into()).unwrap();
        hub.look_at_folders(&agents);
        std::fs::create_dir(dir.path().join("skills")).unwrap();
        std::fs::write(dir.path().join("skills/new.md"), "b").unwrap();
        std::fs::write(dir.path().join("SOUL.md"), "longer").unwrap();
        hub.look_at_folders(&agents);
        rt.block_on(async {
            stream.next_event().await;
            let got = stream.next_event().await.unwrap();
            assert!(got.contains("[\"SOUL.md\",\"skills/new.md\"]"), "{got}");
        });
    }
}
