//! The agents of the fault campaign, served by its server and worker processes.

use baton_core::{Agent, AgentRegistry, ScriptedModel, tool::ClientTool, tool::tool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use std::time::Duration;

/// The agent most scenarios drive: server tools (one an activity, one inline), a client tool and
/// an approval in one batch, then a second step of server tools, then the answer.
pub const MIXED: &str = "mixed";
/// One step of [`BATCH_CALLS`] client calls, then the answer.
pub const BATCH: &str = "batch";
pub const BATCH_CALLS: usize = 5;
/// Answers at once: what generated `/start` requests may create.
pub const CHATTER: &str = "chatter";

#[derive(Debug, Deserialize, JsonSchema)]
struct AddInput {
    a: i64,
    b: i64,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct TextInput {
    text: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct Transfer {
    to: String,
    amount: i64,
}

/// How long `slow_add` takes: long enough that a killed worker is often caught inside a tool.
const SLOW_TOOL: Duration = Duration::from_millis(150);

fn ask_user() -> ClientTool {
    let schema = json!({
        "type": "object",
        "properties": {"question": {"type": "string"}},
        "required": ["question"]
    });
    ClientTool::new("ask_user", "Asks the user a question.", schema)
        .expect("the ask_user schema is a valid JSON Schema")
        .timeout(Duration::from_secs(900))
}

fn mixed() -> anyhow::Result<Agent> {
    let model = ScriptedModel::default()
        .call_all(&[
            ("slow_add", json!({"a": 1, "b": 2})),
            ("ask_user", json!({"question": "Proceed?"})),
            ("transfer", json!({"to": "alice", "amount": 10})),
        ])
        .call_all(&[
            ("slow_add", json!({"a": 3, "b": 4})),
            ("upper", json!({"text": "baton"})),
        ])
        .answer("done: {{result:ask_user}}");
    let slow_add = tool("slow_add", "Adds slowly.", |i: AddInput| async move {
        tokio::time::sleep(SLOW_TOOL).await;
        i.a.checked_add(i.b).ok_or("overflow")
    });
    let upper = tool("upper", "Upper-cases text.", |i: TextInput| async move {
        Ok::<_, String>(i.text.to_uppercase())
    })
    .inline();
    let transfer = tool("transfer", "Sends money.", |t: Transfer| async move {
        Ok::<_, String>(format!("sent {} to {}", t.amount, t.to))
    })
    .requires_approval();
    Ok(Agent::builder(MIXED)
        .system_prompt("campaign agent")
        .model(model)
        .tool(slow_add)
        .tool(upper)
        .tool(transfer)
        .client_tool(ask_user())
        .max_steps(5)
        .build()?)
}

fn batch() -> anyhow::Result<Agent> {
    let calls: Vec<(&str, serde_json::Value)> = (0..BATCH_CALLS)
        .map(|i| ("ask_user", json!({"question": format!("question {i}")})))
        .collect();
    let model = ScriptedModel::default()
        .call_all(&calls)
        .answer("answered: {{result:ask_user}}");
    Ok(Agent::builder(BATCH)
        .model(model)
        .client_tool(ask_user())
        .build()?)
}

fn chatter() -> anyhow::Result<Agent> {
    let model = ScriptedModel::default().answer("heard: {{input}}");
    Ok(Agent::builder(CHATTER).model(model).build()?)
}

/// Every agent of the campaign.
pub fn registry() -> AgentRegistry {
    let agents = [mixed(), batch(), chatter()]
        .into_iter()
        .collect::<anyhow::Result<Vec<_>>>()
        .expect("the campaign's agents are well-formed");
    AgentRegistry::new(agents).expect("the campaign's agent names are distinct")
}
