//! Agents declared in a TOML file, beside agents written in Rust: a front-end team can add a
//! client tool (or a whole scripted agent) without writing Rust. Server tools are referenced by
//! name from the catalogue the binary offers. Parsing does no I/O; the binary reads the file.
//!
//! ```toml
//! [[agent]]
//! name = "greeter"
//! system_prompt = "Greet people."
//! max_steps = 5
//! client_tool_timeout_secs = 120        # optional; default 300
//! resume_on_deadline = true             # optional; default true
//! completed_retention_secs = 86400      # optional; default 86400
//! tools = ["calculator"]                # server tools from the catalogue
//! approval_required = ["calculator"]    # of those, the ones a person must approve
//! finish_with = []                      # of those, the ones whose result ends the run
//!
//! [agent.model]
//! kind = "scripted"
//! turns = [
//!   { tool_calls = [{ name = "ask_user", arguments = { question = "Name?" } }] },
//!   { text = "Hello {{result:ask_user}}" },
//! ]
//!
//! # A real provider instead of a script (see `ModelConfig`); the key is read from the
//! # environment variable the file names, by the binary, never from the file itself.
//! # [agent.model]
//! # kind = "openai"                     # or "anthropic"
//! # model = "gpt-4o-mini"
//! # base_url = "http://127.0.0.1:11434/v1"   # optional; default the hosted API
//! # api_key_env = "OPENAI_API_KEY"      # optional; no key is sent without it
//! # temperature = 0.2                   # optional
//! # max_tokens = 1024                   # optional (Anthropic: default 4096)
//! # timeout_secs = 60                   # optional; default 60
//!
//! [[agent.client_tool]]
//! name = "ask_user"
//! description = "Asks the user."
//! input_schema = { type = "object", properties = { question = { type = "string" } } }
//! output_schema = { type = "string" }   # optional
//! timeout_secs = 60                     # optional
//!
//! [[agent.sub_agent]]                   # another agent type, called as subagent__researcher
//! type = "researcher"
//! description = "Finds facts."
//! input_schema = { type = "object" }    # optional; default {message}
//! output_schema = { type = "object" }   # optional; checks the child's final output
//!
//! [agent.state]                         # optional: the sessions' custom state
//! schema = { type = "object", properties = { topic = { type = "string" } } }
//! defaults = { topic = "" }             # must match the schema; a start may override fields
//! ```
//!
//! A sub-agent's type may be declared in the file or in Rust; unknown types and cycles are
//! refused when the registry is built, with the declaration's line.

use crate::{
    Agent, Model, ScriptedModel, ServerTool, ToolExecution, ToolSpec,
    agent::DefinitionError,
    message::ToolError,
    scripted::ScriptedTurn,
    state::StateSchema,
    subagent::SubAgent,
    tool::{ClientTool, SchemaError, ToolContext},
};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;
use std::{collections::BTreeMap, fmt, str::FromStr, sync::Arc, time::Duration};
use toml::Spanned;

/// A model provider Baton has an adapter for (in the `baton-models` crate).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum Provider {
    /// OpenAI Chat Completions, or any server that speaks it (vLLM, Ollama, llama.cpp, LM Studio).
    #[serde(rename = "openai")]
    OpenAi,
    /// Anthropic Messages.
    #[serde(rename = "anthropic")]
    Anthropic,
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::OpenAi => "openai",
            Self::Anthropic => "anthropic",
        })
    }
}

/// A real model, described without building it: `core` knows no HTTP adapter, so whoever loads
/// agents passes a [`ModelBuilder`] that makes the model from this description.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelConfig {
    pub provider: Provider,
    /// The provider's model name, e.g. `gpt-4o-mini` or `claude-sonnet-4-5`.
    pub model: String,
    /// Where the API is; `None` means the provider's hosted API.
    pub base_url: Option<String>,
    /// The NAME of the environment variable that holds the API key (the key itself is never in
    /// a configuration). `None` sends no key, as local servers want.
    pub api_key_env: Option<String>,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
    /// Bound on the wait for the response head and for each later read of the stream.
    pub timeout: Option<Duration>,
}

impl ModelConfig {
    pub fn new(provider: Provider, model: impl Into<String>) -> Self {
        Self {
            provider,
            model: model.into(),
            base_url: None,
            api_key_env: None,
            temperature: None,
            max_tokens: None,
            timeout: None,
        }
    }
}

