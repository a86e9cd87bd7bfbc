//! The gRPC service `baton.v1.Baton`: the HTTP API's operations over gRPC. Every method
//! authenticates the `authorization` metadata as the HTTP API does its header, checks what its
//! HTTP route checks, in the same order, and calls the same operation (`crate::ops`), so both
//! transports accept, refuse and answer alike; refusals become statuses through the one error
//! table.

use crate::{
    auth::{Auth, Principal, Surface},
    metrics::grpc::GrpcMetricsLayer,
    ops::{
        self, MAX_MESSAGE_BYTES, checked_body_size, checked_json_depth, checked_start,
        checked_submit, fork_session, list_pending, list_sessions, refused_with_reason,
        session_snapshot, session_status, session_usage,
    },
    state::AppState,
    stream::Credential,
};
use baton_core::{
    ApiError, ErrorCode,
    api::{ResumeRequest, StartRequest},
    escape::bounded,
    search::SessionSearch,
    store::StopKind,
};
use baton_proto::{
    convert::status_from_api_error,
    v1::{self, baton_server},
};
use futures::{Stream, StreamExt, stream};
use std::pin::Pin;
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status};

mod connections;

/// Room for the protobuf framing around the largest body a request may carry, so that the
/// service's own size checks answer (typed) before tonic's decoding limit does.
const FRAMING_SLACK_BYTES: usize = 64 * 1024;

/// Why the gRPC service did not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "refusing to serve the Baton gRPC service without authentication: configure API keys \
         (--api-key) or pass --allow-unauthenticated"
    )]
    NoAuthConfigured,
    #[error("the gRPC service failed")]
    Transport(#[from] tonic::transport::Error),
}

/// Serves `baton.v1.Baton` on `listener` until `shutdown` is cancelled. Open `Subscribe` streams
/// end then too (cleanly: a client reconnects from its last sequence), so the server drains.
/// At most `--max-grpc-connections` connections are open; one past it gets `server_busy`.
/// Fail-closed like the HTTP API: without an auth configuration it does not start.
pub async fn serve_grpc(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: CancellationToken,
) -> Result<(), Error> {
    match state.options.auth {
        Auth::Unset => return Err(Error::NoAuthConfigured),
        Auth::AllowUnauthenticated => tracing::warn!(
            "the Baton gRPC service is serving WITHOUT authentication (--allow-unauthenticated): \
             anyone who reaches it can start, read and steer sessions"
        ),
        Auth::Builtin(_) | Auth::Custom(_) => {}
    }
    let largest_body = state
        .options
        .submit_limits
        .request_body_cap()
        .max(MAX_MESSAGE_BYTES);
    let metrics = GrpcMetricsLayer::new(state.metrics.clone());
    let limits = state.options.connection_limits;
    let service = baton_server::BatonServer::new(GrpcService::new(state, shutdown.clone()))
        .max_decoding_message_size(largest_body + FRAMING_SLACK_BYTES);
    let incoming = connections::capped_incoming(
        listener,
        limits.max_grpc_connections,
        limits.max_connections_per_peer,
        limits.header_read_timeout,
    );
    tonic::transport::Server::builder()
        .layer(metrics)
        .add_service(service)
        .serve_with_incoming_shutdown(incoming, shutdown.cancelled_owned())
        .await?;
    Ok(())
}

/// The service: the server's state, and the token that ends open streams on shutdown.
pub struct GrpcService {
    state: AppState,
    shutdown: CancellationToken,
}

impl GrpcService {
    /// For a binary that builds its own tonic server (e.g. with interceptors) instead of calling
    /// [`serve_grpc`]: wrap it in `baton_server::BatonServer`.
    pub fn new(state: AppState, shutdown: CancellationToken) -> Self {
        Self { state, shutdown }
    }

    /// Who sent the request, from its `authorization` metadata, or `unauthenticated`.
    async fn principal<T>(&self, request: &Request<T>) -> Result<Principal, Status> {
        let headers = request.metadata().clone().into_headers();
        self.state
            .authenticate(&headers, Surface::Api, "grpc")
            .await
            .map_err(refused)
    }

