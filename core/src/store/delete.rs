//! Deleting a session tree: every key of its sessions in one script (`delete_tree.lua`), then
//! their search index entries. The other indexes (deadlines, remote waits, callbacks) are hints
//! their sweeps drop once the session they name is gone.

use super::{Error, SessionAddress, Store, keys::Key};
use redis::AsyncCommands;
use std::sync::LazyLock;

static DELETE_TREE: LazyLock<redis::Script> =
    LazyLock::new(|| redis::Script::new(include_str!("delete_tree.lua")));

/// The keys every session of a tree has (its state hash first).
const SESSION_KEYS: [Key; 12] = [
    Key::State,
    Key::Stream,
    Key::Messages,
    Key::Checkpoints,
    Key::Usage,
    Key::Staged,
    Key::Pending,
    Key::PendingRun,
    Key::Answers,
    Key::OpenDeadlines,
    Key::Children,
    Key::Relayed,
];

/// The keys the root keeps for its tree, its members' set first. Not [`Key::RevokedTokens`]: a
/// revocation outlives the tree, to its own expiry.
const TREE_KEYS: [Key; 6] = [
    Key::Tree,
    Key::Ownership,
    Key::Completed,
    Key::SubmitBucket,
    Key::CallIds,
    Key::Questions,
];

/// How a delete ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Deleted {
    /// The tree's sessions (the root first) and how many keys went with them.
    Deleted {
        sessions: Vec<SessionAddress>,
        keys: u64,
    },
    SessionNotFound,
    /// A run works on this session of the tree: nothing was deleted.
    Running {
        session_id: String,
    },
}

/// The script's name for its hash, if it is this file's (see `round_trips.rs`).
pub(super) fn delete_script_name(hash: &str) -> Option<&'static str> {
    (DELETE_TREE.get_hash() == hash).then_some("delete_tree")
}

impl Store {
    /// Deletes the tree whose root is `root_session_id` when no run works on any of its
    /// sessions (see `delete_tree.lua`), then drops its sessions from the search index.
    pub async fn delete_tree(&self, root_session_id: &str) -> Result<Deleted, Error> {
        let root = SessionAddress::root(root_session_id);
        let tree_key = Key::Tree.of(&self.prefix, &root);
        // A child started between the read and the script makes it answer `moved`.
        for _ in 0..4 {
            let mut members: Vec<String> = self.conn().smembers(&tree_key).await?;
            members.sort();
            let sessions: Vec<SessionAddress> = std::iter::once(root.clone())
                .chain(members.iter().map(|session_id| SessionAddress {
                    root_session_id: root_session_id.to_owned(),
                    session_id: session_id.clone(),
                }))
                .collect();
            // Marked first: a crash between the delete and the index's entries leaves the
            // marks for the repair sweep, which drops the entries of sessions it finds gone.
            let mut marks = Vec::with_capacity(sessions.len());
            for address in &sessions {
                marks.push(self.mark_for_index(address).await?);
            }
            let mut invocation = DELETE_TREE.prepare_invoke();
            for key in TREE_KEYS {
                invocation.key(key.of(&self.prefix, &root));
            }
            for address in &sessions {
                for key in SESSION_KEYS {
                    invocation.key(key.of(&self.prefix, address));
                }
            }
            let reply: Vec<String> = invocation
                .arg(members.len())
                .arg(TREE_KEYS.len())
                .arg(SESSION_KEYS.len())
                .invoke_async(&mut self.conn())
                .await?;
            match reply.first().map(String::as_str) {
                Some("moved") => continue,
                Some("session_not_found") => return Ok(Deleted::SessionNotFound),
                Some("running") => {
                    let index: usize = reply.get(1).and_then(|i| i.parse().ok()).unwrap_or(0);
                    let session_id = sessions
                        .get(index)
                        .map_or_else(|| root_session_id.to_owned(), |a| a.session_id.clone());
                    return Ok(Deleted::Running { session_id });
                }
                Some("deleted") => {
                    let keys = reply.get(1).and_then(|n| n.parse().ok()).unwrap_or(0);
                    for (address, mark) in sessions.iter().zip(marks) {
                        self.reindex_one(address, mark).await?;
                    }
                    return Ok(Deleted::Deleted { sessions, keys });
                }
                _ => {
                    return Err(Error::Corrupt {
                        key: tree_key,
                        reason: format!("delete_tree answered {reply:?}"),
                    });
                }
            }
        }
        Err(Error::Corrupt {
            key: tree_key,
            reason: "the tree kept changing while it was deleted".to_owned(),
        })
    }
}
