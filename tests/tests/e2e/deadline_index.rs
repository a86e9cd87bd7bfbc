//! The deadline index: a suspended run whose deadline lies beyond the worker's horizon starts no
//! deadline workflow; the deadline sweep starts it (delayed until the deadline) once the deadline
//! comes within the horizon, and drops the member of a session that moved on. A worker's own
//! sweep loop carries a lapsed call all the way to the session's resumed run.

use crate::{
    round_cost::{assert_delayed_deadline, patient_registry, workflow_exists},
    sweep::cascade,
};
use baton_client::Client as _;
use baton_core::{
    ChunkKind,
    message::{ToolOutcome, codes},
    store::SessionAddress,
};
use baton_tests::{Harness, WorkerThread, agents, test_worker_settings, tool_outcomes};
use baton_worker::sweeps::{DeadlineSweep, sweep_deadlines_once};
use std::time::Duration;

/// One pass of the deadline sweep with `horizon`, as a worker of the harness's server makes it.
async fn sweep_deadlines_now(harness: &Harness, horizon: Duration) -> DeadlineSweep {
    let cascade = cascade(harness);
    sweep_deadlines_once(&harness.store, &harness.temporal, &cascade, horizon)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_far_deadline_gets_its_workflow_from_the_sweep_once_within_the_horizon() {
    let harness = Harness::start(patient_registry()).await;
    let started = harness.suspended_run("patient_asker").await;
    let session = started.session_id.clone();
    let deadline_workflow = format!("deadline__{session}__{}", started.run_id);
    assert!(!workflow_exists(&harness, &deadline_workflow).await);

    // An hour away is still beyond a one-minute horizon: the sweep leaves it.
    let early = sweep_deadlines_now(&harness, Duration::from_secs(60)).await;
    assert_eq!(early, DeadlineSweep::default());
    assert!(!workflow_exists(&harness, &deadline_workflow).await);
    assert_eq!(harness.store.indexed_deadlines().await.unwrap(), 1);

    // Within a two-hour horizon it is due: its workflow starts, held until the deadline, and the
    // member leaves the index, so the next pass starts nothing.
    let due = sweep_deadlines_now(&harness, Duration::from_secs(7200)).await;
    assert_eq!(
        due,
        DeadlineSweep {
            started: 1,
            dropped: 0
        }
    );
    assert_delayed_deadline(&harness, &session, &started.run_id).await;
    assert_eq!(harness.store.indexed_deadlines().await.unwrap(), 0);
    let again = sweep_deadlines_now(&harness, Duration::from_secs(7200)).await;
    assert_eq!(again, DeadlineSweep::default());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_member_of_a_session_that_moved_on_is_dropped_without_a_workflow() {
    let harness = Harness::start(patient_registry()).await;
    let started = harness.suspended_run("patient_asker").await;
    let session = started.session_id.clone();
    assert_eq!(harness.store.indexed_deadlines().await.unwrap(), 1);

    // An interrupt ends the suspension without a drain and takes its member out of the index.
    // A member left behind (by an earlier version's stop, or a stop whose removal failed) stays
    // until the sweep finds the session no longer suspended on that run.
    harness.client.stop(&session, false).await.unwrap();
    assert_eq!(harness.store.indexed_deadlines().await.unwrap(), 0);
    harness
        .store
        .index_deadline(
            &SessionAddress::root(&session),
            &started.run_id,
            baton_core::store::now_ms(),
        )
        .await
        .unwrap();
    let swept = sweep_deadlines_now(&harness, Duration::from_secs(7200)).await;
    assert_eq!(
        swept,
        DeadlineSweep {
            started: 0,
            dropped: 1
        }
    );
    assert_eq!(harness.store.indexed_deadlines().await.unwrap(), 0);
    let deadline_workflow = format!("deadline__{session}__{}", started.run_id);
    assert!(!workflow_exists(&harness, &deadline_workflow).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_sweeping_with_a_short_horizon_resumes_a_lapsed_session() {
    // A two-second horizon, swept every half second; the call's deadline is six seconds away
    // when the run suspends, so it goes into the index, and the worker's own sweep starts its
    // deadline workflow once it is within two seconds.
    let registry = baton_core::AgentRegistry::new([agents::asker_deadline(
        "brief_asker",
        Duration::from_secs(6),
    )])
    .unwrap();
    let harness = Harness::server_only(registry.clone()).await;
    let settings = baton_worker::WorkerSettings {
        deadline_horizon: Some(Duration::from_secs(2)),
        ..test_worker_settings(&harness.task_queue)
    };
    let _worker = WorkerThread::spawn_with(settings, &harness.prefix, registry);
    let started = harness.suspended_run("brief_asker").await;
    let session = started.session_id.clone();

    let chunks = harness
        .chunks_until_end(&session, Duration::from_secs(60))
        .await;
    assert!(matches!(
        chunks.last().map(|c| &c.kind),
        Some(ChunkKind::End { .. })
    ));
    let messages = harness.messages(&session).await;
    let lapsed = tool_outcomes(&messages).into_iter().any(|outcome| {
        matches!(outcome, ToolOutcome::Error(error) if error.code == codes::CLIENT_TOOL_TIMEOUT)
    });
    assert!(lapsed, "{messages:?}");
    let deadline_workflow = format!("deadline__{session}__{}", started.run_id);
    assert!(workflow_exists(&harness, &deadline_workflow).await);
    assert_eq!(harness.store.indexed_deadlines().await.unwrap(), 0);
}
