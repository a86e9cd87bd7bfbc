//! A worker SIGKILLed at random moments while session trees cascade: each root calls two
//! children that run a slow server tool and suspend on a client call, so the root suspends; the
//! answers go in through the root, the root's resume resumes the children, and each child's end
//! answers and resumes its parent. Besides the campaign's invariants: no child started twice, no
//! chunk twice, and every `subagent_start` closed by its `subagent_end`.

use super::Fleet;
use crate::{
    Campaign, agents,
    load::{Accepted, Driver, Tally, lock},
    rng::Rng,
    table::Row,
};
use baton_client::{Client as _, HttpClient};
use baton_core::{ChunkKind, message::ToolOutcome};
use futures::StreamExt;
use serde_json::json;
use std::{
    collections::HashMap,
    time::{Duration, Instant},
};

/// How long one tree may take under the kills before the driver gives up on it.
const TREE_LIMIT: Duration = Duration::from_secs(240);

/// Where following a session stopped: its `suspended` chunk (sequence, awaited calls) or its
/// `end`; the sub-agent calls it started on the way, call id to child session.
async fn follow_to_rest(
    client: &HttpClient,
    session: &str,
    after: u64,
    children: &mut HashMap<String, String>,
) -> anyhow::Result<Option<(u64, Vec<String>)>> {
    // `follow` reconnects by itself across a lost stream.
    let mut chunks = client.follow(session, after);
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk?;
        // A root's stream carries its children's chunks too: only its own say where it rests.
        let own = chunk.header.agent_id == session;
        match chunk.kind {
            ChunkKind::SubagentStart {
                tool_call_id,
                sub_session_id,
                ..
            } => {
                children.insert(tool_call_id, sub_session_id);
            }
            ChunkKind::Suspended { tool_call_ids, .. } if own => {
                return Ok(Some((chunk.sequence, tool_call_ids)));
            }
            ChunkKind::End { .. } if own => return Ok(None),
            _ => {}
        }
    }
    anyhow::bail!("{session}: the stream ended before the run rested")
}

/// Drives one tree to its end: at each rest of the root, the children it awaits are followed to
/// their calls, each call answered through the root, and the root resumed.
async fn drive_tree(client: &HttpClient, tally: &Tally) -> anyhow::Result<()> {
    let began = Instant::now();
    let driver = Driver::new(client, tally);
    let root = driver
        .retrying(began, || client.start(agents::TREE_PARENT, "go"))
        .await?
        .session_id;
    lock(&tally.sessions).push(root.clone());
    let mut children = HashMap::new();
    let mut after = 0;
    let rest = tokio::time::timeout(TREE_LIMIT, async {
        while let Some((sequence, awaited)) =
            follow_to_rest(client, &root, after, &mut children).await?
        {
            after = sequence;
            for call in awaited {
                let Some(child) = children.get(&call).cloned() else {
                    anyhow::bail!("{root}: awaits {call}, which is no sub-agent call");
                };
                let mut grandchildren = HashMap::new();
                let Some((_, calls)) =
                    follow_to_rest(client, &child, 0, &mut grandchildren).await?
                else {
                    continue;
                };
                for call in calls {
                    let result = json!(format!("answer-{child}-{call}"));
                    let outcome = ToolOutcome::Result(result.clone());
                    driver
                        .retrying(began, || client.submit(&root, &call, &outcome))
                        .await?;
                    lock(&tally.accepted).push(Accepted {
                        session_id: child.clone(),
                        tool_call_id: call,
                        result,
                        at: Instant::now(),
                    });
                }
            }
            driver.retrying(began, || client.resume(&root)).await?;
        }
        Ok::<_, anyhow::Error>(())
    })
    .await;
    match rest {
        Ok(Ok(())) => Ok(()),
        Ok(Err(error)) => {
            lock(&tally.abandoned).push(format!("{root}: {error:#}"));
            Err(error)
        }
        Err(_) => {
            lock(&tally.abandoned).push(format!("{root}: no end in {TREE_LIMIT:?}"));
            anyhow::bail!("{root}: no end in {TREE_LIMIT:?}")
        }
    }
}

pub async fn run(campaign: &Campaign) -> anyhow::Result<Row> {
    let trees = campaign.scale(20, 20);
    let lanes = campaign.scale(10, 5);
    let mut row = Row::new("worker SIGKILL during tree cascades");
    let mut fleet = Fleet::start(campaign, &[], 1, 1).await?;
    let client = fleet.client(0);
    let tally = Tally::default();
    let mut rng = Rng::new(campaign.seed ^ 7);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let done = std::sync::atomic::AtomicBool::new(false);
    let driven = futures::future::join_all((0..lanes).map(|_| async {
        while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < trees {
            // A tree the driver gives up on is in the tally.
            let _ = drive_tree(&client, &tally).await;
        }
    }));
    let worker = &mut fleet.workers[0];
    let mut kills = 0;
    let chaos = async {
        while !done.load(std::sync::atomic::Ordering::Relaxed) {
            tokio::time::sleep(Duration::from_millis(rng.between(300, 1500))).await;
            worker.kill();
            kills += 1;
            tokio::time::sleep(Duration::from_millis(rng.between(0, 400))).await;
            worker.restart().await?;
        }
        Ok::<_, anyhow::Error>(())
    };
    let trees_done = async {
        driven.await;
        done.store(true, std::sync::atomic::Ordering::Relaxed);
    };
    let (_, chaos) = futures::join!(trees_done, chaos);
    chaos?;
    row.faults = format!("{kills} worker SIGKILLs, {trees} trees of 3 sessions, {lanes} at once");
    let tree_faults = crate::invariants::tree_faults(&fleet.nodes, &fleet.config.prefix).await?;
    row.require(
        tree_faults.is_empty(),
        format!(
            "tree faults: {} ({})",
            tree_faults.len(),
            tree_faults
                .iter()
                .take(3)
                .cloned()
                .collect::<Vec<_>>()
                .join("; ")
        ),
    );
    fleet.check(&tally, &mut row).await?;
    Ok(row)
}
