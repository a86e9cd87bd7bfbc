//! A Temporal worker serving the test agents, run as a separate process by tests that kill it.
//! Configured by `BATON_TEST_TASK_QUEUE`, `BATON_TEST_KEY_PREFIX` and the usual test addresses;
//! with `BATON_TEST_REMOTE_URL` (and `BATON_TEST_REMOTE_AGENT`) it serves the consumer's
//! `remote_delegator` of a remote sub-agent test instead, and with `BATON_TEST_MCP_LOG` the MCP
//! tests' agents (`baton_tests::mcp_agents`).

use baton_core::Store;
use baton_core::subagent::SubAgent;
use baton_tests::{agents, redis_url, remote_agents, temporal_settings, test_worker_settings};
use baton_worker::{connect_temporal, run_worker};
use tokio_util::sync::CancellationToken;

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let task_queue = std::env::var("BATON_TEST_TASK_QUEUE")?;
    let prefix = std::env::var("BATON_TEST_KEY_PREFIX")?;
    let store = Store::connect(&redis_url(), prefix).await?;
    let client = connect_temporal(&temporal_settings()).await?;
    let registry = match std::env::var(remote_agents::REMOTE_URL_ENV) {
        Ok(url) => {
            let agent = std::env::var(remote_agents::REMOTE_AGENT_ENV)?;
            let remote = remote_agents::remote(&url, &agent);
            remote_agents::delegating(SubAgent::remote("research", "asks", remote))
        }
        Err(_) => match std::env::var_os(baton_tests::mcp_agents::MCP_LOG_ENV) {
            Some(log) => baton_tests::mcp_agents::mcp_registry(log.as_ref()).await?,
            None => agents::registry(),
        },
    };
    println!("worker: ready");
    run_worker(
        client,
        test_worker_settings(&task_queue),
        store,
        registry,
        CancellationToken::new(),
    )
    .await
}
