//! Agent definitions and the registry that maps agent types to them. The worker and the server
//! share one registry, so the server can refuse an unknown agent type before anything is written.
//!
//! This file holds the agent as the rest of Baton reads it; `builder.rs` how one is defined and
//! checked, `registry.rs` the registry, `error.rs` why a definition is refused.

mod builder;
mod error;
mod registry;
#[cfg(test)]
mod tests;

pub use builder::AgentBuilder;
pub use error::DefinitionError;
pub use registry::AgentRegistry;

use crate::{
    model::Model,
    state::{AfterSubAgent, ChildEnded, StateSchema, StateSet},
    subagent::{SUB_AGENT_TOOL_PREFIX, SubAgent},
    tool::{ClientTool, ServerTool, ToolSpec, Toolset},
};
use std::{borrow::Cow, collections::BTreeMap, fmt, sync::Arc, time::Duration};

/// Default cap on model steps per run.
pub const DEFAULT_MAX_STEPS: u32 = 20;

/// How long a client call waits for its answer unless the tool or the agent says otherwise.
pub const DEFAULT_CLIENT_TOOL_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// How long a drained client call still answers `already_completed` to a re-submit.
pub const DEFAULT_COMPLETED_RETENTION: Duration = Duration::from_secs(24 * 60 * 60);

/// Tool name prefixes Baton keeps for its own tools (sub-agents, companions).
pub const RESERVED_TOOL_PREFIXES: [&str; 2] = [SUB_AGENT_TOOL_PREFIX, "companion__"];

/// One of an agent's tools, by kind.
#[derive(Clone)]
pub enum AgentTool<'a> {
    Server(Arc<dyn ServerTool>),
    Client(&'a ClientTool),
    /// Another agent type, run as a child session of the caller's tree.
    SubAgent(&'a SubAgent),
}

/// An agent: a system prompt, a model, server tools and a step cap. Its name is its agent type.
pub struct Agent {
    name: String,
    system_prompt: String,
    model: Arc<dyn Model>,
    tools: BTreeMap<String, Arc<dyn ServerTool>>,
    client_tools: BTreeMap<String, ClientTool>,
    /// By tool name (`subagent__<type>`).
    sub_agents: BTreeMap<String, SubAgent>,
    tool_specs: Vec<ToolSpec>,
    /// Tools that can change while the worker runs (an MCP server's), after those above.
    toolsets: Vec<Arc<dyn Toolset>>,
    max_steps: u32,
    client_tool_timeout: Duration,
    completed_retention: Duration,
    resume_on_deadline: bool,
    state: Option<Arc<StateSchema>>,
    after_sub_agent: Option<AfterSubAgent>,
}

impl fmt::Debug for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Agent")
            .field("name", &self.name)
            .field("model", &self.model.name())
            .field("tools", &self.tools.keys().collect::<Vec<_>>())
            .field(
                "client_tools",
                &self.client_tools.keys().collect::<Vec<_>>(),
            )
            .field("max_steps", &self.max_steps)
            .finish()
    }
}
impl Agent {
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn system_prompt(&self) -> &str {
        &self.system_prompt
    }

    pub fn model(&self) -> &dyn Model {
        self.model.as_ref()
    }

    /// The server tool named `name`: the agent's own, else a toolset's (one it offers now, or
    /// one it offered before).
    pub fn tool(&self, name: &str) -> Option<Arc<dyn ServerTool>> {
        if let Some(tool) = self.tools.get(name) {
            return Some(tool.clone());
        }
        if self.client_tools.contains_key(name) || self.sub_agents.contains_key(name) {
            return None;
        }
        self.toolsets.iter().find_map(|toolset| toolset.tool(name))
    }

    /// The client tool named `name`.
    pub fn client_tool(&self, name: &str) -> Option<&ClientTool> {
        self.client_tools.get(name)
    }

    /// The server tools offered now, by name: the agent's own, then its toolsets' current ones
    /// (a name the agent's own tools take is theirs).
    pub fn tools(&self) -> Vec<(String, Arc<dyn ServerTool>)> {
        let mut tools: Vec<(String, Arc<dyn ServerTool>)> = self
            .tools
            .iter()
            .map(|(name, tool)| (name.clone(), tool.clone()))
            .collect();
        for toolset in &self.toolsets {
            for (name, tool) in toolset.current().iter() {
                if !self.is_own_tool(name) && !tools.iter().any(|(taken, _)| taken == name) {
                    tools.push((name.clone(), tool.clone()));
                }
            }
        }
        tools
    }

