//! The HTTP API: an axum adapter over the operations (`crate::ops`). The router and the server
//! are here; the handlers in `routes.rs` and `sse.rs`, the body guards in `body.rs`, the
//! extractors in `extract.rs`, the one error response in `error.rs` (and `refusals.rs`, which
//! gives every other refusal that body), the request metrics in `metrics.rs` and the chat routes
//! for the AI SDK's `useChat` in `chat/`.

pub(crate) mod a2a;
mod body;
mod chat;
mod console;
mod cors;
mod delete;
mod error;
mod extract;
mod fork;
mod metrics;
pub mod mount;
pub mod openapi;
mod page_headers;
mod pending_stream;
mod ready;
mod refusals;
mod remote_callback;
mod routes;
mod serve;
mod sessions;
mod sse;
mod tokens;

pub use error::HttpError;
pub(crate) use extract::{SessionQuery, json_body, query};

use crate::{
    auth::{Auth, Surface},
    state::AppState,
};
use axum::{
    Router,
    extract::{Request, State},
    middleware::{Next, from_fn_with_state},
    response::{IntoResponse, Response},
    routing::{get, post},
};
use baton_core::{ApiError, store::StopKind};

/// Serves the API on `listener` until `shutdown` resolves, then drains open requests, under the
/// server's connection limits (`serve.rs`: a connection cap answered 503 `server_busy`, a
/// deadline for a request's headers).
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    match state.options.auth {
        Auth::Unset => {
            return Err(std::io::Error::other(
                "refusing to serve the Baton API without authentication: configure API keys \
                 (--api-key) or pass --allow-unauthenticated",
            ));
        }
        Auth::AllowUnauthenticated => tracing::warn!(
            "the Baton HTTP API is serving WITHOUT authentication (--allow-unauthenticated): \
             anyone who reaches it can start, read and steer sessions"
        ),
        Auth::Builtin(_) | Auth::Custom(_) => {}
    }
    crate::http::mount::check_mounts(&state.options.mounts).map_err(std::io::Error::other)?;
    let limits = state.options.connection_limits;
    serve::serve_connections(listener, router(state), limits, shutdown).await
}

/// The HTTP API. Every route but `/healthz`, `/readyz`, `/openapi.json`, the pages and the signed callback
/// authenticates first (401 before anything is read).
/// Every refusal, on every route and on no route (404, 405), is the one error body: the
/// outermost layer ([`refusals::typed_refusals`]) types whatever is not, so a route added here or
/// merged in later needs nothing of its own.
pub fn router(state: AppState) -> Router {
    let cors = cors::layer(&state.options.allowed_origins);
    let api = Router::new()
        .route("/start", post(routes::start))
        .route("/status", get(routes::status))
        .route("/sse", get(sse::sse))
        .route("/submit-tool-result", post(routes::submit))
        .route("/resume", post(routes::resume))
        .route("/interrupt", routes::stop(StopKind::Interrupt))
        .route("/abort", routes::stop(StopKind::Abort))
        .route("/delete", post(delete::delete))
        .route("/snapshot", get(routes::snapshot))
        .route("/usage", get(routes::usage))
        .route("/sessions", get(sessions::sessions))
        .route("/pending", get(sessions::pending))
        .route("/pending/stream", get(pending_stream::pending_stream))
        .route("/fork", post(fork::fork))
        .route("/tokens", post(tokens::mint))
        .route("/tokens/revoke", post(tokens::revoke))
        .route("/metrics", get(metrics::metrics))
        .route_layer(from_fn_with_state(state.clone(), authenticate))
        .merge(chat::router(state.clone()))
        .merge(crate::http::mount::routers(&state))
        .merge(a2a::routers(&state))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(ready::ready))
        .route("/openapi.json", get(openapi::openapi))
        .route(
            "/remote-callbacks/{session_id}",
            post(remote_callback::callback),
        )
        .route(
            "/remote-callbacks/{session_id}/a2a",
            post(remote_callback::a2a_push),
        )
        .route("/console", get(console::page))
        .route(console::SCRIPT_PATH, get(console::script))
        .route(console::STYLE_PATH, get(console::style))
        .route_layer(from_fn_with_state(state.clone(), metrics::measure));
    // CORS wraps every route (a preflight carries no credential, so it is answered before the
    // authentication of the routes), inside the typed refusals.
    let api = match cors {
        Some(cors) => api.layer(cors),
        None => api,
    };
    api.layer(from_fn_with_state(state.clone(), refusals::typed_refusals))
        .with_state(state)
}

/// Puts the request's [`Principal`](crate::auth::Principal) and its stream
/// [`Credential`](crate::stream::Credential) in its extensions, or refuses it: 401 (403 for a
/// credential off `surface`), audited with its route by [`AppState::authenticate`]. Each
/// router's middleware answers the refusal in its own envelope.
async fn authenticated(
    state: &AppState,
    request: &mut Request,
    surface: Surface,
) -> Result<(), ApiError> {
    let principal = state
        .authenticate(request.headers(), surface, request.uri().path())
        .await?;
    let credential = crate::stream::Credential::of(request.headers());
    request.extensions_mut().insert(principal);
    request.extensions_mut().insert(credential);
    Ok(())
}

/// The API's authentication ([`authenticated`]), refusals in the API's error body.
async fn authenticate(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    match authenticated(&state, &mut request, Surface::Api).await {
        Ok(()) => next.run(request).await,
        Err(error) => HttpError::from(error).into_response(),
    }
}
