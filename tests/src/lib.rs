//! Shared pieces of Baton's end-to-end tests and benchmark: the test agents and a harness that
//! runs the HTTP server and the gRPC service (and, unless told otherwise, a Temporal worker) against a real Temporal
//! dev server and a real Redis, under a task queue and key prefix of its own.
//!
//! Addresses come from `BATON_TEST_TEMPORAL_ADDRESS` (default `http://127.0.0.1:7233`) and
//! `BATON_TEST_REDIS_URL` (default `redis://127.0.0.1:6379`); `scripts/services.sh` starts both.

pub mod agents;
pub mod bearer_api;
pub mod events;
pub mod histories;
pub mod loader;
pub mod mcp_agents;
pub mod procs;
pub mod recording;
pub mod remote_agents;
pub mod state_agents;
pub mod tree_agents;
mod workers;

pub use workers::{WorkerProcess, WorkerThread};

use baton_activities::io::ActivityPolicy;
use baton_activities::io::RunOutcome;
use baton_client::{Client as _, GrpcClient, HttpClient};
use baton_core::{AgentRegistry, ChunkKind, Message, Store, StreamChunk, store::SessionAddress};
use baton_worker::{AppState, ServerOptions, TemporalSettings, WorkerSettings, connect_temporal};
use baton_workflows::AgentRunWorkflow;
use futures::StreamExt;
use std::{net::SocketAddr, time::Duration};
use temporalio_client::{
    Client, WorkflowCountOptions, WorkflowGetResultOptions, errors::WorkflowGetResultError,
};
use tokio_util::sync::CancellationToken;

pub fn redis_url() -> String {
    std::env::var("BATON_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned())
}

pub fn temporal_address() -> String {
    std::env::var("BATON_TEST_TEMPORAL_ADDRESS")
        .unwrap_or_else(|_| "http://127.0.0.1:7233".to_owned())
}

/// How long a test waits for a run to get somewhere before it fails.
pub const WAIT_LIMIT: Duration = Duration::from_secs(60);

/// The typed error of a refused client call; panics on any other failure.
pub fn api_error(error: baton_client::Error) -> baton_core::ApiError {
    match error {
        baton_client::Error::Api(error) => error,
        other => panic!("expected a typed error, got {other:?}"),
    }
}

/// The outcomes of the `tool` messages of a log, in order.
pub fn tool_outcomes(messages: &[Message]) -> Vec<&baton_core::message::ToolOutcome> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool(result) => Some(&result.outcome),
            _ => None,
        })
        .collect()
}

/// A unique name for this test's task queue and key prefix.
pub fn unique(kind: &str) -> String {
    format!("baton-{kind}-{}", uuid::Uuid::new_v4().simple())
}

/// The submit limit of test servers: small, so the size refusals are cheap to reach.
pub const SUBMIT_LIMIT_BYTES: usize = 1024;

/// The activity policy of tests: a lost worker is noticed within two seconds.
pub fn test_policy() -> ActivityPolicy {
    ActivityPolicy {
        heartbeat_timeout: Duration::from_secs(2),
        tool_attempts: 5,
        ..ActivityPolicy::default()
    }
}

/// How many failed POSTs of a turn drop its callback in the tests' workers.
pub const TEST_CALLBACK_ATTEMPTS: u32 = 3;

/// Worker settings of tests: quick heartbeats, and a short sticky time-out so a workflow moves to
/// another worker soon after its worker dies.
pub fn test_worker_settings(task_queue: &str) -> WorkerSettings {
    WorkerSettings {
        heartbeat_every: Duration::from_millis(300),
        sticky_timeout: Duration::from_secs(1),
        graceful_shutdown: Duration::from_secs(1),
        callbacks: Some(baton_worker::sweeps::CallbackSweep {
            every: Duration::from_millis(200),
            idle_every: Duration::from_millis(200),
            retry_after: Duration::from_millis(200),
            retry_max: Duration::from_millis(400),
            max_attempts: TEST_CALLBACK_ATTEMPTS,
            timeout: Duration::from_secs(5),
            ..Default::default()
        }),
        remote_waits: Some(baton_worker::sweeps::RemoteWaitSweep {
            every: Duration::from_millis(200),
            poll_every: Duration::from_millis(200),
        }),
        ..WorkerSettings::new(task_queue)
    }
}

