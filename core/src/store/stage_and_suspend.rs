//! A step whose every call is awaited (client tools, approvals: nothing of the run's own to run)
//! stages its turn and suspends its run in one script, `stage_and_suspend.lua`, and one round
//! trip with the index's mark before it and a far deadline after it: a round trip, a script and
//! a wake-up of the session's followers fewer than staging and committing one after the other.
//! Whenever the staging does not simply write (an earlier attempt staged the step, a call id is
//! taken in the tree, a guard refuses) the script writes nothing of the suspension, and the
//! caller goes the usual way, which handles each of those.

use super::{
    Error, PendingCall, StagedTurn, StepRef, Store, custom_state::StateFold, replies::Reply,
    scripts::STAGE_AND_SUSPEND, stage_turn::stage_turn_argument_count,
    suspension::SuspensionArguments,
};
use redis::{FromRedisValue, RedisResult, Value as RedisValue};

/// What `stage_and_suspend.lua` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StagedSuspension {
    /// The turn is staged and the run suspended on its calls.
    Suspended,
    /// Nothing of the suspension is written (the turn may be staged): stage the turn (again)
    /// and commit the step the usual way.
    UsualWay,
}

impl FromRedisValue for StagedSuspension {
    fn from_redis_value(value: &RedisValue) -> RedisResult<Self> {
        let reply = Reply::parse(value)?;
        Ok(match reply.tag.as_str() {
            "ok" => Self::Suspended,
            "unstaged" | "staged" => Self::UsualWay,
            _ => return Err(reply.unexpected()),
        })
    }
}

impl Store {
    /// Stages `turn` (a fresh model turn, each of whose calls is awaited) as the step's and
    /// suspends the run on `pending` (one per call, in call order), in one script; a far
    /// deadline goes in the deadline index in the same round trip, after it (see
    /// [`Self::commit_suspended_step_indexing`]). [`StagedSuspension::UsualWay`] when the
    /// script wrote no suspension: the caller then stages and commits as for any step.
    pub async fn stage_turn_and_suspend(
        &self,
        step: StepRef<'_>,
        turn: &StagedTurn,
        pending: &[PendingCall],
        far_deadline: Option<u64>,
    ) -> Result<StagedSuspension, Error> {
        let mut invocation = STAGE_AND_SUSPEND.on(self, step.address);
        invocation.arg(stage_turn_argument_count(turn));
        self.add_stage_turn_arguments(&mut invocation, step, turn);
        // A fresh turn has no state patches staged (no tool of the step has run): none to fold.
        SuspensionArguments::new(self, step, pending).add_to(
            &mut invocation,
            step,
            &StateFold::default(),
        );
        let indexed = far_deadline
            .map(|wake_at| self.index_deadline_command(step.address, step.run_id, wake_at));
        let (mark, reply) = self
            .mark_then_after(step.address, &invocation, indexed)
            .await?;
        if reply == StagedSuspension::Suspended {
            self.reindex_after_change(step.address, mark).await;
        }
        Ok(reply)
    }
}
