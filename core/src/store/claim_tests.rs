//! Store tests of the one claim of a session for a new run (`Store::claim_new_run`) against a
//! real Redis: the run it claims (ids minted or derived), and each refusal, which writes nothing.

use super::footprint_tests::{call, pending};
use super::tests::{at, new_session, store, turn};
use super::*;
use crate::{ids, message::Message};

/// Suspends run r1 of `address` (agent `demo`, stream `st1`) at step 1 on the calls `lapsed`
/// (deadlines past) and `open` (deadlines far ahead).
async fn suspend(store: &Store, address: &SessionAddress, lapsed: &[&str], open: &[&str]) {
    let step = at(address, "r1", 1);
    let calls = lapsed
        .iter()
        .chain(open)
        .map(|id| call(id, "ask"))
        .collect();
    store
        .stage_turn(step, &mut turn("r1", 1, "asking", calls))
        .await
        .unwrap();
    let pending: Vec<PendingCall> = lapsed
        .iter()
        .map(|id| PendingCall {
            deadline_at: now_ms() - 1,
            ..pending(id, 1)
        })
        .chain(open.iter().map(|id| pending(id, 1)))
        .collect();
    store.commit_suspended_step(step, &pending).await.unwrap();
}

/// A claim of `address` by agent `demo` on stream `st1`.
pub(super) async fn claim_by_demo(
    store: &Store,
    address: &SessionAddress,
    run_id: NewRunId,
    entry: &ResumeEntry,
) -> Claim {
    let by_demo = RunClaim {
        agent_type: "demo",
        stream_id: "st1",
        run_id,
    };
    store.claim_new_run(address, by_demo, entry).await.unwrap()
}

/// Asserts that `claim` claimed a run continuing after `step_count` steps.
fn assert_claimed_after(claim: &Claim, step_count: u32) {
    assert!(
        matches!(claim, Claim::Claimed(run) if run.step_count == step_count),
        "{claim:?}"
    );
}

/// A `continue` claim that expects `run_id` to be the session's run.
fn expecting(run_id: &str) -> ResumeEntry {
    ResumeEntry {
        expected_run_id: Some(run_id.to_owned()),
        ..ResumeEntry::default()
    }
}

/// The session's state and its stream's length: what a refused claim must leave as it was.
async fn footprint(store: &Store, address: &SessionAddress) -> (SessionState, usize) {
    let state = store.session(address).await.unwrap().unwrap();
    let chunks = store.chunks_after(address, 0, 1000).await.unwrap().len();
    (state, chunks)
}

#[tokio::test]
async fn a_claim_mints_the_run_and_its_workflow_and_makes_it_the_sessions() {
    let (store, address) = (store().await, SessionAddress::root("c1"));
    new_session(&store, &address).await;
    suspend(&store, &address, &["a1"], &[]).await;
    let (_, chunks_before) = footprint(&store, &address).await;

    let claim = claim_by_demo(&store, &address, NewRunId::Minted, &expecting("r1")).await;
    let Claim::Claimed(claimed) = claim else {
        panic!("{claim:?}");
    };
    assert_eq!(claimed.step_count, 1);
    assert_ne!(claimed.run_id, "r1");
    assert_eq!(
        claimed.workflow_id,
        ids::resume_workflow_id("demo", "c1", &claimed.run_id)
    );
    let (state, chunks) = footprint(&store, &address).await;
    assert_eq!(state.status, Status::Active);
    assert_eq!(state.run_id, claimed.run_id);
    assert_eq!(
        state.workflow_id.as_deref(),
        Some(claimed.workflow_id.as_str())
    );
    assert_eq!(state.suspension.map(|s| s.run_id).as_deref(), Some("r1"));
    // The claim wrote the new run's start, and only that.
    assert_eq!(chunks, chunks_before + 1);
    let start = store.chunks_after(&address, 0, 1000).await.unwrap();
    let start = start.last().unwrap();
    assert_eq!(start.kind.name(), "run_start");
    assert_eq!(start.header.run_id, claimed.run_id);

    // Two claims mint two runs: a second claim of the same session is refused, the first's run
    // executing.
    let again = claim_by_demo(&store, &address, NewRunId::Minted, &ResumeEntry::default()).await;
    assert_eq!(again, Claim::AlreadyRunning);
}

