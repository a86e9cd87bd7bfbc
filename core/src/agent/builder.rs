//! Defining an agent: [`AgentBuilder`] collects its parts, and [`AgentBuilder::build`] checks
//! them (names, reserved prefixes, duplicates, state) once, so an [`Agent`] is always valid.

use super::{
    Agent, DEFAULT_CLIENT_TOOL_TIMEOUT, DEFAULT_COMPLETED_RETENTION, DEFAULT_MAX_STEPS,
    DefinitionError, RESERVED_TOOL_PREFIXES,
};
use crate::{
    ids::is_valid_name,
    model::Model,
    state::{AfterSubAgent, ChildEnded, StateSchema, StateSchemaError, StateSet},
    subagent::{SubAgent, Transport},
    tool::{ClientTool, ServerTool, ToolSpec, Toolset},
};
use std::{collections::BTreeMap, sync::Arc, time::Duration};

impl Agent {
    /// Starts a definition; `name` is the agent type used in workflow ids and `/start`.
    pub fn builder(name: impl Into<String>) -> AgentBuilder {
        AgentBuilder {
            name: name.into(),
            system_prompt: String::new(),
            model: None,
            tools: Vec::new(),
            toolsets: Vec::new(),
            client_tools: Vec::new(),
            sub_agents: Vec::new(),
            max_steps: DEFAULT_MAX_STEPS,
            client_tool_timeout: DEFAULT_CLIENT_TOOL_TIMEOUT,
            completed_retention: DEFAULT_COMPLETED_RETENTION,
            resume_on_deadline: true,
            state: None,
            after_sub_agent: None,
        }
    }
}

/// Builder of [`Agent`].
pub struct AgentBuilder {
    name: String,
    system_prompt: String,
    model: Option<Arc<dyn Model>>,
    tools: Vec<Arc<dyn ServerTool>>,
    toolsets: Vec<Arc<dyn Toolset>>,
    client_tools: Vec<ClientTool>,
    sub_agents: Vec<SubAgent>,
    max_steps: u32,
    client_tool_timeout: Duration,
    completed_retention: Duration,
    resume_on_deadline: bool,
    state: Option<Result<StateSchema, StateSchemaError>>,
    after_sub_agent: Option<AfterSubAgent>,
}

impl AgentBuilder {
    /// The agent's sessions carry a custom state of type `T`: its JSON Schema derived by
    /// `schemars`, `T::default()` as the defaults (see [`StateSchema`]).
    pub fn state<T: schemars::JsonSchema + serde::Serialize + Default>(mut self) -> Self {
        self.state = Some(StateSchema::of::<T>());
        self
    }

    /// The agent's sessions carry a custom state declared as a schema and defaults.
    pub fn state_schema(mut self, schema: StateSchema) -> Self {
        self.state = Some(Ok(schema));
        self
    }

    /// A hook run when one of the agent's sub-agent calls ends, with the child's final state,
    /// status and output: the fields it returns are set in this agent's own state, staged with
    /// the call's result. It may run more than once for a call, so it should set, not append.
    pub fn after_sub_agent(
        mut self,
        hook: impl Fn(&ChildEnded<'_>) -> Vec<StateSet> + Send + Sync + 'static,
    ) -> Self {
        self.after_sub_agent = Some(Arc::new(hook));
        self
    }

    /// Another agent type this agent may call as the tool `subagent__<agent_type>`, with the
    /// input `{message}`; the call's result is the child's final output.
    pub fn sub_agent(self, agent_type: &str, description: &str) -> Self {
        self.sub_agent_with(SubAgent::new(agent_type, description))
    }

    /// A sub-agent with its own input or output schema (see [`SubAgent`]).
    pub fn sub_agent_with(mut self, sub_agent: SubAgent) -> Self {
        self.sub_agents.push(sub_agent);
        self
    }

    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = prompt.into();
        self
    }

    pub fn model(mut self, model: impl Model + 'static) -> Self {
        self.model = Some(Arc::new(model));
        self
    }

    pub fn tool(mut self, tool: impl ServerTool + 'static) -> Self {
        self.tools.push(Arc::new(tool));
        self
    }

    /// Tools that can change while the worker runs (see [`Toolset`]): those it offers at each
    /// step are offered with the agent's own. Their names when the agent is built must be free.
    pub fn toolset(mut self, toolset: Arc<dyn Toolset>) -> Self {
        self.toolsets.push(toolset);
        self
    }

    /// A tool that runs on the client (see [`ClientTool`]).
    pub fn client_tool(mut self, tool: ClientTool) -> Self {
        self.client_tools.push(tool);
        self
    }

    pub fn max_steps(mut self, max_steps: u32) -> Self {
        self.max_steps = max_steps;
        self
    }

    /// Default wait for client calls whose tool sets no timeout (5 minutes unless set).
    pub fn client_tool_timeout(mut self, timeout: Duration) -> Self {
        self.client_tool_timeout = timeout;
        self
    }

    /// Whether a deadline workflow resumes a suspended session when its batch's deadlines have
    /// lapsed, so an abandoned session still finishes (on unless turned off).
    pub fn resume_on_deadline(mut self, resume: bool) -> Self {
        self.resume_on_deadline = resume;
        self
    }

