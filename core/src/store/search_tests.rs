//! Store tests of the search index against a real Redis: entries follow a session's changes,
//! pages are in order and complete, the repair sweep rewrites a lost entry from the session (and
//! leaves a change in flight alone), and an ended session's entry leaves with its retention.

use super::index_page_tests::walked;
use super::tests::{run, store};
use super::{
    IndexQuery, IndexScope, IndexTerm, NewSession, REPAIR_AFTER_MS, SessionAddress, Status, Store,
};
use crate::{chunk::RunError, error::ErrorCode, message::Message, meta::SessionMeta};
use redis::AsyncCommands;
use serde_json::json;

pub(super) async fn create(
    store: &Store,
    session_id: &str,
    user: &str,
    tags: &[&str],
) -> SessionAddress {
    let address = SessionAddress::root(session_id);
    let meta = SessionMeta {
        user_id: Some(user.to_owned()),
        tags: tags.iter().map(|tag| (*tag).to_owned()).collect(),
        metadata: json!({"plan": "pro", "seats": 3, "nested": {"no": 1}})
            .as_object()
            .cloned(),
    };
    store
        .create_session_with(
            NewSession {
                address: &address,
                agent_type: "demo",
                run_id: "r1",
                stream_id: "st1",
                workflow_id: "wf1",
                messages: &[Message::user("hi")],
                max_chunks: 0,
            },
            None,
            &meta,
            None,
        )
        .await
        .unwrap();
    address
}

pub(super) fn query(drive: IndexTerm, required: Vec<IndexTerm>, limit: usize) -> IndexQuery {
    IndexQuery {
        drive,
        required,
        scopes: vec![IndexScope::Roots],
        after: None,
        updated_before: None,
        updated_after: None,
        limit,
    }
}

pub(super) async fn ids(store: &Store, query: &IndexQuery) -> Vec<String> {
    let page = store.search_index(query).await.unwrap();
    page.hits.into_iter().map(|hit| hit.session_id).collect()
}

async fn index_keys(store: &Store) -> Vec<String> {
    let mut keys: Vec<String> = store
        .conn()
        .keys(format!("{}:index:*", store.prefix))
        .await
        .unwrap();
    keys.sort();
    keys
}

