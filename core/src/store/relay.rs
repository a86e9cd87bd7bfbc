//! The calls a paused remote child waits on a person for, kept in its caller's session so that
//! the caller's root lists them and takes their answers: recorded when the child's turn ends
//! `paused` (`relay_remote_calls.lua`), an answer stored once the producer accepted it
//! (`store_relayed_answer.lua`), and dropped when the child's end answers the caller's remote
//! call (`answer_remote_call.lua`). Entries live in the caller's `relayed` hash, never among its
//! pending calls: the drain, a stop and a rewind see only the caller's own calls.

use super::{
    Answer, Error, FollowMode, PendingCall, SessionAddress, StepRef, Store, StoredAnswer,
    keys::Key,
    replies::{Refusal, Reply},
    scripts::{ANSWER_REMOTE_CALL, RELAY_REMOTE_CALLS, STORE_RELAYED_ANSWER},
    to_json,
    tree::{ChildEnd, ParentReport},
};
use crate::chunk::{ChunkKind, encode_unsequenced};
use redis::{FromRedisValue, RedisResult, Value as RedisValue};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// One call a paused remote child waits on, as its caller keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RelayedCall {
    /// The call as the caller's tree lists it: its id (tree-unique, derived from the child and
    /// the producer's id), tool, input, kind and deadline (the producer's); an approval's id is
    /// the caller's own (`<runId>::<id>`), so that a chat's approval names its own call.
    pub call: PendingCall,
    /// The caller's remote call that awaits the child.
    pub via_call_id: String,
    pub child_session_id: String,
    /// The producer's ids of the call, which the relayed answer names.
    pub producer_call_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub producer_approval_id: Option<String>,
    /// The render hint of the producer's tool (`{kind, outputSchema?}`), which the caller's chat
    /// shows the call with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub render: Option<serde_json::Value>,
    /// For a child reached over A2A: the task its answer is a message on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub a2a: Option<A2aQuestion>,
}

/// The A2A task a relayed call was asked in, and how its answer is sent: a message on the task
/// with one data part, Baton's submit body under the producer's ids (an agent that lists
/// `pendingCalls`, as Baton's own A2A server does), or the answer alone (a text part for a
/// string, a data part for an object) for any other agent's question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct A2aQuestion {
    pub task_id: String,
    pub context_id: String,
    /// The answer is Baton's submit body (`pendingCalls`), not the answer alone.
    pub as_submit: bool,
}

/// The relayed calls of one remote call of a session, each with whether it has an answer.
#[derive(Debug, Clone, PartialEq)]
pub struct RelayedGroup {
    pub via_call_id: String,
    pub calls: Vec<(RelayedCall, bool)>,
}

/// What a record of relayed calls did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    Written,
    /// The caller's step is committed, or its call answered (a stale attempt): nothing written.
    Stale,
}

/// What storing a relayed answer did; with the calls of its group still unanswered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RelayedAnswer {
    Accepted {
        open: u64,
    },
    AlreadyCompleted {
        open: u64,
    },
    /// The group no longer lists the call (the child moved on).
    UnknownCall,
    /// The caller no longer awaits the remote call.
    NotAwaited,
}

const ANSWER_PREFIX: &str = "answer:";
const GROUP_PREFIX: &str = "via:";

enum RecordReply {
    Ok,
    Stale,
    Refused(Refusal),
}

impl FromRedisValue for RecordReply {
    fn from_redis_value(value: &RedisValue) -> RedisResult<Self> {
        let reply = Reply::parse(value)?;
        Ok(match reply.tag.as_str() {
            "ok" => Self::Ok,
            "already_committed" => Self::Stale,
            _ => Self::Refused(reply.refusal()?),
        })
    }
}

impl FromRedisValue for RelayedAnswer {
    fn from_redis_value(value: &RedisValue) -> RedisResult<Self> {
        let reply = Reply::parse(value)?;
        Ok(match reply.tag.as_str() {
            "accepted" => Self::Accepted {
                open: reply.value(0)?,
            },
            "already_completed" => Self::AlreadyCompleted {
                open: reply.value(0)?,
            },
            "unknown_tool_call" => Self::UnknownCall,
            _ => Self::NotAwaited,
        })
    }
}