#[tokio::test]
async fn a_claim_of_a_running_or_missing_session_is_refused_and_writes_nothing() {
    let (store, address) = (store().await, SessionAddress::root("c2"));
    new_session(&store, &address).await;
    let before = footprint(&store, &address).await;
    for entry in [ResumeEntry::default(), expecting("r1")] {
        let claim = claim_by_demo(&store, &address, NewRunId::Minted, &entry).await;
        assert_eq!(claim, Claim::AlreadyRunning);
    }
    // A message does not take a running session either.
    let with_message = ResumeEntry {
        message: Some(Message::user("more")),
        abandon_pending: true,
        expected_run_id: None,
    };
    let claim = claim_by_demo(&store, &address, NewRunId::Minted, &with_message).await;
    assert_eq!(claim, Claim::AlreadyRunning);
    assert_eq!(footprint(&store, &address).await, before);

    let missing = SessionAddress::root("nobody");
    let claim = claim_by_demo(&store, &missing, NewRunId::Minted, &ResumeEntry::default()).await;
    assert_eq!(claim, Claim::SessionNotFound);
    assert_eq!(store.session(&missing).await.unwrap(), None);
}

#[tokio::test]
async fn a_claim_of_a_partial_batch_names_the_awaited_calls_unless_it_abandons_them() {
    let (store, address) = (store().await, SessionAddress::root("c3"));
    new_session(&store, &address).await;
    suspend(&store, &address, &["a1"], &["o1", "o2"]).await;
    let before = footprint(&store, &address).await;

    let claim = claim_by_demo(&store, &address, NewRunId::Minted, &expecting("r1")).await;
    let Claim::Awaiting { mut tool_call_ids } = claim else {
        panic!("{claim:?}");
    };
    tool_call_ids.sort();
    assert_eq!(tool_call_ids, ["o1", "o2"]);
    // A message alone does not abandon them.
    let with_message = ResumeEntry {
        message: Some(Message::user("never mind")),
        ..ResumeEntry::default()
    };
    let claim = claim_by_demo(&store, &address, NewRunId::Minted, &with_message).await;
    assert!(matches!(claim, Claim::Awaiting { .. }), "{claim:?}");
    assert_eq!(footprint(&store, &address).await, before);

    let abandoning = ResumeEntry {
        abandon_pending: true,
        ..with_message
    };
    let claim = claim_by_demo(&store, &address, NewRunId::Minted, &abandoning).await;
    assert_claimed_after(&claim, 1);
}

#[tokio::test]
async fn a_continue_claim_of_an_ended_session_is_not_resumable_and_a_new_turn_is() {
    let (store, address) = (store().await, SessionAddress::root("c4"));
    new_session(&store, &address).await;
    let step = at(&address, "r1", 1);
    store
        .stage_turn(step, &mut turn("r1", 1, "done", vec![]))
        .await
        .unwrap();
    let completion = Completion {
        output: "done".to_owned(),
        usage: Default::default(),
    };
    store.commit_step(step, Some(completion)).await.unwrap();
    let before = footprint(&store, &address).await;

    let claim = claim_by_demo(&store, &address, NewRunId::Minted, &ResumeEntry::default()).await;
    assert_eq!(
        claim,
        Claim::NotResumable {
            status: "completed".into()
        }
    );
    assert_eq!(footprint(&store, &address).await, before);

    let next_turn = ResumeEntry {
        message: Some(Message::user("and then?")),
        ..ResumeEntry::default()
    };
    let claim = claim_by_demo(&store, &address, NewRunId::Minted, &next_turn).await;
    assert_claimed_after(&claim, 1);
}

