//! Baton's benchmark: per-step framework overhead of an agent run with the scripted model, beside
//! the bare Temporal round trip of one empty activity measured in the same process and run;
//! human-in-the-loop figures; sessions per second with 20 concurrent sessions; Temporal history
//! bytes per step; SSE fan-out; Redis bytes per key of a suspended session; the first page of a
//! filtered search by indexed sessions; where a loaded session's Redis bytes go. One module per
//! section.
//!
//! Run it in release against the dev server started with the fast transfer-queue setting:
//! `source scripts/services.sh && cargo run --release -p baton-tests --bin bench`.
//! `--only <section>[,<section>…]` (or `BENCH_ONLY`) runs some sections: `steps`, `submit`,
//! `hitl`, `tree`, `throughput`, `fanout`, `footprint`, `search` (`BENCH_SEARCH_SIZES`, default
//! `1000,100000`, the index sizes), and the process sections `rounds`, `soak` and `million`
//! (real `batond` processes and a Redis of their own, see `procs.rs`), `bytes` (loaded sessions
//! in a Redis of its own, `BENCH_BYTES_SESSIONS`, default 20,000; see `bytes.rs`) and `remote` (a
//! remote sub-agent beside a local one, two in-process services), `mcp` (an MCP tool call
//! beside a native one; `BENCH_MCP_CALLS`, default 500), `floor` (the Temporal SDK's own CPU for
//! a workflow of a round's shape; `BENCH_FLOOR_WORKFLOWS`, default 3,000). `BENCH_STEPS` (default
//! 200) sets the steps measured per
//! configuration, `BENCH_FOLLOWERS` (default 1000) the SSE followers of the fan-out measurement.

#![allow(unreachable_pub)]

mod bare;
mod bytes;
mod fanout;
mod floor;
mod footprint;
mod hitl;
mod mcp;
mod million;
mod million_fair;
mod pair;
mod phases;
mod procs;
mod remote;
mod remote_child;
mod round_phases;
mod rounds;
mod rounds_one_process;
mod search;
mod soak;
mod steps;
mod submit;
mod throughput;
mod tree;

use baton_core::AgentRegistry;
use baton_tests::{Harness, WorkerThread};
use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

/// The benchmark's allocator is `batond`'s, so that what it measures in process (and the floor's
/// child, which stands for `batond dev`) allocates as `batond` does.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

type Marks = Arc<Mutex<Vec<Instant>>>;

/// The sections, in the order they run.
const SECTIONS: [&str; 16] = [
    "steps",
    "submit",
    "hitl",
    "tree",
    "throughput",
    "fanout",
    "footprint",
    "search",
    "rounds",
    "pair",
    "floor",
    "soak",
    "million",
    "bytes",
    "remote",
    "mcp",
];

/// The sections that run real `batond` processes against a Redis of their own (`procs.rs`);
/// they need no in-process server and run first.
/// `remote` is run with them: it sets up its own two in-process services.
const PROCESS_SECTIONS: [&str; 8] = [
    "rounds", "pair", "floor", "soak", "million", "remote", "bytes", "mcp",
];

fn gaps_ms(marks: &[Instant]) -> Vec<f64> {
    marks
        .windows(2)
        .map(|w| (w[1] - w[0]).as_secs_f64() * 1000.0)
        .collect()
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index]
}

fn summary(mut samples: Vec<f64>) -> (f64, f64, usize) {
    samples.sort_by(|a, b| a.total_cmp(b));
    (
        percentile(&samples, 0.5),
        percentile(&samples, 0.99),
        samples.len(),
    )
}

/// The settings of the benchmark's workers: the tests' own, with the deadline horizon of
/// `BATON_DEADLINE_HORIZON_SECS` when set (0: every suspended run starts its deadline workflow at
/// once, as before the deadline index).
fn worker_settings(task_queue: &str) -> baton_worker::WorkerSettings {
    let mut settings = baton_tests::test_worker_settings(task_queue);
    if let Some(seconds) = std::env::var("BATON_DEADLINE_HORIZON_SECS")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
    {
        settings.deadline_horizon = (seconds > 0).then(|| Duration::from_secs(seconds));
    }
    settings
}

/// The sections asked for: `--only a,b` on the command line, else `BENCH_ONLY`, else all but
/// the process sections (which take minutes and are asked for by name).
fn selected_sections() -> anyhow::Result<Vec<String>> {
    let mut arguments = std::env::args().skip(1);
    let mut only = std::env::var("BENCH_ONLY").ok();
    while let Some(argument) = arguments.next() {
        match argument.as_str() {
            "--only" => only = arguments.next(),
            other => anyhow::bail!("unknown argument {other:?}; usage: bench [--only a,b]"),
        }
    }
    let Some(only) = only else {
        return Ok(SECTIONS
            .iter()
            .filter(|s| !PROCESS_SECTIONS.contains(s))
            .map(|s| (*s).to_owned())
            .collect());
    };
    let chosen: Vec<String> = only.split(',').map(|s| s.trim().to_owned()).collect();
    if let Some(unknown) = chosen.iter().find(|s| !SECTIONS.contains(&s.as_str())) {
        anyhow::bail!("unknown section {unknown:?}; the sections are {SECTIONS:?}");
    }
    Ok(chosen)
}

