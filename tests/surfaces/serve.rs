//! `proem serve` through a real socket with a real HTTP client (reqwest):
//! the service's answers are the CLI's bytes, reloads keep the last good
//! config, limits answer with problems (never a 500 for bad input), a token
//! guards the API, SIGTERM finishes what is in flight, and every response
//! matches the OpenAPI document the service serves.

use crate::common::*;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A `proem serve` process on a free loopback port, killed on drop.
pub struct Server {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// Starts `proem serve ARGS --listen 127.0.0.1:0` and waits (10 s at
    /// most) for its `listening on` line.
    pub fn start(args: &[&str]) -> Server {
        Server::start_with(args, |_| {})
    }

    /// [`Server::start`] with the command changed by `configure` first.
    pub fn start_with(args: &[&str], configure: impl FnOnce(&mut Command)) -> Server {
        let mut command = Command::new(crate::common::front());
        command
            .arg("serve")
            .args(args)
            .args(["--listen", "127.0.0.1:0"])
            .env("PROEM_CACHE_DIR", plugin_env())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        configure(&mut command);
        let mut child = command.spawn().expect("start proem serve");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let line = rx.recv_timeout(Duration::from_secs(20)).expect("proem serve printed its address within 20 s");
        let url = line.strip_prefix("listening on ").expect("the first line names the address").to_string();
        Server { child, url }
    }

    /// The server's stderr, when `start_with` piped it.
    pub fn take_stderr(&mut self) -> Option<std::process::ChildStderr> {
        self.child.stderr.take()
    }

    /// The server's process id.
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// `127.0.0.1:PORT`.
    pub fn addr(&self) -> String {
        self.url.trim_start_matches("http://").to_string()
    }

