//! What a human-in-the-loop round costs Temporal, read from the histories: a suspended run whose
//! deadline is far away starts no deadline workflow (the deadline index holds it; see
//! `deadline_index.rs`), a near one is a delayed start (no child workflow, no workflow task or
//! timer before the deadline), and a resumed run drains its answers inside its first model step
//! (one activity before the model is called, not two). Also that a retried first step drains
//! nothing twice.

use async_trait::async_trait;
use baton_client::Client as _;
use baton_core::{
    Agent, ChunkKind, Message, Model, ModelRequest, ModelTurn, ScriptedModel, message::ToolOutcome,
    model, store::SessionAddress,
};
use baton_tests::{Harness, agents, tool_outcomes};
use serde_json::json;
use std::{
    sync::atomic::{AtomicBool, Ordering},
    time::Duration,
};
use temporalio_client::WorkflowFetchHistoryOptions;
use temporalio_common::protos::temporal::api::{
    enums::v1::EventType,
    history::v1::{HistoryEvent, history_event::Attributes},
};
use tokio::sync::mpsc;

pub(crate) async fn history(harness: &Harness, workflow_id: &str) -> Vec<HistoryEvent> {
    history_on(&harness.temporal, workflow_id).await
}

/// The history of the workflow `workflow_id`, read through `temporal`.
pub(crate) async fn history_on(
    temporal: &temporalio_client::Client,
    workflow_id: &str,
) -> Vec<HistoryEvent> {
    temporal
        .get_workflow_handle::<baton_workflows::AgentRunWorkflow>(workflow_id.to_owned())
        .fetch_history(WorkflowFetchHistoryOptions::default())
        .into_events()
        .await
        .unwrap()
}

pub(crate) fn count(events: &[HistoryEvent], kind: EventType) -> usize {
    events.iter().filter(|e| e.event_type() == kind).count()
}

/// The activities a history ran, in order: a regular one by its name where it was scheduled, a
/// local one as `local:<name>` where its marker (its completion) was recorded.
pub(crate) fn activity_trail(events: &[HistoryEvent]) -> Vec<String> {
    let short = |name: &str| name.rsplit("::").next().unwrap_or_default().to_owned();
    events
        .iter()
        .filter_map(|event| match &event.attributes {
            Some(Attributes::ActivityTaskScheduledEventAttributes(scheduled)) => {
                scheduled.activity_type.as_ref().map(|t| short(&t.name))
            }
            Some(Attributes::MarkerRecordedEventAttributes(_)) => {
                local_activity(event).map(|(name, _)| format!("local:{}", short(&name)))
            }
            _ => None,
        })
        .collect()
}

/// The type and attempt of a local activity's marker.
fn local_activity(event: &HistoryEvent) -> Option<(String, u32)> {
    let Some(Attributes::MarkerRecordedEventAttributes(marker)) = &event.attributes else {
        return None;
    };
    if marker.marker_name != "core_local_activity" {
        return None;
    }
    let data = marker.details.get("data")?.payloads.first()?;
    let data: serde_json::Value = serde_json::from_slice(&data.data).ok()?;
    Some((
        data["activity_type"].as_str()?.to_owned(),
        u32::try_from(data["attempt"].as_u64()?).ok()?,
    ))
}

/// Asserts that the deadline workflow of `run_id` is a start held for about an hour, with no
/// workflow task run yet.
pub(crate) async fn assert_delayed_deadline(harness: &Harness, session: &str, run_id: &str) {
    let deadline = history(harness, &format!("deadline__{session}__{run_id}")).await;
    assert_eq!(
        deadline.iter().map(|e| e.event_type()).collect::<Vec<_>>(),
        [EventType::WorkflowExecutionStarted]
    );
    let Some(Attributes::WorkflowExecutionStartedEventAttributes(start)) = &deadline[0].attributes
    else {
        panic!("a history opens with its start")
    };
    let backoff = start.first_workflow_task_backoff.as_ref().unwrap();
    assert!(backoff.seconds > 3000, "{backoff:?}");
}

/// Whether Temporal knows a workflow of this id.
pub(crate) async fn workflow_exists(harness: &Harness, workflow_id: &str) -> bool {
    let handle = harness
        .temporal
        .get_workflow_handle::<baton_workflows::AgentRunWorkflow>(workflow_id.to_owned());
    match handle
        .describe(temporalio_client::WorkflowDescribeOptions::default())
        .await
    {
        Ok(_) => true,
        Err(temporalio_client::errors::WorkflowInteractionError::NotFound(_)) => false,
        Err(error) => panic!("Temporal did not answer: {error}"),
    }
}

