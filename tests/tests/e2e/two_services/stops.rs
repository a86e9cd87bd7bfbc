//! A stop of the consumer's root reaches its remote child while the child streams: the
//! follower's next forward is fenced by the stop before Temporal's cancellation reaches the
//! activity, and the fenced follower passes the stop on as the caller's was (an interrupt, an
//! abort), so the producer's child ends as its caller did instead of running to its end.

use super::{
    Auth, Remote, Service, announced_child, consumer_agents, delegate, eventually, producer,
};
use baton_client::Client as _;
use baton_core::{ErrorCode, store::SessionAddress, store::Status};

/// A consumer whose worker heartbeats only every 1.5 s: its follower learns of a cancellation
/// late, after the streaming child's next chunk has met the stop's fence.
async fn slow_heartbeat_consumer(remote: &Remote<'_>) -> Service {
    let mut consumer = Service::idle("consumer", &consumer_agents(remote), Auth::Open).await;
    for (flag, value) in [
        ("--heartbeat-every-ms", "1500"),
        ("--heartbeat-timeout-secs", "6"),
    ] {
        let at = consumer.flags.iter().position(|f| f == flag).unwrap();
        consumer.flags[at + 1] = value.to_owned();
    }
    consumer.start_worker();
    consumer
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_of_the_root_reaches_its_streaming_remote_child_as_an_interrupt_or_an_abort() {
    let producer = producer().await;
    let url = producer.mount_url();
    let consumer = slow_heartbeat_consumer(&Remote::to(&url, "streamer")).await;
    let interrupted = delegate(&consumer).await;
    let aborted = delegate(&consumer).await;
    let mut children = Vec::new();
    for (started, abort) in [(&interrupted, false), (&aborted, true)] {
        let child = announced_child(&consumer, &started.session_id).await;
        let address = SessionAddress::root(&child);
        // The child streams: a few of its steps are through.
        eventually("the child's steps", || async {
            let session = producer.store.session(&address).await.unwrap()?;
            (session.step_count >= 3).then_some(())
        })
        .await;
        consumer
            .client
            .stop(&started.session_id, abort)
            .await
            .unwrap();
        children.push(address);
    }
    let ends: Vec<_> = [&children[0], &children[1]]
        .into_iter()
        .map(|address| async {
            eventually("the child's end", || async {
                let session = producer.store.session(address).await.unwrap()?;
                session.status.is_terminal().then_some(session)
            })
            .await
        })
        .collect();
    let ends = futures::future::join_all(ends).await;
    assert_eq!(ends[0].status, Status::Interrupted, "{:?}", ends[0]);
    assert_eq!(ends[1].status, Status::Failed, "{:?}", ends[1]);
    assert_eq!(
        ends[1].error.as_ref().map(|e| e.code),
        Some(ErrorCode::FrameworkCancelled)
    );
    // Stopped well before its 40 steps were through.
    assert!(
        ends[0].step_count < 30 && ends[1].step_count < 30,
        "{ends:?}"
    );
}
