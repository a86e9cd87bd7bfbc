//! Tool call ids unique within a session tree whatever the model returns (`stage_turn.lua`):
//! a repeated id gets Baton's own, derived from the session, step and position, and keeps the
//! model's for the provider.

use super::{
    footprint_tests::{call, child_step, start_child},
    tests::{at, new_session, store, turn},
    *,
};
use crate::{
    chunk::ChunkKind,
    message::{Message, ToolCall},
};

fn calls_of(turn: &StagedTurn) -> Vec<(String, Option<String>)> {
    let Message::Assistant { tool_calls, .. } = &turn.message else {
        panic!("not an assistant turn");
    };
    tool_calls
        .iter()
        .map(
            |ToolCall {
                 id, provider_id, ..
             }| (id.clone(), provider_id.clone()),
        )
        .collect()
}

#[tokio::test]
async fn a_call_id_the_tree_has_already_gets_batons_own_and_keeps_the_models() {
    let store = store().await;
    let root = SessionAddress::root("s1");
    new_session(&store, &root).await;
    // The root's model repeats an id within one turn: the second call is renamed.
    let mut root_turn = turn("r1", 1, "", vec![call("c1", "ask"), call("c1", "ask")]);
    let written = store.stage_turn(at(&root, "r1", 1), &mut root_turn).await;
    assert_eq!(written.unwrap(), Written::New);
    let root_calls = calls_of(&root_turn);
    assert_eq!(root_calls[0], ("c1".to_owned(), None));
    let renamed = &root_calls[1].0;
    assert!(
        renamed.starts_with("bt_") && renamed.len() == 23,
        "{renamed}"
    );
    assert_eq!(root_calls[1].1.as_deref(), Some("c1"));
    // What was staged (and announced) is the renamed turn.
    let staged = store
        .staged_turn(at(&root, "r1", 1))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(calls_of(&staged), root_calls);
    let announced: Vec<String> = store
        .chunks_after(&root, 0, 100)
        .await
        .unwrap()
        .into_iter()
        .filter_map(|chunk| match chunk.kind {
            ChunkKind::ToolStart { tool_call_id, .. } => Some(tool_call_id),
            _ => None,
        })
        .collect();
    assert_eq!(announced, ["c1".to_owned(), renamed.clone()]);

    // A child whose model answers the same ids gets Baton's ids for both, its own.
    let child = start_child(&store, &root).await;
    let mut child_turn = turn("rc1", 1, "", vec![call("c1", "ask"), call("c2", "ask")]);
    store
        .stage_turn(child_step(&child), &mut child_turn)
        .await
        .unwrap();
    let child_calls = calls_of(&child_turn);
    assert_eq!(child_calls[1], ("c2".to_owned(), None));
    assert_eq!(child_calls[0].1.as_deref(), Some("c1"));
    assert!(child_calls[0].0.starts_with("bt_"));
    assert_ne!(&child_calls[0].0, renamed);

    // A retried attempt at a step, the model answering as before, finds the staged turn; the
    // ids it reads are the ones derived the first time.
    let mut retried = turn("rc1", 1, "", vec![call("c1", "ask"), call("c2", "ask")]);
    let again = store.stage_turn(child_step(&child), &mut retried).await;
    assert_eq!(again.unwrap(), Written::AlreadyDone);
    let staged = store
        .staged_turn(child_step(&child))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(calls_of(&staged), child_calls);
}
