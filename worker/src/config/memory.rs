//! Flags of the worker-memory group: how much of the conversations a worker keeps between the
//! steps of a run (the log cache, `activities/src/log_cache.rs`).

use baton_activities::LogCacheBounds;
use clap::Args;

#[derive(Debug, Args)]
#[command(next_help_heading = "Worker memory (worker and dev)")]
pub(crate) struct MemoryArgs {
    /// Runs whose message logs a worker keeps between their steps, so a step reads only the
    /// messages appended since the last (0: none kept; every step reads the whole log).
    #[arg(
        long,
        env = "BATON_LOG_CACHE_RUNS",
        default_value_t = LogCacheBounds::DEFAULT_RUNS,
        global = true
    )]
    pub(crate) log_cache_runs: usize,
    /// Mebibytes of message logs a worker keeps at most, whatever the run count: the logs kept
    /// longest ago go first, and a log larger than this is not kept.
    #[arg(
        long,
        env = "BATON_LOG_CACHE_MIB",
        default_value_t = LogCacheBounds::DEFAULT_BYTES >> 20,
        global = true
    )]
    pub(crate) log_cache_mib: usize,
}

impl MemoryArgs {
    pub(crate) fn log_cache(&self) -> LogCacheBounds {
        LogCacheBounds {
            runs: self.log_cache_runs,
            bytes: self.log_cache_mib.saturating_mul(1 << 20),
        }
    }
}
