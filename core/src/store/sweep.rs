//! What the zombie sweep reads: the sessions whose status is `active` but that nothing has
//! written for a while (a run whose workflow may be gone). It reads the search index, never the
//! keyspace: per index shard the `status:active` sets of roots and children below the quiet
//! time, and the sessions marked for the index (a change whose entry was not written yet, as a
//! worker killed between the two leaves), each checked against its session's state. A suspended
//! or ended session is in neither, so it costs a pass nothing.

use super::{
    Error, SessionAddress, Status, Store,
    index_id::expand,
    now_ms,
    search_index::{INDEX_SHARDS, IndexScope, IndexTerm, address_of},
};
use crate::ids;
use std::collections::BTreeSet;

/// An `active` session not written for a while, and the run that holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuietRun {
    pub address: SessionAddress,
    pub run_id: String,
    pub stream_id: String,
    pub workflow_id: Option<String>,
    /// When the session was last written (ms since the epoch).
    pub updated_at: u64,
    /// The session's agent type, and the steps it had committed.
    pub agent_type: Option<String>,
    pub step_count: u32,
}

impl QuietRun {
    /// Whether the run is one a claim gave the session after its first (a resume, a rewind, a
    /// child's report): its workflow is `…__resume-<runId>`, and the claim holds all its input.
    pub fn is_claimed(&self) -> bool {
        self.agent_type.as_deref().is_some_and(|agent_type| {
            self.workflow_id.as_deref()
                == Some(&ids::resume_workflow_id(
                    agent_type,
                    &self.address.session_id,
                    &self.run_id,
                ))
        })
    }
}

/// `status`, `runId`, `streamId`, `workflowId`, `updatedAt`, `agentType` and `stepCount` of a
/// state hash.
type StateFields = (
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<u64>,
    Option<String>,
    Option<u32>,
);

impl Store {
    /// The `active` sessions under this store's prefix not written for `quiet_ms` or more.
    ///
    /// The candidates come from the search index: an entry's score is the session's `updatedAt`
    /// when it was written, never later than the session's own, so a session indexed as active
    /// later than the quiet time is not quiet either; a session whose change the index has not
    /// followed yet is marked (`dirty`, before the change), so it is read from the marks. Each
    /// candidate is checked against its state: the index is a hint, the state the truth.
    pub async fn quiet_active_runs(&self, quiet_ms: u64) -> Result<Vec<QuietRun>, Error> {
        let now = now_ms();
        let quiet_since = now.saturating_sub(quiet_ms);
        let active = IndexTerm::Status(Status::Active).text();
        let mut candidates = BTreeSet::new();
        for shard in 0..INDEX_SHARDS {
            // One shard's keys share its hash tag: one transaction, one node on a cluster. Read
            // at one instant, an active session is in its `status:active` set or marked (its
            // entry and the clearing of its mark are one script): read one after the other, a
            // write between the two reads could hide it from both.
            let mut pipe = redis::pipe();
            pipe.atomic();
            for scope in [IndexScope::Roots, IndexScope::Children] {
                let key = self.index_key(shard, &format!("{}:{active}", scope.name()));
                pipe.zrangebyscore(key, "-inf", quiet_since);
            }
            pipe.zrangebyscore(self.index_key(shard, "dirty"), "-inf", quiet_since);
            let (roots, children, marked): (Vec<String>, Vec<String>, Vec<String>) =
                pipe.query_async(&mut self.conn()).await?;
            candidates.extend(
                roots
                    .iter()
                    .chain(&children)
                    .chain(&marked)
                    .map(|member| expand(member)),
            );
        }
        let mut quiet = Vec::new();
        for session_id in candidates {
            let address = address_of(&session_id);
            if let Some(run) = self.quiet_run(address, now, quiet_ms).await? {
                quiet.push(run);
            }
        }
        Ok(quiet)
    }

    /// The session's run when it is `active` and quiet for `quiet_ms` at `now`.
    async fn quiet_run(
        &self,
        address: SessionAddress,
        now: u64,
        quiet_ms: u64,
    ) -> Result<Option<QuietRun>, Error> {
        let (status, run_id, stream_id, workflow_id, updated_at, agent_type, step_count): StateFields =
            redis::cmd("HMGET")
                .arg(self.key(&address, super::keys::Key::State))
                .arg(&[
                    "status",
                    "runId",
                    "streamId",
                    "workflowId",
                    "updatedAt",
                    "agentType",
                    "stepCount",
                ])
                .query_async(&mut self.conn())
                .await?;
        let (Some(status), Some(run_id), Some(stream_id), Some(updated_at)) =
            (status, run_id, stream_id, updated_at)
        else {
            return Ok(None);
        };
        if status != Status::Active.as_str() || now.saturating_sub(updated_at) < quiet_ms {
            return Ok(None);
        }
        let workflow_id = agent_type.as_ref().map(|agent_type| {
            super::session::workflow_id_of(
                workflow_id.as_deref(),
                agent_type,
                &address.session_id,
                &run_id,
            )
        });
        Ok(Some(QuietRun {
            address,
            run_id,
            stream_id,
            workflow_id,
            updated_at,
            agent_type,
            step_count: step_count.unwrap_or(0),
        }))
    }
}
