//! The declaration of an MCP server: how to reach it, which of its tools an agent gets (renamed
//! where names collide), how long a call may take, and which tools ask a person first.

use std::{collections::HashMap, time::Duration};

/// How Baton reaches an MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpTransport {
    /// A process Baton starts, speaking MCP on its stdin and stdout. Its environment is the
    /// one given here alone (nothing of the worker's leaks into it), so a secret reaches a
    /// server only when declared for it.
    Stdio {
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
    },
    /// A server at a streamable HTTP endpoint, each request with these headers and, when
    /// `bearer_env` names an environment variable, `Authorization: Bearer <its value>` (read
    /// when the connection opens, so a secret never sits in the declaration).
    Http {
        url: String,
        headers: Vec<(String, String)>,
        bearer_env: Option<String>,
    },
}

/// An MCP server whose tools an agent gets.
#[derive(Debug, Clone, PartialEq)]
pub struct McpServer {
    /// The name it is known by in logs and errors.
    pub name: String,
    pub transport: McpTransport,
    /// Only these of its tools (by their names on the server); all of them for `None`.
    pub only: Option<Vec<String>>,
    /// Server name → the name the model knows the tool by.
    pub renames: HashMap<String, String>,
    /// Server name → whether a call asks a person first (the default: when the server
    /// annotates the tool destructive and not read-only).
    pub approvals: HashMap<String, bool>,
    /// The longest a call waits for its result.
    pub timeout: Duration,
    /// The longest starting (or reaching) the server, initializing and listing its tools take.
    pub connect_timeout: Duration,
    /// How long a person may take to answer the server's elicitation during a call (the call's
    /// own timeout stops meanwhile); zero declines every elicitation at once.
    pub question_timeout: Duration,
    /// Whether a question the server asks with an `input_required` result (MCP 2026-07-28) is
    /// asked while the call is held in the worker, as an older server's elicitation request is,
    /// instead of suspending the run (the default: nothing waits, the call goes on once
    /// answered).
    pub hold_questions: bool,
}

impl McpServer {
    /// A server Baton starts as `command args…`, with an empty environment (add to it with
    /// [`Self::env`]).
    pub fn stdio(name: &str, command: &str, args: &[&str]) -> Self {
        Self {
            name: name.to_owned(),
            transport: McpTransport::Stdio {
                command: command.to_owned(),
                args: args.iter().map(|a| (*a).to_owned()).collect(),
                env: Vec::new(),
            },
            only: None,
            renames: HashMap::new(),
            approvals: HashMap::new(),
            timeout: crate::DEFAULT_CALL_TIMEOUT,
            connect_timeout: crate::DEFAULT_CONNECT_TIMEOUT,
            question_timeout: crate::DEFAULT_QUESTION_TIMEOUT,
            hold_questions: false,
        }
    }

    /// A server at the streamable HTTP endpoint `url`.
    pub fn http(name: &str, url: &str) -> Self {
        Self {
            transport: McpTransport::Http {
                url: url.to_owned(),
                headers: Vec::new(),
                bearer_env: None,
            },
            ..Self::stdio(name, "", &[])
        }
    }

    /// Passes `key=value` to a stdio server's environment (nothing for an HTTP server).
    pub fn env(mut self, key: &str, value: &str) -> Self {
        if let McpTransport::Stdio { env, .. } = &mut self.transport {
            env.push((key.to_owned(), value.to_owned()));
        }
        self
    }

    /// Sends `name: value` with every request to an HTTP server (nothing for a stdio one).
    pub fn header(mut self, name: &str, value: &str) -> Self {
        if let McpTransport::Http { headers, .. } = &mut self.transport {
            headers.push((name.to_owned(), value.to_owned()));
        }
        self
    }

    /// Authenticates to an HTTP server with the bearer token in the environment variable
    /// `variable` of the worker (nothing for a stdio server).
    pub fn bearer_from_env(mut self, variable: &str) -> Self {
        if let McpTransport::Http { bearer_env, .. } = &mut self.transport {
            *bearer_env = Some(variable.to_owned());
        }
        self
    }

    /// Only these tools of the server.
    pub fn only(mut self, tools: &[&str]) -> Self {
        self.only = Some(tools.iter().map(|t| (*t).to_owned()).collect());
        self
    }

    /// The model knows the server's tool `tool` as `name`.
    pub fn rename(mut self, tool: &str, name: &str) -> Self {
        self.renames.insert(tool.to_owned(), name.to_owned());
        self
    }

    /// Whether a call of `tool` asks a person first, whatever the server's annotations say.
    pub fn approval(mut self, tool: &str, required: bool) -> Self {
        self.approvals.insert(tool.to_owned(), required);
        self
    }

    /// The longest a call waits for its result.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The longest starting the server, initializing and listing its tools take.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How long a person may take to answer the server's elicitation during a call; zero
    /// declines every elicitation at once.
    pub fn question_timeout(mut self, timeout: Duration) -> Self {
        self.question_timeout = timeout;
        self
    }

    /// Asks the server's `input_required` questions while the call is held in the worker,
    /// instead of suspending the run on them.
    pub fn hold_questions(mut self) -> Self {
        self.hold_questions = true;
        self
    }
}

impl McpServer {
    /// The server an agents file declares (`[[mcp_server]]`, checked when the file was read).
    pub fn from_config(config: &baton_core::config::McpServerConfig) -> Self {
        use baton_core::config::McpTransportConfig;
        let transport = match &config.transport {
            McpTransportConfig::Stdio { command, args, env } => McpTransport::Stdio {
                command: command.clone(),
                args: args.clone(),
                env: env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            },
            McpTransportConfig::Http {
                url,
                headers,
                bearer_env,
            } => McpTransport::Http {
                url: url.clone(),
                headers: headers
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
                bearer_env: bearer_env.clone(),
            },
        };
        Self {
            name: config.name.clone(),
            transport,
            only: config.tools.clone(),
            renames: config.rename.clone().into_iter().collect(),
            approvals: config.approval.clone().into_iter().collect(),
            timeout: config.timeout.unwrap_or(crate::DEFAULT_CALL_TIMEOUT),
            connect_timeout: config
                .connect_timeout
                .unwrap_or(crate::DEFAULT_CONNECT_TIMEOUT),
            question_timeout: config
                .question_timeout
                .unwrap_or(crate::DEFAULT_QUESTION_TIMEOUT),
            hold_questions: config.hold_questions,
        }
    }
}
