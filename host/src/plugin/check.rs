//! `proem plugin check FILE.wasm`: everything proem checks when it loads a
//! plugin, run on one file, each problem said with its fix.

use crate::config::PluginConfig;
use crate::plugin::{binary, set::PluginSet};
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
/// it declares exported.
pub fn check(path: &Path) -> CheckReport {
    let mut text = String::new();
    let ok = match run(path, &mut text) {
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
fn run(path: &Path, text: &mut String) -> Result<usize, String> {
    let bytes = crate::workspace::read_regular_file(path, crate::plugin::set::MAX_PLUGIN_BYTES)
        .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    let _ = writeln!(text, "file     {} ({} bytes)", path.display(), bytes.len());
    let api = binary::check(&bytes)?;
    let _ = writeln!(text, "ok       a component for proem plugin API {api}");
    let (imports, exports) = binary::interfaces(&bytes);
    let _ = writeln!(text, "ok       imports: {}", if imports.is_empty() { "none".into() } else { imports.join(", ") });
    // Load it the way an agent would (no grants, default limits), from a
    // folder holding only this file.
    let dir = tempfile::tempdir().map_err(|e| format!("cannot make a scratch folder: {e}"))?;
    std::fs::write(dir.path().join("plugin.wasm"), &bytes).map_err(|e| format!("cannot copy the plugin: {e}"))?;
    let config = PluginConfig { id: "checked".into(), path: Some("plugin.wasm".into()), ..PluginConfig::default() };
    let set = PluginSet::load_with_cache(&[config], dir.path(), None).map_err(|e| e.to_string())?;
    let plugin = set.plugins().first().ok_or("nothing was loaded")?;
    let info = match &plugin.state {
        Ok(ready) => ready.info.clone(),
        Err(why) => return Err(format!("does not load: {why}")),
    };
    let _ = writeln!(
        text,
        "ok       describe: id {}, version {}, hooks {}, asks for {}",
        info.id,
        info.version,
        info.hooks(),
        if info.capabilities.is_empty() { "nothing".into() } else { info.capabilities.join(", ") }
    );
    let mut problems = Vec::new();
    let major_minor: String = api.split('.').take(2).collect::<Vec<_>>().join(".");
    for (declared, hook) in [(info.sections, "sections"), (info.overlay, "overlay"), (info.bootstrap, "bootstrap")] {
        let exported = exports.iter().any(|e| e.starts_with(&format!("proem:plugin/{hook}@{major_minor}")));
        if declared && !exported {
            problems.push(format!(
                "declares the {hook} hook but does not export proem:plugin/{hook}: rebuild with proem-sdk, or export the interface"
            ));
        }
    }
    if !info.sections && !info.overlay && !info.bootstrap {
        problems.push(
            "declares no hook, so proem never calls it: list the hooks it implements in `const HOOKS` (e.g. &[Hook::Sections])"
                .into(),
        );
    }
    for problem in &problems {
        let _ = writeln!(text, "problem  {problem}");
    }
    for cap in info.capabilities.iter().filter(|c| crate::plugin::GRANT_NAMES.contains(&c.as_str())) {
        let _ = writeln!(
            text,
            "note     asks for {cap}: the operator grants it with grants = [\"{cap}\"] in its [[plugins]] entry"
        );
    }
    Ok(problems.len())
}
