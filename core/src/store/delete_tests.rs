//! Store tests of deleting a session tree against a real Redis: refused while a session of the
//! tree runs (nothing deleted), then every key of the root and its child gone but the tree's
//! token revocation, and the sessions gone from the search index.

use super::footprint_tests::{start_child, suspend_child_on, suspend_on};
use super::tests::{new_session, store};
use super::*;

/// Every key under the tree's hash tag.
async fn keys_of_tree(store: &Store, root: &SessionAddress) -> Vec<String> {
    let pattern = format!("{}:{{{}}}:*", store.prefix, root.root_session_id);
    let mut keys: Vec<String> = redis::cmd("KEYS")
        .arg(pattern)
        .query_async(&mut store.conn())
        .await
        .unwrap();
    keys.sort();
    keys
}

async fn indexed(store: &Store) -> Vec<String> {
    let query = IndexQuery {
        drive: IndexTerm::All,
        required: Vec::new(),
        scopes: vec![IndexScope::Roots, IndexScope::Children],
        after: None,
        updated_before: None,
        updated_after: None,
        limit: 50,
    };
    let page = store.search_index(&query).await.unwrap();
    page.hits.into_iter().map(|hit| hit.session_id).collect()
}

#[tokio::test]
async fn a_tree_is_deleted_whole_once_no_session_of_it_runs() {
    let store = store().await;
    let root = SessionAddress::root("s1");
    new_session(&store, &root).await;
    let child = start_child(&store, &root).await;

    // The child runs: nothing is deleted.
    assert_eq!(
        store.delete_tree("s1").await.unwrap(),
        Deleted::Running {
            session_id: "s1".into()
        }
    );
    suspend_on(&store, &root, "r1", 1, "c1").await;
    assert_eq!(
        store.delete_tree("s1").await.unwrap(),
        Deleted::Running {
            session_id: child.session_id.clone()
        }
    );
    suspend_child_on(&store, &child, "k1").await;
    store.reindex(&child).await.unwrap();
    store.reindex(&root).await.unwrap();
    let mut listed = indexed(&store).await;
    listed.sort();
    assert_eq!(listed, ["s1", "s1.child"]);
    store
        .revoke_session_tokens("s1", now_ms() / 1000 + 3600)
        .await
        .unwrap();

    let before = keys_of_tree(&store, &root).await;
    assert!(before.len() > 10, "{before:?}");

    let Deleted::Deleted { sessions, keys } = store.delete_tree("s1").await.unwrap() else {
        panic!("not deleted");
    };
    assert_eq!(sessions, [root.clone(), child.clone()]);
    assert_eq!(keys as usize, before.len() - 1, "{before:?}");
    // The tree's revocation stays, to its own expiry; nothing else.
    let left = keys_of_tree(&store, &root).await;
    assert_eq!(left, [store.key(&root, Key::RevokedTokens)]);
    assert!(store.session(&root).await.unwrap().is_none());
    assert!(store.session(&child).await.unwrap().is_none());
    assert!(indexed(&store).await.is_empty());
    assert_eq!(
        store.delete_tree("s1").await.unwrap(),
        Deleted::SessionNotFound
    );
}
