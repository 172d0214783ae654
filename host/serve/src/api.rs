//! The HTTP API: routes, the build handler, and RFC 9457 problem responses.
//!
//! Bad input is always a 4xx naming what is wrong (never a 500); a panic,
//! in a build or in a handler, is a 500 problem that is logged, and the
//! server goes on. Every request first passes the [`guard`](crate::guard)
//! (Host, Origin, Content-Type), then, on `/v1` and `/metrics`, the token.
//!
//! A build request's body counts against the build slots like the build:
//! one declared at most [`UNQUEUED_BODY_BYTES`] is read and parsed before
//! queueing (so a memoised build needs no slot), a larger or chunked one
//! waits for a slot before a byte of it is read, and is parsed on the
//! blocking pool under that slot.

use crate::agents::{without_server_paths, Agents};
use crate::guard::Guard;
use crate::metrics::Metrics;
use crate::{page, Limits};
use axum::body::{Body, Bytes};
use axum::extract::{Path, RawQuery, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use proem_core::error::ProemError;
use proem_core::request::BuildRequest;
use serde_json::{json, Value};
use std::future::Future;
use std::path::Path as FsPath;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Instant, SystemTime};
use tokio::sync::{Semaphore, SemaphorePermit};

/// A build request body declared (`Content-Length`) at most this large is
/// read before the request queues for a build slot; a larger or chunked one
/// is read only once it holds a slot.
pub const UNQUEUED_BODY_BYTES: usize = 64 * 1024;

/// What every handler shares.
pub struct AppState {
    /// The agents.
    pub agents: Arc<Agents>,
    /// The counters (shared with the accept loop).
    pub metrics: Arc<Metrics>,
    /// Limits.
    pub limits: Limits,
    /// Build slots (`limits.concurrent` permits).
    pub slots: Semaphore,
    /// Requests waiting for a slot.
    pub waiting: AtomicUsize,
    /// The bearer token, when one is required.
    pub token: Option<String>,
    /// Who is answered at all.
    pub guard: Guard,
    /// Set when shutdown begins: `/readyz` says 503.
    pub stopping: AtomicBool,
}

/// The router.
pub fn router(state: Arc<AppState>) -> Router {
    let api = Router::new()
        .route("/v1/agents", get(list_agents))
        .route("/v1/agents/{id}", get(agent))
        .route("/v1/agents/{id}/build", post(build))
        .route("/v1/agents/{id}/inspect", post(inspect))
        .route("/v1/openapi.json", get(openapi))
        .route(crate::litellm::PATH, get(litellm_prompt))
        .route("/metrics", get(metrics))
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), require_token));
    let routes = Router::new()
        .merge(api)
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .route("/", get(|| async { page::file("index.html") }))
        .route("/app.js", get(|| async { page::file("app.js") }))
        .route("/app.css", get(|| async { page::file("app.css") }))
        .fallback(|| async { Problem::new(StatusCode::NOT_FOUND, "not-found", "no such route".into()) });
    with_layers(routes, state)
}

/// `routes` behind what every request passes: the panic catcher outermost,
/// then the guard.
fn with_layers(routes: Router<Arc<AppState>>, state: Arc<AppState>) -> Router {
    routes
        .layer(axum::middleware::from_fn_with_state(state.clone(), admit))
        .layer(axum::middleware::from_fn_with_state(state.clone(), catch_panic))
        .with_state(state)
}

/// The guard's rules (see [`crate::guard`]), before anything else;
/// and on every response, what keeps a page elsewhere from reading it
/// through a `<script>` or `<img>`.
async fn admit(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    let mut response = match state.guard.check(request.method(), request.uri(), request.headers()) {
        Ok(()) => next.run(request).await,
        Err(refused) => problem_response(&state, Problem::new(refused.status, refused.slug, refused.detail)),
    };
    let headers = response.headers_mut();
    headers.insert("cross-origin-resource-policy", HeaderValue::from_static("same-origin"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}

/// A panic anywhere in a request's handling is a 500 problem, logged; the
/// connection and the server go on.
async fn catch_panic(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    match CatchUnwind(Box::pin(next.run(request))).await {
        Ok(response) => response,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            tracing::error!("a request handler panicked: {what}");
            problem_response(&state, internal_error("the request's handling panicked"))
        }
    }
}

/// A future that turns a panic while polling its inner future into an `Err`.
struct CatchUnwind<F>(Pin<Box<F>>);

impl<F: Future> Future for CatchUnwind<F> {
    type Output = std::thread::Result<F::Output>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = self.0.as_mut();
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(output)) => Poll::Ready(Ok(output)),
            Err(panic) => Poll::Ready(Err(panic)),
        }
    }
}

