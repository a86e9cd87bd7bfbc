//! The model step's first chunk written before the step's progress is known, and attempts
//! ordered by their start time (a local activity run again by another worker starts at attempt
//! 1 again), against a real Redis: `step_start` is written only if no attempt streamed the step
//! yet, and a later attempt still discards an earlier one's text before streaming its own.

use super::tests::{at, kinds, new_session, store};
use super::*;
use crate::chunk::ChunkKind;

/// Start times of two executions of one step, ten seconds apart (a workflow task's time-out).
const LOST: u64 = 1_764_547_200_000;
const RERUN: u64 = LOST + 10_000;

fn delta(text: &str) -> ChunkKind {
    ChunkKind::TextDelta {
        step: 1,
        delta: text.into(),
    }
}

#[tokio::test]
async fn step_start_goes_first_only_while_no_attempt_has_streamed() {
    let store = store().await;
    let address = SessionAddress::root("s1");
    new_session(&store, &address).await;
    let step = at(&address, "r1", 1);

    assert_eq!(store.emit_first_step_start(step, LOST).await.unwrap(), 1);
    // Another execution (a greater start time, or the same) finds the step streamed: nothing.
    assert_eq!(store.emit_first_step_start(step, RERUN).await.unwrap(), 0);
    assert_eq!(store.emit_first_step_start(step, LOST).await.unwrap(), 0);
    let chunks = store.chunks_after(&address, 0, 100).await.unwrap();
    assert_eq!(kinds(&chunks), ["run_start", "step_start"]);
}

#[tokio::test]
async fn a_rerun_discards_the_lost_executions_text_and_the_lost_one_writes_no_more() {
    let store = store().await;
    let address = SessionAddress::root("s1");
    new_session(&store, &address).await;
    let step = at(&address, "r1", 1);
    assert_eq!(store.emit_first_step_start(step, LOST).await.unwrap(), 1);
    let streamed = [delta("Hel"), delta("lo")];
    assert_eq!(
        store
            .emit_model_chunks(step, LOST, 1, &streamed)
            .await
            .unwrap(),
        2
    );

    // The rerun's first write finds the step streamed, so it writes step_start as itself.
    assert_eq!(store.emit_first_step_start(step, RERUN).await.unwrap(), 0);
    let start = [ChunkKind::StepStart { step: 1 }];
    assert_eq!(
        store
            .emit_model_chunks(step, RERUN, 0, &start)
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        store
            .emit_model_chunks(step, RERUN, 1, &[delta("Hi")])
            .await
            .unwrap(),
        1
    );
    // The lost execution, still running somewhere, is refused.
    assert_eq!(
        store
            .emit_model_chunks(step, LOST, 3, &[delta("!")])
            .await
            .unwrap(),
        0
    );

    let chunks = store.chunks_after(&address, 0, 100).await.unwrap();
    assert_eq!(
        kinds(&chunks),
        [
            "run_start",
            "step_start",
            "text_delta",
            "text_delta",
            "step_discarded",
            "step_start",
            "text_delta"
        ]
    );
    assert_eq!(chunks.last().unwrap().kind, delta("Hi"));
}

#[tokio::test]
async fn a_committed_step_takes_no_first_chunk() {
    let store = store().await;
    let address = SessionAddress::root("s1");
    new_session(&store, &address).await;
    let step = at(&address, "r1", 1);
    store
        .stage_turn(step, &mut super::tests::turn("r1", 1, "done", vec![]))
        .await
        .unwrap();
    store.commit_step(step, None).await.unwrap();

    assert_eq!(store.emit_first_step_start(step, RERUN).await.unwrap(), 0);
    let chunks = store.chunks_after(&address, 0, 100).await.unwrap();
    assert!(!kinds(&chunks).contains(&"step_start"), "{chunks:?}");
}
