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

use crate::agents::{without_server_paths, Agent, Agents};
use crate::answer::{self, Extras, Served};
use crate::guard::Guard;
use crate::metrics::Metrics;
use crate::{page, request_id, wording, Limits};
use axum::body::{Body, Bytes};
use axum::extract::{Path, RawQuery, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use proem_core::error::ProemError;
use proem_core::request::BuildRequest;
use proem_core::sync::Lock;
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
    /// Change notifications (`/v1/agents/{id}/events`).
    pub events: crate::events::Hub,
    /// The memo's builds as last printed (see [`crate::printed`]).
    pub printed: crate::printed::Printed<proem::Built>,
}

/// The router.
pub fn router(state: Arc<AppState>) -> Router {
    let api = Router::new()
        .route("/v1/agents", get(list_agents))
        .route("/v1/agents/{id}", get(agent))
        .route("/v1/agents/{id}/build", post(build))
        .route("/v1/agents/{id}/inspect", post(inspect))
        .route("/v1/agents/{id}/events", get(events))
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
        .fallback(|| async { Problem::new(StatusCode::NOT_FOUND, "not-found", "no such route".into()) })
        .layer(axum::middleware::from_fn(errors_as_problems));
    with_layers(routes, state)
}

/// Every error is a problem document: what axum answers by itself (an
/// extractor's rejection such as a path that is not UTF-8, a method a route
/// does not take) is rewritten into one, its text kept as the detail and
/// its other headers (`Allow`) kept.
async fn errors_as_problems(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let status = response.status();
    let is_problem = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/problem+json"));
    if is_problem || !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let (parts, body) = response.into_parts();
    // axum's own answers are a line of text; more is not read.
    let text = axum::body::to_bytes(body, 4096).await.unwrap_or_default();
    let detail = proem_core::text::one_line(&String::from_utf8_lossy(&text), 300);
    let detail = if detail.is_empty() { status.canonical_reason().unwrap_or("error").to_lowercase() } else { detail };
    let slug = match status {
        StatusCode::BAD_REQUEST => "bad-request",
        StatusCode::METHOD_NOT_ALLOWED => "method-not-allowed",
        StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported-media-type",
        StatusCode::PAYLOAD_TOO_LARGE => "payload-too-large",
        _ if status.is_client_error() => "client-error",
        _ => "internal",
    };
    let mut problem = Problem::new(status, slug, detail).into_response();
    for (name, value) in parts.headers.iter() {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            problem.headers_mut().insert(name.clone(), value.clone());
        }
    }
    problem
}

/// `routes` behind what every request passes: its request id outermost,
/// then the panic catcher, then the guard.
fn with_layers(routes: Router<Arc<AppState>>, state: Arc<AppState>) -> Router {
    routes
        .layer(axum::middleware::from_fn_with_state(state.clone(), admit))
        .layer(axum::middleware::from_fn_with_state(state.clone(), catch_panic))
        .layer(axum::middleware::from_fn(request_id::tag))
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
            if let Some(id) = request_id::current() {
                map.insert("request_id".into(), id.into());
            }
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
        "stale": agent.stale(),
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
                "dynamic_reserve": c.budget.dynamic_reserve,
            }),
        );
        map.insert("plugins".into(), Value::Array(plugins));
        map.insert("memo_hits".into(), assembler.memo_hits().into());
    }
    axum::Json(out).into_response()
}

/// The agent's change notifications as server-sent events, or 503 when
/// the most streams are open (see [`crate::events`]).
async fn events(State(state): State<Arc<AppState>>, Path(id): Path<String>) -> Response {
    let Some(agent) = state.agents.get(&id) else { return problem_response(&state, unknown_agent(&state, &id)) };
    let agent = agent.lock().id.clone();
    let Some(stream) = state.events.subscribe(agent) else {
        let problem = Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "too-many-streams",
            format!(
                "{} event streams are open, the most this service keeps; try again later",
                crate::events::MAX_STREAMS
            ),
        )
        .retry_after(5);
        return problem_response(&state, problem);
    };
    let body = futures_util::stream::unfold(stream, |mut stream| async move {
        let event = stream.next_event().await?;
        Some((Ok::<_, std::convert::Infallible>(Bytes::from(event)), stream))
    });
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
            (header::HeaderName::from_static("x-accel-buffering"), "no"),
        ],
        Body::from_stream(body),
    )
        .into_response()
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

