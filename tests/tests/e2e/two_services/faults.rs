//! A producer that is not there, or whose child nothing executes any more: the call is a typed
//! tool error after its retries (`remote_unavailable`) or status checks (`producer_dead`), and
//! the caller's run goes on to its answer.

use super::{Remote, announced_child, consumer, delegate, producer, until_end, until_tool_start};
use baton_core::{message::ToolOutcome, store::SessionAddress, store::Status};
use baton_tests::tool_outcomes;

/// The consumer's session's one tool error, and that its run went on to complete.
async fn the_call_failed(
    consumer: &super::Service,
    session_id: &str,
) -> baton_core::message::ToolError {
    until_end(consumer, session_id).await;
    let state = consumer
        .store
        .session(&SessionAddress::root(session_id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(state.status, Status::Completed, "the caller's run goes on");
    let log = consumer.messages(session_id).await;
    match &tool_outcomes(&log)[..] {
        [ToolOutcome::Error(error)] => error.clone(),
        other => panic!("one failed call: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_producer_down_at_start_is_retried_then_a_typed_tool_error_and_the_run_goes_on() {
    // A port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/agents", closed.local_addr().unwrap());
    drop(closed);
    let remote = Remote {
        max_retries: 2,
        ..Remote::to(&url, "researcher")
    };
    let consumer = consumer(&remote).await;
    let started = delegate(&consumer).await;
    let error = the_call_failed(&consumer, &started.session_id).await;
    crate::remote::assert_unavailable_after_three_attempts(&error);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_nothing_executes_any_more_fails_the_call_with_producer_dead() {
    let producer = producer().await;
    let url = producer.mount_url();
    let remote = Remote {
        read_timeout_secs: 1,
        dead_after_attaches: 2,
        ..Remote::to(&url, "sleeper")
    };
    let consumer = consumer(&remote).await;
    let started = delegate(&consumer).await;
    let child = announced_child(&consumer, &started.session_id).await;
    until_tool_start(&producer, &child, "sleep").await;
    // The producer loses the child's run (its workflow is gone) while the session says it
    // runs: a zombie, which `status` reports as running with nothing executing it.
    producer.lose_first_run("sleeper", &child).await;

    let error = the_call_failed(&consumer, &started.session_id).await;
    assert_eq!(error.code, "producer_dead");
    let child_state = producer
        .store
        .session(&SessionAddress::root(&child))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        child_state.status,
        Status::Active,
        "the zombie is left as it is"
    );
}
