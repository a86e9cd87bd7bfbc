//! Resuming from a checkpoint: the session is rewound to one of its step boundaries and a new
//! run goes on from there; a checkpoint whose step suspended awaits its calls again at once.

use baton_client::Client as _;
use baton_core::{
    ChunkKind, ErrorCode, Message,
    api::{ResumeMode, ResumeRequest},
    message::{ToolCall, ToolOutcome},
    store::{ApprovalDecision, Continuation, SessionAddress, Status},
};
use baton_tests::{Harness, WAIT_LIMIT, agents, api_error, tool_outcomes};
use serde_json::json;
use temporalio_client::WorkflowCountOptions;

fn kinds(chunks: &[baton_core::StreamChunk]) -> Vec<&'static str> {
    chunks.iter().map(|c| c.kind.name()).collect()
}

/// Agent-run workflows of this harness still running.
async fn running_runs(harness: &Harness) -> usize {
    harness
        .temporal
        .count_workflows(
            format!(
                "TaskQueue = '{}' AND WorkflowType = 'AgentRunWorkflow' AND \
                 ExecutionStatus = 'Running'",
                harness.task_queue
            ),
            WorkflowCountOptions::default(),
        )
        .await
        .unwrap()
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rewinding_an_ended_session_to_its_first_checkpoint_runs_the_turn_again() {
    let harness = Harness::start(agents::registry()).await;
    let started = harness.client.start("chatter", "hello").await.unwrap();
    let session = started.session_id;
    let first = harness.chunks_until_end(&session, WAIT_LIMIT).await;
    let before = first.last().unwrap().sequence;
    let first_log = harness.messages(&session).await;
    assert_eq!(
        first_log,
        vec![
            Message::user("hello"),
            Message::assistant("first: hello", vec![])
        ]
    );

    let rewound = harness
        .client
        .rewind(&session, 0, None, false)
        .await
        .unwrap();
    assert_eq!(rewound.status, Status::Active);
    let workflow_id = rewound.workflow_id.clone().unwrap();
    assert_eq!(
        workflow_id,
        format!("agent__chatter__{session}__resume-{}", rewound.run_id)
    );
    let chunks = harness.chunks_after_until_end(&session, before).await;
    assert_eq!(
        kinds(&chunks),
        [
            "rewind",
            "run_start",
            "step_start",
            "text_delta",
            "text_delta",
            "step_end",
            "end"
        ]
    );
    assert_eq!(
        chunks[0].kind,
        ChunkKind::Rewind {
            checkpoint_id: 0,
            stream_sequence: 1
        }
    );
    assert!(chunks.iter().all(|c| c.header.run_id == rewound.run_id));
    // The log was cut back to the user's message and the model answered it once more.
    assert_eq!(harness.messages(&session).await, first_log);
    let state = harness.client.status(&session).await.unwrap();
    assert_eq!(
        (state.status, state.step_count, state.output.as_deref()),
        (Status::Completed, 1, Some("first: hello"))
    );
    // Checkpoint ids only grow: the rewind adds a copy of checkpoint 0, then the step its own;
    // checkpoint 1, which the rewind went back past, is no longer listed.
    let checkpoints = harness
        .store
        .checkpoints(&SessionAddress::root(&session))
        .await
        .unwrap();
    let positions: Vec<(u32, u64, u32)> = checkpoints
        .iter()
        .map(|c| (c.id, c.message_count, c.step_count))
        .collect();
    assert_eq!(positions, [(0, 1, 0), (2, 1, 0), (3, 2, 1)]);
    assert_eq!(checkpoints[1].stream_sequence, chunks[1].sequence);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewind_with_a_message_replaces_the_later_turns() {
    let harness = Harness::start(agents::registry()).await;
    let started = harness.client.start("chatter", "hello").await.unwrap();
    let session = started.session_id;
    harness.chunks_until_end(&session, WAIT_LIMIT).await;
    let next = harness
        .client
        .send_message(&session, "again", false)
        .await
        .unwrap();
    harness
        .run_result(&next.workflow_id.unwrap())
        .await
        .unwrap();
    assert_eq!(harness.messages(&session).await.len(), 4);
    let before = harness.client.status(&session).await.unwrap().last_sequence;

    // Checkpoint 1 is the end of the first turn: the second turn is replaced.
    let rewound = harness
        .client
        .rewind(&session, 1, Some("other"), false)
        .await
        .unwrap();
    let chunks = harness.chunks_after_until_end(&session, before).await;
    assert_eq!(
        chunks[0].kind,
        ChunkKind::Rewind {
            checkpoint_id: 1,
            stream_sequence: 5
        }
    );
    harness
        .run_result(&rewound.workflow_id.unwrap())
        .await
        .unwrap();
    assert_eq!(
        harness.messages(&session).await,
        vec![
            Message::user("hello"),
            Message::assistant("first: hello", vec![]),
            Message::user("other"),
            Message::assistant("second: other", vec![]),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewind_to_a_suspended_step_awaits_its_calls_again_without_a_model_call() {
    let harness = Harness::start(agents::registry()).await;
    let session = harness.suspended_session("asker_only").await;
    let address = SessionAddress::root(&session);
    let name = |n: &str| ToolOutcome::Result(json!({"answer": n}));
    harness
        .client
        .submit(&session, "call_1_1", &name("Ann"))
        .await
        .unwrap();
    harness.resume_to_end(&session).await;
    // Temporal's visibility (what running_runs counts) lags the run's end a little.
    for _ in 0..100 {
        if running_runs(&harness).await == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let before = harness.client.status(&session).await.unwrap().last_sequence;
    let suspended_at = harness
        .store
        .checkpoint(&address, 1)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        suspended_at
            .pending
            .iter()
            .map(|c| c.tool_call_id.as_str())
            .collect::<Vec<_>>(),
        ["call_1_1"]
    );

    let rewound = harness
        .client
        .rewind(&session, 1, None, false)
        .await
        .unwrap();
    assert_eq!(
        (rewound.status, rewound.workflow_id.as_deref()),
        (Status::SuspendedClientTool, None)
    );
    let after = harness.chunks_after_until_suspended(&session, before).await;
    assert_eq!(kinds(&after), ["rewind", "run_start", "suspended"]);
    assert_eq!(
        after[2].kind,
        ChunkKind::Suspended {
            step: 1,
            tool_call_ids: vec!["call_1_1".into()]
        }
    );
    let state = harness.client.status(&session).await.unwrap();
    assert_eq!(
        (state.status, state.step_count, &state.run_id),
        (Status::SuspendedClientTool, 1, &rewound.run_id)
    );
    assert_eq!(state.suspension.unwrap().run_id, rewound.run_id);
    assert_eq!(running_runs(&harness).await, 0);
    let ask = ToolCall {
        id: "call_1_1".into(),
        name: "ask_user".into(),
        arguments: json!({"question": "Name?"}),
        provider_id: None,
    };
    assert_eq!(
        harness.messages(&session).await,
        vec![
            Message::user("go"),
            Message::assistant("", vec![ask.clone()])
        ]
    );
    let (call, run) = harness.one_pending_call(&address).await;
    assert_eq!(run, rewound.run_id);
    // A fresh deadline, as long as the call first had (60 s).
    let left = call.deadline_at - baton_core::store::now_ms();
    assert!((50_000..=60_000).contains(&left), "{left} ms left");

    // The restored call takes a new answer, and the session finishes with it, once.
    let answer = harness
        .client
        .submit(&session, "call_1_1", &name("Bob"))
        .await
        .unwrap();
    assert_eq!(answer.continuation, Continuation::CallerResumes);
    harness.resume_to_end(&session).await;
    assert_eq!(
        harness.messages(&session).await,
        vec![
            Message::user("go"),
            Message::assistant("", vec![ask.clone()]),
            Message::tool_result(&ask, name("Bob")),
            Message::assistant(r#"Hello {"answer":"Bob"}"#, vec![]),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewound_approval_is_asked_again_under_a_new_approval_id() {
    let harness = Harness::start(agents::registry()).await;
    let session = harness.suspended_session("guarded").await;
    let state = harness.client.status(&session).await.unwrap();
    let old_approval = format!("{}::call_1_1", state.run_id);
    let approve = ApprovalDecision {
        approved: true,
        reason: None,
        arguments: None,
    };
    harness
        .client
        .submit_approval(&session, "call_1_1", &old_approval, &approve)
        .await
        .unwrap();
    harness.resume_to_end(&session).await;
    let before = harness.client.status(&session).await.unwrap().last_sequence;

    let rewound = harness
        .client
        .rewind(&session, 1, None, false)
        .await
        .unwrap();
    let chunks = harness.chunks_after_until_suspended(&session, before).await;
    let request = chunks
        .iter()
        .find_map(|c| match &c.kind {
            ChunkKind::ToolApprovalRequest { approval_id, .. } => Some(approval_id.clone()),
            _ => None,
        })
        .expect("the approval is asked again");
    let new_approval = format!("{}::call_1_1", rewound.run_id);
    assert_eq!(request, new_approval);
    // The decision on the old request does not carry over.
    let stale = harness
        .client
        .submit_approval(&session, "call_1_1", &old_approval, &approve)
        .await
        .unwrap_err();
    assert_eq!(api_error(stale).code, ErrorCode::UnknownToolCall);

    harness
        .client
        .submit_approval(&session, "call_1_1", &new_approval, &approve)
        .await
        .unwrap();
    harness.resume_to_end(&session).await;
    let log = harness.messages(&session).await;
    assert_eq!(
        tool_outcomes(&log),
        [&ToolOutcome::Result(json!("sent 10 to alice"))]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewind_with_a_message_can_abandon_the_restored_calls() {
    let harness = Harness::start(agents::registry()).await;
    let session = harness.suspended_session("asker_only").await;
    let before = harness.client.status(&session).await.unwrap().last_sequence;
    let rewound = harness
        .client
        .rewind(&session, 1, Some("never mind"), true)
        .await
        .unwrap();
    assert_eq!(rewound.status, Status::Active);
    let chunks = harness.chunks_after_until_end(&session, before).await;
    assert_eq!(&kinds(&chunks)[..3], ["rewind", "run_start", "tool_end"]);
    harness
        .run_result(&rewound.workflow_id.unwrap())
        .await
        .unwrap();
    let log = harness.messages(&session).await;
    assert_eq!(log[3], Message::user("never mind"));
    let outcomes = tool_outcomes(&log);
    assert!(
        matches!(outcomes[..], [ToolOutcome::Error(e)] if e.code == "client_tool_abandoned"),
        "{outcomes:?}"
    );
}

/// Rewinds `session` to `checkpoint` with `message` and waits for the new run to end.
async fn rewind_and_finish(harness: &Harness, session: &str, checkpoint: u32, message: &str) {
    let rewound = harness
        .client
        .rewind(session, checkpoint, Some(message), false)
        .await
        .unwrap();
    harness
        .run_result(&rewound.workflow_id.unwrap())
        .await
        .unwrap();
}

/// A rewind cuts the log back: the checkpoints after the one it restored counted messages that
/// are gone, so a rewind to one of them is refused (nothing written) and they are not listed;
/// the checkpoints of the new history are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkpoint_a_rewind_went_back_past_cannot_be_restored() {
    let harness = Harness::start(agents::registry()).await;
    let started = harness.client.start("chatter", "hello").await.unwrap();
    let session = started.session_id;
    harness.chunks_until_end(&session, WAIT_LIMIT).await;
    let address = SessionAddress::root(&session);
    let first_history = harness.store.checkpoints(&address).await.unwrap();
    assert_eq!(first_history.len(), 2);

    rewind_and_finish(&harness, &session, 0, "other").await;
    let before = (
        harness.client.status(&session).await.unwrap(),
        harness.messages(&session).await,
    );
    let refused = harness.client.rewind(&session, 1, None, false).await;
    let refused = api_error(refused.unwrap_err());
    assert_eq!(refused.code, ErrorCode::CheckpointNotFound);
    assert!(refused.error.contains("abandoned"), "{}", refused.error);
    let after = (
        harness.client.status(&session).await.unwrap(),
        harness.messages(&session).await,
    );
    assert_eq!(before, after);

    let listed: Vec<u32> = harness
        .store
        .checkpoints(&address)
        .await
        .unwrap()
        .iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(listed, [0, 2, 3]);
    rewind_and_finish(&harness, &session, 2, "third").await;
    assert_eq!(
        harness.messages(&session).await,
        vec![
            Message::user("hello"),
            Message::user("third"),
            Message::assistant("first: third", vec![]),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_rewinds_write_nothing() {
    let harness = Harness::start(agents::registry()).await;
    let session = harness.suspended_session("asker_only").await;
    let address = SessionAddress::root(&session);
    let snapshot = || async {
        (
            harness.client.status(&session).await.unwrap(),
            harness.messages(&session).await,
            harness.store.checkpoints(&address).await.unwrap(),
            harness.store.pending_calls(&address).await.unwrap(),
        )
    };
    let before = snapshot().await;

    let unknown = harness.client.rewind(&session, 9, None, false).await;
    let unknown = api_error(unknown.unwrap_err());
    assert_eq!(unknown.code, ErrorCode::CheckpointNotFound);

    let over_calls = harness
        .client
        .rewind(&session, 1, Some("hi"), false)
        .await
        .unwrap_err();
    let over_calls = api_error(over_calls);
    assert_eq!(over_calls.code, ErrorCode::StateNotResumable);
    assert_eq!(
        over_calls.details["awaitedToolCallIds"],
        json!(["call_1_1"])
    );

    let no_session = harness.client.rewind("nope", 0, None, false).await;
    assert_eq!(
        api_error(no_session.unwrap_err()).code,
        ErrorCode::SessionNotFound
    );

    for request in [
        json!({"sessionId": session, "mode": "from_checkpoint"}),
        json!({"sessionId": session, "mode": "continue", "checkpointId": 0}),
        json!({"sessionId": session, "mode": "from_checkpoint", "checkpointId": 0,
               "abandonPending": true}),
    ] {
        let request: ResumeRequest = serde_json::from_value(request).unwrap();
        assert!(matches!(
            request.mode,
            ResumeMode::FromCheckpoint | ResumeMode::Continue
        ));
        let refused = request.checked().unwrap_err();
        assert_eq!(refused.code, ErrorCode::ValidationError);
    }
    let after = snapshot().await;
    assert_eq!(before.0, after.0);
    assert_eq!(before.1, after.1);
    assert_eq!(before.2, after.2);
    assert_eq!(before.3, after.3);
}
