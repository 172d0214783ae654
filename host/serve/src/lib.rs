//! `proem serve`: the prompt service for agent runtimes in any language.
//!
//! ```text
//! main.rs ─ serve::run(Options) ─ conn.rs     accepting, capping and timing connections (hyper)
//!                              ─ guard.rs    Host, Origin and Content-Type: who is answered
//!                              ─ agents.rs   one warm Assembler per agent, reloaded in the background
//!                              ─ api.rs      routes, build handler, limits, RFC 9457 problems
//!                              ─ metrics.rs  Prometheus text
//!                              ─ page.rs     the inspector page (page/) and openapi.json, embedded
//! ```
//!
//! Builds run on tokio's blocking pool, at most `concurrent` at once, with
//! at most `queue` requests waiting; each request has a deadline. SIGTERM or
//! SIGINT stops accepting, lets in-flight builds finish, then exits.
//!
//! What a client can make the service write to disk does not grow with its
//! requests: plugin answers are read from the cache folder but never
//! written by the service (each plugin set keeps its own, bounded, in
//! memory), and token counts are saved at most once a [`SAVE_INTERVAL`]
//! (one file per tokenizer, at most 1.25 MiB each), and at shutdown.

pub mod agents;
pub mod answer;
pub mod api;
pub mod conn;
pub mod events;
pub mod guard;
pub mod litellm;
pub mod log;
pub mod metrics;
pub mod page;
pub mod printed;
pub mod request_id;
pub mod sources;
pub mod wording;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::signal::unix::Signal;

/// The default address: loopback only.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7878";

/// How often new token counts are saved to the cache folder.
pub const SAVE_INTERVAL: Duration = Duration::from_secs(60);

/// Limits every request runs under (each a `proem serve` flag).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Builds running at once (default: twice the cores).
    pub concurrent: usize,
    /// Requests waiting for a build slot before new ones get 503.
    pub queue: usize,
    /// The largest request body, in bytes.
    pub body_bytes: usize,
    /// A request's deadline, queueing included.
    pub timeout: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2);
        Limits { concurrent: cores * 2, queue: 256, body_bytes: 4 * 1024 * 1024, timeout: Duration::from_secs(10) }
    }
}

/// What `proem serve` was asked for.
#[derive(Debug, Clone)]
pub struct Options {
    /// Where the agents come from.
    pub source: agents::Source,
    /// The address to listen on.
    pub listen: SocketAddr,
    /// A file holding the bearer token clients must send.
    pub token_file: Option<PathBuf>,
    /// Allow a non-loopback address without a token.
    pub insecure: bool,
    /// Host names answered besides loopback ones and the listen address
    /// (`--allow-host`).
    pub allow_hosts: Vec<String>,
    /// The limits.
    pub limits: Limits,
    /// The connection limits.
    pub conn: conn::ConnLimits,
}

/// Runs the service until SIGTERM or SIGINT. `ready` is called with the
/// bound address once it accepts connections.
pub fn run(options: Options, ready: impl FnOnce(SocketAddr)) -> Result<(), String> {
    let token = match &options.token_file {
        Some(path) => {
            let text =
                std::fs::read_to_string(path).map_err(|e| format!("{}: cannot read the token: {e}", path.display()))?;
            let token = text.trim().to_string();
            if token.len() < 16 || token.chars().any(|c| c.is_whitespace() || c.is_control()) {
                return Err(format!(
                    "{}: the token must be one line of at least 16 characters without spaces",
                    path.display()
                ));
            }
            Some(token)
        }
        None => None,
    };
    if !options.listen.ip().is_loopback() && token.is_none() && !options.insecure {
        return Err(format!(
            "--listen {} is reachable from other machines and no --token-file is given: anyone there could \
             read every agent's prompt. Give --token-file FILE, or --insecure if that is what you want",
            options.listen
        ));
    }
    let guard = guard::Guard::new(options.listen, &options.allow_hosts)?;
    proem_core::tokens::save_token_counts_after_builds(false);
    proem_core::plugin::answers::write_new_answers(false);
    let agents = Arc::new(agents::Agents::open(options.source.clone())?);
    let runtime = refused_as_error("cannot start the service's threads", || {
        tokio::runtime::Builder::new_multi_thread().enable_all().thread_name("proem-serve").build()
    })?;
    let served = runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(options.listen)
            .await
            .map_err(|e| format!("cannot listen on {}: {e}", options.listen))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        let signals = shutdown_signals()?;
        let state = Arc::new(api::AppState {
            agents: agents.clone(),
            metrics: Arc::new(metrics::Metrics::default()),
            limits: options.limits,
            slots: tokio::sync::Semaphore::new(options.limits.concurrent.max(1)),
            waiting: AtomicUsize::new(0),
            token,
            guard,
            stopping: AtomicBool::new(false),
            events: events::Hub::default(),
            printed: printed::Printed::default(),
        });
        let reloader = tokio::spawn(reload_loop(state.clone()));
        let saver = tokio::spawn(save_loop());
        ready(addr);
        let stopping = state.clone();
        let stop = async move {
            shutdown_signal(signals).await;
            stopping.stopping.store(true, Ordering::SeqCst);
            stopping.events.close();
            tracing::info!("shutting down: finishing the builds in flight");
        };
        // In flight at the signal: a build within its deadline, a response
        // within the write stall limit.
        let drain = options.limits.timeout.saturating_add(options.conn.header_timeout);
        conn::serve(listener, api::router(state.clone()), options.conn, state.metrics.clone(), stop, drain).await;
        reloader.abort();
        saver.abort();
        Ok(())
    });
    let _ = runtime.block_on(runtime.spawn_blocking(proem_core::tokens::save_token_counts));
    served
}

