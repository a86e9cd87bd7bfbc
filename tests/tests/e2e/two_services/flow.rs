//! The delegated flow between two real services: the child starts once on the producer under
//! the id derived from the call, its chunks reach the caller's stream stamped `remoteSource`
//! and each once, and its output is the call's result — also when the consumer's worker dies
//! while following it, or the producer's worker dies under it.

use super::{
    Remote, activity_attempts, announced_child, assert_forwarded_once, consumer, delegate,
    delegated_to, producer, until_end, until_tool_heartbeats, until_tool_start,
};
use baton_core::{message::ToolOutcome, store::SessionAddress};
use baton_tests::tool_outcomes;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delegated_call_runs_its_child_once_on_the_producer_and_forwards_each_chunk_once() {
    let (producer, consumer, started) = delegated_to("researcher").await;
    let chunks = until_end(&consumer, &started.session_id).await;
    crate::subagents::assert_completed(&chunks, "got found 42");

    // The child's id is the one derived from the caller and the call.
    let log = consumer.messages(&started.session_id).await;
    assert_eq!(
        tool_outcomes(&log),
        [&ToolOutcome::Result(json!("found 42"))]
    );
    let root = SessionAddress::root(&started.session_id);
    let child = consumer
        .store
        .remote_child_id(&root, &crate::remote::first_call_id(&log))
        .await
        .unwrap();
    assert_forwarded_once(&producer, &child, &chunks, &started.stream_id).await;

    // One run on the producer, of the child; its session knows its caller's metadata.
    assert_eq!(producer.runs().await, 1);
    let session = producer
        .store
        .session(&SessionAddress::root(&child))
        .await
        .unwrap()
        .expect("the child is a session of the producer");
    assert_eq!(session.status, baton_core::store::Status::Completed);
    // The caller's rollup counts the child's tools once.
    let rollup = consumer.store.usage_rollup(&root).await.unwrap().unwrap();
    assert_eq!(rollup.tool_calls.get("calculator"), Some(&1));
    assert_eq!(rollup.tool_calls.get("research"), Some(&1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_worker_killed_while_following_repeats_no_chunk_and_starts_no_second_child() {
    let producer = producer().await;
    let url = producer.mount_url();
    let mut consumer = consumer(&Remote::to(&url, "sleeper")).await;
    let started = delegate(&consumer).await;
    // The consumer follows the child, which sleeps in its tool: the follower's worker dies.
    until_tool_start(&consumer, &started.session_id, "sleep").await;
    consumer.kill_worker();
    consumer.start_worker();

    let chunks = until_end(&consumer, &started.session_id).await;
    crate::subagents::assert_completed(&chunks, "got rested");
    let child = announced_child(&consumer, &started.session_id).await;
    assert_forwarded_once(&producer, &child, &chunks, &started.stream_id).await;
    assert_eq!(producer.runs().await, 1, "the child started once");
    let log = consumer.messages(&started.session_id).await;
    assert_eq!(tool_outcomes(&log), [&ToolOutcome::Result(json!("rested"))]);
    // The call was taken over: the follower's completed attempt is a retry.
    let workflow_id = baton_core::ids::first_run_workflow_id("delegator", &started.session_id);
    let attempts = activity_attempts(&consumer, &workflow_id).await;
    assert!(attempts.iter().any(|a| *a >= 2), "{attempts:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_producer_worker_killed_mid_child_is_replaced_and_the_call_answers_once() {
    let mut producer = producer().await;
    let url = producer.mount_url();
    let consumer = consumer(&Remote::to(&url, "sleeper")).await;
    let started = delegate(&consumer).await;
    let child = announced_child(&consumer, &started.session_id).await;
    // The producer's worker dies while the child sleeps in its tool (its activity started and
    // heartbeating: a kill before it started would leave no attempt to retry); another takes it
    // over.
    let workflow_id = baton_core::ids::first_run_workflow_id("sleeper", &child);
    until_tool_heartbeats(&producer, &workflow_id).await;
    producer.kill_worker();
    producer.start_worker();

    let chunks = until_end(&consumer, &started.session_id).await;
    crate::subagents::assert_completed(&chunks, "got rested");
    assert_forwarded_once(&producer, &child, &chunks, &started.stream_id).await;
    let log = consumer.messages(&started.session_id).await;
    assert_eq!(tool_outcomes(&log), [&ToolOutcome::Result(json!("rested"))]);
    assert_eq!(producer.runs().await, 1);
    // The tool ran again on the new worker; the child's stream holds its result once.
    let own = producer.chunks(&child).await;
    let ends = own
        .iter()
        .filter(|c| matches!(c.kind, baton_core::ChunkKind::ToolEnd { .. }))
        .count();
    assert_eq!(ends, 1);
    let attempts = activity_attempts(&producer, &workflow_id).await;
    assert!(attempts.iter().any(|a| *a >= 2), "{attempts:?}");
}
