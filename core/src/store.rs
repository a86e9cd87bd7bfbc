//! The Redis store. Every state transition is one Lua script (atomic, one round trip); reads are
//! plain commands. All keys of a session tree carry the root session's hash tag, so each script
//! touches one Redis Cluster slot: `<prefix>:{<root>}:<session>:<what>`.

pub use baton_wire::{
    session::{
        ApprovalDecision, Continuation, SessionState, Status, StopKind, StopRecord, Suspension,
    },
    usage::UsageRecord,
};

use crate::{
    chunk::{ChunkHeader, ChunkKind, EndStatus, RunError, StreamChunk, encode_unsequenced},
    message::Message,
    model::Usage,
};
use redis::{
    AsyncCommands, Script, Value as RedisValue,
    aio::{ConnectionManager, MultiplexedConnection},
    streams::{StreamRangeReply, StreamReadOptions, StreamReadReply},
};
use serde::{Deserialize, Serialize};
use std::{
    collections::HashMap,
    sync::LazyLock,
    time::{SystemTime, UNIX_EPOCH},
};

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    #[error("session {0} already exists")]
    SessionExists(String),
    #[error("session {0} not found")]
    SessionNotFound(String),
    /// The run is not the session's current run, or it has ended.
    #[error("run {run_id} may not write: {reason}")]
    RunRefused { run_id: String, reason: String },
    /// Stored data does not have the shape Baton writes; a bug or a foreign writer.
    #[error("corrupt data at {key}: {reason}")]
    Corrupt { key: String, reason: String },
}

/// Where a session lives: its own id and the root of its tree (the same for a top-level session).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionAddress {
    pub root_session_id: String,
    pub session_id: String,
}

impl SessionAddress {
    /// A top-level session: its own root.
    pub fn root(session_id: impl Into<String>) -> Self {
        let session_id = session_id.into();
        Self {
            root_session_id: session_id.clone(),
            session_id,
        }
    }
}

/// How a stop request ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stopped {
    /// The run is stopped; its workflow (if still running) should be cancelled.
    Stopped {
        run_id: String,
    },
    SessionNotFound,
    /// Nothing runs (the session has ended).
    NotRunning {
        status: String,
    },
}

/// What kind of answer a pending call waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PendingKind {
    /// The result of a client tool.
    Client,
    /// A person's approval of a server tool call.
    Approval,
}

/// A call the run waits on, as stored in the owning session's `pending` hash. The run that
/// awaits it is stored beside it (`pendingRun`), so a resume can take it over without rewriting
/// this entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingCall {
    pub tool_call_id: String,
    pub tool_name: String,
    pub input: serde_json::Value,
    pub kind: PendingKind,
    pub step: u32,
    /// Milliseconds since the epoch; past it the call counts as answered (`client_tool_timeout`).
    pub deadline_at: u64,
    /// How long the drained call keeps answering `already_completed`, in milliseconds.
    pub completed_retention_ms: u64,
    /// For approvals: `<runId>::<toolCallId>`, which the approval response must name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_id: Option<String>,
    /// Since when the call is awaited (ms since the epoch), for the client-tool wait time.
    #[serde(default)]
    pub awaited_since: u64,
}

/// A checkpoint: the log, step and stream positions at one step boundary.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Checkpoint {
    /// Its index in the session's checkpoint list, which only grows (a rewind adds one too).
    pub id: u32,
    pub message_count: u64,
    pub step_count: u32,
    pub stream_sequence: u64,
    /// For a step that suspended: when, what it awaited and the pending entries it wrote, so a
    /// rewind to it can await the same calls again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspended_at: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspension: Option<Suspension>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending: Vec<PendingCall>,
}

/// A new session, as `/start` creates it.
#[derive(Debug, Clone)]
pub struct NewSession<'a> {
    pub address: &'a SessionAddress,
    pub agent_type: &'a str,
    pub run_id: &'a str,
    pub stream_id: &'a str,
    pub workflow_id: &'a str,
    /// The initial log: system prompt (if any) and the user's message.
    pub messages: &'a [Message],
}

/// Whether a write was new or a replay of one already done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    New,
    AlreadyDone,
}

/// What a step commit needs besides the address.
#[derive(Debug, Clone)]
pub struct StepCommit<'a> {
    pub run_id: &'a str,
    pub step: u32,
    /// `Some` completes the run with this output after the step.
    pub completion: Option<Completion>,
}

/// The end of a completed run.
#[derive(Debug, Clone)]
pub struct Completion {
    pub output: String,
    pub usage: crate::usage::UsageRollup,
}

/// A staged assistant turn, as the model step leaves it for the tools and the commit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StagedTurn {
    pub message: Message,
    pub usage: UsageRecord,
}

/// A client's answer to a pending call, as stored until the call is drained into the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredAnswer {
    pub answer: Answer,
    pub submitted_at: u64,
}

/// What a client answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Answer {
    /// A client tool's result or error.
    Outcome {
        outcome: crate::message::ToolOutcome,
    },
    /// A person's decision on an approval-gated call.
    Approval(ApprovalDecision),
}

/// How the store took a submitted answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SubmitOutcome {
    Accepted(Continuation),
    /// The call already has an answer (or was drained); the stored one stands.
    AlreadyCompleted(Continuation),
    UnknownToolCall,
    /// The call's run is no longer the session's run; nothing was written.
    RunSuperseded,
    /// The call's run was stopped (interrupt or abort); nothing was written.
    RunStopped,
}

/// How a resume's claim on a session ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// The new run owns the session; it continues after `step_count` committed steps.
    Claimed {
        step_count: u32,
    },
    SessionNotFound,
    /// A run is executing.
    AlreadyRunning,
    /// These calls are neither answered nor past their deadline.
    Awaiting {
        tool_call_ids: Vec<String>,
    },
    /// The session is in a status no resume continues (e.g. completed).
    NotResumable {
        status: String,
    },
}

/// What a resume brings: a user message for the next turn (`with_message`) or none
/// (`continue`), and whether open calls are abandoned.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ResumeEntry {
    pub message: Option<Message>,
    /// With a message: answer the still-open calls `client_tool_abandoned`.
    pub abandon_pending: bool,
    /// Claim only if this is still the session's run (a deadline resumes only its own run).
    pub expected_run_id: Option<String>,
}

