//! One MCP server's connection, shared by the tools listed from it: the server process started
//! on first use and started again when it has died (a call finds it closed), MCP 2026-07-28
//! where the server speaks it, each call bounded by the declaration's timeout (which stops
//! while the server waits on a person, see `elicit.rs`) and taken round by round: a round
//! answered `input_required` is the question a run suspends on, or one asked while the call
//! is held.

use crate::{
    McpError, McpServer, McpTransport,
    elicit::{Calls, Elicitations, InFlight, Registered, elicit_result},
};
use baton_core::{
    message::ToolError,
    tool::{
        ToolContext,
        ask::{Asked, PersonAnswer},
        codes,
    },
};
use http::{HeaderName, HeaderValue};
use rmcp::{
    ClientLifecycleMode, ClientServiceExt, RoleClient, ServiceError,
    model::{
        CallToolRequestParams, CallToolResponse, ElicitRequestParams, InputRequest, InputRequests,
        InputRequiredResult, InputResponses, ProtocolVersion, ServerNotification,
        SubscriptionFilter,
    },
    service::RunningService,
    transport::{
        StreamableHttpClientTransport, TokioChildProcess,
        streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::{
    collections::HashMap,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
};
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
    /// The server said its tools changed (or was started again) since they were last listed.
    changed: Arc<AtomicBool>,
    /// A session was opened before: the next one is the server started again.
    connected: AtomicBool,
}

impl Connection {
    pub(crate) fn new(server: McpServer) -> Self {
        Self {
            server,
            client: Mutex::new(None),
            calls: Calls::default(),
            changed: Arc::default(),
            connected: AtomicBool::new(false),
        }
    }

    /// The client handler of a new session.
    fn handler(&self) -> Elicitations {
        Elicitations {
            calls: self.calls.clone(),
            window: self.server.question_timeout,
            server: self.server.name.clone(),
            tools_changed: self.changed.clone(),
        }
    }

    /// Whether the server's tools may have changed since they were last listed (the flag is
    /// taken: the caller lists them again).
    pub(crate) fn take_changed(&self) -> bool {
        self.changed.swap(false, Ordering::SeqCst)
    }

    /// Says the tools are to be listed again (a listing that failed).
    pub(crate) fn mark_changed(&self) {
        self.changed.store(true, Ordering::SeqCst);
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
                self.initialized(
                    self.handler()
                        .serve_with_lifecycle(transport, self.lifecycle()),
                )
                .await
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
                self.initialized(
                    self.handler()
                        .serve_with_lifecycle(transport, self.lifecycle()),
                )
                .await
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
            None => {
                let client = self.connect().await?;
                // A server started again may list other tools than before.
                if self.connected.swap(true, Ordering::SeqCst) {
                    self.mark_changed();
                }
                self.listen_for_changes(&client);
                client
            }
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

    /// Calls the tool `name` with `arguments`, its questions asked as `mode` says. A server
    /// that could not be started is tried once more (nothing was sent); one lost after the call
    /// went out, or a call past the timeout, is tried once more for a tool safe to run twice,
    /// and is `tool_outcome_unknown` for an `at_most_once` one (it may have run). Answers the
    /// result's JSON (`content`, `structuredContent`, `isError`), or what the call asked.
    pub(crate) async fn call(
        &self,
        context: &ToolContext,
        name: &str,
        arguments: Map<String, Value>,
        at_most_once: bool,
        mode: &Mode,
    ) -> Result<Reply, ToolError> {
        let server = &self.server.name;
        let mut last = String::new();
        for _ in 0..2 {
            let registered = Registered::new(&self.calls, InFlight::new(context.clone(), name));
            let mut params =
                CallToolRequestParams::new(name.to_owned()).with_arguments(arguments.clone());
            if let Mode::Answered {
                continuation,
                answer,
            } = mode
            {
                let response =
                    serde_json::to_value(elicit_result(answer.clone())).unwrap_or_default();
                params.input_responses = Some([(continuation.key.clone(), response)].into());
                params.request_state = continuation.request_state.clone();
            }
            let answered = self.call_once(registered.call(), params, mode).await;
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
                Ok(reply) => return Ok(reply),
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

    /// One attempt of a call: its rounds, until the server answers with a result. A round
    /// answered `input_required` (MCP 2026-07-28) is asked of a person: the first one of a
    /// call that may suspend its run ends the attempt with what it asks (one question, asked
    /// as a form), any other is asked while the call is held and sent back with the answers.
    async fn call_once(
        &self,
        call: &InFlight,
        mut params: CallToolRequestParams,
        mode: &Mode,
    ) -> Result<Reply, Failure> {
        // The lock is not held across the call: calls of the agent's tools go out together.
        let peer = self.peer().await.map_err(Failure::NotStarted)?;
        for round in 0..MAX_ROUNDS {
            let answered = self
                .within_timeout(call, peer.call_tool_once(params.clone()))
                .await;
            let response = match answered {
                Err(()) => return Err(Failure::Timeout),
                Ok(Ok(response)) => response,
                Ok(Err(error)) if is_dead(&error) => {
                    // The next call starts the server again.
                    self.client.lock().await.take();
                    return Err(Failure::Lost(error.to_string()));
                }
                Ok(Err(error)) => {
                    return Err(self.failed(format!("refused the call: {error}")));
                }
            };
            let required = match response {
                CallToolResponse::Complete(result) => {
                    return serde_json::to_value(&result)
                        .map(Reply::Result)
                        .map_err(|error| self.failed(error.to_string()));
                }
                CallToolResponse::InputRequired(required) => required,
                CallToolResponse::Task(_) => {
                    return Err(self.failed(
                        "answered with a task (the MCP tasks extension), which Baton does not \
                         follow"
                            .to_owned(),
                    ));
                }
                _ => {
                    return Err(
                        self.failed("answered with a result Baton does not know".to_owned())
                    );
                }
            };
            if round == 0
                && matches!(mode, Mode::MayAsk)
                && let Some(asked) = self.suspending(&required)
            {
                return Ok(Reply::Asked(asked));
            }
            params.input_responses = Some(self.answered_held(call, required.input_requests).await?);
            params.request_state = required.request_state;
        }
        Err(self.failed(format!("was still asking after {MAX_ROUNDS} rounds")))
    }

    /// What a round answered `input_required` asks, when the run can suspend on it: one form
    /// question, and a window to answer it in.
    fn suspending(&self, required: &InputRequiredResult) -> Option<Asked> {
        let requests = required.input_requests.as_ref()?;
        let [(key, InputRequest::Elicitation(request))] = requests.iter().collect::<Vec<_>>()[..]
        else {
            return None;
        };
        let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = &request.params
        else {
            return None;
        };
        if self.server.question_timeout.is_zero() {
            return None;
        }
        let continuation = Continuation {
            key: key.clone(),
            request_state: required.request_state.clone(),
        };
        Some(Asked {
            message: message.clone(),
            schema: serde_json::to_value(requested_schema).ok()?,
            continuation: serde_json::to_value(continuation).ok()?,
            window_ms: u64::try_from(self.server.question_timeout.as_millis()).ok(),
        })
    }

    /// The answers to a round's requests, each asked while the call is held: a question of a
    /// person, the roots (none).
    async fn answered_held(
        &self,
        call: &InFlight,
        requests: Option<InputRequests>,
    ) -> Result<InputResponses, Failure> {
        let mut responses = InputResponses::new();
        for (key, request) in requests.unwrap_or_default() {
            let response = match request {
                InputRequest::Elicitation(request) => {
                    let result = self.handler().ask_held(call, request.params).await;
                    serde_json::to_value(result).map_err(|error| self.failed(error.to_string()))?
                }
                InputRequest::ListRoots(_) => serde_json::json!({ "roots": [] }),
                _ => {
                    return Err(self.failed(
                        "asked for a model's completion (sampling), which Baton does not offer"
                            .to_owned(),
                    ));
                }
            };
            responses.insert(key, response);
        }
        Ok(responses)
    }

    /// A call's failure the model sees: `tool_failed`, naming the server.
    fn failed(&self, what: String) -> Failure {
        Failure::Other(ToolError::new(
            codes::TOOL_FAILED,
            format!("the MCP server {} {what}", self.server.name),
        ))
    }
}

impl Connection {
    /// On a 2026-07-28 session with a server that says its tool list can change, opens the
    /// stream its changes come on (`subscriptions/listen`), which sets the flag on each; an
    /// older server sends them unasked, to the handler. The stream ends with its session.
    fn listen_for_changes(&self, client: &Client) {
        let peer = client.peer().clone();
        let Some(info) = peer.peer_info() else {
            return;
        };
        let modern = info.protocol_version >= ProtocolVersion::V_2026_07_28;
        let announces = info
            .capabilities
            .tools
            .as_ref()
            .and_then(|tools| tools.list_changed)
            .unwrap_or(false);
        if !modern || !announces {
            return;
        }
        let changed = self.changed.clone();
        let server = self.server.name.clone();
        tokio::spawn(async move {
            let filter = SubscriptionFilter::builder().tools_list_changed().build();
            let mut subscription = match peer.listen(filter).await {
                Ok(subscription) => subscription,
                Err(error) => {
                    tracing::warn!(%server, %error, "the MCP server's tool changes cannot be followed");
                    return;
                }
            };
            while let Ok(Some(notification)) = subscription.next().await {
                if matches!(
                    notification,
                    ServerNotification::ToolListChangedNotification(_)
                ) {
                    changed.store(true, Ordering::SeqCst);
                }
            }
        });
    }
}

/// How a call's questions are asked.
pub(crate) enum Mode {
    /// Every one while the call is held (where the run cannot suspend, or the declaration
    /// says so).
    Held,
    /// The first one the server asks with `input_required` suspends the run.
    MayAsk,
    /// Going on from a question the run suspended on, with the person's answer.
    Answered {
        continuation: Continuation,
        answer: PersonAnswer,
    },
}

/// What a call that suspended on a question needs to go on: the question's key among the
/// round's requests and the server's opaque state, sent back with the answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Continuation {
    pub(crate) key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) request_state: Option<String>,
}

/// What a call came to: the result's JSON, or the question it stopped on.
pub(crate) enum Reply {
    Result(Value),
    Asked(Asked),
}

/// The most rounds of questions one call may take.
const MAX_ROUNDS: usize = 10;

impl Connection {
    /// How a session opens: with the 2026-07-28 protocol where the server speaks it (its
    /// questions come back as `input_required` results, on which a run can suspend), else with
    /// the older `initialize`; only the latter when the declaration holds questions (a server
    /// then sends each as a request mid-call, which a tool that elicits directly needs).
    fn lifecycle(&self) -> ClientLifecycleMode {
        if self.server.hold_questions {
            return ClientLifecycleMode::Initialize;
        }
        ClientLifecycleMode::Auto {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            legacy_version: None,
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
