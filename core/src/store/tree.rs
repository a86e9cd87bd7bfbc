//! Session trees: starting the child session of a sub-agent call, staging the call's result
//! when the child has ended, and reading a tree (a session's children, the root's descendants,
//! a child's parent).

use super::{
    Error, RunRef, SessionAddress, Status, StepRef, Store, StoredAnswer, Written,
    keys::Key,
    now_ms,
    replies::{Refusal, Reply, WriteReply},
    scripts::{QUEUE_MESSAGE, REPORT_TO_PARENT, START_CHILD},
    to_json,
};
use crate::{
    chunk::{ChunkHeader, ChunkKind, EndStatus, encode_unsequenced},
    message::{Message, ToolOutcome, ToolResult},
};
use redis::{AsyncCommands, FromRedisValue, RedisResult, Value as RedisValue};
use std::collections::HashMap;

/// A child session about to start for a sub-agent call of `parent`'s step.
#[derive(Debug, Clone)]
pub struct NewChild<'a> {
    pub parent: StepRef<'a>,
    pub tool_call_id: &'a str,
    pub child: &'a SessionAddress,
    pub agent_type: &'a str,
    /// The ids of the child's first run, used only if the child does not exist yet.
    pub run_id: &'a str,
    pub stream_id: &'a str,
    pub workflow_id: &'a str,
    /// The child's initial log: its system prompt (if any) and the call's message.
    pub messages: &'a [Message],
    /// The child's custom state (its agent's defaults), for an agent that declares one.
    pub custom_state: Option<&'a serde_json::Value>,
}

/// The child's first run, as started now or by an earlier attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildRun {
    pub run_id: String,
    pub stream_id: String,
    /// Whether this call created the child (an earlier attempt did not).
    pub created: bool,
}

/// How a child ended, as the parent's `subagent_end` chunk reports it.
#[derive(Debug, Clone)]
pub struct ChildEnd<'a> {
    pub child_session_id: &'a str,
    /// The parent's call the child answers.
    pub tool_call_id: &'a str,
    pub status: EndStatus,
    pub output: Option<&'a str>,
}

/// What a child's report did to its parent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParentReport {
    /// The parent does not await the call (its run still waits for the child's workflow).
    NotAwaited,
    /// The call is answered (now or by an earlier report); the parent's state after it.
    Answered {
        parent_status: Status,
        parent_run_id: String,
        /// The parent's calls still neither answered nor past their deadline.
        open_calls: u64,
        /// The run a claim set aside (the parent was suspended on it) until its new run drains:
        /// with it a retried report finds the run an earlier attempt claimed.
        suspended_run_id: Option<String>,
    },
}

impl FromRedisValue for ParentReport {
    fn from_redis_value(value: &RedisValue) -> RedisResult<Self> {
        let reply = Reply::parse(value)?;
        match reply.tag.as_str() {
            "not_awaited" => Ok(Self::NotAwaited),
            "answered" => {
                let status: String = reply.value(0)?;
                Ok(Self::Answered {
                    parent_status: Status::parse(&status).ok_or_else(|| reply.unexpected())?,
                    parent_run_id: reply.value(1)?,
                    open_calls: reply.value(2)?,
                    suspended_run_id: Some(reply.value::<String>(3)?).filter(|id| !id.is_empty()),
                })
            }
            _ => Err(reply.unexpected()),
        }
    }
}

/// `start_child.lua`.
enum StartChildReply {
    Started(ChildRun),
    Refused(Refusal),
    AlreadyCommitted,
}

impl FromRedisValue for StartChildReply {
    fn from_redis_value(value: &RedisValue) -> RedisResult<Self> {
        let reply = Reply::parse(value)?;
        let run = |created| -> RedisResult<Self> {
            Ok(Self::Started(ChildRun {
                run_id: reply.value(0)?,
                stream_id: reply.value(1)?,
                created,
            }))
        };
        match reply.tag.as_str() {
            "created" => run(true),
            "exists" => run(false),
            "already_committed" => Ok(Self::AlreadyCommitted),
            _ => Ok(Self::Refused(reply.refusal()?)),
        }
    }
}

impl Store {
    /// Starts the child session of a sub-agent call, once: a retried start finds the child and
    /// names its run. The parent's run must still hold its session and the step must not be
    /// committed; `subagent_start` goes on the parent's stream in the same script.
    pub async fn start_child(&self, new: NewChild<'_>) -> Result<ChildRun, Error> {
        let index_address = new.child.clone();
        let mark = self.mark_for_index(&index_address).await?;
        let result = self.start_child_unindexed(new).await;
        self.reindex_after_change(&index_address, mark).await;
        result
    }

