//! The audit log: each action on a session is one event naming its principal (an operator key's
//! configured name, or the session token's subject) and its outcome.

use baton_client::{Client as _, HttpClient};
use baton_core::message::ToolOutcome;
use baton_tests::{Harness, agents, events};
use baton_worker::{
    ServerOptions,
    auth::{Auth, BuiltinAuth},
};
use futures::StreamExt as _;
use serde_json::json;
use std::{sync::Arc, time::Duration};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_action_logs_one_event_naming_its_principal() {
    events::capture();
    let options = ServerOptions {
        auth: Auth::Builtin(Arc::new(BuiltinAuth::with_named_keys(
            vec![("alice".into(), "alice-key".into())],
            b"test secret",
            Duration::from_secs(600),
        ))),
        ..Default::default()
    };
    let harness = Harness::start_with(agents::registry(), options).await;
    let address = format!("http://{}", harness.address);
    let alice = HttpClient::with_bearer(&address, "alice-key").unwrap();
    let started = alice.start("asker_only", "go").await.unwrap();
    let session = started.session_id.clone();
    let mut chunks = alice.follow(&session, 0);
    while let Some(chunk) = chunks.next().await {
        if chunk.unwrap().kind.name() == "suspended" {
            break;
        }
    }
    alice
        .submit(
            &session,
            "call_1_1",
            &ToolOutcome::Result(json!({"answer": "Ann"})),
        )
        .await
        .unwrap();
    let holder = HttpClient::with_bearer(&address, started.token.as_deref().unwrap()).unwrap();
    holder.stop(&session, false).await.unwrap();
    // A refused action is logged with its code.
    holder.stop(&session, false).await.unwrap_err();

    let logged: Vec<(String, String, String)> = events::audit_of_session(&session)
        .into_iter()
        .map(|fields| {
            (
                fields["event"].clone(),
                fields["principal"].clone(),
                fields["outcome"].clone(),
            )
        })
        .collect();
    let holder_name = format!("session:{session}");
    let expected = [
        ("start", "alice", "ok"),
        ("token_mint", "alice", "ok"),
        ("answer", "alice", "ok"),
        ("interrupt", holder_name.as_str(), "ok"),
        ("interrupt", holder_name.as_str(), "run_not_active"),
    ]
    .map(|(event, principal, outcome)| {
        (event.to_owned(), principal.to_owned(), outcome.to_owned())
    });
    assert_eq!(logged, expected);
}
