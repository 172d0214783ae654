//! The command line of proem's two executables.
//!
//! `proem-full` (host/full/src/main.rs) runs every command, with plugins
//! run in wasmtime. `proem` (src/main.rs) answers `build` itself when every
//! plugin answer it needs is kept on disk (a warm turn: see
//! [`proem_core::plugin::answers`]), with [`AnswersOnly`] as its plugin runtime,
//! so wasmtime is not linked into it; anything else (another command, a
//! plugin that must run, no cache) it hands to `proem-full` beside it, which
//! replaces the process with the same arguments, environment and standard
//! streams. Both parse the same `Cli`, so usage, `--help` and errors read
//! the same.

use clap::{Args, Parser, Subcommand};
use proem_core::bounds::{self, Bound};
use proem_core::error::ExitStatus;
use proem_core::plugin::runtime::{AnswersOnly, Runtime};
use proem_core::render::Format;
use proem_core::request::BuildRequest;
use proem_core::turn::{load_tools_file, Tools};
use proem_core::{Assembler, ProemError, Turn};

pub mod agent_dir;
pub mod diagnostics;
pub mod diff;
pub mod inspect;
pub mod output;
use output::say;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Assemble an LLM agent's system prompt from its workspace: deterministic,
/// fitted to an exact token budget, split at a prompt-cache boundary.
#[derive(Parser)]
#[command(name = "proem", bin_name = "proem", version, about, long_about = None, after_help = "\
Exit status: 0 built, 1 bad input (the message names the file and the problem), 2 usage error
(an agent folder with nothing proem reads is one, unless --allow-empty).
`build` prints each problem of the build (a plugin left out, a file cut or refused, a grant not
given) on stderr, one line each, whatever --format; --quiet turns that off. Logs go to stderr; set PROEM_LOG (or RUST_LOG) to e.g. debug or proem_core=trace.")]
pub struct Cli {
    #[command(subcommand)]
    /// The command.
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Build the system prompt for one turn and print it.
    Build {
        #[command(flatten)]
        turn: TurnArgs,
        /// Output: the prompt text, the full JSON report, Anthropic system
        /// blocks (cache_control breakpoints with TTLs), one OpenAI system
        /// message (marker removed, prompt_cache_key), one plain system
        /// message (prefix caches), or the request of `[cache] profile`
        /// (provider).
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
        /// Fail (exit 1, nothing printed) when any plugin failed to load or
        /// was left out of the build, instead of building without it.
        #[arg(long)]
        strict: bool,
        /// Print nothing on stderr about the build's problems (they stay in
        /// the report: `--format json`'s diagnostics, `proem inspect`).
        #[arg(long, short = 'q')]
        quiet: bool,
    },
    /// Build, then show where every character and token came from: sections
    /// and files largest first, with the stable and dynamic totals.
    Inspect {
        #[command(flatten)]
        turn: TurnArgs,
        /// List the sections largest first (the default is prompt order,
        /// with the cache boundary drawn where it falls).
        #[arg(long)]
        by_size: bool,
    },
    /// Serve builds over HTTP to agent runtimes in any language, with an
    /// inspector page at `/`. One warm assembler per agent; an agent whose
    /// proem.toml or plugin files change, or whose folder is replaced
    /// anywhere on its path (a `current` symlink swapped), is reloaded
    /// before its next request is answered; a reload that fails keeps the
    /// last good config serving. API under
    /// /v1 (OpenAPI at /v1/openapi.json), /healthz, /readyz, /metrics.
    /// Prints `listening on http://ADDR` once it accepts connections; stops
    /// on SIGTERM or SIGINT after finishing the builds in flight.
    Serve {
        /// Agent directories to serve (each one's id is its folder name).
        #[arg(value_name = "AGENT_DIR")]
        agent_dirs: Vec<PathBuf>,
        /// Serve an AGENT_DIR with no proem.toml and no agent files (by
        /// default a usage error: it is most often a wrong path). `--agents`
        /// serves only subfolders with a proem.toml either way.
        #[arg(long)]
        allow_empty: bool,
        /// Serve every subfolder of DIR that has a proem.toml, picking up new
        /// and removed ones while running.
        #[arg(long, value_name = "DIR", conflicts_with = "agent_dirs")]
        agents: Option<PathBuf>,
        /// Address to listen on. A non-loopback address needs --token-file
        /// (or --insecure).
        #[arg(long, value_name = "ADDR", default_value = DEFAULT_LISTEN)]
        listen: std::net::SocketAddr,
        /// A file holding the bearer token every /v1 and /metrics request
        /// must carry (`Authorization: Bearer TOKEN`; 16+ characters).
        #[arg(long, value_name = "FILE")]
        token_file: Option<PathBuf>,
        /// Allow a non-loopback --listen without a token.
        #[arg(long)]
        insecure: bool,
        /// Also answer requests whose Host is NAME (repeatable). Loopback
        /// addresses, localhost and the --listen address are always
        /// answered; any other Host is refused with 421 (DNS rebinding).
        #[arg(long = "allow-host", value_name = "NAME")]
        allow_hosts: Vec<String>,
        /// Builds running at once, request bodies over 64 KiB being read
        /// included, 1 to 4096 [default: twice the cores].
        #[arg(long, value_name = "N", value_parser = within(bounds::SERVE_CONCURRENT))]
        concurrent: Option<usize>,
        /// Requests waiting for a build slot before new ones get 503 with
        /// Retry-After (0 to 1,000,000).
        #[arg(long, value_name = "N", default_value_t = 256, value_parser = within(bounds::SERVE_QUEUE))]
        queue: usize,
        /// The largest request body in bytes (over it: 413), at most 1 GiB.
        #[arg(long, value_name = "BYTES", default_value_t = 4 * 1024 * 1024, value_parser = within(bounds::SERVE_MAX_BODY))]
        max_body: usize,
        /// A request's deadline in milliseconds, from its first byte: a body
        /// still arriving then is a 408, a build still queued or running a 503
        /// (1 to 86,400,000: a day).
        #[arg(long, value_name = "MS", default_value_t = 10_000, value_parser = within_u64(bounds::SERVE_TIMEOUT_MS))]
        timeout_ms: u64,
        /// Connections open at once; one more is answered 503 and closed
        /// [default: half the file descriptors the limit leaves after 64,
        /// at most 8192].
        #[arg(long, value_name = "N", value_parser = within(bounds::SERVE_MAX_CONNECTIONS))]
        max_connections: Option<usize>,
        /// The time a request's head may take to arrive, from the
        /// connection's start or the end of the previous response (the
        /// keep-alive idle timeout); also the longest a response may wait
        /// for the client to read it. Then the connection is closed.
        #[arg(long, value_name = "MS", default_value_t = 10_000, value_parser = within_u64(bounds::SERVE_HEADER_TIMEOUT_MS))]
        header_timeout_ms: u64,
        /// The largest request head (request line and headers) in bytes
        /// (over it: 431).
        #[arg(long, value_name = "BYTES", default_value_t = 64 * 1024, value_parser = within(bounds::SERVE_MAX_HEADER_BYTES))]
        max_header_bytes: usize,
        /// How log lines look on stderr: text, or json (one object a line,
        /// each request's lines with its request_id; PROEM_LOG=info logs
        /// every request).
        #[arg(long, value_name = "FORMAT", value_enum, default_value_t = LogFormat::Text)]
        log_format: LogFormat,
    },
    /// Say what moved the stable hash between two builds: the section and
    /// its input (file, plugin, config table, tools, skills) whose digest
    /// differs, from two JSON reports (`proem build --format json`).
    Diff {
        /// The earlier build's JSON report.
        #[arg(value_name = "BEFORE")]
        before: PathBuf,
        /// The later build's JSON report.
        #[arg(value_name = "AFTER")]
        after: PathBuf,
    },
    /// Work on a plugin binary: `proem plugin check FILE.wasm`.
    Plugin {
        #[command(subcommand)]
        action: PluginAction,
    },
    /// List plugins: the built-in ones (no AGENT_DIR), or the agent's
    /// configured ones, with id, version, hooks, the capabilities each asks
    /// for, what proem.toml grants it, and whether it works: each declared
    /// hook is called on a sample turn with the plugin's config and grants
    /// (as `plugin check` does). Exit 1 when a plugin fails to load or a
    /// hook fails.
    Plugins {
        /// An agent directory whose proem.toml [[plugins]] to list.
        #[arg(value_name = "AGENT_DIR")]
        agent_dir: Option<PathBuf>,
        /// Config file to use instead of AGENT_DIR/proem.toml.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// Accept an AGENT_DIR with no proem.toml and no agent files.
        #[arg(long)]
        allow_empty: bool,
    },
}

