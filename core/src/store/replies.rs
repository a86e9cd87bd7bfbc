//! The scripts' replies, each decoded once into a type. A script answers a table whose first
//! entry is a tag (`ok`, or why nothing was written) and whose other entries depend on the tag.
//! A reply outside that set is an error that `Invocation::run` (in `scripts.rs`) turns into
//! [`Error::Corrupt`].

use super::{Claim, Error, PendingKind, SubmitOutcome, Written};
use crate::session::{Continuation, Status};
use redis::{ErrorKind, FromRedisValue, RedisError, RedisResult, Value as RedisValue};

/// A reply split into its tag and the values after it.
pub(super) struct Reply {
    pub(super) tag: String,
    rest: Vec<RedisValue>,
}

impl Reply {
    pub(super) fn parse(value: &RedisValue) -> RedisResult<Self> {
        let mut items: Vec<RedisValue> = FromRedisValue::from_redis_value(value)?;
        if items.is_empty() {
            return Err(unexpected("an empty reply"));
        }
        let tag = String::from_redis_value(&items.remove(0))?;
        Ok(Self { tag, rest: items })
    }

    /// The value at `index` after the tag.
    pub(super) fn value<T: FromRedisValue>(&self, index: usize) -> RedisResult<T> {
        let value = self
            .rest
            .get(index)
            .ok_or_else(|| unexpected(format!("reply {:?} without value {index}", self.tag)))?;
        T::from_redis_value(value)
    }

    /// Every value after the tag.
    fn values<T: FromRedisValue>(&self) -> RedisResult<Vec<T>> {
        self.rest.iter().map(T::from_redis_value).collect()
    }

    /// The run guard's refusal this reply names, or the error for a tag the script never gives.
    pub(super) fn refusal(&self) -> RedisResult<Refusal> {
        Refusal::parse(&self.tag).ok_or_else(|| self.unexpected())
    }

    pub(super) fn unexpected(&self) -> RedisError {
        unexpected(format!("unexpected reply {:?}", self.tag))
    }
}

fn unexpected(detail: impl Into<String>) -> RedisError {
    RedisError::from((
        ErrorKind::TypeError,
        "unexpected script reply",
        detail.into(),
    ))
}

/// Why the run guard (`run_guard` or `step_guard` in the prelude) refused a run's write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refusal {
    SessionNotFound,
    /// The session's run is another one.
    RunSuperseded,
    /// The run has ended or is suspended.
    RunNotActive,
}

impl Refusal {
    fn parse(tag: &str) -> Option<Self> {
        Some(match tag {
            "session_not_found" => Self::SessionNotFound,
            "run_superseded" => Self::RunSuperseded,
            "run_not_active" => Self::RunNotActive,
            _ => return None,
        })
    }

    fn as_str(self) -> &'static str {
        match self {
            Self::SessionNotFound => "session_not_found",
            Self::RunSuperseded => "run_superseded",
            Self::RunNotActive => "run_not_active",
        }
    }

    /// The store error of a refused write of `run_id`.
    pub(super) fn into_error(self, run_id: &str) -> Error {
        match self {
            Self::SessionNotFound => Error::SessionNotFound(format!("of run {run_id}")),
            _ => Error::RunRefused {
                run_id: run_id.to_owned(),
                reason: self.as_str().to_owned(),
            },
        }
    }
}

/// `create_session.lua`.
pub(super) enum CreateReply {
    /// The session exists now; `run_start` has this sequence.
    Created {
        sequence: u64,
    },
    SessionExists,
    /// The script ran after the caller's deadline (the caller had given up): nothing written.
    Expired,
}

impl FromRedisValue for CreateReply {
    fn from_redis_value(value: &RedisValue) -> RedisResult<Self> {
        let reply = Reply::parse(value)?;
        Ok(match reply.tag.as_str() {
            "ok" => Self::Created {
                sequence: reply.value(0)?,
            },
            "session_exists" => Self::SessionExists,
            "expired" => Self::Expired,
            _ => return Err(reply.unexpected()),
        })
    }
}

/// `emit_model_chunks.lua`.
pub(super) enum EmitReply {
    /// This many chunks were new.
    Emitted {
        appended: u32,
    },
    /// The step is committed: a stale attempt writes nothing.
    AlreadyCommitted,
    Refused(Refusal),
}

impl FromRedisValue for EmitReply {
    fn from_redis_value(value: &RedisValue) -> RedisResult<Self> {
        let reply = Reply::parse(value)?;
        Ok(match reply.tag.as_str() {
            "ok" => Self::Emitted {
                appended: reply.value(0)?,
            },
            "already_committed" => Self::AlreadyCommitted,
            _ => Self::Refused(reply.refusal()?),
        })
    }
}

