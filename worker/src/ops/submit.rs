//! Submitting a client's answer: parse, authorize, then rate-limit and store in one Redis round
//! trip (see `baton_core::submit`),
//! and with `resume_on_submit` resume the session when the answer completes its batch. An
//! answer to a call a remote child relayed goes to its producer first (`crate::remote`), one to
//! a running call's question beside it (`question.rs`).

use super::resume::resume_session;
use crate::audit;
use crate::{auth::Principal, state::AppState};
use baton_core::{
    ApiError, ErrorCode,
    api::Resume,
    escape::bounded,
    store::Continuation,
    submit::{SubmitAnswer, SubmitRequest, submit_tool_result},
};

/// A submit body from its bytes to its answer: parsed, authorized, a token of the principal's
/// submit bucket spent, rate-limited on its root and stored (one script), and counted by answer. Both transports call it once the body has met the body limits
/// (`super::body_limits`).
pub async fn checked_submit(
    state: &AppState,
    principal: &Principal,
    bytes: &[u8],
) -> Result<SubmitAnswer, ApiError> {
    let answer = match SubmitRequest::from_json(bytes, state.options.verbose_errors) {
        Ok(request) => return submit(state, principal, request).await,
        Err(refused) => Err(refused),
    };
    count(state, &answer);
    answer
}

/// [`checked_submit`] of a body an adapter has already decoded (the producer mount's): the
/// same policy (authorized, audited, the principal's bucket), then stored and counted.
pub async fn submit(
    state: &AppState,
    principal: &Principal,
    request: SubmitRequest,
) -> Result<SubmitAnswer, ApiError> {
    let session_id = request.session_id().to_owned();
    let answer = async {
        principal.may_act_on(&state.store, &session_id).await?;
        super::limits::spend_submit(state, &principal.subject()).await?;
        submit_and_continue(state, request).await
    }
    .await;
    audit::action(principal, "answer", &session_id, &answer);
    count(state, &answer);
    answer
}

/// Counts a submit by its answer (its status, or its refusal's code).
fn count(state: &AppState, answer: &Result<SubmitAnswer, ApiError>) {
    let label = match answer {
        Ok(answer) => answer.status.as_str(),
        Err(error) => error.code.as_str(),
    };
    state.metrics.submits.with_label_values(&[label]).inc();
}

/// Stores a client's answer (see `baton_core::submit`); when the answer completes its batch and
/// the server resumes by itself, also resumes the session and answers `new_run`. A resume that
/// loses to another entry answers `consumed`: that entry drains the answer. An accepted answer is
/// never reported as an error: a resume that fails otherwise (its workflow did not start, and the
/// claim was released) answers `caller_resumes`, so the caller (or the deadline) resumes later.
pub async fn submit_and_continue(
    state: &AppState,
    request: SubmitRequest,
) -> Result<SubmitAnswer, ApiError> {
    let session_id = request.session_id().to_owned();
    // A question a running call asks is answered beside it; nothing resumes.
    if let Some(answered) = super::question::route_submit(state, &request).await? {
        return Ok(answered);
    }
    // A call a remote child relayed is answered on its producer first.
    let mut answer = match crate::remote::route_submit(state, &request).await? {
        Some(relayed) => relayed,
        None => {
            submit_tool_result(
                &state.store,
                &state.registry,
                state.options.submit_limits,
                state.options.submits_per_minute,
                request,
                state.options.verbose_errors,
            )
            .await?
        }
    };
    if !state.options.resume_on_submit || answer.continuation != Continuation::CallerResumes {
        return Ok(answer);
    }
    answer.continuation = match resume_session(state, &session_id, Resume::Continue).await {
        Ok(resumed) => Continuation::NewRun {
            run_id: resumed.run_id,
        },
        Err(error) if error.code == ErrorCode::StateAlreadyRunning => Continuation::Consumed,
        Err(error) => {
            tracing::warn!(%session_id, code = %error.code, error = %bounded(&error.error),
                "the answer is stored but the session could not be resumed: the caller resumes");
            Continuation::CallerResumes
        }
    };
    Ok(answer)
}
