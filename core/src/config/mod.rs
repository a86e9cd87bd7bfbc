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
//! mcp_servers = ["files"]               # every tool of these [[mcp_server]]s, as they list them
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
//! # A real provider instead of a script (see `ModelConfig`); the key is read from the
//! # environment variable the file names, by the binary, never from the file itself.
//! # [agent.model]
//! # kind = "openai"                     # or "anthropic"
//! # model = "gpt-4o-mini"
//! # base_url = "http://127.0.0.1:11434/v1"   # optional; default the hosted API
//! # api_key_env = "OPENAI_API_KEY"      # optional; no key is sent without it
//! # temperature = 0.2                   # optional
//! # max_tokens = 1024                   # optional (Anthropic: default 4096)
//! # timeout_secs = 60                   # optional; default 60
//!
//! [[agent.client_tool]]
//! name = "ask_user"
//! description = "Asks the user."
//! input_schema = { type = "object", properties = { question = { type = "string" } } }
//! output_schema = { type = "string" }   # optional
//! timeout_secs = 60                     # optional
//!
//! [[agent.sub_agent]]                   # another agent type, called as subagent__researcher
//! type = "researcher"
//! description = "Finds facts."
//! input_schema = { type = "object" }    # optional; default {message}
//! output_schema = { type = "object" }   # optional; checks the child's final output
//! transport = "local"                   # optional; the only one here (see SubAgentTransport)
//!
//! [[agent.remote_agent]]                # an agent another service serves (docs/remote-agents.md)
//! name = "research"                     # the tool's name
//! description = "Delegates research."
//! url = "http://127.0.0.1:8081/agents"  # the producer's mount
//! agent_type = "researcher"             # the agent type there
//! bearer_env = "RESEARCH_TOKEN"         # optional: the variable holding the bearer token
//! headers = { x-tenant = "t1" }         # optional: sent with every request
//! input_schema = { type = "object" }    # optional; default {message}
//! output_schema = { type = "object" }   # optional; checks the child's output
//! max_retries = 3                       # optional: retries of a failed request
//! retry_base_delay_ms = 200             # optional: the first retry's wait, doubling
//! read_timeout_secs = 30                # optional: longest wait for one read
//! timeout_secs = 600                    # optional: longest a call takes
//! stream_retries = 3                    # optional: reconnections of a broken stream
//! max_fold_state_bytes = 262144         # optional: the child state's cap for the fold
//! resume_dead_producer = false          # optional: resume a lost child, not producer_dead
//! dead_after_attaches = 3               # optional: attaches finding it lost before that
//!
//! [[agent.a2a_agent]]                   # an agent served over A2A (docs/remote-agents.md)
//! name = "travel"                       # the tool's name
//! description = "Books trips."
//! card_url = "https://example.com/.well-known/agent-card.json"
//! bearer_env = "TRAVEL_TOKEN"           # optional: the variable holding the bearer token
//! headers = { x-tenant = "t1" }         # optional: sent with every request
//! input_schema = { type = "object" }    # optional; default {message}
//! output_schema = { type = "object" }   # optional; checks the task's output
//! max_retries = 3                       # optional: retries of a failed request
//! retry_base_delay_ms = 200             # optional: the first retry's wait, doubling
//! read_timeout_secs = 30                # optional: longest wait for one read
//! timeout_secs = 600                    # optional: longest a call takes
//! poll_interval_ms = 1000               # optional: how often a task is read without a stream
//! follow_window_secs = 60               # optional: how long a working task is followed
//!
//! [agent.state]                         # optional: the sessions' custom state
//! schema = { type = "object", properties = { topic = { type = "string" } } }
//! defaults = { topic = "" }             # must match the schema; a start may override fields
//!
//! [[mcp_server]]                        # an MCP server whose tools join the catalogue
//! name = "files"
//! command = "python3"                   # a stdio server: command, args, env (its whole env)
//! args = ["files_server.py"]
//! env = { ROOT = "/srv/files" }
//! # url = "http://127.0.0.1:9000/mcp"   # or a streamable HTTP one: url, headers, bearer_env
//! # bearer_env = "FILES_TOKEN"
//! timeout_secs = 30                     # optional: longest a call takes; default 60
//! connect_timeout_secs = 10             # optional: starting it and listing; default 30
//! question_timeout_secs = 120           # optional: a person answering its elicitation; 0 declines
//! questions = "suspend"                 # optional: "hold" keeps a call that asks in the worker
//! tools = ["read", "delete"]            # optional; default every tool it lists
//! rename = { read = "read_file" }       # optional: where names collide
//! approval = { delete = false }         # optional; default: a tool annotated destructive
//!
//! [[mount]]                             # optional: a producer mount beside the server's own
//! base_path = "/public/agents"
//! agents = ["greeter"]                  # optional; default every agent type served
//! state_fields = ["topic"]              # optional: a projected mount keeping these fields
//! usage = false                         # optional; default true (false: FEATURE_UNAVAILABLE)
//! ```
//!
//! A sub-agent's type may be declared in the file or in Rust; unknown types and cycles are
//! refused when the registry is built, with the declaration's line.
//!
//! This file parses a file; `file.rs` is the file's schema (its serde types), `model.rs` how a
//! real model is described, `build.rs` how an entry becomes an [`Agent`], `catalogue.rs` the
//! server tools a file may name.

