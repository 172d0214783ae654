//! The provider cache profiles and `[cache]` (issue 30, items 1 to 4): each
//! profile's output shape, the turn context, the budget counting it, the
//! config's refusals, and the cache-reuse replay over traces.

use crate::common::*;
use proem::{Built, ChatKind, Format, Turn, BOUNDARY_MARKER};
use proem_core::render::format;
use serde_json::Value;

const CACHE_CONFIG: &str = "[agent]\nid = \"testbot\"\n\n[sandbox]\nenabled = true\nworkdir = \"/workspace\"\n";

fn agent(cache: &str) -> Agent {
    let a = Agent::new();
    a.with_standard_files().config(&format!("{CACHE_CONFIG}\n{cache}"));
    a
}

/// A group turn with an extra prompt: every tier has something.
fn group_turn() -> Turn {
    Turn {
        channel: Some("telegram".into()),
        chat_kind: Some(ChatKind::Group),
        group_title: Some("Night shift".into()),
        extra: Some("Recent messages: the oven is on.".into()),
        tools: Some(tools(&["exec", "read"]).into()),
        ..turn()
    }
}

fn json(built: &Built, f: Format) -> Value {
    serde_json::from_str(&format(built, f)).expect("a JSON format")
}

/// Every `cache_control` of an Anthropic answer in request order (tools,
/// system blocks, conversation), as its TTL.
fn anthropic_ttls(v: &Value) -> Vec<String> {
    let mut out = vec![v["breakpoints"]["tools"]["ttl"].as_str().unwrap().to_string()];
    for block in v["system"].as_array().unwrap() {
        if let Some(c) = block.get("cache_control") {
            assert_eq!(c["type"], "ephemeral");
            out.push(c["ttl"].as_str().unwrap().to_string());
        }
    }
    out.push(v["breakpoints"]["conversation"]["ttl"].as_str().unwrap().to_string());
    out
}

#[test]
fn anthropic_places_four_breakpoints_with_ttls_in_the_order_the_api_requires() {
    let built = agent("[cache]\nsession_tier = true\n").build(&group_turn());
    let v = json(&built, Format::Anthropic);
    let system = v["system"].as_array().unwrap();
    assert_eq!(system.len(), 3, "stable, session, turn: {v:#}");
    assert_eq!(system[0]["text"], &*built.stable);
    assert_eq!(system[1]["text"].as_str(), built.session.as_deref());
    assert!(system[2].get("cache_control").is_none(), "the per-turn block is not cached");
    let turn_text = system[2]["text"].as_str().unwrap();
    assert!(turn_text.contains("oven") && turn_text.contains("Today is"), "{turn_text}");
    let session = system[1]["text"].as_str().unwrap();
    assert!(session.contains("Night shift") && !session.contains("oven") && !session.contains("Today is"));
    assert_eq!(built.dynamic, format!("{session}\n\n{turn_text}"));
    assert_eq!(anthropic_ttls(&v), ["1h", "1h", "5m", "5m"], "tools, stable, session, conversation");
    assert!(v.get("turn_context").is_none());
    // Every TTL 5m: allowed; a 1h after a 5m: refused by the config.
    let five = agent("[cache]\nsession_tier = true\nttl = { tools = \"5m\", stable = \"5m\", session = \"5m\", conversation = \"5m\" }\n");
    assert_eq!(anthropic_ttls(&json(&five.build(&group_turn()), Format::Anthropic)), ["5m"; 4]);
    let bad = agent("[cache]\nttl = { stable = \"5m\", session = \"1h\" }\n");
    let err = proem::Assembler::open(bad.path(), None).err().expect("refused").to_string();
    assert!(err.contains("cache.ttl.session") && err.contains("1h") && err.contains("set session = \"5m\""), "{err}");
}

