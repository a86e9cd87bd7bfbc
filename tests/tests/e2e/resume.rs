//! Resuming a suspended session: a fresh workflow drains the answers into the log (in call
//! order; lapsed calls as `client_tool_timeout`) and continues with one model call.

use baton_activities::io::RunOutcome;
use baton_client::Client as _;
use baton_core::{
    ChunkKind, ErrorCode, Message,
    message::{ToolCall, ToolError, ToolOutcome},
    store::{Continuation, SessionAddress, Status},
    submit::{SubmitAnswer, SubmitStatus},
};
use baton_tests::{Harness, agents, api_error, tool_outcomes};
use serde_json::json;
use std::time::Duration;

const LIMIT: Duration = baton_tests::WAIT_LIMIT;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn submit_then_resume_drains_the_answer_and_finishes_the_turn() {
    let harness = Harness::start(agents::registry()).await;
    let session = harness.suspended_session("asker").await;
    let address = SessionAddress::root(&session);
    let yes = ToolOutcome::Result(json!({"answer": "yes"}));
    let submitted = harness
        .client
        .submit(&session, "call_1_2", &yes)
        .await
        .unwrap();
    assert_eq!(submitted.continuation, Continuation::CallerResumes);

    let before = harness.client.status(&session).await.unwrap().last_sequence;
    let resumed = harness.client.resume(&session).await.unwrap();
    assert_eq!(
        resumed.workflow_id,
        Some(format!(
            "agent__asker__{session}__resume-{}",
            resumed.run_id
        ))
    );
    assert_eq!(resumed.status, Status::Active);
    let chunks = harness.chunks_after_until_end(&session, before).await;
    let kinds: Vec<&str> = chunks.iter().map(|c| c.kind.name()).collect();
    assert_eq!(
        kinds,
        [
            "run_start",
            "tool_end",
            "step_start",
            "text_delta",
            "text_delta",
            "text_delta",
            "text_delta",
            "step_end",
            "end"
        ]
    );
    assert!(chunks.iter().all(|c| c.header.run_id == resumed.run_id));
    assert_eq!(chunks[0].sequence, before + 1);
    assert!(
        matches!(&chunks[1].kind, ChunkKind::ToolEnd { tool_call_id, step: 1, .. } if tool_call_id == "call_1_2")
    );

    let add = ToolCall {
        id: "call_1_1".into(),
        name: "add".into(),
        arguments: json!({"a": 1, "b": 2}),
        provider_id: None,
    };
    let ask = ToolCall {
        id: "call_1_2".into(),
        name: "ask_user".into(),
        arguments: json!({"question": "Proceed?"}),
        provider_id: None,
    };
    assert_eq!(
        harness.store.messages(&address).await.unwrap(),
        vec![
            Message::user("go"),
            Message::assistant("", vec![add.clone(), ask.clone()]),
            Message::tool_result(&add, ToolOutcome::Result(json!(3))),
            Message::tool_result(&ask, yes.clone()),
            Message::assistant(r#"The user said {"answer":"yes"}"#, vec![]),
        ]
    );
    let workflow_id = resumed.workflow_id.unwrap();
    let outcome = harness.run_result(&workflow_id).await.unwrap();
    assert_eq!(outcome, RunOutcome::Completed { steps: 1 });
    let state = harness.client.status(&session).await.unwrap();
    assert_eq!(
        (state.status, state.step_count, &state.run_id),
        (Status::Completed, 2, &resumed.run_id)
    );
    assert_eq!(state.suspension, None);
    assert!(
        harness
            .store
            .pending_calls(&address)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(harness.store.answers(&address).await.unwrap().is_empty());
    assert_eq!(
        harness
            .store
            .call_owner(&session, "call_1_2")
            .await
            .unwrap(),
        None
    );

    // The drained call keeps answering already_completed, and nothing changes.
    let late = harness
        .client
        .submit(
            &session,
            "call_1_2",
            &ToolOutcome::Result(json!({"answer": "no"})),
        )
        .await;
    assert_eq!(
        late.unwrap(),
        SubmitAnswer {
            status: SubmitStatus::AlreadyCompleted,
            continuation: Continuation::Consumed
        }
    );
    let again = api_error(harness.client.resume(&session).await.unwrap_err());
    assert_eq!(again.code, ErrorCode::StateNotResumable);
    assert_eq!(harness.store.messages(&address).await.unwrap().len(), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partial_batch_is_not_resumable_and_nothing_is_written() {
    let harness = Harness::start(agents::registry()).await;
    let session = harness.suspended_session("asker_twice").await;
    let yes = ToolOutcome::Result(json!({"answer": "yes"}));
    harness
        .client
        .submit(&session, "call_1_1", &yes)
        .await
        .unwrap();
    let before = harness.client.status(&session).await.unwrap();

    let refused = api_error(harness.client.resume(&session).await.unwrap_err());
    assert_eq!(refused.code, ErrorCode::StateNotResumable);
    assert!(refused.retryable);
    assert!(refused.error.contains("call_1_2"), "{}", refused.error);
    assert_eq!(refused.details["awaitedToolCallIds"], json!(["call_1_2"]));
    let after = harness.client.status(&session).await.unwrap();
    assert_eq!(after, before, "a refused resume writes nothing");

    // Once the batch is complete the same resume goes through and drains both, in call order.
    harness
        .client
        .submit(
            &session,
            "call_1_2",
            &ToolOutcome::Error(ToolError::new("user_cancelled", "closed")),
        )
        .await
        .unwrap();
    harness.client.resume(&session).await.unwrap();
    harness
        .chunks_after_until_end(&session, before.last_sequence)
        .await;
    let messages = harness.messages(&session).await;
    let drained: Vec<&str> = messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool(result) => Some(result.tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(drained, ["call_1_1", "call_1_2"]);
    assert_eq!(
        messages.last().unwrap(),
        &Message::assistant("Both answered; the last said error user_cancelled", vec![])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lapsed_call_is_drained_as_a_timeout() {
    let harness = Harness::start(agents::registry()).await;
    let session = harness.suspended_session("asker_hasty").await;
    let before = harness.client.status(&session).await.unwrap().last_sequence;
    harness.client.resume(&session).await.unwrap();
    let chunks = harness.chunks_after_until_end(&session, before).await;
    let timeout = chunks.iter().find_map(|c| match &c.kind {
        ChunkKind::ToolEnd {
            error: Some(error), ..
        } => Some(error.code.clone()),
        _ => None,
    });
    assert_eq!(timeout.as_deref(), Some("client_tool_timeout"));
    let messages = harness.messages(&session).await;
    assert_eq!(
        messages.last().unwrap(),
        &Message::assistant("Outcome: error client_tool_timeout", vec![])
    );
    let late = harness
        .client
        .submit(
            &session,
            "call_1_1",
            &ToolOutcome::Result(json!({"answer": "late"})),
        )
        .await;
    assert_eq!(late.unwrap().status, SubmitStatus::AlreadyCompleted);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_two_concurrent_resumes_exactly_one_runs() {
    let harness = Harness::start(agents::registry()).await;
    let session = harness.suspended_session("asker_only").await;
    let before = harness.client.status(&session).await.unwrap().last_sequence;
    harness
        .client
        .submit(
            &session,
            "call_1_1",
            &ToolOutcome::Result(json!({"answer": "Ada"})),
        )
        .await
        .unwrap();

    let (first, second) = tokio::join!(
        harness.client.resume(&session),
        harness.client.resume(&session)
    );
    let (won, lost) = match (first, second) {
        (Ok(won), Err(lost)) | (Err(lost), Ok(won)) => (won, api_error(lost)),
        other => panic!("exactly one resume should win: {other:?}"),
    };
    assert!(
        matches!(
            lost.code,
            ErrorCode::StateAlreadyRunning | ErrorCode::StateNotResumable
        ),
        "{lost:?}"
    );
    let chunks = harness.chunks_after_until_end(&session, before).await;
    assert_eq!(
        chunks
            .iter()
            .filter(|c| matches!(c.kind, ChunkKind::RunStart { .. }))
            .count(),
        1
    );
    assert!(chunks.iter().all(|c| c.header.run_id == won.run_id));
    let messages = harness.messages(&session).await;
    assert_eq!(
        messages.len(),
        4,
        "user, call, one result, one answer: {messages:?}"
    );
    assert_eq!(
        messages[3],
        Message::assistant(r#"Hello {"answer":"Ada"}"#, vec![])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_submit_racing_a_resume_lands_in_the_log_exactly_when_it_was_accepted() {
    let harness = Harness::start(agents::registry()).await;
    // The call lapses at once, so the resume may win before the answer arrives.
    let session = harness.suspended_session("asker_hasty").await;
    let before = harness.client.status(&session).await.unwrap().last_sequence;
    let answer = ToolOutcome::Result(json!({"answer": "raced"}));
    let (submitted, resumed) = tokio::join!(
        harness.client.submit(&session, "call_1_1", &answer),
        harness.client.resume(&session)
    );
    let submitted = submitted.unwrap();
    resumed.unwrap();
    harness.chunks_after_until_end(&session, before).await;

    let messages = harness.messages(&session).await;
    let results = tool_outcomes(&messages);
    assert_eq!(
        results.len(),
        1,
        "one result for the one call: {messages:?}"
    );
    match submitted.status {
        SubmitStatus::Accepted => assert_eq!(results[0], &answer),
        SubmitStatus::AlreadyCompleted => {
            assert_eq!(submitted.continuation, Continuation::Consumed);
            assert!(matches!(results[0], ToolOutcome::Error(e) if e.code == "client_tool_timeout"));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_to_an_ended_session_is_its_next_turn() {
    let harness = Harness::start(agents::registry()).await;
    let started = harness.client.start("chatter", "hi").await.unwrap();
    let first = harness.chunks_until_end(&started.session_id, LIMIT).await;
    let before = first.last().unwrap().sequence;

    let next = harness
        .client
        .send_message(&started.session_id, "again", false)
        .await
        .unwrap();
    assert_eq!(
        next.workflow_id,
        Some(format!(
            "agent__chatter__{}__resume-{}",
            started.session_id, next.run_id
        ))
    );
    let chunks = harness
        .chunks_after_until_end(&started.session_id, before)
        .await;
    assert!(
        matches!(&chunks.last().unwrap().kind, ChunkKind::End { output: Some(o), .. } if o == "second: again")
    );
    assert_eq!(
        harness.messages(&started.session_id).await,
        vec![
            Message::user("hi"),
            Message::assistant("first: hi", vec![]),
            Message::user("again"),
            Message::assistant("second: again", vec![]),
        ]
    );
    let state = harness.client.status(&started.session_id).await.unwrap();
    assert_eq!(
        (state.status, state.step_count, state.output.as_deref()),
        (Status::Completed, 2, Some("second: again"))
    );

    // continue has nothing to continue on an ended session; a blank message is refused.
    let refused = api_error(
        harness
            .client
            .resume(&started.session_id)
            .await
            .unwrap_err(),
    );
    assert_eq!(refused.code, ErrorCode::StateNotResumable);
    let blank = api_error(
        harness
            .client
            .send_message(&started.session_id, " ", false)
            .await
            .unwrap_err(),
    );
    assert_eq!(blank.code, ErrorCode::ValidationError);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_over_open_calls_abandons_them_and_lands_after_the_results() {
    let harness = Harness::start(agents::registry()).await;
    let session = harness.suspended_session("asker_twice").await;
    let yes = ToolOutcome::Result(json!({"answer": "yes"}));
    harness
        .client
        .submit(&session, "call_1_1", &yes)
        .await
        .unwrap();
    let before = harness.client.status(&session).await.unwrap().last_sequence;

    // Without abandonPending a partial batch refuses the message and stores nothing.
    let refused = api_error(
        harness
            .client
            .send_message(&session, "never mind", false)
            .await
            .unwrap_err(),
    );
    assert_eq!(refused.code, ErrorCode::StateNotResumable);
    assert_eq!(
        harness.client.status(&session).await.unwrap().last_sequence,
        before
    );

    harness
        .client
        .send_message(&session, "never mind", true)
        .await
        .unwrap();
    let chunks = harness.chunks_after_until_end(&session, before).await;
    let model_steps = chunks
        .iter()
        .filter(|c| matches!(c.kind, ChunkKind::StepStart { .. }))
        .count();
    assert_eq!(model_steps, 1, "exactly one model call");
    let messages = harness.messages(&session).await;
    let tail: Vec<String> = messages[2..]
        .iter()
        .map(|m| match m {
            Message::Tool(result) => match &result.outcome {
                ToolOutcome::Result(value) => format!("{} {value}", result.tool_call_id),
                ToolOutcome::Error(error) => format!("{} {}", result.tool_call_id, error.code),
            },
            Message::User { content, .. } => format!("user {content}"),
            Message::Assistant { content, .. } => format!("assistant {content}"),
            Message::System { .. } => "system".to_owned(),
        })
        .collect();
    assert_eq!(
        tail,
        [
            r#"call_1_1 {"answer":"yes"}"#,
            "call_1_2 client_tool_abandoned",
            "user never mind",
            "assistant Both answered; the last said error client_tool_abandoned",
        ]
    );
    let state = harness.client.status(&session).await.unwrap();
    assert!(!state.abandon_pending && state.suspension.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswered_session_resumes_itself_when_its_deadline_lapses() {
    let harness = Harness::start(agents::registry()).await;
    let started = harness.client.start("asker_deadline", "go").await.unwrap();
    // Nobody answers: the deadline workflow resumes the session after one second.
    let chunks = harness.chunks_until_end(&started.session_id, LIMIT).await;
    assert!(
        chunks
            .iter()
            .any(|c| matches!(c.kind, ChunkKind::Suspended { .. }))
    );
    assert!(
        matches!(&chunks.last().unwrap().kind, ChunkKind::End { output: Some(o), .. } if o == "Outcome: error client_tool_timeout")
    );

    let deadline_id = format!("deadline__{}__{}", started.session_id, started.run_id);
    let outcome = harness
        .temporal
        .get_workflow_handle::<baton_workflows::DeadlineWorkflow>(deadline_id)
        .get_result(Default::default())
        .await
        .unwrap();
    let state = harness.client.status(&started.session_id).await.unwrap();
    assert_eq!(
        outcome,
        baton_activities::io::DeadlineOutcome::Resumed {
            run_id: state.run_id.clone(),
            workflow_id: format!(
                "agent__asker_deadline__{}__resume-{}",
                started.session_id, state.run_id
            ),
        }
    );
    assert_eq!(state.status, Status::Completed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_resumed_before_its_deadline_makes_the_deadline_a_no_op() {
    let harness = Harness::start(agents::registry()).await;
    let started = harness.client.start("asker_patient", "go").await.unwrap();
    let session = started.session_id.clone();
    harness.chunks_until_suspended(&session).await;
    let before = harness.client.status(&session).await.unwrap().last_sequence;
    harness
        .client
        .submit(
            &session,
            "call_1_1",
            &ToolOutcome::Result(json!({"answer": "yes"})),
        )
        .await
        .unwrap();
    let resumed = harness
        .client
        .resume(&session)
        .await
        .expect("the resume comes before the deadline (agents::PATIENT_DEADLINE) lapses");
    harness.chunks_after_until_end(&session, before).await;

    // The deadline still fires, finds its run gone, and does nothing.
    let deadline_id = format!("deadline__{session}__{}", started.run_id);
    let outcome = harness
        .temporal
        .get_workflow_handle::<baton_workflows::DeadlineWorkflow>(deadline_id)
        .get_result(Default::default())
        .await
        .unwrap();
    assert_eq!(outcome, baton_activities::io::DeadlineOutcome::Nothing);
    let state = harness.client.status(&session).await.unwrap();
    assert_eq!(
        (state.status, &state.run_id),
        (Status::Completed, &resumed.run_id)
    );
    let messages = harness.messages(&session).await;
    assert_eq!(
        messages.last().unwrap(),
        &Message::assistant(r#"Outcome: {"answer":"yes"}"#, vec![])
    );
}
