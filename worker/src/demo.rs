//! The demo agents: by default a scripted model (no API key, fully offline) with two server
//! tools, a calculator and a clock; `batond --model` puts a real provider in the script's place.

use baton_core::{
    Agent, AgentRegistry, Model, ScriptedModel,
    config::ToolCatalogue,
    tool::{ClientTool, RenderHint, tool},
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use std::{
    sync::Arc,
    time::{SystemTime, UNIX_EPOCH},
};

/// Arithmetic the calculator can do.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    Add,
    Subtract,
    Multiply,
    Divide,
}

/// Input of the calculator tool.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Calculation {
    pub operation: Operation,
    pub a: f64,
    pub b: f64,
}

/// Input of the clock tool (it takes none).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct NoInput {}

/// Applies one arithmetic operation; division by zero is an error.
pub fn calculate(input: &Calculation) -> Result<f64, String> {
    let Calculation { operation, a, b } = *input;
    match operation {
        Operation::Add => Ok(a + b),
        Operation::Subtract => Ok(a - b),
        Operation::Multiply => Ok(a * b),
        Operation::Divide if b == 0.0 => Err("division by zero".to_owned()),
        Operation::Divide => Ok(a / b),
    }
}

/// Whole numbers as integers (`42`, not `42.0`), so answers read naturally.
fn plain_number(value: f64) -> serde_json::Value {
    if value.fract() == 0.0 && value.abs() < 9.0e15 {
        json!(value as i64)
    } else {
        json!(value)
    }
}

/// The current UTC time as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn utc_now() -> String {
    let seconds = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format_utc(seconds)
}

fn format_utc(unix_seconds: u64) -> String {
    let days = (unix_seconds / 86_400) as i64;
    let second_of_day = unix_seconds % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        second_of_day / 3600,
        second_of_day / 60 % 60,
        second_of_day % 60
    )
}

fn calculator() -> impl baton_core::ServerTool + 'static {
    tool(
        "calculator",
        "Applies add, subtract, multiply or divide to a and b.",
        |input: Calculation| async move { calculate(&input).map(plain_number) },
    )
    .inline()
}

fn clock() -> impl baton_core::ServerTool + 'static {
    tool("clock", "Tells the current UTC time.", |_: NoInput| async {
        Ok::<_, String>(utc_now())
    })
    .inline()
}

/// Input of the sleep tool.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Nap {
    /// Milliseconds to wait, at most [`LONGEST_NAP_MS`].
    pub ms: u64,
}

/// The longest wait the sleep tool takes.
pub const LONGEST_NAP_MS: u64 = 60_000;

/// A tool that takes its time: a run's slow work, to watch (or, in tests, to interrupt) a run
/// while it works. It runs as an activity of its own, which heartbeats.
fn sleep() -> impl baton_core::ServerTool + 'static {
    tool(
        "sleep",
        "Waits ms milliseconds (at most 60000), then answers how long it waited.",
        |input: Nap| async move {
            let ms = input.ms.min(LONGEST_NAP_MS);
            tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
            Ok::<_, String>(format!("slept {ms} ms"))
        },
    )
}

/// The server tools an agents file may name: `calculator`, `clock` and `sleep`.
pub fn tool_catalogue() -> ToolCatalogue {
    let calculator: Arc<dyn baton_core::ServerTool> = Arc::new(calculator());
    let clock: Arc<dyn baton_core::ServerTool> = Arc::new(clock());
    let sleep: Arc<dyn baton_core::ServerTool> = Arc::new(sleep());
    ToolCatalogue::from([
        ("calculator".to_owned(), calculator),
        ("clock".to_owned(), clock),
        ("sleep".to_owned(), sleep),
    ])
}

/// The demo agent, type `demo`, with its scripted model.
pub fn demo_agent() -> Agent {
    let model = ScriptedModel::default()
        .call(
            "calculator",
            json!({"operation": "multiply", "a": 6, "b": 7}),
        )
        .call("clock", json!({}))
        .answer("6 × 7 = {{result:calculator}}, and the time is {{result:clock}}.");
    demo_agent_with(model)
}

/// The demo agent, type `demo`, answering with `model`.
pub fn demo_agent_with(model: impl Model + 'static) -> Agent {
    Agent::builder("demo")
        .system_prompt("You are Baton's demo agent. Use the tools to answer.")
        .model(model)
        .tool(calculator())
        .tool(clock())
        .max_steps(5)
        .build()
        .expect("the demo agent definition is valid")
}

/// Input of the demo's approval-gated tool.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Postcard {
    pub to: String,
    pub text: String,
}

/// Input of the demo's client tool.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Question {
    pub question: String,
}

/// How many times `demo_hitl`'s scripted conversation can be had in one session: each new chat
/// turn after a finished one goes through the same three steps again, with fresh calls.
const DEMO_HITL_ROUNDS: usize = 3;

/// The human-in-the-loop demo agent, type `demo_hitl`: step 1 asks the user (a client tool,
/// answered by whoever runs the session, rendered as a form by the chat page) while the
/// calculator works; step 2 asks to approve a "send_postcard" call (a server tool gated by
/// approval); step 3 answers with all of it. A next turn does it again.
pub fn demo_hitl_agent() -> Agent {
    let mut script = ScriptedModel::default();
    for _ in 0..DEMO_HITL_ROUNDS {
        script = script
            .call_all(&[
                (
                    "ask_user",
                    json!({"question": "What is your favourite colour?"}),
                ),
                ("calculator", json!({"operation": "add", "a": 40, "b": 2})),
            ])
            .call(
                "send_postcard",
                json!({"to": "Ada", "text": "Greetings from Baton"}),
            )
            .answer(
                "You said {{result:ask_user}}, 40 + 2 = {{result:calculator}}, \
                 and the postcard: {{result:send_postcard}}.",
            );
    }
    demo_hitl_agent_with(script)
}