fn main() -> anyhow::Result<()> {
    if floor::is_child() {
        return floor::child_main();
    }
    sections_main()
}

#[tokio::main]
async fn sections_main() -> anyhow::Result<()> {
    let sections = selected_sections()?;
    let wants = |section: &str| sections.iter().any(|s| s == section);
    if wants("rounds") {
        rounds::print_rounds().await?;
    }
    if wants("pair") {
        pair::print_pair().await?;
    }
    if wants("floor") {
        floor::print_floor().await?;
    }
    if wants("soak") {
        soak::print_soak().await?;
    }
    if wants("bytes") {
        bytes::print_bytes().await?;
    }
    if wants("million") {
        million::print_million().await?;
    }
    if wants("remote") {
        remote_child::print_remote().await?;
    }
    if wants("mcp") {
        mcp::print_mcp().await?;
    }
    if sections
        .iter()
        .all(|s| PROCESS_SECTIONS.contains(&s.as_str()))
    {
        std::process::exit(0);
    }
    let steps: u32 = std::env::var("BENCH_STEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    let marks: Marks = Arc::default();
    let hitl_marks = hitl::SessionMarks::default();
    let mut agents = vec![
        steps::timed("bench_local", steps + 1, true, &marks),
        steps::timed("bench_activity", steps + 1, false, &marks),
        steps::timed("bench_local_short", 21, true, &marks),
        baton_worker::demo::demo_agent(),
        submit::bench_batch(),
        baton_tests::agents::asker_deadline("bench_ask", Duration::from_secs(3600)),
        hitl::hitl_agent(hitl::rounds_in_all(), &hitl_marks),
        tree::two_level_root(&hitl_marks),
        tree::three_level_root(&hitl_marks),
    ];
    agents.extend(tree::agents());
    let registry = AgentRegistry::new(agents)?;
    // The submit rate limits (the root's, the subject's) stay on (their token buckets are part
    // of a submit's cost) but high enough never to refuse the benchmark's submits.
    let high = baton_worker::state::BucketLimit {
        burst: 1_000_000,
        per_minute: 1_000_000,
    };
    // The fan-out measures `BENCH_FOLLOWERS` followers of one session: no follower cap, and
    // room for that many connections (`ulimit -n` permitting).
    let options = baton_worker::ServerOptions {
        submits_per_minute: Some(1_000_000),
        subject_limits: baton_worker::state::SubjectLimits {
            starts: high,
            submits: high,
        },
        follower_caps: baton_worker::stream::FollowerCaps {
            per_session: 0,
            per_credential: 0,
        },
        connection_limits: baton_worker::state::ConnectionLimits {
            max_connections: 100_000,
            // Every client is on loopback: one peer.
            max_connections_per_peer: 0,
            ..Default::default()
        },
        ..baton_tests::open_options()
    };
    let harness = Harness::server_only_with(registry.clone(), options.clone()).await;
    // The server and its worker share one Temporal client, as in `batond dev`: the server's
    // starts are eager.
    let _worker = WorkerThread::spawn_on(
        Some(harness.temporal.clone()),
        worker_settings(&harness.task_queue),
        &harness.prefix,
        registry.clone(),
    );

    let bare_worker = bare::spawn_bare_worker(
        baton_worker::connect_temporal(&baton_tests::temporal_settings()).await?,
    );
    if wants("steps") || wants("submit") || wants("hitl") {
        eprintln!("warming up");
        steps::session_steps(&harness, "bench_local_short", &marks, 21).await?;
    }
    if wants("steps") {
        steps::print_steps(&harness, &bare_worker, &marks, steps).await?;
    }
    if wants("submit") {
        submit::print_submit(&harness, &bare_worker).await?;
    }
    if wants("hitl") {
        // The same agents behind a server that resumes a session when its batch is answered.
        let resuming_options = baton_worker::ServerOptions {
            resume_on_submit: true,
            ..options
        };
        let resuming = Harness::server_only_with(registry.clone(), resuming_options).await;
        let _resuming_worker = WorkerThread::spawn_on(
            Some(resuming.temporal.clone()),
            worker_settings(&resuming.task_queue),
            &resuming.prefix,
            registry.clone(),
        );
        hitl::print_hitl(&harness, &resuming, &bare_worker, &hitl_marks).await?;
    }
    if wants("tree") {
        tree::print_tree(&harness, &hitl_marks).await?;
    }
    if wants("throughput") {
        throughput::print_throughput(&harness).await?;
    }
    if wants("fanout") {
        fanout::print_fanout(&harness).await?;
    }
    if wants("footprint") {
        footprint::print_footprint(&harness).await?;
    }
    if wants("search") {
        search::print_search().await?;
    }
    std::process::exit(0);
}
