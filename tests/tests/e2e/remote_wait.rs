//! A remote child running past its follower's window costs the consumer nothing while it runs:
//! the caller suspends awaiting it, no workflow of the consumer's task queue is open and no
//! activity runs. The child's end comes back by its producer's signed callback (a replayed or
//! forged one refused, nothing written) or, when the callback is lost, by the consumer's
//! remote-wait sweep polling the child's `status`; either starts the child's follow, and the
//! child's end answers and resumes the caller, each of its chunks once on the caller's stream
//! and the child started once.

use crate::mount::runs;
use crate::remote::{forwarded, start};
use baton_client::{Client as _, HttpClient};
use baton_core::{
    AgentRegistry,
    store::{SessionAddress, Status},
    subagent::SubAgent,
};
use baton_tests::{
    Harness, WAIT_LIMIT,
    remote_agents::{self, delegating},
};
use serde_json::json;
use std::{collections::HashSet, sync::Arc, time::Duration};
use temporalio_client::{Client, WorkflowCountOptions};

/// A consumer of `remote` as `research`, its worker with the remote-wait sweep or not, its
/// callbacks asked to `callback_url` (its own route when empty).
async fn consumer(
    remote: baton_core::subagent::RemoteAgent,
    sweep: bool,
    callback_url: String,
) -> (Harness, baton_tests::WorkerThread) {
    let registry = delegating(SubAgent::remote("research", "asks", remote));
    let consumer = Harness::server_only(registry.clone()).await;
    let defaults = baton_tests::test_worker_settings(&consumer.task_queue);
    let callback_url = if callback_url.is_empty() {
        consumer.remote_callback_url()
    } else {
        callback_url
    };
    let settings = baton_worker::WorkerSettings {
        remote_waits: defaults.remote_waits.clone().filter(|_| sweep),
        remote_callback_url: Some(callback_url),
        ..defaults
    };
    let worker = baton_tests::WorkerThread::spawn_with(settings, &consumer.prefix, registry);
    (consumer, worker)
}

/// How many workflows of `task_queue` Temporal lists as running.
async fn open_workflows(temporal: &Client, task_queue: &str) -> usize {
    temporal
        .count_workflows(
            format!("TaskQueue = '{task_queue}' AND ExecutionStatus = 'Running'"),
            WorkflowCountOptions::default(),
        )
        .await
        .unwrap()
        .count()
}

