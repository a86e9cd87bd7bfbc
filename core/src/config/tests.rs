//! The checks of agents files: what a good one declares, and the line and reason of a bad one.

use super::*;
use crate::{Model, ScriptedModel, ServerTool, subagent::SubAgentTransport, tool::tool};
use serde_json::json;
use std::{collections::BTreeMap, sync::Arc, time::Duration};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Nothing {}

pub(super) fn catalogue() -> ToolCatalogue {
    let clock: Arc<dyn ServerTool> = Arc::new(tool("clock", "time", |_: Nothing| async {
        Ok::<_, String>("noon")
    }));
    BTreeMap::from([("clock".to_owned(), clock)])
}

const GOOD: &str = r#"
[[agent]]
name = "greeter"
system_prompt = "Greet."
max_steps = 4
client_tool_timeout_secs = 30
tools = ["clock"]
approval_required = ["clock"]

[agent.model]
kind = "scripted"
turns = [
  { tool_calls = [{ name = "ask_user", arguments = { question = "Name?" } }] },
  { text = "Hello {{result:ask_user}}" },
]

[[agent.client_tool]]
name = "ask_user"
description = "Asks."
input_schema = { type = "object", properties = { question = { type = "string" } } }
output_schema = { type = "string" }
timeout_secs = 10
"#;

#[test]
fn a_file_declares_agents_with_client_tools_and_gated_tools() {
    let agents = agents_from_toml(GOOD, &catalogue()).unwrap();
    let agent = &agents[0];
    assert_eq!(agent.name(), "greeter");
    assert_eq!(agent.max_steps(), 4);
    let ask = agent.client_tool("ask_user").unwrap();
    assert_eq!(agent.client_tool_timeout(ask), Duration::from_secs(10));
    assert!(ask.check_output(&json!("Ada")).is_ok());
    assert!(ask.check_output(&json!(3)).is_err());
    assert_eq!(ask.render_hint(), None);
    let rendered = GOOD.replace(
        "timeout_secs = 10",
        "timeout_secs = 10\nrender = \"elicitation\"",
    );
    let rendered = &agents_from_toml(&rendered, &catalogue()).unwrap()[0];
    let hint = rendered.client_tool("ask_user").unwrap().render_hint();
    assert_eq!(hint, Some(crate::tool::RenderHint::Elicitation));
    let unknown = GOOD.replace(
        "timeout_secs = 10",
        "timeout_secs = 10\nrender = \"hologram\"",
    );
    let error = agents_from_toml(&unknown, &catalogue()).unwrap_err();
    assert!(
        error.to_string().contains("unknown variant `hologram`"),
        "{error}"
    );
    assert!(agent.tool("clock").unwrap().requires_approval());
    assert!(!agent.tool("clock").unwrap().finishes_run());
    let finishing = GOOD.replace(
        r#"approval_required = ["clock"]"#,
        r#"finish_with = ["clock"]"#,
    );
    let finisher = &agents_from_toml(&finishing, &catalogue()).unwrap()[0];
    assert!(finisher.tool("clock").unwrap().finishes_run());
    assert!(!finisher.tool("clock").unwrap().requires_approval());
    assert_eq!(agent.answer_timeout("clock"), Duration::from_secs(30));
    let names: Vec<String> = agent.tool_specs().iter().map(|s| s.name.clone()).collect();
    assert_eq!(names, ["ask_user", "clock"]);
}

