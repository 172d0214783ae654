//! Load on `proem serve`: throughput and latency at 1, 16 and 64
//! connections, for memoised builds (the same turn again) and for builds
//! with a new clock each time, and the service's memory after 100,000
//! requests. The figures in docs/PERFORMANCE.md ("proem serve").
//!
//! `cargo bench -p proem-full --bench serve`. Starts the release `proem
//! serve examples/atlas` on a free loopback port and drives it with its own
//! minimal HTTP/1.1 client (keep-alive, one connection per task, a bounded
//! number of requests), so the client costs little of the 2 cores the
//! server shares with it. `PROEM_BENCH_QUICK=1` runs a tenth of the requests.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn main() {
    let quick = std::env::var_os("PROEM_BENCH_QUICK").is_some();
    let scale = |n: usize| if quick { n / 10 } else { n };
    let out_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/proem-bench");
    std::fs::create_dir_all(out_dir.join("cache")).unwrap();
    let atlas = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/atlas");
    let mut child = Command::new(PathBuf::from(env!("CARGO_BIN_EXE_proem-full")).with_file_name("proem"))
        .args(["serve", atlas.to_str().unwrap(), "--listen", "127.0.0.1:0", "--queue", "4096"])
        .env("PROEM_CACHE_DIR", out_dir.join("cache"))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let line = BufReader::new(child.stdout.take().unwrap()).lines().next().unwrap().unwrap();
    let addr: SocketAddr = line.trim_start_matches("listening on http://").parse().unwrap();
    let pid = child.id();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();

    let mut report = String::from("## proem serve (examples/atlas, text format, loopback)\n\n");
    report.push_str("| turns | connections | requests | builds/s | p50 | p99 | max |\n|---|---|---|---|---|---|---|\n");
    let clock = Arc::new(AtomicU64::new(0));
    for (label, new_clock) in [("memoised (same turn)", false), ("a new clock each build", true)] {
        for connections in [1usize, 16, 64] {
            let requests = scale(if new_clock { 20_000 } else { 40_000 });
            // Warm up: the first build compiles nothing new but fills the memos.
            rt.block_on(run(addr, 4, 400, new_clock, clock.clone()));
            let (elapsed, mut latencies) = rt.block_on(run(addr, connections, requests, new_clock, clock.clone()));
            latencies.sort_unstable();
            let pct = |p: f64| latencies[((latencies.len() as f64 * p) as usize).min(latencies.len() - 1)];
            let row = format!(
                "| {label} | {connections} | {requests} | {:.0} | {} | {} | {} |\n",
                requests as f64 / elapsed.as_secs_f64(),
                us(pct(0.50)),
                us(pct(0.99)),
                us(*latencies.last().unwrap())
            );
            print!("{row}");
            report.push_str(&row);
        }
    }

    // Memory: RSS after 10,000 and after 100,000 more requests (new clocks
    // and memoised turns mixed), so growth shows.
    let rss = || {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let kib: u64 = status
            .lines()
            .find(|l| l.starts_with("VmRSS:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        kib as f64 / 1024.0
    };
    rt.block_on(run(addr, 16, scale(10_000), true, clock.clone()));
    let before = rss();
    let total = scale(100_000);
    rt.block_on(run(addr, 16, total / 2, true, clock.clone()));
    rt.block_on(run(addr, 16, total / 2, false, clock.clone()));
    let after = rss();
    let row = format!("\nRSS of the service: {before:.1} MiB after 10,000 requests (beyond the table's), {after:.1} MiB after {total} more ({:+.1} MiB)\n", after - before);
    print!("{row}");
    report.push_str(&row);
    let _ = child.kill();
    let _ = child.wait();
    std::fs::write(out_dir.join("serve.md"), &report).unwrap();
    println!("\nwritten to {}", out_dir.join("serve.md").display());
}

fn us(d: Duration) -> String {
    format!("{:.0} µs", d.as_secs_f64() * 1e6)
}

/// `requests` builds over `connections` keep-alive connections; returns
/// the wall time and every request's latency.
async fn run(
    addr: SocketAddr,
    connections: usize,
    requests: usize,
    new_clock: bool,
    clock: Arc<AtomicU64>,
) -> (Duration, Vec<Duration>) {
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..connections {
        let share = requests / connections + usize::from(c < requests % connections);
        let clock = clock.clone();
        tasks.push(tokio::spawn(async move {
            let mut stream = TcpStream::connect(addr).await.unwrap();
            stream.set_nodelay(true).unwrap();
            let mut latencies = Vec::with_capacity(share);
            let mut buf = Vec::with_capacity(256 * 1024);
            for _ in 0..share {
                let body = if new_clock {
                    // A new second every build: nothing of the last build is reusable
                    // but what stable inputs allow.
                    let s = 1_795_253_400 + clock.fetch_add(1, Ordering::Relaxed);
                    let t = chrono_free_rfc3339(s);
                    format!("{{\"now\":\"{t}\"}}")
                } else {
                    "{\"now\":\"2026-11-21T09:30:00Z\"}".to_string()
                };
                let request = format!(
                    "POST /v1/agents/atlas/build HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
                let sent = Instant::now();
                stream.write_all(request.as_bytes()).await.unwrap();
                read_response(&mut stream, &mut buf).await;
                latencies.push(sent.elapsed());
            }
            latencies
        }));
    }
    let mut all = Vec::with_capacity(requests);
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    (started.elapsed(), all)
}

/// Reads one response (status 200 asserted, Content-Length body).
async fn read_response(stream: &mut TcpStream, buf: &mut Vec<u8>) {
    buf.clear();
    let mut chunk = [0u8; 65536];
    let (head_end, length) = loop {
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(n > 0, "the server closed the connection");
        buf.extend_from_slice(&chunk[..n]);
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = std::str::from_utf8(&buf[..pos]).unwrap();
            assert!(head.starts_with("HTTP/1.1 200"), "{head}");
            let length: usize = head
                .lines()
                .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse().unwrap()))
                .expect("content-length");
            break (pos + 4, length);
        }
    };
    while buf.len() < head_end + length {
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(n > 0);
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Unix seconds as RFC 3339 UTC (the bench needs nothing more).
fn chrono_free_rfc3339(secs: u64) -> String {
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}
