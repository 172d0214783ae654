//! The inspector page and the OpenAPI document, embedded in the binary: no
//! build step, nothing loaded from elsewhere. The page is plain HTML, CSS
//! and JavaScript in `page/`; it calls the same API as any client.

use axum::http::header;
use axum::response::{IntoResponse, Response};

/// The OpenAPI 3.1 description of `/v1` (checked against real responses by
/// tests/surfaces/serve.rs).
pub const OPENAPI: &str = include_str!("openapi.json");

const FILES: [(&str, &str, &str); 3] = [
    ("index.html", "text/html; charset=utf-8", include_str!("page/index.html")),
    ("app.js", "text/javascript; charset=utf-8", include_str!("page/app.js")),
    ("app.css", "text/css; charset=utf-8", include_str!("page/app.css")),
];

/// One of the page's files, with its content type and a policy that lets
/// it load nothing but itself, and be framed by no page (clickjacking).
pub fn file(name: &str) -> Response {
    let (_, content_type, body) = FILES.iter().find(|(n, ..)| *n == name).copied().unwrap_or(FILES[0]);
    (
        [
            (header::CONTENT_TYPE, content_type),
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'self'; style-src 'self'; script-src 'self'; img-src 'self' data:; connect-src 'self'; \
                 frame-ancestors 'none'",
            ),
            (header::X_FRAME_OPTIONS, "DENY"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}