#[test]
fn a_file_declares_sub_agents_and_the_registry_names_the_line_of_a_bad_one() {
    let file = r#"
[[agent]]
name = "planner"
model = { kind = "scripted", turns = [{ text = "done" }] }

[[agent.sub_agent]]
type = "researcher"
description = "Finds facts."
transport = "local"

[[agent]]
name = "researcher"
model = { kind = "scripted", turns = [{ text = "facts" }] }

[[agent.sub_agent]]
type = "planner"
"#;
    let agents = agents_from_toml(file, &catalogue()).unwrap();
    let researcher = agents[0].sub_agent("subagent__researcher").unwrap();
    assert_eq!(researcher.transport(), SubAgentTransport::Local);
    assert_eq!(
        agents[1]
            .sub_agent("subagent__planner")
            .unwrap()
            .transport(),
        SubAgentTransport::Local
    );
    let pigeon = file.replace(r#"transport = "local""#, r#"transport = "pigeon""#);
    let error = agents_from_toml(&pigeon, &catalogue()).unwrap_err();
    assert_eq!(error.line, 9, "{error}");
    assert!(error.to_string().contains("unknown variant"), "{error}");
    let cycle = crate::AgentRegistry::new(agents).unwrap_err();
    assert_eq!(
        cycle.to_string(),
        "agent \"planner\" (line 16) calls sub-agents in a cycle: planner -> researcher -> planner"
    );
    let unknown = file.replace(r#"type = "planner""#, r#"type = "ghost""#);
    let error =
        crate::AgentRegistry::new(agents_from_toml(&unknown, &catalogue()).unwrap()).unwrap_err();
    assert!(error.to_string().contains("(line 16)"), "{error}");
    assert!(error.to_string().contains("\"ghost\""), "{error}");
}

#[test]
fn a_file_declares_an_agents_state_and_a_bad_one_is_refused_with_its_line() {
    let stateful = format!(
        "{GOOD}\n[agent.state]\nschema = {{ type = \"object\", properties = {{ n = {{ type = \"integer\" }} }} }}\ndefaults = {{ n = 1 }}\n"
    );
    let agents = agents_from_toml(&stateful, &catalogue()).unwrap();
    let schema = agents[0].state_schema().expect("the agent declares state");
    assert_eq!(schema.defaults(), json!({"n": 1}));
    assert_eq!(
        schema.seed(Some(&json!({"n": 5}))).unwrap(),
        json!({"n": 5})
    );
    assert!(
        agents_from_toml(GOOD, &catalogue()).unwrap()[0]
            .state_schema()
            .is_none()
    );

    let bad_defaults = stateful.replace("defaults = { n = 1 }", "defaults = { n = \"one\" }");
    let error = agents_from_toml(&bad_defaults, &catalogue()).unwrap_err();
    assert_eq!(error.line, 24, "{error}");
    assert!(error.to_string().contains("agent \"greeter\""), "{error}");
    assert!(error.to_string().contains("do not match"), "{error}");
    let bad_schema = stateful.replace(
        "schema = { type = \"object\", properties = { n",
        "schema = { type = \"objekt\", properties = { n",
    );
    let error = agents_from_toml(&bad_schema, &catalogue()).unwrap_err();
    assert!(
        error.to_string().contains("invalid state schema"),
        "{error}"
    );
    let unknown = stateful.replace("defaults =", "default =");
    let error = agents_from_toml(&unknown, &catalogue()).unwrap_err();
    assert_eq!(error.line, 26, "{error}");
    assert!(error.to_string().contains("unknown field"), "{error}");
}

#[test]
fn a_bad_file_is_refused_with_its_line_and_reason() {
    let cases = [
        (
            GOOD.replace(r#"tools = ["clock"]"#, r#"tools = ["clock", "oven"]"#),
            7,
            "unknown server tool \"oven\"",
        ),
        (
            GOOD.replace(
                r#"approval_required = ["clock"]"#,
                r#"approval_required = ["oven"]"#,
            ),
            8,
            "not in tools",
        ),
        (
            GOOD.replace(
                r#"output_schema = { type = "string" }"#,
                r#"output_schema = { type = "strung" }"#,
            ),
            18,
            "invalid output schema",
        ),
        (
            GOOD.replace(r#"name = "ask_user""#, r#"name = "subagent__ask""#),
            3,
            "reserves",
        ),
        (
            GOOD.replace("max_steps = 4", "max_steps = \"four\""),
            5,
            "invalid type",
        ),
        (
            GOOD.replace("kind = \"scripted\"", "kind = \"gpt\""),
            11,
            "unknown variant",
        ),
        (
            GOOD.replace("system_prompt", "system_promt"),
            4,
            "unknown field",
        ),
        (
            GOOD.replace(
                r#"approval_required = ["clock"]"#,
                r#"finish_with = ["ask_user"]"#,
            ),
            8,
            "a client tool cannot finish the run",
        ),
        (
            GOOD.replace(
                r#"approval_required = ["clock"]"#,
                r#"finish_with = ["oven"]"#,
            ),
            8,
            "not in tools",
        ),
    ];
    assert_refused(&cases);
    assert!(agents_from_toml("", &catalogue()).unwrap().is_empty());
}

/// Asserts that each file is refused at its line, for a reason saying that.
fn assert_refused(cases: &[(String, usize, &str)]) {
    for (text, line, reason) in cases {
        let error = agents_from_toml(text, &catalogue()).unwrap_err();
        assert_eq!(error.line, *line, "{error}");
        assert!(
            error.to_string().contains(reason),
            "{error} should say {reason:?}"
        );
    }
}

/// Records what it was asked to build and answers with a scripted model named after it.
struct Recording(std::sync::Mutex<Vec<ModelConfig>>);

impl ModelBuilder for Recording {
    fn build(&self, config: &ModelConfig) -> Result<Arc<dyn Model>, String> {
        if config.model == "missing-key" {
            return Err("the environment variable NOPE (api_key_env) is not set".into());
        }
        self.0.lock().unwrap().push(config.clone());
        Ok(Arc::new(ScriptedModel::default()))
    }
}

const PROVIDERS: &str = r#"
[[agent]]
name = "hosted"

[agent.model]
kind = "openai"
model = "gpt-4o-mini"
api_key_env = "OPENAI_API_KEY"
temperature = 0.2
max_tokens = 512
timeout_secs = 30

[[agent]]
name = "claude"

[agent.model]
kind = "anthropic"
model = "claude-sonnet-4-5"
base_url = "http://127.0.0.1:9/"
"#;

#[test]
fn provider_models_are_described_and_built_by_the_caller() {
    let recording = Recording(Default::default());
    let agents = agents_from_toml_with(PROVIDERS, &catalogue(), &recording).unwrap();
    assert_eq!(agents.len(), 2);
    let built = recording.0.into_inner().unwrap();
    assert_eq!(
        built,
        [
            ModelConfig {
                provider: Provider::OpenAi,
                model: "gpt-4o-mini".into(),
                base_url: None,
                api_key_env: Some("OPENAI_API_KEY".into()),
                temperature: Some(0.2),
                max_tokens: Some(512),
                timeout: Some(Duration::from_secs(30)),
            },
            ModelConfig {
                base_url: Some("http://127.0.0.1:9/".into()),
                ..ModelConfig::new(Provider::Anthropic, "claude-sonnet-4-5")
            },
        ]
    );

    let scripted_only = agents_from_toml(PROVIDERS, &catalogue()).unwrap_err();
    assert_eq!(scripted_only.line, 5);
    assert!(scripted_only.reason.contains("needs a model builder"));
    let missing = agents_from_toml_with(
        &PROVIDERS.replace("gpt-4o-mini", "missing-key"),
        &catalogue(),
        &Recording(Default::default()),
    )
    .unwrap_err();
    assert_eq!(missing.line, 5);
    assert!(missing.reason.contains("NOPE"));
    let typo = agents_from_toml_with(
        &PROVIDERS.replace("max_tokens", "max_token"),
        &catalogue(),
        &Recording(Default::default()),
    )
    .unwrap_err();
    assert!(typo.reason.contains("unknown field `max_token`"), "{typo}");
}

#[test]
fn mounts_are_read_beside_the_agents_and_checked_for_their_fields() {
    let text = r#"
[[mount]]
base_path = "/public/agents"
agents = ["greeter"]
state_fields = ["topic"]
usage = false

[[mount]]
base_path = "/internal/agents"
"#;
    let mounts = super::mounts_from_toml(text).unwrap();
    assert_eq!(mounts.len(), 2);
    assert_eq!(mounts[0].base_path, "/public/agents");
    assert_eq!(
        mounts[0].agents.as_deref(),
        Some(&["greeter".to_owned()][..])
    );
    assert_eq!(
        mounts[0].state_fields.as_deref(),
        Some(&["topic".to_owned()][..])
    );
    assert!(!mounts[0].serves_usage);
    assert!(mounts[1].serves_usage && mounts[1].agents.is_none());
    let unknown = super::mounts_from_toml("[[mount]]\nbase_path = \"/a\"\nfields = []\n");
    assert_eq!(unknown.unwrap_err().line, 3);
    assert!(agents_from_toml(text, &catalogue()).unwrap().is_empty());
}

#[test]
fn state_tools_and_folds_are_refused_with_their_line_when_they_name_no_declared_state() {
    let with = |state: &str, extra: &str| {
        format!(
            r#"
[[agent]]
name = "keeper"
[agent.model]
kind = "scripted"
turns = [{{ text = "ok" }}]
{state}
{extra}
[[agent]]
name = "helper"
[agent.model]
kind = "scripted"
turns = [{{ text = "ok" }}]
"#
        )
    };
    let state = "[agent.state]\nschema = { type = \"object\", properties = { city = { type = \"string\" } } }";
    let tool =
        |fields: &str| format!("[[agent.state_tool]]\nname = \"remember\"\nfields = {fields}");
    let fold = |fold: &str| format!("[[agent.sub_agent]]\ntype = \"helper\"\nfold = [{fold}]");
    let cases = [
        (with("", &tool(r#"["city"]"#)), 9, "declares no state"),
        (with(state, &tool(r#"["town"]"#)), 10, "does not declare"),
        (with(state, &tool("[]")), 10, "sets no field"),
        (
            with(state, &fold(r#"{ into = "city", from = "output" }"#)),
            11,
            "not a JSON Pointer",
        ),
        (
            with(state, &fold(r#"{ into = "/city", from = "text" }"#)),
            11,
            "\"output\" or a JSON Pointer",
        ),
        (
            with("", &fold(r#"{ into = "/city", from = "output" }"#)),
            3,
            "declares no state",
        ),
    ];
    assert_refused(&cases);
    let good = with(
        state,
        &format!(
            "{}\n{}",
            tool(r#"["city"]"#),
            fold(r#"{ into = "/city", from = "output" }"#)
        ),
    );
    let agents = agents_from_toml(&good, &catalogue()).unwrap();
    assert!(agents[0].has_after_sub_agent());
}
