//! The context handed to every server tool call: which session, run and call it serves, and the
//! idempotency key a tool passes to the outside world so that a retried call is recognised.

use crate::store::SessionAddress;
use std::fmt;

/// Where one server tool call runs. Built by the worker for each call and passed to
/// [`ServerTool::call`](super::ServerTool::call); a tool reads it through its methods.
///
/// The fields are private on purpose: the context grows (custom session state, later) without
/// breaking the tools that use it.
#[derive(Clone, PartialEq, Eq)]
pub struct ToolContext {
    address: SessionAddress,
    run_id: String,
    tool_call_id: String,
}

impl ToolContext {
    /// The context of call `tool_call_id`, made by run `run_id` of the session at `address`.
    pub fn new(
        address: SessionAddress,
        run_id: impl Into<String>,
        tool_call_id: impl Into<String>,
    ) -> Self {
        Self {
            address,
            run_id: run_id.into(),
            tool_call_id: tool_call_id.into(),
        }
    }

    /// The session whose model called the tool.
    pub fn session_id(&self) -> &str {
        &self.address.session_id
    }

    /// The root of the session's tree (the session itself for a top-level session).
    pub fn root_session_id(&self) -> &str {
        &self.address.root_session_id
    }

    /// The session's address in the store.
    pub fn address(&self) -> &SessionAddress {
        &self.address
    }

    /// The run that executes the call. A call approved by a person runs in a later run than the
    /// one that made it, so this is not a stable key: use [`Self::idempotency_key`].
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The tool call id the model gave the call, unique within the session.
    pub fn tool_call_id(&self) -> &str {
        &self.tool_call_id
    }

    /// A key that is the same for every attempt of this call and different for every other call:
    /// `<sessionId>/<toolCallId>`. A tool with side effects passes it to the service it calls
    /// (an `Idempotency-Key` header, a unique column) so that a retried attempt is not applied
    /// twice. Session ids are unique server-wide and a tool call id is unique within its
    /// session, so the pair is unique too.
    pub fn idempotency_key(&self) -> String {
        format!("{}/{}", self.address.session_id, self.tool_call_id)
    }
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("session_id", &self.address.session_id)
            .field("root_session_id", &self.address.root_session_id)
            .field("run_id", &self.run_id)
            .field("tool_call_id", &self.tool_call_id)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_idempotency_key_names_the_session_and_the_call_not_the_run() {
        let address = SessionAddress {
            root_session_id: "root".to_owned(),
            session_id: "child".to_owned(),
        };
        let first = ToolContext::new(address.clone(), "run-1", "call-1");
        let approved_later = ToolContext::new(address.clone(), "run-2", "call-1");
        let other_call = ToolContext::new(address, "run-1", "call-2");
        assert_eq!(first.idempotency_key(), "child/call-1");
        assert_eq!(first.idempotency_key(), approved_later.idempotency_key());
        assert_ne!(first.idempotency_key(), other_call.idempotency_key());
        assert_eq!(
            (first.session_id(), first.root_session_id(), first.run_id()),
            ("child", "root", "run-1")
        );
        assert_eq!(first.tool_call_id(), "call-1");
    }
}
