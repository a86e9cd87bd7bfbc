//! Remote agents on the consumer's side, in the server: everything the generic operations do
//! about a remote sub-agent call goes through the hooks below, and nothing else in `ops` knows
//! a transport. Each hook asks the call's transport (`SubAgent::declared_transport`) and does
//! nothing for a local one.
//!
//! | hook | called by | file |
//! |---|---|---|
//! | [`route_submit`]: an answer to a relayed call goes to the producer first | `ops::submit` | `relay.rs` |
//! | [`resume_first`]: a root's resume goes on with its paused remote children | `ops::resume` | `resume.rs` |
//! | [`after_stop`]: a caller's stop is passed on to its remote children | `ops::stop`, `ops::tree` | `stop.rs` |
//! | [`before_rewind`], [`after_rewind`]: the children a rewind orphans are reconciled | `ops::rewind` | `orphans.rs` |
//!
//! Beside the hooks: a child's turn-end callback ([`take_remote_callback`], `callback.rs`; an
//! A2A task's push notification, [`take_a2a_push`], `a2a_push.rs`), the
//! remote-wait sweep's pass (`wait.rs`) and the one start of a child's follow (`follow.rs`). The
//! clients of the producers are in `baton_remote`; the activities that follow a call are in
//! `baton_activities` (`subagent/`). A new transport adds its arms here, its client beside the
//! mount's in `baton_remote`, and its activity body beside `subagent/remote.rs`
//! (ARCHITECTURE.md, "A new transport").

mod a2a_push;
mod a2a_relay;
mod callback;
mod follow;
mod orphans;
mod relay;
mod resume;
mod stop;
mod wait;

pub use a2a_push::{A2A_PUSH_TOKEN_HEADER, take_a2a_push};
pub use callback::take_remote_callback;
pub(crate) use orphans::{RewoundRun, after_rewind, before_rewind};
pub(crate) use relay::route_submit;
pub(crate) use resume::{ResumeFirst, resume_first};
pub(crate) use stop::after_stop;
pub use wait::{RemoteWaitSweep, RemoteWaitTargets, sweep_remote_waits_once};

use crate::state::AppState;
use baton_core::{
    Agent,
    subagent::{A2aAgent, RemoteAgent, Transport},
};
use follow::FollowTargets;

/// The remote declaration of `agent`'s tool `tool`, if that tool is a remote sub-agent.
fn remote_of<'a>(agent: &'a Agent, tool: &str) -> Option<&'a RemoteAgent> {
    match agent.sub_agent(tool)?.declared_transport() {
        Transport::Remote(remote) => Some(remote),
        Transport::Local | Transport::A2a(_) => None,
    }
}

/// The A2A declaration of `agent`'s tool `tool`, if that tool is an A2A sub-agent.
fn a2a_of<'a>(agent: &'a Agent, tool: &str) -> Option<&'a A2aAgent> {
    match agent.sub_agent(tool)?.declared_transport() {
        Transport::A2a(a2a) => Some(a2a),
        Transport::Local | Transport::Remote(_) => None,
    }
}

/// Where the server starts a child's follow.
fn targets(state: &AppState) -> FollowTargets<'_> {
    FollowTargets {
        temporal: &state.temporal,
        task_queue: &state.task_queue,
        policy: &state.policy,
    }
}
