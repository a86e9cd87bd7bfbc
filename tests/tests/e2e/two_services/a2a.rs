//! The two real services over A2A: the consumer's `delegator` declares `research` as an
//! `[[agent.a2a_agent]]` by the producer's agent card (every mounted agent is an A2A agent). A
//! consumer worker killed while it follows the task leaves it to the next worker, which follows
//! the same task (one child, one run on the producer, the call answered once); a child's question
//! and approval cross A2A to the consumer's root and back.

use super::{
    Remote, Service, announced_child, consumer, delegate, producer, until_end, until_tool_start,
};
use crate::remote_relay::{one_pending, sessions_on, status_of};
use baton_client::Client as _;
use baton_core::{
    message::ToolOutcome,
    search::PersonCallKind,
    session::ApprovalDecision,
    store::{SessionAddress, Status},
};
use baton_tests::{api_error, tool_outcomes};
use serde_json::json;

/// A producer, and a consumer whose `delegator` calls its `agent_type` over A2A.
async fn over_a2a(agent_type: &str) -> (Service, Service) {
    let producer = producer().await;
    let url = producer.mount_url();
    let consumer = consumer(&Remote {
        a2a: true,
        ..Remote::to(&url, agent_type)
    })
    .await;
    (producer, consumer)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_worker_killed_while_it_follows_an_a2a_task_leaves_it_to_the_next() {
    let (producer, mut consumer) = over_a2a("sleeper").await;
    let started = delegate(&consumer).await;
    let root = started.session_id.clone();
    let child = announced_child(&consumer, &root).await;
    until_tool_start(&producer, &child, "sleep").await;
    // The consumer has recorded the task its message began (a worker lost before that, with
    // the message sent, answers `tool_outcome_unknown`: not this test's case).
    let address = SessionAddress::root(&root);
    super::eventually("the task's record", || async {
        matches!(
            consumer.store.a2a_child(&address, &child).await.unwrap(),
            baton_core::store::A2aChild::Task(_)
        )
        .then_some(())
    })
    .await;

    // The worker following the task dies; the next one follows the task it recorded.
    consumer.kill_worker();
    consumer.start_worker();
    let chunks = until_end(&consumer, &root).await;
    crate::subagents::assert_completed(&chunks, "got rested");
    // One context on the producer, run once: the message was never sent again.
    assert_eq!(
        sessions_on(&producer.client).await,
        std::slice::from_ref(&child)
    );
    assert_eq!(producer.runs().await, 1);
    assert_eq!(
        status_of(&producer.store, &SessionAddress::root(&child)).await,
        Status::Completed
    );
    let log = consumer.messages(&root).await;
    assert_eq!(tool_outcomes(&log).len(), 1, "the call is answered once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_childs_question_and_approval_cross_a2a_to_the_consumers_root() {
    let (producer, consumer) = over_a2a("asker").await;
    let root = delegate(&consumer).await.session_id;
    let client = &consumer.client;

    let question = one_pending(client, &root, PersonCallKind::ClientTool).await;
    assert_eq!(question.tool_name, "ask_user");
    let refused = client
        .submit(
            &root,
            &question.tool_call_id,
            &ToolOutcome::Result(json!({"wrong": 1})),
        )
        .await
        .unwrap_err();
    assert_eq!(api_error(refused).code.as_str(), "INVALID_RESULT");
    client
        .submit(
            &root,
            &question.tool_call_id,
            &ToolOutcome::Result(json!({"answer": "Ada"})),
        )
        .await
        .unwrap();
    client.resume(&root).await.unwrap();

    let approval = one_pending(client, &root, PersonCallKind::Approval).await;
    assert_eq!(approval.tool_name, "calculator");
    let decision = ApprovalDecision {
        approved: true,
        reason: None,
        arguments: None,
    };
    client
        .submit_approval(
            &root,
            &approval.tool_call_id,
            approval.approval_id.as_deref().unwrap(),
            &decision,
        )
        .await
        .unwrap();
    client.resume(&root).await.unwrap();
    let chunks = until_end(&consumer, &root).await;
    crate::subagents::assert_completed(&chunks, r#"got {"answer":"Ada"} / 42"#);
    let child = announced_child(&consumer, &root).await;
    assert_eq!(
        sessions_on(&producer.client).await,
        std::slice::from_ref(&child)
    );
}
