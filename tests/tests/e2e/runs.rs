//! Agent runs end to end: HTTP server, Temporal worker, a real Temporal dev server, a real Redis.

use baton_client::Client as _;
use baton_core::{
    ChunkKind, ErrorCode, Message, StreamChunk,
    chunk::{EndStatus, RunError},
    message::{ToolCall, ToolError, ToolOutcome},
    store::{SessionAddress, Status},
};
use baton_tests::{Harness, WorkerProcess, agents};
use serde_json::json;
use std::time::Duration;
use temporalio_common::protos::temporal::api::{
    enums::v1::EventType, failure::v1::failure::FailureInfo, history::v1::HistoryEvent,
};

const RUN_LIMIT: Duration = baton_tests::WAIT_LIMIT;
pub(crate) const TEST_WORKER: &str = env!("CARGO_BIN_EXE_baton-test-worker");

/// A compact view of a chunk, for exact comparisons.
pub(crate) fn describe(chunk: &StreamChunk) -> String {
    match &chunk.kind {
        ChunkKind::RunStart { agent_type } => format!("run_start {agent_type}"),
        ChunkKind::StepStart { step } => format!("step_start {step}"),
        ChunkKind::TextDelta { step, delta } => format!("text_delta {step} {delta:?}"),
        ChunkKind::ReasoningDelta { step, delta } => format!("reasoning_delta {step} {delta:?}"),
        ChunkKind::ToolData { step, name, .. } => format!("tool_data {step} {name}"),
        ChunkKind::ToolStart {
            step,
            tool_call_id,
            tool_name,
            input,
        } => {
            format!("tool_start {step} {tool_call_id} {tool_name} {input}")
        }
        ChunkKind::ToolEnd {
            step,
            tool_call_id,
            result,
            error,
            ..
        } => match (result, error) {
            (_, Some(error)) => format!("tool_end {step} {tool_call_id} error {}", error.code),
            (result, None) => format!(
                "tool_end {step} {tool_call_id} {}",
                result.clone().unwrap_or_default()
            ),
        },
        ChunkKind::StepEnd { step } => format!("step_end {step}"),
        ChunkKind::StepDiscarded { step } => format!("step_discarded {step}"),
        ChunkKind::ToolApprovalRequest { tool_call_id, .. } => format!("approval {tool_call_id}"),
        ChunkKind::Suspended {
            step,
            tool_call_ids,
        } => format!("suspended {step} {}", tool_call_ids.join(",")),
        ChunkKind::Question {
            step, tool_name, ..
        } => format!("question {step} {tool_name}"),
        ChunkKind::QuestionClosed { step, answer, .. } => {
            format!("question_closed {step} {answer}")
        }
        ChunkKind::Rewind { checkpoint_id, .. } => format!("rewind {checkpoint_id}"),
        ChunkKind::SubagentStart { sub_session_id, .. } => {
            format!("subagent_start {sub_session_id}")
        }
        ChunkKind::SubagentEnd { sub_session_id, .. } => format!("subagent_end {sub_session_id}"),
        ChunkKind::StatePatch { step, patch } => format!("state_patch {step} {patch}"),
        ChunkKind::End {
            status,
            output,
            error,
            ..
        } => format!(
            "end {status:?} {} {}",
            output.as_deref().unwrap_or("-"),
            error
                .as_ref()
                .map_or("-".to_owned(), |e| e.code.to_string())
        ),
    }
}

/// The history of the run `workflow_id` once it has ended: its end chunk is written inside its
/// last workflow task, whose events (with local activities, every step's) come when it completes.
async fn ended_history(harness: &Harness, workflow_id: &str) -> Vec<HistoryEvent> {
    let _ = harness.run_result(workflow_id).await;
    crate::round_cost::history(harness, workflow_id).await
}

/// The activities the ended run `workflow_id` ran, in order (see `round_cost::activity_trail`).
async fn activity_trail(harness: &Harness, workflow_id: &str) -> Vec<String> {
    crate::round_cost::activity_trail(&ended_history(harness, workflow_id).await)
}

