//! Section `remote`: a remote sub-agent beside a local one, on loopback. Two in-process
//! services (each its own server, worker, key prefix and task queue): the consumer's agents call
//! the 12-step `long` agent on the producer (a remote child, over the producer's mount, and
//! again over A2A, by its agent card) and as a local child of the same service. Per sample, on the caller's stream: the time
//! from the start to the first chunk of the child, from the child's `subagent_end` to the
//! caller's next `step_start`, and the child's chunks per second (its chunks between its first
//! and its `subagent_end`). Then a HITL round across the boundary beside a local one: the
//! caller's child (`asker_only` on the producer, over the mount or A2A, or a local child) asks the
//! person; the round is from the answer's submit on the caller's root (relayed to the producer for
//! a remote child: its submit, or a message on the A2A task) and the root's resume to the
//! caller's next `step_start`.

use crate::summary;
use baton_client::Client as _;
use baton_core::{
    Agent, AgentRegistry, ChunkKind, ScriptedModel,
    a2a::AGENT_CARD_PATH,
    subagent::{A2aAgent, RemoteAgent, SubAgent},
};
use baton_tests::{Harness, agents};
use futures::StreamExt;
use serde_json::json;
use std::time::{Duration, Instant};

const SAMPLES: usize = 20;

/// A caller of `long`: by `tool` (a local sub-agent's or the remote one's name).
fn caller(name: &str, tool: &str, sub_agent: SubAgent) -> Agent {
    let model = ScriptedModel::default()
        .call(tool, json!({"message": "go"}))
        .answer("done");
    Agent::builder(name)
        .model(model)
        .sub_agent_with(sub_agent)
        .max_steps(3)
        .build()
        .unwrap()
}

/// One sample's figures, in ms and chunks per second.
struct Sample {
    first_chunk_ms: f64,
    end_to_next_step_ms: f64,
    chunks_per_second: f64,
}

/// Runs one session of `agent` and reads its stream as a client does.
async fn sample(consumer: &Harness, agent: &str) -> anyhow::Result<Sample> {
    let began = Instant::now();
    let started = consumer.client.start(agent, "go").await?;
    let mut follow = consumer.client.follow(&started.session_id, 0);
    let (mut first, mut child_end, mut next_step) = (None, None, None);
    let mut child_chunks = 0u64;
    let read = async {
        while let Some(chunk) = follow.next().await {
            let chunk = chunk?;
            let of_child = chunk.header.agent_id != started.session_id;
            match chunk.kind {
                ChunkKind::SubagentEnd { .. } => child_end = Some(Instant::now()),
                ChunkKind::StepStart { .. } if child_end.is_some() && !of_child => {
                    next_step.get_or_insert_with(Instant::now);
                }
                ChunkKind::End { .. } => break,
                _ if of_child => {
                    first.get_or_insert_with(Instant::now);
                    child_chunks += 1;
                }
                _ => {}
            }
        }
        anyhow::Ok(())
    };
    tokio::time::timeout(Duration::from_secs(60), read).await??;
    let missing = || {
        anyhow::anyhow!(
            "session {} lacks a child chunk ({}), the child's end ({}) or the caller's next step ({})",
            started.session_id,
            first.is_some(),
            child_end.is_some(),
            next_step.is_some()
        )
    };
    let (first, child_end, next_step) = (
        first.ok_or_else(missing)?,
        child_end.ok_or_else(missing)?,
        next_step.ok_or_else(missing)?,
    );
    let streaming = (child_end - first).as_secs_f64().max(1e-6);
    Ok(Sample {
        first_chunk_ms: (first - began).as_secs_f64() * 1000.0,
        end_to_next_step_ms: (next_step - child_end).as_secs_f64() * 1000.0,
        chunks_per_second: child_chunks as f64 / streaming,
    })
}