#[derive(Subcommand)]
pub enum PluginAction {
    /// Check a plugin binary the way proem loads one (a component, a
    /// supported API version, only imports proem provides, describe
    /// answering, declared hooks exported), each problem with its fix.
    /// Exit 1 when any check fails.
    Check {
        /// The plugin's .wasm file.
        #[arg(value_name = "FILE.wasm")]
        file: PathBuf,
        /// A config to check against the schema the plugin declares (its
        /// proem:config-schema section): a .toml file (the [[plugins]]
        /// config table's keys) or a JSON object.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Fetch a plugin published as an OCI artifact (the Wasm component
    /// layout of wkg, Spin and wasmCloud) into AGENT_DIR/plugins/ and add its
    /// [[plugins]] entry to proem.toml with the component's sha256 pinned.
    /// The binary is checked before anything is written; nothing existing
    /// is overwritten, nothing is written through a symlink. A registry on
    /// this machine (localhost, 127.0.0.1, [::1]) is spoken to over HTTP,
    /// any other over HTTPS only. What the registry sends is bounded as it
    /// arrives: the manifest at 4 MiB; one application/wasm layer, decided
    /// from the manifest before it is fetched, of at most 64 MiB and
    /// exactly the size and sha256 the manifest gives. A redirect to another
    /// host is followed only for the layer (checked by its digest), never
    /// with the credentials: PROEM_REGISTRY_USER and PROEM_REGISTRY_PASSWORD,
    /// else anonymous.
    Pull {
        /// oci://REGISTRY/REPOSITORY:TAG (or @sha256:DIGEST).
        #[arg(value_name = "OCI_REF")]
        reference: String,
        /// The agent directory to add the plugin to.
        #[arg(long = "into", value_name = "AGENT_DIR")]
        into: PathBuf,
        /// The plugin id in proem.toml (default: the repository's last part).
        #[arg(long, value_name = "ID")]
        id: Option<String>,
        #[command(flatten)]
        timeouts: RegistryTimeouts,
    },
    /// Add a local plugin binary to an agent: copies it to
    /// AGENT_DIR/plugins/ and appends its [[plugins]] entry, sha256 pinned,
    /// to proem.toml (the folder is created if missing). The binary is
    /// checked first; nothing existing is overwritten (but with --replace).
    /// Then it is compiled into proem's cache and described, so the next
    /// build starts warm.
    Add {
        /// The plugin's .wasm file.
        #[arg(value_name = "FILE.wasm")]
        file: PathBuf,
        /// The agent directory to add the plugin to.
        #[arg(long = "into", value_name = "AGENT_DIR")]
        into: PathBuf,
        /// The plugin id in proem.toml (default: from the file name).
        #[arg(long, value_name = "ID")]
        id: Option<String>,
        /// Re-pin an entry with this id: replace its plugins/ file with this
        /// binary and update its sha256 line in place (an author rebuilding).
        #[arg(long)]
        replace: bool,
    },
    /// Call every hook of a plugin binary once on a turn and print their raw
    /// answers as JSON (before proem validates them), with what each logged
    /// and how long it took: no agent needed. The plugin is loaded and
    /// sandboxed as a build loads it, with no grant. It writes only what a
    /// build writes in proem's cache folder (the compiled plugin, its
    /// answers) and a scratch copy of the file, removed when it ends;
    /// nothing in the plugin's folder. A stable or bootstrap hook sees no
    /// clock, channel or chat.
    Run {
        /// The plugin's .wasm file.
        #[arg(value_name = "FILE.wasm")]
        file: PathBuf,
        /// The plugin's config: a .toml file (the [[plugins]] config table's
        /// keys) or a JSON object [default: {}].
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// The turn, as JSON: any of agent_id, mode, provider, model,
        /// channel, chat_kind, group_title, extra, now (RFC 3339), timezone,
        /// budget_tokens, tools ([{name, description}]), files ([{name,
        /// content}]) over a sample turn (a Telegram group in Berlin,
        /// openai/gpt-5.1, four tools).
        #[arg(long, value_name = "FILE")]
        turn: Option<PathBuf>,
        /// Call every hook this many times (1-1000), one after another, each
        /// in a fresh instance as builds do, and report the median, least
        /// and most time a call took (`elapsed_us` is the median).
        #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
        repeat: u32,
    },
    /// The author's loop: build the plugin in DIR with its template's own
    /// command (Cargo.toml: `cargo build --release --target wasm32-wasip2`;
    /// package.json: `npm run build`; build.sh: `sh build.sh`), check it,
    /// re-pin it into AGENT (as `plugin add --replace`), build AGENT and
    /// print the sections the plugin contributes and what changed in the
    /// prompt since the previous build; then wait for a change in DIR
    /// (polled every --interval-ms, target/, node_modules/ and hidden
    /// folders left out) and do it again, until interrupted. The build
    /// runs as the author, in DIR: it is the author's own folder.
    Dev {
        /// The plugin's source folder, as `plugin new` made it.
        #[arg(value_name = "DIR")]
        dir: PathBuf,
        /// The agent directory to re-pin the plugin into.
        #[arg(long = "into", value_name = "AGENT_DIR")]
        into: PathBuf,
        /// The plugin id in proem.toml (default: from the .wasm file name).
        #[arg(long, value_name = "ID")]
        id: Option<String>,
        /// One cycle (build, check, re-pin, print), then exit: for tests
        /// and CI. Exit 1 when the cycle failed.
        #[arg(long)]
        once: bool,
        /// How often DIR's files are looked at, in milliseconds (100-60000).
        #[arg(long, value_name = "MS", default_value_t = 500, value_parser = clap::value_parser!(u64).range(100..=60_000))]
        interval_ms: u64,
        /// Run this instead of the template's build (`sh -c CMD`, in DIR).
        #[arg(long, value_name = "CMD", conflicts_with = "no_build")]
        build_cmd: Option<String>,
        /// Build nothing: re-pin the .wasm whenever it changes (a build run
        /// elsewhere, or a prebuilt component dropped into DIR).
        #[arg(long)]
        no_build: bool,
        /// The component the build makes [default: Rust: target/wasm32-wasip2/
        /// release/CRATE.wasm; Python, JS: the one .wasm in DIR].
        #[arg(long, value_name = "FILE.wasm")]
        wasm: Option<PathBuf>,
        /// Stop a build that runs longer than this, in seconds (1-86400).
        #[arg(long, value_name = "SECS", default_value_t = 900, value_parser = clap::value_parser!(u64).range(1..=86_400))]
        build_timeout: u64,
    },
    /// Publish a plugin binary as an OCI artifact (one application/wasm
    /// layer, config application/vnd.wasm.config.v0+json), after checking it
    /// loads in this proem. Prints the sha256 to pin.
    Push {
        /// The plugin's .wasm file.
        #[arg(value_name = "FILE.wasm")]
        file: PathBuf,
        /// oci://REGISTRY/REPOSITORY:TAG
        #[arg(value_name = "OCI_REF")]
        reference: String,
        #[command(flatten)]
        timeouts: RegistryTimeouts,
    },
    /// Create a plugin NAME in a new folder of the current one, with the
    /// hooks asked for (the others no-ops) and a native test of each. Rust
    /// (default): a crate with its own rust-toolchain.toml (with the
    /// wasm32-wasip2 target), a cdylib and proem-sdk; build it with `cargo
    /// build --release --target wasm32-wasip2`. Python: componentize-py
    /// from PyPI, pinned in requirements.txt; build with `sh build.sh`, test
    /// with pytest. JavaScript: componentize-qjs (QuickJS) from npm, pinned
    /// in package.json; `npm install`, `npm test`, `npm run build`.
    New {
        /// The crate and plugin name (a-z, 0-9, -, _).
        #[arg(value_name = "NAME")]
        name: String,
        /// The plugin's language: rust, python or js.
        #[arg(long, value_name = "LANG", default_value = "rust")]
        lang: String,
        /// What to implement, comma-separated: stable (a section above the
        /// cache boundary; `sections` is the same), overlay (a prefix for one
        /// provider, also stable), turn (a section below the boundary, with
        /// the turn's time and channel), bootstrap (the agent:bootstrap hook).
        #[arg(long, value_name = "HOOKS", default_value = "stable", value_delimiter = ',')]
        hooks: Vec<String>,
        /// Depend on a local proem-sdk (a folder) instead of the published one.
        #[arg(long, value_name = "DIR")]
        sdk_path: Option<PathBuf>,
    },
}

/// How long `plugin pull` and `plugin push` wait for a registry, in
/// seconds (1 to 86400 each).
#[derive(clap::Args)]
pub struct RegistryTimeouts {
    /// The longest wait to open a connection (TCP and TLS).
    #[arg(long, value_name = "SECS", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub connect_timeout: u64,
    /// The longest wait for the next bytes of an answer.
    #[arg(long, value_name = "SECS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub read_timeout: u64,
    /// The whole transfer: every request, redirect and byte.
    #[arg(long, value_name = "SECS", default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub timeout: u64,
}

#[derive(Args)]
pub struct TurnArgs {
    /// The agent directory (workspace files, skills/, proem.toml).
    #[arg(value_name = "AGENT_DIR")]
    pub agent_dir: PathBuf,
    /// Config file to use instead of AGENT_DIR/proem.toml.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Accept an AGENT_DIR with no proem.toml and no agent files (by default
    /// a usage error, exit 2: it is most often a wrong path).
    #[arg(long)]
    pub allow_empty: bool,
    /// The turn: the library's and the service's type, one flag per field.
    #[command(flatten)]
    pub turn: Turn,
}

/// A flag's parser: a whole number within `bound` (the error names the range).
fn within(bound: Bound) -> impl Fn(&str) -> Result<usize, String> + Clone + Send + Sync + 'static {
    move |text| bound.parse_usize(text)
}

