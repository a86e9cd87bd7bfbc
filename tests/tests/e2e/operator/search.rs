//! `GET /sessions` and gRPC `ListSessions` over real sessions: every filter, newest activity
//! first, roots unless children are asked for, paging by cursor on both transports, typed
//! refusals, and a session token that sees only its own tree.

use super::start_for;
use baton_client::{Client, HttpClient};
use baton_core::{
    ErrorCode,
    search::{SessionSearch, SessionsPage},
    store::Status,
};
use baton_tests::{Harness, WAIT_LIMIT, agents, api_error};
use futures::StreamExt as _;
use std::{collections::HashSet, sync::Arc, time::Duration};

/// The sessions of the tests: two suspended (one a tree whose children wait on a person), two
/// completed, with and without metadata.
struct Sessions {
    asker: String,
    done_for_u1: String,
    tree: String,
    plain: String,
}

async fn started(harness: &Harness) -> Sessions {
    let client = &harness.client;
    let asker = client
        .start_request(start_for("asker_only", "u-1", &["vip"], "pro"))
        .await
        .unwrap()
        .session_id;
    harness.chunks_until_suspended(&asker).await;
    let done_for_u1 = client
        .start_request(start_for("two_steps", "u-1", &[], "free"))
        .await
        .unwrap()
        .session_id;
    harness.chunks_until_end(&done_for_u1, WAIT_LIMIT).await;
    let tree = client
        .start_request(start_for("fan_out", "u-2", &["vip"], "team"))
        .await
        .unwrap()
        .session_id;
    super::root_suspended(harness, &tree).await;
    let plain = client.start("two_steps", "go").await.unwrap().session_id;
    harness.chunks_until_end(&plain, WAIT_LIMIT).await;
    harness.index_settled().await;
    Sessions {
        asker,
        done_for_u1,
        tree,
        plain,
    }
}

/// A search's query pairs and the sessions it finds.
type Case<'a> = (Vec<(&'a str, &'a str)>, Vec<&'a str>);

fn ids(page: &SessionsPage) -> HashSet<&str> {
    page.sessions
        .iter()
        .map(|row| row.session_id.as_str())
        .collect()
}

