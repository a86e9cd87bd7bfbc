//! Store scripts against a real Redis (`BATON_TEST_REDIS_URL`, default `redis://127.0.0.1:6379`),
//! each test under a key prefix of its own.

use super::claim_tests::claim_by_demo;
use super::*;
use crate::{
    chunk::{ChunkKind, EndStatus, RunError, StreamChunk},
    message::{Message, ToolCall, ToolOutcome, ToolResult},
    model::Usage,
};
use serde_json::json;

pub(super) async fn store() -> Store {
    let url = std::env::var("BATON_TEST_REDIS_URL")
        .unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
    let prefix = format!("baton-test-{}", uuid::Uuid::new_v4().simple());
    Store::connect(&url, prefix)
        .await
        .expect("the store tests need a Redis server; see README")
}

pub(super) fn turn(run_id: &str, step: u32, text: &str, calls: Vec<ToolCall>) -> StagedTurn {
    StagedTurn {
        message: Message::assistant(text, calls),
        usage: UsageRecord {
            run_id: run_id.to_owned(),
            step,
            model: "scripted".into(),
            usage: Usage {
                input_tokens: 10,
                output_tokens: step as u64,
                ..Usage::default()
            },
        },
    }
}

pub(super) async fn new_session(store: &Store, address: &SessionAddress) {
    let seq = store
        .create_session(NewSession {
            address,
            agent_type: "demo",
            run_id: "r1",
            stream_id: "st1",
            workflow_id: "wf1",
            messages: &[Message::system("be brief"), Message::user("hi")],
            max_chunks: 0,
        })
        .await
        .unwrap();
    assert_eq!(seq, 1);
}

/// Step `step` of run `run_id` on stream `st1`.
pub(super) fn at<'a>(address: &'a SessionAddress, run_id: &'a str, step: u32) -> StepRef<'a> {
    StepRef {
        address,
        stream_id: "st1",
        run_id,
        step,
    }
}

/// Run `run_id` on stream `st1`.
pub(super) fn run<'a>(address: &'a SessionAddress, run_id: &'a str) -> RunRef<'a> {
    at(address, run_id, 0).run()
}

pub(super) fn tool_result(call: &ToolCall, outcome: ToolOutcome) -> ToolResult {
    ToolResult::new(&call.id, &call.name, outcome)
}

pub(super) fn kinds(chunks: &[StreamChunk]) -> Vec<&'static str> {
    chunks.iter().map(|c| c.kind.name()).collect()
}

