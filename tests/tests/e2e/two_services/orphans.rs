//! Orphans on a rewind, between two real services: a caller rewound past a step whose remote
//! child still runs on the producer has cut that child's call, so the child is interrupted
//! (best effort) and the caller's state records it; a remote call the rewind kept is left
//! alone, its child untouched.

use super::{
    Remote, Service, announced_children, consumer, delegate, eventually, producer, until_end,
    until_tool_start,
};
use baton_client::Client as _;
use baton_core::{
    message::ToolOutcome,
    store::{OrphanOutcome, SessionAddress, Status},
};
use baton_tests::{WAIT_LIMIT, chunks_through, tool_outcomes};
use serde_json::json;

/// The `count`-th remote child of the consumer's session, once it sleeps on the producer,
/// lost there (a zombie: running, nothing executing it), so its call fails with
/// `producer_dead` and the caller goes on while the child stays running.
async fn lose_child(producer: &Service, consumer: &Service, session: &str, count: usize) -> String {
    let child = announced_children(consumer, session, count)
        .await
        .remove(count - 1);
    until_tool_start(producer, &child, "sleep").await;
    producer.lose_first_run("sleeper", &child).await;
    child
}

/// The status of the producer's session `child`.
async fn status_of(producer: &Service, child: &str) -> Status {
    producer
        .store
        .session(&SessionAddress::root(child))
        .await
        .unwrap()
        .unwrap()
        .status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewind_interrupts_the_remote_child_whose_call_it_cut_and_leaves_the_kept_one_alone() {
    let producer = producer().await;
    let url = producer.mount_url();
    let remote = Remote {
        read_timeout_secs: 1,
        dead_after_attaches: 2,
        calls: 2,
        ask_after_first: true,
        ..Remote::to(&url, "sleeper")
    };
    let consumer = consumer(&remote).await;
    let started = delegate(&consumer).await;
    let session = &started.session_id;
    // Step 1 calls the first child; step 2 asks the person; step 3 calls the second child.
    let kept = lose_child(&producer, &consumer, session, 1).await;
    chunks_through(&consumer.client, session, 0, WAIT_LIMIT, true).await;
    let answer = ToolOutcome::Result(json!("go on"));
    consumer
        .client
        .submit(session, "delegator_2_1", &answer)
        .await
        .unwrap();
    consumer.client.resume(session).await.unwrap();
    let cut = lose_child(&producer, &consumer, session, 2).await;
    until_end(&consumer, session).await;
    let log = consumer.messages(session).await;
    let codes: Vec<&str> = tool_outcomes(&log)
        .iter()
        .map(|outcome| match outcome {
            ToolOutcome::Error(error) => error.code.as_str(),
            _ => "result",
        })
        .collect();
    assert_eq!(codes, ["producer_dead", "result", "producer_dead"]);
    let cut_call = crate::remote::first_call_id(&log[log.len() - 3..]);

    // Back to the question of step 2: the second call (and its child) did not survive; the
    // session waits for the person again and no run makes the call again.
    let root = SessionAddress::root(session);
    let mut suspended = None;
    for id in 0..10 {
        if let Some(checkpoint) = consumer.store.checkpoint(&root, id).await.unwrap()
            && !checkpoint.pending.is_empty()
        {
            suspended = Some(id);
            break;
        }
    }
    let checkpoint = suspended.expect("the question's step has a checkpoint");
    let rewound = consumer
        .client
        .rewind(session, checkpoint, None, false)
        .await
        .unwrap();
    assert_eq!(rewound.status, Status::SuspendedClientTool);
    eventually("the orphan's interrupt", || async {
        (status_of(&producer, &cut).await == Status::Interrupted).then_some(())
    })
    .await;
    let record = eventually("the orphan's record", || async {
        consumer.store.remote_orphan(&root, &cut).await.unwrap()
    })
    .await;
    assert_eq!(record.outcome, OrphanOutcome::Interrupted);
    assert_eq!(record.tool_call_id, cut_call);
    assert_eq!(record.tool_name, "research");
    assert_eq!(record.checkpoint_id, checkpoint);
    assert_eq!(record.child_status.as_deref(), Some("running"));

    // The kept call's child was left alone: still running, no record.
    assert_eq!(status_of(&producer, &kept).await, Status::Active);
    assert_eq!(
        consumer.store.remote_orphan(&root, &kept).await.unwrap(),
        None
    );
    assert_eq!(producer.runs().await, 2);
}
