//! `proem plugin check FILE.wasm`: everything proem checks when it loads a
//! plugin, run on one file, each problem said with its fix.

use proem_core::config::PluginConfig;
use proem_wasm::binary;
use std::fmt::Write;
use std::path::Path;

/// The report, and whether every check passed.
pub struct CheckReport {
    /// One line per check.
    pub text: String,
    /// Whether the plugin loads and is consistent.
    pub ok: bool,
}

/// Checks a plugin binary: a component, an API version this proem
/// supports, only imports proem provides, `describe` answering, every hook
/// it declares exported, and (with `config`, a `--config` file as `plugin
/// run` reads one) that config against the schema the plugin declares.
pub fn check(path: &Path, config: Option<&Path>) -> CheckReport {
    let mut text = String::new();
    let ok = match run(path, config, &mut text) {
        Ok(problems) => problems == 0,
        Err(fatal) => {
            let _ = writeln!(text, "problem  {fatal}");
            false
        }
    };
    if ok {
        let _ = writeln!(text, "ok       loads in this proem");
    }
    CheckReport { text, ok }
}

/// The checks, written to `text`: `Err` is a problem that stops them,
/// `Ok` counts the problems found after loading.
fn run(path: &Path, config_file: Option<&Path>, text: &mut String) -> Result<usize, String> {
    let shown = path.display().to_string();
    let bytes = proem_core::disk::read_regular_file(path, proem_core::plugin::set::MAX_PLUGIN_BYTES)
        .map_err(|e| format!("{shown}: cannot read: {e}"))?;
    let _ = writeln!(text, "file     {shown} ({} bytes)", bytes.len());
    let api = binary::check(&bytes).map_err(|e| format!("{shown}: {e}"))?;
    let _ = writeln!(text, "ok       a component for proem plugin API {api}");
    let (imports, exports) = binary::interfaces(&bytes);
    let _ = writeln!(text, "ok       imports: {}", if imports.is_empty() { "none".into() } else { imports.join(", ") });
    write_denied(text, &imports);
    // Load it the way an agent would (no grants, default limits, compiled
    // through proem's cache, so the add and build that follow start warm),
    // from a scratch folder holding only a copy of it; what the loader says
    // about the copy is said of the file itself.
    let dir = tempfile::tempdir().map_err(|e| format!("cannot make a scratch folder: {e}"))?;
    std::fs::write(dir.path().join(SCRATCH_FILE), &bytes).map_err(|e| format!("cannot copy the plugin: {e}"))?;
    let table = config_file.map(crate::run::read_config).transpose()?;
    let config = PluginConfig {
        id: SCRATCH_ID.into(),
        path: Some(SCRATCH_FILE.into()),
        config: table,
        ..PluginConfig::default()
    };
    // The loader's own warning would say the same as the problem line, of the copy.
    let loaded = tracing::subscriber::with_default(tracing::subscriber::NoSubscriber::default(), || {
        proem::load_plugins(&[config], dir.path(), proem_core::cache_dir::default_path().as_deref())
    });
    let set = loaded.map_err(|e| format!("{shown}: {}", of_the_file(&e.to_string())))?;
    let plugin = set.plugins().first().ok_or("nothing was loaded")?;
    let (info, schema) = match &plugin.state {
        Ok(ready) => (ready.info.clone(), ready.config_schema.is_some()),
        Err(why) => return Err(format!("{shown}: does not load: {}", of_the_file(why))),
    };
    let section = proem_core::plugin::config_schema::SECTION;
    match (schema, config_file) {
        (true, Some(file)) => {
            let _ = writeln!(text, "ok       --config {} matches the config schema it declares", file.display());
        }
        (true, None) => {
            let _ = writeln!(text, "ok       declares a config schema ({section}); an empty config matches it");
        }
        (false, _) => {
            let _ = writeln!(
                text,
                "note     declares no config schema (custom section {section}): its [[plugins]] config is not checked"
            );
        }
    }
    let _ = writeln!(
        text,
        "ok       describe: id {}, version {}, hooks {}, asks for {}",
        info.id,
        info.version,
        info.hooks(),
        if info.capabilities.is_empty() { "nothing".into() } else { info.capabilities.join(", ") }
    );
    let mut problems = Vec::new();
    // `binary::check` accepted the version, so it parses.
    let version = proem_wasm::wit::ApiVersion::parse(&api).unwrap_or(proem_wasm::wit::ApiVersion::CURRENT);
    for hook in version.hooks() {
        let exported = exports.iter().any(|e| e.starts_with(&format!("proem:plugin/{}@{version}", hook.interface())));
        if info.declares(*hook) && !exported {
            let interface = hook.interface();
            problems.push(format!(
                "declares the {interface} hook but does not export proem:plugin/{interface}: rebuild with proem-sdk, or export the interface"
            ));
        }
    }
    if version.hooks().iter().all(|hook| !info.declares(*hook)) {
        problems.push(
            "declares no hook, so proem never calls it: implement StableHook, TurnHook or BootstrapHook \
             (proem-sdk's register_plugin! declares the ones implemented)"
                .into(),
        );
    }
    // Call every hook once with a sample turn, declared or not.
    let files = sample_files();
    for (_, probes) in set.probe_hooks(&proem_core::plugin::BuildContext::sample(), &files) {
        for probe in probes {
            match (&probe.answer, probe.declared) {
                (Err(why), true) => {
                    problems.push(format!("the {} hook fails on a sample turn: {why}", probe.hook.interface()))
                }
                (Ok(true), false) => problems.push(format!(
                    "implements the {} hook (it answers a sample turn) but does not declare it, so proem never \
                     calls it: add it to plugin-info.hooks (proem-sdk's register_plugin! does this for every hook \
                     trait implemented)",
                    probe.hook.interface()
                )),
                (Ok(answered), true) => {
                    let _ = writeln!(
                        text,
                        "ok       {} hook answers a sample turn{}",
                        probe.hook.interface(),
                        if *answered { "" } else { " (with nothing for it)" }
                    );
                }
                _ => {}
            }
        }
    }
    // Build a sample turn with the plugin required: what proem says about
    // its output (an id taken from a core section, invalid sections) is a
    // problem here.
    problems.extend(sample_build(dir.path(), &files));
    for problem in &problems {
        let _ = writeln!(text, "problem  {problem}");
    }
    for cap in info.capabilities.iter().filter(|c| proem_core::plugin::GRANT_NAMES.contains(&c.as_str())) {
        let _ = writeln!(
            text,
            "note     asks for {cap}: the operator grants it with grants = [\"{cap}\"] in its [[plugins]] entry"
        );
    }
    Ok(problems.len())
}

