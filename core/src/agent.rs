//! Agent definitions and the registry that maps agent types to them. The worker and the server
//! share one registry, so the server can refuse an unknown agent type before anything is written.

use crate::{
    ids::is_valid_name,
    model::Model,
    state::{AfterSubAgent, ChildEnded, StateSchema, StateSchemaError, StateSet},
    subagent::SubAgent,
    tool::{ClientTool, ServerTool, ToolSpec},
};
use std::{collections::BTreeMap, fmt, sync::Arc, time::Duration};

/// Default cap on model steps per run.
pub const DEFAULT_MAX_STEPS: u32 = 20;

/// How long a client call waits for its answer unless the tool or the agent says otherwise.
pub const DEFAULT_CLIENT_TOOL_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// How long a drained client call still answers `already_completed` to a re-submit.
pub const DEFAULT_COMPLETED_RETENTION: Duration = Duration::from_secs(24 * 60 * 60);

/// Tool name prefixes Baton keeps for its own tools (sub-agents, companions).
pub const RESERVED_TOOL_PREFIXES: [&str; 2] = ["subagent__", "companion__"];

/// One of an agent's tools, by kind.
#[derive(Clone, Copy)]
pub enum AgentTool<'a> {
    Server(&'a Arc<dyn ServerTool>),
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

/// Why an agent definition was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DefinitionError {
    #[error("invalid name {0:?}: use 1-64 ASCII letters, digits, '-' or '_', and no '__'")]
    InvalidName(String),
    #[error("agent {agent:?} has two tools named {tool:?}")]
    DuplicateTool { agent: String, tool: String },
    #[error("tool name {0:?} uses a prefix Baton reserves (subagent__, companion__)")]
    ReservedToolName(String),
    #[error("agent {0:?} has max_steps 0; it could never answer")]
    ZeroMaxSteps(String),
    #[error("agent {agent:?} has no model")]
    MissingModel { agent: String },
    #[error("the registry already has an agent named {0:?}")]
    DuplicateAgent(String),
    #[error("agent {agent:?}{} calls the sub-agent {sub_agent:?}, which the registry does not have", at_line(*.line))]
    UnknownSubAgent {
        agent: String,
        sub_agent: String,
        line: Option<usize>,
    },
    #[error("agent {agent:?}: {reason}")]
    InvalidState {
        agent: String,
        reason: StateSchemaError,
    },
    #[error("agent {0:?} has an after_sub_agent hook but declares no state for it to set")]
    HookWithoutState(String),
    #[error("agent {agent:?}{} calls sub-agents in a cycle: {}", at_line(*.line), .cycle.join(" -> "))]
    SubAgentCycle {
        agent: String,
        cycle: Vec<String>,
        line: Option<usize>,
    },
}

/// ` (line N)` for a file-declared sub-agent, else nothing.
fn at_line(line: Option<usize>) -> String {
    line.map(|line| format!(" (line {line})"))
        .unwrap_or_default()
}

impl Agent {
    /// Starts a definition; `name` is the agent type used in workflow ids and `/start`.
    pub fn builder(name: impl Into<String>) -> AgentBuilder {
        AgentBuilder {
            name: name.into(),
            system_prompt: String::new(),
            model: None,
            tools: Vec::new(),
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

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn system_prompt(&self) -> &str {
        &self.system_prompt
    }

    pub fn model(&self) -> &dyn Model {
        self.model.as_ref()
    }

    /// The server tool named `name`.
    pub fn tool(&self, name: &str) -> Option<&Arc<dyn ServerTool>> {
        self.tools.get(name)
    }

    /// The client tool named `name`.
    pub fn client_tool(&self, name: &str) -> Option<&ClientTool> {
        self.client_tools.get(name)
    }

    /// The server tools, by name.
    pub fn tools(&self) -> impl Iterator<Item = (&str, &Arc<dyn ServerTool>)> {
        self.tools.iter().map(|(name, tool)| (name.as_str(), tool))
    }

    /// The client tools, by name.
    pub fn client_tools(&self) -> impl Iterator<Item = (&str, &ClientTool)> {
        self.client_tools
            .iter()
            .map(|(name, tool)| (name.as_str(), tool))
    }

    /// The tool named `name`, of any kind.
    pub fn any_tool(&self, name: &str) -> Option<AgentTool<'_>> {
        self.tools
            .get(name)
            .map(AgentTool::Server)
            .or_else(|| self.client_tools.get(name).map(AgentTool::Client))
            .or_else(|| self.sub_agents.get(name).map(AgentTool::SubAgent))
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
    pub fn tool_specs(&self) -> &[ToolSpec] {
        &self.tool_specs
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

/// Builder of [`Agent`].
pub struct AgentBuilder {
    name: String,
    system_prompt: String,
    model: Option<Arc<dyn Model>>,
    tools: Vec<Arc<dyn ServerTool>>,
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
        let check_name = |tool_name: &str, taken: bool| {
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
                    agent: self.name.clone(),
                    tool: tool_name.to_owned(),
                });
            }
            Ok(())
        };
        let mut tools = BTreeMap::new();
        for tool in self.tools {
            let tool_name = tool.spec().name.clone();
            check_name(&tool_name, tools.contains_key(&tool_name))?;
            tools.insert(tool_name, tool);
        }
        let mut client_tools = BTreeMap::new();
        for tool in self.client_tools {
            let tool_name = tool.spec().name.clone();
            let taken = tools.contains_key(&tool_name) || client_tools.contains_key(&tool_name);
            check_name(&tool_name, taken)?;
            client_tools.insert(tool_name, tool);
        }
        let mut sub_agents = BTreeMap::new();
        for sub_agent in self.sub_agents {
            if !is_valid_name(sub_agent.agent_type()) {
                return Err(DefinitionError::InvalidName(
                    sub_agent.agent_type().to_owned(),
                ));
            }
            let tool_name = sub_agent.spec().name.clone();
            if sub_agents.contains_key(&tool_name) {
                return Err(DefinitionError::DuplicateTool {
                    agent: self.name.clone(),
                    tool: tool_name,
                });
            }
            sub_agents.insert(tool_name, sub_agent);
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
            max_steps: self.max_steps,
            client_tool_timeout: self.client_tool_timeout,
            completed_retention: self.completed_retention,
            resume_on_deadline: self.resume_on_deadline,
            state,
            after_sub_agent: self.after_sub_agent,
        })
    }
}

