//! The producer's mount on the real process: every route refuses a caller without the
//! credential or with a wrong one and writes nothing; the projected mount of the agents file
//! leaks no `state_patch` and passes every other chunk with its sequence; and a remote child's
//! snapshot plus the patches forwarded after its position is the child's next snapshot.

use super::{
    PRODUCER_KEY, Service, announced_child, delegated_to, producer, until_end, until_tool_start,
};
use crate::mount::{Frame, MountClient, chosen_id};
use baton_core::ChunkKind;
use reqwest::StatusCode;
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_of_both_mounts_refuses_a_missing_or_wrong_credential_and_writes_nothing() {
    let producer = producer().await;
    let session = chosen_id("refused");
    let body = json!({"sessionId": session, "message": "go", "mode": "continue"});
    for base in ["/agents", "/public/agents"] {
        let url = format!("{}{base}", producer.server.base_url());
        for bearer in [None, Some("not-the-key")] {
            let client = MountClient::at(&url, bearer);
            for action in ["start", "resume", "submit", "interrupt", "abort"] {
                let (status, refused) = client.post("researcher", action, body.clone()).await;
                assert_eq!(
                    status,
                    StatusCode::UNAUTHORIZED,
                    "{base} {action} {bearer:?}"
                );
                assert_eq!(refused["code"], "unauthorized");
            }
            for action in ["sse", "status", "snapshot", "usage"] {
                let (status, refused) = client.get("researcher", action, &session).await;
                assert_eq!(
                    status,
                    StatusCode::UNAUTHORIZED,
                    "{base} {action} {bearer:?}"
                );
                assert_eq!(refused["code"], "unauthorized");
            }
        }
    }
    assert_eq!(producer.keys().await, Vec::<String>::new());
    assert_eq!(producer.runs().await, 0);

    // The key lets the same start in.
    let operator = MountClient::at(&producer.mount_url(), Some(PRODUCER_KEY));
    operator.start("researcher", &session, "go").await;
    let frames = operator.frames("researcher", &session, 0).await;
    assert_eq!(frames.last().unwrap().data["status"], "completed");
}

/// `frames` without their `state_patch` frames: (sequence, type) of each.
fn without_patches(frames: &[Frame]) -> Vec<(Option<u64>, Value)> {
    frames
        .iter()
        .filter(|f| f.data["type"] != "state_patch")
        .map(|f| (f.id, f.data["type"].clone()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_projected_mount_of_the_agents_file_leaks_no_state_patch() {
    let producer = producer().await;
    let raw = MountClient::at(&producer.mount_url(), Some(PRODUCER_KEY));
    let public = format!("{}/public/agents", producer.server.base_url());
    let projected = MountClient::at(&public, Some(PRODUCER_KEY));
    let session = chosen_id("projected");
    projected.start("chronicler", &session, "go").await;

    let raw_frames = raw.frames("chronicler", &session, 0).await;
    let projected_frames = projected.frames("chronicler", &session, 0).await;
    assert!(raw_frames.iter().any(|f| f.data["type"] == "state_patch"));
    assert!(
        projected_frames
            .iter()
            .all(|f| f.data["type"] != "state_patch"),
        "a projected mount suppresses every state_patch"
    );
    // Every other chunk passes, with its sequence.
    assert_eq!(
        without_patches(&raw_frames),
        without_patches(&projected_frames)
    );
    // The end and the snapshot show the projection only.
    let end = projected_frames.last().unwrap();
    assert_eq!(end.data["status"], "completed");
    assert_eq!(end.data["state"], json!({"phase": "writing"}));
    let (status, snapshot) = projected.get("chronicler", "snapshot", &session).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(snapshot["state"], json!({"phase": "writing"}));
    let (_, full) = raw.get("chronicler", "snapshot", &session).await;
    assert_eq!(full["state"], json!({"phase": "writing", "count": 2}));
}

/// The child's snapshot on the producer's raw mount.
async fn child_snapshot(producer: &Service, child: &str) -> Value {
    let raw = MountClient::at(&producer.mount_url(), Some(PRODUCER_KEY));
    let (status, snapshot) = raw.get("chronicler", "snapshot", child).await;
    assert_eq!(status, StatusCode::OK, "{snapshot}");
    snapshot
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_childs_snapshot_and_the_patches_forwarded_after_it_are_its_next_snapshot() {
    let (producer, consumer, started) = delegated_to("chronicler").await;
    let child = announced_child(&consumer, &started.session_id).await;
    // A baseline while the child works in its second step: pinned to the first step's end.
    until_tool_start(&producer, &child, "sleep").await;
    let baseline = child_snapshot(&producer, &child).await;
    let pinned = baseline["streamSequence"].as_i64().unwrap();
    assert!(
        pinned > 0,
        "a running child's snapshot is pinned: {baseline}"
    );
    assert_eq!(baseline["state"], json!({"phase": "reading", "count": 1}));

    let chunks = until_end(&consumer, &started.session_id).await;
    // The child's patches on the caller's stream after the baseline's position, applied to it.
    let mut state = baseline["state"].clone();
    let mut applied = 0;
    for chunk in crate::remote::forwarded(&chunks) {
        let source = chunk.remote_source.as_ref().unwrap();
        // Alignable: the patch's emitter is the direct child, in its sequence space.
        if chunk.header.agent_id != source.child_session_id || source.stream_id.is_empty() {
            continue;
        }
        if let ChunkKind::StatePatch { patch, .. } = &chunk.kind
            && source.child_sequence as i64 > pinned
        {
            json_patch::patch(&mut state, patch).unwrap();
            applied += 1;
        }
    }
    assert!(applied >= 1, "the second step's patch is forwarded");
    let next = child_snapshot(&producer, &child).await;
    assert_eq!(state, next["state"]);
    assert_eq!(state, json!({"phase": "writing", "count": 2}));
}
