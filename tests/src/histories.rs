//! Recorded workflow histories: the scenarios that record them from a real Temporal dev server,
//! and where they are kept, so the replay tests can check that today's workflow code still makes
//! the decisions those histories hold (Temporal's determinism rule for running workflows).
//!
//! A replay failure means that workflows already running would break on the change: make the
//! change compatible rather than record again (a new `RunShape` in the run's input, chosen by the
//! starter, with the old paths kept for inputs that do not name it; `ctx.patched` also works but
//! costs every run a marker and a search-attribute update). Record again for a new scenario
//! or after a compatible change, with Redis and Temporal running (`source scripts/services.sh`):
//! `cargo run -p baton-tests --bin record-histories`, then review the diff. A history holds
//! workflow, session, run and call ids, counts, small plans, the test task queue and the worker's
//! identity (`batond@<pid>`); no message text and no credential.

use crate::Harness;
use anyhow::{Context as _, ensure};
use baton_activities::io::DeadlineOutcome;
use baton_client::Client as _;
use baton_core::message::ToolOutcome;
use baton_workflows::DeadlineWorkflow;
use serde_json::json;
use std::path::PathBuf;
use temporalio_client::{UntypedWorkflow, WorkflowFetchHistoryOptions, WorkflowGetResultOptions};

/// One recorded history: its file name (without `.json`), its workflow type and what it shows.
pub struct Scenario {
    pub name: &'static str,
    pub workflow_type: &'static str,
    pub shows: &'static str,
}

/// Every recorded history: one per path through the two workflows that the test agents take. The
/// deadline workflow's second wait (a check that finds calls not yet lapsed) is not among them.
pub const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "agent_run_tools_then_answer",
        workflow_type: "AgentRunWorkflow",
        shows: "tool activities and a commit per step, then the answer completes the run",
    },
    Scenario {
        name: "agent_run_finishing_tool",
        workflow_type: "AgentRunWorkflow",
        shows: "a tool that ends the run: its activities, then the run completes, no further model call",
    },
    Scenario {
        name: "agent_run_failed_finishing_tool",
        workflow_type: "AgentRunWorkflow",
        shows: "a tool that would end the run fails: the model sees the error and answers",
    },
    Scenario {
        name: "agent_run_tool_then_suspend",
        workflow_type: "AgentRunWorkflow",
        shows: "a tool activity, then the suspended commit and the deadline's delayed start",
    },
    Scenario {
        name: "agent_run_resumed",
        workflow_type: "AgentRunWorkflow",
        shows: "a resumed run: the answers drained in its one model step, the answer",
    },
    Scenario {
        name: "agent_run_fails_at_max_steps",
        workflow_type: "AgentRunWorkflow",
        shows: "the step cap reached: the failure recorded, the workflow failed",
    },
    Scenario {
        name: "agent_run_suspends_in_the_model_step",
        workflow_type: "AgentRunWorkflow",
        shows: "a model step that suspends by itself, then the deadline's delayed start",
    },
    Scenario {
        name: "deadline_resumes_the_session",
        workflow_type: "DeadlineWorkflow",
        shows: "the delayed start lapses, the check claims the run, a resumed run starts as a child",
    },
    Scenario {
        name: "deadline_finds_the_run_gone",
        workflow_type: "DeadlineWorkflow",
        shows: "the deadline lapses after a resume: the check finds nothing to do",
    },
];

