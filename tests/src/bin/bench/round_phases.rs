//! Where a round's answer → next step time goes, for the typical round and for the slowest
//! ones (issue 40's tail): the submit's HTTP call, the resume's (its claim and the workflow's
//! start), the resumed workflow's first task waiting in Temporal (its start to that task's
//! start, read from the workflow's history) and what is left (the worker's task, the model
//! step's first write, the stream's delivery to the follower).

use crate::summary;
use baton_client::{Client as _, HttpClient};
use baton_core::message::ToolOutcome;
use std::time::{Duration, Instant};
use temporalio_client::WorkflowFetchHistoryOptions;
use temporalio_common::protos::temporal::api::{enums::v1::EventType, history::v1::HistoryEvent};

/// One round's phases, in milliseconds, and its resumed workflow.
#[derive(Debug, Clone)]
pub struct Timed {
    pub submit: f64,
    pub resume: f64,
    /// From the resume's answer to the resumed step's first chunk at the follower.
    pub after_resume: f64,
    pub workflow_id: String,
}

impl Timed {
    pub fn to_step(&self) -> f64 {
        self.submit + self.resume + self.after_resume
    }
}

/// One round, timed by phase (see [`crate::remote::round`]); `None` for the phases of a round
/// whose next step never came (the session ended).
pub async fn timed_round(
    client: &HttpClient,
    session: &str,
    call: &str,
    answer: &ToolOutcome,
    after: u64,
) -> anyhow::Result<(crate::remote::Pause, Option<Timed>)> {
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let asked = Instant::now();
    client.submit(session, call, answer).await?;
    let submitted = Instant::now();
    let resumed = client.resume(session).await?;
    let resumed_at = Instant::now();
    let pause = crate::remote::next_pause(client, session, after).await?;
    let timed = pause.first_step.map(|at| Timed {
        submit: ms(submitted - asked),
        resume: ms(resumed_at - submitted),
        after_resume: ms(at - resumed_at),
        workflow_id: resumed.workflow_id.unwrap_or_default(),
    });
    Ok((pause, timed))
}

/// The resumed workflow's start to its first workflow task's start, from its history.
fn first_task_wait(events: &[HistoryEvent]) -> Option<f64> {
    let at = |kind: EventType| {
        events
            .iter()
            .find(|e| e.event_type() == kind)
            .and_then(|e| {
                let t = e.event_time.as_ref()?;
                Some(t.seconds as f64 * 1000.0 + f64::from(t.nanos) / 1e6)
            })
    };
    Some(at(EventType::WorkflowTaskStarted)? - at(EventType::WorkflowExecutionStarted)?)
}

/// Prints the phases of the median rounds and of the slowest 1% beside each other, of a
/// configuration of `sessions` sessions with 1 worker.
pub async fn print(sessions: usize, rounds: &[Timed]) -> anyhow::Result<()> {
    print_labelled("1 worker", sessions, rounds).await
}

/// [`print`] for the configuration `label`.
pub async fn print_labelled(label: &str, sessions: usize, rounds: &[Timed]) -> anyhow::Result<()> {
    if rounds.len() < 100 {
        return Ok(());
    }
    let mut sorted = rounds.to_vec();
    sorted.sort_by(|a, b| a.to_step().total_cmp(&b.to_step()));
    let middle = sorted.len() / 2;
    let typical = &sorted[middle.saturating_sub(5)..(middle + 5).min(sorted.len())];
    let slowest = &sorted[sorted.len() - sorted.len() / 100..];
    let temporal = baton_worker::connect_temporal(&baton_tests::temporal_settings()).await?;
    println!(
        "\nWhere the answer → next step time goes, {sessions} sessions, {label} (ms, mean of each \
         group): the 10 rounds around the median and the slowest 1% ({} rounds).\n",
        slowest.len()
    );
    println!(
        "| rounds | answer → next step | submit | resume | resume → step chunk | of it, the first workflow task waiting in Temporal |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for (label, group) in [("median", typical), ("slowest 1%", slowest)] {
        let mut waits = Vec::new();
        for round in group {
            let events = temporal
                .get_workflow_handle::<baton_workflows::AgentRunWorkflow>(round.workflow_id.clone())
                .fetch_history(WorkflowFetchHistoryOptions::default())
                .into_events()
                .await
                .unwrap_or_default();
            waits.extend(first_task_wait(&events));
        }
        let mean = |f: fn(&Timed) -> f64| group.iter().map(f).sum::<f64>() / group.len() as f64;
        let (wait, _, _) = summary(waits.clone());
        println!(
            "| {label} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} (median of {}) |",
            mean(Timed::to_step),
            mean(|t| t.submit),
            mean(|t| t.resume),
            mean(|t| t.after_resume),
            wait,
            waits.len()
        );
    }
    Ok(())
}
