//! Human-in-the-loop rounds over the HTTP API: sessions whose every step asks the client one
//! question; each round is submit → resume → the next model step → the next suspension. With 1
//! and with 20 sessions at once, answering at once and (1 session) a tenth of a second after
//! the suspension, as a person would: rounds per second, the answer → next-model-step time and
//! its parts, and the Temporal operations one round costs, counted in the histories of the
//! workflows it started.

use crate::{bare, summary};
use async_trait::async_trait;
use baton_client::Client as _;
use baton_core::{
    Agent, ChunkKind, Message, Model, ModelRequest, ModelTurn, ScriptedModel, message::ToolOutcome,
    model, tool::ClientTool,
};
use baton_tests::Harness;
use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};
use temporalio_client::WorkflowFetchHistoryOptions;
use temporalio_common::protos::temporal::api::{
    enums::v1::EventType, history::v1::history_event::Attributes,
};
use tokio::sync::mpsc;

/// The agent of this section.
pub const AGENT: &str = "bench_hitl";

/// When each session's model calls started, keyed by the session's first user message (each
/// session of the section starts with its own).
pub type SessionMarks = Arc<Mutex<HashMap<String, Vec<Instant>>>>;

/// The scripted model, noting when each call of each session starts.
pub struct KeyedTimedModel {
    inner: ScriptedModel,
    marks: SessionMarks,
}

impl KeyedTimedModel {
    pub fn new(inner: ScriptedModel, marks: &SessionMarks) -> Self {
        Self {
            inner,
            marks: marks.clone(),
        }
    }
}

#[async_trait]
impl Model for KeyedTimedModel {
    fn name(&self) -> &str {
        "scripted"
    }

    async fn generate(
        &self,
        request: ModelRequest<'_>,
        deltas: mpsc::UnboundedSender<baton_core::model::Delta>,
    ) -> Result<ModelTurn, model::Error> {
        let key = request.messages.iter().find_map(|m| match m {
            Message::User { content, .. } => Some(content.clone()),
            _ => None,
        });
        if let Some(key) = key {
            let mut marks = self.marks.lock().unwrap();
            marks.entry(key).or_default().push(Instant::now());
        }
        self.inner.generate(request, deltas).await
    }
}

/// `bench_hitl`: `rounds` steps each asking the client one question, then an answer. The
/// deadline is an hour away and the agent resumes by itself when it lapses, as in production:
/// beyond the worker's deadline horizon, so each suspension goes into the deadline index (no
/// deadline workflow unless `BATON_DEADLINE_HORIZON_SECS` says otherwise).
pub fn hitl_agent(rounds: usize, marks: &SessionMarks) -> Agent {
    let mut script = ScriptedModel::default();
    for round in 0..rounds {
        script = script.call("ask_user", serde_json::json!({"question": round}));
    }
    let model = KeyedTimedModel::new(script.answer("done"), marks);
    Agent::builder(AGENT)
        .model(model)
        .client_tool(
            ClientTool::new("ask_user", "asks", serde_json::json!({"type": "object"})).unwrap(),
        )
        .client_tool_timeout(Duration::from_secs(3600))
        .max_steps(rounds as u32 + 1)
        .build()
        .unwrap()
}

/// The think time of the rows that answer as a person would, after the suspended run's workflow
/// has finished: a tenth of a second (a person takes seconds).
const THINK: Duration = Duration::from_millis(100);

