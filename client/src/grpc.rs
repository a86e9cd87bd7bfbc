//! The gRPC transport: [`GrpcClient`] calls the `baton.v1.Baton` service and converts its answers
//! back to the core types, checked.

use crate::{ChunkStream, Client, Error, reconnecting};
use async_trait::async_trait;
use baton_proto::{
    convert::api_error_from_status,
    v1::{self, baton_client::BatonClient},
};
use baton_wire::{
    StreamChunk,
    api::{
        DeleteResponse, ResumeRequest, ResumeResponse, SnapshotResponse, StartRequest,
        StartResponse, StopResponse, UsageResponse,
    },
    fork::{ForkRequest, ForkResponse},
    search::{PendingPage, SessionSearch, SessionsPage},
    session::SessionState,
    submit::SubmitAnswer,
};
use futures::StreamExt;
use tonic::{
    metadata::AsciiMetadataValue,
    transport::{Channel, Endpoint},
};

/// Largest answer or chunk the client decodes. tonic's default (4 MiB) is below what a server
/// with a raised `--max-result-bytes` may stream in one chunk.
const MAX_ANSWER_BYTES: usize = 64 << 20;

/// gRPC client of one Baton server. Cheap to clone (the connection is shared).
#[derive(Debug, Clone)]
pub struct GrpcClient {
    service: BatonClient<Channel>,
    /// `Bearer <credential>`, sent as `authorization` metadata with every call.
    authorization: Option<AsciiMetadataValue>,
}

/// An `https://` endpoint checks the server's certificate against the web PKI's roots.
#[cfg(feature = "tls")]
fn with_tls(endpoint: Endpoint) -> Result<Endpoint, Error> {
    if endpoint.uri().scheme_str() != Some("https") {
        return Ok(endpoint);
    }
    let config = tonic::transport::ClientTlsConfig::new().with_webpki_roots();
    endpoint.tls_config(config).map_err(Error::GrpcAddress)
}

/// Without the `tls` feature an `https://` address fails on its first call.
#[cfg(not(feature = "tls"))]
fn with_tls(endpoint: Endpoint) -> Result<Endpoint, Error> {
    Ok(endpoint)
}

impl GrpcClient {
    /// `address` is the server's gRPC address: `http://127.0.0.1:50051`, `grpc://127.0.0.1:50051`
    /// or `127.0.0.1:50051`. The connection is made on the first call (and remade after it
    /// breaks), so an unreachable server shows as that call's error. Needs a Tokio runtime.
    pub fn new(address: &str) -> Result<Self, Error> {
        let uri = match address.split_once("://") {
            Some(("grpc", rest)) => format!("http://{rest}"),
            Some(_) => address.to_owned(),
            None => format!("http://{address}"),
        };
        let endpoint = Endpoint::from_shared(uri)
            .map_err(Error::GrpcAddress)?
            .tcp_nodelay(true);
        let channel = with_tls(endpoint)?.connect_lazy();
        Ok(Self {
            service: BatonClient::new(channel).max_decoding_message_size(MAX_ANSWER_BYTES),
            authorization: None,
        })
    }

    /// A client that sends `authorization: Bearer <credential>` (an operator key or a session
    /// token) with every call. Fails on a credential that cannot be a metadata value.
    pub fn with_bearer(address: &str, credential: &str) -> Result<Self, Error> {
        let mut value: AsciiMetadataValue = format!("Bearer {credential}")
            .parse()
            .map_err(|_| Error::Usage("the credential is not a valid metadata value".into()))?;
        value.set_sensitive(true);
        Ok(Self {
            authorization: Some(value),
            ..Self::new(address)?
        })
    }

    /// A handle on the shared connection for one call (tonic's calls take `&mut self`).
    fn service(&self) -> BatonClient<Channel> {
        self.service.clone()
    }

    /// A call's request, with the credential if the client has one.
    fn request<T>(&self, message: T) -> tonic::Request<T> {
        let mut request = tonic::Request::new(message);
        if let Some(authorization) = &self.authorization {
            request
                .metadata_mut()
                .insert("authorization", authorization.clone());
        }
        request
    }
}

/// A failed call: the typed error its status carries, or the status itself.
fn failed(status: tonic::Status) -> Error {
    match api_error_from_status(&status) {
        Some(error) => Error::Api(error),
        None => Error::Grpc(Box::new(status)),
    }
}

