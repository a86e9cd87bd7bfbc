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
        }
    }
}
