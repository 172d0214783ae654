//! `proem plugin dev DIR --into AGENT` (issue 29 item 4): build, check,
//! re-pin, print the plugin's sections and the prompt's diff, then watch.
//! No network: the build is `--build-cmd` (or `--no-build`) over a prebuilt
//! component in the template's place; the templates' own builds run in
//! host/full/tests/templates.sh.

use crate::common::*;
use proptest::prelude::*;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

fn full() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_proem-full"));
    command.env("PROEM_CACHE_DIR", plugin_env());
    command
}

/// A Rust plugin folder as `plugin new` makes it, its component already
/// built into the template's place (`target/wasm32-wasip2/release/`).
fn rust_folder(dir: &Path, guest: &str) {
    std::fs::write(dir.join("Cargo.toml"), "[package]\nname = \"my-plugin\"\nversion = \"0.1.0\"\n").unwrap();
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("src/lib.rs"), "// the plugin\n").unwrap();
    set_component(dir, guest);
}

fn set_component(dir: &Path, guest: &str) {
    let out = dir.join("target/wasm32-wasip2/release");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("my_plugin.wasm"), guest_wasm(guest)).unwrap();
}

fn dev_once(dir: &Path, agent: &Path, extra: &[&str]) -> (bool, String, String) {
    let out = full()
        .args(["plugin", "dev"])
        .arg(dir)
        .arg("--into")
        .arg(agent)
        .arg("--once")
        .args(extra)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

fn pin(agent: &Path) -> String {
    std::fs::read_to_string(agent.join("proem.toml")).unwrap_or_default()
}

/// One cycle on a Rust folder: its build command runs in DIR, the template's
/// component is checked and pinned, the sections it contributes are
/// listed; a second cycle with another component re-pins it in place and
/// prints what left and came into the prompt.
#[test]
fn plugin_dev_once_builds_pins_and_prints_the_sections_and_the_diff() {
    let dir = tempfile::tempdir().unwrap();
    let agent = Agent::new();
    rust_folder(dir.path(), "proem-fixture-guest");
    let (ok, out, err) = dev_once(dir.path(), agent.path(), &["--build-cmd", "echo built > built.txt"]);
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("(Rust)"), "{out}");
    assert!(dir.path().join("built.txt").exists(), "the build did not run in DIR");
    let first = proem_core::digest::sha256_hex(guest_wasm("proem-fixture-guest"));
    assert!(out.contains("re-pinned my-plugin (plugins/my_plugin.wasm)"), "{out}");
    assert!(out.contains(&format!("sha256 {first}")), "{out}");
    assert!(pin(agent.path()).contains(&first));
    assert!(out.contains("plugin my-plugin: ok"), "{out}");
    assert!(out.contains("section fixture (stable"), "{out}");
    assert!(out.contains("prompt changed:") && out.contains("+ fixture"), "{out}");

    set_component(dir.path(), "persona-swap");
    let (ok, out, err) = dev_once(dir.path(), agent.path(), &["--build-cmd", "true"]);
    assert!(ok, "{out}\n{err}");
    let second = proem_core::digest::sha256_hex(guest_wasm("persona-swap"));
    let config = pin(agent.path());
    assert!(config.contains(&second) && !config.contains(&first), "{config}");
    assert_eq!(config.matches("[[plugins]]").count(), 1, "{config}");
    assert!(out.contains("- fixture"), "the fixture's section did not leave: {out}");
    assert!(out.contains("stable hash changed"), "{out}");
    // The same component again: nothing moves.
    let (ok, out, _) = dev_once(dir.path(), agent.path(), &["--no-build"]);
    assert!(ok && out.contains("prompt unchanged"), "{out}");
}