async fn build(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    uri: axum::http::Uri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let extras = match Extras::from_query(uri.query()) {
        Ok(extras) => extras,
        Err(why) => {
            let problem = Problem::new(StatusCode::BAD_REQUEST, "bad-request", why).with("field", "report");
            return problem_response(&state, problem);
        }
    };
    match run_build(&state, &id, &headers, body).await {
        Ok(mut served) => {
            let (body, content_type, tag) = answer::build_body(&mut served, extras);
            answer::respond(&served, body, tag, content_type, &headers)
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
        Ok(served) => match crate::litellm::answer(&agent, served.text(), &served.built.stable_hash) {
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
        Ok(served) => {
            let texts = answer::section_texts(&served.built);
            let hashes: Vec<Value> = served
                .built
                .sections
                .iter()
                .zip(texts)
                .map(|(s, text)| {
                    json!({"id": s.id, "source": s.source, "hash": format!("{:016x}", s.body_hash), "text": text})
                })
                .collect();
            let body = json!({ "build": &*served.built, "section_hashes": hashes, "stale": served.stale });
            answer::respond(&served, body.to_string().into(), None, "application/json", &headers)
        }
        Err(problem) => problem_response(&state, problem),
    }
}

async fn run_build(state: &Arc<AppState>, asked: &str, headers: &HeaderMap, body: Body) -> Result<Served, Problem> {
    // The deadline covers reading the body and queueing too.
    let started = Instant::now();
    let deadline = started + state.limits.timeout;
    let agent = reload_if_changed(state, asked, deadline).await?;
    let Serving { id, dir, assembler, stale } = serving(state, asked, agent)?;
    let id = id.as_str();
    let declared = declared_length(headers);
    if declared.is_some_and(|n| n > state.limits.body_bytes as u64) {
        return Err(too_large(state));
    }
    let small = !headers.contains_key(header::TRANSFER_ENCODING)
        && declared.unwrap_or(0) <= UNQUEUED_BODY_BYTES.min(state.limits.body_bytes) as u64;
    let (request, permit) = if small {
        let bytes = read_body(state, body, deadline).await?;
        let request = parse_request(&bytes)?;
        if let Some((built, printing)) = memoised(state, id, &assembler, &request, &dir)? {
            let (text, tag) = (printing.text.clone(), Some(printing.tag.clone()));
            return Ok(Served { agent: id.to_string(), built, text, tag, format: request.format(), stale });
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
            let text = text.into();
            Ok(Served { agent: id.to_string(), built, text, tag: None, format: request.format(), stale })
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

/// The agent `asked` names, loaded again first when what it was loaded
/// from may have changed (its folder replaced, its proem.toml or a plugin
/// file edited): the background poll would see it only later. Looked up
/// again after a reload, which may change the ids it answers to. A load
/// that does not finish by `deadline` is a 503 (it goes on, and serves the
/// next requests); an unknown agent is left to [`serving`].
async fn reload_if_changed(
    state: &Arc<AppState>,
    asked: &str,
    deadline: Instant,
) -> Result<Option<Arc<Lock<Agent>>>, Problem> {
    let Some(agent) = state.agents.get(asked) else { return Ok(None) };
    if !agent.lock().sources_may_have_changed() {
        return Ok(Some(agent));
    }
    let agents = state.agents.clone();
    let work = off_thread(move || agents.reload_if_changed(&agent));
    let changes = tokio::time::timeout_at(deadline.into(), work).await.map_err(|_| timed_out(state))??;
    crate::publish_reloads(state, changes.reloaded);
    Ok(state.agents.get(asked))
}

/// The agent a request names, as it serves now.
struct Serving {
    /// Its folder name (whatever id the request used).
    id: String,
    /// Its folder.
    dir: std::path::PathBuf,
    /// The assembler serving it.
    assembler: Arc<proem::Assembler>,
    /// Whether its last reload failed (an older config serves).
    stale: bool,
}

/// The agent `id` names (by folder or `[agent] id`, as `agent`, looked up
/// by [`reload_if_changed`]) and the assembler serving it, or why there is
/// none.
fn serving(state: &AppState, id: &str, agent: Option<Arc<Lock<Agent>>>) -> Result<Serving, Problem> {
    let agent = agent.ok_or_else(|| unknown_agent(state, id))?;
    let agent = agent.lock();
    match &agent.assembler {
        Some(a) => {
            Ok(Serving { id: agent.id.clone(), dir: agent.dir.clone(), assembler: a.clone(), stale: agent.stale() })
        }
        None => Err(Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "agent-not-loaded",
            format!("agent {} has not loaded: {}", agent.id, agent.last_error.as_deref().unwrap_or("not loaded yet")),
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

/// The build request in `bytes` (nothing: every field unset),
/// or a 400 naming the field at fault.
fn parse_request(bytes: &[u8]) -> Result<BuildRequest, Problem> {
    BuildRequest::from_json(bytes).map_err(|e| {
        let message = wording::for_client(&e.message);
        let detail = match &e.field {
            None => format!("the body is not a build request: {message}"),
            Some(field) => format!("field `{field}`: {message}"),
        };
        Problem::new(StatusCode::BAD_REQUEST, "bad-request", detail).with("field", e.field.unwrap_or_default())
    })
}

/// A build the memo holds, answered here on the async thread: no slot, no
/// hand-off to the blocking pool (a tools file would mean a read, so that
/// goes the long way: `memoised` says `None`). Only for bodies small enough
/// to parse here. Printed once per build and format (`state.printed`); a
/// `strict` request is printed each time (whether it fails is its own).
fn memoised(
    state: &AppState,
    id: &str,
    assembler: &proem::Assembler,
    request: &BuildRequest,
    dir: &FsPath,
) -> Result<Option<MemoHit>, Problem> {
    let started = Instant::now();
    let Some(built) = assembler.memoised_shared(&request.turn) else { return Ok(None) };
    let print = || proem_core::request::respond(&built, request).map_err(|e| problem_of(e, dir));
    let printing = match request.strict {
        true => Arc::new(crate::printed::Printing::new(print()?)),
        false => state.printed.get_or_print(&built, request.format(), print)?,
    };
    state.metrics.build(id, "ok", started.elapsed(), Some(&built), true);
    Ok(Some((built, printing)))
}

/// A build the memo answered, as printed for the request.
type MemoHit = (Arc<proem::Built>, Arc<crate::printed::Printing>);

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
    let span = tracing::Span::current();
    tokio::task::spawn_blocking(move || span.in_scope(work)).await.map_err(|join_error| {
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
/// trouble (its config, a required plugin) a 5xx. The detail is in the
/// request's words ([`wording`]); files are named relative to the agent's
/// folder `dir`, never by a server path.
fn problem_of(e: ProemError, dir: &FsPath) -> Problem {
    let detail = match &e {
        ProemError::BudgetTooSmall { budget, needed, over } => wording::budget_too_small(*budget, *needed, *over),
        ProemError::Input { input, message } => format!("field `{}`: {message}", wording::field_of(input)),
        _ => e.to_string(),
    };
    let detail = wording::for_client(&without_server_paths(&detail, dir));
    match e {
        ProemError::BudgetTooSmall { budget, needed, over } => {
            Problem::new(StatusCode::UNPROCESSABLE_ENTITY, "budget-too-small", detail)
                .with("field", "budget")
                .with("budget", budget)
                .with("needed", needed)
                .with("over", over)
        }
        ProemError::Input { input, .. } => {
            Problem::new(StatusCode::BAD_REQUEST, "bad-request", detail).with("field", wording::field_of(&input))
        }
        ProemError::Tools { .. } => Problem::new(StatusCode::BAD_REQUEST, "bad-request", detail).with("field", "tools"),
        ProemError::Plugin { id, .. } => {
            Problem::new(StatusCode::BAD_GATEWAY, "plugin-failed", detail).with("plugin", id)
        }
        // The machine's trouble, not the agent's: the same request may be
        // built a moment later.
        ProemError::Exhausted { .. } => {
            Problem::new(StatusCode::SERVICE_UNAVAILABLE, "agent-unavailable", detail).retry_after(1)
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
            events: crate::events::Hub::default(),
            printed: crate::printed::Printed::default(),
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
