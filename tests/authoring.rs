//! The plugin author's loop (issue 29): denied stubs for the imports
//! toolchains add, `plugin new --lang`, `plugin add --replace`, `plugin run`.
//! The templates themselves are built by their own toolchains in
//! host/full/tests/templates.sh (CI).

use crate::common::*;
use proptest::prelude::*;
use std::process::Command;

/// A component importing `wasi:http/types@VERSION` (a resource and its
/// constructor, the shape componentize-js's fetch support imports) and
/// exporting `run`, which calls the constructor.
fn http_importer(version: &str, resource: &str) -> Vec<u8> {
    wat::parse_str(format!(
        r#"(component
            (import "wasi:http/types@{version}" (instance $http
                (export "{resource}" (type $r (sub resource)))
                (export "[constructor]{resource}" (func (result (own $r))))
            ))
            (alias export $http "[constructor]{resource}" (func $ctor))
            (core func $lowered (canon lower (func $ctor)))
            (core module $m
                (import "host" "ctor" (func $ctor (result i32)))
                (func (export "run") (result i32) call $ctor))
            (core instance $i (instantiate $m (with "host" (instance (export "ctor" (func $lowered))))))
            (func (export "run") (result u32) (canon lift (core func $i "run")))
        )"#
    ))
    .unwrap()
}

