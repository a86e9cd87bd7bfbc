//! Tools from Model Context Protocol servers as Baton server tools, over the official Rust SDK
//! (`rmcp`): a server is declared ([`McpServer`]: a stdio command with its arguments and an
//! explicit environment), its tools are listed once when the agent is built ([`tools`]: a server
//! that does not answer is a typed [`McpError`], not a crash), and each becomes a [`McpTool`]
//! the agent's builder takes like any other. A call runs where a native server tool runs (an
//! activity of the worker), with the same guarantees: a tool the server does not annotate
//! read-only or idempotent is at most once (`tool_outcome_unknown` after a worker lost
//! mid-call), a tool annotated destructive asks a person first unless overridden, a result is
//! checked against the tool's output schema, and an error result is a tool error the model
//! sees. The server process is shared by the agent's tools and started again when it dies.
//! A question the server asks with an `input_required` result (MCP 2026-07-28) suspends the
//! run where it can ([`ServerTool::call_or_ask`]) and goes on with the answer on resume
//! ([`ServerTool::continue_call`]); any other is asked while the call is held (`elicit.rs`).

mod connection;
mod declare;
mod elicit;
mod result;
mod toolset;

pub use connection::Connection;
use connection::{Mode, Reply};
pub use declare::{McpServer, McpTransport};
pub use toolset::{McpToolset, toolset};

use baton_core::{
    message::ToolError,
    tool::{
        ServerTool, ToolContext, ToolSpec,
        ask::{Called, PersonAnswer},
        codes,
    },
};
use serde_json::Value;
use std::{sync::Arc, time::Duration};

/// Why a server's tools could not be listed: at load, before any run.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("MCP server {server}: could not start or connect: {reason}")]
    Connect { server: String, reason: String },
    #[error("MCP server {server}: tools/list failed: {reason}")]
    List { server: String, reason: String },
    #[error("MCP server {server} has no tool {tool:?} (it lists: {listed})")]
    UnknownTool {
        server: String,
        tool: String,
        listed: String,
    },
    #[error("MCP server {server}: two tools would both be named {name:?}; rename one")]
    DuplicateName { server: String, name: String },
    #[error("MCP server {server}: tool {tool:?} has a schema Baton cannot use: {reason}")]
    Schema {
        server: String,
        tool: String,
        reason: String,
    },
}

/// A tool of an MCP server, as the agent's model sees it (its name possibly renamed).
pub struct McpTool {
    spec: ToolSpec,
    /// Its name on the server.
    remote_name: String,
    approval: bool,
    at_most_once: bool,
    /// The input schema the server lists, checked before a call goes out.
    input: Arc<jsonschema::Validator>,
    output: Option<Arc<jsonschema::Validator>>,
    connection: Arc<Connection>,
}

impl std::fmt::Debug for McpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTool")
            .field("name", &self.spec.name)
            .field("remote_name", &self.remote_name)
            .field("approval", &self.approval)
            .field("at_most_once", &self.at_most_once)
            .finish_non_exhaustive()
    }
}

impl McpTool {
    /// Its name on the server (the model may know it by another).
    pub fn remote_name(&self) -> &str {
        &self.remote_name
    }
}

/// Connects to `server` (starting its process), lists its tools and answers those the
/// declaration selects, renamed as it says; a tool named in `only` that the server does not
/// list is an error.
pub async fn tools(server: McpServer) -> Result<Vec<McpTool>, McpError> {
    let connection = Arc::new(Connection::new(server));
    let listed = connection.list_tools().await?;
    let names: Vec<String> = listed.iter().map(|tool| tool.name.clone()).collect();
    check_listed(connection.server(), &names)?;
    selected(&connection, listed)
}

/// Refuses a listing (`listed`: the tools' names on the server) that lacks a tool the
/// declaration's `only` names: the first one, as `UnknownTool`.
pub(crate) fn check_listed(declared: &McpServer, listed: &[String]) -> Result<(), McpError> {
    match declared
        .only
        .iter()
        .flatten()
        .find(|wanted| !listed.contains(wanted))
    {
        None => Ok(()),
        Some(missing) => Err(McpError::UnknownTool {
            server: declared.name.clone(),
            tool: missing.clone(),
            listed: listed.join(", "),
        }),
    }
}

/// The tools of `listed` the declaration of `connection` selects, renamed as it says (a tool
/// `only` names that is not listed is left out).
pub(crate) fn selected(
    connection: &Arc<Connection>,
    listed: Vec<connection::ListedTool>,
) -> Result<Vec<McpTool>, McpError> {
    let declared = connection.server();
    let name = declared.name.clone();
    let mut tools: Vec<McpTool> = Vec::new();
    for listed in listed {
        if declared
            .only
            .as_ref()
            .is_some_and(|only| !only.contains(&listed.name))
        {
            continue;
        }
        let model_name = declared
            .renames
            .get(&listed.name)
            .cloned()
            .unwrap_or_else(|| listed.name.clone());
        if tools.iter().any(|tool| tool.spec.name == model_name) {
            return Err(McpError::DuplicateName {
                server: name,
                name: model_name,
            });
        }
        let compile = |which: &str, schema: &Value| {
            jsonschema::validator_for(schema)
                .map(Arc::new)
                .map_err(|error| McpError::Schema {
                    server: name.clone(),
                    tool: listed.name.clone(),
                    reason: format!("its {which} schema: {error}"),
                })
        };
        let input = compile("input", &listed.input_schema)?;
        let output = match &listed.output_schema {
            Some(schema) => Some(compile("output", schema)?),
            None => None,
        };
        let approval = declared
            .approvals
            .get(&listed.name)
            .copied()
            .unwrap_or(listed.destructive && !listed.read_only);
        tools.push(McpTool {
            spec: ToolSpec {
                name: model_name,
                description: listed.description.clone(),
                input_schema: listed.input_schema.clone(),
            },
            remote_name: listed.name.clone(),
            approval,
            at_most_once: !(listed.read_only || listed.idempotent),
            input,
            output,
            connection: connection.clone(),
        });
    }
    Ok(tools)
}

