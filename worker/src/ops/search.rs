//! The operator's reads across sessions: `GET /sessions` (a page of sessions) and `GET /pending`
//! (the calls waiting on a person), over the search index (`baton_core::store::search_index`).
//! The index only narrows: every hit is read back from its session and kept only if it still
//! matches, and one that does not is marked for the repair sweep.

use crate::{
    auth::{Principal, SearchScope},
    state::AppState,
};
use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use baton_core::{
    ApiError, ErrorCode,
    search::{
        MAX_PAGE_LIMIT, PendingDetail, PendingPage, PersonCallKind, SessionSearch, SessionSummary,
        SessionsPage,
    },
    store::{
        IndexPosition, IndexQuery, IndexScope, IndexTerm, PendingKind, PersonCall, SessionAddress,
        SessionState, metadata_value_text, now_ms,
    },
};

/// A page of sessions, newest activity first, of those the principal sees.
pub async fn list_sessions(
    state: &AppState,
    principal: &Principal,
    search: &SessionSearch,
) -> Result<SessionsPage, ApiError> {
    let scope = principal.search_scope()?;
    let (rows, next_cursor) = search_rows(state, &scope, search).await?;
    Ok(SessionsPage {
        sessions: rows.into_iter().map(|row| row.summary).collect(),
        next_cursor,
    })
}

/// A page of the calls waiting on a person: those of the page's sessions (roots with a call
/// open anywhere in their tree, newest activity first), each tree's in session and call order.
/// `limit` counts the sessions a page covers.
pub async fn list_pending(
    state: &AppState,
    principal: &Principal,
    search: &SessionSearch,
) -> Result<PendingPage, ApiError> {
    let scope = principal.search_scope()?;
    let search = SessionSearch {
        awaiting_person: true,
        include_children: false,
        ..search.clone()
    };
    let (rows, next_cursor) = search_rows(state, &scope, &search).await?;
    let now = now_ms();
    // A root's row holds its whole tree's calls; a `root` search also gives the rows of the
    // sessions below it (which a filter may have left alone): each call is listed once, under
    // the root it is answered through.
    let mut listed = std::collections::HashSet::new();
    let calls = rows
        .into_iter()
        .flat_map(|row| {
            let root = row.summary.root_session_id;
            row.calls.into_iter().map(move |call| (root.clone(), call))
        })
        .filter(|(_, call)| {
            listed.insert((
                call.owner.session_id.clone(),
                call.call.tool_call_id.clone(),
            ))
        })
        .map(|(root, call)| pending_detail(&state.registry, &root, call, Some(now)))
        .collect::<Result<_, _>>()?;
    Ok(PendingPage { calls, next_cursor })
}

/// One call waiting on a person, as `/pending` (with its age at `now`) and `/status` show it.
pub(crate) fn pending_detail(
    registry: &baton_core::AgentRegistry,
    root_session_id: &str,
    waiting: PersonCall,
    now: Option<u64>,
) -> Result<PendingDetail, ApiError> {
    let PersonCall {
        owner,
        call,
        agent_type,
        user_id,
        render,
    } = waiting;
    // A relayed call's hint is its producer's; a local call's, its tool's here. So is the
    // output schema: a relayed call's is its hint's, when the producer's hint carries one.
    let relayed = baton_core::subagent::is_relayed_call_id(&call.tool_call_id);
    let agent = registry.get(&agent_type).filter(|_| !relayed);
    let tool = agent.and_then(|agent| match agent.any_tool(&call.tool_name)? {
        baton_core::agent::AgentTool::Client(tool) => Some(tool),
        _ => None,
    });
    let render = render.or_else(|| tool?.render_json());
    let output_schema = match tool {
        Some(tool) => tool.declared_output_schema().cloned(),
        None => render
            .as_ref()
            .and_then(|hint| hint.get("outputSchema").cloned()),
    };
    let kind = match call.kind {
        PendingKind::Approval => PersonCallKind::Approval,
        _ => PersonCallKind::ClientTool,
    };
    Ok(PendingDetail {
        session_id: root_session_id.to_owned(),
        owner_session_id: owner.session_id,
        tool_call_id: call.tool_call_id,
        tool_name: call.tool_name,
        input: call.input,
        kind,
        approval_id: call.approval_id,
        deadline_at: call.deadline_at,
        awaited_since: call.awaited_since,
        age_ms: now.map(|now| now.saturating_sub(call.awaited_since)),
        agent_type,
        user_id,
        render,
        output_schema,
    })
}

/// A session that matched, with its calls waiting on a person.
struct Row {
    summary: SessionSummary,
    calls: Vec<PersonCall>,
    /// Whether a service owns the session (a root the producer mount started).
    owned: bool,
}