/// Links `wasm` with proem's linker and the stubs, instantiates it in a
/// call's sandbox and calls `run`: the error it ends with.
fn call_run(wasm: &[u8]) -> Result<String, String> {
    use wasmtime::component::Component;
    let engine = proem_wasm::engine::get().unwrap();
    let component = Component::new(&engine.engine, wasm).map_err(|e| e.to_string())?;
    let stubbed = proem_wasm::stubs::linker_for(&engine.engine, &engine.linker, &component)
        .map_err(|e| e.to_string())?
        .expect("a wasi:http import is stubbed");
    let pre = stubbed.instantiate_pre(&component).map_err(|e| format!("{e:#}"))?;
    let sandbox = proem_core::plugin::sandbox::Sandbox {
        plugin: "stub".into(),
        grants: Default::default(),
        agent_dir: std::env::temp_dir(),
        memory_bytes: 32 << 20,
        now: std::time::Duration::ZERO,
        tokenizer: proem_core::tokens::Tokenizer::O200kBase,
        view: proem_core::plugin::sandbox::View::Stable,
    };
    let mut store = wasmtime::Store::new(&engine.engine, proem_wasm::sandbox::state(&sandbox).unwrap());
    store.set_epoch_deadline(1_000_000);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    runtime.block_on(async {
        let instance = pre.instantiate_async(&mut store).await.map_err(|e| format!("{e:#}"))?;
        let run = instance.get_typed_func::<(), (u32,)>(&mut store, "run").map_err(|e| e.to_string())?;
        match run.call_async(&mut store, ()).await {
            Ok(_) => Ok("returned".into()),
            Err(e) => Err(format!("{e:#}")),
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// Whatever 0.2 patch and resource a toolchain's wasi:http import
    /// names: it does not link with proem's shared linker alone, links with
    /// the stubs, and its call traps with a message naming the function and
    /// saying it is denied; nothing is returned.
    #[test]
    fn a_wasi_http_import_links_as_a_denied_stub_whose_calls_trap_naming_it(
        patch in 0u32..20,
        resource in proptest::sample::select(vec!["fields", "outgoing-request", "request-options", "x"]),
    ) {
        let wasm = http_importer(&format!("0.2.{patch}"), resource);
        let engine = proem_wasm::engine::get().unwrap();
        let component = wasmtime::component::Component::new(&engine.engine, &wasm).unwrap();
        prop_assert!(engine.linker.instantiate_pre(&component).is_err(), "the shared linker alone links it");
        let err = call_run(&wasm).expect_err("a stub returned");
        let name = format!("wasi:http/types@0.2.{patch}#[constructor]{resource}");
        prop_assert!(err.contains(&name) && err.contains(proem_wasm::stubs::DENIED), "{}", err);
    }
}

/// The denial list covers what the toolchains' default builds import, and
/// nothing proem grants.
#[test]
fn the_denied_imports_are_the_network_the_environment_exit_and_the_terminal_only() {
    use proem_wasm::stubs::denial;
    for denied in [
        "wasi:http/types@0.2.10",
        "wasi:http/outgoing-handler@0.2.10",
        "wasi:sockets/tcp@0.2.9",
        "wasi:sockets/ip-name-lookup@0.2.9",
        "wasi:cli/environment@0.2.12",
        "wasi:cli/exit@0.2.12",
        "wasi:cli/terminal-stdout@0.2.12",
        "wasi:cli/stdin@0.2.12",
    ] {
        assert!(denial(denied).is_some(), "{denied} is not denied");
    }
    for granted in [
        "proem:plugin/host@0.2.0",
        "wasi:filesystem/types@0.2.9",
        "wasi:io/streams@0.2.9",
        "wasi:clocks/wall-clock@0.2.9",
        "wasi:random/random@0.2.9",
        "wasi:cli/stderr@0.2.9",
    ] {
        assert!(denial(granted).is_none(), "{granted} is listed as denied");
    }
}

/// `plugin add --replace` re-pins: the same id with a new binary replaces
/// its plugins/ file and its one sha256 line, every other byte of
/// proem.toml as it was; without --replace it is refused naming the flag.
#[test]
fn plugin_add_replace_repins_the_entry_and_keeps_every_other_line() {
    let agent = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (first, second) = (guest_wasm("hardware-access"), guest_wasm("gpt5-overlay"));
    std::fs::write(dir.path().join("a.wasm"), &first).unwrap();
    std::fs::write(dir.path().join("b.wasm"), &second).unwrap();
    let operator = "# mine\n[agent]\nid = \"x\"   # keep this comment\n";
    std::fs::write(agent.path().join("proem.toml"), operator).unwrap();
    proem_full::install::add(&dir.path().join("a.wasm"), agent.path(), Some("hw")).unwrap();
    let before = std::fs::read_to_string(agent.path().join("proem.toml")).unwrap();
    let refused = proem_full::install::add(&dir.path().join("b.wasm"), agent.path(), Some("hw")).unwrap_err();
    assert!(refused.contains("--replace"), "{refused}");
    let done = proem_full::install::add_with(&dir.path().join("b.wasm"), agent.path(), Some("hw"), true).unwrap();
    let after = std::fs::read_to_string(agent.path().join("proem.toml")).unwrap();
    let (old_pin, new_pin) = (proem_core::digest::sha256_hex(&first), proem_core::digest::sha256_hex(&second));
    assert_eq!(after, before.replace(&old_pin, &new_pin));
    assert!(after.starts_with(operator));
    assert_eq!(done.sha256, new_pin);
    assert_eq!(std::fs::read(agent.path().join("plugins/hw.wasm")).unwrap(), second);
    let names: Vec<_> = std::fs::read_dir(agent.path().join("plugins")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names.len(), 1, "a temporary file was left: {names:?}");
    // The pinned agent builds with the new binary.
    let built = proem::Assembler::open(agent.path(), None).unwrap().build(&turn()).unwrap();
    assert_eq!(plugin_status(&built, "hw"), "ok");
}

/// `--replace` touches only what `plugin add` installed: an entry whose
/// path is not a file in plugins/ is refused, nothing changed.
#[test]
fn plugin_add_replace_refuses_an_entry_it_did_not_install() {
    let agent = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("b.wasm"), guest_wasm("gpt5-overlay")).unwrap();
    for entry in ["source = \"builtin:gpt5-overlay\"", "path = \"other/p.wasm\""] {
        let config = format!("[[plugins]]\nid = \"hw\"\n{entry}\n");
        std::fs::write(agent.path().join("proem.toml"), &config).unwrap();
        let err = proem_full::install::add_with(&dir.path().join("b.wasm"), agent.path(), Some("hw"), true)
            .expect_err(entry);
        assert!(err.contains("--replace re-pins only"), "{err}");
        assert_eq!(std::fs::read_to_string(agent.path().join("proem.toml")).unwrap(), config);
        assert!(!agent.path().join("plugins").exists());
    }
}

fn full() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_proem-full"));
    command.env("PROEM_CACHE_DIR", plugin_env());
    command
}

/// `plugin run` prints each hook's raw answer as JSON, the config and the
/// turn applied, with no agent folder anywhere.
#[test]
fn plugin_run_prints_the_hooks_raw_answers_for_a_config_and_a_turn() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.wasm"), guest_wasm("gpt5-overlay")).unwrap();
    std::fs::write(dir.path().join("config.toml"), "personality = \"off\"\n").unwrap();
    std::fs::write(dir.path().join("turn.json"), r#"{"model": "gpt-5.1", "channel": "slack"}"#).unwrap();
    let out = full()
        .current_dir(dir.path())
        .args(["plugin", "run", "p.wasm", "--config", "config.toml", "--turn", "turn.json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["file"], "p.wasm");
    let hooks = json["hooks"].as_array().unwrap();
    let names: Vec<&str> = hooks.iter().map(|h| h["hook"].as_str().unwrap()).collect();
    assert_eq!(names, ["stable", "turn", "bootstrap"]);
    let stable = &hooks[0];
    assert_eq!(stable["declared"], true);
    assert!(stable["error"].is_null(), "{stable}");
    let text = stable["output"].to_string();
    assert!(text.contains("stable_prefix"), "{text}");
    // What the same plugin answers with personality on differs: the config reached it.
    std::fs::write(dir.path().join("config.toml"), "personality = \"friendly\"\n").unwrap();
    let friendly = full()
        .current_dir(dir.path())
        .args(["plugin", "run", "p.wasm", "--config", "config.toml", "--turn", "turn.json"])
        .output()
        .unwrap();
    let friendly: serde_json::Value = serde_json::from_slice(&friendly.stdout).unwrap();
    assert_ne!(friendly["hooks"][0]["output"], stable["output"]);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 3, "plugin run wrote into the folder");
}

/// Bad inputs to `plugin run` are errors naming the flag and file.
#[test]
fn plugin_run_names_the_flag_and_file_of_a_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.wasm"), guest_wasm("gpt5-overlay")).unwrap();
    std::fs::write(dir.path().join("list.json"), "[1, 2]").unwrap();
    std::fs::write(dir.path().join("turn.json"), r#"{"chanel": "slack"}"#).unwrap();
    std::fs::write(dir.path().join("not.wasm"), "hello").unwrap();
    let cases: [(&[&str], &str); 3] = [
        (&["p.wasm", "--config", "list.json"], "--config list.json: the config is a JSON object"),
        (&["p.wasm", "--turn", "turn.json"], "--turn turn.json: unknown field `chanel`"),
        (&["not.wasm"], "not.wasm: not a WebAssembly file"),
    ];
    for (args, expected) in cases {
        let out = full().current_dir(dir.path()).args(["plugin", "run"]).args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}

/// `plugin new --lang python|js` writes a new folder with the WIT it builds
/// from, pinned toolchains and a native test; `--sdk-path` is refused for
/// them, and an existing folder is never written into.
#[test]
fn plugin_new_writes_python_and_js_templates_with_pinned_toolchains() {
    let parent = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| full().current_dir(parent.path()).args(["plugin", "new"]).args(args).output().unwrap();
    assert!(run(&["py-notes", "--lang", "python", "--hooks", "stable,turn"]).status.success());
    assert!(run(&["js-notes", "--lang", "js", "--hooks", "stable,turn,bootstrap"]).status.success());
    let read = |path: &str| std::fs::read_to_string(parent.path().join(path)).unwrap();
    let wit = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../wit/0.2.0/proem.wit")).unwrap();
    assert_eq!(read("py-notes/wit/proem.wit"), wit);
    assert_eq!(read("js-notes/wit/proem.wit"), wit);
    assert!(read("py-notes/requirements.txt").lines().all(|l| l.contains("==")), "unpinned");
    assert!(read("py-notes/app.py").contains("hooks=types.Hooks.STABLE | types.Hooks.TURN,"));
    assert!(read("py-notes/test_app.py").contains("def test_it_notes_the_channel"));
    let package: serde_json::Value = serde_json::from_str(&read("js-notes/package.json")).unwrap();
    for (_, version) in package["devDependencies"].as_object().unwrap() {
        assert!(version.as_str().unwrap().chars().all(|c| c.is_ascii_digit() || c == '.'), "unpinned: {version}");
    }
    assert!(read("js-notes/app.js").contains("hooks: { stable: true, turn: true, bootstrap: true }"));
    let sdk = run(&["other", "--lang", "js", "--sdk-path", "."]);
    assert!(String::from_utf8_lossy(&sdk.stderr).contains("--sdk-path is for Rust plugins"));
    let again = run(&["py-notes", "--lang", "python"]);
    assert!(String::from_utf8_lossy(&again.stderr).contains("already exists"));
    let lang = run(&["x", "--lang", "cobol"]);
    assert!(String::from_utf8_lossy(&lang.stderr).contains("--lang"), "{}", String::from_utf8_lossy(&lang.stderr));
}
