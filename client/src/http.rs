//! The HTTP transport: [`HttpClient`] speaks the JSON routes and parses the SSE stream.

use crate::{ChunkStream, Client, Error, reconnecting};
use async_trait::async_trait;
use baton_core::{
    ApiError, StreamChunk,
    api::{
        ResumeRequest, ResumeResponse, SessionRequest, SnapshotResponse, StartRequest,
        StartResponse, StopResponse, UsageResponse,
    },
    store::SessionState,
    submit::SubmitAnswer,
};
use futures::{StreamExt, stream::BoxStream};

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

    async fn post<T: serde::de::DeserializeOwned>(
        &self,
        route: &str,
        body: &impl serde::Serialize,
    ) -> Result<T, Error> {
        let response = self
            .http
            .post(format!("{}/{route}", self.base))
            .json(body)
            .send()
            .await?;
        decode(response).await
    }
}

#[async_trait]
impl Client for HttpClient {
    async fn start(&self, agent: &str, message: &str) -> Result<StartResponse, Error> {
        let request = StartRequest {
            agent: agent.to_owned(),
            message: message.to_owned(),
            session_id: None,
        };
        self.post("start", &request).await
    }

    async fn status(&self, session_id: &str) -> Result<SessionState, Error> {
        self.get_session("status", session_id).await
    }

    async fn snapshot(&self, session_id: &str) -> Result<SnapshotResponse, Error> {
        self.get_session("snapshot", session_id).await
    }

    async fn usage(&self, session_id: &str) -> Result<UsageResponse, Error> {
        self.get_session("usage", session_id).await
    }

    async fn submit_body(&self, body: &serde_json::Value) -> Result<SubmitAnswer, Error> {
        self.post("submit-tool-result", body).await
    }

    async fn resume_with(&self, request: &ResumeRequest) -> Result<ResumeResponse, Error> {
        self.post("resume", request).await
    }

    async fn stop(&self, session_id: &str, abort: bool) -> Result<StopResponse, Error> {
        let route = if abort { "abort" } else { "interrupt" };
        let request = SessionRequest {
            session_id: session_id.to_owned(),
        };
        self.post(route, &request).await
    }

    /// One `GET /sse` connection, its events decoded as they arrive.
    async fn subscribe(&self, session_id: &str, from_sequence: u64) -> Result<ChunkStream, Error> {
        let response = self
            .http
            .get(format!("{}/sse", self.base))
            .query(&[
                ("sessionId", session_id.to_owned()),
                ("fromSequence", from_sequence.to_string()),
            ])
            .send()
            .await?;
        if !response.status().is_success() {
            return Err(refusal(response).await);
        }
        let events = SseEvents {
            body: response.bytes_stream().boxed(),
            buffer: Vec::new(),
            closed: false,
        };
        Ok(futures::stream::unfold(events, SseEvents::next).boxed())
    }

    fn follow(&self, session_id: &str, from_sequence: u64) -> ChunkStream {
        reconnecting(self.clone(), session_id, from_sequence)
    }
}

/// The events of one SSE response body.
struct SseEvents {
    body: BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buffer: Vec<u8>,
    closed: bool,
}

impl SseEvents {
    /// The next chunk (or `error` event) of the body; comments and keep-alives are skipped.
    async fn next(mut self) -> Option<(Result<StreamChunk, Error>, Self)> {
        loop {
            if let Some(end) = find_event_end(&self.buffer) {
                let event: Vec<u8> = self.buffer.drain(..end).collect();
                match parse_event(&event) {
                    Ok(None) => continue,
                    Ok(Some(chunk)) => return Some((Ok(chunk), self)),
                    Err(error) => return Some((Err(error), self)),
                }
            }
            if self.closed {
                return None;
            }
            match self.body.next().await {
                Some(Ok(bytes)) => self.buffer.extend_from_slice(&bytes),
                Some(Err(error)) => {
                    self.closed = true;
                    return Some((Err(error.into()), self));
                }
                None => self.closed = true,
            }
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
    if !response.status().is_success() {
        return Err(refusal(response).await);
    }
    let status = response.status().as_u16();
    let body = response.text().await?;
    serde_json::from_str(&body).map_err(|_| Error::Unexpected { status, body })
}

/// The error of a response that is not a success: its typed body, or what it was instead.
async fn refusal(response: reqwest::Response) -> Error {
    let status = response.status().as_u16();
    let body = match response.text().await {
        Ok(body) => body,
        Err(error) => return error.into(),
    };
    match serde_json::from_str::<ApiError>(&body) {
        Ok(error) => Error::Api(error),
        Err(_) => Error::Unexpected { status, body },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_core::ChunkKind;

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
