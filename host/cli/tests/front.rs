//! `proem`, the front executable, links no plugin runtime: its package's
//! dependencies make that so (`cargo tree -p proem-cli` has no wasmtime),
//! and this test reads the executable itself to be sure. (Having a test
//! here also makes `cargo test` build `proem` beside `proem-full`, which
//! the workspace's integration tests run.)

use std::process::Command;

const FRONT: &str = env!("CARGO_BIN_EXE_proem");

#[test]
fn the_front_executable_carries_no_plugin_runtime() {
    let bytes = std::fs::read(FRONT).unwrap();
    for engine in ["wasmtime", "cranelift", "winch", "wasmparser", "axum", "oci_client"] {
        let found = bytes.windows(engine.len()).any(|w| w == engine.as_bytes());
        assert!(!found, "{FRONT} contains {engine:?}: something in proem-cli's dependencies links it");
    }
}

#[test]
fn the_front_executable_answers_version_and_help_itself() {
    let version = Command::new(FRONT).arg("--version").output().unwrap();
    assert!(version.status.success());
    assert!(String::from_utf8_lossy(&version.stdout).starts_with("proem "), "{version:?}");
    let help = Command::new(FRONT).arg("--help").output().unwrap();
    let text = String::from_utf8_lossy(&help.stdout);
    for command in ["build", "inspect", "serve", "plugin", "plugins"] {
        assert!(text.contains(command), "--help lists {command}: {text}");
    }
}

const MARLOW: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/marlow");

/// `proem build examples/marlow` at a fixed moment, with its own cache
/// folder.
fn build_marlow(cache: &std::path::Path) -> Command {
    let mut command = Command::new(FRONT);
    command.args(["build", MARLOW, "--now", "2026-11-21T09:30:00Z"]).env("PROEM_CACHE_DIR", cache);
    command
}

/// A cache folder of this test's own, made as proem wants it (0700).
fn cache_folder(name: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let folder = std::env::temp_dir().join(format!("proem-front-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&folder);
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o700)).unwrap();
    folder
}

/// The front starts without Rust's start-up (host/cli/src/main.rs), so it
/// opens closed standard streams on /dev/null itself (the rule's own test is
/// in main.rs: which descriptor is what). End to end: with all three
/// closed, the cold build (handed to proem-full) and the warm one (the
/// front's) both succeed, and a build after them prints what a build with
/// no cache at all prints.
#[test]
fn closed_standard_streams_are_opened_on_dev_null_before_anything_else() {
    use std::os::unix::process::CommandExt;
    let cache = cache_folder("closed");
    for round in ["cold (proem-full)", "warm (the front)"] {
        let mut command = build_marlow(&cache);
        // SAFETY: between fork and exec, only close(2), async-signal-safe.
        unsafe {
            command.pre_exec(|| {
                for fd in 0..3 {
                    libc::close(fd);
                }
                Ok(())
            });
        }
        let status = command.status().unwrap();
        assert_eq!(status.code(), Some(0), "{round} build with stdin, stdout and stderr closed: {status:?}");
    }
    let warm = build_marlow(&cache).output().unwrap();
    let fresh = build_marlow(std::path::Path::new("")).output().unwrap();
    assert!(warm.status.success() && fresh.status.success(), "{warm:?} {fresh:?}");
    assert_eq!(warm.stdout, fresh.stdout, "the cache the closed-stream builds left changed the prompt");
    assert!(!warm.stdout.is_empty());
    let _ = std::fs::remove_dir_all(&cache);
}

/// A reader that stopped before the prompt was written (a closed pipe) makes
/// the build fail with the reason on stderr: not a panic, and not a death by
/// SIGPIPE (the front ignores it itself, as Rust's start-up would).
#[test]
fn a_closed_pipe_on_stdout_is_an_error_not_a_panic_nor_a_signal() {
    let cache = cache_folder("pipe");
    for round in ["cold (proem-full)", "warm (the front)"] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let done = build_marlow(&cache).stdout(writer).output().unwrap();
        let stderr = String::from_utf8_lossy(&done.stderr);
        assert_eq!(done.status.code(), Some(1), "{round}: {:?}, stderr: {stderr}", done.status);
        assert!(stderr.contains("proem: error: cannot write the output to stdout"), "{round}: {stderr}");
        assert!(!stderr.contains("panicked"), "{round}: {stderr}");
    }
    let _ = std::fs::remove_dir_all(&cache);
}

