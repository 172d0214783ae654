//! `proem plugin dev DIR --into AGENT`: the plugin author's loop. Each
//! cycle builds the plugin in DIR with its template's own command, checks
//! the component (`plugin check`), re-pins it into AGENT (`plugin add
//! --replace`), builds AGENT on the default turn and prints the sections
//! the plugin contributes and what changed since the previous build (the
//! stable hash's cause, as `proem diff` says it, and the sections that
//! came, went or changed). Then it polls DIR's file metadata until
//! something changes.
//!
//! The build is a subprocess the author controls: the command comes from
//! their own folder (or `--build-cmd`) and runs as them, in DIR, as it
//! would from their shell. proem bounds what it waits for, not what the
//! build may do: a build past `--build-timeout` is stopped with its whole
//! process group, its output goes to stderr as it comes (nothing is
//! buffered), and the walk of DIR is bounded in files and depth and never
//! follows a symlink. AGENT is written only as `plugin add --replace`
//! writes it (see [`crate::install`]).

use crate::{check, install};
use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The most files (and folders) a watched DIR may hold, outside the
/// folders left out ([`skipped`]): a plugin's sources are far below it.
pub const MAX_WATCHED: usize = 20_000;

/// The deepest folder looked into below DIR.
pub const MAX_DEPTH: usize = 32;

/// The largest Cargo.toml read to find the crate's name.
const MAX_MANIFEST_BYTES: u64 = 1 << 20;

/// How often a running build is looked at.
const BUILD_POLL: Duration = Duration::from_millis(20);

/// What `plugin dev` was asked to do.
#[derive(Debug, Clone)]
pub struct Options {
    /// The plugin's source folder.
    pub dir: PathBuf,
    /// The agent directory to re-pin into.
    pub agent: PathBuf,
    /// The plugin id (default: from the .wasm file name).
    pub id: Option<String>,
    /// One cycle, then return.
    pub once: bool,
    /// How long between two looks at DIR.
    pub interval: Duration,
    /// How the plugin is built.
    pub build: Build,
    /// The component the build makes, when not the template's.
    pub wasm: Option<PathBuf>,
    /// The longest a build may run.
    pub build_timeout: Duration,
}

/// How the plugin is built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Build {
    /// The template's own command, from the files in DIR.
    Template,
    /// `sh -c CMD` in DIR (`--build-cmd`).
    Command(String),
    /// Nothing is built (`--no-build`): the .wasm is re-pinned when it changes.
    Nothing,
}

/// A command run in DIR.
#[derive(Debug, Clone)]
struct Builder {
    program: String,
    args: Vec<String>,
}

impl Builder {
    fn of(program: &str, args: &[&str]) -> Builder {
        Builder { program: program.into(), args: args.iter().map(|a| a.to_string()).collect() }
    }

    /// As the author would type it.
    fn shown(&self) -> String {
        std::iter::once(self.program.as_str()).chain(self.args.iter().map(String::as_str)).collect::<Vec<_>>().join(" ")
    }
}

/// Where the built component is.
#[derive(Debug, Clone)]
enum WasmAt {
    /// This file.
    File(PathBuf),
    /// The one `.wasm` file directly in this folder (the Python and JS
    /// templates write it there, named after the plugin).
    OneIn(PathBuf),
}

/// A plugin folder: its language, how it is built and where the
/// component lands.
#[derive(Debug, Clone)]
pub struct Project {
    /// `Rust`, `Python`, `JavaScript`, or `custom`.
    pub lang: &'static str,
    builder: Option<Builder>,
    wasm: WasmAt,
}

