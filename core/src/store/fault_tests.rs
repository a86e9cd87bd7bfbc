//! Store tests of the fault repairs (issue 9) against a real Redis: at-most-once start markers,
//! stops and retention, snapshots, zombie sessions.

use super::keys::staged_field;
use super::tests::{at, new_session, store, tool_result, turn};
use super::*;
use crate::message::{ToolCall, ToolOutcome};
use redis::AsyncCommands;
use serde_json::json;

fn call(id: &str, name: &str) -> ToolCall {
    ToolCall {
        id: id.to_owned(),
        name: name.to_owned(),
        arguments: json!({}),
    }
}

async fn staged_fields(store: &Store, address: &SessionAddress) -> Vec<String> {
    store
        .conn()
        .hkeys(store.key(address, Key::Staged))
        .await
        .unwrap()
}

#[tokio::test]
async fn a_start_marker_is_written_once_and_goes_with_the_commit() {
    let (store, address) = (store().await, SessionAddress::root("s1"));
    new_session(&store, &address).await;
    let call = call("c1", "pay");
    let step = at(&address, "r1", 1);
    store
        .stage_turn(step, &turn("r1", 1, "", vec![call.clone()]))
        .await
        .unwrap();

    assert_eq!(
        store.mark_tool_started(step, "c1").await.unwrap(),
        Written::New
    );
    // A second attempt finds the marker: the tool may have run.
    assert_eq!(
        store.mark_tool_started(step, "c1").await.unwrap(),
        Written::AlreadyDone
    );
    let marker = staged_field::started("r1", 1, "c1");
    assert!(staged_fields(&store, &address).await.contains(&marker));
    // A marker of another run's step is refused by the run guard.
    assert!(matches!(
        store.mark_tool_started(at(&address, "r0", 1), "c1").await,
        Err(Error::RunRefused { .. })
    ));

    store
        .stage_tool_result(step, &tool_result(&call, ToolOutcome::Result(json!(1))))
        .await
        .unwrap();
    store.commit_step(step, None).await.unwrap();
    assert!(staged_fields(&store, &address).await.is_empty());
    // A stale attempt after the commit writes nothing.
    assert_eq!(
        store.mark_tool_started(step, "c1").await.unwrap(),
        Written::AlreadyDone
    );
    assert!(staged_fields(&store, &address).await.is_empty());
}
