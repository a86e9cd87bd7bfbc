//! Flags of the Redis group: where the store is and the prefix of its keys.

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
}

impl RedisArgs {
    pub(crate) async fn connect(&self) -> anyhow::Result<Store> {
        let store = Store::connect(&self.redis_url, self.key_prefix.clone())
            .await
            .with_context(|| format!("cannot reach Redis at {}", self.redis_url))?;
        Ok(store.with_session_retention(std::time::Duration::from_secs(self.session_retention)))
    }
}
