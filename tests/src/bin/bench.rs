//! Baton's benchmark: per-step framework overhead of an agent run with the scripted model, beside
//! the bare Temporal round trip of one empty activity measured in the same process and run;
//! sessions per second with 20 concurrent sessions; Temporal history bytes per step.
//!
//! Run it in release against the dev server started with the fast transfer-queue setting:
//! `source scripts/services.sh && cargo run --release -p baton-tests --bin bench`.
//! `BENCH_STEPS` (default 200) sets the steps measured per configuration, `BENCH_FOLLOWERS`
//! (default 1000) the SSE followers of the fan-out measurement; `BENCH_ONLY=fanout` runs that
//! measurement alone.

#![allow(unreachable_pub)]

use async_trait::async_trait;
use baton_client::Client as _;
use baton_core::{
    Agent, AgentRegistry, Model, ModelRequest, ModelTurn, ScriptedModel, message::ToolOutcome,
    model, store::SessionAddress,
};
use baton_tests::{Harness, WorkerThread, agents, temporal_settings, unique};
use baton_worker::connect_temporal;
use futures::StreamExt;
use prost::Message as _;
use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};
use temporalio_client::{
    WorkflowFetchHistoryOptions, WorkflowGetResultOptions, WorkflowStartOptions,
};
use temporalio_macros::{activities, workflow, workflow_methods};
use temporalio_sdk::{
    ActivityOptions, Runtime, Worker, WorkerOptions, WorkflowContext, WorkflowResult,
    activities::{ActivityContext, ActivityError},
};
use tokio::sync::mpsc;

type Marks = Arc<Mutex<Vec<Instant>>>;

/// The empty activity of the bare measurement; it only notes when it ran.
pub struct BareActivities {
    marks: Marks,
}

#[activities]
impl BareActivities {
    #[activity]
    pub async fn empty(
        self: Arc<Self>,
        _ctx: ActivityContext,
        _input: u32,
    ) -> Result<u32, ActivityError> {
        self.marks.lock().unwrap().push(Instant::now());
        Ok(0)
    }
}

/// Runs `count` empty activities one after the other.
#[workflow]
#[derive(Default)]
pub struct BareWorkflow;

#[workflow_methods]
impl BareWorkflow {
    #[run]
    pub async fn run(ctx: &mut WorkflowContext<Self>, count: u32) -> WorkflowResult<u32> {
        for i in 0..count {
            ctx.execute_activity(
                BareActivities::empty,
                i,
                ActivityOptions::start_to_close_timeout(Duration::from_secs(10)),
            )
            .await?;
        }
        Ok(count)
    }
}

/// The scripted model, noting when each call starts: the time between two calls is one step.
struct TimedModel {
    inner: ScriptedModel,
    marks: Marks,
}

#[async_trait]
impl Model for TimedModel {
    fn name(&self) -> &str {
        "scripted"
    }

    async fn generate(
        &self,
        request: ModelRequest<'_>,
        deltas: mpsc::UnboundedSender<String>,
    ) -> Result<ModelTurn, model::Error> {
        self.marks.lock().unwrap().push(Instant::now());
        self.inner.generate(request, deltas).await
    }
}

/// `bench_batch`: one step of 200 client calls.
fn bench_batch() -> Agent {
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

/// A benchmark agent whose model records when each call starts.
fn timed(name: &str, steps: u32, local: bool, marks: &Marks) -> Agent {
    let model = TimedModel {
        inner: agents::bench_script(steps, local),
        marks: marks.clone(),
    };
    agents::bench_agent(name, steps, model)
}

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

/// Runs the bare workflow's worker on a thread of its own; returns its task queue and the marks
/// its empty activity leaves.
fn spawn_bare_worker() -> (String, Marks) {
    let marks: Marks = Arc::default();
    let task_queue = unique("bench-bare");
    let queue = task_queue.clone();
    let worker_marks = marks.clone();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let core = Runtime::from_current_tokio(Default::default()).unwrap();
            let client = connect_temporal(&temporal_settings()).await.unwrap();
            let options = WorkerOptions::new(queue)
                .register_activities(BareActivities {
                    marks: worker_marks,
                })
                .register_workflow::<BareWorkflow>()
                .unwrap()
                .build();
            let mut worker = Worker::new(&core, client, options).unwrap();
            worker.run().await.unwrap();
        });
    });
    (task_queue, marks)
}

