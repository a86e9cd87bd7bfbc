//! A session's next run, as the operations give it one: claimed in one script
//! (`Store::claim_new_run`, fresh ids), then its workflow started. The one place a request gives a
//! session a run after its first (a resume, a tree's resume); a rewind has a script of its own
//! (`rewind.rs`), and the activities claim through the same store operation.

use super::temporal::start_run_workflow;
use crate::state::AppState;
use baton_activities::io::RunInput;
use baton_core::{
    Agent, ApiError,
    store::{Claim, NewRunId, ResumeEntry, RunClaim, SessionAddress},
};

/// Claims the session at `address` (of `agent`, streaming to `stream_id`) for a new run and
/// starts the run's workflow `agent__<type>__<session>__resume-<runId>`, whose first step drains
/// the answers. A refused claim is answered as it is, with nothing written and nothing started;
/// a start Temporal refuses releases the claim (see `start_run_workflow`).
pub(super) async fn claim_and_start(
    state: &AppState,
    address: &SessionAddress,
    agent: &Agent,
    stream_id: &str,
    entry: &ResumeEntry,
) -> Result<Claim, ApiError> {
    let claim = state
        .store
        .claim_new_run(
            address,
            RunClaim {
                agent_type: agent.name(),
                stream_id,
                run_id: NewRunId::Minted,
            },
            entry,
        )
        .await?;
    if let Claim::Claimed(claimed) = &claim {
        let input = RunInput::resumed(
            address.clone(),
            agent,
            claimed,
            stream_id,
            state.policy.clone(),
        );
        start_run_workflow(state, &claimed.workflow_id, input).await?;
    }
    Ok(claim)
}