/// Agent types to agents. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct AgentRegistry {
    agents: Arc<BTreeMap<String, Arc<Agent>>>,
}

impl AgentRegistry {
    /// A registry of these agents. Refuses two agents of one name, a sub-agent of a type the
    /// registry lacks, and agents that call each other in a cycle (a tree must end).
    pub fn new(agents: impl IntoIterator<Item = Agent>) -> Result<Self, DefinitionError> {
        let mut map = BTreeMap::new();
        for agent in agents {
            let name = agent.name.clone();
            if map.insert(name.clone(), Arc::new(agent)).is_some() {
                return Err(DefinitionError::DuplicateAgent(name));
            }
        }
        for agent in map.values() {
            for sub_agent in agent.sub_agents() {
                if !map.contains_key(sub_agent.agent_type()) {
                    return Err(DefinitionError::UnknownSubAgent {
                        agent: agent.name.clone(),
                        sub_agent: sub_agent.agent_type().to_owned(),
                        line: sub_agent.line(),
                    });
                }
            }
        }
        for agent in map.values() {
            let mut path = vec![agent.name.clone()];
            if let Some((cycle, line)) = find_cycle(&map, &mut path) {
                return Err(DefinitionError::SubAgentCycle {
                    agent: agent.name.clone(),
                    cycle,
                    line,
                });
            }
        }
        Ok(Self {
            agents: Arc::new(map),
        })
    }

    pub fn get(&self, agent_type: &str) -> Option<&Arc<Agent>> {
        self.agents.get(agent_type)
    }

    pub fn agent_types(&self) -> impl Iterator<Item = &str> {
        self.agents.keys().map(String::as_str)
    }

    /// Every agent, by type.
    pub fn agents(&self) -> impl Iterator<Item = (&str, &Arc<Agent>)> {
        self.agents
            .iter()
            .map(|(agent_type, agent)| (agent_type.as_str(), agent))
    }
}

