//! People across the boundary between two real services: a remote child's question, then its
//! approval, answered through the consumer's root on the consumer's server process (the ids its
//! `/pending` and `/status` list), a wrong answer refused with its typed code and nothing
//! written on either side, the tree run to its end; and a child running past its follower's
//! window, during which no workflow of the consumer is open, whose end comes back by the
//! producer's signed callback and resumes the caller to its end.

use super::{
    Remote, Service, announced_child, assert_forwarded_once, consumer_agents, delegate,
    delegated_to, until_end,
};
use crate::remote_relay::{
    Sides, answer_both_through_the_root, one_pending, sessions_on, status_of,
};
use baton_client::Client as _;
use baton_core::{
    message::ToolOutcome,
    search::PersonCallKind,
    store::{SessionAddress, Status},
};
use baton_tests::api_error;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_childs_question_then_approval_are_answered_through_the_consumers_root() {
    let (producer, consumer, started) = delegated_to("asker").await;
    let root = started.session_id.clone();

    // An id the root never listed is refused with its typed code, before anything is relayed.
    one_pending(&consumer.client, &root, PersonCallKind::ClientTool).await;
    let child = announced_child(&consumer, &root).await;
    let before = consumer.client.status(&root).await.unwrap();
    let unknown = format!("bt_{}", "0".repeat(20));
    let refused = consumer
        .client
        .submit(
            &root,
            &unknown,
            &ToolOutcome::Result(json!({"answer": "Ada"})),
        )
        .await
        .unwrap_err();
    assert_eq!(api_error(refused).code.as_str(), "unknown_tool_call");
    assert_eq!(consumer.client.status(&root).await.unwrap(), before);
    let child_address = SessionAddress::root(&child);
    assert!(
        producer
            .store
            .answers(&child_address)
            .await
            .unwrap()
            .is_empty()
    );

    // The question (after an answer the producer refuses), then the approval, through the root.
    let sides = Sides {
        consumer: &consumer.client,
        consumer_store: &consumer.store,
        producer_store: &producer.store,
        approved_tool: "calculator",
    };
    let chunks = answer_both_through_the_root(&sides, &root).await;
    crate::subagents::assert_completed(&chunks, r#"got {"answer":"Ada"} / 42"#);
    assert_forwarded_once(&producer, &child, &chunks, &started.stream_id).await;

    // One child on the producer, which ran three runs (its start, then a resume per answer).
    assert_eq!(
        sessions_on(&producer.client).await,
        std::slice::from_ref(&child)
    );
    assert_eq!(
        status_of(&producer.store, &child_address).await,
        Status::Completed
    );
    assert_eq!(producer.runs().await, 3);
    assert!(
        consumer
            .client
            .status(&root)
            .await
            .unwrap()
            .pending
            .is_empty()
    );
}

/// A consumer whose follower lets go of `remote`'s child after a second, and whose worker asks
/// each child's producer to call back its server's `/remote-callbacks` and never polls: only
/// the callback can bring a child's end back.
async fn consumer_called_back(remote: Remote<'_>) -> Service {
    let remote = Remote {
        follow_window_secs: 1,
        ..remote
    };
    let mut consumer =
        Service::idle("consumer", &consumer_agents(&remote), super::Auth::Open).await;
    let callbacks = format!("{}/remote-callbacks", consumer.server.base_url());
    consumer.flags.extend([
        "--remote-callback-url".to_owned(),
        callbacks,
        "--remote-poll-secs".to_owned(),
        "0".to_owned(),
    ]);
    consumer.start_worker();
    consumer
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_past_its_window_holds_nothing_and_its_signed_callback_resumes_the_caller() {
    // The producer takes the start, but no worker runs its child yet: the child runs long.
    let mut producer = Service::idle("producer", &super::producer_agents(), super::Auth::Key).await;
    let url = producer.mount_url();
    let consumer = consumer_called_back(Remote::to(&url, "sleeper")).await;
    let started = delegate(&consumer).await;
    let root = started.session_id.clone();

    // Past its window the follower lets go: the caller suspends, and nothing of the consumer
    // runs (Temporal lists no open workflow on its task queue) while the child still runs.
    let temporal = (&consumer.temporal, consumer.task_queue.as_str());
    crate::remote_wait::holds_nothing(&consumer.client, temporal, &root).await;
    let child = announced_child(&consumer, &root).await;
    let child_address = SessionAddress::root(&child);
    assert_eq!(
        status_of(&producer.store, &child_address).await,
        Status::Active
    );
    let seen_field = format!("remoteCallbackSeq:{child}");
    let no_callback = crate::remote_wait::state_field(&consumer.prefix, &root, &seen_field).await;
    assert_eq!(no_callback, None);

    // The producer's worker runs the child to its end; its callback resumes the caller.
    producer.start_worker();
    let chunks = until_end(&consumer, &root).await;
    crate::subagents::assert_completed(&chunks, "got rested");
    assert_forwarded_once(&producer, &child, &chunks, &started.stream_id).await;
    let log = consumer.messages(&root).await;
    assert_eq!(
        baton_tests::tool_outcomes(&log),
        [&ToolOutcome::Result(json!("rested"))]
    );
    let called_back = crate::remote_wait::state_field(&consumer.prefix, &root, &seen_field).await;
    assert!(called_back.is_some(), "the end came by the callback");
    assert_eq!(producer.runs().await, 1, "the child started once");
}
