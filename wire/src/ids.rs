//! Identifiers: sessions, runs, workflow ids, and the names that may appear inside them.

use uuid::Uuid;

/// Separator inside workflow ids; agent types and session ids may not contain it.
pub const WORKFLOW_ID_SEPARATOR: &str = "__";

/// Mints a server-issued session id (time-ordered, so Redis keys sort by creation).
pub fn new_session_id() -> String {
    Uuid::now_v7().simple().to_string()
}

/// Mints a run id. A run is one workflow segment of a session.
pub fn new_run_id() -> String {
    Uuid::now_v7().simple().to_string()
}

/// The workflow id of a session's first run: `agent__<agentType>__<sessionId>`.
pub fn first_run_workflow_id(agent_type: &str, session_id: &str) -> String {
    format!("agent__{agent_type}__{session_id}")
}

/// The workflow id of a resumed run: `agent__<agentType>__<sessionId>__resume-<runId>`.
pub fn resume_workflow_id(agent_type: &str, session_id: &str, run_id: &str) -> String {
    format!("agent__{agent_type}__{session_id}__resume-{run_id}")
}

/// Whether `name` may be used as an agent type or a tool name: 1–64 characters of ASCII
/// letters, digits, `-` and `_`, with no `__` (which separates workflow-id parts).
pub fn is_valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        && !name.contains(WORKFLOW_ID_SEPARATOR)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_ids() {
        assert!(is_valid_name("calculator"));
        assert!(is_valid_name("demo-agent_2"));
        assert!(!is_valid_name(""));
        assert!(!is_valid_name("a__b"));
        assert!(!is_valid_name("has space"));
        assert!(!is_valid_name(&"x".repeat(65)));
        let session = new_session_id();
        assert!(is_valid_name(&session));
        assert_ne!(session, new_session_id());
        assert_eq!(first_run_workflow_id("demo", "s1"), "agent__demo__s1");
        assert_eq!(
            resume_workflow_id("demo", "s1", "r2"),
            "agent__demo__s1__resume-r2"
        );
    }
}
