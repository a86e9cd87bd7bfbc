//! Forking a session (`POST /fork`): its checkpoint found and checked, the fork written as a new
//! root session with its own id, stream and token, and at a checkpoint whose step suspended, the
//! fork rewound to it so that it awaits the same calls. The original is only read.

use super::{
    checked_address,
    reads::existing_session,
    rewind::{RewindRequest, rewind_session},
};
use crate::{audit, auth::Principal, state::AppState};
use baton_core::{
    ApiError, ErrorCode,
    fork::{ForkRequest, ForkResponse},
    ids,
    store::{NewFork, ResumeEntry, SessionAddress, Status},
};

/// `/fork` (operators only): [`copy_session`], audited as the original's `fork` and the new
/// session's start (and its token's mint).
pub async fn fork_session(
    state: &AppState,
    principal: &Principal,
    request: &ForkRequest,
) -> Result<ForkResponse, ApiError> {
    let forked = async {
        principal.must_be_operator()?;
        copy_session(state, request).await
    }
    .await;
    audit::action(principal, "fork", &request.session_id, &forked);
    if let Ok(fork) = &forked {
        audit::new_session(principal, &fork.session_id, fork.token.is_some());
    }
    forked
}

/// Copies `request.session_id` up to `request.checkpoint` into a new session.
async fn copy_session(state: &AppState, request: &ForkRequest) -> Result<ForkResponse, ApiError> {
    let original = existing_session(state, &request.session_id).await?;
    let address = checked_address(&request.session_id)?;
    let agent = state.registry.get(&original.agent_type).ok_or_else(|| {
        ApiError::new(
            ErrorCode::UnknownAgentType,
            format!(
                "this server has no agent {:?} to run a fork of",
                original.agent_type
            ),
        )
    })?;
    let checkpoint = state
        .store
        .checkpoints(&address)
        .await?
        .into_iter()
        .find(|checkpoint| checkpoint.id == request.checkpoint)
        .ok_or_else(|| {
            ApiError::new(
                ErrorCode::CheckpointNotFound,
                format!(
                    "session {} has no checkpoint {} in its current history",
                    request.session_id, request.checkpoint
                ),
            )
        })?;
    if checkpoint
        .pending
        .iter()
        .any(|call| call.kind.is_sub_agent())
    {
        return Err(ApiError::new(
            ErrorCode::StateNotResumable,
            format!(
                "checkpoint {} awaits sub-agent calls, whose children a fork does not copy; fork \
                 from a checkpoint before or after them",
                request.checkpoint
            ),
        ));
    }
    let mut messages = state.store.messages(&address).await?;
    messages.truncate(checkpoint.message_count as usize);
    let fork_id = ids::new_session_id();
    let fork_address = SessionAddress::root(&fork_id);
    let run_id = ids::new_run_id();
    let stream_id = ids::new_session_id();
    let forked_from = format!("{}:{}", request.session_id, request.checkpoint);
    state
        .store
        .create_fork(NewFork {
            address: &fork_address,
            agent_type: agent.name(),
            run_id: &run_id,
            stream_id: &stream_id,
            messages: &messages,
            checkpoint: &checkpoint,
            meta: &original.meta,
            forked_from: forked_from.clone(),
            max_chunks: state.options.stream_max_chunks,
        })
        .await?;
    let mut status = Status::Interrupted;
    if checkpoint.suspension.is_some() {
        let fork = existing_session(state, &fork_id).await?;
        let rewound = rewind_session(
            state,
            RewindRequest {
                session: &fork,
                agent,
                address: fork_address,
                checkpoint_id: 0,
                entry: ResumeEntry {
                    message: None,
                    abandon_pending: false,
                    expected_run_id: None,
                },
                keep_messages: None,
            },
        )
        .await?;
        status = rewound.status;
    }
    tracing::info!(session_id = %fork_id, %forked_from, "session forked");
    Ok(ForkResponse {
        session_id: fork_id.clone(),
        stream_id,
        status,
        forked_from,
        checkpoint: request.checkpoint,
        token: state.options.auth.token_for(&fork_id),
    })
}