pub fn temporal_settings() -> TemporalSettings {
    TemporalSettings {
        address: temporal_address(),
        namespace: "default".to_owned(),
    }
}

/// A Baton server (and optionally a worker) for one test.
pub struct Harness {
    pub store: Store,
    pub temporal: Client,
    pub task_queue: String,
    pub prefix: String,
    /// The HTTP API.
    pub address: SocketAddr,
    pub client: HttpClient,
    /// The gRPC service, on the same state.
    pub grpc_address: SocketAddr,
    pub grpc_client: GrpcClient,
    pub state: AppState,
    server_shutdown: CancellationToken,
    grpc: GrpcServer,
    worker: Option<WorkerThread>,
}

/// The harness's gRPC service: stopped and started again by [`Harness::restart_grpc`].
struct GrpcServer {
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<Result<(), baton_worker::grpc::Error>>,
}

impl GrpcServer {
    /// Serves on `listener` until this server's token (a child of `parent`) is cancelled.
    fn spawn(
        listener: tokio::net::TcpListener,
        state: AppState,
        parent: &CancellationToken,
    ) -> Self {
        let shutdown = parent.child_token();
        let task = tokio::spawn(baton_worker::serve_grpc(listener, state, shutdown.clone()));
        Self { shutdown, task }
    }
}

/// The service key every test server's mount knows (as the service `tests`): the test remote
/// agents (`remote_agents::remote`) and mount clients call with it.
pub const TEST_SERVICE_KEY: &str = "a test service key of at least 32 bytes";

/// The name of the service [`TEST_SERVICE_KEY`] is the key of.
pub const TEST_SERVICE: &str = "tests";

/// The service keys of the test servers: [`TEST_SERVICE_KEY`] as [`TEST_SERVICE`].
pub fn test_service_keys() -> baton_worker::auth::ServiceKeys {
    baton_worker::auth::ServiceKeys::new(vec![(
        TEST_SERVICE.to_owned(),
        TEST_SERVICE_KEY.to_owned(),
    )])
}

/// Server options of the tests that are not about auth: an open server on loopback, its mount
/// called with [`TEST_SERVICE_KEY`], calling back loopback only.
pub fn open_options() -> ServerOptions {
    ServerOptions {
        auth: baton_worker::auth::Auth::AllowUnauthenticated,
        service_keys: test_service_keys(),
        callback_hosts: baton_worker::ops::CallbackHosts::loopback(),
        ..Default::default()
    }
}

/// Server options with built-in auth: `key` is the one operator key, session tokens last ten
/// minutes.
pub fn keyed_options(key: &str) -> ServerOptions {
    ServerOptions {
        auth: baton_worker::auth::Auth::Builtin(std::sync::Arc::new(
            baton_worker::auth::BuiltinAuth::new(
                vec![key.to_owned()],
                b"a test secret of thirty-two bytes",
                Duration::from_secs(600),
            ),
        )),
        service_keys: test_service_keys(),
        callback_hosts: baton_worker::ops::CallbackHosts::loopback(),
        ..Default::default()
    }
}

impl Harness {
    /// Server and in-process worker.
    pub async fn start(registry: AgentRegistry) -> Self {
        Self::start_with(registry, open_options()).await
    }

    /// Server with these options (the submit limit is always the test one) and in-process worker.
    /// The two share one Temporal client, as in `batond dev`, so the server's starts are eager.
    pub async fn start_with(registry: AgentRegistry, options: ServerOptions) -> Self {
        let mut harness = Self::server_with(registry.clone(), options).await;
        let settings = WorkerSettings {
            remote_callback_url: Some(harness.remote_callback_url()),
            ..test_worker_settings(&harness.task_queue)
        };
        harness.worker = Some(WorkerThread::spawn_on(
            Some(harness.temporal.clone()),
            settings,
            &harness.prefix,
            registry,
        ));
        harness
    }