/// Waits until `check` holds, or fails after the tests' limit.
pub(crate) async fn until<F: std::future::Future<Output = bool>>(
    what: &str,
    mut check: impl FnMut() -> F,
) {
    let waited = async {
        while !check().await {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::time::timeout(WAIT_LIMIT, waited)
        .await
        .unwrap_or_else(|_| panic!("{what} in time"));
}

/// A producer whose `gated` child holds until the test opens its gate, and the consumer's
/// declaration of it with a short follow window.
async fn gated_producer() -> (
    Arc<tokio::sync::Semaphore>,
    Harness,
    baton_core::subagent::RemoteAgent,
) {
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let producer =
        Harness::start(AgentRegistry::new([remote_agents::gated(gate.clone())]).unwrap()).await;
    let url = format!("http://{}/agents", producer.address);
    let mut remote = remote_agents::remote(&url, "gated");
    remote.follow_window = Duration::from_millis(300);
    (gate, producer, remote)
}

/// Waits until the caller `root` has let go of its child and suspended, and nothing of the
/// consumer runs: no workflow open on its task queue (`consumer` its API, `temporal` and
/// `task_queue` where it runs).
pub(crate) async fn holds_nothing(
    consumer: &HttpClient,
    (temporal, task_queue): (&Client, &str),
    root: &str,
) {
    until("the caller suspends awaiting the child", || async {
        consumer.status(root).await.unwrap().status == Status::SuspendedClientTool
    })
    .await;
    until("no consumer workflow is open", || async {
        open_workflows(temporal, task_queue).await == 0
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_past_its_window_holds_nothing_and_its_end_found_by_the_sweep_resumes_the_caller() {
    let (gate, producer, remote) = gated_producer().await;
    // Its callbacks are lost (nothing listens where they go): only the sweep finds the end.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let lost = format!("http://{}/remote-callbacks", closed.local_addr().unwrap());
    drop(closed);
    let (consumer, _worker) = consumer(remote, true, lost).await;
    let started = start(&consumer, "remote_delegator").await;
    let root = started.session_id.clone();

    // The child holds its gate; the caller holds nothing meanwhile.
    holds_nothing(
        &consumer.client,
        (&consumer.temporal, &consumer.task_queue),
        &root,
    )
    .await;
    let child = crate::remote_relay::child_of(&consumer.store, &root).await;
    let status =
        crate::remote_relay::status_of(&producer.store, &SessionAddress::root(&child)).await;
    assert_eq!(status, Status::Active, "the child still runs");
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
    assert_eq!(runs(&producer, 1).await, 1);
}

/// The state field `field` of the consumer's session `root`, under the consumer's key prefix
/// (raw, for "nothing written").
pub(crate) async fn state_field(prefix: &str, root: &str, field: &str) -> Option<String> {
    let client = redis::Client::open(baton_tests::redis_url()).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    redis::cmd("HGET")
        .arg(format!("{prefix}:{{{root}}}:{root}:state"))
        .arg(field)
        .query_async(&mut connection)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_childs_end_delivered_by_its_signed_callback_resumes_the_caller_a_repeat_is_taken_and_a_replay_refused()
 {
    let (gate, producer, remote) = gated_producer().await;
    // No remote-wait sweep: only the callback can bring the child's end.
    let (consumer, _worker) = consumer(remote, false, String::new()).await;
    let started = start(&consumer, "remote_delegator").await;
    let root = started.session_id.clone();
    holds_nothing(
        &consumer.client,
        (&consumer.temporal, &consumer.task_queue),
        &root,
    )
    .await;

    gate.add_permits(1);
    let chunks = consumer.chunks_until_end(&root, WAIT_LIMIT).await;
    crate::subagents::assert_completed(&chunks, "got opened");
    assert_eq!(runs(&producer, 1).await, 1);

    // The delivered turn again, correctly signed (a producer whose 204 was lost retries): a
    // repeat, answered 204, nothing more written; an older turn is a replay, refused.
    let child = crate::remote_relay::child_of(&consumer.store, &root).await;
    let address = SessionAddress::root(&root);
    let token = consumer
        .store
        .remote_callback(&address, &child)
        .await
        .unwrap()
        .expect("the call kept a callback token");
    let seen_field = format!("remoteCallbackSeq:{child}");
    let seen = state_field(&consumer.prefix, &root, &seen_field)
        .await
        .unwrap();
    let child_state = producer
        .store
        .session(&SessionAddress::root(&child))
        .await
        .unwrap()
        .unwrap();
    let body = json!({
        "sessionId": child, "agentType": "gated", "streamId": child_state.stream_id,
        "runId": child_state.run_id, "sequence": seen.parse::<u64>().unwrap(),
        "status": "completed", "output": "opened",
    })
    .to_string();
    let http = reqwest::Client::new();
    let post = |signature: String, body: String| {
        http.post(format!("{}/{root}", consumer.remote_callback_url()))
            .header("content-type", "application/json")
            .header(baton_core::remote::CALLBACK_SIGNATURE_HEADER, signature)
            .body(body)
            .send()
    };
    let signed = baton_worker::sweeps::signature(&token, body.as_bytes());
    let ended = consumer.client.status(&root).await.unwrap();
    let repeated = post(signed, body.clone()).await.unwrap();
    assert_eq!(repeated.status(), reqwest::StatusCode::NO_CONTENT);
    assert_eq!(consumer.client.status(&root).await.unwrap(), ended);
    assert_eq!(runs(&producer, 1).await, 1);
    let older = body.replace(&format!("\"sequence\":{seen}"), "\"sequence\":0");
    assert_ne!(older, body);
    let signed = baton_worker::sweeps::signature(&token, older.as_bytes());
    let replayed = post(signed, older).await.unwrap();
    assert_eq!(replayed.status(), reqwest::StatusCode::UNAUTHORIZED);
    // A later turn signed with another token: refused too.
    let later = body.replace(&format!("\"sequence\":{seen}"), "\"sequence\":999999");
    let forged = baton_worker::sweeps::signature("not-the-callers-token", later.as_bytes());
    let refused = post(forged, later.clone()).await.unwrap();
    assert_eq!(refused.status(), reqwest::StatusCode::UNAUTHORIZED);
    let unsigned = post(String::new(), later).await.unwrap();
    assert_eq!(unsigned.status(), reqwest::StatusCode::UNAUTHORIZED);
    assert_eq!(
        state_field(&consumer.prefix, &root, &seen_field).await,
        Some(seen)
    );
}
