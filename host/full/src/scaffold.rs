//! `proem plugin new NAME`: a standalone plugin crate that builds with
//! `cargo build --release --target wasm32-wasip2` on a fresh machine (its
//! own rust-toolchain.toml lists the target, so rustup installs it).

use std::path::{Path, PathBuf};

pub mod templates;

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

/// The language of a new plugin (`--lang`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    /// A crate on proem-sdk, built with cargo.
    Rust,
    /// componentize-py from PyPI.
    Python,
    /// componentize-qjs (QuickJS) from npm.
    Js,
}

impl Lang {
    /// Parses `--lang`.
    pub fn parse(name: &str) -> Result<Lang, String> {
        match name.trim() {
            "rust" | "rs" => Ok(Lang::Rust),
            "python" | "py" => Ok(Lang::Python),
            "js" | "javascript" => Ok(Lang::Js),
            other => Err(format!("unknown language {other:?}: expected rust, python or js")),
        }
    }

    /// What to run next in the new folder, one command a line.
    pub fn next_steps(self, name: &str) -> String {
        let wasm = templates::wasm_name(name);
        match self {
            Lang::Rust => format!(
                "  cargo build --release --target wasm32-wasip2\n  proem plugin check target/wasm32-wasip2/release/{wasm}\n"
            ),
            Lang::Python => format!("  sh build.sh\n  .venv/bin/python -m pytest -q\n  proem plugin check {wasm}\n"),
            Lang::Js => format!("  npm install\n  npm test\n  npm run build\n  proem plugin check {wasm}\n"),
        }
    }
}

/// Writes a plugin `name` in `lang` into `parent/name`: the Rust crate of
/// [`new_plugin`], or a Python or JavaScript folder
/// ([`crate::templates`]), under the same rules (a new folder of new
/// files, the same names refused). `--sdk-path` is Rust's only.
pub fn new_plugin_in(
    parent: &Path,
    name: &str,
    lang: Lang,
    hooks: &[ScaffoldHook],
    sdk_path: Option<&Path>,
) -> Result<PathBuf, String> {
    if lang == Lang::Rust {
        return new_plugin(parent, name, hooks, sdk_path);
    }
    check_name(name)?;
    if sdk_path.is_some() {
        return Err("--sdk-path is for Rust plugins (--lang rust); a Python or JS plugin needs no SDK".into());
    }
    let hooks: Vec<ScaffoldHook> = if hooks.is_empty() { vec![ScaffoldHook::Sections] } else { hooks.to_vec() };
    let files = match lang {
        Lang::Python => templates::python(name, &hooks),
        _ => templates::javascript(name, &hooks),
    };
    let dir = make_dir(parent, name)?;
    std::fs::create_dir(dir.join("wit")).map_err(|e| format!("{}: {e}", dir.join("wit").display()))?;
    for (file, text) in files {
        let path = dir.join(file);
        write_new(&path, &text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(dir)
}

/// Makes the new folder `parent/name`, refusing one that exists in any form.
fn make_dir(parent: &Path, name: &str) -> Result<PathBuf, String> {
    let dir = parent.join(name);
    std::fs::create_dir(&dir).map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => format!("{} already exists; pick another name or folder", dir.display()),
        _ => format!("{}: {e}", dir.display()),
    })?;
    Ok(dir)
}

