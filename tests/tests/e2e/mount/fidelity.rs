//! What a consumer rebuilds from a mount: a snapshot plus the patches after its position is the
//! next snapshot; a projected mount shows projected state and usage and leaks no `state_patch`,
//! every other chunk passing with its sequence; a cursor below the retention floor is
//! `TRUNCATED`, and the floor is the snapshot's.

use super::{Frame, MountClient, chosen_id};
use baton_client::Client as _;
use baton_core::message::ToolOutcome;
use baton_tests::{Harness, agents, open_options};
use baton_worker::{ServerOptions, mount::Mount};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// The state after applying, to `state`, the `state_patch` frames of `session` in `frames`.
fn with_patches(mut state: Value, frames: &[Frame], session: &str) -> Value {
    for frame in frames {
        if frame.data["type"] == "state_patch" && frame.data["agentId"] == session {
            let patch: json_patch::Patch =
                serde_json::from_value(frame.data["patch"].clone()).unwrap();
            json_patch::patch(&mut state, &patch).unwrap();
        }
    }
    state
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_and_the_patches_after_its_position_are_the_next_snapshot() {
    let harness = Harness::start(agents::registry()).await;
    let mount = MountClient::new(&harness, "/agents", None);
    let session = chosen_id("notes");
    let body = json!({"sessionId": session, "message": "go", "state": {"topic": "birds"}});
    let (status, started) = mount.post("notebook", "start", body).await;
    assert_eq!(status, StatusCode::OK, "{started}");

    // The turn pauses on the person's question: the stream ends with a paused end.
    let first = mount.frames("notebook", &session, 0).await;
    let paused = first.last().unwrap();
    assert_eq!(paused.data["type"], "end");
    assert_eq!(paused.data["status"], "paused");
    let suspended = &first[first.len() - 2];
    assert_eq!(suspended.data["type"], "suspended");
    assert_eq!(paused.id, suspended.id);
    // Reconnecting from the paused end's position while the session waits gives it again.
    let again = mount.frames("notebook", &session, paused.id.unwrap()).await;
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].data["status"], "paused");

    let (status, baseline) = mount.get("notebook", "snapshot", &session).await;
    assert_eq!(status, StatusCode::OK);
    let pinned = baseline["streamSequence"].as_i64().unwrap();
    assert!(
        pinned > 0,
        "a suspended session's snapshot is pinned: {baseline}"
    );
    assert_eq!(baseline["stepCount"], 2);
    assert_eq!(baseline["streamId"], started["streamId"]);
    // The baseline and the paused stream's patches after it agree with the paused end's state.
    let after_pin: Vec<Frame> = first
        .iter()
        .filter(|f| f.id.unwrap() as i64 > pinned)
        .cloned()
        .collect();
    assert_eq!(
        with_patches(baseline["state"].clone(), &after_pin, &session),
        paused.data["state"]
    );

    let call = suspended.data["toolCallIds"][0].as_str().unwrap();
    let answer = ToolOutcome::Result(json!({"answer": "yes"}));
    harness
        .client
        .submit(&session, call, &answer)
        .await
        .unwrap();
    let (status, resumed) = mount
        .post(
            "notebook",
            "resume",
            json!({"sessionId": session, "mode": "continue"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{resumed}");
    assert_eq!(resumed["status"], "running");

    let rest = mount.frames("notebook", &session, pinned as u64).await;
    let end = rest.last().unwrap();
    assert_eq!(end.data["type"], "end");
    assert_eq!(end.data["status"], "completed");
    let rebuilt = with_patches(baseline["state"].clone(), &rest, &session);
    let (_, last) = mount.get("notebook", "snapshot", &session).await;
    assert_eq!(
        last["streamSequence"], -1,
        "an ended session's snapshot has no position"
    );
    assert_eq!(rebuilt, last["state"]);
    assert_eq!(rebuilt, end.data["state"]);
    assert_eq!(rebuilt["notes"], json!(["a", "b", "c"]));
    assert_eq!(rebuilt["topic"], "birds");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_projected_mount_shows_projections_and_leaks_no_state_patch() {
    let options = ServerOptions {
        mounts: vec![
            Mount::new("/agents"),
            Mount::new("/public/agents")
                .keep_state_fields(["count"])
                .project_usage(|rollup| {
                    json!({"units": rollup.tokens.input_tokens + rollup.tokens.output_tokens})
                }),
        ],
        ..open_options()
    };
    let harness = Harness::start_with(agents::registry(), options).await;
    let raw = MountClient::new(&harness, "/agents", None);
    let public = MountClient::new(&harness, "/public/agents", None);
    let session = chosen_id("proj");
    public.start("notebook_once", &session, "go").await;
    let projected = public.frames("notebook_once", &session, 0).await;
    let full = raw.frames("notebook_once", &session, 0).await;

    assert!(full.iter().any(|f| f.data["type"] == "state_patch"));
    assert!(projected.iter().all(|f| f.data["type"] != "state_patch"));
    let unpatched: Vec<&Frame> = full
        .iter()
        .filter(|f| f.data["type"] != "state_patch")
        .collect();
    assert_eq!(unpatched.len(), projected.len());
    for (kept, shown) in unpatched.iter().zip(&projected) {
        assert_eq!(kept.id, shown.id);
        if shown.data["type"] != "end" {
            assert_eq!(kept.data, shown.data);
        }
    }
    let raw_end = &full.last().unwrap().data;
    let end = &projected.last().unwrap().data;
    assert_eq!(end["status"], "completed");
    assert_eq!(end["output"], raw_end["output"]);
    assert_eq!(end["state"], json!({"count": 1}));
    assert_eq!(raw_end["state"]["notes"], json!(["a"]));
    let tokens = raw_end["usage"]["inputTokens"].as_u64().unwrap()
        + raw_end["usage"]["outputTokens"].as_u64().unwrap();
    assert_eq!(end["usage"], json!({"units": tokens}));

    let (_, snapshot) = public.get("notebook_once", "snapshot", &session).await;
    assert_eq!(snapshot["state"], json!({"count": 1}));
    let (_, snapshot) = raw.get("notebook_once", "snapshot", &session).await;
    assert_eq!(snapshot["state"]["count"], 1);
    assert!(snapshot["state"]["notes"].is_array());
    let (_, usage) = public.get("notebook_once", "usage", &session).await;
    assert_eq!(usage["rollup"], json!({"units": tokens}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cursor_below_the_retention_floor_is_truncated() {
    let options = ServerOptions {
        stream_max_chunks: 4,
        ..open_options()
    };
    let harness = Harness::start_with(agents::registry(), options).await;
    let mount = MountClient::new(&harness, "/agents", None);
    let session = chosen_id("trunc");
    mount.start("two_steps", &session, "go").await;
    let started = harness.client.status(&session).await.unwrap();
    harness
        .run_result(&started.workflow_id.unwrap())
        .await
        .unwrap();

    let (_, snapshot) = mount.get("two_steps", "snapshot", &session).await;
    let floor = snapshot["oldestRetainedSequence"].as_u64().unwrap();
    assert!(floor > 0);
    let refused = mount.frames("two_steps", &session, 0).await;
    assert_eq!(refused.len(), 1);
    assert_eq!(refused[0].event.as_deref(), Some("error"));
    assert_eq!(refused[0].data["code"], "TRUNCATED");
    assert_eq!(refused[0].data["oldestRetainedSequence"], floor);
    let kept = mount.frames("two_steps", &session, floor).await;
    assert_eq!(kept.len(), 4);
    assert_eq!(kept[0].id, Some(floor + 1));
    assert_eq!(kept.last().unwrap().data["type"], "end");
}
