//! A tree and its state from TOML alone: a state tool sets declared fields of the agent's
//! state from the model's input, a sub-agent's fold copies the child's output and a field of
//! its state into the parent's, and every scripted agent's call ids are its own.

use baton_client::Client as _;
use baton_core::{AgentRegistry, ChunkKind, config::agents_from_toml};
use baton_tests::{Harness, WAIT_LIMIT};
use serde_json::json;

const AGENTS: &str = r#"
[[agent]]
name = "trip_planner"

[agent.model]
kind = "scripted"
turns = [
  { tool_calls = [
      { name = "remember", arguments = { notes = "likes art" } },
      { name = "subagent__scout", arguments = { message = "find a city" } },
      { name = "subagent__scout", arguments = { message = "find another" } },
  ] },
  { text = "planned" },
]

[agent.state]
schema = { type = "object", properties = { city = { type = "string" }, notes = { type = "string" }, stars = { type = "integer" } } }

[[agent.state_tool]]
name = "remember"
description = "Remembers notes about the trip."
fields = ["notes"]

[[agent.sub_agent]]
type = "scout"
description = "Finds a city."
fold = [{ into = "/city", from = "output" }, { into = "/stars", from = "/stars" }]

[[agent]]
name = "scout"

[agent.model]
kind = "scripted"
turns = [
  { tool_calls = [{ name = "rate", arguments = { stars = 4 } }] },
  { text = "Paris" },
]

[agent.state]
schema = { type = "object", properties = { stars = { type = "integer" } } }

[[agent.state_tool]]
name = "rate"
fields = ["stars"]
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_toml_tree_sets_and_folds_its_state_without_rust() {
    let agents = agents_from_toml(AGENTS, &baton_worker::demo::tool_catalogue()).unwrap();
    let harness = Harness::start(AgentRegistry::new(agents).unwrap()).await;
    let started = harness.client.start("trip_planner", "go").await.unwrap();
    let chunks = harness
        .chunks_until_end(&started.session_id, WAIT_LIMIT)
        .await;
    let Some(ChunkKind::End { output, state, .. }) = chunks.last().map(|chunk| &chunk.kind) else {
        panic!("no end: {chunks:?}");
    };
    assert_eq!(output.as_deref(), Some("planned"));
    assert_eq!(
        state.as_ref(),
        Some(&json!({"city": "Paris", "notes": "likes art", "stars": 4}))
    );
    // Each child set its own state with its own state tool.
    let child_ends: Vec<_> = chunks
        .iter()
        .filter(|chunk| chunk.kind.name() == "subagent_end")
        .collect();
    assert_eq!(child_ends.len(), 2);
    // The scripted ids are each agent's own: the planner's, and the scouts' (the second scout's
    // repeated id made unique in the tree).
    let ids: Vec<&str> = chunks
        .iter()
        .filter_map(|chunk| match &chunk.kind {
            ChunkKind::ToolStart { tool_call_id, .. } => Some(tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    assert!(
        ids.starts_with(&["trip_planner_1_1", "trip_planner_1_2", "trip_planner_1_3"]),
        "{ids:?}"
    );
    assert!(ids.contains(&"scout_1_1"), "{ids:?}");
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "{ids:?}");
}