/// Without --build-cmd the template's own command is the build: read from
/// the folder's files, for each of the three languages.
#[test]
fn plugin_dev_reads_the_templates_build_command_and_component() {
    use proem_full::dev::{Build, Project};
    let cases = [
        ("Cargo.toml", "[package]\nname = \"a-b\"\n", "Rust", "cargo build --release --target wasm32-wasip2"),
        ("package.json", "{}", "JavaScript", "npm run build"),
        ("build.sh", "true\n", "Python", "sh build.sh"),
    ];
    for (file, text, lang, build) in cases {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(file), text).unwrap();
        let project = Project::detect(dir.path(), &Build::Template, None).unwrap();
        assert_eq!((project.lang, project.build_shown().as_str()), (lang, build));
        if lang == "Rust" {
            let wasm = project.component().unwrap();
            assert!(wasm.ends_with("target/wasm32-wasip2/release/a_b.wasm"), "{}", wasm.display());
        } else {
            let err = project.component().unwrap_err();
            assert!(err.contains("no .wasm file") && err.contains("--wasm"), "{err}");
            std::fs::write(dir.path().join("x.wasm"), "").unwrap();
            std::fs::write(dir.path().join("y.wasm"), "").unwrap();
            let err = project.component().unwrap_err();
            assert!(err.contains("2 .wasm files (x.wasm, y.wasm)"), "{err}");
        }
    }
    let empty = tempfile::tempdir().unwrap();
    let err = Project::detect(empty.path(), &Build::Template, None).unwrap_err();
    assert!(err.contains("--build-cmd") && err.contains("--wasm"), "{err}");
}

/// A build that fails, a component that does not check, and a build that
/// never ends: each stops the cycle with the reason, exit 1, and the agent
/// is not touched.
#[test]
fn plugin_dev_repins_nothing_when_the_build_fails_or_the_component_does_not_check() {
    let dir = tempfile::tempdir().unwrap();
    let agent = tempfile::tempdir().unwrap();
    std::fs::write(agent.path().join("proem.toml"), "# mine\n").unwrap();
    rust_folder(dir.path(), "proem-fixture-guest");
    let (ok, out, _) = dev_once(dir.path(), agent.path(), &["--build-cmd", "exit 3"]);
    assert!(!ok && out.contains("`sh -c exit 3` failed") && out.contains("nothing was re-pinned"), "{out}");
    std::fs::write(dir.path().join("target/wasm32-wasip2/release/my_plugin.wasm"), b"\0asm not a component").unwrap();
    let (ok, out, _) = dev_once(dir.path(), agent.path(), &["--no-build"]);
    assert!(!ok && out.contains("plugin check failed") && out.contains("nothing was re-pinned"), "{out}");
    assert_eq!(pin(agent.path()), "# mine\n");
    assert!(!agent.path().join("plugins").exists());
}

/// A build past --build-timeout is stopped with every process it started
/// (its process group), not only the shell: nothing it spawned outlives it.
#[test]
fn plugin_dev_stops_a_build_past_its_timeout_with_every_process_it_started() {
    let dir = tempfile::tempdir().unwrap();
    let agent = tempfile::tempdir().unwrap();
    rust_folder(dir.path(), "proem-fixture-guest");
    let cmd = "sleep 120 & echo $! > sleeper.pid; wait";
    let status = full()
        .args(["plugin", "dev"])
        .arg(dir.path())
        .arg("--into")
        .arg(agent.path())
        .args(["--once", "--build-timeout", "1", "--build-cmd", cmd])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(1));
    assert!(!agent.path().join("proem.toml").exists(), "a timed-out build was pinned");
    let pid = std::fs::read_to_string(dir.path().join("sleeper.pid")).unwrap();
    let proc = format!("/proc/{}", pid.trim());
    // The sleeper, reparented when killed, is reaped by init: give it up to 10 s.
    let gone = (0..100).any(|_| {
        let alive = std::fs::read_to_string(format!("{proc}/stat")).is_ok_and(|s| !s.contains(") Z "));
        if alive {
            std::thread::sleep(Duration::from_millis(100));
        }
        !alive
    });
    assert!(gone, "the build's child {} outlived the timeout", pid.trim());
}

/// The walk never follows a symlink (a loop ends) and refuses a folder
/// past its bound, naming it.
#[test]
fn plugin_dev_walk_follows_no_symlink_and_refuses_a_folder_past_its_bound() {
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(dir.path(), dir.path().join("loop")).unwrap();
    std::os::unix::fs::symlink("/", dir.path().join("root")).unwrap();
    let seen = proem_full::dev::snapshot(dir.path(), None).unwrap();
    assert_eq!(seen.len(), 2);
    for i in 0..=proem_full::dev::MAX_WATCHED {
        std::fs::write(dir.path().join(format!("f{i}")), "").unwrap();
    }
    let err = proem_full::dev::snapshot(dir.path(), None).unwrap_err();
    assert!(err.contains(&format!("more than {} files", proem_full::dev::MAX_WATCHED)), "{err}");
    let deep = tempfile::tempdir().unwrap();
    let mut path = deep.path().to_path_buf();
    for _ in 0..=proem_full::dev::MAX_DEPTH {
        path.push("d");
    }
    std::fs::create_dir_all(&path).unwrap();
    let err = proem_full::dev::snapshot(deep.path(), None).unwrap_err();
    assert!(err.contains(&format!("deeper than {}", proem_full::dev::MAX_DEPTH)), "{err}");
}