fn internal_error(what: &str) -> Problem {
    Problem::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "internal",
        format!("{what}; this is a bug in proem, logged on the server"),
    )
}

/// An RFC 9457 problem document.
#[derive(Debug)]
pub struct Problem {
    status: StatusCode,
    slug: &'static str,
    detail: String,
    extra: serde_json::Map<String, Value>,
    retry_after: Option<u64>,
}

impl Problem {
    /// A problem with a status, a type slug and what happened.
    pub fn new(status: StatusCode, slug: &'static str, detail: String) -> Problem {
        Problem { status, slug, detail, extra: serde_json::Map::new(), retry_after: None }
    }

    /// Adds a member (e.g. `field`, `needed`).
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Problem {
        self.extra.insert(key.to_string(), value.into());
        self
    }

    fn retry_after(mut self, seconds: u64) -> Problem {
        self.retry_after = Some(seconds);
        self
    }

    /// The status code.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// What happened.
    pub fn detail(&self) -> &str {
        &self.detail
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let mut body = json!({
            "type": format!("urn:proem:problem:{}", self.slug),
            "title": self.status.canonical_reason().unwrap_or("Error"),
            "status": self.status.as_u16(),
            "detail": self.detail,
        });
        if let Value::Object(map) = &mut body {
            map.extend(self.extra);
        }
        let mut response = (self.status, body.to_string()).into_response();
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/problem+json"));
        if let Some(s) = self.retry_after {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(s));
        }
        response
    }
}

async fn require_token(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    if let Some(token) = &state.token {
        let given = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        if !constant_time_eq(given.as_bytes(), token.as_bytes()) {
            state.metrics.problem(401);
            let problem = Problem::new(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "this service needs `Authorization: Bearer <token>` (the token in its --token-file)".into(),
            );
            let mut response = problem.into_response();
            response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return response;
        }
    }
    next.run(request).await
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn readyz(State(state): State<Arc<AppState>>) -> Response {
    let loaded = state.agents.all().iter().filter(|a| a.lock().assembler.is_some()).count();
    if state.stopping.load(Ordering::Relaxed) {
        return Problem::new(StatusCode::SERVICE_UNAVAILABLE, "stopping", "shutting down".into()).into_response();
    }
    if loaded == 0 {
        return Problem::new(StatusCode::SERVICE_UNAVAILABLE, "no-agent", "no agent is loaded".into()).into_response();
    }
    format!("ready: {loaded} agent(s)\n").into_response()
}

async fn openapi() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], page::OPENAPI).into_response()
}

async fn metrics(State(state): State<Arc<AppState>>) -> Response {
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], state.metrics.render()).into_response()
}

