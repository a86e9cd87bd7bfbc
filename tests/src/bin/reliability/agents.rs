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
/// A tree's root: one step calls its two children ([`TREE_CHILDREN`]) and a slow server tool,
/// the next answers.
pub const TREE_PARENT: &str = "tree_parent";
/// A tree's children, with their call id prefixes (a call id names one call in the whole tree):
/// each runs a slow server tool and a client call in one step (so it suspends, and its parent
/// with it), then answers.
pub const TREE_CHILDREN: [(&str, &str); 2] = [("tree_left", "tl"), ("tree_right", "tr")];

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
        .tool(slow_add())
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

fn slow_add() -> impl baton_core::ServerTool + 'static {
    tool("slow_add", "Adds slowly.", |i: AddInput| async move {
        tokio::time::sleep(SLOW_TOOL).await;
        i.a.checked_add(i.b).ok_or("overflow")
    })
}

fn tree_parent() -> anyhow::Result<Agent> {
    let model = ScriptedModel::default()
        .call_id_prefix("tp")
        .call_all(&[
            ("subagent__tree_left", json!({"message": "left"})),
            ("subagent__tree_right", json!({"message": "right"})),
            ("slow_add", json!({"a": 5, "b": 6})),
        ])
        .answer("children said {{result:subagent__tree_left}}, {{result:subagent__tree_right}}");
    let mut parent = Agent::builder(TREE_PARENT)
        .model(model)
        .tool(slow_add())
        .max_steps(5);
    for (child, _) in TREE_CHILDREN {
        parent = parent.sub_agent(child, "Asks the user, then answers.");
    }
    Ok(parent.build()?)
}

fn tree_child(name: &str, call_id_prefix: &str) -> anyhow::Result<Agent> {
    let model = ScriptedModel::default()
        .call_id_prefix(call_id_prefix)
        .call_all(&[
            ("slow_add", json!({"a": 1, "b": 1})),
            ("ask_user", json!({"question": "Which way?"})),
        ])
        .answer("child heard {{result:ask_user}}");
    Ok(Agent::builder(name)
        .model(model)
        .tool(slow_add())
        .client_tool(ask_user())
        .max_steps(5)
        .build()?)
}

/// Every agent of the campaign.
pub fn registry() -> AgentRegistry {
    let [(left, l), (right, r)] = TREE_CHILDREN;
    let agents = [
        mixed(),
        batch(),
        chatter(),
        tree_parent(),
        tree_child(left, l),
        tree_child(right, r),
    ]
    .into_iter()
    .collect::<anyhow::Result<Vec<_>>>()
    .expect("the campaign's agents are well-formed");
    AgentRegistry::new(agents).expect("the campaign's agent names are distinct")
}
