//! A thin client of the Baton server: one [`Client`] trait with every operation, implemented over
//! HTTP ([`HttpClient`]) and gRPC ([`GrpcClient`]). Both map refusals back to the same typed
//! [`ApiError`], and both follow a session's stream with automatic reconnection from the last
//! sequence received. `render` and `prompt` are the `baton` CLI's: chunks as lines, and a
//! waiting call asked at the terminal as its output schema says.

mod grpc;
mod http;
pub mod prompt;
pub mod render;

/// The request, answer and chunk types the client speaks, for callers that build bodies.
pub use baton_wire as wire;
pub use grpc::GrpcClient;
pub use http::HttpClient;

use async_trait::async_trait;
use baton_wire::{
    ApiError, StreamChunk,
    api::{
        DeleteResponse, Resume, ResumeRequest, ResumeResponse, SnapshotResponse, StartRequest,
        StartResponse, StopResponse, UsageResponse,
    },
    chunk::ChunkKind,
    fork::{ForkRequest, ForkResponse},
    message::ToolOutcome,
    search::{PendingPage, SessionSearch, SessionsPage},
    session::{ApprovalDecision, SessionState},
    submit::{SubmitAnswer, SubmitRequest},
};
use futures::{StreamExt, stream::BoxStream};
use std::time::Duration;

