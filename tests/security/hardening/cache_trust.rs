//! The cache folder is not a trust boundary proem assumes (docs/SECURITY.md
//! §4): a folder another user owns or may write, a symlink, a key file
//! others may read, an entry forged without the folder's secret, swapped
//! between keys, binaries or agents, or copied from another user's folder:
//! each is the no-cache fallback with a warning naming it, or a miss, and
//! the prompt is byte for byte the one a build with no cache prints.

use crate::common::*;
use proem_core::cache_dir::CacheDir;
use proem_core::plugin::answers::Answers;
use std::ffi::OsStr;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};

/// What every test here builds: an official plugin and the fixture guest,
/// both with a stable hook (answers kept on disk), so compiled components,
/// plugin answers and token counts are all read back.
fn agent(text: &str) -> Agent {
    Agent::with_plugins(
        &(builtin("hardware-access", "")
            + &fixture("fix", "sections", &format!("text = \"{text}\""))
            + &fixture("fix-again", "sections", "text = \"Same binary.\", id = \"again\"")),
    )
}

/// One `proem build --format json` with `PROEM_CACHE_DIR=cache` (empty: no
/// disk cache): (prompt, token figures, plugin statuses, stderr).
fn build(agent: &Agent, cache: &OsStr) -> (String, serde_json::Value, Vec<String>, String) {
    let tools = agent.path().with_extension("tools.json");
    std::fs::write(&tools, r#"[{"name": "gpio_write", "description": "Sets a pin."}]"#).unwrap();
    let out = std::process::Command::new(crate::common::front())
        .args(["build", agent.path().to_str().unwrap(), "--format", "json", "--now", "2026-11-21T09:30:00Z"])
        .args(["--tools", tools.to_str().unwrap()])
        .env("PROEM_CACHE_DIR", cache)
        .env("PROEM_LOG", "warn")
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&tools);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let statuses = v["plugins"].as_array().unwrap().iter().map(|p| p["status"].as_str().unwrap().to_string()).collect();
    (v["prompt"].as_str().unwrap().to_string(), v["tokens"].clone(), statuses, stderr)
}

/// The build with no disk cache at all.
fn uncached(agent: &Agent) -> (String, serde_json::Value) {
    let (prompt, tokens, statuses, _) = build(agent, OsStr::new(""));
    assert!(statuses.iter().all(|s| s == "ok"), "{statuses:?}");
    (prompt, tokens)
}

/// Whether each plugin's compiled code came from the cache, loading the
/// agent's plugins in this process over the folder `cache`.
fn compiled_from_cache(agent: &Agent, cache: &Path) -> Vec<bool> {
    let configs = agent.assembler().config().plugins.clone();
    let set = proem::load_plugins(&configs, agent.path(), Some(cache)).unwrap();
    set.plugins()
        .iter()
        .map(|p| {
            let ready = p.state.as_ref().unwrap();
            ready.link().unwrap();
            ready.compiled_from_cache().unwrap()
        })
        .collect()
}

