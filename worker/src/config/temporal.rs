//! Flags of the Temporal group: where the Temporal server is and which task queue runs Baton.

use baton_worker::TemporalSettings;
use clap::Args;

#[derive(Debug, Args)]
#[command(next_help_heading = "Temporal")]
pub(crate) struct TemporalArgs {
    /// Temporal frontend address.
    #[arg(
        long,
        env = "BATON_TEMPORAL_ADDRESS",
        default_value = "http://127.0.0.1:7233",
        global = true
    )]
    pub(crate) temporal_address: String,
    /// Temporal namespace.
    #[arg(
        long,
        env = "BATON_TEMPORAL_NAMESPACE",
        default_value = "default",
        global = true
    )]
    pub(crate) namespace: String,
    /// Task queue of the agent runs (worker and server must agree).
    #[arg(long, env = "BATON_TASK_QUEUE", default_value = "baton", global = true)]
    pub(crate) task_queue: String,
    /// Seconds a session may stay active and unwritten without a running workflow before a
    /// worker fails it with run_lost (worker and dev; 0: no sweep).
    #[arg(
        long,
        env = "BATON_ZOMBIE_GRACE_SECS",
        default_value_t = baton_worker::runner::DEFAULT_ZOMBIE_GRACE.as_secs(),
        global = true
    )]
    pub(crate) zombie_grace_secs: u64,
    /// Seconds: a suspended run whose deadline is further away gets no deadline workflow until
    /// the worker's deadline sweep finds it within this (worker and dev; 0: a deadline workflow
    /// for every suspended run at once). Keep it the same on every worker.
    #[arg(
        long,
        env = "BATON_DEADLINE_HORIZON_SECS",
        default_value_t = baton_activities::DEFAULT_DEADLINE_HORIZON.as_secs(),
        global = true
    )]
    pub(crate) deadline_horizon_secs: u64,
    /// Milliseconds between the heartbeats of a worker's long activities (model calls, tools, a
    /// remote child's follower) (worker and dev); keep it well under --heartbeat-timeout-secs,
    /// which the server that starts the runs sets.
    #[arg(
        long,
        env = "BATON_HEARTBEAT_EVERY_MS",
        default_value_t = baton_worker::runner::DEFAULT_HEARTBEAT_EVERY.as_millis() as u64,
        global = true
    )]
    pub(crate) heartbeat_every_ms: u64,
    /// Milliseconds a workflow task waits on the queue of the worker that ran its workflow last
    /// before any worker may take it (worker and dev): shorter, a lost worker's runs move
    /// sooner.
    #[arg(
        long,
        env = "BATON_STICKY_TIMEOUT_MS",
        default_value_t = baton_worker::runner::DEFAULT_STICKY_TIMEOUT.as_millis() as u64,
        global = true
    )]
    pub(crate) sticky_timeout_ms: u64,
}

impl TemporalArgs {
    /// The worker's sweep grace, `None` when turned off.
    pub(crate) fn zombie_grace(&self) -> Option<std::time::Duration> {
        (self.zombie_grace_secs > 0).then(|| std::time::Duration::from_secs(self.zombie_grace_secs))
    }

    /// The worker's deadline horizon, `None` when turned off.
    pub(crate) fn deadline_horizon(&self) -> Option<std::time::Duration> {
        (self.deadline_horizon_secs > 0)
            .then(|| std::time::Duration::from_secs(self.deadline_horizon_secs))
    }

    /// How often the worker's long activities heartbeat (at least every millisecond).
    pub(crate) fn heartbeat_every(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.heartbeat_every_ms.max(1))
    }

    /// How long a workflow task waits for the worker that ran its workflow last.
    pub(crate) fn sticky_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.sticky_timeout_ms.max(1))
    }

    pub(crate) fn settings(&self) -> TemporalSettings {
        TemporalSettings {
            address: self.temporal_address.clone(),
            namespace: self.namespace.clone(),
        }
    }
}
