//! Every mounted agent as an A2A agent (Agent2Agent, v0.3, its JSON-RPC binding): beside each
//! mount's protocol routes, `GET {base}/{agentType}/.well-known/agent-card.json` (the agent's
//! card) and `POST {base}/{agentType}/a2a` (the JSON-RPC endpoint: `message/send`,
//! `message/stream`, `tasks/get`, `tasks/cancel`, `tasks/resubscribe`,
//! `tasks/pushNotificationConfig/set|get`), over the operations (`crate::ops`), as the mount is.
//!
//! A Baton session is an A2A context (`contextId` is its id) and a turn is a task
//! (`task.rs`): a client tool call or an approval puts the task in `input-required` with the
//! calls and their schemas as a data part, and the client's next message on the task answers
//! them (the API's submit, then its resume). The mount's auth gates both routes, fail-closed
//! (`Surface::Mount`: service keys, operator keys, a session token on its own tree), and a
//! context belongs to the service that began it, as a mount start's session does. One file per
//! concern: `error.rs` (refusals as JSON-RPC errors), `card.rs`, `task.rs` (the mapping),
//! `rpc.rs` (the methods answered at once), `stream.rs` (`message/stream`, `tasks/resubscribe`
//! and a blocking `message/send`'s wait).

mod card;
mod error;
mod rpc;
mod stream;
mod task;

use crate::{http::mount::Mount, state::AppState};
use axum::{
    Json, Router,
    extract::{Request, State},
    http::StatusCode,
    middleware::{Next, from_fn_with_state},
    response::{IntoResponse, Response},
    routing::{get, post},
};
use baton_core::{ApiError, ErrorCode, a2a};
use std::sync::Arc;

/// What the A2A handlers of one mount share: the server's state and the mount.
#[derive(Clone)]
struct A2aState {
    app: AppState,
    mount: Arc<Mount>,
}

impl A2aState {
    /// Refuses an agent type off the mount's allowlist or not served here, as the mount does.
    fn served(&self, agent_type: &str) -> Result<(), ApiError> {
        if self.mount.allows(agent_type) && self.app.registry.get(agent_type).is_some() {
            Ok(())
        } else {
            Err(ApiError::new(
                ErrorCode::NotFound,
                format!(
                    "no agent type \"{}\" on this mount",
                    baton_core::escape::bounded(agent_type)
                ),
            ))
        }
    }
}

/// The A2A routes of every mount of the server's options, each behind the mount's auth.
pub(crate) fn routers(state: &AppState) -> Router<AppState> {
    state
        .options
        .mounts
        .iter()
        .fold(Router::new(), |router, mount| {
            let shared = A2aState {
                app: state.clone(),
                mount: Arc::new(mount.clone()),
            };
            let base = format!("{}/{{agent_type}}", mount.base_path);
            router.merge(
                Router::new()
                    .route(
                        &format!("{base}{}", a2a::AGENT_CARD_PATH),
                        get(card::agent_card),
                    )
                    .route(&format!("{base}/a2a"), post(rpc::rpc))
                    .route_layer(from_fn_with_state(shared.clone(), authenticate))
                    .with_state(shared),
            )
        })
}

/// Puts the request's principal in its extensions, or refuses it (401, 403 for a credential
/// the mount does not take) with a JSON-RPC error body: every A2A route, before anything is
/// read.
async fn authenticate(State(state): State<A2aState>, mut request: Request, next: Next) -> Response {
    match crate::http::authenticated(&state.app, &mut request, crate::auth::Surface::Mount).await {
        Ok(()) => next.run(request).await,
        Err(refused) => {
            let status = StatusCode::from_u16(refused.code.presentation().http_status)
                .unwrap_or(StatusCode::UNAUTHORIZED);
            let error = error::RpcError::from(refused);
            let body = a2a::JsonRpcResponse::error(serde_json::Value::Null, error.into_object());
            (status, Json(body)).into_response()
        }
    }
}
