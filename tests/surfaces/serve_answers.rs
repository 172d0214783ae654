//! What `proem serve` tells its clients besides the build: which build it
//! is (`ETag`, `X-Proem-Stable-Hash`, 304 on `If-None-Match`), whether it
//! is current (`X-Proem-Stale` and the `stale` field), the report beside
//! any format (`?report=1`), the agent by its `[agent] id`, and errors in
//! the request's words.

use crate::common::*;
use crate::surfaces::serve::{agent_copy, agent_copy_as, client, eventually, runtime, Server};
use proptest::prelude::*;
use serde_json::{json, Value};
use std::process::Command;

/// One build response: status, headers, body.
struct Answer {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> &str {
        self.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_else(|| panic!("no {name}: {:?}", self.headers))
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

fn post(rt: &tokio::runtime::Runtime, url: &str, body: &Value, if_none_match: Option<&str>) -> Answer {
    rt.block_on(async {
        let mut request = client().post(url).json(body);
        if let Some(tag) = if_none_match {
            request = request.header("if-none-match", tag);
        }
        let r = request.send().await.unwrap();
        let (status, headers) = (r.status().as_u16(), r.headers().clone());
        Answer { status, headers, body: r.text().await.unwrap() }
    })
}

fn get(rt: &tokio::runtime::Runtime, url: &str) -> (u16, Value) {
    rt.block_on(async {
        let r = client().get(url).send().await.unwrap();
        (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
    })
}

#[test]
fn every_build_response_is_tagged_and_a_known_tag_is_answered_304() {
    plugin_env();
    let server = Server::start(&[&crate::surfaces::serve::atlas()]);
    let rt = runtime();
    let turn = |format: &str| json!({"format": format, "now": "2026-11-21T09:30:00Z", "channel": "telegram"});
    let report_hash = {
        let a = post(&rt, &format!("{}/v1/agents/atlas/build", server.url), &turn("json"), None);
        a.json()["stable_hash"].as_str().unwrap().to_string()
    };
    let mut tags = Vec::new();
    for format in ["text", "json", "anthropic", "openai"] {
        for path in ["build", "build?report=1", "inspect"] {
            let url = format!("{}/v1/agents/atlas/{path}", server.url);
            let first = post(&rt, &url, &turn(format), None);
            assert_eq!(first.status, 200, "{format} {path}: {}", first.body);
            let tag = first.header("etag").to_string();
            assert!(tag.starts_with('"') && tag.ends_with('"') && tag.len() == 34, "{tag}");
            assert_eq!(first.header("x-proem-stable-hash"), report_hash, "{format} {path}");
            assert_eq!(first.header("x-proem-stale"), "false");
            // The same request again: the same bytes, the same tag; sent
            // back, a 304 with no body and the same tags.
            let again = post(&rt, &url, &turn(format), None);
            if again.body == first.body {
                assert_eq!(again.header("etag"), tag);
            }
            let cached = post(&rt, &url, &turn(format), Some(&format!("\"0\", W/{tag}")));
            assert_eq!(cached.status, 304, "{format} {path}");
            assert!(cached.body.is_empty());
            assert_eq!(cached.header("x-proem-stable-hash"), report_hash);
            // A stale tag is answered in full.
            let changed = post(&rt, &url, &json!({"format": format, "now": "2026-11-22T09:30:00Z"}), Some(&tag));
            assert_eq!(changed.status, 200);
            assert_ne!(changed.header("etag"), tag, "{format} {path}: another turn, other bytes, another tag");
            // /inspect answers the report whatever the format.
            if path != "inspect" || format == "text" {
                tags.push(tag);
            }
        }
    }
    let mut distinct = tags.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), tags.len(), "each format and shape has bytes of its own: {tags:?}");
}

#[test]
fn the_report_comes_beside_any_format_and_is_the_json_formats_report() {
    plugin_env();
    let server = Server::start(&[&crate::surfaces::serve::atlas()]);
    let rt = runtime();
    let url = |q: &str| format!("{}/v1/agents/atlas/build{q}", server.url);
    for format in ["text", "json", "anthropic", "openai"] {
        let turn = json!({"format": format, "now": "2026-11-21T09:30:00Z"});
        let plain = post(&rt, &url(""), &turn, None);
        let both = post(&rt, &url("?report=1"), &turn, None);
        assert_eq!(both.status, 200, "{}", both.body);
        assert!(both.header("content-type").starts_with("application/json"));
        let both = both.json();
        assert_eq!(both["format"], format);
        assert_eq!(both["stale"], false);
        let output = if format == "text" { Value::String(plain.body.clone()) } else { plain.json() };
        let strip = |mut v: Value| {
            if let Some(plugins) = v.get_mut("plugins").and_then(Value::as_array_mut) {
                plugins.iter_mut().for_each(|p| p["elapsed_us"] = json!(0));
            }
            v
        };
        assert_eq!(strip(both["output"].clone()), strip(output), "{format}: the output is the format's own");
        assert!(both["report"]["sections"].as_array().unwrap().len() > 5);
    }
    let bad = post(&rt, &url("?report=maybe"), &json!({}), None);
    assert_eq!(bad.status, 400);
    assert_eq!(bad.json()["field"], "report");
}

#[test]
fn a_failed_reload_is_flagged_stale_on_every_answer_until_fixed() {
    plugin_env();
    let parent = tempfile::tempdir().unwrap();
    let dir = agent_copy(parent.path(), "marlow");
    let server = Server::start(&["--agents", parent.path().to_str().unwrap()]);
    let rt = runtime();
    let turn = json!({"now": "2026-11-21T09:30:00Z"});
    let build = |q: &str| post(&rt, &format!("{}/v1/agents/marlow/build{q}", server.url), &turn, None);
    assert_eq!(build("").header("x-proem-stale"), "false");
    let good = std::fs::read_to_string(dir.join("proem.toml")).unwrap();
    std::fs::write(dir.join("proem.toml"), format!("{good}\n[budget]\ntokens = \"many\"\n")).unwrap();
    eventually("the failed reload shows as stale", || build("").header("x-proem-stale") == "true");
    let answer = build("");
    assert_eq!(answer.status, 200, "the last good config still answers");
    assert_eq!(build("?report=1").json()["stale"], true);
    let inspect = post(&rt, &format!("{}/v1/agents/marlow/inspect", server.url), &turn, None);
    assert_eq!((inspect.header("x-proem-stale"), &inspect.json()["stale"]), ("true", &json!(true)));
    let (_, agent) = get(&rt, &format!("{}/v1/agents/marlow", server.url));
    assert_eq!((agent["stale"].clone(), agent["status"].clone()), (json!(true), json!("stale")));
    std::fs::write(dir.join("proem.toml"), good).unwrap();
    eventually("the fixed config is no longer stale", || build("").header("x-proem-stale") == "false");
    assert_eq!(build("?report=1").json()["stale"], false);
}

#[test]
fn an_agent_answers_to_its_config_id_and_a_clash_is_a_startup_error() {
    plugin_env();
    let parent = tempfile::tempdir().unwrap();
    // The folder is `workshop`; its proem.toml says `[agent] id = "marlow"`.
    agent_copy_as(parent.path(), "workshop", "marlow");
    let server = Server::start(&["--agents", parent.path().to_str().unwrap()]);
    let rt = runtime();
    for id in ["workshop", "marlow"] {
        let (status, agent) = get(&rt, &format!("{}/v1/agents/{id}", server.url));
        assert_eq!((status, agent["id"].clone()), (200, json!("workshop")), "{id}");
        let built = post(&rt, &format!("{}/v1/agents/{id}/build", server.url), &json!({}), None);
        assert_eq!(built.status, 200, "{id}: {}", built.body);
    }
    assert_eq!(get(&rt, &format!("{}/v1/agents/nobody", server.url)).0, 404);
    drop(server);
    // A second folder whose config says the same id: refused at startup,
    // naming both folders.
    agent_copy_as(parent.path(), "annex", "marlow");
    let out = Command::new(front())
        .args(["serve", "--agents", parent.path().to_str().unwrap(), "--listen", "127.0.0.1:0"])
        .env("PROEM_CACHE_DIR", plugin_env())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("annex") && err.contains("workshop") && err.contains("\"marlow\""), "{err}");
    assert!(err.contains("[agent] id"), "{err}");
}

