//! The HTTP API: routes, the build handler, and RFC 9457 problem responses.
//!
//! Bad input is always a 4xx naming what is wrong (never a 500); a panic in
//! a build is a 500 that is logged, and the server goes on.

use crate::agents::Agents;
use crate::metrics::Metrics;
use crate::{page, Limits};
use axum::body::{Body, Bytes};
use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use proem_core::error::ProemError;
use proem_core::request::BuildRequest;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Instant, SystemTime};
use tokio::sync::Semaphore;

/// What every handler shares.
pub struct AppState {
    /// The agents.
    pub agents: Arc<Agents>,
    /// The counters.
    pub metrics: Metrics,
    /// Limits.
    pub limits: Limits,
    /// Build slots (`limits.concurrent` permits).
    pub slots: Semaphore,
    /// Requests waiting for a slot.
    pub waiting: AtomicUsize,
    /// The bearer token, when one is required.
    pub token: Option<String>,
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
        .route("/metrics", get(metrics))
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), require_token));
    Router::new()
        .merge(api)
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .route("/", get(|| async { page::file("index.html") }))
        .route("/app.js", get(|| async { page::file("app.js") }))
        .route("/app.css", get(|| async { page::file("app.css") }))
        .fallback(|| async { Problem::new(StatusCode::NOT_FOUND, "not-found", "no such route".into()) })
        .with_state(state)
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
                    Err(why) => (None, Some(why.clone())),
                };
                json!({
                    "id": p.id,
                    "origin": p.origin,
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
    // The body is JSON whatever Content-Type says (curl's -d sends a form
    // type): what does not parse is a 400 naming the problem.
    let _ = headers;
    // The deadline covers reading the body too: a client that sends it
    // slowly holds a connection, never a build slot, and not for long.
    let started = Instant::now();
    let deadline = started + state.limits.timeout;
    let read = tokio::time::timeout_at(deadline.into(), axum::body::to_bytes(body, state.limits.body_bytes)).await;
    let bytes: Bytes = match read {
        Err(_) => {
            return Err(Problem::new(
                StatusCode::REQUEST_TIMEOUT,
                "body-timeout",
                format!(
                    "the request body did not arrive within {} ms (--timeout-ms)",
                    state.limits.timeout.as_millis()
                ),
            ))
        }
        Ok(Err(_)) => {
            return Err(Problem::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "too-large",
                format!("the request body is over the {} byte limit (--max-body)", state.limits.body_bytes),
            )
            .with("limit", state.limits.body_bytes))
        }
        Ok(Ok(bytes)) => bytes,
    };
    let request: BuildRequest = if bytes.iter().all(u8::is_ascii_whitespace) {
        BuildRequest::default()
    } else {
        let de = &mut serde_json::Deserializer::from_slice(&bytes);
        serde_path_to_error::deserialize(de).map_err(|e| {
            let field = e.path().to_string();
            let field = if field == "." { String::new() } else { field };
            let detail = if field.is_empty() {
                format!("the body is not a build request: {}", e.inner())
            } else {
                format!("field `{field}`: {}", e.inner())
            };
            Problem::new(StatusCode::BAD_REQUEST, "bad-request", detail).with("field", field)
        })?
    };
    let agent = state.agents.get(id).ok_or_else(|| unknown_agent(state, id))?;
    let assembler = {
        let agent = agent.lock();
        match &agent.assembler {
            Some(a) => a.clone(),
            None => {
                return Err(Problem::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "agent-not-loaded",
                    format!("agent {id} has not loaded: {}", agent.last_error.as_deref().unwrap_or("not loaded yet")),
                ))
            }
        }
    };

    // A build the memo holds is answered here, on the async thread: no
    // slot, no hand-off to the blocking pool (a tools file would mean a
    // read, so that goes the long way).
    if !matches!(request.tools, Some(proem_core::request::ToolsInput::File(_))) {
        let started = Instant::now();
        let no_files = |_: &str| Err(ProemError::input("tools", "read on the blocking pool"));
        if let Ok(turn) = request.turn(&no_files) {
            if let Some(built) = assembler.memoised(&turn) {
                let text = proem_core::request::respond(&built, &request).map_err(problem_of)?;
                state.metrics.build(id, "ok", started.elapsed(), Some(&built), true);
                return Ok((Arc::new(built), text, request.format()));
            }
        }
    }

    // A slot, or 503 when too many are waiting already.
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
    let permit = tokio::time::timeout_at(deadline.into(), state.slots.acquire())
        .await
        .map_err(|_| timed_out(state))?
        .map_err(|_| Problem::new(StatusCode::SERVICE_UNAVAILABLE, "stopping", "shutting down".into()))?;
    drop(_left);

    let memo_before = assembler.memo_hits();
    let work = {
        let assembler = assembler.clone();
        let request = request.clone();
        off_thread(move || {
            let turn = request.turn(&|name| assembler.read_tools_file(name))?;
            proem_core::request::build(assembler.core(), &request, &turn)
        })
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
            let problem = problem_of(e);
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

/// Runs `work` on tokio's blocking pool. A panic in it is logged and
/// becomes a 500 problem: the request fails, the server goes on.
async fn off_thread<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Result<T, Problem> {
    tokio::task::spawn_blocking(work).await.map_err(|join_error| {
        let what = if join_error.is_panic() { "panicked" } else { "was cancelled" };
        tracing::error!("a build {what}: {join_error}");
        Problem::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            format!("the build {what}; this is a bug in proem, logged on the server"),
        )
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
/// trouble (its config, a required plugin) a 5xx.
fn problem_of(e: ProemError) -> Problem {
    let detail = e.to_string();
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
            let p = problem_of(error);
            assert_eq!(p.status().as_u16(), status);
            assert_eq!(p.extra.get("field").and_then(Value::as_str), field);
        }
    }
}
