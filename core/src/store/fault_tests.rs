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
        .stage_turn(step, &turn("r1", 1, "", vec![call.clone()]))
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
        .stage_turn(step, &turn("r1", 1, "", vec![call("c1", "pay")]))
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
    let stale = store
        .submit_answer(&address, "c1", Some("r0::c1"), &approve)
        .await
        .unwrap();
    assert_eq!(stale, SubmitOutcome::UnknownApproval);
    assert!(store.answers(&address).await.unwrap().is_empty());

    let current = store
        .submit_answer(&address, "c1", Some("r1::c1"), &approve)
        .await
        .unwrap();
    assert_eq!(
        current,
        SubmitOutcome::Accepted(Continuation::CallerResumes)
    );
    assert_eq!(store.answers(&address).await.unwrap().len(), 1);
}
