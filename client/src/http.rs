//! The HTTP transport: [`HttpClient`] speaks the JSON routes and parses the SSE stream.

use crate::{ChunkStream, Client, Error, reconnecting};
use async_trait::async_trait;
use baton_wire::{
    ApiError, StreamChunk,
    api::{
        DeleteResponse, ResumeRequest, ResumeResponse, SessionRequest, SnapshotResponse,
        StartRequest, StartResponse, StopResponse, UsageResponse,
    },
    fork::{ForkRequest, ForkResponse},
    search::{PendingPage, SessionSearch, SessionsPage},
    session::SessionState,
    sse,
    submit::SubmitAnswer,
};
use futures::{StreamExt, stream::BoxStream};
use std::collections::VecDeque;

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

    async fn get_search<T: serde::de::DeserializeOwned>(
        &self,
        route: &str,
        search: &SessionSearch,
    ) -> Result<T, Error> {
        let response = self
            .http
            .get(format!("{}/{route}", self.base))
            .query(&search.to_query_pairs())
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
    async fn start_request(&self, request: StartRequest) -> Result<StartResponse, Error> {
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

    async fn sessions(&self, search: &SessionSearch) -> Result<SessionsPage, Error> {
        self.get_search("sessions", search).await
    }

    async fn pending(&self, search: &SessionSearch) -> Result<PendingPage, Error> {
        self.get_search("pending", search).await
    }

    async fn fork(&self, request: &ForkRequest) -> Result<ForkResponse, Error> {
        self.post("fork", request).await
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

    async fn delete(&self, session_id: &str) -> Result<DeleteResponse, Error> {
        let request = SessionRequest {
            session_id: session_id.to_owned(),
        };
        self.post("delete", &request).await
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
            decoder: sse::Decoder::new(),
            decoded: VecDeque::new(),
            closed: false,
        };
        Ok(futures::stream::unfold(events, SseEvents::next).boxed())
    }

    fn follow(&self, session_id: &str, from_sequence: u64) -> ChunkStream {
        reconnecting(self.clone(), session_id, from_sequence)
    }
}

/// The events of one SSE response body, cut by the SSE decoder the model adapters use too.
struct SseEvents {
    body: BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    decoder: sse::Decoder,
    /// Events decoded from the reads so far and not yet handed out.
    decoded: VecDeque<Result<StreamChunk, Error>>,
    closed: bool,
}

impl SseEvents {
    /// The next chunk (or `error` event) of the body; comments and keep-alives are skipped.
    async fn next(mut self) -> Option<(Result<StreamChunk, Error>, Self)> {
        loop {
            if let Some(event) = self.decoded.pop_front() {
                return Some((event, self));
            }
            if self.closed {
                return None;
            }
            match self.body.next().await {
                Some(Ok(bytes)) => {
                    let Self {
                        decoder, decoded, ..
                    } = &mut self;
                    let fed = decoder.feed::<Error>(&bytes, &mut |event| {
                        decoded.push_back(decode_event(event));
                        Ok(())
                    });
                    if let Err(error) = fed {
                        self.closed = true;
                        return Some((Err(error), self));
                    }
                }
                Some(Err(error)) => {
                    self.closed = true;
                    return Some((Err(error.into()), self));
                }
                None => self.closed = true,
            }
        }
    }
}

/// Decodes one SSE event of `/sse`: a chunk, or the server's typed `error` event.
fn decode_event(event: sse::Event<'_>) -> Result<StreamChunk, Error> {
    let malformed = |e: serde_json::Error| Error::MalformedEvent(format!("{e}: {}", event.data));
    if event.event == "error" {
        let error: ApiError = serde_json::from_str(event.data).map_err(malformed)?;
        return Err(Error::Api(error));
    }
    serde_json::from_str(event.data).map_err(malformed)
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
    use baton_wire::ChunkKind;

    fn decode_all(raw: &[u8]) -> Vec<Result<StreamChunk, Error>> {
        let mut decoded = Vec::new();
        sse::Decoder::new()
            .feed::<Error>(raw, &mut |event| {
                decoded.push(decode_event(event));
                Ok(())
            })
            .unwrap();
        decoded
    }

    #[test]
    fn sse_events_are_decoded() {
        let chunk = "{\"sequence\":3,\"streamId\":\"st\",\"sessionId\":\"s\",\"agentId\":\"s\",\"runId\":\"r\",\"timestamp\":1,\"type\":\"step_start\",\"step\":1}";
        let error = "{\"error\":\"gone\",\"code\":\"session_not_found\",\"retryable\":false}";
        // LF and CRLF framing, a comment, an unfinished event at the end.
        for raw in [
            format!(
                ": keep-alive\n\nid: 3\ndata: {chunk}\n\nevent: error\ndata: {error}\n\nid: 4\n"
            ),
            format!(
                ": keep-alive\r\n\r\nid: 3\r\ndata: {chunk}\r\n\r\nevent: error\r\ndata: {error}\r\n\r\nid: 4\r\n"
            ),
        ] {
            let mut decoded = decode_all(raw.as_bytes()).into_iter();
            let first = decoded.next().unwrap().unwrap();
            assert_eq!(first.sequence, 3);
            assert_eq!(first.kind, ChunkKind::StepStart { step: 1 });
            assert!(matches!(
                decoded.next(),
                Some(Err(Error::Api(e))) if e.code == baton_wire::ErrorCode::SessionNotFound
            ));
            assert!(decoded.next().is_none(), "{raw:?}");
        }
    }
}
