//! Baton's mounted agents served over A2A (v0.3, JSON-RPC), driven by the official A2A Python
//! SDK's client (`tests/a2a/client.py`, `a2a-sdk` as scripts/services.sh pins it) against a real
//! server, worker, Redis and Temporal: the card and its bearer scheme, a blocking send, a stream,
//! an input-required round answered by the next message on the task (and its refusals, which
//! write nothing), a cancel, a resubscribe after a dropped stream and push notification configs.
//! The script asserts on what the client sees; this test then checks Baton's side of the
//! contexts it left.

use baton_client::Client as _;
use baton_core::{ErrorCode, store::Status};
use baton_tests::{Harness, WAIT_LIMIT, agents};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sdk_client_sends_streams_answers_cancels_and_resubscribes_over_a2a() {
    let harness = Harness::start(agents::registry()).await;
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("a2a/client.py");
    let run = tokio::process::Command::new(baton_tests::mcp_agents::python())
        .arg(&script)
        .arg(format!("http://{}/agents", harness.address))
        .arg(baton_tests::TEST_SERVICE_KEY)
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(WAIT_LIMIT * 3, run)
        .await
        .expect("the A2A client ends in time")
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the A2A client failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let left: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    let context = |name: &str| left[name].as_str().unwrap().to_owned();

    // Each context is a session the calling service owns, in the status its task showed.
    for (name, status) in [
        ("sent", Status::Completed),
        ("chat", Status::Completed),
        ("streamed", Status::Completed),
        ("answered", Status::Completed),
        ("canceled", Status::Interrupted),
        ("resubscribed", Status::Completed),
    ] {
        let session = harness.client.status(&context(name)).await.unwrap();
        assert_eq!(session.status, status, "{name}");
        let owner = session.owner.expect("a context belongs to its caller");
        assert_eq!(owner.service, baton_tests::TEST_SERVICE, "{name}");
    }
    // The refused answers wrote nothing: the one answer the model saw is the accepted one.
    let messages = harness.messages(&context("answered")).await;
    let outcomes = baton_tests::tool_outcomes(&messages);
    assert_eq!(outcomes.len(), 1, "{outcomes:?}");
    let chat = harness.client.status(&context("chat")).await.unwrap();
    assert_eq!(chat.output.as_deref(), Some("second: two"));
    let canceled = harness.client.status(&context("canceled")).await.unwrap();
    assert!(
        canceled
            .error
            .is_none_or(|e| e.code != ErrorCode::FrameworkCancelled)
    );
}
