//! `POST /fork` (and gRPC `Fork`): a new session copied from another up to a checkpoint, with its
//! own id and stream; the original untouched; at a suspended checkpoint the fork awaits the same
//! calls; refusals typed and writing nothing.

use super::start_for;
use baton_client::Client as _;
use baton_core::{
    ErrorCode, fork::ForkRequest, message::ToolOutcome, search::SessionSearch, store::Status,
};
use baton_tests::{Harness, WAIT_LIMIT, agents, api_error};
use serde_json::json;

fn fork_of(session_id: &str, checkpoint: u32) -> ForkRequest {
    ForkRequest {
        session_id: session_id.to_owned(),
        checkpoint,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_copies_up_to_its_checkpoint_and_replays_from_there_leaving_the_original() {
    let harness = Harness::start(agents::registry()).await;
    let original = harness
        .client
        .start_request(start_for("two_steps", "u-1", &["vip"], "pro"))
        .await
        .unwrap()
        .session_id;
    harness.chunks_until_end(&original, WAIT_LIMIT).await;
    let log = harness.messages(&original).await;
    let before = harness.client.status(&original).await.unwrap();
    let checkpoint = harness
        .store
        .checkpoint(&baton_core::store::SessionAddress::root(&original), 1)
        .await
        .unwrap()
        .unwrap();

    let fork = harness.client.fork(&fork_of(&original, 1)).await.unwrap();
    assert_ne!(fork.session_id, original);
    assert_eq!(
        (fork.status, fork.forked_from.as_str()),
        (Status::Interrupted, &*format!("{original}:1"))
    );
    let state = harness.client.status(&fork.session_id).await.unwrap();
    assert_ne!(state.stream_id, before.stream_id);
    assert_eq!(
        (state.step_count, &state.meta),
        (checkpoint.step_count, &before.meta)
    );
    let copied = harness.messages(&fork.session_id).await;
    assert_eq!(copied, log[..checkpoint.message_count as usize]);

    // Replaying from the copied checkpoint runs the next step again, on the fork alone.
    let replay = harness
        .client
        .rewind(&fork.session_id, 0, None, false)
        .await
        .unwrap();
    assert_eq!(replay.status, Status::Active);
    harness.chunks_until_end(&fork.session_id, WAIT_LIMIT).await;
    let replayed = harness.client.status(&fork.session_id).await.unwrap();
    assert_eq!(
        (replayed.status, replayed.output.clone()),
        (Status::Completed, before.output.clone())
    );
    assert_eq!(harness.messages(&original).await, log);
    let after = harness.client.status(&original).await.unwrap();
    assert_eq!(
        (after.status, after.updated_at, after.last_sequence),
        (before.status, before.updated_at, before.last_sequence)
    );

    // gRPC forks too; the fork is a session of its own in the search.
    let by_grpc = harness
        .grpc_client
        .fork(&fork_of(&original, 0))
        .await
        .unwrap();
    // Checkpoint 0 is the start: the system prompt and the first message.
    assert_eq!(harness.messages(&by_grpc.session_id).await, log[..2]);
    harness.index_settled().await;
    let vip = SessionSearch {
        tags: vec!["vip".into()],
        ..SessionSearch::default()
    };
    assert_eq!(
        harness.client.sessions(&vip).await.unwrap().sessions.len(),
        3
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_at_a_suspension_awaits_the_same_call_and_answers_on_its_own() {
    let harness = Harness::start(agents::registry()).await;
    let original = harness.suspended_session("asker_only").await;
    let fork = harness.client.fork(&fork_of(&original, 1)).await.unwrap();
    assert_eq!(fork.status, Status::SuspendedClientTool);
    let state = harness.client.status(&fork.session_id).await.unwrap();
    assert_eq!(state.pending.len(), 1);
    assert_eq!(state.pending[0].tool_call_id, "call_1_1");

    let answer = ToolOutcome::Result(json!({"answer": "Bo"}));
    harness
        .answer_and_finish(&fork.session_id, "call_1_1", &answer)
        .await;
    assert_eq!(
        harness
            .client
            .status(&fork.session_id)
            .await
            .unwrap()
            .output
            .as_deref(),
        Some(r#"Hello {"answer":"Bo"}"#)
    );
    let untouched = harness.client.status(&original).await.unwrap();
    assert_eq!(
        (untouched.status, untouched.pending.len()),
        (Status::SuspendedClientTool, 1)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_forks_are_typed_and_write_nothing() {
    let harness = Harness::server_only(agents::registry()).await;
    let unknown = api_error(
        harness
            .client
            .fork(&fork_of("nosuchsession", 0))
            .await
            .unwrap_err(),
    );
    assert_eq!(unknown.code, ErrorCode::SessionNotFound);
    let malformed = reqwest::Client::new()
        .post(format!("http://{}/fork", harness.address))
        .json(&json!({"sessionId": "s", "checkpoint": -1}))
        .send()
        .await
        .unwrap();
    assert_eq!(malformed.status(), 400);
    harness.assert_nothing_written().await;
}
