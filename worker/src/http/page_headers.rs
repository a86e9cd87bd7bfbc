//! The security headers of the pages Baton serves (the chat page, the console) and of their
//! assets: a CSP allowing only this origin (no inline script or style, no framing by any
//! origin), `X-Frame-Options: DENY` for browsers without `frame-ancestors`, `nosniff` and
//! `Referrer-Policy: no-referrer`.

use axum::{
    body::Body,
    http::{HeaderName, HeaderValue, header},
    response::{IntoResponse, Response},
};

/// The pages' policy: their own script, style and API, nothing else; never in a frame.
pub(super) const PAGE_CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; \
     frame-ancestors 'none'";

/// `body` of `content_type` under the pages' headers, revalidated on every load.
pub(super) fn with_page_headers(content_type: &'static str, body: impl Into<Body>) -> Response {
    let headers = [
        (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
        (
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(PAGE_CSP),
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
    (headers, body.into()).into_response()
}