fn secs(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// One agent as `GET /v1/agents` lists it.
fn summary(agent: &crate::agents::Agent) -> Value {
    json!({
        "id": agent.id,
        "status": if agent.assembler.is_none() { "not_loaded" } else if agent.last_error.is_some() { "stale" } else { "ok" },
        "last_error": agent.last_error,
        "reloads": agent.reloads,
        "loaded_at": secs(agent.loaded_at),
    })
}

async fn list_agents(State(state): State<Arc<AppState>>) -> Response {
    let agents: Vec<Value> = state.agents.all().iter().map(|a| summary(&a.lock())).collect();
    axum::Json(json!({ "agents": agents })).into_response()
}

async fn agent(State(state): State<Arc<AppState>>, Path(id): Path<String>) -> Response {
    let Some(agent) = state.agents.get(&id) else { return problem_response(&state, unknown_agent(&state, &id)) };
    let agent = agent.lock();
    let mut out = summary(&agent);
    if let Some(assembler) = &agent.assembler {
        let c = assembler.config();
        let plugins: Vec<Value> = assembler
            .plugins()
            .plugins()
            .iter()
            .map(|p| {
                let (info, error) = match &p.state {
                    Ok(ready) => (Some(&ready.info), None),
                    Err(why) => (None, Some(without_server_paths(why, &agent.dir))),
                };
                json!({
                    "id": p.id,
                    "origin": without_server_paths(&p.origin, &agent.dir),
                    "status": p.status(),
                    "error": error,
                    "version": info.map(|i| i.version.clone()),
                    "api_version": info.map(|i| i.api_version.clone()),
                    "hooks": info.map(|i| i.hooks()),
                    "asks_for": info.map(|i| i.capabilities.clone()).unwrap_or_default(),
                    "granted": p.grants.names(),
                    "required": p.required,
                })
            })
            .collect();
        let map = out.as_object_mut().expect("summary is an object");
        map.insert(
            "config".into(),
            json!({
                "agent_id": c.agent.id,
                "kind": format!("{:?}", c.agent.kind).to_lowercase(),
                "mode": c.agent.mode,
                "provider": c.provider.name,
                "model": c.provider.model,
                "budget_tokens": c.budget.tokens(),
            }),
        );
        map.insert("plugins".into(), Value::Array(plugins));
        map.insert("memo_hits".into(), assembler.memo_hits().into());
    }
    axum::Json(out).into_response()
}

/// A problem as the response, counted once in the metrics.
fn problem_response(state: &AppState, problem: Problem) -> Response {
    state.metrics.problem(problem.status().as_u16());
    problem.into_response()
}

fn unknown_agent(state: &AppState, id: &str) -> Problem {
    let known: Vec<String> = state.agents.all().iter().map(|a| a.lock().id.clone()).collect();
    Problem::new(
        StatusCode::NOT_FOUND,
        "unknown-agent",
        format!("no agent {:?} (agents: {})", proem_core::text::one_line(id, 64), known.join(", ")),
    )
}

async fn build(State(state): State<Arc<AppState>>, Path(id): Path<String>, headers: HeaderMap, body: Body) -> Response {
    match run_build(&state, &id, &headers, body).await {
        Ok((_, text, format)) => {
            let content_type = if format == proem_core::render::Format::Text {
                "text/plain; charset=utf-8"
            } else {
                "application/json"
            };
            ([(header::CONTENT_TYPE, content_type)], text).into_response()
        }
        Err(problem) => problem_response(&state, problem),
    }
}

/// LiteLLM's Generic Prompt Management API (see [`crate::litellm`]): the
/// query is a build body, built on the build's one path.
async fn litellm_prompt(State(state): State<Arc<AppState>>, RawQuery(query): RawQuery) -> Response {
    let (agent, body) = match crate::litellm::parse_query(query.as_deref().unwrap_or("")) {
        Ok(parsed) => parsed,
        Err(bad) => {
            let problem = Problem::new(StatusCode::BAD_REQUEST, "bad-request", bad.detail).with("field", bad.field);
            return problem_response(&state, problem);
        }
    };
    match run_build(&state, &agent, &HeaderMap::new(), Body::from(body)).await {
        Ok((built, text, _)) => match crate::litellm::answer(&agent, &text, &built.stable_hash) {
            Some(answer) => axum::Json(answer).into_response(),
            None => problem_response(&state, internal_error("the openai rendering had no system message")),
        },
        Err(problem) => problem_response(&state, problem),
    }
}

/// The inspector page's build: the JSON report plus each section's body
/// hash, so the page can say which section changed between two builds.
async fn inspect(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    match run_build(&state, &id, &headers, body).await {
        Ok((built, _, _)) => {
            let hashes: Vec<Value> = built
                .sections
                .iter()
                .map(|s| json!({"id": s.id, "source": s.source, "hash": format!("{:016x}", s.body_hash)}))
                .collect();
            axum::Json(json!({ "build": &*built, "section_hashes": hashes })).into_response()
        }
        Err(problem) => problem_response(&state, problem),
    }
}

async fn run_build(
    state: &Arc<AppState>,
    id: &str,
    headers: &HeaderMap,
    body: Body,
) -> Result<(Arc<proem::Built>, String, proem_core::render::Format), Problem> {
    // The deadline covers reading the body and queueing too.
    let started = Instant::now();
    let deadline = started + state.limits.timeout;
    let (dir, assembler) = serving(state, id)?;
    let declared = declared_length(headers);
    if declared.is_some_and(|n| n > state.limits.body_bytes as u64) {
        return Err(too_large(state));
    }
    let small = !headers.contains_key(header::TRANSFER_ENCODING)
        && declared.unwrap_or(0) <= UNQUEUED_BODY_BYTES.min(state.limits.body_bytes) as u64;
    let (request, permit) = if small {
        let bytes = read_body(state, body, deadline).await?;
        let request = parse_request(&bytes)?;
        if let Some(hit) = memoised(state, id, &assembler, &request, &dir)? {
            return Ok(hit);
        }
        (request, take_slot(state, deadline).await?)
    } else {
        let permit = take_slot(state, deadline).await?;
        let bytes = read_body(state, body, deadline).await?;
        (off_thread(move || parse_request(&bytes)).await??, permit)
    };

    let memo_before = assembler.memo_hits();
    let work = {
        let assembler = assembler.clone();
        let request = request.clone();
        off_thread(move || proem_core::request::build(assembler.core(), &request))
    };
    let joined = tokio::time::timeout_at(deadline.into(), work).await;
    drop(permit);
    let elapsed = started.elapsed();
    let outcome = match joined {
        Err(_) => {
            state.metrics.build(id, "timeout", elapsed, None, false);
            return Err(timed_out(state));
        }
        Ok(Err(problem)) => {
            state.metrics.build(id, "panic", elapsed, None, false);
            return Err(problem);
        }
        Ok(Ok(result)) => result,
    };
    let memo_hit = assembler.memo_hits() > memo_before;
    match outcome {
        Ok((built, text)) => {
            state.metrics.build(id, "ok", elapsed, Some(&built), memo_hit);
            Ok((Arc::new(built), text, request.format()))
        }
        Err(e) => {
            let problem = problem_of(e, &dir);
            let outcome = match problem.status() {
                StatusCode::UNPROCESSABLE_ENTITY => "budget",
                s if s.is_client_error() => "bad_request",
                _ => "failed",
            };
            state.metrics.build(id, outcome, elapsed, None, false);
            Err(problem)
        }
    }
}

/// The agent's folder and the assembler serving it, or why there is none.
fn serving(state: &AppState, id: &str) -> Result<(std::path::PathBuf, Arc<proem::Assembler>), Problem> {
    let agent = state.agents.get(id).ok_or_else(|| unknown_agent(state, id))?;
    let agent = agent.lock();
    match &agent.assembler {
        Some(a) => Ok((agent.dir.clone(), a.clone())),
        None => Err(Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "agent-not-loaded",
            format!("agent {id} has not loaded: {}", agent.last_error.as_deref().unwrap_or("not loaded yet")),
        )),
    }
}

