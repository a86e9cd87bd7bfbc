//! The chat routes for the Vercel AI SDK's `useChat` (see `crate::ai_sdk`): `POST /chat`,
//! `GET /chat/{id}/stream` and `GET /chat/{id}/snapshot` under the API's authentication, with
//! CORS so a page served elsewhere can call them (any origin: the credential is the bearer
//! header, never a cookie), and the demo chat page at `GET /chat` (no credential: it holds no
//! data).

mod page;
mod routes;
mod stream;

use crate::state::AppState;
use axum::{
    Router,
    http::{Method, header},
    middleware::from_fn_with_state,
    routing::{get, post},
};
use tower_http::cors::{Any, CorsLayer};

/// How long a browser may cache a preflight answer, in seconds.
const PREFLIGHT_MAX_AGE_SECS: u64 = 600;

/// The chat routes; the API's router merges them.
pub(super) fn router(state: AppState) -> Router<AppState> {
    let cors = CorsLayer::new()
        .allow_origin(Any)
        .allow_methods([Method::GET, Method::POST])
        .allow_headers([header::AUTHORIZATION, header::CONTENT_TYPE])
        .max_age(std::time::Duration::from_secs(PREFLIGHT_MAX_AGE_SECS));
    // The page is added after the authentication layer (which wraps only the routes before
    // it) and before CORS, which must wrap every method of `/chat` to answer its preflight.
    Router::new()
        .route("/chat", post(routes::post))
        .route("/chat/{id}/stream", get(routes::reattach))
        .route("/chat/{id}/snapshot", get(routes::snapshot))
        .route_layer(from_fn_with_state(state, super::authenticate))
        .route("/chat", get(page::page))
        .layer(cors)
}