impl Store {
    /// Records `calls`, the calls the remote child `child_session_id` of `step`'s session waits
    /// on since its turn ended `paused` at the child's `end_sequence`, replacing those of the
    /// child's previous pause (see `relay_remote_calls.lua`); a pause of a child its caller's
    /// resume continued (`FollowMode::Suspended`) writes the caller's `suspended` chunk again,
    /// naming the relayed calls.
    pub async fn record_relayed_calls(
        &self,
        mode: FollowMode,
        step: StepRef<'_>,
        child_session_id: &str,
        end_sequence: u64,
        via_call_id: &str,
        calls: &[RelayedCall],
    ) -> Result<Recorded, Error> {
        // A pause of a child its caller's resume continued: the caller's run waits again.
        let suspended = match mode {
            FollowMode::Suspended => {
                let again = ChunkKind::Suspended {
                    step: step.step,
                    tool_call_ids: calls.iter().map(|c| c.call.tool_call_id.clone()).collect(),
                };
                encode_unsequenced(&self.header(step.run()), &again)
            }
            _ => String::new(),
        };
        let mut invocation = RELAY_REMOTE_CALLS.on(self, step.address);
        invocation
            .arg(step.run_id)
            .arg(mode.step_arg(step.step))
            .arg(via_call_id)
            .arg(child_session_id)
            .arg(end_sequence)
            .arg(&step.address.session_id)
            .arg(suspended);
        for call in calls {
            invocation.arg(&call.call.tool_call_id).arg(to_json(call));
        }
        match invocation.run(self).await? {
            RecordReply::Ok => Ok(Recorded::Written),
            RecordReply::Stale => Ok(Recorded::Stale),
            RecordReply::Refused(refusal) => Err(refusal.into_error(step.run_id)),
        }
    }

    /// The relayed call `id` of the tree rooted at `root`: the session that keeps it (found by
    /// the root's ownership entry, else the root) and the call, if any.
    pub async fn relayed_call(
        &self,
        root: &SessionAddress,
        id: &str,
    ) -> Result<Option<(SessionAddress, RelayedCall)>, Error> {
        // The root's own entry is read with the ownership in one round trip: a call of the root
        // (every call of a single agent, whose submit comes here first) costs one read.
        let root_key = self.key(root, Key::Relayed);
        let (owner, root_entry): (Option<String>, Option<String>) = redis::pipe()
            .hget(self.key(root, Key::Ownership), id)
            .hget(&root_key, id)
            .query_async(&mut self.conn())
            .await?;
        let (owner, key, entry) = match owner.filter(|owner| *owner != root.session_id) {
            None => (root.clone(), root_key, root_entry),
            Some(owner) => {
                let owner = SessionAddress {
                    root_session_id: root.root_session_id.clone(),
                    session_id: owner,
                };
                let key = self.key(&owner, Key::Relayed);
                let entry: Option<String> = redis::cmd("HGET")
                    .arg(&key)
                    .arg(id)
                    .query_async(&mut self.conn())
                    .await?;
                (owner, key, entry)
            }
        };
        match entry {
            Some(text) => Ok(Some((owner, super::from_json(&key, &text)?))),
            None => Ok(None),
        }
    }

    /// The relayed calls of `address`'s session, by the remote call that awaits them.
    pub async fn relayed_groups(
        &self,
        address: &SessionAddress,
    ) -> Result<Vec<RelayedGroup>, Error> {
        let key = self.key(address, Key::Relayed);
        let fields: HashMap<String, String> = redis::cmd("HGETALL")
            .arg(&key)
            .query_async(&mut self.conn())
            .await?;
        relayed_groups_of(&key, &fields)
    }

