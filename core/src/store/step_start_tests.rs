//! The model step's first chunk written before the step's progress is known, and attempts
//! ordered by their start time (a local activity run again by another worker starts at attempt
//! 1 again), against a real Redis: `step_start` is written only if no attempt streamed the step
//! yet, and a later attempt still discards an earlier one's text before streaming its own; a
//! resumed step's `step_start` written by the drain's script when the drain applies.

use super::claim_tests::claim_by_demo;
use super::footprint_tests::suspend_on;
use super::tests::{at, kinds, new_session, store};
use super::*;
use crate::chunk::ChunkKind;
use crate::message::{ToolOutcome, ToolResult};
use serde_json::json;

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

/// Session `s1` suspended by run `r1` on call `c1`, then claimed for run `r2` with the message
/// "go on" (the call's answer is the drain's business; the claim need not wait for it).
pub(super) async fn claimed_with_message(store: &Store) -> SessionAddress {
    let address = SessionAddress::root("s1");
    new_session(store, &address).await;
    suspend_on(store, &address, "r1", 1, "c1").await;
    let entry = ResumeEntry {
        message: Some(crate::message::Message::user("go on")),
        abandon_pending: true,
        ..ResumeEntry::default()
    };
    let claim = claim_by_demo(store, &address, NewRunId::Derived("r2".into()), &entry).await;
    assert!(matches!(claim, Claim::Claimed(_)), "{claim:?}");
    address
}

/// Call `c1` of step 1 answered "yes", as a drain takes it.
pub(super) fn answered_c1() -> DrainedCall {
    DrainedCall {
        result: ToolResult::new("c1", "ask", ToolOutcome::Result(json!({"answer": "yes"}))),
        step: 1,
        marker_expiry: now_ms() + 60_000,
        wait_ms: 5,
        then: vec![],
        pending_id: None,
    }
}

#[tokio::test]
async fn a_drain_that_applies_writes_the_resumed_steps_step_start_after_the_results() {
    let store = store().await;
    let address = claimed_with_message(&store).await;
    let drained = [answered_c1()];
    let resumed = at(&address, "r2", 2);
    let step_start = StepStart {
        step: 2,
        attempt: LOST,
    };

    let apply = || store.apply_answers(resumed.run(), &drained, Some(step_start), None);
    let applied = apply().await.unwrap();
    assert_eq!(
        applied,
        Applied {
            written: Written::New,
            step_started: true,
            log_after: None,
        }
    );
    // Applied again (a retried attempt): nothing, and no second step_start.
    let again = apply().await.unwrap();
    assert_eq!(
        again,
        Applied {
            written: Written::AlreadyDone,
            step_started: false,
            log_after: None,
        }
    );
    // The step was streamed as chunk 0 of that attempt: the attempt's next chunk follows it,
    // and a first write of step_start by any execution writes nothing.
    assert_eq!(
        store.emit_first_step_start(resumed, RERUN).await.unwrap(),
        0
    );
    let text = [ChunkKind::TextDelta {
        step: 2,
        delta: "ok".into(),
    }];
    assert_eq!(
        store
            .emit_model_chunks(resumed, LOST, 1, &text)
            .await
            .unwrap(),
        1
    );
    let chunks = store.chunks_after(&address, 0, 100).await.unwrap();
    assert_eq!(
        kinds(&chunks),
        [
            "run_start",
            "tool_start",
            "step_end",
            "suspended",
            "run_start",
            "tool_end",
            "step_start",
            "text_delta"
        ]
    );
}
