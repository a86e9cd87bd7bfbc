//! A session tree's people-in-the-loop through `useChat`: the client calls and approvals that
//! sessions below the chat's root await are tool parts of the chat's message, exactly like the
//! root's own, answered through the root (the submit routes each answer to the session that
//! owns the call, and the tree-wide batch rule decides the continuation).
//!
//! Beside each such part, its owner: a kept `data-subagent-call` part (id
//! `subagent-call-<toolCallId>`, data `{toolCallId, agentId, agentType}`) and the same identity
//! in the part's provider metadata under `baton` (`callProviderMetadata` on the part).
//! A remote child's relayed calls are tree calls too (`relayed.rs`).

use super::{
    mapper::{ToolRole, tool_role},
    relayed,
    ui::DataPart,
};
use crate::state::AppState;
use baton_core::{
    AgentRegistry, ApiError,
    session::Status,
    store::{AwaitingSession, PendingCall, Question, SessionAddress, StoredAnswer},
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
    /// A call a paused remote child relayed (`relayed.rs`): owned by the remote child, whose
    /// agent this server may not serve.
    pub relayed: bool,
    /// A relayed call's render hint, as its producer listed it (a local call's comes from its
    /// agent here).
    pub render: Option<Value>,
}

impl TreeCall {
    /// How the front end meets the call; `None` when this server does not serve its agent.
    pub fn role(&self, registry: &AgentRegistry) -> Option<ToolRole> {
        if self.relayed {
            return Some(relayed::role(self.call.kind, self.render.clone()));
        }
        if self.call.asked.is_some() {
            return Some(super::snapshot::question_role(&self.call));
        }
        let agent = registry.get(&self.agent_type)?;
        Some(tool_role(agent, &self.call.tool_name))
    }
}

/// What the chat reads of the sessions below its root.
#[derive(Debug, Clone, Default)]
pub struct Tree {
    /// Each session's agent type, by session id.
    pub agent_types: HashMap<String, String>,
    /// The client calls and approvals they await (never a sub-agent call: no client answers one),
    /// and those remote children relayed to any session of the tree.
    pub calls: Vec<TreeCall>,
    /// The root's own pending calls (sub-agent calls included) and stored answers, read in the
    /// same round trip.
    pub root_pending: Vec<PendingCall>,
    pub root_answers: HashMap<String, StoredAnswer>,
}

/// The sessions below `root` and what the suspended ones await: one pipelined read of the tree
/// (`Store::awaiting_sessions`, which `/pending` reads too).
pub(super) async fn read(state: &AppState, root: &SessionAddress) -> Result<Tree, ApiError> {
    let mut tree = Tree::default();
    let mut sessions = state.store.awaiting_sessions(root, true).await?.into_iter();
    // The root comes first: the tree is what is below it.
    if let Some(own) = sessions.next() {
        tree.calls
            .extend(relayed::tree_calls(&state.registry, &own));
        tree.root_pending = own.pending;
        // A running call's open question is a call the person answers too.
        tree.root_pending
            .extend(own.questions.iter().map(Question::as_pending));
        tree.root_answers = own.answers;
    }
    for session in sessions {
        tree.calls
            .extend(relayed::tree_calls(&state.registry, &session));
        let AwaitingSession {
            address,
            agent_type: Some(agent_type),
            status,
            mut answers,
            pending,
            questions,
            ..
        } = session
        else {
            continue;
        };
        tree.agent_types
            .insert(address.session_id.clone(), agent_type.clone());
        tree.calls.extend(questions.iter().map(|question| TreeCall {
            session_id: address.session_id.clone(),
            agent_type: agent_type.clone(),
            call: question.as_pending(),
            answer: None,
            relayed: false,
            render: None,
        }));
        if status != Some(Status::SuspendedClientTool) {
            continue;
        }
        // In the order the model asked, so a reload lists them as the live stream did.
        tree.calls.extend(
            pending
                .into_iter()
                .filter(|call| !call.kind.is_sub_agent())
                .map(|call| TreeCall {
                    session_id: address.session_id.clone(),
                    agent_type: agent_type.clone(),
                    answer: answers.remove(&call.tool_call_id),
                    call,
                    relayed: false,
                    render: None,
                }),
        );
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
