//! At-most-once server tools: a worker killed while such a tool runs does not make it run again;
//! the model is told the outcome is unknown.

use baton_client::Client as _;
use baton_core::{
    Message,
    message::{ToolCall, ToolError, ToolOutcome, codes},
};
use baton_tests::{Harness, WorkerProcess, agents};
use serde_json::json;

const TEST_WORKER: &str = env!("CARGO_BIN_EXE_baton-test-worker");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_in_an_at_most_once_tool_does_not_run_it_again() {
    let harness = Harness::server_only(agents::registry()).await;
    let first = WorkerProcess::spawn(TEST_WORKER, &harness, true);
    let started = harness.client.start("holder_once", "go").await.unwrap();
    let count_path = agents::run_count_path(&format!("{}/call_1_1", started.session_id));

    // The first worker has started the tool (and counted one run): kill it without warning.
    let _second = first.replace_when_holding(TEST_WORKER, &harness).await;
    harness
        .chunks_until_end(&started.session_id, baton_tests::WAIT_LIMIT)
        .await;

    let runs = std::fs::read_to_string(&count_path).unwrap();
    let _ = std::fs::remove_file(&count_path);
    assert_eq!(runs.lines().count(), 1, "the tool ran again: {runs:?}");

    let hold = ToolCall {
        id: "call_1_1".into(),
        name: "hold".into(),
        arguments: json!({}),
        provider_id: None,
    };
    let messages = harness.messages(&started.session_id).await;
    assert_eq!(messages.len(), 4, "{messages:?}");
    let Message::Tool(result) = &messages[2] else {
        panic!("expected the tool's message, got {:?}", messages[2]);
    };
    assert_eq!(result.tool_call_id, hold.id);
    let ToolOutcome::Error(ToolError { code, .. }) = &result.outcome else {
        panic!("expected an error, got {:?}", result.outcome);
    };
    assert_eq!(code, codes::TOOL_OUTCOME_UNKNOWN);
    assert_eq!(
        messages[3],
        Message::assistant("released: error tool_outcome_unknown", vec![])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_while_an_approved_at_most_once_call_runs_does_not_run_it_again() {
    let harness = Harness::server_only(agents::registry()).await;
    let first = WorkerProcess::spawn(TEST_WORKER, &harness, true);
    let started = harness
        .client
        .start("holder_gated_once", "go")
        .await
        .unwrap();
    let session = started.session_id.clone();
    let count_path = agents::run_count_path(&format!("{session}/call_1_1"));
    harness.chunks_until_suspended(&session).await;
    let before = harness
        .approve_and_resume(&session, &started.run_id, "call_1_1")
        .await;

    // The approved call runs inside the resumed run's drain: kill that worker there.
    let _second = first.replace_when_holding(TEST_WORKER, &harness).await;
    harness.chunks_after_until_end(&session, before).await;

    let runs = std::fs::read_to_string(&count_path).unwrap();
    let _ = std::fs::remove_file(&count_path);
    assert_eq!(runs.lines().count(), 1, "the tool ran again: {runs:?}");
    let messages = harness.messages(&session).await;
    let results = baton_tests::tool_outcomes(&messages);
    assert!(
        matches!(results[..], [ToolOutcome::Error(ToolError { code, .. })] if code == codes::TOOL_OUTCOME_UNKNOWN),
        "{messages:?}"
    );
    // The start marker went with the resumed run's commit.
    let staged: Vec<String> = harness
        .keys()
        .await
        .into_iter()
        .filter(|key| key.ends_with(":staged"))
        .collect();
    assert!(staged.is_empty(), "{staged:?}");
}
