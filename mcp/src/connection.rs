//! One MCP server's connection, shared by the tools listed from it: the server process started
//! on first use and started again when it has died (a call finds it closed), each call bounded
//! by the declaration's timeout (which stops while the server waits on a person, see
//! `elicit.rs`).

use crate::{
    McpError, McpServer, McpTransport,
    elicit::{Calls, Elicitations, InFlight, Registered},
};
use baton_core::{
    message::ToolError,
    tool::{ToolContext, codes},
};
use http::{HeaderName, HeaderValue};
use rmcp::{
    RoleClient, ServiceError, ServiceExt,
    model::CallToolRequestParams,
    service::RunningService,
    transport::{
        StreamableHttpClientTransport, TokioChildProcess,
        streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::{Map, Value};
use std::collections::HashMap;
use tokio::sync::Mutex;

type Client = RunningService<RoleClient, Elicitations>;

/// A tool as `tools/list` describes it, read from its JSON.
#[derive(Debug, Clone)]
pub(crate) struct ListedTool {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) input_schema: Value,
    pub(crate) output_schema: Option<Value>,
    pub(crate) read_only: bool,
    pub(crate) destructive: bool,
    pub(crate) idempotent: bool,
}

/// A server's connection (see the module).
pub struct Connection {
    server: McpServer,
    client: Mutex<Option<Client>>,
    /// The calls in flight, for the handler to find whose elicitation a request is.
    calls: Calls,
}

impl Connection {
    pub(crate) fn new(server: McpServer) -> Self {
        Self {
            server,
            client: Mutex::new(None),
            calls: Calls::default(),
        }
    }

    /// The client handler of a new session.
    fn handler(&self) -> Elicitations {
        Elicitations {
            calls: self.calls.clone(),
            window: self.server.question_timeout,
            server: self.server.name.clone(),
        }
    }

    pub fn server(&self) -> &McpServer {
        &self.server
    }

    /// Starts the server and initializes the session.
    async fn connect(&self) -> Result<Client, String> {
        match &self.server.transport {
            McpTransport::Stdio { command, args, env } => {
                let mut process = tokio::process::Command::new(resolved(command));
                process.args(args).env_clear().envs(env.iter().cloned());
                let (transport, _stderr) = TokioChildProcess::builder(process)
                    .stderr(std::process::Stdio::inherit())
                    .spawn()
                    .map_err(|error| format!("{command}: {error}"))?;
                self.initialized(self.handler().serve(transport)).await
            }
            McpTransport::Http {
                url,
                headers,
                bearer_env,
            } => {
                install_tls_provider();
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                if let Some(variable) = bearer_env {
                    let token = std::env::var(variable).map_err(|_| {
                        format!("the environment variable {variable} (its bearer token) is not set")
                    })?;
                    config = config.auth_header(token);
                }
                let mut custom = HashMap::new();
                for (name, value) in headers {
                    let name = HeaderName::try_from(name.as_str())
                        .map_err(|error| format!("header {name:?}: {error}"))?;
                    let value = HeaderValue::try_from(value.as_str())
                        .map_err(|error| format!("header {name}: {error}"))?;
                    custom.insert(name, value);
                }
                let transport =
                    StreamableHttpClientTransport::from_config(config.custom_headers(custom));
                self.initialized(self.handler().serve(transport)).await
            }
        }
    }

    /// The initialized session, or why there is none, within the declaration's timeout.
    async fn initialized<E: std::fmt::Display>(
        &self,
        serving: impl std::future::Future<Output = Result<Client, E>>,
    ) -> Result<Client, String> {
        match tokio::time::timeout(self.server.connect_timeout, serving).await {
            Ok(Ok(client)) => Ok(client),
            Ok(Err(error)) => Err(error.to_string()),
            Err(_) => Err(format!(
                "no answer to initialize within {} s",
                self.server.connect_timeout.as_secs_f64()
            )),
        }
    }

    /// The live connection's peer, the server started (again) first if it is not running.
    async fn peer(&self) -> Result<rmcp::Peer<RoleClient>, String> {
        let mut held = self.client.lock().await;
        let client = match held.take().filter(|client| !client.is_closed()) {
            Some(client) => client,
            None => self.connect().await?,
        };
        let peer = client.peer().clone();
        *held = Some(client);
        Ok(peer)
    }

    /// The server's tools, every page of `tools/list`.
    pub(crate) async fn list_tools(&self) -> Result<Vec<ListedTool>, McpError> {
        let name = &self.server.name;
        let peer = self.peer().await.map_err(|reason| McpError::Connect {
            server: name.clone(),
            reason,
        })?;
        let listed = tokio::time::timeout(self.server.connect_timeout, peer.list_all_tools())
            .await
            .map_err(|_| McpError::List {
                server: name.clone(),
                reason: "no answer in time".to_owned(),
            })?
            .map_err(|error| McpError::List {
                server: name.clone(),
                reason: error.to_string(),
            })?;
        listed
            .iter()
            .map(|tool| {
                let json = serde_json::to_value(tool).map_err(|error| McpError::List {
                    server: name.clone(),
                    reason: error.to_string(),
                })?;
                Ok(listed_tool(&json))
            })
            .collect()
    }

    /// Calls the tool `name` with `arguments`. A server that could not be started is tried
    /// once more (nothing was sent); one lost after the call went out, or a call past the
    /// timeout, is tried once more for a tool safe to run twice, and is `tool_outcome_unknown`
    /// for an `at_most_once` one (it may have run). Answers the result's JSON (`content`,
    /// `structuredContent`, `isError`).
    pub(crate) async fn call(
        &self,
        context: &ToolContext,
        name: &str,
        arguments: Map<String, Value>,
        at_most_once: bool,
    ) -> Result<Value, ToolError> {
        let server = &self.server.name;
        let mut last = String::new();
        for _ in 0..2 {
            let registered = Registered::new(&self.calls, InFlight::new(context.clone(), name));
            let answered = self
                .call_once(registered.call(), name, arguments.clone())
                .await;
            if let Some(window) = registered.call().timed_out() {
                return Err(ToolError::new(
                    codes::QUESTION_TIMED_OUT,
                    format!(
                        "the MCP server {server} asked a person, and nobody answered within {} s",
                        window.as_secs_f64()
                    ),
                ));
            }
            match answered {
                Ok(result) => return Ok(result),
                Err(Failure::NotStarted(reason)) => last = reason,
                Err(Failure::Lost(reason)) if at_most_once => {
                    return Err(ToolError::new(
                        codes::TOOL_OUTCOME_UNKNOWN,
                        format!(
                            "the MCP server {server} was lost during the call ({reason}); \
                             whether the tool ran is not known"
                        ),
                    ));
                }
                Err(Failure::Lost(reason)) => last = reason,
                Err(Failure::Timeout) => {
                    let waited = self.server.timeout.as_secs_f64();
                    return Err(if at_most_once {
                        ToolError::new(
                            codes::TOOL_OUTCOME_UNKNOWN,
                            format!(
                                "the MCP server {server} did not answer within {waited} s; \
                                 whether the tool ran is not known"
                            ),
                        )
                    } else {
                        ToolError::new(
                            codes::TOOL_FAILED,
                            format!("the MCP server {server} did not answer within {waited} s"),
                        )
                    });
                }
                Err(Failure::Other(error)) => return Err(error),
            }
        }
        Err(ToolError::new(
            codes::TOOL_FAILED,
            format!("the MCP server {server} is unavailable: {last}"),
        ))
    }

    async fn call_once(
        &self,
        call: &InFlight,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<Value, Failure> {
        // The lock is not held across the call: calls of the agent's tools go out together.
        let peer = self.peer().await.map_err(Failure::NotStarted)?;
        let params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
        let answered = self.within_timeout(call, peer.call_tool(params)).await;
        match answered {
            Err(_) => Err(Failure::Timeout),
            Ok(Ok(result)) => serde_json::to_value(&result).map_err(|error| {
                Failure::Other(ToolError::new(codes::TOOL_FAILED, error.to_string()))
            }),
            Ok(Err(error)) if is_dead(&error) => {
                // The next call starts the server again.
                self.client.lock().await.take();
                Err(Failure::Lost(error.to_string()))
            }
            Ok(Err(error)) => Err(Failure::Other(ToolError::new(
                codes::TOOL_FAILED,
                format!(
                    "the MCP server {} refused the call: {error}",
                    self.server.name
                ),
            ))),
        }
    }
}

impl Connection {
    /// `future` within the declaration's timeout, not counting the time the call waited on a
    /// person (see `elicit.rs`): `Err(())` past it.
    async fn within_timeout<T>(
        &self,
        call: &InFlight,
        future: impl std::future::Future<Output = T>,
    ) -> Result<T, ()> {
        let started = tokio::time::Instant::now();
        tokio::pin!(future);
        let mut deadline = started + self.server.timeout;
        loop {
            tokio::select! {
                done = &mut future => return Ok(done),
                () = tokio::time::sleep_until(deadline) => match call.waited() {
                    // A person is being asked: the question's own window bounds that.
                    None => deadline = tokio::time::Instant::now() + PERSON_CHECK,
                    Some(waited) => {
                        let extended = started + self.server.timeout + waited;
                        if tokio::time::Instant::now() >= extended {
                            return Err(());
                        }
                        deadline = extended;
                    }
                },
            }
        }
    }
}

/// How often a call whose server waits on a person looks whether the wait is over.
const PERSON_CHECK: std::time::Duration = std::time::Duration::from_millis(250);

/// `command` as a path: a bare name is looked up in the worker's `PATH` (the server's own
/// environment is only what its declaration gives, so the lookup cannot be left to it).
fn resolved(command: &str) -> std::path::PathBuf {
    if command.contains('/') {
        return command.into();
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(command))
        .find(|path| path.is_file())
        .unwrap_or_else(|| command.into())
}

/// Makes ring the process's TLS provider if none is yet: the HTTP transport's client is built
/// without one of its own (no second provider in the workspace), and would refuse to start.
fn install_tls_provider() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        // Another part of the process may have installed one first: that one is kept.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// How a call attempt failed.
enum Failure {
    /// The server could not be started or reached: the call was not sent.
    NotStarted(String),
    /// The server was lost (its process died, its connection closed) after the call went out.
    Lost(String),
    /// No answer within the declaration's timeout.
    Timeout,
    Other(ToolError),
}

fn is_dead(error: &ServiceError) -> bool {
    matches!(
        error,
        ServiceError::TransportClosed | ServiceError::TransportSend(_)
    )
}

/// A listed tool's fields, from its JSON (`name`, `description`, `inputSchema`,
/// `outputSchema`, `annotations`).
fn listed_tool(json: &Value) -> ListedTool {
    let hint = |name: &str| json["annotations"][name].as_bool();
    ListedTool {
        name: json["name"].as_str().unwrap_or_default().to_owned(),
        description: json["description"].as_str().unwrap_or_default().to_owned(),
        input_schema: json
            .get("inputSchema")
            .cloned()
            .unwrap_or_else(|| serde_json::json!({"type": "object"})),
        output_schema: json.get("outputSchema").cloned().filter(|s| !s.is_null()),
        read_only: hint("readOnlyHint").unwrap_or(false),
        destructive: hint("destructiveHint").unwrap_or(false),
        idempotent: hint("idempotentHint").unwrap_or(false),
    }
}