/// `patient_asker`: asks once, with an hour's deadline, and resumes by itself when it lapses.
pub(crate) fn patient_registry() -> baton_core::AgentRegistry {
    baton_core::AgentRegistry::new([agents::asker_deadline(
        "patient_asker",
        Duration::from_secs(3600),
    )])
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewind_to_a_suspension_starts_its_deadline_workflow_delayed_too() {
    let harness = Harness::start(patient_registry()).await;
    let started = harness.client.start("patient_asker", "go").await.unwrap();
    let session = started.session_id.clone();
    harness.chunks_until_suspended(&session).await;
    let rewound = harness
        .client
        .rewind(&session, 1, None, false)
        .await
        .unwrap();
    assert_eq!(
        rewound.status,
        baton_core::store::Status::SuspendedClientTool
    );
    assert_delayed_deadline(&harness, &session, &rewound.run_id).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_round_is_one_activity_and_a_far_deadline_no_workflow() {
    let harness = Harness::start(patient_registry()).await;
    let started = harness.suspended_run("patient_asker").await;
    let session = started.session_id.clone();

    // The suspended run started no child, and its deadline, an hour away (beyond the worker's
    // horizon), no workflow either: the deadline index holds it.
    let first = history(&harness, &started.workflow_id).await;
    assert_eq!(
        count(&first, EventType::StartChildWorkflowExecutionInitiated),
        0
    );
    // One workflow task: the model step ran in it, as a local activity, and suspended the run.
    assert_eq!(count(&first, EventType::WorkflowTaskScheduled), 1);
    assert_eq!(activity_trail(&first), ["local:model_step"]);
    let deadline_workflow = format!("deadline__{session}__{}", started.run_id);
    assert!(!workflow_exists(&harness, &deadline_workflow).await);
    assert_eq!(harness.store.indexed_deadlines().await.unwrap(), 1);

    // The resumed run's only activity before the model's answer is the model step itself, run
    // in the run's first workflow task, as is the completion: one workflow task in all.
    let answer = ToolOutcome::Result(json!({"answer": "yes"}));
    harness
        .client
        .submit(&session, "call_1_1", &answer)
        .await
        .unwrap();
    let resumed = harness.client.resume(&session).await.unwrap();
    let chunks = harness.chunks_after_until_end(&session, 0).await;
    assert!(matches!(
        chunks.last().map(|c| &c.kind),
        Some(ChunkKind::End { .. })
    ));
    let resumed_workflow = resumed.workflow_id.unwrap();
    harness.run_result(&resumed_workflow).await.unwrap();
    let second = history(&harness, &resumed_workflow).await;
    assert_eq!(
        activity_trail(&second),
        ["local:model_step", "local:complete_run"]
    );
    assert_eq!(count(&second, EventType::WorkflowTaskScheduled), 1);
    // The drain took the suspended run out of the index; no deadline workflow ever ran.
    assert_eq!(harness.store.indexed_deadlines().await.unwrap(), 0);
    assert!(!workflow_exists(&harness, &deadline_workflow).await);
    // The shape comes with the input: neither run records a version marker, nor the search
    // attribute update a marker brings, which holds the first workflow task back. The suspended
    // run's model step indexed its far deadline itself: no local activity arranged it. Every
    // marker is a local activity's.
    for (events, markers) in [(&first, 1), (&second, 2)] {
        assert_eq!(count(events, EventType::MarkerRecorded), markers);
        assert_eq!(count(events, EventType::UpsertWorkflowSearchAttributes), 0);
    }
    let messages = harness.messages(&session).await;
    assert_eq!(tool_outcomes(&messages), [&answer]);
    assert!(matches!(
        messages.last(),
        Some(Message::Assistant { content, .. }) if content.contains("yes")
    ));
}

/// Fails its first call made after a tool result (the resumed run's first step, right after the
/// drain), transiently; answers from the script otherwise.
struct FailsAfterTheDrain {
    failed: AtomicBool,
    script: ScriptedModel,
}

#[async_trait]
impl Model for FailsAfterTheDrain {
    fn name(&self) -> &str {
        "fails_after_the_drain"
    }

    async fn generate(
        &self,
        request: ModelRequest<'_>,
        deltas: mpsc::UnboundedSender<baton_core::model::Delta>,
    ) -> Result<ModelTurn, model::Error> {
        let after_result = matches!(request.messages.last(), Some(Message::Tool(_)));
        if after_result && !self.failed.swap(true, Ordering::SeqCst) {
            return Err(model::Error::new(
                model::ErrorKind::Network,
                "connection reset",
            ));
        }
        self.script.generate(request, deltas).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_first_step_of_a_resumed_run_drains_nothing_twice() {
    let script = ScriptedModel::default()
        .call("ask_user", json!({"question": "Name?"}))
        .answer("Hello {{result:ask_user}}");
    let agent = Agent::builder("asker_retried")
        .model(FailsAfterTheDrain {
            failed: AtomicBool::new(false),
            script,
        })
        .client_tool(
            baton_core::tool::ClientTool::new("ask_user", "asks", json!({"type": "object"}))
                .unwrap(),
        )
        .build()
        .unwrap();
    let harness = Harness::start(baton_core::AgentRegistry::new([agent]).unwrap()).await;
    let session = harness.suspended_session("asker_retried").await;
    let answer = ToolOutcome::Result(json!("Ada"));
    harness
        .client
        .submit(&session, "call_1_1", &answer)
        .await
        .unwrap();
    let resumed = harness.client.resume(&session).await.unwrap();
    let chunks = harness.chunks_after_until_end(&session, 0).await;
    let resumed_workflow = resumed.workflow_id.unwrap();
    harness.run_result(&resumed_workflow).await.unwrap();

    // The model step ran twice; the answer is in the log and on the stream once, before the
    // turn that used it.
    let events = history(&harness, &resumed_workflow).await;
    let steps: Vec<(String, u32)> = events.iter().filter_map(local_activity).collect();
    assert_eq!(
        steps[0],
        ("AgentActivities::model_step".to_owned(), 2),
        "the model step's attempts: {steps:?}"
    );
    let messages = harness.messages(&session).await;
    assert_eq!(tool_outcomes(&messages), [&answer]);
    assert!(matches!(
        messages.last(),
        Some(Message::Assistant { content, .. }) if content == "Hello Ada"
    ));
    let ends = chunks
        .iter()
        .filter(|c| matches!(&c.kind, ChunkKind::ToolEnd { tool_call_id, .. } if tool_call_id == "call_1_1"))
        .count();
    assert_eq!(ends, 1);
    let state = harness
        .store
        .session(&SessionAddress::root(&session))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(state.step_count, 2);
}
