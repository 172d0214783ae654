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
    let mut ok = true;
    let mut problem = |text: &mut String, what: String| {
        ok = false;
        let _ = writeln!(text, "problem  {what}");
    };
    let bytes = match crate::workspace::read_regular_file(path, crate::plugin::set::MAX_PLUGIN_BYTES) {
        Ok(b) => b,
        Err(e) => {
            problem(&mut text, format!("{}: cannot read: {e}", path.display()));
            return CheckReport { text, ok: false };
        }
    };
    let _ = writeln!(text, "file     {} ({} bytes)", path.display(), bytes.len());
    let api = match binary::check(&bytes) {
        Ok(api) => {
            let _ = writeln!(text, "ok       a component for proem plugin API {api}");
            api
        }
        Err(why) => {
            problem(&mut text, why);
            return CheckReport { text, ok: false };
        }
    };
    let (imports, exports) = binary::interfaces(&bytes);
    let _ = writeln!(text, "ok       imports: {}", if imports.is_empty() { "none".into() } else { imports.join(", ") });
    // Load it the way an agent would (no grants, default limits), from a
    // folder holding only this file.
    let dir = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => {
            problem(&mut text, format!("cannot make a scratch folder: {e}"));
            return CheckReport { text, ok: false };
        }
    };
    if let Err(e) = std::fs::write(dir.path().join("plugin.wasm"), &bytes) {
        problem(&mut text, format!("cannot copy the plugin: {e}"));
        return CheckReport { text, ok: false };
    }
    let config = PluginConfig { id: "checked".into(), path: Some("plugin.wasm".into()), ..PluginConfig::default() };
    let set = match PluginSet::load_with_cache(&[config], dir.path(), None) {
        Ok(set) => set,
        Err(e) => {
            problem(&mut text, e.to_string());
            return CheckReport { text, ok: false };
        }
    };
    let Some(plugin) = set.plugins().first() else {
        problem(&mut text, "nothing was loaded".into());
        return CheckReport { text, ok: false };
    };
    let info = match &plugin.state {
        Ok(ready) => ready.info.clone(),
        Err(why) => {
            problem(&mut text, format!("does not load: {why}"));
            return CheckReport { text, ok: false };
        }
    };
    let _ = writeln!(
        text,
        "ok       describe: id {}, version {}, hooks {}, asks for {}",
        info.id,
        info.version,
        info.hooks(),
        if info.capabilities.is_empty() { "nothing".into() } else { info.capabilities.join(", ") }
    );
    let major_minor: String = api.split('.').take(2).collect::<Vec<_>>().join(".");
    for (declared, hook) in [(info.sections, "sections"), (info.overlay, "overlay"), (info.bootstrap, "bootstrap")] {
        let exported = exports.iter().any(|e| e.starts_with(&format!("proem:plugin/{hook}@{major_minor}")));
        if declared && !exported {
            problem(
                &mut text,
                format!("declares the {hook} hook but does not export proem:plugin/{hook}: rebuild with proem-sdk, or export the interface"),
            );
        }
    }
    if !info.sections && !info.overlay && !info.bootstrap {
        problem(
            &mut text,
            "declares no hook, so proem never calls it: list the hooks it implements in `const HOOKS` (e.g. &[Hook::Sections])"
                .into(),
        );
    }
    for cap in &info.capabilities {
        if crate::plugin::GRANT_NAMES.contains(&cap.as_str()) {
            let _ = writeln!(
                text,
                "note     asks for {cap}: the operator grants it with grants = [\"{cap}\"] in its [[plugins]] entry"
            );
        }
    }
    if ok {
        let _ = writeln!(text, "ok       loads in this proem");
    }
    CheckReport { text, ok }
}
