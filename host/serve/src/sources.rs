//! What an agent is loaded from, watched so that a request sees a change
//! before it is answered: every entry on the way to the agent's folder (a
//! `current` symlink swapped three folders up is a change as much as the
//! folder renamed over), and the files the load read (proem.toml, the
//! plugin binaries).
//!
//! A [`Snapshot`] checks its paths by file events only while they are on
//! its root's device (else by stats, a dozen system calls a request), so
//! the entries are grouped by the device of the folder that holds them, a
//! snapshot per group: one or two for the usual layouts, and each checked
//! by one `FIONREAD` a request.

use proem_core::memo::Snapshot;
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

/// The watches on one agent's sources.
#[derive(Debug)]
pub struct Sources(Vec<Snapshot>);

impl Sources {
    /// Watches every entry on the way to `dir` and to each of `files` (each
    /// name in the folder holding it, and the way to where a symlink among
    /// them leads). `None` when a folder on the way cannot be looked at or
    /// opened: the caller then checks its stamps on every request.
    pub fn watch(dir: &Path, files: &[PathBuf]) -> Option<Sources> {
        let mut entries: Vec<(PathBuf, PathBuf)> = Vec::new();
        let mut links_left = MAX_LINKS;
        for path in std::iter::once(dir).chain(files.iter().map(PathBuf::as_path)) {
            entries_on_the_way(path, &mut entries, &mut links_left)?;
        }
        entries.sort();
        entries.dedup();
        // Grouped by the device of the folder holding the entry (one stat a
        // folder: sorted, a folder's entries are together).
        let mut groups: BTreeMap<u64, Vec<(PathBuf, PathBuf)>> = BTreeMap::new();
        let mut last: Option<(PathBuf, u64)> = None;
        for (parent, name) in entries {
            let device = match &last {
                Some((folder, device)) if *folder == parent => *device,
                _ => std::fs::metadata(&parent).ok()?.dev(),
            };
            last = Some((parent.clone(), device));
            groups.entry(device).or_default().push((parent, name));
        }
        let mut snapshots = Vec::new();
        for (device, group) in groups {
            let top = common_ancestor(group.iter().map(|(parent, _)| parent.as_path()));
            if std::fs::metadata(&top).ok()?.dev() == device {
                snapshots.push(take(&top, &group)?);
            } else {
                // The group's folders share a device their common ancestor
                // is not on (a mount between them): one snapshot a folder.
                for entry in &group {
                    snapshots.push(take(&entry.0, std::slice::from_ref(entry))?);
                }
            }
        }
        Some(Sources(snapshots))
    }

    /// Whether nothing watched changed: no event on any watch or, where a
    /// snapshot checks by stats, every path stats the same.
    pub fn unchanged(&self) -> bool {
        self.0.iter().all(Snapshot::unchanged)
    }
}

/// How many symlinks on the ways are followed, loops included (the system
/// follows at most 40 in one path).
const MAX_LINKS: u32 = 40;

/// Every `(folder, name)` entry on the way to `path` (once, however many
/// ways meet it) and, for each that is a symlink, the entries on the way
/// to where it leads (a folder swapped above a link's target is a change
/// as much as the link swapped). `None` when `path` cannot be made
/// absolute.
fn entries_on_the_way(path: &Path, entries: &mut Vec<(PathBuf, PathBuf)>, links_left: &mut u32) -> Option<()> {
    let path = absolute(path)?;
    for step in path.ancestors() {
        let (Some(parent), Some(name)) = (step.parent(), step.file_name()) else { continue };
        let entry = (parent.to_path_buf(), PathBuf::from(name));
        // Met on an earlier way (a file in the agent's folder shares the
        // folder's): this step and every one above it are listed already.
        if entries.contains(&entry) {
            break;
        }
        entries.push(entry);
        if let Ok(target) = std::fs::read_link(step) {
            if *links_left == 0 {
                continue;
            }
            *links_left -= 1;
            entries_on_the_way(&parent.join(target), entries, links_left)?;
        }
    }
    Some(())
}

/// A snapshot rooted at `root` of the `(folder, name)` entries under it.
fn take(root: &Path, entries: &[(PathBuf, PathBuf)]) -> Option<Snapshot> {
    let paths: Vec<String> = entries
        .iter()
        .map(|(parent, name)| {
            let under = parent.strip_prefix(root).unwrap_or(Path::new("")).join(name);
            under.to_string_lossy().into_owned()
        })
        .collect();
    let opened = std::fs::File::open(root).ok()?;
    Snapshot::take(root, std::os::fd::AsFd::as_fd(&opened), &paths, false, true)
}

