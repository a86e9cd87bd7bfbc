//! The schema of an agents file: the serde types its TOML parses into, with the spans that
//! errors name. Nothing here checks more than the types; `build.rs` does the rest.

use super::{ModelConfig, Provider};
use crate::{scripted::ScriptedTurn, subagent::SubAgentTransport};
use serde::Deserialize;
use serde_json::Value;
use std::time::Duration;
use toml::Spanned;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct File {
    #[serde(default)]
    pub(super) agent: Vec<AgentEntry>,
    #[serde(default)]
    pub(super) mount: Vec<MountEntry>,
    #[serde(default)]
    pub(super) browser: Option<BrowserEntry>,
    #[serde(default)]
    pub(super) mcp_server: Vec<Spanned<McpServerEntry>>,
}

/// An MCP server whose tools join the catalogue (see `super::McpServerConfig`): a stdio
/// `command` or a streamable HTTP `url`, not both.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct McpServerEntry {
    pub(super) name: Spanned<String>,
    pub(super) command: Option<String>,
    #[serde(default)]
    pub(super) args: Vec<String>,
    #[serde(default)]
    pub(super) env: std::collections::BTreeMap<String, String>,
    pub(super) url: Option<String>,
    #[serde(default)]
    pub(super) headers: std::collections::BTreeMap<String, String>,
    pub(super) bearer_env: Option<String>,
    pub(super) timeout_secs: Option<u64>,
    pub(super) connect_timeout_secs: Option<u64>,
    pub(super) question_timeout_secs: Option<u64>,
    pub(super) questions: Option<String>,
    pub(super) tools: Option<Vec<String>>,
    #[serde(default)]
    pub(super) rename: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    pub(super) approval: std::collections::BTreeMap<String, bool>,
}

/// What browsers may do: `[browser] allowed_origins = ["https://app.example"]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct BrowserEntry {
    #[serde(default)]
    pub(super) allowed_origins: Vec<String>,
}

/// A producer mount the server serves beside its flag's (see `super::MountConfig`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct MountEntry {
    pub(super) base_path: String,
    pub(super) agents: Option<Vec<String>>,
    pub(super) state_fields: Option<Vec<String>>,
    #[serde(default = "yes")]
    pub(super) usage: bool,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AgentEntry {
    pub(super) name: Spanned<String>,
    #[serde(default)]
    pub(super) system_prompt: String,
    pub(super) model: Spanned<ModelEntry>,
    pub(super) max_steps: Option<u32>,
    pub(super) client_tool_timeout_secs: Option<u64>,
    pub(super) resume_on_deadline: Option<bool>,
    pub(super) completed_retention_secs: Option<u64>,
    #[serde(default)]
    pub(super) tools: Vec<Spanned<String>>,
    /// MCP servers (`[[mcp_server]]` names) whose every selected tool the agent gets, as the
    /// server lists them from step to step.
    #[serde(default)]
    pub(super) mcp_servers: Vec<Spanned<String>>,
    #[serde(default)]
    pub(super) approval_required: Vec<Spanned<String>>,
    #[serde(default)]
    pub(super) finish_with: Vec<Spanned<String>>,
    #[serde(default)]
    pub(super) client_tool: Vec<ClientToolEntry>,
    #[serde(default)]
    pub(super) sub_agent: Vec<SubAgentEntry>,
    #[serde(default)]
    pub(super) remote_agent: Vec<Spanned<RemoteAgentEntry>>,
    #[serde(default)]
    pub(super) a2a_agent: Vec<Spanned<A2aAgentEntry>>,
    pub(super) state: Option<Spanned<StateEntry>>,
    #[serde(default)]
    pub(super) state_tool: Vec<StateToolEntry>,
}

/// A tool that sets declared fields of the agent's custom state from its input.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct StateToolEntry {
    pub(super) name: Spanned<String>,
    #[serde(default)]
    pub(super) description: String,
    /// Top-level fields of the state (its schema's `properties`) the tool sets.
    pub(super) fields: Vec<String>,
}

