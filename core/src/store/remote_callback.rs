//! The turn-end callbacks a consumer asks of a remote child's producer: the per-call token the
//! producer signs with, kept in the caller's state from the call's first start
//! (`remote_callback_token.lua`), and each callback accepted once per turn of the child
//! (`accept_remote_callback.lua`), so a replayed one is refused and writes nothing.

use super::{
    Error, SessionAddress, StepRef, Store,
    keys::Key,
    replies::{OkValue, Reply},
    scripts::{ACCEPT_REMOTE_CALLBACK, REMOTE_CALLBACK_TOKEN},
};
use redis::{FromRedisValue, RedisResult, Value as RedisValue};

/// What a callback's acceptance did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallbackAccepted {
    Accepted,
    /// The last accepted turn, sent again (its answer was lost): taken as it was, nothing
    /// written.
    Repeated,
    /// A turn older than the last accepted one: a replay.
    Replayed,
    /// The token is not the child's (any more).
    Unknown,
}

impl FromRedisValue for CallbackAccepted {
    fn from_redis_value(value: &RedisValue) -> RedisResult<Self> {
        let reply = Reply::parse(value)?;
        Ok(match reply.tag.as_str() {
            "ok" => Self::Accepted,
            "repeated" => Self::Repeated,
            "replayed" => Self::Replayed,
            _ => Self::Unknown,
        })
    }
}

impl Store {
    /// Keeps `candidate` as the callback token of the remote child `child_session_id` of
    /// `step`'s call unless one is kept already; the token kept, or `None` when the step is no
    /// longer the run's to write (a stale attempt).
    pub async fn remote_callback_token(
        &self,
        step: StepRef<'_>,
        child_session_id: &str,
        candidate: &str,
    ) -> Result<Option<String>, Error> {
        let kept: OkValue = REMOTE_CALLBACK_TOKEN
            .on(self, step.address)
            .arg(step.run_id)
            .arg(step.step)
            .arg(child_session_id)
            .arg(candidate)
            .run(self)
            .await?;
        Ok(kept.0)
    }

    /// The callback token of `address`'s remote child `child_session_id`, if it has one.
    pub async fn remote_callback(
        &self,
        address: &SessionAddress,
        child_session_id: &str,
    ) -> Result<Option<String>, Error> {
        Ok(redis::cmd("HGET")
            .arg(self.key(address, Key::State))
            .arg(format!("remoteCallback:{child_session_id}"))
            .query_async(&mut self.conn())
            .await?)
    }

    /// Accepts the callback of the child's turn ending at `sequence`, signed with `token`.
    pub async fn accept_remote_callback(
        &self,
        address: &SessionAddress,
        child_session_id: &str,
        token: &str,
        sequence: u64,
    ) -> Result<CallbackAccepted, Error> {
        ACCEPT_REMOTE_CALLBACK
            .on(self, address)
            .arg(child_session_id)
            .arg(token)
            .arg(sequence)
            .run(self)
            .await
    }
}
