//! Redis Cluster: three masters on loopback, created with `redis-cli --cluster create`, and the
//! campaign's mixed sessions run with the Baton processes' Redis URL pointing at the cluster.
//! Every script's keys share one slot per session tree, so a cluster-aware store would run them
//! all; the invariants read each master's sessions.

use super::Fleet;
use crate::{
    Campaign, agents,
    load::{Driver, Tally},
    procs::RedisServer,
    table::Row,
};
use anyhow::Context;
use std::{sync::atomic::Ordering, time::Duration};

const MASTERS: usize = 3;

async fn cluster_ok(url: &str) -> anyhow::Result<bool> {
    let client = redis::Client::open(url)?;
    let mut connection = client.get_multiplexed_async_connection().await?;
    let info: String = redis::cmd("CLUSTER")
        .arg("INFO")
        .query_async(&mut connection)
        .await?;
    Ok(info.contains("cluster_state:ok"))
}

/// Three cluster-enabled Redis servers joined into one cluster with no replicas.
async fn start_cluster(campaign: &Campaign) -> anyhow::Result<Vec<RedisServer>> {
    let mut nodes = Vec::new();
    for _ in 0..MASTERS {
        nodes.push(
            RedisServer::start(
                &campaign.dir,
                &["--cluster-enabled", "yes", "--appendonly", "no"],
            )
            .await?,
        );
    }
    let status = std::process::Command::new("redis-cli")
        .arg("--cluster")
        .arg("create")
        .args(nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)))
        .args(["--cluster-replicas", "0", "--cluster-yes"])
        .stdout(std::process::Stdio::null())
        .status()
        .context("redis-cli must be installed")?;
    anyhow::ensure!(status.success(), "redis-cli --cluster create failed");
    for _ in 0..100 {
        let mut ready = true;
        for node in &nodes {
            ready &= cluster_ok(&node.url()).await.unwrap_or(false);
        }
        if ready {
            return Ok(nodes);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    anyhow::bail!("the cluster did not reach cluster_state:ok")
}

pub async fn run(campaign: &Campaign) -> anyhow::Result<Row> {
    let sessions = campaign.scale(20, 6);
    let mut row = Row::new("Redis Cluster, three masters");
    let mut nodes = start_cluster(campaign).await?;
    let urls: Vec<String> = nodes.iter().map(RedisServer::url).collect();
    let first = nodes.remove(0);
    let config = campaign.config(&first.url(), &campaign.temporal_address);
    let mut fleet = Fleet::on(campaign, first, config, 1, 1).await?;
    fleet.nodes = urls;
    let client = fleet.client(0);
    let tally = Tally::default();
    let driver = Driver {
        limit: Duration::from_secs(60),
        ..Driver::new(&client, &tally)
    };
    let outcomes =
        futures::future::join_all((0..sessions).map(|_| driver.session(agents::MIXED))).await;
    let finished = outcomes.iter().filter(|o| o.is_ok()).count();
    row.faults = format!("{sessions} sessions, Redis URL of one master");
    fleet.check(&tally, &mut row).await?;
    row.require(
        tally.server_errors.load(Ordering::Relaxed) == 0,
        format!(
            "{} answers 5xx ({} of them 503 store_unavailable), {} client retries; {finished} of {sessions} sessions finished",
            tally.server_errors.load(Ordering::Relaxed),
            tally.store_unavailable.load(Ordering::Relaxed),
            tally.retries.load(Ordering::Relaxed)
        ),
    );
    // The other masters live until the check has read them.
    drop(nodes);
    Ok(row)
}
