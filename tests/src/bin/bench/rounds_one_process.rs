//! The rounds of `rounds` with the server and its worker in one process (`batond dev`): a
//! resume's workflow starts eagerly there, its first task handed to the worker in the start's
//! answer instead of waiting in Temporal's matching. As many sessions as the first configuration
//! of `rounds` (the first of `BENCH_ROUNDS_CONCURRENCY`), the CPU per round of the dev server,
//! the process and Redis, and the Temporal SDK's floor measured right after (`floor.rs`).

use crate::{
    procs,
    rounds::{Figures, MOST_ROUNDS, api_rounds, rounds_per_session, suspended_sessions},
};
use baton_client::HttpClient;
use std::{path::Path, time::Duration};

/// Runs the configuration with `sessions` sessions against the benchmark's Redis, reached at
/// `redis_url` (`prefix`, the agents file `agents`), and prints its row; answers its sessions
/// and figures.
pub async fn rounds(
    sessions: usize,
    redis: &procs::RedisServer,
    redis_url: &str,
    prefix: &str,
    agents: &Path,
    temporal: Option<u32>,
) -> anyhow::Result<(usize, Figures)> {
    let task_queue = format!("bench-rounds-dev-{}", std::process::id());
    let flags = procs::common_flags(redis_url, prefix, &task_queue, agents);
    let dev = procs::launcher()?.dev("rounds-dev", &flags).await?;
    let client = HttpClient::new(dev.base_url());
    // Its worker polls before the first session starts.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let rounds = rounds_per_session(sessions).min(MOST_ROUNDS - 1);
    let started = suspended_sessions(&client, sessions).await?;
    let meter = [
        ("temporal", temporal),
        ("batond dev", dev.pid()),
        ("redis", redis.pid()),
    ];
    let figures = api_rounds(&client, started, rounds, &meter).await?;
    figures.print(&format!(
        "{sessions} sessions, `batond dev` (server and worker in one process), API"
    ));
    drop(dev);
    // The Temporal SDK's own CPU for a workflow of a round's shape, right after: what of the
    // process's CPU a round Baton's code could not remove (`floor`).
    let floor = crate::floor::measure(crate::floor::workflows()).await?;
    let process = figures.cpu_ms_per_round("batond dev");
    println!(
        "\nThe Temporal SDK's floor right after (`--only floor`): {:.2} ms of a process's CPU a \
         bare workflow of a round's shape ({:.1}/s, the dev server {:.2} ms each); `batond dev` \
         beyond it: {:.2} ms a round, and Redis {:.2}.",
        floor.process_ms,
        floor.per_second,
        floor.temporal_ms,
        process - floor.process_ms,
        figures.cpu_ms_per_round("redis"),
    );
    Ok((sessions, figures))
}
