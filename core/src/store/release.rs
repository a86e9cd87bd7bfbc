//! Undoing a resume's claim whose run never started (see `release_claim.lua`).

use super::{Error, RunRef, Store, Written, now_ms, replies::WriteReply, scripts::RELEASE_CLAIM};
use crate::chunk::{ChunkKind, encode_unsequenced};

impl Store {
    /// Gives the session back to its suspended run when `claimed` (the run a resume claimed it
    /// for) never started: `true` when released, `false` when the claim is not held any more
    /// (the run started after all, or it was not a suspension's claim). The `suspended` chunk
    /// names the suspended run and its awaited calls again.
    pub async fn release_claim(&self, claimed: RunRef<'_>) -> Result<bool, Error> {
        let index_address = claimed.address.clone();
        let mark = self.mark_for_index(&index_address).await?;
        let result = self.release_claim_unindexed(claimed).await;
        self.reindex_after_change(&index_address, mark).await;
        result
    }

    /// [`Self::release_claim`] before the search index follows it.
    async fn release_claim_unindexed(&self, claimed: RunRef<'_>) -> Result<bool, Error> {
        let Some(state) = self.session(claimed.address).await? else {
            return Err(Error::SessionNotFound(claimed.address.session_id.clone()));
        };
        let Some(suspension) = state.suspension else {
            return Ok(false);
        };
        let suspended = ChunkKind::Suspended {
            step: suspension.step,
            tool_call_ids: suspension.tool_call_ids,
        };
        let header = self.header(RunRef {
            address: claimed.address,
            stream_id: claimed.stream_id,
            run_id: &suspension.run_id,
        });
        let reply: WriteReply = RELEASE_CLAIM
            .on(self, claimed.address)
            .arg(claimed.run_id)
            .arg(now_ms())
            .arg(encode_unsequenced(&header, &suspended))
            .run(self)
            .await?;
        Ok(matches!(reply, WriteReply::Written(Written::New)))
    }
}