#[test]
fn per_turn_user_message_returns_the_turn_context_apart_in_every_format() {
    let a = agent("[cache]\nper_turn = \"user_message\"\n");
    let built = a.build(&group_turn());
    let context = built.turn_context.clone().expect("a turn context");
    assert!(context.contains("oven") && context.contains("Today is"), "{context}");
    assert!(!built.prompt.contains("oven") && !built.prompt.contains("Today is"), "{}", built.prompt);
    assert_eq!(built.prompt, format!("{}\n{BOUNDARY_MARKER}\n{}", built.stable, built.dynamic));
    // The JSON report carries it; the provider formats as a block.
    assert_eq!(json(&built, Format::Json)["turn_context"], context.as_str());
    let anthropic = json(&built, Format::Anthropic);
    assert_eq!(anthropic["turn_context"], serde_json::json!([{"type": "text", "text": context}]));
    assert_eq!(anthropic["system"].as_array().unwrap().len(), 2, "stable and session only");
    assert_eq!(json(&built, Format::Openai)["turn_context"], serde_json::json!({"type": "text", "text": context}));
    // Without it, the JSON report has no such field (as before).
    assert!(json(&agent("").build(&group_turn()), Format::Json).get("turn_context").is_none());
    // The budget counts what is sent: the system prompt and the turn context.
    let tokenizer = proem_core::tokens::Tokenizer::from_name(&built.tokenizer).expect("a tokenizer");
    let counter = proem_core::tokens::shared_counter(tokenizer);
    assert_eq!(built.tokens.total, counter.count(&built.prompt) + counter.count(&context));
}

#[test]
fn openai_keys_the_request_by_the_stable_hash_and_prefix_adds_nothing() {
    let a = agent("");
    let built = a.build(&group_turn());
    let openai = json(&built, Format::Openai);
    assert_eq!(openai["prompt_cache_key"], format!("proem-{}", &built.stable_hash[..32]));
    let content = openai["messages"][0]["content"].as_str().unwrap();
    assert_eq!(content, format!("{}\n\n{}", built.stable, built.dynamic));
    assert!(content.starts_with(&*built.stable) && !content.contains("PROEM_CACHE_BOUNDARY"));
    // A new turn of another day keeps the key (the stable part did not move).
    let later =
        a.build(&Turn { now: Some(proem_core::turn::parse_now("2027-01-02T03:04:05Z").unwrap()), ..group_turn() });
    assert_eq!(json(&later, Format::Openai)["prompt_cache_key"], openai["prompt_cache_key"]);
    let prefix = json(&built, Format::Prefix);
    assert_eq!(prefix, serde_json::json!({"messages": [{"role": "system", "content": content}]}), "no markers, no key");
}

#[test]
fn the_provider_format_follows_the_profile_or_the_provider() {
    for (cache, provider, expect) in [
        ("", Some("anthropic"), Format::Anthropic),
        ("", Some("openai"), Format::Openai),
        ("", Some("deepseek"), Format::Prefix),
        ("", None, Format::Prefix),
        ("[cache]\nprofile = \"prefix\"\n", Some("anthropic"), Format::Prefix),
        ("[cache]\nprofile = \"anthropic\"\n", Some("ollama"), Format::Anthropic),
    ] {
        let built = agent(cache).build(&Turn { provider: provider.map(String::from), ..group_turn() });
        assert_eq!(format(&built, Format::Provider), format(&built, expect), "{cache} {provider:?}");
    }
}

#[test]
fn without_the_session_tier_the_dynamic_part_keeps_the_layout_order() {
    let off = agent("[cache]\nsession_tier = false\n").build(&group_turn());
    let on = agent("[cache]\nsession_tier = true\n").build(&group_turn());
    assert_eq!((&*off.stable, off.stable_hash.as_str()), (&*on.stable, on.stable_hash.as_str()));
    assert!(off.session.is_none());
    assert!(off.dynamic.starts_with("## Date"), "the layout's first dynamic section: {}", off.dynamic);
    assert!(on.dynamic.starts_with(on.session.as_deref().unwrap()) && !on.dynamic.starts_with("## Date"));
    let v = json(&off, Format::Anthropic);
    assert_eq!(v["system"].as_array().unwrap().len(), 2, "stable and dynamic, as before");
}

