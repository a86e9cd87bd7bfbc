//! A remote child running past its follower's window costs the consumer nothing while it runs:
//! the caller suspends awaiting it, no workflow of the consumer's task queue is open and no
//! activity runs, and the consumer's remote-wait sweep, polling the child's `status`, starts its
//! follow once its turn has ended; the child's end then answers and resumes the caller, each of
//! its chunks once on the caller's stream and the child started once.

use crate::mount::runs;
use crate::remote::{forwarded, start};
use baton_client::Client as _;
use baton_core::{
    AgentRegistry,
    store::{SessionAddress, Status},
    subagent::SubAgent,
};
use baton_tests::{
    Harness, WAIT_LIMIT,
    remote_agents::{self, delegating},
};
use std::{collections::HashSet, sync::Arc, time::Duration};
use temporalio_client::WorkflowCountOptions;

/// How many workflows of `harness`'s task queue Temporal lists as running.
async fn open_workflows(harness: &Harness) -> usize {
    harness
        .temporal
        .count_workflows(
            format!(
                "TaskQueue = '{}' AND ExecutionStatus = 'Running'",
                harness.task_queue
            ),
            WorkflowCountOptions::default(),
        )
        .await
        .unwrap()
        .count()
}

/// Waits until `check` holds, or fails after the tests' limit.
async fn until<F: std::future::Future<Output = bool>>(what: &str, mut check: impl FnMut() -> F) {
    let waited = async {
        while !check().await {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::time::timeout(WAIT_LIMIT, waited)
        .await
        .unwrap_or_else(|_| panic!("{what} in time"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_past_its_window_holds_nothing_and_its_end_found_by_the_sweep_resumes_the_caller() {
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let producer =
        Harness::start(AgentRegistry::new([remote_agents::gated(gate.clone())]).unwrap()).await;
    let url = format!("http://{}/agents", producer.address);
    let mut remote = remote_agents::remote(&url, "gated");
    remote.follow_window = Duration::from_millis(300);
    let consumer = Harness::start(delegating(SubAgent::remote("research", "asks", remote))).await;
    let started = start(&consumer, "remote_delegator").await;
    let root = started.session_id.clone();

    // The child holds its gate; the caller lets go of it and suspends, and nothing of the
    // consumer runs: no workflow open on its task queue.
    until("the caller suspends awaiting the child", || async {
        let status = consumer.client.status(&root).await.unwrap().status;
        status == Status::SuspendedClientTool
    })
    .await;
    until("no consumer workflow is open", || async {
        open_workflows(&consumer).await == 0
    })
    .await;
    let child = crate::remote_relay::child_of(&consumer, &root).await;
    let child_state = producer
        .store
        .session(&SessionAddress::root(&child))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(child_state.status, Status::Active, "the child still runs");
    assert!(
        consumer
            .client
            .pending(&Default::default())
            .await
            .unwrap()
            .calls
            .is_empty()
    );

    // The child ends; the sweep finds it and its end resumes the caller.
    gate.add_permits(1);
    let chunks = consumer.chunks_until_end(&root, WAIT_LIMIT).await;
    crate::subagents::assert_completed(&chunks, "got opened");
    let mut seen = HashSet::new();
    for copy in forwarded(&chunks) {
        let source = copy.remote_source.as_ref().unwrap();
        assert!(seen.insert(source.child_sequence), "{source:?} twice");
    }
    assert!(!seen.is_empty());
    let kinds: Vec<&str> = chunks.iter().map(|c| c.kind.name()).collect();
    assert_eq!(kinds.iter().filter(|k| **k == "subagent_end").count(), 1);
    assert_eq!(runs(&producer).await, 1);
}