/// `path` made absolute against the working folder, its `.` components
/// dropped and its symlinks kept (a symlink on the way is an entry to
/// watch, not a path to resolve); the part up to its last `..` is resolved
/// (`..` steps out of where a symlink leads, which only the system knows).
/// `None` when that part cannot be resolved, or a name is not UTF-8 (a
/// snapshot's paths are text).
fn absolute(path: &Path) -> Option<PathBuf> {
    let joined = match path.is_absolute() {
        true => path.to_path_buf(),
        false => std::env::current_dir().ok()?.join(path),
    };
    let components: Vec<Component<'_>> = joined.components().collect();
    let after_parent_steps = components.iter().rposition(|c| *c == Component::ParentDir).map_or(0, |at| at + 1);
    let mut clean = match after_parent_steps {
        0 => PathBuf::new(),
        n => std::fs::canonicalize(components[..n].iter().collect::<PathBuf>()).ok()?,
    };
    for component in &components[after_parent_steps..] {
        match component {
            Component::CurDir => {}
            Component::Normal(name) if name.to_str().is_none() => return None,
            other => clean.push(other),
        }
    }
    Some(clean)
}

/// The longest folder path every one of `paths` starts with.
fn common_ancestor<'a>(mut paths: impl Iterator<Item = &'a Path>) -> PathBuf {
    let Some(first) = paths.next() else { return PathBuf::from("/") };
    let mut common: Vec<Component<'_>> = first.components().collect();
    for path in paths {
        let shared = common.iter().zip(path.components()).take_while(|(a, b)| **a == *b).count();
        common.truncate(shared);
    }
    common.iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_made_absolute_keeping_their_symlinks() {
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(absolute(Path::new("a/./b")), Some(cwd.join("a/b")));
        assert_eq!(absolute(Path::new("/srv/./current/agents")), Some(PathBuf::from("/srv/current/agents")));
        let top = tempfile::tempdir().unwrap();
        let top = std::fs::canonicalize(top.path()).unwrap();
        std::fs::create_dir_all(top.join("real/inner")).unwrap();
        std::os::unix::fs::symlink("real/inner", top.join("link")).unwrap();
        // `link/..` is `real`, where the link leads: resolved; what follows kept.
        assert_eq!(absolute(&top.join("link/../x/./y")), Some(top.join("real/x/y")));
        assert_eq!(absolute(&top.join("link/x")), Some(top.join("link/x")));
        assert_eq!(absolute(&top.join("missing/../x")), None);
        let ancestor = |paths: &[&str]| common_ancestor(paths.iter().map(Path::new));
        assert_eq!(ancestor(&["/srv/app/current", "/srv/app", "/srv/app/current/agents/x"]), Path::new("/srv/app"));
        assert_eq!(ancestor(&["/srv/a", "/opt/b"]), Path::new("/"));
        assert_eq!(ancestor(&["/srv/a"]), Path::new("/srv/a"));
    }

    /// Each entry on the way is watched: a symlink swapped two folders up,
    /// a folder renamed over one folder up, and a file edited, each shows.
    #[test]
    fn a_swap_anywhere_on_the_way_is_seen() {
        let top = tempfile::tempdir().unwrap();
        let top = std::fs::canonicalize(top.path()).unwrap();
        for release in ["r1", "r2"] {
            std::fs::create_dir_all(top.join(release).join("agents/deep")).unwrap();
            std::fs::write(top.join(release).join("agents/deep/proem.toml"), release).unwrap();
        }
        std::os::unix::fs::symlink("r1", top.join("current")).unwrap();
        let dir = top.join("current/agents/deep");
        let files = [dir.join("proem.toml")];
        // (Any change in a folder on the way is an event, to another entry
        // too, such as another test's in the temporary folder: the caller
        // then compares stamps, and watches again. So only changes are
        // asserted here, never their absence.)
        let sources = Sources::watch(&dir, &files).expect("the sources are watched");
        std::os::unix::fs::symlink("r2", top.join("next")).unwrap();
        std::fs::rename(top.join("next"), top.join("current")).unwrap();
        assert!(!sources.unchanged(), "the symlink two folders up was swapped");

        // Where a link leads is watched too: the release folder the link
        // names replaced by another of the same name.
        std::fs::create_dir_all(top.join("store/v1/agents/deep")).unwrap();
        std::os::unix::fs::symlink(top.join("store/v1"), top.join("r2/agents/link")).unwrap();
        let linked = top.join("current/agents/link/agents/deep");
        let sources = Sources::watch(&linked, &[]).unwrap();
        std::fs::rename(top.join("store"), top.join("store.old")).unwrap();
        std::fs::create_dir_all(top.join("store/v1/agents/deep")).unwrap();
        assert!(!sources.unchanged(), "the folder two above the link's target was replaced");

        let sources = Sources::watch(&dir, &files).unwrap();
        std::fs::rename(top.join("r2/agents"), top.join("r2/old-agents")).unwrap();
        std::fs::create_dir_all(top.join("r2/agents/deep")).unwrap();
        assert!(!sources.unchanged(), "the folder one up was replaced");

        std::fs::write(top.join("r2/agents/deep/proem.toml"), "new").unwrap();
        let sources = Sources::watch(&dir, &files).unwrap();
        std::fs::write(top.join("r2/agents/deep/proem.toml"), "newer").unwrap();
        assert!(!sources.unchanged(), "the config was edited");
    }
}