fn search(pairs: &[(&str, &str)]) -> SessionSearch {
    SessionSearch::from_query_pairs(
        pairs
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned())),
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_filter_finds_its_sessions_on_both_transports_newest_first() {
    let harness = Harness::start(agents::registry()).await;
    let s = started(&harness).await;
    let all = harness
        .client
        .sessions(&SessionSearch::default())
        .await
        .unwrap();
    assert_eq!(
        ids(&all),
        HashSet::from([&*s.asker, &*s.done_for_u1, &*s.tree, &*s.plain])
    );
    let updated: Vec<u64> = all.sessions.iter().map(|row| row.updated_at).collect();
    assert!(
        updated.windows(2).all(|pair| pair[0] >= pair[1]),
        "{updated:?}"
    );
    assert_eq!(all.next_cursor, None);
    let tree_row = all
        .sessions
        .iter()
        .find(|row| row.session_id == s.tree)
        .unwrap();
    assert_eq!(
        (
            tree_row.status,
            tree_row.pending_calls,
            tree_row.user_id.as_deref()
        ),
        (Status::SuspendedClientTool, 2, Some("u-2"))
    );
    assert_eq!(tree_row.tags, ["vip"]);

    let cases: Vec<Case> = vec![
        (vec![("userId", "u-1")], vec![&s.asker, &s.done_for_u1]),
        (vec![("tag", "vip")], vec![&s.asker, &s.tree]),
        (vec![("metadata.plan", "pro")], vec![&s.asker]),
        (
            vec![("status", "completed")],
            vec![&s.done_for_u1, &s.plain],
        ),
        (vec![("awaiting", "person")], vec![&s.asker, &s.tree]),
        (vec![("agent", "fan_out")], vec![&s.tree]),
        (vec![("tag", "vip"), ("userId", "u-1")], vec![&s.asker]),
        (vec![("status", "completed"), ("tag", "vip")], vec![]),
        (vec![("updatedAfter", "4000000000000")], vec![]),
    ];
    for (pairs, expected) in cases {
        let query = search(&pairs);
        let expected: HashSet<&str> = expected.into_iter().collect();
        let http = harness.client.sessions(&query).await.unwrap();
        let grpc = harness.grpc_client.sessions(&query).await.unwrap();
        assert_eq!(ids(&http), expected, "{pairs:?}");
        assert_eq!(http, grpc, "{pairs:?}");
    }

    // Children (which inherit the root's metadata) only when asked for.
    let with_children = search(&[("userId", "u-2"), ("includeChildren", "true")]);
    let page = harness.client.sessions(&with_children).await.unwrap();
    assert_eq!(page.sessions.len(), 3);
    assert!(
        page.sessions
            .iter()
            .all(|row| row.root_session_id == s.tree)
    );
    // One tree, the root first (the console's outline).
    let outline = harness
        .client
        .sessions(&search(&[("root", &s.tree)]))
        .await
        .unwrap();
    assert_eq!(outline.sessions.len(), 3);
    assert_eq!(outline.sessions[0].session_id, s.tree);
    assert_eq!(
        outline,
        harness
            .grpc_client
            .sessions(&search(&[("root", &s.tree)]))
            .await
            .unwrap()
    );
    let waiting_children = search(&[("awaiting", "person"), ("includeChildren", "true")]);
    let page = harness.client.sessions(&waiting_children).await.unwrap();
    assert_eq!(page.sessions.len(), 4, "{page:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_of_one_walk_every_session_once_in_order_on_both_transports() {
    let harness = Harness::start(agents::registry()).await;
    started(&harness).await;
    let all = harness
        .client
        .sessions(&SessionSearch::default())
        .await
        .unwrap();
    let clients: [&dyn Client; 2] = [&harness.client, &harness.grpc_client];
    for client in clients {
        let mut walked = Vec::new();
        let mut query = SessionSearch {
            limit: 1,
            ..SessionSearch::default()
        };
        loop {
            let page = client.sessions(&query).await.unwrap();
            assert!(page.sessions.len() <= 1);
            walked.extend(page.sessions);
            match page.next_cursor {
                Some(cursor) => query.cursor = Some(cursor),
                None => break,
            }
            assert!(walked.len() <= 4, "{walked:?}");
        }
        assert_eq!(walked, all.sessions);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_searches_are_typed_refusals_on_both_transports() {
    let harness = Harness::server_only(agents::registry()).await;
    let forged = SessionSearch {
        cursor: Some("not-a-cursor".into()),
        ..SessionSearch::default()
    };
    let too_many = SessionSearch {
        limit: 101,
        ..SessionSearch::default()
    };
    for query in [forged, too_many] {
        let http = api_error(harness.client.sessions(&query).await.unwrap_err());
        let grpc = api_error(harness.grpc_client.sessions(&query).await.unwrap_err());
        assert_eq!(
            (http.code, grpc.code),
            (ErrorCode::ValidationError, ErrorCode::ValidationError)
        );
    }
    let unknown = reqwest::get(format!("http://{}/sessions?colour=red", harness.address))
        .await
        .unwrap();
    assert_eq!(unknown.status(), 400);
    let body: serde_json::Value = unknown.json().await.unwrap();
    assert_eq!(body["code"], "validation_error");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_token_sees_only_its_own_tree() {
    let options = baton_worker::ServerOptions {
        auth: baton_worker::auth::Auth::Builtin(Arc::new(baton_worker::auth::BuiltinAuth::new(
            vec!["operator-key".into()],
            b"test secret",
            Duration::from_secs(600),
        ))),
        ..Default::default()
    };
    let harness = Harness::start_with(agents::registry(), options).await;
    let address = format!("http://{}", harness.address);
    let operator = HttpClient::with_bearer(&address, "operator-key").unwrap();
    let mine = operator
        .start_request(start_for("asker_only", "u-1", &["vip"], "pro"))
        .await
        .unwrap();
    let other = operator.start("asker_only", "go").await.unwrap();
    for session in [&mine.session_id, &other.session_id] {
        let mut chunks = operator.follow(session, 0);
        while let Some(chunk) = chunks.next().await {
            if chunk.unwrap().kind.name() == "suspended" {
                break;
            }
        }
    }
    harness.index_settled().await;

    let all = operator.sessions(&SessionSearch::default()).await.unwrap();
    assert_eq!(all.sessions.len(), 2);
    let holder = HttpClient::with_bearer(&address, mine.token.as_deref().unwrap()).unwrap();
    let seen = holder.sessions(&SessionSearch::default()).await.unwrap();
    assert_eq!(ids(&seen), HashSet::from([mine.session_id.as_str()]));
    let none = holder
        .sessions(&search(&[("status", "completed")]))
        .await
        .unwrap();
    assert!(none.sessions.is_empty());
    let inbox = holder.pending(&SessionSearch::default()).await.unwrap();
    assert_eq!(inbox.calls.len(), 1);
    assert_eq!(inbox.calls[0].session_id, mine.session_id);
}
