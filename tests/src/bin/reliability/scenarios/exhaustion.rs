//! Slow-loris connections and many followers against one server: connections that trickle a
//! request's headers a byte at a time (reopened as the header deadline closes them), and open
//! `/sse` streams on many sessions, up to each session's follower cap (one past it must be
//! refused 429). Meanwhile the server must keep answering `/healthz` and submits within twice
//! their idle p99.

use super::Fleet;
use crate::{
    Campaign, agents,
    load::{Driver, Tally, percentiles},
    table::Row,
};
use baton_client::Client as _;
use baton_worker::state::DEFAULT_MAX_FOLLOWERS_PER_SESSION;
use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};
use tokio::io::AsyncWriteExt;

/// `/healthz` answered `rounds` times in a row: the latencies in ms, and the non-200 answers.
async fn healthz(http: &reqwest::Client, base: &str, rounds: usize) -> (Vec<f64>, usize) {
    let mut latencies = Vec::with_capacity(rounds);
    let mut failed = 0;
    for _ in 0..rounds {
        let began = Instant::now();
        let ok =
            matches!(http.get(format!("{base}/healthz")).send().await, Ok(r) if r.status() == 200);
        latencies.push(began.elapsed().as_secs_f64() * 1000.0);
        failed += usize::from(!ok);
    }
    (latencies, failed)
}

/// Runs `sessions` mixed sessions one after another (each with a submit per call); their
/// submit latencies are in the tally.
async fn submits(driver: &Driver<'_>, sessions: usize) {
    for _ in 0..sessions {
        let _ = driver.session(agents::MIXED).await;
    }
}

/// One slow-loris connection, reopened whenever the server closes it, until `stop`.
async fn slow_loris(address: String, stop: Arc<AtomicBool>, reopened: Arc<AtomicU64>) {
    while !stop.load(Ordering::Relaxed) {
        let Ok(mut stream) = tokio::net::TcpStream::connect(&address).await else {
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        };
        let _ = stream.write_all(b"GET /healthz HTTP/1.1\r\n").await;
        // A header byte a second: never a whole head before the deadline.
        while !stop.load(Ordering::Relaxed) {
            tokio::time::sleep(Duration::from_secs(1)).await;
            if stream.write_all(b"X").await.is_err() {
                break;
            }
        }
        reopened.fetch_add(1, Ordering::Relaxed);
    }
}

pub async fn run(campaign: &Campaign) -> anyhow::Result<Row> {
    let slow = campaign.scale(300, 100);
    let followed_sessions = campaign.scale(8, 3);
    let rounds = campaign.scale(200, 60);
    let sessions = campaign.scale(20, 6);
    let mut row = Row::new("slow-loris and many followers");
    let fleet = Fleet::start(campaign, &[], 1, 1).await?;
    let client = fleet.client(0);
    let base = fleet.servers[0].base_url();
    let http = reqwest::Client::new();

    // Idle: what /healthz and submits cost on this machine now. One tally for the scenario; the
    // submits measured under attack are those after the idle ones.
    let tally = Tally::default();
    let driver = Driver::new(&client, &tally);
    submits(&driver, sessions).await;
    let (idle_health, _) = healthz(&http, &base, rounds).await;
    let idle_submits = tally.submit_ms();
    let idle_submit = percentiles(idle_submits.clone());
    let idle_health = percentiles(idle_health);

    // The attack: slow connections, and followers up to every followed session's cap.
    let stop = Arc::new(AtomicBool::new(false));
    let reopened = Arc::new(AtomicU64::new(0));
    let address = base.trim_start_matches("http://").to_owned();
    let attack_began = Instant::now();
    let lorises: Vec<_> = (0..slow)
        .map(|_| tokio::spawn(slow_loris(address.clone(), stop.clone(), reopened.clone())))
        .collect();
    let mut followers = Vec::new();
    let mut refused_past_cap = 0;
    for _ in 0..followed_sessions {
        let session = client.start(agents::MIXED, "go").await?.session_id;
        driver.until_suspended(&session).await?;
        for _ in 0..DEFAULT_MAX_FOLLOWERS_PER_SESSION {
            let response = http
                .get(format!("{base}/sse?sessionId={session}"))
                .send()
                .await?;
            row.require(
                response.status() == 200,
                format!("a follower within the cap answered {}", response.status()),
            );
            followers.push(response);
        }
        let past = http
            .get(format!("{base}/sse?sessionId={session}"))
            .send()
            .await?;
        refused_past_cap += usize::from(past.status() == 429);
    }
    row.require(
        refused_past_cap == followed_sessions,
        format!("{refused_past_cap} of {followed_sessions} followers past the cap refused 429"),
    );

    // Under attack: the same measurements.
    submits(&driver, sessions).await;
    // Past the header deadline (10 s), so the slow connections are closed and come back.
    tokio::time::sleep_until((attack_began + Duration::from_secs(12)).into()).await;
    let (attack_health, health_failures) = healthz(&http, &base, rounds).await;
    stop.store(true, Ordering::Relaxed);
    for loris in lorises {
        loris.abort();
    }
    drop(followers);
    row.require(
        health_failures == 0,
        format!("{health_failures} of {rounds} /healthz under attack did not answer 200"),
    );
    let attack_submit = percentiles(tally.submit_ms()[idle_submits.len()..].to_vec());
    let attack_health = percentiles(attack_health);
    for (what, idle, attack) in [
        ("/healthz", idle_health, attack_health),
        ("submit", idle_submit, attack_submit),
    ] {
        let (Some((_, idle_p99)), Some((_, attack_p99))) = (idle, attack) else {
            row.require(false, format!("no {what} latencies measured"));
            continue;
        };
        row.note(format!(
            "{what} p99 {idle_p99:.1} ms idle, {attack_p99:.1} ms under attack"
        ));
        row.require_timed(
            campaign,
            attack_p99 <= 2.0 * idle_p99.max(1.0),
            format!("{what} p99 under attack {attack_p99:.1} ms > 2 × idle {idle_p99:.1} ms"),
        );
    }
    row.require(
        reopened.load(Ordering::Relaxed) > 0,
        "no slow-loris connection was closed at the header deadline",
    );
    row.faults = format!(
        "{slow} slow-loris connections ({} closed at the header deadline), {} followers on {followed_sessions} sessions",
        reopened.load(Ordering::Relaxed),
        followed_sessions * DEFAULT_MAX_FOLLOWERS_PER_SESSION
    );
    fleet.check(&tally, &mut row).await?;
    if let Some((p50, p99)) = attack_health {
        row.latency = Some(("/healthz under attack".to_owned(), p50, p99));
    }
    Ok(row)
}
