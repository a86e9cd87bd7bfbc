//! Durable suspension on client calls: the run commits its state, its workflow ends, and nothing
//! waits in memory.

use baton_activities::io::RunOutcome;
use baton_client::Client as _;
use baton_core::{
    ChunkKind, Message, StreamChunk,
    message::{ToolCall, ToolOutcome},
    store::{PendingKind, SessionAddress, Status, Suspension, now_ms},
};
use baton_tests::{Harness, agents};
use serde_json::json;
use temporalio_client::{WorkflowDescribeOptions, WorkflowExecutionStatus};

fn describe(chunk: &StreamChunk) -> String {
    match &chunk.kind {
        ChunkKind::StepStart { step } => format!("step_start {step}"),
        ChunkKind::ToolStart {
            tool_call_id,
            tool_name,
            ..
        } => format!("tool_start {tool_call_id} {tool_name}"),
        ChunkKind::ToolEnd {
            tool_call_id,
            result,
            ..
        } => {
            format!(
                "tool_end {tool_call_id} {}",
                result.clone().unwrap_or_default()
            )
        }
        ChunkKind::StepEnd { step } => format!("step_end {step}"),
        ChunkKind::Suspended {
            step,
            tool_call_ids,
        } => format!("suspended {step} {}", tool_call_ids.join(",")),
        other => other.name().to_owned(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_with_a_client_call_suspends_after_its_server_tools_and_no_workflow_runs() {
    let harness = Harness::start(agents::registry()).await;
    let before = now_ms();
    let started = harness.client.start("asker", "go").await.unwrap();
    let chunks = harness.chunks_until_suspended(&started.session_id).await;
    let described: Vec<String> = chunks.iter().map(describe).collect();
    assert_eq!(
        described,
        [
            "run_start",
            "step_start 1",
            "tool_start call_1_1 add",
            "tool_start call_1_2 ask_user",
            "tool_end call_1_1 3",
            "step_end 1",
            "suspended 1 call_1_2",
        ]
    );

    // The workflow ended, returning the awaited calls: nothing waits in memory.
    let outcome = harness.run_result(&started.workflow_id).await.unwrap();
    assert_eq!(
        outcome,
        RunOutcome::Suspended {
            tool_call_ids: vec!["call_1_2".into()]
        }
    );
    let description = harness
        .temporal
        .get_workflow_handle::<baton_workflows::AgentRunWorkflow>(started.workflow_id.clone())
        .describe(WorkflowDescribeOptions::default())
        .await
        .unwrap();
    assert_eq!(description.status(), WorkflowExecutionStatus::Completed);

    let address = SessionAddress::root(&started.session_id);
    let state = harness.client.status(&started.session_id).await.unwrap();
    assert_eq!(state.status, Status::SuspendedClientTool);
    assert_eq!(state.step_count, 1);
    assert_eq!(
        state.suspension,
        Some(Suspension {
            run_id: started.run_id.clone(),
            step: 1,
            tool_call_ids: vec!["call_1_2".into()]
        })
    );
    let add = ToolCall {
        id: "call_1_1".into(),
        name: "add".into(),
        arguments: json!({"a": 1, "b": 2}),
        provider_id: None,
    };
    let ask = ToolCall {
        id: "call_1_2".into(),
        name: "ask_user".into(),
        arguments: json!({"question": "Proceed?"}),
        provider_id: None,
    };
    assert_eq!(
        harness.store.messages(&address).await.unwrap(),
        vec![
            Message::user("go"),
            Message::assistant("", vec![add.clone(), ask.clone()]),
            Message::tool_result(&add, ToolOutcome::Result(json!(3))),
        ]
    );
    let (call, run) = harness.one_pending_call(&address).await;
    assert_eq!(run, started.run_id);
    assert_eq!(
        (call.tool_call_id.as_str(), call.tool_name.as_str()),
        ("call_1_2", "ask_user")
    );
    assert_eq!(
        (call.kind, call.step, &call.input),
        (PendingKind::Client, 1, &ask.arguments)
    );
    // The tool's own timeout (120 s) sets the deadline.
    let window = before + 120_000..=now_ms() + 120_000;
    assert!(
        window.contains(&call.deadline_at),
        "{} not in {window:?}",
        call.deadline_at
    );
    assert_eq!(call.completed_retention_ms, 24 * 60 * 60 * 1000);
    assert_eq!(
        harness
            .store
            .call_owner(&started.session_id, "call_1_2")
            .await
            .unwrap()
            .as_deref(),
        Some(started.session_id.as_str())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_of_client_calls_only_suspends_inside_the_model_step() {
    let harness = Harness::start(agents::registry()).await;
    let before = now_ms();
    let started = harness.client.start("asker_only", "hi").await.unwrap();
    let chunks = harness.chunks_until_suspended(&started.session_id).await;
    assert_eq!(
        chunks.iter().map(describe).collect::<Vec<_>>(),
        [
            "run_start",
            "step_start 1",
            "tool_start call_1_1 ask_user",
            "step_end 1",
            "suspended 1 call_1_1"
        ]
    );
    let outcome = harness.run_result(&started.workflow_id).await.unwrap();
    assert_eq!(
        outcome,
        RunOutcome::Suspended {
            tool_call_ids: vec!["call_1_1".into()]
        }
    );

    let pending = harness
        .store
        .pending_calls(&SessionAddress::root(&started.session_id))
        .await
        .unwrap();
    // No tool timeout: the agent's (60 s) applies.
    let window = before + 60_000..=now_ms() + 60_000;
    assert!(window.contains(&pending[0].deadline_at), "{pending:?}");
    assert_eq!(
        harness
            .client
            .status(&started.session_id)
            .await
            .unwrap()
            .status,
        Status::SuspendedClientTool
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_call_with_a_bad_input_is_a_tool_error_the_model_corrects() {
    let harness = Harness::start(agents::registry()).await;
    let session = harness.suspended_session("asker_sloppy").await;

    let messages = harness.messages(&session).await;
    assert_eq!(messages.len(), 4, "{messages:?}");
    let Message::Tool(refused) = &messages[2] else {
        panic!("expected the bad call's error, got {:?}", messages[2]);
    };
    assert_eq!(refused.tool_call_id, "call_1_1");
    let ToolOutcome::Error(error) = &refused.outcome else {
        panic!("expected an error, got {:?}", refused.outcome);
    };
    assert_eq!(error.code, baton_core::message::codes::INVALID_TOOL_INPUT);
    assert!(error.message.contains("question"), "{}", error.message);
    // Only the corrected call waits for the client.
    let pending = harness
        .store
        .pending_calls(&SessionAddress::root(&session))
        .await
        .unwrap();
    let ids: Vec<&str> = pending
        .iter()
        .map(|call| call.tool_call_id.as_str())
        .collect();
    assert_eq!(ids, ["call_2_1"]);
    let answer = ToolOutcome::Result(json!({"answer": "Ann"}));
    let outcome = harness
        .answer_and_finish(&session, "call_2_1", &answer)
        .await;
    assert!(
        matches!(outcome, RunOutcome::Completed { .. }),
        "{outcome:?}"
    );
}