async fn search_rows(
    state: &AppState,
    scope: &SearchScope,
    search: &SessionSearch,
) -> Result<(Vec<Row>, Option<String>), ApiError> {
    if let Some(root) = &search.root {
        // One tree, whatever the other filters: only if its root is in the caller's scope.
        let address = super::checked_address(root)?;
        let in_scope = match scope {
            SearchScope::All => true,
            _ => state
                .store
                .session(&SessionAddress::root(baton_core::ids::root_of(root)))
                .await?
                .is_some_and(|session| scope.holds(&session)),
        };
        if !in_scope {
            return Ok((Vec::new(), None));
        }
        return tree_rows(state, &address, search)
            .await
            .map(|rows| (rows, None));
    }
    if let SearchScope::Tree { root_session_id } = scope {
        // A session token sees one tree: no index needed, and no next page.
        let row = checked_row(state, &SessionAddress::root(root_session_id), search).await?;
        return Ok((row.into_iter().collect(), None));
    }
    let mut search = search.clone();
    if let SearchScope::User { user_id } = scope {
        if search
            .user_id
            .as_ref()
            .is_some_and(|asked| asked != user_id)
        {
            return Ok((Vec::new(), None));
        }
        search.user_id = Some(user_id.clone());
    }
    let query = index_query(&search)?;
    let page = state.store.search_index(&query).await?;
    let rows = futures::future::try_join_all(page.hits.iter().map(|hit| {
        let address = baton_core::store::SessionAddress {
            root_session_id: baton_core::ids::root_of(&hit.session_id).to_owned(),
            session_id: hit.session_id.clone(),
        };
        let search = &search;
        async move {
            let row = checked_row(state, &address, search).await?;
            if row.is_none() {
                // A stale entry: written again from the session.
                state.store.reindex(&address).await?;
            }
            // A user sees no session of a tree a service owns, though it carries their userId.
            if let (Some(found), SearchScope::User { .. }) = (&row, scope)
                && !in_user_scope(state, scope, found).await?
            {
                return Ok(None);
            }
            Ok::<_, ApiError>(row)
        }
    }))
    .await?;
    Ok((
        rows.into_iter().flatten().collect(),
        page.next.as_ref().map(encode_cursor),
    ))
}

/// Whether a row's tree is in a user's scope: its root is theirs and no service owns it.
async fn in_user_scope(state: &AppState, scope: &SearchScope, row: &Row) -> Result<bool, ApiError> {
    if row.summary.session_id == row.summary.root_session_id {
        // The row was read from the root itself: its userId matched the search's.
        return Ok(!row.owned);
    }
    let root = SessionAddress::root(&row.summary.root_session_id);
    Ok(state
        .store
        .session(&root)
        .await?
        .is_some_and(|root| scope.holds(&root)))
}

/// The rows of one tree that match the search: the root, then its sessions in id order (a child
/// id extends its parent's, so a parent comes before its children).
async fn tree_rows(
    state: &AppState,
    address: &SessionAddress,
    search: &SessionSearch,
) -> Result<Vec<Row>, ApiError> {
    let root = &address.session_id;
    if !address.is_root() {
        return Err(ApiError::new(
            ErrorCode::ValidationError,
            "root must name a root session, not a sub-agent's",
        ));
    }
    let search = SessionSearch {
        include_children: true,
        ..search.clone()
    };
    let mut rows: Vec<Row> = checked_row(state, address, &search)
        .await?
        .into_iter()
        .collect();
    for child in state.store.tree_sessions(address).await? {
        let child = SessionAddress {
            root_session_id: root.to_owned(),
            session_id: child,
        };
        rows.extend(checked_row(state, &child, &search).await?);
    }
    Ok(rows)
}

/// The session's row if it exists and matches the search (read from the session itself).
async fn checked_row(
    state: &AppState,
    address: &SessionAddress,
    search: &SessionSearch,
) -> Result<Option<Row>, ApiError> {
    let (Some(session), calls) = state
        .store
        .session_and_person_calls(address, address.is_root())
        .await?
    else {
        return Ok(None);
    };
    if !matches(&session, search) || (search.awaiting_person && calls.is_empty()) {
        return Ok(None);
    }
    let parent_session_id = if address.is_root() {
        None
    } else {
        state
            .store
            .parent_of(address)
            .await?
            .map(|(parent, _call)| parent.session_id)
    };
    let owned = session.owner.is_some();
    Ok(Some(Row {
        owned,
        summary: SessionSummary {
            session_id: session.session_id,
            root_session_id: session.root_session_id,
            parent_session_id,
            agent_type: session.agent_type,
            status: session.status,
            user_id: session.meta.user_id,
            tags: session.meta.tags,
            created_at: session.created_at,
            updated_at: session.updated_at,
            pending_calls: calls.len() as u32,
            step_count: session.step_count,
        },
        calls,
    }))
}