/// A cycle of sub-agent calls through the last agent of `path` (depth first), with the line of
/// the declaration that closes it.
fn find_cycle(
    agents: &BTreeMap<String, Arc<Agent>>,
    path: &mut Vec<String>,
) -> Option<(Vec<String>, Option<usize>)> {
    let current = agents.get(path.last()?)?;
    for sub_agent in current.sub_agents() {
        let next = sub_agent.agent_type().to_owned();
        if let Some(start) = path.iter().position(|name| *name == next) {
            let mut cycle = path[start..].to_vec();
            cycle.push(next);
            return Some((cycle, sub_agent.line()));
        }
        path.push(next);
        let found = find_cycle(agents, path);
        path.pop();
        if found.is_some() {
            return found;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{scripted::ScriptedModel, tool::tool};

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Nothing {}

    fn noop(name: &str) -> impl ServerTool + 'static {
        tool(name, "does nothing", |_: Nothing| async {
            Ok::<_, String>(())
        })
    }

    #[test]
    fn definitions_are_checked() {
        let agent = Agent::builder("demo")
            .model(ScriptedModel::default())
            .tool(noop("b"))
            .tool(noop("a"))
            .max_steps(3)
            .build()
            .unwrap();
        let names: Vec<_> = agent.tool_specs().iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(agent.max_steps(), 3);

        let duplicate = Agent::builder("demo")
            .model(ScriptedModel::default())
            .tool(noop("a"))
            .tool(noop("a"))
            .build()
            .unwrap_err();
        assert_eq!(
            duplicate,
            DefinitionError::DuplicateTool {
                agent: "demo".into(),
                tool: "a".into()
            }
        );
        assert!(matches!(
            Agent::builder("bad__name")
                .model(ScriptedModel::default())
                .build(),
            Err(DefinitionError::InvalidName(_))
        ));
        assert!(matches!(
            Agent::builder("x").build(),
            Err(DefinitionError::MissingModel { .. })
        ));
        assert!(matches!(
            Agent::builder("x")
                .model(ScriptedModel::default())
                .max_steps(0)
                .build(),
            Err(DefinitionError::ZeroMaxSteps(_))
        ));

        let ask = || crate::tool::ClientTool::new("ask", "asks", serde_json::json!({})).unwrap();
        let mixed = Agent::builder("mixed")
            .model(ScriptedModel::default())
            .tool(noop("z"))
            .client_tool(ask().timeout(Duration::from_secs(7)))
            .client_tool_timeout(Duration::from_secs(9))
            .build()
            .unwrap();
        let names: Vec<_> = mixed.tool_specs().iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["ask", "z"]);
        assert!(matches!(mixed.any_tool("ask"), Some(AgentTool::Client(_))));
        assert!(matches!(mixed.any_tool("z"), Some(AgentTool::Server(_))));
        assert_eq!(
            mixed.client_tool_timeout(mixed.client_tool("ask").unwrap()),
            Duration::from_secs(7)
        );
        assert_eq!(mixed.client_tool_timeout(&ask()), Duration::from_secs(9));
        assert_eq!(mixed.completed_retention(), DEFAULT_COMPLETED_RETENTION);
        let clash = Agent::builder("x")
            .model(ScriptedModel::default())
            .tool(noop("ask"))
            .client_tool(ask())
            .build();
        assert!(matches!(clash, Err(DefinitionError::DuplicateTool { .. })));
        let reserved = Agent::builder("x")
            .model(ScriptedModel::default())
            .tool(noop("subagent__helper"))
            .build();
        assert_eq!(
            reserved.unwrap_err(),
            DefinitionError::ReservedToolName("subagent__helper".into())
        );

        let registry = AgentRegistry::new([agent]).unwrap();
        assert!(registry.get("demo").is_some());
        assert!(registry.get("nope").is_none());
        let twice = AgentRegistry::new([
            Agent::builder("x")
                .model(ScriptedModel::default())
                .build()
                .unwrap(),
            Agent::builder("x")
                .model(ScriptedModel::default())
                .build()
                .unwrap(),
        ]);
        assert!(matches!(twice, Err(DefinitionError::DuplicateAgent(_))));
    }

    fn delegating(name: &str, sub_agents: &[&str]) -> Agent {
        sub_agents
            .iter()
            .fold(
                Agent::builder(name).model(ScriptedModel::default()),
                |builder, sub| builder.sub_agent(sub, "helps"),
            )
            .build()
            .unwrap()
    }

    #[test]
    fn sub_agents_are_tools_and_the_registry_refuses_unknown_types_and_cycles() {
        let planner = delegating("planner", &["researcher"]);
        let names: Vec<_> = planner
            .tool_specs()
            .iter()
            .map(|s| s.name.as_str())
            .collect();
        assert_eq!(names, ["subagent__researcher"]);
        assert!(matches!(
            planner.any_tool("subagent__researcher"),
            Some(AgentTool::SubAgent(sub)) if sub.agent_type() == "researcher"
        ));
        let tree = AgentRegistry::new([
            delegating("planner", &["researcher", "writer"]),
            delegating("researcher", &["writer"]),
            delegating("writer", &[]),
        ]);
        assert!(tree.is_ok());

        let unknown = AgentRegistry::new([delegating("planner", &["ghost"])]).unwrap_err();
        assert_eq!(
            unknown.to_string(),
            "agent \"planner\" calls the sub-agent \"ghost\", which the registry does not have"
        );
        let cycle = AgentRegistry::new([
            delegating("a", &["b"]),
            delegating("b", &["c"]),
            delegating("c", &["a"]),
        ])
        .unwrap_err();
        assert_eq!(
            cycle.to_string(),
            "agent \"a\" calls sub-agents in a cycle: a -> b -> c -> a"
        );
        let itself = AgentRegistry::new([delegating("a", &["a"])]).unwrap_err();
        assert!(matches!(itself, DefinitionError::SubAgentCycle { .. }));
    }
}
