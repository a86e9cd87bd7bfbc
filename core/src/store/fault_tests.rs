//! Store tests of the fault repairs (issue 9) against a real Redis: at-most-once start markers,
//! stops and retention, snapshots, zombie sessions.

use super::keys::staged_field;
use super::tests::{at, new_session, store, tool_result, turn};
use super::*;
use crate::message::{ToolCall, ToolOutcome};
use redis::AsyncCommands;
use serde_json::json;

fn call(id: &str, name: &str) -> ToolCall {
    ToolCall {
        id: id.to_owned(),
        name: name.to_owned(),
        arguments: json!({}),
        provider_id: None,
    }
}

async fn staged_fields(store: &Store, address: &SessionAddress) -> Vec<String> {
    store
        .conn()
        .hkeys(store.key(address, Key::Staged))
        .await
        .unwrap()
}

#[tokio::test]
async fn a_start_marker_is_written_once_and_goes_with_the_commit() {
    let (store, address) = (store().await, SessionAddress::root("s1"));
    new_session(&store, &address).await;
    let call = call("c1", "pay");
    let step = at(&address, "r1", 1);
    store
        .stage_turn(step, &mut turn("r1", 1, "", vec![call.clone()]))
        .await
        .unwrap();

    assert_eq!(
        store.mark_tool_started(step, "c1").await.unwrap(),
        Written::New
    );
    // A second attempt finds the marker: the tool may have run.
    assert_eq!(
        store.mark_tool_started(step, "c1").await.unwrap(),
        Written::AlreadyDone
    );
    let marker = staged_field::started("r1", 1, "c1");
    assert!(staged_fields(&store, &address).await.contains(&marker));
    // A marker of another run's step is refused by the run guard.
    assert!(matches!(
        store.mark_tool_started(at(&address, "r0", 1), "c1").await,
        Err(Error::RunRefused { .. })
    ));

    store
        .stage_tool_result(step, &tool_result(&call, ToolOutcome::Result(json!(1))))
        .await
        .unwrap();
    store.commit_step(step, None).await.unwrap();
    assert!(staged_fields(&store, &address).await.is_empty());
    // A stale attempt after the commit writes nothing.
    assert_eq!(
        store.mark_tool_started(step, "c1").await.unwrap(),
        Written::AlreadyDone
    );
    assert!(staged_fields(&store, &address).await.is_empty());
}

/// Suspends run r1 of `address` at step 1 on one call `c1` of `kind` (`pay`, approval id
/// `r1::c1` when it awaits approval).
async fn suspend_on_one_call(store: &Store, address: &SessionAddress, kind: PendingKind) {
    let step = at(address, "r1", 1);
    store
        .stage_turn(step, &mut turn("r1", 1, "", vec![call("c1", "pay")]))
        .await
        .unwrap();
    let pending = PendingCall {
        tool_call_id: "c1".into(),
        tool_name: "pay".into(),
        input: json!({}),
        kind,
        step: 1,
        deadline_at: now_ms() + 60_000,
        completed_retention_ms: 60_000,
        approval_id: (kind == PendingKind::Approval).then(|| approval_id("r1", "c1")),
        awaited_since: now_ms(),
        asked: None,
    };
    store
        .commit_suspended_step(step, std::slice::from_ref(&pending))
        .await
        .unwrap();
}

