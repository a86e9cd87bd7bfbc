//! Counts the client-call log events (`baton_core::observe`) into the process's metrics: a
//! `tracing` layer, so that what is logged and what is counted cannot drift apart.

use super::ClientCallMetrics;
use baton_core::observe::{CLIENT_CALL_TARGET, ClientCallEvent};
use tracing::{Event, Level, Subscriber, field::Field};
use tracing_subscriber::{
    Layer,
    filter::{Filtered, Targets},
    layer::Context,
};

impl ClientCallMetrics {
    /// Counts one event about a call of `tool`; `wait_ms` is a drained call's wait.
    pub fn record(&self, event: ClientCallEvent, tool: &str, wait_ms: Option<u64>) {
        self.events.with_label_values(&[event.name(), tool]).inc();
        match event {
            ClientCallEvent::Submitted => self.submits.with_label_values(&[tool]).inc(),
            ClientCallEvent::Drained => {
                self.waits.with_label_values(&[tool]).inc();
                if let Some(wait_ms) = wait_ms {
                    self.wait_seconds
                        .with_label_values(&[tool])
                        .observe(wait_ms as f64 / 1000.0);
                }
            }
            ClientCallEvent::TimedOut => self.timeouts.with_label_values(&[tool]).inc(),
            ClientCallEvent::StopCleared => self.aborts.with_label_values(&[tool]).inc(),
            ClientCallEvent::Registered | ClientCallEvent::Refused | ClientCallEvent::Abandoned => {
            }
        }
    }

    /// The layer that feeds these counters, for the process's subscriber. It sees only the
    /// client-call events, whatever level the log itself is filtered to.
    pub fn layer<S>(&self) -> Filtered<ClientCallLayer, Targets, S>
    where
        S: Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    {
        ClientCallLayer {
            metrics: self.clone(),
        }
        .with_filter(Targets::new().with_target(CLIENT_CALL_TARGET, Level::INFO))
    }
}

/// See [`ClientCallMetrics::layer`].
pub struct ClientCallLayer {
    metrics: ClientCallMetrics,
}

impl<S: Subscriber> Layer<S> for ClientCallLayer {
    fn on_event(&self, event: &Event<'_>, _context: Context<'_, S>) {
        if event.metadata().target() != CLIENT_CALL_TARGET {
            return;
        }
        let mut fields = EventFields::default();
        event.record(&mut fields);
        if let Some(kind) = ClientCallEvent::from_name(&fields.event) {
            self.metrics.record(kind, &fields.tool, fields.wait_ms);
        }
    }
}

/// The fields of a client-call event that the counters need.
#[derive(Default)]
struct EventFields {
    event: String,
    tool: String,
    wait_ms: Option<u64>,
}

impl tracing::field::Visit for EventFields {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "event" => self.event = value.to_owned(),
            "tool" => self.tool = value.to_owned(),
            _ => {}
        }
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        if field.name() == "wait_ms" {
            self.wait_ms = Some(value);
        }
    }

    fn record_debug(&mut self, _field: &Field, _value: &dyn std::fmt::Debug) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Metrics;
    use baton_core::observe::{self, CallIds};
    use tracing_subscriber::layer::SubscriberExt;

    #[test]
    fn client_call_events_are_counted_by_tool() {
        let metrics = Metrics::default();
        let subscriber = tracing_subscriber::registry().with(metrics.client_calls.layer());
        let ids = CallIds {
            session_id: "s",
            root_session_id: "s",
            run_id: "r",
            tool_call_id: "c",
            tool: "ask_user",
        };
        tracing::subscriber::with_default(subscriber, || {
            observe::client_call(ClientCallEvent::Registered, ids, None, None);
            observe::client_call(ClientCallEvent::Submitted, ids, None, None);
            observe::client_call(ClientCallEvent::Refused, ids, Some("run_stopped"), None);
            observe::client_call(ClientCallEvent::TimedOut, ids, None, None);
            observe::client_call(ClientCallEvent::Drained, ids, None, Some(1500));
            observe::client_call(ClientCallEvent::StopCleared, ids, None, None);
            // Other events of the process are not counted.
            tracing::info!(
                event = "client_call.submitted",
                tool = "ask_user",
                "elsewhere"
            );
        });
        let calls = &metrics.client_calls;
        let tool = ["ask_user"];
        assert_eq!(calls.submits.with_label_values(&tool).get(), 1);
        assert_eq!(calls.waits.with_label_values(&tool).get(), 1);
        assert_eq!(calls.timeouts.with_label_values(&tool).get(), 1);
        assert_eq!(calls.aborts.with_label_values(&tool).get(), 1);
        assert_eq!(
            calls
                .events
                .with_label_values(&["client_call.refused", "ask_user"])
                .get(),
            1
        );
        assert_eq!(
            calls.wait_seconds.with_label_values(&tool).get_sample_sum(),
            1.5
        );
        let text = metrics.render(&[]);
        assert!(
            text.contains(r#"baton_client_tool_submits_total{tool="ask_user"} 1"#),
            "{text}"
        );
    }
}