impl Project {
    /// Reads DIR the way `plugin new` made it: a Cargo.toml is Rust, a
    /// package.json JavaScript, a build.sh Python; `--build-cmd`,
    /// `--no-build` and `--wasm` stand in for what the folder does not say.
    pub fn detect(dir: &Path, build: &Build, wasm: Option<&Path>) -> Result<Project, String> {
        let meta = std::fs::metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        if !meta.is_dir() {
            return Err(format!(
                "{}: not a directory (the plugin's source folder, as `plugin new` made it)",
                dir.display()
            ));
        }
        let template = template(dir)?;
        let builder = match build {
            Build::Nothing => None,
            Build::Command(cmd) => Some(Builder::of("sh", &["-c", cmd])),
            Build::Template => match &template {
                Some((_, builder, _)) => Some(builder.clone()),
                None => return Err(unknown_folder(dir)),
            },
        };
        let wasm = match (wasm, &template) {
            (Some(file), _) => WasmAt::File(dir.join(file)),
            (None, Some((_, _, at))) => at.clone(),
            (None, None) => return Err(unknown_folder(dir)),
        };
        let lang = template.as_ref().map_or("custom", |(lang, _, _)| lang);
        Ok(Project { lang, builder, wasm })
    }

    /// The build command as shown, or `none`.
    pub fn build_shown(&self) -> String {
        self.builder.as_ref().map_or_else(|| "none".into(), Builder::shown)
    }

    /// The component, as it is now in DIR.
    pub fn component(&self) -> Result<PathBuf, String> {
        match &self.wasm {
            WasmAt::File(file) => Ok(file.clone()),
            WasmAt::OneIn(dir) => one_wasm_in(dir),
        }
    }

    /// The component's path to watch besides DIR's sources (a Rust build's
    /// is in target/, which the walk leaves out).
    fn watched_component(&self) -> Option<&Path> {
        match &self.wasm {
            WasmAt::File(file) => Some(file),
            WasmAt::OneIn(_) => None,
        }
    }
}

fn unknown_folder(dir: &Path) -> String {
    format!(
        "{}: not a plugin folder proem knows (a Cargo.toml, a package.json or a build.sh, as `plugin new` makes \
         them); give --build-cmd CMD (or --no-build) and --wasm FILE",
        dir.display()
    )
}

/// The template DIR was made from: its language, build command and
/// component.
fn template(dir: &Path) -> Result<Option<(&'static str, Builder, WasmAt)>, String> {
    let is_file = |name: &str| std::fs::symlink_metadata(dir.join(name)).is_ok_and(|m| m.is_file());
    if is_file("Cargo.toml") {
        let crate_name = crate_name(&dir.join("Cargo.toml"))?;
        let wasm = dir.join(format!("target/wasm32-wasip2/release/{}.wasm", crate_name.replace('-', "_")));
        let build = Builder::of("cargo", &["build", "--release", "--target", "wasm32-wasip2"]);
        return Ok(Some(("Rust", build, WasmAt::File(wasm))));
    }
    if is_file("package.json") {
        return Ok(Some(("JavaScript", Builder::of("npm", &["run", "build"]), WasmAt::OneIn(dir.to_path_buf()))));
    }
    if is_file("build.sh") {
        return Ok(Some(("Python", Builder::of("sh", &["build.sh"]), WasmAt::OneIn(dir.to_path_buf()))));
    }
    Ok(None)
}

/// `[package] name` of a Cargo.toml.
fn crate_name(manifest: &Path) -> Result<String, String> {
    let shown = manifest.display();
    let bytes = proem_core::disk::read_regular_file(manifest, MAX_MANIFEST_BYTES)
        .map_err(|e| format!("{shown}: cannot read: {e}"))?;
    let text = String::from_utf8(bytes).map_err(|_| format!("{shown}: not UTF-8"))?;
    let table: toml::Table = text.parse().map_err(|e| format!("{shown}: {e}"))?;
    let name = table.get("package").and_then(|p| p.get("name")).and_then(|n| n.as_str());
    name.map(str::to_string).ok_or_else(|| format!("{shown}: no [package] name; give --wasm FILE"))
}

/// The one regular `.wasm` file directly in `dir`.
fn one_wasm_in(dir: &Path) -> Result<PathBuf, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut found: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "wasm"))
        .take(64)
        .collect();
    found.sort();
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err(format!("{}: no .wasm file after the build; give --wasm FILE", dir.display())),
        n => Err(format!(
            "{}: {n} .wasm files ({}); say which one the build makes with --wasm FILE",
            dir.display(),
            found.iter().filter_map(|p| p.file_name()).map(|n| n.to_string_lossy()).collect::<Vec<_>>().join(", ")
        )),
    }
}