/// A rewind of a session to one of its checkpoints (resume `from_checkpoint`).
#[derive(Debug, Clone)]
pub struct Rewind<'a> {
    pub agent_type: &'a str,
    pub stream_id: &'a str,
    pub new_run_id: &'a str,
    pub workflow_id: &'a str,
    /// The checkpoint, as read before (checkpoint records never change).
    pub checkpoint: &'a Checkpoint,
    /// Appended after the rewind; with a checkpoint that suspended it needs `abandon_pending`.
    pub message: Option<Message>,
    /// Drain the restored calls of a checkpoint that suspended as `client_tool_abandoned`.
    pub abandon_pending: bool,
}

/// How a rewind ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Rewound {
    /// The new run owns the session after `step_count` steps and runs (its workflow starts).
    Run {
        step_count: u32,
    },
    /// The checkpoint's calls are awaited again by the new run, with these entries: the session
    /// is suspended and no workflow runs.
    Suspended {
        step_count: u32,
        pending: Vec<PendingCall>,
    },
    SessionNotFound,
    AlreadyRunning,
    UnknownCheckpoint,
}

/// One awaited call as a resume drains it into the log.
#[derive(Debug, Clone, PartialEq)]
pub struct DrainedCall {
    pub message: Message,
    pub step: u32,
    /// Until when a re-submit still answers `already_completed` (ms since the epoch).
    pub marker_expiry: u64,
    /// How long the client took: from the suspension to the answer (or the lapsed deadline).
    pub wait_ms: u64,
}

/// How far a step has come.
#[derive(Debug, Clone, PartialEq)]
pub enum StepProgress {
    /// The model has not answered yet (or its answer was not staged).
    New,
    /// The model's turn is staged; its tools may have run, the step is not committed.
    Staged(StagedTurn),
    /// The step is part of the log.
    Committed,
    /// The step is part of the log and this run is suspended on it.
    Suspended { tool_call_ids: Vec<String> },
}

macro_rules! lua {
    ($file:literal) => {
        LazyLock::new(|| {
            Script::new(concat!(
                include_str!("store/prelude.lua"),
                "\n",
                include_str!($file)
            ))
        })
    };
}

static CREATE_SESSION: LazyLock<Script> = lua!("store/create_session.lua");
static EMIT_MODEL_CHUNKS: LazyLock<Script> = lua!("store/emit_model_chunks.lua");
static STAGE_TURN: LazyLock<Script> = lua!("store/stage_turn.lua");
static STAGE_TOOL_RESULT: LazyLock<Script> = lua!("store/stage_tool_result.lua");
static COMMIT_STEP: LazyLock<Script> = lua!("store/commit_step.lua");
static FAIL_RUN: LazyLock<Script> = lua!("store/fail_run.lua");
static COMMIT_SUSPENDED_STEP: LazyLock<Script> = lua!("store/commit_suspended_step.lua");
static SUBMIT_ANSWER: LazyLock<Script> = lua!("store/submit_answer.lua");
static CLAIM_RESUME: LazyLock<Script> = lua!("store/claim_resume.lua");
static APPLY_ANSWERS: LazyLock<Script> = lua!("store/apply_answers.lua");
static STOP_RUN: LazyLock<Script> = lua!("store/stop_run.lua");
static REWIND: LazyLock<Script> = lua!("store/rewind.lua");
static TAKE_TOKEN: LazyLock<Script> = lua!("store/take_token.lua");
static SNAPSHOT: LazyLock<Script> = lua!("store/snapshot.lua");

/// The id an approval request is answered with: `<runId>::<toolCallId>`.
pub fn approval_id(run_id: &str, tool_call_id: &str) -> String {
    format!("{run_id}::{tool_call_id}")
}

/// The `tool_approval_request` chunk of a pending approval (none for a client call).
fn approval_request_body(header: &ChunkHeader, call: &PendingCall) -> Option<String> {
    let approval_id = call.approval_id.as_ref()?;
    Some(encode_unsequenced(
        header,
        &ChunkKind::ToolApprovalRequest {
            step: call.step,
            tool_call_id: call.tool_call_id.clone(),
            tool_name: call.tool_name.clone(),
            input: call.input.clone(),
            approval_id: approval_id.clone(),
        },
    ))
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Handle on Baton's Redis data. Cheap to clone.
#[derive(Clone)]
pub struct Store {
    client: redis::Client,
    connection: ConnectionManager,
    prefix: String,
    stream_max_chunks: u64,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("prefix", &self.prefix)
            .finish()
    }
}

impl Store {
    /// Connects to `redis_url`; every key starts with `prefix` (tests use one prefix each).
    pub async fn connect(redis_url: &str, prefix: impl Into<String>) -> Result<Self, Error> {
        let client = redis::Client::open(redis_url)?;
        let connection = ConnectionManager::new(client.clone()).await?;
        Ok(Self {
            client,
            connection,
            prefix: prefix.into(),
            stream_max_chunks: 0,
        })
    }

    /// Sessions this store creates keep at most `max` chunks in their stream (the oldest are
    /// trimmed as new ones come); 0 keeps every chunk. A reader asking for a trimmed position
    /// is told `TRUNCATED` and re-reads the snapshot.
    pub fn with_stream_max_chunks(mut self, max: u64) -> Self {
        self.stream_max_chunks = max;
        self
    }

    fn key(&self, address: &SessionAddress, what: &str) -> String {
        format!(
            "{}:{{{}}}:{}:{}",
            self.prefix, address.root_session_id, address.session_id, what
        )
    }

    fn header(&self, address: &SessionAddress, stream_id: &str, run_id: &str) -> ChunkHeader {
        ChunkHeader {
            stream_id: stream_id.to_owned(),
            session_id: address.session_id.clone(),
            agent_id: address.session_id.clone(),
            run_id: run_id.to_owned(),
            timestamp: now_ms(),
        }
    }

    /// Creates a session with its first run: state `active`, the initial log, the `run_start`
    /// chunk and checkpoint 0. Refuses an existing session id.
    pub async fn create_session(&self, new: NewSession<'_>) -> Result<u64, Error> {
        let body = encode_unsequenced(
            &self.header(new.address, new.stream_id, new.run_id),
            &ChunkKind::RunStart {
                agent_type: new.agent_type.to_owned(),
            },
        );
        let mut invocation = CREATE_SESSION.prepare_invoke();
        invocation
            .key(self.key(new.address, "state"))
            .key(self.key(new.address, "stream"))
            .key(self.key(new.address, "messages"))
            .key(self.key(new.address, "checkpoints"))
            .arg(new.agent_type)
            .arg(new.run_id)
            .arg(new.stream_id)
            .arg(&new.address.root_session_id)
            .arg(now_ms())
            .arg(body)
            .arg(new.workflow_id)
            .arg(self.stream_max_chunks);
        for message in new.messages {
            invocation.arg(to_json(message));
        }
        let reply: Vec<RedisValue> = invocation.invoke_async(&mut self.conn()).await?;
        match reply_tag(&reply).as_str() {
            "ok" => Ok(reply_int(&reply, 1)),
            "session_exists" => Err(Error::SessionExists(new.address.session_id.clone())),
            other => Err(unexpected("create_session", other)),
        }
    }

