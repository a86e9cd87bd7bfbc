//! The worker's memory over a soak: sessions started at a fixed rate against a `batond server`
//! and one `batond worker` (real processes, the benchmark's own Redis), each answering three
//! client calls; one session in `BENCH_SOAK_BIG_EVERY` (default 10) answers its first call with
//! a `BENCH_SOAK_BIG_MB` (default 10) MB string, so its log is that long for its next steps.
//! The worker's and the server's resident memory is sampled from `/proc` every 5 s. The short
//! form runs `BENCH_SOAK_SECS` (default 60); the 10-minute form is `BENCH_SOAK_SECS=600`. The
//! worker runs with `--log-cache-mib BENCH_SOAK_CACHE_MIB` (default: the flag's default).

use crate::{procs, remote};
use baton_client::HttpClient;
use baton_core::message::ToolOutcome;
use serde_json::json;
use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

const AGENT: &str = "soak_ask";
/// The client calls each soak session answers.
const ASKS: usize = 3;

/// One session's whole life: start, then every call answered (the first with `first`).
async fn one_session(client: &HttpClient, first: &ToolOutcome) -> anyhow::Result<()> {
    let small = ToolOutcome::Result(json!({"answer": "ok"}));
    let (session, mut pause) = remote::started(client, AGENT).await?;
    for turn in 1..=ASKS {
        let answer = if turn == 1 { first } else { &small };
        let call = remote::call_of_turn(AGENT, turn);
        (pause, _) = remote::round(client, &session, &call, answer, pause.last_sequence).await?;
    }
    anyhow::ensure!(pause.ended, "{session} did not end after {ASKS} answers");
    Ok(())
}

struct Sample {
    at: Duration,
    worker_kib: u64,
    server_kib: u64,
    done: usize,
}

pub async fn print_soak() -> anyhow::Result<()> {
    let seconds = procs::setting("BENCH_SOAK_SECS", 60);
    let rate = procs::setting("BENCH_SOAK_RATE", 4).max(1);
    let big_every = procs::setting("BENCH_SOAK_BIG_EVERY", 10).max(1);
    let big_mb = procs::setting("BENCH_SOAK_BIG_MB", 10);
    let redis = procs::own_redis(false).await?;
    let agents = procs::agents_file("soak", &remote::asking_agent(AGENT, ASKS, ""))?;
    let prefix = format!("soak{}", std::process::id());
    let task_queue = format!("bench-soak-{}", std::process::id());
    let mut flags = procs::common_flags(&redis.url(), &prefix, &task_queue, &agents);
    // Ended sessions leave Redis soon: the soak measures the worker, not Redis's growth.
    flags.extend(["--session-retention".to_owned(), "20".to_owned()]);
    let mut server_flags = flags.clone();
    let max_bytes = (big_mb + 1) * 1_000_000;
    server_flags.extend(["--max-result-bytes".to_owned(), max_bytes.to_string()]);
    let server = procs::launcher()?
        .server("soak-server", &server_flags)
        .await?;
    let mut worker_flags = flags;
    let cache_mib = std::env::var("BENCH_SOAK_CACHE_MIB").ok();
    if let Some(mib) = &cache_mib {
        worker_flags.extend(["--log-cache-mib".to_owned(), mib.clone()]);
    }
    let worker = procs::launcher()?.worker("soak-worker", &worker_flags)?;
    let client = HttpClient::new(server.base_url());
    let big = ToolOutcome::Result(json!("x".repeat((big_mb * 1_000_000) as usize)));
    let small = ToolOutcome::Result(json!({"answer": "ok"}));
    one_session(&client, &small).await?;

    let done = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(AtomicUsize::new(0));
    let began = Instant::now();
    let (worker_pid, server_pid) = (worker.pid(), server.pid());
    let samples: Arc<Mutex<Vec<Sample>>> = Arc::default();
    let sample = {
        let done = done.clone();
        move || Sample {
            at: began.elapsed(),
            worker_kib: worker_pid.and_then(procs::rss_kib).unwrap_or(0),
            server_kib: server_pid.and_then(procs::rss_kib).unwrap_or(0),
            done: done.load(Ordering::Relaxed),
        }
    };
    let sampler = {
        let (samples, sample) = (samples.clone(), sample.clone());
        tokio::spawn(async move {
            let mut every = tokio::time::interval(Duration::from_secs(5));
            loop {
                every.tick().await;
                let taken = sample();
                samples
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(taken);
            }
        })
    };
    let mut sessions = Vec::new();
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / rate as f64));
    let (big, small) = (Arc::new(big), Arc::new(small));
    for index in 0..seconds * rate {
        tick.tick().await;
        let first = if index.is_multiple_of(big_every) {
            big.clone()
        } else {
            small.clone()
        };
        let (client, done, failed) = (client.clone(), done.clone(), failed.clone());
        sessions.push(tokio::spawn(async move {
            match one_session(&client, &first).await {
                Ok(()) => done.fetch_add(1, Ordering::Relaxed),
                Err(error) => {
                    eprintln!("soak: {error:#}");
                    failed.fetch_add(1, Ordering::Relaxed)
                }
            };
        }));
    }
    for session in sessions {
        session.await?;
    }
    let load_seconds = began.elapsed().as_secs_f64();
    sampler.abort();
    let mut samples = std::mem::take(&mut *samples.lock().unwrap_or_else(|p| p.into_inner()));
    samples.push(sample());
    println!("\n## Soak: the worker's resident memory at a fixed mixed rate\n");
    println!(
        "{rate} sessions/s for {seconds} s ({ASKS} answers each; one in {big_every} answers a {big_mb} MB \
         result first), worker `--log-cache-mib {}`: {} sessions done, {} failed, in {load_seconds:.0} s.\n",
        cache_mib.as_deref().unwrap_or("64 (default)"),
        done.load(Ordering::Relaxed),
        failed.load(Ordering::Relaxed),
    );
    println!("| t s | worker RSS MiB | server RSS MiB | sessions done |");
    println!("|---:|---:|---:|---:|");
    // A row every 30 s, and the last.
    let count = samples.len();
    for (index, sample) in samples.iter().enumerate() {
        if index % 6 != 0 && index + 1 != count {
            continue;
        }
        println!(
            "| {:.0} | {:.1} | {:.1} | {} |",
            sample.at.as_secs_f64(),
            sample.worker_kib as f64 / 1024.0,
            sample.server_kib as f64 / 1024.0,
            sample.done
        );
    }
    // Flat: the highest RSS of the last third of the load beside that of its first third.
    let third = (count / 3).max(1);
    let highest = |part: &[Sample]| part.iter().map(|s| s.worker_kib).max().unwrap_or(0) as f64;
    let (first, last) = (
        highest(&samples[..third]),
        highest(&samples[count - third..]),
    );
    println!(
        "\nworker RSS, highest of the last third ÷ highest of the first third: {:.1} MiB ÷ {:.1} MiB = {:.2}×",
        last / 1024.0,
        first / 1024.0,
        last / first.max(1.0)
    );
    drop(worker);
    drop(server);
    procs::remove_redis(redis);
    Ok(())
}
