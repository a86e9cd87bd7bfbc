//! The `footprint` section: Redis bytes (`MEMORY USAGE`) of each key of a suspended session with
//! one client call, averaged over a few sessions, and their total beside the total without the log.

use baton_client::Client as _;
use baton_tests::Harness;
use std::collections::BTreeMap;

const SESSIONS: u32 = 5;

/// Redis bytes (`MEMORY USAGE`) of each key of `session`, by the key's last part (`state`,
/// `stream`, ...).
pub async fn key_bytes(harness: &Harness, session: &str) -> anyhow::Result<BTreeMap<String, u64>> {
    let client = redis::Client::open(baton_tests::redis_url())?;
    let mut connection = client.get_multiplexed_async_connection().await?;
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{}:{{{session}}}:*", harness.prefix))
        .query_async(&mut connection)
        .await?;
    let mut bytes = BTreeMap::new();
    for key in keys {
        let used: Option<u64> = redis::cmd("MEMORY")
            .arg("USAGE")
            .arg(&key)
            .query_async(&mut connection)
            .await?;
        let name = key.rsplit(':').next().unwrap_or_default().to_owned();
        *bytes.entry(name).or_default() += used.unwrap_or(0);
    }
    Ok(bytes)
}

/// Measures and prints the bytes per key of a suspended `bench_ask` session.
pub async fn print_footprint(harness: &Harness) -> anyhow::Result<()> {
    eprintln!("Redis bytes per key of a suspended session");
    let mut per_key: BTreeMap<String, u64> = BTreeMap::new();
    for _ in 0..SESSIONS {
        let started = harness.client.start("bench_ask", "go").await?;
        let session = started.session_id;
        harness.chunks_until_suspended(&session).await;
        for (name, bytes) in key_bytes(harness, &session).await? {
            *per_key.entry(name).or_default() += bytes;
        }
    }
    println!("| Redis key of a suspended session (one client call) | bytes |");
    println!("|---|---:|");
    let mut total = 0;
    for (name, bytes) in &per_key {
        let mean = bytes / u64::from(SESSIONS);
        total += mean;
        println!("| `{name}` | {mean} |");
    }
    let messages = per_key.get("messages").copied().unwrap_or(0) / u64::from(SESSIONS);
    println!("| total | {total} |");
    println!(
        "| total beyond the log (`messages`) | {} |",
        total - messages
    );
    println!();
    Ok(())
}