#[tokio::test]
async fn the_submit_script_refuses_an_approval_id_that_is_not_the_pending_calls() {
    let (store, address) = (store().await, SessionAddress::root("s1"));
    new_session(&store, &address).await;
    suspend_on_one_call(&store, &address, PendingKind::Approval).await;
    let approve = StoredAnswer {
        answer: Answer::Approval(ApprovalDecision {
            approved: true,
            reason: None,
            arguments: None,
        }),
        submitted_at: now_ms(),
    };

    // The id of the same call under another run (as before a rewind restored it) is stale.
    let attempt = |approval_id| SubmitAttempt {
        root_session_id: "s1",
        tool_call_id: "c1",
        approval_id: Some(approval_id),
        answer: &approve,
        submits_per_minute: None,
        refused_by_schema: &[],
    };
    let stale = store.submit_answer(&attempt("r0::c1")).await.unwrap();
    assert_eq!(stale.outcome, SubmitOutcome::UnknownApproval);
    assert!(store.answers(&address).await.unwrap().is_empty());

    let current = store.submit_answer(&attempt("r1::c1")).await.unwrap();
    assert_eq!(
        current.outcome,
        SubmitOutcome::Accepted(Continuation::CallerResumes)
    );
    assert_eq!(store.answers(&address).await.unwrap().len(), 1);
}

/// The keys an ended session keeps for its retention.
const RETAINED: [Key; 5] = [
    Key::State,
    Key::Stream,
    Key::Messages,
    Key::Checkpoints,
    Key::Usage,
];

/// The milliseconds to live of `key` of `address` (-1: kept for ever).
async fn ttl(store: &Store, address: &SessionAddress, key: Key) -> i64 {
    store.conn().pttl(store.key(address, key)).await.unwrap()
}

#[tokio::test]
async fn an_ended_session_expires_after_its_retention_and_a_new_turn_keeps_it() {
    let store = store()
        .await
        .with_session_retention(std::time::Duration::from_secs(60));
    let address = SessionAddress::root("s1");
    new_session(&store, &address).await;
    assert_eq!(ttl(&store, &address, Key::State).await, -1);
    store
        .stage_turn(at(&address, "r1", 1), &mut turn("r1", 1, "done", vec![]))
        .await
        .unwrap();
    let completion = Completion {
        output: "done".to_owned(),
        usage: Default::default(),
    };
    store
        .commit_step(at(&address, "r1", 1), Some(completion))
        .await
        .unwrap();
    for key in RETAINED {
        let left = ttl(&store, &address, key).await;
        assert!(left > 0 && left <= 60_000, "{key:?}: {left}");
    }

    // The next turn keeps the session again.
    let entry = ResumeEntry {
        message: Some(crate::Message::user("more")),
        abandon_pending: false,
        expected_run_id: None,
    };
    let new_run = RunClaim {
        agent_type: "demo",
        stream_id: "st1",
        run_id: NewRunId::Minted,
    };
    let claimed = store
        .claim_new_run(&address, new_run, &entry)
        .await
        .unwrap();
    assert!(matches!(claimed, Claim::Claimed(_)), "{claimed:?}");
    for key in RETAINED {
        assert_eq!(ttl(&store, &address, key).await, -1, "{key:?}");
    }

    // A stop ends it again.
    store.stop_run(&address, StopKind::Interrupt).await.unwrap();
    let left = ttl(&store, &address, Key::Messages).await;
    assert!(left > 0 && left <= 60_000, "{left}");
}

/// A start whose command timed out must not be applied when Redis answers again: its caller was
/// told 503 and started no workflow, so the session would stay active with nothing to run it.
#[tokio::test]
async fn a_start_that_reaches_redis_after_its_deadline_writes_nothing() {
    let store = store().await;
    let address = SessionAddress::root("late-start");
    let past_deadline_ms = 1;
    let reply: replies::CreateReply = scripts::CREATE_SESSION
        .on(&store, &address)
        .arg("agent")
        .arg("run-1")
        .arg("stream-1")
        .arg(now_ms())
        .arg("{}")
        .arg("agent__agent__late-start")
        .arg(0)
        .arg(past_deadline_ms)
        .arg("")
        .arg("")
        .run(&store)
        .await
        .unwrap();
    assert!(matches!(reply, replies::CreateReply::Expired));
    assert!(store.session(&address).await.unwrap().is_none());
    let stream_length: u64 = store
        .conn()
        .xlen(store.key(&address, Key::Stream))
        .await
        .unwrap();
    assert_eq!(stream_length, 0);
}
