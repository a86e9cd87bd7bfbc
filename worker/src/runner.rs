//! Connecting to Temporal and running the Temporal worker that executes agent runs.

use anyhow::Context;
use baton_activities::{
    AgentActivities, DEFAULT_DEADLINE_HORIZON, LogCacheBounds, io::ActivityPolicy,
};
use baton_core::{AgentRegistry, Store};
use baton_workflows::{AgentRunWorkflow, DeadlineWorkflow, RemoteFollowWorkflow};
use std::time::Duration;
use temporalio_client::{
    Client, ClientOptions, Connection, ConnectionOptions, GrpcCompression, Url,
};
use temporalio_sdk::{Runtime, Worker, WorkerOptions};
use tokio_util::sync::CancellationToken;

/// Where the Temporal server is.
#[derive(Debug, Clone)]
pub struct TemporalSettings {
    /// e.g. `http://127.0.0.1:7233`
    pub address: String,
    pub namespace: String,
}

/// How the Temporal worker runs.
#[derive(Debug, Clone)]
pub struct WorkerSettings {
    pub task_queue: String,
    /// How often long activities (model calls, tools) heartbeat; keep it well under the
    /// heartbeat timeout of the activity policy.
    pub heartbeat_every: Duration,
    /// Workflows kept in the worker's cache between tasks.
    pub max_cached_workflows: usize,
    /// How long a workflow task waits on this worker's sticky queue before any worker may take
    /// it; shorter means faster recovery when a worker dies.
    pub sticky_timeout: Duration,
    /// Time given to running activities on shutdown.
    pub graceful_shutdown: Duration,
    /// How long a session may stay `active` and unwritten without a running workflow before the
    /// worker's sweep fails it with `run_lost` (see [`crate::sweeps`]); `None`: no sweep.
    pub zombie_grace: Option<Duration>,
    /// The timeouts and retries of the runs this worker starts itself (a parent resumed by the
    /// sweep's report of a failed child); the server's `--model-attempts` and the like.
    pub policy: ActivityPolicy,
    /// A suspended run whose deadline is further away than this gets no deadline workflow yet,
    /// only an entry in the deadline index, which this worker sweeps every quarter of it (see
    /// [`crate::sweeps`]); `None`: every suspended run starts its deadline workflow.
    pub deadline_horizon: Option<Duration>,
    /// The producer mount's callback sweep (see [`crate::sweeps`]); `None`: no sweep, and
    /// callbacks wait for a worker that has one.
    pub callbacks: Option<crate::sweeps::CallbackSweep>,
    /// The remote-wait sweep (see [`crate::sweeps`]): remote children that ran past their
    /// follower's window; `None`: no sweep, and they wait for a worker that has one.
    pub remote_waits: Option<crate::sweeps::RemoteWaitSweep>,
    /// Where remote children's producers POST their turn-end callbacks: this service's
    /// `/remote-callbacks` route as they reach it; `None`: no callback is asked for (the
    /// remote-wait sweep alone finds a waiting child's end).
    pub remote_callback_url: Option<String>,
    /// How much the log cache of the worker's model steps holds, in runs and in bytes.
    pub log_cache: LogCacheBounds,
}

/// The default of [`WorkerSettings::zombie_grace`]: far above any write-to-start gap, and
/// below what a user would wait for a stuck session.
pub const DEFAULT_ZOMBIE_GRACE: Duration = Duration::from_secs(300);

/// The default of [`WorkerSettings::heartbeat_every`].
pub const DEFAULT_HEARTBEAT_EVERY: Duration = Duration::from_secs(5);

/// The default of [`WorkerSettings::sticky_timeout`].
pub const DEFAULT_STICKY_TIMEOUT: Duration = Duration::from_secs(10);

impl WorkerSettings {
    pub fn new(task_queue: impl Into<String>) -> Self {
        Self {
            task_queue: task_queue.into(),
            heartbeat_every: DEFAULT_HEARTBEAT_EVERY,
            max_cached_workflows: 1000,
            sticky_timeout: DEFAULT_STICKY_TIMEOUT,
            graceful_shutdown: Duration::from_secs(10),
            zombie_grace: Some(DEFAULT_ZOMBIE_GRACE),
            policy: ActivityPolicy::default(),
            deadline_horizon: Some(DEFAULT_DEADLINE_HORIZON),
            callbacks: Some(crate::sweeps::CallbackSweep::default()),
            remote_waits: Some(crate::sweeps::RemoteWaitSweep::default()),
            remote_callback_url: None,
            log_cache: LogCacheBounds::default(),
        }
    }
}

