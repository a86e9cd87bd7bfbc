//! A suspension's far deadline goes into the deadline index in the suspension's own round trip,
//! after its commit (Redis runs a pipeline in order): the sweep never meets the member before
//! the suspension it stands for. A commit folded with its step's state patches sends the index
//! write again after the folded run; a retried commit sends it again, changing nothing.

use super::footprint_tests::{call, pending, suspend_on};
use super::script_cache_tests::counting;
use super::scripts::COMMIT_SUSPENDED_STEP;
use super::state_tests::{new_session_with_state, patch};
use super::tests::{at, new_session, store, tool_result, turn};
use super::*;
use crate::message::ToolOutcome;
use serde_json::json;

pub(super) const FAR: u64 = 4_000_000_000_000;

/// The index's members for `address`'s run `r1` (due by [`FAR`]).
pub(super) async fn indexed(store: &Store, address: &SessionAddress) -> Vec<IndexedDeadline> {
    store
        .due_deadlines(FAR, 100)
        .await
        .unwrap()
        .into_iter()
        .filter(|deadline| &deadline.address == address)
        .collect()
}

/// Asserts that what `round_trips` recorded is one round trip of `commands`.
pub(super) fn sent_in_one_round_trip(round_trips: &RoundTrips, commands: [&str; 3]) {
    let sent = round_trips.sent();
    assert_eq!(sent.len(), 1, "{sent:#?}");
    assert_eq!(sent[0].commands, commands, "{sent:#?}");
}

#[tokio::test]
async fn a_far_deadline_is_indexed_in_the_suspensions_round_trip_after_its_commit() {
    let base = store().await;
    // The index's mark is a plain script: a suspension before the count loads it.
    let _cache = counting(&base, &[&COMMIT_SUSPENDED_STEP]).await;
    let warm = SessionAddress::root("warm");
    new_session(&base, &warm).await;
    suspend_on(&base, &warm, "r1", 1, "c1").await;
    assert!(indexed(&base, &warm).await.is_empty(), "none asked");

    let address = SessionAddress::root("s1");
    new_session(&base, &address).await;
    let step = at(&address, "r1", 1);
    base.stage_turn(step, &mut turn("r1", 1, "", vec![call("c1", "ask")]))
        .await
        .unwrap();
    let (store, round_trips) = base.recording_round_trips();
    let written = store
        .commit_suspended_step_indexing(step, &[pending("c1", 1)], Some(FAR - 1))
        .await
        .unwrap();
    assert_eq!(written, Written::New);
    sent_in_one_round_trip(
        &round_trips,
        ["index_mark", "commit_suspended_step", "ZADD"],
    );
    let member = IndexedDeadline {
        address: address.clone(),
        run_id: "r1".into(),
        wake_at: FAR - 1,
    };
    assert_eq!(
        indexed(&base, &address).await,
        std::slice::from_ref(&member)
    );

    // A retried attempt: the commit is done already, the member is written again as it was.
    let again = store
        .commit_suspended_step_indexing(step, &[pending("c1", 1)], Some(FAR - 1))
        .await
        .unwrap();
    assert_eq!(again, Written::AlreadyDone);
    assert_eq!(indexed(&base, &address).await, [member]);
}

#[tokio::test]
async fn a_commit_folded_with_state_patches_indexes_its_deadline_again_after_the_folded_run() {
    let base = store().await;
    let address = SessionAddress::root("s1");
    new_session_with_state(&base, &address, &json!({"notes": []})).await;
    let step = at(&address, "r1", 1);
    let calls = vec![call("c1", "note"), call("c2", "ask")];
    base.stage_turn(step, &mut turn("r1", 1, "", calls.clone()))
        .await
        .unwrap();
    let note = patch(json!([{"op": "add", "path": "/notes/-", "value": "a"}]));
    base.stage_tool_result_with_state(
        step,
        &tool_result(&calls[0], ToolOutcome::Result(json!("ok"))),
        Some(&note),
    )
    .await
    .unwrap();
    let (store, round_trips) = base.recording_round_trips();
    let written = store
        .commit_suspended_step_indexing(step, &[pending("c2", 1)], Some(FAR - 1))
        .await
        .unwrap();
    assert_eq!(written, Written::New);
    assert_eq!(
        base.custom_state(&address).await.unwrap(),
        Some(json!({"notes": ["a"]}))
    );
    // The last round trip is the index write, after the commit that applied.
    let sent = round_trips.sent();
    let commits: Vec<usize> = (0..sent.len())
        .filter(|at| sent[*at].runs_script("commit_suspended_step"))
        .collect();
    assert!(
        commits.len() >= 2,
        "the first run answers the patches: {sent:#?}"
    );
    assert_eq!(
        sent.last().map(|last| last.commands.clone()),
        Some(vec!["ZADD".to_owned()]),
        "{sent:#?}"
    );
    assert!(sent.len() - 1 > commits[commits.len() - 1], "{sent:#?}");
    assert_eq!(indexed(&base, &address).await.len(), 1);
}