fn call(id: &str, name: &str, arguments: serde_json::Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments,
        provider_id: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_two_step_session_completes_with_the_exact_log_and_stream() {
    let harness = Harness::start(agents::registry()).await;
    let started = harness.client.start("two_steps", "hello").await.unwrap();
    assert_eq!(
        started.workflow_id,
        format!("agent__two_steps__{}", started.session_id)
    );
    let chunks = harness
        .chunks_until_end(&started.session_id, RUN_LIMIT)
        .await;

    let add = call("call_1_1", "add", json!({"a": 2, "b": 3}));
    let upper = call("call_1_2", "upper", json!({"text": "baton"}));
    let bad_add = call("call_2_1", "add", json!({"a": "two", "b": 3}));
    let address = SessionAddress::root(&started.session_id);
    let messages = harness.store.messages(&address).await.unwrap();
    let expected = vec![
        Message::system("test agent"),
        Message::user("hello"),
        Message::assistant("", vec![add.clone(), upper.clone()]),
        Message::tool_result(&add, ToolOutcome::Result(json!(5))),
        Message::tool_result(&upper, ToolOutcome::Result(json!("BATON"))),
        Message::assistant("", vec![bad_add.clone()]),
        Message::tool_result(
            &bad_add,
            ToolOutcome::Error(ToolError::new(
                "invalid_tool_input",
                "/a: \"two\" is not of type \"integer\"",
            )),
        ),
        Message::assistant("BATON says hello", vec![]),
    ];
    assert_eq!(messages, expected);

    // Parallel tool calls may finish in either order; everything else is fixed.
    let mut described: Vec<String> = chunks.iter().map(describe).collect();
    let first_tool_end = described
        .iter()
        .position(|d| d.starts_with("tool_end 1"))
        .unwrap();
    described[first_tool_end..first_tool_end + 2].sort();
    assert_eq!(
        described,
        [
            "run_start two_steps",
            "step_start 1",
            r#"tool_start 1 call_1_1 add {"a":2,"b":3}"#,
            r#"tool_start 1 call_1_2 upper {"text":"baton"}"#,
            "tool_end 1 call_1_1 5",
            r#"tool_end 1 call_1_2 "BATON""#,
            "step_end 1",
            "step_start 2",
            r#"tool_start 2 call_2_1 add {"a":"two","b":3}"#,
            "tool_end 2 call_2_1 error invalid_tool_input",
            "step_end 2",
            "step_start 3",
            r#"text_delta 3 "BATON ""#,
            r#"text_delta 3 "says ""#,
            r#"text_delta 3 "hello""#,
            "step_end 3",
            "end Completed BATON says hello -",
        ]
    );
    let sequences: Vec<u64> = chunks.iter().map(|c| c.sequence).collect();
    assert_eq!(sequences, (1..=chunks.len() as u64).collect::<Vec<_>>());
    assert!(
        chunks
            .iter()
            .all(|c| c.header.stream_id == started.stream_id
                && c.header.run_id == started.run_id
                && c.header.session_id == started.session_id)
    );

    let state = harness.client.status(&started.session_id).await.unwrap();
    assert_eq!(state.status, Status::Completed);
    assert_eq!(state.step_count, 3);
    assert_eq!(state.output.as_deref(), Some("BATON says hello"));
    let checkpoints = harness.store.checkpoints(&address).await.unwrap();
    let counts: Vec<(u32, u64)> = checkpoints
        .iter()
        .map(|c| (c.step_count, c.message_count))
        .collect();
    assert_eq!(counts, [(0, 2), (1, 5), (2, 7), (3, 8)]);
    assert_eq!(
        harness.store.usage_records(&address).await.unwrap().len(),
        3
    );
    let ChunkKind::End { usage, .. } = &chunks.last().unwrap().kind else {
        unreachable!()
    };
    assert_eq!(
        usage.tokens,
        harness.store.usage_total(&address).await.unwrap()
    );
    // The end chunk carries the session's rollup, as `/usage` gives it.
    assert_eq!(
        *usage,
        harness.store.usage_rollup(&address).await.unwrap().unwrap()
    );

    // `add` ran as activities of its own; `upper` (inline) inside the model step, a local
    // activity, as are the commits.
    assert_eq!(
        activity_trail(&harness, &started.workflow_id).await,
        [
            "local:model_step",
            "execute_tool",
            "local:commit_step",
            "local:model_step",
            "execute_tool",
            "local:commit_step",
            "local:model_step",
            "local:complete_run",
        ]
    );

    // The workflow itself completed, reporting three steps.
    let outcome = harness.run_result(&started.workflow_id).await.unwrap();
    assert_eq!(
        outcome,
        baton_activities::io::RunOutcome::Completed { steps: 3 }
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exceeding_max_steps_fails_the_run_with_a_typed_error() {
    let harness = Harness::start(agents::registry()).await;
    let started = harness.client.start("looper", "go").await.unwrap();
    let chunks = harness
        .chunks_until_end(&started.session_id, RUN_LIMIT)
        .await;

    let ChunkKind::End { status, error, .. } = &chunks.last().unwrap().kind else {
        panic!("last chunk is not end: {:?}", chunks.last());
    };
    assert_eq!(*status, EndStatus::Failed);
    assert_eq!(
        error.as_ref().map(|e| e.code),
        Some(ErrorCode::MaxStepsExceeded)
    );
    let step_ends = chunks
        .iter()
        .filter(|c| matches!(c.kind, ChunkKind::StepEnd { .. }))
        .count();
    assert_eq!(step_ends, 3);

    let state = harness.client.status(&started.session_id).await.unwrap();
    assert_eq!(state.status, Status::Failed);
    assert_eq!(
        state.error,
        Some(RunError {
            code: ErrorCode::MaxStepsExceeded,
            message: "the model was still calling tools after max_steps (3) steps".into()
        })
    );
    let messages = harness.messages(&started.session_id).await;
    assert_eq!(
        messages.len(),
        1 + 3 * 2,
        "user message, then 3 calls with their results"
    );

    // Temporal records the failure with the error code as its type.
    let failure = harness.run_result(&started.workflow_id).await.unwrap_err();
    let temporalio_client::errors::WorkflowGetResultError::Failed(failure) = failure else {
        panic!("expected a failed workflow, got {failure:?}");
    };
    let mut current = Some(failure.failure());
    let mut failure_type = None;
    while let Some(f) = current {
        if let Some(FailureInfo::ApplicationFailureInfo(info)) = &f.failure_info {
            failure_type = Some(info.r#type.clone());
            break;
        }
        current = f.cause.as_deref();
    }
    assert_eq!(failure_type.as_deref(), Some("max_steps_exceeded"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_agent_type_is_refused_and_nothing_is_written() {
    let harness = Harness::start(agents::registry()).await;
    let refused = harness
        .client
        .start("no_such_agent", "hello")
        .await
        .unwrap_err();
    let baton_client::Error::Api(error) = refused else {
        panic!("expected a typed error, got {refused:?}");
    };
    assert_eq!(error.code, ErrorCode::UnknownAgentType);
    assert!(!error.retryable);
    // Not verbose: the answer echoes neither the name nor the server's agent types.
    assert_eq!(error.error, "unknown agent type");
    assert!(error.details.is_empty(), "{error:?}");

    harness.assert_nothing_written().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_in_a_tool_activity_is_replaced_and_nothing_is_duplicated() {
    killed_mid_tool("holder").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_in_an_inline_tool_is_replaced_and_nothing_is_duplicated() {
    killed_mid_tool("holder_inline").await;
}

/// Kills the worker (SIGKILL) while `agent`'s `hold` tool runs, starts another, and checks that
/// the run completes with every message and chunk exactly once.
async fn killed_mid_tool(agent: &str) {
    let harness = Harness::server_only(agents::registry()).await;
    let mut first = WorkerProcess::spawn(TEST_WORKER, &harness, true);
    let started = harness.client.start(agent, "go").await.unwrap();

    // Wait until the first worker is inside the tool, then kill it without warning.
    assert!(
        tokio::time::timeout(RUN_LIMIT, first.holding())
            .await
            .unwrap()
    );
    drop(first);

    let _second = WorkerProcess::spawn(TEST_WORKER, &harness, false);
    let chunks = harness
        .chunks_until_end(&started.session_id, RUN_LIMIT)
        .await;

    let hold = call("call_1_1", "hold", json!({}));
    let messages = harness.messages(&started.session_id).await;
    assert_eq!(
        messages,
        vec![
            Message::user("go"),
            Message::assistant("", vec![hold.clone()]),
            Message::tool_result(&hold, ToolOutcome::Result(json!("done"))),
            Message::assistant("released: done", vec![]),
        ]
    );
    let described: Vec<String> = chunks.iter().map(describe).collect();
    assert_eq!(
        described,
        [
            format!("run_start {agent}").as_str(),
            "step_start 1",
            "tool_start 1 call_1_1 hold {}",
            r#"tool_end 1 call_1_1 "done""#,
            "step_end 1",
            "step_start 2",
            r#"text_delta 2 "released: ""#,
            r#"text_delta 2 "done""#,
            "step_end 2",
            "end Completed released: done -",
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_whose_tools_are_all_inline_is_one_activity() {
    let registry = baton_core::AgentRegistry::new([baton_worker::demo::demo_agent()]).unwrap();
    let harness = Harness::start(registry).await;
    let started = harness
        .client
        .start("demo", "what is 6 times 7?")
        .await
        .unwrap();
    let chunks = harness
        .chunks_until_end(&started.session_id, RUN_LIMIT)
        .await;

    let messages = harness.messages(&started.session_id).await;
    let calculator = call(
        "call_1_1",
        "calculator",
        json!({"operation": "multiply", "a": 6, "b": 7}),
    );
    let clock = call("call_2_1", "clock", json!({}));
    assert_eq!(messages.len(), 7);
    assert_eq!(
        messages[2],
        Message::assistant("", vec![calculator.clone()])
    );
    assert_eq!(
        messages[3],
        Message::tool_result(&calculator, ToolOutcome::Result(json!(42)))
    );
    assert_eq!(messages[4], Message::assistant("", vec![clock.clone()]));
    let Message::Tool(time) = &messages[5] else {
        panic!("expected the clock's result")
    };
    let ToolOutcome::Result(serde_json::Value::String(time)) = &time.outcome else {
        panic!("the clock answers a string: {time:?}")
    };
    assert_eq!(time.len(), "2026-01-01T00:00:00Z".len());
    assert_eq!(
        messages[6],
        Message::assistant(format!("6 × 7 = 42, and the time is {time}."), vec![])
    );
    let step_chunks: Vec<String> = chunks
        .iter()
        .filter(|c| !matches!(c.kind, ChunkKind::TextDelta { .. }))
        .map(describe)
        .collect();
    assert_eq!(
        step_chunks,
        [
            "run_start demo".to_owned(),
            "step_start 1".to_owned(),
            r#"tool_start 1 call_1_1 calculator {"a":6,"b":7,"operation":"multiply"}"#.to_owned(),
            "tool_end 1 call_1_1 42".to_owned(),
            "step_end 1".to_owned(),
            "step_start 2".to_owned(),
            "tool_start 2 call_2_1 clock {}".to_owned(),
            format!("tool_end 2 call_2_1 \"{time}\""),
            "step_end 2".to_owned(),
            "step_start 3".to_owned(),
            "step_end 3".to_owned(),
            format!("end Completed 6 × 7 = 42, and the time is {time}. -"),
        ]
    );
    // One local activity per step: the inline tools ran and committed inside the model step,
    // so the whole run needed no activity task; and one workflow task in all.
    let events = ended_history(&harness, &started.workflow_id).await;
    assert_eq!(
        crate::round_cost::activity_trail(&events),
        [
            "local:model_step",
            "local:model_step",
            "local:model_step",
            "local:complete_run"
        ]
    );
    let kinds: Vec<EventType> = events.iter().map(|e| e.event_type()).collect();
    assert_eq!(
        crate::round_cost::count(&events, EventType::WorkflowTaskScheduled),
        1,
        "{kinds:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_step_retried_mid_stream_discards_the_partial_text_and_streams_the_retry() {
    for (agent, answer) in [
        ("flaky", "first second third"),
        ("flaky_rephrasing", "another answer"),
    ] {
        let harness = Harness::start(agents::registry()).await;
        let started = harness.client.start(agent, "go").await.unwrap();
        let chunks = harness
            .chunks_until_end(&started.session_id, RUN_LIMIT)
            .await;
        let described: Vec<String> = chunks.iter().map(describe).collect();
        let retried: Vec<String> = answer
            .split_inclusive(' ')
            .map(|word| format!("text_delta 1 {word:?}"))
            .collect();
        let mut expected: Vec<String> = [
            format!("run_start {agent}"),
            "step_start 1".to_owned(),
            r#"text_delta 1 "first ""#.to_owned(),
            r#"text_delta 1 "second ""#.to_owned(),
            "step_discarded 1".to_owned(),
            "step_start 1".to_owned(),
        ]
        .into();
        expected.extend(retried);
        expected.extend(["step_end 1".to_owned(), format!("end Completed {answer} -")]);
        assert_eq!(described, expected);
        // A reader that drops the step's chunks before step_discarded reads the log's text.
        let discarded = chunks
            .iter()
            .position(|chunk| matches!(chunk.kind, ChunkKind::StepDiscarded { .. }))
            .unwrap();
        let streamed: String = chunks[discarded..]
            .iter()
            .filter_map(|chunk| match &chunk.kind {
                ChunkKind::TextDelta { delta, .. } => Some(delta.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(streamed, answer);
        let messages = harness.messages(&started.session_id).await;
        assert_eq!(
            messages,
            vec![Message::user("go"), Message::assistant(answer, vec![])]
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn following_from_a_sequence_gives_exactly_the_later_chunks() {
    let harness = Harness::start(agents::registry()).await;
    let started = harness.client.start("two_steps", "hello").await.unwrap();
    let all = harness
        .chunks_until_end(&started.session_id, RUN_LIMIT)
        .await;
    let last = all.last().unwrap().sequence;

    let later: Vec<StreamChunk> =
        futures::StreamExt::collect::<Vec<_>>(harness.client.follow(&started.session_id, 5))
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect();
    assert_eq!(later, all[5..].to_vec());
    // Everything seen: the stream of an ended session closes with nothing in it.
    let nothing: Vec<_> =
        futures::StreamExt::collect::<Vec<_>>(harness.client.follow(&started.session_id, last))
            .await;
    assert!(nothing.is_empty(), "{nothing:?}");

    let missing = harness.client.status("nosuchsession").await.unwrap_err();
    assert!(matches!(missing, baton_client::Error::Api(e) if e.code == ErrorCode::SessionNotFound));
}
