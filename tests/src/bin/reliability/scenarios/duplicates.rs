//! Duplicate submits: every pending call of suspended sessions receives ten different answers at
//! once (1,000 concurrent submits over 100 calls in the long form); exactly one per call is
//! accepted, and that one is the answer in the log.

use super::Fleet;
use crate::{
    Campaign, agents,
    load::{Accepted, Driver, Tally, lock, percentiles},
    rng::Rng,
    table::Row,
};
use baton_client::Client as _;
use baton_core::{message::ToolOutcome, submit::SubmitStatus};
use serde_json::json;
use std::{collections::HashMap, time::Instant};

const COPIES: usize = 10;

pub async fn run(campaign: &Campaign) -> anyhow::Result<Row> {
    let calls = campaign.scale(100, 20);
    let sessions = calls.div_ceil(agents::BATCH_CALLS);
    let mut row = Row::new("concurrent duplicate submits");
    let fleet = Fleet::start(campaign, &[], 1, 1).await?;
    let client = fleet.client(0);
    let tally = Tally::default();
    let driver = Driver::new(&client, &tally);
    let mut suspended = Vec::new();
    for _ in 0..sessions {
        let started = client.start(agents::BATCH, "go").await?;
        let (after, awaited) = driver.until_suspended(&started.session_id).await?;
        anyhow::ensure!(
            awaited.len() == agents::BATCH_CALLS,
            "the batch agent did not suspend"
        );
        suspended.push((started.session_id, after, awaited));
    }
    let mut submits = Vec::new();
    for (session, _, awaited) in &suspended {
        for call in awaited {
            for copy in 0..COPIES {
                let value = json!(format!("copy {copy} of {session}/{call}"));
                submits.push((session.clone(), call.clone(), value));
            }
        }
    }
    Rng::new(campaign.seed ^ 1).shuffle(&mut submits);
    let total = submits.len();
    let answers = futures::future::join_all(submits.into_iter().map(|(session, call, value)| {
        let client = &client;
        async move {
            let began = Instant::now();
            let answer = client
                .submit(&session, &call, &ToolOutcome::Result(value.clone()))
                .await;
            (
                session,
                call,
                value,
                answer,
                began.elapsed().as_secs_f64() * 1000.0,
            )
        }
    }))
    .await;
    let mut accepted_per_call: HashMap<(String, String), usize> = HashMap::new();
    let mut latencies = Vec::new();
    for (session, call, value, answer, ms) in answers {
        latencies.push(ms);
        match answer {
            Ok(answer) if answer.status == SubmitStatus::Accepted => {
                *accepted_per_call
                    .entry((session.clone(), call.clone()))
                    .or_default() += 1;
                lock(&tally.accepted).push(Accepted {
                    session_id: session,
                    tool_call_id: call,
                    result: value,
                    at: Instant::now(),
                });
            }
            Ok(_) => {}
            Err(error) => {
                if crate::load::http_status(&error).is_some_and(|s| s >= 500) {
                    tally
                        .server_errors
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                row.note(format!("a submit failed: {error}"));
            }
        }
    }
    let accepted = accepted_per_call.values().sum::<usize>();
    row.require(
        accepted == calls.max(sessions * agents::BATCH_CALLS)
            && accepted_per_call.values().all(|n| *n == 1),
        format!(
            "{accepted} submits accepted for {} calls",
            sessions * agents::BATCH_CALLS
        ),
    );
    let finished = futures::future::join_all(
        suspended
            .into_iter()
            .map(|(session, after, _)| driver.finish(session, after)),
    )
    .await;
    row.require(
        finished.iter().all(Result::is_ok),
        "a session did not finish after its answers",
    );
    row.faults = format!(
        "{total} concurrent submits ({COPIES} different answers per call) over {} calls",
        sessions * agents::BATCH_CALLS
    );
    fleet.check(&tally, &mut row).await?;
    if let Some((p50, p99)) = percentiles(latencies) {
        row.latency = Some(("submit".to_owned(), p50, p99));
    }
    Ok(row)
}
