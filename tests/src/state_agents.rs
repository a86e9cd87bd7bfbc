//! The agents of the custom-state tests: notebooks whose tools change their state over several
//! steps (one suspended on a client call, one approved by a person), and parents that fold a
//! child's final state into their own with their `after_sub_agent` hook (one whose child
//! suspends the tree).

use crate::agents::{TextInput, ask_user, hold_if_told};
use baton_core::{
    Agent, ScriptedModel,
    state::StateSet,
    tool::{FnTool, ToolContext, tool_with_context},
};
use json_patch::Patch;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The notebook's state: what it is about, its notes and how many there are.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Notebook {
    pub topic: String,
    pub notes: Vec<String>,
    pub count: u32,
}

/// `note`: appends its text to the notes (an `add` at `/notes/-`, which is not idempotent, so a
/// doubled patch would show) and sets the count; holds in a worker told to hold, after the
/// change is made but before the result is staged.
fn note() -> FnTool {
    tool_with_context(
        "note",
        "Adds a note.",
        |context: ToolContext, input: TextInput| async move {
            let notebook: Notebook = context.state_as().map_err(|e| e.to_string())?;
            let append = json!([{"op": "add", "path": "/notes/-", "value": input.text}]);
            let append: Patch = serde_json::from_value(append).map_err(|e| e.to_string())?;
            context.patch_state(append).map_err(|e| e.to_string())?;
            let count = notebook.notes.len() + 1;
            context
                .set_state_field("/count", count)
                .map_err(|e| e.to_string())?;
            hold_if_told().await;
            Ok::<_, String>(count)
        },
    )
}

/// `note_bad` (inline): sets the count to a string, which the schema refuses, and answers as if
/// nothing happened: the call's result is still an `invalid_state_patch` error.
fn note_bad() -> FnTool {
    tool_with_context(
        "note_bad",
        "Breaks the count.",
        |context: ToolContext, _: crate::agents::NoInput| async move {
            let _ignored = context.set_state_field("/count", "many");
            Ok::<_, String>("fine")
        },
    )
    .inline()
}

/// `notebook`: step 1 notes "a"; step 2 notes "b" beside the client tool `ask_user`, so the run
/// suspends with the note's change staged; step 3 (resumed) notes "c" beside `note_bad`; step 4
/// answers with the last count.
pub fn notebook() -> Agent {
    let model = ScriptedModel::default()
        .call_id_prefix("nb")
        .call("note", json!({"text": "a"}))
        .call_all(&[
            ("note", json!({"text": "b"})),
            ("ask_user", json!({"question": "More?"})),
        ])
        .call_all(&[("note", json!({"text": "c"})), ("note_bad", json!({}))])
        .answer("noted {{result:note}}");
    Agent::builder("notebook")
        .model(model)
        .state::<Notebook>()
        .tool(note())
        .tool(note_bad())
        .client_tool(ask_user())
        .build()
        .unwrap()
}

/// `notebook_gated`: one note that a person must approve (so it runs in the resumed run's
/// drain), then the answer.
pub fn notebook_gated() -> Agent {
    let model = ScriptedModel::default()
        .call_id_prefix("ng")
        .call("note", json!({"text": "approved"}))
        .answer("noted {{result:note}}");
    Agent::builder("notebook_gated")
        .model(model)
        .state::<Notebook>()
        .tool(note().requires_approval())
        .build()
        .unwrap()
}

/// `notebook_once`: one note, then the answer (for the worker killed inside `note`).
pub fn notebook_once() -> Agent {
    Agent::builder("notebook_once")
        .model(one_note("no"))
        .state::<Notebook>()
        .tool(note())
        .build()
        .unwrap()
}

/// `notebook_flaky`: like `notebook_once`, but its first model call fails after streaming some
/// text, so step 1 is streamed again before its note is made.
pub fn notebook_flaky() -> Agent {
    Agent::builder("notebook_flaky")
        .model(crate::agents::flaky_model(one_note("nf")))
        .state::<Notebook>()
        .tool(note())
        .build()
        .unwrap()
}

fn one_note(call_id_prefix: &str) -> ScriptedModel {
    ScriptedModel::default()
        .call_id_prefix(call_id_prefix)
        .call("note", json!({"text": "a"}))
        .answer("noted {{result:note}}")
}

/// The scout's state: what it found.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
pub struct Finding {
    pub found: String,
}

/// `find`: sets what was found in the state.
fn find() -> FnTool {
    tool_with_context(
        "find",
        "Records a find.",
        |context: ToolContext, input: TextInput| async move {
            context
                .set_state_field("/found", &input.text)
                .map_err(|e| e.to_string())?;
            Ok::<_, String>("recorded")
        },
    )
}

/// `scout`: a child that records what it finds in its state, then answers.
pub fn scout() -> Agent {
    let model = ScriptedModel::default()
        .call_id_prefix("sc")
        .call("find", json!({"text": "gold"}))
        .answer("found it");
    Agent::builder("scout")
        .model(model)
        .state::<Finding>()
        .tool(find())
        .build()
        .unwrap()
}

/// `asking_scout`: records "silver" beside asking the user (so it suspends), then answers.
pub fn asking_scout() -> Agent {
    let model = ScriptedModel::default()
        .call_id_prefix("as")
        .call_all(&[
            ("find", json!({"text": "silver"})),
            ("ask_user", json!({"question": "Dig here?"})),
        ])
        .answer("dug");
    Agent::builder("asking_scout")
        .model(model)
        .state::<Finding>()
        .tool(find())
        .client_tool(ask_user())
        .build()
        .unwrap()
}

/// The expedition's state: what its scout found and how the scout ended.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Expedition {
    pub found: Option<String>,
    pub scout_status: Option<String>,
}

/// `expedition`: calls `scout`; its `after_sub_agent` hook sets the scout's find and status in
/// its own state; then it answers with the scout's output.
pub fn expedition() -> Agent {
    expedition_with("expedition", "ex", "scout")
}

/// `patient_expedition`: like `expedition`, with `asking_scout`, which suspends the tree: the
/// fold happens when the resumed expedition drains the scout's answer.
pub fn patient_expedition() -> Agent {
    expedition_with("patient_expedition", "pe", "asking_scout")
}

fn expedition_with(name: &str, call_id_prefix: &str, scout: &str) -> Agent {
    let tool = format!("subagent__{scout}");
    let model = ScriptedModel::default()
        .call_id_prefix(call_id_prefix)
        .call(&tool, json!({"message": "look"}))
        .answer(&format!("scout says {{{{result:{tool}}}}}"));
    Agent::builder(name)
        .model(model)
        .state::<Expedition>()
        .sub_agent(scout, "Looks around.")
        .after_sub_agent(|ended| {
            let found = ended.state.and_then(|state| state.get("found")).cloned();
            vec![
                StateSet::new("/found", found),
                StateSet::new("/scoutStatus", <&str>::from(ended.status)),
            ]
        })
        .build()
        .unwrap()
}

pub fn all() -> Vec<Agent> {
    vec![
        notebook(),
        notebook_gated(),
        notebook_once(),
        notebook_flaky(),
        scout(),
        asking_scout(),
        expedition(),
        patient_expedition(),
    ]
}
