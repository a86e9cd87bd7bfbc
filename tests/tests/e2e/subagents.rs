//! Sub-agents: a call of `subagent__<type>` runs a child session of the caller's tree as a child
//! workflow, beside the step's other tools; the child's end is the call's result.

use crate::runs::{TEST_WORKER, describe};
use baton_client::Client as _;
use baton_core::{
    ChunkKind, StreamChunk,
    api::StartResponse,
    chunk::EndStatus,
    message::ToolOutcome,
    store::{SessionAddress, Status},
    subagent,
};
use baton_tests::{Harness, WAIT_LIMIT, WorkerProcess, agents, tool_outcomes};
use serde_json::json;

/// The sub-agent chunks of a stream: `start <child> <call>` and `end <child> <status>`.
fn tree_events(chunks: &[StreamChunk]) -> Vec<String> {
    chunks
        .iter()
        .filter_map(|chunk| match &chunk.kind {
            ChunkKind::SubagentStart {
                sub_session_id,
                tool_call_id,
                agent_type,
            } => Some(format!(
                "start {sub_session_id} {tool_call_id} {agent_type}"
            )),
            ChunkKind::SubagentEnd {
                sub_session_id,
                status,
                ..
            } => Some(format!("end {sub_session_id} {}", <&str>::from(status))),
            _ => None,
        })
        .collect()
}

