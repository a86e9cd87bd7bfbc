//! `GET {base}/{agentType}/.well-known/agent-card.json`: the agent's A2A card. Its skills are
//! the agent's tools (server tools, client tools, sub-agents: each tool's name and
//! description), its endpoint the JSON-RPC route beside it, and its security scheme the one the
//! mount takes: a bearer credential (a service key, an operator key, or a session token on its
//! own tree). Behind the mount's auth like every A2A route, so a card tells nothing to a
//! caller without a credential.

use super::{A2aState, error::RpcError};
use crate::auth::Principal;
use axum::{
    Extension, Json,
    extract::{Path, State},
    http::{HeaderMap, header},
    response::{IntoResponse, Response},
};
use baton_core::a2a::{AgentCapabilities, AgentCard, AgentSkill, PROTOCOL_VERSION, SecurityScheme};
use std::collections::BTreeMap;

/// The name of the card's one security scheme.
const BEARER: &str = "bearer";

pub(super) async fn agent_card(
    State(state): State<A2aState>,
    Extension(_principal): Extension<Principal>,
    Path(agent_type): Path<String>,
    headers: HeaderMap,
) -> Response {
    if let Err(refused) = state.served(&agent_type) {
        let status = axum::http::StatusCode::NOT_FOUND;
        let body = baton_core::a2a::JsonRpcResponse::error(
            serde_json::Value::Null,
            RpcError::from(refused).into_object(),
        );
        return (status, Json(body)).into_response();
    }
    let Some(agent) = state.app.registry.get(&agent_type) else {
        return axum::http::StatusCode::NOT_FOUND.into_response();
    };
    let skills = agent
        .tool_specs()
        .iter()
        .map(|spec| AgentSkill {
            id: spec.name.clone(),
            name: spec.name.clone(),
            description: spec.description.clone(),
            tags: vec!["tool".into()],
        })
        .collect();
    let url = format!(
        "{}{}/{agent_type}/a2a",
        origin(&headers),
        state.mount.base_path
    );
    let card = AgentCard {
        protocol_version: PROTOCOL_VERSION.into(),
        name: agent_type.clone(),
        description: format!(
            "The Baton agent {agent_type}: a session is a context, a turn a task; a call that \
             waits on a person puts the task in input-required"
        ),
        url,
        preferred_transport: "JSONRPC".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        capabilities: AgentCapabilities {
            streaming: true,
            // The callback sweep POSTs the task to its configuration at each turn end.
            push_notifications: true,
            state_transition_history: false,
        },
        default_input_modes: vec!["text/plain".into(), "application/json".into()],
        default_output_modes: vec!["text/plain".into()],
        skills,
        security_schemes: BTreeMap::from([(
            BEARER.to_owned(),
            SecurityScheme {
                kind: "http".into(),
                scheme: Some("bearer".into()),
                description: Some(
                    "a Baton service key or operator key (the mount's credentials)".into(),
                ),
            },
        )]),
        security: vec![BTreeMap::from([(BEARER.to_owned(), Vec::new())])],
    };
    Json(card).into_response()
}

/// The scheme and host the client reached this server at (`X-Forwarded-Proto` when a proxy
/// says so, else `http`), for the card's absolute endpoint URL.
fn origin(headers: &HeaderMap) -> String {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .filter(|value| !value.is_empty())
    };
    let scheme = match text("x-forwarded-proto") {
        Some("https") => "https",
        _ => "http",
    };
    let host = headers
        .get(header::HOST)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("localhost");
    format!("{scheme}://{host}")
}
