//! `proem-full`: every proem command, plugins run in wasmtime (build,
//! inspect, serve, plugins), and the plugin author commands (new, check,
//! add, push, pull). `proem` (host/cli) hands it what it cannot answer
//! itself; both parse the same command line (`proem_cli::Cli`).

use proem::{Assembler, PluginSet, ProemError};
use proem_cli::{build_command, finish, init_logging, Cli, CliError, Command, Logs, Output, PluginAction, TurnArgs};
use proem_core::config::{PluginConfig, BUILTIN_IDS};
use proem_full::{check, dev, install, oci, scaffold};
use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    // The compile helper (proem_wasm::compile): before anything else. The
    // arguments as the system gave them: a path that is not UTF-8 is for
    // clap to take or refuse, never a panic here.
    let mut args = std::env::args_os().skip(1);
    if args.next().is_some_and(|first| first == proem_wasm::compile::HELPER_ARG) {
        let rest: Vec<String> = args.map(|a| a.to_string_lossy().into_owned()).collect();
        return ExitCode::from(proem_wasm::compile::helper_main(&rest) as u8);
    }
    if let Some(exe) = proem_wasm::compile::this_executable() {
        proem_wasm::compile::use_helper(exe);
    }
    proem_cli::output::ignore_file_size_signal();
    proem_core::allocator::tune();
    let cli = proem_cli::parse();
    match &cli.command {
        Command::Serve { log_format: proem_cli::LogFormat::Json, .. } => proem_serve::log::init_json(),
        _ => init_logging(Logs::Stderr),
    }
    // tokenizer.json files for every command that builds (`build` goes
    // through proem-core with the wasmtime runtime, not the proem crate).
    proem::install_tokenizers();
    // A command that ends after its build maps the compiled plugins it
    // loads; `serve` and `plugin dev` live on, so they copy them (see
    // proem_wasm::cache::map_entries_in_this_process).
    let lives_on = matches!(&cli.command, Command::Serve { .. } | Command::Plugin { action: PluginAction::Dev { .. } });
    if !lives_on {
        proem_wasm::cache::map_entries_in_this_process();
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

/// The table of a plugin set, each plugin's hooks called on a sample turn
/// (as `plugin check` does, with the plugin's own config and grants),
/// failing when a configured plugin did not load or a hook failed.
fn plugins_output(set: &PluginSet) -> Output {
    let probes = set.probe_hooks(&proem_core::plugin::BuildContext::sample(), &check::sample_files());
    let (text, failed) = proem_cli::inspect::plugins_table(set, &probes);
    Output {
        text,
        failure: (!failed.is_empty()).then(|| {
            format!(
                "{} configured plugin(s) failed to load or failed on a sample turn: {} (the reasons are above)",
                failed.len(),
                failed.join(", ")
            )
        }),
        ..Output::default()
    }
}

fn run(cli: Cli) -> Result<Output, CliError> {
    match cli.command {
        Command::Build { turn, format, strict, quiet } => {
            build_command(&turn, format, strict, quiet, &proem_wasm::WASMTIME)
        }
        Command::Serve {
            agent_dirs,
            allow_empty,
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
                (None, false) => {
                    for dir in &agent_dirs {
                        proem_cli::agent_dir::check(dir, None, allow_empty).map_err(CliError::Usage)?;
                    }
                    Source::Dirs(agent_dirs)
                }
                (None, true) => {
                    return Err(ProemError::input(
                        "AGENT_DIR",
                        "give agent directories, or --agents DIR to serve its subfolders",
                    )
                    .into())
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
                // The line a supervisor waits for: when it cannot be
                // written, nobody learns the port, so the service stops
                // before it takes a request.
                if let Err(status) = proem_cli::output::print(format!("listening on http://{addr}\n").as_bytes()) {
                    std::process::exit(i32::from(status));
                }
            })
            .map_err(|e| ProemError::input("serve", e))?;
            Ok(String::new().into())
        }
        Command::Inspect { turn, by_size } => {
            let order = if by_size { proem_cli::inspect::Order::BySize } else { proem_cli::inspect::Order::Prompt };
            Ok(proem_cli::inspect::table(&build(&turn)?, order).into())
        }
        Command::Diff { before, after } => Ok(proem_cli::diff::run(&before, &after)?.into()),
        Command::Plugin { action: PluginAction::New { name, lang, hooks, sdk_path } } => {
            use scaffold::{new_plugin_in, Lang, ScaffoldHook};
            let hooks = hooks.iter().map(|h| ScaffoldHook::parse(h)).collect::<Result<Vec<_>, _>>();
            let hooks = hooks.map_err(|e| ProemError::input("--hooks", e))?;
            let lang = Lang::parse(&lang).map_err(|e| ProemError::input("--lang", e))?;
            let here = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
            let dir = new_plugin_in(&here, &name, lang, &hooks, sdk_path.as_deref())
                .map_err(|e| ProemError::input("plugin new", e))?;
            Ok(format!("created {}\nnext:\n  cd {name}\n{}", dir.display(), lang.next_steps(&name)).into())
        }
        Command::Plugin { action: PluginAction::Pull { reference, into, id, timeouts } } => {
            let pulled = oci::pull(&reference, &into, id.as_deref(), &registry_timeouts(&timeouts))
                .map_err(|e| ProemError::input("plugin pull", e))?;
            Ok(format!("pulled {reference}\n{}{}", installed(&into, &pulled), install::warm(&into, &pulled)).into())
        }
        Command::Plugin { action: PluginAction::Add { file, into, id, replace } } => {
            let added = install::add_with(&file, &into, id.as_deref(), replace)
                .map_err(|e| ProemError::input("plugin add", e))?;
            Ok(format!("{}{}", installed(&into, &added), install::warm(&into, &added)).into())
        }
        Command::Plugin {
            action: PluginAction::Dev { dir, into, id, once, interval_ms, build_cmd, no_build, wasm, build_timeout },
        } => {
            use std::time::Duration;
            let build = match (build_cmd, no_build) {
                (Some(cmd), _) => dev::Build::Command(cmd),
                (None, true) => dev::Build::Nothing,
                (None, false) => dev::Build::Template,
            };
            let options = dev::Options {
                dir,
                agent: into,
                id,
                once,
                interval: Duration::from_millis(interval_ms),
                build,
                wasm,
                build_timeout: Duration::from_secs(build_timeout),
            };
            let ok =
                dev::run(&options, &mut proem_cli::output::Stdout).map_err(|e| ProemError::input("plugin dev", e))?;
            Ok(Output {
                failure: (!ok).then(|| "plugin dev: the cycle failed (the problem is above)".to_string()),
                ..Output::default()
            })
        }
        Command::Plugin { action: PluginAction::Push { file, reference, timeouts } } => {
            let pushed = oci::push(&file, &reference, &registry_timeouts(&timeouts))
                .map_err(|e| ProemError::input("plugin push", e))?;
            Ok(format!("pushed {} to {}\nsha256 {}\n", file.display(), pushed.reference, pushed.sha256).into())
        }
        Command::Plugin { action: PluginAction::Run { file, config, turn, repeat } } => {
            let json = proem_full::run::run(&file, config.as_deref(), turn.as_deref(), repeat)
                .map_err(|e| ProemError::input("plugin run", e))?;
            Ok(json.into())
        }
        Command::Plugin { action: PluginAction::Check { file, config } } => {
            let report = check::check(&file, config.as_deref());
            Ok(Output {
                text: report.text,
                failure: (!report.ok).then(|| format!("{}: the plugin has problems (listed above)", file.display())),
                ..Output::default()
            })
        }
        Command::Plugins { agent_dir: Some(dir), config, allow_empty } => {
            proem_cli::agent_dir::check(&dir, config.as_deref(), allow_empty).map_err(CliError::Usage)?;
            Ok(plugins_output(Assembler::open(&dir, config.as_deref())?.plugins()))
        }
        Command::Plugins { agent_dir: None, config: Some(_), .. } => {
            Err(ProemError::input("--config", "give the agent directory too: proem plugins AGENT_DIR --config FILE")
                .into())
        }
        Command::Plugins { agent_dir: None, config: None, .. } => {
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

fn build(args: &TurnArgs) -> Result<proem::Built, CliError> {
    args.check_not_empty()?;
    let assembler = Assembler::open(&args.agent_dir, args.config.as_deref())?;
    Ok(assembler.build(&args.turn()?)?)
}
