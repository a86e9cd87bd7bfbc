//! Submitting answers to pending client calls: every answer of the contract, and nothing written
//! on any refusal.

use axum::{
    body::Body,
    http::{Request, StatusCode, header},
};
use baton_client::Client as _;
use baton_core::{
    ErrorCode,
    message::{ToolError, ToolOutcome},
    store::{Answer, Continuation, SessionAddress},
    submit::{INVALID_RESULT_MESSAGE, SubmitAnswer, SubmitStatus},
};
use baton_tests::{Harness, SUBMIT_LIMIT_BYTES, agents, api_error};
use serde_json::json;

fn answer(status: SubmitStatus, continuation: Continuation) -> SubmitAnswer {
    SubmitAnswer {
        status,
        continuation,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_of_a_batch_are_stored_once_and_say_what_comes_next() {
    let harness = Harness::start(agents::registry()).await;
    let session = harness.suspended_session("asker_twice").await;
    let address = SessionAddress::root(&session);
    let yes = ToolOutcome::Result(json!({"answer": "yes"}));

    let first = harness
        .client
        .submit(&session, "call_1_1", &yes)
        .await
        .unwrap();
    assert_eq!(
        first,
        answer(SubmitStatus::Accepted, Continuation::AwaitingBatch)
    );
    // A re-submit never replaces the stored answer.
    let other = ToolOutcome::Result(json!({"answer": "no"}));
    let again = harness
        .client
        .submit(&session, "call_1_1", &other)
        .await
        .unwrap();
    assert_eq!(
        again,
        answer(SubmitStatus::AlreadyCompleted, Continuation::AwaitingBatch)
    );
    assert_eq!(
        harness.store.answers(&address).await.unwrap()["call_1_1"].answer,
        Answer::Outcome {
            outcome: yes.clone()
        }
    );

    // A result that fails the output schema: fixed message, nothing stored.
    let bad = ToolOutcome::Result(json!({"answer": 42}));
    let refused = api_error(
        harness
            .client
            .submit(&session, "call_1_2", &bad)
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (refused.code, refused.error.as_str()),
        (ErrorCode::InvalidResult, INVALID_RESULT_MESSAGE)
    );
    assert_eq!(refused.details["toolName"], "ask_user");
    assert_eq!(refused.details["toolCallId"], "call_1_2");
    assert!(!refused.details.contains_key("details"), "not verbose");
    // Too large: typed 413, nothing stored.
    let huge = ToolOutcome::Result(json!({"answer": "x".repeat(SUBMIT_LIMIT_BYTES)}));
    let too_large = api_error(
        harness
            .client
            .submit(&session, "call_1_2", &huge)
            .await
            .unwrap_err(),
    );
    assert_eq!(too_large.code, ErrorCode::ValidationPayloadTooLarge);
    assert_eq!(too_large.details["cause"], "tool_result");
    assert_eq!(too_large.details["limitBytes"], SUBMIT_LIMIT_BYTES);
    assert_eq!(too_large.details["sizeBytes"], SUBMIT_LIMIT_BYTES + 13);
    assert_eq!(harness.store.answers(&address).await.unwrap().len(), 1);

    // An error answer skips the output schema; it completes the batch.
    let cancelled = ToolOutcome::Error(ToolError::new(
        "user_cancelled",
        "the user closed the dialog",
    ));
    let last = harness
        .client
        .submit(&session, "call_1_2", &cancelled)
        .await
        .unwrap();
    assert_eq!(
        last,
        answer(SubmitStatus::Accepted, Continuation::CallerResumes)
    );
    let repeat = harness
        .client
        .submit(&session, "call_1_2", &cancelled)
        .await
        .unwrap();
    assert_eq!(
        repeat,
        answer(SubmitStatus::AlreadyCompleted, Continuation::CallerResumes)
    );

    let unknown = api_error(
        harness
            .client
            .submit(&session, "call_9_9", &yes)
            .await
            .unwrap_err(),
    );
    assert_eq!(unknown.code, ErrorCode::UnknownToolCall);
    assert_eq!(unknown.details["status"], "unknown_tool_call");
    let elsewhere = api_error(
        harness
            .client
            .submit("nosuchsession", "call_1_1", &yes)
            .await
            .unwrap_err(),
    );
    assert_eq!(elsewhere.code, ErrorCode::UnknownToolCall);
    let answers = harness.store.answers(&address).await.unwrap();
    assert_eq!(answers.len(), 2);
    assert_eq!(
        answers["call_1_2"].answer,
        Answer::Outcome { outcome: cancelled }
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_are_bounded_before_they_are_read() {
    let harness = Harness::server_only(agents::registry()).await;
    let chunked = Request::post("/submit-tool-result")
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::TRANSFER_ENCODING, "chunked")
        .body(Body::from(
            r#"{"sessionId":"s","toolCallId":"c","result":1}"#,
        ))
        .unwrap();
    let (status, error) = harness.refusal(chunked).await;
    assert_eq!(
        (status, error.code),
        (StatusCode::LENGTH_REQUIRED, ErrorCode::ValidationError)
    );
    assert_eq!(error.details["cause"], "length_required");

    let cap = SUBMIT_LIMIT_BYTES * 4;
    let oversized = Request::post("/submit-tool-result")
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::CONTENT_LENGTH, cap + 1)
        .body(Body::from(vec![b' '; cap + 1]))
        .unwrap();
    let (status, error) = harness.refusal(oversized).await;
    assert_eq!(
        (status, error.code),
        (
            StatusCode::PAYLOAD_TOO_LARGE,
            ErrorCode::ValidationPayloadTooLarge
        )
    );
    assert_eq!(error.details["cause"], "request_body");
    assert_eq!(error.details["limitBytes"], cap);
    assert_eq!(error.details["sizeBytes"], cap + 1);

    let malformed = Request::post("/submit-tool-result")
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::CONTENT_LENGTH, 9)
        .body(Body::from("{\"bad\": 1"))
        .unwrap();
    let (status, error) = harness.refusal(malformed).await;
    assert_eq!(
        (status, error.code),
        (StatusCode::BAD_REQUEST, ErrorCode::ValidationError)
    );
    assert_eq!(error.error, baton_core::submit::INVALID_SUBMIT_MESSAGE);
    harness.assert_nothing_written().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_fifty_concurrent_submits_of_one_answer_exactly_one_is_accepted() {
    let harness = Harness::start(agents::registry()).await;
    let session = harness.suspended_session("asker_only").await;
    let outcome = ToolOutcome::Result(json!({"answer": "same"}));
    let submits = (0..50).map(|_| harness.client.submit(&session, "call_1_1", &outcome));
    let answers: Vec<SubmitAnswer> = futures::future::join_all(submits)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let accepted = answers
        .iter()
        .filter(|a| a.status == SubmitStatus::Accepted)
        .count();
    assert_eq!(accepted, 1, "{answers:?}");
    assert!(
        answers
            .iter()
            .all(|a| a.continuation == Continuation::CallerResumes)
    );
    let stored = harness
        .store
        .answers(&SessionAddress::root(&session))
        .await
        .unwrap();
    assert_eq!(stored.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_a_batch_answered_in_parallel_exactly_one_submit_sees_it_complete() {
    let harness = Harness::start(agents::registry()).await;
    let session = harness.suspended_session("asker_twice").await;
    let outcome = ToolOutcome::Result(json!({"answer": "yes"}));
    let (first, second) = tokio::join!(
        harness.client.submit(&session, "call_1_1", &outcome),
        harness.client.submit(&session, "call_1_2", &outcome)
    );
    let mut continuations = [first.unwrap(), second.unwrap()];
    assert!(
        continuations
            .iter()
            .all(|a| a.status == SubmitStatus::Accepted)
    );
    continuations.sort_by_key(|a| a.continuation == Continuation::CallerResumes);
    let kinds: Vec<Continuation> = continuations
        .iter()
        .map(|a| a.continuation.clone())
        .collect();
    assert_eq!(
        kinds,
        [Continuation::AwaitingBatch, Continuation::CallerResumes]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_resumes_by_itself_answers_the_last_submit_with_the_new_run() {
    let options = baton_worker::ServerOptions {
        resume_on_submit: true,
        ..baton_tests::open_options()
    };
    let harness = Harness::start_with(agents::registry(), options).await;
    let session = harness.suspended_session("asker_twice").await;
    let suspended = harness.client.status(&session).await.unwrap();
    let outcome = |n: &str| ToolOutcome::Result(json!({"answer": n}));
    let (a, b) = (outcome("a"), outcome("b"));
    let first = harness.client.submit(&session, "call_1_1", &a);
    let second = harness.client.submit(&session, "call_1_2", &b);
    let (first, second) = tokio::join!(first, second);
    let answers = [first.unwrap(), second.unwrap()];
    let new_runs: Vec<&str> = answers
        .iter()
        .filter_map(|a| match &a.continuation {
            Continuation::NewRun { run_id } => Some(run_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(new_runs.len(), 1, "{answers:?}");
    assert!(
        answers
            .iter()
            .any(|a| a.continuation == Continuation::AwaitingBatch)
    );
    let run_id = new_runs[0].to_owned();
    assert_ne!(run_id, suspended.run_id);
    assert_eq!(
        serde_json::to_value(Continuation::NewRun {
            run_id: run_id.clone()
        })
        .unwrap(),
        json!({"kind": "new_run", "runId": run_id})
    );

    // Nobody calls resume: the run the submit started finishes the turn.
    let chunks = harness
        .chunks_after_until_end(&session, suspended.last_sequence)
        .await;
    assert!(chunks.iter().all(|c| c.header.run_id == run_id));
    let state = harness.client.status(&session).await.unwrap();
    assert_eq!(
        (state.status, state.run_id.as_str()),
        (baton_core::store::Status::Completed, run_id.as_str())
    );
    assert_eq!(
        state.output.as_deref(),
        Some(r#"Both answered; the last said {"answer":"b"}"#)
    );
    // A re-send after the drain stores nothing and starts nothing.
    let again = harness
        .client
        .submit(&session, "call_1_2", &outcome("c"))
        .await
        .unwrap();
    assert_eq!(
        again,
        answer(SubmitStatus::AlreadyCompleted, Continuation::Consumed)
    );
    assert_eq!(
        harness.client.status(&session).await.unwrap().run_id,
        run_id
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn submits_past_the_session_rate_limit_are_refused_with_a_retry_time() {
    let options = baton_worker::ServerOptions {
        submits_per_minute: Some(3),
        ..baton_tests::open_options()
    };
    let harness = Harness::start_with(agents::registry(), options).await;
    let session = harness.suspended_session("asker_twice").await;
    let other = harness.suspended_session("asker_twice").await;
    let yes = ToolOutcome::Result(json!({"answer": "yes"}));
    for _ in 0..3 {
        harness
            .client
            .submit(&session, "call_1_1", &yes)
            .await
            .unwrap();
    }
    let request = Request::post("/submit-tool-result")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(
            json!({"sessionId": session, "toolCallId": "call_1_2", "result": {"answer": "no"}})
                .to_string(),
        ))
        .unwrap();
    let (status, refused) = harness.refusal(request).await;
    assert_eq!(
        (status, refused.code),
        (StatusCode::TOO_MANY_REQUESTS, ErrorCode::RateLimited)
    );
    assert!(refused.retryable);
    // 3 a minute: the next token comes within 20 s.
    let retry_after = refused.details["retryAfter"].as_u64().unwrap();
    assert!((1..=20).contains(&retry_after), "{retry_after}");
    // Nothing was stored for the refused call, and other sessions have their own bucket.
    let answers = harness
        .store
        .answers(&SessionAddress::root(&session))
        .await
        .unwrap();
    assert_eq!(answers.keys().collect::<Vec<_>>(), ["call_1_1"]);
    harness
        .client
        .submit(&other, "call_1_1", &yes)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_stored_when_the_resumed_run_cannot_start_is_accepted_and_the_session_waits() {
    let harness = Harness::start(agents::registry()).await;
    let session = harness.suspended_session("asker_only").await;
    let suspended = harness.client.status(&session).await.unwrap();
    // A server whose Temporal refuses every start (its namespace does not exist) and which
    // resumes by itself.
    let mut broken = harness.state.clone();
    std::sync::Arc::make_mut(&mut broken.options).resume_on_submit = true;
    broken.temporal = baton_worker::connect_temporal(&baton_worker::TemporalSettings {
        address: baton_tests::temporal_address(),
        namespace: "baton-no-such-namespace".to_owned(),
    })
    .await
    .unwrap();
    let body = json!({
        "kind": "client-tool-result",
        "sessionId": session,
        "toolCallId": "call_1_1",
        "result": {"answer": "Ann"},
    });
    let request =
        baton_core::submit::SubmitRequest::from_json(body.to_string().as_bytes(), false).unwrap();
    let answer = baton_worker::ops::submit_and_continue(&broken, request)
        .await
        .expect("an accepted answer is never reported as an error");
    assert_eq!(
        answer,
        self::answer(SubmitStatus::Accepted, Continuation::CallerResumes)
    );

    // The session waits on its suspended run again, with the answer stored: resumable.
    let state = harness.client.status(&session).await.unwrap();
    assert_eq!(
        (state.status, state.run_id.as_str()),
        (
            baton_core::store::Status::SuspendedClientTool,
            suspended.run_id.as_str()
        )
    );
    let outcome = harness.resume_to_end(&session).await;
    assert!(
        matches!(outcome, baton_activities::io::RunOutcome::Completed { .. }),
        "{outcome:?}"
    );
    let messages = harness.messages(&session).await;
    assert_eq!(
        messages.last(),
        Some(&baton_core::Message::assistant(
            r#"Hello {"answer":"Ann"}"#,
            vec![]
        ))
    );
}