#[tokio::test]
async fn a_step_goes_from_staged_to_committed_once() {
    let store = store().await;
    let address = SessionAddress::root("s1");
    new_session(&store, &address).await;
    let again = store
        .create_session(NewSession {
            address: &address,
            agent_type: "demo",
            run_id: "r2",
            stream_id: "st2",
            workflow_id: "wf2",
            messages: &[],
            max_chunks: 0,
        })
        .await;
    assert!(matches!(again, Err(Error::SessionExists(_))));

    let step_start = [ChunkKind::StepStart { step: 1 }];
    assert_eq!(
        store
            .emit_model_chunks(at(&address, "r1", 1), 1, 0, &step_start)
            .await
            .unwrap(),
        1
    );
    // A retried model step re-sends chunk 0 and adds chunk 1: only chunk 1 is new.
    let retried = [
        ChunkKind::StepStart { step: 1 },
        ChunkKind::TextDelta {
            step: 1,
            delta: "hm".into(),
        },
    ];
    assert_eq!(
        store
            .emit_model_chunks(at(&address, "r1", 1), 1, 0, &retried)
            .await
            .unwrap(),
        1
    );

    let call = ToolCall {
        id: "c1".into(),
        name: "add".into(),
        arguments: json!({"a": 1}),
        provider_id: None,
    };
    let mut staged = turn("r1", 1, "hm", vec![call.clone()]);
    assert_eq!(
        store
            .stage_turn(at(&address, "r1", 1), &mut staged)
            .await
            .unwrap(),
        Written::New
    );
    assert_eq!(
        store
            .stage_turn(at(&address, "r1", 1), &mut staged)
            .await
            .unwrap(),
        Written::AlreadyDone
    );
    assert_eq!(
        store.staged_turn(at(&address, "r1", 1)).await.unwrap(),
        Some(staged.clone())
    );

    // Committing before every call has a result is refused and writes nothing.
    let early = store.commit_step(at(&address, "r1", 1), None).await;
    assert!(matches!(early, Err(Error::Corrupt { .. })), "{early:?}");

    let result = tool_result(&call, ToolOutcome::Result(json!(2)));
    let other = tool_result(&call, ToolOutcome::Result(json!(99)));
    assert_eq!(
        store
            .stage_tool_result(at(&address, "r1", 1), &result)
            .await
            .unwrap(),
        Written::New
    );
    assert_eq!(
        store
            .stage_tool_result(at(&address, "r1", 1), &other)
            .await
            .unwrap(),
        Written::AlreadyDone
    );

    let commit = || store.commit_step(at(&address, "r1", 1), None);
    assert_eq!(commit().await.unwrap(), Written::New);
    assert_eq!(commit().await.unwrap(), Written::AlreadyDone);

    let messages = store.messages(&address).await.unwrap();
    assert_eq!(
        messages,
        vec![
            Message::system("be brief"),
            Message::user("hi"),
            Message::assistant("hm", vec![call.clone()]),
            Message::Tool(result),
        ]
    );
    let chunks = store.chunks_after(&address, 0, 100).await.unwrap();
    assert_eq!(
        kinds(&chunks),
        [
            "run_start",
            "step_start",
            "text_delta",
            "tool_start",
            "tool_end",
            "step_end"
        ]
    );
    let sequences: Vec<u64> = chunks.iter().map(|c| c.sequence).collect();
    assert_eq!(sequences, [1, 2, 3, 4, 5, 6]);
    assert!(
        chunks
            .iter()
            .all(|c| c.header.stream_id == "st1" && c.header.run_id == "r1")
    );
    assert_eq!(
        kinds(&store.chunks_after(&address, 4, 100).await.unwrap()),
        ["tool_end", "step_end"]
    );

    let checkpoints = store.checkpoints(&address).await.unwrap();
    assert_eq!(
        checkpoints,
        vec![
            Checkpoint {
                id: 0,
                message_count: 2,
                step_count: 0,
                stream_sequence: 1,
                ..Default::default()
            },
            Checkpoint {
                id: 1,
                message_count: 4,
                step_count: 1,
                stream_sequence: 6,
                ..Default::default()
            },
        ]
    );
    let state = store.session(&address).await.unwrap().unwrap();
    assert_eq!(state.status, Status::Active);
    assert_eq!(state.step_count, 1);
    assert_eq!(state.last_sequence, 6);
    assert_eq!(
        store.usage_records(&address).await.unwrap(),
        vec![staged.usage.clone()]
    );
    // The staged data of a committed step is gone, and a stale attempt of that step still
    // running after the commit neither stages nor streams anything.
    assert_eq!(
        store.staged_turn(at(&address, "r1", 1)).await.unwrap(),
        None
    );
    assert_eq!(
        store
            .emit_model_chunks(at(&address, "r1", 1), 1, 0, &retried)
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        store
            .stage_turn(at(&address, "r1", 1), &mut staged)
            .await
            .unwrap(),
        Written::AlreadyDone
    );
    assert_eq!(
        store
            .stage_tool_result(at(&address, "r1", 1), &other)
            .await
            .unwrap(),
        Written::AlreadyDone
    );
    assert_eq!(
        store.staged_turn(at(&address, "r1", 1)).await.unwrap(),
        None
    );
    assert_eq!(
        store
            .session(&address)
            .await
            .unwrap()
            .unwrap()
            .last_sequence,
        6
    );
}

