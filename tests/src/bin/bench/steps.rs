//! Per-step framework overhead: agent steps with the scripted model (inline tools, tools as
//! activities) beside the bare activity round trip, and Temporal history bytes per step.

use crate::{Marks, bare, gaps_ms, phases, summary};
use async_trait::async_trait;
use baton_client::Client as _;
use baton_core::{
    Agent, Model, ModelRequest, ModelTurn, ScriptedModel, model, store::SessionAddress,
};
use baton_tests::{Harness, agents};
use prost::Message as _;
use std::time::{Duration, Instant};
use temporalio_client::WorkflowFetchHistoryOptions;
use temporalio_common::protos::temporal::api::history::v1::HistoryEvent;
use tokio::sync::mpsc;

/// The scripted model, noting when each call starts: the time between two calls is one step.
pub struct TimedModel {
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
        deltas: mpsc::UnboundedSender<baton_core::model::Delta>,
    ) -> Result<ModelTurn, model::Error> {
        self.marks.lock().unwrap().push(Instant::now());
        self.inner.generate(request, deltas).await
    }
}

/// A benchmark agent whose model records when each call starts.
pub fn timed(name: &str, steps: u32, local: bool, marks: &Marks) -> Agent {
    let model = TimedModel {
        inner: agents::bench_script(steps, local),
        marks: marks.clone(),
    };
    agents::bench_agent(name, steps, model)
}

/// One measured session: the gaps between model calls, the history bytes and events per step,
/// and the history itself.
pub struct SessionSteps {
    pub gaps: Vec<f64>,
    pub bytes: f64,
    pub events_per_step: f64,
    pub history: Vec<HistoryEvent>,
}

/// Runs one session of `agent` and measures it.
pub async fn session_steps(
    harness: &Harness,
    agent: &str,
    marks: &Marks,
    steps: u32,
) -> anyhow::Result<SessionSteps> {
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
    // The end chunk is written inside the run's last workflow task: wait for the workflow to
    // end, so its history holds that task's events (with local activities, every step's).
    let _ = harness.run_result(&started.workflow_id).await;
    let events = harness
        .temporal
        .get_workflow_handle::<baton_workflows::AgentRunWorkflow>(started.workflow_id)
        .fetch_history(WorkflowFetchHistoryOptions::default())
        .into_events()
        .await?;
    let bytes: usize = events.iter().map(|e| e.encoded_len()).sum();
    let marks = marks.lock().unwrap().clone();
    Ok(SessionSteps {
        gaps: gaps_ms(&marks),
        bytes: bytes as f64 / f64::from(steps),
        events_per_step: events.len() as f64 / f64::from(steps),
        history: events,
    })
}
/// Measures and prints the per-step tables: `steps` steps per configuration, the bare round
/// trip of the same run beside them.
pub async fn print_steps(
    harness: &Harness,
    bare_worker: &bare::BareWorker,
    marks: &Marks,
    steps: u32,
) -> anyhow::Result<()> {
    eprintln!("bare activity round trips ({steps})");
    let (bare_gaps, bare_history) = bare::bare_round_trips(bare_worker, steps).await?;
    let bare = summary(bare_gaps);
    eprintln!("steps with inline tools ({steps})");
    let local_run = session_steps(harness, "bench_local", marks, steps + 1).await?;
    let local_gaps = local_run.gaps.clone();
    let tenth = local_gaps.len() / 10;
    let early = summary(local_gaps[..tenth].to_vec());
    let late = summary(local_gaps[local_gaps.len() - tenth..].to_vec());
    let local = summary(local_gaps);
    let (local_bytes, local_events) = (local_run.bytes, local_run.events_per_step);
    eprintln!("steps with activity tools ({steps})");
    let activity_run = session_steps(harness, "bench_activity", marks, steps + 1).await?;
    let activity = summary(activity_run.gaps);
    let (activity_bytes, activity_events) = (activity_run.bytes, activity_run.events_per_step);
    let short_run = session_steps(harness, "bench_local_short", marks, 21).await?;
    let (short_bytes, short_events) = (short_run.bytes, short_run.events_per_step);

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
    let (short_read, short_messages) = log_read_ms(harness, "bench_local_short", marks).await?;
    let (long_read, long_messages) = log_read_ms(harness, "bench_local", marks).await?;
    println!(
        "| reading the whole log, {short_messages} messages (20-step session) | {:.3} | {:.3} | {} | |",
        short_read.0, short_read.1, short_read.2
    );
    println!(
        "| reading the whole log, {long_messages} messages ({steps}-step session) | {:.3} | {:.3} | {} | |",
        long_read.0, long_read.1, long_read.2
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
    // The first activity of each is a warm-up; then the first and the last tenth.
    let bare_count = phases::activities(&bare_history);
    let local_count = phases::activities(&local_run.history);
    let mut rows = vec![
        (
            "bare workflow, one empty activity after another",
            phases::phases(&bare_history, 1..),
        ),
        (
            "bare workflow, first tenth",
            phases::phases(&bare_history, 1..=bare_count / 10),
        ),
        (
            "bare workflow, last tenth",
            phases::phases(&bare_history, bare_count - bare_count / 10..),
        ),
    ];
    // Model steps run as local activities (today's shape) leave no activity events to split.
    if local_count > 10 {
        rows.extend([
            (
                "agent session, inline-tool steps",
                phases::phases(&local_run.history, 1..),
            ),
            (
                "agent session, first tenth",
                phases::phases(&local_run.history, 1..=local_count / 10),
            ),
            (
                "agent session, last tenth",
                phases::phases(&local_run.history, local_count - local_count / 10..),
            ),
        ]);
    }
    phases::print_phases(&rows);
    if local_count <= 10 {
        println!();
        println!(
            "The agent's model steps are local activities: no activity task to split into phases."
        );
    }
    Ok(())
}

/// What the model step's read of the whole log costs at the end of a session of `agent`: the
/// last session of that agent is run again only to find it, then its log is read 200 times.
/// Returns the summary and the log's length.
async fn log_read_ms(
    harness: &Harness,
    agent: &str,
    marks: &Marks,
) -> anyhow::Result<((f64, f64, usize), usize)> {
    marks.lock().unwrap().clear();
    let started = harness.client.start(agent, "go").await?;
    harness
        .chunks_until_end(&started.session_id, Duration::from_secs(600))
        .await;
    let address = SessionAddress::root(&started.session_id);
    let mut times = Vec::with_capacity(200);
    let mut length = 0;
    for _ in 0..200 {
        let began = Instant::now();
        length = harness.store.messages(&address).await?.len();
        times.push(began.elapsed().as_secs_f64() * 1000.0);
    }
    Ok((summary(times), length))
}