/// The body's declared length (`Content-Length`), when it declares one.
fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers.get(header::CONTENT_LENGTH)?.to_str().ok()?.trim().parse().ok()
}

/// The whole body, within `--max-body` and the request's deadline.
async fn read_body(state: &AppState, body: Body, deadline: Instant) -> Result<Bytes, Problem> {
    let read = tokio::time::timeout_at(deadline.into(), axum::body::to_bytes(body, state.limits.body_bytes)).await;
    match read {
        Err(_) => Err(Problem::new(
            StatusCode::REQUEST_TIMEOUT,
            "body-timeout",
            format!("the request body did not arrive within {} ms (--timeout-ms)", state.limits.timeout.as_millis()),
        )),
        Ok(Err(_)) => Err(too_large(state)),
        Ok(Ok(bytes)) => Ok(bytes),
    }
}

fn too_large(state: &AppState) -> Problem {
    Problem::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "too-large",
        format!("the request body is over the {} byte limit (--max-body)", state.limits.body_bytes),
    )
    .with("limit", state.limits.body_bytes)
}

/// The build request in `bytes` (nothing or whitespace: every field unset),
/// or a 400 naming the field at fault.
fn parse_request(bytes: &[u8]) -> Result<BuildRequest, Problem> {
    BuildRequest::from_json(bytes).map_err(|e| {
        let detail = match &e.field {
            None => format!("the body is not a build request: {}", e.message),
            Some(field) => format!("field `{field}`: {}", e.message),
        };
        Problem::new(StatusCode::BAD_REQUEST, "bad-request", detail).with("field", e.field.unwrap_or_default())
    })
}

