//! The operator's view (issue 24): a session's metadata, the search index and `/sessions`, the
//! inbox of calls waiting on a person.

mod audit;
mod cli;
mod console;
mod console_tree;
mod fork;
mod meta;
mod pending;
mod pending_stream;
mod search;

use baton_core::api::StartRequest;
use serde_json::json;

/// A start of `agent` for `user` with `tags` and a small `metadata` object (`{"plan": plan}`).
pub(super) fn start_for(agent: &str, user: &str, tags: &[&str], plan: &str) -> StartRequest {
    StartRequest {
        user_id: Some(user.to_owned()),
        tags: tags.iter().map(|tag| (*tag).to_owned()).collect(),
        metadata: json!({"plan": plan}).as_object().cloned(),
        ..StartRequest::new(agent, "go")
    }
}

/// Follows a root's stream until the root itself suspends (a tree's stream carries its children's
/// suspensions first), then waits for the search index to follow.
pub(super) async fn root_suspended(harness: &baton_tests::Harness, session_id: &str) {
    use baton_client::Client as _;
    use futures::StreamExt as _;
    let mut follow = harness.client.follow(session_id, 0);
    let suspended = async {
        while let Some(chunk) = follow.next().await {
            let chunk = chunk.expect("stream chunk");
            let own = chunk.header.agent_id == session_id;
            if own && matches!(chunk.kind, baton_core::ChunkKind::Suspended { .. }) {
                return;
            }
        }
    };
    tokio::time::timeout(baton_tests::WAIT_LIMIT, suspended)
        .await
        .expect("the root suspends");
    harness.index_settled().await;
}
