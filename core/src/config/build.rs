//! How one entry of an agents file becomes an [`Agent`]: its model built, its tools looked up in
//! the catalogue, and each reference checked, every problem reported with its line.

use super::{
    ConfigError, ModelBuilder, Provider, ToolCatalogue,
    catalogue::Catalogued,
    file::{AgentEntry, ModelEntry, ProviderEntry},
    line_of,
};
use crate::{
    Agent, Model, ScriptedModel,
    agent::DefinitionError,
    state::StateSchema,
    subagent::SubAgent,
    tool::{ClientTool, SchemaError},
};
use std::{sync::Arc, time::Duration};

pub(super) fn build_agent(
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
