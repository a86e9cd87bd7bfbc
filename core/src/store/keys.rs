//! The names of Baton's Redis keys and of the fields the Rust side reads: the one place that
//! spells them (the Lua scripts spell the ones they write, under the same names).

use super::SessionAddress;

/// One of a session's keys: `<prefix>:{<root>}:<session>:<name>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Key {
    /// Hash: the session's state (see [`state_field`]).
    State,
    /// Stream: the chunks, entry id `<sequence>-0`, fields `c` and `h` (see `stream.rs`).
    Stream,
    /// List: the log, one JSON message per entry.
    Messages,
    /// List: one checkpoint record per step boundary and rewind.
    Checkpoints,
    /// List: one usage record per committed step.
    Usage,
    /// Hash: the current step's work that is not in the log yet (see [`staged_field`]).
    Staged,
    /// Hash: toolCallId → the pending call.
    Pending,
    /// Hash: toolCallId → the run that awaits the call.
    PendingRun,
    /// Hash: toolCallId → the submitted answer, until drained.
    Answers,
    /// Hash on the root session: toolCallId → the session that owns the pending call.
    Ownership,
    /// Sorted set on the root session: drained toolCallIds scored by their marker's expiry.
    Completed,
    /// Sorted set: unanswered pending toolCallIds scored by deadline.
    OpenDeadlines,
    /// Hash on the root session: the tree's submit token bucket.
    SubmitBucket,
    /// Hash under a subject's own tag (no session's): one of its token buckets (see
    /// `subject_bucket.rs`).
    SubjectBucket,
    /// Hash: toolCallId → the child session a sub-agent call started.
    Children,
    /// Hash: the calls a paused remote child of the session waits on a person for (see
    /// `relay.rs`): relayed id → its entry, `answer:<id>` → the relayed answer, `via:<callId>`
    /// → the ids the remote call relays.
    Relayed,
    /// Set on the root session: every descendant session of the tree.
    Tree,
    /// Hash on the root session: every tool call id the tree's sessions staged → `<step>` for
    /// the root's, `<step><suffix>` for a call of the session `<root><suffix>` (see
    /// `stage_turn.lua`).
    CallIds,
    /// String on the root session: the latest expiry up to which the tree's session tokens
    /// are revoked (see `revocation.rs`).
    RevokedTokens,
    /// Hash on the root session: the questions the tree's running tool calls ask a person
    /// (questionId → its record, see `question.rs`), and `answer:<questionId>` → the answer.
    Questions,
    /// The parent's state hash, for the scripts that span a child and its parent.
    ParentState,
    /// The parent's stream.
    ParentStream,
    /// The parent's `children` hash.
    ParentChildren,
    /// The parent's `pending` hash.
    ParentPending,
    /// The parent's `answers` hash.
    ParentAnswers,
    /// The parent's `openDeadlines` sorted set.
    ParentOpenDeadlines,
}

