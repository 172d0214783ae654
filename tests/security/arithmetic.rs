//! No number from outside makes proem panic (issue 24, item 8).
//!
//! Every numeric config key (listed from the serialised default `Config`,
//! so a new key is swept without touching this file), every numeric flag
//! (read off the command line's definition) and every field of a build
//! request (listed from serde's own field list) is tried with 0, 1, the
//! edges of its accepted range, the edges of every integer type, negative
//! numbers and floats. Each gives a build or a clean error, never a panic;
//! a value outside a documented range ([`proem_core::bounds`]) is an error
//! naming the key or flag and the range. Config and flags go through the
//! real binary; requests through the library's request parser, the path
//! `proem serve` takes.

use crate::common::*;
use proem::{Assembler, Config};
use proem_core::bounds::{self, Bound};
use proem_core::request::{self, BuildRequest};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

const FULL: &str = env!("CARGO_BIN_EXE_proem-full");

/// Integers at the edges of every integer type, as text.
const INTEGER_EDGES: [&str; 14] = [
    "0",
    "1",
    "2",
    "65535",
    "65536",
    "4294967295",
    "4294967296",
    "9223372036854775806",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551614",
    "18446744073709551615",
    "18446744073709551616",
    "340282366920938463463374607431768211456",
];

/// Negative numbers and floats.
const OTHER_NUMBERS: [&str; 9] =
    ["-1", "-9223372036854775808", "1.5", "0.5", "1.0", "-0.0", "1e308", "-1e308", "5e-324"];

/// TOML's spellings of the floats JSON has none for.
const TOML_ONLY: [&str; 3] = ["nan", "inf", "-inf"];

/// The values tried on a number: the edges above and, for each of `bounds`,
/// min - 1, min, max - 1, max and max + 1.
fn values(bounds: &[Bound]) -> Vec<String> {
    let mut all: Vec<String> = INTEGER_EDGES.iter().chain(OTHER_NUMBERS.iter()).map(|s| s.to_string()).collect();
    for b in bounds {
        for v in [b.min.checked_sub(1), Some(b.min), b.max.checked_sub(1), Some(b.max), b.max.checked_add(1)] {
            all.extend(v.map(|v| v.to_string()));
        }
    }
    all.sort();
    all.dedup();
    all
}

/// The bound named `name` (`budget.tokens`, `memory_mib`, `--budget`), if any.
fn bound(name: &str) -> Option<Bound> {
    bounds::ALL.into_iter().find(|b| b.name == name)
}

/// An agent with something in every place a number shapes: files longer
/// than small caps, a per-turn file, skills, an MCP tool.
fn agent() -> Agent {
    let agent = Agent::new();
    agent.with_standard_files();
    agent.file("MEMORY.md", &"Remembered things, one per line.\n".repeat(200));
    agent.skill("weather", "Looks up forecasts.").skill("maps", "Finds places.");
    agent.file(
        "tools.json",
        r#"[{"name":"read","description":"Read a file"},{"name":"mcp__git__log","description":"Git log"}]"#,
    );
    agent
}

fn run(args: &[&str], cache: &Path) -> Output {
    Command::new(FULL)
        .args(args)
        .env("PROEM_CACHE_DIR", cache)
        .env_remove("RUST_LOG")
        .env_remove("PROEM_LOG")
        .output()
        .expect("proem-full runs")
}

/// Exit 0, or a clean error: exit 1 (bad input) or 2 (usage) with a
/// message and no panic, never a signal.
fn assert_clean(out: &Output, what: &str) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{what}: panicked:\n{stderr}");
    match out.status.code() {
        Some(0) => {}
        Some(1) => assert!(stderr.starts_with("proem: error: "), "{what}: exit 1 without a message:\n{stderr}"),
        Some(2) => assert!(stderr.starts_with("error: "), "{what}: usage error without a message:\n{stderr}"),
        other => panic!("{what}: exit {other:?}:\n{stderr}"),
    }
    stderr
}

/// Every key of the serialised default config (a plugin entry added) whose
/// value is a number, or unset and accepts a number: (table, key, the
/// entry's other lines).
fn numeric_config_keys() -> Vec<(String, String, String)> {
    let plugin = "id = \"h\"\nsource = \"builtin:hardware-access\"\n";
    let mut config = Config::default();
    config.plugins.push(proem_core::config::PluginConfig {
        id: "h".into(),
        source: Some("builtin:hardware-access".into()),
        ..Default::default()
    });
    let tree = serde_json::to_value(&config).expect("the config serialises");
    let mut keys = Vec::new();
    for (table, value) in tree.as_object().expect("a table") {
        let (entry, fields) = match value {
            serde_json::Value::Array(entries) => (plugin, entries[0].as_object().expect("an entry")),
            serde_json::Value::Object(fields) => ("", fields),
            _ => continue,
        };
        for (key, default) in fields {
            let numeric = match default {
                serde_json::Value::Number(_) => true,
                // Unset: a number if the config takes one.
                serde_json::Value::Null => Config::parse(&config_text(table, key, "1", entry), Path::new("proem.toml"))
                    .map_err(|e| e.to_string())
                    .err()
                    .is_none_or(|e| !e.contains("invalid type")),
                _ => false,
            };
            if numeric {
                keys.push((table.clone(), key.clone(), entry.to_string()));
            }
        }
    }
    keys
}

