//! The root's submit bucket spent alone (`take_submit_token.lua`), for an answer that no submit
//! script of this store writes: an answer to a call a remote child relayed takes its token here
//! before it is sent to the child's producer (see `relay.rs`), so the root's rate limit holds
//! for every answer it takes, from the one bucket `submit_answer.lua` spends.

use super::{Error, SessionAddress, Store, now_ms, scripts::TAKE_SUBMIT_TOKEN};
use std::time::Duration;

impl Store {
    /// Takes one token of the submit bucket of `root` (a tree's root) at `per_minute` tokens a
    /// minute (at least one): `None` when taken, else how long until one is available (and
    /// nothing was written).
    pub async fn take_submit_token(
        &self,
        root: &SessionAddress,
        per_minute: u32,
    ) -> Result<Option<Duration>, Error> {
        let per_minute = per_minute.max(1);
        let wait_ms: u64 = TAKE_SUBMIT_TOKEN
            .on(self, root)
            .arg(now_ms())
            .arg(per_minute)
            .arg(f64::from(per_minute) / 60_000.0)
            .run(self)
            .await?;
        Ok((wait_ms > 0).then(|| Duration::from_millis(wait_ms)))
    }
}
