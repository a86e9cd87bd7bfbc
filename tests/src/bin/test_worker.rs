//! A Temporal worker serving the test agents, run as a separate process by tests that kill it.
//! Configured by `BATON_TEST_TASK_QUEUE`, `BATON_TEST_KEY_PREFIX` and the usual test addresses.

use baton_core::Store;
use baton_tests::{agents, redis_url, temporal_settings, test_worker_settings};
use baton_worker::{connect_temporal, run_worker};
use tokio_util::sync::CancellationToken;

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let task_queue = std::env::var("BATON_TEST_TASK_QUEUE")?;
    let prefix = std::env::var("BATON_TEST_KEY_PREFIX")?;
    let store = Store::connect(&redis_url(), prefix).await?;
    let client = connect_temporal(&temporal_settings()).await?;
    println!("worker: ready");
    run_worker(
        client,
        test_worker_settings(&task_queue),
        store,
        agents::registry(),
        CancellationToken::new(),
    )
    .await
}