async fn bare_round_trips(bare: &(String, Marks), count: u32) -> anyhow::Result<Vec<f64>> {
    let (task_queue, marks) = bare;
    marks.lock().unwrap().clear();
    let client = connect_temporal(&temporal_settings()).await?;
    let handle = client
        .start_workflow(
            BareWorkflow::run,
            count + 1,
            WorkflowStartOptions::new(task_queue.clone(), unique("bare")).build(),
        )
        .await?;
    handle
        .get_result(WorkflowGetResultOptions::default())
        .await?;
    let marks = marks.lock().unwrap().clone();
    Ok(gaps_ms(&marks))
}

/// The dev server's bare start-workflow → first-activity time, `samples` times.
async fn bare_start_to_first_activity(
    bare: &(String, Marks),
    samples: u32,
) -> anyhow::Result<Vec<f64>> {
    let (task_queue, marks) = bare;
    let client = connect_temporal(&temporal_settings()).await?;
    let mut times = Vec::new();
    for _ in 0..samples {
        marks.lock().unwrap().clear();
        let began = Instant::now();
        let handle = client
            .start_workflow(
                BareWorkflow::run,
                1,
                WorkflowStartOptions::new(task_queue.clone(), unique("bare")).build(),
            )
            .await?;
        handle
            .get_result(WorkflowGetResultOptions::default())
            .await?;
        let first = marks.lock().unwrap()[0];
        times.push((first - began).as_secs_f64() * 1000.0);
    }
    Ok(times)
}

/// Human in the loop: submit latency (with a small and a 100,000-call root), last submit to
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
    let client = redis::Client::open(baton_tests::redis_url())?;
    let mut connection = client.get_multiplexed_async_connection().await?;
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{}:{{{session}}}:*", harness.prefix))
        .query_async(&mut connection)
        .await?;
    let mut total = 0;
    for key in keys {
        let used: Option<u64> = redis::cmd("MEMORY")
            .arg("USAGE")
            .arg(&key)
            .query_async(&mut connection)
            .await?;
        total += used.unwrap_or(0);
    }
    Ok(total)
}

/// Runs one session of `agent` and returns the gaps between model calls and the history bytes
/// and events per step.
async fn session_steps(
    harness: &Harness,
    agent: &str,
    marks: &Marks,
    steps: u32,
) -> anyhow::Result<(Vec<f64>, f64, f64)> {
    marks.lock().unwrap().clear();
    let started = harness.client.start(agent, "go").await?;
    let chunks = harness
        .chunks_until_end(&started.session_id, Duration::from_secs(600))
        .await;
    let state = harness
        .store
        .session(&SessionAddress::root(&started.session_id))
        .await?
        .unwrap();
    anyhow::ensure!(
        state.step_count == steps,
        "session ended after {} steps: {:?}",
        state.step_count,
        chunks.last()
    );
    let events = harness
        .temporal
        .get_workflow_handle::<baton_workflows::AgentRunWorkflow>(started.workflow_id)
        .fetch_history(WorkflowFetchHistoryOptions::default())
        .into_events()
        .await?;
    let bytes: usize = events.iter().map(|e| e.encoded_len()).sum();
    let marks = marks.lock().unwrap().clone();
    Ok((
        gaps_ms(&marks),
        bytes as f64 / f64::from(steps),
        events.len() as f64 / f64::from(steps),
    ))
}