#[tokio::test]
async fn completion_and_failure_are_terminal_and_guarded() {
    let store = store().await;
    let address = SessionAddress::root("s2");
    new_session(&store, &address).await;

    // Another run may not write into this session.
    let intruder = store
        .stage_turn(
            at(&address, "r-other", 1),
            &mut turn("r-other", 1, "x", vec![]),
        )
        .await;
    assert!(
        matches!(&intruder, Err(Error::RunRefused { reason, .. }) if reason == "run_superseded"),
        "{intruder:?}"
    );

    store
        .stage_turn(at(&address, "r1", 1), &mut turn("r1", 1, "done", vec![]))
        .await
        .unwrap();
    let completion = || {
        Some(Completion {
            output: "done".into(),
            usage: crate::usage::UsageRollup {
                tokens: Usage {
                    input_tokens: 10,
                    output_tokens: 1,
                    ..Usage::default()
                },
                ..Default::default()
            },
        })
    };
    assert_eq!(
        store
            .commit_step(at(&address, "r1", 1), completion())
            .await
            .unwrap(),
        Written::New
    );
    assert_eq!(
        store
            .commit_step(at(&address, "r1", 1), completion())
            .await
            .unwrap(),
        Written::AlreadyDone
    );
    let state = store.session(&address).await.unwrap().unwrap();
    assert_eq!(state.status, Status::Completed);
    assert_eq!(state.output.as_deref(), Some("done"));

    // A completed run cannot be failed afterwards, and nothing more reaches the stream.
    let error = RunError {
        code: crate::ErrorCode::ModelFailed,
        message: "late".into(),
    };
    assert_eq!(
        store
            .fail_run(run(&address, "r1"), &error, Default::default())
            .await
            .unwrap(),
        Written::AlreadyDone
    );
    let chunks = store.chunks_after(&address, 0, 100).await.unwrap();
    assert_eq!(kinds(&chunks), ["run_start", "step_end", "end"]);
    match &chunks[2].kind {
        ChunkKind::End {
            status,
            output,
            usage,
            ..
        } => {
            assert_eq!(*status, EndStatus::Completed);
            assert_eq!(output.as_deref(), Some("done"));
            assert_eq!(usage.tokens.output_tokens, 1);
        }
        other => panic!("expected end, got {other:?}"),
    }

    let failing = SessionAddress::root("s3");
    new_session(&store, &failing).await;
    assert_eq!(
        store
            .fail_run(run(&failing, "r1"), &error, Default::default())
            .await
            .unwrap(),
        Written::New
    );
    let state = store.session(&failing).await.unwrap().unwrap();
    assert_eq!(state.status, Status::Failed);
    assert_eq!(state.error, Some(error));
    let after_failure = store
        .emit_model_chunks(
            at(&failing, "r1", 1),
            1,
            0,
            &[ChunkKind::StepStart { step: 1 }],
        )
        .await;
    assert!(matches!(after_failure, Err(Error::RunRefused { .. })));
    assert_eq!(
        store
            .session(&SessionAddress::root("missing"))
            .await
            .unwrap(),
        None
    );
}

#[tokio::test]
async fn a_subscriber_wakes_on_new_chunks() {
    let store = store().await;
    let address = SessionAddress::root("s4");
    new_session(&store, &address).await;
    let mut subscriber = store.subscriber().await.unwrap();
    let first = subscriber
        .next_chunks(&store, &address, 0, 1000)
        .await
        .unwrap();
    assert_eq!(kinds(&first), ["run_start"]);
    let writer = store.clone();
    let waiting = tokio::spawn({
        let store = store.clone();
        let address = address.clone();
        async move { subscriber.next_chunks(&store, &address, 1, 10_000).await }
    });
    writer
        .emit_model_chunks(
            at(&address, "r1", 1),
            1,
            0,
            &[ChunkKind::StepStart { step: 1 }],
        )
        .await
        .unwrap();
    let woken = waiting.await.unwrap().unwrap();
    assert_eq!(kinds(&woken), ["step_start"]);
    assert_eq!(woken[0].sequence, 2);
}