    /// Whether `name` is one of the agent's own tools (server, client or sub-agent).
    fn is_own_tool(&self, name: &str) -> bool {
        self.tools.contains_key(name)
            || self.client_tools.contains_key(name)
            || self.sub_agents.contains_key(name)
    }

    /// Reads each toolset's list again where it changed: before a step reads its tools.
    pub async fn refresh_tools(&self) {
        for toolset in &self.toolsets {
            toolset.refresh().await;
        }
    }

    /// The client tools, by name.
    pub fn client_tools(&self) -> impl Iterator<Item = (&str, &ClientTool)> {
        self.client_tools
            .iter()
            .map(|(name, tool)| (name.as_str(), tool))
    }

    /// The tool named `name`, of any kind.
    pub fn any_tool(&self, name: &str) -> Option<AgentTool<'_>> {
        if let Some(tool) = self.client_tools.get(name) {
            return Some(AgentTool::Client(tool));
        }
        if let Some(sub_agent) = self.sub_agents.get(name) {
            return Some(AgentTool::SubAgent(sub_agent));
        }
        self.tool(name).map(AgentTool::Server)
    }

    /// The sub-agent called by the tool named `tool_name` (`subagent__<type>`).
    pub fn sub_agent(&self, tool_name: &str) -> Option<&SubAgent> {
        self.sub_agents.get(tool_name)
    }

    /// The sub-agents this agent may call.
    pub fn sub_agents(&self) -> impl Iterator<Item = &SubAgent> {
        self.sub_agents.values()
    }

    /// How long a call of `tool` waits for its answer: the tool's timeout, else the agent's.
    pub fn client_tool_timeout(&self, tool: &ClientTool) -> Duration {
        tool.timeout_override().unwrap_or(self.client_tool_timeout)
    }

    /// How long a call of the tool named `tool_name` waits for an answer (a client tool's result
    /// or an approval): the client tool's own timeout, else the agent's.
    pub fn answer_timeout(&self, tool_name: &str) -> Duration {
        self.client_tools
            .get(tool_name)
            .map_or(self.client_tool_timeout, |tool| {
                self.client_tool_timeout(tool)
            })
    }

    /// How long drained client calls keep answering `already_completed`.
    pub fn completed_retention(&self) -> Duration {
        self.completed_retention
    }

    /// Whether a suspended session resumes by itself when its batch's deadlines lapse.
    pub fn resume_on_deadline(&self) -> bool {
        self.resume_on_deadline
    }

    /// The specs sent to the model (server and client tools), sorted by name.
    /// What the model is told of the tools it may call now, by name: the agent's own, then
    /// its toolsets' current ones.
    pub fn tool_specs(&self) -> Cow<'_, [ToolSpec]> {
        if self.toolsets.is_empty() {
            return Cow::Borrowed(&self.tool_specs);
        }
        let mut specs = self.tool_specs.clone();
        for (name, tool) in self.tools() {
            if !self.tools.contains_key(&name) {
                specs.push(tool.spec().clone());
            }
        }
        specs.sort_by(|a, b| a.name.cmp(&b.name));
        Cow::Owned(specs)
    }

    pub fn max_steps(&self) -> u32 {
        self.max_steps
    }

    /// The custom state the agent's sessions carry, if it declares one.
    pub fn state_schema(&self) -> Option<&Arc<StateSchema>> {
        self.state.as_ref()
    }

    /// The fields the agent's `after_sub_agent` hook sets when a sub-agent call ends (none
    /// without a hook).
    pub fn after_sub_agent(&self, ended: &ChildEnded<'_>) -> Vec<StateSet> {
        self.after_sub_agent
            .as_ref()
            .map(|hook| hook(ended))
            .unwrap_or_default()
    }

    /// Whether the agent has an `after_sub_agent` hook.
    pub fn has_after_sub_agent(&self) -> bool {
        self.after_sub_agent.is_some()
    }
}
