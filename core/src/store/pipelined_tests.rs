//! A step's last result staged and the step committed in one round trip, against a real Redis:
//! the pair writes what the two scripts write one after the other, once; a staging the run
//! guard refuses commits nothing; a state patch is folded in; scripts Redis has forgotten are
//! loaded and the pair sent again. A call's `tool_data` chunks go with its result, once. A
//! suspension goes with the search index's mark in one round trip.

use super::footprint_tests::{call, pending};
use super::script_cache_tests::flushing;
use super::search_tests::settled;
use super::state_tests::{new_session_with_state, patch};
use super::tests::{at, kinds, new_session, store, tool_result, turn};
use super::*;
use crate::{
    ChunkKind,
    message::{Message, ToolCall, ToolOutcome},
};
use serde_json::json;
use tokio::sync::RwLockWriteGuard;

/// Stages the turn of step 1 of run `r1` of `address`, with one call, and returns the call.
async fn one_call_staged(store: &Store, address: &SessionAddress) -> ToolCall {
    let call = ToolCall {
        id: "c1".into(),
        name: "add".into(),
        arguments: json!({"a": 1}),
        provider_id: None,
    };
    store
        .stage_turn(
            at(address, "r1", 1),
            &mut turn("r1", 1, "", vec![call.clone()]),
        )
        .await
        .unwrap();
    call
}

/// As after a Redis restart: every script must be loaded again (other tests running now load
/// theirs again the same way, and none that counts round trips runs while the caller holds
/// [`flushing`]).
async fn forget_scripts(store: &Store, _flushing: &RwLockWriteGuard<'static, ()>) {
    let _: () = redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query_async(&mut store.conn())
        .await
        .unwrap();
}

async fn step_count(store: &Store, address: &SessionAddress) -> u32 {
    store.session(address).await.unwrap().unwrap().step_count
}

#[tokio::test]
async fn the_last_result_and_the_commit_are_written_once_in_order() {
    let store = store().await;
    let address = SessionAddress::root("s1");
    new_session(&store, &address).await;
    let step = at(&address, "r1", 1);
    let c1 = one_call_staged(&store, &address).await;
    let result = tool_result(&c1, ToolOutcome::Result(json!(2)));

    // What the tool emitted for the chat goes with its result, and so does a retry's: once.
    let data = |n: u32| ChunkKind::ToolData {
        step: 1,
        tool_call_id: "c1".into(),
        name: "progress".into(),
        data: json!(n),
        transient: false,
    };
    let written = store
        .stage_tool_result_and_commit(step, &result, None, &[data(1)])
        .await
        .unwrap();
    assert_eq!(written, Written::New);
    // Sent again (a retried attempt): both halves find their work done.
    let other = tool_result(&c1, ToolOutcome::Result(json!(99)));
    let again = store
        .stage_tool_result_and_commit(step, &other, None, &[data(2)])
        .await
        .unwrap();
    assert_eq!(again, Written::AlreadyDone);

    assert_eq!(step_count(&store, &address).await, 1);
    let messages = store.messages(&address).await.unwrap();
    assert_eq!(
        messages[2..],
        [Message::assistant("", vec![c1]), Message::Tool(result)]
    );
    let chunks = store.chunks_after(&address, 0, 100).await.unwrap();
    assert_eq!(
        kinds(&chunks),
        [
            "run_start",
            "tool_start",
            "tool_end",
            "tool_data",
            "step_end"
        ]
    );
    assert_eq!(chunks[3].kind, data(1));
}

