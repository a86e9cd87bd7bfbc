//! Redis SIGKILLed and started again under load, with its append-only file fsynced on every
//! write (`always`: no accepted answer may be lost) or once a second (`everysec`: the window of
//! answers lost is measured).

use super::{Fleet, under_load};
use crate::{Campaign, agents, load::Driver, load::Tally, rng::Rng, table::Row};
use std::{
    sync::atomic::Ordering,
    time::{Duration, Instant},
};

pub async fn run(campaign: &Campaign, fsync: &str) -> anyhow::Result<Row> {
    let kills = campaign.scale(3, 1);
    let slots = campaign.scale(10, 4);
    let mut row = Row::new(&format!("Redis SIGKILL + restart, appendfsync {fsync}"));
    let mut fleet = Fleet::start(
        campaign,
        &["--appendonly", "yes", "--appendfsync", fsync],
        1,
        1,
    )
    .await?;
    let client = fleet.client(0);
    let tally = Tally::default();
    let driver = Driver::new(&client, &tally);
    let mut rng = Rng::new(campaign.seed ^ 3);
    let mut killed_at = Vec::new();
    let redis = &mut fleet.redis;
    let chaos = async {
        for _ in 0..kills {
            tokio::time::sleep(Duration::from_millis(rng.between(1500, 4000))).await;
            redis.kill();
            killed_at.push(Instant::now());
            tokio::time::sleep(Duration::from_millis(rng.between(200, 1000))).await;
            redis.restart().await?;
        }
        Ok(())
    };
    under_load(&driver, agents::MIXED, slots, chaos).await?;
    row.faults = format!("{kills} Redis SIGKILLs, {slots} concurrent sessions");
    let findings = fleet.check(&tally, &mut row).await?;
    let unexpected = tally.server_errors.load(Ordering::Relaxed)
        - tally.store_unavailable.load(Ordering::Relaxed);
    row.require(
        unexpected == 0,
        format!("{unexpected} 5xx answers other than 503 store_unavailable"),
    );
    // The window: how long before a kill the oldest lost answer had been accepted.
    let window = findings
        .lost_at
        .iter()
        .filter_map(|accepted| {
            killed_at
                .iter()
                .filter(|killed| *killed >= accepted)
                .map(|killed| killed.duration_since(*accepted))
                .min()
        })
        .max();
    row.note(format!(
        "{} of them 503 store_unavailable, {} client retries; lost-answer window before a kill: {}",
        tally.store_unavailable.load(Ordering::Relaxed),
        tally.retries.load(Ordering::Relaxed),
        window.map_or("none (0 lost)".to_owned(), |w| format!(
            "{} ms",
            w.as_millis()
        ))
    ));
    Ok(row)
}