/// Whether the session's state holds every filter but `awaiting` (checked on its calls).
fn matches(session: &SessionState, search: &SessionSearch) -> bool {
    let meta = &session.meta;
    search.status.is_none_or(|status| status == session.status)
        && search
            .agent
            .as_ref()
            .is_none_or(|agent| *agent == session.agent_type)
        && search
            .user_id
            .as_ref()
            .is_none_or(|user| meta.user_id.as_ref() == Some(user))
        && search.tags.iter().all(|tag| meta.tags.contains(tag))
        && search.metadata.iter().all(|(key, value)| {
            meta.metadata
                .as_ref()
                .and_then(|metadata| metadata.get(key))
                .and_then(metadata_value_text)
                .is_some_and(|text| text == *value)
        })
        && (search.include_children || session.session_id == session.root_session_id)
}

/// The index query of a search: the narrowest filter drives it, the others must be held too.
fn index_query(search: &SessionSearch) -> Result<IndexQuery, ApiError> {
    if !(1..=MAX_PAGE_LIMIT).contains(&search.limit) {
        return Err(ApiError::new(
            ErrorCode::ValidationError,
            format!("limit must be 1 to {MAX_PAGE_LIMIT}"),
        ));
    }
    let mut terms = Vec::new();
    if search.awaiting_person {
        terms.push(IndexTerm::Awaiting);
    }
    terms.extend(search.user_id.iter().cloned().map(IndexTerm::User));
    terms.extend(search.tags.iter().cloned().map(IndexTerm::Tag));
    terms.extend(
        search
            .metadata
            .iter()
            .map(|(key, value)| IndexTerm::Metadata(key.clone(), value.clone())),
    );
    terms.extend(search.agent.iter().cloned().map(IndexTerm::Agent));
    terms.extend(search.status.map(IndexTerm::Status));
    let mut terms = terms.into_iter();
    let drive = terms.next().unwrap_or(IndexTerm::All);
    let mut scopes = vec![IndexScope::Roots];
    if search.include_children {
        scopes.push(IndexScope::Children);
    }
    Ok(IndexQuery {
        drive,
        required: terms.collect(),
        scopes,
        after: search.cursor.as_deref().map(decode_cursor).transpose()?,
        updated_before: search.updated_before,
        updated_after: search.updated_after,
        limit: search.limit,
    })
}

/// The opaque cursor of a position: `v1:<score>:<sessionId>`, base64url.
fn encode_cursor(position: &IndexPosition) -> String {
    URL_SAFE_NO_PAD.encode(format!("v1:{}:{}", position.score, position.session_id))
}

fn decode_cursor(cursor: &str) -> Result<IndexPosition, ApiError> {
    let invalid = || {
        ApiError::new(
            ErrorCode::ValidationError,
            "cursor is not one this server gave",
        )
    };
    let text = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| invalid())?;
    let text = String::from_utf8(text).map_err(|_| invalid())?;
    let mut parts = text.splitn(3, ':');
    let (Some("v1"), Some(score), Some(session_id)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(invalid());
    };
    if !baton_core::ids::is_valid_session_id(session_id) {
        return Err(invalid());
    }
    Ok(IndexPosition {
        score: score.parse().map_err(|_| invalid())?,
        session_id: session_id.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_reads_back_and_a_forged_one_is_refused() {
        let position = IndexPosition {
            score: 1_733_000_000_000,
            session_id: "abc".into(),
        };
        assert_eq!(decode_cursor(&encode_cursor(&position)).unwrap(), position);
        for forged in [
            "",
            "!!",
            &URL_SAFE_NO_PAD.encode("v2:1:abc"),
            &URL_SAFE_NO_PAD.encode("v1:x:abc"),
        ] {
            assert_eq!(
                decode_cursor(forged).unwrap_err().code,
                ErrorCode::ValidationError
            );
        }
    }

    #[test]
    fn the_narrowest_filter_drives_the_query() {
        let search = SessionSearch {
            status: Some(baton_core::store::Status::Active),
            tags: vec!["vip".into()],
            user_id: Some("u".into()),
            ..SessionSearch::default()
        };
        let query = index_query(&search).unwrap();
        assert_eq!(query.drive, IndexTerm::User("u".into()));
        assert_eq!(
            query.required,
            [
                IndexTerm::Tag("vip".into()),
                IndexTerm::Status(baton_core::store::Status::Active)
            ]
        );
        assert_eq!(
            index_query(&SessionSearch::default()).unwrap().drive,
            IndexTerm::All
        );
    }
}
