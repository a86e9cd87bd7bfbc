//! The fields a refusal carries beside its code (`ApiError::details`), typed: each variant is one
//! shape of those fields, serialised flat into the error body exactly as the JSON the API has
//! always sent. Code reads them with `ApiError::refusal` and matches variants, never strings.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// What a refusal says beyond its code and message. The comment of each variant names the
/// codes that carry it and its JSON fields; the field names are the JSON's (in camelCase).
///
/// Untagged, each shape denying fields it lacks, so a body decodes to the one shape its fields
/// make (a shape comes before any shape whose fields are a subset of its own). The shapes told
/// apart by a constant (`"cause": "json_depth"`, `"status": "unknown_tool_call"`) write and
/// check it in their `with` module.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged, deny_unknown_fields, rename_all_fields = "camelCase")]
pub enum Refusal {
    /// `validation_payload_too_large`: `{"cause", "limitBytes", "sizeBytes"}`.
    PayloadTooLarge {
        cause: Payload,
        limit_bytes: u64,
        size_bytes: u64,
    },
    /// `validation_error`, a body nested deeper than the limit: `{"cause": "json_depth",
    /// "limitDepth"}`.
    #[serde(with = "json_too_deep")]
    JsonTooDeep { limit_depth: u64 },
    /// `state_not_resumable` on the chat route, a request's answers not stored: `{"cause",
    /// "toolCallIds"}`. Final (see [`Refusal::is_final`]): the request is never repeated as
    /// sent, since the answers it stored are in.
    AnswersNotStored {
        cause: NotStored,
        tool_call_ids: Vec<String>,
    },
    /// `validation_error` answered 411, a chunked body: `{"cause": "length_required"}`.
    #[serde(with = "length_required")]
    LengthRequired,
    /// `INVALID_RESULT` or `validation_error`, an answer that does not match its tool's schema:
    /// `{"toolName", "toolCallId"}`, with the first mismatch in `details` when verbose.
    SchemaMismatch {
        tool_name: String,
        tool_call_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        details: Option<String>,
    },
    /// `validation_error` about one tool call (a chat approval id Baton did not issue):
    /// `{"toolCallId"}`.
    ToolCall { tool_call_id: String },
    /// `validation_error` with the decoder's reason, in verbose answers only: `{"details"}`.
    Detail { details: String },
    /// `state_not_resumable`, calls the session still awaits: `{"awaitedToolCallIds"}`.
    CallsAwaited { awaited_tool_call_ids: Vec<String> },
    /// `rate_limited`: `{"retryAfter"}`, whole seconds (also the `Retry-After` header).
    RetryAfter { retry_after: u64 },
    /// `TRUNCATED`: `{"oldestRetainedSequence"}`, the stream's floor: the lowest valid cursor
    /// (the oldest chunk held is this + 1).
    Truncated { oldest_retained_sequence: u64 },
    /// `ALREADY_RUNNING` (the producer mount's start): `{"streamId"}`, the existing session's
    /// stream, to attach to.
    AlreadyRunning { stream_id: String },
    /// `unknown_tool_call`, the call's run was stopped: `{"status": "unknown_tool_call",
    /// "reason": "run_stopped"}`.
    #[serde(with = "run_stopped")]
    RunStopped,
    /// `unknown_tool_call`, nothing awaits the call: `{"status": "unknown_tool_call"}`.
    #[serde(with = "no_pending_call")]
    NoPendingCall,
}

/// Which payload was over its limit (`cause` of `validation_payload_too_large`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::EnumString, strum::EnumIter)]
#[strum(serialize_all = "snake_case")]
pub enum Payload {
    /// A submitted result or edited arguments, over `max_result_bytes`.
    ToolResult,
    /// A request body, over its route's cap.
    RequestBody,
    /// A chat user message's file parts, their `data:` URLs summed, over the chat's file cap.
    ChatFiles,
}

/// Why a chat request's answers were not stored (`cause` of the chat route's 409).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::EnumString, strum::EnumIter)]
#[strum(serialize_all = "snake_case")]
pub enum NotStored {
    /// An answer for a call the server still awaits was not stored while a sibling's was.
    AnswerNotStored,
    /// No answer was stored: nothing awaits the call.
    UnknownToolCall,
    /// No answer was stored: the approval id names another run than the one awaiting the call.
    StaleRun,
    /// No answer was stored: the call's run was stopped.
    RunStopped,
}

impl Refusal {
    /// Whether no repeat of the request can succeed, whatever its code's row in the table says:
    /// such a refusal makes its error not retryable ([`crate::ApiError::with`]). It can only
    /// narrow the table's answer, never make an error retryable. Today only the chat route's
    /// answers not stored are final: its code, `state_not_resumable`, is what the chat contract
    /// answers and is retryable on `/resume` (a batch still partial).
    pub fn is_final(&self) -> bool {
        matches!(self, Self::AnswersNotStored { .. })
    }

