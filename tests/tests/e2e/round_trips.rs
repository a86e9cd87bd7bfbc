//! What a human-in-the-loop round costs Redis on the server: the round trips of a submit before
//! its script, of a lone root's resume before its claim and of a follow, counted where each
//! request leaves the server's store (`Store::recording_round_trips`: a pipeline is one, a script
//! Redis did not know is three). The operations are called as both transports call them, with an
//! operator's principal (whose authorization reads nothing).

use baton_client::Client as _;
use baton_core::{
    api::{ResumeMode, ResumeRequest},
    message::ToolOutcome,
    store::{Continuation, RoundTrip, Status},
    submit::{SubmitRequest, SubmitStatus},
};
use baton_tests::{Harness, agents};
use baton_worker::{AppState, auth::Principal, ops};
use serde_json::json;
use std::time::Duration;

/// The round trips sent before the first one that runs `script`, and that one's position.
fn before_script(sent: &[RoundTrip], script: &str) -> Vec<RoundTrip> {
    let at = sent
        .iter()
        .position(|round_trip| round_trip.runs_script(script))
        .unwrap_or_else(|| panic!("no round trip ran {script}: {sent:#?}"));
    sent[..at].to_vec()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_submit_is_its_script_after_the_callers_bucket_and_a_lone_roots_resume_reads_once() {
    let harness = Harness::start(agents::registry()).await;
    let session = harness.suspended_session("asker").await;
    // A store of its own for each operation: the index write a submit leaves to a task of its
    // own is the submit's store's, not the resume's.
    let recording = || {
        let (store, round_trips) = harness.store.recording_round_trips();
        let state = AppState {
            store,
            ..harness.state.clone()
        };
        (state, round_trips)
    };
    let (state, round_trips) = recording();
    let operator = Principal::Operator {
        name: "operator".into(),
    };

    // The submit: the caller's submit bucket (another slot, so another script, first: past it
    // nothing is written), then `submit_answer.lua`, which reads the tree's open calls itself.
    let yes = ToolOutcome::Result(json!({"answer": "yes"}));
    let body = serde_json::to_vec(&SubmitRequest::tool_result(&session, "call_1_2", yes)).unwrap();
    let submitted = ops::checked_submit(&state, &operator, &body).await.unwrap();
    assert_eq!(submitted.status, SubmitStatus::Accepted);
    assert_eq!(submitted.continuation, Continuation::CallerResumes);
    let sent = round_trips.sent();
    let before_submit = before_script(&sent, "submit_answer");
    eprintln!("a submit's round trips: {sent:#?}");
    let names: Vec<&[String]> = sent[..=before_submit.len()]
        .iter()
        .map(|round_trip| &round_trip.commands[..])
        .collect();
    assert_eq!(
        names,
        [
            &["take_subject_token".to_owned()][..],
            &["SMEMBERS".to_owned(), "submit_answer".to_owned()][..]
        ]
    );

    // The resume of the lone root, every call answered: one pipelined read of the tree, then
    // the search index's mark and the claim, in one round trip.
    let (state, round_trips) = recording();
    let request = ResumeRequest {
        session_id: session.clone(),
        mode: ResumeMode::Continue,
        message: None,
        abandon_pending: false,
        checkpoint_id: None,
    };
    let before = harness.client.status(&session).await.unwrap().last_sequence;
    let resumed = ops::resume(&state, &operator, request).await.unwrap();
    assert_eq!(resumed.status, Status::Active);
    let sent = round_trips.sent();
    let before_claim = before_script(&sent, "claim_resume");
    eprintln!("a lone root's resume's round trips before its claim: {before_claim:#?}");
    assert_eq!(
        sent[before_claim.len()].commands,
        ["index_mark", "claim_resume"],
        "{sent:#?}"
    );
    assert!(
        before_claim.len() <= 4,
        "a lone root's resume makes {} round trips before its claim: {before_claim:#?}",
        before_claim.len()
    );
    let chunks = harness.chunks_after_until_end(&session, before).await;
    assert!(chunks.iter().all(|c| c.header.run_id == resumed.run_id));
    assert_eq!(chunks.last().map(|c| c.kind.name()), Some("end"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follow_reads_the_session_once_and_its_stream_once_before_its_first_chunks() {
    let harness = Harness::start(agents::registry()).await;
    let session = harness.suspended_session("asker").await;
    let (store, round_trips) = harness.store.recording_round_trips();
    let state = AppState {
        store,
        ..harness.state.clone()
    };
    let operator = Principal::Operator {
        name: "operator".into(),
    };
    let credential = baton_worker::stream::Credential::of(&Default::default());
    let mut follow = ops::follow(&state, &operator, &credential, &session, 0)
        .await
        .unwrap();
    let chunks = follow.next_chunks().await.unwrap().unwrap();
    assert_eq!(chunks.first().map(|c| c.sequence), Some(1));
    assert_eq!(
        chunks.last().map(|c| c.kind.name()),
        Some("suspended"),
        "the whole stream so far, in one read"
    );
    // Then it waits on the feed, reading nothing more (the session waits for its answer).
    let waiting = tokio::time::timeout(Duration::from_millis(300), follow.next_chunks()).await;
    assert!(waiting.is_err(), "nothing more was written: {waiting:?}");
    let sent = round_trips.sent();
    eprintln!("a follow's round trips: {sent:#?}");
    let count = |name: &str| {
        sent.iter()
            .filter(|round_trip| round_trip.commands.iter().any(|c| c == name))
            .count()
    };
    // The session read by the operation (the feed starts from it), one catch-up read of the
    // stream (shorter than its batch: the rest comes from the feed), and at most the chunk
    // headers this server had not read yet.
    assert_eq!(count("HGETALL"), 1, "{sent:#?}");
    assert_eq!(count("XRANGE"), 1, "{sent:#?}");
    assert!(sent.len() <= 3, "{sent:#?}");
}