/// Words a client of an HTTP API should never read in an error about its
/// request: CLI flags and config keys for its fields, Rust and serde type
/// names.
const NOT_HTTP: [&str; 16] = [
    "--",
    "[budget]",
    "usize",
    "u64",
    "u32",
    "i64",
    "f64",
    "struct",
    "variant",
    "Option",
    "Vec<",
    "map",
    "sequence",
    "DateTime",
    "ChatKind",
    "FixedOffset",
];

/// A JSON value of any kind, small.
fn any_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        (-3i64..2_000_000_000i64).prop_map(Value::from),
        (-2.5f64..3.5).prop_map(Value::from),
        prop::sample::select(vec!["", "x", "full", "group", "UTC", "Mars/Base", "2026-11-21T09:30:00Z", "t.json"])
            .prop_map(Value::from),
        prop::collection::vec(prop::sample::select(vec![json!("a"), json!(1), json!({"name": "t"}), json!({})]), 0..3)
            .prop_map(Value::Array),
        Just(json!({"tools": [{"name": 1}]})),
    ]
}

/// The build request's fields, as the service's contract (its OpenAPI
/// document, which DESIGN.md's body follows) names them: not the table the
/// service words its errors with.
fn body_fields() -> Vec<String> {
    let doc: Value = serde_json::from_str(include_str!("../../host/serve/src/openapi.json")).unwrap();
    let fields = doc["components"]["schemas"]["BuildRequest"]["properties"].as_object().unwrap();
    assert!(fields.len() >= 18 && fields.contains_key("session_key"), "{fields:?}");
    fields.keys().cloned().collect()
}

