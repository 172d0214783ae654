//! Three `proem serve` replicas behind HAProxy (Debian's package), as
//! docs/DEPLOYMENT.md runs them, on loopback: sharing one compiled-plugin
//! cache folder, restarted one by one under a bounded load while a persona
//! is edited. No request fails, and every replica serves the edit within a
//! bound. The figures are printed (`--nocapture`) and quoted in
//! docs/DEPLOYMENT.md.

use crate::common::*;
use crate::surfaces::serve::{agent_copy, client, runtime};
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const HAPROXY: &str = "/usr/sbin/haproxy";

/// Concurrent clients of the load.
const CLIENTS: usize = 6;
/// The longest an edit may take to be served by every replica.
const EDIT_BOUND: Duration = Duration::from_secs(5);

/// A free loopback port (bound, read, released).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A child process killed on drop.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A replica on `port` serving `agents`, its plugin cache in `cache`,
/// once it says it listens (20 s at most).
fn replica(agents: &Path, port: u16, cache: &Path) -> Killed {
    let mut child = Command::new(front())
        .args(["serve", "--agents", agents.to_str().unwrap(), "--listen", &format!("127.0.0.1:{port}")])
        .env("PROEM_CACHE_DIR", cache)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert!(line.starts_with("listening on "), "replica on {port}: {line:?}");
    Killed(child)
}

/// SIGTERM, then the exit (10 s at most): the builds in flight finish.
fn stop(replica: &mut Killed) {
    let pid = replica.0.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let deadline = Instant::now() + Duration::from_secs(10);
    while replica.0.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "replica {pid} did not stop within 10 s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// HAProxy's configuration as docs/DEPLOYMENT.md gives it, for these ports.
fn haproxy_config(front: u16, replicas: &[u16]) -> String {
    let servers: String =
        replicas.iter().enumerate().map(|(i, p)| format!("    server r{i} 127.0.0.1:{p} check\n")).collect();
    format!(
        "global\n    maxconn 512\n\
         defaults\n    mode http\n    timeout connect 1s\n    timeout client 15s\n    timeout server 15s\n\
         \x20   option http-server-close\n    retries 3\n    option redispatch 1\n    retry-on all-retryable-errors\n\
         frontend proem\n    bind 127.0.0.1:{front}\n\
         \x20   http-request set-header X-Request-Id %[uuid()] unless {{ req.hdr(x-request-id) -m found }}\n\
         \x20   default_backend replicas\n\
         backend replicas\n    balance roundrobin\n    option httpchk\n\
         \x20   http-check send meth GET uri /readyz ver HTTP/1.1 hdr Host localhost\n    http-check expect status 200\n\
         \x20   default-server inter 200ms fall 1 rise 1\n{servers}"
    )
}

#[test]
fn replicas_behind_haproxy_restart_one_by_one_and_serve_an_edit_with_no_failed_request() {
    assert!(
        Path::new(HAPROXY).exists(),
        "{HAPROXY} is missing: .ci/run installs Debian's haproxy (apt-get install haproxy)"
    );
    plugin_env();
    let parent = tempfile::tempdir().unwrap();
    let agents = parent.path().join("agents");
    let dir = agent_copy(&agents, "marlow");
    // One compiled-plugin cache folder for the three (the suite's, warm).
    let cache = plugin_env();
    let ports: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let mut replicas: Vec<Killed> = ports.iter().map(|p| replica(&agents, *p, &cache)).collect();
    let front = free_port();
    let config = parent.path().join("haproxy.cfg");
    std::fs::write(&config, haproxy_config(front, &ports)).unwrap();
    let _haproxy = Killed(
        Command::new(HAPROXY).args(["-db", "-f", config.to_str().unwrap()]).stdout(Stdio::null()).spawn().unwrap(),
    );
    let rt = runtime();
    let url = format!("http://127.0.0.1:{front}/v1/agents/marlow/build");
    let c = client();
    rt.block_on(async {
        let deadline = Instant::now() + Duration::from_secs(10);
        while c.post(&url).json(&json!({})).send().await.map(|r| r.status().as_u16()).unwrap_or(0) != 200 {
            assert!(Instant::now() < deadline, "HAProxy did not answer within 10 s");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });

    // The load: CLIENTS clients building through HAProxy until told to stop.
    let running = Arc::new(AtomicBool::new(true));
    let (sent, failed) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let failures = Arc::new(std::sync::Mutex::new(Vec::new()));
    let load: Vec<_> = (0..CLIENTS)
        .map(|i| {
            let (url, c, running) = (url.clone(), c.clone(), running.clone());
            let (sent, failed, failures) = (sent.clone(), failed.clone(), failures.clone());
            rt.spawn(async move {
                while running.load(Ordering::Relaxed) {
                    let turn = json!({"channel": format!("c{i}"), "now": "2026-11-21T09:30:00Z"});
                    let r = c.post(&url).json(&turn).send().await;
                    sent.fetch_add(1, Ordering::Relaxed);
                    let ok = match r {
                        Ok(r) if r.status() == 200 => true,
                        Ok(r) => {
                            let what = format!("{}: {}", r.status(), r.text().await.unwrap_or_default());
                            failures.lock().unwrap().push(what);
                            false
                        }
                        Err(e) => {
                            failures.lock().unwrap().push(e.to_string());
                            false
                        }
                    };
                    if !ok {
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();

    // Restart the replicas one by one; after the first, edit the persona.
    let started = Instant::now();
    let marker = "Edited during the rolling restart.";
    let mut edited_at = None;
    for (i, port) in ports.iter().enumerate() {
        std::thread::sleep(Duration::from_millis(300));
        stop(&mut replicas[i]);
        replicas[i] = replica(&agents, *port, &cache);
        if i == 0 {
            std::fs::write(dir.join("SOUL.md"), format!("# Soul\n{marker}\n")).unwrap();
            edited_at = Some(Instant::now());
        }
    }
    let edited_at = edited_at.unwrap();
    // Every replica, asked directly, serves the edit.
    let mut slowest = Duration::ZERO;
    rt.block_on(async {
        for port in &ports {
            let direct = format!("http://127.0.0.1:{port}/v1/agents/marlow/build");
            loop {
                let text = c.post(&direct).json(&json!({})).send().await.unwrap().text().await.unwrap();
                if text.contains(marker) {
                    break;
                }
                assert!(
                    edited_at.elapsed() < EDIT_BOUND,
                    "replica {port} still serves the old persona after {EDIT_BOUND:?}"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            slowest = slowest.max(edited_at.elapsed());
        }
    });
    std::thread::sleep(Duration::from_millis(300));
    running.store(false, Ordering::Relaxed);
    rt.block_on(async {
        for task in load {
            task.await.unwrap();
        }
    });
    let (sent, failed) = (sent.load(Ordering::Relaxed), failed.load(Ordering::Relaxed));
    eprintln!(
        "replicas: {sent} requests through HAProxy by {CLIENTS} clients in {:.1} s, {failed} failed; 3 replicas \
         restarted one by one; every replica served the persona edit {} ms after it was written",
        started.elapsed().as_secs_f64(),
        slowest.as_millis()
    );
    assert_eq!(failed, 0, "failed requests: {:?}", failures.lock().unwrap());
    assert!(sent >= 100, "the load was too light to mean anything: {sent} requests");
}
