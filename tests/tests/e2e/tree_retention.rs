//! Nothing of an ended tree is kept for ever: once a tree has ended, answered through its root
//! or stopped, every key under the prefix expires within the session retention, the tree's keys
//! on the root (members, children, call owners, drained markers, call ids) included.

use baton_client::Client as _;
use baton_core::{message::ToolOutcome, store::DEFAULT_SESSION_RETENTION};
use baton_tests::{Harness, WAIT_LIMIT, agents, redis_url};
use serde_json::json;

/// Asserts that every key under the harness's prefix expires, within the retention (the
/// prefix's deadline index, which is no session's, holds nothing of them: it is gone). The
/// search index's shard keys are shared by every session of the prefix and have no TTL of their
/// own: there, every entry is due to leave within the retention (the `expiry` sets the index's
/// sweep reads).
async fn every_key_expires(harness: &Harness) {
    let client = redis::Client::open(redis_url()).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    harness.index_settled().await;
    let keys = harness.keys().await;
    assert!(keys.iter().any(|key| key.ends_with(":tree")), "{keys:?}");
    let retention = DEFAULT_SESSION_RETENTION.as_millis() as i64;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let mut leaving = 0;
    for key in keys {
        if key.contains(":index:{idx-") {
            if key.ends_with(":expiry") {
                let due: Vec<(String, i64)> = redis::cmd("ZRANGE")
                    .arg(&key)
                    .arg(0)
                    .arg(-1)
                    .arg("WITHSCORES")
                    .query_async(&mut connection)
                    .await
                    .unwrap();
                for (session, at) in due {
                    assert!(
                        at > now && at <= now + retention,
                        "{session} leaves at {at}"
                    );
                    leaving += 1;
                }
            }
            continue;
        }
        let left: i64 = redis::cmd("PTTL")
            .arg(&key)
            .query_async(&mut connection)
            .await
            .unwrap();
        assert!(left > 0 && left <= retention, "{key}: {left} ms left");
    }
    assert!(
        leaving > 0,
        "no index entry of the ended tree is due to leave"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_key_of_an_answered_tree_expires_with_the_retention() {
    let harness = Harness::start(agents::registry()).await;
    // The grandchild's question, answered through the root: an owner on the root, a drained
    // call's marker, the tree's members, children and call ids.
    let (started, _middle, _grandchild) = crate::tree_stop::suspended_top(&harness).await;
    let answer = ToolOutcome::Result(json!({"answer": "deep"}));
    harness
        .client
        .submit(&started.session_id, "ca_1_1", &answer)
        .await
        .unwrap();
    harness.client.resume(&started.session_id).await.unwrap();
    harness
        .chunks_until_end(&started.session_id, WAIT_LIMIT)
        .await;
    let _ = harness.run_result(&started.workflow_id).await;
    every_key_expires(&harness).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_key_of_a_stopped_tree_expires_with_the_retention() {
    let harness = Harness::start(agents::registry()).await;
    let (started, middle, grandchild) = crate::tree_stop::suspended_top(&harness).await;
    harness.interrupt(&started.session_id).await;
    for session in [
        &started.session_id,
        &middle.session_id,
        &grandchild.session_id,
    ] {
        harness.chunks_until_end(session, WAIT_LIMIT).await;
    }
    every_key_expires(&harness).await;
}