    /// This server's `/remote-callbacks` route, where its remote children's producers POST.
    pub fn remote_callback_url(&self) -> String {
        format!("http://{}/remote-callbacks", self.address)
    }

    /// Server only: the test brings its own worker (e.g. a process it can kill).
    pub async fn server_only(registry: AgentRegistry) -> Self {
        Self::server_with(registry, open_options()).await
    }

    /// Server only, with these options.
    pub async fn server_only_with(registry: AgentRegistry, options: ServerOptions) -> Self {
        Self::server_with(registry, options).await
    }

    async fn server_with(registry: AgentRegistry, options: ServerOptions) -> Self {
        let task_queue = unique("queue");
        let prefix = unique("keys");
        let store = Store::connect(&redis_url(), prefix.clone())
            .await
            .expect("Redis must run for the end-to-end tests (scripts/services.sh starts it)");
        let temporal = connect_temporal(&temporal_settings())
            .await
            .expect("Temporal must run for the end-to-end tests (scripts/services.sh starts it)");
        let state = AppState {
            store: store.clone(),
            registry,
            temporal: temporal.clone(),
            task_queue: task_queue.as_str().into(),
            policy: test_policy(),
            streams: Default::default(),
            http: reqwest::Client::new(),
            metrics: Default::default(),
            options: ServerOptions {
                submit_limits: baton_core::submit::SubmitLimits {
                    max_result_bytes: SUBMIT_LIMIT_BYTES,
                },
                verbose_errors: false,
                ..options
            }
            .into(),
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let server_shutdown = CancellationToken::new();
        let stop = server_shutdown.clone();
        tokio::spawn(baton_worker::serve(listener, state.clone(), async move {
            stop.cancelled().await
        }));
        let grpc_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let grpc_address = grpc_listener.local_addr().unwrap();
        let grpc = GrpcServer::spawn(grpc_listener, state.clone(), &server_shutdown);
        Self {
            store,
            temporal,
            task_queue,
            prefix,
            address,
            client: HttpClient::new(format!("http://{address}")),
            grpc_address,
            grpc_client: GrpcClient::new(&grpc_address.to_string()).unwrap(),
            state,
            server_shutdown,
            grpc,
            worker: None,
        }
    }

    /// Stops the gRPC service (its open streams end, then the server drains) and serves it again
    /// on the same address, as a restarted server would.
    pub async fn restart_grpc(&mut self) {
        self.grpc.shutdown.cancel();
        (&mut self.grpc.task)
            .await
            .expect("the gRPC task does not panic")
            .expect("the gRPC service shuts down cleanly");
        let listener = tokio::net::TcpListener::bind(self.grpc_address)
            .await
            .expect("the gRPC address is free again");
        self.grpc = GrpcServer::spawn(listener, self.state.clone(), &self.server_shutdown);
    }

    /// Follows a session's stream to its `end` chunk (at most `limit`) and returns every chunk.
    pub async fn chunks_until_end(&self, session_id: &str, limit: Duration) -> Vec<StreamChunk> {
        self.collect_chunks(session_id, 0, limit, false).await
    }

    /// Follows a session's stream from the start until its run suspends (or ends) and returns
    /// every chunk up to that one.
    pub async fn chunks_until_suspended(&self, session_id: &str) -> Vec<StreamChunk> {
        self.collect_chunks(session_id, 0, WAIT_LIMIT, true).await
    }

    /// The chunks after sequence `after` up to the next suspension (or end).
    pub async fn chunks_after_until_suspended(
        &self,
        session_id: &str,
        after: u64,
    ) -> Vec<StreamChunk> {
        self.collect_chunks(session_id, after, WAIT_LIMIT, true)
            .await
    }

    /// The chunks after sequence `after` up to the `end` chunk: what a resumed run streams.
    pub async fn chunks_after_until_end(&self, session_id: &str, after: u64) -> Vec<StreamChunk> {
        self.collect_chunks(session_id, after, WAIT_LIMIT, false)
            .await
    }

    /// Waits until the search index has followed every change made so far: a change marks its
    /// session before its script and the index write after it clears the mark, so no mark left
    /// means every entry is written (the chunk of a change comes a moment before its entry).
    pub async fn index_settled(&self) {
        let settled = async {
            while self.store.index_marks().await.unwrap() > 0 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        };
        tokio::time::timeout(WAIT_LIMIT, settled)
            .await
            .expect("the search index follows every change");
    }

    /// Starts a session of `agent` and waits until its run suspends; returns the session id.
    pub async fn suspended_session(&self, agent: &str) -> String {
        let started = self.client.start(agent, "go").await.unwrap();
        self.chunks_until_suspended(&started.session_id).await;
        started.session_id
    }

    /// Starts a session of `agent` and waits until its run suspends and that run's workflow has
    /// ended (it arranges the deadline last); returns the start's answer.
    pub async fn suspended_run(&self, agent: &str) -> baton_core::api::StartResponse {
        let started = self.client.start(agent, "go").await.unwrap();
        self.chunks_until_suspended(&started.session_id).await;
        self.run_result(&started.workflow_id).await.unwrap();
        started
    }

    /// Writes a session of `agent` (message "go") as `/start` does, but starts no workflow: the
    /// state a crash between the two leaves (status `active`, nothing executing).
    pub async fn session_without_workflow(&self, session_id: &str, agent: &str) -> SessionAddress {
        let address = SessionAddress::root(session_id);
        self.store
            .create_session(baton_core::store::NewSession {
                address: &address,
                agent_type: agent,
                run_id: "r1",
                stream_id: "st1",
                workflow_id: &format!("agent__{agent}__{session_id}"),
                messages: &[Message::user("go")],
                max_chunks: 0,
            })
            .await
            .unwrap();
        address
    }

    /// Approves call `tool_call_id` of the suspended run `run_id` (its model's arguments) and
    /// resumes the session; returns the session's last sequence before the resume.
    pub async fn approve_and_resume(
        &self,
        session_id: &str,
        run_id: &str,
        tool_call_id: &str,
    ) -> u64 {
        let approve = baton_core::store::ApprovalDecision {
            approved: true,
            reason: None,
            arguments: None,
        };
        let approval_id = format!("{run_id}::{tool_call_id}");
        self.client
            .submit_approval(session_id, tool_call_id, &approval_id, &approve)
            .await
            .unwrap();
        let before = self.client.status(session_id).await.unwrap().last_sequence;
        self.client.resume(session_id).await.unwrap();
        before
    }

    /// Interrupts the session's run and asserts that the stop answers `interrupted`.
    pub async fn interrupt(&self, session_id: &str) {
        let stopped = self.client.stop(session_id, false).await.unwrap();
        assert_eq!(stopped.status, baton_core::store::Status::Interrupted);
    }

    /// The one call a session waits on and the run that awaits it (the test fails otherwise).
    pub async fn one_pending_call(
        &self,
        address: &SessionAddress,
    ) -> (baton_core::store::PendingCall, String) {
        let (run, mut pending) = self
            .store
            .pending_calls_with_run(address)
            .await
            .unwrap()
            .expect("the session waits on a call");
        assert_eq!(pending.len(), 1, "{pending:?}");
        (pending.remove(0), run)
    }

    /// The message log of a top-level session.
    pub async fn messages(&self, session_id: &str) -> Vec<Message> {
        self.store
            .messages(&SessionAddress::root(session_id))
            .await
            .unwrap()
    }

    async fn collect_chunks(
        &self,
        session_id: &str,
        after: u64,
        limit: Duration,
        stop_at_suspension: bool,
    ) -> Vec<StreamChunk> {
        chunks_through(&self.client, session_id, after, limit, stop_at_suspension).await
    }

    /// Asserts that nothing was written: no Redis key under this harness's prefix and no workflow
    /// on its task queue.
    pub async fn assert_nothing_written(&self) {
        assert_eq!(self.keys().await, Vec::<String>::new());
        let workflows = self
            .temporal
            .count_workflows(
                format!("TaskQueue = '{}'", self.task_queue),
                WorkflowCountOptions::default(),
            )
            .await
            .unwrap();
        assert_eq!(workflows.count(), 0);
    }

    /// `GET path` through the HTTP router without a socket: the status, the headers and the
    /// body as text.
    pub async fn get(&self, path: &str) -> (axum::http::StatusCode, axum::http::HeaderMap, String) {
        use http_body_util::BodyExt;
        use tower::ServiceExt;
        let request = axum::http::Request::get(path)
            .body(axum::body::Body::empty())
            .unwrap();
        let response = baton_worker::router(self.state.clone())
            .oneshot(request)
            .await
            .unwrap();
        let (parts, body) = response.into_parts();
        let body = body.collect().await.unwrap().to_bytes();
        (
            parts.status,
            parts.headers,
            String::from_utf8_lossy(&body).into_owned(),
        )
    }

    /// Sends one request to the HTTP router without a socket and decodes the typed error it
    /// answers.
    pub async fn refusal(
        &self,
        request: axum::http::Request<axum::body::Body>,
    ) -> (axum::http::StatusCode, baton_core::ApiError) {
        use http_body_util::BodyExt;
        use tower::ServiceExt;
        let response = baton_worker::router(self.state.clone())
            .oneshot(request)
            .await
            .unwrap();
        let status = response.status();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        let error = serde_json::from_slice(&body)
            .unwrap_or_else(|e| panic!("{status}: body is not an error ({e}): {body:?}"));
        (status, error)
    }

    /// Answers the one open call of a suspended session with `outcome`, resumes it and waits for
    /// the resumed run to end.
    pub async fn answer_and_finish(
        &self,
        session_id: &str,
        tool_call_id: &str,
        outcome: &baton_core::message::ToolOutcome,
    ) -> RunOutcome {
        self.client
            .submit(session_id, tool_call_id, outcome)
            .await
            .unwrap();
        self.resume_to_end(session_id).await
    }

    /// Resumes a session whose batch is answered (`continue`) and waits for the resumed run's
    /// workflow to end.
    pub async fn resume_to_end(&self, session_id: &str) -> RunOutcome {
        let resumed = self.client.resume(session_id).await.unwrap();
        let workflow_id = resumed.workflow_id.expect("a resumed run has a workflow");
        self.run_result(&workflow_id).await.unwrap()
    }

    /// Waits for the workflow of a run and returns its result.
    pub async fn run_result(
        &self,
        workflow_id: &str,
    ) -> Result<RunOutcome, WorkflowGetResultError> {
        self.temporal
            .get_workflow_handle::<AgentRunWorkflow>(workflow_id.to_owned())
            .get_result(WorkflowGetResultOptions::default())
            .await
    }

    /// Every Redis key under this harness's prefix.
    pub async fn keys(&self) -> Vec<String> {
        keys_with_prefix(&self.prefix).await
    }
}

/// The keys under `prefix` in the tests' Redis.
pub async fn keys_with_prefix(prefix: &str) -> Vec<String> {
    let client = redis::Client::open(redis_url()).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    redis::cmd("KEYS")
        .arg(format!("{prefix}:*"))
        .query_async(&mut connection)
        .await
        .unwrap()
}

/// Follows a session through `client` from sequence `after` (at most `limit`) and returns every
/// chunk up to its `end` chunk, or with `stop_at_suspension` up to its next suspension.
pub async fn chunks_through(
    client: &dyn baton_client::Client,
    session_id: &str,
    after: u64,
    limit: Duration,
    stop_at_suspension: bool,
) -> Vec<StreamChunk> {
    let mut follow = client.follow(session_id, after);
    let collect = async {
        let mut chunks = Vec::new();
        while let Some(chunk) = follow.next().await {
            let chunk = chunk.expect("stream chunk");
            let last = match chunk.kind {
                ChunkKind::End { .. } => true,
                ChunkKind::Suspended { .. } => stop_at_suspension,
                _ => false,
            };
            chunks.push(chunk);
            if last {
                break;
            }
        }
        chunks
    };
    tokio::time::timeout(limit, collect)
        .await
        .expect("the run should get there in time")
}

impl Drop for Harness {
    fn drop(&mut self) {
        self.server_shutdown.cancel();
    }
}
