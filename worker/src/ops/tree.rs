//! Operations on a whole session tree, through its root: a `continue` resume that applies the
//! batch rule across the tree and resumes its deepest ready sessions first (each parent then
//! continues when its children's results are in), and a stop that stops every session of it.

use super::{
    already_running,
    new_run::claim_and_start,
    temporal::{cancel_run_workflow, resume_parent_of_ended_children},
};
use crate::state::AppState;
use baton_core::{
    ApiError, ErrorCode, Refusal,
    api::ResumeResponse,
    store::{
        Claim, ResumeEntry, SessionAddress, SessionState, Status, StopKind, TreeSession, now_ms,
    },
};
use std::collections::HashMap;

/// The sessions of `tree` (a read of the tree rooted at `root`, the root first) that have a
/// state, each with its ancestors (nearest first; none for the root). The root is the one the
/// caller holds.
fn tree_members<'a>(
    root: &SessionState,
    tree: &'a [TreeSession],
) -> Vec<(&'a TreeSession, SessionState, Vec<String>)> {
    let parents: HashMap<&str, &str> = tree
        .iter()
        .skip(1)
        .filter_map(|member| {
            let parent = member.parent_session_id.as_deref()?;
            Some((member.address.session_id.as_str(), parent))
        })
        .collect();
    let ancestors = |id: &str| {
        let mut ancestors: Vec<String> = Vec::new();
        let mut current = parents.get(id);
        // A parent map with a cycle would be corrupt data; the tree's depth bounds the walk.
        while let Some(parent) = current
            && ancestors.len() <= parents.len()
        {
            ancestors.push((*parent).to_owned());
            current = parents.get(parent);
        }
        ancestors
    };
    let root_member = tree.first().map(|member| (member, root.clone()));
    let descendants = tree
        .iter()
        .skip(1)
        .filter_map(|member| Some((member, member.state.clone()?)));
    root_member
        .into_iter()
        .chain(descendants)
        .map(|(member, session)| {
            let ancestors = ancestors(&member.address.session_id);
            (member, session, ancestors)
        })
        .collect()
}

/// Resumes a suspended tree from its root (`continue`): refused, writing nothing, while any call
/// of the tree is neither answered nor past its deadline (`state_not_resumable`, naming them);
/// else every suspended session whose batch is complete is claimed and resumed, the deepest
/// first. `None` when no descendant of the root is suspended: the root resumes on its own.
///
/// With a message (`with_message`), the message waits on the root for its resumed run, which
/// appends it after the drained results. With `abandonPending` too, the descendants' runs are
/// stopped (their calls answer `run_stopped`) and `None` lets the root resume on its own,
/// abandoning its calls.
pub(super) async fn resume_tree(
    state: &AppState,
    root: &SessionState,
    entry: &ResumeEntry,
    tree: &[TreeSession],
) -> Result<Option<ResumeResponse>, ApiError> {
    let mut suspended: Vec<_> = tree_members(root, tree)
        .into_iter()
        .filter(|(_, session, _)| session.status == Status::SuspendedClientTool)
        .map(|(member, session, ancestors)| (member, session, ancestors.len()))
        .collect();
    if entry.message.is_none()
        && !entry.abandon_pending
        && let Some(resumed) = report_unreported_ends(state, root, tree, &suspended).await?
    {
        return Ok(Some(resumed));
    }
    if !suspended.iter().any(|(_, _, depth)| *depth > 0) {
        return Ok(None);
    }
    if entry.abandon_pending {
        stop_descendants(state, root, &root.session_id, StopKind::Interrupt).await?;
        return Ok(None);
    }

    let now = now_ms();
    let mut open = Vec::new();
    for (member, _, _) in &suspended {
        open.extend(
            member
                .pending
                .iter()
                .filter(|call| {
                    !call.kind.is_sub_agent()
                        && !member.answers.contains_key(&call.tool_call_id)
                        && call.deadline_at > now
                })
                .map(|call| call.tool_call_id.clone()),
        );
    }
    if !open.is_empty() {
        return Err(calls_awaited(open));
    }
    if let Some(message) = &entry.message {
        state
            .store
            .queue_root_message(
                &SessionAddress::root(&root.session_id),
                &root.run_id,
                message,
            )
            .await
            .map_err(|_| already_running())?;
    }
    suspended.sort_by_key(|(_, _, depth)| std::cmp::Reverse(*depth));
    let mut first_resumed = None;
    for (member, session, _) in suspended {
        let address = &member.address;
        let Some(agent) = state.registry.get(&session.agent_type) else {
            continue;
        };
        let entry = ResumeEntry {
            expected_run_id: Some(session.run_id.clone()),
            ..ResumeEntry::default()
        };
        let claim = claim_and_start(state, address, agent, &session.stream_id, &entry).await?;
        // A session still awaiting its children is resumed by the last of them to end.
        let Claim::Claimed(claimed) = claim else {
            continue;
        };
        let workflow_id = claimed.workflow_id;
        tracing::info!(session_id = %address.session_id, %workflow_id, "tree session resumed");
        first_resumed.get_or_insert((claimed.run_id, workflow_id));
    }
    let Some((run_id, workflow_id)) = first_resumed else {
        return Err(already_running());
    };
    Ok(Some(ResumeResponse {
        session_id: root.session_id.clone(),
        run_id,
        workflow_id: Some(workflow_id),
        status: Status::Active,
    }))
}

