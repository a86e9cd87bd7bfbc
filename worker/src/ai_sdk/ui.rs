//! The chunks of the AI SDK's UI message stream (protocol `v1`) that the chat route sends, with
//! exactly the fields `ai` 6.0.0 declares for each: its schema is strict, so one field more puts
//! the client in `error`.

use serde::{Serialize, Serializer, ser::SerializeMap};
use serde_json::Value;

/// One chunk of a UI message stream: a typed chunk or a `data-*` part.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum UiFrame {
    Chunk(UiChunk),
    Data(DataPart),
}

/// Why a message finished, as `ai` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FinishReason {
    /// The model answered.
    Stop,
    /// The run waits for client calls or approvals.
    ToolCalls,
    /// The run was stopped.
    Other,
}

/// The typed chunks the chat route sends.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(
    tag = "type",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
pub enum UiChunk {
    Start {
        message_id: String,
        /// Server-sent metadata of the message (`ai` merges it into `message.metadata`).
        #[serde(skip_serializing_if = "Option::is_none")]
        message_metadata: Option<Value>,
    },
    StartStep,
    FinishStep,
    Finish {
        #[serde(skip_serializing_if = "Option::is_none")]
        finish_reason: Option<FinishReason>,
        /// Server-sent metadata of the message: when it finished, what the session spent.
        #[serde(skip_serializing_if = "Option::is_none")]
        message_metadata: Option<Value>,
    },
    TextStart {
        id: String,
    },
    TextDelta {
        id: String,
        delta: String,
    },
    TextEnd {
        id: String,
    },
    /// The model's reasoning (a `reasoning_delta` chunk's), as its own part beside the text.
    ReasoningStart {
        id: String,
    },
    ReasoningDelta {
        id: String,
        delta: String,
    },
    ReasoningEnd {
        id: String,
    },
    /// A tool call with its input. `providerExecuted` only for server tools that run without a
    /// person: a client call or an approval must stay unflagged, or `ai`'s stock predicates skip
    /// it.
    ToolInputAvailable {
        tool_call_id: String,
        tool_name: String,
        input: Value,
        #[serde(skip_serializing_if = "Option::is_none")]
        provider_executed: Option<bool>,
        /// Kept by `ai` as the part's `callProviderMetadata`: a descendant's call carries its
        /// owner here (`{baton: {toolCallId, agentId, agentType}}`).
        #[serde(skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<Value>,
    },
    ToolApprovalRequest {
        approval_id: String,
        tool_call_id: String,
    },
    ToolOutputAvailable {
        tool_call_id: String,
        output: Value,
        #[serde(skip_serializing_if = "Option::is_none")]
        provider_executed: Option<bool>,
    },
    ToolOutputError {
        tool_call_id: String,
        error_text: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        provider_executed: Option<bool>,
    },
    ToolOutputDenied {
        tool_call_id: String,
    },
    Error {
        error_text: String,
    },
}

/// A `data-<name>` part. A non-transient one becomes a part of the message (a part with the
/// same `id` replaces it); a transient one only reaches the app's `onData`.
#[derive(Debug, Clone, PartialEq)]
pub struct DataPart {
    pub name: String,
    pub id: Option<String>,
    pub data: Value,
    pub transient: bool,
}

impl DataPart {
    /// A part the message keeps.
    pub fn kept(name: &str, id: Option<String>, data: Value) -> Self {
        Self {
            name: name.to_owned(),
            id,
            data,
            transient: false,
        }
    }

    /// A part only `onData` sees.
    pub fn transient(name: &str, data: Value) -> Self {
        Self {
            name: name.to_owned(),
            id: None,
            data,
            transient: true,
        }
    }
}

impl Serialize for DataPart {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("type", &format!("data-{}", self.name))?;
        if let Some(id) = &self.id {
            map.serialize_entry("id", id)?;
        }
        map.serialize_entry("data", &self.data)?;
        if self.transient {
            map.serialize_entry("transient", &true)?;
        }
        map.end()
    }
}

impl From<UiChunk> for UiFrame {
    fn from(chunk: UiChunk) -> Self {
        Self::Chunk(chunk)
    }
}

impl From<DataPart> for UiFrame {
    fn from(part: DataPart) -> Self {
        Self::Data(part)
    }
}

