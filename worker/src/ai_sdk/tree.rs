//! A session tree's people-in-the-loop through `useChat`: the client calls and approvals that
//! sessions below the chat's root await are tool parts of the chat's message, exactly like the
//! root's own, answered through the root (the submit routes each answer to the session that
//! owns the call, and the tree-wide batch rule decides the continuation).
//!
//! Beside each such part, its owner: a kept `data-subagent-call` part (id
//! `subagent-call-<toolCallId>`, data `{toolCallId, agentId, agentType}`) and the same identity
//! in the part's provider metadata under `baton` (`callProviderMetadata` on the part).

use super::ui::DataPart;
use crate::state::AppState;
use baton_core::{
    ApiError,
    session::Status,
    store::{PendingCall, SessionAddress, StoredAnswer},
};
use serde_json::{Value, json};
use std::collections::HashMap;

/// A call a session below the root awaits, with its owner and the answer stored for it.
#[derive(Debug, Clone)]
pub struct TreeCall {
    /// The owning session (a child or a deeper descendant of the root).
    pub session_id: String,
    pub agent_type: String,
    pub call: PendingCall,
    pub answer: Option<StoredAnswer>,
}

/// What the chat reads of the sessions below its root.
#[derive(Debug, Clone, Default)]
pub struct Tree {
    /// Each session's agent type, by session id.
    pub agent_types: HashMap<String, String>,
    /// The client calls and approvals they await (never a sub-agent call: no client answers one).
    pub calls: Vec<TreeCall>,
}

/// The sessions below `root` and what the suspended ones await.
pub(super) async fn read(state: &AppState, root: &SessionAddress) -> Result<Tree, ApiError> {
    let mut tree = Tree::default();
    for member in state.store.tree_sessions(root).await? {
        let address = SessionAddress {
            root_session_id: root.root_session_id.clone(),
            session_id: member,
        };
        let Some(session) = state.store.session(&address).await? else {
            continue;
        };
        tree.agent_types
            .insert(address.session_id.clone(), session.agent_type.clone());
        if session.status != Status::SuspendedClientTool {
            continue;
        }
        let mut answers = state.store.answers(&address).await?;
        let mut calls: Vec<PendingCall> = state
            .store
            .pending_calls(&address)
            .await?
            .into_iter()
            .map(|(call, _run)| call)
            .filter(|call| !call.kind.is_sub_agent())
            .collect();
        // The order the model asked in, so a reload lists them as the live stream did.
        calls.sort_by(|a, b| (a.step, &a.tool_call_id).cmp(&(b.step, &b.tool_call_id)));
        tree.calls.extend(calls.into_iter().map(|call| TreeCall {
            session_id: address.session_id.clone(),
            agent_type: session.agent_type.clone(),
            answer: answers.remove(&call.tool_call_id),
            call,
        }));
    }
    Ok(tree)
}

/// The identity of a call's owner, as the data part and the provider metadata carry it.
fn identity(tool_call_id: &str, agent_id: &str, agent_type: &str) -> Value {
    json!({ "toolCallId": tool_call_id, "agentId": agent_id, "agentType": agent_type })
}

/// The kept `data-subagent-call` part beside a descendant's call.
pub(super) fn owner_part(tool_call_id: &str, agent_id: &str, agent_type: &str) -> DataPart {
    DataPart::kept(
        "subagent-call",
        Some(format!("subagent-call-{tool_call_id}")),
        identity(tool_call_id, agent_id, agent_type),
    )
}

/// The provider metadata of a descendant's tool part: `{baton: {toolCallId, agentId, agentType}}`.
pub(super) fn owner_metadata(tool_call_id: &str, agent_id: &str, agent_type: &str) -> Value {
    json!({ "baton": identity(tool_call_id, agent_id, agent_type) })
}
