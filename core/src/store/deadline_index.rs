//! The deadline index: suspended runs whose earliest deadline is too far away to be worth a
//! deadline workflow yet, scored by that deadline. A worker's deadline sweep starts their
//! deadline workflows when the deadlines come near; a resumed run takes its suspended run out.
//!
//! One sorted set per prefix, outside every session's slot (`<prefix>:deadlineIndex`), so it is
//! written by plain commands next to the scripts, never inside one: a member may outlive its
//! session's suspension (a stop, a crash between a drain and its removal), and the sweep checks
//! each member against the session before acting on it.

use super::{Error, SessionAddress, Store, keys};
use redis::AsyncCommands;

/// One member of the index: a suspended run, and when its earliest deadline lapses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexedDeadline {
    pub address: SessionAddress,
    /// The run that suspended.
    pub run_id: String,
    /// Ms since the epoch.
    pub wake_at: u64,
}

/// A member's text: `<root>|<session>|<run>` (ids never hold `|`).
fn member(address: &SessionAddress, run_id: &str) -> String {
    format!(
        "{}|{}|{run_id}",
        address.root_session_id, address.session_id
    )
}

/// The suspended run a member names; `None` for text that is not a member.
fn parse_member(text: &str) -> Option<(SessionAddress, String)> {
    let mut parts = text.split('|');
    let (root, session, run) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || [root, session, run].iter().any(|id| id.is_empty()) {
        return None;
    }
    Some((
        SessionAddress {
            root_session_id: root.to_owned(),
            session_id: session.to_owned(),
        },
        run.to_owned(),
    ))
}

impl Store {
    fn deadline_index_key(&self) -> String {
        keys::deadline_index_key(&self.prefix)
    }

    /// Puts `address`'s suspended run `run_id` in the index, due at `wake_at`. Idempotent.
    pub async fn index_deadline(
        &self,
        address: &SessionAddress,
        run_id: &str,
        wake_at: u64,
    ) -> Result<(), Error> {
        let _: () = self
            .conn()
            .zadd(self.deadline_index_key(), member(address, run_id), wake_at)
            .await?;
        Ok(())
    }

    /// Takes `address`'s suspended runs `run_ids` out of the index (those not in it are skipped).
    pub async fn unindex_deadlines(
        &self,
        address: &SessionAddress,
        run_ids: &[&str],
    ) -> Result<(), Error> {
        if run_ids.is_empty() {
            return Ok(());
        }
        let members: Vec<String> = run_ids.iter().map(|run| member(address, run)).collect();
        let _: () = self.conn().zrem(self.deadline_index_key(), members).await?;
        Ok(())
    }

    /// Up to `limit` members due at or before `until` (ms since the epoch), earliest first. A
    /// member that does not parse (written by hand) is dropped from the index here.
    pub async fn due_deadlines(
        &self,
        until: u64,
        limit: usize,
    ) -> Result<Vec<IndexedDeadline>, Error> {
        let key = self.deadline_index_key();
        let mut connection = self.conn();
        let due: Vec<(String, u64)> = connection
            .zrangebyscore_limit_withscores(&key, 0, until, 0, limit as isize)
            .await?;
        let mut deadlines = Vec::with_capacity(due.len());
        for (text, wake_at) in due {
            match parse_member(&text) {
                Some((address, run_id)) => deadlines.push(IndexedDeadline {
                    address,
                    run_id,
                    wake_at,
                }),
                None => {
                    let _: () = connection.zrem(&key, &text).await?;
                }
            }
        }
        Ok(deadlines)
    }

    /// Takes one member the sweep has dealt with out of the index.
    pub async fn unindex_deadline(&self, deadline: &IndexedDeadline) -> Result<(), Error> {
        self.unindex_deadlines(&deadline.address, &[deadline.run_id.as_str()])
            .await
    }

    /// The number of members (for tests and the operator).
    pub async fn indexed_deadlines(&self) -> Result<u64, Error> {
        Ok(self.conn().zcard(self.deadline_index_key()).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::{SessionAddress, member, parse_member};

    #[test]
    fn a_member_names_its_session_and_run() {
        let address = SessionAddress {
            root_session_id: "root".into(),
            session_id: "child".into(),
        };
        let text = member(&address, "run");
        assert_eq!(text, "root|child|run");
        assert_eq!(parse_member(&text), Some((address, "run".to_owned())));
        assert_eq!(parse_member("root|child"), None);
        assert_eq!(parse_member("a|b|c|d"), None);
        assert_eq!(parse_member("a||c"), None);
    }
}
