//! The operator's reads across sessions: a page of `GET /sessions` (one row per session) and of
//! `GET /pending` (one row per call waiting on a person), each with the opaque cursor of the
//! next page.

use crate::session::Status;
use serde::{Deserialize, Serialize};

/// One session in a search: who it is for, where it stands, how much is waiting on a person.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    pub session_id: String,
    pub root_session_id: String,
    /// The session whose sub-agent call started this one (children only), so a tree's rows
    /// nest: the console's outline indents each under its parent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session_id: Option<String>,
    pub agent_type: String,
    pub status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Milliseconds since the epoch.
    pub created_at: u64,
    pub updated_at: u64,
    /// Calls waiting on a person: in the whole tree for a root, in the session for a child.
    pub pending_calls: u32,
    pub step_count: u32,
}

/// A page of `GET /sessions`: newest activity first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct SessionsPage {
    pub sessions: Vec<SessionSummary>,
    /// Pass as `cursor` for the next page; absent on the last one. A page may hold fewer rows
    /// than `limit` and still have a next one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// Whether a waiting call asks for a client tool's result or for an approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum PersonCallKind {
    ClientTool,
    Approval,
}

/// One call waiting on a person: what `/pending` lists and `/status` details.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct PendingDetail {
    /// The root of the tree, which a submit names.
    pub session_id: String,
    /// The session whose run awaits the call (the root or a child).
    pub owner_session_id: String,
    pub tool_call_id: String,
    pub tool_name: String,
    pub input: serde_json::Value,
    pub kind: PersonCallKind,
    /// For approvals: the id the decision must name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_id: Option<String>,
    /// Milliseconds since the epoch; past it the call lapses.
    pub deadline_at: u64,
    /// Since when the call waits (ms since the epoch).
    pub awaited_since: u64,
    /// For how long it had waited when `/pending` read it (ms). `/status` leaves it out, so
    /// that reading an unchanged session twice answers the same (its age is now minus
    /// `awaitedSince`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub age_ms: Option<u64>,
    /// The agent of the owning session.
    pub agent_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// For a client call whose tool has a render hint: `{kind, outputSchema?}`, as the chat's
    /// `data-render` part carries it (a consumer relaying the call shows it the same way).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub render: Option<serde_json::Value>,
    /// For a client call whose tool declares one: the JSON Schema an answer's result must match
    /// (a form can be built from it; a result that fails it is refused `INVALID_RESULT`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<serde_json::Value>,
}

/// A page of `GET /pending`: the calls of the sessions with the newest activity first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct PendingPage {
    pub calls: Vec<PendingDetail>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// The most rows a page holds, and how many it holds unless asked.
pub const MAX_PAGE_LIMIT: usize = 100;
pub const DEFAULT_PAGE_LIMIT: usize = 20;

/// What a search asks for: the filters of `GET /sessions` and `GET /pending` (all must hold),
/// their page size and where to continue. Both transports and the CLI build it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionSearch {
    pub status: Option<Status>,
    pub agent: Option<String>,
    pub user_id: Option<String>,
    /// Every one of these tags.
    pub tags: Vec<String>,
    /// `metadata.<key>=<value>`: the entry's text (a string as it is, a number or boolean as
    /// its JSON).
    pub metadata: Vec<(String, String)>,
    /// `awaiting=person`: a client call or approval open anywhere in the tree.
    pub awaiting_person: bool,
    /// Last activity at or after / at or before (ms since the epoch).
    pub updated_after: Option<u64>,
    pub updated_before: Option<u64>,
    pub limit: usize,
    pub cursor: Option<String>,
    /// Children too (each row names its root); roots only otherwise.
    pub include_children: bool,
    /// `root=<sessionId>`: only that tree, the root first, then its sessions in id order (children
    /// included, no paging: a tree is small).
    pub root: Option<String>,
}

impl Default for SessionSearch {
    fn default() -> Self {
        Self {
            status: None,
            agent: None,
            user_id: None,
            tags: Vec::new(),
            metadata: Vec::new(),
            awaiting_person: false,
            updated_after: None,
            updated_before: None,
            limit: DEFAULT_PAGE_LIMIT,
            cursor: None,
            include_children: false,
            root: None,
        }
    }
}

