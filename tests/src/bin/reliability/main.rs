//! Baton's fault campaign: starts its own processes on loopback (Redis servers, Baton servers and
//! workers, a Temporal dev server when a scenario restarts it), injects faults while sessions run,
//! checks the invariants after every scenario and prints one table.
//!
//! `cargo run --release -p baton-tests --bin reliability` runs the long form (about ten
//! minutes); `--short` runs scaled-down counts in a few minutes (CI runs it on the debug build);
//! `--only a,b` runs the named scenarios; `--allow-fail a,b` still shows those scenarios' failures
//! but leaves the exit status alone (for known open defects). It uses the Temporal dev server of
//! `BATON_TEST_TEMPORAL_ADDRESS` (`scripts/services.sh` starts it) and never touches the tests'
//! Redis. The exit status is non-zero when a scenario fails.

#![allow(unreachable_pub)]

mod agents;
mod events;
mod invariants;
mod load;
mod procs;
mod rng;
mod roles;
mod scenarios;
mod table;
mod temporal;

use procs::BatonConfig;
use std::path::PathBuf;

/// What every scenario shares.
pub struct Campaign {
    /// This binary, run again for the Baton processes.
    pub executable: PathBuf,
    /// Data directories and process logs.
    pub dir: PathBuf,
    /// The shared Temporal dev server.
    pub temporal_address: String,
    pub short: bool,
    pub seed: u64,
}

impl Campaign {
    /// `long` in the long form, `short` in the short one.
    pub fn scale(&self, long: usize, short: usize) -> usize {
        if self.short { short } else { long }
    }

    /// A configuration with a task queue and key prefix of its own.
    pub fn config(&self, redis_url: &str, temporal_address: &str) -> BatonConfig {
        BatonConfig {
            redis_url: redis_url.to_owned(),
            temporal_address: temporal_address.to_owned(),
            task_queue: baton_tests::unique("reliability"),
            prefix: baton_tests::unique("reliability"),
            resume_on_submit: false,
            keyed: false,
        }
    }
}

/// Every key matching `pattern` (SCAN, so a large Redis is not blocked).
pub async fn scan(
    connection: &mut impl redis::aio::ConnectionLike,
    pattern: &str,
) -> anyhow::Result<Vec<String>> {
    let mut cursor: u64 = 0;
    let mut keys = Vec::new();
    loop {
        let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(pattern)
            .arg("COUNT")
            .arg(1000)
            .query_async(connection)
            .await?;
        keys.extend(batch);
        if next == 0 {
            return Ok(keys);
        }
        cursor = next;
    }
}

fn main() -> anyhow::Result<()> {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    if arguments.first().map(String::as_str) == Some("role") {
        // A role runs on one thread, as `batond` does by default (`--threads 1`): the faults
        // are injected into the runtime users run.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let role = arguments.get(1).cloned().unwrap_or_default();
        return runtime.block_on(roles::run(&role));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let short = arguments.iter().any(|a| a == "--short");
    let list = |flag: &str| -> Option<Vec<String>> {
        arguments
            .iter()
            .position(|a| a == flag)
            .and_then(|i| arguments.get(i + 1))
            .map(|list| list.split(',').map(str::to_owned).collect())
    };
    let only = list("--only");
    // Scenarios that fail on a known open defect: still run and shown as failing, but they do
    // not fail the exit status (CI names them until the defect is fixed).
    let allowed_failures = list("--allow-fail").unwrap_or_default();
    let seed = std::env::var("RELIABILITY_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_ba70);
    let dir = std::env::temp_dir().join(format!("baton-reliability-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let campaign = Campaign {
        executable: std::env::current_exe()?,
        dir: dir.clone(),
        temporal_address: baton_tests::temporal_address(),
        short,
        seed,
    };
    eprintln!(
        "reliability: {} form, seed {seed}, logs in {}",
        if short { "short" } else { "long" },
        dir.display()
    );
    let rows = runtime.block_on(scenarios::run_all(&campaign, only.as_deref()));
    table::print(&rows);
    let failed = rows
        .iter()
        .any(|row| !row.passed && !allowed_failures.contains(&row.name));
    // Child processes are killed by their owners' drops; the runtime's blocked readers are not
    // waited for.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    if failed {
        std::process::exit(1);
    }
    Ok(())
}
