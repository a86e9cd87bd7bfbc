//! How a sub-agent call reaches its child: the transport a sub-agent is declared with (in Rust,
//! [`super::SubAgent::via`]; in an agents file, `transport = "local"`), which the step's plan,
//! the workflow's dispatch and the pending entry carry from there.
//!
//! # Adding a transport
//!
//! A transport is a variant here and a module per crate that runs it; everything else reads the
//! variant. For a remote child (an agent served by another service over HTTP), `Remote`:
//!
//! - here: the variant, in [`SubAgentTransport::ALL`] and with its arm in
//!   [`SubAgentTransport::pending_kind`] (the stored name of its calls' pending kind,
//!   `PendingKind::SubAgent(Remote)`, which the store reads back through `ALL` and the submit
//!   script refuses, as it does every kind that starts with `sub_agent`); an agents file accepts
//!   it through serde;
//! - `activities/src/io.rs`: a field of `SubAgentCalls` for its calls (optional, skipped when
//!   empty, so recorded plans keep their shape) and its arms in `SubAgentCalls::push`,
//!   `SubAgentCalls::is_empty` and `SubAgentCalls::into_calls`;
//! - `activities/src/subagent/remote.rs` (new): its activities' bodies, with their declarations in
//!   the `#[activities]` block of `activities/src/lib.rs`, and its arm in
//!   `activities/src/subagent/mod.rs` (how a drained answer folds into the caller's state);
//! - `workflows/src/subagent/remote.rs` (new): how the workflow runs one call, and its arm in
//!   `workflows/src/subagent/mod.rs`.
//!
//! The route (`activities/src/plan/route.rs`) and the pending entry (`activities/src/plan.rs`)
//! take the transport from the declaration as it is, so they need no edit.

use super::{A2aAgent, RemoteAgent};
use serde::Deserialize;
use std::sync::Arc;

/// A sub-agent's transport with what it needs to reach the child: nothing for a local child,
/// the declaration (URL, credentials, retries, deadlines) for a remote one. A remote transport
/// without its declaration cannot be written down; [`Self::kind`] is the tag the plan, the
/// workflow and the pending entry carry.
#[derive(Debug, Clone, Default)]
pub enum Transport {
    #[default]
    Local,
    Remote(Arc<RemoteAgent>),
    A2a(Arc<A2aAgent>),
}

impl Transport {
    /// The tag of this transport, as routed, carried in payloads and stored in pending kinds.
    pub fn kind(&self) -> SubAgentTransport {
        match self {
            Self::Local => SubAgentTransport::Local,
            Self::Remote(_) => SubAgentTransport::Remote,
            Self::A2a(_) => SubAgentTransport::A2a,
        }
    }
}

/// How a sub-agent's child session is reached and run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SubAgentTransport {
    /// The child is a session of the caller's tree in this deployment's Redis, run as a child
    /// workflow (`agent__<type>__<childSession>`) of the caller's run.
    #[default]
    Local,
    /// The child is a session of another service, reached over the remote-agent protocol
    /// (declared with [`super::SubAgent::remote`], in an agents file `[[agent.remote_agent]]`):
    /// the consumer starts it with an id derived from the call and follows its stream in an
    /// activity, copying its chunks onto the caller's stream.
    Remote,
    /// The child is a task of an agent served over A2A by any vendor (declared with
    /// [`super::SubAgent::a2a`], in an agents file `[[agent.a2a_agent]]`): the consumer sends the
    /// call's message in a context derived from the call and follows the task in an activity,
    /// copying its status messages and artifacts onto the caller's stream; its `input-required`
    /// is relayed to a person through the caller's root, as a remote child's pause is.
    A2a,
}

impl SubAgentTransport {
    /// Every transport, for reading a stored pending kind back.
    pub const ALL: [Self; 3] = [Self::Local, Self::Remote, Self::A2a];

    /// The stored name of the pending kind of a call awaiting a child of this transport. Every
    /// one starts with `sub_agent`, which the submit script refuses (a child answers it, never a
    /// client); a local child's is `sub_agent`, as it always was.
    pub fn pending_kind(self) -> &'static str {
        match self {
            Self::Local => "sub_agent",
            Self::Remote => "sub_agent_remote",
            Self::A2a => "sub_agent_a2a",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::PendingKind;
    use serde_json::json;

    #[test]
    fn every_pending_kind_is_stored_by_the_name_it_always_had() {
        let kinds = [
            (PendingKind::Client, "client"),
            (PendingKind::Approval, "approval"),
            (PendingKind::SubAgent(SubAgentTransport::Local), "sub_agent"),
            (
                PendingKind::SubAgent(SubAgentTransport::Remote),
                "sub_agent_remote",
            ),
            (
                PendingKind::SubAgent(SubAgentTransport::A2a),
                "sub_agent_a2a",
            ),
        ];
        for (kind, name) in kinds {
            assert_eq!(kind.as_str(), name);
            assert_eq!(PendingKind::parse(name), Some(kind));
            assert_eq!(serde_json::to_value(kind).unwrap(), json!(name));
            assert_eq!(
                serde_json::from_value::<PendingKind>(json!(name)).unwrap(),
                kind
            );
            assert_eq!(kind.is_sub_agent(), name.starts_with("sub_agent"));
        }
        assert_eq!(PendingKind::parse("sub_agents"), None);
        assert!(serde_json::from_value::<PendingKind>(json!("remote")).is_err());
        assert_eq!(SubAgentTransport::default(), SubAgentTransport::Local);
        // The submit script refuses every kind that starts with `sub_agent`.
        assert!(
            SubAgentTransport::ALL
                .iter()
                .all(|transport| transport.pending_kind().starts_with("sub_agent"))
        );
    }
}
