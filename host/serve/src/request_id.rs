//! Every request's id: the client's `X-Request-Id` when it sends a usable
//! one (a proxy's, say), else one made here. It is answered in the
//! `X-Request-Id` header, in every problem document (`request_id`), and
//! on every log line about the request (a span's field), so that one
//! failed call can be found in the logs of whichever replica answered it.

use axum::extract::Request;
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Instant;
use tracing::Instrument;

/// The request id header.
pub const HEADER: &str = "x-request-id";

/// The longest id taken from a client.
pub const MAX_LEN: usize = 64;

tokio::task_local! {
    static CURRENT: String;
}

/// The id of the request being handled on this task, if any.
pub fn current() -> Option<String> {
    CURRENT.try_with(Clone::clone).ok()
}

/// A client's id when it is 1 to [`MAX_LEN`] letters, digits, `-`, `_`,
/// `.` or `:` (nothing a log line or a header could be confused by).
fn usable(value: &HeaderValue) -> Option<String> {
    let text = value.to_str().ok()?;
    let ok =
        (1..=MAX_LEN).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b));
    ok.then(|| text.to_string())
}

/// A new id: this process's start, as a prefix, and a counter.
fn fresh() -> String {
    static PREFIX: OnceLock<String> = OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let prefix = PREFIX.get_or_init(|| {
        let nanos =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
        let seed = format!("{}:{nanos}", std::process::id());
        format!("{:012x}", xxhash_rust::xxh3::xxh3_64(seed.as_bytes()) & 0xffff_ffff_ffff)
    });
    format!("{prefix}-{:x}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// The middleware: gives the request its id, handles it within the id's
/// scope and span, answers the id, and logs the request (`info`; a 5xx at
/// `warn`).
pub async fn tag(request: Request, next: Next) -> Response {
    let id = request.headers().get(HEADER).and_then(usable).unwrap_or_else(fresh);
    let (method, path) = (request.method().clone(), request.uri().path().to_string());
    let span = tracing::info_span!("request", request_id = %id);
    let started = Instant::now();
    let mut response = CURRENT.scope(id.clone(), next.run(request).instrument(span.clone())).await;
    let status = response.status().as_u16();
    let elapsed_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
    span.in_scope(|| {
        if status >= 500 {
            tracing::warn!(%method, path = %proem_core::text::one_line(&path, 200), status, elapsed_us, "request failed");
        } else {
            tracing::info!(%method, path = %proem_core::text::one_line(&path, 200), status, elapsed_us, "request");
        }
    });
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(HEADER, value);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clients_id_is_taken_only_when_plain_and_short() {
        let take = |s: &str| usable(&HeaderValue::from_str(s).unwrap());
        assert_eq!(take("haproxy-1a2b:77.3"), Some("haproxy-1a2b:77.3".into()));
        for bad in ["", "a b", "a\"b", "x{}", &"a".repeat(MAX_LEN + 1)] {
            assert_eq!(take(bad), None, "{bad}");
        }
        let (a, b) = (fresh(), fresh());
        assert_ne!(a, b);
        assert!(usable(&HeaderValue::from_str(&a).unwrap()).is_some());
    }
}
