//! The operator's view (issue 24): a session's metadata, the search index and `/sessions`, the
//! inbox of calls waiting on a person.

mod meta;
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
