//! Resuming a suspended session: a typed [`Resume`] (its mode's fields checked by the wire type),
//! the message checked, then a claim for a new run (or, for `from_checkpoint`, a rewind) and the
//! new run's workflow.

use super::{
    already_running, checked_address,
    new_run::claim_and_start,
    no_session,
    rewind::{RewindRequest, rewind_session},
    start::checked_message_beside,
    tree,
};
use crate::{
    audit::{self, audit_name_of},
    auth::Principal,
    remote::{self, ResumeFirst},
    state::AppState,
};
use baton_core::{
    ApiError, ErrorCode, Message, Refusal,
    api::{Resume, ResumeRequest, ResumeResponse},
    message::UserExtras,
    store::{Claim, ResumeEntry, SessionAddress, Status},
};

/// `/resume` (both transports and the mount): the principal may act on the session, then the
/// resume (or, `from_checkpoint`, the rewind) of [`resume_session`]; audited as `resume` or
/// `rewind`.
pub async fn resume(
    state: &AppState,
    principal: &Principal,
    request: ResumeRequest,
) -> Result<ResumeResponse, ApiError> {
    let session_id = request.session_id.clone();
    let mut action = "resume";
    let resumed = async {
        principal.may_act_on(&state.store, &session_id).await?;
        let resume = request.checked()?;
        action = audit_name_of(&resume);
        resume_session(state, &session_id, resume).await
    }
    .await;
    audit::action(principal, action, &session_id, &resumed);
    resumed
}

/// What a chat's resume brings beside the [`Resume`]: what the client sent with the message's
/// text (its id, metadata and files) and, for an edit of a message the earliest checkpoint
/// already holds (a chat's first), how many of that checkpoint's messages the rewind keeps.
#[derive(Debug, Clone, Default)]
pub struct ResumeWith {
    pub extras: UserExtras,
    pub keep_messages: Option<u64>,
}

impl From<UserExtras> for ResumeWith {
    fn from(extras: UserExtras) -> Self {
        Self {
            extras,
            keep_messages: None,
        }
    }
}

/// A chat's next turn, edit or regenerate (the chat route has authorized the chat): the resume
/// of [`resume_session_with`], audited as the principal's `resume` or `rewind`.
pub async fn chat_resume(
    state: &AppState,
    principal: &Principal,
    session_id: &str,
    resume: Resume,
    with: ResumeWith,
) -> Result<ResumeResponse, ApiError> {
    let action = audit_name_of(&resume);
    let resumed = async {
        principal.may_act_on(&state.store, session_id).await?;
        resume_session_with(state, session_id, resume, with).await
    }
    .await;
    audit::action(principal, action, session_id, &resumed);
    resumed
}

/// Resumes a suspended session: claims it for a new run in one script (refusing a running
/// session and a batch with calls still awaited, writing nothing), then starts the run's
/// workflow `agent__<type>__<session>__resume-<runId>`, which drains the answers first. No
/// policy: its callers authorize.
pub(crate) async fn resume_session(
    state: &AppState,
    session_id: &str,
    resume: Resume,
) -> Result<ResumeResponse, ApiError> {
    resume_session_with(state, session_id, resume, ResumeWith::default()).await
}

/// [`resume_session`] with what a chat client sent beside the message's text (its id, metadata
/// and files; a message with files may have no text) and, for a rewind, the messages it keeps.
pub(crate) async fn resume_session_with(
    state: &AppState,
    session_id: &str,
    resume: Resume,
    with: ResumeWith,
) -> Result<ResumeResponse, ApiError> {
    let ResumeWith {
        extras,
        keep_messages,
    } = with;
    let message = resume
        .message()
        .map(|message| checked_message_beside(message.to_owned(), &extras))
        .transpose()?;
    let entry = ResumeEntry {
        message: message.map(|message| Message::user_with(message, extras)),
        abandon_pending: resume.abandon_pending(),
        expected_run_id: None,
    };
    let continues = !matches!(resume, Resume::FromCheckpoint { .. });
    // The tree is read once, in one pipelined round trip for a lone root (two for a tree): the
    // relayed calls' follows, the tree's batch rule and the claims below all decide from it.
    let tree = state
        .store
        .read_tree(&checked_address(session_id)?, continues)
        .await?;
    let session = tree
        .first()
        .and_then(|root| root.state.clone())
        .ok_or_else(|| no_session(session_id))?;
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
    // A remote child that relayed calls goes on first: its end resumes its caller.
    if matches!(resume, Resume::Continue) {
        match remote::resume_first(state, &session, &tree).await? {
            ResumeFirst::Nothing => {}
            ResumeFirst::Awaited(open) => return Err(tree::calls_awaited(open)),
            ResumeFirst::Followed(resumed) => return Ok(resumed),
        }
    }
    if continues && let Some(resumed) = tree::resume_tree(state, &session, &entry, &tree).await? {
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
            keep_messages,
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