/// One change to a source folder, of any kind.
#[derive(Debug, Clone)]
enum Change {
    Append(usize),
    Delete(usize),
    Create(String),
    Rename(usize),
    Touch(usize, u64),
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        (0usize..8).prop_map(Change::Append),
        (0usize..8).prop_map(Change::Delete),
        "[a-z]{1,8}\\.(rs|py|js|toml)".prop_map(Change::Create),
        (0usize..8).prop_map(Change::Rename),
        (0usize..8, 1u64..1_000_000).prop_map(|(i, s)| Change::Touch(i, s)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The watcher's rule: any change to a source file (its bytes, its
    /// name, its time, its being) is seen, in whatever subfolder; no change
    /// is none; and a change under target/, node_modules/ or a hidden
    /// folder (build outputs, toolchains) is not one.
    #[test]
    fn plugin_dev_sees_every_source_change_and_none_in_build_outputs(
        names in proptest::collection::vec("(src/)?[a-z]{1,8}\\.(rs|py|js)", 1..8),
        change in change(),
        outputs in proptest::sample::select(vec!["target", "node_modules", ".venv", ".git"]),
    ) {
        use proem_full::dev::snapshot;
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::create_dir_all(dir.path().join(outputs).join("deep")).unwrap();
        let files: Vec<_> = names.iter().map(|n| dir.path().join(n)).collect();
        for file in &files {
            std::fs::write(file, "x").unwrap();
        }
        let before = snapshot(dir.path(), None).unwrap();
        prop_assert_eq!(&before, &snapshot(dir.path(), None).unwrap());
        std::fs::write(dir.path().join(outputs).join("deep/out.wasm"), "built").unwrap();
        prop_assert_eq!(&before, &snapshot(dir.path(), None).unwrap(), "a build output counted");
        let pick = |i: usize| &files[i % files.len()];
        match &change {
            Change::Append(i) => std::fs::write(pick(*i), "xy").unwrap(),
            Change::Delete(i) => { let _ = std::fs::remove_file(pick(*i)); }
            Change::Create(name) => std::fs::write(dir.path().join("src").join(format!("new_{name}")), "").unwrap(),
            Change::Rename(i) => std::fs::rename(pick(*i), dir.path().join("renamed_.rs")).unwrap(),
            Change::Touch(i, s) => {
                let at = std::time::UNIX_EPOCH + Duration::from_secs(*s);
                std::fs::File::options().write(true).open(pick(*i)).unwrap().set_modified(at).unwrap();
            }
        }
        prop_assert_ne!(&before, &snapshot(dir.path(), None).unwrap(), "missed {:?}", change);
    }
}

/// Watching (no --once): a new component dropped into DIR is re-pinned by
/// the next cycle, without restarting.
#[test]
fn plugin_dev_watching_repins_a_changed_component() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let agent = Agent::new();
    std::fs::write(dir.path().join("plugin.wasm"), guest_wasm("proem-fixture-guest")).unwrap();
    let mut child = full()
        .args(["plugin", "dev"])
        .arg(dir.path())
        .arg("--into")
        .arg(agent.path())
        .args(["--no-build", "--wasm", "plugin.wasm", "--interval-ms", "100"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (send, lines) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            if send.send(line).is_err() {
                break;
            }
        }
    });
    let wait_for = |needle: &str| -> Result<(), String> {
        loop {
            match lines.recv_timeout(Duration::from_secs(60)) {
                Ok(line) if line.contains(needle) => return Ok(()),
                Ok(_) => {}
                Err(_) => return Err(format!("no line with {needle:?} within 60 s")),
            }
        }
    };
    let first = wait_for("watching");
    std::fs::write(dir.path().join("plugin.wasm"), guest_wasm("persona-swap")).unwrap();
    let second = first.and_then(|()| wait_for(&proem_core::digest::sha256_hex(guest_wasm("persona-swap"))));
    let _ = child.kill();
    let _ = child.wait();
    let _ = reader.join();
    second.unwrap();
    assert!(pin(agent.path()).contains(&proem_core::digest::sha256_hex(guest_wasm("persona-swap"))));
}
