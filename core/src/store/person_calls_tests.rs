//! A session's state and the calls of its tree waiting on a person, read together for a page's
//! row (`Store::session_and_person_calls`): the same as reading them apart, in one round trip
//! for a session with nothing below it and two for a tree.

use super::footprint_tests::{start_child, suspend_child_on, suspend_on};
use super::tests::{new_session, store};
use super::*;

fn call_ids(calls: &[PersonCall]) -> Vec<(&str, &str)> {
    calls
        .iter()
        .map(|call| {
            (
                call.owner.session_id.as_str(),
                call.call.tool_call_id.as_str(),
            )
        })
        .collect()
}

/// Reads `address` both ways and answers the calls, once both agree; `round_trips` of the read
/// together.
async fn read_together(
    base: &Store,
    address: &SessionAddress,
    whole_tree: bool,
    round_trips: usize,
) -> Vec<PersonCall> {
    let (store, sent) = base.recording_round_trips();
    let (session, calls) = store
        .session_and_person_calls(address, whole_tree)
        .await
        .unwrap();
    assert_eq!(sent.sent().len(), round_trips, "{:#?}", sent.sent());
    assert_eq!(session, base.session(address).await.unwrap());
    assert_eq!(calls, base.person_calls(address, whole_tree).await.unwrap());
    calls
}

#[tokio::test]
async fn a_lone_session_is_read_with_its_calls_in_one_round_trip() {
    let store = store().await;
    let lone = SessionAddress::root("lone");
    new_session(&store, &lone).await;
    assert!(read_together(&store, &lone, true, 1).await.is_empty());
    suspend_on(&store, &lone, "r1", 1, "c1").await;
    let calls = read_together(&store, &lone, true, 1).await;
    assert_eq!(call_ids(&calls), [("lone", "c1")]);

    let gone = SessionAddress::root("gone");
    let (session, calls) = store.session_and_person_calls(&gone, true).await.unwrap();
    assert_eq!((session, calls.len()), (None, 0));
}

#[tokio::test]
async fn a_root_is_read_with_its_whole_trees_calls_and_a_child_with_its_own() {
    let store = store().await;
    let root = SessionAddress::root("s1");
    new_session(&store, &root).await;
    let child = start_child(&store, &root).await;
    suspend_on(&store, &root, "r1", 1, "c1").await;
    suspend_child_on(&store, &child, "k1").await;

    let calls = read_together(&store, &root, true, 2).await;
    assert_eq!(call_ids(&calls), [("s1", "c1"), ("s1.child", "k1")]);
    let calls = read_together(&store, &root, false, 1).await;
    assert_eq!(call_ids(&calls), [("s1", "c1")]);
    let calls = read_together(&store, &child, true, 1).await;
    assert_eq!(call_ids(&calls), [("s1.child", "k1")]);
}
