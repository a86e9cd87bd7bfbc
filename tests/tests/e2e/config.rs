//! An agent declared in TOML, with a client tool, runs end to end like one written in Rust.

use baton_client::Client as _;
use baton_core::{
    AgentRegistry, ChunkKind, Message, config::agents_from_toml, message::ToolOutcome,
    store::Continuation,
};
use baton_tests::Harness;
use serde_json::json;
use std::time::Duration;

const AGENTS: &str = r#"
[[agent]]
name = "form_filler"
system_prompt = "Fill the form with the user's help."
tools = ["calculator"]

[agent.model]
kind = "scripted"
turns = [
  { tool_calls = [
      { name = "ask_user", arguments = { question = "Your name?" } },
      { name = "calculator", arguments = { operation = "add", a = 1, b = 1 } },
  ] },
  { text = "Thanks {{result:ask_user}}; 1 + 1 = {{result:calculator}}" },
]

[[agent.client_tool]]
name = "ask_user"
description = "Asks the user."
input_schema = { type = "object", properties = { question = { type = "string" } }, required = ["question"] }
output_schema = { type = "string" }
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_from_toml_suspends_on_its_client_tool_and_finishes() {
    let agents = agents_from_toml(AGENTS, &baton_worker::demo::tool_catalogue()).unwrap();
    let harness = Harness::start(AgentRegistry::new(agents).unwrap()).await;
    let started = harness.client.start("form_filler", "go").await.unwrap();
    let session = started.session_id;
    let _limit = Duration::from_secs(60);
    let chunks = harness.chunks_until_suspended(&session).await;
    assert!(
        matches!(&chunks.last().unwrap().kind, ChunkKind::Suspended { tool_call_ids, .. } if tool_call_ids == &["form_filler_1_1"])
    );

    let bad = harness
        .client
        .submit(
            &session,
            "form_filler_1_1",
            &ToolOutcome::Result(json!({"name": "Ada"})),
        )
        .await;
    assert!(bad.is_err(), "the output schema from the file applies");
    let answer = harness
        .client
        .submit(
            &session,
            "form_filler_1_1",
            &ToolOutcome::Result(json!("Ada")),
        )
        .await
        .unwrap();
    assert_eq!(answer.continuation, Continuation::CallerResumes);
    let before = harness.client.status(&session).await.unwrap().last_sequence;
    harness.client.resume(&session).await.unwrap();
    harness.chunks_after_until_end(&session, before).await;
    let messages = harness.messages(&session).await;
    assert_eq!(
        messages.last().unwrap(),
        &Message::assistant("Thanks Ada; 1 + 1 = 2", vec![])
    );
    assert_eq!(
        messages[0],
        Message::system("Fill the form with the user's help.")
    );
}