/// A build the memo holds, answered here on the async thread: no slot, no
/// hand-off to the blocking pool (a tools file would mean a read, so that
/// goes the long way: `memoised` says `None`). Only for bodies small enough
/// to parse here.
fn memoised(
    state: &AppState,
    id: &str,
    assembler: &proem::Assembler,
    request: &BuildRequest,
    dir: &FsPath,
) -> Result<Option<(Arc<proem::Built>, String, proem_core::render::Format)>, Problem> {
    let started = Instant::now();
    let Some(built) = assembler.memoised(&request.turn) else { return Ok(None) };
    let text = proem_core::request::respond(&built, request).map_err(|e| problem_of(e, dir))?;
    state.metrics.build(id, "ok", started.elapsed(), Some(&built), true);
    Ok(Some((Arc::new(built), text, request.format())))
}

/// A build slot: a free one at once, else a wait in the queue, or 503 when
/// too many are waiting already or the deadline passes first.
async fn take_slot(state: &AppState, deadline: Instant) -> Result<SemaphorePermit<'_>, Problem> {
    if let Ok(free) = state.slots.try_acquire() {
        return Ok(free);
    }
    let waiting = state.waiting.fetch_add(1, Ordering::SeqCst);
    let _left = Decrement(&state.waiting);
    if waiting >= state.limits.queue {
        return Err(Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "overloaded",
            format!(
                "{} builds are running and {} waiting, the most this service queues (--queue); try again shortly",
                state.limits.concurrent, state.limits.queue
            ),
        )
        .retry_after(1));
    }
    tokio::time::timeout_at(deadline.into(), state.slots.acquire())
        .await
        .map_err(|_| timed_out(state))?
        .map_err(|_| Problem::new(StatusCode::SERVICE_UNAVAILABLE, "stopping", "shutting down".into()))
}

/// Runs `work` on tokio's blocking pool. A panic in it is logged and
/// becomes a 500 problem: the request fails, the server goes on.
async fn off_thread<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Result<T, Problem> {
    tokio::task::spawn_blocking(work).await.map_err(|join_error| {
        let what = if join_error.is_panic() { "panicked" } else { "was cancelled" };
        tracing::error!("a build {what}: {join_error}");
        internal_error(&format!("the build {what}"))
    })
}

fn timed_out(state: &AppState) -> Problem {
    Problem::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "timeout",
        format!("the build did not finish within {} ms (--timeout-ms)", state.limits.timeout.as_millis()),
    )
    .retry_after(1)
}

/// A build error as a problem: what the caller sent is a 400 naming the
/// field, a budget too small a 422 with the overshoot, the agent's own
/// trouble (its config, a required plugin) a 5xx. Files are named relative
/// to the agent's folder `dir`, never by a server path.
fn problem_of(e: ProemError, dir: &FsPath) -> Problem {
    let detail = without_server_paths(&e.to_string(), dir);
    match e {
        ProemError::BudgetTooSmall { budget, needed, over } => {
            Problem::new(StatusCode::UNPROCESSABLE_ENTITY, "budget-too-small", detail)
                .with("field", "budget")
                .with("budget", budget)
                .with("needed", needed)
                .with("over", over)
        }
        ProemError::Input { input, .. } => {
            let field = input.trim_start_matches('-').replace('-', "_");
            Problem::new(StatusCode::BAD_REQUEST, "bad-request", detail).with("field", field)
        }
        ProemError::Tools { .. } => Problem::new(StatusCode::BAD_REQUEST, "bad-request", detail).with("field", "tools"),
        ProemError::Plugin { id, .. } => {
            Problem::new(StatusCode::BAD_GATEWAY, "plugin-failed", detail).with("plugin", id)
        }
        _ => Problem::new(StatusCode::SERVICE_UNAVAILABLE, "agent-unavailable", detail),
    }
}