/// Waits until the index has followed every change (each marks its session until its entry is
/// written, in a task of its own).
pub(super) async fn settled(store: &Store) {
    for _ in 0..1000 {
        if store.index_marks().await.unwrap() == 0 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    panic!("the index did not follow");
}

fn failure() -> RunError {
    RunError {
        code: ErrorCode::RunLost,
        message: "gone".into(),
    }
}

#[tokio::test]
async fn pages_follow_the_newest_activity_and_hold_every_hit_once() {
    let store = store().await;
    let mut created = Vec::new();
    for n in 0..7 {
        let tags: &[&str] = if n % 2 == 0 { &["even"] } else { &["odd"] };
        created.push(
            create(&store, &format!("s{n}"), "u1", tags)
                .await
                .session_id,
        );
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    create(&store, "other", "u2", &["even"]).await;
    settled(&store).await;
    // Newest first: the last created leads.
    let all = ids(&store, &query(IndexTerm::User("u1".into()), vec![], 100)).await;
    let newest_first: Vec<String> = created.iter().rev().cloned().collect();
    assert_eq!(all, newest_first);

    // Pages of 3 over the even ones of u1 (tag drives, user required): every hit once, in order.
    let paged = walked(
        &store,
        &IndexTerm::Tag("even".into()),
        &[IndexTerm::User("u1".into())],
        3,
    )
    .await;
    assert_eq!(paged, ["s6", "s4", "s2", "s0"]);

    // Scalar metadata entries are terms; nested ones are not.
    let pro = ids(
        &store,
        &query(
            IndexTerm::Metadata("plan".into(), "pro".into()),
            vec![],
            100,
        ),
    )
    .await;
    assert_eq!(pro.len(), 8);
    let seats = ids(
        &store,
        &query(IndexTerm::Metadata("seats".into(), "3".into()), vec![], 100),
    )
    .await;
    assert_eq!(seats.len(), 8);
    assert!(
        ids(
            &store,
            &query(
                IndexTerm::Metadata("nested".into(), "{\"no\":1}".into()),
                vec![],
                100
            )
        )
        .await
        .is_empty()
    );

    // The status term follows the session's change.
    let address = SessionAddress::root("s3");
    store
        .fail_run(run(&address, "r1"), &failure(), Default::default())
        .await
        .unwrap();
    settled(&store).await;
    let failed = ids(
        &store,
        &query(IndexTerm::Status(Status::Failed), vec![], 100),
    )
    .await;
    assert_eq!(failed, ["s3"]);
    let active = ids(
        &store,
        &query(IndexTerm::Status(Status::Active), vec![], 100),
    )
    .await;
    assert_eq!(active.len(), 7);
    assert!(!active.contains(&"s3".to_owned()));
    assert_eq!(store.index_marks().await.unwrap(), 0);
}

#[tokio::test]
async fn the_sweep_rewrites_an_entry_lost_in_a_crash_and_leaves_a_change_in_flight() {
    let store = store().await;
    let lost = create(&store, "lost", "u1", &[]).await;
    let in_flight = create(&store, "in-flight", "u1", &[]).await;
    settled(&store).await;
    // A crash between a change and its entry: the mark is old, the state changed, the entry not.
    let mut conn = store.conn();
    for (address, marked_at) in [(&lost, 1), (&in_flight, super::now_ms())] {
        let () = conn
            .hset(
                store.key(address, super::keys::Key::State),
                "status",
                "failed",
            )
            .await
            .unwrap();
        let dirty = store.index_key(super::search_index::shard_of(&address.session_id), "dirty");
        let () = conn
            .zadd(dirty, &address.session_id, marked_at)
            .await
            .unwrap();
    }
    let failed = query(IndexTerm::Status(Status::Failed), vec![], 100);
    assert!(ids(&store, &failed).await.is_empty());

    let repaired = store.repair_index(REPAIR_AFTER_MS, 100).await.unwrap();
    assert_eq!(repaired, 1);
    assert_eq!(ids(&store, &failed).await, ["lost"]);
    // The fresh mark is a change whose own entry is still to come: left alone, still marked.
    assert_eq!(store.index_marks().await.unwrap(), 1);
    store.repair_index(0, 100).await.unwrap();
    assert_eq!(ids(&store, &failed).await.len(), 2);
    assert_eq!(store.index_marks().await.unwrap(), 0);
}

#[tokio::test]
async fn an_ended_session_s_entry_leaves_with_its_retention_and_is_small() {
    let store = store()
        .await
        .with_session_retention(std::time::Duration::from_millis(50));
    let address = create(&store, "ending", "u1", &["a", "b"]).await;
    settled(&store).await;
    let records = store.index_key(super::search_index::shard_of("ending"), "records");
    let record: String = store.conn().hget(&records, "ending").await.unwrap();
    assert!(record.len() < 512, "{record}");
    store
        .fail_run(run(&address, "r1"), &failure(), Default::default())
        .await
        .unwrap();
    settled(&store).await;
    assert_eq!(
        ids(&store, &query(IndexTerm::All, vec![], 10)).await,
        ["ending"]
    );
    // Past the retention Redis drops the session's keys; the sweep then drops its entry.
    for _ in 0..100 {
        if store.session(&address).await.unwrap().is_none() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(store.session(&address).await.unwrap().is_none());
    store.repair_index(REPAIR_AFTER_MS, 100).await.unwrap();
    assert!(
        ids(&store, &query(IndexTerm::All, vec![], 10))
            .await
            .is_empty()
    );
    assert_eq!(index_keys(&store).await, Vec::<String>::new());
}
