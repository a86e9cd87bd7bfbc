//! Prometheus metrics of the HTTP API, served at `GET /metrics` (operators only).

use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounterVec, IntGauge, Opts, Registry, TextEncoder,
};

/// The server's metrics. Cheap to clone (the collectors are shared).
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
}

impl Default for Metrics {
    fn default() -> Self {
        let registry = Registry::new();
        let requests = IntCounterVec::new(
            Opts::new(
                "baton_http_requests_total",
                "HTTP requests by route and status",
            ),
            &["route", "status"],
        )
        .expect("valid metric");
        let latency = HistogramVec::new(
            HistogramOpts::new(
                "baton_http_request_duration_seconds",
                "HTTP request latency by route",
            )
            .buckets(vec![
                0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
            ]),
            &["route"],
        )
        .expect("valid metric");
        let submits = IntCounterVec::new(
            Opts::new("baton_submits_total", "Tool-result submits by answer"),
            &["answer"],
        )
        .expect("valid metric");
        let followers =
            IntGauge::new("baton_sse_followers", "SSE followers connected now").expect("valid");
        for collector in [
            Box::new(requests.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(latency.clone()),
            Box::new(submits.clone()),
            Box::new(followers.clone()),
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
        }
    }
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