/// `provider:model`, e.g. `openai:gpt-4o-mini` or `anthropic:claude-sonnet-4-5`, as a command
/// line names a model.
impl FromStr for ModelConfig {
    type Err = String;

    fn from_str(spec: &str) -> Result<Self, Self::Err> {
        let (provider, model) = spec
            .split_once(':')
            .filter(|(_, model)| !model.is_empty())
            .ok_or_else(|| format!("{spec:?} is not provider:model (e.g. openai:gpt-4o-mini)"))?;
        let provider = match provider {
            "openai" => Provider::OpenAi,
            "anthropic" => Provider::Anthropic,
            other => {
                return Err(format!(
                    "unknown model provider {other:?}; known: openai, anthropic"
                ));
            }
        };
        Ok(Self::new(provider, model))
    }
}

/// Makes the model a [`ModelConfig`] describes. The binary provides it (it alone may read the
/// API key from the environment); the error says what is wrong, for people.
pub trait ModelBuilder {
    fn build(&self, config: &ModelConfig) -> Result<Arc<dyn Model>, String>;
}

/// A [`ModelBuilder`] that has no provider: files with only scripted models load with it.
#[derive(Debug, Clone, Copy, Default)]
pub struct ScriptedOnly;

impl ModelBuilder for ScriptedOnly {
    fn build(&self, config: &ModelConfig) -> Result<Arc<dyn Model>, String> {
        Err(format!(
            "model kind {:?} needs a model builder; this loader knows only scripted models",
            config.provider.to_string()
        ))
    }
}

/// Server tools a configuration may reference, by name.
pub type ToolCatalogue = BTreeMap<String, Arc<dyn ServerTool>>;