/// Asserts that the last chunk ends the run as completed with `expected` as the output.
pub(crate) fn assert_completed(chunks: &[StreamChunk], expected: &str) {
    let Some(ChunkKind::End { status, output, .. }) = chunks.last().map(|c| &c.kind) else {
        panic!("no end chunk");
    };
    assert_eq!(*status, EndStatus::Completed);
    assert_eq!(output.as_deref(), Some(expected));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_children_run_in_parallel_beside_a_tool_and_their_outputs_are_the_results() {
    let harness = Harness::start(agents::registry()).await;
    let started = harness.client.start("delegator", "go").await.unwrap();
    let root = SessionAddress::root(&started.session_id);
    let chunks = harness
        .chunks_until_end(&started.session_id, WAIT_LIMIT)
        .await;
    assert_completed(&chunks, "facts about redis and 3");

    let first = subagent::child_address(&root, "d_1_1");
    let second = subagent::child_address(&root, "d_1_2");
    let mut events = tree_events(&chunks);
    events.sort();
    let mut expected = vec![
        format!("start {} d_1_1 researcher", first.session_id),
        format!("start {} d_1_2 researcher", second.session_id),
        format!("end {} completed", first.session_id),
        format!("end {} completed", second.session_id),
    ];
    expected.sort();
    assert_eq!(events, expected);

    // The parent's log has one result per call, in call order.
    let log = harness.messages(&started.session_id).await;
    assert_eq!(
        tool_outcomes(&log),
        [
            &ToolOutcome::Result(json!("facts about rust")),
            &ToolOutcome::Result(json!("facts about redis")),
            &ToolOutcome::Result(json!(3)),
        ]
    );
    // Each child is a session of the root's tree, readable by its own id, with its own log.
    for (child, topic) in [(&first, "rust"), (&second, "redis")] {
        assert_eq!(child.root_session_id, started.session_id);
        let state = harness.client.status(&child.session_id).await.unwrap();
        assert_eq!(state.status, Status::Completed);
        assert_eq!(state.root_session_id, started.session_id);
        assert_eq!(
            state.output.as_deref(),
            Some(format!("facts about {topic}").as_str())
        );
        let child_chunks = harness
            .chunks_until_end(&child.session_id, WAIT_LIMIT)
            .await;
        assert_eq!(child_chunks[0].kind.name(), "run_start");
        assert!(
            child_chunks
                .iter()
                .all(|c| c.header.session_id == child.session_id)
        );
        assert_eq!(child_chunks.last().unwrap().kind.name(), "end");
        let child_log = harness.store.messages(child).await.unwrap();
        assert_eq!(child_log.len(), 3, "system, the call's message, the answer");
    }
    // The root's rollup is the sum of the three sessions' own usage, on /usage and on `end`.
    let mut sum = harness
        .store
        .own_usage_rollup(&root)
        .await
        .unwrap()
        .unwrap();
    for child in [&first, &second] {
        sum.merge(
            &harness
                .store
                .own_usage_rollup(child)
                .await
                .unwrap()
                .unwrap(),
        );
    }
    let rollup = harness
        .client
        .usage(&started.session_id)
        .await
        .unwrap()
        .rollup;
    assert_eq!(rollup, sum);
    assert_eq!(
        rollup.models["scripted"].calls, 4,
        "two root steps, one per child"
    );
    assert_eq!(rollup.tool_calls["subagent__researcher"], 2);
    let Some(ChunkKind::End { usage, .. }) = chunks.last().map(|c| &c.kind) else {
        panic!("no end chunk");
    };
    assert_eq!(usage, &sum);
    let tree = harness.store.tree_sessions(&root).await.unwrap();
    let mut both = vec![first.session_id.clone(), second.session_id.clone()];
    both.sort();
    assert_eq!(tree, both);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_child_is_a_tool_error_for_the_parent_not_a_failed_parent() {
    let harness = Harness::start(agents::registry()).await;
    let started = harness
        .client
        .start("delegator_failing", "go")
        .await
        .unwrap();
    let root = SessionAddress::root(&started.session_id);
    let chunks = harness
        .chunks_until_end(&started.session_id, WAIT_LIMIT)
        .await;
    let Some(ChunkKind::End { status, output, .. }) = chunks.last().map(|c| &c.kind) else {
        panic!("no end chunk");
    };
    assert_eq!(*status, EndStatus::Completed);
    assert_eq!(
        output.as_deref(),
        Some("child gave error max_steps_exceeded")
    );
    let child = subagent::child_address(&root, "f_1_1");
    assert_eq!(
        tree_events(&chunks),
        [
            format!("start {} f_1_1 broken", child.session_id),
            format!("end {} failed", child.session_id),
        ]
    );
    let log = harness.messages(&started.session_id).await;
    let ToolOutcome::Error(error) = tool_outcomes(&log)[0] else {
        panic!("the call has no error");
    };
    assert_eq!(error.code, "max_steps_exceeded");
    let state = harness.client.status(&child.session_id).await.unwrap();
    assert_eq!(state.status, Status::Failed);
}

/// Starts `delegating_holder` on a worker told to hold and waits until its child's `hold` tool
/// runs; returns the worker, the start and the child.
pub(crate) async fn child_holding(
    harness: &Harness,
) -> (WorkerProcess, StartResponse, SessionAddress) {
    let mut worker = WorkerProcess::spawn(TEST_WORKER, harness, true);
    let started = harness
        .client
        .start("delegating_holder", "go")
        .await
        .unwrap();
    let child = subagent::child_address(&SessionAddress::root(&started.session_id), "h_1_1");
    assert!(
        tokio::time::timeout(WAIT_LIMIT, worker.holding())
            .await
            .unwrap()
    );
    (worker, started, child)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_during_a_childs_step_duplicates_no_child_message_or_chunk() {
    let harness = Harness::server_only(agents::registry()).await;
    let (first, started, child) = child_holding(&harness).await;
    let root = SessionAddress::root(&started.session_id);
    // Kill the worker without warning.
    drop(first);

    let _second = WorkerProcess::spawn(TEST_WORKER, &harness, false);
    let chunks = harness
        .chunks_until_end(&started.session_id, WAIT_LIMIT)
        .await;
    assert_completed(&chunks, "parent got released: done");
    let (own, copied): (Vec<StreamChunk>, Vec<StreamChunk>) = chunks
        .into_iter()
        .partition(|chunk| chunk.header.agent_id == started.session_id);
    let described: Vec<String> = own.iter().map(describe).collect();
    assert_eq!(
        described,
        [
            "run_start delegating_holder".to_owned(),
            "step_start 1".to_owned(),
            r#"tool_start 1 h_1_1 subagent__holder {"message":"hold on"}"#.to_owned(),
            format!("subagent_start {}", child.session_id),
            r#"tool_end 1 h_1_1 "released: done""#.to_owned(),
            format!("subagent_end {}", child.session_id),
            "step_end 1".to_owned(),
            "step_start 2".to_owned(),
            r#"text_delta 2 "parent ""#.to_owned(),
            r#"text_delta 2 "got ""#.to_owned(),
            r#"text_delta 2 "released: ""#.to_owned(),
            r#"text_delta 2 "done""#.to_owned(),
            "step_end 2".to_owned(),
            "end Completed parent got released: done -".to_owned(),
        ]
    );
    // One child, its step played once in its log and stream.
    assert_eq!(
        harness.store.tree_sessions(&root).await.unwrap(),
        std::slice::from_ref(&child.session_id)
    );
    assert_eq!(harness.store.messages(&child).await.unwrap().len(), 4);
    let child_chunks = harness
        .chunks_until_end(&child.session_id, WAIT_LIMIT)
        .await;
    let child_described: Vec<String> = child_chunks.iter().map(describe).collect();
    assert_eq!(
        child_described,
        [
            "run_start holder",
            "step_start 1",
            "tool_start 1 call_1_1 hold {}",
            r#"tool_end 1 call_1_1 "done""#,
            "step_end 1",
            "step_start 2",
            r#"text_delta 2 "released: ""#,
            r#"text_delta 2 "done""#,
            "step_end 2",
            "end Completed released: done -",
        ]
    );
    // The root's stream carries the child's chunks too, once each and in order, under the
    // root's sequence and stream id (the child's `end` stays on its own stream).
    let on_root = |chunk: &StreamChunk| {
        let mut header = chunk.header.clone();
        header.stream_id = started.stream_id.clone();
        (header, chunk.kind.clone())
    };
    assert_eq!(
        copied.iter().map(on_root).collect::<Vec<_>>(),
        child_chunks[..child_chunks.len() - 1]
            .iter()
            .map(on_root)
            .collect::<Vec<_>>()
    );
    assert!(
        copied
            .iter()
            .all(|chunk| chunk.header.stream_id == started.stream_id)
    );
}
