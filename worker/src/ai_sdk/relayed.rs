//! A remote child's people-in-the-loop through `useChat`: the client calls and approvals a
//! paused remote child relayed to its caller (`baton_core::store::RelayedCall`) are tool parts
//! of the chat's message like a local descendant's (`tree.rs`), under their relayed ids, owned
//! by the remote child (`agentId` its session, `agentType` the remote agent's type as its
//! caller declares it), and answered through the root like any other call.
//!
//! - **Live**: the forwarded chunks carry the producer's ids, which no client may answer, so no
//!   part comes of a forwarded `tool_start`. The relayed calls exist once the child's turn ended
//!   paused and its caller recorded them, which is before the root's `suspended`: the response
//!   reads them then (one pipelined read of the tree, only when the root waits on a sub-agent)
//!   and adds a part for each one the message does not hold yet, before the message's finish.
//! - **Outputs**: a forwarded `tool_end` of a call the message holds under its relayed id (the
//!   id is derived from the child and the producer's id, `subagent::relayed_call_id`) is that
//!   part's output; every other forwarded chunk is only the transient `data-subagent` part.
//! - **Reload**: the snapshot renders the relayed calls of the groups still awaited, answered
//!   ones in their answer's state, as the live stream left them.
//!
//! A remote child that pauses after its caller's follower let go (a child past the follow
//! window) writes its calls after the root's `suspended`: they show on the next reload.

use super::{
    mapper::ToolRole,
    tree::{self, TreeCall},
};
use crate::state::AppState;
use baton_core::{
    AgentRegistry, ApiError,
    chunk::{ChunkKind, StreamChunk},
    store::{AwaitingSession, PendingKind, RelayedEntry, SessionAddress},
    subagent,
};

/// How the front end meets a relayed call: from its kind and the render hint its producer
/// listed (the producer's tool is no tool of this server).
pub(super) fn role(kind: PendingKind, render: Option<serde_json::Value>) -> ToolRole {
    match kind {
        PendingKind::Approval => ToolRole::Approval,
        _ => ToolRole::Client { render },
    }
}

/// The relayed calls `session` (of the tree's reads) keeps, as tree calls owned by their
/// remote child: its agent type is the one `session`'s agent declares for the remote call.
pub(super) fn tree_calls(registry: &AgentRegistry, session: &AwaitingSession) -> Vec<TreeCall> {
    let agent = session
        .agent_type
        .as_deref()
        .and_then(|agent_type| registry.get(agent_type));
    session
        .relayed
        .iter()
        .map(|RelayedEntry { relayed, answer }| {
            let remote_type = session
                .pending
                .iter()
                .find(|call| call.tool_call_id == relayed.via_call_id)
                .and_then(|via| agent?.sub_agent(&via.tool_name))
                .map(|sub_agent| sub_agent.agent_type().to_owned())
                .unwrap_or_default();
            TreeCall {
                session_id: relayed.child_session_id.clone(),
                agent_type: remote_type,
                call: relayed.call.clone(),
                answer: answer.clone(),
                relayed: true,
                render: relayed.render.clone(),
            }
        })
        .collect()
}

/// The relayed calls the tree of `root_session_id` awaits now (answered ones included).
pub async fn calls(state: &AppState, root_session_id: &str) -> Result<Vec<TreeCall>, ApiError> {
    let root = SessionAddress::root(root_session_id);
    let tree = tree::read(state, &root).await?;
    Ok(tree.calls.into_iter().filter(|call| call.relayed).collect())
}

/// The relayed id of the call a forwarded chunk names, when it is a call's end.
pub(super) fn ended_call(chunk: &StreamChunk) -> Option<String> {
    let source = chunk.remote_source.as_ref()?;
    match &chunk.kind {
        ChunkKind::ToolEnd { tool_call_id, .. } => Some(subagent::relayed_call_id(
            &source.child_session_id,
            tool_call_id,
        )),
        _ => None,
    }
}