#[tokio::test]
async fn a_refused_staging_commits_nothing() {
    let store = store().await;
    let address = SessionAddress::root("s1");
    new_session(&store, &address).await;
    let c1 = one_call_staged(&store, &address).await;
    let before = store.chunks_after(&address, 0, 100).await.unwrap().len();

    // A run that is not the session's (a stale attempt of a superseded run).
    let stale = store
        .stage_tool_result_and_commit(
            at(&address, "r-old", 1),
            &tool_result(&c1, ToolOutcome::Result(json!(2))),
            None,
            &[],
        )
        .await;
    assert!(
        matches!(&stale, Err(Error::RunRefused { reason, .. }) if reason == "run_superseded"),
        "{stale:?}"
    );
    assert_eq!(step_count(&store, &address).await, 0);
    assert_eq!(store.messages(&address).await.unwrap().len(), 2);
    assert_eq!(
        store.chunks_after(&address, 0, 100).await.unwrap().len(),
        before
    );
}

#[tokio::test]
async fn a_state_patch_staged_with_the_last_result_is_folded_into_the_commit() {
    let store = store().await;
    let address = SessionAddress::root("s1");
    new_session_with_state(&store, &address, &json!({"notes": []})).await;
    let step = at(&address, "r1", 1);
    let c1 = one_call_staged(&store, &address).await;
    let patch = patch(json!([{"op": "add", "path": "/notes/-", "value": "a"}]));

    let written = store
        .stage_tool_result_and_commit(
            step,
            &tool_result(&c1, ToolOutcome::Result(json!("ok"))),
            Some(&patch),
            &[],
        )
        .await
        .unwrap();
    assert_eq!(written, Written::New);
    assert_eq!(
        store.custom_state(&address).await.unwrap(),
        Some(json!({"notes": ["a"]}))
    );
    let chunks = store.chunks_after(&address, 0, 100).await.unwrap();
    assert_eq!(
        kinds(&chunks),
        [
            "run_start",
            "tool_start",
            "tool_end",
            "state_patch",
            "step_end"
        ]
    );
}

#[tokio::test]
async fn scripts_redis_forgot_are_loaded_and_the_pair_sent_again() {
    let cache = flushing().await;
    let store = store().await;
    let address = SessionAddress::root("s1");
    new_session(&store, &address).await;
    let step = at(&address, "r1", 1);
    let c1 = one_call_staged(&store, &address).await;
    forget_scripts(&store, &cache).await;

    let written = store
        .stage_tool_result_and_commit(
            step,
            &tool_result(&c1, ToolOutcome::Result(json!(2))),
            None,
            &[],
        )
        .await
        .unwrap();
    assert_eq!(written, Written::New);
    assert_eq!(step_count(&store, &address).await, 1);
    assert_eq!(store.messages(&address).await.unwrap().len(), 4);
}

#[tokio::test]
async fn a_suspension_goes_with_its_index_mark_in_one_round_trip_even_after_redis_forgot_both() {
    let cache = flushing().await;
    let base = store().await;
    let address = SessionAddress::root("s1");
    new_session(&base, &address).await;
    let (store, round_trips) = base.recording_round_trips();
    let step = at(&address, "r1", 1);
    store
        .stage_turn(step, &mut turn("r1", 1, "asking", vec![call("c1", "ask")]))
        .await
        .unwrap();
    forget_scripts(&store, &cache).await;

    let written = store
        .commit_suspended_step(step, &[pending("c1", 1)])
        .await
        .unwrap();
    assert_eq!(written, Written::New);
    // Refused for want of a script, both are loaded and the pair sent again.
    let sent = round_trips.sent();
    let marked: Vec<&RoundTrip> = sent
        .iter()
        .filter(|round_trip| round_trip.runs_script("commit_suspended_step"))
        .collect();
    assert_eq!(marked.len(), 2, "{sent:#?}");
    for round_trip in marked {
        assert_eq!(
            round_trip.commands,
            ["index_mark", "commit_suspended_step"],
            "{sent:#?}"
        );
    }
    let state = store.session(&address).await.unwrap().unwrap();
    assert_eq!(state.status, Status::SuspendedClientTool);
    // The entry written after the change clears its mark (and the one the first pair left).
    settled(&store).await;
}