impl Key {
    /// The last part of the key, as stored.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::State => "state",
            Self::Stream => "stream",
            Self::Messages => "messages",
            Self::Checkpoints => "checkpoints",
            Self::Usage => "usage",
            Self::Staged => "staged",
            Self::Pending => "pending",
            Self::PendingRun => "pendingRun",
            Self::Answers => "answers",
            Self::Ownership => "ownership",
            Self::Completed => "completed",
            Self::OpenDeadlines => "openDeadlines",
            Self::SubmitBucket => "submitBucket",
            Self::SubjectBucket => "subjectBucket",
            Self::Children | Self::ParentChildren => "children",
            Self::Relayed => "relayed",
            Self::ParentPending => "pending",
            Self::ParentAnswers => "answers",
            Self::ParentOpenDeadlines => "openDeadlines",
            Self::Tree => "tree",
            Self::CallIds => "callIds",
            Self::RevokedTokens => "revokedTokens",
            Self::Questions => "questions",
            Self::ParentState => "state",
            Self::ParentStream => "stream",
        }
    }

    /// Whether the key belongs to the parent of the session a script is given.
    pub(crate) fn on_parent(self) -> bool {
        matches!(
            self,
            Self::ParentState
                | Self::ParentStream
                | Self::ParentChildren
                | Self::ParentPending
                | Self::ParentAnswers
                | Self::ParentOpenDeadlines
        )
    }

    /// Whether the key belongs to the root of the session tree rather than to the session:
    /// a submit finds a call's owner there, whichever session of the tree it names.
    fn on_root(self) -> bool {
        matches!(
            self,
            Self::Ownership
                | Self::Completed
                | Self::Tree
                | Self::SubmitBucket
                | Self::SubjectBucket
                | Self::CallIds
                | Self::RevokedTokens
                | Self::Questions
        )
    }

    /// The full key of `address`'s (or its root's) `self` under `prefix`. The braces make the
    /// root id the hash tag, so a session tree lives in one Redis Cluster slot.
    pub(crate) fn of(self, prefix: &str, address: &SessionAddress) -> String {
        let session_id = if self.on_root() {
            &address.root_session_id
        } else {
            &address.session_id
        };
        format!(
            "{prefix}:{{{}}}:{session_id}:{}",
            address.root_session_id,
            self.name()
        )
    }
}

/// The deadline index of every session under `prefix` (a sorted set; see `deadline_index.rs`):
/// outside the sessions' slots, so no script touches it.
pub(crate) fn deadline_index_key(prefix: &str) -> String {
    format!("{prefix}:deadlineIndex")
}

/// The remote-wait index of every session under `prefix` (a sorted set; see
/// `remote_wait_index.rs`): outside the sessions' slots, so no script touches it.
pub(crate) fn remote_wait_index_key(prefix: &str) -> String {
    format!("{prefix}:remoteWaitIndex")
}

/// The callback index of every session under `prefix` (a sorted set; see `callback.rs`):
/// outside the sessions' slots, so no script touches it.
pub(crate) fn callback_index_key(prefix: &str) -> String {
    format!("{prefix}:callbackIndex")
}

/// A revoked token's marker under `prefix` (see `revocation.rs`): outside the sessions' slots,
/// since a user token is bound to no session.
/// The key of this prefix's secret that remote children's ids are derived with
/// (`<prefix>:remoteIdKey`): made once, by the first process that needs it, kept for ever.
pub(crate) fn remote_id_key(prefix: &str) -> String {
    format!("{prefix}:remoteIdKey")
}

pub(crate) fn revoked_token_key(prefix: &str, token_id: &str) -> String {
    format!("{prefix}:revokedToken:{token_id}")
}

/// The mark of a user whose user tokens are revoked up to an issue time (see `revocation.rs`):
/// outside the sessions' slots, since a user token is bound to no session.
pub(crate) fn revoked_user_key(prefix: &str, user_id: &str) -> String {
    format!("{prefix}:revokedUser:{user_id}")
}

/// The field of a stream entry that holds the chunk's JSON: all of it, or (beside
/// [`CHUNK_HEADER_FIELD`]) the part after its header.
pub(crate) const CHUNK_FIELD: &str = "c";

/// The field of a stream entry naming the chunk's header, kept in the state hash of the stream's
/// session under [`chunk_header_field`] (see `stream.rs`).
pub(crate) const CHUNK_HEADER_FIELD: &str = "h";

/// The state hash's field holding the chunk header whose key a stream entry names.
pub(crate) fn chunk_header_field(header_key: &str) -> String {
    format!("chunkHeader:{header_key}")
}

