//! The inbox: `GET /pending` (and gRPC `ListPending`) lists every call waiting on a person
//! across sessions and trees, with its tool, input, kind, approval id, deadline, age and owning
//! child; `/status` details the same per call; an answered call leaves the inbox.

use super::start_for;
use baton_client::Client as _;
use baton_core::{
    message::ToolOutcome,
    search::{PendingDetail, PendingPage, PersonCallKind, SessionSearch},
    session::ApprovalDecision,
};
use baton_tests::{Harness, agents};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inbox_lists_every_call_waiting_on_a_person_and_an_answer_takes_it_out() {
    let harness = Harness::start(agents::registry()).await;
    let asker = harness
        .client
        .start_request(start_for("asker_only", "u-1", &[], "pro"))
        .await
        .unwrap()
        .session_id;
    harness.chunks_until_suspended(&asker).await;
    let tree = harness
        .client
        .start_request(start_for("fan_out", "u-2", &[], "pro"))
        .await
        .unwrap()
        .session_id;
    super::root_suspended(&harness, &tree).await;

    let inbox = harness
        .client
        .pending(&SessionSearch::default())
        .await
        .unwrap();
    let ageless = |page: &PendingPage| -> Vec<PendingDetail> {
        let mut calls = page.calls.clone();
        calls.iter_mut().for_each(|call| call.age_ms = None);
        calls
    };
    let by_grpc = harness
        .grpc_client
        .pending(&SessionSearch::default())
        .await
        .unwrap();
    assert_eq!(ageless(&inbox), ageless(&by_grpc));
    assert_eq!(inbox.calls.len(), 3, "{inbox:?}");
    let own = inbox
        .calls
        .iter()
        .find(|call| call.session_id == asker)
        .unwrap();
    assert_eq!(
        (
            own.owner_session_id.as_str(),
            own.tool_name.as_str(),
            own.kind
        ),
        (asker.as_str(), "ask_user", PersonCallKind::ClientTool)
    );
    assert_eq!(own.input, json!({"question": "Name?"}));
    assert_eq!(
        (own.agent_type.as_str(), own.user_id.as_deref()),
        ("asker_only", Some("u-1"))
    );
    assert!(own.deadline_at > own.awaited_since && own.awaited_since > 0);
    assert!(own.age_ms.is_some());
    let in_tree: Vec<_> = inbox
        .calls
        .iter()
        .filter(|call| call.session_id == tree)
        .collect();
    assert_eq!(in_tree.len(), 2);
    assert!(
        in_tree
            .iter()
            .all(|call| call.owner_session_id.starts_with(&format!("{tree}.")))
    );
    let approval = in_tree
        .iter()
        .find(|call| call.kind == PersonCallKind::Approval)
        .unwrap();
    assert_eq!(
        (approval.tool_name.as_str(), approval.agent_type.as_str()),
        ("transfer", "child_approver")
    );
    let approval_id = approval.approval_id.clone().unwrap();
    let question = in_tree
        .iter()
        .find(|call| call.kind == PersonCallKind::ClientTool)
        .unwrap();

    // The same filters as /sessions.
    let for_u1 = SessionSearch {
        user_id: Some("u-1".into()),
        ..SessionSearch::default()
    };
    let page = harness.client.pending(&for_u1).await.unwrap();
    assert_eq!(page.calls.len(), 1);
    assert_eq!(page.calls[0].session_id, asker);

    // /status details the calls of the whole tree on the root, a child's own on the child.
    let root_status = harness.client.status(&tree).await.unwrap();
    let mut on_root: Vec<_> = root_status
        .pending
        .iter()
        .map(|c| &c.tool_call_id)
        .collect();
    let mut listed: Vec<_> = in_tree.iter().map(|c| &c.tool_call_id).collect();
    on_root.sort();
    listed.sort();
    assert_eq!(on_root, listed);
    // The status is the same on every read of an unchanged session: no age in it.
    assert!(root_status.pending.iter().all(|call| call.age_ms.is_none()));
    let child_status = harness
        .client
        .status(&approval.owner_session_id)
        .await
        .unwrap();
    assert_eq!(child_status.pending.len(), 1);
    assert_eq!(
        child_status.pending[0].approval_id.as_deref(),
        Some(&*approval_id)
    );
    let grpc_status = harness.grpc_client.status(&tree).await.unwrap();
    assert_eq!(grpc_status.pending.len(), 2);

    // Answered by call id from the list, through the root: out of the inbox.
    harness
        .client
        .submit_approval(
            &tree,
            &approval.tool_call_id,
            &approval_id,
            &ApprovalDecision {
                approved: false,
                reason: Some("no".into()),
                arguments: None,
            },
        )
        .await
        .unwrap();
    harness.index_settled().await;
    let left = harness
        .client
        .pending(&SessionSearch::default())
        .await
        .unwrap();
    assert_eq!(left.calls.len(), 2);
    assert!(
        left.calls
            .iter()
            .all(|call| call.tool_call_id != approval.tool_call_id)
    );
    harness
        .client
        .submit(
            &tree,
            &question.tool_call_id,
            &ToolOutcome::Result(json!({"answer": "blue"})),
        )
        .await
        .unwrap();
    harness.index_settled().await;
    let left = harness
        .client
        .pending(&SessionSearch::default())
        .await
        .unwrap();
    assert_eq!(left.calls.len(), 1);
    assert_eq!(left.calls[0].session_id, asker);
    let waiting = SessionSearch {
        awaiting_person: true,
        ..SessionSearch::default()
    };
    let sessions = harness.client.sessions(&waiting).await.unwrap();
    assert_eq!(sessions.sessions.len(), 1);
}
