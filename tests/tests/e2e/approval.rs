//! Approval-gated server tools: the run suspends on the call, a person approves (possibly with
//! edited arguments) or denies it, and the resumed run runs the tool or reports the denial.

use baton_client::Client as _;
use baton_core::{
    ChunkKind, ErrorCode, Message, StreamChunk,
    message::ToolOutcome,
    store::{ApprovalDecision, Continuation, SessionAddress},
    submit::INVALID_ARGUMENTS_MESSAGE,
};
use baton_tests::{Harness, agents, api_error};
use serde_json::json;

/// Starts `guarded` and returns the session, the run and the approval request's id.
async fn awaiting_approval(harness: &Harness) -> (String, String, String) {
    let started = harness.client.start("guarded", "pay alice").await.unwrap();
    let chunks = harness.chunks_until_suspended(&started.session_id).await;
    let approval_id = chunks
        .iter()
        .find_map(|c| match &c.kind {
            ChunkKind::ToolApprovalRequest {
                approval_id,
                tool_call_id,
                input,
                ..
            } => {
                assert_eq!(
                    (tool_call_id.as_str(), input),
                    ("call_1_1", &json!({"to": "alice", "amount": 10}))
                );
                Some(approval_id.clone())
            }
            _ => None,
        })
        .expect("a tool_approval_request chunk");
    assert_eq!(approval_id, format!("{}::call_1_1", started.run_id));
    (started.session_id, started.run_id, approval_id)
}

async fn resume_to_end(harness: &Harness, session: &str) -> Vec<StreamChunk> {
    let before = harness.client.status(session).await.unwrap().last_sequence;
    harness.client.resume(session).await.unwrap();
    harness.chunks_after_until_end(session, before).await
}

fn last_message(messages: &[Message]) -> &Message {
    messages.last().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_call_runs_with_the_edited_arguments() {
    let harness = Harness::start(agents::registry()).await;
    let (session, _run, approval_id) = awaiting_approval(&harness).await;
    let approve = ApprovalDecision {
        approved: true,
        reason: None,
        arguments: Some(json!({"to": "bob", "amount": 5})),
    };
    let answer = harness
        .client
        .submit_approval(&session, "call_1_1", &approval_id, &approve)
        .await
        .unwrap();
    assert_eq!(answer.continuation, Continuation::CallerResumes);

    let chunks = resume_to_end(&harness, &session).await;
    assert!(chunks.iter().any(
        |c| matches!(&c.kind, ChunkKind::ToolEnd { result: Some(r), .. } if r == "sent 5 to bob")
    ));
    let messages = harness.messages(&session).await;
    assert_eq!(
        last_message(&messages),
        &Message::assistant("Transfer: sent 5 to bob", vec![])
    );
    let Message::Tool(result) = &messages[messages.len() - 2] else {
        panic!("expected the tool result")
    };
    assert_eq!(result.outcome, ToolOutcome::Result(json!("sent 5 to bob")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_call_reaches_the_model_as_a_denial_with_its_reason() {
    let harness = Harness::start(agents::registry()).await;
    let (session, _run, approval_id) = awaiting_approval(&harness).await;
    let deny = ApprovalDecision {
        approved: false,
        reason: Some("too risky".into()),
        arguments: None,
    };
    harness
        .client
        .submit_approval(&session, "call_1_1", &approval_id, &deny)
        .await
        .unwrap();
    resume_to_end(&harness, &session).await;
    let messages = harness.messages(&session).await;
    let Message::Tool(result) = &messages[messages.len() - 2] else {
        panic!("expected the tool result")
    };
    assert!(
        matches!(&result.outcome, ToolOutcome::Error(e) if e.code == "tool_denied" && e.message == "too risky")
    );
    assert_eq!(
        last_message(&messages),
        &Message::assistant("Transfer: error tool_denied", vec![])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_approvals_are_refused_and_store_nothing() {
    let harness = Harness::start(agents::registry()).await;
    let (session, _run, approval_id) = awaiting_approval(&harness).await;
    let approve = |arguments| ApprovalDecision {
        approved: true,
        reason: None,
        arguments,
    };

    let unknown = harness
        .client
        .submit_approval(&session, "call_1_1", "other::call_1_1", &approve(None))
        .await;
    assert_eq!(
        api_error(unknown.unwrap_err()).code,
        ErrorCode::UnknownToolCall
    );
    let bad_arguments = harness
        .client
        .submit_approval(
            &session,
            "call_1_1",
            &approval_id,
            &approve(Some(json!({"to": "bob", "amount": "lots"}))),
        )
        .await;
    let bad_arguments = api_error(bad_arguments.unwrap_err());
    assert_eq!(
        (bad_arguments.code, bad_arguments.error.as_str()),
        (ErrorCode::ValidationError, INVALID_ARGUMENTS_MESSAGE)
    );
    assert_eq!(bad_arguments.details["toolName"], "transfer");
    let wrong_kind = harness
        .client
        .submit(&session, "call_1_1", &ToolOutcome::Result(json!("done")))
        .await;
    let wrong_kind = api_error(wrong_kind.unwrap_err());
    assert_eq!(wrong_kind.code, ErrorCode::ValidationError);
    assert!(
        wrong_kind.error.contains("approval-response"),
        "{}",
        wrong_kind.error
    );
    assert!(
        harness
            .store
            .answers(&SessionAddress::root(&session))
            .await
            .unwrap()
            .is_empty()
    );
}
