//! Tests of the conversions between `wire`'s types and the generated gRPC types.

use super::*;
use baton_wire::{
    ChunkKind, ErrorCode, Refusal,
    api::ResumeMode,
    chunk::ChunkHeader,
    session::{Status, StopKind},
    submit::SubmitStatus,
};

#[test]
fn api_errors_travel_in_status_metadata() {
    let error = ApiError::new(ErrorCode::StateNotResumable, "calls still awaited").with(
        Refusal::CallsAwaited {
            awaited_tool_call_ids: vec!["call_1_1".into()],
        },
    );
    let status = status_from_api_error(&error);
    assert_eq!(status.code(), tonic::Code::FailedPrecondition);
    assert_eq!(status.message(), "calls still awaited");
    assert_eq!(api_error_from_status(&status), Some(error));
    let unknown = status_from_api_error(&ApiError::new(ErrorCode::UnknownAgentType, "no"));
    assert_eq!(unknown.code(), tonic::Code::NotFound);
    assert_eq!(
        api_error_from_status(&tonic::Status::unavailable("connection refused")),
        None
    );
}

#[test]
fn answers_convert_both_ways_and_refuse_unknown_values() {
    let state = SessionState {
        session_id: "s".into(),
        root_session_id: "s".into(),
        agent_type: "demo".into(),
        status: Status::Failed,
        run_id: "r".into(),
        stream_id: "st".into(),
        step_count: 2,
        last_sequence: 9,
        created_at: 1,
        updated_at: 3,
        output: None,
        error: Some(RunError {
            code: ErrorCode::FrameworkCancelled,
            message: "aborted".into(),
        }),
        suspension: Some(Suspension {
            run_id: "r".into(),
            step: 2,
            tool_call_ids: vec!["call_2_1".into()],
        }),
        workflow_id: Some("w".into()),
        stop: Some(StopRecord {
            run_id: "r".into(),
            kind: StopKind::Abort,
            at: 7,
        }),
        abandon_pending: true,
        is_executing: Some(false),
        meta: baton_wire::SessionMeta {
            user_id: Some("u".into()),
            tags: vec!["a".into(), "b".into()],
            metadata: serde_json::json!({"plan": "pro"}).as_object().cloned(),
        },
        pending: vec![baton_wire::search::PendingDetail {
            session_id: "s".into(),
            owner_session_id: "s.child".into(),
            tool_call_id: "call_2_1".into(),
            tool_name: "transfer".into(),
            input: serde_json::json!({"to": "bob"}),
            kind: baton_wire::search::PersonCallKind::Approval,
            approval_id: Some("r::call_2_1".into()),
            deadline_at: 9,
            awaited_since: 3,
            age_ms: Some(4),
            agent_type: "child".into(),
            user_id: Some("u".into()),
            render: Some(serde_json::json!({"kind": "confirm"})),
            output_schema: Some(serde_json::json!({"type": "string"})),
        }],
        owner: None,
    };
    let wire = v1::SessionStatus::from(state.clone());
    assert_eq!(wire.status, "failed");
    assert_eq!(wire.stop.as_ref().unwrap().kind, "abort");
    assert_eq!(SessionState::try_from(wire.clone()).unwrap(), state);
    let unknown = v1::SessionStatus {
        status: "sleeping".into(),
        ..wire
    };
    assert!(matches!(
        SessionState::try_from(unknown),
        Err(Error::InvalidValue { field: "status", value }) if value == "sleeping"
    ));

    for continuation in [
        Continuation::AwaitingBatch,
        Continuation::CallerResumes,
        Continuation::Consumed,
        Continuation::NewRun {
            run_id: "r2".into(),
        },
    ] {
        let answer = SubmitAnswer {
            status: SubmitStatus::AlreadyCompleted,
            continuation,
        };
        let wire = v1::SubmitToolResultResponse::from(answer.clone());
        assert_eq!(wire.status, "already_completed");
        assert_eq!(SubmitAnswer::try_from(wire).unwrap(), answer);
    }
    let missing = v1::SubmitToolResultResponse {
        status: "accepted".into(),
        continuation: None,
    };
    assert!(matches!(
        SubmitAnswer::try_from(missing),
        Err(Error::MissingField("continuation"))
    ));

    let request = ResumeRequest {
        session_id: "s".into(),
        mode: ResumeMode::FromCheckpoint,
        message: Some("again".into()),
        abandon_pending: true,
        checkpoint_id: Some(3),
    };
    let wire = v1::ResumeRequest::from(request.clone());
    assert_eq!(wire.mode, "from_checkpoint");
    assert_eq!(ResumeRequest::try_from(wire).unwrap(), request);
}