#[test]
fn errors_about_a_request_speak_its_fields_never_flags_or_rust_types() {
    plugin_env();
    let server = Server::start(&[&crate::surfaces::serve::atlas()]);
    let rt = runtime();
    let url = format!("{}/v1/agents/atlas/build", server.url);
    let statuses = std::cell::RefCell::new(std::collections::BTreeSet::new());
    let mut runner = proptest::test_runner::TestRunner::new(proptest::test_runner::Config {
        cases: 160,
        failure_persistence: None,
        ..Default::default()
    });
    let fields = body_fields();
    let names: Vec<String> = fields.iter().cloned().chain(["zz_unknown".to_string()]).collect();
    let body = prop::collection::btree_map(prop::sample::select(names), any_value(), 1..4);
    runner
        .run(&body, |members| {
            let body = Value::Object(members.into_iter().collect());
            let answer = post(&rt, &url, &body, None);
            statuses.borrow_mut().insert(answer.status);
            if answer.status >= 400 {
                let problem = answer.json();
                let detail = problem["detail"].as_str().unwrap();
                for word in NOT_HTTP {
                    prop_assert!(!detail.contains(word), "{:?} in {:?} (body {})", word, detail, body);
                }
                if let Some(field) = problem.get("field").and_then(Value::as_str).filter(|f| !f.is_empty()) {
                    let root = field.split(['.', '[']).next().unwrap();
                    let known = root == "zz_unknown" || fields.iter().any(|f| f == root);
                    prop_assert!(known, "field {:?} is not a body field (body {})", field, body);
                }
            }
            Ok(())
        })
        .unwrap();
    let statuses = statuses.into_inner();
    assert!(statuses.contains(&200) && statuses.contains(&400), "the generator reached both: {statuses:?}");
    // Every field of the contract, given a value no field takes (a
    // fraction, an object): a 400 naming that field, in backquotes, in the
    // body's words.
    for field in &fields {
        for wrong in [json!(7.5), json!({"k": [1]})] {
            let problem = post(&rt, &url, &json!({ field.as_str(): wrong }), None).json();
            assert_eq!(problem["status"], 400, "{field}: {problem}");
            assert_eq!(problem["field"].as_str().and_then(|f| f.split(['.', '[']).next()), Some(field.as_str()));
            let detail = problem["detail"].as_str().unwrap();
            assert!(detail.contains(&format!("`{field}`")), "{field}: the error does not name it: {detail}");
            assert!(NOT_HTTP.iter().all(|word| !detail.contains(word)), "{field}: {detail}");
        }
    }
    // What a user should read, written from the contract, not the table:
    // the budget to send, every field an unknown one could have been, the
    // type JSON calls it.
    let unknown = post(&rt, &url, &json!({"zz": 1}), None).json();
    let detail = unknown["detail"].as_str().unwrap();
    assert_eq!(unknown["field"], "zz", "{unknown}");
    assert!(fields.iter().all(|f| detail.contains(&format!("`{f}`"))), "every field is offered: {detail}");
    for (body, field, says) in [
        (json!({"budget": 5}), "budget", "send a `budget` of at least"),
        (json!({"timezone": "Mars/Base"}), "timezone", "\"Mars/Base\" is not an IANA time zone"),
        (json!({"chat_kind": 1}), "chat_kind", "expected a string"),
        (json!({"owners": {"a": 1}}), "owners", "object"),
        (json!({"heartbeat": [true]}), "heartbeat", "array"),
    ] {
        let problem = post(&rt, &url, &body, None).json();
        assert_eq!(problem["field"], field, "{problem}");
        assert!(problem["detail"].as_str().unwrap().contains(says), "{problem}");
    }
}

