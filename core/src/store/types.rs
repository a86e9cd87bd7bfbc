//! What more than one group of operations names, reads or writes: a session's address, a run
//! and a step of it, its pending calls and checkpoints, and whether a write was new.

use super::Suspension;
use crate::subagent::SubAgentTransport;
use serde::{Deserialize, Serialize};

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

    /// Whether the session is the root of its tree.
    pub fn is_root(&self) -> bool {
        self.session_id == self.root_session_id
    }
}

/// One run of a session, as the chunks it writes name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunRef<'a> {
    pub address: &'a SessionAddress,
    pub stream_id: &'a str,
    pub run_id: &'a str,
}

/// One step of one run of a session: what every write and read of a step names (a read does
/// not need the stream id, but a step is always known with it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepRef<'a> {
    pub address: &'a SessionAddress,
    pub stream_id: &'a str,
    pub run_id: &'a str,
    pub step: u32,
}

impl<'a> StepRef<'a> {
    /// The run this step belongs to.
    pub fn run(self) -> RunRef<'a> {
        RunRef {
            address: self.address,
            stream_id: self.stream_id,
            run_id: self.run_id,
        }
    }
}

/// A run about to take a session over (a resume's claim, a rewind): its ids, and the agent type
/// its `run_start` chunk names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewRun<'a> {
    pub agent_type: &'a str,
    pub stream_id: &'a str,
    pub run_id: &'a str,
    pub workflow_id: &'a str,
}

/// Whether a write was new or a replay of one already done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    New,
    AlreadyDone,
}

/// What kind of answer a pending call waits for. Stored by name ([`Self::as_str`]): `client`,
/// `approval`, and for a sub-agent call its transport's kind (`sub_agent` for a local child).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PendingKind {
    /// The result of a client tool.
    Client,
    /// A person's approval of a server tool call.
    Approval,
    /// A sub-agent call whose child session is suspended: answered by the child when it ends,
    /// never by a client. The transport says how the child is reached.
    SubAgent(SubAgentTransport),
}

impl PendingKind {
    /// The stored name, as the scripts compare it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Client => "client",
            Self::Approval => "approval",
            Self::SubAgent(transport) => transport.pending_kind(),
        }
    }

    /// The kind of a stored name.
    pub fn parse(name: &str) -> Option<Self> {
        [Self::Client, Self::Approval]
            .into_iter()
            .chain(SubAgentTransport::ALL.map(Self::SubAgent))
            .find(|kind| kind.as_str() == name)
    }

    /// Whether a child answers the call (by any transport), never a client.
    pub fn is_sub_agent(self) -> bool {
        matches!(self, Self::SubAgent(_))
    }
}

impl Serialize for PendingKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for PendingKind {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        Self::parse(&name)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown pending kind {name:?}")))
    }
}

/// The deadline of a sub-agent call's pending entry: none of its own (the child's calls have
/// theirs), so a far future that still fits a Lua number exactly.
pub const NO_DEADLINE: u64 = 253_402_300_799_999;

/// A call the run waits on, as stored in the owning session's `pending` hash. The run that
/// awaits it is the session's run (not stored with it), so a resume takes it over without
/// rewriting this entry.
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
    /// For the question a server tool's call stopped on, which suspended its run: what it asks
    /// and how the call goes on. Such an entry is a client call named `question` under a
    /// question's id (`bt_q…`), its `input` the question as a person sees it; the call it
    /// answers is the model's (`PendingAsk::tool_call_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked: Option<PendingAsk>,
}

/// What a server tool's call asked when it suspended its run (see [`PendingCall::asked`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingAsk {
    #[serde(flatten)]
    pub asked: crate::tool::ask::Asked,
    /// The model's call that asked: its id, its tool and its arguments.
    pub tool_call_id: String,
    pub tool_name: String,
    pub arguments: serde_json::Value,
}

/// A suspension as the store keeps it (the state's `suspension` field, a checkpoint's record):
/// without its run, so that the state hash stays within Redis's compact encoding. While the
/// session is suspended the run is the session's own; while a claim holds the session until its
/// drain, the state keeps it aside as `suspendedRunId`; a rewind names the run it restores for.
/// Records written by earlier versions name the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredSuspension {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    pub step: u32,
    /// The awaited calls, in the order the model made them.
    pub tool_call_ids: Vec<String>,
}

impl StoredSuspension {
    /// What a run waits for at `step`, as stored (the run is not).
    pub(super) fn new(step: u32, tool_call_ids: Vec<String>) -> Self {
        Self {
            run_id: None,
            step,
            tool_call_ids,
        }
    }

    /// The suspension, its run the one the record names, else `run_id`.
    pub fn of_run(self, run_id: &str) -> Suspension {
        Suspension {
            run_id: self.run_id.unwrap_or_else(|| run_id.to_owned()),
            step: self.step,
            tool_call_ids: self.tool_call_ids,
        }
    }
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
    pub suspension: Option<StoredSuspension>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending: Vec<PendingCall>,
    /// The session's custom state at the checkpoint, for an agent that declares one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_state: Option<serde_json::Value>,
}
