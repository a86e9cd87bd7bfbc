//! The agents the end-to-end tests and the benchmark run.

use baton_core::{Agent, AgentRegistry, ScriptedModel, tool::tool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

/// Set in a test worker's environment to make the `hold` tool block forever (until killed).
pub const HOLD_TOOL_ENV: &str = "BATON_TEST_HOLD_TOOL";
/// What the `hold` tool prints on stdout when it starts blocking.
pub const HOLDING_LINE: &str = "hold: holding";

#[derive(Debug, Deserialize, JsonSchema)]
pub struct AddInput {
    pub a: i64,
    pub b: i64,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct TextInput {
    pub text: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct NoInput {}

fn add() -> impl baton_core::ServerTool {
    tool("add", "Adds two integers.", |i: AddInput| async move {
        i.a.checked_add(i.b).ok_or("overflow")
    })
}

fn upper() -> impl baton_core::ServerTool {
    tool("upper", "Upper-cases text.", |i: TextInput| async move {
        Ok::<_, String>(i.text.to_uppercase())
    })
    .local()
}

/// `two_steps`: step 1 calls `add` (an activity) and `upper` (a local activity) at once; step 2
/// calls `add` with a bad input, which the model sees as a tool error; step 3 answers.
pub fn two_steps() -> Agent {
    let model = ScriptedModel::default()
        .call_all(&[
            ("add", json!({"a": 2, "b": 3})),
            ("upper", json!({"text": "baton"})),
        ])
        .call("add", json!({"a": "two", "b": 3}))
        .answer("{{result:upper}} says {{input}}");
    Agent::builder("two_steps")
        .system_prompt("test agent")
        .model(model)
        .tool(add())
        .tool(upper())
        .max_steps(5)
        .build()
        .unwrap()
}

/// `looper`: calls `add` every step; its cap of 3 steps is reached before any answer.
pub fn looper() -> Agent {
    let mut model = ScriptedModel::default();
    for i in 0..10 {
        model = model.call("add", json!({"a": i, "b": 1}));
    }
    Agent::builder("looper")
        .model(model)
        .tool(add())
        .max_steps(3)
        .build()
        .unwrap()
}

/// `holder`: step 1 calls `hold`, which blocks forever in a worker started with
/// [`HOLD_TOOL_ENV`] set and returns at once elsewhere; step 2 answers.
pub fn holder() -> Agent {
    let model = ScriptedModel::default()
        .call("hold", json!({}))
        .answer("released: {{result:hold}}");
    Agent::builder("holder")
        .model(model)
        .tool(tool(
            "hold",
            "Blocks while the worker is told to hold.",
            |_: NoInput| async {
                if std::env::var_os(HOLD_TOOL_ENV).is_some() {
                    println!("{HOLDING_LINE}");
                    std::future::pending::<()>().await;
                }
                Ok::<_, String>("done")
            },
        ))
        .build()
        .unwrap()
}

/// The script of a benchmark session: `steps - 1` steps calling one tool (`upper`, a local
/// activity, or `echo`, a regular one), then an answer.
pub fn bench_script(steps: u32, local_tools: bool) -> ScriptedModel {
    let tool = if local_tools { "upper" } else { "echo" };
    let mut model = ScriptedModel::default();
    for i in 1..steps {
        model = model.call(tool, json!({"text": format!("step {i}")}));
    }
    model.answer("done")
}

/// A benchmark agent of `steps` steps (its cap) around `model`, usually [`bench_script`].
pub fn bench_agent(name: &str, steps: u32, model: impl baton_core::Model + 'static) -> Agent {
    Agent::builder(name)
        .model(model)
        .tool(upper())
        .tool(tool(
            "echo",
            "Returns its text.",
            |i: TextInput| async move { Ok::<_, String>(i.text) },
        ))
        .max_steps(steps)
        .build()
        .unwrap()
}

/// Every test agent.
pub fn registry() -> AgentRegistry {
    AgentRegistry::new([two_steps(), looper(), holder()]).unwrap()
}
