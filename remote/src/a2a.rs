//! The consumer's client of an agent served over A2A (v0.3, JSON-RPC over HTTP), over the
//! protocol's types in `wire::a2a`: the agent card read first (its `url` is the JSON-RPC
//! endpoint, its capabilities say whether the agent streams), then `message/send`,
//! `message/stream`, `tasks/get`, `tasks/resubscribe` and `tasks/cancel`. Every request carries
//! the declaration's headers and is bounded by its per-read deadline; a request that fails on
//! the network, times out or answers a retryable status (5xx, 429) is retried with a doubling
//! wait, except a `message/*` (sending one twice could start two tasks). A JSON-RPC error is
//! handed back as the agent's code and message.

use crate::http::{error_text as shown, retryable};
use baton_core::{
    a2a::{
        AgentCapabilities, Event, JsonRpcRequest, JsonRpcResponse, MessageSendParams, Task,
        TaskIdParams, TaskQueryParams, codes, methods,
    },
    sse::{Decoder, NotUtf8},
    subagent::A2aAgent,
};
use futures::StreamExt;
use reqwest::{RequestBuilder, Response, StatusCode};
use serde::{Deserialize, de::DeserializeOwned};
use serde_json::{Value, json};
use std::{collections::VecDeque, time::Duration};

/// Why a request to an A2A agent did not succeed.
#[derive(Debug, Clone, PartialEq)]
pub enum A2aError {
    /// Unreachable, timed out, failing through every retry, or answering what is not A2A.
    Unavailable(String),
    /// The agent refused the request: HTTP 401/403 (`code` 0 then), or a JSON-RPC error, with
    /// its `data` (Baton's own error body, from a Baton agent).
    Refused {
        code: i32,
        message: String,
        data: Option<Value>,
    },
}

impl A2aError {
    /// Whether the agent says it has no such task.
    pub fn is_task_not_found(&self) -> bool {
        matches!(self, Self::Refused { code, .. } if *code == codes::TASK_NOT_FOUND)
    }
}

impl std::fmt::Display for A2aError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unavailable(reason) => write!(f, "the A2A agent is unavailable: {reason}"),
            Self::Refused { code, message, .. } => {
                write!(f, "the A2A agent refused ({code}): {message}")
            }
        }
    }
}

/// What the client reads of an agent card: where to send requests and what the agent can do.
/// Read leniently (every other field of the card is the agent's business).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CardView {
    url: String,
    #[serde(default)]
    capabilities: AgentCapabilities,
}

/// One A2A agent, its card read.
pub struct A2aClient<'a> {
    http: &'a reqwest::Client,
    agent: &'a A2aAgent,
    endpoint: String,
    capabilities: AgentCapabilities,
}

impl<'a> A2aClient<'a> {
    /// Reads the agent's card (with retries) and answers its client.
    pub async fn connect(http: &'a reqwest::Client, agent: &'a A2aAgent) -> Result<Self, A2aError> {
        let client = Self {
            http,
            agent,
            endpoint: String::new(),
            capabilities: AgentCapabilities::default(),
        };
        let card: CardView = client
            .json_with_retries(|| client.with_headers(http.get(agent.card_url())))
            .await?;
        baton_core::subagent::A2aAgent::new(card.url.clone())
            .check()
            .map_err(|reason| {
                A2aError::Unavailable(format!("the agent card's endpoint is not usable: {reason}"))
            })?;
        Ok(Self {
            endpoint: card.url,
            capabilities: card.capabilities,
            ..client
        })
    }

    /// Whether the agent pushes a task's updates to a URL the client gives.
    pub fn pushes(&self) -> bool {
        self.capabilities.push_notifications
    }

    /// Whether the agent streams (`message/stream`, `tasks/resubscribe`).
    pub fn streams(&self) -> bool {
        self.capabilities.streaming
    }

    fn with_headers(&self, mut request: RequestBuilder) -> RequestBuilder {
        for (name, value) in self.agent.headers() {
            request = request.header(name, value);
        }
        request.timeout(self.agent.read_timeout)
    }

    fn rpc(&self, method: &str, params: &Value) -> RequestBuilder {
        let body = JsonRpcRequest {
            jsonrpc: "2.0".into(),
            id: Some(json!(1)),
            method: method.to_owned(),
            params: Some(params.clone()),
        };
        self.with_headers(self.http.post(&self.endpoint).json(&body))
    }