    /// The refusal with every tool call id it names passed through `rename`: how a service
    /// that relays another's refusal names the calls as its own client knows them.
    pub fn with_calls_renamed(self, rename: impl Fn(&str) -> String) -> Self {
        let all = |ids: Vec<String>| ids.iter().map(|id| rename(id)).collect();
        match self {
            Self::SchemaMismatch {
                tool_name,
                tool_call_id,
                details,
            } => Self::SchemaMismatch {
                tool_name,
                tool_call_id: rename(&tool_call_id),
                details,
            },
            Self::ToolCall { tool_call_id } => Self::ToolCall {
                tool_call_id: rename(&tool_call_id),
            },
            Self::CallsAwaited {
                awaited_tool_call_ids,
            } => Self::CallsAwaited {
                awaited_tool_call_ids: all(awaited_tool_call_ids),
            },
            Self::AnswersNotStored {
                cause,
                tool_call_ids,
            } => Self::AnswersNotStored {
                cause,
                tool_call_ids: all(tool_call_ids),
            },
            other => other,
        }
    }

    /// The `cause` field, for the variants that have one (what a log line names).
    pub fn cause(&self) -> Option<&'static str> {
        match self {
            Self::PayloadTooLarge { cause, .. } => Some(cause.into()),
            Self::JsonTooDeep { .. } => Some(Tag::JsonDepth.into()),
            Self::LengthRequired => Some(Tag::LengthRequired.into()),
            Self::AnswersNotStored { cause, .. } => Some(cause.into()),
            _ => None,
        }
    }

    /// The refusal as the JSON object merged into the error body.
    pub fn into_fields(self) -> serde_json::Map<String, serde_json::Value> {
        match serde_json::to_value(self) {
            Ok(serde_json::Value::Object(fields)) => fields,
            // Every shape serialises to an object (of strings, numbers and lists).
            _ => serde_json::Map::new(),
        }
    }

    /// The refusal those fields are, if they have one of its shapes.
    pub fn from_fields(fields: &serde_json::Map<String, serde_json::Value>) -> Option<Self> {
        if fields.is_empty() {
            return None;
        }
        serde_json::from_value(serde_json::Value::Object(fields.clone())).ok()
    }
}

/// The constants that tell some shapes apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::IntoStaticStr)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
enum Tag {
    JsonDepth,
    LengthRequired,
    UnknownToolCall,
    RunStopped,
}

