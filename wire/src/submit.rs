//! The body of `POST /submit-tool-result` and its answer.
//!
//! A submit is one of two kinds, told apart by `kind`: a client tool's result or error
//! (`client-tool-result`, also when `kind` is absent) or a person's decision on an
//! approval-gated call (`approval-response`). Decoding is strict: anything that is not exactly one
//! such answer is refused with one fixed message that never reveals what was expected.

use crate::{
    ApiError, ErrorCode, Refusal,
    ids::{is_valid_session_id, root_of},
    message::{ToolError, ToolOutcome, codes},
    session::{ApprovalDecision, Continuation},
};
use serde::{Deserialize, Deserializer, Serialize, Serializer, de::Error as _, ser::SerializeMap};
use serde_json::Value;

/// The one message of a malformed submit: it never reveals what the schema expects.
pub const INVALID_SUBMIT_MESSAGE: &str = "The submit is not a valid client-tool answer or approval";
/// The one message of a result that fails the tool's output schema.
pub const INVALID_RESULT_MESSAGE: &str = "The submitted result failed the tool output validation";
/// The one message of edited approval arguments that fail the tool's input schema.
pub const INVALID_ARGUMENTS_MESSAGE: &str = "The edited arguments failed the tool input validation";
/// The error code a client-side failure gets when the client sends only a message.
pub const CLIENT_TOOL_ERROR: &str = codes::CLIENT_TOOL_ERROR;
/// Longest session, tool call or approval id a submit may name.
const MAX_ID_BYTES: usize = 256;

/// Body of `POST /submit-tool-result` (and the JSON text of gRPC `SubmitToolResult`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum SubmitRequest {
    /// A client tool's result or error. `kind` may be left out.
    ClientToolResult(ToolResultSubmit),
    /// A decision on an approval-gated call.
    ApprovalResponse(ApprovalSubmit),
}

/// A client tool's answer: `result` (any JSON, `null` included) or `error` (a message, or
/// `{code, message}`), never both.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(try_from = "RawToolResult")]
pub struct ToolResultSubmit {
    /// The root session of the tree.
    pub session_id: String,
    pub tool_call_id: String,
    pub outcome: ToolOutcome,
}

/// A decision on an approval-gated call, naming the approval it answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", try_from = "RawApproval")]
pub struct ApprovalSubmit {
    pub session_id: String,
    pub tool_call_id: String,
    pub approval_id: String,
    /// `approved`, `reason` and the edited `arguments` (an object), beside the ids.
    #[serde(flatten)]
    pub decision: ApprovalDecision,
}

impl SubmitRequest {
    /// A client tool's answer.
    pub fn tool_result(session_id: &str, tool_call_id: &str, outcome: ToolOutcome) -> Self {
        Self::ClientToolResult(ToolResultSubmit {
            session_id: session_id.to_owned(),
            tool_call_id: tool_call_id.to_owned(),
            outcome,
        })
    }

    /// A decision on an approval-gated call.
    pub fn approval(
        session_id: &str,
        tool_call_id: &str,
        approval_id: &str,
        decision: ApprovalDecision,
    ) -> Self {
        Self::ApprovalResponse(ApprovalSubmit {
            session_id: session_id.to_owned(),
            tool_call_id: tool_call_id.to_owned(),
            approval_id: approval_id.to_owned(),
            decision,
        })
    }

    /// Decodes a body. Anything that is not exactly one answer is refused with the fixed
    /// `validation_error` message (with serde's reason in `details` when `verbose`).
    pub fn from_json(body: &[u8], verbose: bool) -> Result<Self, ApiError> {
        serde_json::from_slice(body).map_err(|error| invalid_submit(&error, verbose))
    }

    /// Decodes a body already parsed as JSON, refusing as [`Self::from_json`] does.
    pub fn from_value(body: serde_json::Value, verbose: bool) -> Result<Self, ApiError> {
        serde_json::from_value(body).map_err(|error| invalid_submit(&error, verbose))
    }

