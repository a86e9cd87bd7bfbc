//! Reading a session from outside: `/status` with Temporal's view of the run, `/snapshot` pinned
//! to a checkpoint, and `/usage`.

use baton_client::Client as _;
use baton_core::{
    ErrorCode, Message,
    message::{ToolCall, ToolOutcome},
    store::{SessionAddress, Status},
};
use baton_tests::{Harness, WAIT_LIMIT, WorkerProcess, agents, api_error};
use serde_json::json;

const TEST_WORKER: &str = env!("CARGO_BIN_EXE_baton-test-worker");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_is_pinned_to_the_newest_checkpoint_until_the_session_ends() {
    let harness = Harness::start(agents::registry()).await;
    let session = harness.suspended_session("asker_only").await;
    let address = SessionAddress::root(&session);
    let checkpoint = harness
        .store
        .checkpoint(&address, 1)
        .await
        .unwrap()
        .unwrap();
    let ask = ToolCall {
        id: "call_1_1".into(),
        name: "ask_user".into(),
        arguments: json!({"question": "Name?"}),
        provider_id: None,
    };

    let suspended = harness.client.snapshot(&session).await.unwrap();
    assert_eq!(suspended.status, Status::SuspendedClientTool);
    assert_eq!(
        (
            suspended.stream_sequence,
            suspended.checkpoint_id,
            suspended.step_count,
            suspended.oldest_retained_sequence
        ),
        (checkpoint.stream_sequence as i64, Some(1), 1, 0)
    );
    assert_eq!(
        suspended.messages,
        vec![
            Message::user("go"),
            Message::assistant("", vec![ask.clone()])
        ]
    );
    // The chunks after the pinned position are exactly the suspension's own.
    let after = harness
        .chunks_after_until_suspended(&session, checkpoint.stream_sequence)
        .await;
    let kinds: Vec<&str> = after.iter().map(|c| c.kind.name()).collect();
    assert_eq!(kinds, ["suspended"]);

    let answer = ToolOutcome::Result(json!({"answer": "Ann"}));
    harness
        .answer_and_finish(&session, "call_1_1", &answer)
        .await;
    let ended = harness.client.snapshot(&session).await.unwrap();
    assert_eq!(ended.status, Status::Completed);
    assert_eq!(ended.stream_sequence, -1);
    assert_eq!(ended.step_count, 2);
    assert_eq!(ended.checkpoint_id, Some(2));
    assert_eq!(ended.messages, harness.messages(&session).await);
    assert_eq!(ended.messages.len(), 4);

    let missing = api_error(harness.client.snapshot("nosuchsession").await.unwrap_err());
    assert_eq!(missing.code, ErrorCode::SessionNotFound);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_counts_model_calls_tool_calls_client_waits_and_aborts() {
    let harness = Harness::start(agents::registry()).await;
    let session = harness.suspended_session("asker").await;
    let waited_from = baton_core::store::now_ms();
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let answer = ToolOutcome::Result(json!({"answer": "yes"}));
    harness
        .client
        .submit(&session, "call_1_2", &answer)
        .await
        .unwrap();
    let upper_bound = baton_core::store::now_ms() - waited_from + 1_000;
    harness.resume_to_end(&session).await;

    let usage = harness.client.usage(&session).await.unwrap();
    assert_eq!(usage.session_id, session);
    let rollup = usage.rollup;
    assert_eq!(rollup.models["scripted"].calls, 2);
    assert_eq!(
        rollup.tool_calls.into_iter().collect::<Vec<_>>(),
        [("add".to_owned(), 1), ("ask_user".to_owned(), 1)]
    );
    // The client took at least the 50 ms slept between the suspension and the answer.
    assert!(
        (50..upper_bound).contains(&rollup.client_tool_wait_ms),
        "{}",
        rollup.client_tool_wait_ms
    );
    assert_eq!((rollup.client_tool_timeouts, rollup.aborts), (0, 0));

    let aborted = harness.suspended_session("asker_only").await;
    harness.client.stop(&aborted, true).await.unwrap();
    let rollup = harness.client.usage(&aborted).await.unwrap().rollup;
    assert_eq!((rollup.aborts, rollup.models["scripted"].calls), (1, 1));

    let missing = api_error(harness.client.usage("nosuchsession").await.unwrap_err());
    assert_eq!(missing.code, ErrorCode::SessionNotFound);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_says_whether_temporal_runs_the_session() {
    let harness = Harness::server_only(agents::registry()).await;
    // A session written without its workflow (a crash between the two): active, not executing.
    harness
        .session_without_workflow("orphan", "two_steps")
        .await;
    let orphan = harness.client.status("orphan").await.unwrap();
    assert_eq!(
        (orphan.status, orphan.is_executing),
        (Status::Active, Some(false))
    );

    // A run inside a tool: executing, also after its worker died (Temporal retries it).
    let mut first = WorkerProcess::spawn(TEST_WORKER, &harness, true);
    let started = harness.client.start("holder", "go").await.unwrap();
    assert!(
        tokio::time::timeout(WAIT_LIMIT, first.holding())
            .await
            .unwrap()
    );
    let running = harness.client.status(&started.session_id).await.unwrap();
    assert_eq!(running.is_executing, Some(true));
    drop(first);
    let _second = WorkerProcess::spawn(TEST_WORKER, &harness, false);
    harness.run_result(&started.workflow_id).await.unwrap();
    let ended = harness.client.status(&started.session_id).await.unwrap();
    assert_eq!(
        (ended.status, ended.is_executing),
        (Status::Completed, Some(false))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_requests_and_submits_by_answer() {
    let harness = Harness::start(agents::registry()).await;
    let session = harness.suspended_session("asker_only").await;
    let answer = ToolOutcome::Result(json!({"answer": "Ann"}));
    for _ in 0..2 {
        harness
            .client
            .submit(&session, "call_1_1", &answer)
            .await
            .unwrap();
    }
    let refused = harness.client.submit(&session, "nope", &answer).await;
    assert!(refused.is_err());

    let text = {
        let (status, _, text) = harness.get("/metrics").await;
        assert_eq!(status, axum::http::StatusCode::OK);
        text
    };
    for line in [
        r#"baton_http_requests_total{route="/start",status="200"} 1"#,
        r#"baton_http_requests_total{route="/submit-tool-result",status="404"} 1"#,
        r#"baton_submits_total{answer="accepted"} 1"#,
        r#"baton_submits_total{answer="already_completed"} 1"#,
        r#"baton_submits_total{answer="unknown_tool_call"} 1"#,
        "baton_sse_followers 0",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "{line} missing in:\n{text}"
        );
    }
    assert!(text.contains("# TYPE baton_http_request_duration_seconds histogram"));
}
