//! How one entry of an agents file becomes an [`Agent`]: its model built, its tools looked up in
//! the catalogue, and each reference checked, every problem reported with its line. The checks
//! run in the order of the entry's parts, so the first problem reported is the first one met.

use super::{
    ConfigError, ModelBuilder, Provider, ToolCatalogue,
    catalogue::Catalogued,
    file::{
        AgentEntry, ClientToolEntry, FoldEntry, ModelEntry, ProviderEntry, RemoteAgentEntry,
        StateEntry, StateToolEntry, SubAgentEntry,
    },
    line_of,
    state_tool::{Fold, StateTool, with_folds},
};
use crate::{
    Agent, Model, ScriptedModel,
    agent::{AgentBuilder, DefinitionError},
    state::StateSchema,
    subagent::{SubAgent, SubAgentTransport},
    tool::{ClientTool, SchemaError},
};
use std::{sync::Arc, time::Duration};
use toml::Spanned;

/// What an entry's server tools are taken from: the catalogue (`tools`), and the toolsets of
/// the MCP servers (`mcp_servers`).
#[derive(Clone, Copy)]
pub(super) struct Tools<'a> {
    pub(super) catalogue: &'a ToolCatalogue,
    pub(super) toolsets: &'a super::Toolsets,
}

/// The agent an entry of the file declares, or the first problem with it.
pub(super) fn build_agent(
    text: &str,
    entry: AgentEntry,
    Tools {
        catalogue,
        toolsets,
    }: Tools<'_>,
    models: &dyn ModelBuilder,
) -> Result<Agent, ConfigError> {
    let at = At { text };
    let agent_line = entry.name.span().start;
    let builder = with_limits(Agent::builder(entry.name.get_ref().clone()), &entry);
    let AgentEntry {
        name,
        system_prompt,
        model,
        tools,
        mcp_servers,
        approval_required,
        finish_with,
        client_tool,
        sub_agent,
        remote_agent,
        a2a_agent,
        state,
        state_tool,
        ..
    } = entry;
    let builder =
        builder
            .system_prompt(system_prompt)
            .model(model_of(at, name.get_ref(), model, models)?);
    let tool_names = ServerToolNames {
        tools: &tools,
        approval_required: &approval_required,
        finish_with: &finish_with,
    };
    check_tool_references(at, tool_names, &client_tool)?;
    let builder = with_catalogue_tools(at, builder, tool_names, catalogue)?;
    let builder = with_toolsets(at, builder, &mcp_servers, toolsets)?;
    let builder = with_client_tools(at, builder, client_tool)?;
    let state_schema = state.as_ref().map(|state| state.get_ref().schema.clone());
    let builder = match state {
        Some(state) => builder.state_schema(state_of(at, name.get_ref(), state)?),
        None => builder,
    };
    let builder = with_state_tools(at, builder, state_tool, state_schema.as_ref())?;
    let builder = with_sub_agents(at, builder, sub_agent, remote_agent, models)?;
    let builder = a2a_agent.into_iter().try_fold(builder, |builder, entry| {
        let sub_agent = super::a2a::a2a_sub_agent(entry, models)
            .map_err(|(offset, reason)| at.error(offset, reason))?;
        Ok::<_, ConfigError>(builder.sub_agent_with(sub_agent))
    })?;
    builder
        .build()
        .map_err(|e: DefinitionError| at.error(agent_line, e.to_string()))
}

/// The entry's lists of server tool names: the tools, and those of them gated or finishing.
#[derive(Clone, Copy)]
struct ServerToolNames<'a> {
    tools: &'a [Spanned<String>],
    approval_required: &'a [Spanned<String>],
    finish_with: &'a [Spanned<String>],
}

/// Whether `list` names `name`.
fn names(list: &[Spanned<String>], name: &str) -> bool {
    list.iter().any(|listed| listed.get_ref() == name)
}

/// Where in the file a problem is: turns a span's start into the error's line.
#[derive(Clone, Copy)]
struct At<'a> {
    text: &'a str,
}

impl At<'_> {
    fn error(self, span_start: usize, reason: String) -> ConfigError {
        ConfigError {
            line: line_of(self.text, span_start),
            reason,
        }
    }
}

