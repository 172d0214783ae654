//! Fixtures shared by the integration tests: throw-away agent directories
//! and a fixed turn, so every test states only what it varies.

use proem::{Assembler, Built, Tool, Turn};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A temporary agent directory.
pub struct Agent {
    pub dir: tempfile::TempDir,
}

impl Agent {
    /// An empty agent directory with a config that pins everything
    /// machine-dependent (sandbox workdir instead of the temp path).
    pub fn new() -> Agent {
        plugin_env();
        let agent = Agent { dir: tempfile::tempdir().expect("temp dir") };
        agent.config("[agent]\nid = \"testbot\"\n\n[sandbox]\nenabled = true\nworkdir = \"/workspace\"\n");
        agent
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes a file (creating parent folders).
    pub fn file(&self, name: &str, content: &str) -> &Agent {
        self.bytes(name, content.as_bytes())
    }

    pub fn bytes(&self, name: &str, content: &[u8]) -> &Agent {
        let p = self.path().join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
        self
    }

    /// Replaces proem.toml.
    pub fn config(&self, toml: &str) -> &Agent {
        self.file("proem.toml", toml)
    }

    /// Adds skills/<name>/SKILL.md.
    pub fn skill(&self, name: &str, description: &str) -> &Agent {
        self.file(
            &format!("skills/{name}/SKILL.md"),
            &format!("---\nname: {name}\ndescription: {description}\n---\n# {name}\nBody.\n"),
        )
    }

    /// The standard persona and context files with plain content.
    pub fn with_standard_files(&self) -> &Agent {
        self.file("AGENTS.md", "# Rules\nBe careful.")
            .file("SOUL.md", "# Soul\nDry wit.")
            .file("IDENTITY.md", "Name: Testbot")
            .file("USER.md", "# User\nLikes tea.")
            .file("TOOLS.md", "Use exec wisely.")
            .file("HEARTBEAT.md", "Reply HEARTBEAT_OK.")
            .file("MEMORY.md", "- 2026-01-01: started.")
    }

    pub fn assembler(&self) -> Assembler {
        Assembler::open(self.path(), None).expect("agent opens")
    }

    pub fn build(&self, turn: &Turn) -> Built {
        self.assembler().build(turn).expect("build succeeds")
    }

    /// Every file under the directory with its bytes and modification time.
    pub fn snapshot(&self) -> BTreeMap<PathBuf, (Vec<u8>, std::time::SystemTime)> {
        snapshot(self.path())
    }
}

pub fn snapshot(root: &Path) -> BTreeMap<PathBuf, (Vec<u8>, std::time::SystemTime)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let meta = std::fs::symlink_metadata(entry.path()).unwrap();
            if meta.is_dir() {
                stack.push(entry.path());
                out.insert(entry.path(), (Vec::new(), meta.modified().unwrap()));
            } else if meta.is_file() {
                out.insert(entry.path(), (std::fs::read(entry.path()).unwrap(), meta.modified().unwrap()));
            } else {
                out.insert(entry.path(), (b"<link>".to_vec(), meta.modified().unwrap()));
            }
        }
    }
    out
}

/// A turn with a fixed clock and time zone.
pub fn turn() -> Turn {
    Turn {
        now: Some(proem_core::turn::parse_now("2026-11-21T09:30:00Z").unwrap()),
        timezone: Some("UTC".into()),
        ..Turn::default()
    }
}

pub fn tool(name: &str) -> Tool {
    Tool {
        name: name.into(),
        description: format!("Does {name}."),
        parameters: Some(serde_json::json!({"type": "object"})),
        server: None,
    }
}

pub fn tools(names: &[&str]) -> Vec<Tool> {
    names.iter().map(|n| tool(n)).collect()
}

/// Section ids of a build, in prompt order.
pub fn section_ids(built: &Built) -> Vec<String> {
    built.sections.iter().map(|s| s.id.clone()).collect()
}

/// The text between `<context_file name="NAME">` and its closing tag.
pub fn wrapped<'a>(prompt: &'a str, tag: &str, name: &str) -> Option<&'a str> {
    let open = format!("<{tag} name=\"{name}\">\n");
    let start = prompt.find(&open)? + open.len();
    let end = prompt[start..].find(&format!("\n</{tag}>"))? + start;
    Some(&prompt[start..end])
}

/// The example agent shipped in examples/marlow (its plugins compile into
/// the test cache, see [`plugin_env`]).
pub fn example_dir() -> PathBuf {
    plugin_env();
    example("marlow")
}

/// `proem`, the front executable (package proem-cli), which cargo builds
/// beside `proem-full` when it builds the tests (`cargo test --workspace`,
/// the README's test command). Run alone, `cargo test -p proem-full`
/// does not rebuild it: build first (`cargo build --release`).
pub fn front() -> PathBuf {
    let front = Path::new(env!("CARGO_BIN_EXE_proem-full")).with_file_name("proem");
    assert!(front.exists(), "{} is missing: `cargo build --release` makes it", front.display());
    front
}

