//! The CORS layer of every browser-facing route, from the configured [`AllowedOrigins`]:
//! methods `GET`/`POST`, headers `Authorization`, `Content-Type` and `x-baton-stop-on-abort`,
//! preflights cached for
//! [`PREFLIGHT_MAX_AGE_SECS`]. Never `Access-Control-Allow-Credentials`: the credential is the
//! bearer header, so `*` cannot expose a cookie-authenticated answer.

use crate::origins::AllowedOrigins;
use axum::http::{HeaderName, Method, header};
use tower_http::cors::{AllowOrigin, Any, CorsLayer};

/// The chat's opt-in header (`chat/stream.rs`), which a page served elsewhere may send.
const STOP_ON_ABORT: &str = "x-baton-stop-on-abort";

/// How long a browser may cache a preflight answer, in seconds.
const PREFLIGHT_MAX_AGE_SECS: u64 = 600;

/// The layer for `origins`, or `None` when no other origin may call (no CORS headers at all).
pub(super) fn layer(origins: &AllowedOrigins) -> Option<CorsLayer> {
    let allow = match origins {
        AllowedOrigins::None => return None,
        AllowedOrigins::Any => AllowOrigin::from(Any),
        AllowedOrigins::List(list) => AllowOrigin::list(list.iter().cloned()),
    };
    Some(
        CorsLayer::new()
            .allow_origin(allow)
            .allow_methods([Method::GET, Method::POST])
            .allow_headers([
                header::AUTHORIZATION,
                header::CONTENT_TYPE,
                HeaderName::from_static(STOP_ON_ABORT),
            ])
            .max_age(std::time::Duration::from_secs(PREFLIGHT_MAX_AGE_SECS)),
    )
}
