//! Two `batond` binaries side by side (`BENCH_PAIR_A`, `BENCH_PAIR_B`): each runs as `batond
//! dev` with a Redis of its own and its own sessions, and their rounds run at the same time, so
//! both meet the same machine. On a shared machine whose speed drifts by a third within minutes,
//! runs of one binary after the other differ more than a change of a few percent does; a pair
//! run together does not. Each repeat starts fresh sessions for both and prints the CPU a round
//! of each process and of each Redis; the last line is the median of B's own CPU over A's.
//! `BENCH_PAIR_SESSIONS` sessions each (default 10), `BENCH_PAIR_ROUNDS` rounds each a repeat
//! (default 1,000), `BENCH_PAIR_REPEATS` repeats (default 4). Giving the same binary twice shows
//! what the pairing leaves of the noise.

use crate::{
    procs::{self, Batond, RedisServer},
    remote,
    rounds::{AGENT, Figures, MOST_ROUNDS, api_rounds, suspended_sessions},
};
use anyhow::Context;
use baton_client::HttpClient;
use std::{path::PathBuf, time::Duration};

fn number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(default)
}

/// One side of the pair: its binary, its process and its Redis.
struct Side {
    label: String,
    redis: RedisServer,
    dev: Batond,
    client: HttpClient,
}

impl Side {
    async fn start(label: &str, binary: PathBuf, agents: &std::path::Path) -> anyhow::Result<Self> {
        let redis = procs::own_redis(false).await?;
        let id = format!("{}{label}", std::process::id());
        let flags = procs::common_flags(
            &redis.url(),
            &format!("pair{id}"),
            &format!("bench-pair-{id}"),
            agents,
        );
        let launcher = baton_tests::procs::BatondLauncher::new(binary, procs::run_dir());
        let dev = launcher.dev(&format!("pair-{label}"), &flags).await?;
        let client = HttpClient::new(dev.base_url());
        Ok(Self {
            label: label.to_owned(),
            redis,
            dev,
            client,
        })
    }

    /// `sessions` fresh sessions answering `rounds` rounds in all, metered.
    async fn rounds(&self, sessions: usize, rounds: usize) -> anyhow::Result<Figures> {
        let started = suspended_sessions(&self.client, sessions).await?;
        let meter = [("batond", self.dev.pid()), ("redis", self.redis.pid())];
        let each = (rounds / sessions).clamp(1, MOST_ROUNDS - 1);
        api_rounds(&self.client, started, each, &meter).await
    }
}

/// The binary named by `variable`.
fn binary(variable: &str) -> anyhow::Result<PathBuf> {
    std::env::var_os(variable)
        .map(PathBuf::from)
        .with_context(|| format!("the pair section compares two batond binaries: set {variable}"))
}

pub async fn print_pair() -> anyhow::Result<()> {
    let (a, b) = (binary("BENCH_PAIR_A")?, binary("BENCH_PAIR_B")?);
    let sessions = number("BENCH_PAIR_SESSIONS", 10).max(1);
    let rounds = number("BENCH_PAIR_ROUNDS", 1000);
    let repeats = number("BENCH_PAIR_REPEATS", 4).max(1);
    let agents = procs::agents_file("pair", &remote::asking_agent(AGENT, MOST_ROUNDS, ""))?;
    let sides = [
        Side::start("a", a.clone(), &agents).await?,
        Side::start("b", b.clone(), &agents).await?,
    ];
    // Their workers poll before the first session starts.
    tokio::time::sleep(Duration::from_secs(2)).await;
    println!("\n## Two batond binaries side by side\n");
    println!(
        "A is `{}`, B `{}`: each `batond dev` with a Redis of its own, {sessions} sessions each, \
         their rounds at the same time; CPU ms a round.\n",
        a.display(),
        b.display()
    );
    println!("| repeat | side | rounds/s | batond | redis | own |");
    println!("|---:|---|---:|---:|---:|---:|");
    let mut ratios = Vec::with_capacity(repeats);
    for repeat in 1..=repeats {
        let (first, second) = futures::try_join!(
            sides[0].rounds(sessions, rounds),
            sides[1].rounds(sessions, rounds)
        )?;
        let mut own = [0.0; 2];
        for (index, (side, figures)) in sides.iter().zip([&first, &second]).enumerate() {
            let (batond, redis) = (
                figures.cpu_ms_per_round("batond"),
                figures.cpu_ms_per_round("redis"),
            );
            own[index] = batond + redis;
            println!(
                "| {repeat} | {} | {:.1} | {batond:.3} | {redis:.3} | {:.3} |",
                side.label,
                figures.rounds_per_second(),
                own[index]
            );
        }
        ratios.push(own[1] / own[0]);
    }
    let shown: Vec<String> = ratios.iter().map(|ratio| format!("{ratio:.3}")).collect();
    ratios.sort_by(f64::total_cmp);
    let middle = ratios.len() / 2;
    let median = if ratios.len() % 2 == 0 {
        (ratios[middle - 1] + ratios[middle]) / 2.0
    } else {
        ratios[middle]
    };
    println!(
        "\nB's own CPU a round ÷ A's, by repeat: {} (median {median:.3}).",
        shown.join(", ")
    );
    for side in sides {
        procs::remove_redis(side.redis);
    }
    Ok(())
}