    /// The root session the answer is for.
    pub fn session_id(&self) -> &str {
        match self {
            Self::ClientToolResult(submit) => &submit.session_id,
            Self::ApprovalResponse(submit) => &submit.session_id,
        }
    }

    pub fn tool_call_id(&self) -> &str {
        match self {
            Self::ClientToolResult(submit) => &submit.tool_call_id,
            Self::ApprovalResponse(submit) => &submit.tool_call_id,
        }
    }
}

/// `kind` is optional: absent, the body is a client tool's answer.
impl<'de> Deserialize<'de> for SubmitRequest {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut fields = serde_json::Map::<String, Value>::deserialize(deserializer)?;
        let kind = fields.remove("kind");
        let body = Value::Object(fields);
        match kind.as_ref().map(|kind| kind.as_str()) {
            None | Some(Some("client-tool-result")) => ToolResultSubmit::deserialize(body)
                .map(Self::ClientToolResult)
                .map_err(D::Error::custom),
            Some(Some("approval-response")) => ApprovalSubmit::deserialize(body)
                .map(Self::ApprovalResponse)
                .map_err(D::Error::custom),
            Some(_) => Err(D::Error::custom("unknown kind")),
        }
    }
}

impl Serialize for ToolResultSubmit {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("sessionId", &self.session_id)?;
        map.serialize_entry("toolCallId", &self.tool_call_id)?;
        match &self.outcome {
            ToolOutcome::Result(result) => map.serialize_entry("result", result)?,
            ToolOutcome::Error(error) => map.serialize_entry("error", error)?,
        }
        map.end()
    }
}

/// A client tool's answer as sent, before its rules are checked.
#[derive(Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawToolResult {
    session_id: String,
    tool_call_id: String,
    /// `Some(Value::Null)` for `"result": null`, which is a result; `None` when absent.
    #[serde(default, deserialize_with = "present")]
    result: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    error: Option<Value>,
}

impl TryFrom<RawToolResult> for ToolResultSubmit {
    type Error = String;

    fn try_from(raw: RawToolResult) -> Result<Self, String> {
        let outcome = match (raw.result, raw.error) {
            (Some(result), None) => ToolOutcome::Result(result),
            (None, Some(Value::String(message))) => {
                ToolOutcome::Error(ToolError::new(CLIENT_TOOL_ERROR, message))
            }
            (None, Some(error @ Value::Object(_))) => ToolOutcome::Error(
                serde_json::from_value::<ToolError>(error)
                    .map_err(|_| "error must be a string or {code, message}")?,
            ),
            _ => return Err("exactly one of result and error is required".into()),
        };
        Ok(Self {
            session_id: checked_session_id(raw.session_id)?,
            tool_call_id: checked_id("toolCallId", raw.tool_call_id)?,
            outcome,
        })
    }
}

/// An approval response as sent, before its rules are checked.
#[derive(Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawApproval {
    session_id: String,
    tool_call_id: String,
    approval_id: String,
    approved: bool,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    arguments: Option<Value>,
}

impl TryFrom<RawApproval> for ApprovalSubmit {
    type Error = String;

    fn try_from(raw: RawApproval) -> Result<Self, String> {
        if raw.arguments.as_ref().is_some_and(|a| !a.is_object()) {
            return Err("arguments must be an object".into());
        }
        Ok(Self {
            session_id: checked_session_id(raw.session_id)?,
            tool_call_id: checked_id("toolCallId", raw.tool_call_id)?,
            approval_id: checked_id("approvalId", raw.approval_id)?,
            decision: ApprovalDecision {
                approved: raw.approved,
                reason: raw.reason,
                arguments: raw.arguments,
            },
        })
    }
}

/// Deserializes a field that is present (even as `null`) to `Some`.
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

