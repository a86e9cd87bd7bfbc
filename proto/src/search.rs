//! Conversions of the operator's calls (`ListSessions`, `ListPending`, `Fork`) to and from
//! their wire messages.

use crate::{convert::Error, v1};
use baton_wire::search::{
    DEFAULT_PAGE_LIMIT, PendingDetail, PendingPage, PersonCallKind, SessionSearch, SessionSummary,
    SessionsPage,
};
use std::str::FromStr;

fn parsed<T: FromStr>(field: &'static str, value: String) -> Result<T, Error> {
    value
        .parse()
        .map_err(|_| Error::InvalidValue { field, value })
}

impl From<SessionSearch> for v1::SearchRequest {
    fn from(search: SessionSearch) -> Self {
        Self {
            status: search.status.map(|status| status.as_str().to_owned()),
            agent: search.agent,
            user_id: search.user_id,
            tags: search.tags,
            metadata: search
                .metadata
                .into_iter()
                .map(|(key, value)| v1::MetadataFilter { key, value })
                .collect(),
            awaiting_person: search.awaiting_person,
            updated_after: search.updated_after,
            updated_before: search.updated_before,
            limit: search.limit as u32,
            cursor: search.cursor,
            include_children: search.include_children,
            root: search.root,
        }
    }
}

impl TryFrom<v1::SearchRequest> for SessionSearch {
    type Error = Error;

    /// The search a request asks for; a `limit` of 0 takes the default (the operation checks
    /// the range, as it does for the query string).
    fn try_from(request: v1::SearchRequest) -> Result<Self, Error> {
        Ok(Self {
            status: request
                .status
                .map(|status| parsed("status", status))
                .transpose()?,
            agent: request.agent,
            user_id: request.user_id,
            tags: request.tags,
            metadata: request
                .metadata
                .into_iter()
                .map(|filter| (filter.key, filter.value))
                .collect(),
            awaiting_person: request.awaiting_person,
            updated_after: request.updated_after,
            updated_before: request.updated_before,
            limit: match request.limit {
                0 => DEFAULT_PAGE_LIMIT,
                limit => limit as usize,
            },
            cursor: request.cursor,
            include_children: request.include_children,
            root: request.root,
        })
    }
}

impl From<SessionSummary> for v1::SessionSummary {
    fn from(row: SessionSummary) -> Self {
        Self {
            session_id: row.session_id,
            root_session_id: row.root_session_id,
            parent_session_id: row.parent_session_id,
            agent_type: row.agent_type,
            status: row.status.as_str().to_owned(),
            user_id: row.user_id,
            tags: row.tags,
            created_at: row.created_at,
            updated_at: row.updated_at,
            pending_calls: row.pending_calls,
            step_count: row.step_count,
        }
    }
}

impl TryFrom<v1::SessionSummary> for SessionSummary {
    type Error = Error;

    fn try_from(row: v1::SessionSummary) -> Result<Self, Error> {
        Ok(Self {
            session_id: row.session_id,
            root_session_id: row.root_session_id,
            parent_session_id: row.parent_session_id,
            agent_type: row.agent_type,
            status: parsed("status", row.status)?,
            user_id: row.user_id,
            tags: row.tags,
            created_at: row.created_at,
            updated_at: row.updated_at,
            pending_calls: row.pending_calls,
            step_count: row.step_count,
        })
    }
}

fn kind_name(kind: PersonCallKind) -> &'static str {
    match kind {
        PersonCallKind::ClientTool => "client_tool",
        PersonCallKind::Approval => "approval",
    }
}

