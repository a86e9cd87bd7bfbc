//! An MCP server whose tool list changes while the worker runs: the test server's `grow` adds a
//! tool and says so (`notifications/tools/list_changed`: on a `subscriptions/listen` stream at
//! MCP 2026-07-28, unasked on the older protocol). An agent with the server's toolset offers
//! the new tool from the next step on, never within the step that changed it, and the model's
//! call of it reaches the server.

use baton_client::Client as _;
use baton_core::{Agent, AgentRegistry, scripted::ScriptedModel, store::Status};
use baton_mcp::McpServer;
use baton_tests::{Harness, mcp_agents, recording::RecordingModel};
use serde_json::json;
use std::sync::Arc;

/// Runs an agent with `server`'s toolset whose model grows `echo_back`, then calls it: the
/// tools each model call was offered, and the run's output.
async fn grow_then_call(agent_name: &str, server: McpServer) -> (Vec<Vec<String>>, String) {
    let toolset = baton_mcp::toolset(
        server
            .only(&["add", "grow", "echo_back"])
            .rename("add", "sum"),
    )
    .await
    .unwrap();
    let (model, calls) = RecordingModel::new(
        ScriptedModel::default()
            .call("grow", json!({"name": "echo_back"}))
            .call("echo_back", json!({"text": "hi"}))
            .answer("{{result:echo_back}}"),
    );
    let agent = Agent::builder(agent_name)
        .model(model)
        .toolset(Arc::new(toolset))
        .build()
        .unwrap();
    let harness = Harness::start(AgentRegistry::new([agent]).unwrap()).await;
    let started = harness.client.start(agent_name, "go").await.unwrap();
    harness
        .chunks_until_end(&started.session_id, baton_tests::WAIT_LIMIT)
        .await;
    let state = harness.client.status(&started.session_id).await.unwrap();
    assert_eq!(state.status, Status::Completed, "{state:?}");
    let offered = calls
        .lock()
        .unwrap()
        .iter()
        .map(|call| call.tools.clone())
        .collect();
    (offered, state.output.unwrap_or_default())
}

fn assert_grown_from_the_next_step(offered: &[Vec<String>], output: &str) {
    // `only` selects the grown tool by its name on the server; `add` is offered as renamed.
    assert_eq!(offered[0], ["grow", "sum"], "{offered:?}");
    assert_eq!(offered[1], ["echo_back", "grow", "sum"], "{offered:?}");
    assert_eq!(offered.len(), 3, "{offered:?}");
    assert_eq!(output, r#"{"result":"echo_back: hi"}"#);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_the_server_adds_is_offered_from_the_next_step_on() {
    let (log, calls) = mcp_agents::call_log();
    let (offered, output) = grow_then_call("mcp_grower", mcp_agents::test_server(&log)).await;
    assert_grown_from_the_next_step(&offered, &output);
    let calls = calls();
    assert_eq!(calls.len(), 1, "grow ran once: {calls:?}");
    assert!(calls[0].starts_with("grow "), "{calls:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_older_protocols_list_changed_notification_is_followed_too() {
    let (log, _) = mcp_agents::call_log();
    let server = mcp_agents::test_server(&log).hold_questions();
    let (offered, output) = grow_then_call("mcp_old_grower", server).await;
    assert_grown_from_the_next_step(&offered, &output);
}