fn checked_id(name: &str, id: String) -> Result<String, String> {
    if id.is_empty() || id.len() > MAX_ID_BYTES {
        return Err(format!("{name} must be a non-empty string"));
    }
    Ok(id)
}

fn checked_session_id(id: String) -> Result<String, String> {
    let id = checked_id("sessionId", id)?;
    if !is_valid_session_id(&id) {
        return Err("sessionId is malformed".into());
    }
    // Every call of a tree is answered through its root, which finds the call's owner.
    let root = root_of(&id);
    if root != id {
        return Err(format!(
            "sessionId names a sub-agent's session; submit against the root session {root}"
        ));
    }
    Ok(id)
}

/// The answer to an accepted (or repeated) submit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SubmitAnswer {
    pub status: SubmitStatus,
    pub continuation: Continuation,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::EnumString, strum::EnumIter)]
#[strum(serialize_all = "snake_case")]
pub enum SubmitStatus {
    Accepted,
    AlreadyCompleted,
}

impl SubmitStatus {
    /// The snake_case form, as serialized (and as the submit metrics label it).
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// The fixed refusal of a body that is not exactly one answer, with serde's reason in
/// `details` when `verbose`.
fn invalid_submit(error: &serde_json::Error, verbose: bool) -> ApiError {
    let refusal = ApiError::new(ErrorCode::ValidationError, INVALID_SUBMIT_MESSAGE);
    if verbose {
        refusal.with(Refusal::Detail {
            details: error.to_string(),
        })
    } else {
        refusal
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(body: Value) -> Result<SubmitRequest, ApiError> {
        SubmitRequest::from_json(body.to_string().as_bytes(), false)
    }

    fn outcome(request: SubmitRequest) -> ToolOutcome {
        match request {
            SubmitRequest::ClientToolResult(submit) => submit.outcome,
            other => panic!("not a client result: {other:?}"),
        }
    }

    #[test]
    fn client_tool_answers_are_decoded_strictly() {
        let ok = parse(json!({"sessionId": "s1", "toolCallId": "c1", "result": null})).unwrap();
        assert_eq!((ok.session_id(), ok.tool_call_id()), ("s1", "c1"));
        assert_eq!(outcome(ok), ToolOutcome::Result(Value::Null));
        let explicit = parse(
            json!({"kind": "client-tool-result", "sessionId": "s1", "toolCallId": "c1", "result": {"a": 1}}),
        );
        assert_eq!(
            outcome(explicit.unwrap()),
            ToolOutcome::Result(json!({"a": 1}))
        );
        let failed =
            parse(json!({"sessionId": "s1", "toolCallId": "c1", "error": "user_cancelled"}));
        assert_eq!(
            outcome(failed.unwrap()),
            ToolOutcome::Error(ToolError::new(CLIENT_TOOL_ERROR, "user_cancelled"))
        );
        let coded = parse(
            json!({"sessionId": "s1", "toolCallId": "c1", "error": {"code": "denied", "message": "no"}}),
        );
        assert_eq!(
            outcome(coded.unwrap()),
            ToolOutcome::Error(ToolError::new("denied", "no"))
        );
        for bad in [
            json!({"sessionId": "s1", "toolCallId": "c1"}),
            json!({"sessionId": "s1", "toolCallId": "c1", "result": 1, "error": "x"}),
            json!({"sessionId": "s1", "toolCallId": "c1", "result": 1, "error": null}),
            json!({"sessionId": "s1", "toolCallId": "c1", "error": 3}),
            json!({"sessionId": "", "toolCallId": "c1", "result": 1}),
            json!({"sessionId": "s1", "toolCallId": "x".repeat(257), "result": 1}),
            json!({"toolCallId": "c1", "result": 1}),
            json!({"sessionId": "s1", "result": 1}),
            json!({"sessionId": 7, "toolCallId": "c1", "result": 1}),
            json!({"sessionId": "s1", "toolCallId": "c1", "result": 1, "extra": true}),
            json!({"kind": "other", "sessionId": "s1", "toolCallId": "c1", "result": 1}),
            json!({"kind": 1, "sessionId": "s1", "toolCallId": "c1", "result": 1}),
            json!({"sessionId": "a__b", "toolCallId": "c1", "result": 1}),
            json!([1, 2]),
        ] {
            let error = parse(bad.clone()).unwrap_err();
            assert_eq!(
                (error.code, error.error.as_str()),
                (ErrorCode::ValidationError, INVALID_SUBMIT_MESSAGE),
                "{bad}"
            );
            assert!(error.details.is_empty(), "not verbose: {error:?}");
        }
        let verbose = SubmitRequest::from_json(b"{", true).unwrap_err();
        assert!(verbose.details.contains_key("details"));
    }

    #[test]
    fn approvals_are_decoded_strictly() {
        let approval = parse(
            json!({"kind": "approval-response", "sessionId": "s1", "toolCallId": "c1", "approvalId": "r::c1", "approved": true}),
        );
        assert_eq!(
            approval.unwrap(),
            SubmitRequest::approval(
                "s1",
                "c1",
                "r::c1",
                ApprovalDecision {
                    approved: true,
                    reason: None,
                    arguments: None
                }
            )
        );
        let edited = parse(
            json!({"kind": "approval-response", "sessionId": "s1", "toolCallId": "c1",
            "approvalId": "r::c1", "approved": false, "reason": "too risky", "arguments": {"path": "/tmp"}}),
        );
        let SubmitRequest::ApprovalResponse(edited) = edited.unwrap() else {
            panic!("not an approval");
        };
        assert_eq!(edited.decision.reason.as_deref(), Some("too risky"));
        assert_eq!(edited.decision.arguments, Some(json!({"path": "/tmp"})));
        assert!(!edited.decision.approved);
        for bad in [
            json!({"kind": "approval-response", "sessionId": "s1", "toolCallId": "c1", "approved": true}),
            json!({"kind": "approval-response", "sessionId": "s1", "toolCallId": "c1", "approvalId": "a", "approved": "yes"}),
            json!({"kind": "approval-response", "sessionId": "s1", "toolCallId": "c1", "approvalId": "a", "approved": true, "result": 1}),
            json!({"kind": "approval-response", "sessionId": "s1", "toolCallId": "c1", "approvalId": "a", "approved": true, "arguments": [1]}),
            json!({"kind": "approval-response", "sessionId": "s1", "toolCallId": "c1", "approvalId": "a", "approved": true, "reason": 5}),
        ] {
            assert_eq!(
                parse(bad.clone()).unwrap_err().error,
                INVALID_SUBMIT_MESSAGE,
                "{bad}"
            );
        }
    }

    #[test]
    fn what_a_client_sends_decodes_to_the_same_request() {
        for request in [
            SubmitRequest::tool_result("s1", "c1", ToolOutcome::Result(Value::Null)),
            SubmitRequest::tool_result("s1", "c1", ToolOutcome::Result(json!({"a": [1]}))),
            SubmitRequest::tool_result(
                "s1",
                "c1",
                ToolOutcome::Error(ToolError::new("denied", "no")),
            ),
            SubmitRequest::approval(
                "s1",
                "c1",
                "r::c1",
                ApprovalDecision {
                    approved: true,
                    reason: Some("fine".into()),
                    arguments: Some(json!({"x": 1})),
                },
            ),
        ] {
            let body = serde_json::to_vec(&request).unwrap();
            assert_eq!(SubmitRequest::from_json(&body, true).unwrap(), request);
        }
        let sent = serde_json::to_value(SubmitRequest::tool_result(
            "s1",
            "c1",
            ToolOutcome::Result(json!(3)),
        ))
        .unwrap();
        assert_eq!(
            sent,
            json!({"kind": "client-tool-result", "sessionId": "s1", "toolCallId": "c1", "result": 3})
        );
    }
}