    /// Sends what `build` makes until it answers, is refused, or the retries are spent.
    async fn send_with_retries(
        &self,
        build: impl Fn() -> RequestBuilder,
    ) -> Result<Response, A2aError> {
        let mut wait = self.agent.retry_base_delay;
        let mut attempt = 0;
        loop {
            let failure = match build().send().await {
                Ok(response) if retryable(response.status()) => {
                    format!("it answered {}", response.status())
                }
                Ok(response) => return checked(response),
                Err(error) => shown(&error, "the agent"),
            };
            if attempt >= self.agent.max_retries {
                return Err(A2aError::Unavailable(format!(
                    "{failure} (after {} attempts)",
                    attempt + 1
                )));
            }
            attempt += 1;
            tokio::time::sleep(wait).await;
            wait = wait.saturating_mul(2);
        }
    }

    async fn json_with_retries<T: DeserializeOwned>(
        &self,
        build: impl Fn() -> RequestBuilder,
    ) -> Result<T, A2aError> {
        let response = self.send_with_retries(build).await?;
        read_json(response, self.agent.read_timeout).await
    }

    /// A JSON-RPC call's result, the call retried when `idempotent`.
    async fn call<T: DeserializeOwned>(
        &self,
        method: &str,
        params: Value,
        idempotent: bool,
    ) -> Result<T, A2aError> {
        let build = || self.rpc(method, &params);
        let response = if idempotent {
            self.send_with_retries(build).await?
        } else {
            match build().send().await {
                Ok(response) if retryable(response.status()) => {
                    return Err(A2aError::Unavailable(format!(
                        "it answered {}",
                        response.status()
                    )));
                }
                Ok(response) => checked(response)?,
                Err(error) => return Err(A2aError::Unavailable(shown(&error, "the agent"))),
            }
        };
        let answer: JsonRpcResponse = read_json(response, self.agent.read_timeout).await?;
        result_of(answer)
    }

    /// `message/send`: the task it began or continued (or the agent's direct message).
    pub async fn send(&self, params: &MessageSendParams) -> Result<Event, A2aError> {
        self.call(methods::MESSAGE_SEND, to_value(params)?, false)
            .await
    }

    /// `message/stream`: the events of the task the message begins or continues.
    pub async fn stream(&self, params: &MessageSendParams) -> Result<EventStream, A2aError> {
        let params = to_value(params)?;
        let response = self
            .rpc(methods::MESSAGE_STREAM, &params)
            .header("accept", "text/event-stream")
            .timeout(Duration::from_secs(24 * 3600))
            .send()
            .await
            .map_err(|error| A2aError::Unavailable(shown(&error, "the agent")))?;
        self.events(response).await
    }

    /// `tasks/resubscribe`: the task's events from now on.
    pub async fn resubscribe(&self, task_id: &str) -> Result<EventStream, A2aError> {
        let params = to_value(&TaskIdParams {
            id: task_id.to_owned(),
            metadata: None,
        })?;
        let response = self
            .send_with_retries(|| {
                self.rpc(methods::TASKS_RESUBSCRIBE, &params)
                    .header("accept", "text/event-stream")
                    .timeout(Duration::from_secs(24 * 3600))
            })
            .await?;
        self.events(response).await
    }

    /// A streaming answer: its events, or the JSON-RPC error it answered instead of a stream.
    async fn events(&self, response: Response) -> Result<EventStream, A2aError> {
        let response = checked(response)?;
        let is_stream = response
            .headers()
            .get("content-type")
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.starts_with("text/event-stream"));
        if !is_stream {
            let answer: JsonRpcResponse = read_json(response, self.agent.read_timeout).await?;
            return Err(result_of::<Value>(answer).err().unwrap_or_else(|| {
                A2aError::Unavailable("a stream was asked for and a JSON answer came".into())
            }));
        }
        Ok(EventStream {
            body: Box::pin(response.bytes_stream()),
            decoder: Decoder::new(),
            ready: VecDeque::new(),
        })
    }

    /// `tasks/get`.
    pub async fn get(&self, task_id: &str) -> Result<Task, A2aError> {
        let params = to_value(&TaskQueryParams {
            id: task_id.to_owned(),
            history_length: Some(0),
            metadata: None,
        })?;
        self.call(methods::TASKS_GET, params, true).await
    }

    /// `tasks/cancel`, once (best effort: the caller decides what a failure means).
    pub async fn cancel(&self, task_id: &str) -> Result<Task, A2aError> {
        let params = to_value(&TaskIdParams {
            id: task_id.to_owned(),
            metadata: None,
        })?;
        self.call(methods::TASKS_CANCEL, params, false).await
    }
}