/// The demo's client tool: asks the user a question, answered with text.
fn ask_user_tool() -> ClientTool {
    ClientTool::new(
        "ask_user",
        "Asks the user a question; the answer is their reply as text.",
        schemars::schema_for!(Question).to_value(),
    )
    .and_then(|tool| tool.output_schema(json!({"type": "string"})))
    .expect("the demo's schemas are valid")
    .render(RenderHint::Elicitation)
}

/// The human-in-the-loop demo agent, type `demo_hitl`, answering with `model`.
pub fn demo_hitl_agent_with(model: impl Model + 'static) -> Agent {
    let ask_user = ask_user_tool();
    Agent::builder("demo_hitl")
        .system_prompt("You are Baton's human-in-the-loop demo agent.")
        .model(model)
        .tool(calculator())
        .tool(
            tool(
                "send_postcard",
                "Sends a postcard (pretend); needs the user's approval.",
                |postcard: Postcard| async move {
                    Ok::<_, String>(format!("sent to {}", postcard.to))
                },
            )
            .inline()
            .requires_approval(),
        )
        .client_tool(ask_user)
        .max_steps(5)
        .build()
        .expect("the demo agent definition is valid")
}

/// The trip planner's custom state: what its interviewer found out, set by its
/// `after_sub_agent` hook when the interviewer ends.
#[derive(Debug, Default, serde::Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TripPlan {
    pub interview: Option<String>,
    pub interview_status: Option<String>,
}

/// The sub-agent demo, type `demo_tree`: a trip planner that delegates to `demo_interviewer`,
/// a sub-agent that asks the user a question (a client tool, answered through the planner's
/// session), while the calculator works out a budget; then it answers with both. Both scripted.
/// The planner keeps what the interviewer found out in its custom state ([`TripPlan`]).
pub fn demo_tree_agents() -> [Agent; 2] {
    let interviewer = ScriptedModel::default()
        .call_id_prefix("interview")
        .call(
            "ask_user",
            json!({"question": "Which city would you like to visit?"}),
        )
        .answer("The user wants to visit {{result:ask_user}}.");
    let planner = ScriptedModel::default()
        .call_id_prefix("plan")
        .call_all(&[
            (
                "subagent__demo_interviewer",
                json!({"message": "Find out where the user wants to go."}),
            ),
            (
                "calculator",
                json!({"operation": "multiply", "a": 3, "b": 120}),
            ),
        ])
        .answer(
            "Trip plan: {{result:subagent__demo_interviewer}} \
             Three nights at 120 a night: {{result:calculator}}.",
        );
    [
        Agent::builder("demo_interviewer")
            .system_prompt("You interview the user.")
            .model(interviewer)
            .client_tool(ask_user_tool())
            .max_steps(3)
            .build()
            .expect("the demo agent definition is valid"),
        Agent::builder("demo_tree")
            .system_prompt("You plan trips; a sub-agent asks the user what they want.")
            .model(planner)
            .tool(calculator())
            .sub_agent("demo_interviewer", "Asks the user what they want.")
            .state::<TripPlan>()
            .after_sub_agent(|ended| {
                vec![
                    baton_core::state::StateSet::new("/interview", ended.output),
                    baton_core::state::StateSet::new(
                        "/interviewStatus",
                        <&str>::from(ended.status),
                    ),
                ]
            })
            .max_steps(3)
            .build()
            .expect("the demo agent definition is valid"),
    ]
}

/// The registry `batond` serves by default.
pub fn demo_registry() -> AgentRegistry {
    AgentRegistry::new(default_agents()).expect("the demo agents do not clash")
}

/// The agents `batond` serves without an agents file: `demo`, `demo_hitl` and the sub-agent demo.
pub fn default_agents() -> Vec<Agent> {
    let mut agents = vec![demo_agent(), demo_hitl_agent()];
    agents.extend(demo_tree_agents());
    agents
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calculator_and_clock() {
        let calc = |operation, a, b| calculate(&Calculation { operation, a, b });
        assert_eq!(calc(Operation::Multiply, 6.0, 7.0), Ok(42.0));
        assert_eq!(calc(Operation::Subtract, 1.0, 3.0), Ok(-2.0));
        assert_eq!(calc(Operation::Divide, 1.0, 4.0), Ok(0.25));
        assert_eq!(
            calc(Operation::Divide, 1.0, 0.0),
            Err("division by zero".into())
        );
        assert_eq!(plain_number(42.0), json!(42));
        assert_eq!(plain_number(0.25), json!(0.25));
        assert_eq!(format_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(format_utc(1_798_761_599), "2026-12-31T23:59:59Z");
        let registry = demo_registry();
        assert!(registry.get("demo").is_some());
        let hitl = registry.get("demo_hitl").unwrap();
        let ask = hitl.client_tool("ask_user").unwrap();
        assert!(ask.check_output(&json!("blue")).is_ok());
        assert!(ask.check_output(&json!({"colour": "blue"})).is_err());
        let planner = registry.get("demo_tree").unwrap();
        assert!(planner.sub_agent("subagent__demo_interviewer").is_some());
        assert_eq!(
            planner.state_schema().unwrap().defaults(),
            json!({"interview": null, "interviewStatus": null})
        );
    }
}
