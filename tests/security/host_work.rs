//! All host work done for a plugin is charged to it (issue 24, item 7;
//! docs/SECURITY.md §6b, row 14).
//!
//! A plugin calls the host in any order and any amount: random bytes (up to
//! 4 GiB asked at once), random numbers in a loop, file opens, reads of any
//! length, streams whose reads wasmtime-wasi would have run ahead, a
//! listing of a folder of 20,000 entries, stats, log lines, token counts,
//! zeroes to stdout, pollables. Whatever the sequence, one build with that
//! plugin stays within the plugin's `memory_mib` plus the host allowance of
//! memory (peak RSS of the `proem-full` process, against the same build
//! with no host calls), and the call within its deadline plus the slack.

use crate::common::*;
use proptest::prelude::*;
use std::io::Read;

/// The plugin's memory cap in the test.
const MEMORY_MIB: u64 = 16;
/// Its CPU deadline.
const DEADLINE_MS: u64 = 100;
/// The host memory a call may use beyond its `memory_mib`, as
/// docs/SECURITY.md states it (§6b, row 14).
const HOST_ALLOWANCE_MIB: u64 = 16;
/// How long past its deadline a call may run: the host time it may be
/// given back (`sandbox::HOST_TIME_ALLOWANCE`) and two epoch ticks, as
/// docs/SECURITY.md states it, plus room for a loaded test machine to
/// schedule the thread that reports the timeout.
const SLACK_MS: u64 = 100 + 4 + 100;

/// One host call of the guest's `host_calls` behaviour, and how many times
/// or how many bytes.
fn call() -> impl Strategy<Value = String> {
    let sizes = |op: &'static str, sizes: Vec<u64>| prop::sample::select(sizes).prop_map(move |n| format!("{op}:{n}"));
    prop_oneof![
        sizes("random_bytes", vec![16, 65_536, 1 << 20, (1 << 20) + 1, 16 << 20, 64 << 20, 1 << 32]),
        sizes("insecure_bytes", vec![16, 1 << 20, 64 << 20, u64::MAX]),
        sizes("random_u64", vec![1, 1_000, 100_000, 10_000_000]),
        sizes("open", vec![1, 16, 17, 1_000]),
        sizes("read", vec![1, 65_536, 1 << 20, u64::MAX]),
        sizes("reads", vec![10, 10_000, 1_000_000]),
        sizes("streams", vec![1, 100, 1_000, 3_000]),
        sizes("ready", vec![1]),
        sizes("readdir", vec![1, 5]),
        sizes("stat", vec![1, 1_000, 100_000]),
        sizes("log", vec![1, 10_000]),
        sizes("count", vec![1_000, 1 << 20]),
        sizes("zeroes", vec![100, 65_536, 1 << 20]),
        sizes("hold", vec![100, 5_000]),
        sizes("alloc", vec![1, 8]),
    ]
}

/// An agent whose one plugin runs `calls`, with a 1 MiB file to read and a
/// folder of 20,000 entries to list.
fn agent() -> Agent {
    let agent = Agent::with_plugins("");
    agent.bytes("blob", &vec![b'x'; 1 << 20]);
    std::fs::create_dir(agent.path().join("big")).unwrap();
    for i in 0..20_000 {
        std::fs::File::create(agent.path().join(format!("big/entry-{i:05}"))).unwrap();
    }
    agent
}

fn configure(agent: &Agent, calls: &str) {
    // The turn hook; every build is a new turn (see `build`), so every
    // process runs the plugin.
    let entry = fixture("calls", "host_calls", &format!("calls = \"{calls}\", zone = \"dynamic\""));
    let entry = with_deadline(&entry, Some(DEADLINE_MS as u32))
        .replace("path =", &format!("grants = [\"workspace-read\"]\nmemory_mib = {MEMORY_MIB}\npath ="));
    agent.config(&format!("[agent]\nid = \"testbot\"\n\n{entry}"));
}

/// What one `proem-full build` did: the plugin's status and call time, and
/// the process's peak resident memory.
#[derive(Debug)]
struct Run {
    status: String,
    elapsed_ms: u64,
    peak_mib: u64,
}

