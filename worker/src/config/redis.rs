//! Flags of the Redis group: where the store is, the prefix of its keys, how long ended
//! sessions are kept and how long a command may take.

use anyhow::Context;
use baton_core::Store;
use clap::Args;

#[derive(Debug, Args)]
#[command(next_help_heading = "Redis")]
pub(crate) struct RedisArgs {
    /// Redis URL.
    #[arg(
        long,
        env = "BATON_REDIS_URL",
        default_value = "redis://127.0.0.1:6379",
        global = true
    )]
    pub(crate) redis_url: String,
    /// Prefix of every Redis key Baton writes.
    #[arg(long, env = "BATON_KEY_PREFIX", default_value = "baton", global = true)]
    pub(crate) key_prefix: String,
    /// Seconds an ended session's keys are kept after it ends (completed, failed, interrupted);
    /// a next turn keeps them again. 0 keeps them for ever.
    #[arg(
        long,
        env = "BATON_SESSION_RETENTION",
        default_value_t = baton_core::store::DEFAULT_SESSION_RETENTION.as_secs(),
        global = true
    )]
    pub(crate) session_retention: u64,
    /// Milliseconds a Redis command (or connection attempt) may take before it fails: a
    /// request then answers 503 `store_unavailable` and an activity retries, instead of
    /// hanging while Redis does not answer.
    #[arg(
        long,
        env = "BATON_REDIS_TIMEOUT_MS",
        default_value_t = baton_core::store::DEFAULT_REDIS_TIMEOUT.as_millis() as u64,
        global = true
    )]
    pub(crate) redis_timeout_ms: u64,
}

impl RedisArgs {
    pub(crate) async fn connect(&self) -> anyhow::Result<Store> {
        let timeout = std::time::Duration::from_millis(self.redis_timeout_ms.max(1));
        let store = Store::connect_with_timeout(&self.redis_url, self.key_prefix.clone(), timeout)
            .await
            .with_context(|| format!("cannot reach Redis at {}", self.redis_url))?;
        Ok(store.with_session_retention(std::time::Duration::from_secs(self.session_retention)))
    }
}