    /// How long drained client calls keep answering `already_completed` (24 hours unless set;
    /// zero turns it off).
    pub fn completed_retention(mut self, retention: Duration) -> Self {
        self.completed_retention = retention;
        self
    }

    pub fn build(self) -> Result<Agent, DefinitionError> {
        if !is_valid_name(&self.name) {
            return Err(DefinitionError::InvalidName(self.name));
        }
        if self.max_steps == 0 {
            return Err(DefinitionError::ZeroMaxSteps(self.name));
        }
        let model = self.model.ok_or_else(|| DefinitionError::MissingModel {
            agent: self.name.clone(),
        })?;
        let state = self
            .state
            .transpose()
            .map_err(|reason| DefinitionError::InvalidState {
                agent: self.name.clone(),
                reason,
            })?
            .map(Arc::new);
        if self.after_sub_agent.is_some() && state.is_none() {
            return Err(DefinitionError::HookWithoutState(self.name));
        }
        let mut tools = BTreeMap::new();
        for tool in self.tools {
            let tool_name = tool.spec().name.clone();
            check_tool_name(&self.name, &tool_name, tools.contains_key(&tool_name))?;
            tools.insert(tool_name, tool);
        }
        let mut client_tools = BTreeMap::new();
        for tool in self.client_tools {
            let tool_name = tool.spec().name.clone();
            let taken = tools.contains_key(&tool_name) || client_tools.contains_key(&tool_name);
            check_tool_name(&self.name, &tool_name, taken)?;
            client_tools.insert(tool_name, tool);
        }
        let sub_agents = sub_agents_by_tool_name(&self.name, self.sub_agents)?;
        for sub_agent in sub_agents.values() {
            let tool_name = &sub_agent.spec().name;
            let checked = match sub_agent.declared_transport() {
                Transport::Local => continue,
                Transport::Remote(remote) => remote.check(),
                Transport::A2a(agent) => agent.check(),
            };
            let taken = tools.contains_key(tool_name) || client_tools.contains_key(tool_name);
            check_tool_name(&self.name, tool_name, taken)?;
            checked.map_err(|reason| DefinitionError::InvalidRemoteAgent {
                agent: self.name.clone(),
                tool: tool_name.clone(),
                reason,
            })?;
        }
        for toolset in &self.toolsets {
            for tool_name in toolset.current().keys() {
                let taken = tools.contains_key(tool_name)
                    || client_tools.contains_key(tool_name)
                    || sub_agents.contains_key(tool_name);
                check_tool_name(&self.name, tool_name, taken)?;
            }
        }
        let mut tool_specs: Vec<ToolSpec> = tools
            .values()
            .map(|t| t.spec().clone())
            .chain(client_tools.values().map(|t| t.spec().clone()))
            .chain(sub_agents.values().map(|s| s.spec().clone()))
            .collect();
        tool_specs.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(Agent {
            name: self.name,
            system_prompt: self.system_prompt,
            model,
            tools,
            client_tools,
            sub_agents,
            tool_specs,
            toolsets: self.toolsets,
            max_steps: self.max_steps,
            client_tool_timeout: self.client_tool_timeout,
            completed_retention: self.completed_retention,
            resume_on_deadline: self.resume_on_deadline,
            state,
            after_sub_agent: self.after_sub_agent,
        })
    }
}

/// A server or client tool's name is valid, outside Baton's reserved prefixes, and not `taken`
/// by another tool of the agent `agent`.
fn check_tool_name(agent: &str, tool_name: &str, taken: bool) -> Result<(), DefinitionError> {
    if RESERVED_TOOL_PREFIXES
        .iter()
        .any(|prefix| tool_name.starts_with(prefix))
    {
        return Err(DefinitionError::ReservedToolName(tool_name.to_owned()));
    }
    if !is_valid_name(tool_name) {
        return Err(DefinitionError::InvalidName(tool_name.to_owned()));
    }
    if taken {
        return Err(DefinitionError::DuplicateTool {
            agent: agent.to_owned(),
            tool: tool_name.to_owned(),
        });
    }
    Ok(())
}

/// The sub-agents of the agent `agent` by their tool name (`subagent__<type>`), each type valid
/// and declared once.
fn sub_agents_by_tool_name(
    agent: &str,
    declared: Vec<SubAgent>,
) -> Result<BTreeMap<String, SubAgent>, DefinitionError> {
    let mut sub_agents = BTreeMap::new();
    for sub_agent in declared {
        if !is_valid_name(sub_agent.agent_type()) {
            return Err(DefinitionError::InvalidName(
                sub_agent.agent_type().to_owned(),
            ));
        }
        let tool_name = sub_agent.spec().name.clone();
        if sub_agents.contains_key(&tool_name) {
            return Err(DefinitionError::DuplicateTool {
                agent: agent.to_owned(),
                tool: tool_name,
            });
        }
        sub_agents.insert(tool_name, sub_agent);
    }
    Ok(sub_agents)
}
