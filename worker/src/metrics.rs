//! Prometheus metrics: the HTTP and gRPC APIs, SSE followers and client calls, served at
//! `GET /metrics` (operators only; a worker serves them with `--metrics-listen`).

use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, Opts, Registry,
    TextEncoder,
};

pub mod events;
pub mod grpc;
pub mod mcp;

/// The buckets of the request latency histograms, in seconds.
const LATENCY_BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];

/// The process's metrics. Cheap to clone (the collectors are shared).
#[derive(Clone)]
pub struct Metrics {
    registry: Registry,
    /// Requests by route and HTTP status.
    pub requests: IntCounterVec,
    /// Request latency by route (for SSE: until the stream starts).
    pub latency: HistogramVec,
    /// Submits by answer: `accepted`, `already_completed`, or the refusal's error code.
    pub submits: IntCounterVec,
    /// SSE followers connected now.
    pub followers: IntGauge,
    /// The client-call counters, fed by the log events (see [`events`]).
    pub client_calls: ClientCallMetrics,
    /// gRPC requests by method and status code (see [`grpc`]).
    pub grpc_requests: IntCounterVec,
    /// gRPC request latency by method (for `Subscribe`: until the stream starts).
    pub grpc_latency: HistogramVec,
    /// The mount's callbacks dropped after their last failed attempt (the callback sweep's).
    pub callbacks_dropped: IntCounter,
    /// The calls of MCP servers' tools, fed by their log events (see [`mcp`]).
    pub mcp_calls: McpCallMetrics,
}

/// Calls of MCP servers' tools, counted from the `mcp_call` events of this process (a worker's).
#[derive(Clone)]
pub struct McpCallMetrics {
    /// Calls by server, tool (its name on the server) and outcome (`ok` or the tool error code).
    pub calls: IntCounterVec,
    /// How long each call took, by server and tool (a wait on a person included).
    pub seconds: HistogramVec,
}

/// Counters of client calls by tool, counted from the client-call log events of this process
/// (`baton_core::observe`): a server counts submits and stops, a worker registrations, drains,
/// timeouts and waits.
#[derive(Clone)]
pub struct ClientCallMetrics {
    /// Every client-call event, by event name and tool.
    pub events: IntCounterVec,
    /// Stored answers (`client_call.submitted`), by tool.
    pub submits: IntCounterVec,
    /// Calls drained after a wait (`client_call.drained`), by tool.
    pub waits: IntCounterVec,
    /// How long each drained call was awaited, by tool.
    pub wait_seconds: HistogramVec,
    /// Calls that reached their deadline unanswered (`client_call.timed_out`), by tool.
    pub timeouts: IntCounterVec,
    /// Calls ended by a stop (`client_call.stop_cleared`), by tool.
    pub aborts: IntCounterVec,
}