/// A stdout pipe left non-blocking by whoever made it (Node.js does, for a
/// child's pipes) and read slowly: the build waits for the reader instead of
/// failing at the first `EAGAIN` with half a prompt. The pipe holds 4 KiB, so
/// every build here fills it many times before the reader starts.
#[test]
fn a_non_blocking_stdout_read_slowly_gets_the_whole_output() {
    let cache = cache_folder("nonblocking");
    let expected = build_marlow(&cache).output().unwrap();
    assert!(expected.status.success() && expected.stdout.len() > 16 * 1024, "{expected:?}");
    for round in ["cold (proem-full)", "warm (the front)", "json"] {
        if round == "cold (proem-full)" {
            let _ = std::fs::remove_dir_all(&cache);
            let _ = cache_folder("nonblocking");
        }
        let (mut reader, writer) = small_non_blocking_pipe();
        let mut command = build_marlow(&cache);
        if round == "json" {
            command.args(["--format", "json"]);
        }
        command.stdout(writer).stderr(std::process::Stdio::piped());
        let (got, done) = read_late(command, &mut reader);
        assert_eq!(done.status.code(), Some(0), "{round}: {}", String::from_utf8_lossy(&done.stderr));
        if round != "json" {
            assert_eq!(got, expected.stdout, "{round}: {} of {} bytes", got.len(), expected.stdout.len());
        } else {
            let report: serde_json::Value = serde_json::from_slice(&got).expect("the whole JSON report");
            assert_eq!(report["prompt"].as_str().map(|p| format!("{p}\n").into_bytes()), Some(expected.stdout.clone()));
        }
    }
    let _ = std::fs::remove_dir_all(&cache);
}

/// `--help` and `--version` fail as any output does when stdout cannot
/// take them (a full disk), instead of exiting 0 with nothing written.
#[test]
fn help_and_version_fail_when_stdout_cannot_take_them() {
    for args in [&["--help"][..], &["--version"], &["build", "--help"], &["help"]] {
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        let done = Command::new(FRONT).args(args).stdout(full).output().unwrap();
        let stderr = String::from_utf8_lossy(&done.stderr);
        assert_eq!(done.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains("cannot write the output to stdout"), "{args:?}: {stderr}");
    }
}

/// A stack too small for a build ends both executables alike: one line on
/// stderr that says so, then SIGABRT (Rust's start-up arranges it in
/// proem-full; the front's own `main` does, without reading the stack's
/// bounds), never a silent SIGSEGV.
#[test]
fn a_stack_overflow_says_so_and_aborts_in_both_executables() {
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    let cache = cache_folder("stack");
    assert!(build_marlow(&cache).status().unwrap().success(), "a warm-up build");
    for round in ["warm (the front)", "no cache (proem-full)"] {
        let mut command = build_marlow(&cache);
        if round.starts_with("no cache") {
            command.env("PROEM_CACHE_DIR", "");
        }
        // SAFETY: between fork and exec, only setrlimit(2), async-signal-safe.
        unsafe {
            command.pre_exec(|| {
                let small = libc::rlimit { rlim_cur: 32 * 1024, rlim_max: libc::RLIM_INFINITY };
                libc::setrlimit(libc::RLIMIT_STACK, &small);
                Ok(())
            });
        }
        let done = command.output().unwrap();
        let stderr = String::from_utf8_lossy(&done.stderr);
        assert_eq!(done.status.signal(), Some(libc::SIGABRT), "{round}: {:?} {stderr}", done.status);
        assert!(stderr.contains("stack"), "{round}: {stderr}");
    }
    let _ = std::fs::remove_dir_all(&cache);
}