/// `forward_remote.lua`.
pub(super) enum ForwardReply {
    Written { cursor: u64, appended: u32 },
    AlreadyCommitted,
    Refused(Refusal),
}

impl FromRedisValue for ForwardReply {
    fn from_redis_value(value: &RedisValue) -> RedisResult<Self> {
        let reply = Reply::parse(value)?;
        Ok(match reply.tag.as_str() {
            "ok" => Self::Written {
                cursor: reply.value(0)?,
                appended: reply.value(1)?,
            },
            "already_committed" => Self::AlreadyCommitted,
            _ => Self::Refused(reply.refusal()?),
        })
    }
}

/// A script's `{'ok', value}`, or `None` for any refusal (a stale step): the callback token a
/// child's follower keeps, what a caller knew of its A2A task.
pub(super) struct OkValue(pub(super) Option<String>);

impl FromRedisValue for OkValue {
    fn from_redis_value(value: &RedisValue) -> RedisResult<Self> {
        let reply = Reply::parse(value)?;
        Ok(Self(match reply.tag.as_str() {
            "ok" => Some(reply.value(0)?),
            _ => None,
        }))
    }
}

/// `mark_remote_orphan`: recorded, or the session is gone.
pub(super) enum MarkReply {
    Marked,
    SessionNotFound,
}

impl FromRedisValue for MarkReply {
    fn from_redis_value(value: &RedisValue) -> RedisResult<Self> {
        let reply = Reply::parse(value)?;
        match reply.tag.as_str() {
            "ok" => Ok(Self::Marked),
            "session_not_found" => Ok(Self::SessionNotFound),
            _ => Err(reply.unexpected()),
        }
    }
}

/// The scripts that write a run's step or its end: staging, commits, `fail_run` and
/// `apply_answers`.
pub(super) enum WriteReply {
    Written(Written),
    Refused(Refusal),
    /// A commit found the staged step incomplete or out of order: `not_staged`,
    /// `missing_result <toolCallId>` or `step_out_of_order <committed>`.
    Inconsistent(String),
    /// A commit found state patches staged for the step and was given no folded state: the
    /// session's custom state and each patch (toolCallId, patch JSON), in the order to apply.
    StatePatches {
        current: String,
        patches: Vec<(String, String)>,
    },
}

impl FromRedisValue for WriteReply {
    fn from_redis_value(value: &RedisValue) -> RedisResult<Self> {
        let reply = Reply::parse(value)?;
        Ok(match reply.tag.as_str() {
            "ok" => Self::Written(Written::New),
            // An earlier attempt (or a concurrent one) did the same write.
            "already_staged" | "already_committed" | "already_applied" => {
                Self::Written(Written::AlreadyDone)
            }
            "state_patches" => {
                let values: Vec<String> = reply.values()?;
                let mut values = values.into_iter();
                let current = values.next().unwrap_or_default();
                let rest: Vec<String> = values.collect();
                let patches = rest
                    .chunks(2)
                    .map(|pair| match pair {
                        [id, patch] => Ok((id.clone(), patch.clone())),
                        _ => Err(unexpected(
                            "state_patches without a patch for its last call",
                        )),
                    })
                    .collect::<RedisResult<_>>()?;
                Self::StatePatches { current, patches }
            }
            "not_staged" | "missing_result" | "step_out_of_order" | "state_moved" => {
                let details: Vec<String> = reply.values()?;
                Self::Inconsistent(
                    std::iter::once(reply.tag.clone())
                        .chain(details)
                        .collect::<Vec<_>>()
                        .join(" "),
                )
            }
            _ => Self::Refused(reply.refusal()?),
        })
    }
}

/// `submit_answer.lua`, decoded straight into the outcome callers see.
/// `submit_answer.lua`: the outcome, and the call's tool and the owner's run where the script
/// read them (empty otherwise).
pub(super) struct SubmitReply(pub(super) SubmitReplyFields);

pub(super) struct SubmitReplyFields {
    pub(super) outcome: SubmitOutcome,
    pub(super) tool_name: String,
    pub(super) run_id: String,
}

/// `submit_answer.lua` for a root alone: its reply, or `None` when the tree has sessions below
/// the root (`in_tree`: nothing was written).
pub(super) struct AloneSubmitReply(pub(super) Option<SubmitReplyFields>);

impl FromRedisValue for AloneSubmitReply {
    fn from_redis_value(value: &RedisValue) -> RedisResult<Self> {
        if Reply::parse(value)?.tag == "in_tree" {
            return Ok(Self(None));
        }
        let SubmitReply(reply) = SubmitReply::from_redis_value(value)?;
        Ok(Self(Some(reply)))
    }
}

