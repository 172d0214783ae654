//! Connections: accepting them, capping how many are open, and the time
//! each may take, so that no client, however it paces its bytes, holds
//! the service.
//!
//! - At most [`ConnLimits::max_connections`] are open at once (by default in
//!   proportion to the process's file-descriptor limit, see
//!   [`default_max_connections`]); one over it is refused at once with a
//!   fixed 503 written without waiting, then closed.
//! - A request's head must arrive whole within `header_timeout`, counted
//!   from the connection's start or the end of the previous response (so it
//!   is also the keep-alive idle timeout), and be at most `header_bytes`
//!   (else 431).
//! - A response the client does not read is dropped with its connection
//!   once a write has made no progress for `header_timeout`.
//! - The memory connections held goes back to the system once many have
//!   closed ([`give_back_memory`]).
//! - An accept that fails (out of file descriptors, of memory) is retried
//!   after a pause that grows from 5 ms to 100 ms: the loop never ends on
//!   an error, and it picks up again within 100 ms of descriptors coming back.
//!
//! Each connection is hyper's HTTP/1.1 with hyper's own timer; the router
//! is axum's. On shutdown every connection finishes the request it is in
//! and closes.

use crate::metrics::Metrics;
use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};
use tokio::time::Sleep;

/// What a connection may hold.
#[derive(Debug, Clone, Copy)]
pub struct ConnLimits {
    /// Connections open at once; the next is refused.
    pub max_connections: usize,
    /// The time a request's head may take to arrive (also the keep-alive
    /// idle timeout and the longest a write may stall).
    pub header_timeout: Duration,
    /// The largest request head (request line and headers), in bytes.
    pub header_bytes: usize,
}

/// The smallest `header_bytes` (hyper's own floor for its read buffer).
pub const MIN_HEADER_BYTES: usize = 8 * 1024;

/// File descriptors kept for everything but connections: builds reading
/// workspace files, plugin files, caches, file watches, the runtime's own.
pub const FD_RESERVE: u64 = 64;

/// The most connections the default allows, whatever the fd limit: an
/// idle connection holds 10 to 15 KiB (docs/SECURITY.md), so this many
/// hold at most about 120 MiB.
pub const DEFAULT_MAX_CONNECTIONS_CEILING: usize = 8 * 1024;

impl Default for ConnLimits {
    fn default() -> ConnLimits {
        ConnLimits {
            max_connections: default_max_connections(fd_limit()),
            header_timeout: Duration::from_secs(10),
            header_bytes: 64 * 1024,
        }
    }
}

/// The process's soft limit on open file descriptors (`RLIMIT_NOFILE`);
/// 1024 when it cannot be read, `u64::MAX` when unlimited.
pub fn fd_limit() -> u64 {
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    limit.current.unwrap_or(u64::MAX)
}

/// Half the descriptors the limit leaves after [`FD_RESERVE`], so that
/// connections can never take the descriptors builds and reloads need;
/// at least 1 and at most [`DEFAULT_MAX_CONNECTIONS_CEILING`].
pub fn default_max_connections(fd_limit: u64) -> usize {
    let half = fd_limit.saturating_sub(FD_RESERVE) / 2;
    usize::try_from(half).unwrap_or(usize::MAX).clamp(1, DEFAULT_MAX_CONNECTIONS_CEILING)
}

/// What a connection over the cap is told before it is closed.
const REFUSED: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\n\
content-type: application/problem+json\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: 149\r\n\r\n\
{\"type\":\"urn:proem:problem:too-many-connections\",\"title\":\"Service Unavailable\",\"status\":503,\
\"detail\":\"too many open connections (--max-connections)\"}";

/// Serves `router` on `listener` until `stop` resolves, then lets every
/// connection finish its request and returns once they have closed (or
/// `drain` has passed).
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ConnLimits,
    metrics: Arc<Metrics>,
    stop: impl Future<Output = ()>,
    drain: Duration,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let (stopping, stopped) = watch::channel(false);
    let trimmer = tokio::spawn(give_back_memory(metrics.clone()));
    let mut stop = std::pin::pin!(stop);
    let mut pause = ACCEPT_PAUSE_MIN;
    // Accepts failed in a row: logged when the run starts and when it ends,
    // not once a pause (a client holding the descriptors must not fill the log).
    let mut failed_in_a_row: u64 = 0;
    loop {
        let accepted = tokio::select! {
            _ = &mut stop => break,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, _)) => {
                pause = ACCEPT_PAUSE_MIN;
                if failed_in_a_row > 0 {
                    tracing::warn!("accepting connections again ({failed_in_a_row} accepts failed)");
                    failed_in_a_row = 0;
                }
                match slots.clone().try_acquire_owned() {
                    Ok(slot) => {
                        let (router, metrics, stopped) = (router.clone(), metrics.clone(), stopped.clone());
                        tokio::spawn(async move {
                            metrics.connection_opened();
                            serve_connection(stream, router, limits, stopped).await;
                            metrics.connection_closed();
                            drop(slot);
                        });
                    }
                    Err(_) => {
                        metrics.connection_refused();
                        refuse(stream);
                    }
                }
            }
            Err(e) if is_per_connection(&e) => {}
            Err(e) => {
                metrics.accept_error();
                if failed_in_a_row == 0 {
                    tracing::warn!(
                        "cannot accept connections ({e}); trying again every {} ms at most",
                        ACCEPT_PAUSE_MAX.as_millis()
                    );
                }
                failed_in_a_row = failed_in_a_row.saturating_add(1);
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(ACCEPT_PAUSE_MAX);
            }
        }
    }
    drop(listener);
    trimmer.abort();
    let _ = stopping.send(true);
    let all = u32::try_from(limits.max_connections.max(1)).unwrap_or(u32::MAX);
    let _ = tokio::time::timeout(drain, slots.acquire_many(all)).await;
}

