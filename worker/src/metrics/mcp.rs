//! Counts the MCP call events (`baton_mcp::CALL_TARGET`, one as each call of an MCP server's
//! tool ends) into the process's metrics, by server, tool and outcome: a `tracing` layer, as the
//! client-call counters are (`events.rs`), so what is logged and what is counted agree.

use super::McpCallMetrics;
use tracing::{Event, Level, Subscriber, field::Field};
use tracing_subscriber::{
    Layer,
    filter::{Filtered, Targets},
    layer::Context,
};

impl McpCallMetrics {
    /// Counts one call of `tool` on `server` that ended with `outcome` after `elapsed_ms`.
    pub fn record(&self, server: &str, tool: &str, outcome: &str, elapsed_ms: u64) {
        self.calls.with_label_values(&[server, tool, outcome]).inc();
        self.seconds
            .with_label_values(&[server, tool])
            .observe(elapsed_ms as f64 / 1000.0);
    }

    /// The layer that feeds these counters, seeing only the MCP call events.
    pub fn layer<S>(&self) -> Filtered<McpCallLayer, Targets, S>
    where
        S: Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    {
        McpCallLayer {
            metrics: self.clone(),
        }
        .with_filter(Targets::new().with_target(baton_mcp::CALL_TARGET, Level::INFO))
    }
}

/// The buckets of the MCP call histogram, in seconds: a local call takes milliseconds, one that
/// waits on a person minutes.
pub(super) const CALL_BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 2.5, 10.0, 60.0, 300.0,
];

/// See [`McpCallMetrics::layer`].
pub struct McpCallLayer {
    metrics: McpCallMetrics,
}

impl<S: Subscriber> Layer<S> for McpCallLayer {
    fn on_event(&self, event: &Event<'_>, _context: Context<'_, S>) {
        if event.metadata().target() != baton_mcp::CALL_TARGET {
            return;
        }
        let mut fields = CallFields::default();
        event.record(&mut fields);
        if fields.event == "mcp_call" {
            let outcome = fields.outcome.as_deref().unwrap_or("unknown");
            self.metrics
                .record(&fields.server, &fields.tool, outcome, fields.elapsed_ms);
        }
    }
}

#[derive(Default)]
struct CallFields {
    event: String,
    server: String,
    tool: String,
    outcome: Option<String>,
    elapsed_ms: u64,
}

impl tracing::field::Visit for CallFields {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "event" => self.event = value.to_owned(),
            "outcome" => self.outcome = Some(value.to_owned()),
            _ => {}
        }
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        if field.name() == "elapsed_ms" {
            self.elapsed_ms = value;
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        // `%`-formatted fields (server, tool) arrive as Display through Debug.
        match field.name() {
            "server" => self.server = format!("{value:?}"),
            "tool" => self.tool = format!("{value:?}"),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::metrics::Metrics;
    use tracing_subscriber::layer::SubscriberExt;

    #[test]
    fn mcp_call_events_are_counted_by_server_tool_and_outcome() {
        let metrics = Metrics::default();
        let subscriber = tracing_subscriber::registry().with(metrics.mcp_calls.layer());
        tracing::subscriber::with_default(subscriber, || {
            for (outcome, ms) in [("ok", 4u64), ("ok", 6), ("tool_failed", 2000)] {
                tracing::info!(
                    target: baton_mcp::CALL_TARGET,
                    event = "mcp_call",
                    server = %"files",
                    tool = %"read",
                    outcome,
                    elapsed_ms = ms,
                    "an MCP tool call ended"
                );
            }
            // The same fields under another target are not counted.
            tracing::info!(event = "mcp_call", server = %"files", tool = %"read", outcome = "ok");
        });
        let calls = &metrics.mcp_calls;
        assert_eq!(
            calls
                .calls
                .with_label_values(&["files", "read", "ok"])
                .get(),
            2
        );
        assert_eq!(
            calls
                .calls
                .with_label_values(&["files", "read", "tool_failed"])
                .get(),
            1
        );
        let seconds = calls.seconds.with_label_values(&["files", "read"]);
        assert_eq!(seconds.get_sample_count(), 3);
        assert!((seconds.get_sample_sum() - 2.01).abs() < 1e-9);
        let text = metrics.render(&[]);
        assert!(
            text.contains(r#"baton_mcp_calls_total{outcome="ok",server="files",tool="read"} 2"#),
            "{text}"
        );
    }
}