struct Decrement<'a>(&'a AtomicUsize);

impl Drop for Decrement<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_in_a_build_is_a_500_and_the_runtime_goes_on() {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).build().unwrap();
        rt.block_on(async {
            let hook = std::panic::take_hook();
            std::panic::set_hook(Box::new(|_| {}));
            let failed = off_thread(|| -> u32 { panic!("a bug") }).await.unwrap_err();
            std::panic::set_hook(hook);
            assert_eq!(failed.status(), StatusCode::INTERNAL_SERVER_ERROR);
            let response = failed.into_response();
            assert_eq!(response.headers()[header::CONTENT_TYPE], "application/problem+json");
            // The same pool answers the next request.
            assert_eq!(off_thread(|| 7).await.unwrap(), 7);
        });
    }

    /// A service state with no agent, for routes under test.
    fn bare_state() -> Arc<AppState> {
        let listen = "127.0.0.1:0".parse().unwrap();
        Arc::new(AppState {
            agents: Arc::new(Agents::open(crate::agents::Source::Dirs(Vec::new())).unwrap()),
            metrics: Arc::new(Metrics::default()),
            limits: Limits::default(),
            slots: Semaphore::new(1),
            waiting: AtomicUsize::new(0),
            token: None,
            guard: Guard::new(listen, &[]).unwrap(),
            stopping: AtomicBool::new(false),
        })
    }

    #[test]
    fn a_panic_in_a_handler_on_the_async_path_is_a_500_problem_and_the_connection_goes_on() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        rt.block_on(async {
            let state = bare_state();
            let routes = Router::new()
                .route("/boom", get(|| async { panic!("a bug in a handler") as &'static str }))
                .route("/fine", get(|| async { "fine" }));
            let router = with_layers(routes, state.clone());
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let limits = crate::conn::ConnLimits::default();
            let stop = std::future::pending::<()>();
            let server = tokio::spawn(crate::conn::serve(
                listener,
                router,
                limits,
                state.metrics.clone(),
                stop,
                std::time::Duration::ZERO,
            ));
            let hook = std::panic::take_hook();
            std::panic::set_hook(Box::new(|_| {}));
            let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
            let ask = "GET /boom HTTP/1.1\r\nHost: localhost\r\n\r\nGET /fine HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
            stream.write_all(ask.as_bytes()).await.unwrap();
            let mut answer = String::new();
            stream.read_to_string(&mut answer).await.unwrap();
            std::panic::set_hook(hook);
            server.abort();
            let (first, second) = answer.split_once("HTTP/1.1 200").expect("the same connection answers the next request");
            assert!(first.starts_with("HTTP/1.1 500"), "{answer}");
            assert!(first.contains("application/problem+json") && first.contains("urn:proem:problem:internal"), "{first}");
            assert!(second.ends_with("fine"), "{second}");
            assert!(state.metrics.render().contains("proem_http_problems_total{status=\"500\"} 1"));
        });
    }

    #[test]
    fn build_errors_map_to_the_status_that_names_whose_fault_it_is() {
        let cases = [
            (ProemError::BudgetTooSmall { needed: 600, budget: 10, over: 590 }, 422, Some("budget")),
            (ProemError::input("--now", "not a time"), 400, Some("now")),
            (ProemError::input("--chat-kind", "no"), 400, Some("chat_kind")),
            (ProemError::Tools { path: "t.json".into(), message: "bad".into() }, 400, Some("tools")),
            (ProemError::Plugin { id: "p".into(), message: "required and failed".into() }, 502, None),
        ];
        for (error, status, field) in cases {
            let p = problem_of(error, FsPath::new("/srv/agents/a"));
            assert_eq!(p.status().as_u16(), status);
            assert_eq!(p.extra.get("field").and_then(Value::as_str), field);
        }
    }
}
