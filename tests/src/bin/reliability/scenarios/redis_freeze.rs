//! Redis unreachable for 5 s under load (the process frozen with SIGSTOP: connections stay open
//! and nothing answers, as in a partition). The server must answer `503 store_unavailable` in a
//! bounded time meanwhile, and every session must finish once Redis is back.

use super::{Fleet, under_load};
use crate::{
    Campaign, agents,
    load::{Driver, Tally, percentiles},
    table::Row,
};
use baton_client::Client as _;
use std::{
    sync::atomic::Ordering,
    time::{Duration, Instant},
};

const OUTAGE: Duration = Duration::from_secs(5);
/// What "bounded" means: an answer within this time while Redis does not answer.
const BOUND: Duration = Duration::from_secs(3);

pub async fn run(campaign: &Campaign) -> anyhow::Result<Row> {
    let slots = campaign.scale(10, 4);
    let mut row = Row::new("Redis unreachable 5 s (SIGSTOP)");
    let fleet = Fleet::start(campaign, &[], 1, 1).await?;
    let client = fleet.client(0);
    let tally = Tally::default();
    let driver = Driver::new(&client, &tally);
    // A probe session the outage's requests read.
    let probe_session = &client.start(agents::CHATTER, "probe").await?.session_id;
    let client = &client;
    let mut probes = Vec::new();
    let redis = &fleet.redis;
    let outage = async {
        tokio::time::sleep(Duration::from_secs(2)).await;
        redis.freeze()?;
        // One status read and one start every 250 ms while Redis is frozen, each with a
        // generous client-side limit so that a hung request is seen as hung.
        let waves = (0..OUTAGE.as_millis() / 250).map(|wave| async move {
            tokio::time::sleep(Duration::from_millis(250 * wave as u64)).await;
            let timed = |request| async move {
                let sent = Instant::now();
                let answer = tokio::time::timeout(Duration::from_secs(20), request).await;
                (answer, sent.elapsed())
            };
            let status = timed(Box::pin(async { client.status(probe_session).await.err() })
                as futures::future::BoxFuture<'_, Option<baton_client::Error>>);
            let start = timed(Box::pin(async {
                client.start(agents::CHATTER, "x").await.err()
            }));
            let (status, start) = futures::join!(status, start);
            [status, start]
        });
        let (answers, ()) = futures::join!(futures::future::join_all(waves), async {
            tokio::time::sleep(OUTAGE).await;
            let _ = redis.thaw();
        });
        probes = answers.into_iter().flatten().collect();
        redis.thaw()?;
        Ok(())
    };
    under_load(&driver, agents::MIXED, slots, outage).await?;
    row.faults = format!(
        "Redis frozen {} s, {slots} concurrent sessions",
        OUTAGE.as_secs()
    );
    fleet.check(&tally, &mut row).await?;
    let hung = probes.iter().filter(|(answer, _)| answer.is_err()).count();
    let slow = probes
        .iter()
        .filter(|(answer, took)| answer.is_ok() && *took > BOUND)
        .count();
    let unavailable = probes
        .iter()
        .filter(|(answer, _)| {
            matches!(answer, Ok(Some(baton_client::Error::Api(api)))
                if api.code == baton_core::ErrorCode::StoreUnavailable)
        })
        .count();
    row.require(hung == 0, format!("{hung} requests hung during the outage"));
    row.require(
        slow == 0,
        format!(
            "of {} requests during the outage: {hung} hung (no answer in 20 s), {slow} answered after more than {} s, {unavailable} answered 503 store_unavailable",
            probes.len(),
            BOUND.as_secs()
        ),
    );
    let answered_ok = probes
        .iter()
        .filter(|(answer, _)| matches!(answer, Ok(None)))
        .count();
    row.note(format!(
        "{} requests during the outage: {unavailable} answered 503 store_unavailable, {answered_ok} succeeded, {hung} hung; {} client retries",
        probes.len(),
        tally.retries.load(Ordering::Relaxed)
    ));
    let unexpected = tally.server_errors.load(Ordering::Relaxed)
        - tally.store_unavailable.load(Ordering::Relaxed);
    row.require(
        unexpected == 0,
        format!("{unexpected} 5xx answers other than 503 store_unavailable"),
    );
    if let Some((p50, p99)) = percentiles(
        probes
            .iter()
            .map(|(_, took)| took.as_secs_f64() * 1000.0)
            .collect(),
    ) {
        row.latency = Some(("answer during outage".to_owned(), p50, p99));
    }
    Ok(row)
}