/// A shape told apart by constants: its wire form is `$fields` with the tags `$tag: $value`
/// checked on the way in, and the variant's own fields beside them.
macro_rules! tagged {
    ($module:ident, { $($tag:ident: $value:ident),+ } $(, $field:ident: $ty:ty)*) => {
        mod $module {
            use super::*;

            #[derive(Serialize, Deserialize)]
            #[serde(deny_unknown_fields, rename_all = "camelCase")]
            struct Form {
                $($tag: Tag,)+
                $($field: $ty,)*
            }

            pub(super) fn serialize<S: Serializer>(
                $($field: &$ty,)*
                serializer: S,
            ) -> Result<S::Ok, S::Error> {
                Form { $($tag: Tag::$value,)+ $($field: *$field,)* }.serialize(serializer)
            }

            // serde wants a unit variant's fields as `()` and one field as itself, not `(T,)`.
            #[allow(unused_parens)]
            pub(super) fn deserialize<'de, D: Deserializer<'de>>(
                deserializer: D,
            ) -> Result<($($ty),*), D::Error> {
                let form = Form::deserialize(deserializer)?;
                if $(form.$tag != Tag::$value)||+ {
                    return Err(serde::de::Error::custom("another shape's constant"));
                }
                Ok(($(form.$field),*))
            }
        }
    };
}
tagged!(json_too_deep, { cause: JsonDepth }, limit_depth: u64);
tagged!(length_required, { cause: LengthRequired });
tagged!(run_stopped, { status: UnknownToolCall, reason: RunStopped });
tagged!(no_pending_call, { status: UnknownToolCall });

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_relayed_refusal_names_the_calls_as_the_relaying_service_does() {
        let rename = |id: &str| id.replace("theirs", "ours");
        let schema = Refusal::SchemaMismatch {
            tool_name: "ask".into(),
            tool_call_id: "theirs_1".into(),
            details: Some("/answer: theirs_1 is not a string".into()),
        };
        assert_eq!(
            schema.with_calls_renamed(rename),
            Refusal::SchemaMismatch {
                tool_name: "ask".into(),
                tool_call_id: "ours_1".into(),
                // A detail is about the answer's value, not a call: left as it is.
                details: Some("/answer: theirs_1 is not a string".into()),
            }
        );
        let awaited = Refusal::CallsAwaited {
            awaited_tool_call_ids: vec!["theirs_1".into(), "theirs_2".into()],
        };
        assert_eq!(
            awaited.with_calls_renamed(rename),
            Refusal::CallsAwaited {
                awaited_tool_call_ids: vec!["ours_1".into(), "ours_2".into()],
            }
        );
        assert_eq!(
            Refusal::NoPendingCall.with_calls_renamed(rename),
            Refusal::NoPendingCall
        );
    }

    /// Every shape's exact JSON (as the API has always sent it), and back.
    #[test]
    fn each_refusal_is_its_json_both_ways() {
        let ids = || vec!["call_1_1".to_owned(), "call_1_2".to_owned()];
        let cases = [
            (
                Refusal::PayloadTooLarge {
                    cause: Payload::RequestBody,
                    limit_bytes: 10,
                    size_bytes: 11,
                },
                r#"{"cause":"request_body","limitBytes":10,"sizeBytes":11}"#,
            ),
            (
                Refusal::JsonTooDeep { limit_depth: 64 },
                r#"{"cause":"json_depth","limitDepth":64}"#,
            ),
            (Refusal::LengthRequired, r#"{"cause":"length_required"}"#),
            (
                Refusal::SchemaMismatch {
                    tool_name: "ask_user".into(),
                    tool_call_id: "call_1_2".into(),
                    details: None,
                },
                r#"{"toolCallId":"call_1_2","toolName":"ask_user"}"#,
            ),
            (
                Refusal::SchemaMismatch {
                    tool_name: "ask_user".into(),
                    tool_call_id: "call_1_2".into(),
                    details: Some("missing answer".into()),
                },
                r#"{"details":"missing answer","toolCallId":"call_1_2","toolName":"ask_user"}"#,
            ),
            (
                Refusal::ToolCall {
                    tool_call_id: "call_1_1".into(),
                },
                r#"{"toolCallId":"call_1_1"}"#,
            ),
            (
                Refusal::Detail {
                    details: "expected kind".into(),
                },
                r#"{"details":"expected kind"}"#,
            ),
            (
                Refusal::CallsAwaited {
                    awaited_tool_call_ids: ids(),
                },
                r#"{"awaitedToolCallIds":["call_1_1","call_1_2"]}"#,
            ),
            (
                Refusal::RetryAfter { retry_after: 7 },
                r#"{"retryAfter":7}"#,
            ),
            (
                Refusal::Truncated {
                    oldest_retained_sequence: 41,
                },
                r#"{"oldestRetainedSequence":41}"#,
            ),
            (
                Refusal::AlreadyRunning {
                    stream_id: "st1".into(),
                },
                r#"{"streamId":"st1"}"#,
            ),
            (Refusal::NoPendingCall, r#"{"status":"unknown_tool_call"}"#),
            (
                Refusal::RunStopped,
                r#"{"reason":"run_stopped","status":"unknown_tool_call"}"#,
            ),
            (
                Refusal::AnswersNotStored {
                    cause: NotStored::AnswerNotStored,
                    tool_call_ids: ids(),
                },
                r#"{"cause":"answer_not_stored","toolCallIds":["call_1_1","call_1_2"]}"#,
            ),
            (
                Refusal::AnswersNotStored {
                    cause: NotStored::StaleRun,
                    tool_call_ids: vec!["call_1_1".into()],
                },
                r#"{"cause":"stale_run","toolCallIds":["call_1_1"]}"#,
            ),
        ];
        for (refusal, json) in cases {
            let fields = refusal.clone().into_fields();
            assert_eq!(serde_json::to_string(&fields).unwrap(), json, "{refusal:?}");
            assert_eq!(
                Refusal::from_fields(&fields).as_ref(),
                Some(&refusal),
                "{json}"
            );
            assert_eq!(
                refusal.cause(),
                fields.get("cause").and_then(|cause| cause.as_str()),
                "{json}"
            );
        }
    }

    /// Fields of no shape, or a tag in another shape's field, are no refusal.
    #[test]
    fn other_fields_are_no_refusal() {
        let fields = |json: &str| serde_json::from_str(json).unwrap();
        for json in [
            r#"{}"#,
            r#"{"cause":"run_stopped"}"#,
            r#"{"cause":"json_depth"}"#,
            r#"{"status":"run_stopped"}"#,
            r#"{"reason":"json_depth","status":"unknown_tool_call"}"#,
            r#"{"cause":"length_required","limitDepth":64}"#,
            r#"{"retryAfter":7,"status":"unknown_tool_call"}"#,
            r#"{"cause":"tool_result","limitBytes":10}"#,
            r#"{"newField":true}"#,
        ] {
            assert_eq!(Refusal::from_fields(&fields(json)), None, "{json}");
        }
    }
}
