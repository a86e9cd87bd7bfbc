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

/// Separates a child session's id from its root's: `<rootSessionId>.<32 hex digits>`.
pub const CHILD_SESSION_SEPARATOR: char = '.';

/// The root of the tree a session id belongs to: a child's id starts with its root's id, so any
/// session of a tree can be addressed by its id alone.
pub fn root_of(session_id: &str) -> &str {
    session_id
        .split_once(CHILD_SESSION_SEPARATOR)
        .map_or(session_id, |(root, _)| root)
}

/// Whether `session_id` is a well-formed session id: a valid name, or a child's
/// `<root>.<32 hex digits>`.
pub fn is_valid_session_id(session_id: &str) -> bool {
    match session_id.split_once(CHILD_SESSION_SEPARATOR) {
        None => is_valid_name(session_id),
        Some((root, child)) => {
            is_valid_name(root) && child.len() == 32 && child.bytes().all(|b| b.is_ascii_hexdigit())
        }
    }
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
        let child = format!("s1.{}", "a".repeat(32));
        assert!(is_valid_session_id(&child));
        assert_eq!(root_of(&child), "s1");
        assert_eq!(root_of("s1"), "s1");
        assert!(!is_valid_session_id("s1.xyz"));
        assert!(!is_valid_session_id("a__b"));
        assert_eq!(
            resume_workflow_id("demo", "s1", "r2"),
            "agent__demo__s1__resume-r2"
        );
    }
}
