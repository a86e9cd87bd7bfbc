//! Interrupt and abort: a durable stop on the run, then its workflow cancelled; late submits
//! answer run_stopped; the stop closes the dangling calls as not executed and clears them.

use baton_client::Client as _;
use baton_core::{
    ChunkKind, ErrorCode, Message,
    chunk::EndStatus,
    message::ToolOutcome,
    store::{SessionAddress, Status},
};
use baton_tests::{Harness, WorkerProcess, agents, api_error, tool_outcomes};
use futures::StreamExt;
use serde_json::json;
use std::time::Duration;

const LIMIT: Duration = baton_tests::WAIT_LIMIT;
const TEST_WORKER: &str = env!("CARGO_BIN_EXE_baton-test-worker");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_suspension_refuses_late_answers_and_the_next_message_closes_its_calls() {
    let harness = Harness::start(agents::registry()).await;
    let started = harness.client.start("asker_twice", "go").await.unwrap();
    let session = started.session_id.clone();
    harness.chunks_until_suspended(&session).await;
    let yes = ToolOutcome::Result(json!({"answer": "yes"}));
    harness
        .client
        .submit(&session, "call_1_1", &yes)
        .await
        .unwrap();

    let stopped = harness.client.stop(&session, false).await.unwrap();
    assert_eq!(
        (stopped.status, &stopped.run_id),
        (Status::Interrupted, &started.run_id)
    );
    let chunks = harness.chunks_until_end(&session, LIMIT).await;
    assert!(matches!(
        chunks.last().unwrap().kind,
        ChunkKind::End {
            status: EndStatus::Interrupted,
            ..
        }
    ));
    let state = harness.client.status(&session).await.unwrap();
    assert_eq!(state.status, Status::Interrupted);
    assert_eq!(
        state.stop.as_ref().map(|s| s.run_id.as_str()),
        Some(started.run_id.as_str())
    );

    // The recorded stop wins over any late answer, stored before or not; nothing is written.
    for call in ["call_1_2", "call_1_1"] {
        let late = api_error(
            harness
                .client
                .submit(&session, call, &yes)
                .await
                .unwrap_err(),
        );
        assert_eq!(late.code, ErrorCode::UnknownToolCall);
        assert_eq!(late.details["reason"], "run_stopped", "{call}");
    }
    // The stop cleared what it ended: no answer, pending call or ownership is left, and the
    // calls are already closed in the log, before the end chunk.
    let address = SessionAddress::root(&session);
    assert!(harness.store.answers(&address).await.unwrap().is_empty());
    assert!(
        harness
            .store
            .pending_calls(&address)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        harness
            .store
            .call_owner(&session, "call_1_1")
            .await
            .unwrap(),
        None
    );
    let closed: Vec<String> = chunks
        .iter()
        .filter_map(|chunk| match &chunk.kind {
            ChunkKind::ToolEnd {
                tool_call_id,
                error: Some(error),
                ..
            } => Some(format!("{tool_call_id} {}", error.code)),
            _ => None,
        })
        .collect();
    assert_eq!(closed, ["call_1_1 not_executed", "call_1_2 not_executed"]);
    let again = api_error(harness.client.stop(&session, false).await.unwrap_err());
    assert_eq!(again.code, ErrorCode::RunNotActive);
    assert_eq!(
        api_error(harness.client.resume(&session).await.unwrap_err()).code,
        ErrorCode::StateNotResumable
    );

    // The next message starts a turn; every call of the stopped run has one not-executed result.
    let before = harness.client.status(&session).await.unwrap().last_sequence;
    harness
        .client
        .send_message(&session, "start over", false)
        .await
        .unwrap();
    harness.chunks_after_until_end(&session, before).await;
    let messages = harness.messages(&session).await;
    let tail: Vec<String> = messages[2..]
        .iter()
        .map(|m| match m {
            Message::Tool(result) => match &result.outcome {
                ToolOutcome::Error(error) => format!("{} {}", result.tool_call_id, error.code),
                ToolOutcome::Result(value) => format!("{} {value}", result.tool_call_id),
            },
            Message::User { content, .. } => format!("user {content}"),
            Message::Assistant { content, .. } => format!("assistant {content}"),
            Message::System { .. } => "system".into(),
        })
        .collect();
    assert_eq!(
        tail,
        [
            "call_1_1 not_executed",
            "call_1_2 not_executed",
            "user start over",
            "assistant Both answered; the last said error not_executed",
        ]
    );
    let state = harness.client.status(&session).await.unwrap();
    assert_eq!((state.status, state.stop), (Status::Completed, None));
    assert!(
        harness
            .store
            .pending_calls(&SessionAddress::root(&session))
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_aborted_running_run_fails_cancelled_and_writes_nothing_after_its_end() {
    let harness = Harness::server_only(agents::registry()).await;
    let mut worker = WorkerProcess::spawn(TEST_WORKER, &harness, true);
    let started = harness.client.start("holder", "go").await.unwrap();
    assert!(tokio::time::timeout(LIMIT, worker.holding()).await.unwrap());

    let stopped = harness
        .client
        .stop(&started.session_id, true)
        .await
        .unwrap();
    assert_eq!(stopped.status, Status::Failed);
    let chunks = harness.chunks_until_end(&started.session_id, LIMIT).await;
    let ChunkKind::End { status, error, .. } = &chunks.last().unwrap().kind else {
        panic!("no end chunk: {chunks:?}");
    };
    assert_eq!(*status, EndStatus::Failed);
    assert_eq!(
        error.as_ref().map(|e| e.code),
        Some(ErrorCode::FrameworkCancelled)
    );

    // The workflow is cancelled and ends; the stopped run's writes are refused.
    let ended = tokio::time::timeout(LIMIT, harness.run_result(&started.workflow_id)).await;
    assert!(ended.expect("the workflow should end").is_err());
    let end_sequence = chunks.last().unwrap().sequence;
    let address = SessionAddress::root(&started.session_id);
    assert!(
        harness
            .store
            .chunks_after(&address, end_sequence, 10)
            .await
            .unwrap()
            .is_empty()
    );
    let state = harness.client.status(&started.session_id).await.unwrap();
    assert_eq!(state.status, Status::Failed);
    assert_eq!(
        state.error.map(|e| e.code),
        Some(ErrorCode::FrameworkCancelled)
    );
    assert_eq!(
        harness.store.messages(&address).await.unwrap(),
        vec![Message::user("go")]
    );
}

/// A stop while a step runs: the step's chunks already streamed (its start, the tool call's
/// start) are announced as discarded before the end, as the log never holds that step.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_mid_step_discards_the_streamed_step_before_the_end() {
    let harness = Harness::server_only(agents::registry()).await;
    let _worker = WorkerProcess::spawn(TEST_WORKER, &harness, true);
    let started = harness.client.start("holder", "go").await.unwrap();
    let mut follower = harness.client.follow(&started.session_id, 0);
    // The hold tool's start is on the stream once the step is staged.
    while let Some(Ok(chunk)) = follower.next().await {
        if matches!(chunk.kind, ChunkKind::ToolStart { .. }) {
            break;
        }
    }
    drop(follower);

    harness.interrupt(&started.session_id).await;
    let chunks = harness.chunks_until_end(&started.session_id, LIMIT).await;
    let position = |wanted: fn(&ChunkKind) -> bool| chunks.iter().position(|c| wanted(&c.kind));
    let tool_start = position(|k| matches!(k, ChunkKind::ToolStart { step: 1, .. }));
    let discarded = position(|k| matches!(k, ChunkKind::StepDiscarded { step: 1 }));
    let end = position(|k| matches!(k, ChunkKind::End { .. }));
    assert!(tool_start.is_some(), "{chunks:?}");
    assert!(discarded > tool_start, "{chunks:?}");
    assert_eq!(end, Some(chunks.len() - 1), "{chunks:?}");
    assert!(discarded < end, "{chunks:?}");
    assert_eq!(
        harness
            .store
            .messages(&SessionAddress::root(&started.session_id))
            .await
            .unwrap(),
        vec![Message::user("go")]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_submit_racing_an_interrupt_never_reaches_the_log_as_an_answer() {
    let harness = Harness::start(agents::registry()).await;
    let started = harness.client.start("asker_only", "go").await.unwrap();
    let session = started.session_id.clone();
    harness.chunks_until_suspended(&session).await;
    let answer = ToolOutcome::Result(json!({"answer": "raced"}));
    let (submitted, stopped) = tokio::join!(
        harness.client.submit(&session, "call_1_1", &answer),
        harness.client.stop(&session, false)
    );
    stopped.unwrap();
    match submitted {
        Ok(accepted) => assert_eq!(accepted.status, baton_core::submit::SubmitStatus::Accepted),
        Err(refused) => assert_eq!(api_error(refused).details["reason"], "run_stopped"),
    }
    // Whichever came first, the stop wins: the call is closed as not executed, once.
    let before = harness.client.status(&session).await.unwrap().last_sequence;
    harness
        .client
        .send_message(&session, "again", false)
        .await
        .unwrap();
    harness.chunks_after_until_end(&session, before).await;
    let messages = harness.messages(&session).await;
    let results = tool_outcomes(&messages);
    assert_eq!(results.len(), 1, "{messages:?}");
    assert!(matches!(results[0], ToolOutcome::Error(e) if e.code == "not_executed"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_while_draining_an_approval_is_replaced_and_the_result_lands_once() {
    let harness = Harness::server_only(agents::registry()).await;
    let first = WorkerProcess::spawn(TEST_WORKER, &harness, true);
    let started = harness.client.start("holder_gated", "go").await.unwrap();
    let session = started.session_id.clone();
    harness.chunks_until_suspended(&session).await;
    let before = harness
        .approve_and_resume(&session, &started.run_id, "call_1_1")
        .await;

    // The approved tool holds inside apply_results_and_reload: kill that worker, start another.
    let _second = first.replace_when_holding(TEST_WORKER, &harness).await;
    let chunks = harness.chunks_after_until_end(&session, before).await;
    let tool_ends = chunks
        .iter()
        .filter(|c| matches!(c.kind, ChunkKind::ToolEnd { .. }))
        .count();
    assert_eq!(tool_ends, 1, "{chunks:?}");
    let messages = harness.messages(&session).await;
    let results = tool_outcomes(&messages);
    assert_eq!(results, [&ToolOutcome::Result(json!("done"))]);
    assert_eq!(
        messages.last().unwrap(),
        &Message::assistant("released: done", vec![])
    );
}