fn chown_to_nobody(path: &Path) {
    std::os::unix::fs::lchown(path, Some(65534), Some(65534)).unwrap();
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A cache folder made the way a test case wants it, in a parent of its own.
type Setup = Box<dyn Fn(&Path) -> PathBuf>;

#[test]
fn a_cache_folder_that_is_not_yours_alone_is_not_used() {
    let agent = agent("Trust.");
    let (expected, expected_tokens) = uncached(&agent);
    let folder = |mode: u32| {
        move |parent: &Path| {
            let dir = parent.join("cache");
            std::fs::create_dir(&dir).unwrap();
            chmod(&dir, mode);
            dir
        }
    };
    let with_key = |change: fn(&Path)| {
        move |parent: &Path| {
            let dir = parent.join("cache");
            CacheDir::open(&dir).unwrap();
            change(&dir.join("key"));
            dir
        }
    };
    let mut cases: Vec<(&str, Setup, &str)> = vec![
        ("group-writable folder", Box::new(folder(0o770)), "writable by other users (mode 0770)"),
        ("world-writable sticky folder", Box::new(folder(0o1777)), "writable by other users (mode 1777)"),
        (
            "symlink to a private folder",
            Box::new(|parent: &Path| {
                let real = parent.join("real");
                std::fs::create_dir(&real).unwrap();
                chmod(&real, 0o700);
                symlink(&real, parent.join("cache")).unwrap();
                parent.join("cache")
            }),
            "is a symbolic link",
        ),
        ("key readable by others", Box::new(with_key(|key| chmod(key, 0o644))), "mode 0644, must be 0600"),
        (
            "key is a symlink",
            Box::new(with_key(|key| {
                let elsewhere = key.parent().unwrap().parent().unwrap().join("key-elsewhere");
                std::fs::rename(key, &elsewhere).unwrap();
                symlink(&elsewhere, key).unwrap();
            })),
            "cannot open the cache key",
        ),
        (
            "key of the wrong size",
            Box::new(with_key(|key| {
                std::fs::write(key, b"short").unwrap();
            })),
            "is not 32 bytes",
        ),
        (
            "answers folder writable by others",
            Box::new(|parent: &Path| {
                let dir = parent.join("cache");
                CacheDir::open(&dir).unwrap();
                std::fs::create_dir(dir.join("answers")).unwrap();
                chmod(&dir.join("answers"), 0o777);
                dir
            }),
            "answers is writable by other users",
        ),
    ];
    if is_root() {
        cases.push((
            "folder owned by another user",
            Box::new(move |parent: &Path| {
                let dir = folder(0o700)(parent);
                chown_to_nobody(&dir);
                dir
            }),
            "belongs to uid 65534",
        ));
        cases.push(("key owned by another user", Box::new(with_key(chown_to_nobody)), "belongs to uid 65534"));
    } else {
        // Not root: a folder root owns stands for another user's.
        cases.push(("folder owned by another user", Box::new(|_: &Path| PathBuf::from("/")), "belongs to uid 0"));
    }
    for (case, setup, words) in cases {
        let parent = tempfile::tempdir().unwrap();
        let dir = setup(parent.path());
        let before = snapshot(parent.path());
        for round in 0..2 {
            let (prompt, tokens, statuses, stderr) = build(&agent, dir.as_os_str());
            assert!(stderr.contains(words), "{case}, round {round}: {stderr}");
            let fallback = if case.starts_with("answers") {
                "plugin answers are not kept"
            } else {
                "building without a disk cache"
            };
            assert!(stderr.contains(fallback), "{case}: {stderr}");
            assert_eq!(prompt, expected, "{case}, round {round}");
            assert_eq!(tokens, expected_tokens, "{case}, round {round}");
            assert!(statuses.iter().all(|s| s == "ok"), "{case}: {statuses:?}");
        }
        if dir != Path::new("/") {
            // Nothing written where it was refused (the answers case: not
            // in answers/; the rest of the folder passed and was used).
            let after = snapshot(parent.path());
            let answers = dir.join("answers");
            let changed: Vec<&PathBuf> = after
                .keys()
                .filter(|p| before.get(*p) != after.get(*p))
                .filter(|p| case != "answers folder writable by others" || p.starts_with(&answers))
                .collect();
            assert!(changed.is_empty(), "{case}: written {changed:?}");
        }
    }
}

/// Every file of the cache folder (answers included), by path relative to it.
fn cache_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = snapshot(dir)
        .into_keys()
        .filter(|p| p.is_file() && p.file_name().unwrap() != "key")
        .map(|p| p.strip_prefix(dir).unwrap().to_path_buf())
        .collect();
    files.sort();
    files
}

