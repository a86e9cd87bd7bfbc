//! Custom session state: seeded at start (defaults, the request's fields; a refused state writes
//! nothing), changed by server tools as patches that the step's commit applies once (across
//! steps, around a suspension, after a worker died mid-tool), rebuilt by a reader from a snapshot
//! and the patches after it, carried by `end`, restored by a rewind, and folded from a child into
//! its parent.

use crate::subagents::assert_completed;
use baton_client::Client as _;
use baton_core::{
    ChunkKind, ErrorCode, StreamChunk,
    api::{SnapshotResponse, StartResponse},
    message::{ToolError, ToolOutcome, codes},
    store::{SessionAddress, Status},
    subagent,
};
use baton_proto::v1::{self, baton_client::BatonClient};
use baton_tests::{Harness, WAIT_LIMIT, WorkerProcess, agents, chunks_through, tool_outcomes};
use serde_json::{Value, json};

const TEST_WORKER: &str = env!("CARGO_BIN_EXE_baton-test-worker");

/// `POST /start` of `agent` with an initial state (the `Client` trait starts without one).
async fn start_with_state(harness: &Harness, agent: &str, state: Value) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("http://{}/start", harness.address))
        .json(&json!({"agent": agent, "message": "go", "state": state}))
        .send()
        .await
        .unwrap()
}

async fn started_with_state(harness: &Harness, agent: &str, state: Value) -> StartResponse {
    let response = start_with_state(harness, agent, state).await;
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

async fn refused_state(
    harness: &Harness,
    agent: &str,
    state: Value,
) -> (u16, baton_core::ApiError) {
    let response = start_with_state(harness, agent, state).await;
    (response.status().as_u16(), response.json().await.unwrap())
}

async fn snapshot(harness: &Harness, session_id: &str) -> SnapshotResponse {
    harness.client.snapshot(session_id).await.unwrap()
}

/// The state patches `session_id`'s own tools made, in stream order.
fn own_patches<'a>(chunks: &'a [StreamChunk], session_id: &str) -> Vec<&'a StreamChunk> {
    chunks
        .iter()
        .filter(|chunk| chunk.header.agent_id == session_id)
        .filter(|chunk| matches!(chunk.kind, ChunkKind::StatePatch { .. }))
        .collect()
}

/// What a reader holds after applying, to `baseline` (a snapshot's state), the session's own
/// patches of `chunks` up to sequence `through`.
fn rebuilt(baseline: &Value, chunks: &[StreamChunk], session_id: &str, through: u64) -> Value {
    let mut state = baseline.clone();
    for chunk in own_patches(chunks, session_id) {
        if chunk.sequence > through {
            break;
        }
        if let ChunkKind::StatePatch { patch, .. } = &chunk.kind {
            json_patch::patch(&mut state, patch).unwrap();
        }
    }
    state
}