/// The scratch copy's name and id: what the loader's messages name, which
/// [`of_the_file`] takes out.
const SCRATCH_FILE: &str = "plugin.wasm";
const SCRATCH_ID: &str = "checked";

/// A loader's message about the scratch copy, said of the file: without
/// the copy's name (`plugin.wasm: `) or its id (`plugin checked `), which
/// the caller replaces with the real path.
fn of_the_file(message: &str) -> String {
    let message = message.strip_prefix(&format!("{SCRATCH_FILE}: ")).unwrap_or(message);
    message
        .replace(&format!("plugin {SCRATCH_ID} "), "the plugin ")
        .replace(&format!("{SCRATCH_FILE}: "), "")
        .replace(&format!("([[plugins]] id = {SCRATCH_ID:?} of proem.toml)"), "(--config)")
}

/// One line per kind of denial among the imports: the stubs and the
/// interfaces the sandbox's policy denies, with what a call gets.
fn write_denied(text: &mut String, imports: &[String]) {
    let denied = binary::denied_imports(imports);
    let mut kinds: Vec<&str> = Vec::new();
    for (_, how) in &denied {
        if !kinds.contains(how) {
            kinds.push(how);
        }
    }
    for how in kinds {
        let names: Vec<&str> = denied.iter().filter(|(_, h)| *h == how).map(|(n, _)| n.as_str()).collect();
        let stub =
            if names.iter().any(|n| proem_wasm::stubs::is_stubbed(n)) { "linked as denied stubs" } else { "denied" };
        let _ = writeln!(text, "denied   {}: {stub} ({how})", names.join(", "));
    }
}

/// The bootstrap files of the sample turn hooks are called on (`plugin
/// check`, `proem plugins AGENT_DIR`).
pub fn sample_files() -> Vec<proem_core::bootstrap::BootstrapFile> {
    let file = |name: &str, text: &str| proem_core::bootstrap::BootstrapFile::new(name, Some(text.into()));
    vec![file("AGENTS.md", "# Agents\nWork carefully."), file("SOUL.md", "# Soul\nCalm and precise.")]
}

/// Builds one sample turn in `dir` (which holds the scratch copy) and returns
/// what the report says about the plugin as problems.
fn sample_build(dir: &Path, files: &[proem_core::bootstrap::BootstrapFile]) -> Vec<String> {
    for f in files {
        let _ = std::fs::write(dir.join(&f.name), f.text().unwrap_or(""));
    }
    let toml = format!("[[plugins]]\nid = \"{SCRATCH_ID}\"\npath = \"{SCRATCH_FILE}\"\n");
    if std::fs::write(dir.join("proem.toml"), toml).is_err() {
        return vec!["cannot write a sample agent".into()];
    }
    let sample = proem_core::plugin::BuildContext::sample();
    let tools: Vec<proem_core::turn::Tool> = sample
        .tools
        .iter()
        .map(|t| proem_core::turn::Tool {
            name: t.name.clone(),
            description: t.description.clone(),
            parameters: None,
            server: None,
        })
        .collect();
    let turn = proem::Turn {
        provider: sample.provider.clone(),
        model: sample.model.clone(),
        channel: sample.channel.clone(),
        chat_kind: Some(proem_core::turn::ChatKind::Group),
        group_title: sample.group_title.clone(),
        tools: Some(tools.into()),
        now: proem_core::turn::parse_now(&sample.now).ok(),
        timezone: Some(sample.timezone.clone()),
        ..proem::Turn::default()
    };
    let assembler = match proem::Assembler::open(dir, None) {
        Ok(a) => a,
        Err(e) => return vec![format!("a sample agent with it does not open: {e}")],
    };
    match assembler.build(&turn) {
        Err(e) => vec![format!("a sample build fails: {e}")],
        Ok(built) => built
            .diagnostics
            .iter()
            // A grant asked for is no problem of the plugin's (the note
            // below says how an operator gives it).
            .filter(|d| d.level != proem_core::report::Level::Info && d.code != "plugin_grant_missing")
            .filter(|d| d.message.contains(SCRATCH_ID))
            .map(|d| format!("on a sample turn: {} ({})", of_the_file(&d.message), d.code))
            .collect(),
    }
}