    /// Appends model-phase chunks (`step_start`, `text_delta`) of a step. `first_index` is the
    /// position of the first chunk within the step; chunks already written are skipped, so a
    /// retried model step does not repeat them. Returns how many were appended.
    pub async fn emit_model_chunks(
        &self,
        address: &SessionAddress,
        stream_id: &str,
        run_id: &str,
        step: u32,
        first_index: u32,
        kinds: &[ChunkKind],
    ) -> Result<u32, Error> {
        let header = self.header(address, stream_id, run_id);
        let mut invocation = EMIT_MODEL_CHUNKS.prepare_invoke();
        invocation
            .key(self.key(address, "state"))
            .key(self.key(address, "stream"))
            .key(self.key(address, "staged"))
            .arg(run_id)
            .arg(step)
            .arg(first_index);
        for kind in kinds {
            invocation.arg(encode_unsequenced(&header, kind));
        }
        let reply: Vec<RedisValue> = invocation.invoke_async(&mut self.conn()).await?;
        match reply_tag(&reply).as_str() {
            "ok" => Ok(reply_int(&reply, 1) as u32),
            "already_committed" => Ok(0),
            refused => Err(refusal(run_id, refused)),
        }
    }

    /// Stages the assistant turn of `step` and writes a `tool_start` chunk per tool call.
    pub async fn stage_turn(
        &self,
        address: &SessionAddress,
        stream_id: &str,
        run_id: &str,
        step: u32,
        turn: &StagedTurn,
    ) -> Result<Written, Error> {
        let header = self.header(address, stream_id, run_id);
        let calls: &[crate::message::ToolCall] = match &turn.message {
            Message::Assistant { tool_calls, .. } => tool_calls,
            _ => &[],
        };
        let call_ids: Vec<&str> = calls.iter().map(|c| c.id.as_str()).collect();
        let mut invocation = STAGE_TURN.prepare_invoke();
        invocation
            .key(self.key(address, "state"))
            .key(self.key(address, "stream"))
            .key(self.key(address, "staged"))
            .arg(run_id)
            .arg(step)
            .arg(to_json(&turn.message))
            .arg(to_json(&call_ids))
            .arg(to_json(&turn.usage));
        for call in calls {
            invocation.arg(encode_unsequenced(
                &header,
                &ChunkKind::ToolStart {
                    step,
                    tool_call_id: call.id.clone(),
                    tool_name: call.name.clone(),
                    input: call.arguments.clone(),
                },
            ));
        }
        let reply: Vec<RedisValue> = invocation.invoke_async(&mut self.conn()).await?;
        written_or_refused(run_id, &reply)
    }

    /// How far `step` of `run_id` has come, in one round trip.
    pub async fn step_progress(
        &self,
        address: &SessionAddress,
        run_id: &str,
        step: u32,
    ) -> Result<StepProgress, Error> {
        let key = self.key(address, "staged");
        let state_key = self.key(address, "state");
        #[allow(clippy::type_complexity)]
        let ((step_count, suspension), fields): (
            (Option<u32>, Option<String>),
            (Option<String>, Option<String>),
        ) = redis::pipe()
            .cmd("HMGET")
            .arg(&state_key)
            .arg("stepCount")
            .arg("suspension")
            .add_command(staged_turn_fields(&key, run_id, step))
            .query_async(&mut self.conn())
            .await?;
        let Some(step_count) = step_count else {
            return Err(Error::SessionNotFound(address.session_id.clone()));
        };
        if step_count >= step {
            let suspension: Option<Suspension> = suspension
                .map(|text| from_json(&state_key, &text))
                .transpose()?;
            return Ok(match suspension {
                Some(s) if s.run_id == run_id && s.step == step => StepProgress::Suspended {
                    tool_call_ids: s.tool_call_ids,
                },
                _ => StepProgress::Committed,
            });
        }
        Ok(match decode_staged_turn(&key, fields)? {
            Some(turn) => StepProgress::Staged(turn),
            None => StepProgress::New,
        })
    }

    /// The staged turn of `step`, if the model step has run.
    pub async fn staged_turn(
        &self,
        address: &SessionAddress,
        run_id: &str,
        step: u32,
    ) -> Result<Option<StagedTurn>, Error> {
        let key = self.key(address, "staged");
        let fields = staged_turn_fields(&key, run_id, step)
            .query_async(&mut self.conn())
            .await?;
        decode_staged_turn(&key, fields)
    }

    /// The staged result of a tool call of `step`, if it has one.
    pub async fn staged_tool_result(
        &self,
        address: &SessionAddress,
        run_id: &str,
        step: u32,
        tool_call_id: &str,
    ) -> Result<Option<Message>, Error> {
        let key = self.key(address, "staged");
        let field = format!("result:{run_id}:{step}:{tool_call_id}");
        let result: Option<String> = self.conn().hget(&key, field).await?;
        result.map(|r| from_json(&key, &r)).transpose()
    }

    /// Whether a tool call of `step` already has a staged result.
    pub async fn has_staged_tool_result(
        &self,
        address: &SessionAddress,
        run_id: &str,
        step: u32,
        tool_call_id: &str,
    ) -> Result<bool, Error> {
        let field = format!("result:{run_id}:{step}:{tool_call_id}");
        Ok(self
            .conn()
            .hexists(self.key(address, "staged"), field)
            .await?)
    }

