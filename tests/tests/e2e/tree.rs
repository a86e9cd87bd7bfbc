//! People in the loop anywhere in a session tree: a child that asks a person suspends as a root
//! does, the suspension propagates up until no workflow of the tree runs, the client answers
//! through the root, and one resume on the root continues the whole tree, deepest first.

use crate::subagents::{assert_completed, child_holding};
use baton_activities::io::RunOutcome;
use baton_client::Client as _;
use baton_core::{
    ChunkKind, ErrorCode, Message, StreamChunk, ToolError,
    chunk::EndStatus,
    message::ToolOutcome,
    store::{ApprovalDecision, PendingKind, SessionAddress, Status, StopKind},
    subagent,
    submit::SubmitAnswer,
};
use baton_tests::{Harness, WAIT_LIMIT, agents, api_error};
use baton_workflows::AgentRunWorkflow;
use serde_json::json;
use temporalio_client::{WorkflowDescribeOptions, WorkflowExecutionStatus};

/// Asserts that each of these workflows ended by suspending its run, and that Temporal runs
/// none of them.
async fn none_running(harness: &Harness, workflow_ids: &[String]) {
    for workflow_id in workflow_ids {
        let outcome = harness.run_result(workflow_id).await.unwrap();
        assert!(
            matches!(outcome, RunOutcome::Suspended { .. }),
            "{workflow_id}: {outcome:?}"
        );
        let description = harness
            .temporal
            .get_workflow_handle::<AgentRunWorkflow>(workflow_id.clone())
            .describe(WorkflowDescribeOptions::default())
            .await
            .unwrap();
        assert_eq!(
            description.status(),
            WorkflowExecutionStatus::Completed,
            "{workflow_id}"
        );
    }
}

/// Answers `child_asker`'s question (`ca_1_1`) with `{answer}`, submitting against `session_id`.
async fn answer_ask(
    harness: &Harness,
    session_id: &str,
    answer: &str,
) -> Result<SubmitAnswer, baton_client::Error> {
    harness
        .client
        .submit(
            session_id,
            "ca_1_1",
            &ToolOutcome::Result(json!({ "answer": answer })),
        )
        .await
}

