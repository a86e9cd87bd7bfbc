//! The agents the end-to-end tests and the benchmark run.

use async_trait::async_trait;
use baton_core::{
    Agent, AgentRegistry, Model, ModelRequest, ModelTurn, ScriptedModel, model,
    tool::{ClientTool, FnTool, ToolContext, tool, tool_with_context},
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::sync::mpsc;

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

pub(crate) fn add() -> impl baton_core::ServerTool {
    tool("add", "Adds two integers.", |i: AddInput| async move {
        i.a.checked_add(i.b).ok_or("overflow")
    })
}

fn upper() -> impl baton_core::ServerTool {
    tool("upper", "Upper-cases text.", |i: TextInput| async move {
        Ok::<_, String>(i.text.to_uppercase())
    })
    .inline()
}

/// `two_steps`: step 1 calls `add` (an activity) and `upper` (inline) at once; step 2
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

/// `holder` (and `holder_inline`): step 1 calls `hold`, which blocks forever in a worker started
/// with [`HOLD_TOOL_ENV`] set and returns at once elsewhere; step 2 answers. `hold` runs as an
/// activity of its own, or inline in the model step for `holder_inline`.
pub fn holder(inline: bool) -> Agent {
    holder_agent(
        if inline { "holder_inline" } else { "holder" },
        inline,
        false,
    )
}

/// `holder_gated`: like `holder`, but `hold` needs approval, so it runs while the resumed run
/// drains the approval (inside `apply_results_and_reload`).
pub fn holder_gated() -> Agent {
    holder_agent("holder_gated", false, true)
}

fn holder_agent(name: &str, inline: bool, gated: bool) -> Agent {
    let hold = tool(
        "hold",
        "Blocks while the worker is told to hold.",
        |_: NoInput| async {
            hold_if_told().await;
            Ok::<_, String>("done")
        },
    );
    let hold = if inline { hold.inline() } else { hold };
    let hold = if gated {
        hold.requires_approval()
    } else {
        hold
    };
    agent_with_hold(name, hold)
}

/// Blocks forever in a worker started with [`HOLD_TOOL_ENV`] set, after saying so on stdout.
pub(crate) async fn hold_if_told() {
    if std::env::var_os(HOLD_TOOL_ENV).is_some() {
        println!("{HOLDING_LINE}");
        std::future::pending::<()>().await;
    }
}

/// An agent whose step 1 calls `hold` and whose step 2 answers with its result.
fn agent_with_hold(name: &str, hold: FnTool) -> Agent {
    let model = ScriptedModel::default()
        .call("hold", json!({}))
        .answer("released: {{result:hold}}");
    Agent::builder(name)
        .model(model)
        .tool(hold)
        .build()
        .unwrap()
}

/// `holder_once`: like `holder`, but `hold` runs at most once per call, and each run appends a
/// line to the file [`run_count_path`] names for its call (so a test counts runs across worker
/// processes).
pub fn holder_once() -> Agent {
    agent_with_hold("holder_once", counted_hold())
}

/// `holder_gated_once`: like `holder_once`, but each call needs approval, so it runs while the
/// resumed run drains the approval.
pub fn holder_gated_once() -> Agent {
    agent_with_hold("holder_gated_once", counted_hold().requires_approval())
}

/// The at-most-once `hold` tool that counts its runs (see [`holder_once`]).
fn counted_hold() -> FnTool {
    tool_with_context(
        "hold",
        "Counts its runs, then blocks while the worker is told to hold.",
        |context: ToolContext, _: NoInput| async move {
            use std::io::Write;
            let mut count = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(run_count_path(&context.idempotency_key()))
                .map_err(|e| e.to_string())?;
            writeln!(count, "{}", context.run_id()).map_err(|e| e.to_string())?;
            hold_if_told().await;
            Ok::<_, String>("done")
        },
    )
    .at_most_once()
}

/// The file in which `holder_once`'s tool counts its runs of the call with this idempotency key.
pub fn run_count_path(idempotency_key: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "baton-test-runs-{}",
        idempotency_key.replace('/', "-")
    ))
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

/// A model whose first call streams part of its answer and then fails transiently; the retried
/// call gives the whole answer. Shows that a retried model step repeats no chunk.
struct FlakyModel {
    failed: AtomicBool,
    script: ScriptedModel,
}

#[async_trait]
impl Model for FlakyModel {
    fn name(&self) -> &str {
        "flaky"
    }

    async fn generate(
        &self,
        request: ModelRequest<'_>,
        deltas: mpsc::UnboundedSender<baton_core::model::Delta>,
    ) -> Result<ModelTurn, model::Error> {
        if !self.failed.swap(true, Ordering::SeqCst) {
            let _ = deltas.send("first ".into());
            let _ = deltas.send("second ".into());
            return Err(model::Error::new(
                model::ErrorKind::Network,
                "connection reset",
            ));
        }
        self.script.generate(request, deltas).await
    }
}