/// A stdout open for reading only (or a directory, or `O_PATH`) takes no
/// byte: Rust's own `stdout()` calls that a success, so a caller got exit 0
/// and no prompt. Now it is the error it is, cold and warm, and for
/// `--version`.
#[test]
fn a_stdout_that_takes_no_byte_is_an_error_not_a_silent_success() {
    let cache = cache_folder("readonly");
    let read_only = || std::fs::File::open(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml")).unwrap();
    let version = Command::new(FRONT).arg("--version").stdout(read_only()).output().unwrap();
    assert_eq!(version.status.code(), Some(1), "--version: {version:?}");
    for round in ["cold (proem-full)", "warm (the front)"] {
        let done = build_marlow(&cache).stdout(read_only()).output().unwrap();
        let stderr = String::from_utf8_lossy(&done.stderr);
        assert_eq!(done.status.code(), Some(1), "{round}: {stderr}");
        assert!(stderr.contains("cannot write the output to stdout: Bad file descriptor"), "{round}: {stderr}");
    }
    let _ = std::fs::remove_dir_all(&cache);
}

/// A file-size limit (`ulimit -f`) below the prompt's size is a write that
/// fails (EFBIG), reported, not a death by SIGXFSZ with no word.
#[test]
fn a_file_size_limit_is_an_error_not_a_silent_death() {
    use std::os::unix::process::CommandExt;
    let cache = cache_folder("fsize");
    let out = cache.join("prompt.txt");
    for round in ["cold (proem-full)", "warm (the front)"] {
        let mut command = build_marlow(&cache);
        command.stdout(std::fs::File::create(&out).unwrap());
        // SAFETY: between fork and exec, only setrlimit(2), async-signal-safe.
        unsafe {
            command.pre_exec(|| {
                let small = libc::rlimit { rlim_cur: 1000, rlim_max: libc::RLIM_INFINITY };
                libc::setrlimit(libc::RLIMIT_FSIZE, &small);
                Ok(())
            });
        }
        let done = command.output().unwrap();
        let stderr = String::from_utf8_lossy(&done.stderr);
        assert_eq!(done.status.code(), Some(1), "{round}: {:?} {stderr}", done.status);
        assert!(stderr.contains("cannot write the output to stdout: File too large"), "{round}: {stderr}");
    }
    let _ = std::fs::remove_dir_all(&cache);
}

/// Warnings on a non-blocking stderr pipe read late all arrive: 200
/// truncated extra files make ~40 KB of warning lines through a 4 KiB pipe.
#[test]
fn a_non_blocking_stderr_read_slowly_gets_every_warning() {
    let agent = cache_folder("warnings-agent");
    let names: Vec<String> = (0..200).map(|i| format!("notes/n{i:03}.md")).collect();
    std::fs::create_dir_all(agent.join("notes")).unwrap();
    for name in &names {
        std::fs::write(agent.join(name), "a line of notes to be cut\n".repeat(40)).unwrap();
    }
    std::fs::write(agent.join("SOUL.md"), "# Soul\nPlain.\n").unwrap();
    let list: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    let config = format!("[budget]\nper_file_chars = 100\n\n[bootstrap]\nextra_files = [{}]\n", list.join(", "));
    std::fs::write(agent.join("proem.toml"), config).unwrap();
    let build = || {
        let mut command = Command::new(FRONT);
        command.args(["build"]).arg(&agent).args(["--now", "2026-11-21T09:30:00Z"]).env("PROEM_CACHE_DIR", "");
        command
    };
    let expected = build().output().unwrap();
    let lines = |bytes: &[u8]| String::from_utf8_lossy(bytes).lines().filter(|l| l.contains("file_truncated")).count();
    assert!(expected.status.success(), "{}", String::from_utf8_lossy(&expected.stderr));
    assert_eq!(lines(&expected.stderr), 200, "{}", String::from_utf8_lossy(&expected.stderr));
    let (mut reader, writer) = small_non_blocking_pipe();
    let mut command = build();
    command.stderr(writer).stdout(std::process::Stdio::null());
    let (got, done) = read_late(command, &mut reader);
    assert!(done.status.success(), "{:?}", done.status);
    assert_eq!(got, expected.stderr, "{} of {} bytes of warnings", got.len(), expected.stderr.len());
    let _ = std::fs::remove_dir_all(&agent);
}

/// `proem serve` whose "listening on" line cannot be written (a full disk
/// here) stops with the reason before it takes a request, instead of
/// panicking: a supervisor waiting for that line would never learn the
/// port. Loopback, and bounded: the test kills it after 20 s.
#[test]
fn serve_that_cannot_say_where_it_listens_stops_with_the_reason() {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let mut child = Command::new(FRONT)
        .args(["serve", MARLOW, "--listen", "127.0.0.1:0"])
        .env("PROEM_CACHE_DIR", "")
        .stdout(full)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > std::time::Duration::from_secs(20) {
            let _ = child.kill();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    let _ = child.wait();
    assert_eq!(status.and_then(|s| s.code()), Some(1), "{status:?}: {stderr}");
    assert!(stderr.contains("cannot write the output to stdout: No space left on device"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// A pipe that holds 4 KiB, its writing end non-blocking (as a Node.js
/// parent leaves its children's pipes).
fn small_non_blocking_pipe() -> (std::io::PipeReader, std::io::PipeWriter) {
    use std::os::fd::AsRawFd;
    let (reader, writer) = std::io::pipe().unwrap();
    // SAFETY: fcntl on a descriptor this test owns.
    unsafe {
        assert!(libc::fcntl(writer.as_raw_fd(), libc::F_SETPIPE_SZ, 4096) >= 4096);
        let flags = libc::fcntl(writer.as_raw_fd(), libc::F_GETFL);
        assert_eq!(libc::fcntl(writer.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK), 0);
    }
    (reader, writer)
}

/// Starts `command` (its writing end of `reader`'s pipe given to it), lets
/// it fill the pipe for 300 ms, then reads everything: what was read, and
/// how the process ended.
fn read_late(mut command: Command, reader: &mut std::io::PipeReader) -> (Vec<u8>, std::process::Output) {
    use std::io::Read;
    let child = command.spawn().unwrap();
    drop(command);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let mut got = Vec::new();
    reader.read_to_end(&mut got).unwrap();
    (got, child.wait_with_output().unwrap())
}