/// What a file looked like: enough to tell an edit (in place or by
/// rename) from nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    inode: u64,
    modified: (i64, i64),
    changed: (i64, i64),
}

/// DIR's files and their stamps, in path order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Snapshot(BTreeMap<PathBuf, Stamp>);

impl Snapshot {
    /// How many entries were seen.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether nothing was seen.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Folders the walk leaves out: build outputs and installed toolchains
/// (target/, node_modules/) and hidden ones (.git, .venv).
pub fn skipped(name: &std::ffi::OsStr) -> bool {
    name == "target" || name == "node_modules" || name.as_encoded_bytes().starts_with(b".")
}

/// Stamps every entry below `dir` (symlinks as themselves, never
/// followed), and `also` when given; refuses a folder of more than
/// [`MAX_WATCHED`] entries or deeper than [`MAX_DEPTH`], naming the bound.
pub fn snapshot(dir: &Path, also: Option<&Path>) -> Result<Snapshot, String> {
    let mut seen = Snapshot::default();
    let mut folders = vec![(dir.to_path_buf(), 0usize)];
    while let Some((folder, depth)) = folders.pop() {
        let entries = match std::fs::read_dir(&folder) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && depth > 0 => continue,
            Err(e) => return Err(format!("{}: {e}", folder.display())),
        };
        for entry in entries {
            let Ok(entry) = entry else { continue };
            let Ok(meta) = entry.metadata() else { continue }; // gone meanwhile
            if meta.is_dir() && skipped(&entry.file_name()) {
                continue;
            }
            if seen.len() >= MAX_WATCHED {
                return Err(format!(
                    "{}: more than {MAX_WATCHED} files to watch (target/, node_modules/ and hidden folders left \
                     out); keep only the plugin's sources in it",
                    dir.display()
                ));
            }
            if meta.is_dir() {
                if depth + 1 > MAX_DEPTH {
                    return Err(format!(
                        "{}: folders deeper than {MAX_DEPTH} levels; keep only the plugin's sources in it",
                        entry.path().display()
                    ));
                }
                folders.push((entry.path(), depth + 1));
            }
            seen.0.insert(entry.path(), stamp(&meta));
        }
    }
    if let Some(file) = also {
        if let Ok(meta) = std::fs::symlink_metadata(file) {
            seen.0.insert(file.to_path_buf(), stamp(&meta));
        }
    }
    Ok(seen)
}

fn stamp(meta: &std::fs::Metadata) -> Stamp {
    Stamp {
        len: meta.len(),
        inode: meta.ino(),
        modified: (meta.mtime(), meta.mtime_nsec()),
        changed: (meta.ctime(), meta.ctime_nsec()),
    }
}

/// Runs `plugin dev`: one cycle, then (without `once`) a cycle after each
/// change in DIR, until the process is interrupted. What each cycle did is
/// written to `out` as it ends. `Ok(false)`: the (only) cycle failed.
pub fn run(options: &Options, out: &mut dyn Write) -> Result<bool, String> {
    let project = Project::detect(&options.dir, &options.build, options.wasm.as_deref())?;
    let say = |out: &mut dyn Write, text: &str| {
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
    };
    say(
        out,
        &format!(
            "plugin dev: {} ({}), build: {}, into {}\n",
            options.dir.display(),
            project.lang,
            project.build_shown(),
            options.agent.display()
        ),
    );
    let mut previous = build_agent(&options.agent).ok();
    loop {
        let (built, seen) = {
            let mut text = String::new();
            let result = cycle(options, &project, &mut text, previous.as_ref());
            say(out, &text);
            result
        };
        let ok = built.is_some();
        if built.is_some() {
            previous = built;
        }
        if options.once {
            return Ok(ok);
        }
        say(
            out,
            &format!("watching {} (every {} ms; Ctrl-C stops)\n", options.dir.display(), options.interval.as_millis()),
        );
        let mut seen = match seen {
            Some(seen) => seen,
            None => snapshot(&options.dir, project.watched_component())?,
        };
        loop {
            std::thread::sleep(options.interval);
            let now = snapshot(&options.dir, project.watched_component())?;
            if now != seen {
                break;
            }
            seen = now;
        }
    }
}

