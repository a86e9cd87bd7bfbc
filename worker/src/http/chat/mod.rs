//! The chat routes for the Vercel AI SDK's `useChat` (see `crate::ai_sdk`): `POST /chat`,
//! `GET /chat/{id}/stream`, `GET /chat/{id}/snapshot`, `POST /chat/{id}/stop` (the chat's
//! `stop()`) and `DELETE /chat/{id}` under the API's authentication (CORS
//! is the API's, `super::cors`), and the demo chat page at `GET /chat` (no credential: it holds
//! no data), with `POST /chat/demo-token` in `batond dev`'s demo mode only.

mod demo_token;
mod page;
mod routes;
mod stream;

use crate::state::AppState;
use axum::{
    Router,
    middleware::from_fn_with_state,
    routing::{any, delete, get, post},
};

/// The chat routes; the API's router merges them.
pub(super) fn router(state: AppState) -> Router<AppState> {
    // The page is added after the authentication layer, which wraps only the routes before it.
    let demo = state.options.demo_user_tokens;
    let chat = Router::new()
        .route("/chat", post(routes::post))
        .route("/chat/{id}/stream", get(routes::reattach))
        .route("/chat/{id}/snapshot", get(routes::snapshot))
        .route("/chat/{id}/stop", post(routes::stop))
        .route("/chat/{id}", delete(routes::delete))
        .route_layer(from_fn_with_state(state, super::authenticate))
        .route("/chat", get(page::page))
        .route(page::SCRIPT_PATH, get(page::script))
        .route(page::STYLE_PATH, get(page::style));
    if demo {
        chat.route("/chat/demo-token", post(demo_token::demo_token))
    } else {
        // No such route off demo mode: a 404 (typed by the outer layer), not the chat
        // `DELETE /chat/{id}` route's 401 for a request without a credential.
        chat.route(
            "/chat/demo-token",
            any(|| async { axum::http::StatusCode::NOT_FOUND }),
        )
    }
}
