//! Where a loaded session's Redis bytes go (issue 27): `MEMORY USAGE` of each of a sample of
//! sessions' own keys by name, and of the search index's and the deadline index's keys divided by
//! the sessions they hold, beside `INFO memory`'s growth per session. The `bytes` section loads
//! `BENCH_BYTES_SESSIONS` (default 20,000) suspended sessions into a Redis of its own and prints
//! the table; the `million` section prints the same table at both of its counts.

use crate::{procs, remote};
use baton_core::{Agent, Store};
use std::{collections::BTreeMap, sync::Arc};

/// The last parts of a session's own keys (`<prefix>:{<root>}:<session>:<name>`).
const SESSION_KEYS: [&str; 17] = [
    "state",
    "stream",
    "messages",
    "checkpoints",
    "usage",
    "staged",
    "pending",
    "pendingRun",
    "answers",
    "ownership",
    "completed",
    "openDeadlines",
    "submitBucket",
    "children",
    "tree",
    "callIds",
    "revokedTokens",
];

/// Sessions whose own keys are measured one by one.
const SAMPLE: usize = 50;

async fn memory_usage(
    redis: &mut redis::aio::MultiplexedConnection,
    key: &str,
) -> anyhow::Result<u64> {
    let used: Option<u64> = redis::cmd("MEMORY")
        .arg("USAGE")
        .arg(key)
        .arg("SAMPLES")
        .arg(0)
        .query_async(redis)
        .await?;
    Ok(used.unwrap_or(0))
}

/// Bytes per session by key: each own key's mean over `sample`, the index's keys (all of them,
/// by kind: `records`, each term's set, `dirty`/`expiry`) and the deadline index divided by
/// `sessions`. Reads every key of the index (`SCAN` over `<prefix>:index:*`, a few hundred keys).
pub async fn breakdown(
    redis: &mut redis::aio::MultiplexedConnection,
    prefix: &str,
    sample: &[String],
    sessions: usize,
) -> anyhow::Result<BTreeMap<String, f64>> {
    let mut bytes: BTreeMap<String, f64> = BTreeMap::new();
    let sample = &sample[..sample.len().min(SAMPLE)];
    for session in sample {
        for name in SESSION_KEYS {
            let key = format!("{prefix}:{{{session}}}:{session}:{name}");
            let used = memory_usage(redis, &key).await?;
            if used > 0 {
                *bytes.entry(format!("session `{name}`")).or_default() +=
                    used as f64 / sample.len() as f64;
            }
        }
    }
    let deadline = memory_usage(redis, &format!("{prefix}:deadlineIndex")).await?;
    bytes.insert(
        "`deadlineIndex` (shared)".to_owned(),
        deadline as f64 / sessions as f64,
    );
    let mut cursor = 0u64;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(format!("{prefix}:index:*"))
            .arg("COUNT")
            .arg(10_000)
            .query_async(redis)
            .await?;
        for key in keys {
            let used = memory_usage(redis, &key).await?;
            let name = key
                .split_once("}:")
                .map_or(key.as_str(), |(_, name)| name)
                .to_owned();
            *bytes.entry(format!("index `{name}`")).or_default() += used as f64 / sessions as f64;
        }
        cursor = next;
        if cursor == 0 {
            break;
        }
    }
    Ok(bytes)
}

/// Prints a breakdown as a table, with its totals.
pub fn print_breakdown(title: &str, bytes: &BTreeMap<String, f64>) {
    println!("\n{title}\n");
    println!("| key | bytes per session |");
    println!("|---|---:|");
    for (name, used) in bytes {
        println!("| {name} | {used:.0} |");
    }
    let own: f64 = bytes
        .iter()
        .filter(|(name, _)| name.starts_with("session"))
        .map(|(_, used)| used)
        .sum();
    let index: f64 = bytes
        .iter()
        .filter(|(name, _)| name.starts_with("index"))
        .map(|(_, used)| used)
        .sum();
    let log = bytes.get("session `messages`").copied().unwrap_or(0.0);
    println!("| the session's own keys (log {log:.0}) | {own:.0} |");
    println!("| the search index | {index:.0} |");
    println!(
        "| total beyond the log (keys' own bytes; `INFO memory` adds the keyspace's tables) | {:.0} |",
        own + index - log
            + bytes
                .get("`deadlineIndex` (shared)")
                .copied()
                .unwrap_or(0.0)
    );
}

/// Loads `count` suspended sessions of `agent` (as the `million` section does), waits for their
/// index entries, and answers their ids.
pub async fn load_sessions(
    store: &Store,
    agent: &Agent,
    count: usize,
) -> anyhow::Result<Vec<String>> {
    let (_, sessions) = crate::million::load(store, agent, count, count).await?;
    Ok(sessions.into())
}

/// The `bytes` section.
pub async fn print_bytes() -> anyhow::Result<()> {
    let count = procs::setting("BENCH_BYTES_SESSIONS", 20_000) as usize;
    let redis = procs::own_redis(false).await?;
    let client = redis::Client::open(redis.url())?;
    let mut connection = client.get_multiplexed_async_connection().await?;
    let toml = remote::asking_agent("million_ask", 3, "");
    let agent: Agent = baton_core::config::agents_from_toml(&toml, &Default::default())?
        .into_iter()
        .next()
        .ok_or_else(|| anyhow::anyhow!("the agents file declares no agent"))?;
    let agent = Arc::new(agent);
    let store = Store::connect(&redis.url(), "baton".to_owned()).await?;
    let before = crate::million::used_memory(&mut connection).await?;
    let sessions = load_sessions(&store, &agent, count).await?;
    let grown = crate::million::used_memory(&mut connection)
        .await?
        .saturating_sub(before);
    let bytes = breakdown(&mut connection, "baton", &sessions, count).await?;
    print_breakdown(
        &format!(
            "Redis bytes of {count} suspended sessions of `million_ask` (`INFO memory`: {:.0} per session)",
            grown as f64 / count as f64
        ),
        &bytes,
    );
    procs::remove_redis(redis);
    Ok(())
}
