//! A turn whose every call is awaited is staged and its run suspended in one script and one
//! round trip, writing what staging and committing one after the other write; whenever the
//! staging would not simply write, nothing of the suspension is written and the caller goes the
//! usual way.

use super::far_deadline_tests::{FAR, indexed, sent_in_one_round_trip};
use super::footprint_tests::{call, pending};
use super::script_cache_tests::counting;
use super::scripts::STAGE_AND_SUSPEND;
use super::tests::{at, kinds, new_session, store, turn};
use super::*;
use crate::{chunk::ChunkKind, message::ToolCall};

fn two_calls() -> Vec<ToolCall> {
    vec![call("c1", "ask"), call("c2", "ask")]
}

/// What a suspended session shows: its status, its stream's chunks, its log's length, its
/// pending calls (sorted) and its step's progress.
async fn written(
    store: &Store,
    address: &SessionAddress,
) -> (Status, Vec<ChunkKind>, usize, Vec<String>, StepProgress) {
    let state = store.session(address).await.unwrap().unwrap();
    let chunks = store.chunks_after(address, 0, 100).await.unwrap();
    let messages = store.messages(address).await.unwrap();
    let mut pending: Vec<String> = store
        .pending_calls(address)
        .await
        .unwrap()
        .into_iter()
        .map(|call| call.tool_call_id)
        .collect();
    pending.sort();
    let progress = store.step_progress(at(address, "r1", 1)).await.unwrap();
    (
        state.status,
        chunks.into_iter().map(|chunk| chunk.kind).collect(),
        messages.len(),
        pending,
        progress,
    )
}

#[tokio::test]
async fn a_turn_of_awaited_calls_is_staged_and_suspended_in_one_round_trip_as_the_usual_way_writes()
{
    let base = store().await;
    let _cache = counting(&base, &[&STAGE_AND_SUSPEND]).await;
    let usual = SessionAddress::root("usual");
    new_session(&base, &usual).await;
    let step = at(&usual, "r1", 1);
    base.stage_turn(step, &mut turn("r1", 1, "asking", two_calls()))
        .await
        .unwrap();
    base.commit_suspended_step(step, &[pending("c1", 1), pending("c2", 1)])
        .await
        .unwrap();

    let address = SessionAddress::root("s1");
    new_session(&base, &address).await;
    let (store, round_trips) = base.recording_round_trips();
    let outcome = store
        .stage_turn_and_suspend(
            at(&address, "r1", 1),
            &turn("r1", 1, "asking", two_calls()),
            &[pending("c1", 1), pending("c2", 1)],
            Some(FAR - 1),
        )
        .await
        .unwrap();
    assert_eq!(outcome, StagedSuspension::Suspended);
    sent_in_one_round_trip(&round_trips, ["index_mark", "stage_and_suspend", "ZADD"]);

    let merged = written(&base, &address).await;
    assert_eq!(merged, written(&base, &usual).await);
    let (status, chunks, _, pending_ids, progress) = merged;
    assert_eq!(status, Status::SuspendedClientTool);
    assert_eq!(
        kinds_of(&chunks),
        [
            "run_start",
            "tool_start",
            "tool_start",
            "step_end",
            "suspended"
        ]
    );
    assert_eq!(pending_ids, ["c1", "c2"]);
    assert_eq!(
        progress,
        StepProgress::Suspended {
            tool_call_ids: vec!["c1".into(), "c2".into()]
        }
    );
    let member = IndexedDeadline {
        address: address.clone(),
        run_id: "r1".into(),
        wake_at: FAR - 1,
    };
    assert_eq!(indexed(&base, &address).await, [member]);
}

fn kinds_of(chunks: &[ChunkKind]) -> Vec<&'static str> {
    chunks.iter().map(ChunkKind::name).collect()
}

/// Stages and suspends `calls` at `step` (each call pending) and checks the store took the usual
/// way, writing nothing: no chunk and no pending call.
async fn goes_the_usual_way(store: &Store, step: StepRef<'_>, calls: Vec<ToolCall>) {
    let before = store.chunks_after(step.address, 0, 100).await.unwrap();
    let pending: Vec<PendingCall> = calls.iter().map(|c| pending(&c.id, step.step)).collect();
    let outcome = store
        .stage_turn_and_suspend(
            step,
            &turn(step.run_id, step.step, "asking", calls),
            &pending,
            None,
        )
        .await
        .unwrap();
    assert_eq!(outcome, StagedSuspension::UsualWay);
    assert_eq!(
        store.chunks_after(step.address, 0, 100).await.unwrap(),
        before
    );
    assert!(store.pending_calls(step.address).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_step_an_earlier_attempt_staged_goes_the_usual_way_with_nothing_written_again() {
    let store = store().await;
    let address = SessionAddress::root("s1");
    new_session(&store, &address).await;
    let step = at(&address, "r1", 1);
    let first = turn("r1", 1, "asked first", two_calls());
    store.stage_turn(step, &mut first.clone()).await.unwrap();

    goes_the_usual_way(&store, step, two_calls()).await;
    let StepProgress::Staged(staged) = store.step_progress(step).await.unwrap() else {
        panic!("the first attempt's turn stays staged");
    };
    assert_eq!(staged.message, first.message);
}

#[tokio::test]
async fn a_call_id_taken_in_the_tree_goes_the_usual_way_with_nothing_written() {
    let store = store().await;
    let address = SessionAddress::root("s1");
    new_session(&store, &address).await;
    let step = at(&address, "r1", 1);
    // The model gave both calls one id: the staging renames the second first.
    let twice = vec![call("c1", "ask"), call("c1", "ask")];
    goes_the_usual_way(&store, step, twice.clone()).await;
    assert_eq!(store.step_progress(step).await.unwrap(), StepProgress::New);
    assert_eq!(
        store.session(&address).await.unwrap().unwrap().status,
        Status::Active
    );

    // The usual way renames it and stages.
    let mut renamed = turn("r1", 1, "asking", twice);
    assert_eq!(
        store.stage_turn(step, &mut renamed).await.unwrap(),
        Written::New
    );
    let chunks = store.chunks_after(&address, 0, 100).await.unwrap();
    assert_eq!(kinds(&chunks), ["run_start", "tool_start", "tool_start"]);
}

#[tokio::test]
async fn a_stale_run_goes_the_usual_way_with_nothing_written() {
    let store = store().await;
    let address = SessionAddress::root("s1");
    new_session(&store, &address).await;
    goes_the_usual_way(&store, at(&address, "r0", 1), two_calls()).await;
    assert_eq!(
        store.step_progress(at(&address, "r1", 1)).await.unwrap(),
        StepProgress::New
    );
}
