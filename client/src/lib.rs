//! A thin client of the Baton server over HTTP: start a session, read its status, follow its
//! stream (reconnecting from the last sequence if the connection drops).

use baton_core::{
    ApiError, StreamChunk,
    api::{
        ResumeMode, ResumeRequest, ResumeResponse, SessionRequest, SnapshotResponse, StartRequest,
        StartResponse, StopResponse, UsageResponse,
    },
    chunk::ChunkKind,
    message::ToolOutcome,
    store::{ApprovalDecision, SessionState},
    submit::SubmitAnswer,
};
use futures::{Stream, StreamExt};
use std::time::Duration;

/// Why a client call failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The server answered with a typed error.
    #[error(transparent)]
    Api(#[from] ApiError),
    #[error("cannot reach the Baton server")]
    Transport(#[from] reqwest::Error),
    #[error("the server answered HTTP {status} without a Baton error body: {body}")]
    Unexpected { status: u16, body: String },
    #[error("malformed stream event: {0}")]
    MalformedEvent(String),
    #[error("the stream broke {0} times in a row; giving up")]
    StreamLost(u32),
    #[error("cannot encode the request: {0}")]
    Encode(#[from] serde_json::Error),
    #[error("{0}")]
    Usage(String),
}

/// HTTP client of one Baton server.
#[derive(Debug, Clone)]
pub struct HttpClient {
    base: String,
    http: reqwest::Client,
}

impl HttpClient {
    /// `base` is the server's address, e.g. `http://127.0.0.1:8080`.
    pub fn new(base: impl Into<String>) -> Self {
        Self {
            base: base.into().trim_end_matches('/').to_owned(),
            http: reqwest::Client::new(),
        }
    }

    /// A client that sends `Authorization: Bearer <credential>` (an operator key or a session
    /// token) with every request. Fails on a credential that cannot be a header value.
    pub fn with_bearer(base: impl Into<String>, credential: &str) -> Result<Self, Error> {
        let mut value = reqwest::header::HeaderValue::from_str(&format!("Bearer {credential}"))
            .map_err(|_| Error::Usage("the credential is not a valid header value".into()))?;
        value.set_sensitive(true);
        let headers =
            reqwest::header::HeaderMap::from_iter([(reqwest::header::AUTHORIZATION, value)]);
        let http = reqwest::Client::builder()
            .default_headers(headers)
            .build()?;
        Ok(Self {
            base: base.into().trim_end_matches('/').to_owned(),
            http,
        })
    }

    pub async fn start(&self, agent: &str, message: &str) -> Result<StartResponse, Error> {
        let response = self
            .http
            .post(format!("{}/start", self.base))
            .json(&StartRequest {
                agent: agent.to_owned(),
                message: message.to_owned(),
                session_id: None,
            })
            .send()
            .await?;
        decode(response).await
    }

    /// The session's state, with `isExecuting` from Temporal's view of its run.
    pub async fn status(&self, session_id: &str) -> Result<SessionState, Error> {
        self.get_session("status", session_id).await
    }

    /// The session's log pinned to a stream position (see [`SnapshotResponse`]).
    pub async fn snapshot(&self, session_id: &str) -> Result<SnapshotResponse, Error> {
        self.get_session("snapshot", session_id).await
    }

    /// What the session has spent so far.
    pub async fn usage(&self, session_id: &str) -> Result<UsageResponse, Error> {
        self.get_session("usage", session_id).await
    }

    async fn get_session<T: serde::de::DeserializeOwned>(
        &self,
        route: &str,
        session_id: &str,
    ) -> Result<T, Error> {
        let response = self
            .http
            .get(format!("{}/{route}", self.base))
            .query(&[("sessionId", session_id)])
            .send()
            .await?;
        decode(response).await
    }

    /// Submits the answer to a pending client call of the session tree rooted at `session_id`.
    pub async fn submit(
        &self,
        session_id: &str,
        tool_call_id: &str,
        outcome: &ToolOutcome,
    ) -> Result<SubmitAnswer, Error> {
        let mut body = serde_json::json!({
            "kind": "client-tool-result",
            "sessionId": session_id,
            "toolCallId": tool_call_id,
        });
        match outcome {
            ToolOutcome::Result(result) => body["result"] = result.clone(),
            ToolOutcome::Error(error) => body["error"] = serde_json::to_value(error)?,
        }
        let response = self
            .http
            .post(format!("{}/submit-tool-result", self.base))
            .json(&body)
            .send()
            .await?;
        decode(response).await
    }

    /// Answers an approval-gated call: approve (optionally with edited arguments) or deny (with
    /// an optional reason).
    pub async fn submit_approval(
        &self,
        session_id: &str,
        tool_call_id: &str,
        approval_id: &str,
        decision: &ApprovalDecision,
    ) -> Result<SubmitAnswer, Error> {
        let mut body = serde_json::json!({
            "kind": "approval-response",
            "sessionId": session_id,
            "toolCallId": tool_call_id,
            "approvalId": approval_id,
            "approved": decision.approved,
        });
        if let Some(reason) = &decision.reason {
            body["reason"] = reason.clone().into();
        }
        if let Some(arguments) = &decision.arguments {
            body["arguments"] = arguments.clone();
        }
        let response = self
            .http
            .post(format!("{}/submit-tool-result", self.base))
            .json(&body)
            .send()
            .await?;
        decode(response).await
    }

    /// Continues a suspended session whose calls are all answered; the run starts a workflow of
    /// its own and the call returns at once.
    pub async fn resume(&self, session_id: &str) -> Result<ResumeResponse, Error> {
        self.resume_with(&ResumeRequest {
            session_id: session_id.to_owned(),
            mode: ResumeMode::Continue,
            message: None,
            abandon_pending: false,
            checkpoint_id: None,
        })
        .await
    }

    /// Sends the next user message of a session: drains what a suspended session has first
    /// (with `abandon_pending`, its open calls are abandoned), then one model call.
    pub async fn send_message(
        &self,
        session_id: &str,
        message: &str,
        abandon_pending: bool,
    ) -> Result<ResumeResponse, Error> {
        self.resume_with(&ResumeRequest {
            session_id: session_id.to_owned(),
            mode: ResumeMode::WithMessage,
            message: Some(message.to_owned()),
            abandon_pending,
            checkpoint_id: None,
        })
        .await
    }

    /// Rewinds a session that is not running to one of its checkpoints and goes on from there,
    /// with `message` appended if given. A checkpoint whose step suspended awaits its calls again
    /// (the answer's `workflowId` is then none) unless `abandon_pending` drains them.
    pub async fn rewind(
        &self,
        session_id: &str,
        checkpoint_id: u32,
        message: Option<&str>,
        abandon_pending: bool,
    ) -> Result<ResumeResponse, Error> {
        self.resume_with(&ResumeRequest {
            session_id: session_id.to_owned(),
            mode: ResumeMode::FromCheckpoint,
            message: message.map(str::to_owned),
            abandon_pending,
            checkpoint_id: Some(checkpoint_id),
        })
        .await
    }

    /// Stops the session's current run: `abort` fails it (`framework_cancelled`), otherwise it is
    /// interrupted.
    pub async fn stop(&self, session_id: &str, abort: bool) -> Result<StopResponse, Error> {
        let route = if abort { "abort" } else { "interrupt" };
        let response = self
            .http
            .post(format!("{}/{route}", self.base))
            .json(&SessionRequest {
                session_id: session_id.to_owned(),
            })
            .send()
            .await?;
        decode(response).await
    }

    async fn resume_with(&self, request: &ResumeRequest) -> Result<ResumeResponse, Error> {
        let response = self
            .http
            .post(format!("{}/resume", self.base))
            .json(request)
            .send()
            .await?;
        decode(response).await
    }

    /// The session's chunks after `from_sequence`, ending after the `end` chunk. A dropped
    /// connection is resumed from the last sequence received, so no chunk is lost or repeated.
    pub fn follow(
        &self,
        session_id: &str,
        from_sequence: u64,
    ) -> impl Stream<Item = Result<StreamChunk, Error>> + Send + 'static {
        let state = FollowState {
            client: self.clone(),
            session_id: session_id.to_owned(),
            after: from_sequence,
            failures: 0,
            done: false,
        };
        futures::stream::unfold(state, |mut state| async move {
            if state.done {
                return None;
            }
            let batch = state.next_batch().await;
            Some((futures::stream::iter(batch), state))
        })
        .flatten()
    }
}

const MAX_STREAM_FAILURES: u32 = 5;

struct FollowState {
    client: HttpClient,
    session_id: String,
    after: u64,
    failures: u32,
    done: bool,
}

impl FollowState {
    /// Reads one connection's worth of chunks.
    async fn next_batch(&mut self) -> Vec<Result<StreamChunk, Error>> {
        let response = self
            .client
            .http
            .get(format!("{}/sse", self.client.base))
            .query(&[
                ("sessionId", self.session_id.clone()),
                ("fromSequence", self.after.to_string()),
            ])
            .send()
            .await;
        let response = match response {
            Ok(response) if response.status().is_success() => response,
            Ok(response) => {
                self.done = true;
                return vec![Err(decode::<()>(response).await.unwrap_err())];
            }
            Err(error) => return self.broken(error.into()).await,
        };
        let mut body = response.bytes_stream();
        let mut buffer = Vec::new();
        let mut chunks = Vec::new();
        // Collect until the connection ends; yielded as one batch per connection would delay
        // output, so stop at each complete event group instead.
        loop {
            match body.next().await {
                Some(Ok(bytes)) => {
                    buffer.extend_from_slice(&bytes);
                    while let Some(end) = find_event_end(&buffer) {
                        let event: Vec<u8> = buffer.drain(..end).collect();
                        match parse_event(&event) {
                            Ok(Some(chunk)) => {
                                self.after = chunk.sequence;
                                self.failures = 0;
                                if matches!(chunk.kind, ChunkKind::End { .. }) {
                                    self.done = true;
                                }
                                chunks.push(Ok(chunk));
                            }
                            Ok(None) => {}
                            Err(error) => {
                                self.done = true;
                                chunks.push(Err(error));
                                return chunks;
                            }
                        }
                    }
                    if !chunks.is_empty() {
                        return chunks;
                    }
                }
                Some(Err(error)) => {
                    chunks.extend(self.broken(error.into()).await);
                    return chunks;
                }
                None => {
                    // The server closes the stream after `end` or when the session has ended.
                    if !self.done {
                        self.done = self.session_ended().await;
                    }
                    return chunks;
                }
            }
        }
    }

    async fn broken(&mut self, error: Error) -> Vec<Result<StreamChunk, Error>> {
        self.failures += 1;
        if self.failures >= MAX_STREAM_FAILURES {
            self.done = true;
            return vec![Err(Error::StreamLost(self.failures)), Err(error)];
        }
        tokio::time::sleep(Duration::from_millis(200 * u64::from(self.failures))).await;
        Vec::new()
    }

    async fn session_ended(&self) -> bool {
        match self.client.status(&self.session_id).await {
            Ok(state) => state.status.is_terminal() && state.last_sequence <= self.after,
            Err(_) => false,
        }
    }
}

/// Index just past the blank line ending the first complete event in `buffer`.
fn find_event_end(buffer: &[u8]) -> Option<usize> {
    buffer.windows(2).position(|w| w == b"\n\n").map(|i| i + 2)
}

/// Decodes one SSE event; comments and keep-alives give `None`.
fn parse_event(event: &[u8]) -> Result<Option<StreamChunk>, Error> {
    let text = std::str::from_utf8(event).map_err(|e| Error::MalformedEvent(e.to_string()))?;
    let mut data = String::new();
    let mut name = None;
    for line in text.lines() {
        if let Some(value) = line.strip_prefix("data:") {
            if !data.is_empty() {
                data.push('\n');
            }
            data.push_str(value.strip_prefix(' ').unwrap_or(value));
        } else if let Some(value) = line.strip_prefix("event:") {
            name = Some(value.trim().to_owned());
        }
    }
    if data.is_empty() {
        return Ok(None);
    }
    if name.as_deref() == Some("error") {
        let error: ApiError = serde_json::from_str(&data)
            .map_err(|e| Error::MalformedEvent(format!("{e}: {data}")))?;
        return Err(Error::Api(error));
    }
    serde_json::from_str(&data)
        .map(Some)
        .map_err(|e| Error::MalformedEvent(format!("{e}: {data}")))
}

async fn decode<T: serde::de::DeserializeOwned>(response: reqwest::Response) -> Result<T, Error> {
    let status = response.status();
    let body = response.text().await?;
    if status.is_success() {
        return serde_json::from_str(&body).map_err(|_| Error::Unexpected {
            status: status.as_u16(),
            body,
        });
    }
    match serde_json::from_str::<ApiError>(&body) {
        Ok(error) => Err(Error::Api(error)),
        Err(_) => Err(Error::Unexpected {
            status: status.as_u16(),
            body,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_events_are_decoded() {
        let raw = b": keep-alive\n\nid: 3\ndata: {\"sequence\":3,\"streamId\":\"st\",\"sessionId\":\"s\",\"agentId\":\"s\",\"runId\":\"r\",\"timestamp\":1,\"type\":\"step_start\",\"step\":1}\n\nid: 4\n";
        let first = find_event_end(raw).unwrap();
        assert_eq!(parse_event(&raw[..first]).unwrap(), None);
        let second = first + find_event_end(&raw[first..]).unwrap();
        let chunk = parse_event(&raw[first..second]).unwrap().unwrap();
        assert_eq!(chunk.sequence, 3);
        assert_eq!(chunk.kind, ChunkKind::StepStart { step: 1 });
        assert_eq!(find_event_end(&raw[second..]), None);
        let error = parse_event(b"event: error\ndata: {\"error\":\"gone\",\"code\":\"session_not_found\",\"retryable\":false}\n\n");
        assert!(
            matches!(error, Err(Error::Api(e)) if e.code == baton_core::ErrorCode::SessionNotFound)
        );
    }
}
