//! The Temporal dev server SIGKILLed and started again on its database file while sessions run:
//! runs carry on from their histories once it is back.

use super::{Fleet, under_load};
use crate::{
    Campaign, agents, load::Driver, load::Tally, rng::Rng, table::Row, temporal::TemporalServer,
};
use std::{sync::atomic::Ordering, time::Duration};

pub async fn run(campaign: &Campaign) -> anyhow::Result<Row> {
    let restarts = campaign.scale(2, 1);
    let slots = campaign.scale(10, 4);
    let mut row = Row::new("Temporal dev server SIGKILL + restart (SQLite file)");
    let mut temporal = TemporalServer::start(&campaign.dir).await?;
    let fleet = Fleet::start_on(campaign, &temporal.address(), &[], 1, 1).await?;
    let client = fleet.client(0);
    let tally = Tally::default();
    let driver = Driver::new(&client, &tally);
    let mut rng = Rng::new(campaign.seed ^ 4);
    let chaos = async {
        for _ in 0..restarts {
            tokio::time::sleep(Duration::from_millis(rng.between(2000, 5000))).await;
            temporal.kill();
            tokio::time::sleep(Duration::from_millis(rng.between(500, 1500))).await;
            temporal.restart().await?;
        }
        // Some load after the last restart, so runs started then are seen through too.
        tokio::time::sleep(Duration::from_secs(3)).await;
        Ok(())
    };
    under_load(&driver, agents::MIXED, slots, chaos).await?;
    row.faults = format!("{restarts} Temporal restarts, {slots} concurrent sessions");
    fleet.check(&tally, &mut row).await?;
    let temporal_unavailable = tally.temporal_unavailable.load(Ordering::Relaxed);
    let unexpected = tally.server_errors.load(Ordering::Relaxed) - temporal_unavailable;
    row.require(
        unexpected == 0,
        format!("{unexpected} 5xx answers other than 503 temporal_unavailable"),
    );
    row.note(format!(
        "{temporal_unavailable} answers 503 temporal_unavailable while it was down, {} client retries",
        tally.retries.load(Ordering::Relaxed)
    ));
    Ok(row)
}