/// Connects a Temporal client bound to the namespace.
pub async fn connect_temporal(settings: &TemporalSettings) -> anyhow::Result<Client> {
    let url = Url::parse(&settings.address)
        .with_context(|| format!("invalid Temporal address {:?}", settings.address))?;
    // No gzip: Baton's payloads are ids and its histories small, so compressing every request
    // and response only cost CPU on both sides (the dev server's most of all; docs/benchmarks.md,
    // issue 40).
    let connection = Connection::connect(
        ConnectionOptions::new(url)
            .identity(format!("batond@{}", std::process::id()))
            .grpc_compression(GrpcCompression::None)
            .build(),
    )
    .await
    .with_context(|| format!("cannot reach Temporal at {}", settings.address))?;
    Ok(Client::new(
        connection,
        ClientOptions::new(settings.namespace.clone()).build(),
    )?)
}

/// Runs the Temporal worker until `shutdown` is cancelled, then drains it.
///
/// The future is not `Send` (workflows run on a local task set), so run it on the main task or a
/// thread of its own rather than `tokio::spawn`.
pub async fn run_worker(
    client: Client,
    settings: WorkerSettings,
    store: Store,
    registry: AgentRegistry,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let cascade = crate::sweeps::Cascade {
        registry: registry.clone(),
        task_queue: settings.task_queue.clone(),
        policy: settings.policy.clone(),
    };
    let sweep = settings.zombie_grace.map(|grace| {
        tokio::spawn(crate::sweeps::sweep_zombies(
            store.clone(),
            client.clone(),
            cascade.clone(),
            grace,
            shutdown.clone(),
        ))
    });
    let index_sweep = tokio::spawn(crate::sweeps::sweep_index(store.clone(), shutdown.clone()));
    let deadline_sweep = settings.deadline_horizon.map(|horizon| {
        tokio::spawn(crate::sweeps::sweep_deadlines(
            store.clone(),
            client.clone(),
            cascade,
            horizon,
            shutdown.clone(),
        ))
    });
    let callback_sweep = settings.callbacks.clone().map(|sweep| {
        tokio::spawn(crate::sweeps::sweep_callbacks(
            store.clone(),
            sweep,
            shutdown.clone(),
        ))
    });
    let remote_wait_sweep = settings.remote_waits.clone().map(|sweep| {
        let targets = crate::sweeps::RemoteWaitTargets {
            store: store.clone(),
            registry: registry.clone(),
            temporal: client.clone(),
            task_queue: settings.task_queue.clone(),
            policy: settings.policy.clone(),
        };
        tokio::spawn(crate::sweeps::sweep_remote_waits(
            targets,
            sweep,
            shutdown.clone(),
        ))
    });
    let runtime = Runtime::from_current_tokio(Default::default())?;
    let options = WorkerOptions::new(settings.task_queue.clone())
        .max_cached_workflows(settings.max_cached_workflows)
        .sticky_queue_schedule_to_start_timeout(settings.sticky_timeout)
        .graceful_shutdown_period(settings.graceful_shutdown)
        .register_activities(
            AgentActivities::new(store, registry, settings.heartbeat_every)
                .starting_deadlines_with(client.clone())
                .deadline_horizon(settings.deadline_horizon)
                .log_cache(settings.log_cache)
                .remote_callbacks(settings.remote_callback_url.clone()),
        )
        .register_workflow::<AgentRunWorkflow>()?
        .register_workflow::<DeadlineWorkflow>()?
        .register_workflow::<RemoteFollowWorkflow>()?
        .build();
    let mut worker = Worker::new(&runtime, client, options)?;
    let stop = worker.shutdown_handle();
    let watcher = tokio::spawn(async move {
        shutdown.cancelled().await;
        tracing::info!("stopping the Temporal worker");
        stop();
    });
    tracing::info!(task_queue = %settings.task_queue, "Temporal worker running");
    let outcome = worker.run().await;
    watcher.abort();
    for sweep in [
        sweep,
        deadline_sweep,
        callback_sweep,
        remote_wait_sweep,
        Some(index_sweep),
    ]
    .into_iter()
    .flatten()
    {
        sweep.abort();
    }
    outcome.context("the Temporal worker stopped with an error")
}