/// The rounds to run per configuration: `BENCH_HITL_ROUNDS` (default 200) in all, spread over
/// the sessions.
pub fn rounds_in_all() -> usize {
    std::env::var("BENCH_HITL_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200)
}

/// One configuration's figures.
struct Rounds {
    per_second: f64,
    answer_to_step: Vec<f64>,
    /// The parts of `answer_to_step`, per round: the submit call, the resume call (none with
    /// `--resume-on-submit`), and the last call's return → the model call.
    parts: Vec<[f64; 3]>,
}

/// How one configuration runs its rounds.
#[derive(Clone, Copy)]
struct Mode {
    /// The server resumes a session when an answer completes its batch, so the client does not
    /// call `/resume`.
    resume_on_submit: bool,
    /// How long the client waits after a suspension before it answers (a person takes seconds;
    /// zero answers while the suspended run's workflow is still finishing).
    think: Duration,
}

/// Runs `sessions` sessions at once, `rounds` rounds each, as `mode` says; returns the figures
/// and the ids of the sessions.
async fn run_rounds(
    harness: &Harness,
    marks: &SessionMarks,
    sessions: usize,
    rounds: usize,
    mode: Mode,
) -> anyhow::Result<(Rounds, Vec<String>)> {
    let mut started = Vec::new();
    for _ in 0..sessions {
        let key = baton_tests::unique("hitl");
        let session = harness.client.start(AGENT, &key).await?;
        started.push((key, session.session_id));
    }
    for (_, session) in &started {
        harness.chunks_until_suspended(session).await;
    }
    let answer = ToolOutcome::Result(serde_json::json!({"answer": "ok"}));
    let began = Instant::now();
    type Latencies = (Vec<f64>, Vec<[f64; 3]>);
    let outcomes: Vec<anyhow::Result<Latencies>> =
        futures::future::join_all(started.iter().map(|(key, session)| {
            let answer = answer.clone();
            async move {
                let mut latencies = Vec::with_capacity(rounds);
                let mut parts = Vec::with_capacity(rounds);
                for round in 1..=rounds {
                    tokio::time::sleep(mode.think).await;
                    let last = harness.client.status(session).await?.last_sequence;
                    let asked = Instant::now();
                    harness
                        .client
                        .submit(session, &format!("call_{round}_1"), &answer)
                        .await?;
                    let submitted = Instant::now();
                    if !mode.resume_on_submit {
                        harness.client.resume(session).await?;
                    }
                    let resumed = Instant::now();
                    let chunks = harness.chunks_after_until_suspended(session, last).await;
                    anyhow::ensure!(
                        matches!(
                            chunks.last().map(|c| &c.kind),
                            Some(ChunkKind::Suspended { .. } | ChunkKind::End { .. })
                        ),
                        "round {round} of {session} ended with {:?}",
                        chunks.last()
                    );
                    let stepped = marks
                        .lock()
                        .unwrap()
                        .get(key)
                        .and_then(|m| m.get(round).copied());
                    let stepped = stepped.ok_or_else(|| {
                        anyhow::anyhow!("round {round} of {session}: no model call")
                    })?;
                    let ms = |from: Instant, to: Instant| (to - from).as_secs_f64() * 1000.0;
                    latencies.push(ms(asked, stepped));
                    parts.push([
                        ms(asked, submitted),
                        ms(submitted, resumed),
                        ms(resumed, stepped),
                    ]);
                }
                Ok((latencies, parts))
            }
        }))
        .await;
    let elapsed = began.elapsed().as_secs_f64();
    let mut answer_to_step = Vec::new();
    let mut parts = Vec::new();
    for outcome in outcomes {
        let (latencies, session_parts) = outcome?;
        answer_to_step.extend(latencies);
        parts.extend(session_parts);
    }
    let figures = Rounds {
        per_second: (sessions * rounds) as f64 / elapsed,
        answer_to_step,
        parts,
    };
    Ok((figures, started.into_iter().map(|(_, s)| s).collect()))
}

/// Temporal operations, counted from history events.
#[derive(Default, Clone)]
struct Operations {
    workflows: f64,
    events: f64,
    workflow_tasks: f64,
    activity_tasks: f64,
    local_activities: f64,
    other_markers: f64,
    timers: f64,
}

/// One history event as the count needs it: its type, and a marker's name (a local activity's
/// result and a patch are both markers).
struct Event {
    kind: EventType,
    marker: String,
}

impl Operations {
    /// Adds one workflow's history; an empty one is a workflow Temporal does not know.
    fn add(&mut self, events: &[Event]) {
        if events.is_empty() {
            return;
        }
        self.workflows += 1.0;
        self.events += events.len() as f64;
        for event in events {
            match event.kind {
                EventType::WorkflowTaskScheduled => self.workflow_tasks += 1.0,
                EventType::ActivityTaskScheduled => self.activity_tasks += 1.0,
                EventType::MarkerRecorded if event.marker == "core_local_activity" => {
                    self.local_activities += 1.0;
                }
                EventType::MarkerRecorded => self.other_markers += 1.0,
                EventType::TimerStarted => self.timers += 1.0,
                _ => {}
            }
        }
    }

    fn per(&self, rounds: f64) -> Self {
        Self {
            workflows: self.workflows / rounds,
            events: self.events / rounds,
            workflow_tasks: self.workflow_tasks / rounds,
            activity_tasks: self.activity_tasks / rounds,
            local_activities: self.local_activities / rounds,
            other_markers: self.other_markers / rounds,
            timers: self.timers / rounds,
        }
    }
}

/// The events of one workflow's history, or none if Temporal has no such workflow.
async fn history(harness: &Harness, workflow_id: &str) -> Vec<Event> {
    let events = harness
        .temporal
        .get_workflow_handle::<baton_workflows::AgentRunWorkflow>(workflow_id.to_owned())
        .fetch_history(WorkflowFetchHistoryOptions::default())
        .into_events()
        .await;
    events
        .map(|events| {
            events
                .iter()
                .map(|event| Event {
                    kind: event.event_type(),
                    marker: match &event.attributes {
                        Some(Attributes::MarkerRecordedEventAttributes(marker)) => {
                            marker.marker_name.clone()
                        }
                        _ => String::new(),
                    },
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The operations of the resumed rounds of `session`: every run after the first is one round,
/// its workflow plus whatever its suspension left (the deadline workflow, so far: the timer
/// that has not fired yet is counted as started). A workflow id that Temporal does not know is
/// simply not there (no deadline workflow, say).
async fn round_operations(harness: &Harness, session: &str) -> anyhow::Result<(Operations, f64)> {
    let chunks = harness.chunks_after_until_end(session, 0).await;
    let mut runs: Vec<String> = Vec::new();
    for chunk in &chunks {
        if matches!(chunk.kind, ChunkKind::RunStart { .. }) {
            runs.push(chunk.header.run_id.clone());
        }
    }
    let mut operations = Operations::default();
    // The first run is the start, not a round; the deadline workflow of a round belongs to it.
    for run in runs.iter().skip(1) {
        let resumed = format!("agent__{AGENT}__{session}__resume-{run}");
        operations.add(&history(harness, &resumed).await);
        operations.add(&history(harness, &format!("deadline__{session}__{run}")).await);
    }
    let rounds = (runs.len() - 1) as f64;
    Ok((operations, rounds))
}

/// Measures and prints the section.
/// `resuming` is a second server on the same agents, started with `--resume-on-submit`.
pub async fn print_hitl(
    harness: &Harness,
    resuming: &Harness,
    bare_worker: &bare::BareWorker,
    marks: &SessionMarks,
) -> anyhow::Result<()> {
    let rounds = rounds_in_all();
    let bare_start = summary(bare::bare_start_to_first_activity(bare_worker, 100).await?);
    eprintln!("hitl: 1 session, {rounds} rounds");
    let plain = Mode {
        resume_on_submit: false,
        think: Duration::ZERO,
    };
    let on_submit = Mode {
        resume_on_submit: true,
        ..plain
    };
    let thinking = Mode {
        think: THINK,
        ..plain
    };
    let (single, single_sessions) = run_rounds(harness, marks, 1, rounds, plain).await?;
    eprintln!("hitl: 20 sessions, {} rounds each", rounds / 20);
    let each = (rounds / 20).max(1);
    let (many, _) = run_rounds(harness, marks, 20, each, plain).await?;
    eprintln!("hitl: the same with --resume-on-submit");
    let (single_on_submit, _) = run_rounds(resuming, marks, 1, rounds, on_submit).await?;
    let (many_on_submit, _) = run_rounds(resuming, marks, 20, each, on_submit).await?;
    eprintln!(
        "hitl: 1 session answering {} ms after each suspension",
        THINK.as_millis()
    );
    let thinking_rounds = (rounds / 4).max(1);
    let (single_thinking, _) = run_rounds(harness, marks, 1, thinking_rounds, thinking).await?;
    let (single_thinking_on_submit, _) = run_rounds(
        resuming,
        marks,
        1,
        thinking_rounds,
        Mode {
            think: THINK,
            ..on_submit
        },
    )
    .await?;
    let (operations, counted) = round_operations(harness, &single_sessions[0]).await?;
    let per_round = operations.per(counted);

    println!(
        "| human-in-the-loop rounds over HTTP | rounds/s | answer → next model step p50 ms | p99 ms | rounds | p50 vs bare start |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    let think_ms = THINK.as_millis();
    let thinking_name = format!("1 session, answered {think_ms} ms after the suspension");
    let thinking_on_submit_name = format!("{thinking_name}, --resume-on-submit");
    let configurations = [
        ("1 session (submit, then resume)", &single, true),
        ("20 sessions at once (submit, then resume)", &many, true),
        ("1 session, --resume-on-submit", &single_on_submit, true),
        (
            "20 sessions at once, --resume-on-submit",
            &many_on_submit,
            true,
        ),
        (thinking_name.as_str(), &single_thinking, false),
        (
            thinking_on_submit_name.as_str(),
            &single_thinking_on_submit,
            false,
        ),
    ];
    for (name, figures, rate) in configurations {
        let (p50, p99, n) = summary(figures.answer_to_step.clone());
        // With a think time the rate says how long the client waited, not the server.
        let per_second = if rate {
            format!("{:.1}", figures.per_second)
        } else {
            "–".to_owned()
        };
        println!(
            "| {name} | {per_second} | {p50:.2} | {p99:.2} | {n} | {:.2}× |",
            p50 / bare_start.0
        );
    }
    // Flat in the session's length: the first and the last tenth of one session's rounds (each
    // round adds two messages to the log).
    let one = &single.answer_to_step;
    let tenth = one.len() / 10;
    for (name, part) in [
        ("1 session, first tenth of its rounds", &one[..tenth]),
        (
            "1 session, last tenth of its rounds",
            &one[one.len() - tenth..],
        ),
    ] {
        let (p50, p99, n) = summary(part.to_vec());
        println!(
            "| {name} | | {p50:.2} | {p99:.2} | {n} | {:.2}× |",
            p50 / bare_start.0
        );
    }
    println!(
        "| bare start-workflow → first activity (same run) | | {:.2} | {:.2} | {} | 1.00× |",
        bare_start.0, bare_start.1, bare_start.2
    );
    println!();
    println!(
        "| answer → next model step, its parts (p50 ms) | submit call | resume call | → model call |"
    );
    println!("|---|---:|---:|---:|");
    let parts = &single.parts;
    let tenths = [
        ("1 session, first tenth of its rounds", &parts[..tenth]),
        (
            "1 session, last tenth of its rounds",
            &parts[parts.len() - tenth..],
        ),
    ];
    let all = configurations
        .iter()
        .map(|(name, figures, _)| (*name, figures.parts.as_slice()));
    for (name, parts) in all.chain(tenths) {
        let part = |index: usize| summary(parts.iter().map(|p| p[index]).collect()).0;
        println!(
            "| {name} | {:.2} | {:.2} | {:.2} |",
            part(0),
            part(1),
            part(2)
        );
    }
    println!();
    println!("| Temporal operations per resumed round | per round |");
    println!("|---|---:|");
    for (name, value) in [
        ("workflows started (run, deadline)", per_round.workflows),
        ("history events", per_round.events),
        ("workflow tasks", per_round.workflow_tasks),
        ("activity tasks", per_round.activity_tasks),
        ("local activities", per_round.local_activities),
        ("other markers (the version patch)", per_round.other_markers),
        ("timers started", per_round.timers),
    ] {
        println!("| {name} | {value:.1} |");
    }
    println!();
    print_ceiling(bare_worker).await
}

/// What the dev server allows at most, whatever Baton does: bare workflows per second, 20 at a
/// time, of the fewest operations a resumed round takes (a start, one activity, the end), and
/// of the same with a local activity instead.
async fn print_ceiling(bare_worker: &bare::BareWorker) -> anyhow::Result<()> {
    eprintln!("hitl: the dev server's ceiling, bare workflows 20 at a time");
    let count = 400;
    let activity = bare::bare_workflows_per_second(bare_worker, count, 20, false).await?;
    let local = bare::bare_workflows_per_second(bare_worker, count, 20, true).await?;
    println!("| bare workflows, 20 at a time ({count} each) | workflows/s |");
    println!("|---|---:|");
    println!("| start, one empty activity, end (a resumed round's operations) | {activity:.1} |");
    println!("| start, one empty local activity, end | {local:.1} |");
    println!();
    Ok(())
}
