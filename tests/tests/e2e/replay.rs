//! Replays the recorded workflow histories (`tests/fixtures/histories/`) against today's workflow
//! code: a change that would make a running workflow take another path than its history (an
//! activity reordered, added or removed, a timer or child workflow dropped) fails here, not in
//! production. Replay compares the commands, not their arguments: a changed timer duration or
//! activity input passes. Needs neither Redis nor Temporal. See `baton_tests::histories` for
//! recording them again.

use baton_tests::histories::{self, EARLIER_SHAPES, SCENARIOS, Scenario};
use baton_workflows::{AgentRunWorkflow, DeadlineWorkflow};
use temporalio_client::WorkflowHistory;
use temporalio_common::protos::temporal::api::history::v1::history_event::Attributes;
use temporalio_sdk::workflow_replayer::{
    WorkflowReplayFailure, WorkflowReplayResult, WorkflowReplayer, WorkflowReplayerOptions,
};

fn replayer() -> WorkflowReplayer {
    let options = WorkflowReplayerOptions::new()
        .register_workflow::<AgentRunWorkflow>()
        .unwrap()
        .register_workflow::<DeadlineWorkflow>()
        .unwrap()
        .build();
    WorkflowReplayer::new(options).unwrap()
}

fn recorded(scenario: &Scenario) -> Vec<u8> {
    let path = histories::path(scenario);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The workflow type a history started.
fn workflow_type(result: &WorkflowReplayResult) -> String {
    match result
        .history
        .events()
        .first()
        .and_then(|e| e.attributes.as_ref())
    {
        Some(Attributes::WorkflowExecutionStartedEventAttributes(started)) => started
            .workflow_type
            .as_ref()
            .map(|t| t.name.clone())
            .unwrap_or_default(),
        other => panic!("a history starts with its workflow's start: {other:?}"),
    }
}

#[tokio::test]
async fn every_recorded_history_replays_on_todays_workflows() {
    let scenarios: Vec<&Scenario> = SCENARIOS.iter().chain(EARLIER_SHAPES).collect();
    let histories = scenarios
        .iter()
        .map(|scenario| WorkflowHistory::from_json(&recorded(scenario)).unwrap());
    let results = replayer().replay_workflows(histories).await.unwrap();
    assert_eq!(results.len(), scenarios.len());
    // Every history is checked before failing, so one run names every scenario a change broke.
    let mut broken = Vec::new();
    for (scenario, result) in scenarios.iter().zip(&results) {
        assert_eq!(
            workflow_type(result),
            scenario.workflow_type,
            "{}",
            scenario.name
        );
        assert!(result.history.events().len() > 5, "{}", scenario.name);
        if let Some(failure) = &result.replay_failure {
            broken.push(format!("{} ({}): {failure}", scenario.name, scenario.shows));
        }
    }
    assert!(
        broken.is_empty(),
        "histories that no longer replay:\n{}",
        broken.join("\n")
    );
}

#[tokio::test]
async fn a_history_the_code_would_not_make_is_reported_as_nondeterministic() {
    // The first regular activity of this run is a tool its first model step left to an activity;
    // a history that scheduled another one is what a reordered workflow would meet.
    let mut history: serde_json::Value = serde_json::from_slice(&recorded(&SCENARIOS[0])).unwrap();
    let scheduled = history["events"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find_map(|event| event["attributes"].get_mut("ActivityTaskScheduledEventAttributes"))
        .expect("the run scheduled an activity");
    scheduled["activity_type"]["name"] = "AgentActivities::no_such_activity".into();
    let tampered = WorkflowHistory::from_json(&serde_json::to_vec(&history).unwrap()).unwrap();
    let results = replayer().replay_workflows([tampered]).await.unwrap();
    assert!(
        matches!(
            results[0].replay_failure,
            Some(WorkflowReplayFailure::Nondeterminism { .. })
        ),
        "{:?}",
        results[0].replay_failure
    );
}