/// Histories of the workflow's earlier shapes, kept as they are and never recorded again, since
/// runs started then must still replay on today's code: before the `fewer-tasks-per-round` patch
/// (a resumed run's drain as an activity of its own, the deadline workflow as a child); with its
/// marker, before the starter chose the shape in the run's input (`RunShape`); and of the shape
/// `fewerTasksPerRound`, whose model step was a regular activity.
pub const EARLIER_SHAPES: &[Scenario] = &[
    Scenario {
        name: "agent_run_tool_then_suspend_before_fewer_tasks",
        workflow_type: "AgentRunWorkflow",
        shows: "before the patch: a tool activity, the suspended commit, the deadline child workflow",
    },
    Scenario {
        name: "agent_run_resumed_before_fewer_tasks",
        workflow_type: "AgentRunWorkflow",
        shows: "before the patch: the drain activity, one model step, the answer",
    },
    Scenario {
        name: "agent_run_suspends_in_the_model_step_before_fewer_tasks",
        workflow_type: "AgentRunWorkflow",
        shows: "before the patch: the model step suspends, then the deadline child workflow",
    },
    Scenario {
        name: "agent_run_tool_then_suspend_with_patch_marker",
        workflow_type: "AgentRunWorkflow",
        shows: "the patch recorded (no shape in the input): a tool activity, the suspended commit, the deadline's delayed start",
    },
    Scenario {
        name: "agent_run_resumed_with_patch_marker",
        workflow_type: "AgentRunWorkflow",
        shows: "the patch recorded (no shape in the input): the answers drained in the one model step",
    },
    Scenario {
        name: "agent_run_suspends_in_the_model_step_with_patch_marker",
        workflow_type: "AgentRunWorkflow",
        shows: "the patch recorded (no shape in the input): the model step suspends, the deadline's delayed start",
    },
    Scenario {
        name: "agent_run_tools_then_answer_regular_model_step",
        workflow_type: "AgentRunWorkflow",
        shows: "model steps as regular activities: tool activities and a commit per step, then the answer",
    },
    Scenario {
        name: "agent_run_finishing_tool_regular_model_step",
        workflow_type: "AgentRunWorkflow",
        shows: "model steps as regular activities: a tool that ends the run",
    },
    Scenario {
        name: "agent_run_failed_finishing_tool_regular_model_step",
        workflow_type: "AgentRunWorkflow",
        shows: "model steps as regular activities: a tool that would end the run fails, the model answers",
    },
    Scenario {
        name: "agent_run_tool_then_suspend_regular_model_step",
        workflow_type: "AgentRunWorkflow",
        shows: "model steps as regular activities: a tool activity, the suspended commit, the deadline's delayed start",
    },
    Scenario {
        name: "agent_run_resumed_regular_model_step",
        workflow_type: "AgentRunWorkflow",
        shows: "model steps as regular activities: the answers drained in the one model step, the answer",
    },
    Scenario {
        name: "agent_run_fails_at_max_steps_regular_model_step",
        workflow_type: "AgentRunWorkflow",
        shows: "model steps as regular activities: the step cap reached, the failure recorded",
    },
    Scenario {
        name: "agent_run_suspends_in_the_model_step_regular_model_step",
        workflow_type: "AgentRunWorkflow",
        shows: "model steps as regular activities: the model step suspends, the deadline's delayed start",
    },
];

/// The folder of the recorded histories.
pub fn directory() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/histories")
}

/// The path of one scenario's history.
pub fn path(scenario: &Scenario) -> PathBuf {
    directory().join(format!("{}.json", scenario.name))
}

/// Runs every scenario on `harness` (serving [`crate::agents::registry`]) and returns each
/// scenario's history as JSON, in the order of [`SCENARIOS`].
pub async fn record(harness: &Harness) -> anyhow::Result<Vec<(&'static Scenario, Vec<u8>)>> {
    let (tools, finishing, suspension, failure, deadline, deadline_gone) = tokio::try_join!(
        tools_then_answer(harness),
        finishing_tools(harness),
        suspend_then_resume(harness),
        fail_at_max_steps(harness),
        deadline_resumes(harness),
        deadline_finds_the_run_gone(harness),
    )?;
    let workflow_ids: Vec<(&str, String)> = [
        tools,
        finishing,
        suspension,
        failure,
        deadline,
        deadline_gone,
    ]
    .into_iter()
    .flatten()
    .collect();
    let mut recorded = Vec::new();
    for scenario in SCENARIOS {
        let workflow_id = workflow_ids
            .iter()
            .find(|(name, _)| *name == scenario.name)
            .map(|(_, id)| id)
            .with_context(|| format!("no scenario ran {}", scenario.name))?;
        recorded.push((scenario, history_json(harness, workflow_id).await?));
    }
    Ok(recorded)
}

/// One workflow's whole history, pretty-printed so that a re-recording reads as a diff.
async fn history_json(harness: &Harness, workflow_id: &str) -> anyhow::Result<Vec<u8>> {
    let compact = harness
        .temporal
        .get_workflow_handle::<UntypedWorkflow>(workflow_id)
        .fetch_history(WorkflowFetchHistoryOptions::builder().build())
        .to_json()
        .await?;
    let value: serde_json::Value = serde_json::from_slice(&compact)?;
    let mut pretty = serde_json::to_vec_pretty(&value)?;
    pretty.push(b'\n');
    Ok(pretty)
}

