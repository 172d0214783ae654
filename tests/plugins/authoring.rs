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
    let engine = proem_wasm::engine::get().unwrap().first().unwrap();
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
        let engine = proem_wasm::engine::get().unwrap().first().unwrap();
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
    let names: Vec<_> =
        std::fs::read_dir(agent.path().join("plugins")).unwrap().map(|e| e.unwrap().file_name()).collect();
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
        let err =
            proem_full::install::add_with(&dir.path().join("b.wasm"), agent.path(), Some("hw"), true).expect_err(entry);
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
    // --repeat N calls each hook N times: the median, least and most.
    let repeated = full()
        .current_dir(dir.path())
        .args(["plugin", "run", "p.wasm", "--turn", "turn.json", "--repeat", "3"])
        .output()
        .unwrap();
    let repeated: serde_json::Value = serde_json::from_slice(&repeated.stdout).unwrap();
    for hook in repeated["hooks"].as_array().unwrap() {
        assert_eq!(hook["calls"], 3, "{hook}");
        let (least, median, most) = (&hook["least_us"], &hook["elapsed_us"], &hook["most_us"]);
        assert!(least.as_u64() <= median.as_u64() && median.as_u64() <= most.as_u64(), "{hook}");
    }
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

/// An agent at `dir` whose one plugin `hw` is `wasm`, pinned.
fn pinned_agent(dir: &std::path::Path, wasm: &[u8]) {
    std::fs::create_dir_all(dir.join("plugins")).unwrap();
    std::fs::write(dir.join("plugins/hw.wasm"), wasm).unwrap();
    let pin = proem_core::digest::sha256_hex(wasm);
    let config =
        format!("[agent]\nid = \"x\"\n\n[[plugins]]\nid = \"hw\"\npath = \"plugins/hw.wasm\"\nsha256 = \"{pin}\"\n");
    std::fs::write(dir.join("proem.toml"), config).unwrap();
}

/// `plugin add` keeps the digest of the file it wrote once the file
/// system's clock has moved past it, so the first build after it reads no
/// byte of the plugin without waiting for the file to settle; and a write
/// right after the add (same size, its modification time set back) is
/// still never taken for that digest: the file's change time moved, and
/// the pin refuses the new bytes.
#[test]
fn the_first_build_after_plugin_add_reads_no_byte_and_a_write_after_it_is_seen() {
    plugin_env();
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path().join("agent");
    let wasm = with_custom_section(&guest_wasm("gpt5-overlay"), "the_first_build_after_plugin_add_reads_no_byte");
    std::fs::write(dir.path().join("hw.wasm"), &wasm).unwrap();
    let added = proem_full::install::add(&dir.path().join("hw.wasm"), &agent, Some("hw")).unwrap();
    let said = proem_full::install::warm(&agent, &added);
    assert!(said.contains("compiled into the plugin cache"), "{said}");
    let first = proem::Assembler::open(&agent, None).unwrap();
    let built = first.build(&turn()).unwrap();
    assert_eq!(plugin_status(&built, "hw"), "ok");
    let Ok(ready) = &first.plugins().plugins()[0].state else { panic!("not loaded") };
    assert!(!ready.binary_was_read(), "the first build after plugin add read the plugin file");
    // At once, as fast as a process can: other bytes of the same size,
    // the modification time set back to the add's.
    let path = agent.join(&added.path);
    let written = std::fs::metadata(&path).unwrap().modified().unwrap();
    let mut changed = wasm.clone();
    let last = changed.len() - 1;
    changed[last] ^= 1;
    std::fs::write(&path, &changed).unwrap();
    std::fs::File::options().write(true).open(&path).unwrap().set_modified(written).unwrap();
    let reopened = proem::Assembler::open(&agent, None).map(|_| ()).unwrap_err().to_string();
    assert!(reopened.contains("but proem.toml pins"), "{reopened}");
    let left: Vec<_> = std::fs::read_dir(agent.join("plugins")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, ["hw.wasm"], "the clock probe is gone from the agent's folder");
}

/// Waits until every file under `dirs` has settled (its digest may be
/// kept, see proem_core::plugin::binary::SETTLED): a bounded wait.
fn settle() {
    std::thread::sleep(proem_core::plugin::binary::SETTLED + std::time::Duration::from_millis(200));
}