    /// Stages one server tool's answer (first answer wins) and writes its `tool_end` chunk.
    pub async fn stage_tool_result(
        &self,
        address: &SessionAddress,
        stream_id: &str,
        run_id: &str,
        step: u32,
        result: &Message,
    ) -> Result<Written, Error> {
        let Message::Tool(tool_result) = result else {
            panic!("stage_tool_result takes a tool message");
        };
        let body = encode_unsequenced(
            &self.header(address, stream_id, run_id),
            &ChunkKind::tool_end(
                step,
                &tool_result.tool_call_id,
                &tool_result.tool_name,
                &tool_result.outcome,
            ),
        );
        let reply: Vec<RedisValue> = STAGE_TOOL_RESULT
            .key(self.key(address, "state"))
            .key(self.key(address, "stream"))
            .key(self.key(address, "staged"))
            .arg(run_id)
            .arg(step)
            .arg(&tool_result.tool_call_id)
            .arg(to_json(result))
            .arg(body)
            .invoke_async(&mut self.conn())
            .await?;
        written_or_refused(run_id, &reply)
    }

    /// Commits a staged step into the log (see `commit_step.lua`), completing the run when
    /// `commit.completion` is set. Idempotent per step.
    pub async fn commit_step(
        &self,
        address: &SessionAddress,
        stream_id: &str,
        commit: StepCommit<'_>,
    ) -> Result<Written, Error> {
        let header = self.header(address, stream_id, commit.run_id);
        let step_end = encode_unsequenced(&header, &ChunkKind::StepEnd { step: commit.step });
        let (is_final, output, end) = match commit.completion {
            Some(completion) => {
                let end = encode_unsequenced(
                    &header,
                    &ChunkKind::End {
                        status: EndStatus::Completed,
                        output: Some(completion.output.clone()),
                        error: None,
                        usage: completion.usage,
                    },
                );
                ("1", completion.output, end)
            }
            None => ("0", String::new(), String::new()),
        };
        let reply: Vec<RedisValue> = COMMIT_STEP
            .key(self.key(address, "state"))
            .key(self.key(address, "stream"))
            .key(self.key(address, "staged"))
            .key(self.key(address, "messages"))
            .key(self.key(address, "checkpoints"))
            .key(self.key(address, "usage"))
            .arg(commit.run_id)
            .arg(commit.step)
            .arg(now_ms())
            .arg(step_end)
            .arg(is_final)
            .arg(output)
            .arg(end)
            .invoke_async(&mut self.conn())
            .await?;
        match reply_tag(&reply).as_str() {
            "ok" => Ok(Written::New),
            "already_committed" => Ok(Written::AlreadyDone),
            "not_staged" | "missing_result" | "step_out_of_order" => Err(Error::Corrupt {
                key: self.key(address, "staged"),
                reason: format!("commit of step {} refused: {reply:?}", commit.step),
            }),
            refused => Err(refusal(commit.run_id, refused)),
        }
    }

    /// Commits a step that awaits client calls and suspends the run (see
    /// `commit_suspended_step.lua`). `pending` holds one entry per awaited call, in call order.
    /// Idempotent per step.
    pub async fn commit_suspended_step(
        &self,
        address: &SessionAddress,
        stream_id: &str,
        run_id: &str,
        step: u32,
        pending: &[PendingCall],
    ) -> Result<Written, Error> {
        let header = self.header(address, stream_id, run_id);
        let tool_call_ids: Vec<String> = pending.iter().map(|p| p.tool_call_id.clone()).collect();
        let suspension = Suspension {
            run_id: run_id.to_owned(),
            step,
            tool_call_ids: tool_call_ids.clone(),
        };
        let root = SessionAddress::root(&address.root_session_id);
        let mut invocation = COMMIT_SUSPENDED_STEP.prepare_invoke();
        invocation
            .key(self.key(address, "state"))
            .key(self.key(address, "stream"))
            .key(self.key(address, "staged"))
            .key(self.key(address, "messages"))
            .key(self.key(address, "checkpoints"))
            .key(self.key(address, "usage"))
            .key(self.key(address, "pending"))
            .key(self.key(address, "pendingRun"))
            .key(self.key(&root, "ownership"))
            .key(self.key(address, "openDeadlines"))
            .arg(run_id)
            .arg(step)
            .arg(now_ms())
            .arg(encode_unsequenced(&header, &ChunkKind::StepEnd { step }))
            .arg(to_json(&suspension))
            .arg(encode_unsequenced(
                &header,
                &ChunkKind::Suspended {
                    step,
                    tool_call_ids,
                },
            ))
            .arg(&address.session_id);
        for call in pending {
            invocation
                .arg(&call.tool_call_id)
                .arg(to_json(call))
                .arg(approval_request_body(&header, call).unwrap_or_default())
                .arg(call.deadline_at);
        }
        let reply: Vec<RedisValue> = invocation.invoke_async(&mut self.conn()).await?;
        match reply_tag(&reply).as_str() {
            "ok" => Ok(Written::New),
            "already_committed" => Ok(Written::AlreadyDone),
            "not_staged" | "missing_result" | "step_out_of_order" => Err(Error::Corrupt {
                key: self.key(address, "staged"),
                reason: format!("suspension at step {step} refused: {reply:?}"),
            }),
            refused => Err(refusal(run_id, refused)),
        }
    }

    /// The calls a session waits on, each with the run that awaits it, in no particular order.
    pub async fn pending_calls(
        &self,
        address: &SessionAddress,
    ) -> Result<Vec<(PendingCall, String)>, Error> {
        let key = self.key(address, "pending");
        let (calls, runs): (HashMap<String, String>, HashMap<String, String>) = redis::pipe()
            .hgetall(&key)
            .hgetall(self.key(address, "pendingRun"))
            .query_async(&mut self.conn())
            .await?;
        calls
            .into_iter()
            .map(|(id, call)| {
                let run = runs.get(&id).cloned().ok_or_else(|| Error::Corrupt {
                    key: key.clone(),
                    reason: format!("pending call {id} has no run"),
                })?;
                Ok((from_json(&key, &call)?, run))
            })
            .collect()
    }

    /// One pending call of the session, if it is still pending.
    pub async fn pending_call(
        &self,
        address: &SessionAddress,
        tool_call_id: &str,
    ) -> Result<Option<PendingCall>, Error> {
        let key = self.key(address, "pending");
        let call: Option<String> = self.conn().hget(&key, tool_call_id).await?;
        call.map(|call| from_json(&key, &call)).transpose()
    }