#[tokio::test]
async fn a_claim_expecting_another_run_is_refused_as_superseded() {
    let (store, address) = (store().await, SessionAddress::root("c5"));
    new_session(&store, &address).await;
    suspend(&store, &address, &["a1"], &[]).await;
    let before = footprint(&store, &address).await;
    let superseded = Claim::NotResumable {
        status: "superseded".into(),
    };
    // A deadline of an earlier run, or a derived run of one: neither takes the session.
    for run_id in [NewRunId::Minted, NewRunId::Derived("p1".into())] {
        let claim = claim_by_demo(&store, &address, run_id, &expecting("r0")).await;
        assert_eq!(claim, superseded);
    }
    assert_eq!(footprint(&store, &address).await, before);
}

#[tokio::test]
async fn a_derived_run_claimed_twice_is_one_run() {
    let (store, address) = (store().await, SessionAddress::root("c6"));
    new_session(&store, &address).await;
    suspend(&store, &address, &["a1"], &[]).await;

    let first = claim_by_demo(
        &store,
        &address,
        NewRunId::Derived("p1".into()),
        &expecting("r1"),
    )
    .await;
    let claimed = ClaimedRun {
        run_id: "p1".into(),
        workflow_id: ids::resume_workflow_id("demo", "c6", "p1"),
        step_count: 1,
    };
    assert_eq!(first, Claim::Claimed(claimed.clone()));
    let after_first = footprint(&store, &address).await;

    // A retried report expects the run it claimed: the same run again, nothing written.
    let retried = claim_by_demo(
        &store,
        &address,
        NewRunId::Derived("p1".into()),
        &expecting("p1"),
    )
    .await;
    assert_eq!(retried, Claim::Claimed(claimed));
    assert_eq!(footprint(&store, &address).await, after_first);

    // A claim that expected the suspended run lost to the first: superseded, not claimed.
    let lost = claim_by_demo(
        &store,
        &address,
        NewRunId::Derived("p1".into()),
        &expecting("r1"),
    )
    .await;
    assert_eq!(
        lost,
        Claim::NotResumable {
            status: "superseded".into()
        }
    );
    // Another run (derived or minted) finds the session running.
    for run_id in [NewRunId::Derived("p2".into()), NewRunId::Minted] {
        let claim = claim_by_demo(&store, &address, run_id, &expecting("p1")).await;
        assert_eq!(claim, Claim::AlreadyRunning);
    }
    assert_eq!(footprint(&store, &address).await, after_first);
}

#[tokio::test]
async fn the_claimed_runs_chunks_are_read_without_reading_their_header_back() {
    let base = store().await;
    let address = SessionAddress::root("c9");
    new_session(&base, &address).await;
    suspend(&base, &address, &["l1"], &[]).await;
    let suspended_at = base.session(&address).await.unwrap().unwrap().last_sequence;
    let (store, round_trips) = base.recording_round_trips();
    let claim = claim_by_demo(&store, &address, NewRunId::Minted, &expecting("r1")).await;
    assert_claimed_after(&claim, 1);

    // The new run's chunks, as a follower of the session reads them after the suspension.
    let before = round_trips.sent().len();
    let read = store
        .chunks_after(&address, suspended_at, 100)
        .await
        .unwrap();
    let sent = round_trips.sent();
    assert_eq!(sent.len() - before, 1, "{sent:#?}");
    assert_eq!(sent[before].commands, ["XRANGE"], "{sent:#?}");
    // What another server, which reads every header back, makes of the same entries.
    let elsewhere = Store::connect(
        &std::env::var("BATON_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into()),
        base.prefix.to_string(),
    )
    .await
    .unwrap();
    let again = elsewhere
        .chunks_after(&address, suspended_at, 100)
        .await
        .unwrap();
    assert_eq!(read, again);
    assert_eq!(
        read.iter().map(|c| c.kind.name()).collect::<Vec<_>>(),
        ["run_start"]
    );
}