/// [`within`] for a `u64` flag.
fn within_u64(bound: Bound) -> impl Fn(&str) -> Result<u64, String> + Clone + Send + Sync + 'static {
    move |text| bound.parse_u64(text)
}

/// The address `proem serve` listens on unless told otherwise: loopback only.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7878";

/// Every flag that takes a number, as (subcommand path, `--flag`), read off
/// the command line's definition: what the tests sweep with extreme values.
#[doc(hidden)]
pub fn numeric_flags() -> Vec<(Vec<String>, String)> {
    fn walk(command: &clap::Command, path: &mut Vec<String>, out: &mut Vec<(Vec<String>, String)>) {
        use std::any::TypeId;
        let numbers = [
            TypeId::of::<usize>(),
            TypeId::of::<u64>(),
            TypeId::of::<u32>(),
            TypeId::of::<u16>(),
            TypeId::of::<u8>(),
            TypeId::of::<isize>(),
            TypeId::of::<i64>(),
            TypeId::of::<i32>(),
            TypeId::of::<f64>(),
            TypeId::of::<f32>(),
        ];
        for arg in command.get_arguments() {
            let takes = arg.get_value_parser().type_id();
            if let (true, Some(long)) = (numbers.iter().any(|n| takes == *n), arg.get_long()) {
                out.push((path.clone(), format!("--{long}")));
            }
        }
        for sub in command.get_subcommands() {
            path.push(sub.get_name().to_string());
            walk(sub, path, out);
            path.pop();
        }
    }
    let mut out = Vec::new();
    walk(&<Cli as clap::CommandFactory>::command(), &mut Vec::new(), &mut out);
    out
}