/// Why a client call failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The server answered with a typed error (on either transport).
    #[error(transparent)]
    Api(#[from] ApiError),
    #[error("cannot reach the Baton server")]
    Transport(#[from] reqwest::Error),
    /// A gRPC status without a Baton error body: the transport failed, not the operation.
    #[error("the gRPC call failed: {0}")]
    Grpc(Box<tonic::Status>),
    #[error("not a gRPC server address")]
    GrpcAddress(#[source] tonic::transport::Error),
    #[error("the server answered HTTP {status} without a Baton error body: {body}")]
    Unexpected { status: u16, body: String },
    #[error("malformed stream event: {0}")]
    MalformedEvent(String),
    #[error("malformed gRPC answer")]
    MalformedAnswer(#[from] baton_proto::convert::Error),
    #[error("the server closed the stream before the run ended")]
    StreamClosed,
    #[error("the stream broke {failures} times in a row; giving up")]
    StreamLost {
        failures: u32,
        #[source]
        last: Box<Error>,
    },
    #[error("cannot encode the request: {0}")]
    Encode(#[from] serde_json::Error),
    /// The client was given something it cannot use, e.g. a credential that is not a header value.
    #[error("{0}")]
    Usage(String),
}

impl From<baton_wire::sse::NotUtf8> for Error {
    fn from(error: baton_wire::sse::NotUtf8) -> Self {
        Self::MalformedEvent(error.to_string())
    }
}

impl Error {
    /// Whether following a stream may reconnect after this error: a broken connection or a
    /// refusal the server marks retryable, not a typed refusal or a malformed answer.
    fn is_transient(&self) -> bool {
        match self {
            Self::Api(error) => error.retryable,
            Self::Transport(_) | Self::Grpc(_) | Self::StreamClosed => true,
            _ => false,
        }
    }
}

/// A session's chunks, as a stream.
pub type ChunkStream = BoxStream<'static, Result<StreamChunk, Error>>;

/// Every operation of the Baton API. The required methods are the transport's; the rest build
/// their request bodies once, here, for both transports.
#[async_trait]
pub trait Client: Send + Sync {
    /// Starts a session as `request` says (agent, first message, and optionally the session's
    /// id, custom state, `userId`, `tags` and `metadata`).
    async fn start_request(&self, request: StartRequest) -> Result<StartResponse, Error>;

    /// Starts a session of `agent` with a first user message.
    async fn start(&self, agent: &str, message: &str) -> Result<StartResponse, Error> {
        self.start_request(StartRequest::new(agent, message)).await
    }

    /// The session's state, with `isExecuting` from Temporal's view of its run.
    async fn status(&self, session_id: &str) -> Result<SessionState, Error>;

    /// The session's log pinned to a stream position (see [`SnapshotResponse`]).
    async fn snapshot(&self, session_id: &str) -> Result<SnapshotResponse, Error>;

    /// What the session has spent so far.
    async fn usage(&self, session_id: &str) -> Result<UsageResponse, Error>;

    /// A page of sessions matching `search`, newest activity first (`GET /sessions`).
    async fn sessions(&self, search: &SessionSearch) -> Result<SessionsPage, Error>;

    /// A page of the calls waiting on a person (`GET /pending`).
    async fn pending(&self, search: &SessionSearch) -> Result<PendingPage, Error>;

    /// Copies a session up to a checkpoint into a new session (`POST /fork`).
    async fn fork(&self, request: &ForkRequest) -> Result<ForkResponse, Error>;

    /// Sends a `/submit-tool-result` body as it is (any JSON, so that refusals can be tried);
    /// [`Client::submit_request`] sends a typed one.
    async fn submit_body(&self, body: &serde_json::Value) -> Result<SubmitAnswer, Error>;

    /// Sends a resume request as it is: what [`Client::resume`], [`Client::send_message`] and
    /// [`Client::rewind`] build.
    async fn resume_with(&self, request: &ResumeRequest) -> Result<ResumeResponse, Error>;

    /// Stops the session's current run: `abort` fails it (`framework_cancelled`), otherwise it is
    /// interrupted.
    async fn stop(&self, session_id: &str, abort: bool) -> Result<StopResponse, Error>;

    /// Deletes the session tree rooted at `session_id` once no run works on it (one waiting on
    /// a person is interrupted first).
    async fn delete(&self, session_id: &str) -> Result<DeleteResponse, Error>;

    /// One connection's worth of the session's chunks after `from_sequence` (exclusive): ends
    /// when the server ends the stream (after the `end` chunk) or the connection breaks. A typed
    /// refusal to open the stream is the call's error.
    async fn subscribe(&self, session_id: &str, from_sequence: u64) -> Result<ChunkStream, Error>;

    /// The session's chunks after `from_sequence`, ending after the `end` chunk. A dropped
    /// connection is reopened from the last sequence received, so no chunk is lost or repeated;
    /// implementations pass a clone of themselves to [`reconnecting`].
    fn follow(&self, session_id: &str, from_sequence: u64) -> ChunkStream;

    /// Submits a typed submit body.
    async fn submit_request(&self, request: &SubmitRequest) -> Result<SubmitAnswer, Error> {
        self.submit_body(&serde_json::to_value(request)?).await
    }

    /// Submits the answer to a pending client call of the session tree rooted at `session_id`.
    async fn submit(
        &self,
        session_id: &str,
        tool_call_id: &str,
        outcome: &ToolOutcome,
    ) -> Result<SubmitAnswer, Error> {
        let request = SubmitRequest::tool_result(session_id, tool_call_id, outcome.clone());
        self.submit_request(&request).await
    }

    /// Answers an approval-gated call: approve (optionally with edited arguments) or deny (with
    /// an optional reason).
    async fn submit_approval(
        &self,
        session_id: &str,
        tool_call_id: &str,
        approval_id: &str,
        decision: &ApprovalDecision,
    ) -> Result<SubmitAnswer, Error> {
        let request =
            SubmitRequest::approval(session_id, tool_call_id, approval_id, decision.clone());
        self.submit_request(&request).await
    }

    /// Continues a suspended session whose calls are all answered; the run starts a workflow of
    /// its own and the call returns at once.
    async fn resume(&self, session_id: &str) -> Result<ResumeResponse, Error> {
        self.resume_with(&Resume::Continue.request(session_id))
            .await
    }

    /// Sends the next user message of a session: drains what a suspended session has first
    /// (with `abandon_pending`, its open calls are abandoned), then one model call.
    async fn send_message(
        &self,
        session_id: &str,
        message: &str,
        abandon_pending: bool,
    ) -> Result<ResumeResponse, Error> {
        let resume = Resume::WithMessage {
            message: message.to_owned(),
            abandon_pending,
        };
        self.resume_with(&resume.request(session_id)).await
    }

    /// Rewinds a session that is not running to one of its checkpoints and goes on from there,
    /// with `message` appended if given. A checkpoint whose step suspended awaits its calls again
    /// (the answer's `workflowId` is then none) unless `abandon_pending` drains them.
    async fn rewind(
        &self,
        session_id: &str,
        checkpoint_id: u32,
        message: Option<&str>,
        abandon_pending: bool,
    ) -> Result<ResumeResponse, Error> {
        let resume = Resume::FromCheckpoint {
            checkpoint_id,
            message: message.map(str::to_owned),
            abandon_pending,
        };
        self.resume_with(&resume.request(session_id)).await
    }
}

/// How many broken connections in a row a follow survives.
const MAX_STREAM_FAILURES: u32 = 5;

/// Follows a session over `client`'s [`Client::subscribe`], reopening the stream from the last
/// sequence received whenever it breaks or closes before the run has ended. A chunk at or below
/// that sequence (a server repeating itself after a reconnect) is skipped.
pub fn reconnecting<C: Client + 'static>(
    client: C,
    session_id: &str,
    from_sequence: u64,
) -> ChunkStream {
    let follow = Follow {
        client,
        session_id: session_id.to_owned(),
        after: from_sequence,
        failures: 0,
        ended: false,
        connection: None,
    };
    futures::stream::unfold(follow, Follow::next).boxed()
}

struct Follow<C> {
    client: C,
    session_id: String,
    after: u64,
    failures: u32,
    ended: bool,
    connection: Option<ChunkStream>,
}

impl<C: Client> Follow<C> {
    async fn next(mut self) -> Option<(Result<StreamChunk, Error>, Self)> {
        while !self.ended {
            let connection = match &mut self.connection {
                Some(connection) => connection,
                None => match self.client.subscribe(&self.session_id, self.after).await {
                    Ok(connection) => self.connection.insert(connection),
                    Err(error) => match self.broken(error).await {
                        Some(error) => return Some((Err(error), self)),
                        None => continue,
                    },
                },
            };
            let error = match connection.next().await {
                Some(Ok(chunk)) if chunk.sequence <= self.after => continue,
                Some(Ok(chunk)) => {
                    self.after = chunk.sequence;
                    self.failures = 0;
                    self.ended = matches!(chunk.kind, ChunkKind::End { .. });
                    return Some((Ok(chunk), self));
                }
                Some(Err(error)) => error,
                None if session_ended(&self.client, &self.session_id, self.after).await => {
                    self.ended = true;
                    continue;
                }
                None => Error::StreamClosed,
            };
            self.connection = None;
            if let Some(error) = self.broken(error).await {
                return Some((Err(error), self));
            }
        }
        None
    }

    /// Takes a failed connection: gives up on a permanent error or after too many failures in a
    /// row (the error to yield last), else waits a little longer each time before reconnecting.
    async fn broken(&mut self, error: Error) -> Option<Error> {
        if !error.is_transient() {
            self.ended = true;
            return Some(error);
        }
        self.failures += 1;
        if self.failures >= MAX_STREAM_FAILURES {
            self.ended = true;
            return Some(Error::StreamLost {
                failures: self.failures,
                last: Box::new(error),
            });
        }
        tokio::time::sleep(Duration::from_millis(200 * u64::from(self.failures))).await;
        None
    }
}

/// Whether the session has ended and a follower at `after` has seen all of it (the server closes
/// a stream in that case even without an `end` chunk after the follower's position).
async fn session_ended<C: Client>(client: &C, session_id: &str, after: u64) -> bool {
    match client.status(session_id).await {
        Ok(state) => state.status.is_terminal() && state.last_sequence <= after,
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_wire::{
        ErrorCode,
        chunk::{ChunkHeader, EndStatus},
    };
    use std::sync::{Arc, Mutex};

    fn chunk(sequence: u64, kind: ChunkKind) -> StreamChunk {
        StreamChunk {
            sequence,
            header: ChunkHeader {
                stream_id: "st".into(),
                session_id: "s".into(),
                agent_id: "s".into(),
                run_id: "r".into(),
                timestamp: 0,
            },
            kind,
            remote_source: None,
        }
    }

    fn step(sequence: u64) -> StreamChunk {
        chunk(sequence, ChunkKind::StepStart { step: 1 })
    }

    /// One scripted `subscribe`: a refusal, or the items of one connection.
    type Connection = Result<Vec<Result<StreamChunk, Error>>, Error>;

    /// A transport whose connections are scripted: each `subscribe` takes the next script and
    /// records the sequence it was asked to start after.
    #[derive(Clone, Default)]
    struct Scripted {
        connections: Arc<Mutex<Vec<Connection>>>,
        opened_after: Arc<Mutex<Vec<u64>>>,
    }

    #[async_trait]
    impl Client for Scripted {
        async fn start_request(&self, _: StartRequest) -> Result<StartResponse, Error> {
            unimplemented!("not used by follow")
        }
        async fn status(&self, _: &str) -> Result<SessionState, Error> {
            Err(Error::StreamClosed)
        }
        async fn sessions(&self, _: &SessionSearch) -> Result<SessionsPage, Error> {
            unimplemented!("not used by follow")
        }
        async fn pending(&self, _: &SessionSearch) -> Result<PendingPage, Error> {
            unimplemented!("not used by follow")
        }
        async fn fork(&self, _: &ForkRequest) -> Result<ForkResponse, Error> {
            unimplemented!("not used by follow")
        }
        async fn snapshot(&self, _: &str) -> Result<SnapshotResponse, Error> {
            unimplemented!("not used by follow")
        }
        async fn usage(&self, _: &str) -> Result<UsageResponse, Error> {
            unimplemented!("not used by follow")
        }
        async fn submit_body(&self, _: &serde_json::Value) -> Result<SubmitAnswer, Error> {
            unimplemented!("not used by follow")
        }
        async fn resume_with(&self, _: &ResumeRequest) -> Result<ResumeResponse, Error> {
            unimplemented!("not used by follow")
        }
        async fn stop(&self, _: &str, _: bool) -> Result<StopResponse, Error> {
            unimplemented!("not used by follow")
        }
        async fn delete(&self, _: &str) -> Result<DeleteResponse, Error> {
            unimplemented!("not used by follow")
        }
        async fn subscribe(&self, _: &str, from_sequence: u64) -> Result<ChunkStream, Error> {
            self.opened_after.lock().unwrap().push(from_sequence);
            let next = self.connections.lock().unwrap().remove(0);
            next.map(|items| futures::stream::iter(items).boxed())
        }
        fn follow(&self, session_id: &str, from_sequence: u64) -> ChunkStream {
            reconnecting(self.clone(), session_id, from_sequence)
        }
    }

    #[tokio::test]
    async fn follow_reopens_from_the_last_sequence_and_skips_repeats() {
        let client = Scripted::default();
        let end = chunk(
            4,
            ChunkKind::End {
                status: EndStatus::Completed,
                output: Some("done".into()),
                error: None,
                usage: Default::default(),
                state: None,
            },
        );
        *client.connections.lock().unwrap() = vec![
            Ok(vec![
                Ok(step(1)),
                Ok(step(2)),
                Err(Error::Grpc(Box::new(tonic::Status::unavailable("reset")))),
            ]),
            Err(Error::Grpc(Box::new(tonic::Status::unavailable("refused")))),
            Ok(vec![Ok(step(2)), Ok(step(3)), Ok(end.clone()), Ok(step(5))]),
        ];
        let chunks: Vec<StreamChunk> = client
            .follow("s", 0)
            .map(|chunk| chunk.unwrap())
            .collect()
            .await;
        assert_eq!(chunks, vec![step(1), step(2), step(3), end]);
        assert_eq!(*client.opened_after.lock().unwrap(), vec![0, 2, 2]);
    }

    #[tokio::test]
    async fn follow_ends_with_a_typed_refusal_without_retrying() {
        let client = Scripted::default();
        let missing = ApiError::new(ErrorCode::SessionNotFound, "no session s");
        *client.connections.lock().unwrap() = vec![Err(Error::Api(missing.clone()))];
        let results: Vec<Result<StreamChunk, Error>> = client.follow("s", 7).collect().await;
        assert_eq!(results.len(), 1);
        assert!(matches!(&results[0], Err(Error::Api(error)) if *error == missing));
        assert_eq!(*client.opened_after.lock().unwrap(), vec![7]);
    }
}
