//! Captures the client-call log events (`baton_core::observe`) and the audit events
//! (`baton_worker::audit`) that this test process emits, so end-to-end tests can check what
//! operators would see. Tests run in parallel in one process:
//! each reads back the events of its own sessions only.

use baton_core::observe::CLIENT_CALL_TARGET;
use std::{
    collections::BTreeMap,
    sync::{Mutex, OnceLock},
};
use tracing::{Event, Subscriber, field::Field};
use tracing_subscriber::{Layer, layer::Context, layer::SubscriberExt};

/// One captured event: its fields as text (`event`, `session_id`, `tool`, `reason`, …).
pub type CapturedEvent = BTreeMap<String, String>;

static EVENTS: OnceLock<Mutex<Vec<CapturedEvent>>> = OnceLock::new();

/// Starts capturing (once per process; later calls do nothing).
pub fn capture() {
    EVENTS.get_or_init(|| {
        let subscriber = tracing_subscriber::registry().with(CaptureLayer);
        // Another global subscriber would already capture nothing for us: fail loudly.
        tracing::subscriber::set_global_default(subscriber)
            .expect("no other global subscriber in the test binary");
        Mutex::new(Vec::new())
    });
}

/// The field naming the target a captured event was logged under.
const TARGET_FIELD: &str = "_target";

/// The captured client-call events about session `session_id`, in order.
pub fn of_session(session_id: &str) -> Vec<CapturedEvent> {
    of_target(CLIENT_CALL_TARGET, session_id)
}

/// The captured audit events about session `session_id`, in order.
pub fn audit_of_session(session_id: &str) -> Vec<CapturedEvent> {
    of_target(baton_worker::audit::AUDIT_TARGET, session_id)
}

/// The captured audit events whose `field` is `value` (e.g. a token's `subject`), in order.
pub fn audit_with(field: &str, value: &str) -> Vec<CapturedEvent> {
    matching(baton_worker::audit::AUDIT_TARGET, field, value)
}

fn of_target(target: &str, session_id: &str) -> Vec<CapturedEvent> {
    matching(target, "session_id", session_id)
}

/// The captured events of `target` whose `field` is `value`, in order.
fn matching(target: &str, field: &str, value: &str) -> Vec<CapturedEvent> {
    let Some(events) = EVENTS.get() else {
        return Vec::new();
    };
    let events = events
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    events
        .iter()
        .filter(|fields| fields.get(field).map(String::as_str) == Some(value))
        .filter(|fields| fields.get(TARGET_FIELD).map(String::as_str) == Some(target))
        .cloned()
        .collect()
}

/// The names of the captured events about session `session_id`, in order.
pub fn names_of_session(session_id: &str) -> Vec<String> {
    of_session(session_id)
        .into_iter()
        .filter_map(|mut fields| fields.remove("event"))
        .collect()
}

struct CaptureLayer;

impl<S: Subscriber> Layer<S> for CaptureLayer {
    fn on_event(&self, event: &Event<'_>, _context: Context<'_, S>) {
        let target = event.metadata().target();
        if target != CLIENT_CALL_TARGET && target != baton_worker::audit::AUDIT_TARGET {
            return;
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        fields.0.insert(TARGET_FIELD.to_owned(), target.to_owned());
        if let Some(events) = EVENTS.get() {
            events
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .push(fields.0);
        }
    }
}

#[derive(Default)]
struct Fields(CapturedEvent);

impl tracing::field::Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}