#[async_trait]
impl Client for GrpcClient {
    async fn start_request(&self, request: StartRequest) -> Result<StartResponse, Error> {
        let answer = self
            .service()
            .start(self.request(v1::StartRequest::from(request)))
            .await
            .map_err(failed)?;
        Ok(answer.into_inner().into())
    }

    async fn status(&self, session_id: &str) -> Result<SessionState, Error> {
        let request = v1::StatusRequest {
            session_id: session_id.to_owned(),
        };
        let answer = self
            .service()
            .status(self.request(request))
            .await
            .map_err(failed)?;
        Ok(answer.into_inner().try_into()?)
    }

    async fn snapshot(&self, session_id: &str) -> Result<SnapshotResponse, Error> {
        let request = v1::SessionRequest {
            session_id: session_id.to_owned(),
        };
        let answer = self
            .service()
            .snapshot(self.request(request))
            .await
            .map_err(failed)?;
        Ok(answer.into_inner().try_into()?)
    }

    async fn usage(&self, session_id: &str) -> Result<UsageResponse, Error> {
        let request = v1::SessionRequest {
            session_id: session_id.to_owned(),
        };
        let answer = self
            .service()
            .usage(self.request(request))
            .await
            .map_err(failed)?;
        Ok(answer.into_inner().try_into()?)
    }

    async fn sessions(&self, search: &SessionSearch) -> Result<SessionsPage, Error> {
        let request = v1::SearchRequest::from(search.clone());
        let answer = self
            .service()
            .list_sessions(self.request(request))
            .await
            .map_err(failed)?;
        Ok(answer.into_inner().try_into()?)
    }

    async fn pending(&self, search: &SessionSearch) -> Result<PendingPage, Error> {
        let request = v1::SearchRequest::from(search.clone());
        let answer = self
            .service()
            .list_pending(self.request(request))
            .await
            .map_err(failed)?;
        Ok(answer.into_inner().try_into()?)
    }

    async fn fork(&self, request: &ForkRequest) -> Result<ForkResponse, Error> {
        let answer = self
            .service()
            .fork(self.request(v1::ForkRequest::from(request.clone())))
            .await
            .map_err(failed)?;
        Ok(answer.into_inner().try_into()?)
    }

    async fn submit_body(&self, body: &serde_json::Value) -> Result<SubmitAnswer, Error> {
        let request = v1::SubmitToolResultRequest {
            body_json: serde_json::to_string(body)?,
        };
        let answer = self
            .service()
            .submit_tool_result(self.request(request))
            .await
            .map_err(failed)?;
        Ok(answer.into_inner().try_into()?)
    }

    async fn resume_with(&self, request: &ResumeRequest) -> Result<ResumeResponse, Error> {
        let answer = self
            .service()
            .resume(self.request(v1::ResumeRequest::from(request.clone())))
            .await
            .map_err(failed)?;
        Ok(answer.into_inner().try_into()?)
    }

    async fn stop(&self, session_id: &str, abort: bool) -> Result<StopResponse, Error> {
        let request = self.request(v1::SessionRequest {
            session_id: session_id.to_owned(),
        });
        let mut service = self.service();
        let answer = if abort {
            service.abort(request).await
        } else {
            service.interrupt(request).await
        };
        Ok(answer.map_err(failed)?.into_inner().try_into()?)
    }

    async fn delete(&self, session_id: &str) -> Result<DeleteResponse, Error> {
        let request = self.request(v1::SessionRequest {
            session_id: session_id.to_owned(),
        });
        let answer = self.service().delete(request).await.map_err(failed)?;
        let answer = answer.into_inner();
        Ok(DeleteResponse {
            session_id: answer.session_id,
            deleted_sessions: answer.deleted_sessions,
        })
    }

    /// One `Subscribe` call, its chunks converted (checked) as they arrive.
    async fn subscribe(&self, session_id: &str, from_sequence: u64) -> Result<ChunkStream, Error> {
        let request = v1::SubscribeRequest {
            session_id: session_id.to_owned(),
            from_sequence,
        };
        let chunks = self
            .service()
            .subscribe(self.request(request))
            .await
            .map_err(failed)?
            .into_inner();
        Ok(chunks
            .map(|chunk| Ok(StreamChunk::try_from(chunk.map_err(failed)?)?))
            .boxed())
    }

    fn follow(&self, session_id: &str, from_sequence: u64) -> ChunkStream {
        reconnecting(self.clone(), session_id, from_sequence)
    }
}
