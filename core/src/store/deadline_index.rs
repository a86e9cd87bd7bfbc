//! The deadline index: suspended runs whose earliest deadline is too far away to be worth a
//! deadline workflow yet, scored by that deadline. A worker's deadline sweep starts their
//! deadline workflows when the deadlines come near; a resumed run takes its suspended run out.
//!
//! One sorted set per prefix, outside every session's slot (`<prefix>:deadlineIndex`), so it is
//! written by plain commands next to the scripts, never inside one: a member may outlive its
//! session's suspension (a stop, a crash between a drain and its removal), and the sweep checks
//! each member against the session before acting on it.

use super::{
    Error, SessionAddress, Store,
    index_id::{expand, shorten},
    keys,
};
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

/// A member's text: `<session>|<run>` for a root, `<root>|<session>|<run>` for a child, each id in
/// its short form (`index_id.rs`; ids never hold `|`).
fn member(address: &SessionAddress, run_id: &str) -> String {
    if address.is_root() {
        format!("{}|{}", shorten(&address.session_id), shorten(run_id))
    } else {
        format!(
            "{}|{}|{}",
            shorten(&address.root_session_id),
            shorten(&address.session_id),
            shorten(run_id)
        )
    }
}

/// A member as written before the short form: `<root>|<session>|<run>`, whole ids.
fn old_member(address: &SessionAddress, run_id: &str) -> String {
    format!(
        "{}|{}|{run_id}",
        address.root_session_id, address.session_id
    )
}

/// The suspended run a member names, in either form; `None` for text that is not a member.
fn parse_member(text: &str) -> Option<(SessionAddress, String)> {
    let parts: Vec<&str> = text.split('|').collect();
    let (root, session, run) = match parts.as_slice() {
        [session, run] => (*session, *session, *run),
        [root, session, run] => (*root, *session, *run),
        _ => return None,
    };
    if [root, session, run].iter().any(|id| id.is_empty()) {
        return None;
    }
    Some((
        SessionAddress {
            root_session_id: expand(root),
            session_id: expand(session),
        },
        expand(run),
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
            .index_deadline_command(address, run_id, wake_at)
            .query_async(&mut self.conn())
            .await?;
        Ok(())
    }

    /// [`Self::index_deadline`]'s command, for a caller that sends it after a suspension in
    /// the suspension's round trip.
    pub(super) fn index_deadline_command(
        &self,
        address: &SessionAddress,
        run_id: &str,
        wake_at: u64,
    ) -> redis::Cmd {
        let mut command = redis::cmd("ZADD");
        command
            .arg(self.deadline_index_key())
            .arg(wake_at)
            .arg(member(address, run_id));
        command
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
        // Both forms: a run suspended before the short form is indexed as it was written.
        let members: Vec<String> = run_ids
            .iter()
            .flat_map(|run| [member(address, run), old_member(address, run)])
            .collect();
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
    use super::{SessionAddress, member, old_member, parse_member};

    #[test]
    fn a_member_names_its_session_and_run() {
        let address = SessionAddress {
            root_session_id: "root".into(),
            session_id: "child".into(),
        };
        let text = member(&address, "run");
        assert_eq!(text, "root|child|run");
        assert_eq!(parse_member(&text), Some((address, "run".to_owned())));
        let root = SessionAddress::root("0189abcdef0123456789abcdef012345");
        let run = "0189abcdef0123456789abcdef01234f";
        let text = member(&root, run);
        assert_eq!(text.len(), 47, "{text}");
        assert_eq!(parse_member(&text), Some((root.clone(), run.to_owned())));
        let old = old_member(&root, run);
        assert_eq!(parse_member(&old), Some((root, run.to_owned())));
        assert_eq!(
            parse_member("root|child"),
            Some((SessionAddress::root("root"), "child".to_owned()))
        );
        assert_eq!(parse_member("a|b|c|d"), None);
        assert_eq!(parse_member("a||c"), None);
    }
}
