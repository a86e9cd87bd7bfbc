//! The structured log events of a client call's life, with stable names: operators diagnose
//! faults from them, the server's metrics count them (`baton-worker`'s event layer), and the
//! fault campaign asserts on them. Never rename one; add new ones instead.

use crate::escape::bounded;

/// The target of every client-call event, so a subscriber can select them.
pub const CLIENT_CALL_TARGET: &str = "baton::client_call";

/// One transition of a pending client call (a client tool's call or a call awaiting approval).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClientCallEvent {
    /// A run suspended on the call: its pending entry exists.
    Registered,
    /// A submit's answer was stored for the call.
    Submitted,
    /// A submit was refused; `reason` says why (an error code, or `run_stopped`).
    Refused,
    /// The call's deadline passed without an answer; it was drained as `client_tool_timeout`.
    TimedOut,
    /// A new message came while the call was unanswered; drained as `client_tool_abandoned`.
    Abandoned,
    /// The call's outcome went into the log (its answer, or the reason it has none); `wait_ms`
    /// is how long it was awaited.
    Drained,
    /// A stop (interrupt or abort) ended the call's run: its pending state was cleared.
    StopCleared,
}

impl ClientCallEvent {
    /// Every event, in the order of a call's life.
    pub const ALL: [Self; 7] = [
        Self::Registered,
        Self::Submitted,
        Self::Refused,
        Self::TimedOut,
        Self::Abandoned,
        Self::Drained,
        Self::StopCleared,
    ];

    /// The event's stable name, the `event` field of the log line.
    pub fn name(self) -> &'static str {
        match self {
            Self::Registered => "client_call.registered",
            Self::Submitted => "client_call.submitted",
            Self::Refused => "client_call.refused",
            Self::TimedOut => "client_call.timed_out",
            Self::Abandoned => "client_call.abandoned",
            Self::Drained => "client_call.drained",
            Self::StopCleared => "client_call.stop_cleared",
        }
    }

    /// The event named `name`, for a subscriber that reads the `event` field back.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|event| event.name() == name)
    }
}

/// Whom a client-call event is about.
#[derive(Debug, Clone, Copy)]
pub struct CallIds<'a> {
    pub session_id: &'a str,
    pub root_session_id: &'a str,
    pub run_id: &'a str,
    pub tool_call_id: &'a str,
    pub tool: &'a str,
}

/// Logs one client-call event (at `info`, target [`CLIENT_CALL_TARGET`]) with the call's ids,
/// and, where they apply, the reason (for `refused`) and the wait (for `drained`).
pub fn client_call(
    event: ClientCallEvent,
    ids: CallIds<'_>,
    reason: Option<&str>,
    wait_ms: Option<u64>,
) {
    tracing::info!(
        target: CLIENT_CALL_TARGET,
        event = event.name(),
        // Ids a submit named are the request's: bounded like every request-taken field. The
        // tool is the agent's own (a checked name), and the metrics read it as a string.
        session_id = %bounded(ids.session_id),
        root_session_id = %bounded(ids.root_session_id),
        run_id = %bounded(ids.run_id),
        tool_call_id = %bounded(ids.tool_call_id),
        tool = ids.tool,
        reason,
        wait_ms,
        "{}",
        event.name()
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn event_names_are_stable() {
        let names: Vec<&str> = ClientCallEvent::ALL.map(ClientCallEvent::name).to_vec();
        assert_eq!(
            names,
            [
                "client_call.registered",
                "client_call.submitted",
                "client_call.refused",
                "client_call.timed_out",
                "client_call.abandoned",
                "client_call.drained",
                "client_call.stop_cleared",
            ]
        );
        for event in ClientCallEvent::ALL {
            assert_eq!(ClientCallEvent::from_name(event.name()), Some(event));
        }
        assert_eq!(ClientCallEvent::from_name("client_call.lost"), None);
    }
}
