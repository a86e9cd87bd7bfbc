//! The scenarios, one module each, and what they share: a fleet of processes on one Redis and
//! task queue, and the load of sessions that runs while a fault is injected.

mod cluster;
mod duplicates;
mod exhaustion;
mod generated;
mod redis_freeze;
mod redis_kill;
mod soak;
mod temporal_restart;
mod tree_kill;
mod two_servers;
mod worker_kill;

use crate::{
    Campaign,
    load::{Driver, Tally, percentiles},
    procs::{BatonConfig, BatonProcess, RedisServer, Role},
    table::Row,
};
use baton_client::HttpClient;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Each scenario's name (for `--only`) and its function.
type Scenario = for<'a> fn(&'a Campaign) -> futures::future::BoxFuture<'a, anyhow::Result<Row>>;

fn all() -> Vec<(&'static str, Scenario)> {
    vec![
        ("worker-kill", |c| Box::pin(worker_kill::run(c))),
        ("tree-worker-kill", |c| Box::pin(tree_kill::run(c))),
        ("duplicate-submits", |c| Box::pin(duplicates::run(c))),
        ("two-servers", |c| Box::pin(two_servers::run(c))),
        ("redis-kill-always", |c| {
            Box::pin(redis_kill::run(c, "always"))
        }),
        ("redis-kill-everysec", |c| {
            Box::pin(redis_kill::run(c, "everysec"))
        }),
        ("redis-unreachable", |c| Box::pin(redis_freeze::run(c))),
        ("redis-cluster", |c| Box::pin(cluster::run(c))),
        ("generated-requests", |c| Box::pin(generated::run(c))),
        ("temporal-restart", |c| Box::pin(temporal_restart::run(c))),
        ("slow-loris-followers", |c| Box::pin(exhaustion::run(c))),
        ("soak", |c| Box::pin(soak::run(c))),
    ]
}

/// Runs every scenario (or those named in `only`) one after the other.
pub async fn run_all(campaign: &Campaign, only: Option<&[String]>) -> Vec<Row> {
    let mut rows = Vec::new();
    for (name, scenario) in all() {
        if only.is_some_and(|only| !only.iter().any(|o| o == name)) {
            continue;
        }
        eprintln!("reliability: {name}");
        let began = std::time::Instant::now();
        let mut row = match scenario(campaign).await {
            Ok(row) => row,
            Err(error) => Row::aborted(name, &error),
        };
        row.name = name.to_owned();
        eprintln!(
            "reliability: {name} {} in {:.0} s",
            if row.passed { "passed" } else { "FAILED" },
            began.elapsed().as_secs_f64()
        );
        rows.push(row);
    }
    rows
}

/// A Redis, servers and workers on one task queue and key prefix.
pub struct Fleet {
    pub redis: RedisServer,
    pub config: BatonConfig,
    pub servers: Vec<BatonProcess>,
    pub workers: Vec<BatonProcess>,
    /// The Redis servers holding the keys: the fleet's one, or a cluster's masters.
    pub nodes: Vec<String>,
}

impl Fleet {
    /// A fresh Redis (with `redis_args`), `servers` servers and `workers` workers.
    pub async fn start(
        campaign: &Campaign,
        redis_args: &[&str],
        servers: usize,
        workers: usize,
    ) -> anyhow::Result<Self> {
        Self::start_on(
            campaign,
            &campaign.temporal_address,
            redis_args,
            servers,
            workers,
        )
        .await
    }

    /// The same on the Temporal server at `temporal_address`.
    pub async fn start_on(
        campaign: &Campaign,
        temporal_address: &str,
        redis_args: &[&str],
        servers: usize,
        workers: usize,
    ) -> anyhow::Result<Self> {
        let redis = RedisServer::start(&campaign.dir, redis_args).await?;
        let config = campaign.config(&redis.url(), temporal_address);
        Self::on(campaign, redis, config, servers, workers).await
    }

    pub async fn on(
        campaign: &Campaign,
        redis: RedisServer,
        config: BatonConfig,
        servers: usize,
        workers: usize,
    ) -> anyhow::Result<Self> {
        let mut fleet = Self {
            nodes: vec![config.redis_url.clone()],
            redis,
            config,
            servers: Vec::new(),
            workers: Vec::new(),
        };
        for _ in 0..servers {
            fleet.servers.push(
                BatonProcess::start(
                    &campaign.executable,
                    &campaign.dir,
                    Role::Server,
                    &fleet.config,
                )
                .await?,
            );
        }
        for _ in 0..workers {
            fleet.workers.push(
                BatonProcess::start(
                    &campaign.executable,
                    &campaign.dir,
                    Role::Worker,
                    &fleet.config,
                )
                .await?,
            );
        }
        Ok(fleet)
    }

    /// A client of server `server`: with the campaign's operator key on a keyed fleet.
    pub fn client(&self, server: usize) -> HttpClient {
        let base = self.servers[server].base_url();
        if self.config.keyed {
            HttpClient::with_bearer(base, crate::roles::OPERATOR_KEY)
                .expect("the campaign's operator key is a header value")
        } else {
            HttpClient::new(base)
        }
    }

    /// Checks the invariants over this fleet's keys and the tally's accepted answers.
    pub async fn check(
        &self,
        tally: &Tally,
        row: &mut Row,
    ) -> anyhow::Result<crate::invariants::Findings> {
        let findings =
            crate::invariants::check(&self.nodes, &self.config.prefix, &tally.accepted()).await?;
        row.invariants(&findings);
        let files: Vec<_> = self
            .servers
            .iter()
            .chain(&self.workers)
            .flat_map(|process| process.log_files.iter().cloned())
            .collect();
        crate::events::check(
            &tally.accepted(),
            &files,
            tally.retries.load(Ordering::Relaxed) > 0,
            row,
        );
        row.server_errors = tally.server_errors.load(Ordering::Relaxed);
        let abandoned = tally.abandoned();
        row.require(
            abandoned.is_empty(),
            format!(
                "{} sessions given up by the client (first: {})",
                abandoned.len(),
                abandoned.first().map(String::as_str).unwrap_or("")
            ),
        );
        if let Some((p50, p99)) = percentiles(tally.submit_ms()) {
            row.latency = Some(("submit".to_owned(), p50, p99));
        }
        row.runs = findings.sessions.to_string();
        Ok(findings)
    }
}

/// Runs sessions of `agent` in `slots` parallel lanes, each lane starting its next session when
/// the last one ended, until `fault` has returned (every lane runs at least one session).
pub async fn under_load<F>(
    driver: &Driver<'_>,
    agent: &str,
    slots: usize,
    fault: F,
) -> anyhow::Result<usize>
where
    F: Future<Output = anyhow::Result<()>>,
{
    let done = AtomicBool::new(false);
    let sessions = AtomicUsize::new(0);
    let lanes = futures::future::join_all((0..slots).map(|_| async {
        loop {
            // A session the driver gives up on is in the tally; the lane goes on.
            let _ = driver.session(agent).await;
            sessions.fetch_add(1, Ordering::Relaxed);
            if done.load(Ordering::Relaxed) {
                break;
            }
        }
    }));
    let fault = async {
        let outcome = fault.await;
        done.store(true, Ordering::Relaxed);
        outcome
    };
    let (_, outcome) = futures::join!(lanes, fault);
    outcome?;
    Ok(sessions.load(Ordering::Relaxed))
}
