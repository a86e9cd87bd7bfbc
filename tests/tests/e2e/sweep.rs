//! The zombie sweep: a session left `active` without a running workflow is failed with
//! `run_lost`; a session whose workflow runs (even with no worker to run it yet) is left alone,
//! and so is a suspended one. The sweep reads the search index, so a zombie whose index entry a
//! killed worker never wrote is found from the index's mark.

use crate::runs::TEST_WORKER;

use baton_client::Client as _;
use baton_core::{ChunkKind, ErrorCode, chunk::EndStatus, store::Status};
use baton_tests::{Harness, WorkerProcess, agents};
use redis::AsyncCommands;
use std::time::Duration;
use temporalio_client::WorkflowTerminateOptions;

/// What a worker of the harness's server sweeps with: its agents, task queue and policy.
pub(crate) fn cascade(harness: &Harness) -> baton_worker::sweeps::Cascade {
    baton_worker::sweeps::Cascade {
        registry: harness.state.registry.clone(),
        task_queue: harness.task_queue.clone(),
        policy: harness.state.policy.clone(),
    }
}

/// One sweep pass with no grace, as a worker of the harness's server makes it (reporting a
/// failed child to its parent): the ids of the sessions it failed.
pub(crate) async fn sweep_now(harness: &Harness) -> Vec<String> {
    let cascade = cascade(harness);
    baton_worker::sweeps::sweep_once(&harness.store, &harness.temporal, &cascade, Duration::ZERO)
        .await
        .unwrap()
        .into_iter()
        .map(|run| run.address.session_id)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_active_without_a_workflow_is_failed_by_the_sweep_and_a_running_one_is_not() {
    // No worker: the started session's workflow waits in Temporal, running.
    let harness = Harness::server_only(agents::registry()).await;
    let running = harness.client.start("two_steps", "go").await.unwrap();
    // The state a crash between the session's write and its workflow's start leaves.
    harness
        .session_without_workflow("zombie-session", "two_steps")
        .await;

    assert_eq!(sweep_now(&harness).await, ["zombie-session"]);

    let state = harness.client.status("zombie-session").await.unwrap();
    assert_eq!(state.status, Status::Failed);
    assert_eq!(state.error.map(|e| e.code), Some(ErrorCode::RunLost));
    let chunks = harness
        .chunks_until_end("zombie-session", baton_tests::WAIT_LIMIT)
        .await;
    let ChunkKind::End { status, error, .. } = &chunks.last().unwrap().kind else {
        panic!("no end chunk: {chunks:?}");
    };
    assert_eq!(*status, EndStatus::Failed);
    assert_eq!(error.as_ref().map(|e| e.code), Some(ErrorCode::RunLost));
    let still = harness.client.status(&running.session_id).await.unwrap();
    assert_eq!(still.status, Status::Active);

    // A second sweep (another worker's) finds nothing to do.
    let again = sweep_now(&harness).await;
    assert!(again.is_empty(), "{again:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sweep_finds_the_zombie_a_killed_worker_leaves_and_ignores_a_suspended_session() {
    let harness = Harness::server_only(agents::registry()).await;
    let mut worker = WorkerProcess::spawn(TEST_WORKER, &harness, true);
    let suspended = harness.client.start("asker", "go").await.unwrap();
    harness.chunks_until_suspended(&suspended.session_id).await;
    let held = harness.client.start("holder", "go").await.unwrap();
    assert!(
        tokio::time::timeout(baton_tests::WAIT_LIMIT, worker.holding())
            .await
            .unwrap()
    );
    // The worker is killed inside the run's tool, and its workflow is terminated (no other
    // worker would take it over): the session stays `active` with nothing running it.
    drop(worker);
    let workflow_id = harness
        .client
        .status(&held.session_id)
        .await
        .unwrap()
        .workflow_id
        .unwrap();
    harness
        .temporal
        .get_workflow_handle::<baton_workflows::AgentRunWorkflow>(workflow_id)
        .terminate(WorkflowTerminateOptions::default())
        .await
        .unwrap();

    assert_eq!(sweep_now(&harness).await, vec![held.session_id.clone()]);
    let state = harness.client.status(&held.session_id).await.unwrap();
    assert_eq!(state.error.map(|e| e.code), Some(ErrorCode::RunLost));
    let waiting = harness.client.status(&suspended.session_id).await.unwrap();
    assert_eq!(waiting.status, Status::SuspendedClientTool);
    assert!(sweep_now(&harness).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zombie_whose_index_entry_was_never_written_is_found_from_its_mark() {
    let harness = Harness::server_only(agents::registry()).await;
    let address = harness
        .session_without_workflow("unindexed-zombie", "two_steps")
        .await;
    harness.index_settled().await;
    // What a worker killed between the session's write and its index entry leaves: the mark
    // made before the write (long ago), and no entry.
    let mut redis = redis::Client::open(baton_tests::redis_url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let mut marked = 0;
    for shard in 0..baton_core::store::INDEX_SHARDS {
        let key = |name: &str| format!("{}:index:{{idx-{shard}}}:{name}", harness.prefix);
        let indexed: bool = redis
            .hexists(key("records"), &address.session_id)
            .await
            .unwrap();
        if !indexed {
            continue;
        }
        let () = redis::pipe()
            .zrem(key("root:status:active"), &address.session_id)
            .zrem(key("root:all"), &address.session_id)
            .hdel(key("records"), &address.session_id)
            .zadd(key("dirty"), &address.session_id, 1)
            .query_async(&mut redis)
            .await
            .unwrap();
        marked += 1;
    }
    assert_eq!(marked, 1);

    assert_eq!(sweep_now(&harness).await, ["unindexed-zombie"]);
}

/// A resume whose claim Redis applied but whose reply was lost (the server answered 503 and
/// started nothing): the session is `active` with its answer accepted and no workflow. The sweep
/// starts the claimed run, which drains the answer once and finishes, instead of failing it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claimed_run_whose_workflow_never_started_is_started_by_the_sweep() {
    use baton_core::{
        message::ToolOutcome,
        store::{Claim, NewRunId, ResumeEntry, RunClaim, SessionAddress},
    };
    let harness = Harness::start(agents::registry()).await;
    let started = harness.client.start("asker", "go").await.unwrap();
    let id = &started.session_id;
    let suspended = harness.chunks_until_suspended(id).await;
    let call = harness.client.status(id).await.unwrap().pending[0]
        .tool_call_id
        .clone();
    let answer = ToolOutcome::Result(serde_json::json!({"answer": "yes"}));
    harness.client.submit(id, &call, &answer).await.unwrap();
    let claim = harness
        .store
        .claim_new_run(
            &SessionAddress::root(id),
            RunClaim {
                agent_type: "asker",
                stream_id: &started.stream_id,
                run_id: NewRunId::Minted,
            },
            &ResumeEntry::default(),
        )
        .await
        .unwrap();
    let Claim::Claimed(claimed) = claim else {
        panic!("not claimed: {claim:?}");
    };
    // The caller's retry is refused: the claim holds the session.
    let retried = harness.client.resume(id).await.unwrap_err();
    assert_eq!(
        baton_tests::api_error(retried).code,
        ErrorCode::StateAlreadyRunning
    );

    assert!(sweep_now(&harness).await.is_empty(), "nothing is failed");
    let after = suspended.last().map_or(0, |c| c.sequence);
    let chunks =
        baton_tests::chunks_through(&harness.client, id, after, baton_tests::WAIT_LIMIT, false)
            .await;
    let ChunkKind::End { status, .. } = &chunks.last().unwrap().kind else {
        panic!("no end chunk: {chunks:?}");
    };
    assert_eq!(*status, EndStatus::Completed);
    let state = harness.client.status(id).await.unwrap();
    assert_eq!(state.status, Status::Completed);
    assert_eq!(state.run_id, claimed.run_id);
    assert_eq!(
        state.output.as_deref(),
        Some(r#"The user said {"answer":"yes"}"#)
    );
    let results = baton_tests::tool_outcomes(&harness.client.snapshot(id).await.unwrap().messages)
        .into_iter()
        .filter(|outcome| **outcome == answer)
        .count();
    assert_eq!(results, 1, "the answer is drained once");
}