#[async_trait::async_trait]
impl ServerTool for McpTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn requires_approval(&self) -> bool {
        self.approval
    }

    fn at_most_once(&self) -> bool {
        self.at_most_once
    }

    fn check_input(&self, input: &Value) -> Result<(), ToolError> {
        baton_core::tool::check_against(&self.input, input)
    }

    async fn call(&self, context: &ToolContext, input: Value) -> Result<Value, ToolError> {
        done(self.logged(context, input, &Mode::Held).await?)
    }

    async fn call_or_ask(&self, context: &ToolContext, input: Value) -> Result<Called, ToolError> {
        let mode = if self.connection.server().hold_questions {
            Mode::Held
        } else {
            Mode::MayAsk
        };
        self.logged(context, input, &mode).await
    }

    async fn continue_call(
        &self,
        context: &ToolContext,
        input: Value,
        continuation: Value,
        answer: PersonAnswer,
    ) -> Result<Value, ToolError> {
        let continuation = serde_json::from_value(continuation).map_err(|error| {
            ToolError::new(
                codes::TOOL_FAILED,
                format!("the question's continuation is unreadable: {error}"),
            )
        })?;
        let mode = Mode::Answered {
            continuation,
            answer,
        };
        done(self.logged(context, input, &mode).await?)
    }
}

impl McpTool {
    /// Runs the call as `mode` says and logs how it ended.
    async fn logged(
        &self,
        context: &ToolContext,
        input: Value,
        mode: &Mode,
    ) -> Result<Called, ToolError> {
        let began = std::time::Instant::now();
        let answer = self.call_checked(context, input, mode).await;
        tracing::info!(
            target: CALL_TARGET,
            event = "mcp_call",
            server = %self.connection.server().name,
            tool = %self.remote_name,
            outcome = match &answer {
                Ok(Called::Done(_)) => "ok",
                Ok(Called::Asked(_)) => "asked",
                Err(error) => error.code.as_str(),
            },
            elapsed_ms = u64::try_from(began.elapsed().as_millis()).unwrap_or(u64::MAX),
            session_id = context.session_id(),
            tool_call_id = context.tool_call_id(),
            "an MCP tool call ended"
        );
        answer
    }
}

/// The result of a call whose questions were asked while it was held (none can be left to
/// ask: the person answered them during the call).
fn done(called: Called) -> Result<Value, ToolError> {
    match called {
        Called::Done(value) => Ok(value),
        Called::Asked(_) => Err(ToolError::new(
            codes::TOOL_FAILED,
            "the MCP call stopped to ask where it cannot",
        )),
    }
}

/// The target of the `mcp_call` event each call ends with (server, tool, outcome: `ok` or the
/// tool error's code, `elapsed_ms`), which the worker's metrics count.
pub const CALL_TARGET: &str = "baton::mcp";

impl McpTool {
    async fn call_checked(
        &self,
        context: &ToolContext,
        input: Value,
        mode: &Mode,
    ) -> Result<Called, ToolError> {
        // A call the server would refuse never goes out: the model corrects it from the error.
        self.check_input(&input)?;
        let Value::Object(arguments) = input else {
            return Err(ToolError::new(
                codes::INVALID_TOOL_INPUT,
                "the input is not a JSON object",
            ));
        };
        let result = match self
            .connection
            .call(
                context,
                &self.remote_name,
                arguments,
                self.at_most_once,
                mode,
            )
            .await?
        {
            Reply::Result(result) => result,
            Reply::Asked(asked) => return Ok(Called::Asked(asked)),
        };
        let value = result::to_value(&result)?;
        if let (Some(validator), Some(structured)) = (&self.output, result::structured(&result))
            && let Some(first) = validator.iter_errors(structured).next()
        {
            return Err(ToolError::new(
                codes::TOOL_FAILED,
                format!("the MCP server's result does not match the tool's output schema: {first}"),
            ));
        }
        Ok(Called::Done(value))
    }
}

/// The longest a call waits for its result unless the declaration says otherwise.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a person may take to answer an elicitation unless the declaration says otherwise:
/// within the worker's tool activity timeout (300 s by default), which the whole call must meet.
pub const DEFAULT_QUESTION_TIMEOUT: Duration = Duration::from_secs(120);
/// The longest starting a server and listing its tools take unless the declaration says
/// otherwise (a Python server's imports alone can take a second or two).
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