/// The refusal of a tree's resume while `open` calls of it are awaited, naming them.
pub(super) fn calls_awaited(mut open: Vec<String>) -> ApiError {
    open.sort();
    ApiError::new(
        ErrorCode::StateNotResumable,
        format!(
            "calls of the session tree still awaited, answer them first: {}",
            open.join(", ")
        ),
    )
    .with(Refusal::CallsAwaited {
        awaited_tool_call_ids: open,
    })
}

/// Reports the end of any child a suspended session of the tree awaits but whose end never
/// reached it (a child stopped or failed by a version that did not report it, its workflow gone):
/// the same idempotent report a child's workflow makes, so a tree is never left waiting on a
/// call nobody can answer. When that resumes a session, its run is the resume's answer.
async fn report_unreported_ends(
    state: &AppState,
    root: &SessionState,
    tree: &[TreeSession],
    suspended: &[(&TreeSession, SessionState, usize)],
) -> Result<Option<ResumeResponse>, ApiError> {
    for (member, _, _) in suspended {
        let address = &member.address;
        let mut awaits_an_ended_child = false;
        for call in &member.pending {
            let Some(child) = member.children.get(&call.tool_call_id) else {
                continue;
            };
            // Every child is a member of its tree (`start_child.lua`), so in the read.
            let ended = match tree.iter().find(|read| read.address.session_id == *child) {
                Some(read) => read.state.clone(),
                None => {
                    let child = SessionAddress {
                        root_session_id: root.session_id.clone(),
                        session_id: child.clone(),
                    };
                    state.store.session(&child).await?
                }
            };
            awaits_an_ended_child |=
                call.kind.is_sub_agent() && ended.is_some_and(|child| child.status.is_terminal());
        }
        if !awaits_an_ended_child {
            continue;
        }
        let resumed = resume_parent_of_ended_children(state, address).await?;
        if let Some((run_id, workflow_id)) = resumed {
            tracing::info!(session_id = %address.session_id, %workflow_id,
                "an ended child's unreported end resumes its parent");
            return Ok(Some(ResumeResponse {
                session_id: root.session_id.clone(),
                run_id,
                workflow_id: Some(workflow_id),
                status: Status::Active,
            }));
        }
    }
    Ok(None)
}

/// Stops every session below `top` (a session of the tree rooted at `root`, or the root itself)
/// that has not ended, after `top`'s own stop: a stop record on each one's run, then
/// cancellation of its workflow. A late submit to any of their calls then answers
/// `run_stopped`.
///
/// Below a stopped root every write is fenced on the root's stop (`tree_stopped` in the
/// prelude), so a busy session cannot move on between this read and its stop: each pass reads
/// the tree again, until every session below `top` has ended (a session started or claimed
/// between two passes is stopped by the next).
pub(super) async fn stop_descendants(
    state: &AppState,
    root: &SessionState,
    top: &str,
    kind: StopKind,
) -> Result<(), ApiError> {
    for _ in 0..STOP_PASSES {
        if stop_descendants_once(state, root, top, kind).await? == 0 {
            return Ok(());
        }
    }
    tracing::warn!(root = %root.session_id, top, ?kind,
        "sessions of the tree kept moving while it was stopped; their writes are fenced");
    Ok(())
}

/// How many times a stop reads the tree again: once, and once more for each session that moved
/// between the read and its stop (fenced, a session moves at most by a claim).
const STOP_PASSES: usize = 4;

/// One pass of [`stop_descendants`]: the number of sessions it found still running.
async fn stop_descendants_once(
    state: &AppState,
    root: &SessionState,
    top: &str,
    kind: StopKind,
) -> Result<usize, ApiError> {
    let mut running = 0;
    let tree = state
        .store
        .read_tree(&SessionAddress::root(&root.session_id), true)
        .await?;
    for (member, session, ancestors) in tree_members(root, &tree) {
        let address = &member.address;
        if !ancestors.iter().any(|ancestor| ancestor == top) || session.status.is_terminal() {
            continue;
        }
        running += 1;
        let stopped = state.store.stop_run(address, kind).await?;
        if let baton_core::store::Stopped::Stopped {
            workflow_id,
            closed_calls,
            ..
        } = stopped
        {
            if let Some(workflow_id) = workflow_id {
                cancel_run_workflow(state, &workflow_id).await;
            }
            // A session of the tree waiting on a remote child holds no follower that would.
            crate::remote::after_stop(state, address, &session.agent_type, &closed_calls, kind)
                .await;
        }
        tracing::info!(session_id = %address.session_id, ?kind, "tree session stopped");
    }
    Ok(running)
}
