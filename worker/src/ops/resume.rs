//! Resuming a suspended session: a typed [`Resume`] (its mode's fields checked by the wire type),
//! the message checked, then a claim for a new run (or, for `from_checkpoint`, a rewind) and the
//! new run's workflow.

use super::{
    already_running,
    new_run::claim_and_start,
    no_session,
    reads::existing_session,
    relay,
    rewind::{RewindRequest, rewind_session},
    start::checked_message_beside,
    tree,
};
use crate::state::AppState;
use baton_core::{
    ApiError, ErrorCode, Message, Refusal,
    api::{Resume, ResumeResponse},
    message::UserExtras,
    store::{Claim, ResumeEntry, SessionAddress, Status},
};

/// Resumes a suspended session: claims it for a new run in one script (refusing a running
/// session and a batch with calls still awaited, writing nothing), then starts the run's
/// workflow `agent__<type>__<session>__resume-<runId>`, which drains the answers first.
pub async fn resume_session(
    state: &AppState,
    session_id: &str,
    resume: Resume,
) -> Result<ResumeResponse, ApiError> {
    resume_session_with(state, session_id, resume, UserExtras::default()).await
}

/// [`resume_session`] with what a chat client sent beside the message's text (its id, metadata
/// and files; a message with files may have no text).
pub async fn resume_session_with(
    state: &AppState,
    session_id: &str,
    resume: Resume,
    extras: UserExtras,
) -> Result<ResumeResponse, ApiError> {
    let message = resume
        .message()
        .map(|message| checked_message_beside(message.to_owned(), &extras))
        .transpose()?;
    let entry = ResumeEntry {
        message: message.map(|message| Message::user_with(message, extras)),
        abandon_pending: resume.abandon_pending(),
        expected_run_id: None,
    };
    let session = existing_session(state, session_id).await?;
    if session.session_id != session.root_session_id {
        // A tree goes on as a whole, from its root: a child resumed alone would run past the
        // batch rule of the tree.
        return Err(ApiError::new(
            ErrorCode::ValidationError,
            format!(
                "session {} is a sub-agent's; resume its root session {}",
                session.session_id, session.root_session_id
            ),
        ));
    }
    let continues = !matches!(resume, Resume::FromCheckpoint { .. });
    // A remote child that relayed calls goes on first: its end resumes its caller.
    if matches!(resume, Resume::Continue)
        && let Some(resumed) = relay::resume_relaying_children(state, &session).await?
    {
        return Ok(resumed);
    }
    if continues && let Some(resumed) = tree::resume_tree(state, &session, &entry).await? {
        return Ok(resumed);
    }
    let agent = state.registry.get(&session.agent_type).ok_or_else(|| {
        ApiError::new(
            ErrorCode::UnknownAgentType,
            format!("this server has no agent type {:?}", session.agent_type),
        )
    })?;
    let address = SessionAddress {
        root_session_id: session.root_session_id.clone(),
        session_id: session.session_id.clone(),
    };
    if let Resume::FromCheckpoint { checkpoint_id, .. } = resume {
        let rewind = RewindRequest {
            session: &session,
            agent,
            address,
            checkpoint_id,
            entry,
        };
        return rewind_session(state, rewind).await;
    }
    let claim = claim_and_start(state, &address, agent, &session.stream_id, &entry).await?;
    let claimed = match claim {
        Claim::Claimed(claimed) => claimed,
        Claim::SessionNotFound => return Err(no_session(session_id)),
        Claim::AlreadyRunning => return Err(already_running()),
        Claim::Awaiting { tool_call_ids } => {
            return Err(ApiError::new(
                ErrorCode::StateNotResumable,
                format!(
                    "calls still awaited, answer them first: {}",
                    tool_call_ids.join(", ")
                ),
            )
            .with(Refusal::CallsAwaited {
                awaited_tool_call_ids: tool_call_ids,
            }));
        }
        Claim::NotResumable { status } => {
            return Err(ApiError::new(
                ErrorCode::StateNotResumable,
                format!("the session is {status}; there is nothing to continue"),
            ));
        }
    };
    let workflow_id = claimed.workflow_id;
    tracing::info!(session_id = %session.session_id, %workflow_id, "session resumed");
    Ok(ResumeResponse {
        session_id: session.session_id,
        run_id: claimed.run_id,
        workflow_id: Some(workflow_id),
        status: Status::Active,
    })
}
