//! A soak at a fixed mixed rate (a new `mixed` session every half second, each driven through its
//! client call, approval and resume): the server's RSS stays flat and the submit p99 under load
//! stays within twice its idle value.

use super::Fleet;
use crate::{
    Campaign, agents,
    load::{Driver, Tally, percentiles},
    procs::rss_kib,
    table::Row,
};
use futures::{StreamExt, stream::FuturesUnordered};
use std::time::{Duration, Instant};

const RATE: Duration = Duration::from_millis(500);

/// Submit latencies on an otherwise idle server: the same sessions as the soak's, one at a
/// time.
async fn idle_submits(driver: &Driver<'_>, sessions: usize) -> anyhow::Result<Vec<f64>> {
    for _ in 0..sessions {
        driver.session(agents::MIXED).await?;
    }
    Ok(driver.tally.submit_ms())
}

pub async fn run(campaign: &Campaign) -> anyhow::Result<Row> {
    let duration = Duration::from_secs(campaign.scale(300, 30) as u64);
    let mut row = Row::new("soak at a fixed mixed rate");
    let fleet = Fleet::start(campaign, &[], 1, 1).await?;
    let client = fleet.client(0);
    let idle_tally = Tally::default();
    let idle_driver = Driver::new(&client, &idle_tally);
    // Enough idle samples that their p99 is not just their largest.
    let idle = idle_submits(&idle_driver, campaign.scale(150, 10)).await?;
    let tally = Tally::default();
    let driver = Driver::new(&client, &tally);
    let server_pid = fleet.servers[0].pid().unwrap_or(0);
    let mut samples = Vec::new();
    let mut running = FuturesUnordered::new();
    let mut ticker = tokio::time::interval(RATE);
    let began = Instant::now();
    let mut last_sample = Instant::now();
    while began.elapsed() < duration {
        tokio::select! {
            _ = ticker.tick() => {
                running.push(driver.session(agents::MIXED));
                if last_sample.elapsed() >= duration / 20 {
                    last_sample = Instant::now();
                    samples.push(rss_kib(server_pid).unwrap_or(0));
                }
            }
            Some(_) = running.next(), if !running.is_empty() => {}
        }
    }
    while running.next().await.is_some() {}
    samples.push(rss_kib(server_pid).unwrap_or(0));
    row.faults = format!(
        "{} s at one new session per {} ms",
        duration.as_secs(),
        RATE.as_millis()
    );
    fleet.check(&tally, &mut row).await?;
    // The first samples are the warm-up (connections, caches); flat means the last is not far
    // above the one a fifth of the way in.
    let warm = samples.get(samples.len() / 5).copied().unwrap_or(0);
    let last = samples.last().copied().unwrap_or(0);
    row.require_timed(
        campaign,
        last <= (warm * 13 / 10).max(warm + 16 * 1024),
        format!("server RSS grew from {warm} KiB to {last} KiB"),
    );
    let idle = percentiles(idle).unwrap_or((0.0, 0.0));
    let loaded = percentiles(tally.submit_ms()).unwrap_or((0.0, 0.0));
    row.require_timed(
        campaign,
        loaded.1 <= 2.0 * idle.1,
        format!(
            "submit p99 {:.1} ms under load, above twice the idle p99 {:.1} ms",
            loaded.1, idle.1
        ),
    );
    row.note(format!(
        "server RSS {} MiB after warm-up, {} MiB at the end (samples KiB: {samples:?}); idle submit p50/p99 {:.1} / {:.1} ms",
        warm / 1024,
        last / 1024,
        idle.0,
        idle.1
    ));
    Ok(row)
}
