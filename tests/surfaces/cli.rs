//! The `proem` binary: exit codes, error messages that name the file and the
//! problem, every output format, and `inspect`.

use crate::common::*;
use std::process::{Command, Output};

fn proem(args: &[&str]) -> Output {
    Command::new(crate::common::front())
        .args(args)
        .env_remove("RUST_LOG")
        .env_remove("PROEM_LOG")
        .output()
        .expect("runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn fixed<'a>(dir: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec!["build", dir, "--now", "2026-11-21T09:30:00Z"];
    v.extend_from_slice(extra);
    v
}

#[test]
fn build_prints_the_prompt_and_exits_zero() {
    let agent = Agent::new();
    agent.with_standard_files();
    let dir = agent.path().to_str().unwrap();
    let out = proem(&fixed(dir, &[]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("You are Testbot"), "the name IDENTITY.md states");
    assert_eq!(text.matches(proem::BOUNDARY_MARKER).count(), 1);
    assert_eq!(text, format!("{}\n", agent.build(&turn()).prompt), "CLI and library agree");
    let owners = proem(&fixed(dir, &["--owner", "tg:42", "--owner", "tg:7", "--owner", "tg:42"]));
    let text = String::from_utf8(owners.stdout).unwrap();
    assert!(text.contains("## Owners\nThese sender ids belong to the people you work for: tg:42, tg:7."), "{text}");
}

#[test]
fn json_output_has_every_key_of_the_contract() {
    let agent = Agent::new();
    agent.with_standard_files().config("[budget]\nper_file_chars = 10\n");
    let out = proem(&fixed(agent.path().to_str().unwrap(), &["--format", "json", "--budget", "5000"]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    let mut expected = [
        "prompt",
        "stable",
        "dynamic",
        "stable_hash",
        "mode",
        "tokenizer",
        "exact",
        "tokens",
        "sections",
        "stable_inputs",
        "files",
        "plugins",
        "diagnostics",
    ];
    expected.sort();
    let mut keys_sorted = keys.clone();
    keys_sorted.sort();
    assert_eq!(keys_sorted, expected);
    let tokens: Vec<&str> = v["tokens"].as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(tokens.len(), 5);
    for k in ["total", "stable", "dynamic", "budget", "tool_schemas"] {
        assert!(tokens.contains(&k));
    }
    assert_eq!(v["tokens"]["budget"], 5000);
    let section = v["sections"][0].as_object().unwrap();
    for k in ["id", "source", "zone", "chars", "tokens", "truncated"] {
        assert!(section.contains_key(k), "{k}");
    }
    assert_eq!(section.len(), 6);
    let file = v["files"][0].as_object().unwrap();
    for k in ["name", "raw_chars", "injected_chars", "truncated", "missing", "source"] {
        assert!(file.contains_key(k), "{k}");
    }
    assert_eq!(file.len(), 6);
    assert_eq!(file["source"], "workspace");
    assert_eq!(v["mode"], "full");
    assert_eq!(v["tokenizer"], "cl100k_base");
    let d = v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["code"] == "file_truncated")
        .expect("a truncation diagnostic");
    assert_eq!(d.as_object().unwrap().len(), 3);
    assert!(d["level"] == "warn" && d["message"].as_str().unwrap().starts_with("AGENTS.md:"));
    assert_eq!(
        v["prompt"].as_str().unwrap(),
        format!("{}\n{}\n{}", v["stable"].as_str().unwrap(), proem::BOUNDARY_MARKER, v["dynamic"].as_str().unwrap())
    );
}

#[test]
fn anthropic_and_openai_formats() {
    let agent = Agent::new();
    agent.with_standard_files();
    let dir = agent.path().to_str().unwrap();
    let built = agent.build(&turn());
    let a: serde_json::Value = serde_json::from_slice(&proem(&fixed(dir, &["--format", "anthropic"])).stdout).unwrap();
    let blocks = a["system"].as_array().unwrap();
    // The stable block with its breakpoint (1 h), then the dynamic part (the
    // session tier is off by default: the dynamic part keeps the layout's order).
    assert_eq!(blocks.len(), 2);
    assert_eq!(blocks[0]["text"], &*built.stable);
    assert_eq!(blocks[0]["cache_control"], serde_json::json!({"type": "ephemeral", "ttl": "1h"}));
    assert_eq!(blocks[1]["text"], built.dynamic.as_str());
    assert!(blocks[1].get("cache_control").is_none());
    let o: serde_json::Value = serde_json::from_slice(&proem(&fixed(dir, &["--format", "openai"])).stdout).unwrap();
    let msgs = o["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 1);
    assert_eq!(msgs[0]["role"], "system");
    let content = msgs[0]["content"].as_str().unwrap();
    assert!(!content.contains("PROEM_CACHE_BOUNDARY"));
    assert!(content.starts_with(&*built.stable) && content.ends_with(&built.dynamic));
}

#[test]
fn tokenizer_follows_the_model() {
    let agent = Agent::new();
    let dir = agent.path().to_str().unwrap();
    for (model, tok) in [("gpt-5.1", "o200k_base"), ("o3-mini", "o200k_base"), ("claude-sonnet-4-5", "claude-estimate")]
    {
        let v: serde_json::Value =
            serde_json::from_slice(&proem(&fixed(dir, &["--format", "json", "--model", model])).stdout).unwrap();
        assert_eq!(v["tokenizer"], tok, "{model}");
    }
    agent.config("[budget]\ntokenizer = \"o200k_base\"\n");
    let v: serde_json::Value =
        serde_json::from_slice(&proem(&fixed(dir, &["--format", "json", "--model", "claude"])).stdout).unwrap();
    assert_eq!(v["tokenizer"], "o200k_base", "config overrides the model's choice");
}

#[test]
fn inspect_shows_sections_and_files_largest_first() {
    let agent = Agent::new();
    agent.with_standard_files().file("AGENTS.md", &"long rules ".repeat(100));
    let out = proem(&["inspect", agent.path().to_str().unwrap(), "--now", "2026-11-21T09:30:00Z", "--by-size"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("SECTION") && text.contains("FILE") && text.contains("stable") && text.contains("dynamic"));
    assert!(text.contains("total ") && text.contains("stable hash "));
    let file_rows: Vec<&str> =
        text.lines().skip_while(|l| !l.starts_with("FILE")).skip(1).take_while(|l| !l.is_empty()).collect();
    assert_eq!(file_rows.len(), 7, "HEARTBEAT.md is read in heartbeat turns only");
    assert!(file_rows[0].starts_with("AGENTS.md"), "{file_rows:?}");
    assert!(file_rows.last().unwrap().contains("missing"), "BOOTSTRAP.md is missing");
    let section_rows: Vec<&str> =
        text.lines().skip_while(|l| !l.starts_with("SECTION")).skip(1).take_while(|l| !l.is_empty()).collect();
    let chars: Vec<usize> =
        section_rows.iter().map(|r| r.split_whitespace().nth(1).unwrap().parse().unwrap()).collect();
    assert!(chars.windows(2).all(|w| w[0] >= w[1]), "{chars:?}");
}

#[test]
fn bad_config_is_exit_1_naming_file_line_and_key() {
    let agent = Agent::new();
    agent.config("[agent]\nid = \"x\"\n\n[budget]\ntokens = \"many\"\n");
    let out = proem(&["build", agent.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("proem.toml:5:") && err.contains("budget.tokens"), "{err}");

    agent.config("[agnt]\nid = \"x\"\n");
    let err = stderr(&proem(&["build", agent.path().to_str().unwrap()]));
    assert!(err.contains("proem.toml:1:") && err.contains("agnt"), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn bad_paths_and_inputs_are_exit_1_with_a_message() {
    let agent = Agent::new();
    let dir = agent.path().to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["build", "/no/such/agent"], "/no/such/agent: does not exist"),
        (vec!["build", dir, "--config", "/no/such.toml"], "/no/such.toml"),
        (vec!["build", dir, "--tools", "/no/tools.json"], "/no/tools.json"),
        (vec!["build", dir, "--timezone", "Mars/Base"], "--timezone"),
        (vec!["build", dir, "--budget", "3"], "over the budget"),
    ];
    for (args, needle) in cases {
        let out = proem(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = stderr(&out);
        assert!(err.contains(needle) && err.starts_with("proem: error:"), "{args:?}: {err}");
        assert!(!err.contains("panicked"));
    }
    // A flag's value that is not one the flag takes is a usage error, as
    // for every flag (`--budget 0`, `--chat-kind crowd`): exit 2, naming it.
    let out = proem(&["build", dir, "--now", "tomorrow"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--now") && stderr(&out).contains("RFC 3339"), "{}", stderr(&out));
    let file = agent.path().join("proem.toml");
    let out = proem(&["build", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("is not a directory"));
    agent.file("tools.json", "{not json");
    let out = proem(&["build", dir, "--tools", agent.path().join("tools.json").to_str().unwrap()]);
    assert!(stderr(&out).contains("tools.json") && stderr(&out).contains("invalid JSON"));
}

/// An agent folder whose path is not UTF-8 builds, through both
/// executables, as through a plain name (proem-full took its arguments as
/// UTF-8 and panicked: red team, ninth session).
#[test]
fn a_path_that_is_not_utf8_builds_as_any_other() {
    use std::os::unix::ffi::OsStrExt;
    let parent = tempfile::tempdir().unwrap();
    let odd = parent.path().join(std::ffi::OsStr::from_bytes(b"caf\xe9-\xff"));
    let plain = parent.path().join("plain");
    for dir in [&odd, &plain] {
        crate::surfaces::serve::copy_dir(&example("marlow"), dir);
    }
    let build = |exe: &std::path::Path, dir: &std::path::Path| {
        Command::new(exe).arg("build").arg(dir).args(["--now", "2026-01-01T00:00:00Z"]).output().unwrap()
    };
    // The prompts differ only in the line naming the folder.
    let without_folder = |o: &Output| -> Vec<String> {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter(|l| !l.contains("working directory"))
            .map(String::from)
            .collect()
    };
    for exe in [std::path::PathBuf::from(env!("CARGO_BIN_EXE_proem-full")), front()] {
        let (odd, plain) = (build(&exe, &odd), build(&exe, &plain));
        assert!(odd.status.success(), "{}: {}", exe.display(), stderr(&odd));
        assert!(without_folder(&odd) == without_folder(&plain), "{}: another prompt", exe.display());
    }
}

#[test]
fn usage_errors_are_exit_2() {
    let agent = Agent::new();
    let dir = agent.path().to_str().unwrap();
    for args in [
        vec!["build"],
        vec!["build", dir, "--format", "yaml"],
        vec!["build", dir, "--mode", "loud"],
        vec!["frobnicate"],
        vec!["build", dir, "--chat-kind", "crowd"],
    ] {
        assert_eq!(proem(&args).status.code(), Some(2), "{args:?}");
    }
    let help = proem(&["build", "--help"]);
    assert_eq!(help.status.code(), Some(0));
    let text = String::from_utf8(help.stdout).unwrap();
    for flag in [
        "--config",
        "--mode",
        "--session-key",
        "--provider",
        "--model",
        "--channel",
        "--chat-kind",
        "--group-title",
        "--extra",
        "--owner",
        "--tools",
        "--now",
        "--timezone",
        "--budget",
        "--format",
    ] {
        assert!(text.contains(flag), "--help lacks {flag}");
    }
}

#[test]
fn the_cli_never_writes_into_the_agent_directory() {
    let agent = Agent::new();
    agent.with_standard_files().skill("s", "d");
    let dir = agent.path().to_str().unwrap();
    let before = agent.snapshot();
    for format in ["text", "json", "anthropic", "openai"] {
        proem(&fixed(dir, &["--format", format]));
    }
    proem(&["inspect", dir]);
    proem(&["build", dir, "--budget", "1"]);
    assert_eq!(agent.snapshot(), before);
}
