//! Stopping a session below the root: the child's subtree stops, its parent's sub-agent call is
//! answered `sub_agent_interrupted` (interrupt or abort alike), and the parent goes on, by
//! itself when that completes its batch. Nothing is left that only an operator could clear.

use crate::{
    subagents::assert_completed,
    tree_batch::{approve_last_and_complete, suspended_fan_out},
    tree_lifecycle::assert_children_announced_and_closed,
};
use baton_client::Client as _;
use baton_core::{
    ChunkKind, ErrorCode,
    api::StartResponse,
    chunk::EndStatus,
    message::ToolOutcome,
    store::{SessionAddress, Status},
    subagent,
};
use baton_tests::{Harness, WAIT_LIMIT, agents, api_error, tree_agents::BUSY_STEPS};
use futures::StreamExt;
use serde_json::json;
use std::collections::HashMap;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_child_answers_its_parent_which_goes_on_by_itself() {
    stop_the_only_child(false, Status::Interrupted).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_aborted_child_answers_its_parent_as_an_interrupted_one() {
    stop_the_only_child(true, Status::Failed).await;
}

/// A `top` tree suspended on its grandchild's question (`ca_1_1`): the start, `middle` and the
/// grandchild.
pub(crate) async fn suspended_top(
    harness: &Harness,
) -> (StartResponse, SessionAddress, SessionAddress) {
    let started = harness.client.start("top", "go").await.unwrap();
    let root = SessionAddress::root(&started.session_id);
    let middle = subagent::child_address(&root, "t_1_1");
    let grandchild = subagent::child_address(&middle, "m_1_1");
    harness.chunks_until_suspended(&started.session_id).await;
    (started, middle, grandchild)
}

/// `top` → `middle` → `child_asker`, suspended on the grandchild's question: stopping `middle`
/// stops the grandchild too, and the root completes with the sub-agent call's error.
async fn stop_the_only_child(abort: bool, status: Status) {
    let harness = Harness::start(agents::registry()).await;
    let (started, middle, grandchild) = suspended_top(&harness).await;

    let stopped = harness
        .client
        .stop(&middle.session_id, abort)
        .await
        .unwrap();
    assert_eq!(stopped.status, status);
    let chunks = harness
        .chunks_until_end(&started.session_id, WAIT_LIMIT)
        .await;
    assert_completed(&chunks, "top got error sub_agent_interrupted");
    assert_eq!(assert_children_announced_and_closed(&chunks), 2);
    for address in [&middle, &grandchild] {
        let state = harness.client.status(&address.session_id).await.unwrap();
        assert_eq!(state.status, status, "{address:?}");
    }
    // The grandchild's question is closed: a late answer is refused as a stopped run's.
    let late = harness
        .client
        .submit(
            &started.session_id,
            "ca_1_1",
            &ToolOutcome::Result(json!({"answer": "late"})),
        )
        .await
        .unwrap_err();
    let late = api_error(late);
    assert_eq!(late.code, ErrorCode::UnknownToolCall);
    assert_eq!(late.details["reason"], "run_stopped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_child_leaves_its_siblings_questions_as_the_trees_batch() {
    let harness = Harness::start(agents::registry()).await;
    let (started, asker, approver, chunks) = suspended_fan_out(&harness).await;

    harness.client.stop(&asker.session_id, false).await.unwrap();
    // The root still waits for the other child's approval, the only call left of the batch.
    let state = harness.client.status(&started.session_id).await.unwrap();
    assert_eq!(state.status, Status::SuspendedClientTool);
    approve_last_and_complete(
        &harness,
        &started.session_id,
        &approver,
        &chunks,
        "error sub_agent_interrupted | child transfer: sent 5 to bob",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_root_interrupt_answered_200_has_stopped_every_busy_child_for_good() {
    let harness = Harness::start(agents::registry()).await;
    // Many trees of four children that never stop stepping, stopped mid-flight, repeatedly: a
    // child moving on between the tree's read and its own stop is the race this is about.
    for _round in 0..3 {
        futures::future::join_all((0..6).map(|_| stop_a_busy_tree(&harness))).await;
    }
}

/// Starts a `busy_parent` tree, interrupts its root once every child has committed two steps,
/// and asserts that at the 200 every session is interrupted, and stays so with no step more once
/// every workflow of the tree has ended.
async fn stop_a_busy_tree(harness: &Harness) {
    let started = harness.client.start("busy_parent", "go").await.unwrap();
    let root = SessionAddress::root(&started.session_id);
    let children: Vec<SessionAddress> = (1..=4)
        .map(|i| subagent::child_address(&root, &format!("bp_1_{i}")))
        .collect();
    let mut follow = harness.client.follow(&started.session_id, 0);
    let mut stepped: HashMap<String, u32> = HashMap::new();
    while stepped.values().filter(|step| **step >= 2).count() < children.len() {
        let chunk = follow.next().await.expect("the tree runs").unwrap();
        if let ChunkKind::StepEnd { step } = chunk.kind {
            stepped.insert(chunk.header.agent_id, step);
        }
    }
    drop(follow);

    harness.interrupt(&started.session_id).await;
    let mut steps_at_stop = Vec::new();
    for child in &children {
        let state = harness.client.status(&child.session_id).await.unwrap();
        assert_eq!(state.status, Status::Interrupted, "{child:?} at the 200");
        assert!(state.step_count < BUSY_STEPS as u32, "{child:?}");
        steps_at_stop.push(state.step_count);
    }
    // Every workflow of the tree ends (cancelled, or refused at its next write)...
    let _ = harness.run_result(&started.workflow_id).await;
    for child in &children {
        let _ = harness
            .run_result(&format!("agent__busy_child__{}", child.session_id))
            .await;
    }
    // The root's stream closes every child before the root's end, and nothing follows it.
    let on_root = harness.store.chunks_after(&root, 0, 100_000).await.unwrap();
    assert_eq!(
        assert_children_announced_and_closed(&on_root),
        children.len()
    );
    assert_eq!(on_root.last().map(|chunk| chunk.kind.name()), Some("end"));
    // ... and nothing moved since the 200: each child's stream ends with its interrupted end.
    for (child, steps) in children.iter().zip(steps_at_stop) {
        let state = harness.client.status(&child.session_id).await.unwrap();
        assert_eq!(
            (state.status, state.step_count),
            (Status::Interrupted, steps),
            "{child:?}"
        );
        let chunks = harness
            .chunks_until_end(&child.session_id, WAIT_LIMIT)
            .await;
        assert!(
            matches!(
                chunks.last().map(|chunk| &chunk.kind),
                Some(ChunkKind::End {
                    status: EndStatus::Interrupted,
                    ..
                })
            ),
            "{child:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_takes_the_end_of_a_child_stopped_without_telling_its_parent() {
    let harness = Harness::start(agents::registry()).await;
    let (started, middle, _grandchild) = suspended_top(&harness).await;
    // The tree holds no workflow first: a run that committed its suspension goes on to recheck
    // its children, and would find the child stopped below and report it itself (the repair
    // this test leaves to the resume).
    let middle_workflow = harness.store.session(&middle).await.unwrap().unwrap();
    for workflow_id in [
        Some(started.workflow_id.clone()),
        middle_workflow.workflow_id,
    ] {
        harness.run_result(&workflow_id.unwrap()).await.unwrap();
    }
    // A child stopped as an earlier version did, its parent never told: the root waits on it.
    harness
        .store
        .stop_run(&middle, baton_core::store::StopKind::Interrupt)
        .await
        .unwrap();
    let state = harness.client.status(&started.session_id).await.unwrap();
    assert_eq!(state.status, Status::SuspendedClientTool);

    // A resume of the root reports the child's end and the root goes on.
    harness.client.resume(&started.session_id).await.unwrap();
    let chunks = harness
        .chunks_until_end(&started.session_id, WAIT_LIMIT)
        .await;
    assert_completed(&chunks, "top got error sub_agent_interrupted");
}
