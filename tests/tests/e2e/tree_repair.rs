//! A tree whose parent awaits a child that has ended without reporting: a child the zombie
//! sweep failed (its workflow gone), a child claimed whose workflow the sweep started, and a
//! rewind that gave the parent back a sub-agent call
//! whose child had already ended. The child's end answers the parent, which goes on.

use crate::subagents::assert_completed;
use baton_client::Client as _;
use baton_core::{
    ErrorCode, Message,
    message::ToolOutcome,
    store::{Claim, NewRunId, ResumeEntry, RunClaim, SessionAddress, Status},
    subagent,
};
use baton_tests::{Harness, agents};
use serde_json::json;

/// Starts `middle` as a root: its child `child_asker` asks (`ca_1_1`) and the tree suspends.
/// Returns the root's and the child's addresses and the root's last sequence.
async fn suspended_tree(harness: &Harness) -> (SessionAddress, SessionAddress, u64) {
    let started = harness.client.start("middle", "go").await.unwrap();
    let root = SessionAddress::root(&started.session_id);
    let child = subagent::child_address(&root, "m_1_1");
    let chunks = harness.chunks_until_suspended(&root.session_id).await;
    (root, child, chunks.last().unwrap().sequence)
}

/// Answers the child's question through the root.
async fn answer_red(harness: &Harness, root: &SessionAddress) {
    harness
        .client
        .submit(
            &root.session_id,
            "ca_1_1",
            &ToolOutcome::Result(json!({"answer": "red"})),
        )
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_the_sweep_fails_answers_its_parent_which_goes_on() {
    let harness = Harness::start(agents::registry()).await;
    let (root, child, before) = suspended_tree(&harness).await;
    answer_red(&harness, &root).await;
    // The child is left `active` on its first run, whose workflow has ended (the state a
    // workflow terminated by hand leaves): nothing runs it any more.
    let mut redis = redis::Client::open(baton_tests::redis_url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let state_key = format!(
        "{}:{{{}}}:{}:state",
        harness.prefix, root.session_id, child.session_id
    );
    let () = redis::AsyncCommands::hset(&mut redis, &state_key, "status", "active")
        .await
        .unwrap();
    harness.store.reindex(&child).await.unwrap();

    assert_eq!(
        crate::sweep::sweep_now(&harness).await,
        vec![child.session_id]
    );

    // The parent (the root) gets the child's run_lost as its sub-agent call's error and ends.
    let rest = harness
        .chunks_after_until_end(&root.session_id, before)
        .await;
    assert_completed(&rest, "middle got error run_lost");
    let result = harness
        .messages(&root.session_id)
        .await
        .into_iter()
        .find_map(|m| match m {
            Message::Tool(result) if result.tool_call_id == "m_1_1" => Some(result.outcome),
            _ => None,
        });
    let Some(ToolOutcome::Error(error)) = result else {
        panic!("no error result for m_1_1: {result:?}");
    };
    assert_eq!(error.code, ErrorCode::RunLost.as_str());
}

/// A child claimed for its resumed run whose workflow never started (the claim written, the
/// start lost): the sweep starts it from the claim, the child drains its answer and ends, and
/// its end answers the parent, which goes on with the child's real answer, not a failure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_claimed_but_never_started_is_started_by_the_sweep_and_its_parent_goes_on() {
    let harness = Harness::start(agents::registry()).await;
    let (root, child, before) = suspended_tree(&harness).await;
    answer_red(&harness, &root).await;
    let state = harness.client.status(&child.session_id).await.unwrap();
    let claim = harness
        .store
        .claim_new_run(
            &child,
            RunClaim {
                agent_type: "child_asker",
                stream_id: &state.stream_id,
                run_id: NewRunId::Derived("lost-run".into()),
            },
            &ResumeEntry {
                expected_run_id: Some(state.run_id.clone()),
                ..ResumeEntry::default()
            },
        )
        .await
        .unwrap();
    assert!(matches!(claim, Claim::Claimed(_)), "{claim:?}");

    assert!(crate::sweep::sweep_now(&harness).await.is_empty());
    let rest = harness
        .chunks_after_until_end(&root.session_id, before)
        .await;
    assert_completed(&rest, r#"middle got child heard {"answer":"red"}"#);
    let done = harness.client.status(&child.session_id).await.unwrap();
    assert_eq!(done.status, Status::Completed);
    assert_eq!(done.run_id, "lost-run");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewind_to_a_step_awaiting_an_ended_child_takes_the_childs_end_and_goes_on() {
    let harness = Harness::start(agents::registry()).await;
    let (root, child, before) = suspended_tree(&harness).await;
    let suspended_at = harness
        .store
        .checkpoints(&root)
        .await
        .unwrap()
        .into_iter()
        .find(|c| !c.pending.is_empty())
        .expect("the suspension's checkpoint")
        .id;
    answer_red(&harness, &root).await;
    // The resume runs the child first; its end resumes the root.
    harness.client.resume(&root.session_id).await.unwrap();
    harness
        .chunks_after_until_end(&root.session_id, before)
        .await;
    let done = harness.client.status(&root.session_id).await.unwrap();
    assert_eq!(done.status, Status::Completed);
    let expected = r#"middle got child heard {"answer":"red"}"#;
    assert_eq!(done.output.as_deref(), Some(expected));

    // The rewind gives m_1_1 back; its child has completed, and no workflow of it will report
    // again: the rewind takes the child's end as the answer, and the root runs on.
    let rewound = harness
        .client
        .rewind(&root.session_id, suspended_at, None, false)
        .await
        .unwrap();
    assert_eq!(rewound.status, Status::Active);
    harness
        .run_result(&rewound.workflow_id.unwrap())
        .await
        .unwrap();
    let again = harness.client.status(&root.session_id).await.unwrap();
    assert_eq!(again.status, Status::Completed);
    assert_eq!(again.output.as_deref(), Some(expected));
    let child_state = harness.client.status(&child.session_id).await.unwrap();
    assert_eq!(child_state.status, Status::Completed);
}