/// The entry's model: a script (its call ids `<agent>_<turn>_<position>`, unique per agent), or
/// a provider's model made by the caller's builder.
fn model_of(
    at: At<'_>,
    agent_name: &str,
    model: Spanned<ModelEntry>,
    models: &dyn ModelBuilder,
) -> Result<Arc<dyn Model>, ConfigError> {
    let model_line = model.span().start;
    let provider_model = |provider, fields: ProviderEntry| {
        models
            .build(&fields.into_config(provider))
            .map_err(|reason| at.error(model_line, reason))
    };
    Ok(match model.into_inner() {
        ModelEntry::Scripted { turns } => {
            Arc::new(ScriptedModel::new(turns).call_id_prefix(agent_name))
        }
        ModelEntry::OpenAi(fields) => provider_model(Provider::OpenAi, fields)?,
        ModelEntry::Anthropic(fields) => provider_model(Provider::Anthropic, fields)?,
    })
}

/// The step cap, timeouts and retention the entry sets (the builder's defaults otherwise).
fn with_limits(mut builder: AgentBuilder, entry: &AgentEntry) -> AgentBuilder {
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
    builder
}

/// `approval_required` and `finish_with` name only the entry's server tools (a client tool's
/// answer always goes back to the model, so it cannot finish the run).
fn check_tool_references(
    at: At<'_>,
    tool_names: ServerToolNames<'_>,
    client_tools: &[ClientToolEntry],
) -> Result<(), ConfigError> {
    for gated in tool_names.approval_required {
        if !names(tool_names.tools, gated.get_ref()) {
            return Err(at.error(
                gated.span().start,
                format!(
                    "approval_required names {:?}, which is not in tools",
                    gated.get_ref()
                ),
            ));
        }
    }
    for finishing in tool_names.finish_with {
        let name = finishing.get_ref();
        if client_tools.iter().any(|c| c.name.get_ref() == name) {
            return Err(at.error(
                finishing.span().start,
                format!(
                    "finish_with names the client tool {name:?}; a client tool cannot finish \
                     the run (its answer always goes back to the model)"
                ),
            ));
        }
        if !names(tool_names.tools, name) {
            return Err(at.error(
                finishing.span().start,
                format!("finish_with names {name:?}, which is not in tools"),
            ));
        }
    }
    Ok(())
}

/// The toolsets of the MCP servers the entry names (`mcp_servers`).
fn with_toolsets(
    at: At<'_>,
    builder: AgentBuilder,
    servers: &[Spanned<String>],
    toolsets: &super::Toolsets,
) -> Result<AgentBuilder, ConfigError> {
    servers.iter().try_fold(builder, |builder, server| {
        let toolset = toolsets.get(server.get_ref()).ok_or_else(|| {
            let known: Vec<&str> = toolsets.keys().map(String::as_str).collect();
            let known = if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            };
            at.error(
                server.span().start,
                format!(
                    "unknown MCP server {:?} in mcp_servers; the file declares: {known}",
                    server.get_ref()
                ),
            )
        })?;
        Ok(builder.toolset(toolset.clone()))
    })
}

/// The server tools the entry names, from the catalogue, gated or finishing as it says.
fn with_catalogue_tools(
    at: At<'_>,
    mut builder: AgentBuilder,
    tool_names: ServerToolNames<'_>,
    catalogue: &ToolCatalogue,
) -> Result<AgentBuilder, ConfigError> {
    for name in tool_names.tools {
        let tool = catalogue.get(name.get_ref()).ok_or_else(|| {
            let known: Vec<&str> = catalogue.keys().map(String::as_str).collect();
            at.error(
                name.span().start,
                format!(
                    "unknown server tool {:?}; the catalogue has: {}",
                    name.get_ref(),
                    known.join(", ")
                ),
            )
        })?;
        builder = builder.tool(Catalogued {
            tool: tool.clone(),
            requires_approval: names(tool_names.approval_required, name.get_ref())
                || tool.requires_approval(),
            finishes_run: names(tool_names.finish_with, name.get_ref()) || tool.finishes_run(),
        });
    }
    Ok(builder)
}

