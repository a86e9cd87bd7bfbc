//! Counts and times every gRPC request, as the HTTP middleware does for HTTP: a tower layer on
//! the tonic server, labelled by method and gRPC status code.

use super::Metrics;
use futures::future::BoxFuture;
use std::task::{Context, Poll};
use tonic::codegen::http;

/// The path prefix of Baton's gRPC methods; other paths are counted as `unmatched`.
const SERVICE_PATH: &str = "/baton.v1.Baton/";

/// See the module documentation.
#[derive(Clone)]
pub struct GrpcMetricsLayer {
    metrics: Metrics,
}

impl GrpcMetricsLayer {
    pub fn new(metrics: Metrics) -> Self {
        Self { metrics }
    }
}

impl<S> tower::Layer<S> for GrpcMetricsLayer {
    type Service = GrpcMetricsService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        GrpcMetricsService {
            inner,
            metrics: self.metrics.clone(),
        }
    }
}

/// The service [`GrpcMetricsLayer`] wraps around the gRPC routes.
#[derive(Clone)]
pub struct GrpcMetricsService<S> {
    inner: S,
    metrics: Metrics,
}

impl<S, RequestBody, ResponseBody> tower::Service<http::Request<RequestBody>>
    for GrpcMetricsService<S>
where
    S: tower::Service<http::Request<RequestBody>, Response = http::Response<ResponseBody>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, context: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(context)
    }

    fn call(&mut self, request: http::Request<RequestBody>) -> Self::Future {
        let method = method_label(request.uri().path());
        let started = std::time::Instant::now();
        let response = self.inner.call(request);
        let metrics = self.metrics.clone();
        Box::pin(async move {
            let response = response.await;
            // A refusal is a trailers-only response: its status is in the headers. A success
            // (and a stream that fails later) carries it in the trailers: it counts as `OK`.
            let code = match &response {
                Ok(response) => response
                    .headers()
                    .get("grpc-status")
                    .map_or(tonic::Code::Ok, |value| {
                        tonic::Code::from_bytes(value.as_bytes())
                    }),
                Err(_) => tonic::Code::Unknown,
            };
            metrics
                .grpc_latency
                .with_label_values(&[method])
                .observe(started.elapsed().as_secs_f64());
            metrics
                .grpc_requests
                .with_label_values(&[method, code_label(code)])
                .inc();
            response
        })
    }
}

/// The method of a request path (`/baton.v1.Baton/Start` → `Start`), or `unmatched`: labels
/// stay within the service's methods whatever paths clients send.
fn method_label(path: &str) -> &'static str {
    const METHODS: [&str; 9] = [
        "Start",
        "Resume",
        "SubmitToolResult",
        "Interrupt",
        "Abort",
        "Status",
        "Subscribe",
        "Snapshot",
        "Usage",
    ];
    path.strip_prefix(SERVICE_PATH)
        .and_then(|method| METHODS.into_iter().find(|known| *known == method))
        .unwrap_or("unmatched")
}

/// The code's name as gRPC spells it (`INVALID_ARGUMENT`), as the README's tables do.
fn code_label(code: tonic::Code) -> &'static str {
    use tonic::Code as C;
    match code {
        C::Ok => "OK",
        C::Cancelled => "CANCELLED",
        C::Unknown => "UNKNOWN",
        C::InvalidArgument => "INVALID_ARGUMENT",
        C::DeadlineExceeded => "DEADLINE_EXCEEDED",
        C::NotFound => "NOT_FOUND",
        C::AlreadyExists => "ALREADY_EXISTS",
        C::PermissionDenied => "PERMISSION_DENIED",
        C::ResourceExhausted => "RESOURCE_EXHAUSTED",
        C::FailedPrecondition => "FAILED_PRECONDITION",
        C::Aborted => "ABORTED",
        C::OutOfRange => "OUT_OF_RANGE",
        C::Unimplemented => "UNIMPLEMENTED",
        C::Internal => "INTERNAL",
        C::Unavailable => "UNAVAILABLE",
        C::DataLoss => "DATA_LOSS",
        C::Unauthenticated => "UNAUTHENTICATED",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_stay_within_the_service() {
        assert_eq!(
            method_label("/baton.v1.Baton/SubmitToolResult"),
            "SubmitToolResult"
        );
        assert_eq!(method_label("/baton.v1.Baton/Nope"), "unmatched");
        assert_eq!(method_label("/other.Service/Start"), "unmatched");
        assert_eq!(code_label(tonic::Code::from_bytes(b"5")), "NOT_FOUND");
    }
}
