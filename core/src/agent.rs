//! Agent definitions and the registry that maps agent types to them. The worker and the server
//! share one registry, so the server can refuse an unknown agent type before anything is written.

use crate::{
    ids::is_valid_name,
    model::Model,
    tool::{ServerTool, ToolSpec},
};
use std::{collections::BTreeMap, fmt, sync::Arc};

/// Default cap on model steps per run.
pub const DEFAULT_MAX_STEPS: u32 = 20;

/// An agent: a system prompt, a model, server tools and a step cap. Its name is its agent type.
pub struct Agent {
    name: String,
    system_prompt: String,
    model: Arc<dyn Model>,
    tools: BTreeMap<String, Arc<dyn ServerTool>>,
    tool_specs: Vec<ToolSpec>,
    max_steps: u32,
}

impl fmt::Debug for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Agent")
            .field("name", &self.name)
            .field("model", &self.model.name())
            .field("tools", &self.tools.keys().collect::<Vec<_>>())
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
    #[error("agent {0:?} has max_steps 0; it could never answer")]
    ZeroMaxSteps(String),
    #[error("agent {agent:?} has no model")]
    MissingModel { agent: String },
    #[error("the registry already has an agent named {0:?}")]
    DuplicateAgent(String),
}

impl Agent {
    /// Starts a definition; `name` is the agent type used in workflow ids and `/start`.
    pub fn builder(name: impl Into<String>) -> AgentBuilder {
        AgentBuilder {
            name: name.into(),
            system_prompt: String::new(),
            model: None,
            tools: Vec::new(),
            max_steps: DEFAULT_MAX_STEPS,
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

    pub fn tool(&self, name: &str) -> Option<&Arc<dyn ServerTool>> {
        self.tools.get(name)
    }

    /// The specs sent to the model, sorted by name.
    pub fn tool_specs(&self) -> &[ToolSpec] {
        &self.tool_specs
    }

    pub fn max_steps(&self) -> u32 {
        self.max_steps
    }
}

/// Builder of [`Agent`].
pub struct AgentBuilder {
    name: String,
    system_prompt: String,
    model: Option<Arc<dyn Model>>,
    tools: Vec<Arc<dyn ServerTool>>,
    max_steps: u32,
}

impl AgentBuilder {
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

    pub fn max_steps(mut self, max_steps: u32) -> Self {
        self.max_steps = max_steps;
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
        let mut tools = BTreeMap::new();
        for tool in self.tools {
            let tool_name = tool.spec().name.clone();
            if !is_valid_name(&tool_name) {
                return Err(DefinitionError::InvalidName(tool_name));
            }
            if tools.insert(tool_name.clone(), tool).is_some() {
                return Err(DefinitionError::DuplicateTool {
                    agent: self.name,
                    tool: tool_name,
                });
            }
        }
        let tool_specs = tools.values().map(|t| t.spec().clone()).collect();
        Ok(Agent {
            name: self.name,
            system_prompt: self.system_prompt,
            model,
            tools,
            tool_specs,
            max_steps: self.max_steps,
        })
    }
}

/// Agent types to agents. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct AgentRegistry {
    agents: Arc<BTreeMap<String, Arc<Agent>>>,
}

impl AgentRegistry {
    pub fn new(agents: impl IntoIterator<Item = Agent>) -> Result<Self, DefinitionError> {
        let mut map = BTreeMap::new();
        for agent in agents {
            let name = agent.name.clone();
            if map.insert(name.clone(), Arc::new(agent)).is_some() {
                return Err(DefinitionError::DuplicateAgent(name));
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
}
