//! After a stop (a hook of `ops::stop` and of a tree's stop): the stop of a caller is passed
//! on to the remote child of each remote call it closed, best effort. A child that waits on a
//! person (its calls relayed) or runs past its follower's window has no follower that would.

use crate::state::AppState;
use baton_core::store::{SessionAddress, StopKind};
use baton_remote::Producer;

/// After a stop of `address`'s session (of `agent_type`) closed `closed_calls` (id, tool):
/// passes it on to the remote child of each closed remote call, best effort. A child that waits
/// on a person (its calls relayed) or runs past its follower's window has no follower that
/// would.
pub(crate) async fn after_stop(
    state: &AppState,
    address: &SessionAddress,
    agent_type: &str,
    closed_calls: &[(String, String)],
    kind: StopKind,
) {
    let Some(agent) = state.registry.get(agent_type) else {
        return;
    };
    let action = match kind {
        StopKind::Interrupt => "interrupt",
        StopKind::Abort => "abort",
    };
    for (tool_call_id, tool) in closed_calls {
        let Some(remote) = super::remote_of(agent, tool) else {
            continue;
        };
        let child = match state.store.remote_child_id(address, tool_call_id).await {
            Ok(child) => child,
            Err(error) => {
                tracing::warn!(session_id = %address.session_id, %error,
                    "the remote child's id could not be read; the stop is not passed on");
                continue;
            }
        };
        if let Err(error) = Producer::new(&state.http, remote)
            .stop(&child, action)
            .await
        {
            tracing::warn!(%child, %error, "passing a stop to a remote child failed");
        }
    }
}
