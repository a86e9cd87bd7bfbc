//! Store tests against a real Redis of the indexes' short form (issue 27): an entry written
//! before it (whole ids, a record of the terms' key names, an `all` set) is still found, with
//! and without required terms, and the next write replaces it; a deadline index member written
//! before it is still read and taken out; and a mark whose change a concurrent reindex did not
//! see stays, so the zombie sweep still finds the session.

use super::search_index::shard_of;
use super::search_tests::{create, ids, query, settled};
use super::tests::store;
use super::{IndexTerm, SessionAddress, Status, Store, index_id::shorten, index_record::Record};
use redis::AsyncCommands;

/// Rewrites the session's entry as the code before the short form wrote it.
async fn write_old_form(store: &Store, session_id: &str) {
    let shard = shard_of(session_id);
    let records = store.index_key(shard, "records");
    let short = shorten(session_id);
    assert_ne!(short, session_id);
    let mut conn = store.conn();
    let text: String = conn.hget(&records, &short).await.unwrap();
    let mut record = Record::decode(&text).unwrap();
    let mut score = 0.0;
    for key in &record.k {
        let key = store.index_key(shard, key);
        score = conn.zscore(&key, &short).await.unwrap();
        let () = redis::pipe()
            .zrem(&key, &short)
            .zadd(&key, session_id, score)
            .query_async(&mut conn)
            .await
            .unwrap();
    }
    let () = conn
        .zadd(store.index_key(shard, "root:all"), session_id, score)
        .await
        .unwrap();
    record.k.push("root:all".to_owned());
    let old = serde_json::json!({"v": [record.v.0, record.v.1], "k": record.k}).to_string();
    let () = redis::pipe()
        .hdel(&records, &short)
        .hset(&records, session_id, old)
        .query_async(&mut conn)
        .await
        .unwrap();
}

#[tokio::test]
async fn an_entry_written_before_the_short_form_is_found_and_rewritten_in_it() {
    let store = store().await;
    let session_id = crate::ids::new_session_id();
    let address = create(&store, &session_id, "u1", &["vip"]).await;
    settled(&store).await;
    write_old_form(&store, &session_id).await;

    let found = [session_id.clone()];
    let active = IndexTerm::Status(Status::Active);
    assert_eq!(ids(&store, &query(active.clone(), vec![], 10)).await, found);
    assert_eq!(ids(&store, &query(IndexTerm::All, vec![], 10)).await, found);
    let held = vec![IndexTerm::Tag("vip".into()), IndexTerm::User("u1".into())];
    let agent = IndexTerm::Agent("demo".into());
    assert_eq!(
        ids(&store, &query(agent.clone(), held.clone(), 10)).await,
        found
    );
    let not_held = vec![IndexTerm::Tag("other".into())];
    assert!(
        ids(&store, &query(agent.clone(), not_held, 10))
            .await
            .is_empty()
    );

    // The next write replaces the old form: no whole id, no `all` set, the short record.
    store.reindex(&address).await.unwrap();
    let shard = shard_of(&session_id);
    let mut conn = store.conn();
    let records = store.index_key(shard, "records");
    let old: bool = conn.hexists(&records, &session_id).await.unwrap();
    let new: String = conn.hget(&records, shorten(&session_id)).await.unwrap();
    assert!(!old);
    assert!(new.starts_with('['), "{new}");
    let all: u64 = conn
        .zcard(store.index_key(shard, "root:all"))
        .await
        .unwrap();
    assert_eq!(all, 0);
    let whole: Option<f64> = conn
        .zscore(store.index_key(shard, "root:status:active"), &session_id)
        .await
        .unwrap();
    assert_eq!(whole, None);
    assert_eq!(ids(&store, &query(active, vec![], 10)).await, found);
    assert_eq!(ids(&store, &query(agent, held, 10)).await, found);
}

#[tokio::test]
async fn a_deadline_indexed_before_the_short_form_is_read_and_taken_out() {
    let store = store().await;
    let session_id = crate::ids::new_session_id();
    let run_id = crate::ids::new_run_id();
    let address = SessionAddress::root(&session_id);
    let old = format!("{session_id}|{session_id}|{run_id}");
    let key = super::keys::deadline_index_key(&store.prefix);
    let () = store.conn().zadd(&key, &old, 5).await.unwrap();
    store.index_deadline(&address, "r-new", 6).await.unwrap();

    let due = store.due_deadlines(10, 10).await.unwrap();
    assert_eq!(due.len(), 2);
    for deadline in &due {
        assert_eq!(deadline.address, address);
    }
    assert_eq!(due[0].run_id, run_id);
    assert_eq!(due[1].run_id, "r-new");
    for deadline in &due {
        store.unindex_deadline(deadline).await.unwrap();
    }
    assert_eq!(store.indexed_deadlines().await.unwrap(), 0);
}

#[tokio::test]
async fn a_mark_whose_change_a_concurrent_reindex_did_not_see_keeps_the_session_for_the_sweep() {
    let store = store().await;
    let address = create(&store, "claimed", "u1", &[]).await;
    let state = store.key(&address, super::keys::Key::State);
    let mut conn = store.conn();
    // Suspended and indexed so.
    let () = conn
        .hset(&state, "status", "suspended_client_tool")
        .await
        .unwrap();
    store.reindex(&address).await.unwrap();
    settled(&store).await;
    assert!(store.quiet_active_runs(0).await.unwrap().is_empty());

    // A claim: its mark, then another reindex reading the state before the claim lands, then
    // the claim; its own entry never comes (its process died).
    let mark = store.mark_for_index(&address).await.unwrap();
    store.reindex(&address).await.unwrap();
    let () = conn.hset(&state, "status", "active").await.unwrap();
    assert_eq!(store.index_marks().await.unwrap(), 1);
    let quiet = store.quiet_active_runs(0).await.unwrap();
    assert_eq!(quiet.len(), 1);
    assert_eq!(quiet[0].address, address);

    // A later change's mark is newer than this one's, even in the same millisecond: the entry
    // written after the first change leaves it.
    let later = store.mark_for_index(&address).await.unwrap();
    assert!(later > mark);
    store.reindex_clearing(&address, mark).await.unwrap();
    assert_eq!(store.index_marks().await.unwrap(), 1);
    store.reindex_clearing(&address, later).await.unwrap();
    assert_eq!(store.index_marks().await.unwrap(), 0);
    assert_eq!(store.quiet_active_runs(0).await.unwrap().len(), 1);
}