/// The executable `proem` hands commands to, beside it.
pub const FULL: &str = "proem-full";

/// The command line of this process (exits with usage on a bad one, 2).
/// `--help` and `--version` print through [`output::print`], so a stdout that
/// cannot take them fails (exit 1) as any command's output does.
pub fn parse() -> Cli {
    match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if matches!(e.kind(), clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion) => {
            // Styled on a terminal, as clap prints it (NO_COLOR honoured).
            let styled = std::io::IsTerminal::is_terminal(&std::io::stdout())
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
            let text = if styled { e.render().ansi().to_string() } else { e.render().to_string() };
            std::process::exit(match output::print(text.as_bytes()) {
                Ok(()) => 0,
                Err(status) => i32::from(status),
            })
        }
        Err(e) => e.exit(),
    }
}

/// `proem`: `build` from the plugin answers kept on disk, everything else
/// handed to [`FULL`] (see the module's documentation). Gives the exit
/// status.
pub fn front() -> u8 {
    output::ignore_file_size_signal();
    proem_core::allocator::tune();
    // Held back until this process is sure to answer: after a hand-over,
    // `proem-full` logs the same things itself.
    init_logging(Logs::HeldBack);
    let cli = parse();
    let full = std::env::current_exe().ok().map(|exe| exe.with_file_name(FULL));
    if let Command::Build { turn, format, strict, quiet } = &cli.command {
        // 'static: the plugins keep their runtime; one per process.
        let runtime: &'static AnswersOnly = Box::leak(Box::new(AnswersOnly::of(full.as_deref())));
        match build_command(turn, *format, *strict, *quiet, runtime) {
            Err(CliError::Bad(ProemError::PluginCodeNeeded | ProemError::TokenizerCodeNeeded)) => {
                release_logs(false);
                tracing::debug!("a plugin must run, or a tokenizer.json be loaded");
            }
            done => {
                release_logs(true);
                return finish_status(done);
            }
        }
    } else {
        release_logs(false);
    }
    hand_over(full.as_deref())
}