/// The fields of the state hash that the Rust side reads (the scripts write them).
pub(crate) mod state_field {
    pub(crate) const AGENT_TYPE: &str = "agentType";
    pub(crate) const RUN_ID: &str = "runId";
    pub(crate) const STREAM_ID: &str = "streamId";
    pub(crate) const STATUS: &str = "status";
    pub(crate) const STEP_COUNT: &str = "stepCount";
    pub(crate) const LAST_SEQUENCE: &str = "lastSequence";
    pub(crate) const CREATED_AT: &str = "createdAt";
    pub(crate) const UPDATED_AT: &str = "updatedAt";
    pub(crate) const OUTPUT: &str = "output";
    pub(crate) const ERROR: &str = "error";
    pub(crate) const SUSPENSION: &str = "suspension";
    /// The suspended run while a claim holds the session, until the drain (see
    /// `claim_resume.lua`).
    pub(crate) const SUSPENDED_RUN_ID: &str = "suspendedRunId";
    pub(crate) const ABANDON: &str = "abandon";
    pub(crate) const WORKFLOW_ID: &str = "workflowId";
    pub(crate) const STOP: &str = "stop";
    pub(crate) const CLIENT_TOOL_WAIT_MS: &str = "clientToolWaitMs";
    pub(crate) const ABORTS: &str = "aborts";
    /// The session's custom state (JSON text), for an agent that declares one.
    pub(crate) const CUSTOM_STATE: &str = "customState";
    /// The session's userId, tags and metadata (JSON text, `SessionMeta`), when it has any.
    pub(crate) const META: &str = "meta";
    /// Who a session the producer mount started belongs to (JSON text, `SessionOwner`).
    pub(crate) const OWNER: &str = "owner";
    /// A child's parent session (see `start_child.lua`).
    pub(crate) const PARENT_SESSION_ID: &str = "parentSessionId";
}

/// The fields of the `staged` hash, each scoped by run and step: `<name>:<runId>:<step>`, and
/// `result:<runId>:<step>:<toolCallId>` for one call's result. `calls` (the turn's call ids)
/// and `emitted` (the model-phase chunk counter) are read and written by the scripts alone.
pub(crate) mod staged_field {
    /// The staged assistant message of a step.
    pub(crate) fn turn(run_id: &str, step: u32) -> String {
        format!("turn:{run_id}:{step}")
    }

    /// The usage record of a step's model call.
    pub(crate) fn usage(run_id: &str, step: u32) -> String {
        format!("usage:{run_id}:{step}")
    }

    /// The staged `tool` message answering one call of a step.
    pub(crate) fn result(run_id: &str, step: u32, tool_call_id: &str) -> String {
        format!("result:{run_id}:{step}:{tool_call_id}")
    }

    /// The start marker of an at-most-once tool's call (see `mark_tool_started.lua`, which
    /// spells it; read here by tests only).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn started(run_id: &str, step: u32, tool_call_id: &str) -> String {
        format!("started:{run_id}:{step}:{tool_call_id}")
    }

    /// What a server tool's call of a step asked a person (see `stage_tool_asks.lua`).
    pub(crate) fn asks(run_id: &str, step: u32, tool_call_id: &str) -> String {
        format!("asks:{run_id}:{step}:{tool_call_id}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_keep_their_layout_and_root_keys_live_on_the_root() {
        let child = SessionAddress {
            root_session_id: "root".into(),
            session_id: "child".into(),
        };
        assert_eq!(Key::State.of("baton", &child), "baton:{root}:child:state");
        assert_eq!(Key::PendingRun.of("p", &child), "p:{root}:child:pendingRun");
        assert_eq!(Key::Ownership.of("p", &child), "p:{root}:root:ownership");
        assert_eq!(Key::Completed.of("p", &child), "p:{root}:root:completed");
        assert_eq!(
            Key::OpenDeadlines.of("p", &SessionAddress::root("s")),
            "p:{s}:s:openDeadlines"
        );
        assert_eq!(staged_field::turn("r1", 2), "turn:r1:2");
        assert_eq!(staged_field::result("r1", 2, "c1"), "result:r1:2:c1");
    }
}
