//! The model step as a local activity: it runs inside the workflow task, so nothing tells
//! Temporal it is running. A worker lost in the middle of a model call is noticed by the workflow
//! task's time-out and its step runs again on another worker, once, the lost attempt's text
//! discarded on the stream; an interrupt reaches a held model call through Redis, not through a
//! cancellation that would wait for the workflow task.

use crate::runs::{TEST_WORKER, describe};
use baton_client::Client as _;
use baton_core::{ChunkKind, Message, chunk::EndStatus, store::Status};
use baton_tests::{
    Harness, WAIT_LIMIT, WorkerProcess,
    agents::{self, HESITANT_DROPPED_LINE, HESITANT_FIRST_WORDS},
};
use futures::StreamExt;
use std::time::{Duration, Instant};

/// Starts a `hesitant` session on a holding worker and waits until its model call holds with
/// its first words streamed. Returns the worker, the session and its workflow.
async fn hesitant_holding(harness: &Harness) -> (WorkerProcess, String, String) {
    let mut worker = WorkerProcess::spawn(TEST_WORKER, harness, true);
    let started = harness.client.start("hesitant", "go").await.unwrap();
    assert!(
        tokio::time::timeout(WAIT_LIMIT, worker.holding())
            .await
            .unwrap()
    );
    first_words_streamed(harness, &started.session_id).await;
    (worker, started.session_id, started.workflow_id)
}

/// Waits until the session's first model call has streamed its first words.
async fn first_words_streamed(harness: &Harness, session: &str) {
    let mut follower = std::pin::pin!(harness.client.follow(session, 0));
    tokio::time::timeout(WAIT_LIMIT, async {
        while let Some(chunk) = follower.next().await {
            if matches!(chunk.unwrap().kind, ChunkKind::TextDelta { .. }) {
                return;
            }
        }
        panic!("the stream ended before any text")
    })
    .await
    .expect("the model streams its first words");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_lost_mid_model_call_is_replaced_and_the_step_streams_again_once() {
    let harness = Harness::server_only(agents::registry()).await;
    let (first, session, _) = hesitant_holding(&harness).await;
    drop(first);

    // The lost workflow task times out and another worker runs the workflow, and so the step,
    // again: its first words were streamed by the lost attempt, so they are discarded first.
    let _second = WorkerProcess::spawn(TEST_WORKER, &harness, false);
    let chunks = harness.chunks_until_end(&session, WAIT_LIMIT).await;
    let answer = format!("{HESITANT_FIRST_WORDS}the answer is 42");
    let described: Vec<String> = chunks
        .iter()
        .filter(|c| !matches!(c.kind, ChunkKind::TextDelta { .. }))
        .map(describe)
        .collect();
    assert_eq!(
        described,
        [
            "run_start hesitant".to_owned(),
            "step_start 1".to_owned(),
            "step_discarded 1".to_owned(),
            "step_start 1".to_owned(),
            "step_end 1".to_owned(),
            format!("end Completed {answer} -"),
        ]
    );
    // The text after the discard is the whole answer, once.
    let discarded = chunks
        .iter()
        .position(|c| matches!(c.kind, ChunkKind::StepDiscarded { .. }))
        .unwrap();
    let text = |chunks: &[baton_core::StreamChunk]| -> String {
        chunks
            .iter()
            .filter_map(|c| match &c.kind {
                ChunkKind::TextDelta { delta, .. } => Some(delta.as_str()),
                _ => None,
            })
            .collect()
    };
    assert_eq!(text(&chunks[..discarded]), HESITANT_FIRST_WORDS);
    assert_eq!(text(&chunks[discarded..]), answer);
    assert_eq!(
        harness.messages(&session).await,
        vec![Message::user("go"), Message::assistant(answer, vec![])]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_drops_a_held_model_call_without_waiting_for_the_workflow_task() {
    let harness = Harness::server_only(agents::registry()).await;
    let (mut worker, session, workflow_id) = hesitant_holding(&harness).await;

    let stopped_at = Instant::now();
    let stopped = harness.client.stop(&session, false).await.unwrap();
    assert_eq!(stopped.status, Status::Interrupted);
    assert!(
        tokio::time::timeout(WAIT_LIMIT, worker.printed(HESITANT_DROPPED_LINE))
            .await
            .unwrap(),
        "the held model call is dropped"
    );
    // The step checks its run every heartbeat period (300 ms here). Temporal would pass the
    // workflow's cancellation on only after the workflow task's own heartbeat, 8 of its 10 s.
    let waited = stopped_at.elapsed();
    assert!(waited < Duration::from_secs(6), "{waited:?}");

    let chunks = harness.chunks_until_end(&session, WAIT_LIMIT).await;
    let ChunkKind::End { status, .. } = &chunks.last().unwrap().kind else {
        panic!("no end chunk: {chunks:?}");
    };
    assert_eq!(*status, EndStatus::Interrupted);
    assert!(
        chunks
            .iter()
            .any(|c| matches!(c.kind, ChunkKind::StepDiscarded { step: 1 })),
        "{chunks:?}"
    );
    // The workflow ends too, and nothing of the step reaches the log.
    let ended = tokio::time::timeout(WAIT_LIMIT, harness.run_result(&workflow_id)).await;
    assert!(ended.is_ok(), "the workflow ends");
    assert_eq!(harness.messages(&session).await, vec![Message::user("go")]);
    let state = harness.client.status(&session).await.unwrap();
    assert_eq!(state.status, Status::Interrupted);
}
