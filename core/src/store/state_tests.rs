//! The custom state in the store against a real Redis: patches staged with results are applied
//! once, in call order, by the step's commit; retried staging and commits change nothing more;
//! the snapshot and the `end` chunk carry the state.

use super::tests::{at, kinds, store, tool_result, turn};
use super::*;
use crate::{
    chunk::ChunkKind,
    message::{Message, ToolCall, ToolOutcome},
    state::set_operation,
};
use json_patch::Patch;
use serde_json::{Value, json};

fn call(id: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: "note".into(),
        arguments: json!({}),
        provider_id: None,
    }
}

/// A session of run `r1` on stream `st1` whose custom state is `state`.
pub(super) async fn new_session_with_state(store: &Store, address: &SessionAddress, state: &Value) {
    store
        .create_session_with_state(
            NewSession {
                address,
                agent_type: "demo",
                run_id: "r1",
                stream_id: "st1",
                workflow_id: "wf1",
                messages: &[Message::user("hi")],
                max_chunks: 0,
            },
            Some(state),
        )
        .await
        .unwrap();
}

pub(super) fn patch(operations: Value) -> Patch {
    serde_json::from_value(operations).unwrap()
}

#[tokio::test]
async fn staged_patches_are_applied_once_in_call_order_by_the_commit() {
    let store = store().await;
    let address = SessionAddress::root("s1");
    let seeded = json!({"notes": [], "n": 12345678901234567890u64, "topic": "rust"});
    new_session_with_state(&store, &address, &seeded).await;
    assert_eq!(store.custom_state(&address).await.unwrap(), Some(seeded));

    let step = at(&address, "r1", 1);
    let calls = vec![call("c1"), call("c2"), call("c3")];
    store
        .stage_turn(step, &mut turn("r1", 1, "", calls.clone()))
        .await
        .unwrap();
    let first = patch(json!([{"op": "add", "path": "/notes/-", "value": "a"}]));
    let ok = |call: &ToolCall| tool_result(call, ToolOutcome::Result(json!("ok")));
    // The third call finishes first, yet its patch is applied after the first call's.
    let third = Patch(vec![
        set_operation("/notes/1", "c").unwrap(),
        set_operation("/topic", "done").unwrap(),
    ]);
    store
        .stage_tool_result_with_state(step, &ok(&calls[2]), Some(&third))
        .await
        .unwrap();
    for _ in 0..2 {
        // A retried staging (first answer wins) does not stage the patch twice.
        store
            .stage_tool_result_with_state(step, &ok(&calls[0]), Some(&first))
            .await
            .unwrap();
    }
    // Valid against the state the step started from, but no longer after c1's patch.
    let stale = patch(json!([{"op": "test", "path": "/notes", "value": []}]));
    store
        .stage_tool_result_with_state(step, &ok(&calls[1]), Some(&stale))
        .await
        .unwrap();
    let before = store.chunks_after(&address, 0, 100).await.unwrap();
    assert!(!kinds(&before).contains(&"state_patch"), "{before:?}");
    assert_eq!(
        store.snapshot(&address).await.unwrap().unwrap().state,
        json!({"notes": [], "n": 12345678901234567890u64, "topic": "rust"}),
        "nothing is applied before the commit"
    );

    let completion = || {
        Some(Completion {
            output: "done".into(),
            usage: Default::default(),
        })
    };
    assert_eq!(
        store.commit_step(step, completion()).await.unwrap(),
        Written::New
    );
    assert_eq!(
        store.commit_step(step, completion()).await.unwrap(),
        Written::AlreadyDone
    );
    let expected = json!({"notes": ["a", "c"], "n": 12345678901234567890u64, "topic": "done"});
    assert_eq!(
        store.custom_state(&address).await.unwrap(),
        Some(expected.clone())
    );
    let snapshot = store.snapshot(&address).await.unwrap().unwrap();
    assert_eq!(snapshot.state, expected.clone());

    let chunks = store.chunks_after(&address, 0, 100).await.unwrap();
    let patches: Vec<&Patch> = chunks
        .iter()
        .filter_map(|chunk| match &chunk.kind {
            ChunkKind::StatePatch { step: 1, patch } => Some(patch),
            _ => None,
        })
        .collect();
    assert_eq!(patches.len(), 1, "{:?}", kinds(&chunks));
    let mut rebuilt = json!({"notes": [], "n": 12345678901234567890u64, "topic": "rust"});
    json_patch::patch(&mut rebuilt, patches[0]).unwrap();
    assert_eq!(
        rebuilt, expected,
        "the stale patch is left out of the chunk too"
    );
    let tail: Vec<&str> = kinds(&chunks).into_iter().rev().take(3).collect();
    assert_eq!(tail, ["end", "step_end", "state_patch"]);
    let Some(ChunkKind::End { state, .. }) = chunks.last().map(|c| &c.kind) else {
        panic!("no end chunk");
    };
    assert_eq!(state.as_ref(), Some(&expected));
}

#[tokio::test]
async fn a_session_without_custom_state_has_none_anywhere() {
    let store = store().await;
    let address = SessionAddress::root("s2");
    super::tests::new_session(&store, &address).await;
    let step = at(&address, "r1", 1);
    store
        .stage_turn(step, &mut turn("r1", 1, "hi", vec![]))
        .await
        .unwrap();
    store
        .commit_step(
            step,
            Some(Completion {
                output: "hi".into(),
                usage: Default::default(),
            }),
        )
        .await
        .unwrap();
    assert_eq!(store.custom_state(&address).await.unwrap(), None);
    let snapshot = store.snapshot(&address).await.unwrap().unwrap();
    assert_eq!(snapshot.state, json!({}));
    let chunks = store.chunks_after(&address, 0, 100).await.unwrap();
    let Some(ChunkKind::End { state, .. }) = chunks.last().map(|c| &c.kind) else {
        panic!("no end chunk");
    };
    assert_eq!(*state, None);
    let json = serde_json::to_value(chunks.last().unwrap()).unwrap();
    assert!(json.get("state").is_none(), "{json}");
}
