//! The batch rule across a session tree, as a submit answers it: every answer but the one that
//! completes the tree's batch answers `awaiting_batch`, whichever sessions own the calls, and a
//! server that resumes by itself (`resume_on_submit`) resumes the tree only on that answer.

use crate::subagents::assert_completed;
use baton_client::Client as _;
use baton_core::{
    ErrorCode, StreamChunk,
    api::StartResponse,
    message::ToolOutcome,
    store::{ApprovalDecision, Continuation, SessionAddress, Status},
    subagent,
    submit::{SubmitAnswer, SubmitStatus},
};
use baton_tests::{Harness, agents, api_error, open_options};
use baton_worker::ServerOptions;
use serde_json::json;

/// The approval id of `call`, pending on `owner`.
async fn approval_id(harness: &Harness, owner: &SessionAddress, call: &str) -> String {
    let pending = harness.store.pending_call(owner, call).await.unwrap();
    pending.and_then(|call| call.approval_id).unwrap()
}

/// Approves `call` (pending on `owner`) through the root `root_id`.
pub(crate) async fn approve(
    harness: &Harness,
    root_id: &str,
    owner: &SessionAddress,
    call: &str,
) -> SubmitAnswer {
    let approval_id = approval_id(harness, owner, call).await;
    let approved = ApprovalDecision {
        approved: true,
        reason: None,
        arguments: None,
    };
    harness
        .client
        .submit_approval(root_id, call, &approval_id, &approved)
        .await
        .unwrap()
}

/// Answers `ask_user`'s call `call` with `answer` through the root `root_id`.
async fn answer(harness: &Harness, root_id: &str, call: &str, answer: &str) -> SubmitAnswer {
    harness
        .client
        .submit(
            root_id,
            call,
            &ToolOutcome::Result(json!({ "answer": answer })),
        )
        .await
        .unwrap()
}

/// A `fan_out` tree suspended on its two children's calls (`ca_1_1`, and the approval
/// `cg_1_1`): the start, the asking and the approving child, the root's chunks so far.
pub(crate) async fn suspended_fan_out(
    harness: &Harness,
) -> (
    StartResponse,
    SessionAddress,
    SessionAddress,
    Vec<StreamChunk>,
) {
    let started = harness.client.start("fan_out", "go").await.unwrap();
    let root = SessionAddress::root(&started.session_id);
    let asker = subagent::child_address(&root, "p_1_1");
    let approver = subagent::child_address(&root, "p_1_2");
    let chunks = harness.chunks_until_suspended(&started.session_id).await;
    (started, asker, approver, chunks)
}

/// With `cg_1_1` the last call of the `fan_out` tree's batch: a resume is refused naming it, its
/// approval answers `caller_resumes`, and a resume completes the tree with `output`.
pub(crate) async fn approve_last_and_complete(
    harness: &Harness,
    root_id: &str,
    approver: &SessionAddress,
    suspended: &[StreamChunk],
    output: &str,
) {
    refused_awaiting(harness, root_id, &["cg_1_1"]).await;
    let last = approve(harness, root_id, approver, "cg_1_1").await;
    assert_eq!(last.continuation, Continuation::CallerResumes);
    completes(harness, root_id, suspended, true, output).await;
}

/// Asserts that a resume of the root `root_id` is refused, naming these calls as awaited.
pub(crate) async fn refused_awaiting(harness: &Harness, root_id: &str, awaited: &[&str]) {
    let early = api_error(harness.client.resume(root_id).await.unwrap_err());
    assert_eq!(early.code, ErrorCode::StateNotResumable);
    assert_eq!(early.details["awaitedToolCallIds"], json!(awaited));
}

/// Follows the root `root_id` from the end of `suspended` (resuming it first if `resume`) and
/// asserts that the tree completes with `output`.
pub(crate) async fn completes(
    harness: &Harness,
    root_id: &str,
    suspended: &[StreamChunk],
    resume: bool,
    output: &str,
) {
    if resume {
        harness.client.resume(root_id).await.unwrap();
    }
    let before = suspended.last().unwrap().sequence;
    let rest = harness.chunks_after_until_end(root_id, before).await;
    assert_completed(&rest, output);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_answer_completing_a_trees_batch_answers_caller_resumes() {
    let harness = Harness::start(agents::registry()).await;
    let (started, _asker, approver, chunks) = suspended_fan_out(&harness).await;

    // The first child's only call is answered: its own batch is complete, the tree's is not.
    let first = answer(&harness, &started.session_id, "ca_1_1", "blue").await;
    assert_eq!(first.status, SubmitStatus::Accepted);
    assert_eq!(first.continuation, Continuation::AwaitingBatch);
    let again = answer(&harness, &started.session_id, "ca_1_1", "red").await;
    assert_eq!(again.status, SubmitStatus::AlreadyCompleted);
    assert_eq!(again.continuation, Continuation::AwaitingBatch);
    // The resume that answer would have invited is refused, naming the other child's call,
    // which completes the batch.
    approve_last_and_complete(
        &harness,
        &started.session_id,
        &approver,
        &chunks,
        r#"child heard {"answer":"blue"} | child transfer: sent 5 to bob"#,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_roots_own_call_and_a_childs_make_one_batch_whichever_is_answered_first() {
    let harness = Harness::start(agents::registry()).await;
    let started = harness.client.start("asking_fan_out", "go").await.unwrap();
    let root = SessionAddress::root(&started.session_id);
    let approver = subagent::child_address(&root, "q_1_2");
    let chunks = harness.chunks_until_suspended(&started.session_id).await;

    // The child's approval first: the root's own question is still open.
    let first = approve(&harness, &started.session_id, &approver, "cg_1_1").await;
    assert_eq!(first.continuation, Continuation::AwaitingBatch);
    // The root's question last: the root's sub-agent call awaits a child whose calls are all
    // answered, so it does not hold the batch open.
    let last = answer(&harness, &started.session_id, "q_1_1", "savings").await;
    assert_eq!(last.continuation, Continuation::CallerResumes);
    completes(
        &harness,
        &started.session_id,
        &chunks,
        true,
        r#"{"answer":"savings"} | child transfer: sent 5 to bob"#,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_resuming_on_submit_resumes_a_tree_only_on_its_batchs_last_answer() {
    let options = ServerOptions {
        resume_on_submit: true,
        ..open_options()
    };
    let harness = Harness::start_with(agents::registry(), options).await;
    let started = harness.client.start("fan_out", "go").await.unwrap();
    let root = SessionAddress::root(&started.session_id);
    let asker = subagent::child_address(&root, "p_1_1");
    let approver = subagent::child_address(&root, "p_1_2");
    let chunks = harness.chunks_until_suspended(&started.session_id).await;

    let first = answer(&harness, &started.session_id, "ca_1_1", "green").await;
    assert_eq!(first.continuation, Continuation::AwaitingBatch);
    // Nothing was resumed: the answering child still waits, with its answer stored.
    let state = harness.client.status(&asker.session_id).await.unwrap();
    assert_eq!(state.status, Status::SuspendedClientTool);
    assert!(
        harness
            .store
            .answers(&asker)
            .await
            .unwrap()
            .contains_key("ca_1_1")
    );

    let last = approve(&harness, &started.session_id, &approver, "cg_1_1").await;
    assert!(
        matches!(last.continuation, Continuation::NewRun { .. }),
        "{last:?}"
    );
    completes(
        &harness,
        &started.session_id,
        &chunks,
        false,
        r#"child heard {"answer":"green"} | child transfer: sent 5 to bob"#,
    )
    .await;
}