/// Replaces this process with [`FULL`], same arguments, environment and
/// standard streams (the process id, and so signals, stay the same).
fn hand_over(full: Option<&Path>) -> u8 {
    tracing::debug!("handing the command to {FULL}");
    let Some(full) = full else {
        say(format_args!("proem: error: cannot find where this executable is, to run {FULL} beside it"));
        return 1;
    };
    let mut args = std::env::args_os();
    let mut command = std::process::Command::new(full);
    #[cfg(unix)]
    let err = {
        use std::os::unix::process::CommandExt;
        command.arg0(args.next().unwrap_or_else(|| "proem".into())).args(args).exec()
    };
    #[cfg(not(unix))]
    let err = match command.args(args.skip(1)).status() {
        Ok(status) => return status.code().map_or(1, |c| c as u8),
        Err(e) => e,
    };
    say(format_args!(
        "proem: error: cannot start {}: {err}; proem runs plugins with it (cargo build and cargo install put it beside proem)",
        full.display()
    ));
    1
}

/// Prints a command's output, or its error, and gives the exit status.
pub fn finish(done: Result<Output, CliError>) -> ExitCode {
    ExitCode::from(finish_status(done))
}

/// [`finish`], the exit status as a number.
fn finish_status(done: Result<Output, CliError>) -> u8 {
    match done {
        Ok(Output { text, failure, warnings }) => {
            let mut lines = String::new();
            for line in &warnings {
                lines.push_str(line);
                lines.push('\n');
            }
            output::write_stderr(lines.as_bytes());
            // A stdout that cannot take it all (a reader that stopped: a
            // broken pipe; a full disk) fails the command with its reason,
            // never a panic (`print!`'s).
            if let Err(status) = output::print(text.as_bytes()) {
                return status;
            }
            match failure {
                None => 0,
                Some(why) => {
                    say(format_args!("proem: error: {why}"));
                    ExitStatus::Failed.code()
                }
            }
        }
        Err(error) => {
            say(format_args!("proem: error: {error}"));
            error.exit_status().code()
        }
    }
}