async fn sessions_per_second(
    harness: &Harness,
    sessions: usize,
    concurrency: usize,
) -> anyhow::Result<f64> {
    let began = Instant::now();
    let outcomes: Vec<anyhow::Result<()>> = futures::stream::iter(0..sessions)
        .map(|_| async {
            let started = harness.client.start("demo", "go").await?;
            let chunks = harness
                .chunks_until_end(&started.session_id, Duration::from_secs(120))
                .await;
            anyhow::ensure!(
                matches!(
                    chunks.last().map(|c| &c.kind),
                    Some(baton_core::ChunkKind::End {
                        status: baton_core::chunk::EndStatus::Completed,
                        ..
                    })
                ),
                "a session did not complete"
            );
            Ok(())
        })
        .buffer_unordered(concurrency)
        .collect()
        .await;
    for outcome in outcomes {
        outcome?;
    }
    Ok(sessions as f64 / began.elapsed().as_secs_f64())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    if std::env::var("BENCH_ONLY").as_deref() == Ok("fanout") {
        let harness = Harness::server_only(AgentRegistry::new([])?).await;
        print_fanout(&harness).await?;
        std::process::exit(0);
    }
    let steps: u32 = std::env::var("BENCH_STEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    let marks: Marks = Arc::default();
    let registry = AgentRegistry::new([
        timed("bench_local", steps + 1, true, &marks),
        timed("bench_activity", steps + 1, false, &marks),
        timed("bench_local_short", 21, true, &marks),
        baton_worker::demo::demo_agent(),
        bench_batch(),
        baton_tests::agents::asker_deadline("bench_ask", Duration::from_secs(3600)),
    ])?;
    // The submit rate limit stays on (its token bucket is part of a submit's cost) but high
    // enough never to refuse the benchmark's submits.
    let options = baton_worker::ServerOptions {
        submits_per_minute: Some(1_000_000),
        ..baton_tests::open_options()
    };
    let harness = Harness::server_only_with(registry.clone(), options).await;
    let _worker = WorkerThread::spawn(&harness.task_queue, &harness.prefix, registry);

    eprintln!("warming up");
    session_steps(&harness, "bench_local_short", &marks, 21).await?;
    eprintln!("bare activity round trips ({steps})");
    let bare_worker = spawn_bare_worker();
    let bare = summary(bare_round_trips(&bare_worker, steps).await?);
    let bare_start = summary(bare_start_to_first_activity(&bare_worker, 20).await?);
    eprintln!("steps with inline tools ({steps})");
    let (local_gaps, local_bytes, local_events) =
        session_steps(&harness, "bench_local", &marks, steps + 1).await?;
    let tenth = local_gaps.len() / 10;
    let early = summary(local_gaps[..tenth].to_vec());
    let late = summary(local_gaps[local_gaps.len() - tenth..].to_vec());
    let local = summary(local_gaps);
    eprintln!("steps with activity tools ({steps})");
    let (activity_gaps, activity_bytes, activity_events) =
        session_steps(&harness, "bench_activity", &marks, steps + 1).await?;
    let activity = summary(activity_gaps);
    let (_, short_bytes, short_events) =
        session_steps(&harness, "bench_local_short", &marks, 21).await?;
    let hitl = hitl_figures(&harness).await?;
    eprintln!("sessions per second");
    let rate = sessions_per_second(&harness, 200, 20).await?;

    println!("| measurement | median ms | p99 ms | samples | vs bare median |");
    println!("|---|---:|---:|---:|---:|");
    println!(
        "| bare Temporal round trip, one empty activity | {:.2} | {:.2} | {} | 1.00× |",
        bare.0, bare.1, bare.2
    );
    println!(
        "| agent step, inline server tool | {:.2} | {:.2} | {} | {:.2}× |",
        local.0,
        local.1,
        local.2,
        local.0 / bare.0
    );
    println!(
        "| inline-tool step, first tenth of the session | {:.2} | {:.2} | {} | {:.2}× |",
        early.0,
        early.1,
        early.2,
        early.0 / bare.0
    );
    println!(
        "| inline-tool step, last tenth of the session | {:.2} | {:.2} | {} | {:.2}× |",
        late.0,
        late.1,
        late.2,
        late.0 / bare.0
    );
    println!(
        "| agent step, server tool as its own activity | {:.2} | {:.2} | {} | {:.2}× |",
        activity.0,
        activity.1,
        activity.2,
        activity.0 / bare.0
    );
    println!();
    println!("| history per step | bytes | events |");
    println!("|---|---:|---:|");
    println!("| 20-step session, inline tools | {short_bytes:.0} | {short_events:.1} |");
    println!("| {steps}-step session, inline tools | {local_bytes:.0} | {local_events:.1} |");
    println!(
        "| {steps}-step session, tools as activities | {activity_bytes:.0} | {activity_events:.1} |"
    );
    println!();
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
    println!("| throughput | sessions/s |");
    println!("|---|---:|");
    println!("| demo agent (3 steps, 2 inline tools), 20 concurrent, 200 sessions | {rate:.1} |");
    println!();
    print_fanout(&harness).await?;
    std::process::exit(0);
}

/// SSE fan-out: `BENCH_FOLLOWERS` followers of one session over HTTP on loopback; the time from
/// writing a chunk to Redis to each follower having parsed its event.
async fn print_fanout(harness: &Harness) -> anyhow::Result<()> {
    let followers: usize = std::env::var("BENCH_FOLLOWERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    const CHUNKS: usize = 50;
    eprintln!("SSE fan-out, {followers} followers, {CHUNKS} chunks");
    let (latencies, connect) = fanout_latencies(harness, followers, CHUNKS).await?;
    println!(
        "| SSE fan-out, {followers} followers of one session | median ms | p99 ms | samples |"
    );
    println!("|---|---:|---:|---:|");
    let (median, p99, n) = summary(latencies);
    println!("| chunk written → event parsed by a follower | {median:.2} | {p99:.2} | {n} |");
    println!(
        "| all {followers} followers connected (s) | {:.2} | | 1 |",
        connect.as_secs_f64()
    );
    Ok(())
}

async fn fanout_latencies(
    harness: &Harness,
    followers: usize,
    chunks: usize,
) -> anyhow::Result<(Vec<f64>, Duration)> {
    use baton_core::{
        ChunkKind, Message,
        store::{NewSession, StepRef},
    };
    let session = unique("fanout");
    let address = SessionAddress::root(&session);
    harness
        .store
        .create_session(NewSession {
            address: &address,
            agent_type: "fanout",
            run_id: "r1",
            stream_id: "st1",
            workflow_id: "none",
            messages: &[Message::user("go")],
            max_chunks: 0,
        })
        .await?;
    let http = reqwest::Client::new();
    let url = format!(
        "http://{}/sse?sessionId={session}&fromSequence=1",
        harness.address
    );
    let connecting = Instant::now();
    let tasks: Vec<_> = (0..followers)
        .map(|_| {
            let request = http.get(&url).send();
            tokio::spawn(async move {
                let mut body = request.await?.bytes_stream();
                let mut buffer = String::new();
                let mut received = Vec::with_capacity(chunks);
                while received.len() < chunks {
                    let Some(bytes) = body.next().await else {
                        break;
                    };
                    buffer.push_str(std::str::from_utf8(&bytes?)?);
                    while let Some(end) = buffer.find("\n\n") {
                        let now = Instant::now();
                        for line in buffer[..end].lines() {
                            if let Some(id) = line.strip_prefix("id:") {
                                received.push((id.trim().parse::<u64>()?, now));
                            }
                        }
                        buffer.drain(..end + 2);
                    }
                }
                anyhow::Ok(received)
            })
        })
        .collect();
    while (harness.state.metrics.followers.get() as usize) < followers {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let connected = connecting.elapsed();
    let mut sent = Vec::with_capacity(chunks);
    for index in 0..chunks {
        tokio::time::sleep(Duration::from_millis(20)).await;
        sent.push(Instant::now());
        harness
            .store
            .emit_model_chunks(
                StepRef {
                    address: &address,
                    stream_id: "st1",
                    run_id: "r1",
                    step: 1,
                },
                1,
                index as u32,
                &[ChunkKind::TextDelta {
                    step: 1,
                    delta: format!("delta {index} "),
                }],
            )
            .await?;
    }
    let mut latencies = Vec::with_capacity(followers * chunks);
    for task in tasks {
        for (sequence, at) in task.await?? {
            // Sequence 1 is run_start; the emitted chunks are 2..
            let written = sent[(sequence - 2) as usize];
            latencies.push(at.duration_since(written).as_secs_f64() * 1000.0);
        }
    }
    Ok((latencies, connected))
}
