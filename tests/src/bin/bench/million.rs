//! A million suspended sessions (`BENCH_MILLION`, default 1,000,000) in the benchmark's own
//! Redis (append-only file on), written by the loader (`baton_tests::loader`: the store's own
//! scripts, what a real suspension leaves). Figures, each beside its value at 1,000 in the same
//! run: bytes per session (`INFO memory`), the time to create them, submit p50/p99 and answer →
//! next model step p50 through a `batond server` and `batond worker`; at the full count the
//! Redis CPU of the worker's deadline and zombie sweeps per minute, and after a Redis restart
//! from its append-only file the time until a submit is accepted again; the first page of the
//! sessions search and of the inbox over HTTP at both counts (the loader writes each session's
//! index entries as a real suspension does).

use crate::{bytes, million_fair, procs, remote, summary};
use baton_client::wire::search::SessionSearch;
use baton_client::{Client as _, HttpClient};
use baton_core::{Agent, Store, message::ToolOutcome, store::Status};
use futures::StreamExt;
use serde_json::json;
use std::{
    collections::VecDeque,
    sync::Arc,
    time::{Duration, Instant},
};

pub const AGENT: &str = "million_ask";
/// Sessions measured per figure (distinct sessions, each answered once).
const SUBMITS: usize = 300;
const RESUMES: usize = 60;
/// Loader writes in flight.
const IN_FLIGHT: usize = 256;

async fn info_field(
    redis: &mut redis::aio::MultiplexedConnection,
    section: &str,
    field: &str,
) -> anyhow::Result<String> {
    let info: String = redis::cmd("INFO").arg(section).query_async(redis).await?;
    info.lines()
        .find_map(|line| line.strip_prefix(&format!("{field}:")))
        .map(|v| v.trim().to_owned())
        .ok_or_else(|| anyhow::anyhow!("INFO {section} has no {field}"))
}

pub async fn used_memory(redis: &mut redis::aio::MultiplexedConnection) -> anyhow::Result<u64> {
    Ok(info_field(redis, "memory", "used_memory").await?.parse()?)
}

/// Loads `count` sessions, `IN_FLIGHT` at a time, and waits for their index entries; keeps the
/// ids of the last `keep`.
pub async fn load(
    store: &Store,
    agent: &Agent,
    count: usize,
    keep: usize,
) -> anyhow::Result<(Duration, VecDeque<String>)> {
    let began = Instant::now();
    let mut kept = VecDeque::with_capacity(keep);
    let retried = std::sync::atomic::AtomicUsize::new(0);
    let mut loads = futures::stream::iter(0..count)
        .map(|_| load_one(store, agent, &retried))
        .buffer_unordered(IN_FLIGHT);
    let mut done = 0usize;
    while let Some(loaded) = loads.next().await {
        let loaded = loaded?;
        if kept.len() == keep {
            kept.pop_front();
        }
        kept.push_back(loaded.session_id);
        done += 1;
        if done.is_multiple_of(100_000) {
            eprintln!(
                "million: {done} loaded in {:.0} s",
                began.elapsed().as_secs_f64()
            );
        }
    }
    index_settled(store).await?;
    drop(loads);
    let retried = retried.into_inner();
    if retried > 0 {
        eprintln!(
            "million: {retried} starts refused as late (machine or disk stalled), loaded again"
        );
    }
    Ok((began.elapsed(), kept))
}