/// `wasm` with a custom section named `name` appended: other bytes, the
/// same code, so a compiled-cache entry of a test's own.
fn with_custom_section(wasm: &[u8], name: &str) -> Vec<u8> {
    with_section(wasm, name, &[])
}

/// A warm build (same turn, a new assembler as a new process would make,
/// caches warm) of an agent with a plugin reads none of the plugin's bytes:
/// its digest is found again by the file's stat, its answers by the
/// digest. Its prompt is the cold build's. A new turn, which needs the
/// plugin's code, loads the compiled copy of that digest and reads no byte
/// either (the first build after `plugin add` is one).
#[test]
fn a_warm_build_reads_no_byte_of_its_plugin() {
    plugin_env();
    let agent = tempfile::tempdir().unwrap();
    let original = with_custom_section(&guest_wasm("gpt5-overlay"), "a_warm_build_reads_no_byte_of_its_plugin");
    pinned_agent(agent.path(), &original);
    settle();
    let cold = proem::Assembler::open(agent.path(), None).unwrap();
    let first = cold.build(&turn()).unwrap();
    assert_eq!(plugin_status(&first, "hw"), "ok");
    let warm = proem::Assembler::open(agent.path(), None).unwrap();
    let second = warm.build(&turn()).unwrap();
    let Ok(ready) = &warm.plugins().plugins()[0].state else { panic!("not loaded") };
    assert!(!ready.binary_was_read(), "the warm build read the plugin file");
    assert_eq!((first.stable, first.dynamic), (second.stable, second.dynamic));
    // A model never built before: the stable hook must run, from the
    // compiled copy, with no byte of the file read.
    let new_turn = proem::Turn { provider: Some("openai".into()), model: Some("gpt-5.1".into()), ..turn() };
    let fresh = proem::Assembler::open(agent.path(), None).unwrap();
    let third = fresh.build(&new_turn).unwrap();
    assert_eq!(plugin_status(&third, "hw"), "ok");
    let Ok(ready) = &fresh.plugins().plugins()[0].state else { panic!("not loaded") };
    assert!(!ready.binary_was_read(), "a new turn read the plugin file although its compiled copy was at hand");
    // The file changed in place since: what runs is still the code the
    // build went by (its compiled copy, bound to the pinned digest), never
    // the new bytes; a new load takes the new digest, which the pin refuses.
    let mut changed = original.clone();
    let last = changed.len() - 1;
    changed[last] ^= 1;
    std::fs::write(agent.path().join("plugins/hw.wasm"), &changed).unwrap();
    let other_turn = proem::Turn { provider: Some("openai".into()), model: Some("gpt-4o".into()), ..turn() };
    let (fourth, expected) = (warm.build(&other_turn).unwrap(), cold.build(&other_turn).unwrap());
    assert_eq!((fourth.stable, fourth.dynamic), (expected.stable, expected.dynamic));
    let reopened = proem::Assembler::open(agent.path(), None).map(|_| ()).unwrap_err().to_string();
    assert!(reopened.contains("but proem.toml pins"), "{reopened}");
}

