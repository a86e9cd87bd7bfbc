//! The consumer's HTTP client of a producer mount (`{url}/{agentType}/…`), over the protocol's
//! bodies in `wire::remote`: every request carries the declaration's headers and is bounded by
//! its per-read deadline; a request that fails on the network, times out or answers a
//! retryable status (5xx, 429) is retried with a doubling wait, a typed refusal is handed back
//! as the producer's envelope, as it is.

use crate::http::{error_text as shown, retryable};
use baton_core::{
    ErrorCode,
    api::{ResumeMode, ResumeRequest, SessionRequest},
    remote::{ErrorBody, SnapshotResponse, StartRequest, StartResponse, StatusResponse},
    subagent::RemoteAgent,
    submit::{SubmitAnswer, SubmitRequest},
    usage::UsageRollup,
};
use reqwest::{Method, RequestBuilder, Response};
use serde::de::DeserializeOwned;

/// Why a request to the producer did not succeed.
#[derive(Debug)]
pub enum CallError {
    /// Unreachable, timed out or failing through every retry.
    Unavailable(String),
    /// The producer's typed refusal (its envelope).
    Refused(ErrorBody),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unavailable(reason) => write!(f, "the producer is unavailable: {reason}"),
            Self::Refused(body) => {
                write!(f, "the producer refused: {} ({})", body.error, body.code)
            }
        }
    }
}

/// How a start went: a new child, or one that existed (a retried start): attach to it.
pub enum Started {
    New(StartResponse),
    Attached { stream_id: String },
}

/// One remote agent type of one producer.
pub struct Producer<'a> {
    http: &'a reqwest::Client,
    remote: &'a RemoteAgent,
}

impl<'a> Producer<'a> {
    pub fn new(http: &'a reqwest::Client, remote: &'a RemoteAgent) -> Self {
        Self { http, remote }
    }

    fn request(&self, method: Method, action: &str) -> RequestBuilder {
        let url = format!(
            "{}/{}/{action}",
            self.remote.url(),
            self.remote.agent_type()
        );
        let mut request = self.http.request(method, url);
        for (name, value) in self.remote.headers() {
            request = request.header(name, value);
        }
        request
    }

    /// Sends what `build` makes until it succeeds, is refused, or the retries are spent.
    async fn send(&self, build: impl Fn() -> RequestBuilder) -> Result<Response, CallError> {
        let mut wait = self.remote.retry_base_delay;
        let mut attempt = 0;
        loop {
            let failure = match build().send().await {
                Ok(response) if response.status().is_success() => return Ok(response),
                Ok(response) if retryable(response.status()) => {
                    format!("it answered {}", response.status())
                }
                Ok(response) => return Err(refusal(response).await),
                Err(error) => shown(&error, "the producer"),
            };
            if attempt >= self.remote.max_retries {
                return Err(CallError::Unavailable(format!(
                    "{failure} (after {} attempts)",
                    attempt + 1
                )));
            }
            attempt += 1;
            tokio::time::sleep(wait).await;
            wait = wait.saturating_mul(2);
        }
    }

    async fn json<T: DeserializeOwned>(
        &self,
        build: impl Fn() -> RequestBuilder,
    ) -> Result<T, CallError> {
        let response = self.send(build).await?;
        let read = tokio::time::timeout(self.remote.read_timeout, response.bytes()).await;
        let bytes = match read {
            Ok(Ok(bytes)) => bytes,
            Ok(Err(error)) => return Err(CallError::Unavailable(shown(&error, "the producer"))),
            Err(_) => return Err(CallError::Unavailable("the answer timed out".into())),
        };
        serde_json::from_slice(&bytes).map_err(|error| {
            CallError::Unavailable(format!("the answer is not the protocol's body: {error}"))
        })
    }

    fn get(&self, action: &str, session_id: &str) -> RequestBuilder {
        self.request(Method::GET, action)
            .query(&[("sessionId", session_id)])
            .timeout(self.remote.read_timeout)
    }