impl From<PendingDetail> for v1::PendingDetail {
    fn from(call: PendingDetail) -> Self {
        Self {
            session_id: call.session_id,
            owner_session_id: call.owner_session_id,
            tool_call_id: call.tool_call_id,
            tool_name: call.tool_name,
            input_json: call.input.to_string(),
            kind: kind_name(call.kind).to_owned(),
            approval_id: call.approval_id,
            deadline_at: call.deadline_at,
            awaited_since: call.awaited_since,
            age_ms: call.age_ms,
            agent_type: call.agent_type,
            user_id: call.user_id,
            render_json: call.render.map(|render| render.to_string()),
            output_schema_json: call.output_schema.map(|schema| schema.to_string()),
        }
    }
}

impl TryFrom<v1::PendingDetail> for PendingDetail {
    type Error = Error;

    fn try_from(call: v1::PendingDetail) -> Result<Self, Error> {
        let kind = match call.kind.as_str() {
            "client_tool" => PersonCallKind::ClientTool,
            "approval" => PersonCallKind::Approval,
            _ => {
                return Err(Error::InvalidValue {
                    field: "kind",
                    value: call.kind,
                });
            }
        };
        Ok(Self {
            session_id: call.session_id,
            owner_session_id: call.owner_session_id,
            tool_call_id: call.tool_call_id,
            tool_name: call.tool_name,
            input: serde_json::from_str(&call.input_json).map_err(Error::StateJson)?,
            kind,
            approval_id: call.approval_id,
            deadline_at: call.deadline_at,
            awaited_since: call.awaited_since,
            age_ms: call.age_ms,
            agent_type: call.agent_type,
            user_id: call.user_id,
            render: call
                .render_json
                .map(|text| serde_json::from_str(&text))
                .transpose()
                .map_err(Error::StateJson)?,
            output_schema: call
                .output_schema_json
                .map(|text| serde_json::from_str(&text))
                .transpose()
                .map_err(Error::StateJson)?,
        })
    }
}

/// The conversions of a page: its rows one by one, and its cursor.
macro_rules! page_conversions {
    ($page:ty, $wire:ty, $rows:ident) => {
        impl From<$page> for $wire {
            fn from(page: $page) -> Self {
                Self {
                    $rows: page.$rows.into_iter().map(Into::into).collect(),
                    next_cursor: page.next_cursor,
                }
            }
        }

        impl TryFrom<$wire> for $page {
            type Error = Error;

            fn try_from(page: $wire) -> Result<Self, Error> {
                Ok(Self {
                    $rows: page
                        .$rows
                        .into_iter()
                        .map(TryInto::try_into)
                        .collect::<Result<_, _>>()?,
                    next_cursor: page.next_cursor,
                })
            }
        }
    };
}

page_conversions!(SessionsPage, v1::ListSessionsResponse, sessions);
page_conversions!(PendingPage, v1::ListPendingResponse, calls);

impl From<baton_wire::fork::ForkRequest> for v1::ForkRequest {
    fn from(request: baton_wire::fork::ForkRequest) -> Self {
        Self {
            session_id: request.session_id,
            checkpoint: request.checkpoint,
        }
    }
}

impl From<v1::ForkRequest> for baton_wire::fork::ForkRequest {
    fn from(request: v1::ForkRequest) -> Self {
        Self {
            session_id: request.session_id,
            checkpoint: request.checkpoint,
        }
    }
}

impl From<baton_wire::fork::ForkResponse> for v1::ForkResponse {
    fn from(fork: baton_wire::fork::ForkResponse) -> Self {
        Self {
            session_id: fork.session_id,
            stream_id: fork.stream_id,
            status: fork.status.as_str().to_owned(),
            forked_from: fork.forked_from,
            checkpoint: fork.checkpoint,
            token: fork.token,
        }
    }
}

impl TryFrom<v1::ForkResponse> for baton_wire::fork::ForkResponse {
    type Error = Error;

    fn try_from(fork: v1::ForkResponse) -> Result<Self, Error> {
        Ok(Self {
            session_id: fork.session_id,
            stream_id: fork.stream_id,
            status: parsed("status", fork.status)?,
            forked_from: fork.forked_from,
            checkpoint: fork.checkpoint,
            token: fork.token,
        })
    }
}