/// One HITL round of a session of `agent`, whose child asks the person a question: from the
/// answer's submit (on the root, under the id its `/pending` lists) and the root's resume to
/// the caller's next `step_start`, in ms.
async fn hitl_round(consumer: &Harness, agent: &str) -> anyhow::Result<f64> {
    use baton_core::{message::ToolOutcome, search::SessionSearch};
    let started = consumer.client.start(agent, "go").await?;
    let root = started.session_id.clone();
    let search = SessionSearch {
        root: Some(root.clone()),
        ..SessionSearch::default()
    };
    let waited = async {
        loop {
            let calls = consumer.client.pending(&search).await?.calls;
            if let Some(call) = calls.into_iter().next() {
                return anyhow::Ok(call.tool_call_id);
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    let call = tokio::time::timeout(Duration::from_secs(60), waited).await??;
    let after = consumer.client.status(&root).await?.last_sequence;
    let mut follow = consumer.client.follow(&root, after);
    let asked = Instant::now();
    let answer = ToolOutcome::Result(json!({"answer": "Ada"}));
    consumer.client.submit(&root, &call, &answer).await?;
    consumer.client.resume(&root).await?;
    let read = async {
        let mut child_ended = false;
        while let Some(chunk) = follow.next().await {
            let chunk = chunk?;
            match chunk.kind {
                ChunkKind::SubagentEnd { .. } => child_ended = true,
                ChunkKind::StepStart { .. } if child_ended && chunk.header.agent_id == root => {
                    return anyhow::Ok(asked.elapsed());
                }
                _ => {}
            }
        }
        anyhow::bail!("the stream of {root} closed before its next step")
    };
    let round = tokio::time::timeout(Duration::from_secs(60), read).await??;
    Ok(round.as_secs_f64() * 1000.0)
}

/// Measures and prints the section.
pub async fn print_remote() -> anyhow::Result<()> {
    // A benchmark's load, all of one subject: no start or submit limit on the consumer (nor on
    // the producer, which sees the consumer's service as one caller).
    let unlimited = || baton_worker::ServerOptions {
        subject_limits: baton_worker::state::SubjectLimits::OFF,
        submits_per_minute: None,
        ..baton_tests::open_options()
    };
    let producer = Harness::start_with(agents::registry(), unlimited()).await;
    let url = format!("http://{}/agents", producer.address);
    // The producer's mount serves a service's key (the test harness's).
    let key = baton_tests::TEST_SERVICE_KEY;
    let mount = |agent_type: &str| RemoteAgent::new(url.clone(), agent_type).bearer(key);
    let remote = SubAgent::remote("research", "asks", mount("long"));
    let remote_asker = SubAgent::remote("ask", "asks", mount("asker_only"));
    let card = |agent_type: &str| {
        A2aAgent::new(format!("{url}/{agent_type}{AGENT_CARD_PATH}")).bearer(key)
    };
    let a2a = SubAgent::a2a("research", "asks", card("long"));
    let a2a_asker = SubAgent::a2a("ask", "asks", card("asker_only"));
    let registry = AgentRegistry::new([
        caller("bench_remote_caller", "research", remote),
        caller("bench_a2a_caller", "research", a2a),
        caller(
            "bench_local_caller",
            "subagent__long",
            SubAgent::new("long", "asks"),
        ),
        agents::bench_agent("long", 12, agents::bench_script(12, true)),
        caller("bench_remote_asking", "ask", remote_asker),
        caller("bench_a2a_asking", "ask", a2a_asker),
        caller(
            "bench_local_asking",
            "subagent__asker_only",
            SubAgent::new("asker_only", "asks"),
        ),
        agents::asker_only(),
    ])?;
    let consumer = Harness::start_with(registry, unlimited()).await;
    eprintln!(
        "remote: {SAMPLES} sessions with a remote child (the mount's protocol, then A2A), {SAMPLES} with a local one"
    );
    println!(
        "\n## remote child beside local child ({SAMPLES} each, loopback, in-process services)\n"
    );
    println!(
        "| child | first child chunk p50 / p99 ms | child end → next step p50 / p99 ms | child chunks/s p50 |"
    );
    println!("|---|---|---|---|");
    for (label, agent) in [
        ("remote (mount)", "bench_remote_caller"),
        ("remote (A2A)", "bench_a2a_caller"),
        ("local", "bench_local_caller"),
    ] {
        let mut samples = Vec::with_capacity(SAMPLES);
        for _ in 0..SAMPLES {
            samples.push(
                sample(&consumer, agent)
                    .await
                    .map_err(|e| e.context(label))?,
            );
        }
        let first = summary(samples.iter().map(|s| s.first_chunk_ms).collect());
        let next = summary(samples.iter().map(|s| s.end_to_next_step_ms).collect());
        let rate = summary(samples.iter().map(|s| s.chunks_per_second).collect());
        println!(
            "| {label} | {:.1} / {:.1} | {:.1} / {:.1} | {:.0} |",
            first.0, first.1, next.0, next.1, rate.0
        );
    }
    println!("\n| child asking a person | answer → caller's next step p50 / p99 ms |");
    println!("|---|---|");
    for (label, agent) in [
        ("remote (mount)", "bench_remote_asking"),
        ("remote (A2A)", "bench_a2a_asking"),
        ("local", "bench_local_asking"),
    ] {
        let mut rounds = Vec::with_capacity(SAMPLES);
        for _ in 0..SAMPLES {
            rounds.push(hitl_round(&consumer, agent).await?);
        }
        let round = summary(rounds);
        println!("| {label} | {:.1} / {:.1} |", round.0, round.1);
    }
    Ok(())
}
