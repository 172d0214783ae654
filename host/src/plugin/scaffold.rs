//! `proem plugin new NAME`: a standalone plugin crate that builds with
//! `cargo build --release --target wasm32-wasip2` on a fresh machine (its
//! own rust-toolchain.toml lists the target, so rustup installs it).

use std::path::{Path, PathBuf};

/// The hooks a new plugin implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScaffoldHook {
    /// `sections`.
    Sections,
    /// `overlay`.
    Overlay,
    /// `agent:bootstrap`.
    Bootstrap,
}

impl ScaffoldHook {
    /// Parses `sections`, `overlay` or `bootstrap`.
    pub fn parse(name: &str) -> Result<ScaffoldHook, String> {
        match name.trim() {
            "sections" => Ok(ScaffoldHook::Sections),
            "overlay" => Ok(ScaffoldHook::Overlay),
            "bootstrap" => Ok(ScaffoldHook::Bootstrap),
            other => Err(format!("unknown hook {other:?}: expected sections, overlay or bootstrap")),
        }
    }
}

/// Writes the crate `name` into `parent/name`. `sdk_path` depends on a
/// local proem-sdk instead of the published one. Refuses an existing
/// folder and a name that is not a crate name.
pub fn new_plugin(
    parent: &Path,
    name: &str,
    hooks: &[ScaffoldHook],
    sdk_path: Option<&Path>,
) -> Result<PathBuf, String> {
    let valid = !name.is_empty()
        && name.len() <= 64
        && name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if !valid {
        return Err(format!("{name:?} is not a plugin name: use 1-64 of a-z, 0-9, - and _, starting with a letter"));
    }
    let dir = parent.join(name);
    if dir.exists() {
        return Err(format!("{} already exists; pick another name or folder", dir.display()));
    }
    let hooks: Vec<ScaffoldHook> = if hooks.is_empty() { vec![ScaffoldHook::Sections] } else { hooks.to_vec() };
    let sdk = match sdk_path {
        Some(path) => {
            let path = std::fs::canonicalize(path).map_err(|e| format!("{}: {e}", path.display()))?;
            format!("proem-sdk = {{ path = {:?} }}", path.display().to_string())
        }
        None => format!("proem-sdk = \"{}\"", env!("CARGO_PKG_VERSION").rsplit_once('.').map_or("0.1", |(mm, _)| mm)),
    };
    let files = [
        ("Cargo.toml", cargo_toml(name, &sdk)),
        ("rust-toolchain.toml", TOOLCHAIN.to_string()),
        ("src/lib.rs", lib_rs(name, &hooks)),
        (".gitignore", "/target\n".to_string()),
        ("README.md", readme(name)),
    ];
    for (file, text) in files {
        let path = dir.join(file);
        std::fs::create_dir_all(path.parent().expect("a file in the crate"))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(dir)
}

const TOOLCHAIN: &str = "# The wasm32-wasip2 target is listed, so rustup installs it with the toolchain.\n[toolchain]\nchannel = \"1.95\"\ntargets = [\"wasm32-wasip2\"]\nprofile = \"minimal\"\n";

fn cargo_toml(name: &str, sdk: &str) -> String {
    format!(
        "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
         # A cdylib is what becomes the .wasm component; rlib lets native unit tests link it.\n\
         [lib]\ncrate-type = [\"cdylib\", \"rlib\"]\n\n[dependencies]\n{sdk}\n\n\
         [profile.release]\nopt-level = \"s\"\nlto = true\n\n\
         # A crate of its own, even inside another workspace.\n[workspace]\n"
    )
}

fn lib_rs(name: &str, hooks: &[ScaffoldHook]) -> String {
    let type_name: String = name
        .split(['-', '_'])
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut c = p.chars();
            c.next().map(|f| f.to_ascii_uppercase().to_string() + c.as_str()).unwrap_or_default()
        })
        .collect();
    let listed: Vec<&str> = hooks
        .iter()
        .map(|h| match h {
            ScaffoldHook::Sections => "Hook::Sections",
            ScaffoldHook::Overlay => "Hook::Overlay",
            ScaffoldHook::Bootstrap => "Hook::Bootstrap",
        })
        .collect();
    let mut uses = vec!["Context", "Hook", "Plugin"];
    let mut body = String::new();
    if hooks.contains(&ScaffoldHook::Sections) {
        uses.push("Section");
        body.push_str(
            "\n    /// Adds a section after Safety (stable: no per-turn data in it).\n    fn sections(&self, ctx: &Context) -> Result<Vec<Section>, String> {\n        let note = ctx.config_str(\"note\").unwrap_or(\"Hello from a proem plugin.\");\n        Ok(vec![Section::after(\"safety\", \"note\", format!(\"## Note\\n{note}\"))])\n    }\n",
        );
    }
    if hooks.contains(&ScaffoldHook::Overlay) {
        uses.push("Overlay");
        body.push_str(
            "\n    /// Adds a line to the stable prefix for one provider.\n    fn overlay(&self, ctx: &Context) -> Result<Option<Overlay>, String> {\n        if ctx.provider.as_deref() != Some(\"openai\") {\n            return Ok(None);\n        }\n        Ok(Some(Overlay::default().stable_prefix(\"Answer in plain prose.\")))\n    }\n",
        );
    }
    if hooks.contains(&ScaffoldHook::Bootstrap) {
        uses.push("File");
        body.push_str(
            "\n    /// Sees the workspace files before they are rendered; returns them (changed or not).\n    fn bootstrap(&self, _ctx: &Context, files: Vec<File>) -> Result<Vec<File>, String> {\n        Ok(files)\n    }\n",
        );
    }
    uses.sort();
    let mut tests = String::new();
    if hooks.contains(&ScaffoldHook::Sections) {
        tests.push_str(&format!(
            "\n    #[test]\n    fn it_adds_its_note() {{\n        let ctx = Context::builder().config(proem_sdk::serde_json::json!({{\"note\": \"Be kind.\"}})).build();\n        let sections = {type_name}.sections(&ctx).unwrap();\n        assert_eq!(sections.len(), 1);\n    }}\n"
        ));
    }
    if hooks.contains(&ScaffoldHook::Overlay) {
        tests.push_str(&format!(
            "\n    #[test]\n    fn the_overlay_is_for_openai_only() {{\n        let openai = Context::builder().model(\"openai\", \"gpt-5\").build();\n        assert!({type_name}.overlay(&openai).unwrap().is_some());\n        assert!({type_name}.overlay(&Context::default()).unwrap().is_none());\n    }}\n"
        ));
    }
    if hooks.contains(&ScaffoldHook::Bootstrap) {
        tests.push_str(&format!(
            "\n    #[test]\n    fn bootstrap_keeps_the_files() {{\n        let files = vec![File::new(\"SOUL.md\", \"calm\")];\n        assert_eq!({type_name}.bootstrap(&Context::default(), files).unwrap().len(), 1);\n    }}\n"
        ));
    }
    format!(
        "//! {name}: a proem plugin.\n\nuse proem_sdk::{{{}}};\n\n#[derive(Default)]\nstruct {type_name};\n\nimpl Plugin for {type_name} {{\n    const HOOKS: &'static [Hook] = &[{}];\n{body}}}\n\nproem_sdk::register_plugin!({type_name});\n\n#[cfg(test)]\nmod tests {{\n    use super::*;\n{tests}}}\n",
        uses.join(", "),
        listed.join(", ")
    )
}

fn readme(name: &str) -> String {
    let file = name.replace('-', "_");
    format!(
        "# {name}\n\nA proem plugin.\n\n```sh\ncargo build --release --target wasm32-wasip2\nproem plugin check target/wasm32-wasip2/release/{file}.wasm\n```\n\nThen copy the .wasm into an agent's `plugins/` folder and add to its proem.toml:\n\n```toml\n[[plugins]]\nid = \"{name}\"\npath = \"plugins/{file}.wasm\"\n```\n"
    )
}