/// One cycle, written to `text`: the agent's build when the plugin was
/// re-pinned, and DIR's snapshot right after the plugin's build (so what
/// the build itself wrote is not a change).
fn cycle(
    options: &Options,
    project: &Project,
    text: &mut String,
    previous: Option<&proem::Built>,
) -> (Option<proem::Built>, Option<Snapshot>) {
    use std::fmt::Write as _;
    if let Some(builder) = &project.builder {
        let _ = writeln!(text, "build: {} (in {})", builder.shown(), options.dir.display());
        if let Err(why) = run_build(builder, &options.dir, options.build_timeout) {
            let _ = writeln!(text, "problem  {why}; nothing was re-pinned");
            return (None, snapshot(&options.dir, project.watched_component()).ok());
        }
    }
    let seen = snapshot(&options.dir, project.watched_component()).ok();
    match repin(options, project, text) {
        Ok(id) => match build_agent(&options.agent) {
            Ok(built) => {
                contributions(&built, &id, text);
                changes(previous, &built, text);
                (Some(built), seen)
            }
            Err(why) => {
                let _ = writeln!(text, "problem  {} does not build: {why}", options.agent.display());
                (None, seen)
            }
        },
        Err(why) => {
            let _ = writeln!(text, "problem  {why}");
            (None, seen)
        }
    }
}

/// Checks the component and re-pins it into the agent: the plugin's id.
fn repin(options: &Options, project: &Project, text: &mut String) -> Result<String, String> {
    let wasm = project.component()?;
    let report = check::check(&wasm, None);
    if !report.ok {
        text.push_str(&report.text);
        return Err(format!("{}: plugin check failed (above); nothing was re-pinned", wasm.display()));
    }
    let done = install::add_with(&wasm, &options.agent, options.id.as_deref(), true)?;
    text.push_str(&format!(
        "re-pinned {} ({}) in {} to sha256 {}\n",
        done.id,
        done.path,
        options.agent.join(proem_core::config::CONFIG_FILE).display(),
        done.sha256
    ));
    text.push_str(&install::warm(&options.agent, &done));
    Ok(done.id)
}

fn build_agent(agent: &Path) -> Result<proem::Built, String> {
    let assembler = proem::Assembler::open(agent, None).map_err(|e| e.to_string())?;
    assembler.build(&proem::Turn::default()).map_err(|e| e.to_string())
}

/// The plugin's status and the sections it contributed to `built`.
fn contributions(built: &proem::Built, id: &str, text: &mut String) {
    use std::fmt::Write as _;
    let status = built.plugins.iter().find(|p| p.id == id).map_or("absent".to_string(), |p| p.status.to_string());
    let _ = writeln!(text, "plugin {id}: {status} on the default turn");
    if status != "ok" {
        for d in built.diagnostics.iter().filter(|d| d.message.contains(id)) {
            let _ = writeln!(text, "  {}: {}", d.code, d.message);
        }
    }
    let source = format!("plugin:{id}");
    let mine: Vec<_> = built.sections.iter().filter(|s| s.source == source).collect();
    if mine.is_empty() {
        let _ = writeln!(text, "  contributes no section");
    }
    for s in mine {
        let _ = writeln!(text, "  section {} ({}, {} tokens)", s.id, s.zone.as_str(), s.tokens);
    }
}

