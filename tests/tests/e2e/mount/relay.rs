//! The mount's relay of a person's answer (Baton's extension of the protocol): a paused
//! session's `status` lists the calls it waits on (`pendingCalls`, with the producer's ids),
//! `submit` takes the API's answer to one of them, and a `resume` then runs the session on.
//! What the session does not await, or a session of another agent type, is refused in the
//! mount's envelope with the API's code, and nothing is written.

use super::{MountClient, chosen_id};
use baton_client::Client as _;
use baton_tests::{Harness, agents};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// Waits for `session` of `agent` to pause; its `pendingCalls`, each checked for its tool.
async fn paused_calls(mount: &MountClient, agent: &str, session: &str, tool: &str) -> Vec<Value> {
    let frames = mount.frames(agent, session, 0).await;
    assert_eq!(frames.last().unwrap().data["status"], "paused");
    let (status, answer) = mount.get(agent, "status", session).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["status"], "paused");
    let calls = answer["pendingCalls"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(calls.len(), 1, "{answer}");
    assert_eq!(calls[0]["toolName"], tool);
    assert_eq!(calls[0]["sessionId"], session);
    calls
}

/// Resumes `session` through the mount and reads its stream to the end.
async fn resumed_end(mount: &MountClient, agent: &str, session: &str) -> Value {
    let body = json!({"sessionId": session, "mode": "continue"});
    let (status, resumed) = mount.post(agent, "resume", body).await;
    assert_eq!(status, StatusCode::OK, "{resumed}");
    let frames = mount.frames(agent, session, 0).await;
    frames.last().unwrap().data.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_answer_relayed_to_the_mount_is_stored_and_the_resume_runs_on() {
    let harness = Harness::start(agents::registry()).await;
    let mount = MountClient::new(&harness, "/agents", None);
    let session = chosen_id("relay");
    mount.start("asker_only", &session, "go").await;
    let calls = paused_calls(&mount, "asker_only", &session, "ask_user").await;
    assert_eq!(calls[0]["kind"], "client_tool");
    assert_eq!(calls[0]["input"], json!({"question": "Name?"}));
    let call_id = calls[0]["toolCallId"].as_str().unwrap().to_owned();
    let before = harness.client.status(&session).await.unwrap();

    // Refusals: the API's codes in the mount's envelope, nothing written.
    let refusals = [
        (
            "asker_only",
            json!({"sessionId": session, "toolCallId": "bt_00000000000000000000", "result": {"answer": "x"}}),
        ),
        (
            "asker_only",
            json!({"sessionId": session, "toolCallId": call_id, "result": {"wrong": 1}}),
        ),
        (
            "asker_only",
            json!({"sessionId": session, "toolCallId": call_id}),
        ),
        (
            "two_steps",
            json!({"sessionId": session, "toolCallId": call_id, "result": {"answer": "x"}}),
        ),
    ];
    let mut codes = Vec::new();
    for (agent, body) in refusals {
        let (status, refused) = mount.post(agent, "submit", body).await;
        assert!(status.is_client_error(), "{status} {refused}");
        assert!(refused["error"].is_string(), "{refused}");
        codes.push(refused["code"].as_str().unwrap().to_owned());
    }
    assert_eq!(
        codes,
        [
            "unknown_tool_call",
            "INVALID_RESULT",
            "validation_error",
            "NOT_FOUND"
        ]
    );
    let after = harness.client.status(&session).await.unwrap();
    assert_eq!(
        serde_json::to_value(&before).unwrap(),
        serde_json::to_value(&after).unwrap()
    );

    let answer = json!({"sessionId": session, "toolCallId": call_id, "result": {"answer": "Ada"}});
    let (status, stored) = mount.post("asker_only", "submit", answer.clone()).await;
    assert_eq!(status, StatusCode::OK, "{stored}");
    assert_eq!(stored["continuation"]["kind"], "caller_resumes");
    let end = resumed_end(&mount, "asker_only", &session).await;
    assert_eq!(end["type"], "end");
    assert_eq!(end["status"], "completed");
    assert!(end["output"].as_str().unwrap().contains("Ada"), "{end}");
    let (status, answer) = mount.get("asker_only", "status", &session).await;
    assert_eq!(status, StatusCode::OK);
    assert!(answer.get("pendingCalls").is_none(), "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_relayed_to_the_mount_names_the_producers_approval_id() {
    let harness = Harness::start(agents::registry()).await;
    let mount = MountClient::new(&harness, "/agents", None);
    let session = chosen_id("approve");
    mount.start("guarded", &session, "go").await;
    let calls = paused_calls(&mount, "guarded", &session, "transfer").await;
    assert_eq!(calls[0]["kind"], "approval");
    let call_id = calls[0]["toolCallId"].as_str().unwrap();
    let approval_id = calls[0]["approvalId"].as_str().unwrap();

    let wrong = json!({
        "kind": "approval-response", "sessionId": session, "toolCallId": call_id,
        "approvalId": "run::other", "approved": true,
    });
    let (status, refused) = mount.post("guarded", "submit", wrong).await;
    assert!(status.is_client_error(), "{status} {refused}");
    let approve = json!({
        "kind": "approval-response", "sessionId": session, "toolCallId": call_id,
        "approvalId": approval_id, "approved": true,
    });
    let (status, stored) = mount.post("guarded", "submit", approve).await;
    assert_eq!(status, StatusCode::OK, "{stored}");
    let end = resumed_end(&mount, "guarded", &session).await;
    assert_eq!(end["status"], "completed");
    assert_eq!(end["output"], "Transfer: sent 10 to alice");
}
