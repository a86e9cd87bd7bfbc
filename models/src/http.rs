//! What both adapters share on the wire: one streamed POST, its status and `retry-after`
//! classified into a typed model error, and the body fed through the SSE decoder into the
//! provider's stream state until its end marker.

use crate::ApiKey;
use baton_core::model::{Delta, Error, ErrorKind, ModelTurn};
use baton_wire::sse;
use futures::StreamExt;
use reqwest::{StatusCode, header::HeaderMap};
use std::time::{Duration, SystemTime};
use tokio::sync::mpsc;

/// Longest wait a `retry-after` may impose on the next attempt; a longer one is cut to this.
const RETRY_AFTER_CAP: Duration = Duration::from_secs(300);
/// How much of an error body is read and kept.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// What a provider's stream state does with the events of one answer.
pub trait StreamState {
    /// Takes one event; returns `true` once the provider's end marker has arrived.
    fn on_event(
        &mut self,
        event: sse::Event<'_>,
        deltas: &mpsc::UnboundedSender<Delta>,
    ) -> Result<bool, Error>;

    /// The turn, once the end marker has arrived.
    fn finish(self) -> Result<ModelTurn, Error>;
}

/// A response body on its way through the SSE decoder into a provider's stream state.
pub(crate) struct BodyDecoder<S> {
    sse: sse::Decoder,
    state: S,
    ended: bool,
}

impl<S: StreamState> BodyDecoder<S> {
    pub(crate) fn new(state: S) -> Self {
        Self {
            sse: sse::Decoder::new(),
            state,
            ended: false,
        }
    }

    /// Takes one read of the body; returns `true` once the end marker has arrived.
    pub(crate) fn feed(
        &mut self,
        bytes: &[u8],
        deltas: &mpsc::UnboundedSender<Delta>,
    ) -> Result<bool, Error> {
        let Self { sse, state, ended } = self;
        sse.feed::<Error>(bytes, &mut |event| {
            if !*ended {
                *ended = state.on_event(event, deltas)?;
            }
            Ok(())
        })?;
        Ok(*ended)
    }

    /// The turn, at the end marker or where the body stopped: a body that stopped before its
    /// end marker was cut, whatever it held.
    pub(crate) fn finish(self) -> Result<ModelTurn, Error> {
        if !self.ended {
            let what = if self.sse.has_partial_event() {
                "the stream ended in the middle of an event"
            } else {
                "the stream ended before its end marker"
            };
            return Err(Error::new(ErrorKind::Truncated, what));
        }
        self.state.finish()
    }
}

/// An error body as a provider sends it, reduced to what classification needs.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct ProviderError {
    /// The provider's error type (`invalid_request_error`, `overloaded_error`, …).
    pub kind: String,
    /// OpenAI's `code`, Anthropic's `details.error_code`.
    pub code: String,
    pub message: String,
}

impl ProviderError {
    /// The error an error body describes, read by the provider's `parse`; a body that is not
    /// JSON (a proxy's HTML page) becomes the message, shortened.
    pub(crate) fn from_body(body: &[u8], parse: fn(&serde_json::Value) -> Self) -> Self {
        match serde_json::from_slice(body) {
            Ok(value) => parse(&value),
            Err(_) => Self {
                message: String::from_utf8_lossy(body).chars().take(500).collect(),
                ..Self::default()
            },
        }
    }
}

/// One configured HTTP endpoint of a provider.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    pub client: reqwest::Client,
    pub url: String,
    pub headers: HeaderMap,
    /// Bound on the wait for the response head and for each later read of the body.
    pub timeout: Duration,
    /// To scrub from any message that echoes it.
    pub api_key: Option<ApiKey>,
}

impl Endpoint {
    /// POSTs `body` and streams the answer through `state`. `classify` turns an error status
    /// and its body into a typed error.
    pub(crate) async fn stream<S: StreamState>(
        &self,
        body: &serde_json::Value,
        state: S,
        deltas: &mpsc::UnboundedSender<Delta>,
        classify: fn(StatusCode, &[u8]) -> Error,
    ) -> Result<ModelTurn, Error> {
        let body = serde_json::to_vec(body)
            .map_err(|e| Error::permanent(format!("cannot encode the request: {e}")))?;
        let request = self
            .client
            .post(&self.url)
            .headers(self.headers.clone())
            .body(body)
            .send();
        let response = tokio::time::timeout(self.timeout, request)
            .await
            .map_err(|_| self.quiet_for_too_long("the response head"))?
            .map_err(|e| self.transport_error(&e))?;
        let status = response.status();
        if !status.is_success() {
            let retry_after = retry_after(response.headers(), SystemTime::now());
            let mut body = Vec::new();
            let mut chunks = response.bytes_stream();
            // The error body is best effort: a status alone still classifies the failure.
            while let Ok(Some(Ok(chunk))) = tokio::time::timeout(self.timeout, chunks.next()).await
            {
                body.extend_from_slice(&chunk);
                if body.len() >= ERROR_BODY_LIMIT {
                    body.truncate(ERROR_BODY_LIMIT);
                    break;
                }
            }
            let mut error = classify(status, &body).with_retry_after(retry_after);
            error.message = self.scrub(error.message);
            return Err(error);
        }

        let mut body = BodyDecoder::new(state);
        let mut chunks = response.bytes_stream();
        loop {
            let next = tokio::time::timeout(self.timeout, chunks.next())
                .await
                .map_err(|_| self.quiet_for_too_long("the next event"))?;
            let Some(chunk) = next else {
                return body.finish();
            };
            let chunk = chunk.map_err(|e| self.transport_error(&e))?;
            // Whatever follows the end marker is not read: the turn is complete.
            if body.feed(&chunk, deltas)? {
                return body.finish();
            }
        }
    }