/// Connections closed since the most open (within a second's look) for
/// which their memory is given back to the system.
const TRIM_AFTER_CLOSED: u64 = 256;

/// Once a second: when at least [`TRIM_AFTER_CLOSED`] fewer connections are
/// open than at the peak since the last time, gives malloc's free memory
/// back to the system (their buffers were freed, but glibc keeps freed
/// memory in each thread's arena). A steady load never triggers it.
async fn give_back_memory(metrics: Arc<Metrics>) {
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        if metrics.connection_peak().saturating_sub(metrics.connections_open()) >= TRIM_AFTER_CLOSED {
            metrics.reset_peak();
            let _ = tokio::task::spawn_blocking(proem_core::allocator::give_back_free_memory).await;
        }
    }
}

/// The first pause after a failed accept.
const ACCEPT_PAUSE_MIN: Duration = Duration::from_millis(5);
/// The longest pause between accepts that fail.
const ACCEPT_PAUSE_MAX: Duration = Duration::from_millis(100);

/// Errors about one connection (it went away before it was accepted), not
/// about the listener: accept the next at once.
fn is_per_connection(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused | io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset
    )
}

/// Writes the fixed 503 if the socket takes it now (a fresh socket's
/// buffer does), and closes.
fn refuse(stream: TcpStream) {
    let _ = stream.try_write(REFUSED);
}

async fn serve_connection(stream: TcpStream, router: Router, limits: ConnLimits, mut stopped: watch::Receiver<bool>) {
    let _ = stream.set_nodelay(true);
    let io = TokioIo::new(StallLimit::new(stream, limits.header_timeout));
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_header_size(limits.header_bytes)
        .max_buf_size(limits.header_bytes.max(MIN_HEADER_BYTES) + MIN_HEADER_BYTES)
        .keep_alive(true);
    let connection = builder.serve_connection(io, TowerToHyperService::new(router));
    let mut connection = std::pin::pin!(connection);
    if *stopped.borrow() {
        connection.as_mut().graceful_shutdown();
    }
    loop {
        tokio::select! {
            _ = connection.as_mut() => return,
            changed = stopped.changed() => {
                connection.as_mut().graceful_shutdown();
                if changed.is_err() {
                    let _ = connection.as_mut().await;
                    return;
                }
            }
        }
    }
}

/// A stream whose writes fail once one has made no progress for `limit`:
/// a client that stops reading cannot keep its connection (and the
/// response held for it) forever.
struct StallLimit<S> {
    inner: S,
    limit: Duration,
    /// Running while a write waits for the client.
    stalled: Option<Pin<Box<Sleep>>>,
}

impl<S> StallLimit<S> {
    fn new(inner: S, limit: Duration) -> StallLimit<S> {
        StallLimit { inner, limit, stalled: None }
    }

    /// Maps a write's poll: progress stops the clock, waiting starts it,
    /// and waiting past the limit is an error.
    fn watch<T>(&mut self, cx: &mut Context<'_>, poll: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        match poll {
            Poll::Ready(result) => {
                self.stalled = None;
                Poll::Ready(result)
            }
            Poll::Pending => {
                let limit = self.limit;
                let timer = self.stalled.get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
                match timer.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "the client read nothing of the response for the header timeout",
                    ))),
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for StallLimit<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for StallLimit<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.watch(cx, poll)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.inner).poll_flush(cx);
        self.watch(cx, poll)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.watch(cx, poll)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.watch(cx, poll)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_cap_is_half_what_the_fd_limit_leaves_within_its_bounds() {
        assert_eq!(default_max_connections(1024), 480);
        assert_eq!(default_max_connections(256), 96);
        assert_eq!(default_max_connections(0), 1);
        assert_eq!(default_max_connections(65), 1);
        assert_eq!(default_max_connections(u64::MAX), DEFAULT_MAX_CONNECTIONS_CEILING);
        assert_eq!(default_max_connections(1 << 20), DEFAULT_MAX_CONNECTIONS_CEILING);
    }

    #[test]
    fn the_refusal_is_a_whole_http_response() {
        let text = std::str::from_utf8(REFUSED).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.contains(&format!("content-length: {}", body.len())), "{head}");
        let problem: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(problem["status"], 503);
    }
}
