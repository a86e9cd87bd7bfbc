//! The registry: agent types to agents, checked as a whole (no unknown sub-agent, no cycle).

use super::{Agent, DefinitionError};
use std::{collections::BTreeMap, sync::Arc};

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
            // A remote sub-agent's type lives in another service's registry.
            for sub_agent in agent
                .sub_agents()
                .filter(|s| s.transport() == crate::subagent::SubAgentTransport::Local)
            {
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
    for sub_agent in current
        .sub_agents()
        .filter(|s| s.transport() == crate::subagent::SubAgentTransport::Local)
    {
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
