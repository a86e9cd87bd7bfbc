//! `[[mcp_server]]`: an MCP server whose tools join the catalogue the file's agents name tools
//! from. Parsed and checked here (no I/O); the binary connects to each server and lists its
//! tools when it starts (`baton-mcp`), so a server that does not answer stops the start with
//! its reason.

use super::{ConfigError, file::McpServerEntry, line_of, parsed};
use std::{collections::BTreeMap, time::Duration};

/// How a declared MCP server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpTransportConfig {
    /// A process started as `command args…` with `env` as its whole environment.
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
    },
    /// A streamable HTTP endpoint; `bearer_env` names the variable holding the bearer token.
    Http {
        url: String,
        headers: BTreeMap<String, String>,
        bearer_env: Option<String>,
    },
}

/// An MCP server an agents file declares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerConfig {
    pub name: String,
    pub transport: McpTransportConfig,
    pub timeout: Option<Duration>,
    /// The longest starting the server and listing its tools take.
    pub connect_timeout: Option<Duration>,
    /// How long a person may take to answer the server's elicitation during a call (zero:
    /// declined at once).
    pub question_timeout: Option<Duration>,
    /// Whether a question the server asks through an `input_required` result holds the call
    /// (`hold`) instead of suspending the run (`suspend`, the default).
    pub hold_questions: bool,
    /// Only these of its tools (their names on the server); all for `None`.
    pub tools: Option<Vec<String>>,
    /// A server tool's name → the name the agents know it by.
    pub rename: BTreeMap<String, String>,
    /// A server tool's name → whether a person approves each call (overriding its annotations).
    pub approval: BTreeMap<String, bool>,
    /// The declaration's line, for the binary's errors.
    pub line: usize,
}

/// The MCP servers an agents file declares, each checked: a name given once, exactly one of
/// `command` and `url` (an `http://` or `https://` one), no option of the other transport, a
/// timeout above zero, and renames and approvals naming selected tools, no two renamed alike.
pub fn mcp_servers_from_toml(text: &str) -> Result<Vec<McpServerConfig>, ConfigError> {
    let file = parsed(text)?;
    let mut servers: Vec<McpServerConfig> = Vec::new();
    for entry in file.mcp_server {
        let line = line_of(text, entry.span().start);
        let server =
            checked(entry.into_inner(), line).map_err(|reason| ConfigError { line, reason })?;
        if servers.iter().any(|s| s.name == server.name) {
            return Err(ConfigError {
                line,
                reason: format!("MCP server {:?} is declared twice", server.name),
            });
        }
        servers.push(server);
    }
    Ok(servers)
}

fn checked(entry: McpServerEntry, line: usize) -> Result<McpServerConfig, String> {
    let name = entry.name.into_inner();
    if name.trim().is_empty() {
        return Err("an MCP server needs a name".to_owned());
    }
    let transport = match (entry.command, entry.url) {
        (Some(_), Some(_)) => {
            return Err(format!(
                "MCP server {name:?}: give `command` (stdio) or `url` (HTTP), not both"
            ));
        }
        (None, None) => {
            return Err(format!(
                "MCP server {name:?} needs `command` (stdio) or `url` (streamable HTTP)"
            ));
        }
        (Some(command), None) => {
            if command.trim().is_empty() {
                return Err(format!("MCP server {name:?}: `command` is empty"));
            }
            if !entry.headers.is_empty() || entry.bearer_env.is_some() {
                return Err(format!(
                    "MCP server {name:?}: `headers` and `bearer_env` are for a `url` server"
                ));
            }
            McpTransportConfig::Stdio {
                command,
                args: entry.args,
                env: entry.env,
            }
        }
        (None, Some(url)) => {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(format!(
                    "MCP server {name:?}: `url` {url:?} is not an http:// or https:// URL"
                ));
            }
            if !entry.args.is_empty() || !entry.env.is_empty() {
                return Err(format!(
                    "MCP server {name:?}: `args` and `env` are for a `command` server"
                ));
            }
            if entry
                .bearer_env
                .as_deref()
                .is_some_and(|v| v.trim().is_empty())
            {
                return Err(format!("MCP server {name:?}: `bearer_env` is empty"));
            }
            McpTransportConfig::Http {
                url,
                headers: entry.headers,
                bearer_env: entry.bearer_env,
            }
        }
    };
    let timeout = match entry.timeout_secs {
        Some(0) => {
            return Err(format!(
                "MCP server {name:?}: `timeout_secs` must be above 0"
            ));
        }
        Some(secs) => Some(Duration::from_secs(secs)),
        None => None,
    };
    let connect_timeout = match entry.connect_timeout_secs {
        Some(0) => {
            return Err(format!(
                "MCP server {name:?}: `connect_timeout_secs` must be above 0"
            ));
        }
        Some(secs) => Some(Duration::from_secs(secs)),
        None => None,
    };
    let question_timeout = entry.question_timeout_secs.map(Duration::from_secs);
    let hold_questions = match entry.questions.as_deref() {
        None | Some("suspend") => false,
        Some("hold") => true,
        Some(other) => {
            return Err(format!(
                "MCP server {name:?}: `questions` is \"suspend\" or \"hold\", not {other:?}"
            ));
        }
    };
    let selected = |tool: &str| {
        entry
            .tools
            .as_ref()
            .is_none_or(|tools| tools.iter().any(|t| t == tool))
    };
    for (tool, what) in entry
        .rename
        .keys()
        .map(|t| (t, "rename"))
        .chain(entry.approval.keys().map(|t| (t, "approval")))
    {
        if !selected(tool) {
            return Err(format!(
                "MCP server {name:?}: `{what}` names {tool:?}, which `tools` does not select"
            ));
        }
    }
    let mut renamed: Vec<&String> = entry.rename.values().collect();
    renamed.sort();
    if let Some(twice) = renamed.windows(2).find(|pair| pair[0] == pair[1]) {
        return Err(format!(
            "MCP server {name:?}: two tools are renamed {:?}",
            twice[0]
        ));
    }
    if let Some(empty) = renamed.iter().find(|n| n.trim().is_empty()) {
        return Err(format!(
            "MCP server {name:?}: a rename to {empty:?} is empty"
        ));
    }
    Ok(McpServerConfig {
        name,
        transport,
        timeout,
        connect_timeout,
        question_timeout,
        hold_questions,
        tools: entry.tools,
        rename: entry.rename,
        approval: entry.approval,
        line,
    })
}