/// Why a command failed: bad input (exit 1) or a usage error (exit 2).
#[derive(Debug)]
pub enum CliError {
    /// A file or input is wrong (exit 1).
    Bad(ProemError),
    /// The command line is wrong (exit 2), as clap's own usage errors.
    Usage(String),
}

impl From<ProemError> for CliError {
    fn from(e: ProemError) -> CliError {
        CliError::Bad(e)
    }
}

impl CliError {
    /// Its exit status, from the one table ([`ExitStatus`]).
    pub fn exit_status(&self) -> ExitStatus {
        match self {
            CliError::Bad(e) => e.exit_status(),
            CliError::Usage(_) => ExitStatus::Usage,
        }
    }
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CliError::Bad(e) => write!(f, "{e}"),
            CliError::Usage(why) => f.write_str(why),
        }
    }
}

/// What a command prints, and why it fails after printing (exit 1), if so.
#[derive(Default)]
pub struct Output {
    /// What to print on stdout.
    pub text: String,
    /// Why the command fails after printing (exit 1), if it does.
    pub failure: Option<String>,
    /// Lines for stderr, printed first: the build's problems
    /// ([`diagnostics::stderr_lines`]).
    pub warnings: Vec<String>,
}

impl From<String> for Output {
    fn from(text: String) -> Output {
        Output { text, ..Output::default() }
    }
}