    /// `start`; `ALREADY_RUNNING` is an attach, not a failure.
    pub async fn start(&self, body: &StartRequest) -> Result<Started, CallError> {
        let build = || {
            self.request(Method::POST, "start")
                .json(body)
                .timeout(self.remote.read_timeout)
        };
        match self.json::<StartResponse>(build).await {
            Ok(started) => Ok(Started::New(started)),
            Err(CallError::Refused(refused)) if refused.code == ErrorCode::AlreadyRunning => {
                let stream_id = match refused.refusal() {
                    Some(baton_core::Refusal::AlreadyRunning { stream_id }) => stream_id,
                    _ => String::new(),
                };
                Ok(Started::Attached { stream_id })
            }
            Err(error) => Err(error),
        }
    }

    pub async fn status(&self, session_id: &str) -> Result<StatusResponse, CallError> {
        self.json(|| self.get("status", session_id)).await
    }

    pub async fn snapshot(&self, session_id: &str) -> Result<SnapshotResponse, CallError> {
        self.json(|| self.get("snapshot", session_id)).await
    }

    /// The child's recursive rollup (`usage`), read as Baton's.
    pub async fn usage(&self, session_id: &str) -> Result<UsageRollup, CallError> {
        let usage: baton_core::remote::UsageResponse =
            self.json(|| self.get("usage", session_id)).await?;
        serde_json::from_value(usage.rollup).map_err(|error| {
            CallError::Unavailable(format!("the rollup is not a usage rollup: {error}"))
        })
    }

    /// `resume` with `mode: continue`.
    pub async fn resume(&self, session_id: &str) -> Result<(), CallError> {
        let body = ResumeRequest {
            session_id: session_id.to_owned(),
            mode: ResumeMode::Continue,
            message: None,
            abandon_pending: false,
            checkpoint_id: None,
        };
        let build = || {
            self.request(Method::POST, "resume")
                .json(&body)
                .timeout(self.remote.read_timeout)
        };
        self.send(build).await.map(drop)
    }

    /// Baton's `submit`: a person's answer relayed, once (the consumer's caller retries), its
    /// ids the producer's; the producer's answer, or its refusal as it is.
    pub async fn submit(&self, body: &SubmitRequest) -> Result<SubmitAnswer, CallError> {
        let response = self
            .request(Method::POST, "submit")
            .json(body)
            .timeout(self.remote.read_timeout)
            .send()
            .await
            .map_err(|error| CallError::Unavailable(shown(&error, "the producer")))?;
        if !response.status().is_success() {
            if retryable(response.status()) {
                return Err(CallError::Unavailable(format!(
                    "it answered {}",
                    response.status()
                )));
            }
            return Err(refusal(response).await);
        }
        response.json().await.map_err(|error| {
            CallError::Unavailable(format!("the answer is not a submit's answer: {error}"))
        })
    }

    /// `interrupt` (or `abort`), once, without retries: best effort.
    pub async fn stop(&self, session_id: &str, action: &str) -> Result<(), CallError> {
        let body = SessionRequest {
            session_id: session_id.to_owned(),
        };
        let response = self
            .request(Method::POST, action)
            .json(&body)
            .timeout(self.remote.read_timeout)
            .send()
            .await
            .map_err(|error| CallError::Unavailable(shown(&error, "the producer")))?;
        if response.status().is_success() {
            Ok(())
        } else {
            Err(refusal(response).await)
        }
    }

    /// The child's stream after `from_sequence` (exclusive), not yet read.
    pub async fn sse(&self, session_id: &str, from_sequence: u64) -> Result<Response, CallError> {
        let from = from_sequence.to_string();
        self.send(|| {
            self.request(Method::GET, "sse")
                .query(&[("sessionId", session_id), ("fromSequence", from.as_str())])
                .header("accept", "text/event-stream")
        })
        .await
    }
}

/// A refusal's envelope; a body that is not one is the producer being unavailable.
async fn refusal(response: Response) -> CallError {
    let status = response.status();
    match response.json::<ErrorBody>().await {
        Ok(body) => CallError::Refused(body),
        Err(_) => CallError::Unavailable(format!("it answered {status} without the envelope")),
    }
}