/// Saves new token counts every [`SAVE_INTERVAL`], off the request path.
async fn save_loop() {
    loop {
        tokio::time::sleep(SAVE_INTERVAL).await;
        let _ = tokio::task::spawn_blocking(proem_core::tokens::save_token_counts).await;
    }
}

/// Looks for changed agents every [`agents::POLL_INTERVAL`], off the
/// request path, and tells the event streams what changed (the agents'
/// workspace files only while a stream is open).
async fn reload_loop(state: Arc<api::AppState>) {
    use events::Change;
    loop {
        tokio::time::sleep(agents::POLL_INTERVAL).await;
        let polled = state.clone();
        let work = move || {
            let changes = polled.agents.poll();
            let folders: Vec<(String, PathBuf)> = polled
                .agents
                .all()
                .iter()
                .map(|a| {
                    let a = a.lock();
                    (a.id.clone(), a.dir.clone())
                })
                .collect();
            polled.events.look_at_folders(&folders);
            changes
        };
        let Ok(changes) = tokio::task::spawn_blocking(work).await else { continue };
        publish_reloads(&state, changes.reloaded);
        for id in changes.added {
            tracing::info!(agent = %id, "agent added");
        }
        for id in changes.removed {
            tracing::info!(agent = %id, "agent removed");
            state.events.publish(Change::new(&id, "removed", Vec::new(), None));
        }
    }
}

/// Counts and announces reloads (the poll's, or a request's that found its
/// agent changed: [`agents::Agents::reload_if_changed`]).
pub(crate) fn publish_reloads(state: &api::AppState, reloaded: Vec<(String, Result<(), String>)>) {
    use events::Change;
    for (id, result) in reloaded {
        state.metrics.reload(&id, result.is_ok());
        let change = match &result {
            Ok(()) => Change::new(&id, "config", Vec::new(), None),
            Err(why) => Change::new(&id, "reload_failed", Vec::new(), Some(why)),
        };
        state.events.publish(change);
    }
}

/// The SIGTERM and SIGINT listeners, made before the service says it
/// listens.
fn shutdown_signals() -> Result<(Signal, Signal), String> {
    use tokio::signal::unix::{signal, SignalKind};
    refused_as_error("cannot listen for SIGTERM and SIGINT", || {
        Ok((signal(SignalKind::terminate())?, signal(SignalKind::interrupt())?))
    })
}

/// What `make` makes, or why not in words beginning with `what`. tokio
/// makes its signal pipe once, with the runtime's signal driver, and
/// panics when the system refuses it (out of file descriptors at start):
/// here that is an error worded as the others, not a panic and its trace.
fn refused_as_error<T>(what: &str, make: impl FnOnce() -> std::io::Result<T>) -> Result<T, String> {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let made = std::panic::catch_unwind(std::panic::AssertUnwindSafe(make));
    std::panic::set_hook(hook);
    match made {
        Ok(Ok(made)) => Ok(made),
        Ok(Err(e)) => Err(format!("{what}: {e}")),
        Err(_) => Err(format!(
            "{what}: the system refused a socket pair (out of file descriptors? raise the limit, ulimit -n)"
        )),
    }
}

/// Waits for SIGTERM or SIGINT.
async fn shutdown_signal((mut term, mut interrupt): (Signal, Signal)) {
    tokio::select! {
        _ = term.recv() => {}
        _ = interrupt.recv() => {}
    }
}
