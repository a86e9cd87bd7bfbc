//! Store tests of the index writes after changes (`index_queue.rs`, `search_index.rs`) against a
//! real Redis: a write reads the session, its tree, the entry and the session's open calls in
//! one round trip, and an entry that already is the state's is not written again.

use super::script_cache_tests::counting;
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
    // The index's scripts are loaded by the writes before the count.
    let _cache = counting(&base, &[]).await;
    let address = create(&base, "iq-1", "ann", &[]).await;
    settled(&base).await;
    let (store, round_trips) = base.recording_round_trips();

    // Written after the start: the same state gives the same entry, so nothing is written.
    // The session, its tree's members, the entry and the session's open calls (an active
    // session may have a question open) are read at once: four requests sent together, and
    // nothing after them for a session alone.
    store.reindex(&address).await.unwrap();
    let sent = round_trips.sent();
    assert_eq!(index_writes(&sent), 0, "{sent:#?}");
    assert_eq!(sent.len(), 4, "{sent:#?}");
    let mut together: Vec<String> = sent.iter().flat_map(|r| r.commands.clone()).collect();
    together.sort();
    assert_eq!(
        together,
        [
            "HGET", "HGET", "HGETALL", "HGETALL", "HGETALL", "HGETALL", "HMGET", "HVALS",
            "SMEMBERS", "ZSCORE"
        ],
        "{sent:#?}"
    );

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
