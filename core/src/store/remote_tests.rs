//! `forward_remote.lua` against a real Redis: a remote child's chunks forwarded once each
//! whatever the repeats, its `subagent_start` once, the cursor a follower resumes from, the
//! child's rollup counted once, and a stale or ended run writing nothing.

use super::tests::{at, kinds, new_session, store};
use super::*;
use crate::{
    chunk::{ChunkKind, RemoteSource},
    usage::UsageRollup,
};

fn forwarded(sequence: u64, delta: &str) -> ForwardedChunk {
    ForwardedChunk {
        kind: ChunkKind::TextDelta {
            step: 1,
            delta: delta.to_owned(),
        },
        agent_id: "child-1".into(),
        run_id: "remote-run".into(),
        source: RemoteSource {
            child_session_id: "child-1".into(),
            child_sequence: sequence,
            stream_id: "child-stream".into(),
        },
    }
}

#[tokio::test]
async fn a_remote_childs_chunks_are_forwarded_once_each_and_its_usage_counted_once() {
    let store = store().await;
    let root = SessionAddress::root("s1");
    new_session(&store, &root).await;
    let child = ("child-1", "planner", "call-1");
    assert_eq!(store.remote_cursor(&root, "child-1").await.unwrap(), 0);

    let first = [forwarded(2, "a"), forwarded(3, "b")];
    let written = store
        .forward_remote_chunks(FollowMode::InStep, at(&root, "r1", 1), child, &first, None)
        .await
        .unwrap();
    assert_eq!(
        written,
        Forwarded::Written {
            cursor: 3,
            appended: 2
        }
    );
    // A retry re-streams an overlapping window: only what is new is written.
    let again = [forwarded(3, "b"), forwarded(4, "c")];
    let written = store
        .forward_remote_chunks(FollowMode::InStep, at(&root, "r1", 1), child, &again, None)
        .await
        .unwrap();
    assert_eq!(
        written,
        Forwarded::Written {
            cursor: 4,
            appended: 1
        }
    );
    assert_eq!(store.remote_cursor(&root, "child-1").await.unwrap(), 4);

    let chunks = store.chunks_after(&root, 0, 100).await.unwrap();
    assert_eq!(
        kinds(&chunks),
        [
            "run_start",
            "subagent_start",
            "text_delta",
            "text_delta",
            "text_delta"
        ]
    );
    let copies = &chunks[2..];
    let sequences: Vec<u64> = copies
        .iter()
        .map(|c| c.remote_source.as_ref().unwrap().child_sequence)
        .collect();
    assert_eq!(sequences, [2, 3, 4]);
    for copy in copies {
        assert_eq!(
            copy.header.stream_id, "st1",
            "a chunk on a stream names that stream"
        );
        assert_eq!(copy.header.session_id, "child-1");
        assert_eq!(copy.header.agent_id, "child-1");
        assert_eq!(
            copy.remote_source.as_ref().unwrap().stream_id,
            "child-stream"
        );
    }

    // The child's rollup, recorded twice (an end and a recovery), counts once.
    let mut rollup = UsageRollup::default();
    rollup.tokens.input_tokens = 1000;
    let own = store.usage_rollup(&root).await.unwrap().unwrap();
    for _ in 0..2 {
        store
            .forward_remote_chunks(
                FollowMode::InStep,
                at(&root, "r1", 1),
                child,
                &[],
                Some(&rollup),
            )
            .await
            .unwrap();
    }
    let total = store.usage_rollup(&root).await.unwrap().unwrap();
    assert_eq!(total.tokens.input_tokens, own.tokens.input_tokens + 1000);

    // A run that does not hold the session writes nothing.
    let stale = store
        .forward_remote_chunks(
            FollowMode::InStep,
            at(&root, "r-other", 1),
            child,
            &[forwarded(9, "x")],
            None,
        )
        .await;
    assert!(stale.is_err());
    assert_eq!(store.remote_cursor(&root, "child-1").await.unwrap(), 4);
    assert_eq!(store.chunks_after(&root, 0, 100).await.unwrap().len(), 5);
}