type Recorded = Vec<(&'static str, String)>;

/// `two_steps`: two steps of tools, then an answer.
async fn tools_then_answer(harness: &Harness) -> anyhow::Result<Recorded> {
    let started = harness.client.start("two_steps", "go").await?;
    harness.run_result(&started.workflow_id).await?;
    Ok(vec![("agent_run_tools_then_answer", started.workflow_id)])
}

/// `finisher` and `finisher_failing`: a tool that ends the run, once succeeding and once failing.
async fn finishing_tools(harness: &Harness) -> anyhow::Result<Recorded> {
    let finished = harness.client.start("finisher", "go").await?;
    let failed = harness.client.start("finisher_failing", "go").await?;
    harness.run_result(&finished.workflow_id).await?;
    harness.run_result(&failed.workflow_id).await?;
    Ok(vec![
        ("agent_run_finishing_tool", finished.workflow_id),
        ("agent_run_failed_finishing_tool", failed.workflow_id),
    ])
}

/// `asker`: a tool and a client call, answered and resumed.
async fn suspend_then_resume(harness: &Harness) -> anyhow::Result<Recorded> {
    let started = harness.client.start("asker", "go").await?;
    harness.run_result(&started.workflow_id).await?;
    let resumed_workflow_id = answer_and_resume(harness, &started.session_id, "call_1_2").await?;
    Ok(vec![
        ("agent_run_tool_then_suspend", started.workflow_id),
        ("agent_run_resumed", resumed_workflow_id),
    ])
}

/// Answers `tool_call_id` of a suspended session, resumes it and waits for the resumed run to
/// end; returns the resumed run's workflow id.
async fn answer_and_resume(
    harness: &Harness,
    session_id: &str,
    tool_call_id: &str,
) -> anyhow::Result<String> {
    let yes = ToolOutcome::Result(json!({"answer": "yes"}));
    harness
        .client
        .submit(session_id, tool_call_id, &yes)
        .await?;
    let resumed = harness.client.resume(session_id).await?;
    let workflow_id = resumed
        .workflow_id
        .context("a resumed run has a workflow")?;
    harness.run_result(&workflow_id).await?;
    Ok(workflow_id)
}

/// `looper`: reaches its step cap, so the run fails.
async fn fail_at_max_steps(harness: &Harness) -> anyhow::Result<Recorded> {
    let started = harness.client.start("looper", "go").await?;
    let outcome = harness.run_result(&started.workflow_id).await;
    ensure!(
        outcome.is_err(),
        "the looper's run should fail: {outcome:?}"
    );
    Ok(vec![("agent_run_fails_at_max_steps", started.workflow_id)])
}

/// `asker_deadline`: nobody answers, so its deadline workflow resumes the session.
async fn deadline_resumes(harness: &Harness) -> anyhow::Result<Recorded> {
    let started = harness.client.start("asker_deadline", "go").await?;
    harness.run_result(&started.workflow_id).await?;
    let deadline_id = deadline_workflow_id(&started.session_id, &started.run_id);
    let outcome = deadline_outcome(harness, &deadline_id).await?;
    let DeadlineOutcome::Resumed { workflow_id, .. } = outcome else {
        anyhow::bail!("the deadline should have resumed the session: {outcome:?}");
    };
    harness.run_result(&workflow_id).await?;
    Ok(vec![
        ("agent_run_suspends_in_the_model_step", started.workflow_id),
        ("deadline_resumes_the_session", deadline_id),
    ])
}

/// `asker_patient`: answered and resumed before its deadline, which then does nothing.
async fn deadline_finds_the_run_gone(harness: &Harness) -> anyhow::Result<Recorded> {
    let started = harness.client.start("asker_patient", "go").await?;
    harness.run_result(&started.workflow_id).await?;
    answer_and_resume(harness, &started.session_id, "call_1_1").await?;
    let deadline_id = deadline_workflow_id(&started.session_id, &started.run_id);
    let outcome = deadline_outcome(harness, &deadline_id).await?;
    ensure!(
        outcome == DeadlineOutcome::Nothing,
        "the deadline lapsed before the resume (a stalled machine?); record again: {outcome:?}"
    );
    Ok(vec![("deadline_finds_the_run_gone", deadline_id)])
}

fn deadline_workflow_id(session_id: &str, run_id: &str) -> String {
    format!("deadline__{session_id}__{run_id}")
}

async fn deadline_outcome(harness: &Harness, deadline_id: &str) -> anyhow::Result<DeadlineOutcome> {
    Ok(harness
        .temporal
        .get_workflow_handle::<DeadlineWorkflow>(deadline_id)
        .get_result(WorkflowGetResultOptions::default())
        .await?)
}
