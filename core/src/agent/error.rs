//! Why an agent definition, or a registry of them, was refused.

use crate::state::StateSchemaError;

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
    #[error("agent {agent:?}: the remote sub-agent {tool:?}: {reason}")]
    InvalidRemoteAgent {
        agent: String,
        tool: String,
        reason: String,
    },
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