/// The digest kept by stat never stands for other bytes: whatever write
/// changes a settled, pinned plugin file (in place at the same size with
/// its modification time put back, through a rename, truncated, grown, the
/// same bytes rewritten), the next load takes the file's real digest (the
/// pin refuses changed bytes; the same bytes load), and never runs bytes
/// other than those the build went by.
#[test]
fn a_changed_plugin_file_is_never_taken_for_the_digest_kept_by_its_stat() {
    plugin_env();
    let original = guest_wasm("gpt5-overlay");
    let mut next = xorshift(29);
    type Change = fn(&std::path::Path, &[u8], &mut dyn FnMut() -> u64);
    let changes: [(&str, Change); 5] = [
        ("in place, same size, mtime put back", |path, bytes, rand| {
            let mtime = std::fs::metadata(path).unwrap().modified().unwrap();
            let mut changed = bytes.to_vec();
            let at = (rand() as usize) % changed.len();
            changed[at] ^= 1 + (rand() % 255) as u8;
            std::fs::write(path, &changed).unwrap();
            std::fs::File::options().write(true).open(path).unwrap().set_modified(mtime).unwrap();
        }),
        ("renamed over, mtime put back", |path, bytes, rand| {
            let mtime = std::fs::metadata(path).unwrap().modified().unwrap();
            let mut changed = bytes.to_vec();
            let at = (rand() as usize) % changed.len();
            changed[at] ^= 0x80;
            let tmp = path.with_extension("tmp");
            std::fs::write(&tmp, &changed).unwrap();
            std::fs::File::options().write(true).open(&tmp).unwrap().set_modified(mtime).unwrap();
            std::fs::rename(&tmp, path).unwrap();
        }),
        ("truncated", |path, bytes, rand| {
            std::fs::write(path, &bytes[..(rand() as usize) % bytes.len()]).unwrap();
        }),
        ("grown", |path, bytes, rand| {
            let mut grown = bytes.to_vec();
            grown.extend((0..1 + rand() % 64).map(|_| 0u8));
            std::fs::write(path, grown).unwrap();
        }),
        ("the same bytes rewritten", |path, bytes, _| std::fs::write(path, bytes).unwrap()),
    ];
    let agents: Vec<_> = changes.iter().map(|_| tempfile::tempdir().unwrap()).collect();
    for agent in &agents {
        pinned_agent(agent.path(), &original);
    }
    settle();
    for (agent, (what, change)) in agents.iter().zip(changes) {
        // Loaded once settled: its digest is kept by its stat.
        let built = proem::Assembler::open(agent.path(), None).unwrap().build(&turn()).unwrap();
        assert_eq!(plugin_status(&built, "hw"), "ok", "{what}");
        let path = agent.path().join("plugins/hw.wasm");
        change(&path, &original, &mut next);
        let now = std::fs::read(&path).unwrap();
        match proem::Assembler::open(agent.path(), None) {
            Ok(assembler) => {
                assert_eq!(now, original, "{what}: changed bytes passed the pin");
                assert_eq!(plugin_status(&assembler.build(&turn()).unwrap(), "hw"), "ok", "{what}");
            }
            Err(e) => {
                assert_ne!(now, original, "{what}: the same bytes were refused: {e}");
                assert!(e.to_string().contains("the binary changed"), "{what}: {e}");
            }
        }
    }
}

/// `wasm` with a custom section `name` holding `data` appended: what the
/// Python and JS templates' builds do with config.schema.json.
fn with_section(wasm: &[u8], name: &str, data: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    push_leb(&mut body, name.len());
    body.extend_from_slice(name.as_bytes());
    body.extend_from_slice(data);
    let mut out = wasm.to_vec();
    push_section(&mut out, 0, &body);
    out
}

const PERSONALITY_SCHEMA: &str = r#"{"type": "object", "properties": {"personality": {"enum": ["off", "friendly"]},
    "n": {"type": "integer", "minimum": 0, "maximum": 10}}, "additionalProperties": false}"#;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// An entry's config is checked against the schema its plugin declares
    /// when the agent loads: a config the schema admits loads, any other
    /// leaves the plugin out of every build with one message naming the
    /// entry's proem.toml line, the config key and the schema keyword.
    #[test]
    fn a_config_is_checked_against_the_plugins_schema_at_load(
        n in -5i64..15,
        personality in proptest::sample::select(vec!["off", "friendly", "loud"]),
        extra in proptest::option::of("[a-z]{1,6}"),
    ) {
        plugin_env();
        let agent = tempfile::tempdir().unwrap();
        let wasm = with_section(&guest_wasm("gpt5-overlay"), "proem:config-schema", PERSONALITY_SCHEMA.as_bytes());
        std::fs::create_dir_all(agent.path().join("plugins")).unwrap();
        std::fs::write(agent.path().join("plugins/p.wasm"), &wasm).unwrap();
        let extra_line = extra.as_ref().filter(|k| *k != "n" && *k != "personality").map(|k| format!("{k} = 1\n")).unwrap_or_default();
        let config = format!(
            "[agent]\nid = \"x\"\n\n[[plugins]]\nid = \"p\"\npath = \"plugins/p.wasm\"\n\n[plugins.config]\npersonality = \"{personality}\"\nn = {n}\n{extra_line}"
        );
        std::fs::write(agent.path().join("proem.toml"), config).unwrap();
        let admitted = (0..=10).contains(&n) && personality != "loud" && extra_line.is_empty();
        let built = proem::Assembler::open(agent.path(), None).unwrap().build(&turn()).unwrap();
        let said: Vec<&str> = built.diagnostics.iter().map(|d| d.message.as_str()).filter(|m| m.contains("does not match the schema")).collect();
        if admitted {
            prop_assert_eq!(plugin_status(&built, "p"), "ok");
            prop_assert!(said.is_empty(), "{:?}", said);
        } else {
            prop_assert_ne!(plugin_status(&built, "p"), "ok");
            prop_assert_eq!(said.len(), 1, "{:?}", said);
            prop_assert!(said[0].contains("at line 5 of proem.toml"), "{}", said[0]);
            if !(0..=10).contains(&n) {
                prop_assert!(said[0].contains("config.n is ") && said[0].contains("/properties/n/m"), "{}", said[0]);
            }
            if personality == "loud" {
                prop_assert!(said[0].contains("config.personality is \"loud\"") && said[0].contains("/properties/personality/enum"), "{}", said[0]);
            }
        }
    }
}