/// Copies the executable `src` to `dst`, in a `cp` process of its own.
/// Copied here, the test process would hold `dst` open for writing while
/// other tests' threads fork their children, who inherit that descriptor
/// until they exec: running `dst` then fails with "Text file busy"
/// (ETXTBSY), as it did once in CI. No descriptor of a `cp` child can
/// reach another test's fork.
pub fn install_executable(src: &Path, dst: &Path) {
    let status = std::process::Command::new("cp").arg("--").arg(src).arg(dst).status().expect("cp runs");
    assert!(status.success(), "cp {} {}: {status}", src.display(), dst.display());
}

/// The example agent `examples/<name>` of the repository.
pub fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples").join(name)
}

/// Points proem's cache (compiled components, token counts) at a directory
/// under the build's target dir, so tests never write into the user's
/// ~/.cache. [`Agent::new`] calls it; call it first in any test that builds
/// without one.
pub fn plugin_env() -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("proem-test-cache");
        std::fs::create_dir_all(&dir).unwrap();
        // Safe enough here: std serialises its own environment access, and
        // this runs before any plugin (or other env reader) in the process.
        std::env::set_var("PROEM_CACHE_DIR", &dir);
        dir
    })
    .clone()
}

/// `n` as an unsigned LEB128, appended to `out` (wasm's lengths and counts).
pub fn push_leb(out: &mut Vec<u8>, mut n: usize) {
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        out.push(if n == 0 { byte } else { byte | 0x80 });
        if n == 0 {
            return;
        }
    }
}

/// `wasm` with a section of kind `id` holding `body` appended (0: a custom
/// section, 1: a core module in a component).
pub fn push_section(wasm: &mut Vec<u8>, id: u8, body: &[u8]) {
    wasm.push(id);
    push_leb(wasm, body.len());
    wasm.extend_from_slice(body);
}

/// The wasm of a guest built by host/build.rs (`fixture`, `persona-swap`, …).
pub fn guest_wasm(crate_name: &str) -> Vec<u8> {
    let path = Path::new(proem_wasm::GUEST_DIR).join(format!("{}.wasm", crate_name.replace('-', "_")));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

impl Agent {
    /// Copies a guest into `plugins/<file>` of the agent directory.
    pub fn guest(&self, crate_name: &str, file: &str) -> &Agent {
        self.bytes(&format!("plugins/{file}"), &guest_wasm(crate_name))
    }

    /// An agent with the standard files, the fixture guest at
    /// plugins/fixture.wasm and this `[[plugins]]` TOML appended to the config.
    pub fn with_plugins(plugins_toml: &str) -> Agent {
        plugin_env();
        let agent = Agent::new();
        agent.with_standard_files().guest("proem-fixture-guest", "fixture.wasm");
        agent.config(&format!(
            "[agent]\nid = \"testbot\"\n\n[sandbox]\nenabled = true\nworkdir = \"/workspace\"\n\n{plugins_toml}"
        ));
        agent
    }
}

/// The CPU deadline tests give well-behaved plugins: generous, so a loaded
/// CI machine never turns a correct plugin into a timeout. Tests of the
/// deadline itself set their own with [`with_deadline`].
pub const TEST_DEADLINE: &str = "deadline_ms = 5000";

/// The `[[plugins]]` entry for the fixture guest with `behave` and extra config.
pub fn fixture(id: &str, behave: &str, extra: &str) -> String {
    format!(
        "[[plugins]]\nid = \"{id}\"\npath = \"plugins/fixture.wasm\"\n{TEST_DEADLINE}\nconfig = {{ behave = \"{behave}\"{}{extra} }}\n\n",
        if extra.is_empty() { "" } else { ", " }
    )
}

/// The `[[plugins]]` entry for an official plugin.
pub fn builtin(id: &str, extra: &str) -> String {
    format!("[[plugins]]\nid = \"{id}\"\nsource = \"builtin:{id}\"\n{TEST_DEADLINE}\n{extra}\n\n")
}

/// A plugin entry with its deadline set to `ms` (the default when `None`).
pub fn with_deadline(entry: &str, ms: Option<u32>) -> String {
    match ms {
        Some(ms) => entry.replace(TEST_DEADLINE, &format!("deadline_ms = {ms}")),
        None => entry.replace(TEST_DEADLINE, ""),
    }
}

/// The diagnostic codes of a build.
pub fn codes(built: &Built) -> Vec<String> {
    built.diagnostics.iter().map(|d| d.code.clone()).collect()
}

/// The status of plugin `id` in a build's report.
pub fn plugin_status(built: &Built, id: &str) -> String {
    built.plugins.iter().find(|p| p.id == id).map(|p| p.status.to_string()).unwrap_or_else(|| "absent".into())
}

/// The message of the first diagnostic with `code`.
pub fn diagnostic<'a>(built: &'a Built, code: &str) -> Option<&'a str> {
    built.diagnostics.iter().find(|d| d.code == code).map(|d| d.message.as_str())
}

/// A small deterministic generator (xorshift64) for tests that shuffle or
/// damage things: the same seed gives the same sequence on every run.
pub fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    }
}