    /// Stores the answer to a pending call of `owner` (found through the root's ownership map);
    /// the first answer wins. See `submit_answer.lua`.
    pub async fn submit_answer(
        &self,
        owner: &SessionAddress,
        tool_call_id: &str,
        answer: &StoredAnswer,
    ) -> Result<SubmitOutcome, Error> {
        let root = SessionAddress::root(&owner.root_session_id);
        let reply: Vec<RedisValue> = SUBMIT_ANSWER
            .key(self.key(owner, "state"))
            .key(self.key(owner, "stream"))
            .key(self.key(owner, "pending"))
            .key(self.key(owner, "pendingRun"))
            .key(self.key(owner, "answers"))
            .key(self.key(&root, "ownership"))
            .key(self.key(&root, "completed"))
            .key(self.key(owner, "openDeadlines"))
            .arg(tool_call_id)
            .arg(to_json(answer))
            .arg(now_ms())
            .arg(&owner.session_id)
            .invoke_async(&mut self.conn())
            .await?;
        let continuation = || match reply
            .get(1)
            .and_then(|v| redis::from_redis_value::<String>(v).ok())
            .as_deref()
        {
            Some("awaiting_batch") => Ok(Continuation::AwaitingBatch),
            Some("caller_resumes") => Ok(Continuation::CallerResumes),
            Some("consumed") => Ok(Continuation::Consumed),
            other => Err(unexpected("submit_answer", other.unwrap_or(""))),
        };
        match reply_tag(&reply).as_str() {
            "accepted" => Ok(SubmitOutcome::Accepted(continuation()?)),
            "already_completed" => Ok(SubmitOutcome::AlreadyCompleted(continuation()?)),
            "unknown_tool_call" => Ok(SubmitOutcome::UnknownToolCall),
            "run_superseded" => Ok(SubmitOutcome::RunSuperseded),
            "run_stopped" => Ok(SubmitOutcome::RunStopped),
            other => Err(unexpected("submit_answer", other)),
        }
    }

    /// The stored answers of a session's pending calls, by tool call id.
    pub async fn answers(
        &self,
        address: &SessionAddress,
    ) -> Result<HashMap<String, StoredAnswer>, Error> {
        let key = self.key(address, "answers");
        let answers: HashMap<String, String> = self.conn().hgetall(&key).await?;
        answers
            .into_iter()
            .map(|(id, answer)| Ok((id, from_json(&key, &answer)?)))
            .collect()
    }

    /// Claims a suspended session for `new_run_id` (see `claim_resume.lua`) and writes the new
    /// run's `run_start` chunk.
    pub async fn claim_resume(
        &self,
        address: &SessionAddress,
        agent_type: &str,
        stream_id: &str,
        new_run_id: &str,
        workflow_id: &str,
        entry: &ResumeEntry,
    ) -> Result<Claim, Error> {
        let body = encode_unsequenced(
            &self.header(address, stream_id, new_run_id),
            &ChunkKind::RunStart {
                agent_type: agent_type.to_owned(),
            },
        );
        let reply: Vec<RedisValue> = CLAIM_RESUME
            .key(self.key(address, "state"))
            .key(self.key(address, "stream"))
            .key(self.key(address, "pending"))
            .key(self.key(address, "pendingRun"))
            .key(self.key(address, "answers"))
            .key(self.key(address, "openDeadlines"))
            .arg(new_run_id)
            .arg(now_ms())
            .arg(body)
            .arg(match entry.message {
                Some(_) => "with_message",
                None => "continue",
            })
            .arg(if entry.abandon_pending { "1" } else { "0" })
            .arg(entry.message.as_ref().map(to_json).unwrap_or_default())
            .arg(workflow_id)
            .arg(entry.expected_run_id.as_deref().unwrap_or_default())
            .invoke_async(&mut self.conn())
            .await?;
        let strings = || -> Vec<String> {
            reply[1..]
                .iter()
                .filter_map(|v| redis::from_redis_value(v).ok())
                .collect()
        };
        Ok(match reply_tag(&reply).as_str() {
            "ok" => Claim::Claimed {
                step_count: reply_int(&reply, 1) as u32,
            },
            "session_not_found" => Claim::SessionNotFound,
            "already_running" => Claim::AlreadyRunning,
            "awaiting" => Claim::Awaiting {
                tool_call_ids: strings(),
            },
            "not_resumable" => Claim::NotResumable {
                status: strings().into_iter().next().unwrap_or_default(),
            },
            other => return Err(unexpected("claim_resume", other)),
        })
    }

    /// Takes a token from the session's submit bucket (`per_minute` tokens, refilled evenly):
    /// `Ok(None)` when taken, `Ok(Some(wait))` when the bucket is empty, with the time until the
    /// next token. Shared by every server on the same Redis.
    pub async fn take_submit_token(
        &self,
        address: &SessionAddress,
        per_minute: u32,
    ) -> Result<Option<std::time::Duration>, Error> {
        let rate = f64::from(per_minute) / 60_000.0;
        let (taken, wait_ms): (u8, u64) = TAKE_TOKEN
            .key(self.key(address, "state"))
            .key(self.key(address, "submitBucket"))
            .arg(per_minute)
            .arg(rate)
            .arg(now_ms())
            .invoke_async(&mut self.conn())
            .await?;
        Ok((taken == 0).then(|| std::time::Duration::from_millis(wait_ms)))
    }

    /// The session's snapshot (see `snapshot.lua` and [`SnapshotResponse`]), or `None` if
    /// there is no such session.
    pub async fn snapshot(
        &self,
        address: &SessionAddress,
    ) -> Result<Option<crate::api::SnapshotResponse>, Error> {
        let key = self.key(address, "state");
        let reply: Vec<String> = SNAPSHOT
            .key(&key)
            .key(self.key(address, "stream"))
            .key(self.key(address, "messages"))
            .key(self.key(address, "checkpoints"))
            .invoke_async(&mut self.conn())
            .await?;
        if reply.first().map(String::as_str) != Some("ok") || reply.len() < 7 {
            return Ok(None);
        }
        let corrupt = |reason: String| Error::Corrupt {
            key: key.clone(),
            reason,
        };
        let number = |text: &str| {
            text.parse::<u64>()
                .map_err(|e| corrupt(format!("snapshot field {text:?}: {e}")))
        };
        let status = Status::parse(&reply[1])
            .ok_or_else(|| corrupt(format!("unknown status {}", reply[1])))?;
        let checkpoint: Option<Checkpoint> = match reply[5].as_str() {
            "" => None,
            record => Some(from_json(&key, record)?),
        };
        let last_sequence = number(&reply[4])?;
        // The floor is the sequence before the oldest retained entry (`<sequence>-0`).
        let oldest_retained_sequence = match reply[6].split_once('-') {
            Some((first, _)) => number(first)?.saturating_sub(1),
            None => last_sequence,
        };
        let messages = reply[7..]
            .iter()
            .map(|m| from_json(&key, m))
            .collect::<Result<_, _>>()?;
        let pinned = checkpoint.as_ref().filter(|_| !status.is_terminal());
        Ok(Some(crate::api::SnapshotResponse {
            session_id: address.session_id.clone(),
            stream_id: reply[2].clone(),
            status,
            state: crate::api::SnapshotState { messages },
            stream_sequence: pinned.map_or(-1, |c| c.stream_sequence as i64),
            oldest_retained_sequence,
            step_count: match pinned {
                Some(checkpoint) => checkpoint.step_count,
                None => number(&reply[3])? as u32,
            },
            checkpoint_id: checkpoint.map(|c| c.id),
        }))
    }

