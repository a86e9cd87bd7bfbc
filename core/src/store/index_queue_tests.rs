//! Store tests of the index writes after changes (`index_queue.rs`, `search_index.rs`) against a
//! real Redis: a write reads the session, its tree and the entry in one round trip, and an entry
//! that already is the state's is not written again.

use super::search_tests::{create, ids, query, settled};
use super::*;

/// How many of `sent` ran `index_write.lua`.
fn index_writes(sent: &[RoundTrip]) -> usize {
    sent.iter()
        .filter(|round_trip| round_trip.runs_script("index_write"))
        .count()
}

#[tokio::test]
async fn an_entry_already_the_states_is_not_written_again_and_a_stale_one_is() {
    let base = super::tests::store().await;
    let address = create(&base, "iq-1", "ann", &[]).await;
    settled(&base).await;
    let (store, round_trips) = base.recording_round_trips();

    // Written after the start: the same state gives the same entry, so nothing is written.
    // The session, its tree's members and the entry are read at once (three requests sent
    // together), then the open calls (an active session may have a question open).
    store.reindex(&address).await.unwrap();
    let sent = round_trips.sent();
    assert_eq!(index_writes(&sent), 0, "{sent:#?}");
    let names: Vec<&[String]> = sent.iter().map(|r| &r.commands[..]).collect();
    assert_eq!(names.len(), 4, "{sent:#?}");
    let mut together: Vec<String> = names[..3].iter().flat_map(|c| c.iter().cloned()).collect();
    together.sort();
    assert_eq!(together, ["HGET", "HGET", "HGETALL", "SMEMBERS", "ZSCORE"]);
    assert!(names[3].iter().any(|c| c == "HVALS"), "{sent:#?}");

    // The session moves on without its entry (a lost write): the next reindex writes it.
    let moved = base
        .fail_run(
            RunRef {
                address: &address,
                stream_id: "st1",
                run_id: "r1",
            },
            &crate::chunk::RunError {
                code: crate::error::ErrorCode::Internal,
                message: "gone".into(),
            },
            Default::default(),
        )
        .await
        .unwrap();
    assert_eq!(moved, Written::New);
    settled(&base).await;
    let failed = query(IndexTerm::Status(Status::Failed), vec![], 10);
    assert_eq!(ids(&base, &failed).await, vec!["iq-1".to_owned()]);
    let shard = super::search_index::shard_of("iq-1");
    let _: () = redis::AsyncCommands::hdel(
        &mut base.conn(),
        base.index_key(shard, "records"),
        super::index_id::shorten("iq-1"),
    )
    .await
    .unwrap();
    let before = round_trips.sent().len();
    store.reindex(&address).await.unwrap();
    assert_eq!(index_writes(&round_trips.sent()[before..]), 1);
    assert_eq!(ids(&store, &failed).await, vec!["iq-1".to_owned()]);
}
