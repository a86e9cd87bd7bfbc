//! A person's answer to a question a running tool call asks (`baton_core::tool::ask`), sent as
//! a client tool result naming the question's id through the tree's root: checked against the
//! question's schema, a token of the root's submit bucket spent, then stored beside the
//! question for the waiting call (`answer_question.lua`). Nothing resumes: the asking run is
//! still active, and the answer's continuation names it (`new_run` with its id: follow the
//! stream). A question that is closed, past its deadline or whose run moved on is an unknown
//! call, as an answered client call is.

use crate::state::AppState;
use baton_core::{
    ApiError, ErrorCode, Refusal, ids,
    session::Continuation,
    store::{QuestionAnswered, SessionAddress},
    submit::{SubmitAnswer, SubmitRequest, SubmitStatus, take_submit_token},
    tool::ask::{PersonAnswer, is_question_id},
};

/// Answers `request` when it names a question (`None` when it does not: another kind of call).
pub(crate) async fn route_submit(
    state: &AppState,
    request: &SubmitRequest,
) -> Result<Option<SubmitAnswer>, ApiError> {
    let id = request.tool_call_id();
    if !is_question_id(id) || !ids::is_valid_session_id(request.session_id()) {
        return Ok(None);
    }
    let root = SessionAddress::root(ids::root_of(request.session_id()));
    let not_open = || {
        ApiError::new(
            ErrorCode::UnknownToolCall,
            format!("no open question {id} in session {}", root.session_id),
        )
        .with(Refusal::NoPendingCall)
    };
    // A question a tool's call suspended its run on is a pending call: the submit stores it.
    let Some(question) = state.store.question(&root, id).await? else {
        return Ok(None);
    };
    let SubmitRequest::ClientToolResult(result) = request else {
        return Err(ApiError::new(
            ErrorCode::ValidationError,
            format!("question {id} awaits a client-tool-result (its answer), not an approval"),
        ));
    };
    let answer = PersonAnswer::from_outcome(&result.outcome);
    check_answer(&question.schema, &answer, id, state.options.verbose_errors)?;
    take_submit_token(&state.store, &root, state.options.submits_per_minute).await?;
    let answered = state.store.answer_question(&question, &answer).await?;
    tracing::info!(
        event = "question_answered",
        session_id = %question.session_id,
        question_id = id,
        answer = answer.action(),
        outcome = ?answered,
        "a person answered a tool call's question"
    );
    match answered {
        QuestionAnswered::Stored { run_id } => Ok(Some(SubmitAnswer {
            status: SubmitStatus::Accepted,
            continuation: Continuation::NewRun { run_id },
        })),
        QuestionAnswered::AlreadyAnswered => Ok(Some(SubmitAnswer {
            status: SubmitStatus::AlreadyCompleted,
            continuation: Continuation::Consumed,
        })),
        QuestionAnswered::Unknown | QuestionAnswered::Expired => Err(not_open()),
    }
}

/// Refuses an answer whose content does not match the question's schema, nothing stored.
fn check_answer(
    schema: &serde_json::Value,
    answer: &PersonAnswer,
    id: &str,
    verbose: bool,
) -> Result<(), ApiError> {
    let Some(first) = answer.mismatch(schema) else {
        return Ok(());
    };
    let error = ApiError::new(
        ErrorCode::InvalidResult,
        format!("the answer does not match the schema of question {id}"),
    );
    Err(error.with(Refusal::SchemaMismatch {
        tool_name: "question".to_owned(),
        tool_call_id: id.to_owned(),
        details: verbose.then_some(first),
    }))
}