/// What changed in the prompt from `before` to `after`: the stable hash's
/// cause (`proem diff`'s words) and each section added, removed or changed.
fn changes(before: Option<&proem::Built>, after: &proem::Built, text: &mut String) {
    use std::fmt::Write as _;
    let Some(before) = before else {
        let _ = writeln!(text, "prompt: {} tokens (no earlier build to compare)", after.tokens.total);
        return;
    };
    if before.prompt == after.prompt {
        let _ = writeln!(text, "prompt unchanged ({} tokens)", after.tokens.total);
        return;
    }
    let _ = writeln!(text, "prompt changed: {} -> {} tokens", before.tokens.total, after.tokens.total);
    text.push_str(&proem_cli::diff::stable_change(
        (&before.stable_hash, &before.stable_inputs),
        (&after.stable_hash, &after.stable_inputs),
    ));
    let old: BTreeMap<&str, _> = before.sections.iter().map(|s| (s.id.as_str(), s)).collect();
    let new: BTreeMap<&str, _> = after.sections.iter().map(|s| (s.id.as_str(), s)).collect();
    for (id, s) in &new {
        match old.get(id) {
            None => {
                let _ = writeln!(text, "+ {id} ({} tokens)", s.tokens);
            }
            Some(o) if o.body_hash != s.body_hash || o.zone != s.zone => {
                let _ = writeln!(text, "~ {id} ({} -> {} tokens)", o.tokens, s.tokens);
            }
            Some(_) => {}
        }
    }
    for (id, o) in &old {
        if !new.contains_key(id) {
            let _ = writeln!(text, "- {id} ({} tokens)", o.tokens);
        }
    }
}

/// Runs the build in `dir`, in a process group of its own (so a timeout
/// stops every process of the group; one that leaves it, by `setsid`, is
/// not the build's), its output to stderr as it comes.
fn run_build(builder: &Builder, dir: &Path, timeout: Duration) -> Result<(), String> {
    use std::os::unix::process::CommandExt;
    let shown = builder.shown();
    let mut child = Command::new(&builder.program)
        .args(&builder.args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::from(std::io::stderr()))
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot run `{shown}` in {}: {e}", dir.display()))?;
    let group = Group::of(&child);
    let deadline = Instant::now().checked_add(timeout);
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => return Err(format!("`{shown}` failed ({status}); its output is above")),
            Ok(None) if deadline.is_some_and(|d| Instant::now() >= d) => {
                group.kill();
                let _ = child.wait();
                return Err(format!(
                    "`{shown}` ran longer than --build-timeout ({} s) and was stopped",
                    timeout.as_secs()
                ));
            }
            Ok(None) => std::thread::sleep(BUILD_POLL),
            Err(e) => {
                group.kill();
                return Err(format!("`{shown}`: {e}"));
            }
        }
    }
}

/// A build's process group: killed on a timeout, and when `plugin dev`
/// itself is interrupted (the terminal's Ctrl-C reaches only `plugin
/// dev`'s group, so it is passed on).
struct Group(Option<rustix::process::Pid>);

impl Group {
    fn of(child: &Child) -> Group {
        let pid = i32::try_from(child.id()).ok().and_then(rustix::process::Pid::from_raw);
        if let Some(pid) = pid {
            interrupt::current(pid.as_raw_nonzero().get());
        }
        Group(pid)
    }

    fn kill(&self) {
        if let Some(pid) = self.0 {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        interrupt::current(0);
    }
}

/// Passes an interrupt of `plugin dev` on to the build running, then exits.
mod interrupt {
    use std::sync::atomic::{AtomicI32, Ordering};
    use std::sync::Once;

    /// The running build's process group (0: none).
    static BUILD: AtomicI32 = AtomicI32::new(0);
    static WATCH: Once = Once::new();

    /// Records the running build's group (0: none), watching for Ctrl-C
    /// from the first build on.
    pub fn current(group: i32) {
        BUILD.store(group, Ordering::SeqCst);
        WATCH.call_once(|| {
            let _ = std::thread::Builder::new().name("plugin-dev-interrupt".into()).spawn(watch);
        });
    }

    fn watch() {
        let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_io().build() else { return };
        if runtime.block_on(tokio::signal::ctrl_c()).is_ok() {
            if let Some(pid) = rustix::process::Pid::from_raw(BUILD.load(Ordering::SeqCst)) {
                let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::INT);
            }
            std::process::exit(130);
        }
    }
}
