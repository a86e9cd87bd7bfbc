//! The deadline workflow's activity: once the earliest open deadline of a suspended run's batch
//! has lapsed, claim the session for a new run, or say when to look again.

use crate::{
    AgentActivities,
    failure::Error,
    io::{DeadlineCheck, DeadlineInput, RunInput},
    plan,
};
use baton_core::store::{self, Claim, NewRunId, ResumeEntry, RunClaim};

impl AgentActivities {
    /// The body of the `check_deadline` activity.
    pub(crate) async fn claim_lapsed_batch(
        &self,
        input: &DeadlineInput,
    ) -> Result<DeadlineCheck, Error> {
        let suspended = &input.run;
        let address = &suspended.address;
        let Some(state) = self.store.session(address).await? else {
            return Ok(DeadlineCheck::Nothing);
        };
        // The run resumed, stopped or failed since: its deadlines no longer matter.
        if state.run_id != suspended.run_id || state.status != store::Status::SuspendedClientTool {
            return Ok(DeadlineCheck::Nothing);
        }
        let agent = self.agent(&suspended.agent_type)?;
        let entry = ResumeEntry {
            expected_run_id: Some(suspended.run_id.clone()),
            ..ResumeEntry::default()
        };
        let claim = self
            .store
            .claim_new_run(
                address,
                RunClaim {
                    agent_type: agent.name(),
                    stream_id: &state.stream_id,
                    run_id: NewRunId::Minted,
                },
                &entry,
            )
            .await?;
        Ok(match claim {
            Claim::Claimed(claimed) => {
                let run_id = &claimed.run_id;
                tracing::info!(session = %address.session_id, %run_id, "deadline lapsed: resuming");
                // The suspended run's address, stream and policy go on into the resumed run.
                DeadlineCheck::Resume {
                    run: Box::new(RunInput::resumed(
                        address.clone(),
                        agent,
                        &claimed,
                        &suspended.stream_id,
                        suspended.policy.clone(),
                    )),
                    workflow_id: claimed.workflow_id,
                }
            }
            Claim::Awaiting { tool_call_ids } => {
                let pending = self.store.pending_calls(address).await?;
                match plan::next_look(pending.iter(), &tool_call_ids, store::now_ms()) {
                    Some(wake_at) => DeadlineCheck::WaitUntil { wake_at },
                    None => DeadlineCheck::Nothing,
                }
            }
            _ => DeadlineCheck::Nothing,
        })
    }
}