    /// The session's usage rollup (see [`crate::usage`]), or `None` if there is no such session.
    pub async fn usage_rollup(
        &self,
        address: &SessionAddress,
    ) -> Result<Option<crate::usage::UsageRollup>, Error> {
        let key = self.key(address, "state");
        let (exists, wait, aborts, records, messages): (
            bool,
            Option<u64>,
            Option<u64>,
            Vec<String>,
            Vec<String>,
        ) = redis::pipe()
            .exists(&key)
            .hget(&key, "clientToolWaitMs")
            .hget(&key, "aborts")
            .lrange(self.key(address, "usage"), 0, -1)
            .lrange(self.key(address, "messages"), 0, -1)
            .query_async(&mut self.conn())
            .await?;
        if !exists {
            return Ok(None);
        }
        let records: Vec<UsageRecord> = records
            .iter()
            .map(|r| from_json(&key, r))
            .collect::<Result<_, _>>()?;
        let messages: Vec<Message> = messages
            .iter()
            .map(|m| from_json(&key, m))
            .collect::<Result<_, _>>()?;
        Ok(Some(crate::usage::UsageRollup::of(
            &records,
            &messages,
            wait.unwrap_or(0),
            aborts.unwrap_or(0),
        )))
    }

    /// One checkpoint of the session, by id.
    pub async fn checkpoint(
        &self,
        address: &SessionAddress,
        id: u32,
    ) -> Result<Option<Checkpoint>, Error> {
        let key = self.key(address, "checkpoints");
        let record: Option<String> = self.conn().lindex(&key, id as isize).await?;
        record.map(|r| from_json(&key, &r)).transpose()
    }

    /// Rewinds a session that is not running to a checkpoint for a new run (see `rewind.lua`).
    /// A checkpoint that suspended gives its calls back to the new run with fresh deadlines
    /// (each as long as it first had) and fresh approval ids; unless a message abandons them,
    /// the session awaits them again at once.
    pub async fn rewind(
        &self,
        address: &SessionAddress,
        rewind: Rewind<'_>,
    ) -> Result<Rewound, Error> {
        let checkpoint = rewind.checkpoint;
        let now = now_ms();
        let header = self.header(address, rewind.stream_id, rewind.new_run_id);
        let suspend = !checkpoint.pending.is_empty() && rewind.message.is_none();
        let restored: Vec<PendingCall> = checkpoint
            .pending
            .iter()
            .map(|call| PendingCall {
                deadline_at: now
                    + call
                        .deadline_at
                        .saturating_sub(checkpoint.suspended_at.unwrap_or(call.deadline_at)),
                approval_id: call
                    .approval_id
                    .as_ref()
                    .map(|_| approval_id(rewind.new_run_id, &call.tool_call_id)),
                awaited_since: now,
                ..call.clone()
            })
            .collect();
        let suspension = checkpoint.suspension.as_ref().map(|s| Suspension {
            run_id: rewind.new_run_id.to_owned(),
            ..s.clone()
        });
        let step = suspension
            .as_ref()
            .map_or(checkpoint.step_count, |s| s.step);
        let mut invocation = REWIND.prepare_invoke();
        invocation
            .key(self.key(address, "state"))
            .key(self.key(address, "stream"))
            .key(self.key(address, "messages"))
            .key(self.key(address, "checkpoints"))
            .key(self.key(address, "pending"))
            .key(self.key(address, "pendingRun"))
            .key(self.key(address, "answers"))
            .key(self.key(address, "openDeadlines"))
            .key(self.key(&SessionAddress::root(&address.root_session_id), "ownership"))
            .key(self.key(&SessionAddress::root(&address.root_session_id), "completed"))
            .arg(rewind.new_run_id)
            .arg(now)
            .arg(checkpoint.id)
            .arg(rewind.workflow_id)
            .arg(encode_unsequenced(
                &header,
                &ChunkKind::Rewind {
                    checkpoint_id: checkpoint.id,
                    stream_sequence: checkpoint.stream_sequence,
                },
            ))
            .arg(encode_unsequenced(
                &header,
                &ChunkKind::RunStart {
                    agent_type: rewind.agent_type.to_owned(),
                },
            ))
            .arg(if suspend { "suspend" } else { "run" })
            .arg(rewind.message.as_ref().map(to_json).unwrap_or_default())
            .arg(if rewind.abandon_pending { "1" } else { "0" })
            .arg(suspension.as_ref().map(to_json).unwrap_or_default())
            .arg(encode_unsequenced(
                &header,
                &ChunkKind::Suspended {
                    step,
                    tool_call_ids: restored.iter().map(|c| c.tool_call_id.clone()).collect(),
                },
            ))
            .arg(&address.session_id);
        for call in &restored {
            invocation
                .arg(&call.tool_call_id)
                .arg(to_json(call))
                .arg(if suspend {
                    approval_request_body(&header, call).unwrap_or_default()
                } else {
                    String::new()
                })
                .arg(call.deadline_at);
        }
        let reply: Vec<RedisValue> = invocation.invoke_async(&mut self.conn()).await?;
        Ok(match reply_tag(&reply).as_str() {
            "ok" if suspend => Rewound::Suspended {
                step_count: reply_int(&reply, 1) as u32,
                pending: restored,
            },
            "ok" => Rewound::Run {
                step_count: reply_int(&reply, 1) as u32,
            },
            "session_not_found" => Rewound::SessionNotFound,
            "already_running" => Rewound::AlreadyRunning,
            "unknown_checkpoint" => Rewound::UnknownCheckpoint,
            other => return Err(unexpected("rewind", other)),
        })
    }