/// A hostile or broken schema section never loads the plugin and never
/// panics: the message names the section and where in the schema.
#[test]
fn a_schema_outside_proems_subset_is_refused_naming_the_section_and_the_path() {
    plugin_env();
    let deep = (0..40).fold(String::from("{}"), |inner, _| format!("{{\"items\": {inner}}}"));
    let huge = format!("{{\"description\": \"{}\"}}", "x".repeat(70_000));
    let cases: [(&str, &str); 5] = [
        (r##"{"properties": {"a": {"$ref": "#"}}}"##, "/properties/a: `$ref` is not supported"),
        (&deep, "nested deeper than 16 schemas"),
        (&huge, "over the 65536 byte limit"),
        ("not json", "not JSON"),
        (r#"{"type": 1}"#, "/type: a type name"),
    ];
    for (schema, expected) in cases {
        let dir = tempfile::tempdir().unwrap();
        let wasm = with_section(&guest_wasm("gpt5-overlay"), "proem:config-schema", schema.as_bytes());
        std::fs::write(dir.path().join("p.wasm"), &wasm).unwrap();
        let out = full().current_dir(dir.path()).args(["plugin", "check", "p.wasm"]).output().unwrap();
        let report = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{report}");
        assert!(report.contains("proem:config-schema") && report.contains(expected), "{expected}: {report}");
    }
}

/// `plugin check --config FILE` checks the file against the schema, naming
/// --config, the key and the schema keyword; without a schema it says the
/// config is not checked.
#[test]
fn plugin_check_config_checks_a_file_against_the_declared_schema() {
    let dir = tempfile::tempdir().unwrap();
    let wasm = with_section(&guest_wasm("gpt5-overlay"), "proem:config-schema", PERSONALITY_SCHEMA.as_bytes());
    std::fs::write(dir.path().join("p.wasm"), &wasm).unwrap();
    std::fs::write(dir.path().join("plain.wasm"), guest_wasm("gpt5-overlay")).unwrap();
    std::fs::write(dir.path().join("good.toml"), "personality = \"friendly\"\n").unwrap();
    std::fs::write(dir.path().join("bad.json"), r#"{"personality": "loud", "n": 99}"#).unwrap();
    let check = |args: &[&str]| {
        let out = full().current_dir(dir.path()).args(["plugin", "check"]).args(args).output().unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let (code, report) = check(&["p.wasm", "--config", "good.toml"]);
    assert_eq!(code, Some(0), "{report}");
    assert!(report.contains("--config good.toml matches the config schema"), "{report}");
    let (code, report) = check(&["p.wasm", "--config", "bad.json"]);
    assert_eq!(code, Some(1), "{report}");
    assert!(report.contains("(--config) does not match"), "{report}");
    assert!(report.contains("config.n is 99, over the maximum 10 (schema /properties/n/maximum)"), "{report}");
    assert!(report.contains("config.personality is \"loud\""), "{report}");
    let (code, report) = check(&["plain.wasm"]);
    assert_eq!(code, Some(0), "{report}");
    assert!(report.contains("declares no config schema"), "{report}");
}
