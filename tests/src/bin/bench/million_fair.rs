//! The `million` section's fair submit figure (issue 27): a reference population of 1,000
//! suspended sessions in a second Redis of its own (the same settings: append-only file on) behind
//! a second `batond server`, and submits alternated between it and the 1,000,000-session Redis,
//! one of each in turn (which goes first alternating too), so the machine's load at each moment
//! hits both alike; beside them what the two Redis servers say: `PING` round trips taken the
//! same way, `INFO commandstats` (the submit's `EVALSHA` and every command, µs per call inside
//! Redis) and the slow log, each reset before the alternated submits. Then the first pages of
//! the sessions search and of the inbox, alternated the same way.

use crate::{
    procs::{self, Batond},
    remote, summary,
};
use baton_client::{Client as _, HttpClient};
use baton_core::{Agent, Store, message::ToolOutcome};
use serde_json::json;
use std::{collections::VecDeque, path::Path, time::Instant};

/// The reference population's size.
pub const REFERENCE: usize = 1_000;

/// The second Redis, its server and its sessions not answered yet.
pub struct Reference {
    redis: procs::RedisServer,
    store: Store,
    server: Batond,
    connection: redis::aio::MultiplexedConnection,
    sessions: VecDeque<String>,
}

/// Starts the second Redis, loads the reference population into it through the loader and
/// starts its `batond server` with the section's flags.
pub async fn reference(
    agent: &Agent,
    prefix: &str,
    task_queue: &str,
    agents: &Path,
) -> anyhow::Result<Reference> {
    let redis = procs::own_redis(true).await?;
    let connection = redis::Client::open(redis.url())?
        .get_multiplexed_async_connection()
        .await?;
    let store = Store::connect(&redis.url(), prefix.to_owned()).await?;
    let sessions = crate::bytes::load_sessions(&store, agent, REFERENCE)
        .await?
        .into();
    let flags = procs::common_flags(&redis.url(), prefix, task_queue, agents);
    let server = procs::launcher()?
        .server("million-reference-server", &flags)
        .await?;
    Ok(Reference {
        redis,
        store,
        server,
        connection,
        sessions,
    })
}

/// What the alternated round measured.
pub struct Fair {
    submits: (Vec<f64>, Vec<f64>),
    pings: (Vec<f64>, Vec<f64>),
    /// The sessions search's first pages, then the inbox's: (reference, big) ms each.
    pages: [(Vec<f64>, Vec<f64>); 2],
    /// Per Redis: `EVALSHA`'s µs per call and calls, every command's µs per call and calls,
    /// slow log entries.
    stats: [Stats; 2],
    load: String,
}

async fn reset_stats(redis: &mut redis::aio::MultiplexedConnection) -> anyhow::Result<()> {
    let () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query_async(redis)
        .await?;
    let () = redis::cmd("SLOWLOG")
        .arg("RESET")
        .query_async(redis)
        .await?;
    Ok(())
}

/// What one Redis says of the alternated round.
struct Stats {
    evalsha_usec: f64,
    evalsha_calls: f64,
    all_usec: f64,
    all_calls: f64,
    slow: u64,
}

/// `EVALSHA`'s µs per call and calls, every command's, and the slow log's length.
async fn stats(redis: &mut redis::aio::MultiplexedConnection) -> anyhow::Result<Stats> {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(redis)
        .await?;
    let (mut evalsha_usec, mut evalsha_calls, mut calls, mut usec) = (f64::NAN, 0.0, 0.0, 0.0);
    for line in info.lines() {
        let Some((name, fields)) = line.split_once(':') else {
            continue;
        };
        let field = |wanted: &str| {
            fields.split(',').find_map(|pair| {
                let (key, value) = pair.split_once('=')?;
                (key == wanted).then(|| value.parse::<f64>().ok()).flatten()
            })
        };
        if name == "cmdstat_evalsha" {
            evalsha_usec = field("usec_per_call").unwrap_or(f64::NAN);
            evalsha_calls = field("calls").unwrap_or(0.0);
        }
        calls += field("calls").unwrap_or(0.0);
        usec += field("usec").unwrap_or(0.0);
    }
    let slow: u64 = redis::cmd("SLOWLOG").arg("LEN").query_async(redis).await?;
    Ok(Stats {
        evalsha_usec,
        evalsha_calls,
        all_usec: usec / calls.max(1.0),
        all_calls: calls,
        slow,
    })
}