/// `proem build`, its plugins run by `runtime`: the build's problems go to
/// stderr unless `quiet`.
pub fn build_command(
    turn: &TurnArgs,
    format: Format,
    strict: bool,
    quiet: bool,
    runtime: &'static dyn Runtime,
) -> Result<Output, CliError> {
    turn.check_not_empty()?;
    let request = BuildRequest { turn: turn.turn()?, format: Some(format), strict };
    // One build and the process ends: no reader thread to start, no
    // in-memory memos to fill (docs/PERFORMANCE.md, round three: 0.2 ms of
    // a 3 ms process). The same bytes as any other build.
    proem_core::parallel::set_reader_thread(false);
    let mut assembler = Assembler::open_with(&turn.agent_dir, turn.config.as_deref(), runtime)?;
    assembler.set_caching(proem_core::memo::Caching::ONE_BUILD);
    // Text prints the prompt and the problems only: the rest of the report
    // (the stable part's SHA-256, each section's tokens, the stable-input
    // rows) is not made.
    assembler.set_prompt_only(format == Format::Text);
    let (built, text) = proem_core::request::build(&assembler, &request)?;
    let warnings = if quiet { Vec::new() } else { diagnostics::stderr_lines(&built) };
    // One command runs per process, and the process ends next: the exit
    // frees the assembler (its workspace, memos and plugins: ~1 MB in
    // hundreds of allocations) at once, where dropping it frees them one by
    // one (~250 K instructions, 7% of a warm `proem build`). Nothing in it
    // writes on drop (the token counts are saved by the build itself).
    std::mem::forget(assembler);
    std::mem::forget(built);
    Ok(Output { text, failure: None, warnings })
}

