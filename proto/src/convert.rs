//! Conversions between the wire types of `baton.v1` and baton-core's request, answer and error
//! types. Core → wire always succeeds; wire → core is checked here, once, and fails on a missing
//! field or a value the API does not have.

use crate::v1;
use baton_wire::{
    ApiError, Message, StreamChunk, Usage,
    api::{
        DeleteResponse, ResumeRequest, ResumeResponse, SnapshotResponse, StartRequest,
        StartResponse, StopResponse, UsageResponse,
    },
    chunk::RunError,
    session::{Continuation, SessionState, StopRecord, Suspension},
    submit::SubmitAnswer,
    usage::{ModelUsage, UsageRollup},
};
use serde_json::Value;
use std::str::FromStr;

/// The binary metadata entry of a refused call's status that holds the JSON error body.
pub const ERROR_METADATA_KEY: &str = "baton-error-bin";

/// Why a wire message does not convert to its core type.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("field {0} is missing")]
    MissingField(&'static str),
    #[error("field {field} has a value the API does not have: {value:?}")]
    InvalidValue { field: &'static str, value: String },
    #[error("a message of the snapshot is malformed JSON")]
    MessageJson(#[source] serde_json::Error),
    #[error("the initial state's JSON is malformed")]
    StateJson(#[source] serde_json::Error),
    #[error("the metadata's JSON is not a JSON object")]
    MetadataJson(#[source] serde_json::Error),
    #[error("the chunk's JSON is malformed")]
    ChunkJson(#[source] serde_json::Error),
    #[error("the chunk says sequence {wire} but its JSON says {json}")]
    ChunkSequence { wire: u64, json: u64 },
}

/// An [`ApiError`] as a gRPC status: the code from the error table, the message, and the JSON
/// body in [`ERROR_METADATA_KEY`].
pub fn status_from_api_error(error: &ApiError) -> tonic::Status {
    let code = tonic::Code::from_i32(error.code.presentation().grpc as i32);
    let mut status = tonic::Status::new(code, error.error.clone());
    let body = serde_json::to_vec(error).expect("an ApiError always serializes");
    status.metadata_mut().insert_bin(
        ERROR_METADATA_KEY,
        tonic::metadata::MetadataValue::from_bytes(&body),
    );
    status
}

/// The typed error a status carries, if it is one of Baton's (a status from the transport itself,
/// such as an unreachable server, has none).
pub fn api_error_from_status(status: &tonic::Status) -> Option<ApiError> {
    let body = status
        .metadata()
        .get_bin(ERROR_METADATA_KEY)?
        .to_bytes()
        .ok()?;
    serde_json::from_slice(&body).ok()
}

/// A unit enum of the wire types as its string (`"suspended_client_tool"`): the enum's one
/// string table, the same as its JSON.
fn wire_string<T: Copy + Into<&'static str>>(value: &T) -> String {
    let name: &'static str = (*value).into();
    name.to_owned()
}

/// A string of the API as its wire enum.
fn from_wire_string<T: FromStr>(field: &'static str, value: String) -> Result<T, Error> {
    value
        .parse()
        .map_err(|_| Error::InvalidValue { field, value })
}

impl From<StartRequest> for v1::StartRequest {
    fn from(request: StartRequest) -> Self {
        let meta = v1::SessionMeta::from(request.meta());
        Self {
            agent: request.agent,
            message: request.message,
            session_id: request.session_id,
            state_json: request
                .state
                .map(|state| serde_json::to_string(&state).expect("a JSON value serializes")),
            user_id: meta.user_id,
            tags: meta.tags,
            metadata_json: meta.metadata_json,
        }
    }
}

impl TryFrom<v1::StartRequest> for StartRequest {
    type Error = Error;

    fn try_from(request: v1::StartRequest) -> Result<Self, Error> {
        let meta = baton_wire::SessionMeta::try_from(v1::SessionMeta {
            user_id: request.user_id,
            tags: request.tags,
            metadata_json: request.metadata_json,
        })?;
        Ok(Self {
            agent: request.agent,
            message: request.message,
            session_id: request.session_id,
            state: request
                .state_json
                .map(|json| serde_json::from_str(&json).map_err(Error::StateJson))
                .transpose()?,
            user_id: meta.user_id,
            tags: meta.tags,
            metadata: meta.metadata,
        })
    }
}

impl From<StartResponse> for v1::StartResponse {
    fn from(answer: StartResponse) -> Self {
        Self {
            session_id: answer.session_id,
            run_id: answer.run_id,
            workflow_id: answer.workflow_id,
            stream_id: answer.stream_id,
            token: answer.token,
        }
    }
}

impl From<v1::StartResponse> for StartResponse {
    fn from(answer: v1::StartResponse) -> Self {
        Self {
            session_id: answer.session_id,
            run_id: answer.run_id,
            workflow_id: answer.workflow_id,
            stream_id: answer.stream_id,
            token: answer.token,
        }
    }
}

impl From<ResumeRequest> for v1::ResumeRequest {
    fn from(request: ResumeRequest) -> Self {
        Self {
            session_id: request.session_id,
            mode: wire_string(&request.mode),
            message: request.message,
            abandon_pending: request.abandon_pending,
            checkpoint_id: request.checkpoint_id,
        }
    }
}

impl TryFrom<v1::ResumeRequest> for ResumeRequest {
    type Error = Error;

    fn try_from(request: v1::ResumeRequest) -> Result<Self, Error> {
        Ok(Self {
            session_id: request.session_id,
            mode: from_wire_string("mode", request.mode)?,
            message: request.message,
            abandon_pending: request.abandon_pending,
            checkpoint_id: request.checkpoint_id,
        })
    }
}

impl From<ResumeResponse> for v1::ResumeResponse {
    fn from(answer: ResumeResponse) -> Self {
        Self {
            session_id: answer.session_id,
            run_id: answer.run_id,
            workflow_id: answer.workflow_id,
            status: wire_string(&answer.status),
        }
    }
}

impl TryFrom<v1::ResumeResponse> for ResumeResponse {
    type Error = Error;

    fn try_from(answer: v1::ResumeResponse) -> Result<Self, Error> {
        Ok(Self {
            session_id: answer.session_id,
            run_id: answer.run_id,
            workflow_id: answer.workflow_id,
            status: from_wire_string("status", answer.status)?,
        })
    }
}

impl From<DeleteResponse> for v1::DeleteResponse {
    fn from(answer: DeleteResponse) -> Self {
        Self {
            session_id: answer.session_id,
            deleted_sessions: answer.deleted_sessions,
        }
    }
}

impl From<StopResponse> for v1::StopResponse {
    fn from(answer: StopResponse) -> Self {
        Self {
            session_id: answer.session_id,
            run_id: answer.run_id,
            status: wire_string(&answer.status),
        }
    }
}

impl TryFrom<v1::StopResponse> for StopResponse {
    type Error = Error;

    fn try_from(answer: v1::StopResponse) -> Result<Self, Error> {
        Ok(Self {
            session_id: answer.session_id,
            run_id: answer.run_id,
            status: from_wire_string("status", answer.status)?,
        })
    }
}

impl From<SubmitAnswer> for v1::SubmitToolResultResponse {
    fn from(answer: SubmitAnswer) -> Self {
        let (kind, run_id) = match answer.continuation {
            Continuation::NewRun { run_id } => ("new_run".to_owned(), Some(run_id)),
            other => (other.kind().to_owned(), None),
        };
        Self {
            status: wire_string(&answer.status),
            continuation: Some(v1::Continuation { kind, run_id }),
        }
    }
}

impl TryFrom<v1::SubmitToolResultResponse> for SubmitAnswer {
    type Error = Error;

    fn try_from(answer: v1::SubmitToolResultResponse) -> Result<Self, Error> {
        let continuation = answer
            .continuation
            .ok_or(Error::MissingField("continuation"))?;
        let mut fields = serde_json::Map::new();
        fields.insert("kind".to_owned(), continuation.kind.clone().into());
        if let Some(run_id) = continuation.run_id {
            fields.insert("runId".to_owned(), run_id.into());
        }
        let continuation =
            serde_json::from_value(Value::Object(fields)).map_err(|_| Error::InvalidValue {
                field: "continuation",
                value: continuation.kind,
            })?;
        Ok(Self {
            status: from_wire_string("status", answer.status)?,
            continuation,
        })
    }
}

impl From<SessionState> for v1::SessionStatus {
    fn from(state: SessionState) -> Self {
        Self {
            session_id: state.session_id,
            root_session_id: state.root_session_id,
            agent_type: state.agent_type,
            status: wire_string(&state.status),
            run_id: state.run_id,
            stream_id: state.stream_id,
            step_count: state.step_count,
            last_sequence: state.last_sequence,
            created_at: state.created_at,
            updated_at: state.updated_at,
            output: state.output,
            error: state.error.map(|error| v1::RunError {
                code: error.code.as_str().to_owned(),
                message: error.message,
            }),
            suspension: state.suspension.map(|suspension| v1::Suspension {
                run_id: suspension.run_id,
                step: suspension.step,
                tool_call_ids: suspension.tool_call_ids,
            }),
            workflow_id: state.workflow_id,
            stop: state.stop.map(|stop| v1::StopRecord {
                run_id: stop.run_id,
                kind: wire_string(&stop.kind),
                at: stop.at,
            }),
            abandon_pending: state.abandon_pending,
            is_executing: state.is_executing,
            meta: Some(state.meta.into()),
            pending: state.pending.into_iter().map(Into::into).collect(),
        }
    }
}

impl TryFrom<v1::SessionStatus> for SessionState {
    type Error = Error;

    fn try_from(state: v1::SessionStatus) -> Result<Self, Error> {
        let error = state
            .error
            .map(|error| {
                Ok::<_, Error>(RunError {
                    code: from_wire_string("error.code", error.code)?,
                    message: error.message,
                })
            })
            .transpose()?;
        let stop = state
            .stop
            .map(|stop| {
                Ok::<_, Error>(StopRecord {
                    run_id: stop.run_id,
                    kind: from_wire_string("stop.kind", stop.kind)?,
                    at: stop.at,
                })
            })
            .transpose()?;
        Ok(Self {
            session_id: state.session_id,
            root_session_id: state.root_session_id,
            agent_type: state.agent_type,
            status: from_wire_string("status", state.status)?,
            run_id: state.run_id,
            stream_id: state.stream_id,
            step_count: state.step_count,
            last_sequence: state.last_sequence,
            created_at: state.created_at,
            updated_at: state.updated_at,
            output: state.output,
            error,
            suspension: state.suspension.map(|suspension| Suspension {
                run_id: suspension.run_id,
                step: suspension.step,
                tool_call_ids: suspension.tool_call_ids,
            }),
            workflow_id: state.workflow_id,
            stop,
            abandon_pending: state.abandon_pending,
            is_executing: state.is_executing,
            meta: state
                .meta
                .map(TryInto::try_into)
                .transpose()?
                .unwrap_or_default(),
            pending: state
                .pending
                .into_iter()
                .map(TryInto::try_into)
                .collect::<Result<_, _>>()?,
            // The gRPC status carries no owner: only the producer's mount and its operators
            // act on it, over HTTP.
            owner: None,
        })
    }
}

impl From<SnapshotResponse> for v1::SnapshotResponse {
    fn from(snapshot: SnapshotResponse) -> Self {
        let messages_json = snapshot
            .messages
            .iter()
            .map(|message| serde_json::to_string(message).expect("a message always serializes"))
            .collect();
        Self {
            session_id: snapshot.session_id,
            stream_id: snapshot.stream_id,
            status: wire_string(&snapshot.status),
            messages_json,
            custom_state_json: Some(
                serde_json::to_string(&snapshot.state).expect("a JSON value serializes"),
            ),
            stream_sequence: snapshot.stream_sequence,
            oldest_retained_sequence: snapshot.oldest_retained_sequence,
            step_count: snapshot.step_count,
            checkpoint_id: snapshot.checkpoint_id,
            meta: Some(snapshot.meta.into()),
        }
    }
}

impl TryFrom<v1::SnapshotResponse> for SnapshotResponse {
    type Error = Error;

    fn try_from(snapshot: v1::SnapshotResponse) -> Result<Self, Error> {
        let messages = snapshot
            .messages_json
            .iter()
            .map(|json| serde_json::from_str::<Message>(json).map_err(Error::MessageJson))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            session_id: snapshot.session_id,
            stream_id: snapshot.stream_id,
            status: from_wire_string("status", snapshot.status)?,
            state: snapshot
                .custom_state_json
                .map(|json| serde_json::from_str(&json).map_err(Error::StateJson))
                .transpose()?
                .unwrap_or_else(|| serde_json::Value::Object(Default::default())),
            messages,
            stream_sequence: snapshot.stream_sequence,
            oldest_retained_sequence: snapshot.oldest_retained_sequence,
            step_count: snapshot.step_count,
            checkpoint_id: snapshot.checkpoint_id,
            meta: snapshot
                .meta
                .map(TryInto::try_into)
                .transpose()?
                .unwrap_or_default(),
        })
    }
}

impl From<UsageResponse> for v1::UsageResponse {
    fn from(answer: UsageResponse) -> Self {
        let rollup = answer.rollup;
        let models = rollup
            .models
            .into_iter()
            .map(|(model, usage)| {
                let usage = v1::ModelUsage {
                    tokens: Some(usage.tokens.into()),
                    calls: usage.calls,
                };
                (model, usage)
            })
            .collect();
        Self {
            session_id: answer.session_id,
            rollup: Some(v1::UsageRollup {
                tokens: Some(rollup.tokens.into()),
                models,
                tool_calls: rollup.tool_calls.into_iter().collect(),
                client_tool_wait_ms: rollup.client_tool_wait_ms,
                client_tool_timeouts: rollup.client_tool_timeouts,
                aborts: rollup.aborts,
            }),
        }
    }
}

impl TryFrom<v1::UsageResponse> for UsageResponse {
    type Error = Error;

    fn try_from(answer: v1::UsageResponse) -> Result<Self, Error> {
        let rollup = answer.rollup.ok_or(Error::MissingField("rollup"))?;
        let models = rollup
            .models
            .into_iter()
            .map(|(model, usage)| {
                let tokens = usage.tokens.ok_or(Error::MissingField("models.tokens"))?;
                let usage = ModelUsage {
                    tokens: tokens.into(),
                    calls: usage.calls,
                };
                Ok((model, usage))
            })
            .collect::<Result<_, Error>>()?;
        let tokens = rollup.tokens.ok_or(Error::MissingField("rollup.tokens"))?;
        Ok(Self {
            session_id: answer.session_id,
            rollup: UsageRollup {
                tokens: tokens.into(),
                models,
                tool_calls: rollup.tool_calls.into_iter().collect(),
                client_tool_wait_ms: rollup.client_tool_wait_ms,
                client_tool_timeouts: rollup.client_tool_timeouts,
                aborts: rollup.aborts,
            },
        })
    }
}

impl From<Usage> for v1::TokenUsage {
    fn from(usage: Usage) -> Self {
        Self {
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            cache_read_input_tokens: usage.cache_read_input_tokens,
            cache_creation_input_tokens: usage.cache_creation_input_tokens,
        }
    }
}

impl From<v1::TokenUsage> for Usage {
    fn from(usage: v1::TokenUsage) -> Self {
        Self {
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            cache_read_input_tokens: usage.cache_read_input_tokens,
            cache_creation_input_tokens: usage.cache_creation_input_tokens,
        }
    }
}

impl From<&StreamChunk> for v1::Chunk {
    fn from(chunk: &StreamChunk) -> Self {
        // Serialized directly (not through a `Value`) so the fields keep the order the HTTP
        // stream sends them in.
        let json = serde_json::to_string(chunk).expect("a chunk always serializes");
        Self {
            sequence: chunk.sequence,
            r#type: chunk.kind.name().to_owned(),
            json,
        }
    }
}

impl TryFrom<v1::Chunk> for StreamChunk {
    type Error = Error;

    fn try_from(chunk: v1::Chunk) -> Result<Self, Error> {
        let decoded: StreamChunk = serde_json::from_str(&chunk.json).map_err(Error::ChunkJson)?;
        if decoded.sequence != chunk.sequence {
            return Err(Error::ChunkSequence {
                wire: chunk.sequence,
                json: decoded.sequence,
            });
        }
        Ok(decoded)
    }
}

#[cfg(test)]
#[path = "convert_tests.rs"]
mod tests;
