//! The demo chat page: `chat.html` with its script and style as files of their own (the CSP
//! forbids inline script), embedded in the binary, no build step and no CDN. Each answer
//! carries the page's security headers: a CSP allowing only this origin (no inline code, no
//! framing), `nosniff` and `Referrer-Policy: no-referrer`.

use axum::{
    http::{HeaderName, HeaderValue, header},
    response::{IntoResponse, Response},
};

const PAGE: &str = include_str!("../../../static/chat.html");
const SCRIPT: &str = include_str!("../../../static/chat.js");
const STYLE: &str = include_str!("../../../static/chat.css");

/// Where the page's script and style are served.
pub(super) const SCRIPT_PATH: &str = "/chat-assets/chat.js";
pub(super) const STYLE_PATH: &str = "/chat-assets/chat.css";

/// The page's policy: its own script, style and API, nothing else; never in a frame.
pub(super) const CHAT_PAGE_CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; \
     frame-ancestors 'none'";

/// `GET /chat`: the page.
pub(super) async fn page() -> Response {
    with_headers("text/html; charset=utf-8", PAGE)
}

/// `GET /chat-assets/chat.js`.
pub(super) async fn script() -> Response {
    with_headers("text/javascript; charset=utf-8", SCRIPT)
}

/// `GET /chat-assets/chat.css`.
pub(super) async fn style() -> Response {
    with_headers("text/css; charset=utf-8", STYLE)
}

fn with_headers(content_type: &'static str, body: &'static str) -> Response {
    let headers = [
        (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
        (
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CHAT_PAGE_CSP),
        ),
        (
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ),
        (
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        ),
        (
            HeaderName::from_static("x-frame-options"),
            HeaderValue::from_static("DENY"),
        ),
        (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
    ];
    (headers, body).into_response()
}
