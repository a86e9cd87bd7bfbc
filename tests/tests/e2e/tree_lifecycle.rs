//! The lifecycle of each child on its root's stream, as a demultiplexing reader relies on it:
//! the parent's `subagent_start` comes before anything of the child, and exactly one
//! `subagent_end` closes it, after everything of it.

use baton_client::Client as _;
use baton_core::{ChunkKind, StreamChunk};
use baton_tests::{Harness, WAIT_LIMIT, agents};
use std::collections::HashMap;

/// Asserts that every child on the root's stream `chunks` is announced by one `subagent_start`
/// before its first chunk and closed by one `subagent_end` after its last; returns how many
/// children there were.
pub(crate) fn assert_children_announced_and_closed(chunks: &[StreamChunk]) -> usize {
    let mut starts: HashMap<&str, usize> = HashMap::new();
    let mut ends: HashMap<&str, Vec<usize>> = HashMap::new();
    let mut first_and_last: HashMap<&str, (usize, usize)> = HashMap::new();
    for (position, chunk) in chunks.iter().enumerate() {
        match &chunk.kind {
            ChunkKind::SubagentStart { sub_session_id, .. } => {
                let earlier = starts.insert(sub_session_id, position);
                assert!(earlier.is_none(), "{sub_session_id} announced twice");
            }
            ChunkKind::SubagentEnd { sub_session_id, .. } => {
                ends.entry(sub_session_id).or_default().push(position);
            }
            _ => {}
        }
        let seen = first_and_last
            .entry(chunk.header.agent_id.as_str())
            .or_insert((position, position));
        seen.1 = position;
    }
    for (child, start) in &starts {
        if let Some((first, _)) = first_and_last.get(child) {
            assert!(start < first, "{child}: a chunk before its subagent_start");
        }
        let closed = ends.get(child).map(Vec::as_slice).unwrap_or_default();
        assert_eq!(closed.len(), 1, "{child}: {} subagent_end", closed.len());
        if let Some((_, last)) = first_and_last.get(child) {
            assert!(closed[0] > *last, "{child}: a chunk after its subagent_end");
        }
    }
    starts.len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_child_is_announced_before_its_chunks_and_closed_once_after_them() {
    let harness = Harness::start(agents::registry()).await;
    for agent in ["delegator", "top"] {
        let started = harness.client.start(agent, "go").await.unwrap();
        let chunks = if agent == "top" {
            let suspended = harness.chunks_until_suspended(&started.session_id).await;
            harness
                .client
                .submit(
                    &started.session_id,
                    "ca_1_1",
                    &baton_core::message::ToolOutcome::Result(serde_json::json!({"answer": "x"})),
                )
                .await
                .unwrap();
            harness.client.resume(&started.session_id).await.unwrap();
            let after = suspended.last().unwrap().sequence;
            let rest = harness
                .chunks_after_until_end(&started.session_id, after)
                .await;
            suspended.into_iter().chain(rest).collect::<Vec<_>>()
        } else {
            harness
                .chunks_until_end(&started.session_id, WAIT_LIMIT)
                .await
        };
        let children = assert_children_announced_and_closed(&chunks);
        assert_eq!(children, 2, "{agent}");
    }
}