    fn quiet_for_too_long(&self, waiting_for: &str) -> Error {
        Error::new(
            ErrorKind::Network,
            format!(
                "no answer from {} within {:?} while waiting for {waiting_for}",
                self.url, self.timeout
            ),
        )
    }

    fn transport_error(&self, error: &reqwest::Error) -> Error {
        // A request that cannot even be built (a bad URL) fails the same way every time.
        let kind = if error.is_builder() {
            ErrorKind::Failed
        } else {
            ErrorKind::Network
        };
        let mut message = format!("{} {}: {error}", "POST", self.url);
        let mut source = std::error::Error::source(error);
        while let Some(cause) = source {
            message.push_str(&format!(": {cause}"));
            source = cause.source();
        }
        Error::new(kind, self.scrub(message))
    }

    fn scrub(&self, message: String) -> String {
        match &self.api_key {
            Some(key) if !key.0.is_empty() && message.contains(&key.0) => {
                message.replace(&key.0, "[api key]")
            }
            _ => message,
        }
    }
}

/// The kind an HTTP error status means before the body is read: throttling and server trouble
/// are worth retrying, the rest is final.
pub(crate) fn kind_of_status(status: StatusCode) -> ErrorKind {
    match status.as_u16() {
        401 | 403 => ErrorKind::Authentication,
        429 => ErrorKind::RateLimited,
        // Request time-out and conflict are retried by the providers' own SDKs too.
        408 | 409 => ErrorKind::Unavailable,
        500..=599 => ErrorKind::Unavailable,
        _ => ErrorKind::Rejected,
    }
}

/// The message of an error the provider sent, with its status and type.
pub(crate) fn describe(status: Option<StatusCode>, error: &ProviderError) -> String {
    let mut message = String::new();
    if let Some(status) = status {
        message.push_str(&format!("HTTP {}", status.as_u16()));
    }
    for part in [&error.kind, &error.code] {
        if !part.is_empty() {
            if !message.is_empty() {
                message.push(' ');
            }
            message.push_str(part);
        }
    }
    if !error.message.is_empty() {
        message.push_str(": ");
        message.push_str(&error.message);
    }
    message
}

/// The wait a response asks for: `retry-after-ms` (OpenAI), else `retry-after` in seconds or as
/// an HTTP date. Capped at [`RETRY_AFTER_CAP`].
pub(crate) fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    let wait = if let Some(millis) = header("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        seconds(millis / 1000.0)
    } else {
        let value = header("retry-after")?;
        match value.parse::<f64>() {
            Ok(secs) => seconds(secs),
            Err(_) => httpdate::parse_http_date(value)
                .ok()
                .map(|at| at.duration_since(now).unwrap_or(Duration::ZERO)),
        }
    }?;
    Some(wait.min(RETRY_AFTER_CAP))
}

fn seconds(value: f64) -> Option<Duration> {
    (value.is_finite() && value >= 0.0).then(|| Duration::from_secs_f64(value.min(1e9)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn retry_after_reads_milliseconds_seconds_and_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let with = |pairs: &[(&'static str, &str)]| {
            let mut headers = HeaderMap::new();
            for (name, value) in pairs {
                headers.insert(*name, HeaderValue::from_str(value).unwrap());
            }
            retry_after(&headers, now)
        };
        assert_eq!(with(&[]), None);
        assert_eq!(with(&[("retry-after", "7")]), Some(Duration::from_secs(7)));
        assert_eq!(
            with(&[("retry-after", "0.5"), ("retry-after-ms", "250")]),
            Some(Duration::from_millis(250))
        );
        assert_eq!(
            with(&[("retry-after", "Tue, 14 Nov 2023 22:13:40 GMT")]),
            Some(Duration::from_secs(20))
        );
        assert_eq!(
            with(&[("retry-after", "Tue, 14 Nov 2000 22:13:40 GMT")]),
            Some(Duration::ZERO)
        );
        assert_eq!(with(&[("retry-after", "86400")]), Some(RETRY_AFTER_CAP));
        assert_eq!(with(&[("retry-after", "soon")]), None);
        assert_eq!(with(&[("retry-after", "-3")]), None);
    }

    #[test]
    fn statuses_are_classified() {
        let kind = |code| kind_of_status(StatusCode::from_u16(code).unwrap());
        assert_eq!(kind(400), ErrorKind::Rejected);
        assert_eq!(kind(401), ErrorKind::Authentication);
        assert_eq!(kind(403), ErrorKind::Authentication);
        assert_eq!(kind(404), ErrorKind::Rejected);
        assert_eq!(kind(429), ErrorKind::RateLimited);
        assert_eq!(kind(500), ErrorKind::Unavailable);
        assert_eq!(kind(503), ErrorKind::Unavailable);
        assert_eq!(kind(529), ErrorKind::Unavailable);
    }
}