#[tokio::test]
async fn a_suspended_step_commits_server_results_and_records_pending_calls() {
    let store = store().await;
    let address = SessionAddress::root("s5");
    new_session(&store, &address).await;
    let server_call = ToolCall {
        id: "c1".into(),
        name: "add".into(),
        arguments: json!({"a": 1}),
        provider_id: None,
    };
    let client_call = ToolCall {
        id: "c2".into(),
        name: "ask".into(),
        arguments: json!({"q": "?"}),
        provider_id: None,
    };
    let mut staged = turn("r1", 1, "", vec![server_call.clone(), client_call.clone()]);
    store
        .stage_turn(at(&address, "r1", 1), &mut staged)
        .await
        .unwrap();
    let result = tool_result(&server_call, ToolOutcome::Result(json!(2)));
    store
        .stage_tool_result(at(&address, "r1", 1), &result)
        .await
        .unwrap();

    let pending = PendingCall {
        tool_call_id: "c2".into(),
        tool_name: "ask".into(),
        input: json!({"q": "?"}),
        kind: PendingKind::Client,
        step: 1,
        deadline_at: 1_000,
        completed_retention_ms: 86_400_000,
        approval_id: None,
        awaited_since: 0,
        asked: None,
    };
    let suspend =
        || store.commit_suspended_step(at(&address, "r1", 1), std::slice::from_ref(&pending));
    assert_eq!(suspend().await.unwrap(), Written::New);
    assert_eq!(suspend().await.unwrap(), Written::AlreadyDone);

    let state = store.session(&address).await.unwrap().unwrap();
    assert_eq!(state.status, Status::SuspendedClientTool);
    assert!(!state.status.is_terminal());
    assert_eq!(state.step_count, 1);
    assert_eq!(
        state.suspension,
        Some(Suspension {
            run_id: "r1".into(),
            step: 1,
            tool_call_ids: vec!["c2".into()]
        })
    );
    assert_eq!(
        store.messages(&address).await.unwrap()[2..],
        [
            Message::assistant("", vec![server_call, client_call]),
            Message::Tool(result)
        ]
    );
    assert_eq!(
        store.pending_calls_with_run(&address).await.unwrap(),
        Some(("r1".to_owned(), vec![pending]))
    );
    assert_eq!(
        store.call_owner("s5", "c2").await.unwrap().as_deref(),
        Some("s5")
    );
    assert_eq!(store.call_owner("s5", "c1").await.unwrap(), None);
    assert_eq!(
        store.step_progress(at(&address, "r1", 1)).await.unwrap(),
        StepProgress::Suspended {
            tool_call_ids: vec!["c2".into()]
        }
    );

    let chunks = store.chunks_after(&address, 0, 100).await.unwrap();
    assert_eq!(
        kinds(&chunks),
        [
            "run_start",
            "tool_start",
            "tool_start",
            "tool_end",
            "step_end",
            "suspended"
        ]
    );
    assert_eq!(
        chunks[5].kind,
        ChunkKind::Suspended {
            step: 1,
            tool_call_ids: vec!["c2".into()]
        }
    );
    // The suspended run writes nothing more: its workflow has ended.
    let late = store
        .emit_model_chunks(
            at(&address, "r1", 2),
            1,
            0,
            &[ChunkKind::StepStart { step: 2 }],
        )
        .await;
    assert!(
        matches!(&late, Err(Error::RunRefused { reason, .. }) if reason == "run_not_active"),
        "{late:?}"
    );
}

#[tokio::test]
async fn a_stop_is_fenced_on_the_run_it_read() {
    let store = store().await;
    let address = SessionAddress::root("s6");
    new_session(&store, &address).await;
    // A stop reads run r1; before its script runs, r1 fails and a new turn claims r2.
    let read = store.session(&address).await.unwrap().unwrap();
    let error = RunError {
        code: crate::ErrorCode::ModelFailed,
        message: "gone".into(),
    };
    store
        .fail_run(run(&address, "r1"), &error, Default::default())
        .await
        .unwrap();
    let entry = ResumeEntry {
        message: Some(Message::user("again")),
        ..ResumeEntry::default()
    };
    let claim = claim_by_demo(&store, &address, NewRunId::Derived("r2".into()), &entry).await;
    let claimed = ClaimedRun {
        run_id: "r2".into(),
        workflow_id: crate::ids::resume_workflow_id("demo", "s6", "r2"),
        step_count: 0,
    };
    assert_eq!(claim, Claim::Claimed(claimed.clone()));
    let before = store.session(&address).await.unwrap().unwrap();

    // The stop made for r1 writes nothing on r2's session.
    let stale = store
        .stop_run_as_read(&address, StopKind::Interrupt, &read)
        .await
        .unwrap();
    assert_eq!(
        stale,
        replies::StopReply::Superseded {
            run_id: "r2".into()
        }
    );
    assert_eq!(store.session(&address).await.unwrap().unwrap(), before);
    assert!(
        store
            .chunks_after(&address, before.last_sequence, 10)
            .await
            .unwrap()
            .is_empty()
    );

    // A stop as callers make it reads again and stops the run that holds the session now.
    assert_eq!(
        store.stop_run(&address, StopKind::Interrupt).await.unwrap(),
        Stopped::Stopped {
            run_id: "r2".into(),
            workflow_id: Some(claimed.workflow_id),
            closed_calls: vec![],
        }
    );
    let state = store.session(&address).await.unwrap().unwrap();
    assert_eq!(state.status, Status::Interrupted);
    assert_eq!(state.stop.map(|stop| stop.run_id).as_deref(), Some("r2"));
    let end = store
        .chunks_after(&address, before.last_sequence, 10)
        .await
        .unwrap();
    assert_eq!(kinds(&end), ["end"]);
    assert_eq!(end[0].header.run_id, "r2");
    assert_eq!(
        store.stop_run(&address, StopKind::Abort).await.unwrap(),
        Stopped::NotRunning {
            status: "interrupted".into()
        }
    );
}