async fn submit_ms(client: &HttpClient, session: &str) -> anyhow::Result<f64> {
    let answer = ToolOutcome::Result(json!({"answer": "ok"}));
    let call = remote::call_of_turn(crate::million::AGENT, 1);
    let began = Instant::now();
    client.submit(session, &call, &answer).await?;
    Ok(began.elapsed().as_secs_f64() * 1000.0)
}

async fn ping_ms(redis: &mut redis::aio::MultiplexedConnection) -> anyhow::Result<f64> {
    let began = Instant::now();
    let _: String = redis::cmd("PING").query_async(redis).await?;
    Ok(began.elapsed().as_secs_f64() * 1000.0)
}

/// `count` submits to each population, alternated, and as many `PING`s to each Redis.
pub async fn alternate(
    reference: &mut Reference,
    big: &HttpClient,
    big_redis: &mut redis::aio::MultiplexedConnection,
    big_sessions: &mut VecDeque<String>,
    count: usize,
) -> anyhow::Result<Fair> {
    let small = HttpClient::new(reference.server.base_url());
    reset_stats(&mut reference.connection).await?;
    reset_stats(big_redis).await?;
    let (mut small_ms, mut big_ms) = (Vec::with_capacity(count), Vec::with_capacity(count));
    for turn in 0..count {
        let small_session = reference
            .sessions
            .pop_back()
            .ok_or_else(|| anyhow::anyhow!("too few reference sessions"))?;
        let big_session = big_sessions
            .pop_back()
            .ok_or_else(|| anyhow::anyhow!("too few sessions kept"))?;
        if turn % 2 == 0 {
            small_ms.push(submit_ms(&small, &small_session).await?);
            big_ms.push(submit_ms(big, &big_session).await?);
        } else {
            big_ms.push(submit_ms(big, &big_session).await?);
            small_ms.push(submit_ms(&small, &small_session).await?);
        }
    }
    let stats = [
        stats(&mut reference.connection).await?,
        stats(big_redis).await?,
    ];
    let (mut small_ping, mut big_ping) = (Vec::with_capacity(count), Vec::with_capacity(count));
    for _ in 0..count {
        small_ping.push(ping_ms(&mut reference.connection).await?);
        big_ping.push(ping_ms(big_redis).await?);
    }
    let pages = alternated_pages(reference, big, count).await?;
    let load = std::fs::read_to_string("/proc/loadavg")
        .map(|text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default();
    Ok(Fair {
        submits: (small_ms, big_ms),
        pings: (small_ping, big_ping),
        pages,
        stats,
        load,
    })
}

/// The first pages of the sessions search and of the inbox, `count` of each from each server,
/// alternated as the submits are, once the reference's index has followed its submits.
async fn alternated_pages(
    reference: &Reference,
    big: &HttpClient,
    count: usize,
) -> anyhow::Result<[(Vec<f64>, Vec<f64>); 2]> {
    crate::million::index_settled(&reference.store).await?;
    let small = HttpClient::new(reference.server.base_url());
    let mut pages: [(Vec<f64>, Vec<f64>); 2] = Default::default();
    for (inbox, (small_ms, big_ms)) in [false, true].into_iter().zip(&mut pages) {
        let query = if inbox {
            crate::million::inbox_query()
        } else {
            crate::million::search_query()
        };
        let page_ms = |client: &HttpClient| {
            let (client, query) = (client.clone(), &query);
            async move {
                let began = Instant::now();
                if inbox {
                    client.pending(query).await?;
                } else {
                    client.sessions(query).await?;
                }
                anyhow::Ok(began.elapsed().as_secs_f64() * 1000.0)
            }
        };
        for turn in 0..count {
            if turn % 2 == 0 {
                small_ms.push(page_ms(&small).await?);
                big_ms.push(page_ms(big).await?);
            } else {
                big_ms.push(page_ms(big).await?);
                small_ms.push(page_ms(&small).await?);
            }
        }
    }
    Ok(pages)
}

/// The rows of the alternated round (`total`: the big population's count).
pub fn print_fair(fair: Fair, total: usize) {
    let Fair {
        submits,
        pings,
        pages,
        stats,
        load,
    } = fair;
    let count = submits.0.len();
    let (s50, s99, _) = summary(submits.0);
    let (b50, b99, _) = summary(submits.1);
    println!(
        "| submit over HTTP p50 / p99 ms, **alternated** with a second Redis of {REFERENCE} sessions ({count} each; load average {load}) | {s50:.2} / {s99:.2} | {b50:.2} / {b99:.2} | {:.2}× / {:.2}× | p50 ≤ 1.2× |",
        b50 / s50,
        b99 / s99
    );
    let (p50, _, _) = summary(pings.0);
    let (q50, _, _) = summary(pings.1);
    println!(
        "| `PING` round trip p50 ms, alternated ({count} each) | {p50:.3} | {q50:.3} | {:.2}× | |",
        q50 / p50
    );
    for (name, (small, big)) in crate::million::PAGE_NAMES.into_iter().zip(pages) {
        let how = format!("**alternated** with the second Redis, {} each", small.len());
        crate::million::print_page_row(name, &how, small, big);
    }
    let [small, big] = stats;
    let per = count as f64;
    println!(
        "| inside Redis during the alternated submits (`INFO commandstats`, the submit's script and the index writes after it): `EVALSHA` µs per call (calls per submit) / every command µs per call (commands per submit) / slow-log entries | {:.1} ({:.1}) / {:.1} ({:.1}) / {} | {:.1} ({:.1}) / {:.1} ({:.1}) / {} | {:.2}× / {:.2}× | ({REFERENCE} vs {total} sessions) |",
        small.evalsha_usec,
        small.evalsha_calls / per,
        small.all_usec,
        small.all_calls / per,
        small.slow,
        big.evalsha_usec,
        big.evalsha_calls / per,
        big.all_usec,
        big.all_calls / per,
        big.slow,
        big.evalsha_usec / small.evalsha_usec,
        big.all_usec / small.all_usec
    );
}

/// With `BENCH_MILLION_HOLD` set, keeps both Redis servers and their `batond server`s up after
/// the alternated figures, for a look from outside (`redis-cli -p <port> SLOWLOG GET`, pages
/// through the servers), until a line comes on the benchmark's stdin.
pub async fn hold(
    reference: &Reference,
    big_redis: &procs::RedisServer,
    big_server: &Batond,
) -> anyhow::Result<()> {
    if std::env::var_os("BENCH_MILLION_HOLD").is_none() {
        return Ok(());
    }
    eprintln!(
        "million: holding (BENCH_MILLION_HOLD). The million's Redis on port {} behind {}; the \
         reference's ({REFERENCE} sessions) on port {} behind {}. Press Enter to go on.",
        big_redis.port,
        big_server.base_url(),
        reference.redis.port,
        reference.server.base_url(),
    );
    let mut line = String::new();
    tokio::io::AsyncBufReadExt::read_line(
        &mut tokio::io::BufReader::new(tokio::io::stdin()),
        &mut line,
    )
    .await?;
    Ok(())
}

/// Stops the reference server and removes its Redis.
pub fn finish(reference: Reference) {
    let Reference { redis, server, .. } = reference;
    drop(server);
    procs::remove_redis(redis);
}
