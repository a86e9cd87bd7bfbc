//! Redis Cluster: three masters on loopback, created with `redis-cli --cluster create`, and the
//! campaign's mixed sessions run with the Baton processes' Redis URL pointing at the cluster.
//! Every script's keys share one slot per session tree, so a cluster-aware store would run them
//! all; the invariants read each master's sessions, and the zombie sweep's scan must find quiet
//! sessions on every master.

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
    let (found, made) =
        sweep_reads_every_master(&fleet.config.redis_url, &fleet.config.prefix).await?;
    row.require(
        found == made,
        format!(
            "the zombie sweep's scan found {found} of {made} quiet sessions spread over the masters"
        ),
    );
    // The other masters live until the check has read them.
    drop(nodes);
    Ok(row)
}

/// Sessions left `active` with no workflow, under many roots (so in slots of every master): the
/// zombie sweep's scan must find them all, not only those of the node it is connected to.
/// Returns (found, made).
async fn sweep_reads_every_master(redis_url: &str, prefix: &str) -> anyhow::Result<(usize, usize)> {
    const QUIET: usize = 30;
    let store = baton_core::store::Store::connect(redis_url, prefix).await?;
    let mut made = std::collections::HashSet::new();
    for index in 0..QUIET {
        let session = format!("zombie-{index}");
        let address = baton_core::store::SessionAddress::root(&session);
        store
            .create_session(baton_core::store::NewSession {
                address: &address,
                agent_type: agents::MIXED,
                run_id: "r1",
                stream_id: "st1",
                workflow_id: &format!("agent__{}__{session}", agents::MIXED),
                messages: &[baton_core::Message::user("go")],
                max_chunks: 0,
            })
            .await?;
        made.insert(session);
    }
    let found = store
        .quiet_active_runs(0)
        .await?
        .into_iter()
        .filter(|run| made.contains(&run.address.session_id))
        .count();
    Ok((found, made.len()))
}