/// Why an agents file was refused: where (1-based line) and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct ConfigError {
    pub line: usize,
    pub reason: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    agent: Vec<AgentEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentEntry {
    name: Spanned<String>,
    #[serde(default)]
    system_prompt: String,
    model: Spanned<ModelEntry>,
    max_steps: Option<u32>,
    client_tool_timeout_secs: Option<u64>,
    resume_on_deadline: Option<bool>,
    completed_retention_secs: Option<u64>,
    #[serde(default)]
    tools: Vec<Spanned<String>>,
    #[serde(default)]
    approval_required: Vec<Spanned<String>>,
    #[serde(default)]
    finish_with: Vec<Spanned<String>>,
    #[serde(default)]
    client_tool: Vec<ClientToolEntry>,
    #[serde(default)]
    sub_agent: Vec<SubAgentEntry>,
    state: Option<Spanned<StateEntry>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StateEntry {
    schema: Value,
    #[serde(default = "empty_object")]
    defaults: Value,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

#[derive(Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
enum ModelEntry {
    Scripted {
        turns: Vec<ScriptedTurn>,
    },
    #[serde(rename = "openai")]
    OpenAi(ProviderEntry),
    Anthropic(ProviderEntry),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProviderEntry {
    model: String,
    base_url: Option<String>,
    api_key_env: Option<String>,
    temperature: Option<f64>,
    max_tokens: Option<u32>,
    timeout_secs: Option<u64>,
}

impl ProviderEntry {
    fn into_config(self, provider: Provider) -> ModelConfig {
        ModelConfig {
            provider,
            model: self.model,
            base_url: self.base_url,
            api_key_env: self.api_key_env,
            temperature: self.temperature,
            max_tokens: self.max_tokens,
            timeout: self.timeout_secs.map(Duration::from_secs),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ClientToolEntry {
    name: Spanned<String>,
    #[serde(default)]
    description: String,
    input_schema: Value,
    output_schema: Option<Value>,
    timeout_secs: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SubAgentEntry {
    #[serde(rename = "type")]
    agent_type: Spanned<String>,
    #[serde(default)]
    description: String,
    input_schema: Option<Value>,
    output_schema: Option<Value>,
}

/// Parses an agents file whose models are all scripted (see [`agents_from_toml_with`]).
pub fn agents_from_toml(text: &str, catalogue: &ToolCatalogue) -> Result<Vec<Agent>, ConfigError> {
    agents_from_toml_with(text, catalogue, &ScriptedOnly)
}

/// Parses an agents file. Every agent is checked as a Rust definition would be (names, schemas,
/// tools, its model built by `models`), and the first problem is reported with its line.
pub fn agents_from_toml_with(
    text: &str,
    catalogue: &ToolCatalogue,
    models: &dyn ModelBuilder,
) -> Result<Vec<Agent>, ConfigError> {
    let file: File = toml::from_str(text).map_err(|e| ConfigError {
        line: e.span().map_or(1, |span| line_of(text, span.start)),
        reason: e.message().to_owned(),
    })?;
    file.agent
        .into_iter()
        .map(|entry| build_agent(text, entry, catalogue, models))
        .collect()
}

fn build_agent(
    text: &str,
    entry: AgentEntry,
    catalogue: &ToolCatalogue,
    models: &dyn ModelBuilder,
) -> Result<Agent, ConfigError> {
    let at = |spanned_start: usize, reason: String| ConfigError {
        line: line_of(text, spanned_start),
        reason,
    };
    let agent_line = entry.name.span().start;
    let model_line = entry.model.span().start;
    let provider_model = |provider, fields: ProviderEntry| {
        models
            .build(&fields.into_config(provider))
            .map_err(|reason| at(model_line, reason))
    };
    let model: Arc<dyn Model> = match entry.model.into_inner() {
        ModelEntry::Scripted { turns } => Arc::new(ScriptedModel::new(turns)),
        ModelEntry::OpenAi(fields) => provider_model(Provider::OpenAi, fields)?,
        ModelEntry::Anthropic(fields) => provider_model(Provider::Anthropic, fields)?,
    };
    let mut builder = Agent::builder(entry.name.get_ref().clone())
        .system_prompt(entry.system_prompt)
        .model(model);
    if let Some(max_steps) = entry.max_steps {
        builder = builder.max_steps(max_steps);
    }
    if let Some(secs) = entry.client_tool_timeout_secs {
        builder = builder.client_tool_timeout(Duration::from_secs(secs));
    }
    if let Some(resume) = entry.resume_on_deadline {
        builder = builder.resume_on_deadline(resume);
    }
    if let Some(secs) = entry.completed_retention_secs {
        builder = builder.completed_retention(Duration::from_secs(secs));
    }
    for gated in &entry.approval_required {
        if !entry.tools.iter().any(|t| t.get_ref() == gated.get_ref()) {
            return Err(at(
                gated.span().start,
                format!(
                    "approval_required names {:?}, which is not in tools",
                    gated.get_ref()
                ),
            ));
        }
    }
    for finishing in &entry.finish_with {
        let name = finishing.get_ref();
        if entry.client_tool.iter().any(|c| c.name.get_ref() == name) {
            return Err(at(
                finishing.span().start,
                format!(
                    "finish_with names the client tool {name:?}; a client tool cannot finish \
                     the run (its answer always goes back to the model)"
                ),
            ));
        }
        if !entry.tools.iter().any(|t| t.get_ref() == name) {
            return Err(at(
                finishing.span().start,
                format!("finish_with names {name:?}, which is not in tools"),
            ));
        }
    }
    for name in &entry.tools {
        let tool = catalogue.get(name.get_ref()).ok_or_else(|| {
            let known: Vec<&str> = catalogue.keys().map(String::as_str).collect();
            at(
                name.span().start,
                format!(
                    "unknown server tool {:?}; the catalogue has: {}",
                    name.get_ref(),
                    known.join(", ")
                ),
            )
        })?;
        let gated = entry
            .approval_required
            .iter()
            .any(|g| g.get_ref() == name.get_ref());
        let finishes = entry
            .finish_with
            .iter()
            .any(|f| f.get_ref() == name.get_ref());
        builder = builder.tool(Catalogued {
            tool: tool.clone(),
            requires_approval: gated || tool.requires_approval(),
            finishes_run: finishes || tool.finishes_run(),
        });
    }
    for client in entry.client_tool {
        let line = client.name.span().start;
        let schema_error = |e: SchemaError| at(line, e.to_string());
        let mut tool = ClientTool::new(
            client.name.get_ref(),
            &client.description,
            client.input_schema,
        )
        .map_err(schema_error)?;
        if let Some(schema) = client.output_schema {
            tool = tool.output_schema(schema).map_err(schema_error)?;
        }
        if let Some(secs) = client.timeout_secs {
            tool = tool.timeout(Duration::from_secs(secs));
        }
        builder = builder.client_tool(tool);
    }
    if let Some(state) = entry.state {
        let line = state.span().start;
        let state = state.into_inner();
        let declared = StateSchema::new(state.schema, state.defaults)
            .map_err(|e| at(line, format!("agent {:?}: {e}", entry.name.get_ref())))?;
        builder = builder.state_schema(declared);
    }
    for sub in entry.sub_agent {
        let line = sub.agent_type.span().start;
        let schema_error = |e: SchemaError| at(line, e.to_string());
        let mut sub_agent =
            SubAgent::new(sub.agent_type.get_ref(), &sub.description).at_line(line_of(text, line));
        if let Some(schema) = sub.input_schema {
            sub_agent = sub_agent.input_schema(schema).map_err(schema_error)?;
        }
        if let Some(schema) = sub.output_schema {
            sub_agent = sub_agent.output_schema(schema).map_err(schema_error)?;
        }
        builder = builder.sub_agent_with(sub_agent);
    }
    builder
        .build()
        .map_err(|e: DefinitionError| at(agent_line, e.to_string()))
}

/// A catalogue tool as an agent of the file uses it (possibly gated by approval, possibly
/// ending the run).
struct Catalogued {
    tool: Arc<dyn ServerTool>,
    requires_approval: bool,
    finishes_run: bool,
}

#[async_trait]
impl ServerTool for Catalogued {
    fn spec(&self) -> &ToolSpec {
        self.tool.spec()
    }

    fn execution(&self) -> ToolExecution {
        self.tool.execution()
    }

    fn requires_approval(&self) -> bool {
        self.requires_approval
    }

    fn finishes_run(&self) -> bool {
        self.finishes_run
    }

    fn at_most_once(&self) -> bool {
        self.tool.at_most_once()
    }

    fn check_input(&self, input: &Value) -> Result<(), ToolError> {
        self.tool.check_input(input)
    }

    async fn call(&self, context: &ToolContext, input: Value) -> Result<Value, ToolError> {
        self.tool.call(context, input).await
    }
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::tool;
    use serde_json::json;

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Nothing {}

    fn catalogue() -> ToolCatalogue {
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
        let names: Vec<&str> = agent.tool_specs().iter().map(|s| s.name.as_str()).collect();
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

[[agent]]
name = "researcher"
model = { kind = "scripted", turns = [{ text = "facts" }] }

[[agent.sub_agent]]
type = "planner"
"#;
        let agents = agents_from_toml(file, &catalogue()).unwrap();
        assert!(agents[0].sub_agent("subagent__researcher").is_some());
        let cycle = crate::AgentRegistry::new(agents).unwrap_err();
        assert_eq!(
            cycle.to_string(),
            "agent \"planner\" (line 15) calls sub-agents in a cycle: planner -> researcher -> planner"
        );
        let unknown = file.replace(r#"type = "planner""#, r#"type = "ghost""#);
        let error = crate::AgentRegistry::new(agents_from_toml(&unknown, &catalogue()).unwrap())
            .unwrap_err();
        assert!(error.to_string().contains("(line 15)"), "{error}");
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
        for (text, line, reason) in cases {
            let error = agents_from_toml(&text, &catalogue()).unwrap_err();
            assert_eq!(error.line, line, "{error}");
            assert!(
                error.to_string().contains(reason),
                "{error} should say {reason:?}"
            );
        }
        assert!(agents_from_toml("", &catalogue()).unwrap().is_empty());
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
    fn a_command_line_names_a_model_as_provider_colon_model() {
        assert_eq!(
            "openai:gpt-4o-mini".parse::<ModelConfig>(),
            Ok(ModelConfig::new(Provider::OpenAi, "gpt-4o-mini"))
        );
        assert_eq!(
            "anthropic:claude-3-5-haiku-latest"
                .parse::<ModelConfig>()
                .unwrap()
                .provider,
            Provider::Anthropic
        );
        assert!("gpt-4o".parse::<ModelConfig>().is_err());
        assert!("openai:".parse::<ModelConfig>().is_err());
        assert!(
            "mistral:large"
                .parse::<ModelConfig>()
                .unwrap_err()
                .contains("unknown model provider")
        );
    }
}
