//! `proem plugin new NAME`: a standalone plugin crate that builds with
//! `cargo build --release --target wasm32-wasip2` on a fresh machine (its
//! own rust-toolchain.toml lists the target, so rustup installs it).

use std::path::{Path, PathBuf};

/// What a new plugin does, one piece per `--hooks` name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScaffoldHook {
    /// `stable` (or `sections`): a stable hook adding a section.
    Sections,
    /// `overlay`: a stable hook adding a prefix for one provider.
    Overlay,
    /// `turn`: a turn hook adding a section below the cache boundary.
    Turn,
    /// `bootstrap`: an `agent:bootstrap` hook.
    Bootstrap,
}

/// The names `--hooks` takes.
pub const HOOK_NAMES: &str = "stable (or sections), overlay, turn, bootstrap";

impl ScaffoldHook {
    /// Parses one `--hooks` name.
    pub fn parse(name: &str) -> Result<ScaffoldHook, String> {
        match name.trim() {
            "stable" | "sections" => Ok(ScaffoldHook::Sections),
            "overlay" => Ok(ScaffoldHook::Overlay),
            "turn" => Ok(ScaffoldHook::Turn),
            "bootstrap" => Ok(ScaffoldHook::Bootstrap),
            other => Err(format!("unknown hook {other:?}: expected {HOOK_NAMES}")),
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
        None => format!("proem-sdk = \"{}\"", env!("CARGO_PKG_VERSION").rsplit_once('.').map_or("0.2", |(mm, _)| mm)),
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
    let has = |h: ScaffoldHook| hooks.contains(&h);
    let stable = has(ScaffoldHook::Sections) || has(ScaffoldHook::Overlay);
    let mut uses = vec!["Plugin"];
    let mut code = format!("#[derive(Default)]\nstruct {type_name};\n\nimpl Plugin for {type_name} {{}}\n");
    let mut tests = String::new();
    if stable {
        uses.extend(["AgentContext", "File", "StableHook", "StableOutput"]);
        let mut body = String::from("        let mut out = StableOutput::default();\n");
        if has(ScaffoldHook::Sections) {
            uses.push("Section");
            body.push_str(STABLE_SECTION);
        }
        if has(ScaffoldHook::Overlay) {
            body.push_str(STABLE_PREFIX);
        }
        code.push_str(&format!(
            "\n/// Above the cache boundary: sees only what stays the same for a session.\nimpl StableHook for {type_name} {{\n    fn stable(&self, ctx: &AgentContext, _files: &[File]) -> Result<StableOutput, String> {{\n{body}        Ok(out)\n    }}\n}}\n"
        ));
        if has(ScaffoldHook::Sections) {
            tests.push_str(&STABLE_SECTION_TEST.replace("{T}", &type_name));
        }
        if has(ScaffoldHook::Overlay) {
            tests.push_str(&STABLE_PREFIX_TEST.replace("{T}", &type_name));
        }
    }
    if has(ScaffoldHook::Turn) {
        uses.extend(["TurnContext", "TurnHook", "TurnOutput"]);
        if !uses.contains(&"Section") {
            uses.push("Section");
        }
        code.push_str(&TURN_HOOK.replace("{T}", &type_name));
        tests.push_str(&TURN_TEST.replace("{T}", &type_name));
    }
    if has(ScaffoldHook::Bootstrap) {
        uses.push("BootstrapHook");
        for u in ["AgentContext", "File"] {
            if !uses.contains(&u) {
                uses.push(u);
            }
        }
        code.push_str(&BOOTSTRAP_HOOK.replace("{T}", &type_name));
        tests.push_str(&BOOTSTRAP_TEST.replace("{T}", &type_name));
    }
    uses.sort_unstable();
    format!(
        "//! {name}: a proem plugin. The hooks it implements are the traits it\n//! implements; `register_plugin!` finds them.\n\nuse proem_sdk::{{{}}};\n\n{code}\nproem_sdk::register_plugin!({type_name});\n\n#[cfg(test)]\nmod tests {{\n    use super::*;\n{tests}}}\n",
        uses.join(", ")
    )
}

const STABLE_SECTION: &str = r###"        // A section after Safety, from the operator's config.
        let note = ctx.config_str("note").unwrap_or("Hello from a proem plugin.");
        out = out.section(Section::after("safety", "note", format!("## Note\n{note}")));
"###;

const STABLE_PREFIX: &str = r###"        // A line at the top of the prompt, for one provider only.
        if ctx.provider.as_deref() == Some("openai") {
            out = out.prefix("Answer in plain prose.");
        }
"###;

const TURN_HOOK: &str = r###"
/// Below the cache boundary: sees the turn (time, channel, chat, extra).
impl TurnHook for {T} {
    fn turn(&self, ctx: &TurnContext) -> Result<TurnOutput, String> {
        let Some(channel) = &ctx.channel else { return Ok(TurnOutput::default()) };
        let body = format!("## Channel Note\nThis turn arrived on {channel} at {}.", ctx.now.local_time());
        Ok(TurnOutput::default().section(Section::after("time", "channel_note", body)))
    }
}
"###;

const BOOTSTRAP_HOOK: &str = r###"
/// Sees the stable workspace files before they are rendered; returns them (changed or not).
impl BootstrapHook for {T} {
    fn bootstrap(&self, _ctx: &AgentContext, files: Vec<File>) -> Result<Vec<File>, String> {
        Ok(files)
    }
}
"###;

const STABLE_SECTION_TEST: &str = r###"
    #[test]
    fn it_adds_its_note() {
        let ctx = AgentContext::builder().config(proem_sdk::serde_json::json!({"note": "Be kind."})).build();
        let out = {T}.stable(&ctx, &[]).unwrap();
        assert!(out.sections[0].body.contains("Be kind."));
    }
"###;

const STABLE_PREFIX_TEST: &str = r###"
    #[test]
    fn the_prefix_is_for_openai_only() {
        let openai = AgentContext::builder().model("openai", "gpt-5").build();
        assert!({T}.stable(&openai, &[]).unwrap().prefix.is_some());
        assert!({T}.stable(&AgentContext::default(), &[]).unwrap().prefix.is_none());
    }
"###;

const TURN_TEST: &str = r###"
    #[test]
    fn it_notes_the_channel() {
        let ctx = TurnContext::builder().channel("telegram", proem_sdk::ChatKind::Direct).build();
        let out = {T}.turn(&ctx).unwrap();
        assert!(out.sections[0].body.contains("telegram at 00:00"));
        assert!({T}.turn(&TurnContext::default()).unwrap().sections.is_empty());
    }
"###;

const BOOTSTRAP_TEST: &str = r###"
    #[test]
    fn bootstrap_keeps_the_files() {
        let files = vec![File::new("SOUL.md", "calm")];
        assert_eq!({T}.bootstrap(&AgentContext::default(), files).unwrap().len(), 1);
    }
"###;

fn readme(name: &str) -> String {
    let file = name.replace('-', "_");
    format!(
        "# {name}\n\nA proem plugin.\n\n```sh\ncargo build --release --target wasm32-wasip2\nproem plugin check target/wasm32-wasip2/release/{file}.wasm\n```\n\nThen copy the .wasm into an agent's `plugins/` folder and add to its proem.toml:\n\n```toml\n[[plugins]]\nid = \"{name}\"\npath = \"plugins/{file}.wasm\"\n```\n"
    )
}