impl FromRedisValue for SubmitReply {
    fn from_redis_value(value: &RedisValue) -> RedisResult<Self> {
        let reply = Reply::parse(value)?;
        let continuation = || {
            let kind: String = reply.value(0)?;
            [
                Continuation::AwaitingBatch,
                Continuation::CallerResumes,
                Continuation::Consumed,
            ]
            .into_iter()
            .find(|continuation| continuation.kind() == kind)
            .ok_or_else(|| unexpected(format!("unexpected reply {kind:?}")))
        };
        // The call's tool and run follow the tag's own values, when the script read the call.
        let (outcome, read_from) = match reply.tag.as_str() {
            "accepted" => (SubmitOutcome::Accepted(continuation()?), 1),
            "already_completed" => (SubmitOutcome::AlreadyCompleted(continuation()?), 1),
            "unknown_tool_call" => (SubmitOutcome::UnknownToolCall, 0),
            "run_stopped" => (SubmitOutcome::RunStopped, 0),
            "unknown_approval" => (SubmitOutcome::UnknownApproval, 0),
            "awaits_sub_agent" => (SubmitOutcome::AwaitsSubAgent, 0),
            "wrong_kind" => {
                let kind: String = reply.value(2)?;
                let kind = PendingKind::parse(&kind)
                    .ok_or_else(|| unexpected(format!("pending kind {kind:?}")))?;
                (SubmitOutcome::WrongKind(kind), 0)
            }
            "refused_by_schema" => (
                SubmitOutcome::RefusedBySchema {
                    agent_type: reply.value(2)?,
                },
                0,
            ),
            "rate_limited" => {
                let wait_ms: u64 = reply.value(0)?;
                let wait = std::time::Duration::from_millis(wait_ms);
                return Ok(Self(SubmitReplyFields::bare(SubmitOutcome::RateLimited(
                    wait,
                ))));
            }
            "owned_by" => {
                let owner = SubmitOutcome::OwnedBy(reply.value(0)?);
                return Ok(Self(SubmitReplyFields::bare(owner)));
            }
            "check_asked" => {
                let entry: String = reply.value(0)?;
                let call: super::PendingCall = serde_json::from_str(&entry)
                    .map_err(|error| unexpected(format!("pending entry: {error}")))?;
                let schema = call.asked.map(|ask| ask.asked.schema).unwrap_or_default();
                (SubmitOutcome::CheckAgainstQuestion(schema), 1)
            }
            _ => return Err(reply.unexpected()),
        };
        let read = |index: usize| -> RedisResult<String> {
            if reply.rest.len() > index {
                reply.value(index)
            } else {
                Ok(String::new())
            }
        };
        Ok(Self(SubmitReplyFields {
            outcome,
            tool_name: read(read_from)?,
            run_id: read(read_from + 1)?,
        }))
    }
}

impl SubmitReplyFields {
    fn bare(outcome: SubmitOutcome) -> Self {
        Self {
            outcome,
            tool_name: String::new(),
            run_id: String::new(),
        }
    }
}

/// `claim_resume.lua`: the claimed run's step count and, when the state keeps the new run's
/// chunk header as its run id alone, that header's key; or a refusal as callers see it.
pub(super) enum ClaimReply {
    Claimed {
        step_count: u32,
        header_key: Option<String>,
    },
    Refused(Claim),
}

impl FromRedisValue for ClaimReply {
    fn from_redis_value(value: &RedisValue) -> RedisResult<Self> {
        let reply = Reply::parse(value)?;
        Ok(match reply.tag.as_str() {
            "ok" => Self::Claimed {
                step_count: reply.value(0)?,
                // '' when the state keeps the header in another form.
                header_key: reply.value::<String>(1).ok().filter(|key| !key.is_empty()),
            },
            "session_not_found" => Self::Refused(Claim::SessionNotFound),
            "already_running" => Self::Refused(Claim::AlreadyRunning),
            "awaiting" => Self::Refused(Claim::Awaiting {
                tool_call_ids: reply.values()?,
            }),
            "not_resumable" => Self::Refused(Claim::NotResumable {
                status: reply.value(0)?,
            }),
            _ => return Err(reply.unexpected()),
        })
    }
}

/// `stop_run.lua`.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum StopReply {
    /// The stop is recorded on this run; it closed these awaited calls (id, tool name).
    Stopped {
        run_id: String,
        closed: Vec<(String, String)>,
    },
    SessionNotFound,
    /// The session is in this status, where nothing runs.
    NotRunning {
        status: String,
    },
    /// The session's run is this one, not the one the stop was made for; nothing was written.
    Superseded {
        run_id: String,
    },
}

