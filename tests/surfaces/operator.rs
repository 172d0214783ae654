//! What an operator sees (issue 27): every problem of a build on stderr,
//! one readable line each, whatever the format; `proem plugins` calling
//! each hook; an empty agent folder refused; `proem inspect` in prompt
//! order with what was left out and why; remembered plugins neither timed
//! nor counted as calls.

use crate::common::*;
use proptest::prelude::*;
use serde_json::Value;
use std::process::{Command, Output};

/// `proem ARGS` (the front executable, as an operator runs it), with the
/// test cache and no log filter from the environment.
fn proem(args: &[&str]) -> Output {
    Command::new(front())
        .args(args)
        .env("PROEM_CACHE_DIR", plugin_env())
        .env_remove("RUST_LOG")
        .env_remove("PROEM_LOG")
        .output()
        .expect("proem runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

const NOW: &str = "2026-11-21T09:30:00Z";

/// One kind of problem a build can have, and how to provoke it.
struct Problem {
    /// The diagnostic code it must produce.
    code: &'static str,
    /// `[[plugins]]` entries to add.
    plugins: String,
    /// `[budget]` keys to set.
    budget: &'static [(&'static str, &'static str)],
    /// Files to write into the agent.
    files: Vec<(&'static str, String)>,
    /// Flags for `build`.
    flags: &'static [&'static str],
}

/// The kinds of problems: a plugin left out (trap, error, missing file), a
/// grant asked and not given, a plugin's warning, a file cut by its cap,
/// sections and files cut by the budget, a tool with no name, a persona
/// file whose front matter never closes.
fn problems() -> Vec<Problem> {
    let none = |code, plugins: String| Problem { code, plugins, budget: &[], files: Vec::new(), flags: &[] };
    vec![
        none("plugin_trap", fixture("trapping", "panic", "")),
        none("plugin_error", fixture("refusing", "error", "")),
        none("plugin_grant_missing", fixture("asking", "sections", "")),
        none("plugin_log", fixture("warning", "warn", "")),
        none("plugin_load_failed", "[[plugins]]\nid = \"absent\"\npath = \"plugins/absent.wasm\"\n\n".into()),
        Problem {
            code: "file_truncated",
            plugins: String::new(),
            budget: &[("per_file_chars", "400")],
            files: vec![("AGENTS.md", "# Rules\n".to_string() + &"Check twice before you act. ".repeat(80))],
            flags: &[],
        },
        Problem {
            code: "budget_file_shrunk",
            plugins: String::new(),
            budget: &[],
            files: vec![("MEMORY.md", "- a long memory line about the workshop.\n".repeat(300))],
            flags: &["--budget", "1200"],
        },
        Problem {
            code: "tool_invalid_name",
            plugins: String::new(),
            budget: &[],
            files: vec![(
                "tools.json",
                r#"[{"name":"exec","description":"a"},{"name":"","description":"b"}]"#.to_string(),
            )],
            flags: &["--tools", "tools.json"],
        },
        Problem {
            code: "front_matter_unterminated",
            plugins: String::new(),
            budget: &[],
            files: vec![("SOUL.md", "---\ntitle: never closed\n# Soul\nDry wit.\n".to_string())],
            flags: &[],
        },
    ]
}

/// An agent with the standard files and the chosen problems, and the flags
/// its build takes.
fn agent_with(chosen: &[&Problem]) -> (Agent, Vec<String>) {
    let agent = Agent::new();
    agent.with_standard_files().guest("proem-fixture-guest", "fixture.wasm");
    let mut toml = "[agent]\nid = \"testbot\"\n\n[sandbox]\nenabled = true\nworkdir = \"/workspace\"\n\n".to_string();
    let budget: Vec<String> = chosen.iter().flat_map(|p| p.budget).map(|(k, v)| format!("{k} = {v}\n")).collect();
    if !budget.is_empty() {
        toml.push_str(&format!("[budget]\n{}\n", budget.concat()));
    }
    let mut flags = vec!["--now".to_string(), NOW.to_string()];
    for p in chosen {
        toml.push_str(&p.plugins);
        for (name, text) in &p.files {
            agent.file(name, text);
        }
        for flag in p.flags {
            // A tools file is named from the agent folder.
            flags.push(match *flag {
                "tools.json" => agent.path().join("tools.json").display().to_string(),
                other => other.to_string(),
            });
        }
    }
    agent.config(&toml);
    (agent, flags)
}

/// An output without what measures the run rather than the inputs: a JSON
/// report's plugin times and whether a memo answered.
fn unmeasured(stdout: &[u8]) -> String {
    let text = String::from_utf8_lossy(stdout).into_owned();
    match serde_json::from_str::<Value>(&text) {
        Ok(mut report) if report.get("plugins").is_some() => {
            for p in report["plugins"].as_array_mut().into_iter().flatten() {
                p["elapsed_us"] = 0.into();
                p["remembered"] = false.into();
            }
            report.to_string()
        }
        _ => text,
    }
}

/// The report's problems: its diagnostics at warning level or above.
fn reported_problems(report: &Value) -> Vec<(String, String)> {
    report["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .filter(|d| d["level"] != "info")
        .map(|d| (d["code"].as_str().unwrap().to_string(), d["message"].as_str().unwrap().to_string()))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10, failure_persistence: None, ..ProptestConfig::default() })]

    /// The rule: whatever problems a build has, and whatever the format,
    /// `proem build` prints each diagnostic of its report at warning level
    /// or above on stderr, one line each, in report order, and nothing
    /// else; `--quiet` prints none; stdout is the same either way.
    #[test]
    fn every_problem_of_a_build_reaches_stderr_one_line_each(
        picks in proptest::collection::btree_set(0usize..9, 1..4),
        format in prop_oneof![Just("text"), Just("json"), Just("anthropic"), Just("openai")],
    ) {
        let all = problems();
        let chosen: Vec<&Problem> = picks.iter().map(|i| &all[*i]).collect();
        let (agent, flags) = agent_with(&chosen);
        let dir = agent.path().to_str().unwrap();
        let args = |extra: &[&str]| -> Vec<String> {
            let mut a = vec!["build".to_string(), dir.to_string()];
            a.extend(flags.iter().cloned());
            a.extend(extra.iter().map(|s| s.to_string()));
            a
        };
        let run = |extra: &[&str]| {
            let a = args(extra);
            proem(&a.iter().map(String::as_str).collect::<Vec<_>>())
        };
        let json = run(&["--format", "json", "--quiet"]);
        prop_assert_eq!(json.status.code(), Some(0), "{}", stderr(&json));
        prop_assert!(json.stderr.is_empty(), "--quiet: {}", stderr(&json));
        let report: Value = serde_json::from_slice(&json.stdout).unwrap();
        let expected = reported_problems(&report);
        prop_assert!(!expected.is_empty(), "the chosen problems are reported");

        let loud = run(&["--format", format]);
        prop_assert_eq!(loud.status.code(), Some(0));
        let lines: Vec<String> = stderr(&loud).lines().map(str::to_string).collect();
        prop_assert_eq!(lines.len(), expected.len(), "one line per problem: {:?} for {:?}", lines, expected);
        for (line, (code, message)) in lines.iter().zip(&expected) {
            prop_assert!(line.starts_with("proem: warning: "), "{}", line);
            let code_shown = format!("[{code}]");
            prop_assert!(line.contains(&code_shown), "{} lacks {}", line, code);
            let start: String = proem_core::text::one_line(message, 60);
            prop_assert!(line.contains(start.trim_end_matches('…')), "{} does not say {}", line, message);
            prop_assert!(!line.chars().any(char::is_control), "{:?}", line);
        }
        let quiet = run(&["--format", format, "--quiet"]);
        prop_assert!(quiet.stderr.is_empty(), "{}", stderr(&quiet));
        prop_assert_eq!(unmeasured(&quiet.stdout), unmeasured(&loud.stdout), "--quiet changes stderr only");
    }
}

