//! After a stop (a hook of `ops::stop` and of a tree's stop): the stop of a caller is passed
//! on to the remote child of each remote call it closed, best effort (an A2A child's task is
//! canceled). A child that waits on a
//! person (its calls relayed) or runs past its follower's window has no follower that would.

use crate::state::AppState;
use baton_core::store::{A2aChild, SessionAddress, StopKind};
use baton_remote::{A2aClient, Producer};

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
        if let Some(a2a) = super::a2a_of(agent, tool) {
            cancel_a2a_task(state, address, tool_call_id, a2a).await;
            continue;
        }
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

/// Cancels the A2A task a closed call began (an interrupt and an abort alike: A2A has one
/// stop), best effort; a call that never recorded a task has nothing to cancel.
async fn cancel_a2a_task(
    state: &AppState,
    address: &SessionAddress,
    tool_call_id: &str,
    a2a: &baton_core::subagent::A2aAgent,
) {
    let task = match state.store.remote_child_id(address, tool_call_id).await {
        Ok(child) => state.store.a2a_child(address, &child).await,
        Err(error) => Err(error),
    };
    let task_id = match task {
        Ok(A2aChild::Task(task_id)) => task_id,
        Ok(A2aChild::Unsent | A2aChild::Sent) => return,
        Err(error) => {
            tracing::warn!(session_id = %address.session_id, %error,
                "the A2A task of a stopped call could not be read; it is not canceled");
            return;
        }
    };
    let canceled = match A2aClient::connect(&state.http, a2a).await {
        Ok(client) => client.cancel(&task_id).await.map(drop),
        Err(error) => Err(error),
    };
    if let Err(error) = canceled {
        tracing::warn!(task = %task_id, %error, "canceling an A2A sub-agent's task failed");
    }
}
