//! Stream chunks: what a session's Redis stream carries to subscribers.
//!
//! Each chunk is written by the same Lua script as the state change it reports, so a chunk on the
//! stream means the change is committed. The store assigns `sequence`.

use crate::{
    error::ErrorCode,
    message::{ToolError, ToolOutcome},
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A chunk as stored and as sent to subscribers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct StreamChunk {
    /// Per session, monotonic across runs, starting at 1.
    pub sequence: u64,
    #[serde(flatten)]
    pub header: ChunkHeader,
    #[serde(flatten)]
    pub kind: ChunkKind,
    /// Set on a chunk a remote sub-agent's child streamed, copied onto this stream by the
    /// consumer: where it came from, in this hop's terms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_source: Option<RemoteSource>,
}

/// Where a forwarded chunk came from: the DIRECT remote child (`childSessionId`), the chunk's
/// sequence in that child's stream and that stream's id. Every hop stamps its own, so a
/// grandchild's chunk carries the direct child's sequence, while `agentId` keeps naming the
/// session that emitted it. A stream never holds one `(childSessionId, childSequence)` twice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct RemoteSource {
    pub child_session_id: String,
    pub child_sequence: u64,
    pub stream_id: String,
}

/// The fields every chunk carries besides its sequence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ChunkHeader {
    /// Stable for the session.
    pub stream_id: String,
    pub session_id: String,
    /// The session that emitted the chunk (differs from `session_id` for sub-agents later).
    pub agent_id: String,
    pub run_id: String,
    /// Milliseconds since the Unix epoch, taken when the chunk was written.
    pub timestamp: u64,
}

/// Terminal status reported by the `end` chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::EnumString, strum::EnumIter)]
#[strum(serialize_all = "snake_case")]
pub enum EndStatus {
    Completed,
    Failed,
    /// Stopped by an interrupt.
    Interrupted,
}

/// What happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, strum::IntoStaticStr)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[strum(serialize_all = "snake_case")]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum ChunkKind {
    RunStart {
        agent_type: String,
    },
    StepStart {
        step: u32,
    },
    TextDelta {
        step: u32,
        delta: String,
    },
    /// A piece of the model's reasoning in step `step` (Anthropic thinking, OpenAI-compatible
    /// `reasoning_content`), streamed like text but never part of the log: a reload does not
    /// show it.
    ReasoningDelta {
        step: u32,
        delta: String,
    },
    ToolStart {
        step: u32,
        tool_call_id: String,
        tool_name: String,
        input: Value,
    },
    ToolEnd {
        step: u32,
        tool_call_id: String,
        tool_name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<ToolError>,
    },
    /// Data a server tool emitted for the chat (`data-<name>` in a `useChat` message), written
    /// right after the call's `tool_end`, with its result.
    ToolData {
        step: u32,
        tool_call_id: String,
        name: String,
        data: Value,
        /// Only the client's `onData` sees it; the message does not keep it.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        transient: bool,
    },
    StepEnd {
        step: u32,
    },
    /// An attempt of the step's model call failed after streaming some text and another attempt
    /// streams the step again from its `step_start`: a reader drops the step's chunks before this
    /// one (they never reached the log).
    StepDiscarded {
        step: u32,
    },
    /// A server tool call waits for a person's approval, to be answered with this `approvalId`.
    ToolApprovalRequest {
        step: u32,
        tool_call_id: String,
        tool_name: String,
        input: Value,
        approval_id: String,
    },
    /// A server tool call of step `step` asks a person (an MCP server's elicitation): `message`
    /// and the answer's JSON Schema, answered through the tree's root (`toolCallId` =
    /// `questionId` on the submit) until `deadlineAt` (ms since the epoch). Either the call
    /// waits, its run still active, or (a `suspended` chunk listing `questionId` follows) the
    /// run suspends on it and the call goes on once the session resumes.
    Question {
        step: u32,
        question_id: String,
        /// The call that asks.
        tool_call_id: String,
        tool_name: String,
        message: String,
        schema: Value,
        deadline_at: u64,
    },
    /// A question is closed: `answer` is `accept`, `decline` or `cancel` when a person answered
    /// it, `timed_out` when its deadline passed first, `withdrawn` when its call ended first.
    QuestionClosed {
        step: u32,
        question_id: String,
        answer: String,
    },
    /// The run is suspended until these client calls are answered; its workflow has ended.
    Suspended {
        step: u32,
        tool_call_ids: Vec<String>,
    },
    /// The session was rewound to a checkpoint (`resume` from_checkpoint): a reader drops what it
    /// built from chunks after `streamSequence` (the checkpoint's position) and goes on.
    Rewind {
        checkpoint_id: u32,
        stream_sequence: u64,
    },
    /// A sub-agent call started a child session (written on the parent's stream).
    SubagentStart {
        sub_session_id: String,
        agent_type: String,
        tool_call_id: String,
    },
    /// A child session ended and its result went to the parent's call.
    SubagentEnd {
        sub_session_id: String,
        tool_call_id: String,
        status: EndStatus,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<ToolError>,
    },
    /// The session's custom state changed: RFC 6902 operations to apply, in order, to the state
    /// as of the chunk before (written with the commit of step `step`, before its `step_end`).
    /// `agentId` names the session whose state changed.
    StatePatch {
        step: u32,
        #[cfg_attr(feature = "schema", schemars(with = "Vec<serde_json::Value>"))]
        patch: json_patch::Patch,
    },
    End {
        status: EndStatus,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<RunError>,
        /// What the session has spent (its rollup as of this end; the tokens at the top).
        usage: crate::usage::UsageRollup,
        /// The session's final custom state, for an agent that declares one (the store adds it
        /// when it writes the chunk, from the state it holds).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        state: Option<Value>,
    },
}