/// Each kind of problem, alone in a build, reaches stderr under its code
/// (together, one can hide another: a file the budget leaves out is not
/// also reported cut by its cap).
#[test]
fn each_kind_of_problem_reaches_stderr() {
    for problem in &problems() {
        let (agent, flags) = agent_with(&[problem]);
        let mut args = vec!["build", agent.path().to_str().unwrap()];
        args.extend(flags.iter().map(String::as_str));
        let out = proem(&args);
        assert_eq!(out.status.code(), Some(0), "{}: {}", problem.code, stderr(&out));
        let err = stderr(&out);
        let line = err.lines().find(|l| l.contains(&format!("[{}]", problem.code)));
        assert!(line.is_some_and(|l| l.starts_with("proem: warning: ")), "{}: {err}", problem.code);
    }
}

#[test]
fn an_empty_agent_folder_is_a_usage_error_unless_allowed() {
    plugin_env();
    let empty = tempfile::tempdir().unwrap();
    let dir = empty.path().to_str().unwrap();
    for command in [vec!["build", dir], vec!["inspect", dir], vec!["plugins", dir], vec!["serve", dir]] {
        let out = proem(&command);
        assert_eq!(out.status.code(), Some(2), "{command:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains(dir) && err.contains("--allow-empty") && err.contains("proem.toml"), "{command:?}: {err}");
        assert!(out.stdout.is_empty(), "{command:?}");
    }
    let allowed = proem(&["build", dir, "--allow-empty", "--now", NOW]);
    assert_eq!(allowed.status.code(), Some(0), "{}", stderr(&allowed));
    assert!(stdout(&allowed).contains(proem::BOUNDARY_MARKER));
    let listed = proem(&["plugins", dir, "--allow-empty"]);
    assert_eq!((listed.status.code(), stdout(&listed).as_str()), (Some(0), "no plugins configured\n"));
    // Any one thing proem reads makes it an agent: a file, proem.toml, skills.
    for (name, text) in [("SOUL.md", "# Soul"), ("proem.toml", "[agent]\nid = \"x\"\n"), ("skills/s/SKILL.md", "x")] {
        let one = tempfile::tempdir().unwrap();
        let path = one.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        let out = proem(&["build", one.path().to_str().unwrap(), "--now", NOW]);
        assert_eq!(out.status.code(), Some(0), "{name}: {}", stderr(&out));
    }
    // So does a config given with --config.
    let config = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(config.path(), "[agent]\nid = \"x\"\n").unwrap();
    let out = proem(&["build", dir, "--config", config.path().to_str().unwrap(), "--now", NOW]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn a_missing_plugin_file_names_its_line_and_the_fix() {
    let agent = Agent::new();
    agent.with_standard_files().config(
        "[agent]\nid = \"testbot\"\n\n[[plugins]]\nid = \"hw\"\nsource = \"builtin:hardware-access\"\n\n\
         [[plugins]]\nid = \"gone\"\npath = \"plugins/gone.wasm\"\n",
    );
    let out = proem(&["build", agent.path().to_str().unwrap(), "--now", NOW]);
    assert_eq!(out.status.code(), Some(0));
    let err = stderr(&out);
    let line = err.lines().find(|l| l.contains("[plugin_load_failed]")).unwrap_or_else(|| panic!("{err}"));
    assert!(line.contains("proem.toml:9"), "the line of its id: {line}");
    assert!(line.contains("plugins/gone.wasm") && line.contains("no such file"), "{line}");
    assert!(line.contains("proem plugin add") && line.contains("remove the [[plugins]] entry"), "{line}");
    assert_eq!(err.lines().count(), 1, "said once, not also as a log line: {err}");
}

#[test]
fn plugins_calls_each_hook_on_a_sample_turn_and_fails_on_a_failing_one() {
    let good = Agent::with_plugins(&(builtin("hardware-access", "") + &fixture("fine", "sections", "")));
    let out = proem(&["plugins", good.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));

    // Each way a plugin that loads can fail on a turn: its config refused,
    // a trap, an error.
    for entry in [
        builtin("hardware-access", "config = { patterns = 5 }"),
        fixture("broken", "panic", ""),
        fixture("broken", "error", ""),
    ] {
        let agent = Agent::with_plugins(&entry);
        let out = proem(&["plugins", agent.path().to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{entry}: {}", stdout(&out));
        let text = stdout(&out);
        assert!(text.contains("failed (stable"), "{text}");
        assert!(text.contains("hook fails on a sample turn"), "{text}");
        assert!(stderr(&out).contains("failed on a sample turn"), "{}", stderr(&out));
    }
}

/// The section rows of `proem inspect`'s table (the boundary rule included).
fn section_rows(text: &str) -> Vec<&str> {
    text.lines().skip_while(|l| !l.starts_with("SECTION")).skip(1).take_while(|l| !l.is_empty()).collect()
}

#[test]
fn inspect_lists_sections_in_prompt_order_with_the_boundary_drawn() {
    let agent = Agent::new();
    agent.with_standard_files().file("AGENTS.md", &"long rules ".repeat(100));
    let dir = agent.path().to_str().unwrap();
    let out = proem(&["inspect", dir, "--now", NOW]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let rows = section_rows(&text);
    let boundary = rows.iter().position(|r| r.starts_with("---- cache boundary")).expect("the boundary is drawn");
    let built = agent.build(&turn());
    let ids: Vec<&str> = rows.iter().filter(|r| !r.starts_with("----")).map(|r| r.split(' ').next().unwrap()).collect();
    assert_eq!(ids[..built.sections.len()], section_ids(&built), "prompt order");
    let stable = built.sections.iter().filter(|s| s.zone == proem_core::section::Zone::Stable).count();
    assert_eq!(boundary, stable, "between the last stable and the first dynamic section");
    assert!(rows[..boundary].iter().all(|r| r.contains(" stable ")), "{rows:?}");
    assert!(rows[boundary + 1..].iter().all(|r| r.contains(" dynamic ") || r.contains("left out: ")), "{rows:?}");

    let by_size = proem(&["inspect", dir, "--now", NOW, "--by-size"]);
    let text = stdout(&by_size);
    let rows = section_rows(&text);
    assert!(!rows.iter().any(|r| r.starts_with("----")), "no boundary in size order");
    let chars: Vec<usize> = rows.iter().filter_map(|r| r.split_whitespace().nth(1)?.parse().ok()).collect();
    assert_eq!(chars.len(), built.sections.len());
    assert!(chars.windows(2).all(|w| w[0] >= w[1]), "{chars:?}");
}

#[test]
fn inspect_lists_what_was_left_out_and_why() {
    let agent = Agent::new();
    agent.with_standard_files().file("MEMORY.md", &"- a long memory line about the workshop.\n".repeat(300));
    let dir = agent.path().to_str().unwrap();
    // `none` mode has no persona and no workspace files; a tight budget
    // cuts MEMORY.md.
    let out = proem(&["inspect", dir, "--now", NOW, "--mode", "none"]);
    let text = stdout(&out);
    let row = |id: &str| section_rows(&text).into_iter().find(|r| r.starts_with(&format!("{id} "))).map(str::to_string);
    let persona = row("persona").unwrap_or_else(|| panic!("{text}"));
    assert!(persona.contains("left out: not in this mode (none)"), "{persona}");
    let files = |text: &str, name: &str| {
        text.lines().skip_while(|l| !l.starts_with("FILE")).find(|l| l.starts_with(name)).unwrap_or("").to_string()
    };
    assert!(files(&text, "SOUL.md").contains("left out: not used in this mode"), "{text}");
    assert!(files(&text, "BOOTSTRAP.md").contains("left out: missing"), "{text}");

    let out = proem(&["inspect", dir, "--now", NOW, "--budget", "600"]);
    let text = stdout(&out);
    let report: Value = serde_json::from_slice(
        &proem(&["build", dir, "--now", NOW, "--budget", "600", "--format", "json", "-q"]).stdout,
    )
    .unwrap();
    let said = |code: &str, what: &str| reported_problems(&report).iter().any(|(c, m)| c == code && m.contains(what));
    for section in ["memory_recall", "project_context"] {
        assert!(said("budget_section_dropped", section), "{report}");
        let row = section_rows(&text).into_iter().find(|r| r.starts_with(&format!("{section} ")));
        let row = row.unwrap_or_else(|| panic!("{section}: {text}"));
        assert!(row.ends_with("left out: for the budget"), "{row}");
    }
    assert!(said("budget_file_shrunk", "MEMORY.md"), "{report}");
    assert!(files(&text, "MEMORY.md").ends_with("left out: for the budget"), "{text}");
    let agents = files(&text, "AGENTS.md");
    assert!(agents.ends_with("left out: for the budget (with its section project_context)"), "{agents}");
}

#[test]
fn inspect_says_remembered_for_plugins_that_did_not_run() {
    // A stable hook's answer is kept on disk: the second process does not
    // call the plugin.
    let agent = Agent::with_plugins(&builtin("hardware-access", ""));
    agent.file("tools.json", r#"[{"name":"gpio_write","description":"Sets a pin."}]"#);
    let dir = agent.path().to_str().unwrap();
    let tools = agent.path().join("tools.json");
    let args = ["inspect", dir, "--now", NOW, "--tools", tools.to_str().unwrap()];
    proem(&args);
    let text = stdout(&proem(&args));
    let row = text.lines().find(|l| l.starts_with("hardware-access ")).unwrap_or_else(|| panic!("{text}"));
    assert!(row.ends_with("remembered") && !row.contains("µs"), "{row}");
}

#[test]
fn inspect_wraps_long_diagnostics_under_their_code() {
    let agent = Agent::with_plugins(&fixture("refusing", "error_text", "text = \"no\""));
    agent.file("AGENTS.md", &format!("# Rules\n{}", "Check twice before acting on anything. ".repeat(200)));
    let dir = agent.path().to_str().unwrap();
    let out = Command::new(front())
        .args(["inspect", dir, "--now", NOW])
        .env("PROEM_CACHE_DIR", plugin_env())
        .env("COLUMNS", "60")
        .output()
        .unwrap();
    let text = stdout(&out);
    let diagnostics: Vec<&str> = text.lines().skip_while(|l| *l != "diagnostics:").skip(1).collect();
    assert!(diagnostics.len() > 2, "{text}");
    for line in &diagnostics {
        let (prefix, body) = line.split_at(8);
        assert!(["  info  ", "  warn  ", "  error ", "        "].contains(&prefix), "{line:?}");
        assert!(line.chars().count() <= 60 || !body.contains(' '), "over 60 with more than one word: {line:?}");
    }
    assert!(diagnostics.iter().any(|l| l.starts_with("        ")), "a long one was wrapped: {text}");
}

#[test]
fn a_remembered_build_says_so_and_took_no_time() {
    let agent = Agent::with_plugins(&(builtin("hardware-access", "") + &fixture("fine", "sections", "")));
    let assembler = agent.assembler();
    let first = assembler.build(&turn()).unwrap();
    let again = assembler.build(&turn()).unwrap();
    assert_eq!(again.prompt, first.prompt);
    assert_eq!(assembler.memo_hits(), 1, "the second build is the build memo's");
    for p in &again.plugins {
        assert!(p.remembered && p.elapsed_us == 0, "{p:?}");
    }
    let json: Value = serde_json::to_value(&again).unwrap();
    for p in json["plugins"].as_array().unwrap() {
        assert_eq!((&p["remembered"], &p["elapsed_us"]), (&Value::Bool(true), &Value::from(0)), "{p}");
    }
    // A build whose plugins ran says they were not remembered.
    let fresh = Agent::with_plugins(&fixture("fine", "clock", ""));
    let built = fresh.assembler().build(&turn()).unwrap();
    assert!(built.plugins.iter().all(|p| !p.remembered), "{:?}", built.plugins);
}

#[test]
fn metrics_count_a_plugin_call_once_for_builds_of_one_turn() {
    use crate::surfaces::serve::{client, runtime, Server};
    // A cache of its own: the first build's calls are real, not answers a
    // previous run kept on disk.
    let cache = tempfile::tempdir().unwrap();
    let agent = Agent::with_plugins(&(builtin("hardware-access", "") + &fixture("fine", "sections", "")));
    let parent = tempfile::tempdir().unwrap();
    let id = "counted";
    crate::surfaces::serve::copy_dir(agent.path(), &parent.path().join(id));
    let server = Server::start_with(&[parent.path().join(id).to_str().unwrap()], |c| {
        c.env("PROEM_CACHE_DIR", cache.path());
    });
    let rt = runtime();
    let c = client();
    const BUILDS: usize = 12;
    let reports: Vec<Value> = rt.block_on(async {
        let mut reports = Vec::new();
        for _ in 0..BUILDS {
            let body = serde_json::json!({"now": NOW, "format": "json"});
            let r = c.post(format!("{}/v1/agents/{id}/build", server.url)).json(&body).send().await.unwrap();
            assert_eq!(r.status(), 200);
            reports.push(r.json().await.unwrap());
        }
        reports
    });
    let metrics =
        rt.block_on(async { c.get(format!("{}/metrics", server.url)).send().await.unwrap().text().await.unwrap() });
    let calls: Vec<u64> = metrics
        .lines()
        .filter(|l| l.starts_with(&format!("proem_plugin_calls_total{{agent=\"{id}\"")))
        .map(|l| l.rsplit(' ').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(calls, vec![1, 1], "each of the two plugins called once in {BUILDS} builds: {metrics}");
    assert!(reports[0]["plugins"].as_array().unwrap().iter().all(|p| p["remembered"] == false), "{}", reports[0]);
    for later in &reports[1..] {
        for p in later["plugins"].as_array().unwrap() {
            assert_eq!((&p["remembered"], &p["elapsed_us"]), (&Value::Bool(true), &Value::from(0)), "{p}");
        }
    }
}
