//! A worker SIGKILLed at random moments (and started again) while sessions run steps with server
//! tools, a client tool and an approval, their answers submitted concurrently.

use super::{Fleet, under_load};
use crate::{Campaign, agents, load::Driver, load::Tally, rng::Rng, table::Row};
use std::time::Duration;

pub async fn run(campaign: &Campaign) -> anyhow::Result<Row> {
    let kills = campaign.scale(20, 5);
    let slots = campaign.scale(20, 6);
    let mut row = Row::new("worker SIGKILL at random moments");
    let mut fleet = Fleet::start(campaign, &[], 1, 1).await?;
    let client = fleet.client(0);
    let tally = Tally::default();
    let driver = Driver::new(&client, &tally);
    let mut rng = Rng::new(campaign.seed);
    let worker = &mut fleet.workers[0];
    let chaos = async {
        for _ in 0..kills {
            tokio::time::sleep(Duration::from_millis(rng.between(300, 2000))).await;
            worker.kill();
            tokio::time::sleep(Duration::from_millis(rng.between(0, 500))).await;
            worker.restart().await?;
        }
        Ok(())
    };
    under_load(&driver, agents::MIXED, slots, chaos).await?;
    row.faults = format!("{kills} worker SIGKILLs, {slots} concurrent sessions");
    fleet.check(&tally, &mut row).await?;
    Ok(row)
}
