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
//! [[agent.client_tool]]
//! name = "ask_user"
//! description = "Asks the user."
//! input_schema = { type = "object", properties = { question = { type = "string" } } }
//! output_schema = { type = "string" }   # optional
//! timeout_secs = 60                     # optional
//! ```

use crate::{
    Agent, ScriptedModel, ServerTool, ToolExecution, ToolSpec,
    agent::DefinitionError,
    message::ToolError,
    scripted::ScriptedTurn,
    tool::{ClientTool, SchemaError},
};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;
use std::{collections::BTreeMap, sync::Arc, time::Duration};
use toml::Spanned;

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
    model: ModelEntry,
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
}

#[derive(Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
enum ModelEntry {
    Scripted { turns: Vec<ScriptedTurn> },
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

/// Parses an agents file. Every agent is checked as a Rust definition would be (names, schemas,
/// tools), and the first problem is reported with its line.
pub fn agents_from_toml(text: &str, catalogue: &ToolCatalogue) -> Result<Vec<Agent>, ConfigError> {
    let file: File = toml::from_str(text).map_err(|e| ConfigError {
        line: e.span().map_or(1, |span| line_of(text, span.start)),
        reason: e.message().to_owned(),
    })?;
    file.agent
        .into_iter()
        .map(|entry| build_agent(text, entry, catalogue))
        .collect()
}

fn build_agent(
    text: &str,
    entry: AgentEntry,
    catalogue: &ToolCatalogue,
) -> Result<Agent, ConfigError> {
    let at = |spanned_start: usize, reason: String| ConfigError {
        line: line_of(text, spanned_start),
        reason,
    };
    let agent_line = entry.name.span().start;
    let ModelEntry::Scripted { turns } = entry.model;
    let mut builder = Agent::builder(entry.name.get_ref().clone())
        .system_prompt(entry.system_prompt)
        .model(ScriptedModel::new(turns));
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

    fn check_input(&self, input: &Value) -> Result<(), ToolError> {
        self.tool.check_input(input)
    }

    async fn call(&self, input: Value) -> Result<Value, ToolError> {
        self.tool.call(input).await
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
}
