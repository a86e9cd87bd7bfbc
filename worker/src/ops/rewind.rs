//! Rewinding a session to a checkpoint (`/resume` with mode `from_checkpoint`): the checkpoint's
//! checks, the rewind script (for a run whose ids are minted as a claim mints them), then the new
//! run's workflow, or, when the checkpoint's step suspended, the report of the children that
//! ended meanwhile or the deadline workflow; the remote children the rewind orphans are
//! reconciled beside (`crate::remote`'s rewind hooks).

use super::{
    already_running, no_session,
    temporal::{resume_parent_of_ended_children, start_deadline_workflow, start_run_workflow},
};
use crate::state::AppState;
use baton_activities::io::RunInput;
use baton_core::{
    Agent, ApiError, ErrorCode, Refusal,
    api::ResumeResponse,
    store::{
        self, ClaimedRun, NewRunId, NextRun, ResumeEntry, Rewound, SessionAddress, SessionState,
        Status,
    },
};

/// A `from_checkpoint` resume, its session found and its request checked.
pub(super) struct RewindRequest<'a> {
    pub(super) session: &'a SessionState,
    pub(super) agent: &'a Agent,
    pub(super) address: SessionAddress,
    pub(super) checkpoint_id: u32,
    pub(super) entry: ResumeEntry,
    /// Keep at most this many of the checkpoint's messages (see `store::Rewind`).
    pub(super) keep_messages: Option<u64>,
}

/// Rewinds a session to a checkpoint for a new run (one script; a refusal writes nothing). A
/// checkpoint whose step suspended hands its calls to the new run, which awaits them at once
/// (leaving a deadline workflow if the agent resumes by itself) unless the message abandons
/// them; otherwise the run's workflow starts and calls the model.
pub(super) async fn rewind_session(
    state: &AppState,
    request: RewindRequest<'_>,
) -> Result<ResumeResponse, ApiError> {
    let (session, agent, checkpoint_id) = (request.session, request.agent, request.checkpoint_id);
    let (address, entry) = (request.address, request.entry);
    // The new run's ids, as a claim mints them.
    let next = NextRun::new(agent.name(), &session.session_id, NewRunId::Minted);
    let not_found = || {
        ApiError::new(
            ErrorCode::CheckpointNotFound,
            format!(
                "session {} has no checkpoint {checkpoint_id}",
                session.session_id
            ),
        )
    };
    let checkpoint = state
        .store
        .checkpoint(&address, checkpoint_id)
        .await?
        .ok_or_else(not_found)?;
    if entry.message.is_some() && !entry.abandon_pending && !checkpoint.pending.is_empty() {
        let awaited: Vec<String> = checkpoint
            .pending
            .iter()
            .map(|c| c.tool_call_id.clone())
            .collect();
        return Err(ApiError::new(
            ErrorCode::StateNotResumable,
            format!(
                "checkpoint {checkpoint_id} awaits calls ({}); rewind without a message, or \
                 abandon them with abandonPending",
                awaited.join(", ")
            ),
        )
        .with(Refusal::CallsAwaited {
            awaited_tool_call_ids: awaited,
        }));
    }
    // Read before the rewind writes: the rewound run's own calls are not orphans.
    let orphans = crate::remote::before_rewind(state, &address, agent, &checkpoint).await;
    let rewound = state
        .store
        .rewind(
            &address,
            store::Rewind {
                run: next.as_new_run(agent.name(), &session.stream_id),
                checkpoint: &checkpoint,
                message: entry.message,
                abandon_pending: entry.abandon_pending,
                keep_messages: request.keep_messages,
            },
        )
        .await?;
    // The rewound run has the input of a claimed run: it continues after the checkpoint's
    // steps (and so does the suspended one whose deadline workflow starts).
    let input = |run: &ClaimedRun| {
        RunInput::resumed(
            address.clone(),
            agent,
            run,
            &session.stream_id,
            state.policy.clone(),
        )
    };
    let session_id = &session.session_id;
    if matches!(rewound, Rewound::Run { .. } | Rewound::Suspended { .. }) {
        let run = crate::remote::RewoundRun {
            address: &address,
            checkpoint_id,
            run_id: &next.run_id,
        };
        crate::remote::after_rewind(state, run, orphans);
    }
    match rewound {
        Rewound::Run { step_count } => {
            let run = next.claimed(step_count);
            let workflow_id = &run.workflow_id;
            start_run_workflow(state, workflow_id, input(&run)).await?;
            tracing::info!(%session_id, checkpoint_id, %workflow_id, "session rewound");
            Ok(ResumeResponse {
                session_id: session_id.clone(),
                run_id: run.run_id,
                workflow_id: Some(run.workflow_id),
                status: Status::Active,
            })
        }
        Rewound::Suspended {
            step_count,
            pending,
        } => {
            // A sub-agent call given back whose child has ended since is answered by that end
            // (no workflow of the child will report it again).
            if pending.iter().any(|call| call.kind.is_sub_agent())
                && let Some((run_id, workflow_id)) =
                    resume_parent_of_ended_children(state, &address).await?
            {
                tracing::info!(%session_id, checkpoint_id, %workflow_id, "session rewound; its ended children answered it");
                return Ok(ResumeResponse {
                    session_id: session_id.clone(),
                    run_id,
                    workflow_id: Some(workflow_id),
                    status: Status::Active,
                });
            }
            let run = next.claimed(step_count);
            let wake_at = pending.iter().map(|call| call.deadline_at).min();
            if let Some(wake_at) = wake_at.filter(|_| agent.resume_on_deadline()) {
                start_deadline_workflow(state, input(&run), wake_at).await?;
            }
            tracing::info!(%session_id, checkpoint_id, "session rewound to a suspension");
            Ok(ResumeResponse {
                session_id: session_id.clone(),
                run_id: run.run_id,
                workflow_id: None,
                status: Status::SuspendedClientTool,
            })
        }
        Rewound::SessionNotFound => Err(no_session(session_id)),
        Rewound::AlreadyRunning => Err(already_running()),
        Rewound::UnknownCheckpoint => Err(not_found()),
        Rewound::AbandonedCheckpoint => Err(ApiError::new(
            ErrorCode::CheckpointNotFound,
            format!(
                "checkpoint {checkpoint_id} of session {session_id} is on a branch a later \
                 rewind abandoned (its messages are gone); rewind to a checkpoint of the \
                 current history"
            ),
        )),
    }
}