// The child is reaped by wait4, which also reports its peak RSS.
#[allow(clippy::zombie_processes)]
fn build(agent: &Agent) -> Run {
    // A new turn each time: a turn's answers are kept on disk, and this
    // measures the call.
    static TURN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let turn = TURN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let now = format!("2026-11-21T09:{:02}:{:02}Z", (turn / 60) % 60, turn % 60);
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_proem-full"))
        .args(["build", agent.path().to_str().unwrap(), "--format", "json", "--now", &now])
        .env("PROEM_CACHE_DIR", plugin_env())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut stdout).unwrap();
    // wait4, not Child::wait: it reports the child's own peak RSS.
    let mut status = 0;
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    assert_eq!(unsafe { libc::wait4(pid, &mut status, 0, &mut usage) }, pid);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "proem-full failed: {status}");
    let json: serde_json::Value = serde_json::from_slice(&stdout).unwrap();
    let plugin = json["plugins"].as_array().unwrap().iter().find(|p| p["id"] == "calls").unwrap().clone();
    Run {
        status: plugin["status"].as_str().unwrap().to_string(),
        elapsed_ms: plugin["elapsed_us"].as_u64().unwrap() / 1000,
        peak_mib: (usage.ru_maxrss as u64).div_ceil(1024),
    }
}

/// The peak RSS of the same build with a plugin that makes no host call
/// (the largest of three runs that answered). On a loaded machine the
/// empty call can miss its wall-clock deadline; such a run says nothing of
/// memory, so it is run again, at most ten times in all.
fn baseline(agent: &Agent) -> u64 {
    configure(agent, "");
    let mut peaks = Vec::new();
    let mut missed = Vec::new();
    for _ in 0..10 {
        let run = build(agent);
        if run.status == "ok" {
            peaks.push(run.peak_mib);
        } else {
            missed.push(run);
        }
        if peaks.len() == 3 {
            break;
        }
    }
    assert_eq!(peaks.len(), 3, "a plugin with no host call did not answer: {missed:?}");
    peaks.into_iter().max().unwrap()
}

#[test]
fn any_sequence_of_host_calls_stays_within_memory_mib_plus_the_allowance_and_the_deadline_plus_the_slack() {
    let agent = agent();
    let base = baseline(&agent);
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig { cases: 24, ..ProptestConfig::default() });
    runner
        .run(&prop::collection::vec(call(), 1..6), |calls| {
            let calls = calls.join(",");
            configure(&agent, &calls);
            let run = build(&agent);
            let limit = base + MEMORY_MIB + HOST_ALLOWANCE_MIB;
            prop_assert!(run.peak_mib <= limit, "{calls}: {run:?}, over {limit} MiB ({base} MiB without host calls)");
            prop_assert!(run.elapsed_ms <= DEADLINE_MS + SLACK_MS, "{calls}: {run:?}");
            Ok(())
        })
        .unwrap();
}

#[test]
fn four_gib_of_random_bytes_trap_naming_the_limit_before_anything_is_made() {
    let agent = Agent::with_plugins(&fixture("calls", "host_calls", "calls = \"random_bytes:4294967296\""));
    let built = agent.build(&turn());
    assert_eq!(plugin_status(&built, "calls"), "trapped", "{:?}", built.diagnostics);
    let message = diagnostic(&built, "plugin_trap").unwrap();
    assert!(message.contains("over the limit of 1048576 bytes a call"), "{message}");
}

#[test]
fn a_loop_of_host_calls_ends_at_the_deadline_it_is_charged_to() {
    // A hundred thousand random numbers take ~15 ms of real time, but are
    // charged 1 µs each: 100 ms, past a 50 ms deadline, whatever the
    // host's real speed.
    let entry = with_deadline(&fixture("calls", "host_calls", "calls = \"random_u64:100000\""), Some(50));
    let built = Agent::with_plugins(&entry).build(&turn());
    assert_eq!(plugin_status(&built, "calls"), "timeout", "{:?}", built.diagnostics);
    // A thousand (1 ms) fit.
    let built = Agent::with_plugins(&entry.replace("100000", "1000")).build(&turn());
    assert_eq!(plugin_status(&built, "calls"), "ok", "{:?}", built.diagnostics);
}

#[test]
fn open_files_are_capped_per_call() {
    let entry =
        fixture("calls", "host_calls", "calls = \"open:8\"").replace("path =", "grants = [\"workspace-read\"]\npath =");
    let agent = Agent::with_plugins(&entry);
    agent.file("blob", "x");
    let built = agent.build(&turn());
    assert_eq!(plugin_status(&built, "calls"), "ok", "{:?}", built.diagnostics);
    assert!(built.prompt.contains("held 8 files"), "{}", built.prompt);
    agent.config(&std::fs::read_to_string(agent.path().join("proem.toml")).unwrap().replace("open:8", "open:1000"));
    let built = agent.build(&turn());
    assert_eq!(plugin_status(&built, "calls"), "trapped", "{:?}", built.diagnostics);
    let message = diagnostic(&built, "plugin_trap").unwrap();
    assert!(message.contains("more than 16 workspace files and listings open at once"), "{message}");
}