/// Sends `message` to a suspended root and follows its stream after `after` to the end.
async fn message_to_end(
    harness: &Harness,
    session_id: &str,
    after: u64,
    message: &str,
    abandon_pending: bool,
) -> Vec<StreamChunk> {
    harness
        .client
        .send_message(session_id, message, abandon_pending)
        .await
        .unwrap();
    harness.chunks_after_until_end(session_id, after).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_suspended_children_are_answered_through_the_root_and_one_resume_continues_the_tree() {
    let harness = Harness::start(agents::registry()).await;
    let started = harness.client.start("fan_out", "go").await.unwrap();
    let root = SessionAddress::root(&started.session_id);
    let asker = subagent::child_address(&root, "p_1_1");
    let approver = subagent::child_address(&root, "p_1_2");
    let chunks = harness.chunks_until_suspended(&started.session_id).await;
    assert_eq!(chunks.last().unwrap().kind.name(), "suspended");
    // A client following the root sees the children's question and approval request, each
    // with the child's session as its agentId.
    let asked = chunks.iter().find(|chunk| {
        matches!(&chunk.kind, ChunkKind::ToolStart { tool_call_id, .. } if tool_call_id == "ca_1_1")
    });
    assert_eq!(asked.unwrap().header.agent_id, asker.session_id);
    let approval = chunks
        .iter()
        .find(|chunk| chunk.kind.name() == "tool_approval_request");
    assert_eq!(approval.unwrap().header.agent_id, approver.session_id);

    // Every session of the tree is suspended, and no workflow of the tree runs.
    for address in [&root, &asker, &approver] {
        let state = harness.client.status(&address.session_id).await.unwrap();
        assert_eq!(state.status, Status::SuspendedClientTool, "{address:?}");
        assert_eq!(state.is_executing, Some(false));
    }
    none_running(
        &harness,
        &[
            started.workflow_id.clone(),
            format!("agent__child_asker__{}", asker.session_id),
            format!("agent__child_approver__{}", approver.session_id),
        ],
    )
    .await;
    // The pending entries are on the children, their owners recorded on the root; the parent
    // awaits its two calls as sub-agent calls no client can answer.
    let ask = harness.store.pending_call(&asker, "ca_1_1").await.unwrap();
    assert_eq!(ask.map(|call| call.kind), Some(PendingKind::Client));
    let pay = harness
        .store
        .pending_call(&approver, "cg_1_1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(pay.kind, PendingKind::Approval);
    for (call, owner) in [("ca_1_1", &asker), ("cg_1_1", &approver)] {
        let found = harness
            .store
            .call_owner(&started.session_id, call)
            .await
            .unwrap();
        assert_eq!(found.as_ref(), Some(&owner.session_id));
    }
    let awaited = harness.store.pending_call(&root, "p_1_1").await.unwrap();
    assert_eq!(
        awaited.map(|call| call.kind),
        Some(PendingKind::SubAgent(subagent::SubAgentTransport::Local))
    );
    let refused = harness
        .client
        .submit(
            &started.session_id,
            "p_1_1",
            &ToolOutcome::Result(json!("x")),
        )
        .await
        .unwrap_err();
    assert_eq!(api_error(refused).code, ErrorCode::UnknownToolCall);

    // The batch rule holds across the tree: nothing is answered yet.
    let early = harness
        .client
        .resume(&started.session_id)
        .await
        .unwrap_err();
    let early = api_error(early);
    assert_eq!(early.code, ErrorCode::StateNotResumable);
    assert!(early.error.contains("ca_1_1, cg_1_1"), "{}", early.error);

    // Both answers go to the root and land on the owning children.
    answer_ask(&harness, &started.session_id, "blue")
        .await
        .unwrap();
    let approval_id = pay.approval_id.unwrap();
    // An approval with edited arguments works in a child too.
    let edited = ApprovalDecision {
        approved: true,
        reason: None,
        arguments: Some(json!({"to": "carol", "amount": 7})),
    };
    harness
        .client
        .submit_approval(&started.session_id, "cg_1_1", &approval_id, &edited)
        .await
        .unwrap();
    assert!(
        harness
            .store
            .answers(&asker)
            .await
            .unwrap()
            .contains_key("ca_1_1")
    );
    assert!(
        harness
            .store
            .answers(&approver)
            .await
            .unwrap()
            .contains_key("cg_1_1")
    );

    // One resume on the root: the children run first, then the root with their results.
    let before = chunks.last().unwrap().sequence;
    harness.client.resume(&started.session_id).await.unwrap();
    let rest = harness
        .chunks_after_until_end(&started.session_id, before)
        .await;
    assert_completed(
        &rest,
        r#"child heard {"answer":"blue"} | child transfer: sent 7 to carol"#,
    );
    let ends = rest
        .iter()
        .filter(|chunk| chunk.kind.name() == "subagent_end")
        .count();
    assert_eq!(ends, 2);
    for address in [&asker, &approver] {
        let state = harness.client.status(&address.session_id).await.unwrap();
        assert_eq!(state.status, Status::Completed);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grandchild_asks_and_the_answer_through_the_root_resumes_three_levels() {
    let harness = Harness::start(agents::registry()).await;
    let started = harness.client.start("top", "go").await.unwrap();
    let root = SessionAddress::root(&started.session_id);
    let middle = subagent::child_address(&root, "t_1_1");
    let grandchild = subagent::child_address(&middle, "m_1_1");
    let chunks = harness.chunks_until_suspended(&started.session_id).await;
    assert_eq!(chunks.last().unwrap().kind.name(), "suspended");
    let state = harness.client.status(&grandchild.session_id).await.unwrap();
    assert_eq!(state.status, Status::SuspendedClientTool);
    assert_eq!(state.root_session_id, started.session_id);
    let owner = harness
        .store
        .call_owner(&started.session_id, "ca_1_1")
        .await
        .unwrap();
    assert_eq!(owner, Some(grandchild.session_id.clone()));
    // Only the root takes submits: the grandchild's own id is refused.
    let elsewhere = answer_ask(&harness, &grandchild.session_id, "no")
        .await
        .unwrap_err();
    assert_eq!(api_error(elsewhere).code, ErrorCode::ValidationError);

    // Nor does a resume of a session below the root: the tree goes on from its root.
    let child_resume = harness
        .client
        .resume(&grandchild.session_id)
        .await
        .unwrap_err();
    assert_eq!(api_error(child_resume).code, ErrorCode::ValidationError);
    answer_ask(&harness, &started.session_id, "deep")
        .await
        .unwrap();
    let before = chunks.last().unwrap().sequence;
    let resumed = harness.client.resume(&started.session_id).await.unwrap();
    assert!(resumed.workflow_id.unwrap().starts_with(&format!(
        "agent__child_asker__{}__resume-",
        grandchild.session_id
    )));
    let rest = harness
        .chunks_after_until_end(&started.session_id, before)
        .await;
    assert_completed(&rest, r#"top got middle got child heard {"answer":"deep"}"#);
    for address in [&middle, &grandchild] {
        let state = harness.client.status(&address.session_id).await.unwrap();
        assert_eq!(state.status, Status::Completed);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_of_the_root_stops_the_whole_tree_and_late_submits_answer_run_stopped() {
    stop_suspended_tree(StopKind::Interrupt, Status::Interrupted).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abort_of_the_root_fails_the_whole_tree_and_late_submits_answer_run_stopped() {
    stop_suspended_tree(StopKind::Abort, Status::Failed).await;
}

/// Stops a suspended three-level tree through its root: every session ends with `status`, and
/// the grandchild's call answers `run_stopped`.
async fn stop_suspended_tree(kind: StopKind, status: Status) {
    let harness = Harness::start(agents::registry()).await;
    let (started, middle, grandchild) = crate::tree_stop::suspended_top(&harness).await;
    let root = SessionAddress::root(&started.session_id);

    harness
        .client
        .stop(&started.session_id, kind == StopKind::Abort)
        .await
        .unwrap();
    for address in [&root, &middle, &grandchild] {
        let state = harness.client.status(&address.session_id).await.unwrap();
        assert_eq!(state.status, status, "{address:?}");
        assert_eq!(state.stop.map(|stop| stop.kind), Some(kind));
    }
    let late = harness
        .client
        .submit(
            &started.session_id,
            "ca_1_1",
            &ToolOutcome::Error(ToolError::new("client_tool_error", "too late")),
        )
        .await
        .unwrap_err();
    let late = api_error(late);
    assert_eq!(late.code, ErrorCode::UnknownToolCall);
    assert_eq!(late.details["reason"], "run_stopped");
    let chunks = harness
        .chunks_until_end(&grandchild.session_id, WAIT_LIMIT)
        .await;
    assert_eq!(chunks.last().unwrap().kind.name(), "end");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_of_the_root_while_a_child_runs_stops_the_child_and_its_workflow() {
    let harness = Harness::server_only(agents::registry()).await;
    // The child's step is running its `hold` tool.
    let (_worker, started, child) = child_holding(&harness).await;
    let root = SessionAddress::root(&started.session_id);
    harness
        .client
        .stop(&started.session_id, false)
        .await
        .unwrap();
    for address in [&root, &child] {
        let state = harness.client.status(&address.session_id).await.unwrap();
        assert_eq!(state.status, Status::Interrupted, "{address:?}");
    }
    for session in [&started.session_id, &child.session_id] {
        let chunks = harness.chunks_until_end(session, WAIT_LIMIT).await;
        let Some(ChunkKind::End { status, .. }) = chunks.last().map(|c| &c.kind) else {
            panic!("no end chunk");
        };
        assert_eq!(*status, EndStatus::Interrupted);
    }
    // The child's workflow is cancelled with its parent's.
    let child_workflow = format!("agent__holder__{}", child.session_id);
    let outcome = harness.run_result(&child_workflow).await;
    assert!(outcome.is_err(), "{outcome:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_childs_lapsed_deadline_resumes_it_and_its_end_resumes_the_parent_without_a_resume() {
    let harness = Harness::start(agents::registry()).await;
    let started = harness
        .client
        .start("unanswered_parent", "go")
        .await
        .unwrap();
    // Nobody answers: the child's deadline workflow resumes the child, whose end resumes the
    // root.
    let chunks = harness
        .chunks_until_end(&started.session_id, WAIT_LIMIT)
        .await;
    assert_completed(&chunks, "parent saw Outcome: error client_tool_timeout");
    let kinds: Vec<&str> = chunks
        .iter()
        .filter(|chunk| chunk.header.agent_id == started.session_id)
        .map(|chunk| chunk.kind.name())
        .collect();
    assert_eq!(
        kinds.iter().filter(|kind| **kind == "run_start").count(),
        2,
        "the first run and the resumed one: {kinds:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_to_a_suspended_tree_waits_for_its_calls_then_reaches_the_root() {
    let harness = Harness::start(agents::registry()).await;
    let started = harness.client.start("top", "go").await.unwrap();
    let chunks = harness.chunks_until_suspended(&started.session_id).await;
    // The batch rule names the grandchild's call, not the root's call that awaits the tree.
    let early = harness
        .client
        .send_message(&started.session_id, "and thanks", false)
        .await
        .unwrap_err();
    let early = api_error(early);
    assert_eq!(early.code, ErrorCode::StateNotResumable);
    assert_eq!(early.details["awaitedToolCallIds"], json!(["ca_1_1"]));

    answer_ask(&harness, &started.session_id, "yes")
        .await
        .unwrap();
    let after = chunks.last().unwrap().sequence;
    let rest = message_to_end(&harness, &started.session_id, after, "and thanks", false).await;
    assert_completed(&rest, r#"top got middle got child heard {"answer":"yes"}"#);
    // The message follows the sub-agent call's result in the root's log.
    let log = harness.messages(&started.session_id).await;
    let position = |wanted: &Message| log.iter().position(|m| m == wanted);
    let message = position(&Message::user("and thanks")).expect("the message is in the log");
    assert!(matches!(&log[message - 1], Message::Tool(result) if result.tool_call_id == "t_1_1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_abandoning_a_suspended_tree_stops_the_children_and_goes_on_at_the_root() {
    let harness = Harness::start(agents::registry()).await;
    let started = harness.client.start("fan_out", "go").await.unwrap();
    let root = SessionAddress::root(&started.session_id);
    let chunks = harness.chunks_until_suspended(&started.session_id).await;
    // The root's run has ended: after committing its suspension it rechecks its children, and
    // one the message stops in that window would answer its call `sub_agent_interrupted` first.
    harness.run_result(&started.workflow_id).await.unwrap();
    let after = chunks.last().unwrap().sequence;
    let rest = message_to_end(&harness, &started.session_id, after, "never mind", true).await;
    assert_completed(
        &rest,
        "error client_tool_abandoned | error client_tool_abandoned",
    );
    for call in ["p_1_1", "p_1_2"] {
        let child = subagent::child_address(&root, call);
        let state = harness.client.status(&child.session_id).await.unwrap();
        assert_eq!(state.status, Status::Interrupted);
    }
    let late = answer_ask(&harness, &started.session_id, "late")
        .await
        .unwrap_err();
    assert_eq!(api_error(late).details["reason"], "run_stopped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_whose_call_lapses_at_once_still_answers_its_parent() {
    let harness = Harness::start(agents::registry()).await;
    // The child's call lapses at once: its deadline resumes it while the parent reads how it
    // ended or commits the step that awaits it (`recheck_children` covers a child that ends
    // before that commit). The test cannot force either order; whichever comes, the tree
    // finishes with the timeout as the child's answer.
    for _ in 0..3 {
        let started = harness.client.start("hasty_parent", "go").await.unwrap();
        let chunks = harness
            .chunks_until_end(&started.session_id, WAIT_LIMIT)
            .await;
        assert_completed(&chunks, "parent saw Outcome: error client_tool_timeout");
    }
}