impl FromRedisValue for StopReply {
    fn from_redis_value(value: &RedisValue) -> RedisResult<Self> {
        let reply = Reply::parse(value)?;
        Ok(match reply.tag.as_str() {
            "ok" => Self::Stopped {
                run_id: reply.value(0)?,
                closed: reply.values::<String>()?[1..]
                    .chunks(2)
                    .filter_map(|pair| match pair {
                        [id, tool] => Some((id.clone(), tool.clone())),
                        _ => None,
                    })
                    .collect(),
            },
            "session_not_found" => Self::SessionNotFound,
            "not_running" => Self::NotRunning {
                status: reply.value(0)?,
            },
            "run_superseded" => Self::Superseded {
                run_id: reply.value(0)?,
            },
            _ => return Err(reply.unexpected()),
        })
    }
}

/// `rewind.lua`.
pub(super) enum RewindReply {
    /// The new run owns the session after this many steps.
    Rewound {
        step_count: u32,
    },
    SessionNotFound,
    AlreadyRunning,
    UnknownCheckpoint,
    /// The checkpoint is on a branch an earlier rewind went back past.
    AbandonedCheckpoint,
}

impl FromRedisValue for RewindReply {
    fn from_redis_value(value: &RedisValue) -> RedisResult<Self> {
        let reply = Reply::parse(value)?;
        Ok(match reply.tag.as_str() {
            "ok" => Self::Rewound {
                step_count: reply.value(0)?,
            },
            "session_not_found" => Self::SessionNotFound,
            "already_running" => Self::AlreadyRunning,
            "unknown_checkpoint" => Self::UnknownCheckpoint,
            "abandoned_checkpoint" => Self::AbandonedCheckpoint,
            _ => return Err(reply.unexpected()),
        })
    }
}

/// `snapshot.lua`. The stored JSON (checkpoint, messages) stays text here: the caller decodes
/// it naming the key it came from.
pub(super) enum SnapshotReply {
    SessionNotFound,
    Found(SnapshotFields),
}

/// What `snapshot.lua` read in one step.
pub(super) struct SnapshotFields {
    pub(super) status: Status,
    pub(super) stream_id: String,
    pub(super) step_count: u32,
    pub(super) last_sequence: u64,
    /// The newest checkpoint record, if any.
    pub(super) checkpoint: Option<String>,
    /// The id of the stream's oldest retained entry (`<sequence>-0`), if any.
    pub(super) oldest_entry_id: Option<String>,
    /// The sequence of the last `end` chunk after the checkpoint (of an earlier run) while the
    /// session is not ended.
    pub(super) last_end_sequence: Option<String>,
    /// The custom state (JSON text), for a session whose agent declares one: only a commit
    /// changes it, and a commit writes a checkpoint, so it is the newest checkpoint's state.
    pub(super) custom_state: Option<String>,
    /// The messages up to the checkpoint (all of them for an ended session).
    pub(super) messages: Vec<String>,
}

impl FromRedisValue for SnapshotReply {
    fn from_redis_value(value: &RedisValue) -> RedisResult<Self> {
        let reply = Reply::parse(value)?;
        match reply.tag.as_str() {
            "ok" => {}
            "session_not_found" => return Ok(Self::SessionNotFound),
            _ => return Err(reply.unexpected()),
        }
        let status: String = reply.value(0)?;
        let optional = |index: usize| -> RedisResult<Option<String>> {
            let text: String = reply.value(index)?;
            Ok(Some(text).filter(|text| !text.is_empty()))
        };
        Ok(Self::Found(SnapshotFields {
            status: Status::parse(&status)
                .ok_or_else(|| unexpected(format!("unknown status {status}")))?,
            stream_id: reply.value(1)?,
            step_count: reply.value(2)?,
            last_sequence: reply.value(3)?,
            checkpoint: optional(4)?,
            oldest_entry_id: optional(5)?,
            last_end_sequence: optional(6)?,
            custom_state: optional(7)?,
            messages: reply.rest[8.min(reply.rest.len())..]
                .iter()
                .map(String::from_redis_value)
                .collect::<RedisResult<_>>()?,
        }))
    }
}

impl WriteReply {
    /// The write's outcome for `run_id`: a refusal becomes the run's error, an inconsistent
    /// commit the error `inconsistent` makes of its detail.
    pub(super) fn into_written(
        self,
        run_id: &str,
        inconsistent: impl FnOnce(String) -> Error,
    ) -> Result<Written, Error> {
        match self {
            Self::Written(written) => Ok(written),
            Self::Refused(refusal) => Err(refusal.into_error(run_id)),
            Self::Inconsistent(detail) => Err(inconsistent(detail)),
            Self::StatePatches { .. } => Err(inconsistent(
                "state patches staged but not folded into the commit".to_owned(),
            )),
        }
    }
}