/// The entry's client tools, their schemas checked.
fn with_client_tools(
    at: At<'_>,
    mut builder: AgentBuilder,
    client_tools: Vec<ClientToolEntry>,
) -> Result<AgentBuilder, ConfigError> {
    for client in client_tools {
        let line = client.name.span().start;
        let schema_error = |e: SchemaError| at.error(line, e.to_string());
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
        if let Some(hint) = client.render {
            tool = tool.render(hint);
        }
        builder = builder.client_tool(tool);
    }
    Ok(builder)
}

/// The custom state the agent `agent_name` declares: its schema, and defaults that match it.
fn state_of(
    at: At<'_>,
    agent_name: &str,
    state: Spanned<StateEntry>,
) -> Result<StateSchema, ConfigError> {
    let line = state.span().start;
    let state = state.into_inner();
    StateSchema::new(state.schema, state.defaults)
        .map_err(|e| at.error(line, format!("agent {agent_name:?}: {e}")))
}

/// The entry's state tools, each field they set declared by its state.
fn with_state_tools(
    at: At<'_>,
    mut builder: AgentBuilder,
    state_tools: Vec<StateToolEntry>,
    state_schema: Option<&serde_json::Value>,
) -> Result<AgentBuilder, ConfigError> {
    for entry in state_tools {
        let line = entry.name.span().start;
        let schema = state_schema.ok_or_else(|| {
            at.error(
                line,
                format!(
                    "state_tool {:?}: the agent declares no state",
                    entry.name.get_ref()
                ),
            )
        })?;
        let tool = StateTool::new(
            entry.name.get_ref(),
            &entry.description,
            &entry.fields,
            schema,
        )
        .map_err(|reason| at.error(line, reason))?;
        builder = builder.tool(tool);
    }
    Ok(builder)
}

/// The entry's sub-agents, their schemas checked; each remembers its line, for the registry's
/// errors. Their folds become the agent's `after_sub_agent` hook.
fn with_sub_agents(
    at: At<'_>,
    mut builder: AgentBuilder,
    sub_agents: Vec<SubAgentEntry>,
    remote_agents: Vec<toml::Spanned<RemoteAgentEntry>>,
    secrets: &dyn ModelBuilder,
) -> Result<AgentBuilder, ConfigError> {
    let mut folds = Vec::new();
    for remote in remote_agents {
        let (sub_agent, remote_folds) = super::remote::remote_sub_agent(remote, secrets)
            .map_err(|(offset, reason)| at.error(offset, reason))?;
        folds.extend(remote_folds);
        builder = builder.sub_agent_with(sub_agent);
    }
    for sub in sub_agents {
        let line = sub.agent_type.span().start;
        let declared_as = match sub.transport {
            SubAgentTransport::Local => None,
            SubAgentTransport::Remote => Some("[[agent.remote_agent]] (with its url)"),
            SubAgentTransport::A2a => Some("[[agent.a2a_agent]] (with its card_url)"),
        };
        if let Some(declared_as) = declared_as {
            return Err(at.error(
                line,
                format!(
                    "a sub-agent of another service is declared as {declared_as}, not with \
                     transport = \"{}\"",
                    sub.transport
                        .pending_kind()
                        .trim_start_matches("sub_agent_")
                ),
            ));
        }
        for fold in sub.fold {
            let fold_line = fold.span().start;
            let FoldEntry { into, from } = fold.into_inner();
            let fold = Fold {
                agent_type: sub.agent_type.get_ref().clone(),
                into,
                from,
            };
            folds.push(
                fold.checked()
                    .map_err(|reason| at.error(fold_line, reason))?,
            );
        }
        let schema_error = |e: SchemaError| at.error(line, e.to_string());
        // A local sub-agent: a remote one was refused above.
        let mut sub_agent = SubAgent::new(sub.agent_type.get_ref(), &sub.description)
            .at_line(line_of(at.text, line));
        if let Some(schema) = sub.input_schema {
            sub_agent = sub_agent.input_schema(schema).map_err(schema_error)?;
        }
        if let Some(schema) = sub.output_schema {
            sub_agent = sub_agent.output_schema(schema).map_err(schema_error)?;
        }
        builder = builder.sub_agent_with(sub_agent);
    }
    Ok(with_folds(builder, folds))
}
