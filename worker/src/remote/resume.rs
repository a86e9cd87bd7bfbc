//! Resume first (a hook of `ops::resume`): a `continue` resume of a root whose tree holds a
//! session awaiting a remote child that relayed calls goes on with that child first: once the
//! relayed calls are all answered, the follow of each such child is started
//! (`RemoteFollowWorkflow`), which resumes the child on its producer and, at its end, answers and
//! resumes its caller.

use super::follow::ChildFollow;
use crate::state::AppState;
use baton_core::{
    ApiError,
    api::ResumeResponse,
    store::{SessionAddress, SessionState, Status, TreeSession},
};

/// What the root's resume does about its tree's paused remote children.
pub(crate) enum ResumeFirst {
    /// No session of the tree awaits a child that relayed calls: the resume goes on as usual.
    Nothing,
    /// Such a child's follow cannot start while these calls of the tree await a person.
    Awaited(Vec<String>),
    /// The children's follows started; the first one's workflow is the resume's.
    Followed(ResumeResponse),
}

/// A `continue` resume of `root`'s tree (as `tree` read it) where a session awaits a remote child
/// that relayed calls: [`ResumeFirst::Awaited`] while any call of the tree waits on a person,
/// else the follow of each such child is started.
pub(crate) async fn resume_first(
    state: &AppState,
    root: &SessionState,
    tree: &[TreeSession],
) -> Result<ResumeFirst, ApiError> {
    let mut follows = Vec::new();
    for member in tree.iter().filter(|member| member.is_suspended()) {
        let (address, Some(caller)) = (&member.address, &member.state) else {
            continue;
        };
        for group in &member.relayed {
            let Some(call) = member
                .pending
                .iter()
                .find(|call| call.tool_call_id == group.via_call_id)
            else {
                continue;
            };
            let Some((first, _)) = group.calls.first() else {
                continue;
            };
            if member.answers.contains_key(&group.via_call_id) {
                continue;
            }
            follows.push(ChildFollow {
                address,
                caller,
                call,
                first_relayed: Some(&first.call.tool_call_id),
                resume_child: true,
            });
        }
    }
    if follows.is_empty() {
        return Ok(ResumeFirst::Nothing);
    }
    let open: Vec<String> = state
        .store
        .person_calls(&SessionAddress::root(&root.session_id), true)
        .await?
        .into_iter()
        .map(|person| person.call.tool_call_id)
        .collect();
    if !open.is_empty() {
        return Ok(ResumeFirst::Awaited(open));
    }
    let mut first_follow = None;
    for follow in follows {
        let workflow_id = follow.start(super::targets(state)).await?;
        tracing::info!(session_id = %root.session_id, %workflow_id, "a remote child's follow started");
        first_follow.get_or_insert(workflow_id);
    }
    Ok(ResumeFirst::Followed(ResumeResponse {
        session_id: root.session_id.clone(),
        run_id: root.run_id.clone(),
        workflow_id: first_follow,
        status: Status::Active,
    }))
}
