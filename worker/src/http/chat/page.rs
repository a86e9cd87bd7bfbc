//! The demo chat page: `chat.html` with its script and style as files of their own (the CSP
//! forbids inline script), embedded in the binary, no build step and no CDN. Each answer
//! carries the pages' security headers (`http/page_headers.rs`: a CSP allowing only this origin,
//! no inline code, no framing; `nosniff`; `Referrer-Policy: no-referrer`).

use crate::http::page_headers::with_page_headers as with_headers;
use axum::response::Response;

const PAGE: &str = include_str!("../../../static/chat.html");
const SCRIPT: &str = include_str!("../../../static/chat.js");
const STYLE: &str = include_str!("../../../static/chat.css");

/// Where the page's script and style are served.
pub(super) const SCRIPT_PATH: &str = "/chat-assets/chat.js";
pub(super) const STYLE_PATH: &str = "/chat-assets/chat.css";

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