impl SessionSearch {
    /// A search from a query string's pairs (`status=…&tag=a&tag=b&metadata.plan=pro&…`);
    /// an unknown name or a bad value is a `validation_error` naming it.
    pub fn from_query_pairs(
        pairs: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self, crate::ApiError> {
        let refuse =
            |message: String| crate::ApiError::new(crate::ErrorCode::ValidationError, message);
        let time = |name: &str, value: &str| {
            value
                .parse::<u64>()
                .map_err(|_| refuse(format!("{name} is milliseconds since the epoch")))
        };
        let mut search = Self::default();
        for (name, value) in pairs {
            match name.as_str() {
                "status" => {
                    search.status = Some(Status::parse(&value).ok_or_else(|| {
                        refuse("status must be one of active, suspended_client_tool, completed, failed, interrupted".to_owned())
                    })?);
                }
                "agent" => search.agent = Some(value),
                "userId" => search.user_id = Some(value),
                "tag" => search.tags.push(value),
                "awaiting" if value == "person" => search.awaiting_person = true,
                "awaiting" => return Err(refuse("awaiting takes only `person`".to_owned())),
                "updatedAfter" => search.updated_after = Some(time(&name, &value)?),
                "updatedBefore" => search.updated_before = Some(time(&name, &value)?),
                "limit" => {
                    search.limit = value
                        .parse::<usize>()
                        .ok()
                        .filter(|limit| (1..=MAX_PAGE_LIMIT).contains(limit))
                        .ok_or_else(|| refuse(format!("limit must be 1 to {MAX_PAGE_LIMIT}")))?;
                }
                "cursor" => search.cursor = Some(value),
                "root" => search.root = Some(value),
                "includeChildren" => {
                    search.include_children = value
                        .parse()
                        .map_err(|_| refuse("includeChildren is true or false".to_owned()))?;
                }
                _ => match name.strip_prefix("metadata.") {
                    Some(key) if !key.is_empty() => search.metadata.push((key.to_owned(), value)),
                    _ => return Err(refuse(format!("unknown query parameter {name:?}"))),
                },
            }
        }
        Ok(search)
    }

    /// The query string's pairs of this search (what [`Self::from_query_pairs`] reads).
    pub fn to_query_pairs(&self) -> Vec<(String, String)> {
        let mut pairs = Vec::new();
        let mut push = |name: &str, value: String| pairs.push((name.to_owned(), value));
        if let Some(status) = self.status {
            push("status", status.as_str().to_owned());
        }
        if let Some(agent) = &self.agent {
            push("agent", agent.clone());
        }
        if let Some(user) = &self.user_id {
            push("userId", user.clone());
        }
        for tag in &self.tags {
            push("tag", tag.clone());
        }
        for (key, value) in &self.metadata {
            push(&format!("metadata.{key}"), value.clone());
        }
        if self.awaiting_person {
            push("awaiting", "person".to_owned());
        }
        if let Some(after) = self.updated_after {
            push("updatedAfter", after.to_string());
        }
        if let Some(before) = self.updated_before {
            push("updatedBefore", before.to_string());
        }
        push("limit", self.limit.to_string());
        if let Some(cursor) = &self.cursor {
            push("cursor", cursor.clone());
        }
        if self.include_children {
            push("includeChildren", "true".to_owned());
        }
        if let Some(root) = &self.root {
            push("root", root.clone());
        }
        pairs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_search_reads_back_the_pairs_it_writes_and_refuses_unknown_ones() {
        let search = SessionSearch {
            status: Some(Status::SuspendedClientTool),
            agent: Some("support".into()),
            user_id: Some("u-1".into()),
            tags: vec!["vip".into(), "eu".into()],
            metadata: vec![("plan".into(), "pro".into())],
            awaiting_person: true,
            updated_after: Some(5),
            updated_before: Some(9),
            limit: 7,
            cursor: Some("c".into()),
            include_children: true,
            root: Some("r".into()),
        };
        let again = SessionSearch::from_query_pairs(search.to_query_pairs()).unwrap();
        assert_eq!(again, search);
        for bad in [
            ("colour", "red"),
            ("status", "sleeping"),
            ("limit", "0"),
            ("limit", "101"),
            ("awaiting", "robot"),
            ("updatedAfter", "yesterday"),
            ("metadata.", "x"),
        ] {
            let pairs = [(bad.0.to_owned(), bad.1.to_owned())];
            let error = SessionSearch::from_query_pairs(pairs).unwrap_err();
            assert_eq!(error.code, crate::ErrorCode::ValidationError, "{bad:?}");
        }
    }
}