mod a2a;
mod build;
mod catalogue;
mod file;
mod mcp;
#[cfg(test)]
mod mcp_tests;
mod model;
mod remote;
#[cfg(test)]
mod remote_tests;
mod state_tool;
#[cfg(test)]
mod tests;

pub use catalogue::ToolCatalogue;
pub use mcp::{McpServerConfig, McpTransportConfig, mcp_servers_from_toml};
pub use model::{ModelBuilder, ModelConfig, Provider, ScriptedOnly};

use crate::Agent;
use file::File;

/// Why an agents file was refused: where (1-based line) and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct ConfigError {
    pub line: usize,
    pub reason: String,
}

/// Parses an agents file whose models are all scripted (see [`agents_from_toml_with`]).
pub fn agents_from_toml(text: &str, catalogue: &ToolCatalogue) -> Result<Vec<Agent>, ConfigError> {
    agents_from_toml_with(text, catalogue, &ScriptedOnly)
}

/// Parses an agents file. Every agent is checked as a Rust definition would be (names, schemas,
/// tools, its model built by `models`), and the first problem is reported with its line.
pub fn agents_from_toml_with(
    text: &str,
    catalogue: &ToolCatalogue,
    models: &dyn ModelBuilder,
) -> Result<Vec<Agent>, ConfigError> {
    agents_from_toml_with_toolsets(text, catalogue, &Toolsets::new(), models)
}

/// The toolsets an agents file's agents may name (`mcp_servers`), by name: each declared MCP
/// server's, connected to by the binary.
pub type Toolsets = std::collections::BTreeMap<String, std::sync::Arc<dyn crate::tool::Toolset>>;

/// Like [`agents_from_toml_with`], an agent's `mcp_servers` naming toolsets of `toolsets`.
pub fn agents_from_toml_with_toolsets(
    text: &str,
    catalogue: &ToolCatalogue,
    toolsets: &Toolsets,
    models: &dyn ModelBuilder,
) -> Result<Vec<Agent>, ConfigError> {
    let file = parsed(text)?;
    let tools = build::Tools {
        catalogue,
        toolsets,
    };
    file.agent
        .into_iter()
        .map(|entry| build::build_agent(text, entry, tools, models))
        .collect()
}

/// A producer mount declared in an agents file (`[[mount]]`): plain data, which the server
/// builds into its mount.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountConfig {
    pub base_path: String,
    /// The agent types it serves; `None`: all.
    pub agents: Option<Vec<String>>,
    /// The state fields a projected mount keeps; `None`: a raw mount.
    pub state_fields: Option<Vec<String>>,
    /// Whether `usage` is served.
    pub serves_usage: bool,
}

/// The producer mounts an agents file declares (its `[[mount]]` tables), in order.
pub fn mounts_from_toml(text: &str) -> Result<Vec<MountConfig>, ConfigError> {
    let file = parsed(text)?;
    Ok(file
        .mount
        .into_iter()
        .map(|entry| MountConfig {
            base_path: entry.base_path,
            agents: entry.agents,
            state_fields: entry.state_fields,
            serves_usage: entry.usage,
        })
        .collect())
}

/// The origins an agents file lets browsers call from (its `[browser] allowed_origins`), as
/// written; the server checks them as it checks the flag's.
pub fn allowed_origins_from_toml(text: &str) -> Result<Vec<String>, ConfigError> {
    Ok(parsed(text)?
        .browser
        .map(|browser| browser.allowed_origins)
        .unwrap_or_default())
}

/// The file's TOML in its serde types, or the parser's complaint with its line.
fn parsed(text: &str) -> Result<File, ConfigError> {
    toml::from_str(text).map_err(|e| ConfigError {
        line: e.span().map_or(1, |span| line_of(text, span.start)),
        reason: e.message().to_owned(),
    })
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}