/// The folder's answers entries: (file, its key from the file name).
fn answer_entries(dir: &Path) -> Vec<(PathBuf, u128)> {
    let mut entries: Vec<(PathBuf, u128)> = std::fs::read_dir(dir.join("answers"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| {
            let key = u128::from_str_radix(p.file_stem().unwrap().to_str().unwrap(), 16).unwrap();
            (p, key)
        })
        .collect();
    entries.sort();
    entries
}

#[test]
fn entries_forged_swapped_or_copied_from_another_folder_are_misses() {
    let agent = agent("Original.");
    // Both folders below must hold the same entries: a plugin file's digest
    // is kept only once the file has settled, so let it settle before the
    // first build (a bounded wait).
    std::thread::sleep(proem_core::plugin::binary::SETTLED + std::time::Duration::from_millis(200));
    let (expected, expected_tokens) = uncached(&agent);
    let ours = tempfile::tempdir().unwrap();
    let theirs = tempfile::tempdir().unwrap();
    build(&agent, ours.path().as_os_str());
    build(&agent, theirs.path().as_os_str());
    let good: Vec<(PathBuf, Vec<u8>)> = cache_files(ours.path())
        .into_iter()
        .map(|f| (f.clone(), std::fs::read(ours.path().join(&f)).unwrap()))
        .collect();
    assert_eq!(cache_files(theirs.path()), good.iter().map(|(f, _)| f.clone()).collect::<Vec<_>>(), "same names");
    let restore = || good.iter().for_each(|(f, bytes)| std::fs::write(ours.path().join(f), bytes).unwrap());
    let check = |what: &str| {
        let (prompt, tokens, statuses, _) = build(&agent, ours.path().as_os_str());
        assert_eq!(prompt, expected, "{what}");
        assert_eq!(tokens, expected_tokens, "{what}");
        assert!(statuses.iter().all(|s| s == "ok"), "{what}: {statuses:?}");
        restore();
    };
    assert_eq!(compiled_from_cache(&agent, ours.path()), [true, true, true], "our own entries are used");

    // Copied from another user's folder (another secret): every entry.
    let copy_theirs = || {
        for (f, _) in &good {
            std::fs::copy(theirs.path().join(f), ours.path().join(f)).unwrap();
        }
    };
    copy_theirs();
    assert_eq!(compiled_from_cache(&agent, ours.path()), [false, false, false], "their machine code is never loaded");
    copy_theirs();
    check("entries copied from another folder");

    // Compiled components swapped between the two binaries.
    let compiled: Vec<&(PathBuf, Vec<u8>)> = good.iter().filter(|(f, _)| f.extension().unwrap() == "cwasm").collect();
    assert_eq!(compiled.len(), 2, "one entry per binary: {good:?}");
    std::fs::write(ours.path().join(&compiled[0].0), &compiled[1].1).unwrap();
    std::fs::write(ours.path().join(&compiled[1].0), &compiled[0].1).unwrap();
    assert_eq!(
        compiled_from_cache(&agent, ours.path()),
        [false, false, false],
        "another binary's code is never loaded"
    );
    restore();

    // Answers swapped between keys: each entry's bytes under the next one's name.
    let answers = answer_entries(ours.path());
    assert!(answers.len() >= 4, "two describe and two stable answers: {answers:?}");
    let bytes: Vec<Vec<u8>> = answers.iter().map(|(p, _)| std::fs::read(p).unwrap()).collect();
    for (i, (path, _)) in answers.iter().enumerate() {
        std::fs::write(path, &bytes[(i + 1) % bytes.len()]).unwrap();
    }
    check("answers swapped between keys");

    // Forged with another folder's secret: well-formed, the right key, a
    // payload that would put text of the forger's in the stable part.
    let forger = Answers::open(Some(&CacheDir::open(theirs.path()).unwrap()), Some(0)).unwrap();
    let mut forged = 0;
    for (path, key) in &answers {
        let text = std::fs::read_to_string(path).unwrap();
        if let Some((_, payload)) = text.split_once('\n').filter(|(_, p)| p.contains("Original.")) {
            let payload = payload.replace("Original.", "FORGED by another user.");
            std::fs::write(path, forger.encode(*key, payload.as_bytes())).unwrap();
            forged += 1;
        }
    }
    // At least the fixture's stable answer; more when a loaded machine
    // made a hook miss its deadline in one of the builds above, so that a
    // later hook saw other files and its answer was kept under another key.
    assert!(forged >= 1, "the fixture's stable answer");
    check("answers forged without the folder's secret");

    // Saved token counts, every count off by 1,000, signed with another
    // folder's secret (the layout of host/src/tokens.rs).
    let counts = ours.path().join("tokens-cl100k_base.bin");
    let mut bytes = std::fs::read(&counts).unwrap();
    assert_eq!(&bytes[..8], b"PROEMTK4");
    // After the header: the kept entries' number, then the entries.
    for entry in bytes[60..].chunks_exact_mut(20) {
        let n = u32::from_le_bytes(entry[16..].try_into().unwrap()) + 1000;
        entry[16..].copy_from_slice(&n.to_le_bytes());
    }
    let sign = |folder: &Path, bytes: &mut Vec<u8>| {
        let (header, body) = bytes.split_at(56);
        let mac = CacheDir::open(folder).unwrap().mac(&[b"proem token counts", b"PROEMTK4", &header[8..24], body]);
        bytes[24..56].copy_from_slice(&mac);
    };
    sign(theirs.path(), &mut bytes);
    std::fs::write(&counts, &bytes).unwrap();
    check("token counts forged with another folder's secret");
    // The control: signed with this folder's secret, the same file is read
    // (so the case above was refused by its MAC alone).
    sign(ours.path(), &mut bytes);
    std::fs::write(&counts, &bytes).unwrap();
    let (_, tokens, _, _) = build(&agent, ours.path().as_os_str());
    assert_ne!(tokens, expected_tokens, "the counts file is what the build counts with");
    restore();
}

#[test]
fn an_answer_kept_for_one_agent_is_a_miss_for_another() {
    let (first, second) = (agent("First agent."), agent("Second agent."));
    let expected = uncached(&second).0;
    let cache = tempfile::tempdir().unwrap();
    build(&first, cache.path().as_os_str());
    let kept: Vec<(PathBuf, u128)> = answer_entries(cache.path());
    let first_stable = kept
        .iter()
        .map(|(p, _)| std::fs::read(p).unwrap())
        .find(|b| String::from_utf8_lossy(b).contains("First agent."))
        .expect("the first agent's stable answer");
    build(&second, cache.path().as_os_str());
    // Every entry the second agent added now holds the first agent's answer.
    let added: Vec<PathBuf> = answer_entries(cache.path())
        .into_iter()
        .map(|(p, _)| p)
        .filter(|p| !kept.iter().any(|(k, _)| k == p))
        .collect();
    assert!(!added.is_empty());
    for path in &added {
        std::fs::write(path, &first_stable).unwrap();
    }
    let (prompt, _, _, _) = build(&second, cache.path().as_os_str());
    assert_eq!(prompt, expected);
    assert!(!prompt.contains("First agent."));
}

#[test]
fn a_symlinked_entry_is_never_followed() {
    let agent = agent("Linked.");
    let (expected, expected_tokens) = uncached(&agent);
    let cache = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    build(&agent, cache.path().as_os_str());
    // Each entry moved out of the folder and linked back: its bytes are
    // whole and signed, but proem never opens an entry through a link.
    let mut moved = Vec::new();
    for (i, file) in cache_files(cache.path()).into_iter().enumerate() {
        let target = outside.path().join(format!("{i}"));
        std::fs::rename(cache.path().join(&file), &target).unwrap();
        symlink(&target, cache.path().join(&file)).unwrap();
        moved.push((target.clone(), std::fs::read(&target).unwrap()));
    }
    assert_eq!(compiled_from_cache(&agent, cache.path()), [false, false, false]);
    let (prompt, tokens, statuses, _) = build(&agent, cache.path().as_os_str());
    assert_eq!((prompt, tokens), (expected, expected_tokens));
    assert!(statuses.iter().all(|s| s == "ok"), "{statuses:?}");
    for (target, bytes) in moved {
        assert_eq!(std::fs::read(&target).unwrap(), bytes, "{} written through its link", target.display());
    }
}

#[test]
fn identical_binaries_are_compiled_and_described_once() {
    // 24 entries: the fixture under 12 ids from one file and 10 from a copy,
    // the same official plugin under 2 ids.
    let mut entries = String::new();
    let ids: Vec<String> = (0..22).map(|i| format!("e{i:02}")).collect();
    for (i, id) in ids.iter().enumerate() {
        let entry = fixture(id, "sections", &format!("id = \"{id}\", text = \"Entry {id}.\""));
        entries += &if i < 12 { entry } else { entry.replace("plugins/fixture.wasm", "plugins/copy.wasm") };
    }
    entries += &builtin("hardware-access", "");
    entries += &builtin("hardware-access", "").replace("id = \"hardware-access\"", "id = \"hw-2\"");
    let agent = Agent::with_plugins(&entries);
    agent.guest("proem-fixture-guest", "copy.wasm");
    let configs = agent.assembler().config().plugins.clone();
    assert_eq!(configs.len(), 24);
    let set = proem::load_plugins(&configs, agent.path(), None).unwrap();
    let readies: Vec<_> = set.plugins().iter().map(|p| p.state.as_ref().unwrap()).collect();
    let fixtures: Vec<_> =
        readies.iter().zip(set.plugins()).filter(|(_, p)| p.id != "hardware-access" && p.id != "hw-2").collect();
    assert_eq!(fixtures.len(), 22);
    assert!(fixtures.iter().all(|(r, _)| r.shares_code_with(fixtures[0].0)), "one fixture binary, one code");
    let hw: Vec<_> =
        readies.iter().zip(set.plugins()).filter(|(_, p)| p.id == "hardware-access" || p.id == "hw-2").collect();
    assert!(hw[0].0.shares_code_with(hw[1].0) && !hw[0].0.shares_code_with(fixtures[0].0));
    // A process with no disk cache compiles and describes each binary once.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_proem-full"))
        .args(["build", agent.path().to_str().unwrap(), "--now", "2026-11-21T09:30:00Z"])
        .env("PROEM_CACHE_DIR", "")
        .env("PROEM_LOG", "proem=debug")
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    assert_eq!(log.matches("compiled a component").count(), 2, "{log}");
    let describes = log.lines().filter(|l| l.contains("plugin call") && l.contains("\"describe\"")).count();
    assert_eq!(describes, 2, "{log}");
    let prompt = String::from_utf8_lossy(&out.stdout);
    assert!(ids.iter().all(|id| prompt.contains(&format!("Entry {id}."))), "every entry runs: {prompt}");
}
