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
    let mut first = WorkerProcess::spawn(TEST_WORKER, &harness, true);
    let started = harness.client.start("holder_once", "go").await.unwrap();
    let count_path = agents::run_count_path(&format!("{}/call_1_1", started.session_id));

    // The first worker has started the tool (and counted one run): kill it without warning.
    assert!(
        tokio::time::timeout(baton_tests::WAIT_LIMIT, first.holding())
            .await
            .unwrap()
    );
    drop(first);

    let _second = WorkerProcess::spawn(TEST_WORKER, &harness, false);
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