fn config_text(table: &str, key: &str, value: &str, entry: &str) -> String {
    if entry.is_empty() {
        format!("[{table}]\n{key} = {value}\n")
    } else {
        format!("[[{table}]]\n{entry}{key} = {value}\n")
    }
}

#[test]
fn every_numeric_config_key_builds_or_is_a_clean_error_at_every_edge() {
    let keys = numeric_config_keys();
    let names: Vec<String> = keys.iter().map(|(t, k, _)| format!("{t}.{k}")).collect();
    for expected in
        ["budget.tokens", "budget.head_ratio", "bootstrap.max_file_bytes", "plugins.memory_mib", "tools.mcp_inline_max"]
    {
        assert!(names.iter().any(|n| n == expected), "{expected} is not among the swept keys {names:?}");
    }
    let agent = agent();
    let cache = tempfile::tempdir().unwrap();
    let dir = agent.path().to_str().unwrap();
    let tools = agent.path().join("tools.json").display().to_string();
    let mut builds = 0;
    let mut runs = 0;
    for (table, key, entry) in &keys {
        let bound = bound(&format!("{table}.{key}")).or_else(|| bound(key).filter(|_| !entry.is_empty()));
        let mut values = values(bound.as_slice());
        values.extend(TOML_ONLY.iter().map(|s| s.to_string()));
        for value in &values {
            runs += 1;
            agent.config(&config_text(table, key, value, entry));
            let what = format!("[{table}] {key} = {value}");
            let out = run(&["build", dir, "--now", "2026-11-21T09:30:00Z", "--tools", tools.as_str()], cache.path());
            let stderr = assert_clean(&out, &what);
            builds += usize::from(out.status.success());
            let Some(bound) = bound else { continue };
            match value.parse::<u64>() {
                Ok(v) if bound.check(v).is_err() => {
                    assert_eq!(out.status.code(), Some(1), "{what} is out of range: {stderr}");
                    // Past the key's type (a u32 key given 2^32) serde says
                    // which type it expected; within it, proem gives the range.
                    let range = format!("{}..={}", bound.min, bound.max);
                    assert!(
                        stderr.contains(key.as_str())
                            && stderr.contains("proem.toml")
                            && (stderr.contains(&range) || stderr.contains("expected u")),
                        "{what}: the error names the key and the range: {stderr}"
                    );
                }
                Ok(_) => assert!(
                    out.status.success() || stderr.contains("too small"),
                    "{what} is in range and builds: {stderr}"
                ),
                Err(_) => {}
            }
        }
    }
    assert!(builds >= keys.len(), "in-range values build ({builds} of {runs})");
}

/// A `proem serve` child, ended when dropped.
struct Served(std::process::Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `proem serve` with `flag value` on a free loopback port; when it
/// listens, sends it one build and returns the status line. `Err`: the
/// output of a run that ended (a refused value).
fn serve_once(dir: &Path, flag: &str, value: &str, cache: &Path) -> Result<String, Output> {
    let mut child = Command::new(FULL)
        .args(["serve", dir.to_str().unwrap(), "--listen", "127.0.0.1:0", &format!("{flag}={value}")])
        .env("PROEM_CACHE_DIR", cache)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("proem-full serve starts");
    // The first line, read on a thread so a server that neither listens
    // nor exits fails the test instead of hanging it.
    let stdout = child.stdout.take().unwrap();
    let (send, first_line) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = send.send(line);
    });
    let first = first_line.recv_timeout(Duration::from_secs(60));
    let Some(addr) = first.as_deref().ok().and_then(|l| l.trim().strip_prefix("listening on http://")) else {
        if first.is_err() {
            let _ = child.kill();
        }
        let out = child.wait_with_output().unwrap();
        assert!(first.is_ok(), "serve {flag} {value}: neither listened nor ended in 60 s");
        return Err(out);
    };
    let mut served = Served(child);
    let id = dir.file_name().unwrap().to_str().unwrap();
    let body = r#"{"now": "2026-11-21T09:30:00Z", "budget": 5000}"#;
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        stream,
        "POST /v1/agents/{id}/build HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    let status = answer.lines().next().unwrap_or("").to_string();
    let _ = served.0.kill();
    let mut stderr = String::new();
    served.0.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    assert!(!stderr.contains("panicked"), "serve {flag} {value}: panicked:\n{stderr}");
    Ok(status)
}