#[test]
fn snapshots_and_usage_convert_both_ways() {
    let snapshot = SnapshotResponse {
        session_id: "s".into(),
        stream_id: "st".into(),
        status: Status::SuspendedClientTool,
        state: serde_json::json!({"topic": "rust", "n": 12345678901234567890u64}),
        messages: vec![Message::system("Be brief."), Message::user("hi")],
        stream_sequence: 7,
        oldest_retained_sequence: 0,
        step_count: 1,
        checkpoint_id: Some(1),
        meta: baton_wire::SessionMeta {
            tags: vec!["t".into()],
            ..Default::default()
        },
    };
    let wire = v1::SnapshotResponse::from(snapshot.clone());
    assert_eq!(wire.status, "suspended_client_tool");
    assert_eq!(
        wire.messages_json[1],
        serde_json::to_string(&Message::user("hi")).unwrap()
    );
    assert_eq!(SnapshotResponse::try_from(wire).unwrap(), snapshot);

    let tokens = |input_tokens, output_tokens| Usage {
        input_tokens,
        output_tokens,
        cache_read_input_tokens: 5,
        cache_creation_input_tokens: 0,
    };
    let usage = UsageResponse {
        session_id: "s".into(),
        rollup: UsageRollup {
            tokens: tokens(30, 4),
            models: [(
                "scripted".to_owned(),
                ModelUsage {
                    tokens: tokens(30, 4),
                    calls: 2,
                },
            )]
            .into(),
            tool_calls: [("add".to_owned(), 3)].into(),
            client_tool_wait_ms: 1500,
            client_tool_timeouts: 1,
            aborts: 0,
        },
    };
    let wire = v1::UsageResponse::from(usage.clone());
    let wire_rollup = wire.rollup.as_ref().unwrap();
    assert_eq!(wire_rollup.models["scripted"].calls, 2);
    assert_eq!(wire_rollup.tokens.unwrap().cache_read_input_tokens, 5);
    assert_eq!(UsageResponse::try_from(wire).unwrap(), usage);
    let missing = v1::UsageResponse {
        session_id: "s".into(),
        rollup: None,
    };
    assert!(matches!(
        UsageResponse::try_from(missing),
        Err(Error::MissingField("rollup"))
    ));
}

#[test]
fn chunks_carry_their_json_and_check_the_sequence() {
    let chunk = StreamChunk {
        sequence: 4,
        header: ChunkHeader {
            stream_id: "st".into(),
            session_id: "s".into(),
            agent_id: "s".into(),
            run_id: "r".into(),
            timestamp: 11,
        },
        kind: ChunkKind::TextDelta {
            step: 1,
            delta: "hi".into(),
        },
        remote_source: None,
    };
    let wire = v1::Chunk::from(&chunk);
    assert_eq!(wire.sequence, 4);
    assert_eq!(wire.r#type, "text_delta");
    assert_eq!(wire.json, serde_json::to_string(&chunk).unwrap());
    assert_eq!(StreamChunk::try_from(wire.clone()).unwrap(), chunk);
    let lying = v1::Chunk {
        sequence: 5,
        ..wire
    };
    assert!(matches!(
        StreamChunk::try_from(lying),
        Err(Error::ChunkSequence { wire: 5, json: 4 })
    ));
}
