//! Flags of the activity group: the timeouts and retries of the runs a server starts. They
//! travel in each run's workflow input, so they matter where runs start (`server`, `dev`).

use baton_activities::io::ActivityPolicy;
use clap::Args;
use std::time::Duration;

#[derive(Debug, Args)]
#[command(next_help_heading = "Activities (timeouts and retries of the runs this server starts)")]
pub(crate) struct ActivityArgs {
    /// Longest one model call may take, in seconds, before it is retried.
    #[arg(
        long,
        env = "BATON_MODEL_TIMEOUT_SECS",
        default_value_t = ActivityPolicy::default().model_timeout.as_secs(),
        global = true
    )]
    pub(crate) model_timeout_secs: u64,
    /// Attempts of a model step (the first included) before the run fails.
    #[arg(
        long,
        env = "BATON_MODEL_ATTEMPTS",
        default_value_t = ActivityPolicy::default().model_attempts,
        global = true
    )]
    pub(crate) model_attempts: u32,
    /// Longest one server-tool execution may take, in seconds, before it is retried.
    #[arg(
        long,
        env = "BATON_TOOL_TIMEOUT_SECS",
        default_value_t = ActivityPolicy::default().tool_timeout.as_secs(),
        global = true
    )]
    pub(crate) tool_timeout_secs: u64,
    /// Attempts of a server tool (the first included) before the run fails.
    #[arg(
        long,
        env = "BATON_TOOL_ATTEMPTS",
        default_value_t = ActivityPolicy::default().tool_attempts,
        global = true
    )]
    pub(crate) tool_attempts: u32,
    /// A model step or tool silent for this many seconds is taken as lost and retried; keep it
    /// well over the worker's heartbeat interval (5 s).
    #[arg(
        long,
        env = "BATON_HEARTBEAT_TIMEOUT_SECS",
        default_value_t = ActivityPolicy::default().heartbeat_timeout.as_secs(),
        global = true
    )]
    pub(crate) heartbeat_timeout_secs: u64,
    /// Timeout of each Redis commit of a run (a local activity), in seconds.
    #[arg(
        long,
        env = "BATON_COMMIT_TIMEOUT_SECS",
        default_value_t = ActivityPolicy::default().commit_timeout.as_secs(),
        global = true
    )]
    pub(crate) commit_timeout_secs: u64,
    /// Attempts of each Redis commit of a run (the first included) before the run fails.
    #[arg(
        long,
        env = "BATON_COMMIT_ATTEMPTS",
        default_value_t = ActivityPolicy::default().commit_attempts,
        global = true
    )]
    pub(crate) commit_attempts: u32,
    /// The wait before an activity's first retry, in milliseconds; each later wait doubles.
    #[arg(
        long,
        env = "BATON_RETRY_INITIAL_MS",
        default_value_t = duration_ms(ActivityPolicy::default().retry_initial_interval),
        global = true
    )]
    pub(crate) retry_initial_ms: u64,
    /// The longest wait between two attempts of an activity, in milliseconds.
    #[arg(
        long,
        env = "BATON_RETRY_MAX_MS",
        default_value_t = duration_ms(ActivityPolicy::default().retry_maximum_interval),
        global = true
    )]
    pub(crate) retry_max_ms: u64,
}

fn duration_ms(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

impl ActivityArgs {
    pub(crate) fn policy(&self) -> ActivityPolicy {
        ActivityPolicy {
            model_timeout: Duration::from_secs(self.model_timeout_secs),
            model_attempts: self.model_attempts,
            tool_timeout: Duration::from_secs(self.tool_timeout_secs),
            tool_attempts: self.tool_attempts,
            heartbeat_timeout: Duration::from_secs(self.heartbeat_timeout_secs),
            commit_timeout: Duration::from_secs(self.commit_timeout_secs),
            commit_attempts: self.commit_attempts,
            retry_initial_interval: Duration::from_millis(self.retry_initial_ms),
            retry_maximum_interval: Duration::from_millis(self.retry_max_ms),
        }
    }
}
