//! `proem-full`: every proem command, plugins run in wasmtime (build,
//! inspect, serve, plugins), and the plugin author commands (new, check,
//! add, push, pull). `proem` (host/cli) hands it what it cannot answer
//! itself; both parse the same command line (`proem_cli::Cli`).

use proem::{Assembler, PluginSet, ProemError};
use proem_cli::{build_command, finish, init_logging, Cli, Command, Logs, Output, PluginAction, TurnArgs};
use proem_core::config::{PluginConfig, BUILTIN_IDS};
use proem_full::{check, install, oci, scaffold};
use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    proem_core::allocator::tune();
    let cli = proem_cli::parse();
    match &cli.command {
        Command::Serve { log_format: proem_cli::LogFormat::Json, .. } => proem_serve::log::init_json(),
        _ => init_logging(Logs::Stderr),
    }
    finish(run(cli))
}

/// What `plugin add` and `plugin pull` tell the operator.
fn installed(agent_dir: &std::path::Path, done: &install::Installed) -> String {
    format!(
        "wrote {}\nadded [[plugins]] id = \"{}\" to {} with sha256 = \"{}\"\n",
        agent_dir.join(&done.path).display(),
        done.id,
        agent_dir.join("proem.toml").display(),
        done.sha256
    )
}

/// How long `plugin pull` and `plugin push` wait, as the flags say.
fn registry_timeouts(flags: &proem_cli::RegistryTimeouts) -> oci::Timeouts {
    use std::time::Duration;
    oci::Timeouts {
        connect: Duration::from_secs(flags.connect_timeout),
        read: Duration::from_secs(flags.read_timeout),
        total: Duration::from_secs(flags.timeout),
    }
}

/// The table of a plugin set, failing when a configured plugin did not load.
fn plugins_output(set: &PluginSet) -> Output {
    let failed: Vec<&str> = set.plugins().iter().filter(|p| p.state.is_err()).map(|p| p.id.as_str()).collect();
    Output {
        text: proem_cli::inspect::plugins_table(set),
        failure: (!failed.is_empty()).then(|| {
            format!(
                "{} configured plugin(s) failed to load: {} (the reasons are above)",
                failed.len(),
                failed.join(", ")
            )
        }),
    }
}

fn run(cli: Cli) -> Result<Output, ProemError> {
    match cli.command {
        Command::Build { turn, format, strict } => build_command(&turn, format, strict, &proem_wasm::WASMTIME),
        Command::Serve {
            agent_dirs,
            agents,
            listen,
            token_file,
            insecure,
            allow_hosts,
            concurrent,
            queue,
            max_body,
            timeout_ms,
            max_connections,
            header_timeout_ms,
            max_header_bytes,
            log_format: _,
        } => {
            use proem_serve::{agents::Source, Limits, Options};
            let source = match (agents, agent_dirs.is_empty()) {
                (Some(dir), _) => Source::Parent(dir),
                (None, false) => Source::Dirs(agent_dirs),
                (None, true) => {
                    return Err(ProemError::input(
                        "AGENT_DIR",
                        "give agent directories, or --agents DIR to serve its subfolders",
                    ))
                }
            };
            let defaults = Limits::default();
            let limits = Limits {
                concurrent: concurrent.unwrap_or(defaults.concurrent),
                queue,
                body_bytes: max_body,
                timeout: std::time::Duration::from_millis(timeout_ms),
            };
            use proem_serve::conn::ConnLimits;
            let conn = ConnLimits {
                max_connections: max_connections.unwrap_or_else(|| ConnLimits::default().max_connections),
                header_timeout: std::time::Duration::from_millis(header_timeout_ms),
                header_bytes: max_header_bytes,
            };
            let options = Options { source, listen, token_file, insecure, allow_hosts, limits, conn };
            proem_serve::run(options, |addr| {
                use std::io::Write;
                println!("listening on http://{addr}");
                let _ = std::io::stdout().flush();
            })
            .map_err(|e| ProemError::input("serve", e))?;
            Ok(String::new().into())
        }
        Command::Inspect { turn } => Ok(proem_cli::inspect::table(&build(&turn)?).into()),
        Command::Plugin { action: PluginAction::New { name, hooks, sdk_path } } => {
            use scaffold::{new_plugin, ScaffoldHook};
            let hooks = hooks.iter().map(|h| ScaffoldHook::parse(h)).collect::<Result<Vec<_>, _>>();
            let hooks = hooks.map_err(|e| ProemError::input("--hooks", e))?;
            let here = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
            let dir = new_plugin(&here, &name, &hooks, sdk_path.as_deref())
                .map_err(|e| ProemError::input("plugin new", e))?;
            Ok(format!(
                "created {}
next:
  cd {name}
  cargo build --release --target wasm32-wasip2
  proem plugin check target/wasm32-wasip2/release/{}.wasm
",
                dir.display(),
                name.replace('-', "_")
            )
            .into())
        }
        Command::Plugin { action: PluginAction::Pull { reference, into, id, timeouts } } => {
            let pulled = oci::pull(&reference, &into, id.as_deref(), &registry_timeouts(&timeouts))
                .map_err(|e| ProemError::input("plugin pull", e))?;
            Ok(format!("pulled {reference}\n{}", installed(&into, &pulled)).into())
        }
        Command::Plugin { action: PluginAction::Add { file, into, id } } => {
            let added = install::add(&file, &into, id.as_deref()).map_err(|e| ProemError::input("plugin add", e))?;
            Ok(installed(&into, &added).into())
        }
        Command::Plugin { action: PluginAction::Push { file, reference, timeouts } } => {
            let pushed = oci::push(&file, &reference, &registry_timeouts(&timeouts))
                .map_err(|e| ProemError::input("plugin push", e))?;
            Ok(format!("pushed {} to {}\nsha256 {}\n", file.display(), pushed.reference, pushed.sha256).into())
        }
        Command::Plugin { action: PluginAction::Check { file } } => {
            let report = check::check(&file);
            Ok(Output {
                text: report.text,
                failure: (!report.ok).then(|| format!("{}: the plugin has problems (listed above)", file.display())),
            })
        }
        Command::Plugins { agent_dir: Some(dir), config } => {
            Ok(plugins_output(Assembler::open(&dir, config.as_deref())?.plugins()))
        }
        Command::Plugins { agent_dir: None, config: Some(_) } => {
            Err(ProemError::input("--config", "give the agent directory too: proem plugins AGENT_DIR --config FILE"))
        }
        Command::Plugins { agent_dir: None, config: None } => {
            let configs: Vec<PluginConfig> = BUILTIN_IDS
                .into_iter()
                .map(|id| PluginConfig {
                    id: id.to_string(),
                    source: Some(format!("builtin:{id}")),
                    ..PluginConfig::default()
                })
                .collect();
            let here = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
            Ok(plugins_output(&proem::load_plugins(&configs, &here, proem_core::cache_dir::default_path().as_deref())?))
        }
    }
}

fn build(args: &TurnArgs) -> Result<proem::Built, ProemError> {
    let assembler = Assembler::open(&args.agent_dir, args.config.as_deref())?;
    assembler.build(&args.turn()?)
}
