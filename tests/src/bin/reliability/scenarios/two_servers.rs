//! Two servers and two workers on one task queue: sessions started on one server are followed
//! and answered on the other, and one worker is SIGKILLed mid-run (and not started again). The
//! servers run with `--resume-on-submit`.

use super::{Fleet, under_load};
use crate::{Campaign, agents, load::Driver, load::Tally, rng::Rng, table::Row};
use std::time::Duration;

pub async fn run(campaign: &Campaign) -> anyhow::Result<Row> {
    let slots = campaign.scale(10, 4);
    let mut row = Row::new("two servers, two workers, one worker killed");
    // The servers resume sessions themselves on a batch's last answer (`--resume-on-submit`), so
    // this scenario also covers the runs a server starts.
    let redis = crate::procs::RedisServer::start(&campaign.dir, &[]).await?;
    let config = crate::procs::BatonConfig {
        resume_on_submit: true,
        ..campaign.config(&redis.url(), &campaign.temporal_address)
    };
    let mut fleet = Fleet::on(campaign, redis, config, 2, 2).await?;
    let first = fleet.client(0);
    let second = fleet.client(1);
    let tally = Tally::default();
    let driver = Driver {
        answer: &second,
        ..Driver::new(&first, &tally)
    };
    let mut rng = Rng::new(campaign.seed ^ 2);
    let run_for = Duration::from_secs(campaign.scale(30, 10) as u64);
    let victim = &mut fleet.workers[0];
    let fault = async {
        tokio::time::sleep(Duration::from_millis(rng.between(1000, 3000))).await;
        victim.kill();
        tokio::time::sleep(run_for).await;
        Ok(())
    };
    under_load(&driver, agents::MIXED, slots, fault).await?;
    row.faults = format!(
        "1 of 2 workers SIGKILLed; start on server 1, answer and follow on server 2; {slots} concurrent sessions"
    );
    fleet.check(&tally, &mut row).await?;
    Ok(row)
}