    /// Stores `answer` (JSON text) to the relayed call `id` of the remote call `via_call_id`,
    /// once the producer accepted it, while `owner` is suspended on `run_id` awaiting the call.
    pub async fn store_relayed_answer(
        &self,
        owner: &SessionAddress,
        run_id: &str,
        via_call_id: &str,
        id: &str,
        answer: &str,
    ) -> Result<RelayedAnswer, Error> {
        // The root's `awaiting` term counts the relayed calls still open: it follows the answer.
        let mark = self.mark_for_index(owner).await?;
        let stored = STORE_RELAYED_ANSWER
            .on(self, owner)
            .arg(run_id)
            .arg(via_call_id)
            .arg(id)
            .arg(answer)
            .arg(super::now_ms())
            .run(self)
            .await;
        self.reindex_after_change(owner, mark).await;
        stored
    }

    /// The end of a remote child its caller's resume continued answers the caller's call
    /// (`end.tool_call_id`) with `answer`, writing `subagent_end` on the caller's stream, while
    /// the caller is suspended on `run_id` (see `answer_remote_call.lua`).
    /// With `fold`, the caller's `after_sub_agent` patch for its resumed run's drain.
    pub async fn answer_remote_call(
        &self,
        caller: &SessionAddress,
        run_id: &str,
        answer: &StoredAnswer,
        end: ChildEnd<'_>,
        fold: Option<&json_patch::Patch>,
    ) -> Result<ParentReport, Error> {
        let caller_state = self
            .session(caller)
            .await?
            .ok_or_else(|| Error::SessionNotFound(caller.session_id.clone()))?;
        let subagent_end = self.subagent_end_body(
            super::RunRef {
                address: caller,
                stream_id: &caller_state.stream_id,
                run_id,
            },
            answer,
            &end,
        );
        ANSWER_REMOTE_CALL
            .on(self, caller)
            .arg(run_id)
            .arg(end.tool_call_id)
            .arg(to_json(answer))
            .arg(subagent_end)
            .arg(super::now_ms())
            .arg(fold.map(to_json).unwrap_or_default())
            .run(self)
            .await
    }

    /// The `after_sub_agent` patch a remote child's end left for its caller's call
    /// `tool_call_id` (see [`Store::answer_remote_call`]), if any.
    pub async fn remote_fold(
        &self,
        address: &SessionAddress,
        tool_call_id: &str,
    ) -> Result<Option<json_patch::Patch>, Error> {
        let key = self.key(address, Key::State);
        let patch: Option<String> = redis::cmd("HGET")
            .arg(&key)
            .arg(format!("remoteFold:{tool_call_id}"))
            .query_async(&mut self.conn())
            .await?;
        patch.map(|text| super::from_json(&key, &text)).transpose()
    }
}

/// The groups of a `relayed` hash's fields, in the order each group lists its calls.
pub(super) fn relayed_groups_of(
    key: &str,
    fields: &HashMap<String, String>,
) -> Result<Vec<RelayedGroup>, Error> {
    let mut groups = Vec::new();
    for (field, ids) in fields {
        let Some(via_call_id) = field.strip_prefix(GROUP_PREFIX) else {
            continue;
        };
        let mut calls = Vec::new();
        for id in ids.split_whitespace() {
            if let Some(text) = fields.get(id) {
                let call: RelayedCall = super::from_json(key, text)?;
                let answered = fields.contains_key(&format!("{ANSWER_PREFIX}{id}"));
                calls.push((call, answered));
            }
        }
        groups.push(RelayedGroup {
            via_call_id: via_call_id.to_owned(),
            calls,
        });
    }
    groups.sort_by(|a, b| a.via_call_id.cmp(&b.via_call_id));
    Ok(groups)
}

/// The answer stored in a `relayed` hash for the relayed call `id` (the submit as the client
/// sent it, see `store_relayed_answer.lua`), as the tree's reads show a stored answer.
pub(super) fn relayed_answer_of(
    key: &str,
    fields: &HashMap<String, String>,
    id: &str,
) -> Result<Option<StoredAnswer>, Error> {
    let Some(text) = fields.get(&format!("{ANSWER_PREFIX}{id}")) else {
        return Ok(None);
    };
    let request: crate::submit::SubmitRequest = super::from_json(key, text)?;
    // The hash keeps no time of the answer.
    Ok(Some(StoredAnswer {
        answer: Answer::from(request),
        submitted_at: 0,
    }))
}