/// Writes the crate `name` into `parent/name`. `sdk_path` depends on a
/// local proem-sdk instead of the published one. Refuses an existing
/// folder (or symlink), a name that is not a crate name (see
/// [`check_name`]) and an SDK path TOML cannot carry as it is (see
/// [`sdk_dependency`]). The folder is made new and every file created
/// new in it, so nothing existing is written through.
pub fn new_plugin(
    parent: &Path,
    name: &str,
    hooks: &[ScaffoldHook],
    sdk_path: Option<&Path>,
) -> Result<PathBuf, String> {
    check_name(name)?;
    let hooks: Vec<ScaffoldHook> = if hooks.is_empty() { vec![ScaffoldHook::Sections] } else { hooks.to_vec() };
    let sdk = match sdk_path {
        Some(path) => sdk_dependency(path)?,
        None => format!("proem-sdk = \"{}\"", env!("CARGO_PKG_VERSION").rsplit_once('.').map_or("0.2", |(mm, _)| mm)),
    };
    let dir = make_dir(parent, name)?;
    let files = [
        ("Cargo.toml", cargo_toml(name, &sdk)),
        ("rust-toolchain.toml", TOOLCHAIN.to_string()),
        ("src/lib.rs", lib_rs(name, &hooks)),
        (".gitignore", "/target\n".to_string()),
        ("README.md", readme(name)),
    ];
    std::fs::create_dir(dir.join("src")).map_err(|e| format!("{}: {e}", dir.join("src").display()))?;
    for (file, text) in files {
        let path = dir.join(file);
        write_new(&path, &text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(dir)
}

/// Creates `path`, which must not exist in any form (`O_EXCL` never
/// follows a symlink), with `text`.
fn write_new(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    std::fs::OpenOptions::new().write(true).create_new(true).open(path)?.write_all(text.as_bytes())
}

/// Names Rust reserves (every edition's keywords, strict and reserved):
/// cargo refuses them as package names.
const RUST_KEYWORDS: &[&str] = &[
    "abstract", "as", "async", "await", "become", "box", "break", "const", "continue", "crate", "do", "dyn", "else",
    "enum", "extern", "false", "final", "fn", "for", "gen", "if", "impl", "in", "let", "loop", "macro", "match", "mod",
    "move", "mut", "override", "priv", "pub", "ref", "return", "self", "static", "struct", "super", "trait", "true",
    "try", "type", "typeof", "unsafe", "unsized", "use", "virtual", "where", "while", "yield",
];

/// Crate names that collide with what a build already has: the standard
/// library's crates, cargo's own folders in `target/`, and the SDK the
/// plugin depends on.
const TAKEN_CRATE_NAMES: &[&str] =
    &["alloc", "core", "proc_macro", "std", "test", "build", "deps", "examples", "incremental", "proem_sdk"];

/// A plugin name is a crate name cargo accepts and the generated code can
/// use: 1-64 of a-z, 0-9, `-` and `_`, starting with a letter, and, with
/// `-` read as `_` (as cargo reads it), not a Rust keyword nor a crate the
/// build already has.
pub fn check_name(name: &str) -> Result<(), String> {
    let valid = !name.is_empty()
        && name.len() <= 64
        && name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if !valid {
        return Err(format!(
            "{:?} is not a plugin name: use 1-64 of a-z, 0-9, - and _, starting with a letter",
            proem_core::text::one_line(name, 80)
        ));
    }
    let as_crate = name.replace('-', "_");
    if RUST_KEYWORDS.contains(&as_crate.as_str()) {
        return Err(format!("{name:?} is a Rust keyword, which cargo refuses as a crate name: pick another name"));
    }
    if TAKEN_CRATE_NAMES.contains(&as_crate.as_str()) {
        return Err(format!(
            "{name:?} is the name of a crate every plugin build already has (std, core, alloc, proc_macro, \
             test, proem-sdk) or of a folder cargo keeps in target/: pick another name"
        ));
    }
    Ok(())
}

/// The `proem-sdk = { path = … }` line for a local SDK at `path`
/// (canonicalised). The path is written as a TOML string by the toml
/// crate, so quotes, backslashes and `]` stay inside it; a path with a
/// control character (a newline, an escape…) or that is not UTF-8 is
/// refused: TOML could escape the one and cannot hold the other, and no
/// real SDK checkout needs either.
pub fn sdk_dependency(path: &Path) -> Result<String, String> {
    let shown = || proem_core::text::one_line(&path.to_string_lossy(), 200);
    if let Some(c) = path.to_string_lossy().chars().find(|c| c.is_control()) {
        return Err(format!(
            "--sdk-path {:?}: has a control character (U+{:04X}); give the SDK folder by a path without one",
            shown(),
            c as u32
        ));
    }
    let canonical = std::fs::canonicalize(path).map_err(|e| format!("--sdk-path {:?}: {e}", shown()))?;
    let text = canonical.to_str().ok_or_else(|| {
        format!("--sdk-path {:?}: the folder's path is not UTF-8, which Cargo.toml cannot name", shown())
    })?;
    if let Some(c) = text.chars().find(|c| c.is_control()) {
        return Err(format!(
            "--sdk-path {:?}: its real path has a control character (U+{:04X}); move the SDK to a path without one",
            shown(),
            c as u32
        ));
    }
    Ok(format!("proem-sdk = {{ path = {} }}", toml::Value::String(text.to_string())))
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

/// The plugin's type in src/lib.rs: the name in CamelCase with `Plugin`
/// after it (`hello-notes` is `HelloNotesPlugin`), so no name can make a
/// type that clashes with a keyword (`self` is `SelfPlugin`), with the
/// prelude (`ok`, `result`) or with what lib.rs imports (`plugin`, `file`).
/// A name already ending in `plugin` keeps one (`gpio-plugin` is
/// `GpioPlugin`).
fn type_name(name: &str) -> String {
    let camel: String = name
        .split(['-', '_'])
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut c = p.chars();
            c.next().map(|f| f.to_ascii_uppercase().to_string() + c.as_str()).unwrap_or_default()
        })
        .collect();
    match camel.strip_suffix("Plugin") {
        Some(stem) if !stem.is_empty() => camel,
        _ => camel + "Plugin",
    }
}

fn lib_rs(name: &str, hooks: &[ScaffoldHook]) -> String {
    let type_name = type_name(name);
    let has = |h: ScaffoldHook| hooks.contains(&h);
    let stable = has(ScaffoldHook::Sections) || has(ScaffoldHook::Overlay);
    let mut uses = vec!["Plugin"];
    // The section's settings are a typed config: proem checks the operator's
    // table against its schema at load, the hook reads it with config_as.
    let (settings, config) = if has(ScaffoldHook::Sections) {
        uses.push("Config");
        (SETTINGS, ", config = Settings")
    } else {
        ("", "")
    };
    let mut code = format!("{settings}#[derive(Default)]\nstruct {type_name};\n\nimpl Plugin for {type_name} {{}}\n");
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
        "//! {name}: a proem plugin. The hooks it implements are the traits it\n//! implements; `register_plugin!` finds them.\n\nuse proem_sdk::{{{}}};\n\n{code}\nproem_sdk::register_plugin!({type_name}{config});\n\n#[cfg(test)]\nmod tests {{\n    use super::*;\n{tests}}}\n",
        uses.join(", ")
    )
}