/// `flaky`: one step whose first model call fails after streaming two words.
pub fn flaky() -> Agent {
    flaky_answering("flaky", "first second third")
}

/// `flaky_rephrasing`: like `flaky`, but the retry answers something else entirely.
pub fn flaky_rephrasing() -> Agent {
    flaky_answering("flaky_rephrasing", "another answer")
}

fn flaky_answering(name: &str, answer: &str) -> Agent {
    Agent::builder(name)
        .model(flaky_model(ScriptedModel::default().answer(answer)))
        .build()
        .unwrap()
}

/// A model whose first call fails after streaming two words, then answers from `script`.
pub(crate) fn flaky_model(script: ScriptedModel) -> impl Model {
    FlakyModel {
        failed: AtomicBool::new(false),
        script,
    }
}

/// What the `hesitant` agent's model streams before it holds.
pub const HESITANT_FIRST_WORDS: &str = "Let me think… ";
/// What the `hesitant` agent's model prints when a held call of it is dropped (an interrupt
/// reached the step running it).
pub const HESITANT_DROPPED_LINE: &str = "hesitant: call dropped";

/// Prints [`HESITANT_DROPPED_LINE`] when dropped.
struct SayWhenDropped;

impl Drop for SayWhenDropped {
    fn drop(&mut self) {
        println!("{HESITANT_DROPPED_LINE}");
    }
}

/// A model that streams its first words, then blocks in a worker started with
/// [`HOLD_TOOL_ENV`] set (until killed), then answers from `script`: a worker lost in the middle
/// of a model call that had streamed text.
struct HesitantModel {
    script: ScriptedModel,
}

#[async_trait]
impl Model for HesitantModel {
    fn name(&self) -> &str {
        "hesitant"
    }

    async fn generate(
        &self,
        request: ModelRequest<'_>,
        deltas: mpsc::UnboundedSender<baton_core::model::Delta>,
    ) -> Result<ModelTurn, model::Error> {
        let _ = deltas.send(HESITANT_FIRST_WORDS.into());
        // A held call ends only when dropped (or its worker is killed, which prints nothing).
        let _dropped = std::env::var_os(HOLD_TOOL_ENV).map(|_| SayWhenDropped);
        hold_if_told().await;
        let mut turn = self.script.generate(request, deltas).await?;
        turn.text = format!("{HESITANT_FIRST_WORDS}{}", turn.text);
        Ok(turn)
    }
}

/// `hesitant`: one step whose model streams a few words, then (in a holding worker) blocks
/// mid-call, then answers.
pub fn hesitant() -> Agent {
    Agent::builder("hesitant")
        .model(HesitantModel {
            script: ScriptedModel::default().answer("the answer is 42"),
        })
        .build()
        .unwrap()
}

/// Input of the `ask_user` client tool.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Question {
    pub question: String,
}

/// Output of the `ask_user` client tool.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Reply {
    pub answer: String,
}

pub(crate) fn ask_user() -> ClientTool {
    ClientTool::typed::<Question, Reply>("ask_user", "Asks the user a question.")
}

/// `asker`: step 1 calls `add` (an activity) and the client tool `ask_user` at once, so the run
/// suspends after `add` ran; step 2 answers with the user's reply.
pub fn asker() -> Agent {
    let model = ScriptedModel::default()
        .call_all(&[
            ("add", json!({"a": 1, "b": 2})),
            ("ask_user", json!({"question": "Proceed?"})),
        ])
        .answer("The user said {{result:ask_user}}");
    Agent::builder("asker")
        .model(model)
        .tool(add())
        .client_tool(ask_user().timeout(std::time::Duration::from_secs(120)))
        .build()
        .unwrap()
}

/// `asker_only`: step 1 calls only `ask_user`, so the model step itself suspends the run.
pub fn asker_only() -> Agent {
    let model = ScriptedModel::default()
        .call("ask_user", json!({"question": "Name?"}))
        .answer("Hello {{result:ask_user}}");
    Agent::builder("asker_only")
        .model(model)
        .client_tool(ask_user())
        .client_tool_timeout(std::time::Duration::from_secs(60))
        .build()
        .unwrap()
}

/// `asker_sloppy`: step 1 calls `ask_user` with an input its schema refuses, step 2 corrects
/// it (and suspends), step 3 answers.
pub fn asker_sloppy() -> Agent {
    let model = ScriptedModel::default()
        .call("ask_user", json!({"text": "Name?"}))
        .call("ask_user", json!({"question": "Name?"}))
        .answer("Hello {{result:ask_user}}");
    Agent::builder("asker_sloppy")
        .model(model)
        .client_tool(ask_user())
        .build()
        .unwrap()
}