    /// The principal of a request and the session it names.
    async fn session_of(
        &self,
        request: Request<v1::SessionRequest>,
    ) -> Result<(Principal, String), Status> {
        let principal = self.principal(&request).await?;
        Ok((principal, request.into_inner().session_id))
    }

    async fn stop(
        &self,
        request: Request<v1::SessionRequest>,
        kind: StopKind,
    ) -> Result<Response<v1::StopResponse>, Status> {
        let (principal, session_id) = self.session_of(request).await?;
        let stopped = ops::stop(&self.state, &principal, &session_id, kind).await;
        Ok(Response::new(stopped.map_err(refused)?.into()))
    }
}

/// A refusal as a gRPC status (see [`status_from_api_error`]).
fn refused(error: ApiError) -> Status {
    if error.code.presentation().http_status >= 500 {
        tracing::error!(code = %error.code, error = %bounded(&error.error), "gRPC request failed");
    } else {
        tracing::debug!(code = %error.code, error = %bounded(&error.error), "gRPC request refused");
    }
    status_from_api_error(&error)
}

/// A request field the API does not have, refused as the HTTP API refuses a bad JSON body: a
/// fixed message, the field only in verbose answers.
fn malformed(verbose: bool) -> impl Fn(baton_proto::convert::Error) -> Status {
    move |error| {
        refused(refused_with_reason(
            ErrorCode::ValidationError,
            "the request is not a valid request for this method",
            error,
            verbose,
        ))
    }
}

type ChunkStream = Pin<Box<dyn Stream<Item = Result<v1::Chunk, Status>> + Send>>;

#[tonic::async_trait]
impl baton_server::Baton for GrpcService {
    async fn start(
        &self,
        request: Request<v1::StartRequest>,
    ) -> Result<Response<v1::StartResponse>, Status> {
        let principal = self.principal(&request).await?;
        let request = StartRequest::try_from(request.into_inner())
            .map_err(malformed(self.state.options.verbose_errors))?;
        let started = checked_start(&self.state, &principal, request).await;
        Ok(Response::new(started.map_err(refused)?.into()))
    }

    async fn resume(
        &self,
        request: Request<v1::ResumeRequest>,
    ) -> Result<Response<v1::ResumeResponse>, Status> {
        let principal = self.principal(&request).await?;
        let request = ResumeRequest::try_from(request.into_inner())
            .map_err(malformed(self.state.options.verbose_errors))?;
        let resumed = ops::resume(&self.state, &principal, request).await;
        Ok(Response::new(resumed.map_err(refused)?.into()))
    }

    /// The body is the HTTP route's JSON, bounded by the same cap and depth, parsed by the same
    /// code and counted against the same rate limit.
    async fn submit_tool_result(
        &self,
        request: Request<v1::SubmitToolResultRequest>,
    ) -> Result<Response<v1::SubmitToolResultResponse>, Status> {
        let principal = self.principal(&request).await?;
        let body = request.into_inner().body_json;
        let cap = self.state.options.submit_limits.request_body_cap();
        checked_body_size(body.len(), cap).map_err(refused)?;
        checked_json_depth(body.as_bytes()).map_err(refused)?;
        let answer = checked_submit(&self.state, &principal, body.as_bytes())
            .await
            .map_err(refused)?;
        Ok(Response::new(answer.into()))
    }

    async fn interrupt(
        &self,
        request: Request<v1::SessionRequest>,
    ) -> Result<Response<v1::StopResponse>, Status> {
        self.stop(request, StopKind::Interrupt).await
    }

    async fn abort(
        &self,
        request: Request<v1::SessionRequest>,
    ) -> Result<Response<v1::StopResponse>, Status> {
        self.stop(request, StopKind::Abort).await
    }