/// Why a run failed, as recorded in the session and on the `end` chunk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RunError {
    pub code: ErrorCode,
    pub message: String,
}

impl ChunkKind {
    pub fn tool_end(step: u32, tool_call_id: &str, tool_name: &str, outcome: &ToolOutcome) -> Self {
        let (result, error) = match outcome {
            ToolOutcome::Result(value) => (Some(value.clone()), None),
            ToolOutcome::Error(error) => (None, Some(error.clone())),
        };
        Self::ToolEnd {
            step,
            tool_call_id: tool_call_id.to_owned(),
            tool_name: tool_name.to_owned(),
            result,
            error,
        }
    }

    /// The `type` tag, for logs and the CLI.
    pub fn name(&self) -> &'static str {
        self.into()
    }
}

/// The JSON body of a chunk without its sequence, as handed to the store: an object whose
/// opening brace is left off, so a Lua script can prepend `{"sequence":N,` without decoding and
/// re-encoding (Redis's cjson would round large numbers).
pub fn encode_unsequenced(header: &ChunkHeader, kind: &ChunkKind) -> String {
    #[derive(Serialize)]
    struct Unsequenced<'a> {
        #[serde(flatten)]
        header: &'a ChunkHeader,
        #[serde(flatten)]
        kind: &'a ChunkKind,
    }
    let json = serde_json::to_string(&Unsequenced { header, kind })
        .expect("chunk serialization cannot fail: all keys are strings");
    json[1..].to_owned()
}

/// As [`encode_unsequenced`], for a chunk forwarded from a remote child: the same header and
/// kind (so the type tag still follows the timestamp), then its `remoteSource`.
pub fn encode_unsequenced_forwarded(
    header: &ChunkHeader,
    kind: &ChunkKind,
    source: &RemoteSource,
) -> String {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Forwarded<'a> {
        #[serde(flatten)]
        header: &'a ChunkHeader,
        #[serde(flatten)]
        kind: &'a ChunkKind,
        remote_source: &'a RemoteSource,
    }
    let json = serde_json::to_string(&Forwarded {
        header,
        kind,
        remote_source: source,
    })
    .expect("chunk serialization cannot fail: all keys are strings");
    json[1..].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unsequenced_body_becomes_a_chunk_once_sequenced() {
        let header = ChunkHeader {
            stream_id: "st".into(),
            session_id: "s".into(),
            agent_id: "s".into(),
            run_id: "r".into(),
            timestamp: 5,
        };
        let kind = ChunkKind::ToolStart {
            step: 1,
            tool_call_id: "c".into(),
            tool_name: "add".into(),
            input: json!({"a": 12345678901234567890u64}),
        };
        let body = encode_unsequenced(&header, &kind);
        let sequenced = format!("{{\"sequence\":7,{body}");
        let chunk: StreamChunk = serde_json::from_str(&sequenced).unwrap();
        assert_eq!(chunk.sequence, 7);
        assert_eq!(chunk.kind, kind);
        assert_eq!(chunk.header, header);
        let value: Value = serde_json::from_str(&sequenced).unwrap();
        assert_eq!(value["type"], "tool_start");
        assert_eq!(value["toolCallId"], "c");
        assert_eq!(value["streamId"], "st");
        assert_eq!(chunk.remote_source, None);
        assert!(value.get("remoteSource").is_none());

        let source = RemoteSource {
            child_session_id: "child".into(),
            child_sequence: 9,
            stream_id: "child-stream".into(),
        };
        let forwarded = encode_unsequenced_forwarded(&header, &kind, &source);
        // The type tag still follows the timestamp, where the append script looks for it.
        assert!(forwarded.contains(r#""timestamp":5,"type":"tool_start""#));
        let chunk: StreamChunk =
            serde_json::from_str(&format!("{{\"sequence\":8,{forwarded}")).unwrap();
        assert_eq!(chunk.kind, kind);
        assert_eq!(chunk.remote_source, Some(source));
    }
}
