//! One read of a session tree for the operations that act on it as a whole (a resume of its
//! root, a stop of its sessions): every session's state and parent, and for a suspended one the
//! calls it awaits, their answers, the calls its remote children relayed and its children.
//! Plain reads of one tree, so of one slot, pipelined: the root's keys with the tree's member
//! list in one round trip, every descendant's keys in a second (none for a lone root).

use super::{
    Error, PendingCall, RelayedGroup, SessionAddress, SessionState, Status, Store, StoredAnswer,
    from_json,
    keys::{Key, state_field},
    relay::relayed_groups_of,
    session::session_of,
};
use std::collections::HashMap;

/// A session of a tree as [`Store::read_tree`] saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct TreeSession {
    pub address: SessionAddress,
    /// `None`: the session has no state (gone, or not written yet).
    pub state: Option<SessionState>,
    /// The session whose sub-agent call started it; `None` for the root.
    pub parent_session_id: Option<String>,
    /// The calls the session waits on, in no particular order (as [`Store::pending_calls`]);
    /// empty unless the session is suspended, as are the three below.
    pub pending: Vec<PendingCall>,
    /// The stored answers of its pending calls, by tool call id.
    pub answers: HashMap<String, StoredAnswer>,
    /// The calls its paused remote children relayed, by the remote call awaiting them.
    pub relayed: Vec<RelayedGroup>,
    /// The children its sub-agent calls started: tool call id → child session id.
    pub children: HashMap<String, String>,
}

impl TreeSession {
    /// Whether the session is suspended (waits on calls, no workflow runs).
    pub fn is_suspended(&self) -> bool {
        self.state
            .as_ref()
            .is_some_and(|state| state.status == Status::SuspendedClientTool)
    }
}

/// The keys of one session a tree read reads, in the pipeline's order.
const READ_KEYS: [Key; 5] = [
    Key::State,
    Key::Pending,
    Key::Answers,
    Key::Relayed,
    Key::Children,
];

impl Store {
    /// `address`'s session and, with `whole_tree` when `address` is a root, every session of
    /// its tree after it (in id order): one round trip for the session's keys and the tree's
    /// member list, one more for the descendants' keys when there are any.
    pub async fn read_tree(
        &self,
        address: &SessionAddress,
        whole_tree: bool,
    ) -> Result<Vec<TreeSession>, Error> {
        let with_members = whole_tree && address.is_root();
        let mut pipe = redis::pipe();
        self.queue_session_reads(&mut pipe, address);
        if with_members {
            pipe.smembers(self.key(address, Key::Tree));
        }
        let mut replies: Vec<redis::Value> = pipe.query_async(&mut self.conn()).await?;
        let mut members: Vec<String> = if with_members {
            replies
                .pop()
                .map(redis::from_owned_redis_value)
                .transpose()?
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        members.sort();
        let mut sessions = vec![self.tree_session(address.clone(), replies)?];
        if members.is_empty() {
            return Ok(sessions);
        }
        let addresses: Vec<SessionAddress> = members
            .into_iter()
            .map(|session_id| SessionAddress {
                root_session_id: address.root_session_id.clone(),
                session_id,
            })
            .collect();
        let mut pipe = redis::pipe();
        for member in &addresses {
            self.queue_session_reads(&mut pipe, member);
        }
        let replies: Vec<redis::Value> = pipe.query_async(&mut self.conn()).await?;
        let mut replies = replies.into_iter();
        for member in addresses {
            let read = replies.by_ref().take(READ_KEYS.len()).collect();
            sessions.push(self.tree_session(member, read)?);
        }
        Ok(sessions)
    }

    fn queue_session_reads(&self, pipe: &mut redis::Pipeline, address: &SessionAddress) {
        for key in READ_KEYS {
            pipe.hgetall(self.key(address, key));
        }
    }

    /// A session from its replies to [`READ_KEYS`], in that order.
    fn tree_session(
        &self,
        address: SessionAddress,
        replies: Vec<redis::Value>,
    ) -> Result<TreeSession, Error> {
        let mut hashes = replies
            .into_iter()
            .map(redis::from_owned_redis_value::<HashMap<String, String>>);
        let mut next = || hashes.next().transpose().map(Option::unwrap_or_default);
        let (state_fields, pending, answers, relayed, children) =
            (next()?, next()?, next()?, next()?, next()?);
        let state_key = self.key(&address, Key::State);
        let state = session_of(&address, &state_key, &state_fields)?;
        let parent_session_id = state_fields.get(state_field::PARENT_SESSION_ID).cloned();
        let mut session = TreeSession {
            address,
            state,
            parent_session_id,
            pending: Vec::new(),
            answers: HashMap::new(),
            relayed: Vec::new(),
            children: HashMap::new(),
        };
        if !session.is_suspended() {
            return Ok(session);
        }
        let key = self.key(&session.address, Key::Pending);
        session.pending = pending
            .values()
            .map(|call| from_json(&key, call))
            .collect::<Result<_, _>>()?;
        let key = self.key(&session.address, Key::Answers);
        session.answers = answers
            .into_iter()
            .map(|(id, answer)| Ok((id, from_json(&key, &answer)?)))
            .collect::<Result<_, Error>>()?;
        session.relayed = relayed_groups_of(&self.key(&session.address, Key::Relayed), &relayed)?;
        session.children = children;
        Ok(session)
    }
}
