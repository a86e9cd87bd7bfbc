//! The zombie sweep: a session left `active` without a running workflow is failed with
//! `run_lost`; a session whose workflow runs (even with no worker to run it yet) is left alone.

use baton_client::Client as _;
use baton_core::{ChunkKind, ErrorCode, chunk::EndStatus, store::Status};
use baton_tests::{Harness, agents};
use std::time::Duration;

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