impl TurnArgs {
    /// [`agent_dir::check`] on this command's folder: a usage error for an
    /// empty one without `--allow-empty`.
    pub fn check_not_empty(&self) -> Result<(), CliError> {
        agent_dir::check(&self.agent_dir, self.config.as_deref(), self.allow_empty).map_err(CliError::Usage)
    }

    /// The turn, with `--tools` read from its path (anywhere: the path is
    /// the user's, unlike a tools file named in the service's body, which
    /// stays inside the agent directory).
    pub fn turn(&self) -> Result<Turn, ProemError> {
        let mut turn = self.turn.clone();
        if let Some(Tools::File(path)) = &turn.tools {
            turn.tools = Some(Tools::List(load_tools_file(std::path::Path::new(path))?));
        }
        Ok(turn)
    }
}

/// How `proem serve` writes its log lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// tracing's text lines.
    Text,
    /// One JSON object a line.
    Json,
}

/// Where log lines go.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Logs {
    /// Straight to stderr.
    Stderr,
    /// Into memory until [`release_logs`] says whether to print them.
    HeldBack,
}

/// Log lines held back (`None`: they go to stderr).
static HELD_LOGS: proem_core::sync::Lock<Option<Vec<u8>>> = proem_core::sync::Lock::new(None);

/// Prints the log lines held back (`print`) or drops them; later lines go
/// straight to stderr.
pub fn release_logs(print: bool) {
    let held = HELD_LOGS.lock().take();
    if let (true, Some(held)) = (print, held) {
        output::write_stderr(&held);
    }
}

/// The log writer: held back or stderr, see [`Logs`].
struct LogWriter;

impl std::io::Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Some(held) = HELD_LOGS.lock().as_mut() {
            held.extend_from_slice(buf);
            return Ok(buf.len());
        }
        output::write_stderr(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

pub fn init_logging(logs: Logs) {
    use tracing_subscriber::filter::Targets;
    use tracing_subscriber::prelude::*;
    if logs == Logs::HeldBack {
        *HELD_LOGS.lock() = Some(Vec::new());
    }
    // `level` or `target=level,...` (tracing's `Targets`: no regular
    // expressions, so none is compiled or linked for a log filter).
    let filter = std::env::var("PROEM_LOG")
        .ok()
        .or_else(|| std::env::var("RUST_LOG").ok())
        .and_then(|v| v.parse::<Targets>().ok())
        .unwrap_or_else(|| Targets::new().with_default(tracing::Level::WARN));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let format = tracing_subscriber::fmt::layer().with_ansi(ansi).with_writer(|| LogWriter);
    let _ = tracing_subscriber::registry().with(format.with_filter(filter)).try_init();
}

#[cfg(test)]
mod exit_status_tests {
    use super::*;
    use clap::Parser;

    /// clap exits by itself on a bad command line: its number is the
    /// table's usage status, which the bindings give a refused turn.
    #[test]
    fn clap_usage_errors_exit_with_the_tables_usage_status() {
        let usage = i32::from(ExitStatus::Usage.code());
        for bad in [&["--budget", "0"][..], &["--chat-kind", "crowd"], &["--chanel", "x"], &["--now", "yesterday"]] {
            let args = ["proem", "build", "examples/marlow"].iter().chain(bad);
            let error = Cli::try_parse_from(args).err().map(|e| e.exit_code());
            assert_eq!(error, Some(usage), "{bad:?}");
        }
        assert_eq!(CliError::Usage(String::new()).exit_status(), ExitStatus::Usage);
        assert_eq!(CliError::Bad(ProemError::input("--timezone", "x")).exit_status(), ExitStatus::Failed);
    }
}
