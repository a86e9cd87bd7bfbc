//! Orphans on a rewind, between two real services: a caller rewound past a step whose remote
//! child still runs on the producer has cut that child's call, so the child is interrupted
//! (best effort) and the caller's state records it; a remote call the rewind kept is left
//! alone, its child untouched; a cut call's child that had ended is recorded, nothing stopped,
//! its usage counted once.

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

/// Waits until the consumer's session asks its question (step 2), answers it and resumes.
async fn answer_the_question(consumer: &Service, session: &str) {
    chunks_through(&consumer.client, session, 0, WAIT_LIMIT, true).await;
    let answer = ToolOutcome::Result(json!("go on"));
    consumer
        .client
        .submit(session, "delegator_2_1", &answer)
        .await
        .unwrap();
    consumer.client.resume(session).await.unwrap();
}

/// The first checkpoint of the consumer's session `root` that suspended (the question's).
async fn suspended_checkpoint(consumer: &Service, root: &SessionAddress) -> u32 {
    for id in 0..10 {
        if let Some(checkpoint) = consumer.store.checkpoint(root, id).await.unwrap()
            && !checkpoint.pending.is_empty()
        {
            return id;
        }
    }
    panic!("the question's step has no checkpoint")
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
    answer_the_question(&consumer, session).await;
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
    let checkpoint = suspended_checkpoint(&consumer, &root).await;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewind_past_a_remote_child_that_ended_records_it_and_stops_nothing() {
    let producer = producer().await;
    let url = producer.mount_url();
    let remote = Remote {
        calls: 2,
        ask_after_first: true,
        ..Remote::to(&url, "researcher")
    };
    let consumer = consumer(&remote).await;
    let started = delegate(&consumer).await;
    let session = &started.session_id;
    answer_the_question(&consumer, session).await;
    until_end(&consumer, session).await;
    let children = announced_children(&consumer, session, 2).await;
    let ended = &children[1];
    let root = SessionAddress::root(session);
    let rollup_before = consumer.store.usage_rollup(&root).await.unwrap().unwrap();

    let checkpoint = suspended_checkpoint(&consumer, &root).await;
    let rewound = consumer
        .client
        .rewind(session, checkpoint, None, false)
        .await
        .unwrap();
    assert_eq!(rewound.status, Status::SuspendedClientTool);
    let record = eventually("the orphan's record", || async {
        consumer.store.remote_orphan(&root, ended).await.unwrap()
    })
    .await;
    assert_eq!(record.outcome, OrphanOutcome::Ended);
    assert_eq!(record.child_status.as_deref(), Some("completed"));
    assert_eq!(status_of(&producer, ended).await, Status::Completed);
    // Its usage, recorded at its end, is counted once still.
    let rollup = consumer.store.usage_rollup(&root).await.unwrap().unwrap();
    assert_eq!(
        rollup.tool_calls.get("calculator"),
        rollup_before.tool_calls.get("calculator")
    );
    assert_eq!(producer.runs().await, 2);
}
