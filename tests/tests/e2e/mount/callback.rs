//! The producer's side of the callback: a start through the mount names a URL and a per-call
//! token, and each time a turn of the session ends (paused for a person, or ended) the worker's
//! sweep POSTs the turn to it, signed; a refused POST is tried again, and a worker killed before
//! the turn ends takes nothing with it (the callback is in Redis; any worker delivers it).

use super::{MountClient, chosen_id};
use axum::{Router, body::Bytes, extract::State, http::HeaderMap, http::StatusCode, routing::post};
use baton_client::Client as _;
use baton_core::{message::ToolOutcome, remote::CallbackBody};
use baton_tests::{Harness, WAIT_LIMIT, WorkerProcess, agents};
use serde_json::json;
use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};
use tokio::sync::mpsc;

const TOKEN: &str = "consumer-call-token-0001";

/// One POST the receiver got: its signature header and its body.
struct Received {
    signature: String,
    body: Vec<u8>,
}

/// A local HTTP receiver of callbacks that refuses (503) its first `refusals` POSTs.
struct Receiver {
    url: String,
    calls: mpsc::UnboundedReceiver<Received>,
    attempts: Arc<AtomicUsize>,
}

impl Receiver {
    async fn start(refusals: usize) -> Self {
        let (sender, calls) = mpsc::unbounded_channel();
        let attempts = Arc::new(AtomicUsize::new(0));
        let counted = attempts.clone();
        let app = Router::new()
            .route(
                "/callback",
                post(
                    move |State(sender): State<mpsc::UnboundedSender<Received>>,
                          headers: HeaderMap,
                          body: Bytes| {
                        let counted = counted.clone();
                        async move {
                            if counted.fetch_add(1, Ordering::SeqCst) < refusals {
                                return StatusCode::SERVICE_UNAVAILABLE;
                            }
                            let signature = headers
                                .get("x-baton-signature")
                                .and_then(|v| v.to_str().ok())
                                .unwrap_or_default()
                                .to_owned();
                            let _ = sender.send(Received {
                                signature,
                                body: body.to_vec(),
                            });
                            StatusCode::NO_CONTENT
                        }
                    },
                ),
            )
            .with_state(sender);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/callback", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self {
            url,
            calls,
            attempts,
        }
    }

    /// The next delivered callback, its signature checked against the token.
    async fn next(&mut self) -> CallbackBody {
        let received = tokio::time::timeout(WAIT_LIMIT, self.calls.recv())
            .await
            .expect("the callback arrives in time")
            .expect("the receiver runs");
        assert_eq!(
            received.signature,
            baton_worker::sweeps::signature(TOKEN, &received.body)
        );
        serde_json::from_slice(&received.body).unwrap()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_turn_end_is_called_back_signed_and_a_refused_post_is_tried_again() {
    let harness = Harness::start(agents::registry()).await;
    let mount = MountClient::new(&harness, "/agents", None);
    let mut receiver = Receiver::start(1).await;
    let session = chosen_id("cb");
    let callback = json!({"url": receiver.url, "token": TOKEN});
    let body = json!({"sessionId": session, "message": "go", "callback": callback});
    let (status, started) = mount.post("asker_only", "start", body).await;
    assert_eq!(status, reqwest::StatusCode::OK, "{started}");

    // The turn pauses for the person: called back (after one refused attempt) as paused.
    let paused = receiver.next().await;
    assert!(receiver.attempts.load(Ordering::SeqCst) >= 2);
    assert_eq!(paused.session_id, session);
    assert_eq!(paused.agent_type, "asker_only");
    assert_eq!(paused.stream_id, started["streamId"]);
    assert_eq!(paused.status, baton_core::remote::Status::Paused);
    let state = harness.client.status(&session).await.unwrap();
    assert_eq!(paused.sequence, state.last_sequence);
    assert_eq!(paused.run_id, state.run_id);

    // The person answers and the consumer resumes: the next turn's end is called back too.
    let call = state.suspension.unwrap().tool_call_ids[0].clone();
    let answer = ToolOutcome::Result(json!({"answer": "Ada"}));
    harness
        .client
        .submit(&session, &call, &answer)
        .await
        .unwrap();
    let (status, _) = mount
        .post(
            "asker_only",
            "resume",
            json!({"sessionId": session, "mode": "continue"}),
        )
        .await;
    assert_eq!(status, reqwest::StatusCode::OK);
    let completed = receiver.next().await;
    assert_eq!(completed.status, baton_core::remote::Status::Completed);
    assert_eq!(
        completed.output.as_deref(),
        Some(r#"Hello {"answer":"Ada"}"#)
    );
    assert!(completed.sequence > paused.sequence);
    assert_ne!(completed.run_id, paused.run_id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_callback_is_refused_before_anything_is_written() {
    let harness = Harness::start(agents::registry()).await;
    let mount = MountClient::new(&harness, "/agents", None);
    for callback in [
        json!({"url": "ftp://consumer/cb", "token": TOKEN}),
        json!({"url": "http://consumer/cb", "token": "short"}),
        json!({"url": "http://consumer/cb"}),
    ] {
        let body = json!({"sessionId": chosen_id("bad"), "message": "go", "callback": callback});
        let (status, refused) = mount.post("two_steps", "start", body).await;
        assert_eq!(status, reqwest::StatusCode::BAD_REQUEST);
        assert_eq!(refused["code"], "validation_error");
        assert!(!refused["error"].as_str().unwrap().contains(TOKEN));
    }
    harness.assert_nothing_written().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_before_the_turn_ends_loses_no_callback() {
    let executable = env!("CARGO_BIN_EXE_baton-test-worker");
    let harness = Harness::server_only(agents::registry()).await;
    let mut worker = WorkerProcess::spawn(executable, &harness, true);
    let mount = MountClient::new(&harness, "/agents", None);
    let mut receiver = Receiver::start(0).await;
    let session = chosen_id("cbkill");
    let callback = json!({"url": receiver.url, "token": TOKEN});
    let body = json!({"sessionId": session, "message": "go", "callback": callback});
    let (status, _) = mount.post("holder", "start", body).await;
    assert_eq!(status, reqwest::StatusCode::OK);
    // The worker holds in the run's tool: the session runs, and Temporal says it executes.
    let holding = tokio::time::timeout(WAIT_LIMIT, worker.holding()).await;
    assert!(holding.expect("the worker holds in time"));
    let (_, status) = mount.get("holder", "status", &session).await;
    assert_eq!(status["status"], "running");
    assert_eq!(status["isExecuting"], true);
    assert_eq!(status["awaitingClientTool"], false);
    // It is killed and another one finishes the run.
    drop(worker);
    let _replacement = WorkerProcess::spawn(executable, &harness, false);
    let ended = receiver.next().await;
    assert_eq!(ended.session_id, session);
    assert_eq!(ended.status, baton_core::remote::Status::Completed);
    let state = harness.client.status(&session).await.unwrap();
    assert_eq!(ended.sequence, state.last_sequence);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ended_session_resumed_through_the_mount_is_called_back_again() {
    let harness = Harness::start(agents::registry()).await;
    let mount = MountClient::new(&harness, "/agents", None);
    let mut receiver = Receiver::start(0).await;
    let session = chosen_id("cbagain");
    let callback = json!({"url": receiver.url, "token": TOKEN});
    let body = json!({"sessionId": session, "message": "hi", "callback": callback});
    let (status, _) = mount.post("chatter", "start", body).await;
    assert_eq!(status, reqwest::StatusCode::OK);
    let first = receiver.next().await;
    assert_eq!(first.status, baton_core::remote::Status::Completed);

    // Delivered and ended, the session left the index; the next turn puts it back.
    let resume = json!({"sessionId": session, "mode": "with_message", "message": "again"});
    let (status, resumed) = mount.post("chatter", "resume", resume).await;
    assert_eq!(status, reqwest::StatusCode::OK, "{resumed}");
    let second = receiver.next().await;
    assert_eq!(second.status, baton_core::remote::Status::Completed);
    assert!(second.sequence > first.sequence);
    assert_eq!(second.run_id, resumed["runId"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callback_to_a_host_the_producer_does_not_list_is_refused_before_anything_is_written() {
    // The tests' producers list loopback: another host is refused, naming the flag.
    let harness = Harness::start(agents::registry()).await;
    let mount = MountClient::new(&harness, "/agents", None);
    for url in [
        "http://consumer.example/cb",
        "http://10.0.0.7:8080/cb",
        "http://127.0.0.1.example/cb",
    ] {
        let callback = json!({"url": url, "token": TOKEN});
        let body = json!({"sessionId": chosen_id("host"), "message": "go", "callback": callback});
        let (status, refused) = mount.post("two_steps", "start", body).await;
        assert_eq!(status, reqwest::StatusCode::BAD_REQUEST, "{url}");
        assert_eq!(refused["code"], "validation_error");
        assert!(
            refused["error"]
                .as_str()
                .unwrap()
                .contains("--callback-hosts")
        );
    }
    harness.assert_nothing_written().await;

    // A producer that lists none (a server's default) refuses loopback too.
    let options = baton_worker::ServerOptions {
        callback_hosts: baton_worker::ops::CallbackHosts::default(),
        ..baton_tests::open_options()
    };
    let closed = Harness::start_with(agents::registry(), options).await;
    let mount = MountClient::new(&closed, "/agents", None);
    let receiver = Receiver::start(0).await;
    let callback = json!({"url": receiver.url, "token": TOKEN});
    let body = json!({"sessionId": chosen_id("none"), "message": "go", "callback": callback});
    let (status, refused) = mount.post("two_steps", "start", body).await;
    assert_eq!(status, reqwest::StatusCode::BAD_REQUEST);
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .contains("BATON_CALLBACK_HOSTS")
    );
    closed.assert_nothing_written().await;
    // Without a callback the start goes on.
    let body = json!({"sessionId": chosen_id("none"), "message": "go"});
    let (status, started) = mount.post("two_steps", "start", body).await;
    assert_eq!(status, reqwest::StatusCode::OK, "{started}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callback_refused_at_every_attempt_is_dropped_after_the_last() {
    let harness = Harness::start(agents::registry()).await;
    let mount = MountClient::new(&harness, "/agents", None);
    let receiver = Receiver::start(usize::MAX).await;
    let session = chosen_id("cbdrop");
    let callback = json!({"url": receiver.url, "token": TOKEN});
    let body = json!({"sessionId": session, "message": "go", "callback": callback});
    let (status, started) = mount.post("asker_only", "start", body).await;
    assert_eq!(status, reqwest::StatusCode::OK, "{started}");

    // The paused turn is POSTed (with a growing back-off) until its last attempt, then the
    // callback is gone from the session: nothing is POSTed to it again.
    let address = baton_core::store::SessionAddress::root(&session);
    let dropped = async {
        while harness.store.callback(&address).await.unwrap().is_some() {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    };
    tokio::time::timeout(WAIT_LIMIT, dropped)
        .await
        .expect("the callback is dropped in time");
    assert_eq!(
        receiver.attempts.load(Ordering::SeqCst),
        baton_tests::TEST_CALLBACK_ATTEMPTS as usize
    );
    assert!(
        harness
            .store
            .due_callbacks(u64::MAX, 100)
            .await
            .unwrap()
            .is_empty()
    );
    // The session itself is untouched: paused for its person.
    let state = harness.client.status(&session).await.unwrap();
    assert_eq!(state.status, baton_core::store::Status::SuspendedClientTool);
}