/// The template's config type (with a stable section): its schema is the
/// plugin's `proem:config-schema`, through `register_plugin!`.
const SETTINGS: &str = r###"/// The plugin's settings: its `[plugins.config]` table in the agent's
/// proem.toml. proem checks the table against this type's schema when it
/// loads the plugin, so a wrong one is refused before any build.
#[derive(Config)]
struct Settings {
    /// The note's text (default: "Hello from a proem plugin.").
    note: Option<String>,
    /// The most tokens the note may take (default: no limit).
    max_tokens: Option<u32>,
}

"###;

const STABLE_SECTION: &str = r###"        // A section after Safety, from the operator's config.
        let settings: Settings = ctx.config_as().map_err(|e| e.to_string())?;
        let note = settings.note.as_deref().unwrap_or("Hello from a proem plugin.");
        let mut section = Section::after("safety", "note", format!("## Note\n{note}"));
        if let Some(tokens) = settings.max_tokens {
            section = section.max_tokens(tokens);
        }
        out = out.section(section);
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

    #[test]
    fn a_wrong_setting_is_an_error_naming_it() {
        let ctx = AgentContext::builder().config(proem_sdk::serde_json::json!({"max_tokens": -1})).build();
        let err = {T}.stable(&ctx, &[]).unwrap_err();
        assert!(err.starts_with("config.max_tokens: expected an integer from 0 to 4294967295"), "{err}");
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
        "# {name}\n\nA proem plugin.\n\n```sh\ncargo build --release --target wasm32-wasip2\nproem plugin check target/wasm32-wasip2/release/{file}.wasm\n```\n\nThen copy the .wasm into an agent's `plugins/` folder and add to its proem.toml:\n\n```toml\n[[plugins]]\nid = \"{name}\"\npath = \"plugins/{file}.wasm\"\n# With a stable section: its Settings, checked against their schema at load.\nconfig = {{ note = \"Be kind.\" }}\n```\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Pieces a hostile folder name is made of: what TOML gives a meaning
    /// to (quotes, backslashes, brackets, `=`, `#`, newlines), control and
    /// format characters, and plain text.
    const PIECES: &[&str] = &[
        "a", "sdk", " ", "\"", "'", "'''", "\"\"\"", "\\", "\\u0041", "[", "]", "[x]", "{", "}", "=", "#", ".", "\n",
        "\r", "\t", "\u{1b}", "\u{7f}", "\u{85}", "\u{0}x", "é", "\u{202e}", "\u{feff}", "\u{2028}", "$", "%n",
    ];

    fn hostile_name() -> impl Strategy<Value = String> {
        proptest::collection::vec(proptest::sample::select(PIECES), 1..8)
            .prop_map(|pieces| pieces.concat().replace('\u{0}', ""))
            .prop_filter("a file name", |n| !n.is_empty() && n != "." && n != "..")
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]

        /// `--sdk-path` through a folder with any name: refused, naming the
        /// flag, when it has a control character; otherwise Cargo.toml is
        /// TOML whose only dependency is proem-sdk at exactly that path,
        /// and no key was injected.
        #[test]
        fn any_sdk_path_is_refused_or_written_as_exactly_that_path(folder in hostile_name()) {
            let root = tempfile::tempdir().unwrap();
            let sdk = root.path().join(&folder);
            std::fs::create_dir(&sdk).unwrap();
            let parent = root.path().join("out");
            std::fs::create_dir(&parent).unwrap();
            let made = new_plugin(&parent, "probe", &[], Some(&sdk));
            if folder.chars().any(char::is_control) {
                let err = made.unwrap_err();
                prop_assert!(err.starts_with("--sdk-path ") && err.contains("control character"), "{}", err);
                prop_assert!(!err.chars().any(char::is_control), "the message carries the character: {:?}", err);
                prop_assert!(!parent.join("probe").exists(), "a crate was made");
                return Ok(());
            }
            let dir = made.map_err(TestCaseError::fail)?;
            let text = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
            let manifest: toml::Table = toml::from_str(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
            let keys: Vec<&str> = manifest.keys().map(String::as_str).collect();
            prop_assert_eq!(keys, ["dependencies", "lib", "package", "profile", "workspace"]);
            let canonical = std::fs::canonicalize(&sdk).unwrap();
            let mut expected = toml::Table::new();
            let mut path = toml::Table::new();
            path.insert("path".into(), toml::Value::String(canonical.to_str().unwrap().into()));
            expected.insert("proem-sdk".into(), toml::Value::Table(path));
            prop_assert_eq!(&manifest["dependencies"], &toml::Value::Table(expected));
            prop_assert_eq!(manifest["package"]["name"].as_str(), Some("probe"));
        }

        /// Any NAME: refused with the rule, creating nothing, or a crate in
        /// exactly `parent/NAME` whose package is NAME and whose type is a
        /// CamelCase identifier ending in `Plugin` that clashes with
        /// nothing lib.rs uses.
        #[test]
        fn any_name_is_refused_or_makes_a_crate_named_exactly_that(
            name in proptest::sample::select(vec![
                "plugin", "file", "ok", "err", "some", "none", "result", "option", "string", "vec", "box", "self",
                "self-", "self_", "super", "crate", "fn", "test", "std", "core", "alloc", "build", "deps",
                "proem-sdk", "proem_sdk", "turn-hook", "section", "stable-output", "gpio-plugin", "plugin-",
                "a", "a-", "a--b", "x_", "../x", "a/b", "/abs", ".hidden", "-a", "_a", "1a", "A", "a b", "é",
                "a\nb", "a\"b", "", "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklm",
            ]).prop_flat_map(|n| (Just(n.to_string()), proptest::sample::select(vec!["", "-x", "_y", "--", "-plugin"])))
                .prop_map(|(n, tail)| n + tail)
        ) {
            let parent = tempfile::tempdir().unwrap();
            let all = [ScaffoldHook::Sections, ScaffoldHook::Overlay, ScaffoldHook::Turn, ScaffoldHook::Bootstrap];
            match new_plugin(parent.path(), &name, &all, None) {
                Err(err) => {
                    prop_assert!(err.contains("plugin name") || err.contains("pick another name"), "{}", err);
                    prop_assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 0, "something was made");
                }
                Ok(dir) => {
                    prop_assert_eq!(&dir, &parent.path().join(&name));
                    prop_assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 1);
                    let manifest: toml::Table =
                        toml::from_str(&std::fs::read_to_string(dir.join("Cargo.toml")).unwrap()).unwrap();
                    prop_assert_eq!(manifest["package"]["name"].as_str(), Some(name.as_str()));
                    let ty = type_name(&name);
                    prop_assert!(ty.ends_with("Plugin") && ty.len() > "Plugin".len(), "{}", ty);
                    prop_assert!(ty.chars().next().unwrap().is_ascii_uppercase());
                    prop_assert!(ty.chars().all(|c| c.is_ascii_alphanumeric()));
                    let lib = std::fs::read_to_string(dir.join("src/lib.rs")).unwrap();
                    let uses = lib.lines().find(|l| l.starts_with("use proem_sdk::")).unwrap();
                    let (imported, declared) = (format!(" {ty},"), format!("struct {ty};"));
                    prop_assert!(!uses.contains(&imported), "{} is imported: {}", ty, uses);
                    prop_assert!(lib.contains(&declared), "no {} in lib.rs", declared);
                }
            }
        }
    }

    #[test]
    fn names_that_end_in_plugin_keep_one() {
        assert_eq!(type_name("hello-notes"), "HelloNotesPlugin");
        assert_eq!(type_name("gpio-plugin"), "GpioPlugin");
        assert_eq!(type_name("plugin"), "PluginPlugin");
        assert_eq!(type_name("self-"), "SelfPlugin");
        assert_eq!(type_name("file"), "FilePlugin");
    }
}
