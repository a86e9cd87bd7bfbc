//! Tools that end the run: a successful call's result is the run's output, with no further
//! model call; a failed one goes back to the model like any tool error.

use baton_activities::io::RunOutcome;
use baton_client::Client as _;
use baton_core::{
    Message,
    message::{ToolCall, ToolOutcome},
    store::Status,
};
use baton_tests::{Harness, WAIT_LIMIT, agents, tool_outcomes};
use serde_json::json;

async fn finished(agent: &str) {
    let harness = Harness::start(agents::registry()).await;
    let started = harness.client.start(agent, "go").await.unwrap();
    let chunks = harness
        .chunks_until_end(&started.session_id, WAIT_LIMIT)
        .await;
    let outcome = harness.run_result(&started.workflow_id).await.unwrap();
    assert_eq!(outcome, RunOutcome::Completed { steps: 1 });
    let output = "report filed: all good";
    let state = harness.client.status(&started.session_id).await.unwrap();
    assert_eq!(
        (state.status, state.step_count, state.output.as_deref()),
        (Status::Completed, 1, Some(output))
    );
    let calls = [
        ToolCall {
            id: "call_1_1".into(),
            name: "add".into(),
            arguments: json!({"a": 2, "b": 2}),
            provider_id: None,
        },
        ToolCall {
            id: "call_1_2".into(),
            name: "report".into(),
            arguments: json!({"text": "all good"}),
            provider_id: None,
        },
    ];
    // One model call: the log ends with the tools' results, and the step's other tool ran too.
    assert_eq!(
        harness.messages(&started.session_id).await,
        vec![
            Message::user("go"),
            Message::assistant("", calls.to_vec()),
            Message::tool_result(&calls[0], ToolOutcome::Result(json!(4))),
            Message::tool_result(&calls[1], ToolOutcome::Result(json!(output))),
        ]
    );
    let kinds: Vec<&str> = chunks.iter().map(|c| c.kind.name()).collect();
    assert_eq!(kinds.iter().filter(|k| **k == "step_start").count(), 1);
    assert!(matches!(
        &chunks.last().unwrap().kind,
        baton_core::ChunkKind::End { output: Some(o), .. } if o == output
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finishing_tool_run_as_an_activity_ends_the_run_with_its_result() {
    finished("finisher").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finishing_inline_tool_ends_the_run_with_its_result() {
    finished("finisher_inline").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_finishing_tool_goes_back_to_the_model() {
    let harness = Harness::start(agents::registry()).await;
    let started = harness
        .client
        .start("finisher_failing", "go")
        .await
        .unwrap();
    harness
        .chunks_until_end(&started.session_id, WAIT_LIMIT)
        .await;
    let outcome = harness.run_result(&started.workflow_id).await.unwrap();
    assert_eq!(outcome, RunOutcome::Completed { steps: 2 });
    let log = harness.messages(&started.session_id).await;
    let outcomes = tool_outcomes(&log);
    assert!(
        matches!(outcomes[..], [ToolOutcome::Result(_), ToolOutcome::Error(e)] if e.code == "invalid_tool_input"),
        "{outcomes:?}"
    );
    let state = harness.client.status(&started.session_id).await.unwrap();
    assert_eq!(state.status, Status::Completed);
    let output = state.output.unwrap();
    assert!(
        output.starts_with("The report failed: ") && output.contains("invalid_tool_input"),
        "{output}"
    );
}
