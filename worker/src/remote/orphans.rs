//! Around a rewind (hooks of `ops::rewind`): the remote children a rewind orphans: a remote call started after the checkpoint did not
//! survive the rewind (its step's messages are cut), so its child, if it still runs, would
//! spend on its producer for nothing. The candidates are found before the rewind's script (the
//! calls the session's own stream started after the checkpoint's position, whose tool is a
//! remote sub-agent and which the checkpoint does not give back) and reconciled after it
//! succeeded, in the background: the rewind answers without waiting on another service
//! (`baton_remote::reconcile_orphans`). A remote call the checkpoint keeps (in its log or
//! its restored calls) is left alone.
//!
//! A rewind frees the cut calls' ids (`stage_turn.lua`), so a rewound run whose model makes the
//! same call again, under the same id, reaches the same child (its id is derived from the
//! call): that call survived after all, and its child is the call's again. So the background
//! task first waits until the rewound run has committed past the cut calls' steps (or stopped,
//! or another run took the session), then leaves out every candidate whose id is in the log.

use crate::state::AppState;
use baton_core::{
    Agent, Message,
    store::{Checkpoint, SessionAddress, Status},
    subagent::SubAgentTransport,
};
use baton_remote::{Orphan, reconcile_orphans};
use std::time::Duration;

/// The remote children `address`'s rewind to `checkpoint` would orphan. Best effort: a read
/// that fails finds none (and says so in the log); the rewind goes on.
pub(crate) async fn before_rewind(
    state: &AppState,
    address: &SessionAddress,
    agent: &Agent,
    checkpoint: &Checkpoint,
) -> Vec<Orphan> {
    let has_remote = agent
        .sub_agents()
        .any(|sub_agent| sub_agent.transport() == SubAgentTransport::Remote);
    if !has_remote {
        return Vec::new();
    }
    let calls = match state
        .store
        .calls_started_after(address, checkpoint.stream_sequence)
        .await
    {
        Ok(calls) => calls,
        Err(error) => {
            tracing::warn!(
                session_id = %address.session_id,
                %error,
                "the remote calls after the checkpoint could not be read; their children are \
                 not reconciled"
            );
            return Vec::new();
        }
    };
    let kept = |id: &str| checkpoint.pending.iter().any(|c| c.tool_call_id == id);
    let mut orphans = Vec::new();
    for call in calls.into_iter().filter(|call| !kept(&call.tool_call_id)) {
        let Some(remote) = super::remote_of(agent, &call.tool_name).cloned() else {
            continue;
        };
        let child_session_id = match state
            .store
            .remote_child_id(address, &call.tool_call_id)
            .await
        {
            Ok(child) => child,
            Err(error) => {
                tracing::warn!(session_id = %address.session_id, %error,
                    "a remote child's id could not be read; it is not reconciled");
                continue;
            }
        };
        orphans.push(Orphan {
            child_session_id,
            tool_call_id: call.tool_call_id,
            tool_name: call.tool_name,
            step: call.step,
            remote,
        });
    }
    orphans
}

/// How often the background task looks at the rewound run, and for how long at most.
const LOOK_EVERY: Duration = Duration::from_millis(250);
const LONGEST_WAIT: Duration = Duration::from_secs(30 * 60);

/// The rewind whose orphans are reconciled: its session, checkpoint and new run.
pub(crate) struct RewoundRun<'a> {
    pub(crate) address: &'a SessionAddress,
    pub(crate) checkpoint_id: u32,
    pub(crate) run_id: &'a str,
}

/// Reconciles the candidates `orphans` of a rewind in a task of its own, once the rewound run
/// has passed their steps, leaving out each call the run made again.
pub(crate) fn after_rewind(state: &AppState, rewound: RewoundRun<'_>, mut orphans: Vec<Orphan>) {
    if orphans.is_empty() {
        return;
    }
    let store = state.store.clone();
    let http = state.http.clone();
    let address = rewound.address.clone();
    let (checkpoint_id, run_id) = (rewound.checkpoint_id, rewound.run_id.to_owned());
    let last_step = orphans.iter().map(|o| o.step).max().unwrap_or(0);
    tokio::spawn(async move {
        let began = tokio::time::Instant::now();
        loop {
            match store.session(&address).await {
                Ok(Some(session))
                    if session.run_id == run_id
                        && session.status == Status::Active
                        && session.step_count < last_step
                        && began.elapsed() < LONGEST_WAIT => {}
                Ok(Some(_)) => break,
                Ok(None) => return,
                Err(error) => tracing::warn!(
                    session_id = %address.session_id,
                    %error,
                    "the rewound session could not be read; looking again"
                ),
            }
            tokio::time::sleep(LOOK_EVERY).await;
        }
        match store.messages(&address).await {
            Ok(log) => orphans.retain(|orphan| !made_again(&log, &orphan.tool_call_id)),
            Err(error) => {
                tracing::warn!(
                    session_id = %address.session_id,
                    %error,
                    "the rewound session's log could not be read; its orphans are not reconciled"
                );
                return;
            }
        }
        reconcile_orphans(&store, &http, &address, checkpoint_id, orphans).await;
    });
}

/// Whether the log holds a call with this id: the rewound run made the call again.
fn made_again(log: &[Message], tool_call_id: &str) -> bool {
    log.iter().any(|message| match message {
        Message::Assistant { tool_calls, .. } => tool_calls.iter().any(|c| c.id == tool_call_id),
        _ => false,
    })
}