    /// Sends SIGTERM and waits (10 s at most) for the exit status.
    pub fn stop(&mut self) -> std::process::ExitStatus {
        let killed = Command::new("kill").args(["-TERM", &self.pid().to_string()]).status().unwrap();
        assert!(killed.success());
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s;
            }
            assert!(Instant::now() < deadline, "the server did not exit within 10 s of SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

pub fn client() -> reqwest::Client {
    // reqwest is built with TLS but no provider (feature unification with
    // proem's OCI client); these requests are plain HTTP, the provider is
    // only for the builder's sake.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().no_proxy().timeout(Duration::from_secs(30)).build().unwrap()
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(4).enable_all().build().unwrap()
}

/// `proem build AGENT ARGS` on the command line: its stdout.
fn cli(agent: &str, args: &[&str]) -> String {
    let out = Command::new(crate::common::front())
        .arg("build")
        .arg(agent)
        .args(args)
        .env("PROEM_CACHE_DIR", plugin_env())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// A JSON report with each plugin's `elapsed_us` set to 0 and `remembered`
/// to false: what depends on the process's memos, not on the inputs.
fn without_timings(json: &str) -> String {
    let mut v: Value = serde_json::from_str(json).unwrap();
    for p in v["plugins"].as_array_mut().unwrap() {
        p["elapsed_us"] = json!(0);
        p["remembered"] = json!(false);
    }
    serde_json::to_string_pretty(&v).unwrap()
}

pub fn atlas() -> String {
    example("atlas").display().to_string()
}

#[test]
fn thirty_two_clients_get_the_clis_bytes() {
    plugin_env();
    let agent = atlas();
    let server = Server::start(&[&agent]);
    // (request, the CLI's flags for the same turn)
    let turns: Vec<(Value, Vec<&str>)> = vec![
        (json!({"now": "2026-11-21T09:30:00Z"}), vec!["--now", "2026-11-21T09:30:00Z"]),
        (
            json!({"now": "2026-11-21T09:30:00Z", "channel": "telegram", "chat_kind": "group", "group_title": "Lab", "format": "anthropic"}),
            vec![
                "--now",
                "2026-11-21T09:30:00Z",
                "--channel",
                "telegram",
                "--chat-kind",
                "group",
                "--group-title",
                "Lab",
                "--format",
                "anthropic",
            ],
        ),
        (
            json!({"now": "2026-12-01T18:00:00Z", "timezone": "Europe/Berlin", "model": "claude-sonnet-4", "provider": "anthropic", "format": "openai"}),
            vec![
                "--now",
                "2026-12-01T18:00:00Z",
                "--timezone",
                "Europe/Berlin",
                "--model",
                "claude-sonnet-4",
                "--provider",
                "anthropic",
                "--format",
                "openai",
            ],
        ),
        (
            json!({"now": "2026-11-21T09:30:00Z", "extra": "Be brief.", "mode": "task", "format": "json"}),
            vec!["--now", "2026-11-21T09:30:00Z", "--extra", "Be brief.", "--mode", "task", "--format", "json"],
        ),
    ];
    let expected: Vec<String> = turns
        .iter()
        .map(|(req, args)| {
            let out = cli(&agent, args);
            if req["format"] == "json" {
                without_timings(&out)
            } else {
                out
            }
        })
        .collect();
    let url = format!("{}/v1/agents/atlas/build", server.url);
    let rt = runtime();
    let mismatches = rt.block_on(async {
        let client = client();
        let mut tasks = Vec::new();
        for c in 0..32usize {
            let (client, url, turns, expected) = (client.clone(), url.clone(), turns.clone(), expected.clone());
            tasks.push(tokio::spawn(async move {
                let mut bad = Vec::new();
                for i in 0..100usize {
                    let k = (c + i) % turns.len();
                    let response = client.post(&url).json(&turns[k].0).send().await.unwrap();
                    assert_eq!(response.status(), 200);
                    let body = response.text().await.unwrap();
                    let body = if turns[k].0["format"] == "json" { without_timings(&body) } else { body };
                    if body != expected[k] {
                        bad.push((c, i, k));
                    }
                }
                bad
            }));
        }
        let mut all = Vec::new();
        for t in tasks {
            all.extend(t.await.unwrap());
        }
        all
    });
    assert!(
        mismatches.is_empty(),
        "{} of 3200 responses differ from the CLI, e.g. {:?}",
        mismatches.len(),
        &mismatches[..mismatches.len().min(5)]
    );
}

/// An agent folder of its own (copied from examples/marlow, plugins and
/// all), whose `[agent] id` is its folder name (two agents answering to
/// one id would not start).
pub fn agent_copy(parent: &Path, name: &str) -> PathBuf {
    agent_copy_as(parent, name, name)
}

/// [`agent_copy`] with `[agent] id = "ID"`.
pub fn agent_copy_as(parent: &Path, name: &str, id: &str) -> PathBuf {
    let from = example("marlow");
    let to = parent.join(name);
    copy_dir(&from, &to);
    let toml = std::fs::read_to_string(to.join("proem.toml")).unwrap();
    assert!(toml.contains("id = \"marlow\""));
    std::fs::write(to.join("proem.toml"), toml.replacen("id = \"marlow\"", &format!("id = {id:?}"), 1)).unwrap();
    to
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Polls `check` every 50 ms for up to 10 s.
pub fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !check() {
        assert!(Instant::now() < deadline, "not within 10 s: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn edits_reload_and_a_broken_config_keeps_the_last_good_one_serving() {
    plugin_env();
    let parent = tempfile::tempdir().unwrap();
    let dir = agent_copy(parent.path(), "marlow");
    let server = Server::start(&["--agents", parent.path().to_str().unwrap()]);
    let rt = runtime();
    let c = client();
    let build = |body: Value| -> (u16, String) {
        rt.block_on(async {
            let r = c.post(format!("{}/v1/agents/marlow/build", server.url)).json(&body).send().await.unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        })
    };
    let get = |path: &str| -> (u16, Value) {
        rt.block_on(async {
            let r = c.get(format!("{}{path}", server.url)).send().await.unwrap();
            let status = r.status().as_u16();
            (status, r.json().await.unwrap())
        })
    };
    let turn = json!({"now": "2026-11-21T09:30:00Z"});
    let (status, first) = build(turn.clone());
    assert_eq!(status, 200, "{first}");
    // A workspace edit: the next build shows it.
    std::fs::write(dir.join("SOUL.md"), "# Soul\nA new soul, written while serving.").unwrap();
    eventually("the edited SOUL.md is served", || build(turn.clone()).1.contains("A new soul, written while serving."));
    // A broken proem.toml: the last good config keeps serving, the error shows.
    let good_toml = std::fs::read_to_string(dir.join("proem.toml")).unwrap();
    std::fs::write(dir.join("proem.toml"), format!("{good_toml}\n[budget]\ntokens = \"many\"\n")).unwrap();
    eventually("the reload error shows on the agent", || {
        let (_, agent) = get("/v1/agents/marlow");
        agent["status"] == "stale" && agent["last_error"].as_str().is_some_and(|e| e.contains("proem.toml"))
    });
    let (status, still) = build(turn.clone());
    assert_eq!(status, 200);
    assert!(still.contains("A new soul"), "the last good config still serves");
    // Fixed: reloaded, the error gone.
    std::fs::write(dir.join("proem.toml"), good_toml.replace("tokens = 24000", "tokens = 23000")).unwrap();
    eventually("the fixed config is loaded", || {
        let (_, agent) = get("/v1/agents/marlow");
        agent["status"] == "ok" && agent["reloads"].as_u64() >= Some(1)
    });
    // New folders appear, removed ones disappear.
    agent_copy(parent.path(), "second");
    eventually("a new agent folder appears", || get("/v1/agents").1["agents"].as_array().unwrap().len() == 2);
    std::fs::remove_dir_all(parent.path().join("second")).unwrap();
    eventually("a removed agent folder disappears", || get("/v1/agents/second").0 == 404);
    let metrics =
        rt.block_on(async { c.get(format!("{}/metrics", server.url)).send().await.unwrap().text().await.unwrap() });
    assert!(metrics.contains("proem_reloads_total{agent=\"marlow\",outcome=\"error\"}"), "{metrics}");
    assert!(metrics.contains("proem_reloads_total{agent=\"marlow\",outcome=\"ok\"}"), "{metrics}");
    assert!(
        metrics.contains("proem_stable_hash_changes_total{agent=\"marlow\",cause=\"file\"} 1"),
        "the SOUL.md edit busted the cache once, and is named as a file: {metrics}"
    );
}

/// A request sent after the agent's folder was replaced (a symlink swapped,
/// a folder renamed into its place) or its proem.toml edited (in place or
/// renamed over) is built from the new files, not from the last assembler:
/// the background poll would see the change up to 250 ms later, and until
/// then the service answered with the old folder's files or config. Random
/// changes, each checked by the very next request. Also a swap higher up
/// the path (a `current` symlink above `current/agents/deep`, the usual
/// release layout) to a release made before the server started, its
/// proem.toml a hard link to the first release's, as `rsync --link-dest`
/// makes them: the same config file, another folder.
#[test]
fn a_request_after_the_folder_is_replaced_or_the_config_edited_is_built_from_them() {
    plugin_env();
    let top = tempfile::tempdir().unwrap();
    let (links, plain) = (top.path().join("links"), top.path().join("plain"));
    std::fs::create_dir_all(&links).unwrap();
    std::fs::create_dir_all(&plain).unwrap();
    let mark = |dir: &Path, text: &str| {
        let soul = std::fs::read_to_string(dir.join("SOUL.md")).unwrap();
        assert!(soul.contains("calm, dry and precise"), "examples/marlow/SOUL.md: {soul}");
        std::fs::write(dir.join("SOUL.md"), soul.replacen("calm, dry and precise", text, 1)).unwrap();
    };
    let named = |toml: &str, name: &str| -> String {
        let at = toml.find("\nname = \"").expect("[agent] name in examples/marlow/proem.toml") + 1;
        let end = at + toml[at..].find('\n').unwrap();
        format!("{}name = {name:?}{}", &toml[..at], &toml[end..])
    };
    mark(&agent_copy_as(&links, "v0", "swapped"), "MARK-S-0");
    std::os::unix::fs::symlink("v0", links.join("current")).unwrap();
    let dir = agent_copy_as(&plain, "agent", "renamed");
    mark(&dir, "MARK-R-0");
    let releases = top.path().join("releases");
    // Every release, made up front, each proem.toml a hard link to r0's.
    for round in 0..=20u32 {
        let deep = agent_copy_as(&releases.join(format!("r{round}/agents")), "deep", "deep");
        mark(&deep, &format!("MARK-D-{round}"));
        if round > 0 {
            std::fs::remove_file(deep.join("proem.toml")).unwrap();
            std::fs::hard_link(releases.join("r0/agents/deep/proem.toml"), deep.join("proem.toml")).unwrap();
        }
    }
    std::os::unix::fs::symlink("r0", releases.join("current")).unwrap();
    let deep = releases.join("current/agents/deep");
    let server =
        Server::start(&[links.join("current").to_str().unwrap(), dir.to_str().unwrap(), deep.to_str().unwrap()]);
    let rt = runtime();
    let c = client();
    let build = |id: &str| -> String {
        rt.block_on(async {
            let body = json!({"now": "2026-11-21T09:30:00Z"});
            let r = c.post(format!("{}/v1/agents/{id}/build", server.url)).json(&body).send().await.unwrap();
            assert_eq!(r.status().as_u16(), 200);
            r.text().await.unwrap()
        })
    };
    assert!(build("swapped").contains("MARK-S-0"));
    assert!(build("renamed").contains("MARK-R-0"));
    assert!(build("deep").contains("MARK-D-0"));
    let mut seed: u64 = 0x05ee_d0fa_6e47;
    let mut kinds = [0u32; 5];
    for round in 1..=20u32 {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        let kind = ((seed >> 33) % 5) as usize;
        kinds[kind] += 1;
        let (id, want) = match kind {
            0 => {
                let version = format!("v{round}");
                mark(&agent_copy_as(&links, &version, "swapped"), &format!("MARK-S-{round}"));
                std::os::unix::fs::symlink(&version, links.join("next")).unwrap();
                std::fs::rename(links.join("next"), links.join("current")).unwrap();
                ("swapped", format!("MARK-S-{round}"))
            }
            1 => {
                let new = agent_copy_as(&plain, "next", "renamed");
                mark(&new, &format!("MARK-R-{round}"));
                std::fs::rename(&dir, plain.join(format!("old{round}"))).unwrap();
                std::fs::rename(&new, &dir).unwrap();
                ("renamed", format!("MARK-R-{round}"))
            }
            2 => {
                let toml = std::fs::read_to_string(dir.join("proem.toml")).unwrap();
                std::fs::write(dir.join("proem.toml"), named(&toml, &format!("Name{round}"))).unwrap();
                ("renamed", format!("Name{round}"))
            }
            3 => {
                let toml = std::fs::read_to_string(dir.join("proem.toml")).unwrap();
                std::fs::write(dir.join("proem.toml.new"), named(&toml, &format!("Name{round}"))).unwrap();
                std::fs::rename(dir.join("proem.toml.new"), dir.join("proem.toml")).unwrap();
                ("renamed", format!("Name{round}"))
            }
            _ => {
                std::os::unix::fs::symlink(format!("r{round}"), releases.join("next")).unwrap();
                std::fs::rename(releases.join("next"), releases.join("current")).unwrap();
                ("deep", format!("MARK-D-{round}"))
            }
        };
        let text = build(id);
        assert!(text.contains(&want), "round {round} (change {kind}): the next request missed {want}:\n{text}");
    }
    assert!(kinds.iter().all(|n| *n > 0), "every kind of change was made: {kinds:?}");
}

/// A path that stops leading to a folder (the `current` link swapped to a
/// release that is not there, or to a link loop) is a change too: the very
/// next request is answered from the last good folder marked stale, and the
/// agent shows why, never as if nothing had happened (red team, ninth
/// session: `X-Proem-Stale: false` and no error, for as long as it ran).
#[test]
fn a_path_that_leads_nowhere_any_more_is_served_stale_with_its_error() {
    plugin_env();
    let top = tempfile::tempdir().unwrap();
    let releases = top.path().join("releases");
    agent_copy_as(&releases.join("r0/agents"), "m", "m");
    std::os::unix::fs::symlink("r0", releases.join("current")).unwrap();
    let server = Server::start(&[releases.join("current/agents/m").to_str().unwrap()]);
    let rt = runtime();
    let c = client();
    let build = || {
        rt.block_on(async {
            let body = json!({"now": "2026-11-21T09:30:00Z"});
            let r = c.post(format!("{}/v1/agents/m/build", server.url)).json(&body).send().await.unwrap();
            let stale = r.headers().get("x-proem-stale").map(|v| v.to_str().unwrap().to_string());
            (r.status().as_u16(), stale)
        })
    };
    assert_eq!(build(), (200, Some("false".into())));
    for (round, target) in ["gone", "loop"].into_iter().enumerate() {
        if target == "loop" {
            std::os::unix::fs::symlink("loop", releases.join("loop")).unwrap();
        }
        std::os::unix::fs::symlink(target, releases.join("next")).unwrap();
        std::fs::rename(releases.join("next"), releases.join("current")).unwrap();
        assert_eq!(build(), (200, Some("true".into())), "round {round}: the next request after the swap to {target}");
        let agent = rt.block_on(async {
            let r = c.get(format!("{}/v1/agents/m", server.url)).send().await.unwrap();
            r.json::<serde_json::Value>().await.unwrap()
        });
        assert_eq!(agent["status"], "stale", "{agent}");
        assert!(agent["last_error"].as_str().is_some_and(|e| !e.is_empty()), "{agent}");
    }
    std::os::unix::fs::symlink("r0", releases.join("next")).unwrap();
    std::fs::rename(releases.join("next"), releases.join("current")).unwrap();
    assert_eq!(build(), (200, Some("false".into())), "back on a folder that loads");
}

/// A file rewritten in place (same inode), at the same size, with its
/// modification time set back, is still a change: the stamp serve reloads
/// by holds the status-change time, which no one can set back. For the
/// config (a reload) and a workspace file (the build shows it).
#[test]
fn an_in_place_rewrite_with_its_mtime_set_back_is_still_reloaded() {
    plugin_env();
    let parent = tempfile::tempdir().unwrap();
    let dir = agent_copy(parent.path(), "marlow");
    let rewrite_keeping_mtime = |path: &Path, from: &str, to: &str| {
        assert_eq!(from.len(), to.len(), "a same-size edit");
        let old = std::fs::read_to_string(path).unwrap();
        assert!(old.contains(from), "{from} in {}", path.display());
        let mtime = std::fs::metadata(path).unwrap().modified().unwrap();
        let mut file = std::fs::OpenOptions::new().write(true).truncate(true).open(path).unwrap();
        std::io::Write::write_all(&mut file, old.replace(from, to).as_bytes()).unwrap();
        file.set_times(std::fs::FileTimes::new().set_modified(mtime)).unwrap();
        drop(file);
        assert_eq!(std::fs::metadata(path).unwrap().modified().unwrap(), mtime);
    };
    // Old enough that the edit lands in another second than the load.
    std::thread::sleep(Duration::from_millis(1100));
    let server = Server::start(&[dir.to_str().unwrap()]);
    let rt = runtime();
    let c = client();
    let get = |path: &str| -> Value {
        rt.block_on(async { c.get(format!("{}{path}", server.url)).send().await.unwrap().json().await.unwrap() })
    };
    let build = || -> String {
        rt.block_on(async {
            let body = json!({"now": "2026-11-21T09:30:00Z"});
            let r = c.post(format!("{}/v1/agents/marlow/build", server.url)).json(&body).send().await.unwrap();
            r.text().await.unwrap()
        })
    };
    let first = build();
    assert!(first.contains("Marlow"), "{first}");
    let toml = std::fs::read_to_string(dir.join("proem.toml")).unwrap();
    let (from, to) = if toml.contains("tokens = 24000") {
        ("tokens = 24000", "tokens = 23000")
    } else {
        panic!("examples/marlow/proem.toml sets [budget] tokens = 24000: {toml}")
    };
    rewrite_keeping_mtime(&dir.join("proem.toml"), from, to);
    eventually("the rewritten proem.toml is reloaded", || get("/v1/agents/marlow")["reloads"].as_u64() >= Some(1));
    let soul = std::fs::read_to_string(dir.join("SOUL.md")).unwrap();
    // A word the prompt shows (the front matter is not shown).
    let word = soul
        .split_whitespace()
        .filter(|w| w.len() >= 5 && w.chars().all(|c| c.is_ascii_alphabetic()))
        .find(|w| first.matches(*w).count() == soul.matches(*w).count())
        .unwrap();
    let same_size = "Q".repeat(word.len());
    rewrite_keeping_mtime(&dir.join("SOUL.md"), word, &same_size);
    eventually("the rewritten SOUL.md is served", || build().contains(&same_size));
}

/// An agent with one fixture plugin that spins until its deadline.
pub fn slow_agent(parent: &Path, deadline_ms: u32) -> PathBuf {
    let dir = parent.join("slow");
    std::fs::create_dir_all(dir.join("plugins")).unwrap();
    std::fs::write(dir.join("plugins/fixture.wasm"), guest_wasm("proem-fixture-guest")).unwrap();
    std::fs::write(
        dir.join("proem.toml"),
        format!("[[plugins]]\nid = \"spin\"\npath = \"plugins/fixture.wasm\"\ndeadline_ms = {deadline_ms}\nconfig = {{ behave = \"spin\", zone = \"dynamic\" }}\n"),
    )
    .unwrap();
    dir
}

#[test]
fn limits_answer_with_problems_and_bad_input_is_never_a_500() {
    plugin_env();
    let parent = tempfile::tempdir().unwrap();
    let slow = slow_agent(parent.path(), 400);
    let server = Server::start(&[
        slow.to_str().unwrap(),
        "--concurrent",
        "1",
        "--queue",
        "1",
        "--max-body",
        "2048",
        "--timeout-ms",
        "3000",
    ]);
    let rt = runtime();
    let c = client();
    let url = format!("{}/v1/agents/slow/build", server.url);
    rt.block_on(async {
        // Too large: 413.
        let r = c
            .post(&url)
            .header("content-type", "application/json")
            .body(format!("{{\"extra\": \"{}\"}}", "x".repeat(4096)))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 413);
        assert_eq!(r.headers()["content-type"], "application/problem+json");
        // One runs, one waits, the rest are told to come back: 503 + Retry-After.
        let mut tasks = Vec::new();
        for i in 0..6 {
            let (c, url) = (c.clone(), url.clone());
            tasks.push(tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(i * 20)).await;
                let r = c.post(&url).json(&json!({"now": format!("2026-11-21T09:3{i}:00Z")})).send().await.unwrap();
                (r.status().as_u16(), r.headers().get("retry-after").is_some())
            }));
        }
        let mut statuses = Vec::new();
        for t in tasks {
            statuses.push(t.await.unwrap());
        }
        assert!(statuses.iter().any(|(s, _)| *s == 200), "{statuses:?}");
        assert!(statuses.iter().any(|(s, retry)| *s == 503 && *retry), "{statuses:?}");
        assert!(statuses.iter().all(|(s, _)| *s == 200 || *s == 503), "{statuses:?}");
    });

    // Generated hostile bodies: every answer is a 2xx or 4xx problem.
    let fields =
        ["mode", "now", "budget", "tools", "chat_kind", "format", "extra", "owners", "timezone", "strict", "nope", ""];
    let values = [
        json!(null),
        json!(-1),
        json!(0),
        json!(1e300),
        json!("x"),
        json!(""),
        json!([]),
        json!({}),
        json!(["a", 1]),
        json!(true),
        json!("../../../etc/passwd"),
        json!("9999-99-99T99:99:99Z"),
        json!("\u{202e}\u{0}<!-- PROEM_CACHE_BOUNDARY -->"),
        json!({"tools": [{"name": 5}]}),
    ];
    let mut next = xorshift(0x2545_f491_4f6c_dd1d);
    let fast = Server::start(&[&atlas()]);
    let fast_url = format!("{}/v1/agents/atlas/build", fast.url);
    rt.block_on(async {
        for _ in 0..150 {
            let mut body = serde_json::Map::new();
            for _ in 0..(next() % 4) {
                let f = fields[(next() % fields.len() as u64) as usize];
                body.insert(f.to_string(), values[(next() % values.len() as u64) as usize].clone());
            }
            let raw = match next() % 5 {
                0 => "{\"now\": ".to_string(),
                1 => "[1, 2, 3]".to_string(),
                _ => Value::Object(body).to_string(),
            };
            let r =
                c.post(&fast_url).header("content-type", "application/json").body(raw.clone()).send().await.unwrap();
            let status = r.status().as_u16();
            assert!(status < 500, "{raw} gave {status}: {}", r.text().await.unwrap());
            if status >= 400 {
                let problem: Value = r.json().await.unwrap();
                assert!(problem["detail"].as_str().is_some_and(|d| !d.is_empty()), "{problem}");
                if status == 400 {
                    assert!(problem["field"].is_string(), "a 400 names the field: {problem}");
                }
            }
        }
        // The budget: 422 with the overshoot.
        let r = c.post(&fast_url).json(&json!({"budget": 50})).send().await.unwrap();
        assert_eq!(r.status(), 422);
        let p: Value = r.json().await.unwrap();
        assert!(p["over"].as_u64().unwrap() > 0 && p["needed"].as_u64().unwrap() > 50, "{p}");
        // Unknown agent: 404 naming the known ones.
        let r = c.post(format!("{}/v1/agents/nobody/build", fast.url)).send().await.unwrap();
        assert_eq!(r.status(), 404);
        assert!(r.text().await.unwrap().contains("atlas"));
        // Each problem is counted once.
        let metrics = c.get(format!("{}/metrics", fast.url)).send().await.unwrap().text().await.unwrap();
        assert!(metrics.contains("proem_http_problems_total{status=\"404\"} 1\n"), "{metrics}");
        assert!(metrics.contains("proem_http_problems_total{status=\"422\"} 1\n"), "{metrics}");
    });
}

#[test]
fn a_per_request_deadline_is_a_503_not_a_hang() {
    plugin_env();
    let parent = tempfile::tempdir().unwrap();
    let slow = slow_agent(parent.path(), 1500);
    let server = Server::start(&[slow.to_str().unwrap(), "--timeout-ms", "200"]);
    let rt = runtime();
    rt.block_on(async {
        let started = Instant::now();
        let r = client().post(format!("{}/v1/agents/slow/build", server.url)).send().await.unwrap();
        assert_eq!(r.status(), 503);
        assert!(r.text().await.unwrap().contains("did not finish within 200 ms"));
        assert!(started.elapsed() < Duration::from_millis(1200), "{:?}", started.elapsed());
    });
}

#[test]
fn a_token_guards_the_api_and_an_open_address_needs_one() {
    plugin_env();
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, "s3cret-token-of-some-length\n").unwrap();
    let server = Server::start(&[&atlas(), "--token-file", token_file.to_str().unwrap()]);
    let rt = runtime();
    rt.block_on(async {
        let c = client();
        let r = c.get(format!("{}/v1/agents", server.url)).send().await.unwrap();
        assert_eq!(r.status(), 401);
        assert_eq!(r.headers()["www-authenticate"], "Bearer");
        let r =
            c.get(format!("{}/v1/agents", server.url)).bearer_auth("wrong-token-of-some-length").send().await.unwrap();
        assert_eq!(r.status(), 401);
        let r =
            c.get(format!("{}/v1/agents", server.url)).bearer_auth("s3cret-token-of-some-length").send().await.unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(c.get(format!("{}/healthz", server.url)).send().await.unwrap().status(), 200);
    });
    // Not loopback and no token: refused before binding anything.
    let out = Command::new(crate::common::front()).args(["serve", &atlas(), "--listen", "0.0.0.0:0"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--token-file") && err.contains("--insecure"), "{err}");
}

#[test]
fn sigterm_finishes_the_builds_in_flight() {
    plugin_env();
    let parent = tempfile::tempdir().unwrap();
    let slow = slow_agent(parent.path(), 600);
    let mut server = Server::start(&[slow.to_str().unwrap()]);
    let rt = runtime();
    rt.block_on(async {
        let c = client();
        let url = format!("{}/v1/agents/slow/build", server.url);
        let in_flight = tokio::spawn(async move { c.post(&url).send().await.map(|r| r.status().as_u16()) });
        tokio::time::sleep(Duration::from_millis(150)).await;
        // SAFETY-free: a plain signal to our own child process.
        let killed = Command::new("kill").args(["-TERM", &server.pid().to_string()]).status().unwrap();
        assert!(killed.success());
        assert_eq!(in_flight.await.unwrap().unwrap(), 200, "the build in flight finished");
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = server.child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "the server did not exit within 10 s of SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");
}

// ------------------------------------------------------------------ OpenAPI

/// Checks `value` against a JSON Schema of the subset the service's
/// document uses ($ref, type, enum, required, properties,
/// additionalProperties: false, items, oneOf). Returns what does not fit.
fn check(doc: &Value, schema: &Value, value: &Value, at: &str, errors: &mut Vec<String>) {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        let target = r.trim_start_matches("#/").split('/').fold(doc, |v, k| &v[k]);
        assert!(!target.is_null(), "dangling $ref {r}");
        return check(doc, target, value, at, errors);
    }
    if let Some(options) = schema.get("oneOf").and_then(Value::as_array) {
        let fits = options
            .iter()
            .filter(|o| {
                let mut e = Vec::new();
                check(doc, o, value, at, &mut e);
                e.is_empty()
            })
            .count();
        if fits != 1 {
            errors.push(format!("{at}: fits {fits} of oneOf's {} schemas", options.len()));
        }
        return;
    }
    if let Some(options) = schema.get("anyOf").and_then(Value::as_array) {
        let fits = |o: &&Value| {
            let mut e = Vec::new();
            check(doc, o, value, at, &mut e);
            e.is_empty()
        };
        if !options.iter().any(|o| fits(&o)) {
            errors.push(format!("{at}: fits none of anyOf's {} schemas", options.len()));
        }
        return;
    }
    if let Some(t) = schema.get("type") {
        let types: Vec<&str> = match t {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        let actual = match value {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        };
        if !types.iter().any(|t| *t == actual || (*t == "number" && actual == "integer")) {
            errors.push(format!("{at}: is {actual}, schema says {types:?}"));
            return;
        }
    }
    if let Some(n) = value.as_f64() {
        let below = schema.get("minimum").and_then(Value::as_f64).is_some_and(|min| n < min);
        let above = schema.get("maximum").and_then(Value::as_f64).is_some_and(|max| n > max);
        if below || above {
            errors.push(format!("{at}: {value} is out of the schema's range"));
        }
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array) {
        if !allowed.contains(value) {
            errors.push(format!("{at}: {value} is not one of {allowed:?}"));
        }
    }
    if let Value::Object(map) = value {
        for key in schema.get("required").and_then(Value::as_array).into_iter().flatten() {
            if !map.contains_key(key.as_str().unwrap()) {
                errors.push(format!("{at}: lacks required {key}"));
            }
        }
        let props = schema.get("properties").and_then(Value::as_object);
        for (k, v) in map {
            match props.and_then(|p| p.get(k)) {
                Some(s) => check(doc, s, v, &format!("{at}.{k}"), errors),
                None if schema.get("additionalProperties") == Some(&Value::Bool(false)) => {
                    errors.push(format!("{at}: {k} is not in the schema"))
                }
                None => {}
            }
        }
    }
    if let (Value::Array(items), Some(s)) = (value, schema.get("items")) {
        for (i, v) in items.iter().enumerate() {
            check(doc, s, v, &format!("{at}[{i}]"), errors);
        }
    }
}

/// `v`, or what its `$ref` points at in `doc`.
fn resolve<'a>(doc: &'a Value, v: &'a Value) -> &'a Value {
    match v.get("$ref").and_then(Value::as_str) {
        Some(r) => r.trim_start_matches("#/").split('/').fold(doc, |v, k| &v[k]),
        None => v,
    }
}

#[test]
fn every_response_matches_the_openapi_document() {
    plugin_env();
    let server = Server::start(&[&atlas()]);
    let rt = runtime();
    rt.block_on(async {
        let c = client();
        let doc: Value = c.get(format!("{}/v1/openapi.json", server.url)).send().await.unwrap().json().await.unwrap();
        assert_eq!(doc["openapi"], "3.1.0");
        // (method, path, body, the operation's path template)
        let calls: Vec<(&str, String, Option<Value>, &str)> = vec![
            ("GET", "/v1/agents".into(), None, "/v1/agents"),
            ("GET", "/v1/agents/atlas".into(), None, "/v1/agents/{id}"),
            ("GET", "/v1/agents/nobody".into(), None, "/v1/agents/{id}"),
            (
                "POST",
                "/v1/agents/atlas/build".into(),
                Some(json!({"format": "json", "now": "2026-11-21T09:30:00Z"})),
                "/v1/agents/{id}/build",
            ),
            ("POST", "/v1/agents/atlas/build".into(), Some(json!({"format": "anthropic"})), "/v1/agents/{id}/build"),
            ("POST", "/v1/agents/atlas/build".into(), Some(json!({"format": "openai"})), "/v1/agents/{id}/build"),
            ("POST", "/v1/agents/atlas/build".into(), Some(json!({"budget": 5})), "/v1/agents/{id}/build"),
            ("POST", "/v1/agents/atlas/build".into(), Some(json!({"chat_kind": "crowd"})), "/v1/agents/{id}/build"),
            (
                "POST",
                "/v1/agents/atlas/inspect".into(),
                Some(json!({"channel": "telegram"})),
                "/v1/agents/{id}/inspect",
            ),
            ("POST", "/v1/agents/nobody/inspect".into(), Some(json!({})), "/v1/agents/{id}/inspect"),
            (
                "POST",
                "/v1/agents/atlas/build?report=1".into(),
                Some(json!({"format": "anthropic", "now": null, "tools": [{"name": "t"}]})),
                "/v1/agents/{id}/build",
            ),
            ("POST", "/v1/agents/atlas/build?report=2".into(), Some(json!({})), "/v1/agents/{id}/build"),
            ("GET", "/healthz".into(), None, "/healthz"),
            ("GET", "/readyz".into(), None, "/readyz"),
            ("GET", "/metrics".into(), None, "/metrics"),
            ("GET", "/".into(), None, "/"),
            ("GET", "/app.js".into(), None, "/app.js"),
            ("GET", "/app.css".into(), None, "/app.css"),
            ("GET", "/v1/openapi.json".into(), None, "/v1/openapi.json"),
            (
                "GET",
                "/beta/litellm_prompt_management?prompt_id=atlas&channel=telegram&now=2026-11-21T09%3A30%3A00Z&owner=a&owners=b&heartbeat=false".into(),
                None,
                "/beta/litellm_prompt_management",
            ),
            ("GET", "/beta/litellm_prompt_management?channel=telegram".into(), None, "/beta/litellm_prompt_management"),
            ("GET", "/beta/litellm_prompt_management?prompt_id=nobody".into(), None, "/beta/litellm_prompt_management"),
            ("GET", "/beta/litellm_prompt_management?prompt_id=atlas&budget=5".into(), None, "/beta/litellm_prompt_management"),
            ("GET", "/beta/litellm_prompt_management?prompt_id=atlas&chanel=x".into(), None, "/beta/litellm_prompt_management"),
        ];

        for (method, path, body, template) in calls {
            let mut request = c.request(method.parse().unwrap(), format!("{}{path}", server.url));
            if let Some(b) = &body {
                request = request.json(b);
            }
            let r = request.send().await.unwrap();
            let status = r.status().as_u16().to_string();
            let content_type = r.headers()["content-type"].to_str().unwrap().split(';').next().unwrap().to_string();
            let headers = r.headers().clone();
            let text = r.text().await.unwrap();
            let value: Value =
                if content_type.ends_with("json") { serde_json::from_str(&text).unwrap() } else { Value::String(text) };
            let op = &doc["paths"][template][method.to_lowercase()];
            let response = resolve(&doc, &op["responses"][&status]);
            assert!(!response.is_null(), "{method} {path}: status {status} is not documented");
            for (name, header) in response["headers"].as_object().into_iter().flatten() {
                let header = resolve(&doc, header);
                if header["required"] == json!(true) {
                    let got = headers.get(name.as_str()).map(|v| Value::String(v.to_str().unwrap().into()));
                    let got = got.unwrap_or_else(|| panic!("{method} {path} ({status}): no {name} header"));
                    let mut errors = Vec::new();
                    check(&doc, &header["schema"], &got, name, &mut errors);
                    assert!(errors.is_empty(), "{method} {path}: {errors:?}");
                }
            }
            let schema = &response["content"][&content_type]["schema"];
            assert!(!schema.is_null(), "{method} {path}: {status} {content_type} is not documented");
            let mut errors = Vec::new();
            check(&doc, schema, &value, "$", &mut errors);
            assert!(errors.is_empty(), "{method} {path} ({status}): {errors:?}\n{value}");
            if let Some(b) = &body {
                let mut errors = Vec::new();
                let request_schema = &op["requestBody"]["content"]["application/json"]["schema"];
                check(&doc, request_schema, b, "body", &mut errors);
                assert!(errors.is_empty() || status.starts_with('4'), "the request itself: {errors:?}");
            }
        }
    });
}

/// Whether `value` fits `schema` (see [`check`]).
fn fits(doc: &Value, schema: &Value, value: &Value) -> bool {
    let mut errors = Vec::new();
    check(doc, schema, value, "$", &mut errors);
    errors.is_empty()
}

/// One value of each JSON kind: what goes where the document allows
/// another kind.
fn one_of_each_kind() -> [Value; 7] {
    [json!(null), json!(true), json!(7), json!(7.5), json!("zz"), json!([]), json!({})]
}

/// A small instance of `schema` that fits it, chosen to be what a server
/// builds with: null where null is allowed, only the required members of an
/// object, empty lists, a string "t", the largest number allowed.
fn fitting(doc: &Value, schema: &Value) -> Value {
    let schema = resolve(doc, schema);
    if let Some(options) = schema.get("oneOf").or_else(|| schema.get("anyOf")).and_then(Value::as_array) {
        let mut candidates: Vec<Value> = options.iter().map(|o| fitting(doc, o)).collect();
        // null first, then lists and objects, then other scalars
        candidates.sort_by_key(|v| match v {
            Value::Null => 0,
            Value::Array(_) | Value::Object(_) => 1,
            _ => 2,
        });
        return candidates.into_iter().find(|v| fits(doc, schema, v)).expect("a union with no fitting option");
    }
    let types: Vec<&str> = match &schema["type"] {
        Value::String(t) => vec![t.as_str()],
        Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
        _ => vec![],
    };
    let value = if types.contains(&"null") {
        Value::Null
    } else if let Some(first) = schema["enum"].as_array().and_then(|e| e.first()) {
        first.clone()
    } else {
        match types.first().copied() {
            Some("object") => {
                let required = schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str);
                Value::Object(required.map(|k| (k.to_string(), fitting(doc, &schema["properties"][k]))).collect())
            }
            Some("array") => json!([]),
            Some("boolean") => json!(false),
            Some("integer" | "number") => schema.get("maximum").cloned().unwrap_or(json!(1)),
            _ => json!("t"),
        }
    };
    assert!(fits(doc, schema, &value), "fitting() made {value} for {schema}");
    value
}

/// Pairs (fits, does not fit) of instances of `schema` that differ at one
/// place: a member, list item or union option given a kind, enum value,
/// number out of range or missing member the document does not allow
/// there, found by walking every `$ref`, `oneOf`, `anyOf`, `properties`
/// and `items` of the schema.
fn near_misses(doc: &Value, schema: &Value, depth: usize) -> Vec<(Value, Value)> {
    assert!(depth < 8, "the request schema nests deeper than expected");
    let schema = resolve(doc, schema);
    let mut pairs = Vec::new();
    if let Some(options) = schema.get("oneOf").or_else(|| schema.get("anyOf")).and_then(Value::as_array) {
        let whole = fitting(doc, schema);
        for option in options {
            let leaf = resolve(doc, option).get("properties").is_none() && resolve(doc, option).get("items").is_none();
            for (fit, miss) in near_misses(doc, option, depth + 1) {
                // a leaf option's own fit ("t" for a file name) stands
                // for the whole union's
                let fit = if leaf { whole.clone() } else { fit };
                pairs.push((fit, miss));
            }
        }
    } else {
        let fit = fitting(doc, schema);
        pairs.extend(one_of_each_kind().into_iter().map(|v| (fit.clone(), v)));
        if schema.get("enum").is_some() {
            pairs.push((fit.clone(), json!("not-one-of-them")));
        }
        for (bound, step) in [("minimum", -1), ("maximum", 1)] {
            if let Some(n) = schema.get(bound).and_then(Value::as_i64) {
                pairs.push((fit.clone(), json!(n + step)));
            }
        }
        if let (Value::Object(base), Some(props)) = (&fit, schema.get("properties").and_then(Value::as_object)) {
            for (name, sub) in props {
                for (f, m) in near_misses(doc, sub, depth + 1) {
                    let with = |v: Value| {
                        let mut o = base.clone();
                        o.insert(name.clone(), v);
                        Value::Object(o)
                    };
                    pairs.push((with(f), with(m)));
                }
            }
            for name in base.keys() {
                let mut o = base.clone();
                o.remove(name);
                pairs.push((fit.clone(), Value::Object(o)));
            }
            let mut o = base.clone();
            o.insert("zz_unknown".into(), json!(1));
            pairs.push((fit.clone(), Value::Object(o)));
            // An array standing for the object: its members' values in
            // order (what serde's derive reads as a struct's fields) and
            // the object itself in a list.
            pairs.push((fit.clone(), Value::Array(base.values().cloned().collect())));
            pairs.push((fit.clone(), json!([fit.clone()])));
        }
        if let Some(items) = schema.get("items") {
            pairs.extend(near_misses(doc, items, depth + 1).into_iter().map(|(f, m)| (json!([f]), json!([m]))));
        }
    }
    pairs.retain(|(fit, miss)| fits(doc, schema, fit) && !fits(doc, schema, miss));
    pairs
}

/// Every request the OpenAPI document refuses, the service refuses: for
/// each place in the build body (every member, nested tool fields, union
/// options, list items), a body that misses the document there only is a
/// 400, on both routes that take the body, while the body that fits there
/// builds. The class this closes: a field the parser ignores or reads
/// loosely (`{"type": {…}, "function": {…}}` was built as a tool).
#[test]
fn every_request_the_document_refuses_is_refused() {
    plugin_env();
    let server = Server::start(&[&atlas()]);
    let rt = runtime();
    let doc: Value = serde_json::from_str(include_str!("../../host/serve/src/openapi.json")).unwrap();
    let body = json!({"$ref": "#/components/schemas/BuildRequest"});
    let pairs = near_misses(&doc, &body, 0);
    // every member of the body, and the tool entry's fields, are reached
    for needle in ["\"budget\":0", "\"session_key\":7", "\"type\":{}", "\"parameters\":\"zz\"", "\"server\":true"] {
        assert!(pairs.iter().any(|(_, miss)| miss.to_string().contains(needle)), "no near miss has {needle}");
    }
    assert!(pairs.len() >= 250, "{} near misses", pairs.len());
    rt.block_on(async {
        let c = client();
        for route in ["build", "inspect"] {
            let url = format!("{}/v1/agents/atlas/{route}", server.url);
            let mut fitting_bodies = std::collections::BTreeSet::new();
            for (fit, miss) in &pairs {
                let status = c.post(&url).json(miss).send().await.unwrap().status();
                assert_eq!(status, 400, "{route}: the document refuses {miss}, the service answered {status}");
                if fitting_bodies.insert(fit.to_string()) {
                    let r = c.post(&url).json(fit).send().await.unwrap();
                    let status = r.status();
                    assert_eq!(status, 200, "{route}: {fit} fits the document: {}", r.text().await.unwrap());
                }
            }
        }
    });
}

/// The LiteLLM route's documented query parameters are exactly the build
/// body's turn fields (every one but `format`, which the route refuses),
/// `prompt_id` and `owner`: a field added to the body and not to the
/// route's document (or the other way) fails here.
#[test]
fn the_litellm_route_documents_every_turn_field_as_a_parameter() {
    let doc: Value = serde_json::from_str(include_str!("../../host/serve/src/openapi.json")).unwrap();
    let body = doc["components"]["schemas"]["BuildRequest"]["properties"].as_object().unwrap();
    let mut expected: Vec<&str> = body.keys().map(String::as_str).filter(|k| *k != "format").collect();
    expected.extend(["prompt_id", "owner"]);
    expected.sort_unstable();
    let op = &doc["paths"]["/beta/litellm_prompt_management"]["get"];
    let mut documented: Vec<&str> =
        op["parameters"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    documented.sort_unstable();
    assert_eq!(documented, expected);
    assert!(op["parameters"].as_array().unwrap().iter().all(|p| p["in"] == "query"));
    for status in ["400", "401", "404", "422", "503"] {
        assert_eq!(op["responses"][status]["$ref"], "#/components/responses/Problem", "{status}");
    }
}

// The client packages (host/clients) run against a live server in their own
// tests: host/clients/test.sh, which CI runs after this suite.

// ------------------------------------------------------------------ the inspector page in a real browser

/// A WebDriver session in Debian's headless Chromium, over chromedriver's
/// HTTP API; chromedriver is stopped on drop.
struct Browser {
    driver: Child,
    base: String,
    session: String,
    http: reqwest::Client,
    _profile: tempfile::TempDir,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// The W3C WebDriver key of an element reference.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

impl Browser {
    async fn start() -> Option<Browser> {
        for tool in ["/usr/bin/chromium", "/usr/bin/chromedriver"] {
            if !Path::new(tool).exists() {
                assert!(
                    std::env::var_os("CI").is_none(),
                    "{tool} is missing: .ci/run installs chromium and chromium-driver"
                );
                eprintln!("skipped: {tool} is not installed (apt-get install chromium chromium-driver)");
                return None;
            }
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let driver = Command::new("/usr/bin/chromedriver")
            .args([format!("--port={port}"), "--allowed-ips=127.0.0.1".into()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let base = format!("http://127.0.0.1:{port}");
        let http = client();
        let deadline = Instant::now() + Duration::from_secs(20);
        while http.get(format!("{base}/status")).send().await.is_err() {
            assert!(Instant::now() < deadline, "chromedriver did not start within 20 s");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let profile = tempfile::tempdir().unwrap();
        let args: Vec<String> = [
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--window-size=1280,2200",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([format!("--user-data-dir={}", profile.path().display())])
        .collect();
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": "/usr/bin/chromium", "args": args},
            "goog:loggingPrefs": {"browser": "ALL"},
        }}});
        let r: Value = http.post(format!("{base}/session")).json(&caps).send().await.unwrap().json().await.unwrap();
        let session = r["value"]["sessionId"].as_str().unwrap_or_else(|| panic!("no session: {r}")).to_string();
        Some(Browser { driver, base, session, http, _profile: profile })
    }

    async fn call(&self, method: &str, path: &str, body: Value) -> Value {
        let url = format!("{}/session/{}{path}", self.base, self.session);
        let mut request = self.http.request(method.parse().unwrap(), url);
        if !body.is_null() {
            request = request.json(&body);
        }
        let r = request.send().await.unwrap();
        let v: Value = r.json().await.unwrap();
        assert!(v["value"].get("error").is_none(), "{method} {path}: {v}");
        v["value"].clone()
    }

    async fn js(&self, script: &str) -> Value {
        self.call("POST", "/execute/sync", json!({"script": script, "args": []})).await
    }

    async fn click(&self, css: &str) {
        let el = self.call("POST", "/element", json!({"using": "css selector", "value": css})).await;
        let id = el[ELEMENT].as_str().unwrap_or_else(|| panic!("{css}: {el}")).to_string();
        self.call("POST", &format!("/element/{id}/click"), json!({})).await;
    }

    /// Waits (10 s at most) until `script` returns true.
    async fn until(&self, what: &str, script: &str) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.js(script).await != json!(true) {
            assert!(Instant::now() < deadline, "not within 10 s: {what}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

#[test]
fn the_inspector_page_builds_compares_and_shows_no_console_error() {
    plugin_env();
    let parent = tempfile::tempdir().unwrap();
    let dir = agent_copy(parent.path(), "marlow");
    // Hostile text in a workspace file: shown as text, never run.
    std::fs::write(
        dir.join("USER.md"),
        "# User\n<img src=x onerror=\"document.title='pwned'\"><script>document.title='pwned'</script>",
    )
    .unwrap();
    let server = Server::start(&[dir.to_str().unwrap()]);
    let rt = runtime();
    rt.block_on(async {
        let Some(browser) = Browser::start().await else { return };
        browser.call("POST", "/url", json!({"url": format!("{}/?agent=marlow", server.url)})).await;
        browser.until("the agent list loads", "return document.querySelectorAll('#agent option').length === 1").await;
        browser.click("#build").await;
        browser
            .until("the first build fills the tables", "return document.querySelectorAll('#sections tbody tr').length > 5 && document.getElementById('build-status').textContent.startsWith('built')")
            .await;
        let filled: Value = browser
            .js("return [document.querySelectorAll('#files tbody tr').length, document.querySelectorAll('#plugins tbody tr').length, document.querySelectorAll('#bar .seg').length, document.querySelectorAll('#bar .boundary').length, document.getElementById('stable-text').textContent.length]")
            .await;
        let counts: Vec<u64> = filled.as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
        assert!(counts[0] >= 5 && counts[1] == 2 && counts[2] > 5 && counts[3] == 1 && counts[4] > 1000, "{counts:?}");

        // Edit SOUL.md, build again: the compare view names the section and the cache bust.
        std::fs::write(dir.join("SOUL.md"), "# Soul\nEdited while the page was open.").unwrap();
        browser.click("#build").await;
        // A build that raced the edit compares equal: build again until the
        // change shows (the button is disabled while a build runs).
        browser
            .until("the compare view shows the changed persona", "const shown = document.getElementById('compare').textContent.includes('changed: persona (core)'); const b = document.getElementById('build'); if (!shown && !b.disabled) b.click(); return shown;")
            .await;
        let compare = browser.js("return document.getElementById('compare').textContent").await;
        let compare = compare.as_str().unwrap();
        assert!(compare.contains("The stable hash changed") && compare.contains("Because of: persona (core) changed"), "{compare}");
        assert!(browser.js("return document.querySelectorAll('#sections tr.changed').length").await.as_u64() >= Some(1));

        // The hostile file was text: no element made from it, nothing ran.
        let safe = browser.js("return [document.title, document.querySelectorAll('img').length, document.getElementById('dynamic-text').textContent.includes('<img src=x')]").await;
        assert_eq!(safe, json!(["proem inspector", 0, true]));

        let shot = browser.call("GET", "/screenshot", Value::Null).await;
        let png = base64_decode(shot.as_str().unwrap());
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("../serve-inspector.png");
        std::fs::write(&path, png).unwrap();
        eprintln!("screenshot: {}", path.display());

        let logs = browser.call("POST", "/se/log", json!({"type": "browser"})).await;
        let severe: Vec<&Value> = logs.as_array().unwrap().iter().filter(|l| l["level"] == "SEVERE").collect();
        assert!(severe.is_empty(), "console errors: {severe:?}");
        browser.call("DELETE", "", Value::Null).await;
    });
}

fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("not base64: {c}"),
    };
    let bytes: Vec<u8> = text.bytes().filter(|c| *c != b'=' && !c.is_ascii_whitespace()).map(value).collect();
    bytes
        .chunks(4)
        .flat_map(|c| {
            let n = c.iter().enumerate().fold(0u32, |n, (i, v)| n | (u32::from(*v) << (18 - 6 * i)));
            let out = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
            out.into_iter().take(c.len() - 1)
        })
        .collect()
}

/// A body sent slowly never holds the service: the deadline covers reading
/// it (408), and other clients are answered meanwhile.
#[test]
fn a_slow_body_is_cut_off_at_the_deadline() {
    use std::io::{Read, Write};
    plugin_env();
    let server = Server::start(&[&atlas(), "--timeout-ms", "300"]);
    let addr = server.url.trim_start_matches("http://").to_string();
    let started = Instant::now();
    let mut slow = std::net::TcpStream::connect(&addr).unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        slow,
        "POST /v1/agents/atlas/build HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: 1000\r\n\r\n{{\"extra\": \""
    )
    .unwrap();
    // Meanwhile another client is served.
    let rt = runtime();
    let status = rt.block_on(async {
        client().post(format!("{}/v1/agents/atlas/build", server.url)).send().await.unwrap().status().as_u16()
    });
    assert_eq!(status, 200);
    let mut reply = String::new();
    let _ = slow.read_to_string(&mut reply);
    assert!(reply.starts_with("HTTP/1.1 408"), "{reply}");
    assert!(reply.contains("did not arrive within 300 ms"), "{reply}");
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
}

/// Copies a screenshot of the browser's page to target/NAME.png (the
/// README's are taken from there into docs/images/).
async fn screenshot(browser: &Browser, name: &str) {
    let shot = browser.call("GET", "/screenshot", Value::Null).await;
    let png = base64_decode(shot.as_str().unwrap());
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("../{name}.png"));
    std::fs::write(&path, png).unwrap();
    eprintln!("screenshot: {}", path.display());
}

#[test]
fn the_inspector_page_signs_in_is_told_of_changes_diffs_and_greys_a_failed_build() {
    plugin_env();
    let parent = tempfile::tempdir().unwrap();
    let dir = agent_copy(parent.path(), "marlow");
    let token_file = parent.path().join("token");
    std::fs::write(&token_file, "page-token-of-enough-length\n").unwrap();
    let server = Server::start(&[dir.to_str().unwrap(), "--token-file", token_file.to_str().unwrap()]);
    let rt = runtime();
    rt.block_on(async {
        let Some(browser) = Browser::start().await else { return };
        browser.call("POST", "/url", json!({"url": format!("{}/", server.url)})).await;
        // 401: the sign-in row shows; the token goes to sessionStorage, not the URL.
        browser.until("the sign-in row shows", "return !document.getElementById('token-row').hidden").await;
        browser.js("document.getElementById('token').value = 'page-token-of-enough-length'; return true").await;
        browser.click("#sign-in").await;
        browser.until("the agent list loads once signed in", "return document.querySelectorAll('#agent option').length === 1").await;
        let kept = browser.js("return [sessionStorage.getItem('proem-token'), location.href.includes('token'), document.getElementById('token').value]").await;
        assert_eq!(kept, json!(["page-token-of-enough-length", false, ""]));
        // Every turn input the API takes has a field.
        let missing = browser.js("const f = document.getElementById('turn').elements; return ['mode','session_key','heartbeat','replies_optional','thinking','provider','model','channel','chat_kind','group_title','extra','owners','tools','now','timezone','budget'].filter((n) => !f[n])").await;
        assert_eq!(missing, json!([]), "fields the form lacks");
        browser.js("const f = document.getElementById('turn').elements; f.session_key.value = 'agent:main:telegram:direct:42'; f.owners.value = 'ines, tom'; f.tools.value = '[{\"name\": \"read\", \"description\": \"Read a file\"}]'; f.now.value = '2026-11-21T09:30'; return true").await;
        browser.click("#build").await;
        browser.until("the first build", "return document.getElementById('build-status').textContent.startsWith('built')").await;
        // The bar: labelled segments and the dynamic reserve.
        let bar = browser.js("return [document.querySelector('#bar .seg').textContent.length > 0, !!document.querySelector('#bar .reserve'), document.getElementById('bar-scale').textContent.includes('budget')]").await;
        assert_eq!(bar, json!([true, true, true]));
        screenshot(&browser, "inspector-build").await;

        // An edit while the page is open: the page is told, names the file, offers a rebuild.
        tokio::time::sleep(Duration::from_millis(800)).await;
        std::fs::write(dir.join("SOUL.md"), "# Soul\nCalm and exact.\nEdited while the page was open.").unwrap();
        browser.until("the change banner names SOUL.md", "return !document.getElementById('changes').hidden && document.getElementById('changes-text').textContent.includes('SOUL.md')").await;
        screenshot(&browser, "inspector-changed").await;
        browser.click("#rebuild").await;
        browser.until("the compare view diffs the persona", "return document.querySelectorAll('#compare .diff .add').length > 0").await;
        let compare = browser.js("return [document.getElementById('compare').textContent, document.querySelector('#compare h3').textContent]").await;
        let text = compare[0].as_str().unwrap();
        assert!(text.contains("Files changed: SOUL.md") && text.contains("+ Edited while the page was open."), "{text}");
        assert!(compare[1].as_str().unwrap().ends_with("stable"), "stable sections first: {compare}");
        screenshot(&browser, "inspector-compare").await;

        // A budget that leaves sections out: they stay in the table, marked why.
        browser.js("document.getElementById('turn').elements.budget.value = '900'; return true").await;
        browser.click("#build").await;
        browser.until("dropped rows", "return [...document.querySelectorAll('#sections tr.dropped')].some((r) => r.textContent.includes('dropped: left out for the budget'))").await;
        // An error greys the previous result and says so.
        browser.js("document.getElementById('turn').elements.budget.value = '5'; return true").await;
        browser.click("#build").await;
        browser.until("a failed build greys the result", "return document.getElementById('result').classList.contains('greyed') && document.getElementById('build-status').textContent.includes('build failed')").await;
        let status = browser.js("return document.getElementById('build-status').textContent").await;
        assert!(status.as_str().unwrap().contains("`budget`") && status.as_str().unwrap().contains("[request "), "{status}");

        let logs = browser.call("POST", "/se/log", json!({"type": "browser"})).await;
        let severe: Vec<&Value> = logs
            .as_array()
            .unwrap()
            .iter()
            .filter(|l| l["level"] == "SEVERE" && !l["message"].as_str().unwrap_or("").contains(" 401 ") && !l["message"].as_str().unwrap_or("").contains(" 422 "))
            .collect();
        assert!(severe.is_empty(), "console errors: {severe:?}");
        browser.call("DELETE", "", Value::Null).await;
    });
}

/// LiteLLM's Generic Prompt Management API: the query is a build body, the
/// template's one message is `proem build --format openai`'s system
/// message, the token guards it, and a hostile query is a 4xx naming what
/// is wrong, never a 500.
#[test]
fn the_litellm_prompt_api_is_proem_builds_system_message() {
    plugin_env();
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, "s3cret-token-of-some-length\n").unwrap();
    let server = Server::start(&[&atlas(), "--token-file", token_file.to_str().unwrap()]);
    let url = |query: &str| format!("{}/beta/litellm_prompt_management?{query}", server.url);
    let rt = runtime();
    rt.block_on(async {
        let c = client();
        let get = |query: String| {
            let request = c.get(url(&query)).bearer_auth("s3cret-token-of-some-length");
            async move {
                let r = request.send().await.unwrap();
                (r.status().as_u16(), r.json::<Value>().await.unwrap())
            }
        };
        let cases: Vec<(&str, Vec<&str>)> = vec![
            ("now=2026-11-21T09%3A30%3A00Z", vec!["--now", "2026-11-21T09:30:00Z"]),
            (
                "now=2026-11-21T09:30:00Z&channel=telegram&chat_kind=group&group_title=Lab+%26+co&owners=a&owner=b&heartbeat=true&budget=9000",
                vec!["--now", "2026-11-21T09:30:00Z", "--channel", "telegram", "--chat-kind", "group", "--group-title", "Lab & co", "--owner", "a", "--owner", "b", "--heartbeat", "--budget", "9000"],
            ),
        ];
        for (query, flags) in cases {
            let (status, answer) = get(format!("prompt_id=atlas&{query}")).await;
            assert_eq!(status, 200, "{answer}");
            let mut args = vec!["--format", "openai"];
            args.extend(flags);
            let expected: Value = serde_json::from_str(&cli(&atlas(), &args)).unwrap();
            assert_eq!(answer["prompt_id"], "atlas");
            assert_eq!(answer["prompt_template"], expected["messages"], "{query}");
            assert_eq!(answer["proem_stable_hash"].as_str().map(str::len), Some(64));
        }
        let no_token = c.get(url("prompt_id=atlas")).send().await.unwrap();
        assert_eq!(no_token.status(), 401);
        for (query, status, field) in [
            ("channel=x", 400, "prompt_id"),
            ("prompt_id=atlas&chanel=x", 400, "chanel"),
            ("prompt_id=atlas&budget=-5", 400, "budget"),
            ("prompt_id=atlas&budget=5", 422, "budget"),
            ("prompt_id=atlas&chat_kind=crowd", 400, "chat_kind"),
            ("prompt_id=atlas&tools=..%2F..%2Fetc%2Fpasswd", 400, "tools"),
            ("prompt_id=atlas&now=%ff", 400, "now"),
            ("prompt_id=atlas&format=json", 400, "format"),
            ("prompt_id=atlas&channel=a&channel=b", 400, "channel"),
        ] {
            let (got, problem) = get(query.to_string()).await;
            assert_eq!(got, status, "{query}: {problem}");
            assert_eq!(problem["field"], field, "{query}: {problem}");
        }
        let (got, problem) = get("prompt_id=..%2F..%2Fetc".to_string()).await;
        assert_eq!(got, 404, "{problem}");
    });
}