    async fn delete(
        &self,
        request: Request<v1::SessionRequest>,
    ) -> Result<Response<v1::DeleteResponse>, Status> {
        let principal = self.principal(&request).await?;
        let session_id = request.into_inner().session_id;
        let deleted = crate::ops::delete(&self.state, &principal, &session_id)
            .await
            .map_err(refused)?;
        Ok(Response::new(deleted.into()))
    }

    async fn status(
        &self,
        request: Request<v1::StatusRequest>,
    ) -> Result<Response<v1::SessionStatus>, Status> {
        let principal = self.principal(&request).await?;
        let session_id = request.into_inner().session_id;
        let session = session_status(&self.state, &principal, &session_id)
            .await
            .map_err(refused)?;
        Ok(Response::new(session.into()))
    }

    async fn snapshot(
        &self,
        request: Request<v1::SessionRequest>,
    ) -> Result<Response<v1::SnapshotResponse>, Status> {
        let (principal, session_id) = self.session_of(request).await?;
        let snapshot = session_snapshot(&self.state, &principal, &session_id)
            .await
            .map_err(refused)?;
        Ok(Response::new(snapshot.into()))
    }

    async fn usage(
        &self,
        request: Request<v1::SessionRequest>,
    ) -> Result<Response<v1::UsageResponse>, Status> {
        let (principal, session_id) = self.session_of(request).await?;
        let usage = session_usage(&self.state, &principal, &session_id)
            .await
            .map_err(refused)?;
        Ok(Response::new(usage.into()))
    }

    async fn list_sessions(
        &self,
        request: Request<v1::SearchRequest>,
    ) -> Result<Response<v1::ListSessionsResponse>, Status> {
        let principal = self.principal(&request).await?;
        let search = SessionSearch::try_from(request.into_inner())
            .map_err(malformed(self.state.options.verbose_errors))?;
        let page = list_sessions(&self.state, &principal, &search)
            .await
            .map_err(refused)?;
        Ok(Response::new(page.into()))
    }

    async fn list_pending(
        &self,
        request: Request<v1::SearchRequest>,
    ) -> Result<Response<v1::ListPendingResponse>, Status> {
        let principal = self.principal(&request).await?;
        let search = SessionSearch::try_from(request.into_inner())
            .map_err(malformed(self.state.options.verbose_errors))?;
        let page = list_pending(&self.state, &principal, &search)
            .await
            .map_err(refused)?;
        Ok(Response::new(page.into()))
    }

    async fn fork(
        &self,
        request: Request<v1::ForkRequest>,
    ) -> Result<Response<v1::ForkResponse>, Status> {
        let principal = self.principal(&request).await?;
        let request = baton_core::fork::ForkRequest::from(request.into_inner());
        let fork = fork_session(&self.state, &principal, &request)
            .await
            .map_err(refused)?;
        Ok(Response::new(fork.into()))
    }

    type SubscribeStream = ChunkStream;

    /// Refuses an unknown session before the stream opens. The stream is the SSE follower's
    /// (`crate::stream::Follow`: the session's shared feed, `TRUNCATED` for a position no longer
    /// kept); an error mid-stream ends it with its status.
    async fn subscribe(
        &self,
        request: Request<v1::SubscribeRequest>,
    ) -> Result<Response<ChunkStream>, Status> {
        let principal = self.principal(&request).await?;
        let credential = Credential::of(&request.metadata().clone().into_headers());
        let request = request.into_inner();
        let follow = ops::follow(
            &self.state,
            &principal,
            &credential,
            &request.session_id,
            request.from_sequence,
        )
        .await
        .map_err(refused)?;
        let chunks = stream::unfold(follow, |mut follow| async move {
            let items: Vec<Result<v1::Chunk, Status>> = match follow.next_chunks().await? {
                Ok(chunks) => chunks
                    .iter()
                    .map(|chunk| Ok(v1::Chunk::from(chunk)))
                    .collect(),
                Err(error) => vec![Err(refused(error))],
            };
            Some((stream::iter(items), follow))
        })
        .flatten()
        .take_until(self.shutdown.clone().cancelled_owned());
        Ok(Response::new(Box::pin(chunks)))
    }
}