#[test]
fn every_numeric_flag_builds_serves_or_is_a_usage_error_at_every_edge() {
    let flags = proem_cli::numeric_flags();
    for expected in
        [("build", "--budget"), ("inspect", "--budget"), ("serve", "--timeout-ms"), ("serve", "--concurrent")]
    {
        assert!(
            flags.iter().any(|(path, flag)| path == &[expected.0] && flag == expected.1),
            "{expected:?} is not among the swept flags {flags:?}"
        );
    }
    let agent = agent();
    let cache = tempfile::tempdir().unwrap();
    let dir = agent.path().to_str().unwrap();
    // The service takes a folder's name as the agent's id.
    let served = tempfile::tempdir().unwrap();
    let served = served.path().join("sweep");
    std::fs::create_dir(&served).unwrap();
    std::fs::write(served.join("AGENTS.md"), "# Agents\nBe brief.\n").unwrap();
    let mut answered = 0;
    for (path, flag) in &flags {
        let bound = bound(flag).or_else(|| bound(&format!("budget.{}", flag.trim_start_matches("--"))));
        for value in values(bound.as_slice()) {
            let what = format!("proem {} {flag} {value}", path.join(" "));
            // `=`: a negative number is the flag's value, not another flag.
            let pair = format!("{flag}={value}");
            let out = match path.as_slice() {
                [serve] if serve == "serve" => match serve_once(&served, flag, &value, cache.path()) {
                    Ok(status) => {
                        answered += 1;
                        assert!(status.starts_with("HTTP/1.1 ") && !status.contains(" 500 "), "{what}: {status:?}");
                        if let Some(b) = bound {
                            assert!(value.parse::<u64>().is_ok_and(|v| b.check(v).is_ok()), "{what} was accepted");
                        }
                        continue;
                    }
                    Err(out) => out,
                },
                _ => {
                    let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
                    args.extend([dir, "--now", "2026-11-21T09:30:00Z", pair.as_str()]);
                    run(&args, cache.path())
                }
            };
            let stderr = assert_clean(&out, &what);
            if let (Some(b), Ok(v)) = (bound, value.parse::<u64>()) {
                assert!(path != &["serve"] || b.check(v).is_err(), "{what}: in range, yet not served: {stderr}");
                if b.check(v).is_err() {
                    assert_eq!(out.status.code(), Some(2), "{what} is out of range: {stderr}");
                    assert!(
                        stderr.contains(flag.as_str()) && stderr.contains(&format!("{}..={}", b.min, b.max)),
                        "{what}: the error names the flag and the range: {stderr}"
                    );
                }
            }
        }
    }
    assert!(answered >= 4 * 5, "every serve flag served its in-range values ({answered} answers)");
}

/// The fields of a build request: the turn's, from serde's own list (the
/// error an unknown field gets names every field), and how to print it.
fn request_fields() -> Vec<String> {
    let err = BuildRequest::from_json(br#"{"zz_not_a_field": 0}"#).unwrap_err().to_string();
    let list = err.split("expected one of").nth(1).unwrap_or_else(|| panic!("no field list in {err:?}"));
    let mut fields: Vec<String> = list.split('`').skip(1).step_by(2).map(str::to_string).collect();
    fields.extend(["format".to_string(), "strict".to_string()]);
    fields
}

#[test]
fn every_request_field_builds_or_is_a_clean_error_at_every_edge() {
    let fields = request_fields();
    assert!(fields.len() >= 15 && fields.iter().any(|f| f == "budget"), "{fields:?}");
    let agent = agent();
    let assembler = Assembler::open(agent.path(), None).unwrap();
    let mut budget_builds = 0;
    for field in &fields {
        for value in values(&bounds::ALL) {
            let body = format!(r#"{{"now": "2026-11-21T09:30:00Z", "{field}": {value}}}"#);
            let parsed = match BuildRequest::from_json(body.as_bytes()) {
                Ok(parsed) => parsed,
                Err(e) => {
                    // Refused naming the field (or a tools file that is not there).
                    let message = e.to_string();
                    assert!(message.contains(field.as_str()), "{body}: {message}");
                    continue;
                }
            };
            if field == "budget" {
                // A whole number, in either JSON form (`2` or `2.0`, as JSON
                // Schema counts both as integers), within the range.
                let v: f64 = value.parse().expect("only numbers reach a budget");
                assert!(v.fract() == 0.0, "{body}: a budget with a fraction was taken");
                assert!(bounds::BUDGET_TOKENS.check(v as u64).is_ok(), "{body}: an out-of-range budget was taken");
            }
            match request::build(assembler.core(), &parsed) {
                Ok(_) => budget_builds += usize::from(field == "budget"),
                Err(e) => {
                    assert!(e.to_string().contains("too small") || e.to_string().contains("tools"), "{body}: {e}")
                }
            }
        }
    }
    assert!(budget_builds >= 3, "in-range budgets build");
}

/// A library caller can hand any `Turn` to an assembler: a budget out of
/// range is an error there too, never an overflow.
#[test]
fn a_turn_with_any_budget_builds_or_is_an_error() {
    let agent = agent();
    let assembler = agent.assembler();
    for budget in
        [0, 1, 5_000, bounds::MAX_TOKENS as usize, bounds::MAX_TOKENS as usize + 1, usize::MAX - 1, usize::MAX]
    {
        let result = assembler.build(&proem::Turn { budget: Some(budget), ..turn() });
        match bounds::BUDGET_TOKENS.check_usize(budget) {
            Ok(_) => assert!(result.is_ok() || budget == 1, "{budget}: {:?}", result.err()),
            Err(range) => assert!(result.unwrap_err().to_string().contains(&range), "{budget}"),
        }
    }
}
