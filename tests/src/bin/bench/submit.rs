//! Human in the loop, one call at a time: submit latency beside a bare EVALSHA (with a small and
//! a 100,000-call root), last submit → the continuation's first chunk, and Redis bytes per
//! suspended session.

use crate::{bare, summary};
use baton_client::Client as _;
use baton_core::{Agent, ScriptedModel, message::ToolOutcome};
use baton_tests::Harness;
use futures::StreamExt;
use std::time::Instant;

/// `bench_batch`: one step of 200 client calls.
pub fn bench_batch() -> Agent {
    let question = serde_json::json!({"question": "?"});
    let calls: Vec<(&str, serde_json::Value)> =
        (0..BATCH).map(|_| ("ask_user", question.clone())).collect();
    let script = ScriptedModel::default().call_all(&calls).answer("done");
    Agent::builder("bench_batch")
        .model(script)
        .client_tool(
            baton_core::tool::ClientTool::new(
                "ask_user",
                "asks",
                serde_json::json!({"type": "object"}),
            )
            .unwrap(),
        )
        .resume_on_deadline(false)
        .build()
        .unwrap()
}

/// the continuation's first chunk, and Redis bytes per suspended session.
struct HitlFigures {
    evalsha: (f64, f64, usize),
    submit_small: (f64, f64, usize),
    submit_large: (f64, f64, usize),
    continuation: (f64, f64, usize),
    bytes_per_session: f64,
}

const BATCH: usize = 200;

async fn suspended_session(harness: &Harness, agent: &str) -> anyhow::Result<String> {
    let started = harness.client.start(agent, "go").await?;
    harness.chunks_until_suspended(&started.session_id).await;
    Ok(started.session_id)
}

async fn submit_latencies(harness: &Harness, session: &str) -> anyhow::Result<Vec<f64>> {
    let answer = ToolOutcome::Result(serde_json::json!({"answer": "ok"}));
    let mut times = Vec::with_capacity(BATCH);
    for i in 1..=BATCH {
        let began = Instant::now();
        harness
            .client
            .submit(session, &format!("call_1_{i}"), &answer)
            .await?;
        times.push(began.elapsed().as_secs_f64() * 1000.0);
    }
    Ok(times)
}

/// Adds `count` pending calls (far deadlines) to a session, as a large tree would have.
async fn add_pending_calls(harness: &Harness, session: &str, count: usize) -> anyhow::Result<()> {
    let client = redis::Client::open(baton_tests::redis_url())?;
    let mut connection = client.get_multiplexed_async_connection().await?;
    let key = |what: &str| format!("{}:{{{session}}}:{session}:{what}", harness.prefix);
    let root_ownership = key("ownership");
    for chunk in (0..count).collect::<Vec<_>>().chunks(5_000) {
        let mut pipe = redis::pipe();
        for i in chunk {
            let id = format!("other_{i}");
            let entry = serde_json::json!({"toolCallId": id, "toolName": "ask_user", "input": {},
                "kind": "client", "step": 1, "deadlineAt": u64::MAX / 4, "completedRetentionMs": 0});
            pipe.hset(key("pending"), &id, entry.to_string())
                .hset(key("pendingRun"), &id, "elsewhere")
                .hset(&root_ownership, &id, session)
                .zadd(key("openDeadlines"), &id, u64::MAX / 4)
                .ignore();
        }
        let () = pipe.query_async(&mut connection).await?;
    }
    Ok(())
}

async fn hitl_figures(harness: &Harness) -> anyhow::Result<HitlFigures> {
    // A bare EVALSHA round trip on loopback.
    let client = redis::Client::open(baton_tests::redis_url())?;
    let mut connection = client.get_multiplexed_async_connection().await?;
    let script = redis::Script::new("return 1");
    let mut evalsha = Vec::new();
    for _ in 0..1000 {
        let began = Instant::now();
        let _: i64 = script.invoke_async(&mut connection).await?;
        evalsha.push(began.elapsed().as_secs_f64() * 1000.0);
    }

    eprintln!("submit latency, {BATCH} submits");
    let small = suspended_session(harness, "bench_batch").await?;
    let submit_small = submit_latencies(harness, &small).await?;
    eprintln!("submit latency with 100,000 pending calls on the root");
    let large = suspended_session(harness, "bench_batch").await?;
    add_pending_calls(harness, &large, 100_000).await?;
    let submit_large = submit_latencies(harness, &large).await?;

    eprintln!("last submit to the continuation's first chunk");
    let answer = ToolOutcome::Result(serde_json::json!({"answer": "ok"}));
    let mut continuation = Vec::new();
    let mut bytes = Vec::new();
    for _ in 0..20 {
        let session = suspended_session(harness, "bench_ask").await?;
        bytes.push(session_bytes(harness, &session).await? as f64);
        let before = harness.client.status(&session).await?.last_sequence;
        let mut follow = std::pin::pin!(harness.client.follow(&session, before));
        let began = Instant::now();
        harness.client.submit(&session, "call_1_1", &answer).await?;
        harness.client.resume(&session).await?;
        // The resumed workflow's first write is the drained answer's tool_end.
        while let Some(chunk) = follow.next().await {
            if matches!(chunk?.kind, baton_core::ChunkKind::ToolEnd { .. }) {
                break;
            }
        }
        continuation.push(began.elapsed().as_secs_f64() * 1000.0);
    }
    Ok(HitlFigures {
        evalsha: summary(evalsha),
        submit_small: summary(submit_small),
        submit_large: summary(submit_large),
        continuation: summary(continuation),
        bytes_per_session: bytes.iter().sum::<f64>() / bytes.len() as f64,
    })
}

/// Redis bytes (`MEMORY USAGE`) of every key of a suspended session.
async fn session_bytes(harness: &Harness, session: &str) -> anyhow::Result<u64> {
    Ok(super::footprint::key_bytes(harness, session)
        .await?
        .values()
        .sum())
}
/// Measures and prints the table of one-call human-in-the-loop figures and the Redis bytes per
/// suspended session.
pub async fn print_submit(harness: &Harness, bare_worker: &bare::BareWorker) -> anyhow::Result<()> {
    let bare_start = summary(bare::bare_start_to_first_activity(bare_worker, 20).await?);
    let hitl = hitl_figures(harness).await?;
    println!("| human in the loop | median ms | p99 ms | samples |");
    println!("|---|---:|---:|---:|");
    let row = |name: &str, (median, p99, n): (f64, f64, usize)| {
        println!("| {name} | {median:.2} | {p99:.2} | {n} |");
    };
    row("bare Redis EVALSHA round trip", hitl.evalsha);
    row(
        "submit over HTTP, root with 200 pending calls",
        hitl.submit_small,
    );
    row(
        "submit over HTTP, root with 100,200 pending calls",
        hitl.submit_large,
    );
    row(
        "last submit → resumed run's first chunk (submit + resume)",
        hitl.continuation,
    );
    row("bare start-workflow → first activity", bare_start);
    println!();
    println!(
        "Redis bytes per suspended session (one client call): {:.0}",
        hitl.bytes_per_session
    );
    println!();
    Ok(())
}