/// Reads server-sent events from `response` until one contains `wanted`
/// (10 s at most); returns it.
async fn event_with(response: &mut reqwest::Response, wanted: &str) -> String {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut text = String::new();
    loop {
        let chunk = tokio::time::timeout_at(deadline, response.chunk()).await;
        let chunk = chunk.unwrap_or_else(|_| panic!("no event with {wanted:?} within 10 s: {text}"));
        let chunk = chunk.unwrap().expect("the stream stays open");
        text.push_str(&String::from_utf8_lossy(&chunk));
        if let Some(event) = text.split("\n\n").find(|e| e.contains(wanted)) {
            return event.to_string();
        }
    }
}

#[test]
fn change_events_name_the_files_and_reloads_and_streams_are_bounded() {
    plugin_env();
    let parent = tempfile::tempdir().unwrap();
    let dir = agent_copy(parent.path(), "marlow");
    let token_file = parent.path().join("token");
    std::fs::write(&token_file, "a-token-of-enough-length\n").unwrap();
    let server =
        Server::start(&["--agents", parent.path().to_str().unwrap(), "--token-file", token_file.to_str().unwrap()]);
    let rt = runtime();
    rt.block_on(async {
        let c = client();
        let url = format!("{}/v1/agents/marlow/events", server.url);
        assert_eq!(c.get(&url).send().await.unwrap().status(), 401, "the events need the token");
        let mut events = c.get(&url).bearer_auth("a-token-of-enough-length").send().await.unwrap();
        assert_eq!(events.status(), 200);
        assert!(events.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
        event_with(&mut events, "changes of agent marlow").await;
        // A poll to see the folder once, then an edit: named.
        tokio::time::sleep(std::time::Duration::from_millis(600)).await;
        std::fs::write(dir.join("SOUL.md"), "# Soul\nEdited while watched.").unwrap();
        let event = event_with(&mut events, "SOUL.md").await;
        assert!(event.starts_with("event: change\ndata: ") && event.contains("\"what\":\"files\""), "{event}");
        // A broken config: a reload_failed event with the reason.
        let good = std::fs::read_to_string(dir.join("proem.toml")).unwrap();
        std::fs::write(dir.join("proem.toml"), format!("{good}\n[budget]\ntokens = \"many\"\n")).unwrap();
        let event = event_with(&mut events, "reload_failed").await;
        assert!(event.contains("proem.toml"), "{event}");
        // At most MAX_STREAMS open: one more is a 503 problem.
        let mut open = Vec::new();
        let mut refused = None;
        for _ in 0..100 {
            let r = c.get(&url).bearer_auth("a-token-of-enough-length").send().await.unwrap();
            if r.status() != 200 {
                refused = Some(r);
                break;
            }
            open.push(r);
        }
        let refused = refused.expect("a bound on open streams");
        assert_eq!(open.len() + 1, proem_serve::events::MAX_STREAMS, "this test's stream plus the others");
        assert_eq!(refused.status(), 503);
        let problem: Value = refused.json().await.unwrap();
        assert_eq!(problem["type"], "urn:proem:problem:too-many-streams");
        drop(open);
        // Closed streams free their places.
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        let again = c.get(&url).bearer_auth("a-token-of-enough-length").send().await.unwrap();
        assert_eq!(again.status(), 200);
    });
}

#[test]
fn every_problem_document_and_log_line_carries_the_request_id() {
    use std::io::BufRead;
    plugin_env();
    let mut server = Server::start_with(&[&crate::surfaces::serve::atlas(), "--log-format", "json"], |c| {
        c.env("PROEM_LOG", "info").stderr(std::process::Stdio::piped());
    });
    let stderr = server.take_stderr().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let rt = runtime();
    let ids = rt.block_on(async {
        let c = client();
        let u = |p: &str| format!("{}{p}", server.url);
        let problems = vec![
            c.get(u("/v1/agents/nobody")),
            c.get(u("/no-such-route")),
            c.post(u("/v1/agents/atlas/build")).json(&json!({"budget": 5})),
            c.post(u("/v1/agents/atlas/build")).json(&json!({"zz": 1})),
            c.post(u("/v1/agents/atlas/build")).header("content-type", "text/plain").body("x"),
            c.get(u("/v1/agents")).header("host", "evil.example"),
            c.get(u("/v1/agents")).header("origin", "http://evil.example"),
        ];
        let mut ids = Vec::new();
        for request in problems {
            let r = request.send().await.unwrap();
            let status = r.status().as_u16();
            let header = r.headers()["x-request-id"].to_str().unwrap().to_string();
            assert!(r.headers()["content-type"].to_str().unwrap().starts_with("application/problem+json"));
            let problem: Value = r.json().await.unwrap();
            assert!(status >= 400, "{problem}");
            assert_eq!(problem["request_id"], header, "{problem}");
            ids.push(header);
        }
        // A client's own id is kept.
        let r = c.get(u("/v1/agents/nobody")).header("x-request-id", "lb-42.7").send().await.unwrap();
        let problem: Value = r.json().await.unwrap();
        assert_eq!(problem["request_id"], "lb-42.7");
        ids.push("lb-42.7".into());
        ids
    });
    let mut distinct = ids.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), ids.len(), "{ids:?}");
    // Every request has a JSON log line with its id and status.
    let mut seen = std::collections::BTreeSet::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while seen.len() < ids.len() {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let line = rx.recv_timeout(left).unwrap_or_else(|_| panic!("log lines for {:?}, seen {seen:?}", ids));
        let line: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert!(line["time"].is_string() && line["level"].is_string(), "{line}");
        if let Some(id) = line["request_id"].as_str().filter(|id| ids.iter().any(|i| i == id)) {
            if line["status"].as_u64().is_some_and(|s| s >= 400) {
                seen.insert(id.to_string());
            }
        }
    }
}