impl Default for Metrics {
    fn default() -> Self {
        let registry = Registry::new();
        let requests = counter(
            "baton_http_requests_total",
            "HTTP requests by route and status",
            &["route", "status"],
        );
        let latency = histogram(
            "baton_http_request_duration_seconds",
            "HTTP request latency by route",
            "route",
            &LATENCY_BUCKETS,
        );
        let submits = counter(
            "baton_submits_total",
            "Tool-result submits by answer",
            &["answer"],
        );
        let followers =
            IntGauge::new("baton_sse_followers", "SSE followers connected now").expect("valid");
        let per_tool = |name: &str, help: &str| counter(name, help, &["tool"]);
        let client_calls = ClientCallMetrics {
            events: counter(
                "baton_client_call_events_total",
                "Client-call log events by event name and tool",
                &["event", "tool"],
            ),
            submits: per_tool(
                "baton_client_tool_submits_total",
                "Answers stored for client calls, by tool",
            ),
            waits: per_tool(
                "baton_client_tool_waits_total",
                "Client calls drained after their wait, by tool",
            ),
            wait_seconds: histogram(
                "baton_client_tool_wait_seconds",
                "How long drained client calls were awaited, by tool",
                "tool",
                &[0.1, 1.0, 10.0, 60.0, 600.0, 3600.0, 86400.0],
            ),
            timeouts: per_tool(
                "baton_client_tool_timeouts_total",
                "Client calls that reached their deadline unanswered, by tool",
            ),
            aborts: per_tool(
                "baton_client_tool_aborts_total",
                "Client calls ended by an interrupt or abort, by tool",
            ),
        };
        let grpc_requests = counter(
            "baton_grpc_requests_total",
            "gRPC requests by method and status code",
            &["method", "code"],
        );
        let grpc_latency = histogram(
            "baton_grpc_request_duration_seconds",
            "gRPC request latency by method",
            "method",
            &LATENCY_BUCKETS,
        );
        let callbacks_dropped = IntCounter::new(
            "baton_callbacks_dropped_total",
            "Producer-mount callbacks dropped after their last failed attempt",
        )
        .expect("valid");
        let mcp_calls = McpCallMetrics {
            calls: counter(
                "baton_mcp_calls_total",
                "Calls of MCP servers' tools by server, tool and outcome",
                &["server", "tool", "outcome"],
            ),
            seconds: HistogramVec::new(
                HistogramOpts::new(
                    "baton_mcp_call_duration_seconds",
                    "How long calls of MCP servers' tools took, by server and tool",
                )
                .buckets(mcp::CALL_BUCKETS.to_vec()),
                &["server", "tool"],
            )
            .expect("valid metric"),
        };
        for collector in [
            Box::new(requests.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(mcp_calls.calls.clone()),
            Box::new(mcp_calls.seconds.clone()),
            Box::new(callbacks_dropped.clone()),
            Box::new(latency.clone()),
            Box::new(submits.clone()),
            Box::new(followers.clone()),
            Box::new(client_calls.events.clone()),
            Box::new(client_calls.submits.clone()),
            Box::new(client_calls.waits.clone()),
            Box::new(client_calls.wait_seconds.clone()),
            Box::new(client_calls.timeouts.clone()),
            Box::new(client_calls.aborts.clone()),
            Box::new(grpc_requests.clone()),
            Box::new(grpc_latency.clone()),
        ] {
            registry
                .register(collector)
                .expect("metric names are unique");
        }
        Self {
            registry,
            requests,
            latency,
            submits,
            followers,
            client_calls,
            grpc_requests,
            grpc_latency,
            callbacks_dropped,
            mcp_calls,
        }
    }
}

fn counter(name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric")
}

fn histogram(name: &str, help: &str, label: &str, buckets: &[f64]) -> HistogramVec {
    HistogramVec::new(
        HistogramOpts::new(name, help).buckets(buckets.to_vec()),
        &[label],
    )
    .expect("valid metric")
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Metrics {
    /// The text exposition of every metric, plus `extra` lines (gauges read on demand).
    pub fn render(&self, extra: &[(&str, &str, f64)]) -> String {
        let mut buffer = Vec::new();
        TextEncoder::new()
            .encode(&self.registry.gather(), &mut buffer)
            .expect("encoding to a Vec cannot fail");
        let mut text = String::from_utf8(buffer).expect("the text format is UTF-8");
        for (name, help, value) in extra {
            text.push_str(&format!(
                "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}\n"
            ));
        }
        text
    }
}

/// Decrements the follower gauge when an SSE stream ends, however it ends.
pub struct FollowerGuard(IntGauge);

impl FollowerGuard {
    pub fn new(gauge: &IntGauge) -> Self {
        gauge.inc();
        Self(gauge.clone())
    }
}

impl Drop for FollowerGuard {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// Serves `GET /metrics` (Prometheus text, no authentication) until `shutdown` resolves: a
/// worker's endpoint, which has no HTTP API to carry it.
pub async fn serve_metrics(
    listener: tokio::net::TcpListener,
    metrics: Metrics,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let router = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let metrics = metrics.clone();
            async move { metrics.render(&[]) }
        }),
    );
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
}
