//! The remote-wait index: the remote calls whose caller waits on a child that ran past its
//! follower's window (the caller suspended holding nothing), scored by when the consumer's sweep
//! next looks at the child's `status`. The sweep starts the child's follow once its turn has
//! ended; until then it looks again later.
//!
//! One sorted set per prefix, outside every session's slot (`<prefix>:remoteWaitIndex`), so it
//! is written by plain commands next to the scripts, never inside one. A hint, as the deadline
//! index is: a member may outlive the wait (the call answered, the caller stopped), and the
//! sweep checks each against the caller's session before acting on it.

use super::{Error, SessionAddress, Store, keys};
use redis::AsyncCommands;

/// One member: the remote call `tool_call_id` of `address`'s run `run_id`, due at `due_at`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteWait {
    pub address: SessionAddress,
    pub run_id: String,
    pub tool_call_id: String,
    /// Ms since the epoch.
    pub due_at: u64,
}

/// A member's text: `<root>|<session>|<run>|<toolCallId>` (ids never hold `|`).
fn member(wait: &RemoteWait) -> String {
    format!(
        "{}|{}|{}|{}",
        wait.address.root_session_id, wait.address.session_id, wait.run_id, wait.tool_call_id
    )
}

/// The wait a member names (its `due_at` the score); `None` for text that is not a member.
fn parse_member(text: &str, due_at: u64) -> Option<RemoteWait> {
    let parts: Vec<&str> = text.split('|').collect();
    let [root, session, run, call] = parts[..] else {
        return None;
    };
    if [root, session, run, call].iter().any(|id| id.is_empty()) {
        return None;
    }
    Some(RemoteWait {
        address: SessionAddress {
            root_session_id: root.to_owned(),
            session_id: session.to_owned(),
        },
        run_id: run.to_owned(),
        tool_call_id: call.to_owned(),
        due_at,
    })
}

impl Store {
    fn remote_wait_index_key(&self) -> String {
        keys::remote_wait_index_key(&self.prefix)
    }

    /// Puts (or moves) `wait` in the index, due at its `due_at`. Idempotent.
    pub async fn index_remote_wait(&self, wait: &RemoteWait) -> Result<(), Error> {
        let _: () = self
            .conn()
            .zadd(self.remote_wait_index_key(), member(wait), wait.due_at)
            .await?;
        Ok(())
    }

    /// Takes `wait` out of the index.
    pub async fn unindex_remote_wait(&self, wait: &RemoteWait) -> Result<(), Error> {
        let _: () = self
            .conn()
            .zrem(self.remote_wait_index_key(), member(wait))
            .await?;
        Ok(())
    }

    /// Up to `limit` members due at or before `until` (ms since the epoch), earliest first. A
    /// member that does not parse (written by hand) is dropped from the index here.
    pub async fn due_remote_waits(
        &self,
        until: u64,
        limit: usize,
    ) -> Result<Vec<RemoteWait>, Error> {
        let key = self.remote_wait_index_key();
        let mut connection = self.conn();
        let due: Vec<(String, u64)> = connection
            .zrangebyscore_limit_withscores(&key, 0, until, 0, limit as isize)
            .await?;
        let mut waits = Vec::with_capacity(due.len());
        for (text, due_at) in due {
            match parse_member(&text, due_at) {
                Some(wait) => waits.push(wait),
                None => {
                    let _: () = connection.zrem(&key, &text).await?;
                }
            }
        }
        Ok(waits)
    }
}

#[cfg(test)]
mod tests {
    use super::{RemoteWait, SessionAddress, member, parse_member};

    #[test]
    fn a_member_names_its_session_run_and_call() {
        let wait = RemoteWait {
            address: SessionAddress {
                root_session_id: "root".into(),
                session_id: "child".into(),
            },
            run_id: "run".into(),
            tool_call_id: "call".into(),
            due_at: 7,
        };
        let text = member(&wait);
        assert_eq!(text, "root|child|run|call");
        assert_eq!(parse_member(&text, 7), Some(wait));
        assert_eq!(parse_member("root|child|run", 7), None);
        assert_eq!(parse_member("a|b|c|d|e", 7), None);
        assert_eq!(parse_member("a||c|d", 7), None);
    }
}