impl UiFrame {
    /// The frame's JSON text, for one `data:` line.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a UI chunk always serializes: its keys are strings")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeSet;

    /// The fields `ai` 6.0.0's `uiMessageChunkSchema` (strict objects) allows per chunk type,
    /// read from `dist/index.mjs` of that release.
    fn allowed(kind: &str) -> &'static [&'static str] {
        match kind {
            "start" => &["type", "messageId", "messageMetadata"],
            "start-step" | "finish-step" => &["type"],
            "finish" => &["type", "finishReason", "messageMetadata"],
            "text-start" | "text-end" => &["type", "id", "providerMetadata"],
            "text-delta" => &["type", "id", "delta", "providerMetadata"],
            "tool-input-available" => &[
                "type",
                "toolCallId",
                "toolName",
                "input",
                "providerExecuted",
                "providerMetadata",
                "dynamic",
                "title",
            ],
            "tool-approval-request" => &["type", "approvalId", "toolCallId"],
            "tool-output-available" => &[
                "type",
                "toolCallId",
                "output",
                "providerExecuted",
                "dynamic",
                "preliminary",
            ],
            "tool-output-error" => &[
                "type",
                "toolCallId",
                "errorText",
                "providerExecuted",
                "dynamic",
            ],
            "tool-output-denied" => &["type", "toolCallId"],
            "error" => &["type", "errorText"],
            data if data.starts_with("data-") => &["type", "id", "data", "transient"],
            other => panic!("a chunk type ai 6.0.0 does not know: {other}"),
        }
    }

    #[test]
    fn every_chunk_keeps_to_the_fields_of_ai_6_0_0() {
        let frames: Vec<UiFrame> = vec![
            UiChunk::Start {
                message_id: "m".into(),
                message_metadata: Some(json!({"createdAt": 1})),
            }
            .into(),
            UiChunk::StartStep.into(),
            UiChunk::FinishStep.into(),
            UiChunk::Finish {
                finish_reason: Some(FinishReason::ToolCalls),
                message_metadata: Some(json!({"finishedAt": 1})),
            }
            .into(),
            UiChunk::Finish {
                finish_reason: None,
                message_metadata: None,
            }
            .into(),
            UiChunk::TextStart { id: "t".into() }.into(),
            UiChunk::TextDelta {
                id: "t".into(),
                delta: "hi".into(),
            }
            .into(),
            UiChunk::TextEnd { id: "t".into() }.into(),
            UiChunk::ToolInputAvailable {
                tool_call_id: "c".into(),
                tool_name: "ask".into(),
                input: json!({}),
                provider_executed: Some(true),
                provider_metadata: Some(json!({"baton": {"agentId": "c"}})),
            }
            .into(),
            UiChunk::ToolApprovalRequest {
                approval_id: "a".into(),
                tool_call_id: "c".into(),
            }
            .into(),
            UiChunk::ToolOutputAvailable {
                tool_call_id: "c".into(),
                output: json!(null),
                provider_executed: None,
            }
            .into(),
            UiChunk::ToolOutputError {
                tool_call_id: "c".into(),
                error_text: "no".into(),
                provider_executed: Some(true),
            }
            .into(),
            UiChunk::ToolOutputDenied {
                tool_call_id: "c".into(),
            }
            .into(),
            UiChunk::Error {
                error_text: "x".into(),
            }
            .into(),
            DataPart::kept("render", Some("r".into()), json!({})).into(),
            DataPart::transient("subagent", json!(1)).into(),
        ];
        for frame in frames {
            let value: Value = serde_json::from_str(&frame.to_json()).unwrap();
            let kind = value["type"].as_str().unwrap().to_owned();
            let keys: BTreeSet<&str> = value
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .collect();
            let allowed: BTreeSet<&str> = allowed(&kind).iter().copied().collect();
            assert!(keys.is_subset(&allowed), "{kind}: {keys:?}");
        }
        let bare = UiFrame::from(UiChunk::StartStep).to_json();
        assert_eq!(bare, r#"{"type":"start-step"}"#);
        let finish = UiFrame::from(UiChunk::Finish {
            finish_reason: Some(FinishReason::ToolCalls),
            message_metadata: None,
        });
        assert_eq!(
            finish.to_json(),
            r#"{"type":"finish","finishReason":"tool-calls"}"#
        );
    }
}