/// `asker_twice`: step 1 asks the user two questions at once (a batch of two client calls).
pub fn asker_twice() -> Agent {
    let model = ScriptedModel::default()
        .call_all(&[
            ("ask_user", json!({"question": "First?"})),
            ("ask_user", json!({"question": "Second?"})),
        ])
        .answer("Both answered; the last said {{result:ask_user}}");
    Agent::builder("asker_twice")
        .model(model)
        .client_tool(ask_user())
        .build()
        .unwrap()
}

/// `asker_hasty`: like `asker_only`, but its calls lapse at once (a zero timeout), so a resume
/// can drain them as `client_tool_timeout` without waiting.
pub fn asker_hasty() -> Agent {
    let model = ScriptedModel::default()
        .call("ask_user", json!({"question": "Quick?"}))
        .answer("Outcome: {{result:ask_user}}");
    Agent::builder("asker_hasty")
        .model(model)
        .client_tool(ask_user())
        .client_tool_timeout(std::time::Duration::ZERO)
        .resume_on_deadline(false)
        .build()
        .unwrap()
}

/// The deadline of `asker_patient`'s call. A test answers and resumes the session before it
/// lapses, which takes four local round trips (well under a second); the margin is wide so that a
/// loaded machine cannot let the deadline win, while the test still waits for the deadline to
/// fire and find nothing to do.
pub const PATIENT_DEADLINE: std::time::Duration = std::time::Duration::from_secs(10);

/// `asker_deadline`: one client call with a short deadline (`timeout`), and the default
/// resume-on-deadline, so an unanswered session resumes by itself.
pub fn asker_deadline(name: &str, timeout: std::time::Duration) -> Agent {
    let model = ScriptedModel::default()
        .call("ask_user", json!({"question": "Still there?"}))
        .answer("Outcome: {{result:ask_user}}");
    Agent::builder(name)
        .model(model)
        .client_tool(ask_user().timeout(timeout))
        .build()
        .unwrap()
}

/// Input of the approval-gated `transfer` tool.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Transfer {
    pub to: String,
    pub amount: i64,
}

/// `transfer`: sends money, once a person approves the call.
pub(crate) fn transfer() -> impl baton_core::ServerTool {
    tool("transfer", "Sends money.", |t: Transfer| async move {
        Ok::<_, String>(format!("sent {} to {}", t.amount, t.to))
    })
    .requires_approval()
}

/// `guarded`: step 1 calls `transfer`, which needs a person's approval; step 2 reports.
pub fn guarded() -> Agent {
    let model = ScriptedModel::default()
        .call("transfer", json!({"to": "alice", "amount": 10}))
        .answer("Transfer: {{result:transfer}}");
    Agent::builder("guarded")
        .model(model)
        .tool(transfer())
        .build()
        .unwrap()
}

/// `chatter`: answers every turn with text, echoing the latest user message.
pub fn chatter() -> Agent {
    let model = ScriptedModel::default()
        .answer("first: {{input}}")
        .answer("second: {{input}}");
    Agent::builder("chatter").model(model).build().unwrap()
}

/// A `finisher`: step 1 calls `report` with `arguments` (and `add` beside it); `report` ends
/// the run with its result. If it fails, step 2 answers with the error the model saw.
pub fn finisher(name: &str, arguments: serde_json::Value, inline: bool) -> Agent {
    let model = ScriptedModel::default()
        .call_all(&[("add", json!({"a": 2, "b": 2})), ("report", arguments)])
        .answer("The report failed: {{result:report}}");
    let report = tool(
        "report",
        "Files the final report.",
        |i: TextInput| async move { Ok::<_, String>(format!("report filed: {}", i.text)) },
    )
    .finishes_run();
    let builder = Agent::builder(name).model(model).tool(add());
    let builder = if inline {
        builder.tool(report.inline())
    } else {
        builder.tool(report)
    };
    builder.build().unwrap()
}

/// Every test agent.
pub fn registry() -> AgentRegistry {
    AgentRegistry::new(
        [
            two_steps(),
            looper(),
            holder(false),
            holder(true),
            holder_gated(),
            holder_once(),
            holder_gated_once(),
            flaky(),
            flaky_rephrasing(),
            hesitant(),
            asker(),
            asker_only(),
            asker_twice(),
            asker_sloppy(),
            asker_hasty(),
            chatter(),
            guarded(),
            asker_deadline("asker_deadline", std::time::Duration::from_secs(1)),
            asker_deadline("asker_patient", PATIENT_DEADLINE),
            bench_agent("long", 12, bench_script(12, true)),
            finisher("finisher", json!({"text": "all good"}), false),
            finisher("finisher_inline", json!({"text": "all good"}), true),
            finisher("finisher_failing", json!({"txt": 1}), false),
        ]
        .into_iter()
        .chain(crate::tree_agents::all())
        .chain(crate::state_agents::all()),
    )
    .unwrap()
}