    /// [`Self::start_child`] before the search index follows it.
    async fn start_child_unindexed(&self, new: NewChild<'_>) -> Result<ChildRun, Error> {
        let child_header = ChunkHeader {
            stream_id: new.stream_id.to_owned(),
            session_id: new.child.session_id.clone(),
            agent_id: new.child.session_id.clone(),
            run_id: new.run_id.to_owned(),
            timestamp: now_ms(),
        };
        let run_start = encode_unsequenced(
            &child_header,
            &ChunkKind::RunStart {
                agent_type: new.agent_type.to_owned(),
            },
        );
        let subagent_start = encode_unsequenced(
            &self.header(new.parent.run()),
            &ChunkKind::SubagentStart {
                sub_session_id: new.child.session_id.clone(),
                agent_type: new.agent_type.to_owned(),
                tool_call_id: new.tool_call_id.to_owned(),
            },
        );
        let parent = new.parent;
        let mut invocation = START_CHILD.on_child(self, new.child, parent.address);
        invocation
            .arg(parent.run_id)
            .arg(parent.step)
            .arg(new.tool_call_id)
            .arg(&new.child.session_id)
            .arg(new.agent_type)
            .arg(new.run_id)
            .arg(new.stream_id)
            .arg(&parent.address.session_id)
            .arg(now_ms())
            .arg(run_start)
            .arg(super::session::stored_first_run_workflow_id(
                new.workflow_id,
                new.agent_type,
                &new.child.session_id,
            ))
            .arg(subagent_start)
            .arg(new.custom_state.map(to_json).unwrap_or_default());
        for message in new.messages {
            invocation.arg(to_json(message));
        }
        match invocation.run(self).await? {
            StartChildReply::Started(run) => Ok(run),
            StartChildReply::Refused(refusal) => Err(refusal.into_error(parent.run_id)),
            StartChildReply::AlreadyCommitted => Err(Error::RunRefused {
                run_id: parent.run_id.to_owned(),
                reason: format!("step {} is already committed", parent.step),
            }),
        }
    }

    /// Stages the result of a sub-agent call for the parent's step with its `tool_end` chunk and
    /// the `subagent_end` chunk; the first result wins.
    pub async fn stage_sub_agent_result(
        &self,
        step: StepRef<'_>,
        result: &ToolResult,
        end: ChildEnd<'_>,
        state_patch: Option<&json_patch::Patch>,
    ) -> Result<Written, Error> {
        let error = match &result.outcome {
            ToolOutcome::Error(error) => Some(error.clone()),
            ToolOutcome::Result(_) => None,
        };
        let subagent_end = ChunkKind::SubagentEnd {
            sub_session_id: end.child_session_id.to_owned(),
            tool_call_id: result.tool_call_id.clone(),
            status: end.status,
            output: end.output.map(str::to_owned),
            error,
        };
        self.stage_tool_result_reporting(step, result, state_patch, &[subagent_end])
            .await
    }

    /// A child that has ended answers its parent's sub-agent call `tool_call_id` with
    /// `answer`, writing `subagent_end` on the parent's stream (see `report_to_parent.lua`).
    pub async fn report_to_parent(
        &self,
        child: RunRef<'_>,
        parent: &SessionAddress,
        answer: &StoredAnswer,
        end: ChildEnd<'_>,
    ) -> Result<ParentReport, Error> {
        let tool_call_id = end.tool_call_id;
        let parent_state = self
            .session(parent)
            .await?
            .ok_or_else(|| Error::SessionNotFound(parent.session_id.clone()))?;
        let subagent_end = self.subagent_end_body(
            RunRef {
                address: parent,
                stream_id: &parent_state.stream_id,
                run_id: &parent_state.run_id,
            },
            answer,
            &end,
        );
        REPORT_TO_PARENT
            .on_child(self, child.address, parent)
            .arg(tool_call_id)
            .arg(to_json(answer))
            .arg(subagent_end)
            .arg(now_ms())
            .run(self)
            .await
    }

    /// The `subagent_end` chunk `run` writes when a child's end (`end`) answers its call with
    /// `answer`.
    pub(super) fn subagent_end_body(
        &self,
        run: RunRef<'_>,
        answer: &StoredAnswer,
        end: &ChildEnd<'_>,
    ) -> String {
        let error = match &answer.answer {
            super::Answer::Outcome {
                outcome: ToolOutcome::Error(error),
            } => Some(error.clone()),
            _ => None,
        };
        encode_unsequenced(
            &self.header(run),
            &ChunkKind::SubagentEnd {
                sub_session_id: end.child_session_id.to_owned(),
                tool_call_id: end.tool_call_id.to_owned(),
                status: end.status,
                output: end.output.map(str::to_owned),
                error,
            },
        )
    }

    /// Leaves `message` on a suspended root for its resumed run to append after the drained
    /// results, if `expected_run_id` still holds the root suspended (see `queue_message.lua`).
    pub async fn queue_root_message(
        &self,
        root: &SessionAddress,
        expected_run_id: &str,
        message: &Message,
    ) -> Result<(), Error> {
        let reply: WriteReply = QUEUE_MESSAGE
            .on(self, root)
            .arg(expected_run_id)
            .arg(to_json(message))
            .run(self)
            .await?;
        reply.into_written(expected_run_id, |detail| self.inconsistent(root, detail))?;
        Ok(())
    }

    /// The children a session's sub-agent calls started: toolCallId → child session id.
    pub async fn children(
        &self,
        address: &SessionAddress,
    ) -> Result<HashMap<String, String>, Error> {
        Ok(self
            .conn()
            .hgetall(self.key(address, Key::Children))
            .await?)
    }

    /// Every descendant session of the tree `address` belongs to (the root not included).
    pub async fn tree_sessions(&self, address: &SessionAddress) -> Result<Vec<String>, Error> {
        let mut members: Vec<String> = self.conn().smembers(self.key(address, Key::Tree)).await?;
        members.sort();
        Ok(members)
    }

    /// The parent of a child session and the call that started it; `None` for a root.
    pub async fn parent_of(
        &self,
        address: &SessionAddress,
    ) -> Result<Option<(SessionAddress, String)>, Error> {
        let (parent, call): (Option<String>, Option<String>) = redis::cmd("HMGET")
            .arg(self.key(address, Key::State))
            .arg("parentSessionId")
            .arg("parentToolCallId")
            .query_async(&mut self.conn())
            .await?;
        Ok(parent.zip(call).map(|(parent, call)| {
            (
                SessionAddress {
                    root_session_id: address.root_session_id.clone(),
                    session_id: parent,
                },
                call,
            )
        }))
    }
}