    /// Drains the answered (or lapsed) calls of a resumed run into the log, in the given order,
    /// and ends the suspension (see `apply_answers.lua`). Idempotent.
    pub async fn apply_answers(
        &self,
        address: &SessionAddress,
        stream_id: &str,
        run_id: &str,
        drained: &[DrainedCall],
    ) -> Result<Written, Error> {
        let header = self.header(address, stream_id, run_id);
        let root = SessionAddress::root(&address.root_session_id);
        let mut invocation = APPLY_ANSWERS.prepare_invoke();
        invocation
            .key(self.key(address, "state"))
            .key(self.key(address, "stream"))
            .key(self.key(address, "messages"))
            .key(self.key(address, "pending"))
            .key(self.key(address, "pendingRun"))
            .key(self.key(address, "answers"))
            .key(self.key(&root, "ownership"))
            .key(self.key(&root, "completed"))
            .key(self.key(address, "openDeadlines"))
            .arg(run_id)
            .arg(now_ms())
            .arg(drained.iter().map(|call| call.wait_ms).sum::<u64>());
        for call in drained {
            let Message::Tool(result) = &call.message else {
                panic!("apply_answers drains tool messages");
            };
            invocation
                .arg(&result.tool_call_id)
                .arg(to_json(&call.message))
                .arg(encode_unsequenced(
                    &header,
                    &ChunkKind::tool_end(
                        call.step,
                        &result.tool_call_id,
                        &result.tool_name,
                        &result.outcome,
                    ),
                ))
                .arg(call.marker_expiry);
        }
        let reply: Vec<RedisValue> = invocation.invoke_async(&mut self.conn()).await?;
        match reply_tag(&reply).as_str() {
            "ok" => Ok(Written::New),
            "already_applied" => Ok(Written::AlreadyDone),
            refused => Err(refusal(run_id, refused)),
        }
    }

    /// Records a durable stop on the session's current run and ends it (see `stop_run.lua`).
    pub async fn stop_run(
        &self,
        address: &SessionAddress,
        kind: StopKind,
    ) -> Result<Stopped, Error> {
        let Some(state) = self.session(address).await? else {
            return Ok(Stopped::SessionNotFound);
        };
        let now = now_ms();
        let stop = StopRecord {
            run_id: state.run_id.clone(),
            kind,
            at: now,
        };
        let error = RunError {
            code: crate::ErrorCode::FrameworkCancelled,
            message: "the run was aborted".to_owned(),
        };
        let end = ChunkKind::End {
            status: match kind {
                StopKind::Interrupt => EndStatus::Interrupted,
                StopKind::Abort => EndStatus::Failed,
            },
            output: None,
            error: (kind == StopKind::Abort).then(|| error.clone()),
            usage: {
                let mut rollup = self.usage_rollup(address).await?.unwrap_or_default();
                // The stop's own abort is counted by the script that writes this chunk.
                rollup.aborts += u64::from(kind == StopKind::Abort);
                rollup
            },
        };
        let reply: Vec<RedisValue> = STOP_RUN
            .key(self.key(address, "state"))
            .key(self.key(address, "stream"))
            .arg(match kind {
                StopKind::Interrupt => "interrupt",
                StopKind::Abort => "abort",
            })
            .arg(now)
            .arg(to_json(&stop))
            .arg(to_json(&error))
            .arg(encode_unsequenced(
                &self.header(address, &state.stream_id, &state.run_id),
                &end,
            ))
            .invoke_async(&mut self.conn())
            .await?;
        let second = || {
            reply
                .get(1)
                .and_then(|v| redis::from_redis_value::<String>(v).ok())
                .unwrap_or_default()
        };
        Ok(match reply_tag(&reply).as_str() {
            "ok" => Stopped::Stopped { run_id: second() },
            "session_not_found" => Stopped::SessionNotFound,
            "not_running" => Stopped::NotRunning { status: second() },
            other => return Err(unexpected("stop_run", other)),
        })
    }

    /// The session that owns a pending client call, looked up on the root of its tree.
    pub async fn call_owner(
        &self,
        root_session_id: &str,
        tool_call_id: &str,
    ) -> Result<Option<String>, Error> {
        let root = SessionAddress::root(root_session_id);
        Ok(self
            .conn()
            .hget(self.key(&root, "ownership"), tool_call_id)
            .await?)
    }

    /// Fails the run with a typed error and writes the `end` chunk. A run that already ended (or
    /// was superseded) is left alone and `AlreadyDone` is returned.
    pub async fn fail_run(
        &self,
        address: &SessionAddress,
        stream_id: &str,
        run_id: &str,
        error: &RunError,
        usage: crate::usage::UsageRollup,
    ) -> Result<Written, Error> {
        let end = encode_unsequenced(
            &self.header(address, stream_id, run_id),
            &ChunkKind::End {
                status: EndStatus::Failed,
                output: None,
                error: Some(error.clone()),
                usage,
            },
        );
        let reply: Vec<RedisValue> = FAIL_RUN
            .key(self.key(address, "state"))
            .key(self.key(address, "stream"))
            .key(self.key(address, "staged"))
            .arg(run_id)
            .arg(now_ms())
            .arg(to_json(error))
            .arg(end)
            .invoke_async(&mut self.conn())
            .await?;
        match reply_tag(&reply).as_str() {
            "ok" => Ok(Written::New),
            "run_not_active" | "run_superseded" => Ok(Written::AlreadyDone),
            refused => Err(refusal(run_id, refused)),
        }
    }

    /// The session's state, or `None` if it does not exist.
    pub async fn session(&self, address: &SessionAddress) -> Result<Option<SessionState>, Error> {
        let key = self.key(address, "state");
        let fields: HashMap<String, String> = self.conn().hgetall(&key).await?;
        if fields.is_empty() {
            return Ok(None);
        }
        let text = |name: &str| {
            fields.get(name).cloned().ok_or_else(|| Error::Corrupt {
                key: key.clone(),
                reason: format!("missing field {name}"),
            })
        };
        let number = |name: &str| {
            text(name)?.parse::<u64>().map_err(|e| Error::Corrupt {
                key: key.clone(),
                reason: format!("field {name}: {e}"),
            })
        };
        let status_text = text("status")?;
        Ok(Some(SessionState {
            session_id: address.session_id.clone(),
            root_session_id: text("rootSessionId")?,
            agent_type: text("agentType")?,
            status: Status::parse(&status_text).ok_or_else(|| Error::Corrupt {
                key: key.clone(),
                reason: format!("unknown status {status_text}"),
            })?,
            run_id: text("runId")?,
            stream_id: text("streamId")?,
            step_count: number("stepCount")? as u32,
            last_sequence: number("lastSequence")?,
            created_at: number("createdAt")?,
            updated_at: number("updatedAt")?,
            output: fields.get("output").cloned(),
            error: fields
                .get("error")
                .map(|e| from_json(&key, e))
                .transpose()?,
            suspension: fields
                .get("suspension")
                .map(|e| from_json(&key, e))
                .transpose()?,
            abandon_pending: fields.contains_key("abandon"),
            workflow_id: fields.get("workflowId").cloned(),
            stop: fields.get("stop").map(|e| from_json(&key, e)).transpose()?,
            is_executing: None,
        }))
    }