/// What a completed call of a sub-agent copies into the parent's state.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FoldEntry {
    /// A JSON Pointer into the parent's state.
    pub(super) into: String,
    /// `output`, or a JSON Pointer into the child's state.
    pub(super) from: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct StateEntry {
    pub(super) schema: Value,
    #[serde(default = "empty_object")]
    pub(super) defaults: Value,
}

pub(super) fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

#[derive(Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub(super) enum ModelEntry {
    Scripted {
        turns: Vec<ScriptedTurn>,
    },
    #[serde(rename = "openai")]
    OpenAi(ProviderEntry),
    Anthropic(ProviderEntry),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ProviderEntry {
    pub(super) model: String,
    pub(super) base_url: Option<String>,
    pub(super) api_key_env: Option<String>,
    pub(super) temperature: Option<f64>,
    pub(super) max_tokens: Option<u32>,
    pub(super) timeout_secs: Option<u64>,
}

impl ProviderEntry {
    pub(super) fn into_config(self, provider: Provider) -> ModelConfig {
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
pub(super) struct ClientToolEntry {
    pub(super) name: Spanned<String>,
    #[serde(default)]
    pub(super) description: String,
    pub(super) input_schema: Value,
    pub(super) output_schema: Option<Value>,
    pub(super) timeout_secs: Option<u64>,
    /// How a chat renders the call: `elicitation`, `confirm` or `connect`.
    pub(super) render: Option<crate::tool::RenderHint>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SubAgentEntry {
    #[serde(rename = "type")]
    pub(super) agent_type: Spanned<String>,
    #[serde(default)]
    pub(super) description: String,
    pub(super) input_schema: Option<Value>,
    pub(super) output_schema: Option<Value>,
    #[serde(default)]
    pub(super) transport: SubAgentTransport,
    /// What a completed call copies into the parent's state, in order.
    #[serde(default)]
    pub(super) fold: Vec<Spanned<FoldEntry>>,
}

/// A remote sub-agent: an agent type another service serves over the remote-agent protocol,
/// called as the tool `name` (see `config/remote.rs`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RemoteAgentEntry {
    pub(super) name: Spanned<String>,
    #[serde(default)]
    pub(super) description: String,
    pub(super) input_schema: Option<Value>,
    pub(super) output_schema: Option<Value>,
    /// The producer mount's base URL.
    pub(super) url: String,
    /// The agent type on the producer.
    pub(super) agent_type: String,
    /// The environment variable holding the bearer token (read by the binary).
    pub(super) bearer_env: Option<String>,
    #[serde(default)]
    pub(super) headers: std::collections::BTreeMap<String, String>,
    pub(super) max_retries: Option<u32>,
    pub(super) retry_base_delay_ms: Option<u64>,
    pub(super) read_timeout_secs: Option<u64>,
    pub(super) timeout_secs: Option<u64>,
    pub(super) stream_retries: Option<u32>,
    pub(super) max_fold_state_bytes: Option<usize>,
    pub(super) resume_dead_producer: Option<bool>,
    pub(super) dead_after_attaches: Option<u32>,
    pub(super) follow_window_secs: Option<u64>,
    #[serde(default)]
    pub(super) fold: Vec<Spanned<FoldEntry>>,
}

/// An A2A sub-agent: an agent of any vendor served over A2A, reached by its card's URL and
/// called as the tool `name` (see `config/a2a.rs`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct A2aAgentEntry {
    pub(super) name: Spanned<String>,
    #[serde(default)]
    pub(super) description: String,
    pub(super) input_schema: Option<Value>,
    pub(super) output_schema: Option<Value>,
    /// The agent card's URL.
    pub(super) card_url: String,
    /// The environment variable holding the bearer token (read by the binary).
    pub(super) bearer_env: Option<String>,
    #[serde(default)]
    pub(super) headers: std::collections::BTreeMap<String, String>,
    pub(super) max_retries: Option<u32>,
    pub(super) retry_base_delay_ms: Option<u64>,
    pub(super) read_timeout_secs: Option<u64>,
    pub(super) timeout_secs: Option<u64>,
    pub(super) poll_interval_ms: Option<u64>,
    pub(super) follow_window_secs: Option<u64>,
}