/// A run that commits a step between a stop's read and its script is fenced by the refused
/// attempt: its next write is refused as a stopped run's, so the stop's next attempt, reading
/// again, finds it where it read it and stops it (a run stepping faster than a stop reads is
/// caught all the same).
#[tokio::test]
async fn a_run_that_steps_past_a_stops_read_is_fenced_until_the_stop_lands() {
    let store = store().await;
    let address = SessionAddress::root("s7");
    new_session(&store, &address).await;
    let read = store.session(&address).await.unwrap().unwrap();
    store
        .stage_turn(at(&address, "r1", 1), &mut turn("r1", 1, "one", vec![]))
        .await
        .unwrap();
    store
        .commit_step(at(&address, "r1", 1), None)
        .await
        .unwrap();

    let stale = store
        .stop_run_as_read(&address, StopKind::Interrupt, &read)
        .await
        .unwrap();
    assert_eq!(
        stale,
        replies::StopReply::Superseded {
            run_id: "r1".into()
        }
    );
    // Fenced: the run's next step is refused as a stopped run's.
    store
        .stage_turn(at(&address, "r1", 2), &mut turn("r1", 2, "two", vec![]))
        .await
        .unwrap_err();
    let refused = store.commit_step(at(&address, "r1", 2), None).await;
    assert!(
        matches!(&refused, Err(Error::RunRefused { reason, .. }) if reason == "run_not_active"),
        "{refused:?}"
    );
    assert_eq!(
        store.session(&address).await.unwrap().unwrap().step_count,
        1
    );
    let stopped = store.stop_run(&address, StopKind::Interrupt).await.unwrap();
    assert!(matches!(stopped, Stopped::Stopped { .. }), "{stopped:?}");
    let state = store.session(&address).await.unwrap().unwrap();
    assert_eq!(state.status, Status::Interrupted);
    let fence: Option<String> = redis::AsyncCommands::hget(
        &mut store.conn(),
        store.key(&address, keys::Key::State),
        "stopping",
    )
    .await
    .unwrap();
    assert_eq!(fence, None, "the stop clears its fence");
}

#[tokio::test]
async fn the_log_after_the_messages_a_reader_holds_is_what_was_appended_since() {
    let store = store().await;
    let address = SessionAddress::root("s1");
    new_session(&store, &address).await;
    let held = store.messages(&address).await.unwrap();
    assert_eq!(held, [Message::system("be brief"), Message::user("hi")]);
    assert!(
        store
            .messages_after(&address, held.len())
            .await
            .unwrap()
            .is_empty()
    );

    let step = at(&address, "r1", 1);
    store
        .stage_turn(step, &mut turn("r1", 1, "hello", vec![]))
        .await
        .unwrap();
    store.commit_step(step, None).await.unwrap();
    let rest = store.messages_after(&address, held.len()).await.unwrap();
    assert_eq!(rest, [Message::assistant("hello", vec![])]);
    assert_eq!(
        [held, rest].concat(),
        store.messages(&address).await.unwrap()
    );
    assert!(store.messages_after(&address, 99).await.unwrap().is_empty());
}