type Body = std::pin::Pin<
    Box<dyn futures::Stream<Item = Result<bytes::Bytes, reqwest::Error>> + Send + 'static>,
>;

/// The events of one streaming answer, read one at a time.
pub struct EventStream {
    body: Body,
    decoder: Decoder,
    ready: VecDeque<Result<Event, A2aError>>,
}

/// What one read of a stream gave.
#[derive(Debug)]
pub enum Next {
    Event(Box<Event>),
    /// Nothing came within the wait.
    Quiet,
    /// The stream ended (cleanly or not): the reason.
    Closed(String),
}

impl EventStream {
    /// The agent's refusal, when it is the stream's first event (a server that answers a
    /// refused request as a one-event stream); any other first event is kept for [`Self::next`].
    pub async fn refused_at_once(&mut self, wait: Duration) -> Option<A2aError> {
        match self.next(wait).await {
            Err(refused @ A2aError::Refused { .. }) => Some(refused),
            Ok(Next::Event(event)) => {
                self.ready.push_front(Ok(*event));
                None
            }
            Err(A2aError::Unavailable(_)) | Ok(Next::Quiet | Next::Closed(_)) => None,
        }
    }

    /// The next event, waiting at most `wait` for bytes; a JSON-RPC error on the stream is the
    /// agent's refusal.
    pub async fn next(&mut self, wait: Duration) -> Result<Next, A2aError> {
        loop {
            if let Some(ready) = self.ready.pop_front() {
                return ready.map(|event| Next::Event(Box::new(event)));
            }
            let bytes = match tokio::time::timeout(wait, self.body.next()).await {
                Err(_) => return Ok(Next::Quiet),
                Ok(None) => return Ok(Next::Closed("the stream ended".into())),
                Ok(Some(Err(error))) => return Ok(Next::Closed(shown(&error, "the agent"))),
                Ok(Some(Ok(bytes))) => bytes,
            };
            let ready = &mut self.ready;
            let fed = self.decoder.feed(&bytes, &mut |event| {
                if !event.data.is_empty() {
                    ready.push_back(
                        serde_json::from_str::<JsonRpcResponse>(event.data)
                            .map_err(|error| {
                                A2aError::Unavailable(format!(
                                    "a stream event is not a JSON-RPC answer: {error}"
                                ))
                            })
                            .and_then(result_of),
                    );
                }
                Ok::<(), NotUtf8>(())
            });
            if fed.is_err() {
                return Ok(Next::Closed("the stream is not UTF-8".into()));
            }
        }
    }
}

fn to_value(value: &impl serde::Serialize) -> Result<Value, A2aError> {
    serde_json::to_value(value).map_err(|error| A2aError::Unavailable(error.to_string()))
}

fn result_of<T: DeserializeOwned>(answer: JsonRpcResponse) -> Result<T, A2aError> {
    if let Some(error) = answer.error {
        return Err(A2aError::Refused {
            code: error.code,
            message: error.message,
            data: error.data,
        });
    }
    let result = answer.result.ok_or_else(|| {
        A2aError::Unavailable("a JSON-RPC answer with neither result nor error".into())
    })?;
    serde_json::from_value(result).map_err(|error| {
        A2aError::Unavailable(format!("the answer is not the protocol's: {error}"))
    })
}

/// A response that is not a refusal of the credential (401, 403) or another HTTP failure.
fn checked(response: Response) -> Result<Response, A2aError> {
    let status = response.status();
    if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
        return Err(A2aError::Refused {
            code: 0,
            message: format!("the agent refused the credential ({status})"),
            data: None,
        });
    }
    if !status.is_success() {
        return Err(A2aError::Unavailable(format!("it answered {status}")));
    }
    Ok(response)
}

async fn read_json<T: DeserializeOwned>(response: Response, wait: Duration) -> Result<T, A2aError> {
    let bytes = match tokio::time::timeout(wait, response.bytes()).await {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(error)) => return Err(A2aError::Unavailable(shown(&error, "the agent"))),
        Err(_) => return Err(A2aError::Unavailable("the answer timed out".into())),
    };
    serde_json::from_slice(&bytes).map_err(|error| {
        A2aError::Unavailable(format!("the answer is not the protocol's: {error}"))
    })
}