    /// The whole message log.
    pub async fn messages(&self, address: &SessionAddress) -> Result<Vec<Message>, Error> {
        self.json_list(self.key(address, "messages")).await
    }

    pub async fn checkpoints(&self, address: &SessionAddress) -> Result<Vec<Checkpoint>, Error> {
        self.json_list(self.key(address, "checkpoints")).await
    }

    pub async fn usage_records(&self, address: &SessionAddress) -> Result<Vec<UsageRecord>, Error> {
        self.json_list(self.key(address, "usage")).await
    }

    /// Total usage of the session so far.
    pub async fn usage_total(&self, address: &SessionAddress) -> Result<Usage, Error> {
        let mut total = Usage::default();
        for record in self.usage_records(address).await? {
            total.add(&record.usage);
        }
        Ok(total)
    }

    /// Up to `count` chunks with a sequence above `after` (exclusive), oldest first.
    pub async fn chunks_after(
        &self,
        address: &SessionAddress,
        after: u64,
        count: usize,
    ) -> Result<Vec<StreamChunk>, Error> {
        let key = self.key(address, "stream");
        let reply: StreamRangeReply = self
            .conn()
            .xrange_count(&key, format!("({after}-0"), "+", count)
            .await?;
        reply
            .ids
            .iter()
            .map(|entry| decode_chunk(&key, &entry.map))
            .collect()
    }

    /// A connection of its own for blocking stream reads, which would stall the shared one.
    pub async fn subscriber(&self) -> Result<Subscriber, Error> {
        Ok(Subscriber {
            connection: self.client.get_multiplexed_async_connection().await?,
        })
    }

    async fn json_list<T: for<'de> Deserialize<'de>>(&self, key: String) -> Result<Vec<T>, Error> {
        let items: Vec<String> = self.conn().lrange(&key, 0, -1).await?;
        items.iter().map(|item| from_json(&key, item)).collect()
    }

    fn conn(&self) -> ConnectionManager {
        self.connection.clone()
    }

    fn stream_key(&self, address: &SessionAddress) -> String {
        self.key(address, "stream")
    }
}

/// A dedicated connection that waits for new chunks of a session.
pub struct Subscriber {
    connection: MultiplexedConnection,
}

impl Subscriber {
    /// Waits up to `block_ms` for chunks above `after` and returns them (empty on time-out).
    pub async fn next_chunks(
        &mut self,
        store: &Store,
        address: &SessionAddress,
        after: u64,
        block_ms: usize,
    ) -> Result<Vec<StreamChunk>, Error> {
        let key = store.stream_key(address);
        let options = StreamReadOptions::default().block(block_ms).count(512);
        let reply: Option<StreamReadReply> = self
            .connection
            .xread_options(&[&key], &[format!("{after}-0")], &options)
            .await?;
        let Some(reply) = reply else {
            return Ok(Vec::new());
        };
        reply
            .keys
            .iter()
            .flat_map(|stream| stream.ids.iter())
            .map(|entry| decode_chunk(&key, &entry.map))
            .collect()
    }
}

/// `HMGET` of a staged turn's message and usage.
fn staged_turn_fields(key: &str, run_id: &str, step: u32) -> redis::Cmd {
    let mut command = redis::cmd("HMGET");
    command
        .arg(key)
        .arg(format!("turn:{run_id}:{step}"))
        .arg(format!("usage:{run_id}:{step}"));
    command
}

fn decode_staged_turn(
    key: &str,
    (message, usage): (Option<String>, Option<String>),
) -> Result<Option<StagedTurn>, Error> {
    match (message, usage) {
        (Some(message), Some(usage)) => Ok(Some(StagedTurn {
            message: from_json(key, &message)?,
            usage: from_json(key, &usage)?,
        })),
        _ => Ok(None),
    }
}

fn decode_chunk(key: &str, fields: &HashMap<String, RedisValue>) -> Result<StreamChunk, Error> {
    let corrupt = |reason: String| Error::Corrupt {
        key: key.to_owned(),
        reason,
    };
    let raw = fields
        .get("c")
        .ok_or_else(|| corrupt("stream entry without field c".into()))?;
    let text: String =
        redis::from_redis_value(raw).map_err(|e| corrupt(format!("field c: {e}")))?;
    from_json(key, &text)
}

fn to_json<T: Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).expect("Baton's own types always serialize")
}

fn from_json<T: for<'de> Deserialize<'de>>(key: &str, text: &str) -> Result<T, Error> {
    serde_json::from_str(text).map_err(|e| Error::Corrupt {
        key: key.to_owned(),
        reason: e.to_string(),
    })
}

fn reply_tag(reply: &[RedisValue]) -> String {
    reply
        .first()
        .and_then(|v| redis::from_redis_value::<String>(v).ok())
        .unwrap_or_default()
}

fn reply_int(reply: &[RedisValue], index: usize) -> u64 {
    reply
        .get(index)
        .and_then(|v| redis::from_redis_value::<u64>(v).ok())
        .unwrap_or(0)
}

fn written_or_refused(run_id: &str, reply: &[RedisValue]) -> Result<Written, Error> {
    match reply_tag(reply).as_str() {
        "ok" => Ok(Written::New),
        "already_staged" | "already_committed" => Ok(Written::AlreadyDone),
        refused => Err(refusal(run_id, refused)),
    }
}

fn refusal(run_id: &str, reason: &str) -> Error {
    if reason == "session_not_found" {
        return Error::SessionNotFound(format!("of run {run_id}"));
    }
    Error::RunRefused {
        run_id: run_id.to_owned(),
        reason: reason.to_owned(),
    }
}

fn unexpected(script: &str, tag: &str) -> Error {
    Error::Corrupt {
        key: script.to_owned(),
        reason: format!("unexpected reply {tag:?}"),
    }
}

#[cfg(test)]
mod tests;