/// A trace whose turns carry a new extra prompt each: what
/// `per_turn = "user_message"` is for.
fn support_trace() -> String {
    let agents = (0..40)
        .map(|i| format!("Rule {i}: answer the customer politely and check the order first."))
        .collect::<Vec<_>>();
    let seed = serde_json::json!({
        "agent": "desk",
        "files": {"AGENTS.md": agents.join("\n"), "proem.toml": "[provider]\nname = \"anthropic\"\n"},
        "tools": [{"name": "order_get", "description": "Reads an order.", "parameters": {"type": "object"}}],
    });
    let mut lines = vec![seed.to_string()];
    for s in 0..3 {
        for t in 0..4 {
            let time = format!("2026-11-24T09:{:02}:{:02}Z", s * 10 + t, s * 7);
            let extra = format!("Customer record {s}-{t}: {}", "order history line. ".repeat(30 + t));
            lines.push(
                serde_json::json!({
                    "agent": "desk", "session": format!("agent:desk:webchat:direct:c{s}"), "time": time,
                    "channel": "webchat", "chat": "direct", "tools": ["order_get"], "extra": extra,
                    "user": format!("Where is my order {s}{t}?"), "reply": "Let me check. ".repeat(20),
                })
                .to_string(),
            );
        }
    }
    lines.join("\n")
}

#[test]
fn the_replay_shows_user_message_reusing_more_and_no_model_beyond_the_limit() {
    let report = proem_full::replay::replay(&support_trace()).expect("replays");
    assert_eq!(report.requests, 12);
    let row = |profile: proem_core::cache::Profile, before: bool, per_turn_user: bool| {
        report
            .rows
            .iter()
            .find(|r| {
                r.variant.profile == profile
                    && r.variant.before == before
                    && !r.variant.all_five_minutes
                    && (before
                        || (r.variant.tiering.session_tier
                            && (r.variant.tiering.per_turn == proem_core::cache::PerTurn::UserMessage)
                                == per_turn_user))
            })
            .unwrap()
            .clone()
    };
    for r in &report.rows {
        assert_eq!(r.refused, 0, "{:?}: a request Anthropic would refuse", r.variant);
        assert!(r.outcome.reused <= r.outcome.total - r.new_tokens, "{:?} beyond its limit", r.variant);
        assert!(r.outcome.total > 0 && r.limit() > 0.0);
    }
    use proem_core::cache::Profile;
    for profile in [Profile::Anthropic, Profile::Openai, Profile::Prefix] {
        let (before, after) = (row(profile, true, false), row(profile, false, true));
        assert!(
            after.reused_share() > before.reused_share() + 0.05,
            "{profile:?}: {} vs {}",
            after.reused_share(),
            before.reused_share()
        );
    }
}

#[test]
fn the_shipped_traces_parse_and_a_bad_trace_names_its_line() {
    // support.jsonl is generated into the target folder when missing
    // (make_traces.py, python3), and checked against its recorded digest.
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let target = std::path::Path::new(env!("CARGO_BIN_EXE_proem-full")).ancestors().nth(2).unwrap().to_path_buf();
    let traces = proem_full::replay::traces::shipped(&repo, &target).unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<_> = traces.iter().filter_map(|p| p.file_name()?.to_str()).collect();
    assert_eq!(names, ["support.jsonl", "week.jsonl"]);
    for path in &traces {
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let lines = proem_full::replay::trace::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(lines.len() > 300, "{}: {} lines", path.display(), lines.len());
    }
    let err = proem_full::replay::replay("{\"agent\": \"x\", \"files\": {\"/etc/passwd\": \"\"}}").unwrap_err();
    assert!(err.starts_with("line 1: files") && err.contains("relative"), "{err}");
}

#[test]
fn a_trace_whose_sessions_grow_without_end_is_refused_naming_the_line() {
    let mut lines = vec![serde_json::json!({"agent": "a", "files": {"AGENTS.md": "Rules."}}).to_string()];
    for i in 0..2000 {
        let time = format!("2026-11-24T{:02}:{:02}:{:02}Z", i / 3600, i / 60 % 60, i % 60);
        lines.push(
            serde_json::json!({"agent": "a", "session": "agent:a:main", "time": time, "user": "hi", "reply": "ok"})
                .to_string(),
        );
    }
    let err = proem_full::replay::replay(&lines.join("\n")).unwrap_err();
    assert!(err.starts_with("line ") && err.contains("sessions too long"), "{err}");
}
