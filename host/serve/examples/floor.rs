//! The floor under `proem serve`'s figures: a server on the same stack
//! (tokio's multi-threaded runtime, hyper through axum, HTTP/1.1 keep-alive)
//! that answers every request with the same N bytes, made once, and does
//! nothing else: no parsing, no build, no copy, no tag. Measured with the
//! same wrk script on the same cores, it gives the requests a second that
//! the machine allows for answers of that size (docs/PERFORMANCE.md,
//! "Round three").
//!
//! ```sh
//! cargo build --release -p proem-serve --example floor
//! target/release/examples/floor 95000      # prints: listening on http://127.0.0.1:PORT
//! wrk -t2 -c16 -d10s --latency -s benches/wrk/build.lua http://127.0.0.1:PORT
//! ```
//!
//! `floor BYTES conn` serves the same answer through `proem serve`'s own
//! connection layer (`proem_serve::conn::serve`: its accept loop, limits,
//! header and stall timers) instead of `axum::serve`, to tell what that
//! layer costs from what the routes and the build cost.
//!
//! `floor BYTES axum spinN` (or `conn spinN`) spends N µs of CPU on each
//! request before answering, to show how the tail latency with the load
//! generator on the same cores moves with the work a request costs
//! (docs/PERFORMANCE.md, "Round three", ninth session).

use axum::body::Bytes;
use std::time::{Duration, Instant};

fn main() {
    let size: usize = match std::env::args().nth(1).map(|a| a.parse()) {
        None => 95_000,
        Some(Ok(n)) if n <= 64 << 20 => n,
        Some(_) => {
            eprintln!("usage: floor [BYTES [axum|conn [spinN]]]  (the answer's size, at most 64 MiB; default 95000; conn: through proem serve's connection layer; spinN: N µs of CPU a request, at most 1000)");
            std::process::exit(2);
        }
    };
    let through_conn = std::env::args().nth(2).as_deref() == Some("conn");
    let spin = match std::env::args().nth(3).map(|a| a.strip_prefix("spin").map(str::parse::<u64>)) {
        None => Duration::ZERO,
        Some(Some(Ok(us))) if us <= 1000 => Duration::from_micros(us),
        Some(_) => {
            eprintln!("floor: the third argument is spinN, N µs of CPU a request (at most 1000)");
            std::process::exit(2);
        }
    };
    let body = Bytes::from(vec![b'x'; size]);
    let app = axum::Router::new().fallback(move || {
        if !spin.is_zero() {
            let started = Instant::now();
            while started.elapsed() < spin {
                std::hint::spin_loop();
            }
        }
        std::future::ready(body.clone())
    });
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime");
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a loopback port");
        println!("listening on http://{}", listener.local_addr().expect("its address"));
        if through_conn {
            let metrics = std::sync::Arc::new(proem_serve::metrics::Metrics::default());
            let limits = proem_serve::conn::ConnLimits::default();
            let forever = std::future::pending::<()>();
            proem_serve::conn::serve(listener, app, limits, metrics, forever, Duration::ZERO).await;
        } else {
            axum::serve(listener, app).await.expect("serves");
        }
    });
}