/// One loaded session. A start that reached Redis after its write deadline (a stalled machine
/// or disk: the 256 writes in flight wait behind it) was refused and wrote nothing; it is
/// tried again, with new ids, as a client would, at most 5 times.
async fn load_one(
    store: &Store,
    agent: &Agent,
    retried: &std::sync::atomic::AtomicUsize,
) -> anyhow::Result<baton_tests::loader::Loaded> {
    let mut tries = 0;
    loop {
        let loaded = baton_tests::loader::load_suspended(
            store,
            agent,
            "go",
            Some(baton_activities::DEFAULT_DEADLINE_HORIZON),
            baton_worker::state::DEFAULT_STREAM_MAX_CHUNKS,
        )
        .await;
        match loaded {
            Err(error) if tries < 5 && error.to_string().contains("after its deadline") => {
                tries += 1;
                retried.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            loaded => return loaded,
        }
    }
}

/// Waits until the search index has followed every session written (its entries are written
/// after each change, as for a real run), so the memory and the pages count them.
pub async fn index_settled(store: &Store) -> anyhow::Result<()> {
    let settled = Instant::now();
    while store.index_marks().await? > 0 {
        anyhow::ensure!(
            settled.elapsed() < Duration::from_secs(900),
            "the search index did not follow the load"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(())
}

/// Submit latency (ms) of `SUBMITS` sessions' first call, and answer → next model step (ms) of
/// `RESUMES` others (submit, resume, the resumed step's `step_start`).
async fn latencies(
    client: &HttpClient,
    sessions: &mut VecDeque<String>,
) -> anyhow::Result<(Vec<f64>, Vec<f64>)> {
    let answer = ToolOutcome::Result(json!({"answer": "ok"}));
    let call = remote::call_of_turn(AGENT, 1);
    let mut submits = Vec::with_capacity(SUBMITS);
    for _ in 0..SUBMITS {
        let session = sessions
            .pop_back()
            .ok_or_else(|| anyhow::anyhow!("too few sessions kept"))?;
        let began = Instant::now();
        client.submit(&session, &call, &answer).await?;
        submits.push(began.elapsed().as_secs_f64() * 1000.0);
    }
    let mut steps = Vec::with_capacity(RESUMES);
    for _ in 0..RESUMES {
        let session = sessions
            .pop_back()
            .ok_or_else(|| anyhow::anyhow!("too few sessions kept"))?;
        let after = client.status(&session).await?.last_sequence;
        let (_, to_step) = remote::round(client, &session, &call, &answer, after).await?;
        steps.extend(to_step.map(|d| d.as_secs_f64() * 1000.0));
    }
    Ok((submits, steps))
}

/// Queries timed per page figure.
const PAGES: usize = 200;

/// The page figures' sessions search: `status` and `agent`, 20 rows.
pub fn search_query() -> SessionSearch {
    SessionSearch {
        status: Some(Status::SuspendedClientTool),
        agent: Some(AGENT.to_owned()),
        limit: 20,
        ..SessionSearch::default()
    }
}

/// The page figures' inbox query: `agent`, 20 rows.
pub fn inbox_query() -> SessionSearch {
    SessionSearch {
        agent: Some(AGENT.to_owned()),
        limit: 20,
        ..SessionSearch::default()
    }
}

/// First-page latencies (ms) over HTTP: the sessions search (`status` and `agent`) and the
/// inbox (`agent`), 20 rows each, `PAGES` queries each, once the index has followed every
/// change. Answers also the rows of the last page of each.
async fn first_pages(
    store: &Store,
    client: &HttpClient,
) -> anyhow::Result<(Vec<f64>, Vec<f64>, usize, usize)> {
    index_settled(store).await?;
    let (search, inbox) = (search_query(), inbox_query());
    let (mut sessions, mut pending) = (Vec::with_capacity(PAGES), Vec::with_capacity(PAGES));
    let (mut session_rows, mut pending_rows) = (0, 0);
    for _ in 0..PAGES {
        let began = Instant::now();
        session_rows = client.sessions(&search).await?.sessions.len();
        sessions.push(began.elapsed().as_secs_f64() * 1000.0);
        let began = Instant::now();
        pending_rows = client.pending(&inbox).await?.calls.len();
        pending.push(began.elapsed().as_secs_f64() * 1000.0);
    }
    Ok((sessions, pending, session_rows, pending_rows))
}

/// The rows of the page figures, at the small and the full count.
fn print_index_pages(
    small: (Vec<f64>, Vec<f64>, usize, usize),
    big: (Vec<f64>, Vec<f64>, usize, usize),
) {
    let rows = [
        (small.0, big.0, small.2, big.2),
        (small.1, big.1, small.3, big.3),
    ];
    for (name, (small, big, small_rows, big_rows)) in PAGE_NAMES.into_iter().zip(rows) {
        let how = format!("{PAGES} queries; {small_rows} / {big_rows} rows");
        print_page_row(name, &how, small, big);
    }
}

/// The names of the two page figures: the sessions search's, then the inbox's.
pub const PAGE_NAMES: [&str; 2] = [
    "sessions search `GET /sessions?status=suspended_client_tool&agent=…&limit=20`",
    "inbox `GET /pending?agent=…&limit=20`",
];

/// One page figure's row: `name`, how it was timed, the p50 and p99 of each count and their ratios.
pub fn print_page_row(name: &str, how: &str, small: Vec<f64>, big: Vec<f64>) {
    let (s50, s99, _) = summary(small);
    let (b50, b99, _) = summary(big);
    println!(
        "| {name}, first page p50 / p99 ms ({how}) | {s50:.2} / {s99:.2} | {b50:.2} / {b99:.2} | {:.2}× / {:.2}× | p50 within 1.2× (issue 27), 1.5× (issue 24) |",
        b50 / s50,
        b99 / s99
    );
}

pub async fn print_million() -> anyhow::Result<()> {
    let total = procs::setting("BENCH_MILLION", 1_000_000) as usize;
    let small = 1_000usize.min(total);
    // The big load's last sessions serve the submits the old way and alternated, the resumes,
    // and the restart.
    let keep = 2 * SUBMITS + RESUMES + 50;
    let mut redis = procs::own_redis(true).await?;
    let client = redis::Client::open(redis.url())?;
    let mut connection = client.get_multiplexed_async_connection().await?;
    // The append-only file is rewritten once, after the load, not while it grows.
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("auto-aof-rewrite-percentage")
        .arg("0")
        .query_async(&mut connection)
        .await?;
    let toml = remote::asking_agent(AGENT, 3, "");
    let agents = procs::agents_file("million", &toml)?;
    let agent = baton_core::config::agents_from_toml(&toml, &Default::default())?
        .into_iter()
        .next()
        .ok_or_else(|| anyhow::anyhow!("the agents file declares no agent"))?;
    let agent = Arc::new(agent);
    let prefix = "baton".to_owned();
    let store = Store::connect(&redis.url(), prefix.clone()).await?;
    let before = used_memory(&mut connection).await?;

    let (small_time, mut small_sessions) = load(&store, &agent, small, keep).await?;
    let small_bytes = used_memory(&mut connection).await?.saturating_sub(before);
    let sample: Vec<String> = small_sessions.iter().cloned().collect();
    let small_breakdown = bytes::breakdown(&mut connection, &prefix, &sample, small).await?;
    let task_queue = format!("bench-million-{}", std::process::id());
    let mut reference = million_fair::reference(&agent, &prefix, &task_queue, &agents).await?;
    let mut flags = procs::common_flags(&redis.url(), &prefix, &task_queue, &agents);
    // The zombie sweep every 30 s (its grace halved), so a measured minute holds two passes.
    flags.extend(["--zombie-grace-secs".to_owned(), "60".to_owned()]);
    let server = procs::launcher()?.server("million-server", &flags).await?;
    let worker = procs::launcher()?.worker("million-worker", &flags)?;
    let http = HttpClient::new(server.base_url());
    tokio::time::sleep(Duration::from_secs(2)).await;
    let small_pages = first_pages(&store, &http).await?;
    let (small_submits, small_steps) = latencies(&http, &mut small_sessions).await?;
    // The Redis CPU of the sweeps is measured at both counts over the same window.
    let window = Duration::from_secs(procs::setting("BENCH_SWEEP_SECS", 90));
    let small_cpu = sweep_cpu(&redis, window).await;

    drop(worker);
    let (big_time, mut big_sessions) = load(&store, &agent, total - small, keep).await?;
    let messages_key = format!("baton:{{{0}}}:{0}:messages", big_sessions[0]);
    let message_bytes: u64 = redis::cmd("MEMORY")
        .arg("USAGE")
        .arg(&messages_key)
        .query_async::<Option<u64>>(&mut connection)
        .await?
        .unwrap_or(0);
    let big_bytes = used_memory(&mut connection).await?.saturating_sub(before);
    let keys: u64 = redis::cmd("DBSIZE").query_async(&mut connection).await?;
    let worker = procs::launcher()?.worker("million-worker-2", &flags)?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let big_pages = first_pages(&store, &http).await?;
    let (big_submits, big_steps) = latencies(&http, &mut big_sessions).await?;
    let fair = million_fair::alternate(
        &mut reference,
        &http,
        &mut connection,
        &mut big_sessions,
        SUBMITS,
    )
    .await?;
    million_fair::hold(&reference, &redis, &server).await?;
    million_fair::finish(reference);
    let big_cpu = sweep_cpu(&redis, window).await;
    let sample: Vec<String> = big_sessions.iter().cloned().collect();
    let big_breakdown = bytes::breakdown(&mut connection, &prefix, &sample, total).await?;

    println!("\n## A million suspended sessions\n");
    println!(
        "{total} sessions of `{AGENT}` (one client call each, deadline an hour away: in the deadline index), \
         {keys} keys; Redis {} on port {} with `appendonly yes`, `appendfsync everysec`.\n",
        info_field(&mut connection, "server", "redis_version").await?,
        redis.port
    );
    let per = |bytes: u64, count: usize| bytes as f64 / count as f64;
    println!("| figure | at {small} | at {total} | ratio | target |");
    println!("|---|---:|---:|---:|---|");
    println!(
        "| Redis bytes per session (`INFO memory` used_memory ÷ sessions) | {:.0} | {:.0} | {:.2}× | ≤ 4,096 beyond its messages ({message_bytes} bytes here: {:.0} beyond) |",
        per(small_bytes, small),
        per(big_bytes, total),
        per(big_bytes, total) / per(small_bytes, small),
        per(big_bytes, total) - message_bytes as f64,
    );
    println!(
        "| time to create (loader, {IN_FLIGHT} in flight) | {:.1} s ({:.0}/s) | {:.1} s ({:.0}/s) | | |",
        small_time.as_secs_f64(),
        small as f64 / small_time.as_secs_f64(),
        big_time.as_secs_f64(),
        (total - small) as f64 / big_time.as_secs_f64(),
    );
    let (s50, s99, _) = summary(small_submits);
    let (b50, b99, _) = summary(big_submits);
    println!(
        "| submit over HTTP p50 ms, the old way: at {small} before the load, at {total} after it ({SUBMITS} sessions) | {s50:.2} | {b50:.2} | {:.2}× | ≤ 1.2× |",
        b50 / s50
    );
    println!(
        "| submit over HTTP p99 ms | {s99:.2} | {b99:.2} | {:.2}× | |",
        b99 / s99
    );
    million_fair::print_fair(fair, total);
    let (r50, _, _) = summary(small_steps);
    let (q50, _, _) = summary(big_steps);
    println!(
        "| answer → next model step p50 ms ({RESUMES} sessions) | {r50:.1} | {q50:.1} | {:.2}× | ≤ 1.2× |",
        q50 / r50
    );
    print_index_pages(small_pages, big_pages);
    println!(
        "| Redis CPU of the worker's sweeps, % of a core (zombie every 30 s, deadline every 30 s; {} s window) | {:.2} | {:.2} | {} | < 5% (the zombie sweep here runs 5× as often as by default) |",
        window.as_secs(),
        small_cpu * 100.0,
        big_cpu * 100.0,
        if small_cpu > 1e-4 {
            format!("{:.1}×", big_cpu / small_cpu)
        } else {
            "–".to_owned()
        },
    );

    // Restart from the append-only file: rewritten once (as Redis would have done itself).
    let _: () = redis::cmd("BGREWRITEAOF")
        .query_async(&mut connection)
        .await
        .or_else(|e| {
            if e.to_string().contains("already") {
                Ok(())
            } else {
                Err(e)
            }
        })?;
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        if info_field(&mut connection, "persistence", "aof_rewrite_in_progress").await? == "0"
            && info_field(&mut connection, "persistence", "aof_rewrite_scheduled").await? == "0"
        {
            break;
        }
    }
    drop(worker);
    let session = big_sessions
        .pop_back()
        .ok_or_else(|| anyhow::anyhow!("too few sessions kept"))?;
    let answer = ToolOutcome::Result(json!({"answer": "ok"}));
    let killed = Instant::now();
    redis.kill_and_launch()?;
    let mut refused = 0;
    loop {
        match http
            .submit(&session, &remote::call_of_turn(AGENT, 1), &answer)
            .await
        {
            Ok(_) => break,
            Err(_) if killed.elapsed() < Duration::from_secs(900) => {
                refused += 1;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(error) => return Err(error.into()),
        }
    }
    let first_submit = killed.elapsed();
    procs::wait_for_redis(&redis.url(), Duration::from_secs(600)).await?;
    println!(
        "| Redis SIGKILLed and started again from its append-only file: first submit accepted after | – | {:.1} s ({refused} refused before) | | |",
        first_submit.as_secs_f64()
    );
    drop(server);
    procs::remove_redis(redis);
    bytes::print_breakdown(
        &format!("Where the bytes go at {small} sessions (`MEMORY USAGE`)"),
        &small_breakdown,
    );
    bytes::print_breakdown(
        &format!("Where the bytes go at {total} sessions (`MEMORY USAGE`)"),
        &big_breakdown,
    );
    Ok(())
}

/// The share of a core Redis used over `window` while the worker's sweeps ran (nothing else
/// writes then).
async fn sweep_cpu(redis: &procs::RedisServer, window: Duration) -> f64 {
    let Some(pid) = redis.pid() else {
        return f64::NAN;
    };
    let began = procs::cpu_seconds(pid).unwrap_or(0.0);
    tokio::time::sleep(window).await;
    (procs::cpu_seconds(pid).unwrap_or(0.0) - began) / window.as_secs_f64()
}
