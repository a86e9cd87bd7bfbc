//! What operators see: the client-call log events with their ids, and the metrics (client calls
//! by tool, gRPC requests counted like HTTP ones).

use baton_client::Client as _;
use baton_core::message::ToolOutcome;
use baton_tests::{Harness, agents, events};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_client_call_transition_is_logged_with_its_ids() {
    events::capture();
    let harness = Harness::start(agents::registry()).await;
    let session = harness.suspended_session("asker_only").await;
    let answer = ToolOutcome::Result(json!({"answer": "Ann"}));
    let refused = harness.client.submit(&session, "nope", &answer).await;
    assert!(refused.is_err());
    harness
        .answer_and_finish(&session, "call_1_1", &answer)
        .await;

    assert_eq!(
        events::names_of_session(&session),
        [
            "client_call.registered",
            "client_call.refused",
            "client_call.submitted",
            "client_call.drained",
        ]
    );
    let captured = events::of_session(&session);
    let state = harness.client.status(&session).await.unwrap();
    for fields in &captured {
        assert_eq!(fields["root_session_id"], session, "{fields:?}");
    }
    let registered = &captured[0];
    assert_eq!(
        (
            registered["tool_call_id"].as_str(),
            registered["tool"].as_str()
        ),
        ("call_1_1", "ask_user")
    );
    assert_eq!(captured[1]["reason"], "unknown_tool_call");
    assert_eq!(captured[1]["tool_call_id"], "nope");
    assert_eq!(captured[2]["tool"], "ask_user");
    // The drain is the resumed run's, which is the session's run now.
    assert_eq!(captured[3]["run_id"], state.run_id);
    assert!(captured[3].contains_key("wait_ms"), "{:?}", captured[3]);
    assert_ne!(captured[0]["run_id"], captured[3]["run_id"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_requests_are_counted_like_http_ones() {
    let harness = Harness::start(agents::registry()).await;
    let started = harness.grpc_client.start("two_steps", "go").await.unwrap();
    let missing = harness.grpc_client.status("no-such-session").await;
    assert!(missing.is_err());
    harness
        .grpc_client
        .status(&started.session_id)
        .await
        .unwrap();

    let text = harness.state.metrics.render(&[]);
    for line in [
        r#"baton_grpc_requests_total{code="OK",method="Start"} 1"#,
        r#"baton_grpc_requests_total{code="NOT_FOUND",method="Status"} 1"#,
        r#"baton_grpc_requests_total{code="OK",method="Status"} 1"#,
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "{line} missing in:\n{text}"
        );
    }
    assert!(text.contains("# TYPE baton_grpc_request_duration_seconds histogram"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_logs_the_calls_it_cleared_and_late_submits_are_refused_as_stopped() {
    events::capture();
    let harness = Harness::start(agents::registry()).await;
    let session = harness.suspended_session("asker_only").await;
    harness.client.stop(&session, true).await.unwrap();
    let late = ToolOutcome::Result(json!({"answer": "late"}));
    assert!(
        harness
            .client
            .submit(&session, "call_1_1", &late)
            .await
            .is_err()
    );

    assert_eq!(
        events::names_of_session(&session),
        [
            "client_call.registered",
            "client_call.stop_cleared",
            "client_call.refused",
        ]
    );
    let captured = events::of_session(&session);
    assert_eq!(captured[1]["tool"], "ask_user");
    assert_eq!(captured[2]["reason"], "run_stopped");
}