fn end_state(chunks: &[StreamChunk]) -> Option<&Value> {
    match &chunks.last()?.kind {
        ChunkKind::End { state, .. } => state.as_ref(),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_seeds_the_state_over_its_defaults_and_a_refused_state_writes_nothing() {
    let harness = Harness::server_only(agents::registry()).await;
    let cases = [
        ("notebook", json!({"count": "many"}), "/count"),
        ("notebook", json!(["a"]), "JSON object"),
        ("notebook", json!({"notes": [1]}), "/notes/0"),
        ("two_steps", json!({}), "declares no custom state"),
    ];
    for (agent, state, mentions) in cases {
        let (status, error) = refused_state(&harness, agent, state.clone()).await;
        assert_eq!(
            (status, error.code),
            (400, ErrorCode::InvalidState),
            "{state}"
        );
        assert!(error.error.contains(mentions), "{state}: {}", error.error);
    }
    let mut grpc = BatonClient::connect(format!("http://{}", harness.grpc_address))
        .await
        .unwrap();
    let bad = grpc
        .start(v1::StartRequest {
            agent: "notebook".into(),
            message: "go".into(),
            session_id: None,
            state_json: Some(r#"{"count": -1}"#.into()),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(bad.code(), tonic::Code::InvalidArgument, "{bad:?}");
    harness.assert_nothing_written().await;

    let seeded = started_with_state(&harness, "notebook", json!({"topic": "rust"})).await;
    assert_eq!(
        snapshot(&harness, &seeded.session_id).await.state,
        json!({"topic": "rust", "notes": [], "count": 0})
    );
    let defaults = harness.client.start("notebook", "go").await.unwrap();
    assert_eq!(
        snapshot(&harness, &defaults.session_id).await.state,
        json!({"topic": "", "notes": [], "count": 0})
    );
    let over_grpc = grpc
        .start(v1::StartRequest {
            agent: "notebook".into(),
            message: "go".into(),
            session_id: None,
            state_json: Some(r#"{"notes": ["kept"], "count": 1}"#.into()),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let over_grpc = harness
        .grpc_client
        .snapshot(&over_grpc.session_id)
        .await
        .unwrap();
    assert_eq!(
        over_grpc.state,
        json!({"topic": "", "notes": ["kept"], "count": 1})
    );
    let stateless = harness.client.start("two_steps", "go").await.unwrap();
    assert_eq!(
        snapshot(&harness, &stateless.session_id).await.state,
        json!({})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_change_the_state_step_by_step_and_a_reader_rebuilds_each_snapshot_from_the_last() {
    let harness = Harness::start(agents::registry()).await;
    let started = started_with_state(&harness, "notebook", json!({"topic": "rust"})).await;
    let session = started.session_id.clone();
    // Wherever the run is when it is taken, a snapshot is pinned at a step boundary.
    let first = snapshot(&harness, &session).await;
    assert!(first.stream_sequence >= 1, "{first:?}");
    let first_sequence = first.stream_sequence as u64;
    let until_suspended =
        chunks_through(&harness.client, &session, first_sequence, WAIT_LIMIT, true).await;
    let suspended = snapshot(&harness, &session).await;
    assert_eq!(suspended.status, Status::SuspendedClientTool);
    let expected = json!({"topic": "rust", "notes": ["a", "b"], "count": 2});
    assert_eq!(suspended.state, expected);
    assert_eq!(
        rebuilt(
            &first.state,
            &until_suspended,
            &session,
            suspended.stream_sequence as u64
        ),
        expected,
        "the first snapshot and the patches after it make the second"
    );

    // The suspended step's patch (its `note` ran beside the client call) is written once, with
    // the suspended commit, before the step's end.
    let all_so_far = harness.chunks_until_suspended(&session).await;
    let patches = own_patches(&all_so_far, &session);
    let steps: Vec<u32> = patches
        .iter()
        .map(|chunk| match chunk.kind {
            ChunkKind::StatePatch { step, .. } => step,
            _ => 0,
        })
        .collect();
    assert_eq!(steps, [1, 2], "{patches:?}");
    let step_end_2 = all_so_far
        .iter()
        .find(|chunk| matches!(chunk.kind, ChunkKind::StepEnd { step: 2 }))
        .unwrap();
    assert_eq!(patches[1].sequence + 1, step_end_2.sequence);

    let answer = ToolOutcome::Result(json!({"answer": "yes"}));
    harness
        .client
        .submit(&session, "nb_2_2", &answer)
        .await
        .unwrap();
    harness.client.resume(&session).await.unwrap();
    let after_suspension = chunks_through(
        &harness.client,
        &session,
        suspended.stream_sequence as u64,
        WAIT_LIMIT,
        false,
    )
    .await;
    let last = snapshot(&harness, &session).await;
    assert_eq!(last.status, Status::Completed);
    let expected = json!({"topic": "rust", "notes": ["a", "b", "c"], "count": 3});
    assert_eq!(last.state, expected);
    assert_eq!(end_state(&after_suspension), Some(&expected));
    assert_eq!(
        rebuilt(&suspended.state, &after_suspension, &session, u64::MAX),
        expected
    );

    // `note_bad` answered "fine", but its change broke the schema: the model got an error and
    // none of its change was kept.
    let messages = harness.messages(&session).await;
    let outcomes = tool_outcomes(&messages);
    assert!(
        outcomes.iter().any(|outcome| matches!(
            outcome,
            ToolOutcome::Error(ToolError { code, message })
                if code == codes::INVALID_STATE_PATCH && message.contains("/count")
        )),
        "{outcomes:?}"
    );
    assert_eq!(own_patches(&after_suspension, &session).len(), 1);
    assert_completed(&after_suspension, "noted 3");

    // A rewind to the suspended step's checkpoint (2) awaits its call again, with its state.
    harness
        .client
        .rewind(&session, 2, None, false)
        .await
        .unwrap();
    let rewound = snapshot(&harness, &session).await;
    assert_eq!(rewound.status, Status::SuspendedClientTool);
    assert_eq!(rewound.state, suspended.state);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_inside_a_state_changing_tool_leaves_the_change_applied_once() {
    let harness = Harness::server_only(agents::registry()).await;
    let first = WorkerProcess::spawn(TEST_WORKER, &harness, true);
    let started = harness.client.start("notebook_once", "go").await.unwrap();
    // The first worker's `note` has made its change and holds before staging it: kill it.
    let _second = first.replace_when_holding(TEST_WORKER, &harness).await;
    let chunks = harness
        .chunks_until_end(&started.session_id, WAIT_LIMIT)
        .await;
    let expected = json!({"topic": "", "notes": ["a"], "count": 1});
    assert_eq!(end_state(&chunks), Some(&expected));
    assert_eq!(own_patches(&chunks, &started.session_id).len(), 1);
    assert_eq!(
        snapshot(&harness, &started.session_id).await.state,
        expected
    );
    assert_completed(&chunks, "noted 1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_call_retried_mid_stream_leaves_the_steps_change_applied_once() {
    let harness = Harness::start(agents::registry()).await;
    let started = harness.client.start("notebook_flaky", "go").await.unwrap();
    let chunks = harness
        .chunks_until_end(&started.session_id, WAIT_LIMIT)
        .await;
    assert!(
        chunks
            .iter()
            .any(|chunk| matches!(chunk.kind, ChunkKind::StepDiscarded { step: 1 })),
        "the first model call was retried"
    );
    let expected = json!({"topic": "", "notes": ["a"], "count": 1});
    assert_eq!(end_state(&chunks), Some(&expected));
    assert_eq!(own_patches(&chunks, &started.session_id).len(), 1);
    assert_completed(&chunks, "noted 1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parent_folds_its_childs_final_state_into_its_own_after_the_call() {
    let harness = Harness::start(agents::registry()).await;
    let started = harness.client.start("expedition", "go").await.unwrap();
    let root = started.session_id.clone();
    let chunks = harness.chunks_until_end(&root, WAIT_LIMIT).await;
    let child = subagent::child_address(&SessionAddress::root(&root), "ex_1_1").session_id;

    // The root's stream carries the child's patch under the child's agentId, and the parent's
    // fold under its own, with the sub-agent call's step.
    let child_patches = own_patches(&chunks, &child);
    assert_eq!(child_patches.len(), 1, "{chunks:?}");
    let parent_patches = own_patches(&chunks, &root);
    assert_eq!(parent_patches.len(), 1, "{chunks:?}");
    assert!(matches!(
        parent_patches[0].kind,
        ChunkKind::StatePatch { step: 1, .. }
    ));

    let expected = json!({"found": "gold", "scoutStatus": "completed"});
    assert_eq!(end_state(&chunks), Some(&expected));
    assert_eq!(snapshot(&harness, &root).await.state, expected);
    assert_eq!(
        snapshot(&harness, &child).await.state,
        json!({"found": "gold"})
    );
    assert_completed(&chunks, "scout says found it");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parent_resumed_by_its_suspended_childs_end_folds_the_childs_state_once() {
    let harness = Harness::start(agents::registry()).await;
    let root = harness.suspended_session("patient_expedition").await;
    let child = subagent::child_address(&SessionAddress::root(&root), "pe_1_1").session_id;
    let answer = ToolOutcome::Result(json!({"answer": "yes"}));
    harness
        .client
        .submit(&root, "as_1_2", &answer)
        .await
        .unwrap();
    let before = harness.client.status(&root).await.unwrap().last_sequence;
    harness.client.resume(&root).await.unwrap();
    let chunks = harness.chunks_after_until_end(&root, before).await;

    // The child's change was made beside its client call; the parent's fold goes with the
    // resumed parent's next step (2), since draining an answer commits no step.
    let expected = json!({"found": "silver", "scoutStatus": "completed"});
    assert_eq!(end_state(&chunks), Some(&expected));
    let parent_patches = own_patches(&chunks, &root);
    assert_eq!(parent_patches.len(), 1, "{chunks:?}");
    assert!(matches!(
        parent_patches[0].kind,
        ChunkKind::StatePatch { step: 2, .. }
    ));
    assert_eq!(snapshot(&harness, &root).await.state, expected);
    assert_eq!(
        snapshot(&harness, &child).await.state,
        json!({"found": "silver"})
    );
    assert_completed(&chunks, "scout says dug");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_tool_changes_the_state_with_the_resumed_runs_next_step() {
    let harness = Harness::start(agents::registry()).await;
    let started = harness.client.start("notebook_gated", "go").await.unwrap();
    let session = started.session_id.clone();
    harness.chunks_until_suspended(&session).await;
    let before = harness
        .approve_and_resume(&session, &started.run_id, "ng_1_1")
        .await;
    let chunks = harness.chunks_after_until_end(&session, before).await;
    let expected = json!({"topic": "", "notes": ["approved"], "count": 1});
    assert_eq!(end_state(&chunks), Some(&expected));
    let patches = own_patches(&chunks, &session);
    assert_eq!(patches.len(), 1, "{chunks:?}");
    assert!(matches!(
        patches[0].kind,
        ChunkKind::StatePatch { step: 2, .. }
    ));
    assert_completed(&chunks, "noted 1");
}
